//! Kafka's record batch, magic 2: the 61-byte header, its CRC-32C, and the records inside (after
//! decompression), read without copying keys or values.
//!
//! Layout (big-endian): base offset i64, batch length i32 (bytes after this field), partition leader epoch
//! i32, magic i8, CRC u32 (Castagnoli, over the attributes to the end), attributes i16, last offset delta i32,
//! base timestamp i64, max timestamp i64, producer id i64, producer epoch i16, base sequence i32, record count
//! i32, records. A record: length, attributes i8, timestamp delta (varlong), offset delta, key length + key,
//! value length + value (-1: null, a tombstone), header count, headers (name length + name, value length +
//! value); every length a zig-zag varint.

use serde::Serialize;

use super::compression::{self, Compression, DecompressError};
use super::varint::{read_bytes, read_varint, read_varlong};

/// Bytes of a batch header.
pub const HEADER_BYTES: usize = 61;
/// Bytes before the batch length field's end: a batch is `batch_length + LOG_OVERHEAD` bytes.
pub const LOG_OVERHEAD: usize = 12;
/// Where the magic byte sits, in every message format (0, 1 and 2).
pub const MAGIC_OFFSET: usize = 16;
/// Where the CRC-covered bytes start.
const CRC_START: usize = 21;
/// The fewest bytes a record can take (length, attributes, timestamp delta, offset delta, key length, value
/// length, header count: one byte each), so a record count larger than the bytes allow is refused before
/// anything is read.
pub const MIN_RECORD_BYTES: usize = 7;
/// The most bytes a batch's records may decompress to (the bound on what one hostile batch can allocate).
pub const MAX_DECOMPRESSED_BYTES: usize = 256 << 20;

const ATTR_CODEC: i16 = 0x07;
const ATTR_LOG_APPEND_TIME: i16 = 0x08;
const ATTR_TRANSACTIONAL: i16 = 0x10;
const ATTR_CONTROL: i16 = 0x20;
const ATTR_DELETE_HORIZON: i16 = 0x40;

/// What is wrong with a batch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchProblem {
    /// Fewer bytes are left than a header or the batch length needs.
    #[error("cut off: needs {needed} bytes, {available} left")]
    Truncated {
        /// Bytes needed.
        needed: u64,
        /// Bytes left.
        available: u64,
    },
    /// A magic 0 or 1 message set (Kafka before 0.11), which this tool does not read.
    #[error("a magic {magic} message set (Kafka before 0.11): only magic 2 record batches are read")]
    OldMagic {
        /// The magic byte.
        magic: i8,
    },
    /// A magic byte no Kafka writes.
    #[error("magic byte {magic} is not a Kafka message format")]
    BadMagic {
        /// The magic byte.
        magic: i8,
    },
    /// The batch length is below a header's size or negative.
    #[error("batch length {length} is impossible")]
    BadLength {
        /// The batch length field.
        length: i32,
    },
    /// The CRC-32C does not match.
    #[error("CRC-32C mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    Crc {
        /// Stored.
        stored: u32,
        /// Computed.
        computed: u32,
    },
    /// Codec bits 5–7.
    #[error("unknown codec {bits} in the attributes")]
    UnknownCodec {
        /// The bits.
        bits: u8,
    },
    /// The records could not be decompressed.
    #[error("records: {0}")]
    Decompress(#[from] DecompressError),
    /// The record count is negative or larger than the records' bytes can hold.
    #[error("record count {count} does not fit in {bytes} bytes of records")]
    BadCount {
        /// The count.
        count: i32,
        /// Bytes of records.
        bytes: usize,
    },
    /// A record is malformed.
    #[error("record {index}: {what}")]
    BadRecord {
        /// Its index in the batch.
        index: usize,
        /// What is wrong.
        what: &'static str,
    },
}

