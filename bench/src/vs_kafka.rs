//! Kafka 4.4's own cleaner beside ours on one partition directory: what `vs-kafka` and the report's Kafka rows
//! share. Kafka's `Cleaner` runs offline on a copy (`kafka-interop`'s `OfflineClean`, timed in its JVM around
//! `doClean`, its peak resident memory the JVM's `VmHWM`); ours is the `compact` front door on another copy,
//! with the same buffer, load factor, settings and fixed clock. Every closed segment's files are then compared
//! byte for byte.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cleaner::map::MapKind;

use crate::args::MapChoice;

/// Settings given to both cleaners.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// The dedupe buffer, bytes (Kafka's `log.cleaner.dedupe.buffer.size` with one cleaner thread).
    pub buffer_bytes: u64,
    /// The topic's segment size: the most a cleaned group merges into.
    pub segment_bytes: u64,
    /// The maps' load factor (Kafka's `log.cleaner.io.buffer.load.factor`).
    pub load_factor: f64,
    /// The fixed clock both cleaners read, ms.
    pub now_ms: i64,
    /// Ours only: threads a pass copies its groups of segments on (`compact --copy-threads`); Kafka's cleaner
    /// runs a log on one thread whatever its `log.cleaner.threads`.
    pub threads: usize,
}

/// One cleaner's run on one copy.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Run {
    /// `kafka`, or our map's name.
    pub cleaner: String,
    /// Seconds of its passes (Kafka: around `doClean`, in the JVM; ours: the passes' own time).
    pub seconds: f64,
    /// Peak resident memory, bytes (Kafka: the JVM's `VmHWM`; ours: as the caller measured it).
    pub peak_rss_bytes: u64,
    /// Passes until clean.
    pub passes: u64,
    /// Bytes of the closed segments' `.log` files after.
    pub bytes_after: u64,
    /// Bytes the passes read, both passes of every pass (Kafka: its `CleanerStats`' `mapBytesRead` and
    /// `bytesRead`).
    #[serde(default)]
    pub bytes_read: u64,
    /// Bytes of segments the passes wrote.
    #[serde(default)]
    pub bytes_written: u64,
    /// Bytes a key the map holds in the buffer (Kafka's `SkimpyOffsetMap`: 24-byte slots at the load factor).
    pub bytes_per_key: f64,
}

/// The topic settings Kafka's cleaner is given (`name=value`): a compacted topic of `segment_bytes` segments
/// (below Kafka's 1 MiB minimum through `internal.segment.bytes`, its testing setting), a day's delete
/// retention, files deleted at once.
pub fn kafka_configs(segment_bytes: u64) -> Vec<String> {
    let segment = if segment_bytes >= 1 << 20 {
        format!("segment.bytes={segment_bytes}")
    } else {
        format!("internal.segment.bytes={segment_bytes}")
    };
    vec![
        "cleanup.policy=compact".to_owned(),
        segment,
        "delete.retention.ms=86400000".to_owned(),
        "file.delete.delay.ms=0".to_owned(),
    ]
}

/// Kafka's cleaner on the partition directory `dir` (a copy: it is rewritten) until clean.
///
/// # Errors
/// The JVM's failure, as text.
pub fn kafka_clean(kafka: &kafka_interop::Kafka, dir: &Path, s: &Settings) -> Result<Run, String> {
    // The JVM's heap must hold Kafka's map (a heap buffer) besides the cleaner's I/O buffers.
    let heap = format!("-Xmx{}m", 256 + s.buffer_bytes / (1 << 20) * 2);
    let load = s.load_factor.to_string();
    let out = kafka
        .offline_clean(
            &[&heap],
            dir,
            s.now_ms,
            s.buffer_bytes,
            &kafka_configs(s.segment_bytes),
            &["--until-clean", "--load-factor", &load],
        )
        .map_err(|e| e.to_string())?;
    let passes = out["passes"].as_array().map_or(0, Vec::len) as u64;
    let each = || out["passes"].as_array().into_iter().flatten();
    let seconds: f64 = each().filter_map(|p| p["elapsed_secs"].as_f64()).sum();
    let stat = |name: &str| each().filter_map(|p| p["stats"][name].as_u64()).sum::<u64>();
    Ok(Run {
        cleaner: "kafka".into(),
        seconds,
        peak_rss_bytes: out["peak_rss_kib"].as_u64().unwrap_or(0) * 1024,
        passes,
        bytes_after: log_bytes(dir)?,
        bytes_per_key: kafka_bytes_per_key(s),
        bytes_read: stat("map_bytes_read") + stat("bytes_read"),
        bytes_written: stat("bytes_written"),
    })
}

