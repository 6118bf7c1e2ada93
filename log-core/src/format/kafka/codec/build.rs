//! Writing a magic 2 record batch: the records a cleaner keeps, re-encoded (and re-compressed with the
//! batch's codec) under the original batch's header, as Kafka's `MemoryRecords.filterTo` does: the base
//! offset, producer id and epoch, base sequence, leader epoch and last offset delta are the original's (so a
//! batch still ends where it ended, and offsets keep their gaps); the base timestamp is the first record's, or
//! the delete horizon when one is set (KIP-534); the max timestamp is recomputed.

use super::batch::{BatchHeader, HEADER_BYTES, KafkaRecord, LOG_OVERHEAD};
use super::compression::{self, Compression};
use super::varint::{varint_len, varlong_len, write_varint, write_varlong};

/// A record to write: the parts of a [`KafkaRecord`] that survive re-encoding.
#[derive(Debug, Clone, Copy)]
pub struct RecordToWrite<'a> {
    /// Its offset (at or after the batch's base offset).
    pub offset: i64,
    /// Its timestamp.
    pub timestamp: i64,
    /// Its key.
    pub key: Option<&'a [u8]>,
    /// Its value (`None`: a tombstone).
    pub value: Option<&'a [u8]>,
    /// Its header count and encoded headers, copied as they are.
    pub header_count: usize,
    /// The encoded headers.
    pub header_bytes: &'a [u8],
}

impl<'a> From<&KafkaRecord<'a>> for RecordToWrite<'a> {
    fn from(r: &KafkaRecord<'a>) -> Self {
        RecordToWrite {
            offset: r.offset,
            timestamp: r.timestamp,
            key: r.key,
            value: r.value,
            header_count: r.header_count,
            header_bytes: r.header_bytes,
        }
    }
}

/// Why a batch could not be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// A record's offset is outside what the batch's base offset and an i32 delta can express.
    #[error("offset {offset} does not fit in a batch based at {base}")]
    OffsetOutOfRange {
        /// The record's offset.
        offset: i64,
        /// The batch's base offset.
        base: i64,
    },
    /// The batch would pass 2 GiB.
    #[error("the batch would be {bytes} bytes, more than a batch length can say")]
    TooLarge {
        /// Its size.
        bytes: usize,
    },
}

/// Bytes [`push_bytes`] appends for `b`.
fn bytes_len(b: Option<&[u8]>) -> usize {
    b.map_or(1, |b| varint_len(b.len() as i32) + b.len())
}

fn push_bytes(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => write_varint(out, -1),
        Some(b) => {
            write_varint(out, b.len() as i32);
            out.extend_from_slice(b);
        }
    }
}

/// Appends to `out` a batch under `template`'s header holding `records`, compressed with `codec`, with the
/// delete horizon `delete_horizon` when given. With a codec, `scratch` holds the uncompressed records; without
/// one, they are encoded straight into `out` and `scratch` is only cleared.
///
/// # Errors
/// [`BuildError`] for an offset the batch cannot express or a batch past 2 GiB.
pub fn write_batch(
    template: &BatchHeader,
    codec: Compression,
    delete_horizon: Option<i64>,
    records: &[RecordToWrite<'_>],
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) -> Result<(), BuildError> {
    write_batch_from(template, codec, delete_horizon, records.iter().copied(), out, scratch)
}

/// Kafka's `RecordBatch.NO_TIMESTAMP`: an emptied batch's first timestamp.
const NO_TIMESTAMP: i64 = -1;

/// As [`write_batch`], the records coming from an iterator that is walked twice (for the batch's timestamps,
/// then to encode them), so that a batch is rewritten from the records it keeps without collecting them: memory
/// is the output and, with a codec, the encoded records (`scratch`), whatever the number of records.
///
/// # Errors
/// As [`write_batch`].
pub fn write_batch_from<'r, I>(
    template: &BatchHeader,
    codec: Compression,
    delete_horizon: Option<i64>,
    records: I,
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) -> Result<(), BuildError>
where
    I: Iterator<Item = RecordToWrite<'r>> + Clone,
{
    let first = records.clone().next();
    // An emptied batch is written as Kafka writes one (`DefaultRecordBatch.writeEmptyHeader`): a bare header,
    // no records section, no codec, no delete horizon, and no first timestamp (-1) beside the max timestamp.
    let delete_horizon = delete_horizon.filter(|_| first.is_some());
    let base_timestamp = match first {
        Some(r) => delete_horizon.unwrap_or(r.timestamp),
        None => NO_TIMESTAMP,
    };
    let max_timestamp = if template.is_log_append_time() {
        template.max_timestamp
    } else {
        records.clone().map(|r| r.timestamp).max().unwrap_or(template.max_timestamp)
    };
    let codec = if first.is_none() { Compression::None } else { codec };
    let start = out.len();
    out.resize(start + HEADER_BYTES, 0);
    // Uncompressed records are encoded in place after the header; compressed ones into `scratch` first. On an
    // error, `out` is as it was.
    let plain = codec == Compression::None;
    scratch.clear();
    let encoded =
        encode_records(template.base_offset, base_timestamp, records, if plain { &mut *out } else { &mut *scratch });
    let count = match encoded {
        Ok(count) => count,
        Err(e) => {
            out.truncate(start);
            return Err(e);
        }
    };
    if !plain {
        compression::compress(codec, scratch, out);
    }
    let size = out.len() - start;
    let (Ok(batch_length), Ok(count)) = (i32::try_from(size - LOG_OVERHEAD), i32::try_from(count)) else {
        out.truncate(start);
        return Err(BuildError::TooLarge { bytes: size });
    };
    let h = &mut out[start..start + HEADER_BYTES];
    h[0..8].copy_from_slice(&template.base_offset.to_be_bytes());
    h[8..12].copy_from_slice(&batch_length.to_be_bytes());
    h[12..16].copy_from_slice(&template.partition_leader_epoch.to_be_bytes());
    h[16] = 2;
    h[21..23].copy_from_slice(&template.attributes_with(codec, delete_horizon.is_some()).to_be_bytes());
    h[23..27].copy_from_slice(&template.last_offset_delta.to_be_bytes());
    h[27..35].copy_from_slice(&base_timestamp.to_be_bytes());
    h[35..43].copy_from_slice(&max_timestamp.to_be_bytes());
    h[43..51].copy_from_slice(&template.producer_id.to_be_bytes());
    h[51..53].copy_from_slice(&template.producer_epoch.to_be_bytes());
    h[53..57].copy_from_slice(&template.base_sequence.to_be_bytes());
    h[57..61].copy_from_slice(&count.to_be_bytes());
    let crc = crc32c::crc32c(&out[start + 21..]);
    out[start + 17..start + 21].copy_from_slice(&crc.to_be_bytes());
    Ok(())
}

