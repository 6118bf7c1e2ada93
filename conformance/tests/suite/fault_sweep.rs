//! Fail every write, sync, rename, delete, list, create and truncate, one at a time, while a log with a torn
//! tail is opened (and the tail cut), appended to, rolled and cleaned (full, partial and purge passes) with
//! each offset map: the failure surfaces as a typed error,
//! the log then refuses every write until it is reopened (the store itself would accept them: only that one
//! operation failed), `check` finds the store intact, and the reopened log holds every acknowledged record,
//! every key with its latest value at its original offset. Both formats: a native log, and a Kafka partition
//! (whose checkpoint lives in a log directory of its own, which does not fail).

use std::collections::BTreeMap;
use std::sync::Arc;

use cleaner::{Cleaner, CleanerConfig, ManualClock, MapKind, PassOptions};
use log_core::{CheckpointFile, Error, Format, Log, LogConfig, SegmentStore, SyncPolicy};
use storage_mem::MemStore;
use storage_mem::fault::{Op, fault_store, is_injected};

type View = BTreeMap<Vec<u8>, (u64, Vec<u8>)>;
/// An acknowledged append: key, offset, value (`None` for a tombstone).
type Acked = (Vec<u8>, u64, Option<Vec<u8>>);

fn config() -> LogConfig {
    LogConfig { segment_bytes: 300, index_interval_bytes: 64, sync: SyncPolicy::OnRoll }
}

/// Where a log of `format` keeps its cleaner checkpoint: a native log in its own store, a Kafka partition in
/// its log directory.
fn log_dir(format: Format) -> CheckpointFile {
    match format {
        Format::Native => CheckpointFile::Own,
        Format::Kafka => CheckpointFile::LogDir { dir: Arc::new(MemStore::new()), topic: "t".into(), partition: 0 },
    }
}

/// Opens the log of `format` in `store`, its checkpoint in `checkpoint`.
fn open(format: Format, store: Arc<dyn SegmentStore>, checkpoint: &CheckpointFile) -> Result<Log, Error> {
    Log::open(
        store,
        log_core::OpenOptions { format, checkpoint: checkpoint.clone(), ..log_core::OpenOptions::new(config()) },
    )
}

fn check(
    format: Format,
    store: Arc<dyn SegmentStore>,
    checkpoint: &CheckpointFile,
) -> Result<log_core::check::CheckReport, log_core::check::Problem> {
    log_core::check::check(store, format, checkpoint.clone(), None)
}

fn pass(map: MapKind, log: &Log, clock: &Arc<ManualClock>, keys: usize, purge: bool) -> Result<bool, cleaner::Error> {
    let config = CleanerConfig { map, dedupe_buffer_bytes: map.bytes_for(keys, 0.9, 16), ..CleanerConfig::default() };
    let mut c = Cleaner::new(config, Arc::clone(clock) as Arc<dyn cleaner::Clock>)?;
    Ok(c.clean(log, PassOptions { purge, ..PassOptions::default() })?.map_full)
}

/// What went wrong first, if anything.
#[derive(Debug)]
enum Failed {
    Log(Error),
    Pass(cleaner::Error),
}

/// Appends, rolls, syncs and passes until one fails; `acked` collects every acknowledged append as key →
/// (offset, value or empty for a tombstone).
fn workload(map: MapKind, log: &Log, clock: &Arc<ManualClock>, acked: &mut Vec<Acked>) -> Result<(), Failed> {
    let mut append = |i: u32, log: &Log| -> Result<(), Failed> {
        let key = format!("k{}", i % 9).into_bytes();
        let value = (i % 7 != 3).then(|| format!("v{i}").into_bytes());
        let offset = match &value {
            Some(v) => log.put(&key, v),
            None => log.delete(&key),
        }
        .map_err(Failed::Log)?;
        acked.push((key, offset, value));
        Ok(())
    };
    for i in 0..40 {
        append(i, log)?;
    }
    log.roll().map_err(Failed::Log)?;
    while pass(map, log, clock, 4, false).map_err(Failed::Pass)? {}
    for i in 40..70 {
        append(i, log)?;
    }
    log.sync().map_err(Failed::Log)?;
    log.roll().map_err(Failed::Log)?;
    pass(map, log, clock, 170, true).map_err(Failed::Pass)?;
    append(70, log)?;
    log.sync().map_err(Failed::Log)
}

/// Key → latest (offset, value) of the acknowledged appends, deleted keys absent.
fn expected(acked: &[Acked]) -> View {
    let mut view = View::new();
    for (k, o, v) in acked {
        match v {
            Some(v) => view.insert(k.clone(), (*o, v.clone())),
            None => view.remove(k),
        };
    }
    view
}

fn view(log: &Log) -> View {
    let mut view = View::new();
    for r in log.snapshot().reader(0) {
        let r = r.expect("readable");
        let key = r.key.expect("keyed");
        match r.value {
            Some(v) => view.insert(key, (r.offset, v)),
            None => view.remove(&key),
        };
    }
    view
}

fn injected(f: &Failed) -> bool {
    let log = match f {
        Failed::Log(e) | Failed::Pass(cleaner::Error::Log(e)) => e,
        Failed::Pass(other) => panic!("the pass failed with {other}"),
    };
    match log {
        Error::Io { source, .. } => is_injected(source),
        _ => false,
    }
}