/// Bytes a key Kafka's `SkimpyOffsetMap` holds in the buffer: the buffer over the keys it maps (24-byte slots
/// at the load factor: 26.7 bytes at 0.9).
pub fn kafka_bytes_per_key(s: &Settings) -> f64 {
    let buffer = usize::try_from(s.buffer_bytes).unwrap_or(usize::MAX);
    s.buffer_bytes as f64 / MapKind::Skimpy.keys_for(buffer, s.load_factor, 16).max(1) as f64
}

/// Ours: `compact --format kafka --until-clean` of `dir` in place through the library, with `map` (`auto`: the
/// default map, the external pass once it fills). The peak
/// resident memory is left at 0 (the caller measures it: a child process's, or the run's above what the
/// process held before).
///
/// # Errors
/// The compaction's error, as text.
pub fn ours_clean(dir: &Path, map: MapChoice, s: &Settings) -> Result<Run, String> {
    let config = cleaner::CleanerConfig {
        map: map.kind,
        one_pass: map.one_pass,
        dedupe_buffer_bytes: usize::try_from(s.buffer_bytes).map_err(|e| e.to_string())?,
        load_factor: s.load_factor,
        threads: s.threads.max(1),
        ..cleaner::CleanerConfig::default()
    };
    let clock = std::sync::Arc::new(cleaner::ManualClock::new(s.now_ms));
    let mut c = cleaner::Cleaner::new(config, clock).map_err(|e| e.to_string())?;
    // The benchmark's topics are compacted topics Kafka's cleaner is given too.
    let settings = logcompact::datadir::settings::Layers::default().compact_anyway("the benchmark");
    let req = logcompact::CompactRequest {
        options: cleaner::PassOptions { drop_invalid: true, ..cleaner::PassOptions::default() },
        segment_bytes: s.segment_bytes,
        ..logcompact::CompactRequest::kafka(dir, settings)
    };
    let (mut seconds, mut passes, mut bytes_per_key, mut entries) = (0.0, 0u64, 0.0, 0u64);
    let (mut bytes_read, mut bytes_written) = (0u64, 0u64);
    logcompact::compact(&req, &mut c, |st| {
        seconds += st.total_seconds;
        passes += 1;
        bytes_read += st.pass1.bytes_read + st.pass2.bytes_read;
        bytes_written += st.bytes_written;
        // From the fullest pass, as the report's cells take it.
        if st.offset_map.entries >= entries {
            entries = st.offset_map.entries;
            bytes_per_key = st.offset_map.bytes_per_key;
        }
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    Ok(Run {
        cleaner: map.name().to_owned(),
        seconds,
        peak_rss_bytes: 0,
        passes,
        bytes_after: log_bytes(dir)?,
        bytes_per_key,
        bytes_read,
        bytes_written,
    })
}

/// Every file of a partition directory a pass writes, with its bytes: the closed segments' (the active
/// segment, which no pass takes, is left out: Kafka's load adds its missing index files).
///
/// # Errors
/// A directory or file that does not read, as text.
pub fn segment_files(dir: &Path) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut all = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if [".log", ".index", ".timeindex", ".txnindex"].iter().any(|s| name.ends_with(s)) {
            all.push((name, std::fs::read(e.path()).map_err(|e| e.to_string())?));
        }
    }
    all.sort();
    let active = all.iter().filter(|(n, _)| n.ends_with(".log")).map(|(n, _)| n[..20].to_owned()).max();
    all.retain(|(n, _)| active.as_deref() != Some(&n[..20.min(n.len())]));
    Ok(all)
}

/// Bytes of the closed segments' `.log` files of `dir` (their sizes: nothing is read).
///
/// # Errors
/// A directory or file that does not list, as text.
pub fn log_bytes(dir: &Path) -> Result<u64, String> {
    let mut total = 0;
    for path in crate::io_floor::closed_logs(dir)? {
        total += std::fs::metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?.len();
    }
    Ok(total)
}

