//! Storage benchmark: append throughput (default sync policy and sync on every append), sequential read
//! through the mmap view, a cleaning pass on files against the same pass in memory, and open/recovery time.
//!
//! `cargo run --release -p bench --bin storage-bench -- [--bytes 1GiB] [--keys 1000000] [--dir DIR]`
//! Prints one JSON object. Timings are of one run on a shared machine: compare ratios, not absolutes.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use cleaner::{Cleaner, CleanerConfig, PassOptions, SystemClock};
use log_core::workload::Workload;
use log_core::{Log, LogConfig, SegmentStore, SyncPolicy};
use serde::Serialize;

#[derive(Debug, Serialize, Default)]
struct Report {
    log_bytes: u64,
    records: u64,
    value_bytes: usize,
    keys: u64,
    append_default_policy_mb_per_s: f64,
    append_default_policy_records_per_s: f64,
    append_sync_every_append_records_per_s: f64,
    append_sync_every_append_mb_per_s: f64,
    read_mmap_first_touch_gb_per_s: f64,
    read_mmap_raw_scan_gb_per_s: f64,
    read_mmap_decode_gb_per_s: f64,
    read_mmap_records_per_s: f64,
    clean_file_seconds: f64,
    clean_mem_seconds: f64,
    clean_records_kept: u64,
    open_with_index_hints_seconds: f64,
    open_rebuilding_indexes_seconds: f64,
    open_after_torn_tail_seconds: f64,
}

