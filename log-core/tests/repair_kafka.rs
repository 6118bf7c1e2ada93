//! `repair` on a Kafka partition: it cuts exactly the damaged batches (a copy kept), rewrites the indexes of
//! what it cut from the batches kept, rebuilds indexes that disagree with their segments, sets aside a
//! `.swap` that cannot be completed and brings back the segments it replaced, leaves a torn tail and a
//! preallocated zero fill to the open, and a crash at any of its sync points loses no record but the damaged
//! ones.
#![expect(clippy::big_endian_bytes, reason = "Kafka's format is big-endian")]

use std::collections::BTreeMap;
use std::sync::Arc;

use log_core::kafka::files::{SegmentFile, Stage, name};
use log_core::kafka::index::{read_offset_index, read_time_index};
use log_core::repair::{DroppedOffsets, RepairAction, RepairPlan, apply};
use log_core::{CheckpointFile, Log, LogConfig, SegmentStore};
use storage_mem::crash::CrashStore;

fn config() -> LogConfig {
    LogConfig { index_interval_bytes: 64, ..LogConfig::default() }
}

fn open(store: &Arc<CrashStore>) -> log_core::Result<Log> {
    Log::open(
        Arc::clone(store) as Arc<dyn SegmentStore>,
        log_core::OpenOptions::kafka(config(), CheckpointFile::Memory),
    )
}

/// Three segments of 10 records (keys k0..k29, each record a batch), the last one active.
fn three_segments(store: &Arc<CrashStore>) {
    let log = open(store).expect("open");
    for i in 0..30u32 {
        log.put(format!("k{i}").as_bytes(), format!("v{i}").as_bytes()).expect("put");
        if i % 10 == 9 && i < 29 {
            log.roll().expect("roll");
        }
    }
    log.sync().expect("sync");
    store.sync_dir().expect("sync dir");
}

fn plan_kafka(store: &dyn SegmentStore) -> log_core::Result<RepairPlan> {
    log_core::repair::plan_kafka_with(store, &config())
}

fn log_name(base: u64) -> String {
    name(base, SegmentFile::Log, Stage::Live)
}

fn read(store: &dyn SegmentStore, n: &str) -> Vec<u8> {
    let f = store.open(n).expect("open");
    let mut b = vec![0; f.len() as usize];
    f.read_at(0, &mut b).expect("read");
    b
}

fn write(store: &dyn SegmentStore, n: &str, bytes: &[u8]) {
    let _ = store.delete(n);
    let f = store.create(n).expect("create");
    f.append(bytes).expect("append");
    f.sync().expect("sync");
    store.sync_dir().expect("sync dir");
}

/// The byte range of the `nth` batch of the Kafka segment `bytes`.
fn batch_range(bytes: &[u8], nth: usize) -> (usize, usize) {
    let mut pos = 0;
    for _ in 0..nth {
        pos += 12 + i32::from_be_bytes(bytes[pos + 8..pos + 12].try_into().expect("4")) as usize;
    }
    (pos, pos + 12 + i32::from_be_bytes(bytes[pos + 8..pos + 12].try_into().expect("4")) as usize)
}

/// Flips a byte inside the record of the `nth` batch of `n`; returns that batch's byte range.
fn damage(store: &dyn SegmentStore, n: &str, nth: usize) -> (u64, u64) {
    let mut bytes = read(store, n);
    let (start, end) = batch_range(&bytes, nth);
    bytes[end - 3] ^= 0x11;
    write(store, n, &bytes);
    (start as u64, end as u64)
}

fn keys(store: &Arc<CrashStore>) -> BTreeMap<String, String> {
    let log = open(store).expect("opens after the repair");
    log.snapshot()
        .reader(0)
        .map(|r| {
            let r = r.expect("readable");
            (String::from_utf8(r.key.expect("key")).expect("utf8"), String::from_utf8(r.value.expect("v")).expect("u"))
        })
        .collect()
}

fn all_but(missing: &[u32]) -> BTreeMap<String, String> {
    (0..30u32).filter(|i| !missing.contains(i)).map(|i| (format!("k{i}"), format!("v{i}"))).collect()
}

