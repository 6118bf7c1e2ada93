//! Crash at every sync point of appends and of cleaning passes on a Kafka partition (the partition and its
//! log directory, the broker's `cleaner-offset-checkpoint`, each on a crash-simulating store), and reopen from
//! what would have been on disk, with torn tails: no synced record is lost, offsets never change, every key
//! keeps its latest value, `check` finds every record intact before anything opens the image for writing, and
//! passes after recovery converge to the same log.
//!
//! Kafka's cleaner swaps one group of segments at a time (so does this one, with Kafka's file protocol, so that
//! a broker recovers our crashes as its own), so a crash in the middle of a pass leaves the groups below some
//! base cleaned and the rest as they were; and a broker's recovery of a committed swap keeps the segments of
//! the group past the cleaned segment's last offset (they held only records the pass dropped). Both leave a
//! log whose records lie between the pass's result and the log before it, which is what is checked here.

use std::collections::BTreeSet;
use std::sync::Arc;

use cleaner::{Cleaner, CleanerConfig, ManualClock, MapKind, PassOptions};
use conformance::scenarios::{Segments, segments, value_view};
use log_core::{CheckpointFile, Error, Log, LogConfig, SegmentStore, SyncPolicy};
use storage_mem::crash::CrashStore;

/// A partition and its log directory.
#[derive(Clone)]
struct Disk {
    partition: Arc<CrashStore>,
    log_dir: Arc<CrashStore>,
}

impl Disk {
    fn new() -> Disk {
        Disk { partition: Arc::new(CrashStore::new()), log_dir: Arc::new(CrashStore::new()) }
    }

    fn checkpoint(&self) -> CheckpointFile {
        CheckpointFile::LogDir {
            dir: Arc::clone(&self.log_dir) as Arc<dyn SegmentStore>,
            topic: "t".into(),
            partition: 0,
        }
    }

    /// Crash both at the `k`-th sync point of the partition (the log directory's syncs are the checkpoint's).
    fn crash_at(&self, k: u64) {
        self.partition.crash_at(k);
    }

    /// The disk after the crash, with the first `applied` of the partition's name changes since its last
    /// directory sync durable too (a file system journaling them in order).
    fn image(&self, torn: Option<u64>, applied: usize) -> Disk {
        Disk {
            partition: Arc::new(self.partition.crash_image_ordered(torn, applied)),
            log_dir: Arc::new(self.log_dir.crash_image(torn.map(|t| t.rotate_left(13)))),
        }
    }

    fn pending(&self) -> usize {
        self.partition.pending_name_changes()
    }

    fn sync_points(&self) -> u64 {
        self.partition.sync_points()
    }
}

fn check_before_recovery(disk: &Disk, k: &dyn std::fmt::Display) -> log_core::check::CheckReport {
    let store = Arc::clone(&disk.partition) as Arc<dyn SegmentStore>;
    match log_core::check::check_kafka(store, disk.checkpoint()) {
        Ok(report) => report,
        Err(p)
            if p.class == log_core::check::ProblemClass::NotALog
                && disk.partition.list().is_ok_and(|l| l.is_empty()) =>
        {
            log_core::check::CheckReport::default()
        }
        Err(p) => panic!("crash at {k}: check before recovery found {p}"),
    }
}

fn open_with(disk: &Disk, sync: SyncPolicy, segment_bytes: u64) -> Result<Log, Error> {
    let config = LogConfig { segment_bytes, index_interval_bytes: 64, sync };
    Log::open(
        Arc::clone(&disk.partition) as Arc<dyn SegmentStore>,
        log_core::OpenOptions::kafka(config, disk.checkpoint()),
    )
}