/// The header of a magic 2 record batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BatchHeader {
    /// The first offset of the batch.
    pub base_offset: i64,
    /// Bytes after the length field.
    pub batch_length: i32,
    /// The partition leader epoch.
    pub partition_leader_epoch: i32,
    /// 2.
    pub magic: i8,
    /// The stored CRC-32C.
    pub crc: u32,
    /// Codec, timestamp type, transactional, control and delete-horizon bits.
    pub attributes: i16,
    /// The last offset of the batch minus its base offset (kept by the cleaner even when the last records go).
    pub last_offset_delta: i32,
    /// The first timestamp, or the delete horizon when that bit is set; record timestamps are deltas from it.
    pub base_timestamp: i64,
    /// The largest timestamp.
    pub max_timestamp: i64,
    /// The producer id (-1: none).
    pub producer_id: i64,
    /// The producer epoch.
    pub producer_epoch: i16,
    /// The first sequence number (-1: none).
    pub base_sequence: i32,
    /// Records in the batch.
    pub records_count: i32,
}

fn be_i64(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(a)
}
fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}

impl BatchHeader {
    /// Reads the header at the start of `bytes` (which may hold more batches after it). Checks the magic and the
    /// length, not the CRC (see [`Batch::parse`]).
    ///
    /// # Errors
    /// [`BatchProblem`] naming what is wrong.
    pub fn parse(bytes: &[u8]) -> Result<BatchHeader, BatchProblem> {
        let truncated =
            |needed: usize| BatchProblem::Truncated { needed: needed as u64, available: bytes.len() as u64 };
        if bytes.len() < MAGIC_OFFSET + 1 {
            return Err(truncated(MAGIC_OFFSET + 1));
        }
        let magic = bytes[MAGIC_OFFSET] as i8;
        match magic {
            2 => {}
            0 | 1 => return Err(BatchProblem::OldMagic { magic }),
            _ => return Err(BatchProblem::BadMagic { magic }),
        }
        let batch_length = be_i32(bytes, 8);
        if batch_length < (HEADER_BYTES - LOG_OVERHEAD) as i32 {
            return Err(BatchProblem::BadLength { length: batch_length });
        }
        if bytes.len() < HEADER_BYTES {
            return Err(truncated(HEADER_BYTES));
        }
        Ok(BatchHeader {
            base_offset: be_i64(bytes, 0),
            batch_length,
            partition_leader_epoch: be_i32(bytes, 12),
            magic,
            crc: be_i32(bytes, 17) as u32,
            attributes: be_i16(bytes, 21),
            last_offset_delta: be_i32(bytes, 23),
            base_timestamp: be_i64(bytes, 27),
            max_timestamp: be_i64(bytes, 35),
            producer_id: be_i64(bytes, 43),
            producer_epoch: be_i16(bytes, 51),
            base_sequence: be_i32(bytes, 53),
            records_count: be_i32(bytes, 57),
        })
    }

    /// Bytes of the whole batch.
    pub fn size(&self) -> usize {
        self.batch_length as usize + LOG_OVERHEAD
    }

    /// The last offset the batch stands for.
    pub fn last_offset(&self) -> i64 {
        self.base_offset.saturating_add(i64::from(self.last_offset_delta))
    }

    /// The codec bits (`None` for 5–7).
    pub fn compression(&self) -> Option<Compression> {
        Compression::from_bits((self.attributes & ATTR_CODEC) as u8)
    }

    /// Timestamps are the broker's (`LogAppendTime`): every record's timestamp is the max timestamp.
    pub fn is_log_append_time(&self) -> bool {
        self.attributes & ATTR_LOG_APPEND_TIME != 0
    }

    /// Part of a transaction.
    pub fn is_transactional(&self) -> bool {
        self.attributes & ATTR_TRANSACTIONAL != 0
    }

    /// A control batch (a transaction marker).
    pub fn is_control(&self) -> bool {
        self.attributes & ATTR_CONTROL != 0
    }

    /// The delete horizon (KIP-534) when the batch has one: its tombstones go once it has passed.
    pub fn delete_horizon(&self) -> Option<i64> {
        (self.attributes & ATTR_DELETE_HORIZON != 0).then_some(self.base_timestamp)
    }

