//! What a pass takes of its log's settings, and passes by several threads: records younger than the minimum
//! compaction lag stay dirty, the delete retention is the log's, a stopped pass changes nothing, a purge runs
//! on the first pass only, and a pass by two or three threads (a sharded map, groups copied in parallel)
//! leaves the log a one-thread pass leaves.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use cleaner::{Cleaner, CleanerConfig, Error, ManualClock, MapKind, PassOptions};
use log_core::{AppendRecord, Log, LogConfig, SegmentStore};
use proptest::prelude::*;
use storage_mem::MemStore;

const NOW: i64 = 1_000_000_000;

fn log(segment_bytes: u64) -> Log {
    Log::open(
        Arc::new(MemStore::new()),
        log_core::OpenOptions::new(LogConfig { segment_bytes, ..LogConfig::default() }),
    )
    .expect("open")
}

fn append(log: &Log, key: &str, value: Option<&str>, timestamp: i64) {
    let rec = AppendRecord { key: Some(key.as_bytes()), value: value.map(str::as_bytes), timestamp, headers: &[] };
    log.append(&rec).expect("append");
}

fn cleaner(map: MapKind, keys: usize, threads: usize) -> Cleaner {
    let per_shard = map.bytes_for(keys.div_ceil(threads).max(1), 0.9, 4);
    let config = CleanerConfig { map, dedupe_buffer_bytes: per_shard * threads, threads, ..CleanerConfig::default() };
    Cleaner::new(config, Arc::new(ManualClock::new(NOW))).expect("cleaner")
}

/// Every record as `(offset, key, value, horizon)`.
fn records(log: &Log) -> Vec<(u64, String, Option<String>, Option<i64>)> {
    log.snapshot()
        .reader(0)
        .map(|r| {
            let r = r.expect("read");
            let text = |b: Vec<u8>| String::from_utf8(b).expect("utf8");
            (r.offset, text(r.key.expect("key")), r.value.map(text), r.delete_horizon)
        })
        .collect()
}

/// Key → latest value, deleted keys absent.
fn view(log: &Log) -> BTreeMap<String, String> {
    let mut v = BTreeMap::new();
    for (_, k, value, _) in records(log) {
        match value {
            Some(x) => v.insert(k, x),
            None => v.remove(&k),
        };
    }
    v
}

#[test]
fn records_younger_than_the_minimum_lag_stay_dirty() {
    let log = log(1 << 20);
    // Two old segments and two young ones, every key written in each.
    for (segment, ts) in [NOW - 50_000, NOW - 40_000, NOW - 500, NOW - 100].into_iter().enumerate() {
        for k in 0..5 {
            append(&log, &format!("k{k}"), Some(&format!("s{segment}")), ts);
        }
        log.roll().expect("roll");
    }
    let options = PassOptions { min_compaction_lag_ms: 1000, ..PassOptions::default() };
    let stats = cleaner(MapKind::Compact, 100, 1).clean(&log, options).expect("pass");
    assert_eq!((stats.first_uncleanable_offset, stats.end_offset), (10, 10), "segment 10 is too young");
    assert!(!stats.map_full);
    let offsets: Vec<u64> = records(&log).iter().map(|r| r.0).collect();
    assert_eq!(offsets, (5..20).collect::<Vec<_>>(), "the old segment 0 lost its records to segment 5's");
    // Once they are old enough, a pass takes the rest.
    let options = PassOptions { min_compaction_lag_ms: 50, ..PassOptions::default() };
    cleaner(MapKind::Compact, 100, 1).clean(&log, options).expect("pass");
    assert_eq!(records(&log).iter().map(|r| r.0).collect::<Vec<_>>(), (15..20).collect::<Vec<_>>());
}

#[test]
fn the_delete_retention_is_the_pass_options() {
    let log = log(1 << 20);
    append(&log, "a", Some("1"), NOW);
    append(&log, "a", None, NOW);
    log.roll().expect("roll");
    let options = PassOptions { delete_retention_ms: 60_000, ..PassOptions::default() };
    cleaner(MapKind::Skimpy, 10, 1).clean(&log, options).expect("pass");
    assert_eq!(records(&log), vec![(1, "a".into(), None, Some(NOW + 60_000))]);
}

#[test]
fn a_tombstone_at_or_past_the_removal_floor_outlives_its_horizon() {
    // Two tombstones stamped by a first pass (offsets 1 and 3), then a purge with the floor between them:
    // the one below goes, the one at or past it stays (a replica has not cleaned past it).
    let log = log(1 << 20);
    for k in ["a", "b"] {
        append(&log, k, Some("1"), NOW);
        append(&log, k, None, NOW);
    }
    log.roll().expect("roll");
    cleaner(MapKind::Skimpy, 10, 1).clean(&log, PassOptions::default()).expect("stamps");
    append(&log, "c", Some("1"), NOW);
    log.roll().expect("roll");
    let options = PassOptions { removal_floor: Some(2), ..PassOptions::purge() };
    let stats = cleaner(MapKind::Skimpy, 10, 1).clean(&log, options).expect("pass");
    assert_eq!(stats.tombstones_dropped, 1);
    let left: Vec<(u64, Option<String>)> = records(&log).into_iter().map(|(o, _, v, _)| (o, v)).collect();
    assert_eq!(left, vec![(3, None), (4, Some("1".into()))], "the tombstone at 3 stays; the one at 1 went");
}

