//! Crash at every sync point of a run of appends and of cleaning passes, on the crash-simulating store, and
//! reopen from what would have been on disk (with torn tails): no record that was synced before the crash is
//! lost, offsets never change, every key keeps its latest value, and a reader sees the log from before the
//! pass or from after it, never a half-cleaned one. `check` runs on every crash image before anything opens
//! it for writing and must find every record intact (what the crash left is for the next open to repair).

use std::sync::Arc;

use cleaner::{Cleaner, CleanerConfig, ManualClock, MapKind, PassOptions};
use conformance::scenarios::{Segments, segments, value_view};
use log_core::{Error, Log, LogConfig, SegmentStore, SyncPolicy};
use storage_mem::crash::CrashStore;

/// `check` on a crash image, before any writable open: a crash never leaves a problem, only notices. (A crash
/// before the log's first segment was durable leaves no log at all, which check says.)
fn check_before_recovery(image: &Arc<CrashStore>, k: u64) -> log_core::check::CheckReport {
    match log_core::check::check_store(Arc::clone(image) as Arc<dyn SegmentStore>) {
        Ok(report) => report,
        Err(p) if p.class == log_core::check::ProblemClass::NotALog && image.list().is_ok_and(|l| l.is_empty()) => {
            log_core::check::CheckReport::default()
        }
        Err(p) => panic!("crash at {k}: check before recovery found {p}"),
    }
}

fn open(store: &Arc<CrashStore>, sync: SyncPolicy) -> Result<Log, Error> {
    open_with(store, sync, 400)
}

/// Opens with `segment_bytes`, which is also the most a group of cleaned segments merges into.
fn open_with(store: &Arc<CrashStore>, sync: SyncPolicy, segment_bytes: u64) -> Result<Log, Error> {
    let config = LogConfig { segment_bytes, index_interval_bytes: 64, sync };
    Log::open(Arc::clone(store) as Arc<dyn SegmentStore>, log_core::OpenOptions::new(config))
}

/// The intended value of offset `o` in the append run.
fn record(o: u64) -> (Vec<u8>, Option<Vec<u8>>) {
    let key = format!("k{}", o % 7).into_bytes();
    let value = (o % 5 != 4).then(|| format!("value-{o}").into_bytes());
    (key, value)
}

/// Appends 60 records with rolls and explicit syncs; returns how many offsets were acknowledged durable
/// (their append, roll or sync returned `Ok` under `sync`) when the first error struck.
fn append_run(log: &Log, sync: SyncPolicy) -> u64 {
    let mut durable = 0;
    for o in 0..60u64 {
        let (key, value) = record(o);
        let appended = match &value {
            Some(v) => log.put(&key, v),
            None => log.delete(&key),
        };
        match appended {
            Ok(got) => assert_eq!(got, o),
            Err(_) => return durable,
        }
        if sync == SyncPolicy::EveryAppend {
            durable = o + 1;
        }
        if o % 9 == 8 {
            if log.roll().is_err() {
                return durable;
            }
            durable = o + 1;
        }
        if o % 20 == 19 {
            if log.sync().is_err() {
                return durable;
            }
            durable = o + 1;
        }
    }
    durable
}

fn sweep_appends(sync: SyncPolicy) {
    let dry = Arc::new(CrashStore::new());
    let points = {
        let log = open(&dry, sync).expect("open");
        assert_eq!(append_run(&log, sync), 60);
        dry.sync_points()
    };
    assert!(points > 10, "{points} sync points");
    eprintln!(
        "appends under {sync:?}: {} crash images ({points} sync points, each with and without a torn tail)",
        2 * (points + 1)
    );
    for k in 0..=points {
        for torn in [None, Some(k)] {
            let store = Arc::new(CrashStore::new());
            store.crash_at(k);
            // The crash may strike while the log is being created.
            let acked = open(&store, sync).map_or(0, |log| append_run(&log, sync));
            let image = Arc::new(store.crash_image(torn));
            let pending = check_before_recovery(&image, k);
            let log = open(&image, sync).unwrap_or_else(|e| panic!("reopen after crash at {k}: {e}"));
            assert_eq!(pending.records, log.snapshot().reader(0).count() as u64, "crash at {k}: check saw another log");
            let records: Vec<_> = log.snapshot().reader(0).collect::<Result<_, _>>().expect("readable");
            assert!(records.len() as u64 >= acked, "crash at {k}: {} records, {acked} were synced", records.len());
            for (i, r) in records.iter().enumerate() {
                assert_eq!(r.offset, i as u64, "crash at {k}: offsets changed");
                assert_eq!((r.key.clone().expect("key"), r.value.clone()), record(r.offset), "crash at {k}");
            }
            assert_eq!(log.next_offset(), records.len() as u64);
            let after = check_before_recovery(&image, k);
            assert!(after.notices.is_empty(), "crash at {k}: the open left {:?}", after.notices);
        }
    }
}

