//! The transaction state of a Kafka partition, derived from its batches as a broker's segment recovery derives
//! it: which transactions were aborted, which are still open, where the last stable offset (LSO) lies, and the
//! last data batch of every producer.
//!
//! A transactional producer's data batches open a transaction at the first of them; its control batch (a
//! marker whose one record's key is a version and a type, `0` ABORT, `1` COMMIT) ends it. An aborted
//! transaction spans from its first data batch to its marker (a marker without data before it is an empty
//! transaction spanning only itself), as the entries of Kafka's `.txnindex` do. A transaction with no marker
//! yet is open: the LSO is the first offset of the earliest open one (else the log end), and no cleaner may
//! take anything at or past it.
//!
//! The walk reads batch headers only (61 bytes a batch), and the whole of a control batch, which is a record
//! of a few bytes. A closed segment's share is computed once and kept with the segment
//! ([`crate::SealedSegment::transactions`]); the active segment is walked afresh each time.

use std::collections::HashMap;

use crate::error::{CorruptKind, Error, Result};
use crate::kafka::{Batch, BatchHeader};
use crate::scan::SegmentSource;

/// Bytes of one `.txnindex` entry (version i16, producer id i64, first, last and last stable offsets i64).
pub const TXN_INDEX_ENTRY_BYTES: usize = 34;

/// The largest control batch read (Kafka's is one record of a few bytes; more is damage, not a marker).
const MAX_CONTROL_BATCH_BYTES: u64 = 64 << 10;

/// What a transaction marker says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerType {
    /// The transaction's records are discarded.
    Abort,
    /// The transaction's records are visible.
    Commit,
    /// A control type this reader does not know (kept, never acted on).
    Other(i16),
}

/// One transactional fact of a segment, in offset order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnEvent {
    /// A transactional data batch.
    Data {
        /// Its producer.
        producer_id: i64,
        /// The producer's epoch.
        producer_epoch: i16,
        /// The batch's first offset.
        base_offset: u64,
        /// The batch's last offset.
        last_offset: u64,
        /// Its first timestamp.
        timestamp: i64,
        /// Records of the batch.
        records: u64,
        /// Bytes of the batch.
        bytes: u64,
    },
    /// A control batch (transaction marker).
    Marker {
        /// Its producer.
        producer_id: i64,
        /// The producer's epoch.
        producer_epoch: i16,
        /// The marker's offset.
        offset: u64,
        /// Abort or commit.
        kind: MarkerType,
        /// The transaction coordinator's epoch that wrote it.
        coordinator_epoch: i32,
        /// Bytes of the batch.
        bytes: u64,
    },
}

/// One segment's transactional facts and the last data batch of each producer in it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SegmentTxns {
    /// Transactional data batches and markers, in offset order.
    pub events: Vec<TxnEvent>,
    /// Producer id → base offset of its last data batch in the segment (transactional or idempotent).
    pub last_data_batch: Vec<(i64, u64)>,
}

impl SegmentTxns {
    /// Walks the batch headers of `source` up to `end` (a zero fill ends the data), reading each control batch
    /// whole.
    ///
    /// # Errors
    /// [`Error::Corrupt`] for a header that does not parse, a length past `end`, or a control batch without a
    /// control record; [`Error::Io`].
    pub fn scan(source: &SegmentSource, name: &str, end: u64) -> Result<SegmentTxns> {
        let mut out = SegmentTxns::default();
        let mut last: HashMap<i64, u64> = HashMap::new();
        let mut problem: Option<Error> = None;
        let mut buf = Vec::new();
        crate::for_each_kafka_header(source, name, end, |pos, h| {
            if problem.is_some() || h.producer_id < 0 {
                return;
            }
            let (Ok(base), Ok(last_offset)) = (u64::try_from(h.base_offset), u64::try_from(h.last_offset())) else {
                return;
            };
            if h.is_control() {
                match read_marker(source, name, pos, h, &mut buf) {
                    Ok((kind, coordinator_epoch)) => out.events.push(TxnEvent::Marker {
                        producer_id: h.producer_id,
                        producer_epoch: h.producer_epoch,
                        offset: base,
                        kind,
                        coordinator_epoch,
                        bytes: h.size() as u64,
                    }),
                    Err(e) => problem = Some(e),
                }
                return;
            }
            last.insert(h.producer_id, base);
            if h.is_transactional() {
                out.events.push(TxnEvent::Data {
                    producer_id: h.producer_id,
                    producer_epoch: h.producer_epoch,
                    base_offset: base,
                    last_offset,
                    timestamp: h.base_timestamp,
                    records: u64::try_from(h.records_count).unwrap_or(0),
                    bytes: h.size() as u64,
                });
            }
        })?;
        if let Some(e) = problem {
            return Err(e);
        }
        out.last_data_batch = last.into_iter().collect();
        out.last_data_batch.sort_unstable();
        Ok(out)
    }
}

