//! `CleanerConfig::one_pass` (`--map auto`): a map that fills falls back to the external pass, so a dirty
//! section of any key count is cleaned in one pass; a section the map holds is cleaned by the map, its files
//! exactly the map's own.

use std::collections::BTreeMap;
use std::sync::Arc;

use cleaner::{Cleaner, CleanerConfig, ManualClock, MapKind, PassOptions};
use log_core::{AppendRecord, Log, LogConfig, SegmentStore};
use storage_mem::MemStore;

const NOW: i64 = 1_000_000_000;

/// A log of `records` records over `keys` keys (every seventh a tombstone), in segments of 4 KiB, rolled.
fn written(keys: u64, records: u64) -> (Arc<MemStore>, Log) {
    let store = Arc::new(MemStore::new());
    let config = LogConfig { segment_bytes: 4096, ..LogConfig::default() };
    let log = Log::open(Arc::clone(&store) as Arc<dyn SegmentStore>, log_core::OpenOptions::new(config)).expect("open");
    for i in 0..records {
        let key = format!("key-{}", (i * 7919) % keys);
        let value = format!("value-{i}");
        let value = (i % 7 != 6).then_some(value.as_bytes());
        let rec = AppendRecord { key: Some(key.as_bytes()), value, timestamp: NOW - 10_000, headers: &[] };
        log.append(&rec).expect("append");
    }
    log.roll().expect("roll");
    (store, log)
}

/// Skimpy in a buffer holding `keys` keys; `one_pass` as given.
fn skimpy(keys: usize, one_pass: bool) -> Cleaner {
    let bytes = MapKind::Skimpy.bytes_for(keys, 0.9, 1);
    let config = CleanerConfig { dedupe_buffer_bytes: bytes, one_pass, ..CleanerConfig::default() };
    Cleaner::new(config, Arc::new(ManualClock::new(NOW))).expect("cleaner")
}

/// Every file of the store and its bytes.
fn files(store: &MemStore) -> BTreeMap<String, Vec<u8>> {
    store
        .list()
        .expect("list")
        .into_iter()
        .map(|name| {
            let file = store.open(&name).expect("open");
            let mut bytes = vec![0u8; usize::try_from(file.len()).expect("size")];
            file.read_at(0, &mut bytes).expect("read");
            (name, bytes)
        })
        .collect()
}

/// Every record as `(offset, key, value)`.
fn records(log: &Log) -> Vec<(u64, Vec<u8>, Option<Vec<u8>>)> {
    log.snapshot()
        .reader(0)
        .map(|r| {
            let r = r.expect("read");
            (r.offset, r.key.expect("key"), r.value)
        })
        .collect()
}

#[test]
fn a_section_the_map_holds_is_cleaned_by_the_map_byte_for_byte() {
    let (kafka_way, a) = written(300, 3000);
    let (one_pass, b) = written(300, 3000);
    let plain = skimpy(400, false).clean(&a, PassOptions::default()).expect("clean");
    let auto = skimpy(400, true).clean(&b, PassOptions::default()).expect("clean");
    assert!(!plain.map_full && auto.fell_back.is_none(), "{auto:?}");
    assert_eq!(auto.map, "skimpy");
    assert_eq!(files(&kafka_way), files(&one_pass), "the same files as the map's own pass");
}

#[test]
fn a_map_that_fills_falls_back_to_one_external_pass_keeping_what_its_passes_would() {
    let (_, many_passes) = written(2000, 6000);
    let (_, one) = written(2000, 6000);
    let mut plain = skimpy(300, false);
    let mut passes = 0;
    loop {
        let stats = plain.clean(&many_passes, PassOptions::default()).expect("clean");
        passes += 1;
        if !stats.map_full {
            break;
        }
    }
    assert!(passes >= 3, "the map alone takes several passes: {passes}");
    let auto = skimpy(300, true).clean(&one, PassOptions::default()).expect("clean");
    let fell = auto.fell_back.as_ref().expect("the map filled and the pass fell back");
    assert_eq!(fell.map, "skimpy");
    assert!(fell.passes >= 2, "{fell:?}");
    assert!(!auto.map_full, "one pass to the end of the dirty section");
    assert_eq!(auto.end_offset, auto.first_uncleanable_offset);
    assert_eq!(auto.map, "external");
    assert_eq!(records(&one), records(&many_passes), "the records the map's passes keep, in one pass");
    // A second pass finds nothing dirty.
    let again = skimpy(300, true).clean(&one, PassOptions::default()).expect("clean");
    assert!(again.fell_back.is_none() && again.stale_dropped == 0, "{again:?}");
}
