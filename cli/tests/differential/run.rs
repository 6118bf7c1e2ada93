//! One case judged: the partition written twice, cleaned until clean by Kafka 4.4's own `Cleaner` (offline, in
//! a JVM kept running) and by `logcompact compact --format kafka --until-clean` with the same clock, settings
//! and buffer, then compared: with `skimpy` (whose passes end where Kafka's do) every `.log`, `.index`,
//! `.timeindex` and `.txnindex` byte for byte; with the other maps, the records a consumer reads under each
//! isolation level. A failing case is shrunk to a small one that still fails.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use kafka_interop::{CleanerServer, Kafka};
use log_core::kafka::txn::AbortedTxn;

use super::case::{Case, Snapshots};
use super::write::{Layout, write};

/// What a case came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Both cleaners left the same files (or records).
    Same,
    /// Both refused the partition.
    BothFailed,
    /// Kafka's cleaner threw (its message), where ours cleaned and changed nothing: the partition stays as it
    /// is either way (Kafka marks it uncleanable).
    KafkaThrewOursChangedNothing(String),
    /// They differ: what differs.
    Differ(Vec<String>),
}

/// Runs cases against one JVM of Kafka's cleaner.
pub struct Judge {
    server: CleanerServer,
    kafka: &'static Kafka,
    bin: String,
    scratch: tempfile::TempDir,
    /// Where cases are written: in `scratch`, or kept under KAFKA_DIFF_KEEP.
    root: PathBuf,
    runs: u64,
}

/// The segment files compared.
const COMPARED: [&str; 4] = ["log", "index", "timeindex", "txnindex"];

fn segment_files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).expect("list").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if COMPARED.iter().any(|x| name.ends_with(&format!(".{x}"))) {
            out.insert(name, std::fs::read(e.path()).expect("read"));
        }
    }
    out
}

fn first_difference(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()))
}

impl Judge {
    /// A judge running `bin` (the `logcompact` binary) against Kafka's cleaner.
    pub fn new(kafka: &'static Kafka, bin: String) -> Judge {
        // In memory where the system has a tmpfs: both cleaners sync every file they write, and a case's files
        // are small.
        let shm = std::path::Path::new("/dev/shm");
        let scratch = if shm.is_dir() { tempfile::tempdir_in(shm) } else { tempfile::tempdir() }.expect("tempdir");
        let root = std::env::var_os("KAFKA_DIFF_KEEP").map_or_else(|| scratch.path().to_path_buf(), PathBuf::from);
        Judge { server: kafka.cleaner_server().expect("Kafka's cleaner starts"), kafka, bin, scratch, root, runs: 0 }
    }