/// Every file of a partition directory a pass writes, as [`segment_files`] lists them, each with its length
/// and a digest of its bytes (XXH3-128, read through a buffer): to compare partitions of any size in bounded
/// memory.
///
/// # Errors
/// A directory or file that does not read, as text.
pub fn segment_digests(dir: &Path) -> Result<Vec<(String, u64, u128)>, String> {
    use std::io::Read;
    let mut all = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if [".log", ".index", ".timeindex", ".txnindex"].iter().any(|s| name.ends_with(s)) {
            let mut file = std::fs::File::open(e.path()).map_err(|e| format!("{name}: {e}"))?;
            let (mut hash, mut len) = (xxhash_rust::xxh3::Xxh3::new(), 0u64);
            let mut buf = vec![0u8; 1 << 20];
            loop {
                let n = file.read(&mut buf).map_err(|e| format!("{name}: {e}"))?;
                if n == 0 {
                    break;
                }
                hash.update(&buf[..n]);
                len += n as u64;
            }
            all.push((name, len, hash.digest128()));
        }
    }
    all.sort();
    let active = all.iter().filter(|(n, ..)| n.ends_with(".log")).map(|(n, ..)| n[..20.min(n.len())].to_owned()).max();
    all.retain(|(n, ..)| active.as_deref() != Some(&n[..20.min(n.len())]));
    Ok(all)
}

/// The first file that differs between two [`segment_digests`] lists, said in a line (empty when none does).
pub fn first_digest_difference(kafka: &[(String, u64, u128)], ours: &[(String, u64, u128)]) -> String {
    for (name, len, digest) in kafka {
        match ours.iter().find(|(n, ..)| n == name) {
            None => return format!("{name} only in Kafka's output"),
            Some((_, l, d)) if (l, d) != (len, digest) => {
                return format!("{name}: {l} bytes against Kafka's {len}, their bytes differ");
            }
            Some(_) => {}
        }
    }
    ours.iter()
        .find(|(n, ..)| !kafka.iter().any(|(k, ..)| k == n))
        .map_or_else(String::new, |(n, ..)| format!("{n} only in ours"))
}

/// Kafka's output files without the index files its load wrote for a segment no cleaner changed: Kafka
/// recovers a segment whose `.index` is missing when it opens the partition (writing its `.index`,
/// `.timeindex` and `.txnindex`), which a pass of ours does not do for a segment it leaves alone. Such a file
/// is left out when `source` (the partition before cleaning) lacked it, ours lacks it, and the segment's
/// `.log` is the same in all three.
pub fn without_load_indexes(
    kafka: &[(String, Vec<u8>)],
    ours: &[(String, Vec<u8>)],
    source: &[(String, Vec<u8>)],
) -> Vec<(String, Vec<u8>)> {
    fn file<'f>(files: &'f [(String, Vec<u8>)], name: &str) -> Option<&'f [u8]> {
        files.iter().find(|(n, _)| n == name).map(|(_, b)| b.as_slice())
    }
    kafka
        .iter()
        .filter(|(name, _)| {
            let Some(stem) = name
                .strip_suffix(".index")
                .or_else(|| name.strip_suffix(".timeindex"))
                .or_else(|| name.strip_suffix(".txnindex"))
            else {
                return true;
            };
            let log = format!("{stem}.log");
            let unchanged = file(kafka, &log).is_some()
                && file(kafka, &log) == file(source, &log)
                && file(ours, &log) == file(source, &log);
            !(unchanged && file(source, name).is_none() && file(ours, name).is_none())
        })
        .cloned()
        .collect()
}

/// The first file that differs between Kafka's output and ours, said in a line (empty when none does).
pub fn first_difference(kafka: &[(String, Vec<u8>)], ours: &[(String, Vec<u8>)]) -> String {
    for (name, k) in kafka {
        match ours.iter().find(|(n, _)| n == name) {
            None => return format!("{name} only in Kafka's output"),
            Some((_, o)) if o != k => {
                let at = k.iter().zip(o).position(|(a, b)| a != b).unwrap_or(k.len().min(o.len()));
                return format!("{name}: {} bytes against Kafka's {}, first difference at byte {at}", o.len(), k.len());
            }
            Some(_) => {}
        }
    }
    ours.iter()
        .find(|(n, _)| !kafka.iter().any(|(k, _)| k == n))
        .map_or_else(String::new, |(n, _)| format!("{n} only in ours"))
}

