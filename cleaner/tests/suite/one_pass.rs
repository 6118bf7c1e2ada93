//! `CleanerConfig::one_pass` (`--map auto`): a map that fills falls back to the external pass, so a dirty
//! section of any key count is cleaned in one pass; a section the map holds is cleaned by the map, its files
//! exactly the map's own.

use std::sync::Arc;

use cleaner::{Cleaner, CleanerConfig, ManualClock, MapKind, PassOptions};

use crate::written::{NOW, files, records, written};

/// Skimpy in a buffer holding `keys` keys; `one_pass` as given.
fn skimpy(keys: usize, one_pass: bool) -> Cleaner {
    let bytes = MapKind::Skimpy.bytes_for(keys, 0.9, 1);
    let config = CleanerConfig { dedupe_buffer_bytes: bytes, one_pass, ..CleanerConfig::default() };
    Cleaner::new(config, Arc::new(ManualClock::new(NOW))).expect("cleaner")
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
