//! `repair`, in both segment formats: it cuts exactly the damaged batches (a copy kept), keeps every valid
//! record, leaves a torn tail to the open, finishes a committed swap before cutting (so a crash during the
//! repair can never roll the swap back), sets aside a `.swap` that cannot be completed and brings back the
//! segments it replaced, and a crash at any of its sync points loses no record but the damaged ones. Then what
//! is one format's own: the native format's removal markers and grouped swaps; a Kafka segment's indexes
//! (rewritten from the batches kept, rebuilt when they disagree) and a preallocated zero fill.
#![expect(clippy::big_endian_bytes, reason = "Kafka's format is big-endian")]

use std::collections::BTreeMap;
use std::sync::Arc;

use log_core::kafka::index::{read_offset_index, read_time_index};
use log_core::names::{SegmentFile, Stage, name};
use log_core::repair::{DroppedOffsets, RepairAction, RepairPlan, apply};
use log_core::{CheckpointFile, Format, Log, LogConfig, OpenOptions, SegmentStore};
use storage_mem::crash::CrashStore;

const FORMATS: [Format; 2] = [Format::Native, Format::Kafka];

fn config() -> LogConfig {
    LogConfig { index_interval_bytes: 64, ..LogConfig::default() }
}

fn open(format: Format, store: &Arc<CrashStore>) -> log_core::Result<Log> {
    let checkpoint = if format == Format::Kafka { CheckpointFile::Memory } else { CheckpointFile::Own };
    Log::open(
        Arc::clone(store) as Arc<dyn SegmentStore>,
        OpenOptions { format, checkpoint, ..OpenOptions::new(config()) },
    )
}

fn plan(format: Format, store: &dyn SegmentStore) -> RepairPlan {
    log_core::repair::plan_for(format, store, &config()).expect("plan")
}

/// Three segments of 10 records (keys k0..k29, each record a batch), the last one active.
fn three_segments(format: Format, store: &Arc<CrashStore>) {
    let log = open(format, store).expect("open");
    for i in 0..30u32 {
        log.put(format!("k{i}").as_bytes(), format!("v{i}").as_bytes()).expect("put");
        if i % 10 == 9 && i < 29 {
            log.roll().expect("roll");
        }
    }
    log.sync().expect("sync");
    store.sync_dir().expect("sync dir");
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

/// The byte range of the `nth` batch of the segment `bytes` of `format`.
fn batch_range(format: Format, bytes: &[u8], nth: usize) -> (usize, usize) {
    let len = |pos: usize| format.batch_len(&bytes[pos..]).expect("a whole batch");
    let mut pos = 0;
    for _ in 0..nth {
        pos += len(pos);
    }
    (pos, pos + len(pos))
}

/// Flips a byte inside the record of the `nth` batch of `n`; returns that batch's byte range.
fn damage(format: Format, store: &dyn SegmentStore, n: &str, nth: usize) -> (u64, u64) {
    let mut bytes = read(store, n);
    let (start, end) = batch_range(format, &bytes, nth);
    bytes[end - 3] ^= 0x11;
    write(store, n, &bytes);
    (start as u64, end as u64)
}

fn keys(format: Format, store: &Arc<CrashStore>) -> BTreeMap<String, String> {
    let log = open(format, store).expect("opens after the repair");
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

/// Where the segment based at `base` has Kafka's offset and time indexes: every offset-index entry names a
/// batch start at or below its offset, and every time-index entry an offset of the segment.
fn indexes_agree(format: Format, store: &dyn SegmentStore, base: u64) {
    let Ok(offset_index) = store.open(&name(base, SegmentFile::OffsetIndex, Stage::Live)) else {
        return; // a format without them
    };
    drop(offset_index);
    let bytes = read(store, &log_name(base));
    let mut starts = BTreeMap::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let offset = u64::from_be_bytes(bytes[pos..pos + 8].try_into().expect("8"));
        starts.insert(pos as u32, offset);
        pos += format.batch_len(&bytes[pos..]).expect("a whole batch");
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
    for format in FORMATS {
        let store = Arc::new(CrashStore::new());
        three_segments(format, &store);
        let seg = log_name(10);
        let before = read(&*store, &seg);
        let range = damage(format, &*store, &seg, 3);
        let p = plan(format, &*store);
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
            }],
            "{format:?}"
        );
        let out = apply(&*store, &p, 7).expect("apply");
        let backup = format!("repair-7.{seg}.{}-{}.bytes", range.0, range.1);
        assert_eq!(out.backups, vec![backup.clone()], "{format:?}");
        let mut damaged = before[range.0 as usize..range.1 as usize].to_vec();
        let n = damaged.len();
        damaged[n - 3] ^= 0x11;
        assert_eq!(read(&*store, &backup), damaged, "{format:?}: the copy holds exactly the bytes cut");
        indexes_agree(format, &*store, 10);
        assert_eq!(keys(format, &store), all_but(&[13]), "{format:?}");
        assert!(plan(format, &*store).actions.is_empty(), "{format:?}: nothing left to repair");
    }
}

