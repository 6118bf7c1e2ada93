//! What each map does with a collision, forced by keeping only a few bits of every hash (the cleaner's
//! `collision-test` feature): `skimpy` and `compact` take two keys whose hashes agree for one key, so pass 2
//! drops the older one's latest record (the key is lost from the log, which is why their fingerprints are
//! long: see `MapKind::collision_probability`); `fullkey` compares whole keys and keeps every key. With every
//! bit of the hash, no map loses a key.

use std::sync::Arc;

use cleaner::map::HashBits;
use cleaner::{Cleaner, CleanerConfig, ManualClock, MapKind, PassOptions};
use log_core::{Log, LogConfig};

const KEYS: u32 = 2000;

/// A log of `KEYS` distinct keys, one record each: every record is its key's latest.
fn log() -> Log {
    let log = Log::open(Arc::new(storage_mem::MemStore::new()), log_core::OpenOptions::new(LogConfig::default()))
        .expect("open");
    for i in 0..KEYS {
        log.put(format!("key-{i}").as_bytes(), format!("v{i}").as_bytes()).expect("put");
    }
    log.roll().expect("roll");
    log
}

/// Records left after one full pass with `map` keeping `bits` bits of every hash.
fn survivors(map: MapKind, bits: HashBits) -> u64 {
    let log = log();
    let budget = map.bytes_for(KEYS as usize * 2, 0.9, 16);
    let config = CleanerConfig { map, dedupe_buffer_bytes: budget, ..CleanerConfig::default() };
    let built = map.build_with_hash_bits(budget, 0.9, bits).unwrap_or_else(|_| panic!("{map}"));
    let mut c = Cleaner::with_map(built, config, Arc::new(ManualClock::new(0)));
    let stats = c.clean(&log, PassOptions::default()).expect("pass");
    assert!(!stats.map_full, "{map}: every key fits");
    log.snapshot().reader(0).count() as u64
}

#[test]
fn a_forced_collision_loses_a_key_in_the_fingerprint_maps_and_never_in_fullkey() {
    // 10 bits: 2000 keys in 1024 classes, so about 1100 of them share a class with an earlier key.
    for map in [MapKind::Skimpy, MapKind::Compact] {
        let left = survivors(map, HashBits(10));
        assert!(left < u64::from(KEYS) * 2 / 3 && left > 700, "{map}: {left} of {KEYS} keys left");
        // At most one survivor per class of colliding keys.
        assert!(left <= 1024, "{map}: {left}");
    }
    assert_eq!(survivors(MapKind::FullKey, HashBits(10)), u64::from(KEYS), "fullkey is exact");
}

#[test]
fn with_every_hash_bit_no_map_loses_a_key() {
    for map in MapKind::ALL {
        assert_eq!(survivors(map, HashBits::ALL), u64::from(KEYS), "{map}");
    }
}
