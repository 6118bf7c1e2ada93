//! How far the external pass reaches: its entries hold an offset in 40 bits from the pass's first (the log's
//! first closed segment's base), so a pass spans at most 2^40 offsets wherever they lie. A longer one is
//! refused before anything is read, and `auto` keeps to its map there.

use std::sync::Arc;

use cleaner::{Cleaner, CleanerConfig, Error, ManualClock, MapKind, PassOptions};
use log_core::kafka::files::{SegmentFile, Stage, name};
use log_core::kafka::{Compression, RecordToWrite, new_header, write_batch};
use log_core::{CheckpointFile, Log, LogConfig, SegmentStore};
use storage_mem::MemStore;

use crate::written::{NOW, files};

/// A Kafka partition of a segment at each of `bases` (the last one active): 20 records over 5 keys each, at
/// offsets from its base.
fn partition(bases: &[u64]) -> (Arc<MemStore>, Log) {
    let store = Arc::new(MemStore::new());
    for (i, &base) in bases.iter().enumerate() {
        let keys: Vec<Vec<u8>> = (0..20u64).map(|o| format!("k{}", (o * 3 + i as u64) % 5).into_bytes()).collect();
        let values: Vec<Vec<u8>> = (0..20u64).map(|o| format!("v{}", base + o).into_bytes()).collect();
        let records: Vec<RecordToWrite<'_>> = (0..20usize)
            .map(|o| RecordToWrite {
                offset: (base + o as u64) as i64,
                timestamp: NOW - 10_000,
                key: Some(&keys[o]),
                value: Some(&values[o]),
                header_count: 0,
                header_bytes: &[],
            })
            .collect();
        let mut bytes = Vec::new();
        let header = new_header(base as i64, 19);
        write_batch(&header, Compression::None, None, &records, &mut bytes, &mut Vec::new()).expect("batch");
        let file = store.create(&name(base, SegmentFile::Log, Stage::Live)).expect("create");
        file.append(&bytes).expect("append");
        file.sync().expect("sync");
        if i + 1 < bases.len() {
            file.seal().expect("seal");
        }
    }
    let config = LogConfig { segment_bytes: 1 << 30, ..LogConfig::default() };
    let source = Arc::clone(&store) as Arc<dyn SegmentStore>;
    let log = Log::open(source, log_core::OpenOptions::kafka(config, CheckpointFile::Memory)).expect("open");
    (store, log)
}

fn cleaner(map: MapKind, one_pass: bool) -> Cleaner {
    cleaner_in(map, one_pass, 1 << 20)
}

fn cleaner_in(map: MapKind, one_pass: bool, dedupe_buffer_bytes: usize) -> Cleaner {
    let config = CleanerConfig { map, one_pass, dedupe_buffer_bytes, ..CleanerConfig::default() };
    Cleaner::new(config, Arc::new(ManualClock::new(NOW))).expect("cleaner")
}

#[test]
fn a_pass_spanning_more_offsets_than_an_entry_holds_is_refused_and_auto_keeps_to_its_map() {
    let far = (1u64 << 40) + 5;
    let (store, log) = partition(&[0, far, far + 100]);
    let before = files(&store);
    let refused = cleaner(MapKind::External, false).clean(&log, PassOptions::default());
    assert!(
        matches!(refused, Err(Error::SectionTooLong { first: 0, limit, most }) if limit == far + 100 && most == 1 << 40),
        "{refused:?}"
    );
    assert_eq!(files(&store), before, "nothing changed");
    // auto: a section of more offsets than its map holds keys, larger than the log before it, which would take
    // the external pass at once; here its map instead, which holds the five keys.
    let stats = cleaner(MapKind::Skimpy, true).clean(&log, PassOptions::default()).expect("clean");
    assert_eq!((stats.map.as_str(), stats.fell_back.is_none()), ("skimpy", true), "{stats:?}");
    // A map of two keys fills, and does not fall back to a pass it cannot take: the map's passes, warned of
    // as with any map (`map_full`).
    let (_, again) = partition(&[0, far, far + 100]);
    let small = MapKind::Skimpy.bytes_for(2, 0.9, 2);
    let stats = cleaner_in(MapKind::Skimpy, true, small).clean(&again, PassOptions::default()).expect("clean");
    assert!(stats.map == "skimpy" && stats.map_full && stats.fell_back.is_none(), "{stats:?}");
}

#[test]
fn offsets_far_from_zero_are_held_from_the_pass_first() {
    let at = 1u64 << 50;
    let bases = [at, at + 1_000, at + (1 << 39), at + (1 << 39) + 100];
    let (_, a) = partition(&bases);
    let (_, b) = partition(&bases);
    let external = cleaner(MapKind::External, false).clean(&a, PassOptions::default()).expect("clean");
    cleaner(MapKind::Skimpy, false).clean(&b, PassOptions::default()).expect("clean");
    assert_eq!(external.pass2.records_kept, 5, "{external:?}");
    let records = |log: &Log| -> Vec<(u64, Option<Vec<u8>>)> {
        log.snapshot().reader(0).map(|r| r.expect("read")).map(|r| (r.offset, r.value)).collect()
    };
    assert_eq!(records(&a), records(&b), "what the map keeps");
}
