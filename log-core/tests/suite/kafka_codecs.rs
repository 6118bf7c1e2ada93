//! The codecs write what Kafka 4.4's Java code writes: batches a real 4.4 broker stored (written by the Java
//! producer, which compresses as the broker's cleaner does: each codec's default level through zstd-jni,
//! lz4-java and the JDK's zlib) are decompressed and compressed again, and must come out byte for byte as
//! stored. An upgrade of a codec library that changes its output fails here. Snappy is the exception
//! (snappy-java's C++ snappy 1.1.10 and `snap` pick other matches in some blocks): its records must come back.
//!
//! The batches (`tests/data/kafka-4.4/*.batches`, three a codec, small to large) were taken from the
//! fixture node of `cli/tests/suite/real_kafka.rs`.
#![expect(clippy::big_endian_bytes, reason = "Kafka's format is big-endian")]

use log_core::kafka::compression::{compress, decompress};
use log_core::kafka::{Batch, Compression, HEADER_BYTES};

/// The batches of `name`'s file, whole.
fn batches(name: &str) -> Vec<Vec<u8>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kafka-4.4").join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut all = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let len = i32::from_be_bytes(bytes[at + 8..at + 12].try_into().expect("4 bytes"));
        let end = at + 12 + usize::try_from(len).expect("a length");
        all.push(bytes[at..end].to_vec());
        at = end;
    }
    all
}

#[test]
fn gzip_lz4_and_zstd_batches_compress_as_kafka_compressed_them() {
    for (file, codec) in
        [("gzip.batches", Compression::Gzip), ("lz4.batches", Compression::Lz4), ("zstd.batches", Compression::Zstd)]
    {
        let all = batches(file);
        assert_eq!(all.len(), 3, "{file}");
        for (i, bytes) in all.iter().enumerate() {
            let batch = Batch::parse(bytes).expect("a batch Kafka wrote");
            assert_eq!(batch.header.compression(), Some(codec), "{file} #{i}");
            let stored = &bytes[HEADER_BYTES..];
            let mut raw = Vec::new();
            decompress(codec, stored, 1 << 26, &mut raw).expect("decompresses");
            let mut again = Vec::new();
            compress(codec, &raw, &mut again);
            assert!(
                again == stored,
                "{file} #{i}: {} bytes compressed to {} against Kafka's {}",
                raw.len(),
                again.len(),
                stored.len()
            );
        }
    }
}

#[test]
fn snappy_batches_come_back_with_their_records() {
    for (i, bytes) in batches("snappy.batches").iter().enumerate() {
        let stored = &bytes[HEADER_BYTES..];
        let mut raw = Vec::new();
        decompress(Compression::Snappy, stored, 1 << 26, &mut raw).expect("decompresses");
        let mut again = Vec::new();
        compress(Compression::Snappy, &raw, &mut again);
        // The xerial framing is Kafka's: magic, versions, 32 KiB chunks.
        assert_eq!(again[..16], stored[..16], "#{i}");
        let mut back = Vec::new();
        decompress(Compression::Snappy, &again, 1 << 26, &mut back).expect("ours decompresses");
        assert_eq!(back, raw, "#{i}");
    }
}
