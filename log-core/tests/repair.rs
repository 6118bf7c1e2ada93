//! `repair`: it cuts exactly the damaged bytes, keeps every valid record, leaves a pending swap's removal
//! marker alone, finishes a committed swap before cutting (so a crash during the repair can never roll the
//! swap back), and a crash at any of its sync points loses no record but the damaged ones.

use std::collections::BTreeMap;
use std::sync::Arc;

use log_core::format::native::names::{FileKind, file_name};
use log_core::repair::{DroppedOffsets, RepairAction, apply, plan};
use log_core::{Log, LogConfig, SegmentStore};
use storage_mem::crash::CrashStore;

fn config() -> LogConfig {
    LogConfig { index_interval_bytes: 64, ..LogConfig::default() }
}

/// Three segments of 10 records (keys k0..k29), the last one active.
fn three_segments(store: &Arc<CrashStore>) {
    let log =
        Log::open(Arc::clone(store) as Arc<dyn SegmentStore>, log_core::OpenOptions::new(config())).expect("open");
    for i in 0..30u32 {
        log.put(format!("k{i}").as_bytes(), format!("v{i}").as_bytes()).expect("put");
        if i % 10 == 9 && i < 29 {
            log.roll().expect("roll");
        }
    }
    log.sync().expect("sync");
    store.sync_dir().expect("sync dir");
}

fn read(store: &dyn SegmentStore, name: &str) -> Vec<u8> {
    let f = store.open(name).expect("open");
    let mut b = vec![0; f.len() as usize];
    f.read_at(0, &mut b).expect("read");
    b
}

fn write(store: &dyn SegmentStore, name: &str, bytes: &[u8]) {
    let _ = store.delete(name);
    let f = store.create(name).expect("create");
    f.append(bytes).expect("append");
    f.sync().expect("sync");
    store.sync_dir().expect("sync dir");
}

/// Flips a byte inside the `nth` frame of `name`; returns that frame's byte range.
fn damage(store: &dyn SegmentStore, name: &str, nth: usize) -> (u64, u64) {
    let mut bytes = read(store, name);
    let mut pos = 0;
    for _ in 0..nth {
        pos += 8 + u32::from_le_bytes(bytes[pos..pos + 4].try_into().expect("4")) as usize;
    }
    let end = pos + 8 + u32::from_le_bytes(bytes[pos..pos + 4].try_into().expect("4")) as usize;
    bytes[pos + 28] ^= 0x11;
    write(store, name, &bytes);
    (pos as u64, end as u64)
}

