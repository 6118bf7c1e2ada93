//! Head to head with Kafka 4.4's own cleaner: the same partition, buffer, settings and clock, cleaned by
//! Kafka's `Cleaner` (offline in its JVM, `kafka-interop`'s `OfflineClean`, timed there around `doClean`) and by
//! this project's `compact` front door with each map (in a child process of this one, timed around its
//! passes), each on a fresh copy, several rounds. Prints a table (and `--json` lines): seconds, Kafka's over
//! ours, peak resident memory of each process (each one's VmHWM), output bytes over Kafka's,
//! and whether every segment file came out byte for byte Kafka's.
//!
//! `cargo run --release -p bench --bin vs-kafka -- [--records 2M] [--keys 250k] [--codecs none,lz4,gzip,zstd]
//! [--maps compact,skimpy] [--dedupe-buffer 128MiB] [--segment-bytes 64MiB] [--rounds 2] [--dir D] [--json]`
//!
//! The partitions are written by `bench::kafka::write_partition` (100 records a batch of 16-byte keys and
//! 100-byte values, about 12 KiB as a producer's default 16 KiB batches are, 1% tombstones), compressed as Kafka
//! compresses them (the codecs are Kafka's byte for byte), so Kafka's cleaner reads them as its own.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use cleaner::map::MapKind;
use log_core::kafka::Compression;
use logcompact::size::{parse_bytes, parse_count};

const USAGE: &str = "vs-kafka: Kafka 4.4's own cleaner against ours, on the same partition, buffer, settings and clock

usage: vs-kafka [--records 2M] [--keys 250k] [--codecs none,lz4,gzip,zstd,snappy] [--maps compact,skimpy]
                [--dedupe-buffer 128MiB] [--segment-bytes 64MiB] [--rounds 2] [--threads 1] [--dir D] [--json]

--threads is ours: a pass's groups of segments copied in parallel (Kafka's cleaner runs a log on one thread).

Needs Java 17 and Maven (Kafka's jars are resolved from Maven Central into target/ once). Writes its partitions
and copies under D (default: a new temporary directory), which it removes at the end.";

/// The clock both cleaners are given: after every record's timestamp.
const NOW_MS: i64 = 4_000_000_000_000;

struct Args {
    records: u64,
    keys: u64,
    codecs: Vec<Compression>,
    maps: Vec<MapKind>,
    buffer: u64,
    segment_bytes: u64,
    rounds: usize,
    threads: usize,
    dir: Option<PathBuf>,
    json: bool,
}

fn codec(name: &str) -> Result<Compression, String> {
    Compression::ALL.into_iter().find(|c| c.name() == name).ok_or(format!("unknown codec {name}"))
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        records: 2_000_000,
        keys: 250_000,
        codecs: vec![Compression::None, Compression::Lz4, Compression::Gzip, Compression::Zstd],
        maps: vec![MapKind::Compact, MapKind::Skimpy],
        buffer: 128 << 20,
        segment_bytes: 64 << 20,
        rounds: 2,
        threads: 1,
        dir: None,
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            "--json" => {
                a.json = true;
                continue;
            }
            _ => {}
        }
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--records" => a.records = parse_count(&value).map_err(|e| format!("--records: {e}"))?,
            "--keys" => a.keys = parse_count(&value).map_err(|e| format!("--keys: {e}"))?,
            "--codecs" => a.codecs = value.split(',').map(|c| codec(c.trim())).collect::<Result<_, _>>()?,
            "--maps" => {
                a.maps = value
                    .split(',')
                    .map(|m| MapKind::from_name(m.trim()).ok_or(format!("unknown map {m}")))
                    .collect::<Result<_, _>>()?;
            }
            "--dedupe-buffer" => a.buffer = parse_bytes(&value).map_err(|e| format!("--dedupe-buffer: {e}"))?,
            "--segment-bytes" => a.segment_bytes = parse_bytes(&value).map_err(|e| format!("--segment-bytes: {e}"))?,
            "--rounds" => a.rounds = value.parse().map_err(|_| format!("--rounds: {value} is not a count"))?,
            "--threads" => a.threads = value.parse().map_err(|_| format!("--threads: {value} is not a count"))?,
            "--dir" => a.dir = Some(PathBuf::from(value)),
            other => return Err(format!("unknown option {other}")),
        }
    }
    if a.rounds == 0 {
        return Err("--rounds must be at least 1".into());
    }
    Ok(a)
}

/// One cleaner's run on one copy.
#[derive(Debug, Clone, serde::Serialize)]
struct Run {
    cleaner: String,
    seconds: f64,
    peak_rss_bytes: u64,
    passes: u64,
    bytes_after: u64,
}