    /// The attribute bits for a batch like this one with `codec` and, when `Some`, a delete horizon.
    pub fn attributes_with(&self, codec: Compression, delete_horizon: bool) -> i16 {
        let mut a = self.attributes & !(ATTR_CODEC | ATTR_DELETE_HORIZON);
        a |= i16::from(codec.bits());
        if delete_horizon {
            a |= ATTR_DELETE_HORIZON;
        }
        a
    }
}

/// One batch, its bytes borrowed from a segment.
#[derive(Debug, Clone, Copy)]
pub struct Batch<'a> {
    /// Its header.
    pub header: BatchHeader,
    /// All its bytes (header included).
    pub bytes: &'a [u8],
}

impl<'a> Batch<'a> {
    /// Reads and verifies (magic, length, CRC-32C) the batch at the start of `bytes`.
    ///
    /// # Errors
    /// [`BatchProblem`].
    pub fn parse(bytes: &'a [u8]) -> Result<Batch<'a>, BatchProblem> {
        let batch = Self::parse_unverified(bytes)?;
        let computed = crc32c::crc32c(&batch.bytes[CRC_START..]);
        if computed != batch.header.crc {
            return Err(BatchProblem::Crc { stored: batch.header.crc, computed });
        }
        Ok(batch)
    }

    /// As [`Batch::parse`] without the CRC-32C: for a pass 1 whose pass 2 verifies every batch it read before
    /// anything is committed (a damaged batch still fails the pass), so each batch is checksummed once.
    /// Decoding stays bounded either way.
    ///
    /// # Errors
    /// [`BatchProblem`] for all but a CRC mismatch.
    pub fn parse_unverified(bytes: &'a [u8]) -> Result<Batch<'a>, BatchProblem> {
        let header = BatchHeader::parse(bytes)?;
        let size = header.size();
        let bytes =
            bytes.get(..size).ok_or(BatchProblem::Truncated { needed: size as u64, available: bytes.len() as u64 })?;
        if header.compression().is_none() {
            return Err(BatchProblem::UnknownCodec { bits: (header.attributes & ATTR_CODEC) as u8 });
        }
        Ok(Batch { header, bytes })
    }

    /// The records' bytes as stored (compressed when the batch has a codec).
    pub fn stored_records(&self) -> &'a [u8] {
        &self.bytes[HEADER_BYTES..]
    }

    /// The records of an uncompressed batch, borrowed from the batch's own bytes (`None` for a compressed one).
    ///
    /// # Errors
    /// [`BatchProblem::BadCount`] for a record count the bytes cannot hold.
    pub fn records_in_place(&self) -> Option<Result<Records<'a>, BatchProblem>> {
        if self.header.compression() != Some(Compression::None) {
            return None;
        }
        let data = self.stored_records();
        let count = self.header.records_count;
        if count < 0 || (count as usize).saturating_mul(MIN_RECORD_BYTES) > data.len() {
            return Some(Err(BatchProblem::BadCount { count, bytes: data.len() }));
        }
        Some(Ok(Records { data, pos: 0, index: 0, count: count as usize, header: self.header }))
    }

    /// The records, decompressed into `scratch` when the batch has a codec.
    ///
    /// # Errors
    /// [`BatchProblem`] for data that does not decompress or a record count the bytes cannot hold.
    pub fn records<'s>(&self, scratch: &'s mut Vec<u8>) -> Result<Records<'s>, BatchProblem>
    where
        'a: 's,
    {
        let codec = self.header.compression().unwrap_or(Compression::None);
        let data: &'s [u8] = if codec == Compression::None {
            self.stored_records()
        } else {
            let n = compression::decompress_reusing(codec, self.stored_records(), MAX_DECOMPRESSED_BYTES, scratch)?;
            &scratch[..n]
        };
        let count = self.header.records_count;
        if count < 0 || (count as usize).saturating_mul(MIN_RECORD_BYTES) > data.len() {
            return Err(BatchProblem::BadCount { count, bytes: data.len() });
        }
        Ok(Records { data, pos: 0, index: 0, count: count as usize, header: self.header })
    }
}

