//! Scenarios every backend must pass, written once over the storage traits.

use std::collections::BTreeMap;
use std::sync::Arc;

use cleaner::{Cleaner, ManualClock, MapKind, PassOptions};
use log_core::format::native::names::{FileKind, file_name};
use log_core::{Log, LogConfig, SegmentStore};

use crate::harness::Harness;

/// `(base, ["offset key=value"], closed)` per segment, oldest first.
pub type Segments = Vec<(u64, Vec<String>, bool)>;

/// The log as the seed's DUMP shows it.
pub fn segments(log: &Log) -> Segments {
    let snap = log.snapshot();
    let show = |r: &log_core::Record| {
        let key = String::from_utf8_lossy(r.key.as_deref().unwrap_or_default()).into_owned();
        let value = r.value.as_deref().map_or("TOMBSTONE".into(), |v| String::from_utf8_lossy(v).into_owned());
        format!("{} {key}={value}", r.offset)
    };
    let mut out: Segments = snap
        .closed()
        .iter()
        .map(|s| (s.base(), s.read_records().expect("valid").iter().map(show).collect(), true))
        .collect();
    out.push((snap.active_base(), snap.active_records().expect("active").iter().map(show).collect(), false));
    out
}

/// Key → value of its latest record, deleted keys absent: what a consumer reading everything believes.
pub fn value_view(log: &Log) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut view = BTreeMap::new();
    for r in log.snapshot().reader(0) {
        let r = r.expect("readable");
        let key = r.key.expect("keyed");
        match r.value {
            Some(v) => view.insert(key, v),
            None => view.remove(&key),
        };
    }
    view
}

fn seg(base: u64, recs: &[&str], closed: bool) -> (u64, Vec<String>, bool) {
    (base, recs.iter().map(|s| (*s).to_owned()).collect(), closed)
}

/// A cleaner with `map` whose budget holds `keys` keys of up to 16 bytes (so at least `keys` of the short
/// keys these scenarios use).
fn cleaner(map: MapKind, clock: &Arc<ManualClock>, keys: usize) -> Cleaner {
    let config = cleaner::CleanerConfig {
        map,
        dedupe_buffer_bytes: if map == MapKind::External {
            64 * cleaner::external::ENTRY_BYTES
        } else {
            map.bytes_for(keys, 0.9, 16)
        },
        ..cleaner::CleanerConfig::default()
    };
    Cleaner::new(config, Arc::clone(clock) as Arc<dyn cleaner::Clock>).expect("a budget that holds the keys")
}

/// Writes the seed's worked trace's log: PUT p 1, PUT q 1, ROLL, PUT p 2, DEL q, ROLL, PUT r 1.
pub fn write_seed_log(log: &Log) {
    log.put(b"p", b"1").expect("put");
    log.put(b"q", b"1").expect("put");
    log.roll().expect("roll");
    log.put(b"p", b"2").expect("put");
    log.delete(b"q").expect("del");
    log.roll().expect("roll");
    log.put(b"r", b"1").expect("put");
}

/// The segments of [`write_seed_log`]'s log, as [`segments`] shows them.
pub fn seed_segments() -> Segments {
    vec![seg(0, &["0 p=1", "1 q=1"], true), seg(2, &["2 p=2", "3 q=TOMBSTONE"], true), seg(4, &["4 r=1"], false)]
}

/// The seed's worked trace, then a restart in the middle of it.
pub fn seed_trace(h: &dyn Harness, map: MapKind) {
    let mut fx = h.fixture();
    let clock = Arc::new(ManualClock::new(1_000));
    {
        let log = fx.open_log(LogConfig::default()).expect("open");
        write_seed_log(&log);
        log.sync().expect("sync");
        assert_eq!(segments(&log), seed_segments());
        cleaner(map, &clock, 1000).clean(&log, PassOptions::default()).expect("compact");
        assert_eq!(segments(&log), vec![seg(2, &["2 p=2", "3 q=TOMBSTONE"], true), seg(4, &["4 r=1"], false)]);
    }
    // The tombstone's horizon, the checkpoint and the gaps survive a restart; the purge then removes it.
    let log = fx.open_log(LogConfig::default()).expect("reopen");
    assert_eq!(segments(&log), vec![seg(2, &["2 p=2", "3 q=TOMBSTONE"], true), seg(4, &["4 r=1"], false)]);
    assert_eq!((log.cleaner_checkpoint(), log.next_offset()), (4, 5));
    let tomb = log.read(3).expect("read").expect("tombstone");
    assert_eq!(tomb.delete_horizon, Some(1_000 + cleaner::DEFAULT_DELETE_RETENTION_MS), "on {}", h.name());
    cleaner(map, &clock, 1000).clean(&log, PassOptions { purge: true, ..PassOptions::default() }).expect("purge");
    assert_eq!(segments(&log), vec![seg(2, &["2 p=2"], true), seg(4, &["4 r=1"], false)]);
    assert_eq!(log.read(0).expect("read").map(|r| r.offset), Some(2));
}