/// Every file of a partition directory a pass writes, with its bytes: the closed segments' (the active
/// segment, which no pass takes, is left out: Kafka's load adds its missing index files).
fn segment_files(dir: &Path) -> Result<Vec<(String, Vec<u8>)>, String> {
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

fn log_bytes(dir: &Path) -> Result<u64, String> {
    // The active segment is empty (the generator seals every record).
    Ok(segment_files(dir)?.iter().filter(|(n, _)| n.ends_with(".log")).map(|(_, b)| b.len() as u64).sum())
}

/// `from` copied to `to` (created), as `cp -a` copies it.
fn copy(from: &Path, to: &Path) -> Result<(), String> {
    if let Some(p) = to.parent() {
        std::fs::create_dir_all(p).map_err(|e| e.to_string())?;
    }
    kafka_interop::copy_tree(from, to).map_err(|e| e.to_string())
}

fn kafka_run(kafka: &kafka_interop::Kafka, dir: &Path, a: &Args) -> Result<Run, String> {
    let configs = vec![
        "cleanup.policy=compact".to_owned(),
        format!("segment.bytes={}", a.segment_bytes),
        "delete.retention.ms=86400000".to_owned(),
        "file.delete.delay.ms=0".to_owned(),
    ];
    // The JVM's heap must hold Kafka's map (a heap buffer) besides the cleaner's I/O buffers.
    let heap = format!("-Xmx{}m", 256 + a.buffer / (1 << 20) * 2);
    let out = kafka
        .offline_clean_with(&[&heap], dir, NOW_MS, a.buffer, &configs, &["--until-clean"])
        .map_err(|e| e.to_string())?;
    let passes = out["passes"].as_array().map_or(0, Vec::len) as u64;
    let seconds: f64 = out["passes"].as_array().into_iter().flatten().filter_map(|p| p["elapsed_secs"].as_f64()).sum();
    Ok(Run {
        cleaner: "kafka".into(),
        seconds,
        peak_rss_bytes: out["peak_rss_kib"].as_u64().unwrap_or(0) * 1024,
        passes,
        bytes_after: log_bytes(dir)?,
    })
}

/// Runs `ours` in a child process (this binary, `--child`), returning its JSON with its peak resident memory
/// (its own VmHWM, read as it ends: `wait4`'s maximum is inherited across fork and exec, so a child started by
/// a large parent reports the parent's).
fn ours_run(dir: &Path, map: MapKind, a: &Args) -> Result<Run, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = Command::new(exe)
        .args(["--child", kafka_interop::path_str(dir), map.name()])
        .args(["--dedupe-buffer", &a.buffer.to_string(), "--segment-bytes", &a.segment_bytes.to_string()])
        .args(["--threads", &a.threads.to_string()])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("the compaction of {} with {} failed", dir.display(), map.name()));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(text.trim()).map_err(|e| format!("child output: {e}"))?;
    Ok(Run {
        cleaner: map.name().to_owned(),
        seconds: v["seconds"].as_f64().unwrap_or(0.0),
        peak_rss_bytes: v["peak_rss_kib"].as_u64().unwrap_or(0) * 1024,
        passes: v["passes"].as_u64().unwrap_or(0),
        bytes_after: log_bytes(dir)?,
    })
}