/// Appends each of `records` to `dst` as a batch's record (length, attributes, timestamp and offset deltas
/// from `base_timestamp` and `base_offset`, key, value, headers), each byte written once; how many there were.
///
/// # Errors
/// [`BuildError`] for an offset the batch cannot express or a record past 2 GiB.
fn encode_records<'r>(
    base_offset: i64,
    base_timestamp: i64,
    records: impl Iterator<Item = RecordToWrite<'r>>,
    dst: &mut Vec<u8>,
) -> Result<usize, BuildError> {
    let mut count = 0usize;
    for r in records {
        count += 1;
        let delta = r
            .offset
            .checked_sub(base_offset)
            .and_then(|d| i32::try_from(d).ok())
            .filter(|&d| d >= 0)
            .ok_or(BuildError::OffsetOutOfRange { offset: r.offset, base: base_offset })?;
        let timestamp_delta = r.timestamp.wrapping_sub(base_timestamp);
        let header_count = r.header_count as i32;
        let body = 1 // record attributes, unused
            + varlong_len(timestamp_delta)
            + varint_len(delta)
            + bytes_len(r.key)
            + bytes_len(r.value)
            + varint_len(header_count)
            + r.header_bytes.len();
        let len = i32::try_from(body).map_err(|_| BuildError::TooLarge { bytes: body })?;
        dst.reserve(varint_len(len) + body);
        let at = dst.len();
        write_varint(dst, len);
        dst.push(0);
        write_varlong(dst, timestamp_delta);
        write_varint(dst, delta);
        push_bytes(dst, r.key);
        push_bytes(dst, r.value);
        write_varint(dst, header_count);
        dst.extend_from_slice(r.header_bytes);
        debug_assert_eq!(dst.len() - at, varint_len(len) + body, "a record's length as encoded");
    }
    Ok(count)
}