/// Partial passes continue across restarts and converge.
pub fn partial_passes_continue_after_restart(h: &dyn Harness, map: MapKind) {
    let mut fx = h.fixture();
    let clock = Arc::new(ManualClock::new(1_000));
    let expected;
    {
        let log = fx.open_log(LogConfig { segment_bytes: 600, ..LogConfig::default() }).expect("open");
        for i in 0..300u32 {
            log.put(format!("k{}", i % 23).as_bytes(), format!("v{i}").as_bytes()).expect("put");
        }
        log.roll().expect("roll");
        expected = value_view(&log);
        let stats = cleaner(map, &clock, 6).clean(&log, PassOptions::default()).expect("pass");
        assert!(stats.map_full);
        assert_eq!(value_view(&log), expected);
    }
    let mut passes = 0;
    loop {
        let log = fx.open_log(LogConfig::default()).expect("reopen");
        assert_eq!(value_view(&log), expected, "after {passes} passes on {}", h.name());
        let stats = cleaner(map, &clock, 6).clean(&log, PassOptions::default()).expect("pass");
        passes += 1;
        if !stats.map_full {
            assert_eq!(log.snapshot().reader(0).count(), 23, "one record per key is left");
            let report = check_ok(&log).expect("the cleaned log checks out");
            assert_eq!((report.records, report.notices.len()), (23, 0), "{report:?}");
            break;
        }
        assert!(passes < 100);
    }
}

fn check_ok(log: &Log) -> Result<log_core::check::CheckReport, log_core::check::Problem> {
    log_core::check::check(Arc::clone(log.store()), log.format(), log.checkpoint_file().clone(), None)
}

/// A torn tail of the active segment is cut back to the last whole record on open.
pub fn torn_tail_is_cut(h: &dyn Harness) {
    let mut fx = h.fixture();
    {
        let log = fx.open_log(LogConfig::default()).expect("open");
        for i in 0..10u8 {
            log.put(&[b'k', i], b"value").expect("put");
        }
        log.sync().expect("sync");
        log.store().open(&file_name(0, FileKind::Log)).expect("open file").append(&[40, 0, 0, 0, 9, 9]).expect("tear");
    }
    let log = fx.open_log(LogConfig::default()).expect("reopen");
    let report = log.recovery_report().truncated_tail.clone().expect("reported");
    assert_eq!(report.bytes, 6, "six torn bytes cut on {}", h.name());
    assert_eq!(log.next_offset(), 10);
    assert_eq!(log.put(b"after", b"x").expect("put"), 10);
    assert!(check_ok(&log).is_ok());
}

/// Damaged or missing index hints are rebuilt; `check` reports a damaged one.
pub fn index_hints_are_rebuilt(h: &dyn Harness) {
    let mut fx = h.fixture();
    {
        let log = fx.open_log(LogConfig { index_interval_bytes: 64, ..LogConfig::default() }).expect("open");
        for i in 0..200u32 {
            log.put(format!("k{i}").as_bytes(), b"value").expect("put");
            if i % 50 == 49 {
                log.roll().expect("roll");
            }
        }
        assert_eq!(check_ok(&log).map(|r| r.indexes_verified), Ok(4));
        let store = log.store();
        let damaged = file_name(50, FileKind::Index);
        store.delete(&damaged).expect("delete");
        store.create(&damaged).expect("create").append(b"LCIX garbage").expect("write");
        store.delete(&file_name(100, FileKind::Index)).expect("delete");
        // A damaged hint loses no record: a notice saying the next open rebuilds it, not a problem.
        let report = check_ok(&log).expect("a damaged hint is no corruption");
        assert_eq!((report.indexes_verified, report.indexes_missing), (2, 2));
        assert!(report.notices.iter().any(|n| n.file == damaged && n.what.contains("rebuilds")), "{report:?}");
    }
    let log = fx.open_log(LogConfig::default()).expect("reopen");
    assert_eq!(log.recovery_report().indexes_rebuilt, 2, "on {}", h.name());
    for o in [0, 49, 50, 77, 100, 150, 199] {
        assert_eq!(log.read(o).expect("read").map(|r| r.offset), Some(o));
    }
    assert_eq!(check_ok(&log).map(|r| r.indexes_verified), Ok(4));
}