/// A record of a batch, borrowing its key, value and headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KafkaRecord<'a> {
    /// Its offset (base offset + offset delta).
    pub offset: i64,
    /// Its timestamp (base timestamp + delta, or the max timestamp under `LogAppendTime`).
    pub timestamp: i64,
    /// Its timestamp delta as stored.
    pub timestamp_delta: i64,
    /// Its key (`None`: null).
    pub key: Option<&'a [u8]>,
    /// Its value (`None`: a tombstone).
    pub value: Option<&'a [u8]>,
    /// Its header count.
    pub header_count: usize,
    /// Its headers' bytes, as stored (read with [`KafkaRecord::headers`]).
    pub header_bytes: &'a [u8],
    /// Its whole encoded body (after the length varint), to copy it unchanged.
    pub body: &'a [u8],
}

impl<'a> KafkaRecord<'a> {
    /// Its headers: (name, value) with a null value as `None`.
    pub fn headers(&self) -> impl Iterator<Item = (&'a [u8], Option<&'a [u8]>)> + 'a {
        let (bytes, count) = (self.header_bytes, self.header_count);
        let mut pos = 0;
        (0..count).map_while(move |_| {
            let name = read_bytes(bytes, &mut pos).ok()??;
            let value = read_bytes(bytes, &mut pos).ok()?;
            Some((name, value))
        })
    }
}

/// A record's offset and key (`None`: null), as [`Records::next_key`] reads them.
pub type KeyAt<'s> = (i64, Option<&'s [u8]>);

/// The records of a batch, in order.
#[derive(Debug, Clone)]
pub struct Records<'s> {
    data: &'s [u8],
    pos: usize,
    index: usize,
    count: usize,
    header: BatchHeader,
}

impl<'s> Records<'s> {
    /// The body of the record at `pos` (after its length varint, never empty) and where the record ends.
    #[inline]
    fn body_at(&self) -> Result<(&'s [u8], usize), BatchProblem> {
        let bad = |what| BatchProblem::BadRecord { index: self.index, what };
        let data = self.data;
        let mut pos = self.pos;
        let len = read_varint(data, &mut pos).ok_or_else(|| bad("its length varint is cut off"))?;
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| pos.checked_add(l))
            .filter(|&e| e <= data.len())
            .ok_or_else(|| bad("its length runs past the batch"))?;
        let body = &data[pos..end];
        if body.is_empty() {
            return Err(bad("it is empty"));
        }
        Ok((body, end))
    }

    #[inline]
    fn read_one(&mut self) -> Result<KafkaRecord<'s>, BatchProblem> {
        let bad = |what| BatchProblem::BadRecord { index: self.index, what };
        crate::cache::next_batch_ahead(self.data.as_ptr().wrapping_add(self.pos), self.data.len());
        let (body, end) = self.body_at()?;
        let mut p = 1; // attributes (unused)
        let timestamp_delta = read_varlong(body, &mut p).ok_or_else(|| bad("its timestamp delta is malformed"))?;
        let offset_delta = read_varint(body, &mut p).ok_or_else(|| bad("its offset delta is malformed"))?;
        let key = read_bytes(body, &mut p).map_err(bad)?;
        let value = read_bytes(body, &mut p).map_err(bad)?;
        let header_count = read_varint(body, &mut p).ok_or_else(|| bad("its header count is malformed"))?;
        let header_count = usize::try_from(header_count).map_err(|_| bad("its header count is negative"))?;
        let header_bytes = &body[p..];
        let mut hp = 0;
        for _ in 0..header_count {
            let name = read_bytes(header_bytes, &mut hp).map_err(bad)?;
            if name.is_none() {
                return Err(bad("a header name is null"));
            }
            read_bytes(header_bytes, &mut hp).map_err(bad)?;
        }
        if hp != header_bytes.len() {
            return Err(bad("bytes are left after its headers"));
        }
        self.pos = end;
        let timestamp = if self.header.is_log_append_time() {
            self.header.max_timestamp
        } else {
            self.header.base_timestamp.wrapping_add(timestamp_delta)
        };
        Ok(KafkaRecord {
            offset: self.header.base_offset.wrapping_add(i64::from(offset_delta)),
            timestamp,
            timestamp_delta,
            key,
            value,
            header_count,
            header_bytes,
            body,
        })
    }
}

