//! The crash sweeps, written once over the segment format: crash at every sync point of a run of appends and of
//! a cleaning pass on the crash-simulating store, and reopen from what would have been on disk (with and
//! without a torn tail, and with every prefix of the directory's pending name changes). What must hold, in
//! either format:
//!
//! - no record acknowledged durable before the crash is lost, offsets never change, every key keeps its
//!   latest value;
//! - `check` runs on every crash image before anything opens it for writing and finds every record intact (a
//!   crash leaves only notices, which the next open repairs), and nothing after that open;
//! - the records seen after recovery lie between the pass's result and the log before it (none from nowhere,
//!   none the pass kept lost), the active segment is untouched, the cleaner checkpoint is the one from before
//!   the pass or the one after it (and the one from before while the segments are), and passes after recovery
//!   converge to the same log as passes without a crash.
//!
//! What differs between the formats is a fact of each format's protocol, stated once in [`Protocol`]: the
//! native format swaps a whole pass at once (so recovery leaves the log from before the pass or from after it,
//! never between) and names a merged group's output after a later segment of the group; Kafka's cleaner swaps
//! one group at a time (so does ours in Kafka's format, for a broker to recover our crashes as its own) and a
//! group keeps its head's base.

use std::collections::BTreeSet;
use std::sync::Arc;

use cleaner::{Cleaner, CleanerConfig, ManualClock, MapKind, PassOptions};
use log_core::{CheckpointFile, Error, Format, Log, LogConfig, OpenOptions, SegmentStore, SyncPolicy};
use storage_mem::crash::CrashStore;

use crate::scenarios::{Segments, segments, value_view};

/// The facts of a format's file protocol the sweeps depend on.
#[derive(Debug, Clone, Copy)]
struct Protocol {
    /// A segment size that rolls every few records (a Kafka batch carries a 61-byte header, so twice the
    /// native one).
    small_segment: u64,
    /// Whether a pass's groups are swapped in together (else one at a time).
    swaps_whole_pass: bool,
    /// Whether a merged group's output is named after a later segment of the group than its first.
    names_group_after_later_segment: bool,
    /// Whether the cleaner checkpoint lives in the log directory (a broker's `cleaner-offset-checkpoint`)
    /// rather than in the log's own store.
    checkpoint_in_log_dir: bool,
}

fn protocol(format: Format) -> Protocol {
    match format {
        Format::Native => Protocol {
            small_segment: 400,
            swaps_whole_pass: true,
            names_group_after_later_segment: true,
            checkpoint_in_log_dir: false,
        },
        Format::Kafka => Protocol {
            small_segment: 800,
            swaps_whole_pass: false,
            names_group_after_later_segment: false,
            checkpoint_in_log_dir: true,
        },
    }
}

/// Where a log lives: its own store and, for a Kafka partition, its broker's log directory (which holds the
/// `cleaner-offset-checkpoint`), crashed together.
struct Disk {
    format: Format,
    partition: Arc<CrashStore>,
    log_dir: Arc<CrashStore>,
}

impl Disk {
    fn new(format: Format) -> Disk {
        Disk { format, partition: Arc::new(CrashStore::new()), log_dir: Arc::new(CrashStore::new()) }
    }

    /// Where the log keeps its cleaner checkpoint: its own store, or the log directory's checkpoint file.
    fn checkpoint(&self) -> CheckpointFile {
        if protocol(self.format).checkpoint_in_log_dir {
            CheckpointFile::LogDir {
                dir: Arc::clone(&self.log_dir) as Arc<dyn SegmentStore>,
                topic: "t".into(),
                partition: 0,
            }
        } else {
            CheckpointFile::Own
        }
    }

    fn options(&self, config: LogConfig) -> OpenOptions {
        OpenOptions { format: self.format, checkpoint: self.checkpoint(), ..OpenOptions::new(config) }
    }

    /// Opens the log here with `segment_bytes`, which is also the most a group of cleaned segments merges into.
    fn open(&self, sync: SyncPolicy, segment_bytes: u64) -> Result<Log, Error> {
        let config = LogConfig { segment_bytes, index_interval_bytes: 64, sync };
        Log::open(Arc::clone(&self.partition) as Arc<dyn SegmentStore>, self.options(config))
    }

    /// The disk after the crash: what was durable, the `torn` tail, and the first `applied` of the partition's
    /// name changes since its last directory sync (a file system journaling them in order).
    fn image(&self, torn: Option<u64>, applied: usize) -> Disk {
        Disk {
            format: self.format,
            partition: Arc::new(self.partition.crash_image_ordered(torn, applied)),
            log_dir: Arc::new(self.log_dir.crash_image(torn.map(|t| t.rotate_left(13)))),
        }
    }