/// Every offset-index entry of the segment based at `base` names a batch start at or below its offset, and
/// every time-index entry an offset of the segment.
fn indexes_agree(store: &dyn SegmentStore, base: u64) {
    let bytes = read(store, &log_name(base));
    let mut starts = BTreeMap::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let offset = u64::from_be_bytes(bytes[pos..pos + 8].try_into().expect("8"));
        starts.insert(pos as u32, offset);
        pos += 12 + i32::from_be_bytes(bytes[pos + 8..pos + 12].try_into().expect("4")) as usize;
    }
    let entries = read_offset_index(&read(store, &name(base, SegmentFile::OffsetIndex, Stage::Live)), base);
    assert!(!entries.is_empty(), "an entry every 64 bytes");
    for (offset, position) in entries {
        assert!(starts.get(&position).is_some_and(|&b| b <= offset), "({offset}, {position}) of {base}");
    }
    let last = *starts.values().last().expect("a batch");
    for (_, offset) in read_time_index(&read(store, &name(base, SegmentFile::TimeIndex, Stage::Live)), base) {
        assert!((base..=last).contains(&offset));
    }
}

#[test]
fn cuts_exactly_the_damaged_batch_keeps_a_copy_and_rewrites_the_indexes() {
    let store = Arc::new(CrashStore::new());
    three_segments(&store);
    let seg = log_name(10);
    let before = read(&*store, &seg);
    let range = damage(&*store, &seg, 3);
    let p = plan_kafka(&*store).expect("plan");
    assert_eq!(
        p.actions,
        vec![RepairAction::CutRanges {
            segment: seg.clone(),
            ranges: vec![range],
            // The plan names what it drops: offset 13, the damaged record between 12 and 14.
            offsets: vec![DroppedOffsets { first: Some(13), last: Some(13), records_at_most: Some(1) }],
            bytes: range.1 - range.0,
            records_kept: 9,
            active: false
        }]
    );
    let out = apply(&*store, &p, 7).expect("apply");
    let backup = format!("repair-7.{seg}.{}-{}.bytes", range.0, range.1);
    assert_eq!(out.backups, vec![backup.clone()]);
    let mut damaged = before[range.0 as usize..range.1 as usize].to_vec();
    let n = damaged.len();
    damaged[n - 3] ^= 0x11;
    assert_eq!(read(&*store, &backup), damaged, "the copy holds exactly the bytes cut");
    indexes_agree(&*store, 10);
    assert_eq!(keys(&store), all_but(&[13]));
    assert!(plan_kafka(&*store).expect("plan").actions.is_empty(), "nothing left to repair");
}

#[test]
fn damage_in_the_middle_of_the_active_segment_is_cut_and_a_torn_tail_is_left_to_the_open() {
    let store = Arc::new(CrashStore::new());
    three_segments(&store);
    let active = log_name(20);
    let range = damage(&*store, &active, 4);
    let p = plan_kafka(&*store).expect("plan");
    assert!(
        matches!(&p.actions[..], [RepairAction::CutRanges { active: true, ranges, .. }] if ranges == &[range]),
        "{p:?}"
    );
    apply(&*store, &p, 1).expect("apply");
    assert_eq!(keys(&store), all_but(&[24]));
    // A torn tail (the last batch cut short) is not a repair's: the open cuts it.
    let store = Arc::new(CrashStore::new());
    three_segments(&store);
    let mut bytes = read(&*store, &active);
    bytes.truncate(bytes.len() - 5);
    write(&*store, &active, &bytes);
    assert!(plan_kafka(&*store).expect("plan").actions.is_empty());
    assert_eq!(keys(&store), all_but(&[29]));
}

#[test]
fn a_preallocated_zero_fill_is_no_damage() {
    let store = Arc::new(CrashStore::new());
    three_segments(&store);
    let seg = log_name(0);
    let mut bytes = read(&*store, &seg);
    bytes.extend_from_slice(&[0u8; 4096]);
    write(&*store, &seg, &bytes);
    let p = plan_kafka(&*store).expect("plan");
    assert!(p.actions.is_empty() && p.cannot_fix.is_empty(), "{p:?}");
}

