//! The external pass on two threads (one reads, parses and hashes, the other partitions, sorts, judges and
//! spills): the same files as on one thread over entries enough for several chunks and many spills, and an
//! error on the judging thread ends the pass with that error, never a hang.

use std::sync::Arc;

use cleaner::{Cleaner, CleanerConfig, ManualClock, MapKind, PassOptions};

use crate::written::{NOW, files, records, written};

fn external(threads: usize, spill_dir: Option<std::path::PathBuf>) -> Cleaner {
    // 256 KiB: about 11,000 entries, so 150,000 records spill many runs.
    let config = CleanerConfig {
        map: MapKind::External,
        dedupe_buffer_bytes: 256 << 10,
        threads,
        spill_dir,
        ..CleanerConfig::default()
    };
    Cleaner::new(config, Arc::new(ManualClock::new(NOW))).expect("cleaner")
}

#[test]
fn two_threads_write_what_one_writes() {
    let (one_store, one) = written(20_000, 150_000);
    let (two_store, two) = written(20_000, 150_000);
    let (_, by_map) = written(20_000, 150_000);
    let a = external(1, None).clean(&one, PassOptions::default()).expect("one thread");
    let b = external(2, None).clean(&two, PassOptions::default()).expect("two threads");
    assert!(a.offset_map.spilled_runs > 1 && b.offset_map.spilled_runs == a.offset_map.spilled_runs, "{b:?}");
    assert_eq!(files(&one_store), files(&two_store), "the same files");
    let config = CleanerConfig { map: MapKind::Compact, dedupe_buffer_bytes: 8 << 20, ..CleanerConfig::default() };
    let mut c = Cleaner::new(config, Arc::new(ManualClock::new(NOW))).expect("cleaner");
    c.clean(&by_map, PassOptions::default()).expect("compact");
    assert_eq!(records(&two), records(&by_map), "the records a map of every key keeps");
    assert!(b.stale_dropped > 100_000, "{b:?}");
}

#[test]
fn a_spill_that_fails_on_the_judging_thread_fails_the_pass_and_changes_nothing() {
    let missing = std::env::temp_dir().join(format!("no-such-spill-dir-{}", std::process::id()));
    for threads in [1, 2] {
        let (store, log) = written(20_000, 150_000);
        let before = files(&store);
        let error = external(threads, Some(missing.clone())).clean(&log, PassOptions::default());
        let error = error.expect_err("the spill directory does not exist");
        assert!(error.to_string().contains("spill"), "{threads} threads: {error}");
        assert_eq!(files(&store), before, "{threads} threads: nothing changed");
    }
}