#[test]
fn damage_in_the_middle_of_the_active_segment_is_cut_and_a_torn_tail_is_left_to_the_open() {
    for format in FORMATS {
        let store = Arc::new(CrashStore::new());
        three_segments(format, &store);
        let active = log_name(20);
        let range = damage(format, &*store, &active, 4);
        let p = plan(format, &*store);
        assert!(
            matches!(&p.actions[..], [RepairAction::CutRanges { active: true, ranges, .. }] if ranges == &[range]),
            "{format:?}: {p:?}"
        );
        apply(&*store, &p, 1).expect("apply");
        assert_eq!(keys(format, &store), all_but(&[24]), "{format:?}");
        // A torn tail (the last batch cut short) is not a repair's: the open cuts it.
        let store = Arc::new(CrashStore::new());
        three_segments(format, &store);
        let mut bytes = read(&*store, &active);
        bytes.truncate(bytes.len() - 5);
        write(&*store, &active, &bytes);
        assert!(plan(format, &*store).actions.is_empty(), "{format:?}");
        assert_eq!(keys(format, &store), all_but(&[29]), "{format:?}");
    }
}

/// Renames every file segment 0 has (its batches, and Kafka's indexes) `.deleted`, as step 6 of a commit does.
fn delete_segment_0(store: &CrashStore) {
    for f in [SegmentFile::Log, SegmentFile::OffsetIndex, SegmentFile::TimeIndex] {
        if store.open(&name(0, f, Stage::Live)).is_ok() {
            store.rename(&name(0, f, Stage::Live), &name(0, f, Stage::Deleted)).expect("rename");
        }
    }
    store.sync_dir().expect("sync");
}

/// A committed swap half done: segment 0's files already `.deleted`, its cleaned copy `.log.swap` (whole when
/// `damaged_swap` is false; with a flipped byte, so that it cannot be completed, when true).
fn pending_swap(format: Format, store: &Arc<CrashStore>, damaged_swap: bool) {
    three_segments(format, store);
    let mut bytes = read(&**store, &log_name(0));
    if damaged_swap {
        let (_, end) = batch_range(format, &bytes, 2);
        bytes[end - 3] ^= 0x11;
    }
    write(&**store, &name(0, SegmentFile::Log, Stage::Swap), &bytes);
    delete_segment_0(store);
}

#[test]
fn a_committed_swap_is_finished_before_anything_is_cut() {
    for format in FORMATS {
        let store = Arc::new(CrashStore::new());
        pending_swap(format, &store, false);
        damage(format, &*store, &log_name(10), 5);
        let p = plan(format, &*store);
        assert_eq!(p.actions.len(), 1, "{format:?}: {p:?}");
        apply(&*store, &p, 1).expect("apply");
        assert_eq!(keys(format, &store), all_but(&[15]), "{format:?}");
    }
}

