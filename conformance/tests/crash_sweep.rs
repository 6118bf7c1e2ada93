//! Crash at every sync point of a run of appends and of cleaning passes, on the crash-simulating store, and
//! reopen from what would have been on disk (with torn tails): no record that was synced before the crash is
//! lost, offsets never change, every key keeps its latest value, and a reader sees the log from before the
//! pass or from after it, never a half-cleaned one. Plus: a failed sync or rename poisons the log.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use cleaner::{Cleaner, CleanerConfig, ManualClock, PassOptions};
use conformance::scenarios::{Segments, segments, value_view};
use log_core::{Error, Log, LogConfig, Segment, SegmentStore, SyncPolicy};
use storage_mem::MemStore;
use storage_mem::crash::CrashStore;

fn open(store: &Arc<CrashStore>, sync: SyncPolicy) -> Result<Log, Error> {
    let config = LogConfig { segment_bytes: 400, index_interval_bytes: 64, sync };
    Log::open(Arc::clone(store) as Arc<dyn SegmentStore>, config)
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
    for k in 0..=points {
        for torn in [None, Some(k)] {
            let store = Arc::new(CrashStore::new());
            store.crash_at(k);
            // The crash may strike while the log is being created.
            let acked = open(&store, sync).map_or(0, |log| append_run(&log, sync));
            let image = Arc::new(store.crash_image(torn));
            let log = open(&image, sync).unwrap_or_else(|e| panic!("reopen after crash at {k}: {e}"));
            let records: Vec<_> = log.snapshot().reader(0).collect::<Result<_, _>>().expect("readable");
            assert!(records.len() as u64 >= acked, "crash at {k}: {} records, {acked} were synced", records.len());
            for (i, r) in records.iter().enumerate() {
                assert_eq!(r.offset, i as u64, "crash at {k}: offsets changed");
                assert_eq!((r.key.clone().expect("key"), r.value.clone()), record(r.offset), "crash at {k}");
            }
            assert_eq!(log.next_offset(), records.len() as u64);
            assert!(log_core::check::check_store(&*image).is_ok(), "crash at {k}: check after recovery");
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

/// A log with six closed segments, stamped and fresh tombstones, an earlier pass, and an active segment.
fn build(store: &Arc<CrashStore>, clock: &Arc<ManualClock>) -> Log {
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
    pass(&log, clock, 1 << 12, false).expect("first pass");
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

fn pass(
    log: &Log,
    clock: &Arc<ManualClock>,
    buffer: usize,
    purge: bool,
) -> Result<cleaner::CleanStats, cleaner::Error> {
    let config = CleanerConfig { dedupe_buffer_bytes: buffer, ..CleanerConfig::default() };
    let mut c = Cleaner::new(config.skimpy_map()?, config, Arc::clone(clock) as Arc<dyn cleaner::Clock>);
    c.clean(log, PassOptions { purge })
}

fn until_clean(log: &Log, clock: &Arc<ManualClock>) -> Segments {
    while pass(log, clock, 1 << 12, false).expect("pass").map_full {}
    segments(log)
}

/// Output of an earlier pass that failed without cleaning up: a `.cleaned` file recovery must not mistake
/// for this pass's.
fn leave_stray(store: &CrashStore) {
    let name = log_core::names::file_name(99, log_core::names::FileKind::Cleaned);
    let file = store.create(&name).expect("create stray");
    file.append(b"left by a failed pass").expect("write stray");
    file.sync().expect("sync stray");
    store.sync_dir().expect("sync directory");
}

fn sweep_pass(buffer: usize, purge: bool, stray: bool) {
    let clock = Arc::new(ManualClock::new(NOW));
    // Dry run: the states before and after the pass, the final state, and the pass's sync points.
    let dry = Arc::new(CrashStore::new());
    let log = build(&dry, &clock);
    if stray {
        leave_stray(&dry);
    }
    let (before, checkpoint_before, view) = (segments(&log), log.cleaner_checkpoint(), value_view(&log));
    let first = dry.sync_points();
    let stats = pass(&log, &clock, buffer, purge).expect("pass");
    let last = dry.sync_points();
    let (after, checkpoint_after) = (segments(&log), log.cleaner_checkpoint());
    assert_ne!(before, after, "the pass must change something for the sweep to mean anything");
    assert!(stats.segments_rewritten + stats.segments_removed >= 1);
    let final_state = until_clean(&log, &clock);
    drop(log);
    assert!(last > first + 3, "{} sync points in the pass", last - first);
    for k in first..=last {
        for torn in [None, Some(k)] {
            let store = Arc::new(CrashStore::new());
            let log = build(&store, &clock);
            if stray {
                leave_stray(&store);
            }
            store.crash_at(k);
            let result = pass(&log, &clock, buffer, purge);
            assert_eq!(result.is_ok(), k == last, "crash at {k}");
            if k < last {
                assert!(log.is_poisoned() || log.put(b"x", b"y").is_err(), "a crashed store refuses writes");
            }
            drop(log);
            let image = Arc::new(store.crash_image(torn));
            let log = open(&image, SyncPolicy::OnRoll).unwrap_or_else(|e| panic!("reopen after crash at {k}: {e}"));
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
            assert!(log_core::check::check_store(&*image).is_ok(), "crash at {k}: check after recovery");
            assert_eq!(until_clean(&log, &clock), final_state, "crash at {k}: passes after recovery diverge");
        }
    }
}

#[test]
fn crash_at_every_sync_point_of_a_full_pass() {
    sweep_pass(1 << 12, false, false);
}

#[test]
fn crash_at_every_sync_point_of_a_pass_with_stray_output_of_a_failed_one() {
    sweep_pass(1 << 12, false, true);
}

#[test]
fn crash_at_every_sync_point_of_a_partial_pass() {
    sweep_pass(24 * 6, false, false);
}

#[test]
fn crash_at_every_sync_point_of_a_purge_pass() {
    sweep_pass(1 << 12, true, false);
}

/// A memory store whose sync, sync_dir or rename fails once when armed.
#[derive(Debug, Default)]
struct FlakyStore {
    inner: MemStore,
    /// Operations of the kinds above to let through before one fails (`u64::MAX`: never).
    countdown: Arc<AtomicU64>,
}

impl FlakyStore {
    fn fail_after(&self, n: u64) {
        self.countdown.store(n, Ordering::SeqCst);
    }

    fn tick(countdown: &AtomicU64) -> io::Result<()> {
        let before = countdown.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |c| c.checked_sub(1)).unwrap_or(0);
        if before == 0 {
            countdown.store(u64::MAX, Ordering::SeqCst);
            return Err(io::Error::other("injected failure"));
        }
        Ok(())
    }
}

#[derive(Debug)]
struct FlakySegment(Arc<dyn Segment>, Arc<AtomicU64>);

impl Segment for FlakySegment {
    fn len(&self) -> u64 {
        self.0.len()
    }
    fn append(&self, data: &[u8]) -> io::Result<u64> {
        self.0.append(data)
    }
    fn read_at(&self, pos: u64, out: &mut [u8]) -> io::Result<()> {
        self.0.read_at(pos, out)
    }
    fn truncate(&self, len: u64) -> io::Result<()> {
        self.0.truncate(len)
    }
    fn sync(&self) -> io::Result<()> {
        FlakyStore::tick(&self.1)?;
        self.0.sync()
    }
    fn seal(&self) -> io::Result<()> {
        self.0.seal()
    }
    fn is_sealed(&self) -> bool {
        self.0.is_sealed()
    }
    fn view(&self) -> io::Result<log_core::SegmentBytes> {
        self.0.view()
    }
}

impl SegmentStore for FlakyStore {
    fn create(&self, name: &str) -> io::Result<Arc<dyn Segment>> {
        Ok(Arc::new(FlakySegment(self.inner.create(name)?, Arc::clone(&self.countdown))))
    }
    fn open(&self, name: &str) -> io::Result<Arc<dyn Segment>> {
        Ok(Arc::new(FlakySegment(self.inner.open(name)?, Arc::clone(&self.countdown))))
    }
    fn list(&self) -> io::Result<Vec<String>> {
        self.inner.list()
    }
    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        Self::tick(&self.countdown)?;
        self.inner.rename(from, to)
    }
    fn delete(&self, name: &str) -> io::Result<()> {
        self.inner.delete(name)
    }
    fn sync_dir(&self) -> io::Result<()> {
        Self::tick(&self.countdown)?;
        self.inner.sync_dir()
    }
}

#[test]
fn a_failed_sync_or_rename_poisons_the_log_until_reopened() {
    for fail_at in 0..12u64 {
        let store = Arc::new(FlakyStore::default());
        store.fail_after(u64::MAX);
        let config = LogConfig { sync: SyncPolicy::EveryAppend, ..LogConfig::default() };
        let log = Log::open(Arc::clone(&store) as Arc<dyn SegmentStore>, config.clone()).expect("open");
        for i in 0..6u8 {
            log.put(&[i], b"v").expect("put");
        }
        log.roll().expect("roll");
        store.fail_after(fail_at);
        let clock = Arc::new(ManualClock::new(NOW));
        // Appends, a roll and a pass: one of their syncs or renames fails.
        let failed = (0..3u8).any(|i| log.put(&[i], b"w").is_err())
            || log.roll().is_err()
            || pass(&log, &clock, 1 << 12, false).is_err();
        assert!(failed, "failure {fail_at} was injected");
        assert!(log.is_poisoned(), "failure {fail_at}: the log must refuse writes");
        assert!(matches!(log.put(b"z", b"z"), Err(Error::Poisoned)));
        assert!(matches!(log.roll(), Err(Error::Poisoned)));
        let view = value_view(&log);
        drop(log);
        let log = Log::open(Arc::clone(&store) as Arc<dyn SegmentStore>, config).expect("reopen");
        assert!(!log.is_poisoned());
        log.put(b"after", b"reopen").expect("writes work again after reopen");
        for (k, v) in view.iter().filter(|(k, _)| k.as_slice() != b"after") {
            let latest = value_view(&log);
            assert_eq!(latest.get(k), Some(v), "failure {fail_at}: key {k:?}");
        }
    }
}