#[test]
fn crash_at_every_sync_point_of_appends_with_sync_on_every_append() {
    sweep_appends(SyncPolicy::EveryAppend);
}

#[test]
fn crash_at_every_sync_point_of_appends_with_sync_on_roll() {
    sweep_appends(SyncPolicy::OnRoll);
}

const NOW: i64 = 5_000_000;

/// A log with six closed segments, stamped and fresh tombstones, an earlier pass, and an active segment,
/// reopened with `segment_bytes` for what follows.
fn build(store: &Arc<CrashStore>, clock: &Arc<ManualClock>, segment_bytes: u64) -> Log {
    let log = build_small(store, clock);
    if segment_bytes == 400 {
        return log;
    }
    drop(log);
    open_with(store, SyncPolicy::OnRoll, segment_bytes).expect("reopen")
}

fn build_small(store: &Arc<CrashStore>, clock: &Arc<ManualClock>) -> Log {
    let log = open(store, SyncPolicy::OnRoll).expect("open");
    for i in 0..40u32 {
        let key = format!("k{}", i % 9);
        if i % 6 == 5 {
            log.delete(key.as_bytes()).expect("del");
        } else {
            log.put(key.as_bytes(), format!("v{i}").as_bytes()).expect("put");
        }
    }
    log.roll().expect("roll");
    pass(&log, clock, 170, false).expect("first pass");
    for i in 40..70u32 {
        let key = format!("k{}", i % 11);
        if i % 7 == 3 {
            log.delete(key.as_bytes()).expect("del");
        } else {
            log.put(key.as_bytes(), format!("v{i}").as_bytes()).expect("put");
        }
    }
    log.roll().expect("roll");
    log.put(b"active", b"untouched").expect("put");
    log.sync().expect("sync");
    log
}

/// A pass with `map` in a budget that holds `keys` keys.
fn pass_with(
    map: MapKind,
    log: &Log,
    clock: &Arc<ManualClock>,
    keys: usize,
    purge: bool,
) -> Result<cleaner::CleanStats, cleaner::Error> {
    let config = CleanerConfig { map, dedupe_buffer_bytes: map.bytes_for(keys, 0.9, 16), ..CleanerConfig::default() };
    let mut c = Cleaner::new(config, Arc::clone(clock) as Arc<dyn cleaner::Clock>)?;
    c.clean(log, PassOptions { purge, ..PassOptions::default() })
}

/// The setup passes (building the log, finishing it after a crash) always use Kafka's map.
fn pass(log: &Log, clock: &Arc<ManualClock>, keys: usize, purge: bool) -> Result<cleaner::CleanStats, cleaner::Error> {
    pass_with(MapKind::Skimpy, log, clock, keys, purge)
}

fn until_clean(log: &Log, clock: &Arc<ManualClock>) -> Segments {
    while pass(log, clock, 170, false).expect("pass").map_full {}
    segments(log)
}

/// Output of an earlier pass that failed without cleaning up: a `.cleaned` file recovery must not mistake
/// for this pass's.
fn leave_stray(store: &CrashStore) {
    let name = log_core::format::native::names::file_name(99, log_core::format::native::names::FileKind::Cleaned);
    let file = store.create(&name).expect("create stray");
    file.append(b"left by a failed pass").expect("write stray");
    file.sync().expect("sync stray");
    store.sync_dir().expect("sync directory");
}

/// What a sweep's pass must show it did.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Something changed.
    Change,
    /// Segments merged into one named after a later segment of its group (a head marker, the output, a tail
    /// marker).
    Grouping,
}

fn sweep_pass(map: MapKind, keys: usize, purge: bool, stray: bool) {
    sweep(map, keys, purge, stray, 400, Expect::Change);
}