/// The type and coordinator epoch of the control batch at `pos`.
fn read_marker(
    source: &SegmentSource,
    name: &str,
    pos: u64,
    h: &BatchHeader,
    buf: &mut Vec<u8>,
) -> Result<(MarkerType, i32)> {
    let corrupt = |what| Error::Corrupt { segment: name.to_owned(), position: pos, kind: CorruptKind::Malformed(what) };
    let len = h.size() as u64;
    if len > MAX_CONTROL_BATCH_BYTES {
        return Err(corrupt("a control batch larger than any transaction marker"));
    }
    buf.clear();
    buf.resize(len as usize, 0);
    source.read_at(pos, buf).map_err(Error::io("read", name))?;
    let batch = Batch::parse_unverified(buf).map_err(|p| Error::Corrupt {
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
    Ok((kind, coordinator_epoch))
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

impl std::fmt::Display for MarkerType {
    /// As Kafka names the types (`kafka-dump-log.sh` prints `endTxnMarker: COMMIT`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MarkerType::Abort => f.write_str("ABORT"),
            MarkerType::Commit => f.write_str("COMMIT"),
            MarkerType::Other(t) => write!(f, "UNKNOWN({t})"),
        }
    }
}

/// An aborted transaction: Kafka's `.txnindex` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct AbortedTxn {
    /// Its producer.
    pub producer_id: i64,
    /// Its first offset (its first data batch, or the marker for an empty transaction).
    pub first_offset: u64,
    /// Its marker's offset.
    pub last_offset: u64,
    /// The LSO once the marker was written: the first offset of the earliest other open transaction, else the
    /// marker's offset + 1.
    pub last_stable_offset: u64,
}

impl AbortedTxn {
    /// Appends this entry as Kafka's `.txnindex` holds it: version 0 (i16), producer id, first, last and last
    /// stable offsets (i64), big-endian.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&0i16.to_be_bytes());
        out.extend_from_slice(&self.producer_id.to_be_bytes());
        for o in [self.first_offset, self.last_offset, self.last_stable_offset] {
            out.extend_from_slice(&i64::try_from(o).unwrap_or(i64::MAX).to_be_bytes());
        }
    }

    /// The entries of a `.txnindex` file's bytes; `Err` with the byte position of the first that is not whole
    /// or not version 0, or holds a negative offset or a last offset before its first.
    pub fn decode_all(bytes: &[u8]) -> std::result::Result<Vec<AbortedTxn>, u64> {
        let mut out = Vec::with_capacity(bytes.len() / TXN_INDEX_ENTRY_BYTES);
        for (i, e) in bytes.chunks(TXN_INDEX_ENTRY_BYTES).enumerate() {
            let at = (i * TXN_INDEX_ENTRY_BYTES) as u64;
            if e.len() < TXN_INDEX_ENTRY_BYTES || i16::from_be_bytes([e[0], e[1]]) != 0 {
                return Err(at);
            }
            let long = |k: usize| {
                let mut b = [0u8; 8];
                b.copy_from_slice(&e[k..k + 8]);
                i64::from_be_bytes(b)
            };
            let (Ok(first), Ok(last), Ok(lso)) =
                (u64::try_from(long(10)), u64::try_from(long(18)), u64::try_from(long(26)))
            else {
                return Err(at);
            };
            if last < first {
                return Err(at);
            }
            out.push(AbortedTxn {
                producer_id: long(2),
                first_offset: first,
                last_offset: last,
                last_stable_offset: lso,
            });
        }
        Ok(out)
    }
}