#[test]
fn a_swap_that_cannot_be_completed_is_set_aside_and_the_old_segment_comes_back() {
    for format in FORMATS {
        let store = Arc::new(CrashStore::new());
        pending_swap(format, &store, true);
        assert!(open(format, &store).expect_err("the open refuses it").is_corruption(), "{format:?}");
        let p = plan(format, &*store);
        let swap = name(0, SegmentFile::Log, Stage::Swap);
        assert!(
            matches!(&p.actions[..], [RepairAction::DiscardSwap { file, segment, .. }]
                if file == &swap && segment.contains("restored from .deleted")),
            "{format:?}: {p:?}"
        );
        let out = apply(&*store, &p, 4).expect("apply");
        assert_eq!(out.backups, vec![format!("repair-4.{swap}.bytes")], "{format:?}");
        assert_eq!(keys(format, &store), all_but(&[]), "{format:?}: every record is back");
        indexes_agree(format, &*store, 0);
    }
}

#[test]
fn a_crash_at_any_sync_point_of_a_repair_loses_only_the_damaged_record() {
    for format in FORMATS {
        for damaged_swap in [false, true] {
            let setup = |store: &Arc<CrashStore>| {
                pending_swap(format, store, damaged_swap);
                damage(format, &**store, &log_name(10), 5);
            };
            let dry = Arc::new(CrashStore::new());
            setup(&dry);
            let first = dry.sync_points();
            let p = plan(format, &*dry);
            assert_eq!(p.actions.len(), 1 + usize::from(damaged_swap), "{format:?}: {p:?}");
            apply(&*dry, &p, 1).expect("apply");
            let last = dry.sync_points();
            assert!(last - first >= 5, "{format:?}: {} sync points", last - first);
            for k in first..last {
                for torn in [None, Some(k)] {
                    let store = Arc::new(CrashStore::new());
                    setup(&store);
                    store.crash_at(k);
                    let p = plan(format, &*store);
                    assert!(apply(&*store, &p, 1).is_err(), "{format:?}: crash at {k}");
                    let image = Arc::new(store.crash_image(torn));
                    // Before the cut is durable the damaged batch is still there: repairing again finishes the
                    // job.
                    let again = plan(format, &*image);
                    apply(&*image, &again, 2).unwrap_or_else(|e| panic!("{format:?}: crash at {k}: repair again: {e}"));
                    assert_eq!(keys(format, &image), all_but(&[15]), "{format:?}: crash at {k}");
                }
            }
        }
    }
}

// The native format's own: removal markers and grouped swaps.

#[test]
fn a_pending_removal_marker_is_not_damage() {
    let format = Format::Native;
    let store = Arc::new(CrashStore::new());
    three_segments(format, &store);
    // Every key of segment 0 gets a later record, so a pass may remove the segment (a marker removing the
    // latest record of a key is no pass's: `log_core::swap_proof`).
    let log = open(format, &store).expect("open");
    for i in 0..10u32 {
        log.put(format!("k{i}").as_bytes(), format!("v{i}").as_bytes()).expect("put");
    }
    log.sync().expect("sync");
    drop(log);
    store.sync_dir().expect("sync dir");
    // A committed swap that removes segment 0 (its `.log` still there).
    write(&*store, &name(0, SegmentFile::Log, Stage::Swap), &log_core::removal::encode(0, 10));
    let p = plan(format, &*store);
    assert!(p.actions.is_empty() && p.cannot_fix.is_empty(), "{p:?}");
    apply(&*store, &p, 1).expect("apply");
    assert_eq!(keys(format, &store), all_but(&[]));
    assert!(store.open(&log_name(0)).is_err(), "the swap completed: segment 0 is gone");
}

/// A committed grouped swap of the native format: segments 0 and 10 merged into `0.log.swap`, segment 10
/// removed by a marker covering it; `deleted` says whether the old segments were already renamed `.deleted`
/// (step 6 of a commit).
fn grouped_swap(store: &Arc<CrashStore>, deleted: bool) -> Vec<u8> {
    three_segments(Format::Native, store);
    let (log0, log10) = (log_name(0), log_name(10));
    let mut merged = read(&**store, &log0);
    merged.extend_from_slice(&read(&**store, &log10));
    write(&**store, &name(0, SegmentFile::Log, Stage::Swap), &merged);
    write(&**store, &name(10, SegmentFile::Log, Stage::Swap), &log_core::removal::encode(10, 20));
    if deleted {
        for (b, n) in [(0, &log0), (10, &log10)] {
            store.rename(n, &name(b, SegmentFile::Log, Stage::Deleted)).expect("rename");
        }
        store.sync_dir().expect("sync");
    }
    merged
}