    /// Cleans `case` both ways with `map` and compares.
    pub fn judge(&mut self, case: &Case, map: &str) -> Verdict {
        // Maps other than skimpy take the buffer they need at least (the external pass a few runs' worth).
        let mut case = std::borrow::Cow::Borrowed(case);
        if map != "skimpy" && case.buffer_bytes < 64 << 10 {
            case.to_mut().buffer_bytes = 64 << 10;
        }
        let case = &*case;
        self.runs += 1;
        // A fresh JVM now and then, so that nothing Kafka keeps across logs (its metrics) piles up.
        if self.runs.is_multiple_of(5_000) {
            self.server = self.kafka.cleaner_server().expect("Kafka's cleaner starts");
        }
        let root = self.root.join(format!("case-{}", self.runs));
        let _ = std::fs::remove_dir_all(&root);
        let input = write(case, &root.join("input"));
        let kafka_side = copy_layout(&input, &root.join("kafka"));
        let ours = copy_layout(&input, &root.join("ours"));
        let mut args: Vec<String> = vec![
            "--dir".into(),
            kafka_side.partition.display().to_string(),
            "--now-ms".into(),
            case.now_ms.to_string(),
            "--buffer-bytes".into(),
            case.buffer_bytes.to_string(),
            "--until-clean".into(),
            "--max-passes".into(),
            "500".into(),
        ];
        let mut config = |k: &str, v: String| {
            args.push("--config".into());
            args.push(format!("{k}={v}"));
        };
        if case.segment_bytes < 1 << 20 {
            config("internal.segment.bytes", case.segment_bytes.to_string());
        } else {
            config("segment.bytes", case.segment_bytes.to_string());
        }
        config("delete.retention.ms", case.delete_retention_ms.to_string());
        config("min.compaction.lag.ms", case.min_compaction_lag_ms.to_string());
        config("index.interval.bytes", case.index_interval_bytes.to_string());
        if let Some(c) = input.checkpoint {
            args.extend(["--checkpoint".into(), c.to_string()]);
        }
        if let Some(l) = input.log_start {
            args.extend(["--log-start-offset".into(), l.to_string()]);
        }
        if let Some(h) = input.high_watermark {
            args.extend(["--high-watermark".into(), h.to_string()]);
        }
        if !case.clean_shutdown {
            args.push("--recover".into());
        }
        self.server.send(&args).expect("send to Kafka's cleaner");
        // Settings with no flag of their own go in a settings file, as `clean` takes them.
        let settings = root.join("topics.conf");
        let mut conf = String::from("[t]\n");
        if case.index_interval_bytes != log_core::DEFAULT_INDEX_INTERVAL_BYTES {
            conf.push_str(&format!("index.interval.bytes = {}\n", case.index_interval_bytes));
        }
        std::fs::write(&settings, conf).expect("write topics.conf");
        let our_run = Command::new(&self.bin)
            .args([
                "compact",
                "--format",
                "kafka",
                "--dir",
                &ours.partition.display().to_string(),
                "--until-clean",
                "--now-ms",
                &case.now_ms.to_string(),
                "--dedupe-buffer",
                &case.buffer_bytes.to_string(),
                "--map",
                map,
                "--segment-bytes",
                &case.segment_bytes.to_string(),
                "--delete-retention-ms",
                &case.delete_retention_ms.to_string(),
                "--min-compaction-lag-ms",
                &case.min_compaction_lag_ms.to_string(),
                "--cleanup-policy",
                "compact",
                "--drop-invalid",
                "--config",
                &settings.display().to_string(),
                "--json",
            ])
            .output()
            .expect("run logcompact");
        let kafka_run = self.server.receive();
        let verdict = match (kafka_run, our_run.status.success()) {
            (Err(e), false) => {
                let _ = e;
                Verdict::BothFailed
            }
            (Err(e), true) => {
                let (i, o) = (segment_files(&input.partition), segment_files(&ours.partition));
                if i == o {
                    let message = e.to_string();
                    let first = message.lines().next().unwrap_or_default().to_owned();
                    Verdict::KafkaThrewOursChangedNothing(first)
                } else {
                    Verdict::Differ(vec![format!("Kafka's cleaner failed, ours cleaned: {e}")])
                }
            }
            (Ok(_), false) => Verdict::Differ(vec![format!(
                "ours failed ({}), Kafka's cleaner did not: {}",
                our_run.status,
                String::from_utf8_lossy(&our_run.stderr).trim()
            )]),
            (Ok(kafka_out), true) => {
                let bytes = map == "skimpy" && !case.has_snappy();
                match compare(&input, &kafka_side, &ours, bytes, !case.clean_shutdown) {
                    Verdict::Differ(mut d) => {
                        d.push(format!("Kafka's passes: {}", kafka_passes(&kafka_out)));
                        d.push(format!("ours: {}", our_passes(&our_run.stdout)));
                        Verdict::Differ(d)
                    }
                    v => v,
                }
            }
        };
        // KAFKA_DIFF_KEEP keeps every case's directories (input, kafka, ours) to look at.
        if std::env::var_os("KAFKA_DIFF_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&root);
        } else {
            eprintln!("case kept in {}", root.display());
        }
        verdict
    }
}

/// Kafka's passes in a line: `[first dirty, first uncleanable) -> next dirty` each.
fn kafka_passes(out: &serde_json::Value) -> String {
    let passes: Vec<String> = out["passes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| format!("[{}, {}) -> {}", p["first_dirty"], p["first_uncleanable"], p["next_dirty"]))
        .collect();
    format!(
        "{} (stop: {}, LSO {}, HW {})",
        passes.join(", "),
        out["stop"],
        out["last_stable_offset"],
        out["high_watermark"]
    )
}

/// Our passes in a line, from `compact --json`'s lines.
fn our_passes(stdout: &[u8]) -> String {
    let passes: Vec<String> = String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|p| format!("[{}, {}) -> {}", p["first_dirty_offset"], p["first_uncleanable_offset"], p["end_offset"]))
        .collect();
    passes.join(", ")
}

