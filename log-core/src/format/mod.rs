//! The segment-format seam: a segment is a sequence of batches, and each [`Format`] says how one is laid out.
//!
//! - [`Format::Native`]: this project's checksummed frame ([`crate::codec`]); a frame is a batch of one
//!   record, so a native batch's base and last offsets are its record's offset.
//! - [`Format::Kafka`]: Kafka's magic 2 record batch ([`crate::kafka`]); its records may be compressed, its
//!   last offset is `base + last offset delta` whatever records it still holds, and offsets become `u64` here,
//!   once: a negative base offset, last offset delta or record count is corruption.
//!
//! Everything above this module (segment scans, torn tails, the index, group copies, both cleaning passes,
//! `check`, `dump`) works on [`BatchRef`]s and the [`RecordRef`]s inside them, whatever the format.
//!
//! Layering. This folder is the byte seam, one floor above the ground (`ground/`): `Format`, [`BatchRef`], and
//! each format's bytes (`native/`: frames, names, removal markers; `kafka/`: batches and codecs, names,
//! indexes, checkpoints, snapshots), with `checkpoint` and `side_indexes`. The core (`Log`, reading, recovery's
//! skeleton, the cleaning transaction) stands on it, and each format's protocols (`crate::protocol`) on the
//! core: the core asks a format what differs through methods of [`Format`] (`protocol::dispatch`, the one
//! place that tells the formats apart), and no file imports a floor above its own (the workspace's layering
//! test checks it).
#![allow(
    clippy::unnecessary_lazy_evaluations,
    reason = "a CorruptKind can hold a codec's message: built eagerly, every good frame would pay for dropping it"
)]

pub mod checkpoint;
pub mod kafka;
pub mod native;
pub(crate) mod side_indexes;

use serde::Serialize;

use crate::codec;
use crate::error::CorruptKind;
use crate::names::MAX_OFFSET;
use crate::record::{HeaderBytes, RecordRef};
use kafka::{BatchHeader, BatchProblem};

/// The layout of a segment's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// This project's frames: one record a batch.
    #[default]
    Native,
    /// Kafka's magic 2 record batches.
    Kafka,
}

/// Bytes at a batch start that tell its length, in every format (Kafka's offset and length fields; the
/// native frame header is 8).
pub const LENGTH_PREFIX_BYTES: usize = kafka::LOG_OVERHEAD;

/// Bytes of a Kafka batch header that are all zero where a preallocated segment's data ends (base offset,
/// length, leader epoch and magic).
const ZERO_HEADER_BYTES: usize = kafka::MAGIC_OFFSET + 1;