/// A store holding a short log whose active segment ends in a torn write, so that opening it cuts a tail
/// (and syncs it) before the workload starts; returns the acknowledged records.
fn torn_start(format: Format, checkpoint: &CheckpointFile) -> (Arc<dyn SegmentStore>, Vec<Acked>) {
    let mem: Arc<dyn SegmentStore> = Arc::new(MemStore::new());
    let log = open(format, Arc::clone(&mem), checkpoint).expect("open");
    let mut acked = Vec::new();
    for i in 0..8u32 {
        let (key, value) = (format!("k{i}").into_bytes(), format!("start-{i}").into_bytes());
        acked.push((key.clone(), log.put(&key, &value).expect("put"), Some(value)));
        if i == 4 {
            log.roll().expect("roll");
        }
    }
    log.sync().expect("sync");
    let active =
        log_core::format::native::names::file_name(log.active_base(), log_core::format::native::names::FileKind::Log);
    drop(log);
    mem.open(&active).expect("active").append(&[60, 0, 0, 0, 1, 2, 3]).expect("tear");
    (mem, acked)
}

fn sweep(op: Op) -> u64 {
    MapKind::ALL.into_iter().map(|map| sweep_with(Format::Native, map, op)).sum()
}

fn sweep_kafka(op: Op) -> u64 {
    MapKind::ALL.into_iter().map(|map| sweep_with(Format::Kafka, map, op)).sum()
}

fn sweep_with(format: Format, map: MapKind, op: Op) -> u64 {
    let clock = Arc::new(ManualClock::new(1_000_000));
    let dry_dir = log_dir(format);
    let dry = fault_store(torn_start(format, &dry_dir).0);
    {
        let log = open(format, Arc::new(dry.clone()), &dry_dir).expect("open");
        workload(map, &log, &clock, &mut Vec::new()).expect("the dry run succeeds");
    }
    let total = dry.hooks().count(op);
    eprintln!("{op:?} with {map} ({}): {total} operations, each failed once", format.name());
    for n in 0..total {
        let dir = log_dir(format);
        let (mem, mut acked) = torn_start(format, &dir);
        let store = fault_store(Arc::clone(&mem));
        store.hooks().fail(op, n);
        match open(format, Arc::new(store.clone()), &dir) {
            // The failure struck while the log was being opened (and its torn tail cut): it surfaced.
            Err(e) => assert!(matches!(&e, Error::Io { source, .. } if is_injected(source)), "{op:?} {n}: {e}"),
            Ok(log) => {
                let failure = workload(map, &log, &clock, &mut acked).expect_err("the armed failure must surface");
                assert!(injected(&failure), "{op:?} {n}: surfaced as {failure:?}");
                assert!(log.is_poisoned(), "{op:?} {n}: the log must refuse writes after a failed {op:?}");
                assert!(matches!(log.put(b"k", b"after"), Err(Error::Poisoned)), "{op:?} {n}");
                assert!(matches!(log.roll(), Err(Error::Poisoned)), "{op:?} {n}");
                assert!(matches!(pass(map, &log, &clock, 170, false), Err(cleaner::Error::Log(Error::Poisoned))));
            }
        }
        assert_eq!(store.hooks().fired(), 1, "{op:?} {n}");
        let report = check(format, Arc::clone(&mem), &dir)
            .unwrap_or_else(|p| panic!("{op:?} {n}: check after the failure found {p}"));
        let log = open(format, Arc::clone(&mem), &dir).unwrap_or_else(|e| panic!("{op:?} {n}: reopen: {e}"));
        assert_eq!(report.records, log.snapshot().reader(0).count() as u64, "{op:?} {n}");
        assert!(!log.is_poisoned());
        assert_eq!(view(&log), expected(&acked), "{op:?} {n}: a key lost its latest value or moved");
        assert!(log.put(b"after", b"reopen").is_ok(), "{op:?} {n}: writes work again after a reopen");
    }
    total
}

#[test]
fn every_failed_write_poisons_and_loses_nothing() {
    assert!(sweep(Op::Write) > 50);
}

#[test]
fn every_failed_sync_poisons_and_loses_nothing() {
    assert!(sweep(Op::Sync) > 20);
}

#[test]
fn every_failed_rename_poisons_and_loses_nothing() {
    assert!(sweep(Op::Rename) > 5);
}

#[test]
fn every_failed_delete_poisons_and_loses_nothing() {
    assert!(sweep(Op::Delete) > 5);
}

#[test]
fn every_failed_list_create_or_truncate_poisons_and_loses_nothing() {
    assert!(sweep(Op::List) > 5);
    assert!(sweep(Op::Create) > 5);
    assert!(sweep(Op::Truncate) >= 1, "the open cuts a torn tail");
}

#[test]
fn kafka_every_failed_write_poisons_and_loses_nothing() {
    assert!(sweep_kafka(Op::Write) > 50);
}

#[test]
fn kafka_every_failed_sync_poisons_and_loses_nothing() {
    assert!(sweep_kafka(Op::Sync) > 20);
}

#[test]
fn kafka_every_failed_rename_poisons_and_loses_nothing() {
    assert!(sweep_kafka(Op::Rename) > 5);
}

#[test]
fn kafka_every_failed_delete_poisons_and_loses_nothing() {
    assert!(sweep_kafka(Op::Delete) > 5);
}

#[test]
fn kafka_every_failed_list_create_or_truncate_poisons_and_loses_nothing() {
    assert!(sweep_kafka(Op::List) > 5);
    assert!(sweep_kafka(Op::Create) > 5);
    assert!(sweep_kafka(Op::Truncate) >= 1, "the open cuts a torn tail");
}
