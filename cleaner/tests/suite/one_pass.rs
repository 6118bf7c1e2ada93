//! `CleanerConfig::one_pass` (`--map auto`): a dirty section of any key count is cleaned in one pass. Over a
//! section with more offsets than the map holds keys, and at least the size of the log before it, the external
//! pass is taken at once; otherwise the map runs, and falls back to the external pass when it fills. A
//! section the map holds is cleaned to the map's own files by either route.

use std::sync::Arc;

use cleaner::{CleanStats, Cleaner, CleanerConfig, ManualClock, MapKind, PassOptions};
use log_core::{AppendRecord, Log};

use crate::written::{NOW, files, records, written};

/// Skimpy in a buffer holding `keys` keys; `one_pass` as given.
fn skimpy(keys: usize, one_pass: bool) -> Cleaner {
    let bytes = MapKind::Skimpy.bytes_for(keys, 0.9, 1);
    let config = CleanerConfig { dedupe_buffer_bytes: bytes, one_pass, ..CleanerConfig::default() };
    Cleaner::new(config, Arc::new(ManualClock::new(NOW))).expect("cleaner")
}

/// Cleans `log` with `cleaner` until clean; every pass's figures.
fn until_clean(cleaner: &mut Cleaner, log: &Log) -> Vec<CleanStats> {
    let mut passes = Vec::new();
    loop {
        let stats = cleaner.clean(log, PassOptions::default()).expect("clean");
        let full = stats.map_full;
        passes.push(stats);
        if !full {
            return passes;
        }
    }
}

/// Appends `count` records over `keys` keys (a scrambled order from `from`), then rolls.
fn append(log: &Log, keys: u64, from: u64, count: u64) {
    for i in from..from + count {
        let (key, value) = (format!("key-{}", (i * 7919) % keys), format!("later-{i}"));
        let rec = AppendRecord {
            key: Some(key.as_bytes()),
            value: Some(value.as_bytes()),
            timestamp: NOW - 10_000,
            headers: &[],
        };
        log.append(&rec).expect("append");
    }
    log.roll().expect("roll");
}

#[test]
fn a_section_the_map_holds_is_cleaned_to_the_maps_own_files_by_either_route() {
    // 3,000 offsets over 300 keys, all dirty, in a map of 400 keys: the external pass at once.
    let (kafka_way, a) = written(300, 3000);
    let (one_pass, b) = written(300, 3000);
    let plain = skimpy(400, false).clean(&a, PassOptions::default()).expect("clean");
    let auto = skimpy(400, true).clean(&b, PassOptions::default()).expect("clean");
    assert!(!plain.map_full && auto.fell_back.is_none(), "{auto:?}");
    assert_eq!(auto.map, "external");
    assert_eq!(auto.offset_map.entries, 300, "the external pass's figures: {:?}", auto.offset_map);
    assert_eq!(files(&kafka_way), files(&one_pass), "the same files as the map's own pass");
    // A cleaned log of 1,000 keys, then 500 records over 100 of them: more offsets than the map holds keys,
    // but a dirty section smaller than the log before it, so the map.
    let (kafka_way, a) = written(1000, 3000);
    let (one_pass, b) = written(1000, 3000);
    for log in [&a, &b] {
        until_clean(&mut skimpy(3000, false), log);
        append(log, 100, 3000, 500);
    }
    let plain = skimpy(400, false).clean(&a, PassOptions::default()).expect("clean");
    let auto = skimpy(400, true).clean(&b, PassOptions::default()).expect("clean");
    assert!(!plain.map_full && auto.fell_back.is_none(), "{auto:?}");
    assert_eq!(auto.map, "skimpy");
    assert_eq!(files(&kafka_way), files(&one_pass), "the same files as the map's own pass");
}

#[test]
fn a_map_that_would_fill_is_not_run_and_its_passes_are_told_from_a_sketch() {
    let (_, many_passes) = written(2000, 6000);
    let (_, one) = written(2000, 6000);
    let passes = until_clean(&mut skimpy(300, false), &many_passes);
    assert!(passes.len() >= 3, "the map alone takes several passes: {}", passes.len());
    let auto = skimpy(300, true).clean(&one, PassOptions::default()).expect("clean");
    let fell = auto.fell_back.as_ref().expect("the map would have filled");
    assert_eq!(fell.map, "skimpy");
    assert!(fell.estimated && fell.records_read == 0 && fell.bytes_read == 0, "{fell:?}");
    // Where the map's first pass ended, within a few percent, and so about as many passes.
    let exact = passes[0].end_offset;
    assert!(fell.refused_at.abs_diff(exact) * 20 <= exact, "{} against {exact}", fell.refused_at);
    assert!(fell.passes.abs_diff(passes.len() as u64) <= 1, "{} against {}", fell.passes, passes.len());
    assert!(!auto.map_full, "one pass to the end of the dirty section");
    assert_eq!(auto.end_offset, auto.first_uncleanable_offset);
    assert_eq!(auto.map, "external");
    assert_eq!(auto.pass1.records_read, 6000, "the section read once");
    assert_eq!(records(&one), records(&many_passes), "the records the map's passes keep, in one pass");
    // A second pass finds nothing dirty.
    let again = skimpy(300, true).clean(&one, PassOptions::default()).expect("clean");
    assert!(again.fell_back.is_none() && again.stale_dropped == 0, "{again:?}");
}

#[test]
fn a_map_that_fills_falls_back_to_one_external_pass_keeping_what_its_passes_would() {
    // A cleaned log of 2,000 keys, then 1,500 records over 2,000 keys: a dirty section of about 1,100 keys,
    // smaller than the log before it, so the map runs, and fills at 300.
    let (_, many_passes) = written(2000, 6000);
    let (_, one) = written(2000, 6000);
    for log in [&many_passes, &one] {
        until_clean(&mut skimpy(3000, false), log);
        append(log, 2000, 6000, 1500);
    }
    let passes = until_clean(&mut skimpy(300, false), &many_passes);
    assert!(passes.len() >= 3, "the map alone takes several passes: {}", passes.len());
    let auto = skimpy(300, true).clean(&one, PassOptions::default()).expect("clean");
    let fell = auto.fell_back.as_ref().expect("the map filled and the pass fell back");
    assert_eq!(fell.map, "skimpy");
    assert!(!fell.estimated && fell.records_read > 0, "{fell:?}");
    assert_eq!(fell.refused_at, passes[0].end_offset, "where the map's own first pass ended");
    assert!(fell.passes >= 2, "{fell:?}");
    assert!(!auto.map_full, "one pass to the end of the dirty section");
    assert_eq!(auto.end_offset, auto.first_uncleanable_offset);
    assert_eq!(auto.map, "external");
    assert_eq!(records(&one), records(&many_passes), "the records the map's passes keep, in one pass");
}
