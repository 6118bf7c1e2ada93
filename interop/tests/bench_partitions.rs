//! The broker writes the benchmark partitions asked for: a compacted topic a codec, the changelog and
//! `__consumer_offsets`, each with its records, several segments each, and the cache gives the same ones again.

use kafka_interop::Kafka;
use kafka_interop::bench_partitions::{Spec, get};

#[test]
fn the_broker_writes_every_benchmark_partition_with_its_records() {
    let Some(kafka) = Kafka::get() else { return };
    // The report's quick matrix's size (its cache is this test's).
    let spec = Spec { records: 30_000, keys: 3_000, segment_bytes: 240_000 };
    let written = get(kafka, &spec).expect("partitions");
    let names: Vec<&str> = written.partitions.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "bench-none-0",
            "bench-lz4-0",
            "bench-gzip-0",
            "bench-snappy-0",
            "bench-zstd-0",
            "bench-txn-0",
            "__consumer_offsets-0"
        ]
    );
    for p in &written.partitions {
        assert!(p.keys >= spec.keys / 10, "{}: {} keys", p.name, p.keys);
        match p.shape.as_str() {
            // Every record sent is in the log.
            "plain" => assert_eq!(p.end_offset, spec.records, "{}", p.name),
            // And a marker a transaction (500 records each).
            "transactions" => assert_eq!(p.end_offset, spec.records + spec.records / 500, "{}", p.name),
            // 20 offsets a commit, and the first commit's.
            _ => assert!(p.end_offset > spec.records / 20 * 20, "{}: {}", p.name, p.end_offset),
        }
    }
    // Even compressed, 30k records of about 130 bytes (1,500 offset commits of 20) fill several 240 KB segments
    // (below Kafka's 1 MiB minimum `segment.bytes`: `internal.segment.bytes`), so that a pass has closed segments
    // to clean.
    for p in &written.partitions {
        let segments = std::fs::read_dir(&p.dir).expect("list").flatten();
        let logs = segments.filter(|e| e.file_name().to_string_lossy().ends_with(".log")).count();
        assert!(logs >= 3, "{}: {logs} segments", p.name);
    }
    let again = get(kafka, &spec).expect("cached");
    assert_eq!(again.produced_ms, written.produced_ms, "the cached partitions");
}