/// A transaction without a marker yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct OpenTxn {
    /// Its producer.
    pub producer_id: i64,
    /// The producer's epoch in its first batch.
    pub producer_epoch: i16,
    /// Its first offset.
    pub first_offset: u64,
    /// The first timestamp of its first batch.
    pub first_timestamp: i64,
    /// The coordinator epoch of this producer's last marker, if any (what ending it by hand needs).
    pub coordinator_epoch: Option<i32>,
}

/// The transaction state of a whole partition. See the module docs.
#[derive(Debug, Clone, Default)]
pub struct TxnState {
    /// Aborted transactions in the order of their markers.
    pub aborted: Vec<AbortedTxn>,
    /// Open transactions, by first offset.
    pub open: Vec<OpenTxn>,
    /// The last stable offset: the first offset of the earliest open transaction, else the log end.
    pub last_stable_offset: u64,
    /// Producer id → base offset of its last data batch in the log.
    pub producer_last: HashMap<i64, u64>,
    /// Records of data batches of aborted transactions.
    pub aborted_records: u64,
    /// Bytes of those batches.
    pub aborted_bytes: u64,
    /// Markers (control batches).
    pub markers: u64,
    /// Bytes of the markers.
    pub marker_bytes: u64,
    /// Producer id → aborted ranges `(first, last)`, sorted, for [`TxnState::is_aborted`].
    ranges: HashMap<i64, Vec<(u64, u64)>>,
    /// (producer, marker offset) of the markers whose transaction has a data batch in the log (an emptied one
    /// counts: it still opens a transaction to whoever rebuilds the state from the batches).
    with_data: std::collections::HashSet<(i64, u64)>,
}

