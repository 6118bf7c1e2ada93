//! The floors write what a pass keeps: each floor's output, read back by the project's own reader, holds the
//! same records (offsets, keys, values) as the log a real pass leaves, for a native log and for Kafka
//! partitions of each kind of batch the report writes (uncompressed, and lz4 with and without recompression).

use std::sync::Arc;

use bench::bare::{Out, Recompress, kafka_floor, kafka_keys_floor, kafka_keys_walk, native_floor};
use cleaner::{Cleaner, CleanerConfig, ManualClock, MapKind, PassOptions};
use log_core::kafka::Compression;
use log_core::workload::Workload;
use log_core::{CheckpointFile, Log, LogConfig, SegmentStore};

/// A record's offset, key and value.
type Record = (u64, Option<Vec<u8>>, Option<Vec<u8>>);

/// Offsets, keys and values of every record of `log`.
fn records(log: &Log) -> Vec<Record> {
    log.snapshot()
        .reader(0)
        .map(|r| {
            let r = r.expect("a record");
            (r.offset, r.key.map(|k| k.to_vec()), r.value.map(|v| v.to_vec()))
        })
        .collect()
}

fn clean_until_clean(log: &Log, map: MapKind) {
    let config = CleanerConfig { map, dedupe_buffer_bytes: 64 << 20, ..CleanerConfig::default() };
    let mut cleaner = Cleaner::new(config, Arc::new(ManualClock::new(1_800_000_000_000))).expect("cleaner");
    cleaner.clean_until_clean(log, PassOptions::default(), |_| Ok(())).expect("passes");
}

#[test]
fn the_native_floor_writes_the_records_a_pass_keeps_with_their_index() {
    let segment_bytes = 64 << 10;
    let store: Arc<dyn SegmentStore> = Arc::new(storage_mem::MemStore::new());
    let log =
        Log::open(Arc::clone(&store), log_core::OpenOptions::new(LogConfig { segment_bytes, ..LogConfig::default() }))
            .expect("open");
    let workload = Workload { records: 20_000, keys: 2_000, value_bytes: 50, tombstone_fraction: 0.0, seed: 3 };
    workload.append_to(&log, 1_000, |_| {}).expect("append");
    log.roll().expect("roll");
    let out = tempfile::tempdir().expect("tempdir");
    let floor = native_floor(&log, 2_000, Out::Dir(out.path()), segment_bytes, 4096);
    assert_eq!(floor.kept, 2_000, "a record a key");
    assert!(floor.files > 1, "a file a group");
    clean_until_clean(&log, MapKind::Compact);
    let written = Log::open(
        Arc::new(storage_file::FileStore::open(out.path()).expect("store")),
        log_core::OpenOptions::new(LogConfig { segment_bytes, ..LogConfig::default() }).read_only(true),
    )
    .expect("the floor's output opens as a native log");
    assert_eq!(records(&written), records(&log));
    let index = std::fs::read_dir(out.path())
        .expect("list")
        .filter(|e| e.as_ref().is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".lcindex")))
        .count();
    assert_eq!(index as u64, floor.files, "an index beside every file");
}

#[test]
fn the_kafka_floors_write_the_records_a_pass_keeps() {
    let segment_bytes = 256 << 10;
    let keys = bench::Keys::new(3_000, 16, 5);
    for (codec, recompress) in
        [(Compression::None, Recompress::No), (Compression::Lz4, Recompress::No), (Compression::Lz4, Recompress::Yes)]
    {
        let store: Arc<dyn SegmentStore> = Arc::new(storage_mem::MemStore::new());
        bench::kafka::write_partition(&*store, &keys, 30_000, u64::MAX, codec, segment_bytes, 5).expect("write");
        let log = bench::kafka::open(Arc::clone(&store), segment_bytes).expect("open");
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("floor-0");
        let floor = kafka_floor(&log, 3_000, Out::Dir(&out), segment_bytes, 4096, recompress);
        assert!(floor.kept > 2_500 && floor.kept <= 3_000, "{codec:?}: about a record a key, {}", floor.kept);
        for suffix in [".index", ".timeindex"] {
            assert!(
                std::fs::read_dir(&out)
                    .expect("list")
                    .flatten()
                    .any(|e| e.file_name().to_string_lossy().ends_with(suffix)),
                "{suffix} written"
            );
        }
        let (compacted, _) = bench::kafka::compact_until_clean(
            Arc::clone(&store),
            MapKind::Compact,
            64 << 20,
            0.9,
            segment_bytes,
            1_800_000_000_000,
        )
        .expect("compact");
        let written = Log::open(
            Arc::new(storage_file::FileStore::open(&out).expect("store")),
            log_core::OpenOptions::kafka(LogConfig { segment_bytes, ..LogConfig::default() }, CheckpointFile::Memory)
                .read_only(true),
        )
        .expect("the floor's output opens as a Kafka partition");
        assert_eq!(records(&written), records(&compacted), "{codec:?} {recompress:?}");
        let sizes: u64 = std::fs::read_dir(&out)
            .expect("list")
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
            .map(|e| e.metadata().expect("metadata").len())
            .sum();
        assert_eq!(sizes, floor.bytes_written);
    }
}