fn copy_layout(input: &Layout, to: &Path) -> Layout {
    std::fs::create_dir_all(to).expect("mkdir");
    kafka_interop::copy_tree(&input.log_dir, &to.join("logs")).expect("copy");
    Layout { partition: to.join("logs").join("t-0"), log_dir: to.join("logs"), ..input.clone() }
}

/// The differences between Kafka's files and ours: by bytes, or by the records read under each isolation level.
/// After an unclean stop Kafka's load recovers every segment and rewrites the indexes of segments no cleaner
/// touched; those are left out (the loader's work, not the cleaner's).
fn compare(input: &Layout, kafka_side: &Layout, ours: &Layout, bytes: bool, recovered: bool) -> Verdict {
    let (k, o, i) =
        (segment_files(&kafka_side.partition), segment_files(&ours.partition), segment_files(&input.partition));
    let mut found = Vec::new();
    let names: std::collections::BTreeSet<&String> = k.keys().chain(o.keys()).collect();
    let kafka_names: Vec<&String> = k.keys().filter(|n| n.ends_with(".log")).collect();
    let our_names: Vec<&String> = o.keys().filter(|n| n.ends_with(".log")).collect();
    // Segments are Kafka's only where the bytes are: another map's passes end elsewhere, and a snappy batch's
    // few bytes of difference move the segment.bytes boundary the groups are cut at.
    if bytes && kafka_names != our_names {
        found.push(format!("segments {our_names:?} against Kafka's {kafka_names:?}"));
    }
    if bytes {
        for name in names {
            let (kb, ob) = (k.get(name), o.get(name));
            if kb == ob {
                continue;
            }
            if recovered && !name.ends_with(".log") {
                let stem = &name[..name.rfind('.').unwrap_or(name.len())];
                let log = format!("{stem}.log");
                let untouched = k.get(&log) == i.get(&log) && o.get(&log) == i.get(&log);
                if untouched && ob == i.get(name) {
                    continue;
                }
            }
            found.push(match (kb, ob) {
                (Some(kb), Some(ob)) => format!(
                    "{name}: {} bytes against Kafka's {}, first difference at byte {}",
                    ob.len(),
                    kb.len(),
                    first_difference(kb, ob)
                ),
                (None, Some(_)) => format!("{name}: ours only"),
                (Some(_), None) => format!("{name}: Kafka's only"),
                (None, None) => continue,
            });
        }
    }
    // A consumer reads nothing below the log start offset.
    let from = input.log_start.unwrap_or(0);
    for committed in [false, true] {
        let (kr, or) =
            match (records(&kafka_side.partition, committed, from), records(&ours.partition, committed, from)) {
                (Ok(k), Ok(o)) => (k, o),
                (k, o) => {
                    if k != o {
                        found.push(format!("reading the records back: ours {:?}, Kafka's {:?}", o.err(), k.err()));
                    }
                    continue;
                }
            };
        if kr != or {
            let at = kr.iter().zip(&or).position(|(a, b)| a != b).unwrap_or(kr.len().min(or.len()));
            found.push(format!(
                "read_{}: {} records against Kafka's {}, first difference at record {at}: ours {:?}, Kafka's {:?}",
                if committed { "committed" } else { "uncommitted" },
                or.len(),
                kr.len(),
                or.get(at),
                kr.get(at)
            ));
        }
    }
    if found.is_empty() { Verdict::Same } else { Verdict::Differ(found) }
}

/// A record as a consumer reads it: offset, key, value, header count.
type Read = (u64, Option<Vec<u8>>, Option<Vec<u8>>, usize);

/// Every data record of the partition in `dir` in offset order; with `committed`, without those of aborted
/// transactions (as Kafka's consumer skips them: a producer's transactional batches from an aborted
/// transaction's first offset, as the `.txnindex` files give it, to its marker).
fn records(dir: &Path, committed: bool, from: u64) -> Result<Vec<Read>, String> {
    let mut aborted: Vec<AbortedTxn> = Vec::new();
    let mut logs: Vec<PathBuf> = Vec::new();
    for e in std::fs::read_dir(dir).expect("list").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".txnindex") {
            aborted.extend(AbortedTxn::decode_all(&std::fs::read(e.path()).expect("read")).expect("entries"));
        } else if name.ends_with(".log") {
            logs.push(e.path());
        }
    }
    logs.sort();
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    for log in logs {
        let bytes = std::fs::read(&log).expect("read");
        let mut pos = 0;
        while pos + log_core::kafka::HEADER_BYTES <= bytes.len() {
            let batch = log_core::Format::Kafka.parse(&bytes[pos..], true).map_err(|e| {
                format!("{} at byte {pos}: {e:?}", log.file_name().map(|n| n.to_string_lossy()).unwrap_or_default())
            })?;
            pos += batch.len();
            let h = *batch.kafka_header().expect("Kafka");
            if h.is_control() {
                continue;
            }
            let skip = committed
                && h.is_transactional()
                && aborted.iter().any(|a| {
                    a.producer_id == h.producer_id && (a.first_offset..=a.last_offset).contains(&(h.base_offset as u64))
                });
            if skip {
                continue;
            }
            let file = log.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let where_ = |e| format!("{file} at offset {}: {e:?}", h.base_offset);
            for r in batch.records(&mut scratch).map_err(where_)? {
                let r = r.map_err(where_)?;
                if r.offset < from {
                    continue;
                }
                out.push((r.offset, r.key.map(<[u8]>::to_vec), r.value.map(<[u8]>::to_vec), r.headers().count()));
            }
        }
    }
    Ok(out)
}