impl TxnState {
    /// The state of a log of `segments` (in offset order) whose next offset is `next_offset`.
    pub fn fold<'a>(segments: impl IntoIterator<Item = &'a SegmentTxns>, next_offset: u64) -> TxnState {
        struct Ongoing {
            epoch: i16,
            first: u64,
            timestamp: i64,
            records: u64,
            bytes: u64,
        }
        let mut state = TxnState { last_stable_offset: next_offset, ..TxnState::default() };
        let mut ongoing: HashMap<i64, Ongoing> = HashMap::new();
        // (first offset, producer) of the ongoing transactions: the LSO after a marker in O(log n).
        let mut firsts: std::collections::BTreeSet<(u64, i64)> = std::collections::BTreeSet::new();
        let mut coordinator: HashMap<i64, i32> = HashMap::new();
        for seg in segments {
            for &(p, base) in &seg.last_data_batch {
                state.producer_last.insert(p, base);
            }
            for ev in &seg.events {
                match *ev {
                    TxnEvent::Data { producer_id, producer_epoch, base_offset, timestamp, records, bytes, .. } => {
                        let o = ongoing.entry(producer_id).or_insert_with(|| {
                            firsts.insert((base_offset, producer_id));
                            Ongoing { epoch: producer_epoch, first: base_offset, timestamp, records: 0, bytes: 0 }
                        });
                        o.records += records;
                        o.bytes += bytes;
                    }
                    TxnEvent::Marker { producer_id, offset, kind, coordinator_epoch, bytes, .. } => {
                        state.markers += 1;
                        state.marker_bytes += bytes;
                        coordinator.insert(producer_id, coordinator_epoch);
                        let ended = ongoing.remove(&producer_id);
                        if let Some(o) = &ended {
                            firsts.remove(&(o.first, producer_id));
                        }
                        if ended.is_some() {
                            state.with_data.insert((producer_id, offset));
                        }
                        if kind != MarkerType::Abort {
                            continue;
                        }
                        let first = ended.as_ref().map_or(offset, |o| o.first);
                        if let Some(o) = &ended {
                            state.aborted_records += o.records;
                            state.aborted_bytes += o.bytes;
                        }
                        let lso = firsts.first().map_or(offset.saturating_add(1), |&(first, _)| first);
                        state.aborted.push(AbortedTxn {
                            producer_id,
                            first_offset: first,
                            last_offset: offset,
                            last_stable_offset: lso,
                        });
                        state.ranges.entry(producer_id).or_default().push((first, offset));
                    }
                }
            }
        }
        state.open = ongoing
            .into_iter()
            .map(|(producer_id, o)| OpenTxn {
                producer_id,
                producer_epoch: o.epoch,
                first_offset: o.first,
                first_timestamp: o.timestamp,
                coordinator_epoch: coordinator.get(&producer_id).copied(),
            })
            .collect();
        state.open.sort_unstable_by_key(|o| (o.first_offset, o.producer_id));
        if let Some(first) = state.open.first() {
            state.last_stable_offset = state.last_stable_offset.min(first.first_offset);
        }
        for r in state.ranges.values_mut() {
            r.sort_unstable();
        }
        state
    }

    /// True when the marker of `producer_id` at `marker` ends a transaction with a data batch in the log: while
    /// one is there the marker stays, or that batch would read as part of the producer's next transaction (or
    /// as an open one) to anyone who rebuilds the state from the batches, this reader included.
    pub fn has_data(&self, producer_id: i64, marker: u64) -> bool {
        self.with_data.contains(&(producer_id, marker))
    }

    /// Narrows the aborted transaction of `producer_id` ending at `marker` to start at `first` (a `.txnindex`
    /// entry said so: the batches before it belong to an earlier transaction whose marker a cleaner removed).
    pub fn narrow(&mut self, producer_id: i64, marker: u64, first: u64) {
        // Markers have unique offsets and the list is in their order: one binary search each.
        if let Ok(i) = self.aborted.binary_search_by_key(&marker, |a| a.last_offset)
            && self.aborted[i].producer_id == producer_id
        {
            self.aborted[i].first_offset = self.aborted[i].first_offset.max(first);
        }
        if let Some(r) = self.ranges.get_mut(&producer_id)
            && let Ok(i) = r.binary_search_by_key(&marker, |r| r.1)
        {
            r[i].0 = r[i].0.max(first);
        }
    }

    /// The aborted transaction whose marker is at `marker`, if any.
    pub fn aborted_at(&self, marker: u64) -> Option<&AbortedTxn> {
        self.aborted.binary_search_by_key(&marker, |a| a.last_offset).ok().map(|i| &self.aborted[i])
    }

    /// True when the transactional batch of `producer_id` starting at `base_offset` belongs to an aborted
    /// transaction.
    pub fn is_aborted(&self, producer_id: i64, base_offset: u64) -> bool {
        self.aborted_range(producer_id, base_offset).is_some()
    }

    /// The `(first, marker)` offsets of the aborted transaction the batch of `producer_id` at `base_offset`
    /// belongs to, if any.
    pub fn aborted_range(&self, producer_id: i64, base_offset: u64) -> Option<(u64, u64)> {
        let ranges = self.ranges.get(&producer_id)?;
        // The last range starting at or before the batch; ranges of one producer never overlap.
        let i = ranges.partition_point(|&(first, _)| first <= base_offset);
        ranges.get(i.checked_sub(1)?).copied().filter(|&(_, last)| last >= base_offset)
    }
}

/// How a segment's `.txnindex` disagrees with the aborted transactions its markers say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexDisagreement {
    /// The entry at fault (its index in the file), or `None` for a transaction no entry covers.
    pub entry: Option<usize>,
    /// The transaction's producer.
    pub producer_id: i64,
    /// Its first offset (the entry's, or the derived one).
    pub first_offset: u64,
    /// Its last offset (its marker's).
    pub last_offset: u64,
    /// What is wrong.
    pub why: &'static str,
}

impl std::fmt::Display for IndexDisagreement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.entry {
            Some(i) => write!(
                f,
                "entry {i} (producer {}, offsets {} to {}): ",
                self.producer_id, self.first_offset, self.last_offset
            )?,
            None => write!(
                f,
                "producer {}'s aborted transaction at offsets {} to {}: ",
                self.producer_id, self.first_offset, self.last_offset
            )?,
        }
        f.write_str(self.why)
    }
}