/// A flipped byte in a closed segment: `check` names the file and the frame's position; reads fail with a
/// typed error and nothing is changed.
pub fn flipped_byte_is_found(h: &dyn Harness, map: MapKind) {
    let mut fx = h.fixture();
    let name = file_name(0, FileKind::Log);
    // A dense index: the hint's last entry lies well after the damage, so the cheap checks at open pass.
    let config = LogConfig { index_interval_bytes: 64, ..LogConfig::default() };
    let (bytes, second) = {
        let log = fx.open_log(config.clone()).expect("open");
        for i in 0..20u8 {
            log.put(&[b'k', i], b"value").expect("put");
        }
        log.roll().expect("roll");
        let seg = Arc::clone(&log.snapshot().closed()[0]);
        let mut positions = Vec::new();
        seg.for_each_batch(|p| {
            positions.push(p.position);
            Ok(())
        })
        .expect("valid");
        (seg.bytes().expect("mapped").to_vec(), positions[1])
    };
    {
        // Rewrite the closed segment with one byte flipped inside its second record.
        let store: Arc<dyn SegmentStore> = fx.open_store();
        let mut bad = bytes.clone();
        bad[second as usize + 20] ^= 0x10;
        store.delete(&name).expect("delete");
        store.create(&name).expect("create").append(&bad).expect("write");
        let problem =
            log_core::check::check(Arc::clone(&store), log_core::Format::Native, log_core::CheckpointFile::Own, None)
                .expect_err("check must fail");
        assert_eq!((problem.file.as_str(), problem.position), (name.as_str(), Some(second)), "on {}", h.name());
    }
    let log = fx.open_log(config).expect("a valid index hint spares the scan");
    let err = log.snapshot().reader(0).find_map(Result::err).expect("the read fails");
    assert!(
        matches!(err, log_core::Error::Corrupt { ref segment, position, .. } if *segment == name && position == second)
    );
    let clock = Arc::new(ManualClock::new(1_000));
    let pass = cleaner(map, &clock, 1000).clean(&log, PassOptions::default());
    assert!(pass.is_err(), "a pass over a corrupt segment fails");
    assert_eq!(log.store().list().expect("list").iter().filter(|n| n.ends_with(".cleaned")).count(), 0);
}

/// The closed segments of a log as `(base, offsets)`: enough to tell one state of the log from another.
fn closed_state(log: &Log) -> Vec<(u64, Vec<u64>)> {
    log.snapshot()
        .closed()
        .iter()
        .map(|s| (s.base(), s.read_records().expect("valid").iter().map(|r| r.offset).collect()))
        .collect()
}

/// A reader's store that lets the writer work while the reader opens the segment files one by one: the
/// moment a reader without a lock can be caught out by a cleaning swap or a roll, holding some segments from
/// before the swap and opening the rest after it.
struct Disturbing {
    inner: Arc<dyn SegmentStore>,
    /// Runs once, after the third open from now, when set.
    hook: std::sync::Mutex<Option<Box<dyn FnOnce() + Send>>>,
    opens: std::sync::atomic::AtomicU32,
}

impl std::fmt::Debug for Disturbing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Disturbing").field("inner", &self.inner).finish_non_exhaustive()
    }
}

