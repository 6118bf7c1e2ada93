//! The worked trace of the log compaction lesson (`shared/seeds/`) and one test for each "common mistake"
//! it lists, on the library API over the in-memory backend.

use std::sync::Arc;

use cleaner::{Cleaner, CleanerConfig, ManualClock, MapKind, PassOptions};
use conformance::scenarios::segments;
use log_core::{Log, LogConfig};

fn new_log() -> Log {
    Log::open(Arc::new(storage_mem::MemStore::new()), log_core::OpenOptions::new(LogConfig::default())).expect("open")
}

fn cleaner_holding(map: MapKind, keys: usize, clock: &Arc<ManualClock>) -> Cleaner {
    let config =
        CleanerConfig { map, dedupe_buffer_bytes: map.bytes_holding(keys, 0.9, 1), ..CleanerConfig::default() };
    Cleaner::new(config, Arc::clone(clock) as Arc<dyn cleaner::Clock>).expect("map")
}

fn cleaner(map: MapKind, clock: &Arc<ManualClock>) -> Cleaner {
    cleaner_holding(map, 1000, clock)
}

fn seg(base: u64, recs: &[&str], closed: bool) -> (u64, Vec<String>, bool) {
    (base, recs.iter().map(|s| (*s).to_owned()).collect(), closed)
}

/// PUT p 1, PUT q 1, ROLL, PUT p 2, DEL q, ROLL, PUT r 1.
fn seed_log() -> Log {
    let log = new_log();
    conformance::scenarios::write_seed_log(&log);
    log
}

#[test]
fn seed_worked_trace() {
    for map in MapKind::ALL {
        let log = seed_log();
        assert_eq!(segments(&log), conformance::scenarios::seed_segments());
        let clock = Arc::new(ManualClock::new(1_000));
        let mut c = cleaner(map, &clock);
        let stats = c.clean(&log, PassOptions::default()).expect("compact");
        // map from closed segments: p -> 2, q -> 3; keep 2 and 3, drop 0 and 1.
        let map = c.map().expect("an in-memory map");
        assert_eq!(map.get(b"p", &mut cleaner::Probes::default()), Some(2));
        assert_eq!(map.get(b"q", &mut cleaner::Probes::default()), Some(3));
        assert_eq!(segments(&log), vec![seg(2, &["2 p=2", "3 q=TOMBSTONE"], true), seg(4, &["4 r=1"], false)]);
        assert_eq!((stats.stale_dropped, stats.segments_removed, stats.segments_rewritten), (2, 1, 1));
        assert_eq!((stats.tombstones_kept, stats.tombstones_stamped), (1, 1));
        // A later COMPACT PURGE drops the tombstone too.
        c.clean(&log, PassOptions { purge: true, ..PassOptions::default() }).expect("purge");
        assert_eq!(segments(&log), vec![seg(2, &["2 p=2"], true), seg(4, &["4 r=1"], false)]);
    }
}

#[test]
fn mistake_compacting_the_active_segment() {
    for map in MapKind::ALL {
        let log = new_log();
        for v in [b"1", b"2", b"3"] {
            log.put(b"a", v).expect("put");
        }
        let clock = Arc::new(ManualClock::new(1_000));
        let stats = cleaner(map, &clock).clean(&log, PassOptions::default()).expect("compact");
        assert_eq!(segments(&log), vec![seg(0, &["0 a=1", "1 a=2", "2 a=3"], false)]);
        assert_eq!((stats.pass1.records_read, stats.pass2.records_read), (0, 0));
    }
}

#[test]
fn mistake_renumbering_survivors() {
    for map in MapKind::ALL {
        let log = new_log();
        for (k, v) in [("a", "1"), ("b", "1"), ("a", "2"), ("c", "1"), ("b", "2")] {
            log.put(k.as_bytes(), v.as_bytes()).expect("put");
        }
        log.roll().expect("roll");
        let clock = Arc::new(ManualClock::new(1_000));
        cleaner(map, &clock).clean(&log, PassOptions::default()).expect("compact");
        assert_eq!(segments(&log), vec![seg(0, &["2 a=2", "3 c=1", "4 b=2"], true), seg(5, &[], false)]);
        // A consumer asking for a cleaned offset gets the next record that exists.
        assert_eq!(log.read(0).expect("read").map(|r| r.offset), Some(2));
        assert_eq!(log.read(5).expect("read"), None);
        assert_eq!(log.next_offset(), 5);
    }
}