/// How a segment's `.txnindex` entries (`entries`, of the segment holding offsets `[base, end)`) disagree with
/// the aborted transactions the partition's markers say (`txns`): the first entry no ABORT marker of the
/// segment stands for, else the first aborted transaction with data left whose marker the segment holds and
/// which no entry covers (a broker would show its records to `read_committed` readers). `None` when they
/// agree. An entry may start before the derived transaction (a pass removed its first batches) or after it
/// (a cleaner removed the COMMIT marker of the producer's transaction before: [`verify_index_files`] then
/// narrows the transaction to the entry), and a transaction whose data is all gone needs no entry.
pub fn index_disagreement(base: u64, end: u64, entries: &[AbortedTxn], txns: &TxnState) -> Option<IndexDisagreement> {
    let in_segment = |o: u64| (base..end).contains(&o);
    for (i, e) in entries.iter().enumerate() {
        let marker = txns.aborted_at(e.last_offset).filter(|d| d.producer_id == e.producer_id);
        let why = match marker {
            None => Some("no ABORT marker of its producer is at its last offset"),
            Some(_) if !in_segment(e.last_offset) => Some("its ABORT marker is in another segment"),
            Some(_) => None,
        };
        if let Some(why) = why {
            return Some(IndexDisagreement {
                entry: Some(i),
                producer_id: e.producer_id,
                first_offset: e.first_offset,
                last_offset: e.last_offset,
                why,
            });
        }
    }
    let covered: std::collections::HashSet<(i64, u64)> =
        entries.iter().map(|e| (e.producer_id, e.last_offset)).collect();
    let from = txns.aborted.partition_point(|d| d.last_offset < base);
    let to = txns.aborted.partition_point(|d| d.last_offset < end).max(from);
    let uncovered = txns.aborted[from..to]
        .iter()
        .find(|d| d.first_offset < d.last_offset && !covered.contains(&(d.producer_id, d.last_offset)))?;
    Some(IndexDisagreement {
        entry: None,
        producer_id: uncovered.producer_id,
        first_offset: uncovered.first_offset,
        last_offset: uncovered.last_offset,
        why: "no entry covers it, though its data is still there",
    })
}

/// The largest `.txnindex` read (Kafka's hold a few entries; more is damage).
pub const MAX_TXN_INDEX_BYTES: u64 = 64 << 20;

