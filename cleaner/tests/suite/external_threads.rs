//! The external pass on two threads (one reads, parses and hashes, two others partition, sort, judge and spill
//! a half of the hashes each): the same files as on one thread over entries enough for several chunks and many
//! spills, and an error on a judging thread ends the pass with that error, never a hang.

use std::sync::Arc;

use cleaner::{Cleaner, CleanerConfig, ManualClock, MapKind, PassOptions};
use log_core::SegmentStore;

use crate::written::{NOW, config, files, records, written, written_with};

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
    // Two threads judge each half of the hashes in runs of half the buffer: their runs differ, not the files.
    assert!(a.offset_map.spilled_runs > 1 && b.offset_map.spilled_runs > 1, "{a:?} {b:?}");
    assert_eq!(files(&one_store), files(&two_store), "the same files");
    let config = CleanerConfig { map: MapKind::Compact, dedupe_buffer_bytes: 8 << 20, ..CleanerConfig::default() };
    let mut c = Cleaner::new(config, Arc::new(ManualClock::new(NOW))).expect("cleaner");
    c.clean(&by_map, PassOptions::default()).expect("compact");
    assert_eq!(records(&two), records(&by_map), "the records a map of every key keeps");
    assert!(b.stale_dropped > 100_000, "{b:?}");
}

/// A spill directory gone after the cleaner took it: the pass fails when its spill outgrows memory (4 MiB; 400,000
/// records spill about 9 MB), on the judging thread when there are two.
#[test]
fn a_spill_that_fails_on_the_judging_thread_fails_the_pass_and_changes_nothing() {
    for threads in [1, 2] {
        let (store, log) = written(20_000, 400_000);
        let before = files(&store);
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cleaner = external(threads, Some(dir.path().to_path_buf()));
        drop(dir);
        let error = cleaner.clean(&log, PassOptions::default());
        let error = error.expect_err("the spill directory is gone");
        assert!(error.to_string().contains("spill"), "{threads} threads: {error}");
        assert_eq!(files(&store), before, "{threads} threads: nothing changed");
    }
}

/// A spill directory that is not there fails the pass before it reads anything, naming the directory, even where
/// the spill would have stayed in memory (a few thousand records), and nothing changes.
#[test]
fn a_missing_spill_directory_fails_the_pass_before_it_reads() {
    let missing = std::env::temp_dir().join(format!("no-such-spill-dir-{}", std::process::id()));
    for threads in [1, 2] {
        let (store, log) = written(500, 5_000);
        let before = files(&store);
        let error = external(threads, Some(missing.clone())).clean(&log, PassOptions::default());
        let error = error.expect_err("no such directory");
        assert!(error.to_string().contains("no-such-spill-dir"), "{threads} threads: {error}");
        assert!(error.to_string().contains("no such directory"), "{threads} threads: {error}");
        assert_eq!(files(&store), before, "{threads} threads: nothing changed");
    }
    // A file where the directory should be is named as what it is.
    let file = tempfile::NamedTempFile::new().expect("a file");
    let (store, log) = written(500, 5_000);
    let before = files(&store);
    let error = external(1, Some(file.path().to_path_buf())).clean(&log, PassOptions::default());
    let error = error.expect_err("a file is not a directory").to_string();
    assert!(error.contains("spill on") && error.contains("not a directory"), "{error}");
    assert_eq!(files(&store), before, "nothing changed");
}

/// The external pass's pass 1 computes no checksum (pass 2 verifies every batch it copies, as after a map's pass
/// 1): a record damaged where it still parses (a digit of its value changed) fails the pass on pass 2's check,
/// naming the segment and the frame, on one thread and on two, and nothing changes.
#[test]
fn a_damaged_record_fails_the_pass_on_pass_2s_checksum_and_changes_nothing() {
    for threads in [1, 2] {
        // A dense index: the segment's hint reaches past the damage, so opening the log does not read it.
        let config = log_core::LogConfig { index_interval_bytes: 64, ..config() };
        let (store, log) = written_with(config.clone(), 2_000, 20_000);
        let victim = log.snapshot().closed()[3].name().to_owned();
        drop(log);
        let mut bytes = files(&store).remove(&victim).expect("the segment");
        let middle = bytes.len() / 2;
        let at = bytes[middle..].windows(6).position(|w| w == b"value-").expect("a value") + middle + 6;
        bytes[at] = if bytes[at] == b'1' { b'2' } else { b'1' };
        store.delete(&victim).expect("delete");
        store.create(&victim).expect("create").append(&bytes).expect("write");
        let before = files(&store);
        let log = log_core::Log::open(Arc::clone(&store) as Arc<dyn SegmentStore>, log_core::OpenOptions::new(config))
            .expect("open: the damage is not read");
        let error = external(threads, None).clean(&log, PassOptions::default()).expect_err("damaged");
        match error {
            cleaner::Error::Log(log_core::Error::Corrupt { ref segment, position, ref kind }) => {
                assert_eq!(segment, &victim, "{threads} threads");
                assert!(position < at as u64, "{threads} threads: the frame at {position}, the damage at {at}");
                assert!(matches!(kind, log_core::CorruptKind::ChecksumMismatch { .. }), "{threads} threads: {kind:?}");
            }
            other => panic!("{threads} threads: {other}"),
        }
        drop(log);
        assert_eq!(files(&store), before, "{threads} threads: nothing changed");
    }
}