/// Append throughput, a sequential read, a cleaning pass on files against the same pass in memory, and open
/// time. Prints one JSON object.
#[derive(clap::Parser)]
#[command(name = "storage-bench")]
struct Args {
    /// Bytes of the log written.
    #[arg(long, value_parser = bench::args::bytes, default_value = "1GiB")]
    bytes: u64,
    /// Distinct keys.
    #[arg(long, value_parser = bench::args::count, default_value = "1000000")]
    keys: u64,
    /// Where the logs go (default: a new temporary directory).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

fn file_log(dir: &Path, sync: SyncPolicy) -> Log {
    let store = Arc::new(storage_file::FileStore::open(dir).expect("open directory"));
    Log::open(store, log_core::OpenOptions::new(LogConfig { sync, ..LogConfig::default() })).expect("open log")
}

fn clean(log: &Log) -> (f64, u64) {
    let config = CleanerConfig::default();
    let mut c = Cleaner::new(config, Arc::new(SystemClock)).expect("map");
    let started = Instant::now();
    let stats = c.clean(log, PassOptions::default()).expect("pass");
    (started.elapsed().as_secs_f64(), stats.pass2.records_kept)
}

fn main() {
    cleaner::allocator::return_large_frees_to_the_system();
    let a: Args = bench::args::parse_or_exit();
    let (bytes, keys) = (a.bytes, a.keys);
    let tmp = tempfile::tempdir().expect("tempdir");
    let root: PathBuf = a.dir.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    // The run writes its logs in these and removes them: never one it did not make.
    for sub in ["append", "sync-every"] {
        let p = root.join(sub);
        if p.exists() {
            eprintln!(
                "error: {} exists already: storage-bench writes and removes its own logs there; remove it or give another --dir",
                p.display()
            );
            std::process::exit(2);
        }
    }
    let value_bytes = 100;
    // A frame of a 16-byte key and a 100-byte value is 154 bytes.
    let records = bytes / 154;
    let workload = Workload { records, keys, value_bytes, tombstone_fraction: 0.0, seed: 1 };
    let mut r = Report { log_bytes: bytes, records, value_bytes, keys, ..Report::default() };

    // Appends, default policy (sync on roll), then a roll to seal everything.
    let dir = root.join("append");
    let log = file_log(&dir, SyncPolicy::OnRoll);
    let started = Instant::now();
    workload.append_to(&log, 0, |_| {}).expect("append");
    log.roll().expect("roll");
    let s = started.elapsed().as_secs_f64();
    r.append_default_policy_mb_per_s = bytes as f64 / s / 1e6;
    r.append_default_policy_records_per_s = records as f64 / s;
    eprintln!("appended {records} records in {s:.2}s");

    // Sequential read through the mmap view: a raw word scan, then a full decode with CRC checks.
    let snap = log.snapshot();
    let scan = || {
        let started = Instant::now();
        let mut sum = 0u64;
        for seg in snap.closed() {
            let (words, _) = seg.bytes().unwrap_or_default().as_chunks::<8>();
            sum = words.iter().fold(sum, |acc, w| acc.wrapping_add(u64::from_le_bytes(*w)));
        }
        black_box(sum);
        bytes as f64 / started.elapsed().as_secs_f64() / 1e9
    };
    r.read_mmap_first_touch_gb_per_s = scan();
    r.read_mmap_raw_scan_gb_per_s = scan();
    let started = Instant::now();
    let mut n = 0u64;
    for seg in snap.closed() {
        seg.for_each_batch(|placed| {
            black_box(placed.batch.native_record().map(|r| r.key));
            n += 1;
            Ok(())
        })
        .expect("valid");
    }
    let s = started.elapsed().as_secs_f64();
    r.read_mmap_decode_gb_per_s = bytes as f64 / s / 1e9;
    r.read_mmap_records_per_s = n as f64 / s;
    drop(snap);

    drop(log);

    // Open/recovery: with hints, rebuilding every index, and after a torn tail.
    let started = Instant::now();
    let log = file_log(&dir, SyncPolicy::OnRoll);
    r.open_with_index_hints_seconds = started.elapsed().as_secs_f64();
    drop(log);
    for entry in std::fs::read_dir(&dir).expect("list") {
        let p = entry.expect("entry").path();
        if p.extension().is_some_and(|e| e == "index") {
            std::fs::remove_file(p).expect("remove hint");
        }
    }
    let started = Instant::now();
    let log = file_log(&dir, SyncPolicy::OnRoll);
    r.open_rebuilding_indexes_seconds = started.elapsed().as_secs_f64();
    log.put(b"tail", &[7u8; 100]).expect("put");
    let active =
        log_core::format::native::names::file_name(log.active_base(), log_core::format::native::names::FileKind::Log);
    log.sync().expect("sync");
    log.store().open(&active).expect("open").append(&[99, 0, 0, 0, 1]).expect("tear");
    drop(log);
    let started = Instant::now();
    let log = file_log(&dir, SyncPolicy::OnRoll);
    r.open_after_torn_tail_seconds = started.elapsed().as_secs_f64();
    assert!(log.recovery_report().truncated_tail.is_some());

    // Cleaning pass on files (the log holds one more record than the workload: the torn-tail test's).
    log.roll().expect("roll");
    let (s, kept) = clean(&log);
    r.clean_file_seconds = s;
    r.clean_records_kept = kept;
    eprintln!("file pass {s:.2}s");
    drop(log);
    std::fs::remove_dir_all(&dir).expect("clean up");

    // The same pass in memory.
    let mem: Arc<dyn SegmentStore> = Arc::new(storage_mem::MemStore::new());
    let log = Log::open(mem, log_core::OpenOptions::new(LogConfig::default())).expect("open");
    workload.append_to(&log, 0, |_| {}).expect("append");
    log.roll().expect("roll");
    log.put(b"tail", &[7u8; 100]).expect("put");
    log.roll().expect("roll");
    let (s, kept) = clean(&log);
    assert_eq!(kept, r.clean_records_kept);
    r.clean_mem_seconds = s;
    drop(log);

    // Sync on every append: fsync-bound, so a smaller run.
    let dir = root.join("sync-every");
    let log = file_log(&dir, SyncPolicy::EveryAppend);
    let small = Workload { records: 3000, ..workload };
    let started = Instant::now();
    small.append_to(&log, 0, |_| {}).expect("append");
    let s = started.elapsed().as_secs_f64();
    r.append_sync_every_append_records_per_s = 3000.0 / s;
    r.append_sync_every_append_mb_per_s = 3000.0 * 154.0 / s / 1e6;
    drop(log);
    let _ = std::fs::remove_dir_all(&dir);

    println!("{}", serde_json::to_string_pretty(&r).expect("json"));
}