impl<'s> Iterator for Records<'s> {
    type Item = Result<KafkaRecord<'s>, BatchProblem>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.step(Self::read_one)
    }
}

impl<'s> Records<'s> {
    /// The next record's offset and key, as [`Iterator::next`] reads them but without reading its value and
    /// headers: what pass 1 of a cleaner needs. The record's length still bounds it and the batch's bytes
    /// must still end with its last record; its value and headers are checked by whoever reads them whole
    /// (a cleaner's pass 2 reads every record it copies, and verifies its batch, before anything is written).
    #[inline]
    pub fn next_key(&mut self) -> Option<Result<KeyAt<'s>, BatchProblem>> {
        self.step(Self::read_key)
    }

    /// One record by `read`, then past the last one the check that no bytes are left, then nothing.
    #[inline]
    fn step<T>(&mut self, read: impl FnOnce(&mut Self) -> Result<T, BatchProblem>) -> Option<Result<T, BatchProblem>> {
        if self.index == self.count {
            return (self.pos != self.data.len())
                .then(|| {
                    self.index += 1;
                    Err(BatchProblem::BadRecord { index: self.count, what: "bytes are left after the last record" })
                })
                .filter(|_| self.index == self.count + 1);
        }
        if self.index > self.count {
            return None;
        }
        let r = read(self);
        self.index = if r.is_ok() { self.index + 1 } else { self.count + 1 };
        Some(r)
    }

    /// The offset and key of the record at `pos`, moving past its end.
    #[inline]
    fn read_key(&mut self) -> Result<KeyAt<'s>, BatchProblem> {
        let bad = |what| BatchProblem::BadRecord { index: self.index, what };
        crate::cache::scan_ahead(self.data.as_ptr().wrapping_add(self.pos));
        let (body, end) = self.body_at()?;
        let mut p = 1; // attributes (unused)
        read_varlong(body, &mut p).ok_or_else(|| bad("its timestamp delta is malformed"))?;
        let offset_delta = read_varint(body, &mut p).ok_or_else(|| bad("its offset delta is malformed"))?;
        let key = read_bytes(body, &mut p).map_err(bad)?;
        self.pos = end;
        Ok((self.header.base_offset.wrapping_add(i64::from(offset_delta)), key))
    }
}
/// Bytes of a batch header that are all zero where a preallocated segment's data ends (base offset, length,
/// leader epoch and magic).
const ZERO_HEADER_BYTES: usize = MAGIC_OFFSET + 1;

/// True when the bytes at a batch start are where a preallocated segment's data ends: a header of zeros
/// (Kafka's `log.preallocate`).
pub fn is_zero_header(head: &[u8]) -> bool {
    !head.is_empty() && head.iter().take(ZERO_HEADER_BYTES).all(|&b| b == 0)
}

/// A record header split off its block: name, value (`None`: null), and the rest of the block.
pub type HeaderSplit<'b> = (&'b [u8], Option<&'b [u8]>, &'b [u8]);

/// One record header of a validated header block: varint-prefixed name, varint-prefixed value (-1: null), and
/// the rest of the block.
pub fn split_header(block: &[u8]) -> Option<HeaderSplit<'_>> {
    let mut pos = 0;
    let name = read_bytes(block, &mut pos).ok()??;
    let value = read_bytes(block, &mut pos).ok()?;
    Some((name, value, block.get(pos..)?))
}
