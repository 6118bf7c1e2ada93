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