impl SegmentStore for Disturbing {
    fn create(&self, name: &str) -> std::io::Result<Arc<dyn log_core::Segment>> {
        self.inner.create(name)
    }
    fn create_copy(&self, name: &str) -> std::io::Result<Arc<dyn log_core::Segment>> {
        self.inner.create_copy(name)
    }
    fn open(&self, name: &str) -> std::io::Result<Arc<dyn log_core::Segment>> {
        let file = self.inner.open(name);
        if self.opens.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 2 {
            let hook = self.hook.lock().expect("hook").take();
            if let Some(hook) = hook {
                hook();
            }
        }
        file
    }
    fn list(&self) -> std::io::Result<Vec<String>> {
        self.inner.list()
    }
    fn file_id(&self, name: &str) -> std::io::Result<u64> {
        self.inner.file_id(name)
    }
    fn is_read_only(&self) -> bool {
        self.inner.is_read_only()
    }
    fn rename(&self, from: &str, to: &str) -> std::io::Result<()> {
        self.inner.rename(from, to)
    }
    fn delete(&self, name: &str) -> std::io::Result<()> {
        self.inner.delete(name)
    }
    fn sync_dir(&self) -> std::io::Result<()> {
        self.inner.sync_dir()
    }
}

/// A reader that opens the log read-only (taking no lock) while the writer appends, rolls and commits a
/// cleaning pass half-way through the reader's opening of the segments sees the log as it was at one instant:
/// the log after the writer's swap (up to the segment it took for the active one), never a mix of segments
/// from before and after the swap; every key keeps its latest value; nothing is written by the reader.
pub fn read_only_opens_beside_running_passes(h: &dyn Harness, map: MapKind) {
    use std::sync::Mutex;
    let mut fx = h.fixture();
    let config = LogConfig { segment_bytes: 1500, index_interval_bytes: 128, ..LogConfig::default() };
    let log = Arc::new(fx.open_log(config.clone()).expect("open"));
    for i in 0..2000u32 {
        let key = format!("k{}", i % 61);
        if i % 13 == 5 {
            log.delete(key.as_bytes()).expect("delete");
        } else {
            log.put(key.as_bytes(), format!("v{i}").as_bytes()).expect("put");
        }
    }
    log.roll().expect("roll");
    let clock = Arc::new(ManualClock::new(1_000));
    let cleaner = Arc::new(Mutex::new(cleaner(map, &clock, 3000)));
    let reader = Arc::new(Disturbing { inner: fx.reader_store(), hook: Mutex::new(None), opens: Default::default() });
    for round in 0..60u32 {
        let before = closed_state(&log);
        let (w, c, clock) = (Arc::clone(&log), Arc::clone(&cleaner), Arc::clone(&clock));
        reader.opens.store(0, std::sync::atomic::Ordering::SeqCst);
        *reader.hook.lock().expect("hook") = Some(Box::new(move || {
            for i in 0..30u32 {
                w.put(format!("k{}", (i * 7 + round) % 61).as_bytes(), format!("r{round}-{i}").as_bytes())
                    .expect("put");
            }
            w.roll().expect("roll");
            if round == 30 {
                clock.advance(cleaner::DEFAULT_DELETE_RETENTION_MS + 1);
            }
            c.lock()
                .expect("cleaner")
                .clean(&w, PassOptions { purge: round % 10 == 9, ..PassOptions::default() })
                .expect("pass");
        }));
        let reader_store = Arc::clone(&reader) as Arc<dyn SegmentStore>;
        let view = match fx.format() {
            log_core::Format::Native => {
                Log::open(reader_store, log_core::OpenOptions::new(LogConfig::default()).read_only(true))
            }
            log_core::Format::Kafka => Log::open(
                reader_store,
                log_core::OpenOptions::kafka(LogConfig::default(), fx.reader_checkpoint_file()).read_only(true),
            ),
        }
        .expect("a snapshot");
        assert!(view.is_read_only());
        let after = closed_state(&log);
        let rewritten = before.iter().filter(|s| !after.contains(s)).count();
        assert!(rewritten > 0, "round {round}: the writer's pass must rewrite segments the reader listed");
        // The reader listed before the writer's roll, so it may take the rolled segment for the active one:
        // a consistent prefix. Everything below must be exactly the log after the swap.
        let active = view.snapshot().active_base();
        let below: Vec<_> = after.iter().filter(|(b, _)| *b < active).cloned().collect();
        assert_eq!(closed_state(&view), below, "round {round} on {}: the reader saw a mix", h.name());
        assert_eq!(value_view(&view), value_view(&log), "round {round} on {}", h.name());
    }
}