fn record(o: u64) -> (Vec<u8>, Option<Vec<u8>>) {
    let key = format!("k{}", o % 7).into_bytes();
    let value = (o % 5 != 4).then(|| format!("value-{o}").into_bytes());
    (key, value)
}

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
    let dry = Disk::new();
    let points = {
        let log = open_with(&dry, sync, 800).expect("open");
        assert_eq!(append_run(&log, sync), 60);
        dry.sync_points()
    };
    assert!(points > 10, "{points} sync points");
    eprintln!("kafka appends under {sync:?}: {} crash images", 2 * (points + 1));
    for k in 0..=points {
        for torn in [None, Some(k)] {
            let disk = Disk::new();
            disk.crash_at(k);
            let acked = open_with(&disk, sync, 800).map_or(0, |log| append_run(&log, sync));
            let image = disk.image(torn, 0);
            let pending = check_before_recovery(&image, &k);
            let log = open_with(&image, sync, 800).unwrap_or_else(|e| panic!("reopen after crash at {k}: {e}"));
            assert_eq!(pending.records, log.snapshot().reader(0).count() as u64, "crash at {k}: check saw another log");
            let records: Vec<_> = log.snapshot().reader(0).collect::<Result<_, _>>().expect("readable");
            assert!(records.len() as u64 >= acked, "crash at {k}: {} records, {acked} were synced", records.len());
            for (i, r) in records.iter().enumerate() {
                assert_eq!(r.offset, i as u64, "crash at {k}: offsets changed");
                assert_eq!((r.key.clone().expect("key"), r.value.clone()), record(r.offset), "crash at {k}");
            }
            assert_eq!(log.next_offset(), records.len() as u64);
            let after = check_before_recovery(&image, &k);
            assert!(after.notices.is_empty(), "crash at {k}: the open left {:?}", after.notices);
        }
    }
}

#[test]
fn crash_at_every_sync_point_of_kafka_appends_with_sync_on_every_append() {
    sweep_appends(SyncPolicy::EveryAppend);
}

#[test]
fn crash_at_every_sync_point_of_kafka_appends_with_sync_on_roll() {
    sweep_appends(SyncPolicy::OnRoll);
}

const NOW: i64 = 5_000_000;

/// Six closed segments, stamped and fresh tombstones, an earlier pass, an active segment.
fn build(disk: &Disk, clock: &Arc<ManualClock>, segment_bytes: u64) -> Log {
    let log = open_with(disk, SyncPolicy::OnRoll, 800).expect("open");
    for i in 0..40u32 {
        let key = format!("k{}", i % 9);
        if i % 6 == 5 {
            log.delete(key.as_bytes()).expect("del");
        } else {
            log.put(key.as_bytes(), format!("v{i}").as_bytes()).expect("put");
        }
    }
    log.roll().expect("roll");
    pass_with(MapKind::Skimpy, &log, clock, 170, false).expect("first pass");
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
    drop(log);
    open_with(disk, SyncPolicy::OnRoll, segment_bytes).expect("reopen")
}

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

/// Passes until one changes nothing: Kafka's groups keep their heads, and a pass over shrunken segments may
/// merge more of them, so the log settles only once a pass leaves it as it was.
fn until_clean(log: &Log, clock: &Arc<ManualClock>) -> Segments {
    for _ in 0..50 {
        let before = segments(log);
        let full = pass_with(MapKind::Skimpy, log, clock, 170, false).expect("pass").map_full;
        if !full && segments(log) == before {
            return before;
        }
    }
    panic!("passes never settle");
}

/// Every record of a segment listing.
fn records(s: &Segments) -> BTreeSet<String> {
    s.iter().flat_map(|(_, recs, _)| recs.iter().cloned()).collect()
}

fn leave_stray(disk: &Disk) {
    let name = log_core::kafka::files::name(
        99,
        log_core::kafka::files::SegmentFile::Log,
        log_core::kafka::files::Stage::Cleaned,
    );
    let file = disk.partition.create(&name).expect("create stray");
    file.append(b"left by a failed pass").expect("write stray");
    file.sync().expect("sync stray");
    disk.partition.sync_dir().expect("sync directory");
}