/// The smallest case the judge still finds `failing` on, by removing segments, batches and records and
/// simplifying what is left, one step at a time, while it fails.
pub fn shrink(judge: &mut Judge, case: &Case, map: &str, failing: impl Fn(&Verdict) -> bool) -> Case {
    let mut best = case.clone();
    let mut tries = 0;
    loop {
        let mut improved = false;
        for candidate in smaller(&best) {
            tries += 1;
            if tries > 1_500 {
                return best;
            }
            if failing(&judge.judge(&candidate, map)) {
                best = candidate;
                improved = true;
                break;
            }
        }
        if !improved {
            return best;
        }
    }
}

/// Cases one step smaller or simpler than `c`.
fn smaller(c: &Case) -> Vec<Case> {
    let mut out = Vec::new();
    let n = c.segments.len();
    for s in 0..n {
        // Without segment s.
        if n > 1 {
            let mut x = c.clone();
            x.segments.remove(s);
            if !x.snapshots.at_base.is_empty() && s < x.snapshots.at_base.len() {
                x.snapshots.at_base.remove(s);
            }
            out.push(x);
        }
        // Segment s merged into the next.
        if s + 1 < n {
            let mut x = c.clone();
            let moved = x.segments.remove(s + 1);
            x.segments[s].extend(moved);
            if s + 1 < x.snapshots.at_base.len() {
                x.snapshots.at_base.remove(s + 1);
            }
            out.push(x);
        }
    }
    for s in 0..n {
        for b in 0..c.segments[s].len() {
            let mut x = c.clone();
            x.segments[s].remove(b);
            if !x.segments[s].is_empty() || s + 1 == n {
                out.push(x);
            }
        }
    }
    for s in 0..n {
        for b in 0..c.segments[s].len() {
            let batch = &c.segments[s][b];
            for r in 0..batch.records.len() {
                if batch.records.len() > 1 && !matches!(batch.writer, super::case::Writer::Marker { .. }) {
                    let mut x = c.clone();
                    x.segments[s][b].records.remove(r);
                    out.push(x);
                }
            }
            let mut simpler = |f: &dyn Fn(&mut super::case::BatchSpec)| {
                let mut x = c.clone();
                f(&mut x.segments[s][b]);
                if x != *c {
                    out.push(x);
                }
            };
            simpler(&|b| b.codec = log_core::kafka::Compression::None);
            simpler(&|b| b.horizon = None);
            simpler(&|b| b.gap_before = 0);
            simpler(&|b| b.extra_delta = 0);
            simpler(&|b| {
                b.records.iter_mut().for_each(|r| {
                    r.headers = 0;
                    if let Some(raw) = &mut r.raw {
                        raw.headers.clear();
                    }
                })
            });
        }
    }
    let mut setting = |f: &dyn Fn(&mut Case)| {
        let mut x = c.clone();
        f(&mut x);
        if x != *c {
            out.push(x);
        }
    };
    setting(&|x| x.checkpoint_at = None);
    setting(&|x| x.log_start_at = None);
    setting(&|x| x.high_watermark_at = None);
    setting(&|x| x.snapshots = Snapshots::default());
    setting(&|x| x.snapshots.stray_at = None);
    setting(&|x| x.snapshots.at_end = false);
    setting(&|x| x.clean_shutdown = true);
    setting(&|x| x.min_compaction_lag_ms = 0);
    setting(&|x| x.index_interval_bytes = 4096);
    out
}
