//! Kafka record batches on arbitrary bytes: parsing, decompression (every codec) and record decoding never
//! panic and stay within the decompression bound; what decodes re-encodes (under the same header and codec)
//! to a batch that decodes to the same records. When the first byte is odd the CRC-32C is written in, so that
//! the fuzzer gets past it to the codecs and the records.
#![no_main]
#![expect(clippy::big_endian_bytes, reason = "Kafka's format is big-endian")]

use libfuzzer_sys::fuzz_target;
use log_core::kafka::{Batch, MAX_DECOMPRESSED_BYTES, RecordToWrite, write_batch};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let mut bytes = rest.to_vec();
    if mode & 1 == 1 && bytes.len() >= 61 {
        let end = (i32::from_be_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]).max(0) as usize)
            .saturating_add(12)
            .min(bytes.len());
        if end > 21 {
            let crc = crc32c::crc32c(&bytes[21..end]);
            bytes[17..21].copy_from_slice(&crc.to_be_bytes());
        }
    }
    let Ok(batch) = Batch::parse(&bytes) else { return };
    let mut scratch = Vec::new();
    let Ok(records) = batch.records(&mut scratch) else { return };
    let mut read = Vec::new();
    for r in records {
        let Ok(r) = r else { return };
        let _ = r.headers().count();
        read.push(r);
    }
    let decoded: usize = read.iter().map(|r| r.body.len()).sum();
    assert!(decoded <= MAX_DECOMPRESSED_BYTES);
    let writes: Vec<RecordToWrite<'_>> = read.iter().map(RecordToWrite::from).collect();
    let codec = batch.header.compression().expect("parse checked the codec");
    let mut out = Vec::new();
    if write_batch(&batch.header, codec, batch.header.delete_horizon(), &writes, &mut out, &mut Vec::new()).is_err() {
        return;
    }
    let again = Batch::parse(&out).expect("a written batch parses");
    let mut scratch2 = Vec::new();
    let reread: Vec<_> = again.records(&mut scratch2).expect("records").map(|r| r.expect("record")).collect();
    assert_eq!(reread.len(), read.len());
    for (a, b) in read.iter().zip(&reread) {
        assert_eq!((a.offset, a.key, a.value, a.header_bytes), (b.offset, b.key, b.value, b.header_bytes));
        if !batch.header.is_log_append_time() {
            assert_eq!(a.timestamp, b.timestamp);
        }
    }
});
