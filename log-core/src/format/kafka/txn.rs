//! Reading a Kafka segment's transactional facts from its batches, as a broker's segment recovery reads them:
//! the walk reads batch headers only (61 bytes a batch), and the whole of a control batch, which is a record of
//! a few bytes. The state they fold into is format-free (the core's `txn` module).

use super::codec::batch::{Batch, BatchHeader, HEADER_BYTES, is_zero_header};
use crate::error::{CorruptKind, Error, Result};
use crate::storage::SegmentSource;
pub use crate::txn::{
    AbortedTxn, IndexDisagreement, MarkerType, OpenTxn, SegmentTxns, TxnEvent, TxnState, index_disagreement,
};

/// The largest control batch read (Kafka's is one record of a few bytes; more is damage, not a marker).
const MAX_CONTROL_BATCH_BYTES: u64 = 64 << 10;

impl SegmentTxns {
    /// Walks the batch headers of `source` up to `end` (a zero fill ends the data), reading each control batch
    /// whole.
    ///
    /// # Errors
    /// [`Error::Corrupt`] for a header that does not parse, a length past `end`, or a control batch whose
    /// record count is not zero but has no control record; [`Error::Io`].
    pub fn scan(source: &SegmentSource, name: &str, end: u64) -> Result<SegmentTxns> {
        Self::scan_from(source, name, end, 0)
    }

    /// As [`SegmentTxns::scan`], for the batches whose last offset is `from` or later only (a broker replaying
    /// a segment from a producer snapshot taken inside it reads from the batch holding that offset).
    ///
    /// # Errors
    /// As [`SegmentTxns::scan`].
    pub fn scan_from(source: &SegmentSource, name: &str, end: u64, from: u64) -> Result<SegmentTxns> {
        let mut walk = TxnWalk::from(from);
        let mut buf = Vec::new();
        for_each_kafka_header(source, name, end, |pos, h| {
            walk.batch(h, || read_marker(source, name, pos, h, &mut buf));
        })?;
        walk.finish()
    }
}

/// A segment's [`SegmentTxns`] folded one batch at a time, in order: what [`SegmentTxns::scan_from`] does
/// with the headers it reads, and what a segment's load does with the batches it walks anyway (so that opening
/// a partition and then asking for its transactions reads its batches once, not twice).
#[derive(Debug, Default)]
pub struct TxnWalk {
    from: u64,
    out: SegmentTxns,
    producers: crate::producers::StepsBuilder,
    problem: Option<Error>,
}

impl TxnWalk {
    /// A walk keeping the batches whose last offset is `from` or later.
    pub fn from(from: u64) -> TxnWalk {
        TxnWalk { from, ..TxnWalk::default() }
    }

    /// Folds the batch of header `h`; `marker` reads its control record when it is a control batch.
    fn batch(&mut self, h: &BatchHeader, marker: impl FnOnce() -> Result<Option<Marker>>) {
        if self.problem.is_some() || h.producer_id < 0 {
            return;
        }
        let (Ok(base), Ok(last_offset)) = (u64::try_from(h.base_offset), u64::try_from(h.last_offset())) else {
            return;
        };
        if last_offset < self.from {
            return;
        }
        if h.is_control() {
            match marker() {
                // An emptied marker (a bare header a cleaner kept) is no write; the transaction it ended stays
                // ended (the broker saw its marker).
                Ok(None) => self.out.events.push(TxnEvent::Ended { producer_id: h.producer_id, offset: base }),
                Ok(Some(marker)) => {
                    self.producers.marker(h.producer_id, h.producer_epoch, marker.timestamp);
                    self.out.events.push(TxnEvent::Marker {
                        producer_id: h.producer_id,
                        producer_epoch: h.producer_epoch,
                        offset: base,
                        kind: marker.kind,
                        coordinator_epoch: marker.coordinator_epoch,
                        bytes: h.size() as u64,
                    });
                }
                Err(e) => self.problem = Some(e),
            }
            return;
        }
        self.producers.data(h.producer_id, h.producer_epoch, last_offset, h.max_timestamp, h.is_transactional());
        if h.is_transactional() {
            self.out.events.push(TxnEvent::Data {
                producer_id: h.producer_id,
                producer_epoch: h.producer_epoch,
                base_offset: base,
                last_offset,
                timestamp: h.base_timestamp,
                records: u64::try_from(h.records_count).unwrap_or(0),
                bytes: h.size() as u64,
            });
        }
    }

    /// Folds the whole batch `bytes` at `pos` of the segment `name` (its control record read from them).
    pub fn batch_bytes(&mut self, name: &str, pos: u64, h: &BatchHeader, bytes: &[u8]) {
        self.batch(h, || marker_of(name, pos, h, bytes));
    }

    /// The segment's transactions.
    ///
    /// # Errors
    /// The first control batch that did not parse.
    pub fn finish(self) -> Result<SegmentTxns> {
        if let Some(e) = self.problem {
            return Err(e);
        }
        let mut out = self.out;
        out.producers = self.producers.finish();
        Ok(out)
    }
}

/// What a control batch's record says.
struct Marker {
    kind: MarkerType,
    coordinator_epoch: i32,
    /// The record's timestamp.
    timestamp: i64,
}

