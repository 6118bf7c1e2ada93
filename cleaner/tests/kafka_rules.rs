//! Kafka's batch rules, one test each, on partitions built batch by batch: a producer's last batch stays,
//! emptied, when a pass drops its every record (its producer id, epoch and sequence are the producer's state);
//! any other emptied batch goes.

use std::sync::Arc;

use cleaner::{Cleaner, CleanerConfig, ManualClock, MapKind, PassOptions};
use log_core::kafka::files::{SegmentFile, Stage, name};
use log_core::kafka::{Compression, RecordToWrite, new_header, write_batch};
use log_core::{CheckpointFile, Log, LogConfig, SegmentStore};
use storage_mem::MemStore;

/// One batch: its base offset, producer (id, epoch, base sequence) if any, and its records' keys.
struct Spec {
    base: i64,
    producer: Option<(i64, i16, i32)>,
    keys: &'static [&'static str],
}

/// Writes `closed` as one closed segment and an empty active segment after it.
fn partition(closed: &[Spec]) -> Arc<dyn SegmentStore> {
    let store: Arc<dyn SegmentStore> = Arc::new(MemStore::new());
    let file = store.create(&name(0, SegmentFile::Log, Stage::Live)).expect("create");
    let mut next = 0;
    for b in closed {
        let values: Vec<String> = (0..b.keys.len()).map(|i| format!("v{}", b.base + i as i64)).collect();
        let records: Vec<RecordToWrite<'_>> = b
            .keys
            .iter()
            .enumerate()
            .map(|(i, k)| RecordToWrite {
                offset: b.base + i as i64,
                timestamp: 1_000 + b.base + i as i64,
                key: Some(k.as_bytes()),
                value: Some(values[i].as_bytes()),
                header_count: 0,
                header_bytes: &[],
            })
            .collect();
        let mut h = new_header(b.base, b.keys.len() as i32 - 1);
        if let Some((id, epoch, seq)) = b.producer {
            (h.producer_id, h.producer_epoch, h.base_sequence) = (id, epoch, seq);
        }
        let mut bytes = Vec::new();
        write_batch(&h, Compression::None, None, &records, &mut bytes, &mut Vec::new()).expect("batch");
        file.append(&bytes).expect("append");
        next = b.base + b.keys.len() as i64;
    }
    file.sync().expect("sync");
    file.seal().expect("seal");
    store.create(&name(next as u64, SegmentFile::Log, Stage::Live)).expect("active");
    store
}

/// `(base offset, last offset, records, producer id)` of every batch after one full pass.
fn after_a_pass(store: Arc<dyn SegmentStore>) -> Vec<(i64, i64, i32, i64)> {
    let log = Log::open_kafka(store, LogConfig::default(), CheckpointFile::Memory).expect("open");
    let config = CleanerConfig { map: MapKind::FullKey, dedupe_buffer_bytes: 1 << 20, ..CleanerConfig::default() };
    let mut cleaner = Cleaner::new(config, Arc::new(ManualClock::new(5_000))).expect("cleaner");
    cleaner.clean(&log, PassOptions::default()).expect("pass");
    let mut out = Vec::new();
    for s in log.snapshot().closed() {
        s.for_each_batch(|p| {
            let h = p.batch.kafka_header().expect("kafka");
            out.push((h.base_offset, h.last_offset(), h.records_count, h.producer_id));
            Ok(())
        })
        .expect("batches");
    }
    out
}

#[test]
fn a_producers_emptied_last_batch_stays_and_its_other_emptied_batches_go() {
    let store = partition(&[
        // Producer 7's only batch: its record is superseded below.
        Spec { base: 0, producer: Some((7, 1, 0)), keys: &["x"] },
        // Producer 8: two batches, both emptied; only the second is its last.
        Spec { base: 1, producer: Some((8, 2, 0)), keys: &["y"] },
        Spec { base: 2, producer: Some((8, 2, 1)), keys: &["z"] },
        // A plain batch, emptied too: it goes.
        Spec { base: 3, producer: None, keys: &["w"] },
        Spec { base: 4, producer: None, keys: &["x", "y", "z", "w"] },
    ]);
    assert_eq!(
        after_a_pass(store),
        vec![(0, 0, 0, 7), (2, 2, 0, 8), (4, 7, 4, -1)],
        "producer 7's and 8's last batches stay, empty, with their offsets; the rest of the emptied batches go"
    );
}

#[test]
fn a_producers_last_batch_later_in_the_log_lets_its_earlier_emptied_batch_go() {
    let store = partition(&[
        Spec { base: 0, producer: Some((7, 1, 0)), keys: &["x"] },
        Spec { base: 1, producer: None, keys: &["x"] },
        // Producer 7 wrote again: this is its last batch, and it keeps its record.
        Spec { base: 2, producer: Some((7, 1, 1)), keys: &["q"] },
    ]);
    assert_eq!(after_a_pass(store), vec![(1, 1, 1, -1), (2, 2, 1, 7)]);
}