impl Format {
    /// The format's name, as `--format` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Native => "native",
            Format::Kafka => "kafka",
        }
    }

    /// The length of the batch starting at `head`, from its first bytes (at least [`LENGTH_PREFIX_BYTES`]
    /// when the segment has them; fewer is a cut-off batch).
    ///
    /// # Errors
    /// [`CorruptKind`] for too few bytes or an impossible length.
    pub fn batch_len(self, head: &[u8]) -> Result<usize, CorruptKind> {
        match self {
            Format::Native => codec::frame_header(head).map(|(len, _)| len),
            Format::Kafka => {
                let Some(prefix) = head.get(..kafka::LOG_OVERHEAD) else {
                    return Err(kafka_problem(BatchProblem::Truncated {
                        needed: kafka::LOG_OVERHEAD as u64,
                        available: head.len() as u64,
                    }));
                };
                #[expect(clippy::big_endian_bytes, reason = "Kafka's format is big-endian")]
                let length = i32::from_be_bytes([prefix[8], prefix[9], prefix[10], prefix[11]]);
                if length < (kafka::HEADER_BYTES - kafka::LOG_OVERHEAD) as i32 {
                    return Err(kafka_problem(BatchProblem::BadLength { length }));
                }
                Ok(length as usize + kafka::LOG_OVERHEAD)
            }
        }
    }

    /// Decodes the frame at the start of `bytes`, for a format whose batches are one record each (the
    /// native format): its record and its length. With `verify`, its checksum is checked too.
    ///
    /// # Errors
    /// [`CorruptKind`] saying what is wrong; [`CorruptKind::Malformed`] for a format whose batches hold
    /// several records (read them with [`Format::parse`]).
    #[inline]
    pub fn decode_frame(self, bytes: &[u8], verify: bool) -> Result<(RecordRef<'_>, usize), CorruptKind> {
        match self {
            Format::Native if verify => codec::decode(bytes),
            Format::Native => codec::decode_unverified(bytes),
            Format::Kafka => Err(CorruptKind::Malformed("a Kafka batch is not one record: parse it")),
        }
    }

    /// The offset and key of the frame at the start of `bytes`, and its length, for a format whose batches are
    /// one record each: no checksum, and nothing past the key read ([`codec::decode_key_unverified`]).
    ///
    /// # Errors
    /// As [`Format::decode_frame`] for the fields read.
    #[inline]
    pub fn decode_frame_key(self, bytes: &[u8]) -> Result<(u64, Option<&[u8]>, usize), CorruptKind> {
        match self {
            Format::Native => codec::decode_key_unverified(bytes),
            Format::Kafka => Err(CorruptKind::Malformed("a Kafka batch is not one record: parse it")),
        }
    }

    /// Decodes the batch at the start of `bytes` (which may hold more after it). With `verify`, its checksum
    /// is checked too; without, every length is still checked against the bytes there (for a reader that
    /// verifies the same batches later, before acting on what it learned: the cleaner's pass 1). A Kafka
    /// batch's records are not decoded here ([`BatchRef::records`]).
    ///
    /// # Errors
    /// [`CorruptKind`] saying what is wrong.
    #[inline]
    pub fn parse(self, bytes: &[u8], verify: bool) -> Result<BatchRef<'_>, CorruptKind> {
        match self {
            Format::Native => {
                let (rec, len) = if verify { codec::decode(bytes)? } else { codec::decode_unverified(bytes)? };
                Ok(BatchRef {
                    bytes: &bytes[..len],
                    base_offset: rec.offset,
                    last_offset: rec.offset,
                    record_count: 1,
                    max_timestamp: rec.timestamp,
                    delete_horizon: rec.delete_horizon,
                    kind: BatchKind::Native(rec),
                })
            }
            Format::Kafka => {
                let batch = if verify { kafka::Batch::parse(bytes) } else { kafka::Batch::parse_unverified(bytes) }
                    .map_err(kafka_problem)?;
                let h = batch.header;
                let base =
                    u64::try_from(h.base_offset).map_err(|_| CorruptKind::Malformed("a negative base offset"))?;
                let delta = u64::try_from(h.last_offset_delta)
                    .map_err(|_| CorruptKind::Malformed("a negative last offset delta"))?;
                let last = base
                    .checked_add(delta)
                    .filter(|&l| l < MAX_OFFSET)
                    .ok_or_else(|| CorruptKind::OffsetOutOfRange(base))?;
                let count =
                    u64::try_from(h.records_count).map_err(|_| CorruptKind::Malformed("a negative record count"))?;
                if count > delta + 1 {
                    return Err(CorruptKind::Malformed("more records than offsets in the batch"));
                }
                Ok(BatchRef {
                    bytes: batch.bytes,
                    base_offset: base,
                    last_offset: last,
                    record_count: count,
                    max_timestamp: h.max_timestamp,
                    delete_horizon: h.delete_horizon(),
                    kind: BatchKind::Kafka(h),
                })
            }
        }
    }

    /// Bytes a batch start must offer for [`Format::plausible_start`].
    pub(crate) fn probe_bytes(self) -> usize {
        match self {
            Format::Native => codec::PROBE_BYTES,
            Format::Kafka => kafka::HEADER_BYTES,
        }
    }

    /// A cheap test of whether a batch of this format with a base offset above `floor` could start at `head`,
    /// with `room` bytes left from there. Returns its length when it could: only then is the checksum worth
    /// computing. Garbage and zero fill almost never pass.
    pub(crate) fn plausible_start(self, head: &[u8], room: u64, floor: Option<u64>) -> Option<usize> {
        match self {
            Format::Native => codec::plausible_frame_start(head, room, floor),
            Format::Kafka => {
                let header = BatchHeader::parse(head.get(..kafka::HEADER_BYTES)?).ok()?;
                let len = header.size();
                let base = u64::try_from(header.base_offset).ok()?;
                let fits = len as u64 <= room;
                let ok = fits
                    && floor.is_none_or(|f| base > f)
                    && base < MAX_OFFSET
                    && header.last_offset_delta >= 0
                    && header.records_count >= 0
                    && header.compression().is_some();
                ok.then_some(len)
            }
        }
    }

    /// True when the bytes at a batch start are where a preallocated Kafka segment's data ends: a header of
    /// zeros (Kafka's `log.preallocate`). Never for the native format, whose frames cannot start so.
    pub(crate) fn is_zero_header(self, head: &[u8]) -> bool {
        self == Format::Kafka && !head.is_empty() && head.iter().take(ZERO_HEADER_BYTES).all(|&b| b == 0)
    }

    /// The most bytes one batch may take (a bound on what reading one can allocate).
    pub fn max_batch_bytes(self) -> usize {
        match self {
            Format::Native => codec::FRAME_HEADER_BYTES + codec::MAX_RECORD_BYTES,
            Format::Kafka => i32::MAX as usize + kafka::LOG_OVERHEAD,
        }
    }
}

