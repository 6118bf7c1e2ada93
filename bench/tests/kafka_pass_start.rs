//! A pass whose first dirty offset lies inside a segment (as after a pass whose map filled), with an aborted
//! transaction of the same producer earlier in that segment, cleaned by Kafka 4.4's own cleaner and by ours
//! from the same checkpoint: the files must be Kafka's, byte for byte.
//!
//! Kafka's `buildOffsetMap` collects every aborted transaction of the segment holding the first dirty offset
//! (`collectAbortedTransactions` searches its `.txnindex` from the log start, not from that offset) and reads
//! from the offset index's entry below it, so an aborted transaction whose marker lies before that entry is
//! opened by the first batch read and never closed until the producer's next ABORT marker: the producer's
//! committed batches up to there are not mapped, and the older records of their keys stay.
//!
//! Ignored: ours maps them (a known divergence, docs/kafka.md "Several passes"). The rule was built (commit
//! edbd586, this test green with every map) and reverted: alone it made several-pass results further from
//! Kafka's, because the `.txnindex` a pass starts from is not Kafka's until ours also rewrites the segment
//! holding a pass's end offset as Kafka does past that offset. Run it with `-- --ignored` when both are.

use std::sync::Arc;

use bench::vs_kafka::{Settings, copy, kafka_configs, partition_dir, segment_files};
use cleaner::{Cleaner, CleanerConfig, ManualClock, MapKind, PassOptions};
use log_core::SegmentStore;
use storage_mem::MemStore;

const NOW: i64 = 1_800_000_000_000;
const SEGMENT: u64 = 4 << 20;
/// Inside the first segment (about 27,000 offsets), past the first aborted transaction's marker (15,350)
/// by more than an index interval, before the next ABORT marker (30,400, in the second segment).
const CHECKPOINT: u64 = 20_000;

#[test]
#[ignore = "a known divergence from Kafka's cleaner: docs/kafka.md, \"Several passes\""]
fn a_pass_from_inside_a_segment_maps_what_kafkas_cleaner_maps_byte_for_byte() {
    let Some(kafka) = kafka_interop::Kafka::get() else { return };
    let keys = bench::Keys::new(6_000, 16, 1);
    let generated: Arc<dyn SegmentStore> = Arc::new(MemStore::new());
    bench::kafka::write_transactional_partition(&*generated, &keys, 60_000, SEGMENT, 1).expect("write");
    let root = tempfile::tempdir().expect("tempdir");
    let source = partition_dir(&root.path().join("source"), "pass-start");
    let files = storage_file::FileStore::open(&source).expect("open");
    bench::kafka::copy_store(&*generated, &files).expect("copy");
    drop(files);
    let name = source.file_name().expect("name").to_owned();
    let kafka_side = root.path().join("kafka").join(&name);
    copy(&source, &kafka_side).expect("copy");
    let settings =
        Settings { buffer_bytes: 16 << 20, segment_bytes: SEGMENT, load_factor: 0.9, now_ms: NOW, threads: 1 };

    let out = kafka
        .offline_clean(
            &kafka_side,
            NOW,
            settings.buffer_bytes,
            &kafka_configs(SEGMENT),
            &["--checkpoint", &CHECKPOINT.to_string()],
        )
        .expect("Kafka's cleaner");
    assert_eq!(out["passes"].as_array().map(Vec::len), Some(1), "{out}");

    let kafka_files = segment_files(&kafka_side).expect("kafka's");
    for map in MapKind::WITH_EXTERNAL {
        let ours_side = root.path().join(map.name()).join(&name);
        copy(&source, &ours_side).expect("copy");
        let store = Arc::new(storage_file::FileStore::open(&ours_side).expect("open"));
        let log = bench::kafka::open(store, SEGMENT).expect("open");
        log.set_cleaner_checkpoint(CHECKPOINT);
        let config = CleanerConfig {
            map,
            dedupe_buffer_bytes: settings.buffer_bytes as usize,
            load_factor: settings.load_factor,
            ..CleanerConfig::default()
        };
        let mut cleaner = Cleaner::new(config, Arc::new(ManualClock::new(NOW))).expect("cleaner");
        let stats = cleaner.clean(&log, PassOptions::default()).expect("pass");
        assert_eq!(stats.first_dirty_offset, CHECKPOINT);
        drop(log);
        let ours = segment_files(&ours_side).expect("ours");
        let difference = bench::vs_kafka::first_difference(&kafka_files, &ours);
        assert!(difference.is_empty(), "{map}: ours differs from Kafka's cleaner: {difference}");
    }
}
