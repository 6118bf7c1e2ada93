//! The log's own rules: rolls, segment names, reads at any offset through the sparse index, and reopening.

use std::sync::Arc;

use log_core::format::native::names::{FileKind, file_name};
use log_core::names::CHECKPOINT_FILE;
use log_core::{AppendRecord, Error, Header, Log, LogConfig, SegmentStore};
use storage_mem::MemStore;

fn open(store: &Arc<MemStore>, config: LogConfig) -> Log {
    Log::open(Arc::clone(store) as Arc<dyn SegmentStore>, log_core::OpenOptions::new(config)).expect("open")
}

#[test]
fn roll_of_an_empty_active_segment_is_a_no_op() -> Result<(), Error> {
    let store = Arc::new(MemStore::new());
    let log = open(&store, LogConfig::default());
    assert!(!log.roll()?);
    log.put(b"a", b"1")?;
    assert!(log.roll()?);
    assert!(!log.roll()?);
    assert_eq!(log.snapshot().closed().len(), 1);
    let names = vec![file_name(0, FileKind::Index), file_name(0, FileKind::Log), file_name(1, FileKind::Log)];
    assert_eq!(store.list()?, names, "the sealed segment got its index hint, the active one has none");
    assert_eq!(file_name(1, FileKind::Log), "00000000000000000001.log");
    Ok(())
}

#[test]
fn the_active_segment_rolls_before_passing_segment_bytes() -> Result<(), Error> {
    let store = Arc::new(MemStore::new());
    let log = open(&store, LogConfig { segment_bytes: 200, ..LogConfig::default() });
    for i in 0..50u32 {
        log.put(format!("key-{i}").as_bytes(), b"some value")?;
    }
    let snap = log.snapshot();
    assert!(snap.closed().len() > 5);
    for s in snap.closed() {
        assert!(s.size() <= 200, "{} has {} bytes", s.name(), s.size());
    }
    // A record larger than segment.bytes still goes in, alone in its segment.
    let big = vec![7u8; 500];
    let o = log.put(b"big", &big)?;
    assert_eq!(log.read(o)?.and_then(|r| r.value), Some(big));
    Ok(())
}

#[test]
fn reads_return_the_first_record_at_or_after_an_offset_through_the_index() -> Result<(), Error> {
    let store = Arc::new(MemStore::new());
    let config = LogConfig { segment_bytes: 4096, index_interval_bytes: 128, ..LogConfig::default() };
    let log = open(&store, config);
    for i in 0..1000u64 {
        let headers = [Header::new("n", i.to_le_bytes())];
        let key = format!("k{}", i % 10);
        log.append(&AppendRecord {
            key: Some(key.as_bytes()),
            value: Some(b"v"),
            timestamp: i as i64,
            headers: &headers,
        })?;
        if i == 500 {
            log.roll()?;
        }
    }
    let snap = log.snapshot();
    assert!(snap.closed().iter().all(|s| s.summary().index.len() > 3), "the index is sparse but present");
    for o in [0, 1, 499, 500, 501, 777, 998, 999] {
        let r = log.read(o)?.expect("exists");
        assert_eq!((r.offset, r.timestamp), (o, o as i64));
        assert_eq!(r.headers, vec![Header::new("n", o.to_le_bytes())]);
    }
    assert_eq!(log.read(1000)?, None);
    let all: Vec<u64> = snap.reader(990).map(|r| r.map(|r| r.offset)).collect::<Result<_, _>>()?;
    assert_eq!(all, (990..1000).collect::<Vec<_>>());
    Ok(())
}

#[test]
fn a_snapshot_does_not_see_later_appends() -> Result<(), Error> {
    let store = Arc::new(MemStore::new());
    let log = open(&store, LogConfig::default());
    log.put(b"a", b"1")?;
    let snap = log.snapshot();
    log.put(b"b", b"2")?;
    log.roll()?;
    assert_eq!(snap.active_records()?.len(), 1);
    assert!(snap.closed().is_empty());
    Ok(())
}

#[test]
fn reopening_restores_segments_next_offset_and_checkpoint() -> Result<(), Error> {
    let store = Arc::new(MemStore::new());
    let before = {
        let log = open(&store, LogConfig::default());
        log.put(b"a", b"1")?;
        log.delete(b"b")?;
        log.roll()?;
        log.put(b"c", b"3")?;
        log.begin_cleaning()?.commit(Vec::new(), 2)?;
        let snap = log.snapshot();
        (snap.reader(0).collect::<Result<Vec<_>, _>>()?, log.next_offset())
    };
    assert!(store.list()?.contains(&CHECKPOINT_FILE.to_owned()));
    let log = open(&store, LogConfig::default());
    assert_eq!(log.snapshot().reader(0).collect::<Result<Vec<_>, _>>()?, before.0);
    assert_eq!(log.next_offset(), before.1);
    assert_eq!(log.cleaner_checkpoint(), 2);
    assert_eq!(log.active_base(), 2);
    assert_eq!(log.recovery_report(), &log_core::RecoveryReport::default());
    Ok(())
}

#[test]
fn a_checkpoint_beyond_the_active_segment_is_refused() -> Result<(), Error> {
    let store = Arc::new(MemStore::new());
    let log = open(&store, LogConfig::default());
    log.put(b"a", b"1")?;
    assert!(matches!(
        log.begin_cleaning()?.commit(Vec::new(), 5),
        Err(Error::BadReplacement {
            base: 5,
            problem: log_core::ReplacementProblem::CheckpointBeyondActive { active_base: 0 }
        })
    ));
    assert_eq!(log.cleaner_checkpoint(), 0);
    Ok(())
}

#[test]
fn a_bad_configuration_is_a_typed_error() {
    let store: Arc<dyn SegmentStore> = Arc::new(MemStore::new());
    let err = Log::open(store, log_core::OpenOptions::new(LogConfig { segment_bytes: 0, ..LogConfig::default() }))
        .expect_err("refused");
    assert!(matches!(err, Error::InvalidConfig(ref m) if m.contains("segment.bytes")), "{err}");
}