fn sweep(map: MapKind, keys: usize, purge: bool, stray: bool, segment_bytes: u64, expect: Expect) {
    let clock = Arc::new(ManualClock::new(NOW));
    // Dry run: the states before and after the pass, the final state, and the pass's sync points.
    let dry = Arc::new(CrashStore::new());
    let log = build(&dry, &clock, segment_bytes);
    if stray {
        leave_stray(&dry);
    }
    let (before, checkpoint_before, view) = (segments(&log), log.cleaner_checkpoint(), value_view(&log));
    let first = dry.sync_points();
    let stats = pass_with(map, &log, &clock, keys, purge).expect("pass");
    let last = dry.sync_points();
    let (after, checkpoint_after) = (segments(&log), log.cleaner_checkpoint());
    assert_ne!(before, after, "the pass must change something for the sweep to mean anything");
    assert!(stats.segments_rewritten + stats.segments_removed >= 1);
    if expect == Expect::Grouping {
        assert!(
            stats.segments_merged >= 1 && stats.segments_removed >= 1,
            "no group with a head and a tail: {stats:?}"
        );
        // The output is named after a later segment of its group than the first.
        assert!(after.len() + 2 <= before.len() && after[0].0 > before[0].0, "{before:?} -> {after:?}");
    }
    let final_state = until_clean(&log, &clock);
    drop(log);
    assert!(last > first + 3, "{} sync points in the pass", last - first);
    eprintln!("pass ({map}, {keys} keys, purge {purge}, stray {stray}): {} crash images", 2 * (last - first + 1));
    for k in first..=last {
        for torn in [None, Some(k)] {
            let store = Arc::new(CrashStore::new());
            let log = build(&store, &clock, segment_bytes);
            if stray {
                leave_stray(&store);
            }
            store.crash_at(k);
            let result = pass_with(map, &log, &clock, keys, purge);
            assert_eq!(result.is_ok(), k == last, "crash at {k}");
            if k < last {
                // Every sync point is a sync the log must not retry: the failed one poisons it.
                assert!(log.is_poisoned(), "crash at {k}: the failed sync did not poison the log");
            }
            drop(log);
            // Every prefix of the name changes since the last directory sync, as a file system journaling
            // them in order may leave them.
            for applied in 0..=store.pending_name_changes() {
                let image = Arc::new(store.crash_image_ordered(torn, applied));
                let pending = check_before_recovery(&image, k);
                let log = open_with(&image, SyncPolicy::OnRoll, segment_bytes)
                    .unwrap_or_else(|e| panic!("reopen after crash at {k}: {e}"));
                assert_eq!(
                    pending.records,
                    log.snapshot().reader(0).count() as u64,
                    "crash at {k}: check saw another log"
                );
                let seen = segments(&log);
                assert!(seen == before || seen == after, "crash at {k}: half-cleaned log {seen:?}");
                if seen == before {
                    assert_eq!(
                        log.cleaner_checkpoint(),
                        checkpoint_before,
                        "crash at {k}: checkpoint moved without the swap"
                    );
                } else {
                    assert!([checkpoint_before, checkpoint_after].contains(&log.cleaner_checkpoint()));
                }
                assert_eq!(value_view(&log), view, "crash at {k}: a key lost its latest value");
                let after = check_before_recovery(&image, k);
                assert!(after.notices.is_empty(), "crash at {k}: the open left {:?}", after.notices);
                assert_eq!(until_clean(&log, &clock), final_state, "crash at {k}: passes after recovery diverge");
            }
        }
    }
}

#[test]
fn crash_at_every_sync_point_of_a_full_pass() {
    for map in MapKind::ALL {
        sweep_pass(map, 170, false, false);
    }
}

#[test]
fn crash_at_every_sync_point_of_a_pass_with_stray_output_of_a_failed_one() {
    for map in MapKind::ALL {
        sweep_pass(map, 170, false, true);
    }
}

#[test]
fn crash_at_every_sync_point_of_a_grouped_pass() {
    for map in MapKind::ALL {
        sweep(map, 170, false, false, 4000, Expect::Grouping);
    }
}

#[test]
fn crash_at_every_sync_point_of_a_partial_pass() {
    for map in MapKind::ALL {
        sweep_pass(map, 6, false, false);
    }
}

#[test]
fn crash_at_every_sync_point_of_a_purge_pass() {
    for map in MapKind::ALL {
        sweep_pass(map, 170, true, false);
    }
}