/// The type and coordinator epoch of the control batch at `pos`; `None` for an emptied one (no record: the bare
/// header Kafka's cleaner keeps of a marker that ends its round, `DefaultRecordBatch.writeEmptyHeader`).
fn read_marker(
    source: &SegmentSource,
    name: &str,
    pos: u64,
    h: &BatchHeader,
    buf: &mut Vec<u8>,
) -> Result<Option<Marker>> {
    if h.records_count == 0 {
        return Ok(None);
    }
    let corrupt = |what| Error::Corrupt { segment: name.to_owned(), position: pos, kind: CorruptKind::Malformed(what) };
    let len = h.size() as u64;
    if len > MAX_CONTROL_BATCH_BYTES {
        return Err(corrupt("a control batch larger than any transaction marker"));
    }
    buf.clear();
    buf.resize(len as usize, 0);
    source.read_at(pos, buf).map_err(Error::io("read", name))?;
    marker_of(name, pos, h, buf)
}

/// As [`read_marker`], from the control batch's `bytes`.
fn marker_of(name: &str, pos: u64, h: &BatchHeader, bytes: &[u8]) -> Result<Option<Marker>> {
    if h.records_count == 0 {
        return Ok(None);
    }
    let corrupt = |what| Error::Corrupt { segment: name.to_owned(), position: pos, kind: CorruptKind::Malformed(what) };
    if h.size() as u64 > MAX_CONTROL_BATCH_BYTES {
        return Err(corrupt("a control batch larger than any transaction marker"));
    }
    let batch = Batch::parse_unverified(bytes).map_err(|p| Error::Corrupt {
        segment: name.to_owned(),
        position: pos,
        kind: CorruptKind::Kafka(p),
    })?;
    let mut scratch = Vec::new();
    let mut records = batch.records(&mut scratch).map_err(|p| Error::Corrupt {
        segment: name.to_owned(),
        position: pos,
        kind: CorruptKind::Kafka(p),
    })?;
    let record = records
        .next()
        .ok_or_else(|| corrupt("a control batch without a control record"))?
        .map_err(|p| Error::Corrupt { segment: name.to_owned(), position: pos, kind: CorruptKind::Kafka(p) })?;
    let kind = marker_type(record.key).ok_or_else(|| corrupt("a control record without its key"))?;
    // The value: a version (2 bytes) and the coordinator's epoch (4 bytes).
    let coordinator_epoch =
        record.value.filter(|v| v.len() >= 6).map_or(-1, |v| i32::from_be_bytes([v[2], v[3], v[4], v[5]]));
    Ok(Some(Marker { kind, coordinator_epoch, timestamp: record.timestamp }))
}

/// What the key of a control record says (a version, then the type: `0` ABORT, `1` COMMIT); `None` for a key
/// too short to be one.
pub fn marker_type(key: Option<&[u8]>) -> Option<MarkerType> {
    let key = key.filter(|k| k.len() >= 4)?;
    Some(match i16::from_be_bytes([key[2], key[3]]) {
        0 => MarkerType::Abort,
        1 => MarkerType::Commit,
        other => MarkerType::Other(other),
    })
}

/// The coordinator epoch in the value of a control record (a version, 2 bytes, then the epoch, 4 bytes);
/// `None` for a value too short to hold one.
pub fn coordinator_epoch(value: Option<&[u8]>) -> Option<i32> {
    let v = value.filter(|v| v.len() >= 6)?;
    Some(i32::from_be_bytes([v[2], v[3], v[4], v[5]]))
}

/// Calls `f` with the position and header of every Kafka batch of `source` below `end`, reading only the
/// headers (61 bytes a batch), not the records: what a broker's producer state needs (each producer's last
/// batch). Stops at a zero fill.
///
/// # Errors
/// [`Error::Corrupt`] for a header that does not parse or a batch that runs past `end`; [`Error::Io`].
pub fn for_each_kafka_header(
    source: &SegmentSource,
    name: &str,
    end: u64,
    mut f: impl FnMut(u64, &BatchHeader),
) -> Result<()> {
    let mut head = [0u8; HEADER_BYTES];
    let mut pos = 0u64;
    // A walk of a mapping's headers touches every page (the kernel maps pages around each one read): it lets
    // them go behind it as the batch iterators do, so that a header walk of a large partition holds a step.
    let mut released = 0u64;
    let release = |from: u64, to: u64| {
        if let SegmentSource::Mapped(bytes) = source {
            let at = |p: u64| usize::try_from(p).unwrap_or(usize::MAX);
            bytes.release(at(from), at(to));
        }
    };
    let walked = (|| {
        while pos < end {
            if pos - released >= crate::storage::RELEASE_STEP_BYTES as u64 {
                release(released, pos);
                released = pos;
            }
            let n = usize::try_from(end - pos).unwrap_or(usize::MAX).min(head.len());
            source.read_at(pos, &mut head[..n]).map_err(Error::io("read", name))?;
            if is_zero_header(&head[..n]) {
                return Ok(());
            }
            let corrupt = |kind| Error::Corrupt { segment: name.to_owned(), position: pos, kind };
            let header = BatchHeader::parse(&head[..n]).map_err(|p| corrupt(CorruptKind::Kafka(p)))?;
            let len = header.size() as u64;
            if len > end - pos {
                return Err(corrupt(CorruptKind::Truncated { needed: len, available: end - pos }));
            }
            f(pos, &header);
            pos += len;
        }
        Ok(())
    })();
    release(released, end);
    walked
}