#[test]
fn a_grouped_swap_completes_into_one_segment() {
    for deleted in [false, true] {
        let store = Arc::new(CrashStore::new());
        grouped_swap(&store, deleted);
        let log = open(Format::Native, &store).expect("open completes the swap");
        let bases: Vec<u64> = log.snapshot().closed().iter().map(|s| s.base()).collect();
        assert_eq!(bases, vec![0], "one merged segment (old segments deleted: {deleted})");
        assert_eq!(log.recovery_report().swaps_completed, 2);
        drop(log);
        assert_eq!(keys(Format::Native, &store), all_but(&[]));
        let names = store.list().expect("list");
        assert!(!names.iter().any(|n| n.contains(".swap") || n.contains(".deleted")), "{names:?}");
    }
}

#[test]
fn a_marker_covering_another_swap_is_refused_and_nothing_changes() {
    let store = Arc::new(CrashStore::new());
    grouped_swap(&store, false);
    // A marker at 0 that would remove segments 0 and 10, beside the `.swap` of 10.
    let (swap0, swap10) = (name(0, SegmentFile::Log, Stage::Swap), name(10, SegmentFile::Log, Stage::Swap));
    write(&*store, &swap0, &log_core::removal::encode(0, 20));
    write(&*store, &swap10, &read(&*store, &log_name(10)));
    let before = store.list().expect("list");
    match open(Format::Native, &store) {
        Err(log_core::Error::Corrupt { segment, kind: log_core::CorruptKind::BadRemovalMarker(_), .. }) => {
            assert_eq!(segment, swap0);
        }
        other => panic!("expected a bad marker, got {other:?}"),
    }
    assert_eq!(store.list().expect("list"), before, "nothing changed");
}

#[test]
fn a_damaged_grouped_swap_is_set_aside_with_its_marker_and_both_segments_come_back() {
    let store = Arc::new(CrashStore::new());
    let merged = grouped_swap(&store, true);
    let swap0 = name(0, SegmentFile::Log, Stage::Swap);
    let mut bad = merged.clone();
    bad[28] ^= 0x11;
    write(&*store, &swap0, &bad);
    let p = plan(Format::Native, &*store);
    let discarded: Vec<&str> = p
        .actions
        .iter()
        .filter_map(|a| match a {
            RepairAction::DiscardSwap { file, .. } => Some(file.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(discarded, vec![swap0.as_str(), name(10, SegmentFile::Log, Stage::Swap).as_str()], "{p:?}");
    apply(&*store, &p, 3).expect("apply");
    assert_eq!(keys(Format::Native, &store), all_but(&[]), "both old segments restored: nothing lost");
}

// A Kafka segment's own: its indexes and a preallocated zero fill.

#[test]
fn a_preallocated_zero_fill_is_no_damage() {
    let store = Arc::new(CrashStore::new());
    three_segments(Format::Kafka, &store);
    let seg = log_name(0);
    let mut bytes = read(&*store, &seg);
    bytes.extend_from_slice(&[0u8; 4096]);
    write(&*store, &seg, &bytes);
    let p = plan(Format::Kafka, &*store);
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
        three_segments(Format::Kafka, &store);
        let index = name(0, SegmentFile::OffsetIndex, Stage::Live);
        let good = read(&*store, &index);
        let mut bad = good.clone();
        spoil(&mut bad);
        write(&*store, &index, &bad);
        let p = plan(Format::Kafka, &*store);
        assert!(
            matches!(&p.actions[..], [RepairAction::RebuildIndexes { segment, .. }] if segment == &log_name(0)),
            "{what}: {p:?}"
        );
        apply(&*store, &p, 1).expect("apply");
        assert_eq!(read(&*store, &index), good, "{what}: rebuilt as the roll wrote it");
    }
}