#[test]
fn a_stopped_pass_changes_nothing() {
    let store: Arc<dyn SegmentStore> = Arc::new(MemStore::new());
    let log = Log::open(Arc::clone(&store), log_core::OpenOptions::new(LogConfig::default())).expect("open");
    for i in 0..20_000u32 {
        append(&log, &format!("k{}", i % 100), Some("a value of some length to fill bytes"), NOW);
    }
    log.roll().expect("roll");
    let before = records(&log);
    let mut c = cleaner(MapKind::Compact, 1000, 1);
    c.stop_when(Arc::new(AtomicBool::new(true)));
    assert!(matches!(c.clean(&log, PassOptions::default()), Err(Error::Aborted)));
    assert_eq!(records(&log), before);
    assert_eq!(log.cleaner_checkpoint(), 0);
    let names = store.list().expect("list");
    assert!(!names.iter().any(|n| n.ends_with(".cleaned")), "{names:?}");
}

#[test]
fn a_purge_runs_on_the_first_pass_only() {
    let log = log(1 << 20);
    for k in 0..8 {
        append(&log, &format!("k{k}"), Some("1"), NOW);
        append(&log, &format!("k{k}"), None, NOW);
    }
    log.roll().expect("roll");
    cleaner(MapKind::Compact, 100, 1).clean(&log, PassOptions::default()).expect("stamps the tombstones");
    for k in 0..8 {
        append(&log, &format!("n{k}"), None, NOW);
    }
    log.roll().expect("roll");
    // A buffer of 3 keys: three passes; the first purges the stamped tombstones, and the new ones, seen for
    // the first time, are kept by every pass.
    let all =
        cleaner(MapKind::Compact, 3, 1).clean_until_clean(&log, PassOptions::purge(), |_| Ok(())).expect("passes");
    assert!(all.len() >= 3);
    assert!(all[0].purge && all[1..].iter().all(|s| !s.purge));
    assert_eq!(all[0].tombstones_dropped, 8);
    let keys: Vec<String> = records(&log).into_iter().map(|r| r.1).collect();
    assert_eq!(keys, (0..8).map(|k| format!("n{k}")).collect::<Vec<_>>());
}

/// One step of a generated log.
#[derive(Debug, Clone)]
enum Step {
    Put(u8, u8),
    Del(u8),
    Roll,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => (0u8..40, any::<u8>()).prop_map(|(k, v)| Step::Put(k, v)),
        2 => (0u8..40).prop_map(Step::Del),
        1 => Just(Step::Roll),
    ]
}

fn build(steps: &[Step], segment_bytes: u64) -> Log {
    let log = log(segment_bytes);
    for s in steps {
        match *s {
            Step::Put(k, v) => append(&log, &format!("k{k}"), Some(&format!("v{v}")), NOW),
            Step::Del(k) => append(&log, &format!("k{k}"), None, NOW),
            Step::Roll => {
                log.roll().expect("roll");
            }
        }
    }
    log.roll().expect("roll");
    log
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn prop_passes_by_several_threads_leave_the_log_one_thread_leaves(
        steps in proptest::collection::vec(step(), 1..300),
        keys in prop_oneof![Just(2usize), Just(7), Just(1000)],
        segment_bytes in prop_oneof![Just(300u64), Just(2000), Just(1 << 20)],
        map in prop_oneof![Just(MapKind::Skimpy), Just(MapKind::FullKey), Just(MapKind::Compact)],
    ) {
        let reference = build(&steps, segment_bytes);
        let expected_view = view(&reference);
        cleaner(map, keys, 1).clean_until_clean(&reference, PassOptions::default(), |_| Ok(())).expect("passes");
        let expected = records(&reference);
        for threads in [2usize, 3] {
            let log = build(&steps, segment_bytes);
            let mut c = cleaner(map, keys, threads);
            let mut passes = 0;
            c.clean_until_clean(&log, PassOptions::default(), |s| {
                passes += 1;
                assert!(passes < 5000, "passes do not converge");
                assert_eq!(s.threads, threads);
                assert_eq!(view(&log), expected_view, "a pass by {threads} threads changed what a consumer sees");
                Ok(())
            }).expect("passes");
            prop_assert_eq!(&records(&log), &expected, "{} threads", threads);
        }
    }
}
