//! Readers iterating the log while passes swap segments see the old segments or the new ones, never a mix:
//! every full read shows the same latest value for every key, offsets strictly increasing.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cleaner::{Cleaner, CleanerConfig, MapKind, PassOptions, SystemClock};
use log_core::{Log, LogConfig, Record};

fn view(records: &[Record]) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut v = BTreeMap::new();
    for r in records {
        match &r.value {
            Some(val) => v.insert(r.key.clone().expect("keyed"), val.clone()),
            None => v.remove(r.key.as_deref().expect("keyed")),
        };
    }
    v
}

#[test]
fn readers_during_passes_see_old_or_new_never_a_mix() {
    let log = Arc::new(
        Log::open(
            Arc::new(storage_mem::MemStore::new()),
            log_core::OpenOptions::new(LogConfig { segment_bytes: 2048, ..LogConfig::default() }),
        )
        .expect("open"),
    );
    for i in 0..3000u32 {
        let key = format!("k{}", i % 97);
        if i % 11 == 0 {
            log.delete(key.as_bytes()).expect("del");
        } else {
            log.put(key.as_bytes(), format!("v{i}").as_bytes()).expect("put");
        }
    }
    log.roll().expect("roll");
    let expected = view(&log.snapshot().reader(0).collect::<Result<Vec<_>, _>>().expect("read"));
    let before = log.snapshot();
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (log, done, expected) = (Arc::clone(&log), Arc::clone(&done), expected.clone());
        std::thread::spawn(move || {
            let mut reads = 0;
            while !done.load(Ordering::Acquire) || reads == 0 {
                let records: Vec<Record> = log.snapshot().reader(0).collect::<Result<_, _>>().expect("read");
                assert!(records.windows(2).all(|w| w[0].offset < w[1].offset), "offsets out of order");
                assert_eq!(view(&records), expected, "a reader saw a half-cleaned log");
                reads += 1;
            }
            reads
        })
    };
    // Small buffers: many partial passes, each swapping segments.
    let config = CleanerConfig { map: MapKind::Compact, dedupe_buffer_bytes: 12 * 90, ..CleanerConfig::default() };
    let mut cleaner = Cleaner::new(config, Arc::new(SystemClock)).expect("map");
    let mut passes = 0;
    while cleaner.clean(&log, PassOptions::default()).expect("pass").map_full {
        passes += 1;
    }
    done.store(true, Ordering::Release);
    let reads = reader.join().expect("reader thread");
    assert!(passes > 3 && reads > 0);
    // A snapshot taken before the passes still reads the old, uncleaned records in full.
    assert_eq!(before.reader(0).count(), 3000);
    // After the last pass one record per key is left: its latest value or its tombstone.
    assert_eq!(log.snapshot().reader(0).count(), 97);
}