    /// `check` on a crash image, before any writable open: a crash never leaves a problem, only notices. (A
    /// crash before the log's first segment was durable leaves no log at all, which check says.)
    fn check(&self, k: &dyn std::fmt::Display) -> log_core::check::CheckReport {
        let store = Arc::clone(&self.partition) as Arc<dyn SegmentStore>;
        match log_core::check::check(store, self.format, self.checkpoint(), None) {
            Ok(report) => report,
            Err(p)
                if p.class == log_core::check::ProblemClass::NotALog
                    && self.partition.list().is_ok_and(|l| l.is_empty()) =>
            {
                log_core::check::CheckReport::default()
            }
            Err(p) => panic!("crash at {k}: check before recovery found {p}"),
        }
    }

    /// Output of an earlier pass that failed without cleaning up: a `.cleaned` file recovery must not mistake
    /// for this pass's.
    fn leave_stray(&self) {
        let file = self.partition.create(&self.format.cleaned_name(99)).expect("create stray");
        file.append(b"left by a failed pass").expect("write stray");
        file.sync().expect("sync stray");
        self.partition.sync_dir().expect("sync directory");
    }
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

/// Crashes a run of 60 appends (with rolls and syncs, under `sync`) of a log of `format` at every sync point.
///
/// # Panics
/// When a crash image loses a record acknowledged durable, changes an offset or a value, or leaves a problem.
pub fn sweep_appends(format: Format, sync: SyncPolicy) {
    let segment_bytes = protocol(format).small_segment;
    let dry = Disk::new(format);
    let points = {
        let log = dry.open(sync, segment_bytes).expect("open");
        assert_eq!(append_run(&log, sync), 60);
        dry.partition.sync_points()
    };
    assert!(points > 10, "{points} sync points");
    eprintln!("{} appends under {sync:?}: {} crash images", format.name(), 2 * (points + 1));
    for k in 0..=points {
        for torn in [None, Some(k)] {
            let disk = Disk::new(format);
            disk.partition.crash_at(k);
            // The crash may strike while the log is being created.
            let acked = disk.open(sync, segment_bytes).map_or(0, |log| append_run(&log, sync));
            let image = disk.image(torn, 0);
            let pending = image.check(&k);
            let log = image.open(sync, segment_bytes).unwrap_or_else(|e| panic!("reopen after crash at {k}: {e}"));
            assert_eq!(pending.records, log.snapshot().reader(0).count() as u64, "crash at {k}: check saw another log");
            let records: Vec<_> = log.snapshot().reader(0).collect::<Result<_, _>>().expect("readable");
            assert!(records.len() as u64 >= acked, "crash at {k}: {} records, {acked} were synced", records.len());
            for (i, r) in records.iter().enumerate() {
                assert_eq!(r.offset, i as u64, "crash at {k}: offsets changed");
                assert_eq!((r.key.clone().expect("key"), r.value.clone()), record(r.offset), "crash at {k}");
            }
            assert_eq!(log.next_offset(), records.len() as u64);
            let after = image.check(&k);
            assert!(after.notices.is_empty(), "crash at {k}: the open left {:?}", after.notices);
        }
    }
}

const NOW: i64 = 5_000_000;

/// Six closed segments, stamped and fresh tombstones, an earlier pass, and an active segment, reopened with
/// `segment_bytes` for what follows.
fn build(disk: &Disk, clock: &Arc<ManualClock>, segment_bytes: u64) -> Log {
    let log = disk.open(SyncPolicy::OnRoll, protocol(disk.format).small_segment).expect("open");
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
    drop(log);
    disk.open(SyncPolicy::OnRoll, segment_bytes).expect("reopen")
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

/// Passes until one changes nothing: Kafka's groups keep their heads, and a pass over shrunken segments may
/// merge more of them, so a log settles only once a pass leaves it as it was.
fn until_clean(log: &Log, clock: &Arc<ManualClock>) -> Segments {
    for _ in 0..50 {
        let before = segments(log);
        let full = pass(log, clock, 170, false).expect("pass").map_full;
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

/// One cleaning pass to crash at every sync point.
#[derive(Debug, Clone, Copy)]
pub struct Sweep {
    /// The format of the log.
    pub format: Format,
    /// The pass's offset map.
    pub map: MapKind,
    /// How many keys the pass's buffer holds (few make a partial pass).
    pub keys: usize,
    /// Whether the pass purges (drops every tombstone it may).
    pub purge: bool,
    /// Whether the output of an earlier failed pass lies in the store.
    pub stray: bool,
    /// Whether segments are ten times the size the log was written with, so that the pass merges groups.
    pub grouped: bool,
}

impl Sweep {
    /// A full pass with `map` over a log of `format`, nothing else asked.
    pub fn full(format: Format, map: MapKind) -> Sweep {
        Sweep { format, map, keys: 170, purge: false, stray: false, grouped: false }
    }
}

/// Crashes `sweep`'s pass at every sync point and recovers each image.
///
/// # Panics
/// When an image loses a record or a key's latest value, invents one, touches the active segment, moves the
/// checkpoint without the segments, leaves a problem, or recovers to a log whose later passes diverge.
pub fn sweep_pass(sweep: Sweep) {
    let Sweep { format, map, keys, purge, stray, grouped } = sweep;
    let protocol = protocol(format);
    let segment_bytes = if grouped { 10 * protocol.small_segment } else { protocol.small_segment };
    let clock = Arc::new(ManualClock::new(NOW));
    // Dry run: the states before and after the pass, the final state, and the pass's sync points.
    let dry = Disk::new(format);
    let log = build(&dry, &clock, segment_bytes);
    if stray {
        dry.leave_stray();
    }
    let (before, checkpoint_before, view) = (segments(&log), log.cleaner_checkpoint(), value_view(&log));
    let first = dry.partition.sync_points();
    let stats = pass_with(map, &log, &clock, keys, purge).expect("pass");
    let last = dry.partition.sync_points();
    let (after, checkpoint_after) = (segments(&log), log.cleaner_checkpoint());
    assert_ne!(before, after, "the pass must change something for the sweep to mean anything");
    assert!(stats.segments_rewritten + stats.segments_removed >= 1);
    if grouped {
        assert!(stats.segments_merged >= 1, "no group merged: {stats:?}");
        if protocol.names_group_after_later_segment {
            assert!(stats.segments_removed >= 1, "no group with a head and a tail: {stats:?}");
            assert!(after.len() + 2 <= before.len() && after[0].0 > before[0].0, "{before:?} -> {after:?}");
        }
    }
    let final_state = until_clean(&log, &clock);
    drop(log);
    assert!(last > first + 3, "{} sync points in the pass", last - first);
    let (all_before, all_after) = (records(&before), records(&after));
    let mut images = 0;
    for k in first..=last {
        for torn in [None, Some(k)] {
            let disk = Disk::new(format);
            let log = build(&disk, &clock, segment_bytes);
            if stray {
                disk.leave_stray();
            }
            disk.partition.crash_at(k);
            let result = pass_with(map, &log, &clock, keys, purge);
            assert_eq!(result.is_ok(), k == last, "crash at {k}");
            if k < last {
                // Every sync point is a sync the log must not retry: the failed one poisons it.
                assert!(log.is_poisoned(), "crash at {k}: the failed sync did not poison the log");
            }
            drop(log);
            for applied in 0..=disk.partition.pending_name_changes() {
                images += 1;
                let image = disk.image(torn, applied);
                let k = format!("{k} (+{applied} name changes, torn {torn:?})");
                let pending = image.check(&k);
                let log = image
                    .open(SyncPolicy::OnRoll, segment_bytes)
                    .unwrap_or_else(|e| panic!("reopen after crash at {k}: {e}"));
                assert_eq!(
                    pending.records,
                    log.snapshot().reader(0).count() as u64,
                    "crash at {k}: check saw another log"
                );
                let seen = segments(&log);
                if protocol.swaps_whole_pass {
                    assert!(seen == before || seen == after, "crash at {k}: half-cleaned log {seen:?}");
                }
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
                let after = image.check(&k);
                assert!(after.notices.is_empty(), "crash at {k}: the open left {:?}", after.notices);
                assert_eq!(until_clean(&log, &clock), final_state, "crash at {k}: passes after recovery diverge");
            }
        }
    }
    eprintln!("{sweep:?}: {images} crash images ({} sync points)", last - first + 1);
}

/// Expands to the crash sweeps as `#[test]` functions for one segment format: appends under both sync
/// policies, and a full, a grouped, a partial and a purging pass and one beside a failed pass's output, each
/// with every offset map.
#[macro_export]
macro_rules! crash_sweep_tests {
    ($format:expr) => {
        use cleaner::MapKind;
        use log_core::SyncPolicy;
        use $crate::crash_sweep::{Sweep, sweep_appends, sweep_pass};

        #[test]
        fn crash_at_every_sync_point_of_appends_with_sync_on_every_append() {
            sweep_appends($format, SyncPolicy::EveryAppend);
        }

        #[test]
        fn crash_at_every_sync_point_of_appends_with_sync_on_roll() {
            sweep_appends($format, SyncPolicy::OnRoll);
        }

        #[test]
        fn crash_at_every_sync_point_of_a_full_pass() {
            for map in MapKind::ALL {
                sweep_pass(Sweep::full($format, map));
            }
        }

        #[test]
        fn crash_at_every_sync_point_of_a_pass_with_stray_output_of_a_failed_one() {
            for map in MapKind::ALL {
                sweep_pass(Sweep { stray: true, ..Sweep::full($format, map) });
            }
        }

        #[test]
        fn crash_at_every_sync_point_of_a_grouped_pass() {
            for map in MapKind::ALL {
                sweep_pass(Sweep { grouped: true, ..Sweep::full($format, map) });
            }
        }

        #[test]
        fn crash_at_every_sync_point_of_a_partial_pass() {
            for map in MapKind::ALL {
                sweep_pass(Sweep { keys: 6, ..Sweep::full($format, map) });
            }
        }

        #[test]
        fn crash_at_every_sync_point_of_a_purge_pass() {
            for map in MapKind::ALL {
                sweep_pass(Sweep { purge: true, ..Sweep::full($format, map) });
            }
        }
    };
}