#[test]
fn the_keys_floor_hashes_every_keyed_record_and_no_marker() {
    let segment_bytes = 256 << 10;
    let keys = bench::Keys::new(3_000, 16, 5);
    for codec in [Compression::None, Compression::Lz4] {
        let store: Arc<dyn SegmentStore> = Arc::new(storage_mem::MemStore::new());
        bench::kafka::write_partition(&*store, &keys, 30_000, u64::MAX, codec, segment_bytes, 5).expect("write");
        let log = bench::kafka::open(Arc::clone(&store), segment_bytes).expect("open");
        let keyed = records(&log).iter().filter(|(_, k, _)| k.is_some()).count() as u64;
        assert!(keyed >= 30_000, "{codec:?}: {keyed}");
        assert_eq!(kafka_keys_floor(&log).expect("walk").1, keyed, "{codec:?}");
        let snap = log.snapshot();
        let bytes: Vec<&[u8]> = snap.closed().iter().map(|s| s.bytes().expect("in memory")).collect();
        assert_eq!(kafka_keys_walk(&bytes).expect("walk").1, keyed, "{codec:?}: the walk over the segments' bytes");
    }
    // Markers (control batches) have keys of their own, which no pass 1 hashes as a record's.
    let store: Arc<dyn SegmentStore> = Arc::new(storage_mem::MemStore::new());
    let written = bench::kafka::write_transactional_partition(&*store, &keys, 30_000, segment_bytes, 5).expect("write");
    let log = bench::kafka::open(Arc::clone(&store), segment_bytes).expect("open");
    assert_eq!(written.records, 30_000 + 100, "30,000 records of data in transactions of 300, and a marker each");
    assert_eq!(kafka_keys_floor(&log).expect("walk").1, 30_000);
}

#[test]
fn the_keys_walk_names_bytes_it_cannot_parse_and_never_panics() {
    let segment_bytes = 256 << 10;
    let keys = bench::Keys::new(300, 16, 5);
    let store: Arc<dyn SegmentStore> = Arc::new(storage_mem::MemStore::new());
    bench::kafka::write_partition(&*store, &keys, 2_000, u64::MAX, Compression::None, segment_bytes, 5).expect("write");
    let log = bench::kafka::open(Arc::clone(&store), segment_bytes).expect("open");
    let snap = log.snapshot();
    let whole = snap.closed()[0].bytes().expect("in memory").to_vec();
    // Cut anywhere, zeroed from anywhere, or one byte changed anywhere in the first batch: an error or a
    // count, never a panic.
    for at in (0..whole.len()).step_by(97) {
        let _ = kafka_keys_walk(&[&whole[..at]]);
        let mut zeroed = whole.clone();
        zeroed[at..].fill(0);
        let _ = kafka_keys_walk(&[&zeroed]);
    }
    for at in 0..whole.len().min(4_000) {
        for v in [0u8, 0x7f, 0x80, 0xff] {
            let mut changed = whole.clone();
            changed[at] = v;
            let _ = kafka_keys_walk(&[&changed]);
        }
    }
    let cut = kafka_keys_walk(&[&whole[..whole.len() - 1]]).expect_err("a batch cut short");
    assert!(cut.contains("segment 0") && cut.contains("cut short"), "{cut}");
    let mut other_magic = whole.clone();
    other_magic[16] = 1;
    let magic = kafka_keys_walk(&[&other_magic]).expect_err("magic 1");
    assert!(magic.contains("position 0") && magic.contains("magic 2"), "{magic}");
}

#[test]
#[expect(clippy::big_endian_bytes, reason = "Kafka's batches are big-endian")]
fn the_keys_walk_refuses_a_batch_that_inflates_past_the_readers_bound() {
    // One zstd batch whose records inflate past `MAX_DECOMPRESSED_BYTES`: an error naming the codec, not an
    // allocation the size the batch asks for.
    let inflated = vec![0u8; log_core::kafka::MAX_DECOMPRESSED_BYTES + (1 << 20)];
    let mut batch = vec![0u8; 61];
    log_core::kafka::compression::compress(Compression::Zstd, &inflated, &mut batch);
    let length = i32::try_from(batch.len() - 12).expect("a small batch");
    batch[8..12].copy_from_slice(&length.to_be_bytes());
    batch[16] = 2; // magic
    batch[22] = Compression::Zstd.bits();
    batch[57..61].copy_from_slice(&1i32.to_be_bytes());
    let refused = kafka_keys_walk(&[&batch]).expect_err("too large");
    assert!(refused.contains("Zstd"), "{refused}");
}