fn kafka_problem(p: BatchProblem) -> CorruptKind {
    CorruptKind::Kafka(p)
}

/// What kind of batch a [`BatchRef`] is.
#[derive(Debug, Clone, Copy)]
enum BatchKind<'a> {
    /// A native frame and its record, already decoded.
    Native(RecordRef<'a>),
    /// A Kafka batch header.
    Kafka(BatchHeader),
}

/// One batch, borrowed from a segment's bytes.
#[derive(Debug, Clone, Copy)]
pub struct BatchRef<'a> {
    bytes: &'a [u8],
    /// The first offset the batch stands for.
    pub base_offset: u64,
    /// The last offset it stands for (Kafka keeps it when a cleaner empties the batch's tail).
    pub last_offset: u64,
    /// Records it holds.
    pub record_count: u64,
    /// Its largest timestamp (Kafka's max timestamp; a native record's timestamp).
    pub max_timestamp: i64,
    /// Its delete horizon (KIP-534), once a pass kept a tombstone of it.
    pub delete_horizon: Option<i64>,
    kind: BatchKind<'a>,
}

impl<'a> BatchRef<'a> {
    /// All its bytes.
    #[inline]
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Its size in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// True for a batch of no bytes (never: every format has a header).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Its format.
    pub fn format(&self) -> Format {
        match self.kind {
            BatchKind::Native(_) => Format::Native,
            BatchKind::Kafka(_) => Format::Kafka,
        }
    }

    /// The Kafka header of a Kafka batch.
    #[inline]
    pub fn kafka_header(&self) -> Option<&BatchHeader> {
        match &self.kind {
            BatchKind::Kafka(h) => Some(h),
            BatchKind::Native(_) => None,
        }
    }

