//! A pass over a large Kafka partition on the file backend holds a window of its mapped segments in memory,
//! not the partition: every walk of a mapping (the batch iterators, and the walk of every batch header that
//! derives the partition's transactions before pass 1) lets the pages behind it go. (Its own binary, so that
//! no other test's file-backed memory blurs the figure.)

use std::sync::Arc;

use cleaner::{Cleaner, CleanerConfig, MapKind, PassOptions, SystemClock};
use log_core::{CheckpointFile, Log, LogConfig};

mod memory_probe;
use memory_probe::{peak_kib_during, status_kib};

#[test]
fn a_pass_over_a_large_kafka_partition_holds_a_window_of_it() {
    use log_core::kafka::{Compression, RecordToWrite, new_header, write_batch};
    // 160 MB of 100-record batches (about 10 KB each, as a producer's default batches) in 32 MiB segments,
    // every key written twice: the transaction scan walks every batch header before pass 1.
    let dir = tempfile::tempdir().expect("tempdir");
    let value = vec![b'v'; 90];
    let (mut offset, mut segment, mut out, mut scratch) = (0i64, Vec::new(), Vec::new(), Vec::new());
    let keys: Vec<Vec<u8>> = (0..80_000u32).map(|k| format!("key-{k:08}").into_bytes()).collect();
    let flush = |segment: &mut Vec<u8>, base: i64| {
        std::fs::write(dir.path().join(format!("{base:020}.log")), &*segment).expect("write");
        segment.clear();
    };
    let mut base = 0;
    while offset < 1_600_000 {
        let records: Vec<RecordToWrite<'_>> = (0..100)
            .map(|i| RecordToWrite {
                offset: offset + i,
                timestamp: 1_000,
                key: Some(&keys[((offset + i) % 80_000) as usize]),
                value: Some(&value),
                header_count: 0,
                header_bytes: &[],
            })
            .collect();
        out.clear();
        write_batch(&new_header(offset, 99), Compression::None, None, &records, &mut out, &mut scratch).expect("batch");
        segment.extend_from_slice(&out);
        offset += 100;
        if segment.len() > 32 << 20 {
            flush(&mut segment, base);
            base = offset;
        }
    }
    flush(&mut segment, base);
    std::fs::write(dir.path().join(format!("{offset:020}.log")), b"").expect("active");
    let store = Arc::new(storage_file::FileStore::open(dir.path()).expect("store"));
    let config = CleanerConfig { map: MapKind::Compact, dedupe_buffer_bytes: 64 << 20, ..CleanerConfig::default() };
    let mut cleaner = Cleaner::new(config, Arc::new(SystemClock)).expect("cleaner");
    let before = status_kib("RssFile:");
    let ((stats, bytes), peak) = peak_kib_during("RssFile:", || {
        let log = Log::open(
            store,
            log_core::OpenOptions::kafka(
                LogConfig { segment_bytes: 32 << 20, ..LogConfig::default() },
                CheckpointFile::Memory,
            ),
        )
        .expect("open");
        let bytes: u64 = log.snapshot().closed().iter().map(|s| s.size()).sum();
        (cleaner.clean(&log, PassOptions::default()).expect("pass"), bytes)
    });
    assert!(bytes > 150 << 20 && stats.pass2.records_read >= 1_600_000, "{bytes} {stats:?}");
    let held = peak.saturating_sub(before);
    assert!(held < 48 << 10, "file-backed memory rose by {held} KiB over a {} MiB partition", bytes >> 20);
}