fn sweep(map: MapKind, keys: usize, purge: bool, stray: bool, segment_bytes: u64) {
    let clock = Arc::new(ManualClock::new(NOW));
    let dry = Disk::new();
    let log = build(&dry, &clock, segment_bytes);
    if stray {
        leave_stray(&dry);
    }
    let (before, view) = (segments(&log), value_view(&log));
    let checkpoint_before = log.cleaner_checkpoint();
    let first = dry.sync_points();
    let stats = pass_with(map, &log, &clock, keys, purge).expect("pass");
    let last = dry.sync_points();
    let (after, checkpoint_after) = (segments(&log), log.cleaner_checkpoint());
    assert_ne!(before, after, "the pass must change something for the sweep to mean anything");
    assert!(stats.segments_rewritten >= 1);
    let final_state = until_clean(&log, &clock);
    drop(log);
    assert!(last > first + 3, "{} sync points in the pass", last - first);
    let (all_before, all_after) = (records(&before), records(&after));
    eprintln!(
        "kafka pass ({map}, {keys} keys, purge {purge}, stray {stray}, segment.bytes {segment_bytes}): {} crash images",
        2 * (last - first + 1)
    );
    for k in first..=last {
        for torn in [None, Some(k)] {
            let disk = Disk::new();
            let log = build(&disk, &clock, segment_bytes);
            if stray {
                leave_stray(&disk);
            }
            disk.crash_at(k);
            let result = pass_with(map, &log, &clock, keys, purge);
            assert_eq!(result.is_ok(), k == last, "crash at {k}");
            if k < last {
                assert!(log.is_poisoned(), "crash at {k}: the failed sync did not poison the log");
            }
            drop(log);
            for applied in 0..=disk.pending() {
                let image = disk.image(torn, applied);
                let k = format!("{k} (+{applied} name changes)");
                let pending = check_before_recovery(&image, &k);
                let log = open_with(&image, SyncPolicy::OnRoll, segment_bytes)
                    .unwrap_or_else(|e| panic!("reopen after crash at {k}: {e}"));
                assert_eq!(
                    pending.records,
                    log.snapshot().reader(0).count() as u64,
                    "crash at {k}: check saw another log"
                );
                let seen = segments(&log);
                let all_seen = records(&seen);
                assert!(all_seen.is_subset(&all_before), "crash at {k}: records from nowhere {seen:?}");
                assert!(all_after.is_subset(&all_seen), "crash at {k}: a record the pass kept is gone {seen:?}");
                assert_eq!(seen.last(), before.last(), "crash at {k}: the active segment was touched");
                if seen == before {
                    assert_eq!(
                        log.cleaner_checkpoint(),
                        checkpoint_before,
                        "crash at {k}: checkpoint moved without the swap"
                    );
                }
                assert!([checkpoint_before, checkpoint_after].contains(&log.cleaner_checkpoint()), "crash at {k}");
                assert_eq!(value_view(&log), view, "crash at {k}: a key lost its latest value");
                let after = check_before_recovery(&image, &k);
                assert!(after.notices.is_empty(), "crash at {k}: the open left {:?}", after.notices);
                assert_eq!(until_clean(&log, &clock), final_state, "crash at {k}: passes after recovery diverge");
            }
        }
    }
}

#[test]
fn crash_at_every_sync_point_of_a_kafka_pass() {
    for map in MapKind::ALL {
        sweep(map, 170, false, false, 800);
    }
}

#[test]
fn crash_at_every_sync_point_of_a_kafka_pass_with_stray_output_of_a_failed_one() {
    sweep(MapKind::Compact, 170, false, true, 800);
}

#[test]
fn crash_at_every_sync_point_of_a_grouped_kafka_pass() {
    for map in MapKind::ALL {
        sweep(map, 170, false, false, 8000);
    }
}

#[test]
fn crash_at_every_sync_point_of_a_partial_kafka_pass() {
    for map in MapKind::ALL {
        sweep(map, 6, false, false, 800);
    }
}

#[test]
fn crash_at_every_sync_point_of_a_kafka_purge_pass() {
    for map in MapKind::ALL {
        sweep(map, 170, true, false, 800);
    }
}