    /// The one record of a native batch.
    #[inline]
    pub fn native_record(&self) -> Option<&RecordRef<'a>> {
        match &self.kind {
            BatchKind::Native(r) => Some(r),
            BatchKind::Kafka(_) => None,
        }
    }

    /// A Kafka control batch (a transaction marker).
    #[inline]
    pub fn is_control(&self) -> bool {
        self.kafka_header().is_some_and(BatchHeader::is_control)
    }

    /// A Kafka transactional batch.
    #[inline]
    pub fn is_transactional(&self) -> bool {
        self.kafka_header().is_some_and(BatchHeader::is_transactional)
    }

    /// The producer id of a Kafka batch written by an idempotent or transactional producer.
    #[inline]
    pub fn producer_id(&self) -> Option<i64> {
        self.kafka_header().map(|h| h.producer_id).filter(|&p| p >= 0)
    }

    /// The producer epoch of a Kafka batch written by an idempotent or transactional producer.
    #[inline]
    pub fn producer_epoch(&self) -> Option<i16> {
        self.kafka_header().filter(|h| h.producer_id >= 0).map(|h| h.producer_epoch)
    }

    /// True when reading its records needs a scratch buffer (a compressed Kafka batch): its records then
    /// borrow the buffer, not the segment.
    #[inline]
    pub fn is_compressed(&self) -> bool {
        self.kafka_header().is_some_and(|h| h.compression().is_some_and(|c| c != kafka::Compression::None))
    }

    /// The records of a batch that needs no scratch buffer (a native frame, an uncompressed Kafka batch),
    /// borrowed from the segment; `None` for a compressed batch ([`BatchRef::records`] then).
    ///
    /// # Errors
    /// As [`BatchRef::records`].
    #[inline]
    pub fn records_in_place(&self) -> Option<Result<BatchRecords<'a>, CorruptKind>> {
        match self.kind {
            BatchKind::Native(rec) => Some(Ok(BatchRecords { inner: Inner::One(Some(rec)) })),
            BatchKind::Kafka(header) => {
                let batch = kafka::Batch { header, bytes: self.bytes };
                Some(batch.records_in_place()?.map_err(kafka_problem).map(|records| self.kafka_records(records)))
            }
        }
    }

    /// Writes to `out` this batch holding only `kept` (some of its records, in order) with the delete horizon
    /// `horizon`, and returns the new batch's stamp. A native batch is its one record re-encoded; a Kafka batch
    /// is rebuilt as Kafka's `MemoryRecords.filterTo` builds one: under its own header (base offset, producer
    /// id, epoch and base sequence, leader epoch, last offset delta: it still ends where it ended),
    /// re-compressed with its codec, its max timestamp recomputed; with no record left it is a bare header
    /// (what Kafka keeps of a producer's last batch). `scratch` holds uncompressed records.
    ///
    /// # Errors
    /// [`CorruptKind::Malformed`] when the records cannot be written (a native record past its size limit, a
    /// Kafka batch past 2 GiB); neither can happen to records read from a valid batch.
    pub fn rewrite(
        &self,
        kept: &[RecordRef<'_>],
        horizon: Option<i64>,
        out: &mut Vec<u8>,
        scratch: &mut Vec<u8>,
    ) -> Result<Stamp, CorruptKind> {
        self.rewrite_from(kept.iter().copied(), horizon, out, scratch)
    }

    /// As [`BatchRef::rewrite`], the kept records coming from an iterator walked twice instead of a slice: a
    /// compressed batch of millions of small records is rewritten without collecting them.
    ///
    /// # Errors
    /// As [`BatchRef::rewrite`].
    pub fn rewrite_from<'r, I>(
        &self,
        kept: I,
        horizon: Option<i64>,
        out: &mut Vec<u8>,
        scratch: &mut Vec<u8>,
    ) -> Result<Stamp, CorruptKind>
    where
        I: Iterator<Item = RecordRef<'r>> + Clone,
    {
        const CANNOT: CorruptKind = CorruptKind::Malformed("the kept records cannot be written as a batch");
        out.clear();
        match self.kind {
            BatchKind::Native(_) => {
                let mut kept = kept;
                let rec = kept.next().ok_or(CANNOT)?;
                codec::encode_ref_with_horizon(&rec, horizon, out).map_err(|_| CANNOT)?;
                Ok(Stamp {
                    base_offset: rec.offset,
                    last_offset: rec.offset,
                    records: 1,
                    max_timestamp: rec.timestamp,
                    delete_horizon: horizon,
                })
            }
            BatchKind::Kafka(header) => {
                let count = kept.clone().count() as u64;
                let records = kept.map(|r| {
                    let (header_bytes, header_count) = r.header_block();
                    kafka::RecordToWrite {
                        offset: r.offset as i64,
                        timestamp: r.timestamp,
                        key: r.key,
                        value: r.value,
                        header_count,
                        header_bytes,
                    }
                });
                let codec = header.compression().unwrap_or(kafka::Compression::None);
                scratch.clear();
                kafka::write_batch_from(&header, codec, horizon, records, out, scratch).map_err(|_| CANNOT)?;
                let written = BatchHeader::parse(out).map_err(kafka_problem)?;
                Ok(Stamp {
                    base_offset: self.base_offset,
                    last_offset: self.last_offset,
                    records: count,
                    max_timestamp: written.max_timestamp,
                    // An emptied batch has none (Kafka writes a bare header).
                    delete_horizon: horizon.filter(|_| count > 0),
                })
            }
        }
    }

    /// The records of this Kafka batch, `records` its record iterator: their offsets and delete horizon
    /// come from the batch header.
    #[inline]
    fn kafka_records<'s>(&self, records: kafka::Records<'s>) -> BatchRecords<'s> {
        let (base, last, horizon) = (self.base_offset, self.last_offset, self.delete_horizon);
        BatchRecords { inner: Inner::Kafka { records, base, last, previous: None, horizon } }
    }

    /// The records, decompressed into `scratch` when the batch is compressed.
    ///
    /// # Errors
    /// [`CorruptKind`] for records that do not decompress or whose count the bytes cannot hold; each record's
    /// own damage comes from the iterator.
    pub fn records<'s>(&self, scratch: &'s mut Vec<u8>) -> Result<BatchRecords<'s>, CorruptKind>
    where
        'a: 's,
    {
        match self.kind {
            BatchKind::Native(rec) => Ok(BatchRecords { inner: Inner::One(Some(rec)) }),
            BatchKind::Kafka(header) => {
                let batch = kafka::Batch { header, bytes: self.bytes };
                Ok(self.kafka_records(batch.records(scratch).map_err(kafka_problem)?))
            }
        }
    }
}