#[test]
fn indexes_that_disagree_with_their_segment_are_rebuilt() {
    for (what, spoil) in [
        ("not whole entries", &(|i: &mut Vec<u8>| i.push(0)) as &dyn Fn(&mut Vec<u8>)),
        ("a position inside a batch", &|i: &mut Vec<u8>| i[7] = i[7].wrapping_add(3)),
        ("out of order", &|i: &mut Vec<u8>| {
            let first: Vec<u8> = i[..8].to_vec();
            i.extend_from_slice(&first);
        }),
    ] {
        let store = Arc::new(CrashStore::new());
        three_segments(&store);
        let index = name(0, SegmentFile::OffsetIndex, Stage::Live);
        let good = read(&*store, &index);
        let mut bad = good.clone();
        spoil(&mut bad);
        write(&*store, &index, &bad);
        let p = plan_kafka(&*store).expect("plan");
        assert!(
            matches!(&p.actions[..], [RepairAction::RebuildIndexes { segment, .. }] if segment == &log_name(0)),
            "{what}: {p:?}"
        );
        apply(&*store, &p, 1).expect("apply");
        assert_eq!(read(&*store, &index), good, "{what}: rebuilt as the roll wrote it");
    }
}

/// A committed swap whose cleaned segment is damaged: segment 0's old files already `.deleted`, its
/// `.log.swap` a copy with a flipped byte.
fn bad_swap(store: &Arc<CrashStore>) {
    three_segments(store);
    let mut bytes = read(&**store, &log_name(0));
    let (_, end) = batch_range(&bytes, 2);
    bytes[end - 3] ^= 0x11;
    write(&**store, &name(0, SegmentFile::Log, Stage::Swap), &bytes);
    for f in [SegmentFile::Log, SegmentFile::OffsetIndex, SegmentFile::TimeIndex] {
        store.rename(&name(0, f, Stage::Live), &name(0, f, Stage::Deleted)).expect("rename");
    }
    store.sync_dir().expect("sync");
}

#[test]
fn a_swap_that_cannot_be_completed_is_set_aside_and_the_old_segment_comes_back() {
    let store = Arc::new(CrashStore::new());
    bad_swap(&store);
    assert!(open(&store).expect_err("the open refuses it").is_corruption());
    let p = plan_kafka(&*store).expect("plan");
    assert!(
        matches!(&p.actions[..], [RepairAction::DiscardSwap { file, segment, .. }]
            if file == &name(0, SegmentFile::Log, Stage::Swap) && segment.contains("restored from .deleted")),
        "{p:?}"
    );
    let out = apply(&*store, &p, 4).expect("apply");
    assert_eq!(out.backups, vec![format!("repair-4.{}.bytes", name(0, SegmentFile::Log, Stage::Swap))]);
    assert_eq!(keys(&store), all_but(&[]), "every record is back");
    indexes_agree(&*store, 0);
}

#[test]
fn a_crash_at_any_sync_point_of_a_kafka_repair_loses_only_the_damaged_record() {
    let setup = |store: &Arc<CrashStore>| {
        bad_swap(store);
        damage(&**store, &log_name(10), 5);
    };
    let dry = Arc::new(CrashStore::new());
    setup(&dry);
    let first = dry.sync_points();
    let p = plan_kafka(&*dry).expect("plan");
    assert_eq!(p.actions.len(), 2, "{p:?}");
    apply(&*dry, &p, 1).expect("apply");
    let last = dry.sync_points();
    assert!(last - first >= 5, "{} sync points", last - first);
    for k in first..last {
        for torn in [None, Some(k)] {
            let store = Arc::new(CrashStore::new());
            setup(&store);
            store.crash_at(k);
            let p = plan_kafka(&*store).expect("plan");
            assert!(apply(&*store, &p, 1).is_err(), "crash at {k}");
            let image = Arc::new(store.crash_image(torn));
            let again = plan_kafka(&*image).expect("plan after the crash");
            apply(&*image, &again, 2).unwrap_or_else(|e| panic!("crash at {k}: repair again: {e}"));
            assert_eq!(keys(&image), all_but(&[15]), "crash at {k}");
        }
    }
}
