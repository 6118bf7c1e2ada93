//! A large budget on a small log stays small in memory: the slot maps' tables are mapped lazily and
//! `fullkey` allocates as keys arrive, so an 8 GiB budget on a three-record log adds a few pages, not 8 GiB,
//! to the process's resident memory. (One test in its own binary, so that no other test's memory blurs it.)

use std::sync::Arc;

use cleaner::{Cleaner, CleanerConfig, MapKind, PassOptions, SystemClock};
use log_core::{Log, LogConfig};

mod memory_probe;
use memory_probe::{peak_kib_during, status_kib};

/// The process's resident memory in KiB (Linux).
fn resident_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS");
    line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("a number")
}

#[test]
fn an_8_gib_budget_on_a_three_record_log_touches_a_few_pages() {
    for map in MapKind::ALL {
        let log = Log::open(Arc::new(storage_mem::MemStore::new()), log_core::OpenOptions::new(LogConfig::default()))
            .expect("open");
        log.put(b"a", b"1").expect("put");
        log.put(b"b", b"1").expect("put");
        log.put(b"a", b"2").expect("put");
        log.roll().expect("roll");
        let before = resident_kib();
        let config = CleanerConfig { map, dedupe_buffer_bytes: 8 << 30, ..CleanerConfig::default() };
        let mut cleaner = Cleaner::new(config, Arc::new(SystemClock)).expect("an 8 GiB budget is mapped lazily");
        let stats = cleaner.clean(&log, PassOptions::default()).expect("pass");
        let grown = resident_kib().saturating_sub(before);
        assert_eq!(stats.pass2.records_kept, 2, "{map}");
        assert!(grown < 16 << 10, "{map}: resident memory grew by {grown} KiB for an 8 GiB budget");
        assert!(stats.offset_map.touched_bytes < 1 << 20, "{map}: {} bytes touched", stats.offset_map.touched_bytes);
        // A second pass reuses the budget and clears only what the first touched.
        cleaner.clean(&log, PassOptions::default()).expect("second pass");
        assert!(resident_kib().saturating_sub(before) < 16 << 10, "{map}");
    }
}

#[test]
fn a_16_gib_budget_on_100_thousand_keys_holds_what_the_keys_need() {
    // The log in files, so that the process's anonymous memory is the cleaner's: 400 thousand records over
    // 100 thousand keys, every record dirty.
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(storage_file::FileStore::open(dir.path()).expect("store"));
    let log =
        Log::open(store, log_core::OpenOptions::new(LogConfig { segment_bytes: 8 << 20, ..LogConfig::default() }))
            .expect("open");
    let workload = log_core::workload::Workload {
        records: 400_000,
        keys: 100_000,
        value_bytes: 20,
        tombstone_fraction: 0.0,
        seed: 3,
    };
    workload.append_to(&log, 1_000, |_| {}).expect("append");
    log.roll().expect("roll");
    for map in MapKind::ALL {
        let before = status_kib("RssAnon:");
        let config = CleanerConfig { map, dedupe_buffer_bytes: 16 << 30, ..CleanerConfig::default() };
        let mut cleaner = Cleaner::new(config, Arc::new(SystemClock)).expect("a 16 GiB budget is address space");
        let stats = cleaner.clean(&log, PassOptions::default()).expect("pass");
        let grown = status_kib("RssAnon:").saturating_sub(before);
        assert!(!stats.map_full, "{map}: one pass");
        let m = &stats.offset_map;
        assert!(m.memory_bytes > 15 << 30, "{map}: the budget is reserved: {m:?}");
        // What the keys need: compact grows with them; skimpy sizes for the 400 thousand offsets; fullkey holds
        // the keys it saw.
        assert!(m.allocated_bytes < 12 << 20, "{map}: {m:?}");
        assert!(m.touched_bytes <= m.allocated_bytes + (64 << 10), "{map}: {m:?}");
        assert!(grown < 20 << 10, "{map}: anonymous memory grew by {grown} KiB for 100 thousand keys");
        drop(cleaner);
        // Later passes find the log clean; the next map starts from a quiet process.
        log.set_cleaner_checkpoint(0);
    }
}

#[test]
fn a_pass_over_a_large_file_log_holds_a_window_of_it() {
    // 160 MB of records in 32 MiB segments, every key written twice, all of it dirty.
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(storage_file::FileStore::open(dir.path()).expect("store"));
    let log =
        Log::open(store, log_core::OpenOptions::new(LogConfig { segment_bytes: 32 << 20, ..LogConfig::default() }))
            .expect("open");
    let workload = log_core::workload::Workload {
        records: 160_000,
        keys: 80_000,
        value_bytes: 1_000,
        tombstone_fraction: 0.0,
        seed: 5,
    };
    workload.append_to(&log, 1_000, |_| {}).expect("append");
    log.roll().expect("roll");
    let bytes: u64 = log.snapshot().closed().iter().map(|s| s.size()).sum();
    assert!(bytes > 150 << 20, "{bytes}");
    let config = CleanerConfig { map: MapKind::Compact, dedupe_buffer_bytes: 64 << 20, ..CleanerConfig::default() };
    let mut cleaner = Cleaner::new(config, Arc::new(SystemClock)).expect("cleaner");
    let before = status_kib("RssFile:");
    let (stats, peak) = peak_kib_during("RssFile:", || cleaner.clean(&log, PassOptions::default()).expect("pass"));
    assert!(!stats.map_full && stats.pass2.records_read >= 160_000, "{stats:?}");
    // Both passes read every byte; what stays mapped in memory is a few windows (8 MiB each), not the log.
    let held = peak.saturating_sub(before);
    assert!(held < 48 << 10, "file-backed memory rose by {held} KiB over a {} MiB log", bytes >> 20);
}