/// The records of one batch, in order.
#[derive(Debug, Clone)]
pub struct BatchRecords<'s> {
    inner: Inner<'s>,
}

#[derive(Debug, Clone)]
enum Inner<'s> {
    One(Option<RecordRef<'s>>),
    Kafka { records: kafka::Records<'s>, base: u64, last: u64, previous: Option<u64>, horizon: Option<i64> },
}

impl<'s> Iterator for BatchRecords<'s> {
    type Item = Result<RecordRef<'s>, CorruptKind>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.inner {
            Inner::One(rec) => rec.take().map(Ok),
            Inner::Kafka { records, base, last, previous, horizon } => {
                let rec = match records.next()? {
                    Ok(r) => r,
                    Err(p) => return Some(Err(kafka_problem(p))),
                };
                let offset = match checked_offset(rec.offset, *base, *last, previous) {
                    Ok(o) => o,
                    Err(e) => return Some(Err(e)),
                };
                Some(Ok(RecordRef {
                    offset,
                    timestamp: rec.timestamp,
                    key: rec.key,
                    value: rec.value,
                    delete_horizon: *horizon,
                    body_bytes: rec.body.len(),
                    headers: HeaderBytes {
                        bytes: rec.header_bytes,
                        count: rec.header_count,
                        split: kafka::codec::batch::split_header,
                    },
                }))
            }
        }
    }
}

/// A record's offset and key (`None`: no key), as [`BatchRecords::next_key`] reads them.
pub type RecordKey<'s> = (u64, Option<&'s [u8]>);

impl<'s> BatchRecords<'s> {
    /// The next record's offset and key only: as [`Iterator::next`], its offset checked against its batch, but
    /// a Kafka record's value and headers not read (what pass 1 of a cleaner needs; whatever reads the record
    /// whole checks them).
    ///
    /// # Errors
    /// As [`Iterator::next`], but for damage in a record's value or headers.
    #[inline]
    pub fn next_key(&mut self) -> Option<Result<RecordKey<'s>, CorruptKind>> {
        match &mut self.inner {
            Inner::One(rec) => rec.take().map(|r| Ok((r.offset, r.key))),
            Inner::Kafka { records, base, last, previous, .. } => {
                let (offset, key) = match records.next_key()? {
                    Ok(r) => r,
                    Err(p) => return Some(Err(kafka_problem(p))),
                };
                Some(checked_offset(offset, *base, *last, previous).map(|o| (o, key)))
            }
        }
    }
}

/// A Kafka record's offset, checked: it lies inside its batch (`base..=last`) and above the record before it
/// (`previous`, moved to it), as Kafka validates on append; anything else is damage, never read as a record.
#[inline]
fn checked_offset(offset: i64, base: u64, last: u64, previous: &mut Option<u64>) -> Result<u64, CorruptKind> {
    match u64::try_from(offset) {
        Ok(o) if o >= base && o <= last && previous.is_none_or(|p| o > p) => {
            *previous = Some(o);
            Ok(o)
        }
        _ => Err(CorruptKind::Malformed("a record's offset lies outside its batch or does not increase")),
    }
}

/// What the summary of a segment learns from one batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// Its first offset.
    pub base_offset: u64,
    /// Its last offset.
    pub last_offset: u64,
    /// Its records.
    pub records: u64,
    /// Its largest timestamp, ms since the Unix epoch.
    pub max_timestamp: i64,
    /// Its delete horizon, once stamped.
    pub delete_horizon: Option<i64>,
}

impl Stamp {
    /// The stamp of `batch`.
    #[inline]
    pub fn of(batch: &BatchRef<'_>) -> Self {
        Stamp {
            base_offset: batch.base_offset,
            last_offset: batch.last_offset,
            records: batch.record_count,
            max_timestamp: batch.max_timestamp,
            delete_horizon: batch.delete_horizon,
        }
    }
}