/// `from` copied to `to` (created with its parents), as `cp -a` copies it (the segments' times matter to
/// Kafka's cleaner), and its file system synced (`sync -f`): a copy left to the kernel's writeback shares
/// the disk with the cleaner timed on it next (4 GiB of it for the backlog, written back during the pass and
/// waited for by every sync the pass makes), so each cleaner, Kafka's and ours, starts with nothing to write
/// but its own.
///
/// # Errors
/// The copy's or the sync's failure, as text.
pub fn copy(from: &Path, to: &Path) -> Result<(), String> {
    if let Some(p) = to.parent() {
        std::fs::create_dir_all(p).map_err(|e| e.to_string())?;
    }
    kafka_interop::copy_tree(from, to).map_err(|e| e.to_string())?;
    let out = Command::new("sync").arg("-f").arg(to).output().map_err(|e| format!("sync -f {}: {e}", to.display()))?;
    if !out.status.success() {
        return Err(format!("sync -f {}: {}", to.display(), String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(())
}

/// A partition directory for `topic` under `root`: Kafka's layout, `<topic>-0` (Kafka reads the topic and
/// partition from the name).
pub fn partition_dir(root: &Path, topic: &str) -> PathBuf {
    root.join(format!("{topic}-0"))
}

/// The flag that makes a benchmark binary run [`child_main`] (`vs-kafka` and `report` take it first).
pub const CHILD_FLAG: &str = "--vs-kafka-child";

/// Ours in a child process (`exe` run with [`CHILD_FLAG`], which must call [`child_main`]): its run, with the
/// child's peak resident memory (its own `VmHWM`, read by the child at its end: the whole process, as the JVM's
/// `VmHWM` is Kafka's; `wait4`'s `ru_maxrss` would not do, as a child spawned through `vfork` inherits its
/// parent's high-water mark).
///
/// # Errors
/// A child that cannot start or fails, as text.
pub fn ours_in_child(exe: &Path, dir: &Path, map: MapChoice, s: &Settings) -> Result<Run, String> {
    let out = Command::new(exe)
        .args([CHILD_FLAG, kafka_interop::path_str(dir), map.name()])
        .args([
            s.buffer_bytes.to_string(),
            s.segment_bytes.to_string(),
            s.load_factor.to_string(),
            s.now_ms.to_string(),
            s.threads.to_string(),
        ])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("{}: {e}", exe.display()))?;
    if !out.status.success() {
        return Err(format!("the compaction of {} with {} failed ({})", dir.display(), map.name(), out.status));
    }
    let v: serde_json::Value =
        serde_json::from_slice(out.stdout.trim_ascii()).map_err(|e| format!("child output: {e}"))?;
    Ok(Run {
        cleaner: map.name().to_owned(),
        seconds: v["seconds"].as_f64().unwrap_or(0.0),
        peak_rss_bytes: v["peak_rss_bytes"].as_u64().unwrap_or(0),
        passes: v["passes"].as_u64().unwrap_or(0),
        bytes_after: log_bytes(dir)?,
        bytes_per_key: v["bytes_per_key"].as_f64().unwrap_or(0.0),
        bytes_read: v["bytes_read"].as_u64().unwrap_or(0),
        bytes_written: v["bytes_written"].as_u64().unwrap_or(0),
    })
}

/// The child of [`ours_in_child`]: `args` are what follows [`CHILD_FLAG`]; prints the run as JSON, with the
/// process's peak resident memory (`VmHWM`).
///
/// # Errors
/// Bad arguments or the compaction's error, as text.
pub fn child_main(args: &[String]) -> Result<(), String> {
    let [dir, map, buffer, segment_bytes, load_factor, now_ms, threads] = args else {
        return Err("bad child arguments".into());
    };
    let map = crate::args::map_choice(map)?;
    let settings = Settings {
        buffer_bytes: buffer.parse().map_err(|_| "bad buffer")?,
        segment_bytes: segment_bytes.parse().map_err(|_| "bad segment bytes")?,
        load_factor: load_factor.parse().map_err(|_| "bad load factor")?,
        now_ms: now_ms.parse().map_err(|_| "bad clock")?,
        threads: threads.parse().map_err(|_| "bad threads")?,
    };
    let run = ours_clean(Path::new(dir), map, &settings)?;
    let report = serde_json::json!({"seconds": run.seconds, "passes": run.passes,
        "bytes_per_key": run.bytes_per_key, "peak_rss_bytes": vm_hwm_bytes(),
        "bytes_read": run.bytes_read, "bytes_written": run.bytes_written});
    // Written, not printed: a closed pipe is an error to return, not a panic.
    std::io::Write::write_all(&mut std::io::stdout(), format!("{report}\n").as_bytes()).map_err(|e| e.to_string())
}

/// This process's peak resident memory (`VmHWM`), 0 where `/proc` cannot tell.
pub fn vm_hwm_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}