fn keys(store: &Arc<CrashStore>) -> BTreeMap<String, String> {
    let log = Log::open(Arc::clone(store) as Arc<dyn SegmentStore>, log_core::OpenOptions::new(config()))
        .expect("opens after the repair");
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

#[test]
fn cuts_exactly_the_damaged_frames_and_keeps_a_copy() {
    let store = Arc::new(CrashStore::new());
    three_segments(&store);
    let seg = file_name(10, FileKind::Log);
    let range = damage(&*store, &seg, 3);
    let p = plan(&*store).expect("plan");
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
    assert_eq!(out.backups, vec![format!("repair-7.{seg}.{}-{}.bytes", range.0, range.1)]);
    assert_eq!(keys(&store), all_but(&[13]));
}

#[test]
fn a_pending_removal_marker_is_not_damage() {
    let store = Arc::new(CrashStore::new());
    three_segments(&store);
    // Every key of segment 0 gets a later record, so a pass may remove the segment (a marker removing the
    // latest record of a key is no pass's: `log_core::swap_proof`).
    let log =
        Log::open(Arc::clone(&store) as Arc<dyn SegmentStore>, log_core::OpenOptions::new(config())).expect("open");
    for i in 0..10u32 {
        log.put(format!("k{i}").as_bytes(), format!("v{i}").as_bytes()).expect("put");
    }
    log.sync().expect("sync");
    drop(log);
    store.sync_dir().expect("sync dir");
    // A committed swap that removes segment 0 (its `.log` still there).
    write(&*store, &file_name(0, FileKind::Swap), &log_core::removal::encode(0, 10));
    let p = plan(&*store).expect("plan");
    assert!(p.actions.is_empty() && p.cannot_fix.is_empty(), "{p:?}");
    apply(&*store, &p, 1).expect("apply");
    assert_eq!(keys(&store), all_but(&[]));
    assert!(store.open(&file_name(0, FileKind::Log)).is_err(), "the swap completed: segment 0 is gone");
}

/// A committed swap half done (segment 0 already `.deleted`, its cleaned copy `.swap`) and a damaged frame in
/// segment 10: the repair finishes the swap first, then cuts.
fn pending_swap_and_damage(store: &Arc<CrashStore>) -> (u64, u64) {
    three_segments(store);
    let log0 = file_name(0, FileKind::Log);
    let bytes = read(&**store, &log0);
    write(&**store, &file_name(0, FileKind::Swap), &bytes);
    store.rename(&log0, &file_name(0, FileKind::Deleted)).expect("rename");
    store.sync_dir().expect("sync");
    damage(&**store, &file_name(10, FileKind::Log), 5)
}

#[test]
fn a_committed_swap_is_finished_before_anything_is_cut() {
    let store = Arc::new(CrashStore::new());
    pending_swap_and_damage(&store);
    let p = plan(&*store).expect("plan");
    assert_eq!(p.actions.len(), 1, "{p:?}");
    apply(&*store, &p, 1).expect("apply");
    assert_eq!(keys(&store), all_but(&[15]));
}

#[test]
fn a_crash_at_any_sync_point_of_a_repair_loses_only_the_damaged_record() {
    let dry = Arc::new(CrashStore::new());
    pending_swap_and_damage(&dry);
    let first = dry.sync_points();
    let p = plan(&*dry).expect("plan");
    apply(&*dry, &p, 1).expect("apply");
    let last = dry.sync_points();
    assert!(last - first >= 5, "{} sync points", last - first);
    for k in first..last {
        for torn in [None, Some(k)] {
            let store = Arc::new(CrashStore::new());
            pending_swap_and_damage(&store);
            store.crash_at(k);
            let p = plan(&*store).expect("plan");
            assert!(apply(&*store, &p, 1).is_err(), "crash at {k}");
            let image = Arc::new(store.crash_image(torn));
            // Before the cut is durable the damaged frame is still there: repairing again finishes the job.
            let again = plan(&*image).expect("plan after the crash");
            apply(&*image, &again, 2).unwrap_or_else(|e| panic!("crash at {k}: repair again: {e}"));
            assert_eq!(keys(&image), all_but(&[15]), "crash at {k}");
        }
    }
}

/// A committed grouped swap: segments 0 and 10 merged into `0.log.swap`, segment 10 removed by a marker
/// covering it; `deleted` says whether the old segments were already renamed `.deleted` (step 6 of a commit).
fn grouped_swap(store: &Arc<CrashStore>, deleted: bool) -> Vec<u8> {
    three_segments(store);
    let (log0, log10) = (file_name(0, FileKind::Log), file_name(10, FileKind::Log));
    let mut merged = read(&**store, &log0);
    merged.extend_from_slice(&read(&**store, &log10));
    write(&**store, &file_name(0, FileKind::Swap), &merged);
    write(&**store, &file_name(10, FileKind::Swap), &log_core::removal::encode(10, 20));
    if deleted {
        for (b, name) in [(0, &log0), (10, &log10)] {
            store.rename(name, &file_name(b, FileKind::Deleted)).expect("rename");
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
        let log = Log::open(Arc::clone(&store) as Arc<dyn SegmentStore>, log_core::OpenOptions::new(config()))
            .expect("open completes the swap");
        let bases: Vec<u64> = log.snapshot().closed().iter().map(|s| s.base()).collect();
        assert_eq!(bases, vec![0], "one merged segment (old segments deleted: {deleted})");
        assert_eq!(log.recovery_report().swaps_completed, 2);
        drop(log);
        assert_eq!(keys(&store), all_but(&[]));
        let names = store.list().expect("list");
        assert!(!names.iter().any(|n| n.contains(".swap") || n.contains(".deleted")), "{names:?}");
    }
}

#[test]
fn a_marker_covering_another_swap_is_refused_and_nothing_changes() {
    let store = Arc::new(CrashStore::new());
    grouped_swap(&store, false);
    // A marker at 0 that would remove segments 0 and 10, beside the `.swap` of 10.
    write(&*store, &file_name(0, FileKind::Swap), &log_core::removal::encode(0, 20));
    write(&*store, &file_name(10, FileKind::Swap), &read(&*store, &file_name(10, FileKind::Log)));
    let before = store.list().expect("list");
    match Log::open(Arc::clone(&store) as Arc<dyn SegmentStore>, log_core::OpenOptions::new(config())) {
        Err(log_core::Error::Corrupt { segment, kind: log_core::CorruptKind::BadRemovalMarker(_), .. }) => {
            assert_eq!(segment, file_name(0, FileKind::Swap));
        }
        other => panic!("expected a bad marker, got {other:?}"),
    }
    assert_eq!(store.list().expect("list"), before, "nothing changed");
}

#[test]
fn a_damaged_grouped_swap_is_set_aside_with_its_marker_and_both_segments_come_back() {
    let store = Arc::new(CrashStore::new());
    let merged = grouped_swap(&store, true);
    let swap0 = file_name(0, FileKind::Swap);
    let mut bad = merged.clone();
    bad[28] ^= 0x11;
    write(&*store, &swap0, &bad);
    let p = plan(&*store).expect("plan");
    let discarded: Vec<&str> = p
        .actions
        .iter()
        .filter_map(|a| match a {
            RepairAction::DiscardSwap { file, .. } => Some(file.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(discarded, vec![swap0.as_str(), file_name(10, FileKind::Swap).as_str()], "{p:?}");
    apply(&*store, &p, 3).expect("apply");
    assert_eq!(keys(&store), all_but(&[]), "both old segments restored: nothing lost");
}