/// This process's peak resident memory in KiB (VmHWM).
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The child: `compact --format kafka --until-clean` of `dir` through the library, printing its time.
fn child(args: &[String]) -> Result<(), String> {
    let [dir, map, _, buffer, _, segment_bytes, _, threads] = args else { return Err("bad child arguments".into()) };
    let map = MapKind::from_name(map).ok_or("bad map")?;
    let config = cleaner::CleanerConfig {
        map,
        dedupe_buffer_bytes: buffer.parse().map_err(|_| "bad buffer")?,
        threads: threads.parse().map_err(|_| "bad threads")?,
        ..cleaner::CleanerConfig::default()
    };
    let clock = std::sync::Arc::new(cleaner::ManualClock::new(NOW_MS));
    let mut c = cleaner::Cleaner::new(config, clock).map_err(|e| e.to_string())?;
    let req = logcompact::CompactRequest {
        dir: PathBuf::from(dir),
        format: log_core::Format::Kafka,
        options: cleaner::PassOptions { drop_invalid: true, ..cleaner::PassOptions::default() },
        until_clean: true,
        segment_bytes: segment_bytes.parse().map_err(|_| "bad segment bytes")?,
        min_cleanable_dirty_ratio: 0.0,
        checkpoint: None,
        out: None,
    };
    let (mut seconds, mut passes) = (0.0, 0u64);
    logcompact::compact(&req, &mut c, |s| {
        seconds += s.total_seconds;
        passes += 1;
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    let report = serde_json::json!({"seconds": seconds, "passes": passes, "peak_rss_kib": peak_rss_kib()});
    std::io::Write::write_all(&mut std::io::stdout(), format!("{report}\n").as_bytes()).map_err(|e| e.to_string())?;
    Ok(())
}

/// The first file that differs between Kafka's output and ours, said in a line.
fn first_difference(kafka: &[(String, Vec<u8>)], ours: &[(String, Vec<u8>)]) -> String {
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

/// A line on standard error; a failed write is ignored.
fn eprintln_quiet(line: &str) {
    let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("{line}\n").as_bytes());
}

fn mib(b: u64) -> f64 {
    b as f64 / f64::from(1 << 20)
}

fn run(a: &Args) -> Result<(), String> {
    let kafka = kafka_interop::Kafka::get().ok_or("LOGCOMPACT_SKIP_KAFKA is set: there is no Kafka to run")?;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let root = a.dir.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    let keys = bench::Keys::new(usize::try_from(a.keys).map_err(|e| e.to_string())?, 16, 1);
    if !a.json {
        println!(
            "| codec | MiB | Kafka's cleaner | ours | Kafka / ours | peak RSS Kafka / ours | output bytes ours / Kafka | identical |"
        );
        println!("|---|---|---|---|---|---|---|---|");
    }
    for &codec in &a.codecs {
        let source = root.join(format!("vs-{}", codec.name())).join("vs-0");
        {
            let store = storage_file::FileStore::open(&source).map_err(|e| e.to_string())?;
            let t = Instant::now();
            bench::kafka::write_partition(&store, &keys, a.records, u64::MAX, codec, a.segment_bytes, 1)?;
            eprintln!("{}: wrote {} records in {:.1} s", codec.name(), a.records, t.elapsed().as_secs_f64());
        }
        let size = log_bytes(&source)?;
        let mut best: Vec<Option<Run>> = vec![None; a.maps.len() + 1];
        let mut identical = vec![true; a.maps.len()];
        for round in 0..a.rounds {
            let kdir = root.join(format!("round-{round}-kafka")).join("vs-0");
            copy(&source, &kdir)?;
            let k = kafka_run(kafka, &kdir, a)?;
            let kfiles = segment_files(&kdir)?;
            for (i, &map) in a.maps.iter().enumerate() {
                let odir = root.join(format!("round-{round}-{}", map.name())).join("vs-0");
                copy(&source, &odir)?;
                let o = ours_run(&odir, map, a)?;
                let ofiles = segment_files(&odir)?;
                if ofiles != kfiles {
                    identical[i] = false;
                    eprintln_quiet(&format!("{} {}: {}", codec.name(), map.name(), first_difference(&kfiles, &ofiles)));
                }
                if a.json {
                    println!("{}", serde_json::json!({"codec": codec.name(), "round": round, "run": o, "kafka": k}));
                }
                if best[i + 1].as_ref().is_none_or(|b| o.seconds < b.seconds) {
                    best[i + 1] = Some(o);
                }
                let _ = std::fs::remove_dir_all(odir.parent().unwrap_or(&odir));
            }
            if best[0].as_ref().is_none_or(|b| k.seconds < b.seconds) {
                best[0] = Some(k);
            }
            let _ = std::fs::remove_dir_all(kdir.parent().unwrap_or(&kdir));
        }
        let Some(k) = best[0].clone() else { continue };
        for (i, o) in best[1..].iter().enumerate() {
            let Some(o) = o else { continue };
            if !a.json {
                println!(
                    "| {} | {:.0} | {:.2} s | {}: {:.2} s | {:.1}x | {:.0} / {:.0} MiB | {:.3} | {} |",
                    codec.name(),
                    mib(size),
                    k.seconds,
                    o.cleaner,
                    o.seconds,
                    k.seconds / o.seconds.max(1e-9),
                    mib(k.peak_rss_bytes),
                    mib(o.peak_rss_bytes),
                    o.bytes_after as f64 / k.bytes_after.max(1) as f64,
                    if identical[i] { "yes" } else { "no" }
                );
            }
        }
        let _ = std::fs::remove_dir_all(source.parent().unwrap_or(&source));
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    cleaner::allocator::return_large_frees_to_the_system();
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some("--child") {
        return match child(&argv[1..]) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("error: {e}\n").as_bytes());
                std::process::ExitCode::FAILURE
            }
        };
    }
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                format!("error: {e} (vs-kafka --help shows the usage)\n").as_bytes(),
            );
            return std::process::ExitCode::from(2);
        }
    };
    match run(&a) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("error: {e}\n").as_bytes());
            std::process::ExitCode::FAILURE
        }
    }
}
