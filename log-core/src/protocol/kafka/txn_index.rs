//! Kafka's `.txnindex`: one entry per aborted transaction whose marker the segment holds, and the check of a
//! partition's `.txnindex` files against the markers.

use crate::error::{CorruptKind, Error, Result};
use crate::names::{SegmentFile, Stage, name};
use crate::reader::LogSnapshot;
use crate::storage::SegmentStore;
use crate::txn::{AbortedTxn, TxnState, index_disagreement};

/// Bytes of one `.txnindex` entry (version i16, producer id i64, first, last and last stable offsets i64).
pub const TXN_INDEX_ENTRY_BYTES: usize = 34;

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

/// The largest `.txnindex` read (Kafka's hold a few entries; more is damage).
pub const MAX_TXN_INDEX_BYTES: u64 = 64 << 20;

/// The entries of the `.txnindex` file `file`, or `None` when there is no such file.
///
/// The size is checked before anything is read: no index is larger than [`MAX_TXN_INDEX_BYTES`].
///
/// # Errors
/// [`Error::Corrupt`] naming the file ([`CorruptKind::Malformed`] with the position) for a file too large or
/// bytes that are not whole version-0 entries; [`Error::Io`].
pub(crate) fn read_index_file(store: &dyn SegmentStore, file: &str) -> Result<Option<Vec<AbortedTxn>>> {
    let f = match store.open(file) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("open", file)(e)),
    };
    let malformed =
        |position, what| Error::Corrupt { segment: file.to_owned(), position, kind: CorruptKind::Malformed(what) };
    let len = f.len();
    if len > MAX_TXN_INDEX_BYTES {
        return Err(malformed(0, "a transaction index larger than any (64 MiB)"));
    }
    let mut bytes = vec![0u8; len as usize];
    f.read_at(0, &mut bytes).map_err(Error::io("read", file))?;
    AbortedTxn::decode_all(&bytes)
        .map(Some)
        .map_err(|at| malformed(at, "not a whole version-0 transaction index entry"))
}

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
    store: &dyn SegmentStore,
    snapshot: &LogSnapshot,
    txns: &mut TxnState,
) -> Result<Vec<String>> {
    let mut missing = Vec::new();
    let mut bases: Vec<u64> = snapshot.closed().iter().map(|s| s.base()).collect();
    bases.push(snapshot.active_base());
    for (i, &base) in bases.iter().enumerate() {
        let end = bases.get(i + 1).copied().unwrap_or_else(|| snapshot.next_offset().max(base.saturating_add(1)));
        let file = name(base, SegmentFile::TxnIndex, Stage::Live);
        let Some(entries) = read_index_file(store, &file)? else {
            let needed = txns.aborted.iter().any(|d| {
                (base..end).contains(&d.last_offset)
                    && d.first_offset < d.last_offset
                    && d.last_offset >= txns.log_start
            });
            if needed {
                missing.push(file);
            }
            continue;
        };
        if let Some(d) = index_disagreement(base, end, &entries, txns) {
            let position = d.entry.map_or(0, |i| (i * TXN_INDEX_ENTRY_BYTES) as u64);
            return Err(Error::Corrupt { segment: file, position, kind: CorruptKind::TxnIndex(d) });
        }
        for e in &entries {
            txns.narrow(e.producer_id, e.last_offset, e.first_offset);
            txns.record(*e);
        }
    }
    Ok(missing)
}