/// A header for a new batch (for test data and synthetic partitions): no producer, CreateTime, leader epoch 0.
pub fn new_header(base_offset: i64, last_offset_delta: i32) -> BatchHeader {
    BatchHeader {
        base_offset,
        batch_length: 0,
        partition_leader_epoch: 0,
        magic: 2,
        crc: 0,
        attributes: 0,
        last_offset_delta,
        base_timestamp: 0,
        max_timestamp: 0,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        records_count: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::super::batch::Batch;
    use super::*;

    #[test]
    fn written_batches_read_back_with_every_codec() {
        let values: Vec<Vec<u8>> = (0..50).map(|i| format!("value-{i}").repeat(i % 7 + 1).into_bytes()).collect();
        let keys: Vec<Vec<u8>> = (0..50).map(|i| format!("key-{}", i % 9).into_bytes()).collect();
        let mut headers = Vec::new();
        write_varint(&mut headers, 2);
        headers.extend_from_slice(b"h1");
        write_varint(&mut headers, 1);
        headers.push(b'x');
        let records: Vec<RecordToWrite<'_>> = (0..50)
            .map(|i| RecordToWrite {
                offset: 100 + i as i64 * 2,
                timestamp: 1_700_000_000_000 + i as i64,
                key: Some(&keys[i]),
                value: (i % 10 != 3).then_some(values[i].as_slice()),
                header_count: usize::from(i % 4 == 0),
                header_bytes: if i % 4 == 0 { &headers } else { &[] },
            })
            .collect();
        for codec in Compression::ALL {
            for horizon in [None, Some(1_800_000_000_000)] {
                let mut out = Vec::new();
                write_batch(&new_header(100, 120), codec, horizon, &records, &mut out, &mut Vec::new()).expect("write");
                let batch = Batch::parse(&out).expect("parse");
                assert_eq!(batch.header.compression(), Some(codec));
                assert_eq!(batch.header.last_offset(), 220, "the original last offset is kept");
                assert_eq!(batch.header.delete_horizon(), horizon);
                assert_eq!(batch.header.max_timestamp, 1_700_000_000_049);
                let mut scratch = Vec::new();
                let read: Vec<_> = batch.records(&mut scratch).expect("records").map(|r| r.expect("record")).collect();
                assert_eq!(read.len(), 50);
                for (r, w) in read.iter().zip(&records) {
                    assert_eq!((r.offset, r.timestamp, r.key, r.value), (w.offset, w.timestamp, w.key, w.value));
                    assert_eq!(r.headers().count(), w.header_count);
                }
                assert_eq!(read[0].headers().next(), Some((&b"h1"[..], Some(&b"x"[..]))));
            }
        }
    }

    #[test]
    fn a_record_the_batch_cannot_hold_leaves_the_output_as_it_was() {
        let record = |offset| RecordToWrite {
            offset,
            timestamp: 1_700_000_000_000,
            key: Some(b"k"),
            value: Some(b"v"),
            header_count: 0,
            header_bytes: &[],
        };
        // The second record lies below the batch's base offset, after the first was encoded.
        let records = [record(100), record(99)];
        for codec in Compression::ALL {
            let mut out = b"before".to_vec();
            let got = write_batch(&new_header(100, 1), codec, None, &records, &mut out, &mut Vec::new());
            assert_eq!(got, Err(BuildError::OffsetOutOfRange { offset: 99, base: 100 }), "{codec:?}");
            assert_eq!(out, b"before", "{codec:?}: nothing of the batch is left in the output");
        }
    }

    #[test]
    fn an_emptied_batch_is_the_bare_header_kafka_writes() {
        // DefaultRecordBatch.writeEmptyHeader: no first timestamp, the max timestamp kept, no delete horizon,
        // no codec, the offsets and producer fields kept.
        let mut template = new_header(500, 9);
        template.producer_id = 7;
        template.producer_epoch = 2;
        template.base_timestamp = 1_700_000_000_000;
        template.max_timestamp = 1_700_000_000_009;
        let mut out = Vec::new();
        let none: [RecordToWrite<'_>; 0] = [];
        write_batch(&template, Compression::Zstd, Some(1_800_000_000_000), &none, &mut out, &mut Vec::new())
            .expect("write");
        let batch = Batch::parse(&out).expect("parse");
        assert_eq!(out.len(), HEADER_BYTES);
        assert_eq!(batch.header.records_count, 0);
        assert_eq!(batch.header.base_timestamp, -1);
        assert_eq!(batch.header.max_timestamp, 1_700_000_000_009);
        assert_eq!(batch.header.delete_horizon(), None);
        assert_eq!(batch.header.compression(), Some(Compression::None));
        assert_eq!((batch.header.base_offset, batch.header.last_offset()), (500, 509));
        assert_eq!((batch.header.producer_id, batch.header.producer_epoch), (7, 2));
    }

    #[test]
    fn a_flipped_bit_is_a_crc_error_and_a_cut_batch_is_truncated() {
        let rec = [RecordToWrite {
            offset: 0,
            timestamp: 5,
            key: Some(b"k"),
            value: Some(b"v"),
            header_count: 0,
            header_bytes: &[],
        }];
        let mut out = Vec::new();
        write_batch(&new_header(0, 0), Compression::None, None, &rec, &mut out, &mut Vec::new()).expect("write");
        let mut bad = out.clone();
        bad[out.len() - 1] ^= 1;
        assert!(matches!(Batch::parse(&bad), Err(super::super::batch::BatchProblem::Crc { .. })));
        assert!(Batch::parse_unverified(&bad).is_ok(), "pass 1 leaves the CRC to pass 2");
        assert!(matches!(
            Batch::parse(&out[..out.len() - 1]),
            Err(super::super::batch::BatchProblem::Truncated { .. })
        ));
    }
}