#[test]
fn mistake_dropping_the_tombstone_on_the_first_pass() {
    for map in MapKind::ALL {
        let log = new_log();
        log.put(b"q", b"1").expect("put");
        log.delete(b"q").expect("del");
        log.roll().expect("roll");
        let clock = Arc::new(ManualClock::new(1_000));
        let mut c = cleaner(map, &clock);
        // Even a purge keeps a tombstone the first time a pass sees it.
        c.clean(&log, PassOptions { purge: true, ..PassOptions::default() }).expect("purge");
        assert_eq!(segments(&log), vec![seg(0, &["1 q=TOMBSTONE"], true), seg(2, &[], false)]);
        // Before the delete retention has passed an ordinary pass keeps it.
        clock.advance(cleaner::DEFAULT_DELETE_RETENTION_MS - 1);
        c.clean(&log, PassOptions::default()).expect("compact");
        assert_eq!(segments(&log), vec![seg(0, &["1 q=TOMBSTONE"], true), seg(2, &[], false)]);
        // Once it has, the tombstone goes and the segment with it.
        clock.advance(1);
        let stats = c.clean(&log, PassOptions::default()).expect("compact");
        assert_eq!(stats.tombstones_dropped, 1);
        assert_eq!(segments(&log), vec![seg(2, &[], false)]);
    }
}

#[test]
fn mistake_a_newer_value_in_the_active_segment_protects_nothing() {
    for map in MapKind::ALL {
        let log = new_log();
        log.put(b"a", b"1").expect("put");
        log.roll().expect("roll");
        log.put(b"a", b"2").expect("put");
        let clock = Arc::new(ManualClock::new(1_000));
        let mut c = cleaner(map, &clock);
        c.clean(&log, PassOptions::default()).expect("compact");
        // a=1 survives on purpose: only closed segments are inspected.
        assert_eq!(segments(&log), vec![seg(0, &["0 a=1"], true), seg(1, &["1 a=2"], false)]);
        log.roll().expect("roll");
        c.clean(&log, PassOptions::default()).expect("compact");
        assert_eq!(segments(&log), vec![seg(1, &["1 a=2"], true), seg(2, &[], false)]);
    }
}

#[test]
fn a_shadowed_tombstone_goes_like_any_stale_record() {
    for map in MapKind::ALL {
        let log = new_log();
        log.put(b"k", b"1").expect("put");
        log.delete(b"k").expect("del");
        log.put(b"k", b"2").expect("put");
        log.roll().expect("roll");
        let clock = Arc::new(ManualClock::new(1_000));
        let stats = cleaner(map, &clock).clean(&log, PassOptions::default()).expect("compact");
        assert_eq!(segments(&log), vec![seg(0, &["2 k=2"], true), seg(3, &[], false)]);
        assert_eq!((stats.stale_dropped, stats.tombstones_kept), (2, 0));
    }
}

#[test]
fn unkeyed_records_are_dropped_and_counted_invalid() {
    for map in MapKind::ALL {
        let log = new_log();
        log.append(&log_core::AppendRecord { key: None, value: Some(b"x"), timestamp: 5, headers: &[] })
            .expect("append");
        log.put(b"a", b"1").expect("put");
        log.roll().expect("roll");
        let clock = Arc::new(ManualClock::new(1_000));
        let stats = cleaner(map, &clock).clean(&log, PassOptions::default()).expect("compact");
        assert_eq!(stats.invalid_records, 1);
        assert_eq!(segments(&log), vec![seg(0, &["1 a=1"], true), seg(2, &[], false)]);
    }
}

#[test]
fn a_partial_pass_stops_mid_segment_and_the_next_continues() {
    for map in MapKind::ALL {
        let log = new_log();
        for k in ["a", "b", "c", "a", "b", "c"] {
            log.put(k.as_bytes(), b"v").expect("put");
        }
        log.roll().expect("roll");
        let clock = Arc::new(ManualClock::new(1_000));
        // A buffer that holds 2 keys.
        let mut c = cleaner_holding(map, 2, &clock);
        let first = c.clean(&log, PassOptions::default()).expect("pass");
        assert!(first.map_full);
        assert_eq!((first.first_dirty_offset, first.end_offset), (0, 2));
        assert_eq!(log.cleaner_checkpoint(), 2);
        let mut passes = 1;
        while c.clean(&log, PassOptions::default()).expect("pass").map_full {
            passes += 1;
        }
        assert!(passes >= 2);
        assert_eq!(segments(&log), vec![seg(0, &["3 a=v", "4 b=v", "5 c=v"], true), seg(6, &[], false)]);
    }
}

#[test]
fn stats_serialise_to_json_with_the_figures_kafka_reports() {
    for map in MapKind::ALL {
        let log = seed_log();
        let clock = Arc::new(ManualClock::new(1_000));
        let stats = cleaner(map, &clock).clean(&log, PassOptions::default()).expect("compact");
        let json: serde_json::Value = serde_json::to_value(&stats).expect("json");
        assert_eq!(json["first_dirty_offset"], 0);
        assert_eq!(json["end_offset"], 4);
        assert_eq!(json["pass1"]["records_read"], 4);
        assert_eq!(json["pass2"]["records_kept"], 2);
        assert_eq!(json["offset_map"]["entries"], 2);
        assert!(json["offset_map"]["utilization"].as_f64().is_some_and(|u| u > 0.0));
        assert!(json["offset_map"]["probes_per_lookup"].as_f64().is_some_and(|p| p >= 1.0));
    }
}