/// Checks every segment's `.txnindex` in `store` against `txns` (see [`index_disagreement`]), narrowing an
/// aborted transaction to its entry where the entry starts later (Kafka's index is the authority on where an
/// aborted transaction begins once markers before it are gone). Returns the
/// names of the `.txnindex` files that are missing though their segment holds the marker of an aborted
/// transaction with data left (a broker reads no aborted transaction there; a compaction writes the file).
///
/// # Errors
/// [`Error::Corrupt`] naming the file ([`CorruptKind::TxnIndex`], or [`CorruptKind::Malformed`] for bytes
/// that are not whole version-0 entries, with the position); [`Error::Io`].
pub fn verify_index_files(
    store: &dyn crate::storage::SegmentStore,
    snapshot: &crate::reader::LogSnapshot,
    txns: &mut TxnState,
) -> Result<Vec<String>> {
    use crate::kafka::files::{SegmentFile, Stage, name};
    let mut missing = Vec::new();
    if snapshot.format() != crate::Format::Kafka {
        return Ok(missing);
    }
    let mut bases: Vec<u64> = snapshot.closed().iter().map(|s| s.base()).collect();
    bases.push(snapshot.active_base());
    for (i, &base) in bases.iter().enumerate() {
        let end = bases.get(i + 1).copied().unwrap_or_else(|| snapshot.next_offset().max(base.saturating_add(1)));
        let file = name(base, SegmentFile::TxnIndex, Stage::Live);
        let f = match store.open(&file) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let needed =
                    txns.aborted.iter().any(|d| (base..end).contains(&d.last_offset) && d.first_offset < d.last_offset);
                if needed {
                    missing.push(file);
                }
                continue;
            }
            Err(e) => return Err(Error::io("open", &file)(e)),
        };
        let len = f.len();
        let malformed =
            |position, what| Error::Corrupt { segment: file.clone(), position, kind: CorruptKind::Malformed(what) };
        if len > MAX_TXN_INDEX_BYTES {
            return Err(malformed(0, "a transaction index larger than any (64 MiB)"));
        }
        let mut bytes = vec![0u8; len as usize];
        f.read_at(0, &mut bytes).map_err(Error::io("read", &file))?;
        let entries = AbortedTxn::decode_all(&bytes)
            .map_err(|at| malformed(at, "not a whole version-0 transaction index entry"))?;
        if let Some(d) = index_disagreement(base, end, &entries, txns) {
            let position = d.entry.map_or(0, |i| (i * TXN_INDEX_ENTRY_BYTES) as u64);
            return Err(Error::Corrupt { segment: file, position, kind: CorruptKind::TxnIndex(d) });
        }
        for e in &entries {
            txns.narrow(e.producer_id, e.last_offset, e.first_offset);
        }
    }
    Ok(missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(p: i64, base: u64) -> TxnEvent {
        TxnEvent::Data {
            producer_id: p,
            producer_epoch: 0,
            base_offset: base,
            last_offset: base,
            timestamp: 0,
            records: 1,
            bytes: 70,
        }
    }

    fn marker(p: i64, offset: u64, kind: MarkerType) -> TxnEvent {
        TxnEvent::Marker { producer_id: p, producer_epoch: 0, offset, kind, coordinator_epoch: 3, bytes: 78 }
    }

    #[test]
    fn aborted_open_and_committed_transactions_are_told_apart() {
        let seg = SegmentTxns {
            events: vec![
                data(1, 0),
                data(2, 1),
                data(1, 2),
                marker(1, 3, MarkerType::Abort),
                marker(2, 4, MarkerType::Commit),
                marker(3, 5, MarkerType::Abort),
                data(1, 6),
                data(2, 7),
            ],
            last_data_batch: vec![(1, 6), (2, 7)],
        };
        let s = TxnState::fold([&seg], 8);
        assert_eq!(
            s.aborted,
            vec![
                AbortedTxn { producer_id: 1, first_offset: 0, last_offset: 3, last_stable_offset: 1 },
                AbortedTxn { producer_id: 3, first_offset: 5, last_offset: 5, last_stable_offset: 6 },
            ]
        );
        assert!(s.is_aborted(1, 0) && s.is_aborted(1, 2) && !s.is_aborted(2, 1) && !s.is_aborted(1, 6));
        assert_eq!(s.open.iter().map(|o| (o.producer_id, o.first_offset)).collect::<Vec<_>>(), vec![(1, 6), (2, 7)]);
        assert_eq!(s.open[0].coordinator_epoch, Some(3));
        assert_eq!(s.last_stable_offset, 6);
        assert_eq!((s.aborted_records, s.markers), (2, 3));
    }

    #[test]
    fn an_index_that_disagrees_with_the_markers_is_found() {
        let seg = SegmentTxns {
            events: vec![data(1, 0), data(1, 1), marker(1, 2, MarkerType::Abort), marker(2, 3, MarkerType::Abort)],
            last_data_batch: vec![],
        };
        let s = TxnState::fold([&seg], 4);
        let entry = |p, first, last| AbortedTxn {
            producer_id: p,
            first_offset: first,
            last_offset: last,
            last_stable_offset: 0,
        };
        assert_eq!(index_disagreement(0, 4, &[entry(1, 0, 2)], &s), None, "the empty transaction needs no entry");
        assert_eq!(index_disagreement(0, 4, &[entry(1, 0, 2), entry(2, 3, 3)], &s), None);
        let found = |entries: &[AbortedTxn], base| index_disagreement(base, 4, entries, &s).map(|d| (d.entry, d.why));
        assert_eq!(found(&[entry(1, 1, 2)], 0), None, "an entry that starts later narrows the transaction");
        assert_eq!(found(&[entry(1, 0, 2), entry(3, 0, 3)], 0).map(|d| d.0), Some(Some(1)));
        assert_eq!(found(&[], 0).map(|d| d.0), Some(None), "producer 1's aborted data has no entry");
        assert_eq!(found(&[entry(1, 0, 2)], 3), Some((Some(0), "its ABORT marker is in another segment")));
    }

    #[test]
    fn without_open_transactions_the_lso_is_the_log_end() {
        let seg = SegmentTxns { events: vec![data(1, 0), marker(1, 1, MarkerType::Commit)], last_data_batch: vec![] };
        assert_eq!(TxnState::fold([&seg], 9).last_stable_offset, 9);
    }
}
