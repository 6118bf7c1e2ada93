//! A budget is a bound, not an allocation (issue 31 item 4): a dedupe buffer of terabytes, far past the
//! machine's memory and swap, cleans a three-record log with every map, holding a few pages. (In its own
//! binary, so that no other test's memory blurs its resident-memory check.)

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
fn a_budget_of_terabytes_on_a_small_log_is_address_space_for_every_map() {
    // Under strict overcommit Linux ignores MAP_NORESERVE and refuses a mapping past memory and swap: the
    // budget is then an error (exit 3 from the command line), as documented; this test has nothing to show.
    let strict = std::fs::read_to_string("/proc/sys/vm/overcommit_memory").is_ok_and(|m| m.trim() == "2");
    if strict {
        eprintln!("vm.overcommit_memory is 2: a budget past memory and swap is refused there; skipped");
        return;
    }
    let spill = tempfile::tempdir().expect("tempdir");
    for map in MapKind::WITH_EXTERNAL {
        for budget in [1usize << 40, 64 << 40] {
            let log =
                Log::open(Arc::new(storage_mem::MemStore::new()), log_core::OpenOptions::new(LogConfig::default()))
                    .expect("open");
            for (k, v) in [(b"a", b"1"), (b"b", b"1"), (b"a", b"2")] {
                log.put(k, v).expect("put");
            }
            log.roll().expect("roll");
            let before = resident_kib();
            let config = CleanerConfig {
                map,
                dedupe_buffer_bytes: budget,
                spill_dir: Some(spill.path().to_path_buf()),
                ..CleanerConfig::default()
            };
            // Red before the tables asked for no swap reservation: skimpy and compact failed to map 1 TiB
            // ("Cannot allocate memory") on a machine of 23.5 GiB.
            let mut cleaner = Cleaner::new(config, Arc::new(SystemClock))
                .unwrap_or_else(|e| panic!("{map}: a budget of {} TiB: {e}", budget >> 40));
            let stats = cleaner.clean(&log, PassOptions::default()).expect("pass");
            assert_eq!(stats.pass2.records_kept, 2, "{map}");
            cleaner.clean(&log, PassOptions::default()).expect("second pass");
            let grown = resident_kib().saturating_sub(before);
            assert!(grown < 48 << 10, "{map}: resident memory grew by {grown} KiB for {} TiB", budget >> 40);
        }
    }
}
