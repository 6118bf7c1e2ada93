//! `advise` against real passes: on generated logs, the passes it predicts from the log are the passes the
//! cleaner takes, for every map and several buffers; the distinct keys it counts are the keys there are; and
//! its estimate from counts alone (keys spread uniformly over the records) is close.

use std::collections::HashSet;
use std::sync::Arc;

use cleaner::advise::{Budget, from_counts, from_log};
use cleaner::{Cleaner, CleanerConfig, ManualClock, MapKind, PassOptions};
use log_core::workload::Workload;
use log_core::{Log, LogConfig, SegmentStore};

fn generated(records: u64, keys: u64, seed: u64) -> Arc<storage_mem::MemStore> {
    let store = Arc::new(storage_mem::MemStore::new());
    let log = Log::open(
        Arc::clone(&store) as Arc<dyn SegmentStore>,
        log_core::OpenOptions::new(LogConfig { segment_bytes: 64 << 10, ..LogConfig::default() }),
    )
    .expect("open");
    Workload { records, keys, value_bytes: 20, tombstone_fraction: 0.05, seed }
        .append_to(&log, 0, |_| {})
        .expect("append");
    log.roll().expect("roll");
    store
}

fn copy(from: &storage_mem::MemStore) -> Arc<storage_mem::MemStore> {
    let to = Arc::new(storage_mem::MemStore::new());
    for name in from.list().expect("list") {
        let f = from.open(&name).expect("open");
        let mut b = vec![0; f.len() as usize];
        f.read_at(0, &mut b).expect("read");
        to.create(&name).expect("create").append(&b).expect("append");
    }
    to
}

/// Passes the cleaner takes on a copy of `store` with `map` in `budget` bytes.
fn real_passes(store: &storage_mem::MemStore, map: MapKind, budget: u64) -> u64 {
    let log = Log::open(copy(store) as Arc<dyn SegmentStore>, log_core::OpenOptions::new(LogConfig::default()))
        .expect("open");
    let config = CleanerConfig { map, dedupe_buffer_bytes: budget as usize, ..CleanerConfig::default() };
    let mut c = Cleaner::new(config, Arc::new(ManualClock::new(0))).expect("map");
    let mut passes = 1;
    while c.clean(&log, PassOptions::default()).expect("pass").map_full {
        passes += 1;
    }
    passes
}

#[test]
fn passes_predicted_from_a_log_are_the_passes_taken_for_every_map() {
    for (records, keys, seed) in [(6000u64, 400u64, 1u64), (5000, 2500, 2), (3000, 40, 3)] {
        let store = generated(records, keys, seed);
        let log = Log::open(
            Arc::clone(&store) as Arc<dyn SegmentStore>,
            log_core::OpenOptions::new(LogConfig::default()).read_only(true),
        )
        .expect("open");
        let distinct: HashSet<Vec<u8>> =
            log.snapshot().reader(0).map(|r| r.expect("read").key.expect("keyed")).collect();
        for budget in [2u64 << 10, 6 << 10, 20 << 10, 1 << 20] {
            let advice =
                from_log(&log, Budget { total_bytes: budget, threads: 1, load_factor: 0.9 }, None).expect("advice");
            assert_eq!(advice.distinct.keys, distinct.len() as u64);
            assert!(advice.distinct.exact);
            assert_eq!(advice.dirty_records, records);
            for a in &advice.maps {
                let predicted = a.passes.expect("the budget holds a key");
                let taken = real_passes(&store, a.map, budget);
                assert_eq!(predicted, taken, "{} with {budget} bytes on {records} records of {keys} keys", a.map);
                if budget == 1 << 20 {
                    assert_eq!(predicted, 1);
                }
                let one = a.buffer_bytes_for_one_pass;
                assert_eq!(real_passes(&store, a.map, one), 1, "{}: the buffer it names for one pass suffices", a.map);
            }
        }
    }
}

#[test]
fn the_estimate_from_counts_is_close_for_uniform_keys() {
    let (records, keys) = (20_000u64, 2_000u64);
    let store = generated(records, keys, 9);
    for budget in [4u64 << 10, 12 << 10] {
        let advice = from_counts(keys, 16, Some(records), Budget { total_bytes: budget, threads: 1, load_factor: 0.9 })
            .expect("advice");
        for a in advice {
            let estimate = a.passes.expect("passes") as f64;
            let taken = real_passes(&store, a.map, budget) as f64;
            assert!(
                (estimate - taken).abs() <= (taken * 0.2).max(1.0),
                "{} with {budget} bytes: {estimate} vs {taken}",
                a.map
            );
        }
    }
}

#[test]
fn threads_split_the_buffer_and_a_tiny_one_holds_nothing() {
    let per = from_counts(1_000_000, 16, None, Budget { total_bytes: 128 << 20, threads: 4, load_factor: 0.9 })
        .expect("advice");
    let skimpy = per.iter().find(|a| a.map == MapKind::Skimpy).expect("skimpy");
    assert_eq!(skimpy.buffer_bytes, 32 << 20);
    assert_eq!(skimpy.capacity, 1_258_290, "Kafka's geometry: floor(floor(32 MiB / 24 B) x 0.9)");
    assert_eq!(skimpy.total_buffer_bytes_for_one_pass, skimpy.buffer_bytes_for_one_pass * 4);
    let tiny = from_counts(10, 16, None, Budget { total_bytes: 20, threads: 1, load_factor: 0.9 }).expect("advice");
    assert!(tiny.iter().all(|a| a.passes.is_none()), "{tiny:?}");
}
