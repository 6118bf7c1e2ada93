//! What a cleaning pass writes beside a Kafka output segment: its `.index`, `.timeindex` and `.txnindex`, each
//! under `.cleaned` until the pass commits.

use crate::cleaning::Cleaning;
use crate::error::{Error, Result};
use crate::format::kafka::index::KafkaIndexFiles;
use crate::names::{SegmentFile, Stage, name};
use crate::segment::SealedSegment;
use crate::txn::{MarkerType, TxnEvent};

/// Writes a Kafka output's `.index.cleaned`, `.timeindex.cleaned` and, when it has entries,
/// `.txnindex.cleaned`: one entry for each aborted transaction whose ABORT marker the output holds and
/// which had data in the log when the pass began (data that goes in this pass: the entry outlives it by one
/// pass, as Kafka's cleaner re-appends an entry only while it reads the transaction's data), in increasing
/// last offset. Each entry is the one the source's `.txnindex` holds, as Kafka's cleaner copies it (its first
/// offset and last stable offset as they were written); where the source has none, the partition's markers
/// give it ([`crate::txn`]), so a source without its `.txnindex` still gets one.
pub(crate) fn write_output_files(cleaning: &Cleaning<'_>, new: &SealedSegment, files: &KafkaIndexFiles) -> Result<()> {
    let log = cleaning.log();
    let base = new.base();
    let txns = cleaning.transactions()?;
    let mut txn = Vec::new();
    if !txns.aborted.is_empty() {
        let markers = log.check(new.transactions())?;
        let aborts: std::collections::HashSet<(i64, u64)> = markers
            .events
            .iter()
            .filter_map(|ev| match *ev {
                TxnEvent::Marker { producer_id, offset, kind: MarkerType::Abort, .. } => Some((producer_id, offset)),
                _ => None,
            })
            .collect();
        // The aborted list is in marker order (increasing last offset): only the output's range is looked at,
        // so a pass is linear in the transactions, not in their product with the groups.
        let from = txns.aborted.partition_point(|e| e.last_offset < base);
        let to = txns.aborted.partition_point(|e| e.last_offset < new.next_offset());
        let mut entries: Vec<&crate::txn::AbortedTxn> = txns.aborted[from..to.max(from)]
            .iter()
            .filter(|e| txns.has_data(e.producer_id, e.last_offset) && aborts.contains(&(e.producer_id, e.last_offset)))
            .collect();
        entries.sort_unstable_by_key(|e| e.last_offset);
        for e in entries {
            // The entry as the source's `.txnindex` holds it, as Kafka's cleaner copies it; one the batches
            // derive where the source had none.
            txns.recorded_entry(e.producer_id, e.last_offset).unwrap_or(e).encode(&mut txn);
        }
    }
    let mut outputs =
        vec![(SegmentFile::OffsetIndex, &files.offset_index[..]), (SegmentFile::TimeIndex, &files.time_index[..])];
    if !txn.is_empty() {
        outputs.push((SegmentFile::TxnIndex, &txn[..]));
    }
    for (file, bytes) in outputs {
        let n = name(base, file, Stage::Cleaned);
        let f = cleaning.create_file(&n)?;
        if !bytes.is_empty() {
            log.check(f.append(bytes).map_err(Error::io("append", &n)))?;
        }
        log.check(f.sync().map_err(Error::io("sync", &n)))?;
        log.check(f.seal().map_err(Error::io("seal", &n)))?;
    }
    Ok(())
}
