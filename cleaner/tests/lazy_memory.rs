//! A large budget on a small log stays small in memory: the slot maps' tables are mapped lazily and
//! `fullkey` allocates as keys arrive, so an 8 GiB budget on a three-record log adds a few pages, not 8 GiB,
//! to the process's resident memory. (One test in its own binary, so that no other test's memory blurs it.)

use std::sync::Arc;

use cleaner::{Cleaner, CleanerConfig, MapKind, PassOptions, SystemClock};
use log_core::{Log, LogConfig};

/// The process's resident memory in KiB (Linux).
fn resident_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS");
    line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("a number")
}

#[test]
fn an_8_gib_budget_on_a_three_record_log_touches_a_few_pages() {
    for map in MapKind::ALL {
        let log = Log::open(Arc::new(storage_mem::MemStore::new()), LogConfig::default()).expect("open");
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