/// The producers whose batches Kafka's cleaner reads as aborted when a pass maps from `start`, an offset
/// inside `segment` (a pass after one whose map filled: Kafka starts the next where the last ended), until
/// each producer's next ABORT marker at or past `start`.
///
/// Kafka 4.4's `Cleaner.buildOffsetMap` collects the aborted transactions of the segment holding `start` and
/// of every later one (`UnifiedLog.collectAbortedTransactions` searches that segment's `.txnindex` from the log
/// start offset, not from `start`), then reads batches from its offset index's entry at or below `start`. An
/// aborted transaction of that segment whose marker lies before that entry is never closed by its marker (not
/// read): the first batch read opens it, and `CleanedTransactionMetadata` counts the producer's transactional
/// batches as aborted until an ABORT marker of that producer is read. Their records are not mapped, so the
/// records they supersede outlive the pass (a later pass may still map newer ones). Where the segment has no
/// `.index` (a partition whose broker never wrote one), the entry is found as Kafka's segment recovery builds
/// it (every `index_interval` bytes, keyed by the batch's last offset); where it has no `.txnindex`, it has
/// no entries (a pass writes none when no aborted transaction had data), unless its `.index` is missing too:
/// then its entries are those recovery writes (every aborted transaction whose marker it holds).
///
/// Empty when `start` is the segment's base (the read starts at its first batch) or nothing was aborted.
///
/// # Errors
/// [`Error::Corrupt`] for a `.txnindex` that is not whole version-0 entries; [`Error::Io`].
pub fn producers_read_as_aborted(
    store: &dyn SegmentStore,
    segment: &crate::segment::SealedSegment,
    start: u64,
    index_interval: u64,
    txns: &TxnState,
) -> Result<Vec<i64>> {
    let base = segment.base();
    if txns.aborted.is_empty() || start <= base || start >= segment.next_offset() {
        return Ok(Vec::new());
    }
    let read_from = index_floor(store, segment, start, index_interval)?;
    let file = name(base, SegmentFile::TxnIndex, Stage::Live);
    let entries = match read_index_file(store, &file)? {
        Some(entries) => entries,
        None => {
            // Kafka reads a missing `.txnindex` as empty, unless the segment's `.index` is missing too: its
            // load then recovers the segment, which writes the entries of the markers it holds.
            let index = name(base, SegmentFile::OffsetIndex, Stage::Live);
            match store.open(&index) {
                Ok(_) => Vec::new(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let end = segment.next_offset();
                    txns.aborted.iter().filter(|a| (base..end).contains(&a.last_offset)).cloned().collect()
                }
                Err(e) => return Err(Error::io("open", &index)(e)),
            }
        }
    };
    // Kafka searches the entries from the log start offset: one whose marker lies below it is never collected.
    let mut producers: Vec<i64> = entries
        .iter()
        .filter(|e| e.last_offset < read_from && e.last_offset >= txns.log_start)
        .map(|e| e.producer_id)
        .collect();
    // An ABORT marker read before `start` closes its producer's (stale) transaction.
    producers
        .retain(|&p| !txns.aborted.iter().any(|a| a.producer_id == p && (read_from..start).contains(&a.last_offset)));
    producers.sort_unstable();
    producers.dedup();
    Ok(producers)
}

/// The offset of the offset-index entry Kafka reads `segment` from for `start` (the largest at or below it;
/// the segment's base when none is).
fn index_floor(
    store: &dyn SegmentStore,
    segment: &crate::segment::SealedSegment,
    start: u64,
    index_interval: u64,
) -> Result<u64> {
    let base = segment.base();
    let file = name(base, SegmentFile::OffsetIndex, Stage::Live);
    match store.open(&file) {
        Ok(f) => {
            // A sealed segment's index is a few bytes a 4 KiB of data; one larger than the segment is not one.
            let len = f.len().min(segment.size());
            let mut bytes = vec![0u8; len as usize];
            f.read_at(0, &mut bytes).map_err(Error::io("read", &file))?;
            let mut floor = base;
            let mut last = None;
            for (offset, _) in crate::format::kafka::index::read_offset_index(&bytes, base) {
                // Entries rise; a preallocated index's zeros (or damage) end them.
                if last.is_some_and(|l| offset <= l) || offset > start {
                    break;
                }
                floor = offset;
                last = Some(offset);
            }
            Ok(floor)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // As segment recovery rebuilds it: an entry (the batch's last offset) for a batch starting more
            // than `index_interval` bytes after the last entry's.
            let (mut floor, mut last_entry) = (base, 0u64);
            crate::format::kafka::txn::for_each_kafka_header(
                segment.source(),
                segment.name(),
                segment.size(),
                |position, h| {
                    if position.saturating_sub(last_entry) > index_interval {
                        last_entry = position;
                        if let Ok(last) = u64::try_from(h.last_offset())
                            && last <= start
                        {
                            floor = last;
                        }
                    }
                },
            )?;
            Ok(floor)
        }
        Err(e) => Err(Error::io("open", &file)(e)),
    }
}
