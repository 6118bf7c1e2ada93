//! The keep rule: what pass 2 does with one record, and with one batch once its records are judged. The one
//! place these rules live: both segment formats (this project's frames, Kafka's batches) are judged by them.

use log_core::BatchRef;
use log_core::txn::{MarkerType, TxnState};

use crate::map::Probes;

/// The most batches pass 1 notes as left unmapped for pass 2 to judge by key ([`Pass1Txns::take_unmapped`]; 16
/// bytes each: 1 MiB); past it the superseded offsets are given up for the map ([`crate::superseded`]).
pub(crate) const MAX_UNMAPPED: usize = 1 << 16;

/// What pass 2 needs to judge a record, fixed for the whole pass.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Judge {
    /// Records at or past this offset were not mapped: kept (see `judge_past_end` for their batches).
    pub(crate) end_offset: u64,
    /// Judge the batches at or past the end offset (but below the last stable offset) as Kafka's cleaner
    /// does, rewriting the segment holding the end offset whole: an aborted batch goes, a marker follows the
    /// marker rule, and a batch keeping a tombstone without a delete horizon gets one; every record is kept.
    /// True for Kafka's format; the native format copies those batches as they are (a later pass judges them).
    pub(crate) judge_past_end: bool,
    /// Kafka's `upperBoundOffsetOfCleaningRound` (the first uncleanable offset): the batch that ends there is
    /// kept, emptied if need be, so that the round's last offset is not lost (`None` for the native format).
    pub(crate) round_end: Option<u64>,
    /// Kafka's last stable offset: a batch at or past it is kept as it is, even below the checkpoint (an open
    /// transaction's records may yet be aborted). The log end for the native format.
    pub(crate) last_stable_offset: u64,
    /// The pass's clock.
    pub(crate) now: i64,
    /// The delete horizon a tombstone kept for the first time gets.
    pub(crate) horizon: i64,
    /// Drop every tombstone whose horizon is set, passed or not.
    pub(crate) purge: bool,
    /// Tombstones and markers at or past this offset stay whatever their horizon ([`PassOptions::removal_floor`];
    /// `u64::MAX` for Kafka's rule).
    ///
    /// [`PassOptions::removal_floor`]: crate::PassOptions::removal_floor
    pub(crate) removal_floor: u64,
    /// The largest record a compressed batch may hold (`max.decompressed.message.bytes`).
    pub(crate) max_record_bytes: u64,
}

/// What the rule looks at in a record, whatever its segment format.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Facts {
    pub(crate) offset: u64,
    pub(crate) keyed: bool,
    pub(crate) tombstone: bool,
    pub(crate) delete_horizon: Option<i64>,
}

/// What pass 2 does with one record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Keep,
    /// Keep, with this delete horizon (a tombstone kept for the first time).
    Stamp(i64),
    Drop,
}

/// What pass 2 counted (per thread, then summed).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CopyCounts {
    pub(crate) segments_read: u64,
    pub(crate) batches_read: u64,
    pub(crate) records_read: u64,
    pub(crate) bytes_read: u64,
    pub(crate) records_kept: u64,
    pub(crate) bytes_kept: u64,
    pub(crate) batches_copied: u64,
    pub(crate) batches_rewritten: u64,
    pub(crate) batches_removed: u64,
    pub(crate) empty_batches_kept: u64,
    pub(crate) control_batches_kept: u64,
    pub(crate) markers_stamped: u64,
    pub(crate) markers_removed: u64,
    pub(crate) aborted_batches_removed: u64,
    pub(crate) aborted_records_removed: u64,
    pub(crate) tombstones_kept: u64,
    pub(crate) tombstones_stamped: u64,
    pub(crate) tombstones_dropped: u64,
    pub(crate) stale_dropped: u64,
    pub(crate) invalid_records: u64,
    pub(crate) probes: Probes,
}

impl CopyCounts {
    pub(crate) fn add(&mut self, o: &CopyCounts) {
        self.segments_read += o.segments_read;
        self.batches_read += o.batches_read;
        self.records_read += o.records_read;
        self.bytes_read += o.bytes_read;
        self.records_kept += o.records_kept;
        self.bytes_kept += o.bytes_kept;
        self.batches_copied += o.batches_copied;
        self.batches_rewritten += o.batches_rewritten;
        self.batches_removed += o.batches_removed;
        self.empty_batches_kept += o.empty_batches_kept;
        self.control_batches_kept += o.control_batches_kept;
        self.markers_stamped += o.markers_stamped;
        self.markers_removed += o.markers_removed;
        self.aborted_batches_removed += o.aborted_batches_removed;
        self.aborted_records_removed += o.aborted_records_removed;
        self.tombstones_kept += o.tombstones_kept;
        self.tombstones_stamped += o.tombstones_stamped;
        self.tombstones_dropped += o.tombstones_dropped;
        self.stale_dropped += o.stale_dropped;
        self.invalid_records += o.invalid_records;
        self.probes.lookups += o.probes.lookups;
        self.probes.probes += o.probes.probes;
    }
}

/// Pass 2's rule for one record, given the offset the map holds for its key (`None` when the record is at or
/// beyond the end offset, has no key, or its key was not mapped).
pub(crate) fn verdict(rec: Facts, mapped: Option<u64>, judge: Judge, counts: &mut CopyCounts) -> Verdict {
    if rec.offset >= judge.end_offset {
        // Not mapped, so kept; Kafka's cleaner still stamps the batch of a tombstone there.
        if judge.judge_past_end && rec.tombstone && rec.delete_horizon.is_none() {
            counts.tombstones_kept += 1;
            counts.tombstones_stamped += 1;
            return Verdict::Stamp(judge.horizon);
        }
        return Verdict::Keep;
    }
    if !rec.keyed {
        counts.invalid_records += 1;
        return Verdict::Drop;
    }
    if mapped.is_some_and(|latest| rec.offset < latest) {
        counts.stale_dropped += 1;
        return Verdict::Drop;
    }
    if !rec.tombstone {
        return Verdict::Keep;
    }
    match rec.delete_horizon {
        Some(h) if (judge.purge || judge.now >= h) && rec.offset < judge.removal_floor => {
            counts.tombstones_dropped += 1;
            Verdict::Drop
        }
        Some(_) => {
            counts.tombstones_kept += 1;
            Verdict::Keep
        }
        None => {
            counts.tombstones_kept += 1;
            counts.tombstones_stamped += 1;
            Verdict::Stamp(judge.horizon)
        }
    }
}

/// True for a batch pass 2 keeps whole without judging its records: one at or past Kafka's last stable
/// offset, and one that starts at or beyond the end offset (never mapped) unless [`Judge::judge_past_end`].
pub(crate) fn kept_whole(batch: &BatchRef<'_>, judge: &Judge) -> bool {
    batch.base_offset >= judge.last_stable_offset || (!judge.judge_past_end && batch.base_offset >= judge.end_offset)
}

/// True for a Kafka data batch of an aborted transaction (`txns`, derived from the partition's markers):
/// pass 1 never maps its keys and pass 2 removes it whatever its keys, as Kafka's cleaner does. A committed
/// transactional batch is judged record by record like any other.
pub(crate) fn is_aborted(batch: &BatchRef<'_>, txns: &TxnState) -> bool {
    batch.is_transactional()
        && !batch.is_control()
        && batch.producer_id().is_some_and(|p| txns.is_aborted(p, batch.base_offset))
}

/// True for a batch pass 1 maps the keys of: any but Kafka's control batches and aborted batches.
pub(crate) fn mapped_by_pass1(batch: &BatchRef<'_>, txns: &TxnState) -> bool {
    !batch.is_control() && !is_aborted(batch, txns)
}

/// Pass 1's transactional view from its first dirty offset on: [`mapped_by_pass1`], and, as Kafka's cleaner
/// reads a pass that starts inside a segment, the transactional batches of the producers
/// [`log_core::Format::producers_read_as_aborted`] names left unmapped until each one's next ABORT marker.
pub(crate) struct Pass1Txns<'a> {
    txns: &'a TxnState,
    /// The pass's first dirty offset: batches before it were accounted for in `read_as_aborted`.
    start: u64,
    /// Producers read as aborted until their next ABORT marker (a few at most).
    read_as_aborted: Vec<i64>,
    /// The offset ranges (first, last) of the batches left unmapped as read aborted, in offset order, up to
    /// [`MAX_UNMAPPED`]: pass 2 judges their records by key (they are not aborted to it), so it asks the map
    /// for them ([`crate::superseded`]).
    unmapped: Vec<(u64, u64)>,
    /// More batches than [`MAX_UNMAPPED`] were left unmapped so.
    unmapped_overflowed: bool,
}

impl<'a> Pass1Txns<'a> {
    pub(crate) fn new(txns: &'a TxnState, start: u64, read_as_aborted: Vec<i64>) -> Self {
        Pass1Txns { txns, start, read_as_aborted, unmapped: Vec::new(), unmapped_overflowed: false }
    }

    /// The offset ranges of the data batches [`Pass1Txns::maps`] left unmapped as read aborted (pass 2 judges
    /// them by key), or `None` when there were more than [`MAX_UNMAPPED`].
    pub(crate) fn take_unmapped(&mut self) -> Option<Vec<(u64, u64)>> {
        let unmapped = std::mem::take(&mut self.unmapped);
        (!self.unmapped_overflowed).then_some(unmapped)
    }

    /// True when pass 1 maps `batch`'s keys; call it for every batch in offset order, control batches
    /// included (an ABORT marker ends its producer's reading as aborted).
    pub(crate) fn maps(&mut self, batch: &BatchRef<'_>) -> bool {
        if !self.read_as_aborted.is_empty()
            && batch.last_offset >= self.start
            && let Some(producer) = batch.producer_id()
        {
            if batch.is_control() {
                if self.txns.aborted_at(batch.base_offset).is_some() {
                    self.read_as_aborted.retain(|&p| p != producer);
                }
            } else if batch.is_transactional() && self.read_as_aborted.contains(&producer) {
                if mapped_by_pass1(batch, self.txns) {
                    if self.unmapped.len() < MAX_UNMAPPED {
                        self.unmapped.push((batch.base_offset, batch.last_offset));
                    } else {
                        self.unmapped_overflowed = true;
                    }
                }
                return false;
            }
        }
        mapped_by_pass1(batch, self.txns)
    }
}

/// True when a transaction marker may go (first stamped with a delete horizon, removed by a later pass once
/// it has passed, as a tombstone is): no data batch of its transaction is left in the log (`txns`, from the
/// pass's snapshot). Kafka's cleaner (`CleanedTransactionMetadata`) keeps a marker while the group being
/// cleaned held a batch of its transaction; this rule keeps it while any batch of it is anywhere, which is the
/// same where a transaction lies in one group and stricter where it spans groups: a marker removed before its
/// batches would make them read as part of the producer's next transaction (or as an open one) to anyone who
/// rebuilds the state from the batches. The aborted data goes in the pass that reads it, so an ABORT marker
/// outlives its data by one pass, as in Kafka.
pub(crate) fn marker_may_go(batch: &BatchRef<'_>, kind: MarkerType, txns: &TxnState) -> bool {
    let Some(p) = batch.producer_id() else { return false };
    !matches!(kind, MarkerType::Other(_)) && !txns.has_data(p, batch.base_offset)
}

/// What becomes of a marker at `offset` that may go: stamped with the pass's horizon the first time, removed
/// once its horizon has passed (or at once, purging) and every replica cleaned past it ([`Judge::removal_floor`]),
/// kept while not.
pub(crate) fn marker_decision(horizon: Option<i64>, offset: u64, judge: &Judge) -> BatchDecision {
    match horizon {
        Some(h) if (judge.purge || judge.now >= h) && offset < judge.removal_floor => BatchDecision::Remove,
        Some(_) => BatchDecision::Copy,
        None => BatchDecision::Rewrite { horizon: Some(judge.horizon) },
    }
}

/// What becomes of a batch once its records are judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BatchDecision {
    /// Copied as its bytes are.
    Copy,
    /// Rewritten holding the kept records, with this delete horizon.
    Rewrite { horizon: Option<i64> },
    /// Gone.
    Remove,
}

/// What becomes of `batch` given how many of its records were kept and whether a kept tombstone needs a
/// delete horizon. A Kafka batch that loses every record still stays, a bare header, where Kafka keeps it
/// (`keeps_empty`): its producer's last batch (the producer's sequence and epoch are read from it), and the
/// batch that ends the cleaning round.
pub(crate) fn batch_decision(
    batch: &BatchRef<'_>,
    kept: usize,
    stamp: Option<i64>,
    keeps_empty: bool,
) -> BatchDecision {
    let all = kept as u64 == batch.record_count;
    match (all, stamp) {
        // An empty batch kept earlier goes too once nothing keeps it, as in Kafka's cleaner.
        _ if kept == 0 && !keeps_empty => BatchDecision::Remove,
        (true, None) => BatchDecision::Copy,
        _ => BatchDecision::Rewrite { horizon: batch.delete_horizon.or(stamp) },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge(removal_floor: u64) -> Judge {
        Judge {
            end_offset: 100,
            judge_past_end: true,
            round_end: None,
            last_stable_offset: 100,
            now: 1_000,
            horizon: 2_000,
            purge: false,
            removal_floor,
            max_record_bytes: u64::MAX,
        }
    }

    #[test]
    fn a_marker_at_or_past_the_removal_floor_outlives_its_horizon() {
        // Kafka's rule (no floor): a marker whose horizon passed goes; one not stamped yet is stamped.
        assert_eq!(marker_decision(Some(500), 10, &judge(u64::MAX)), BatchDecision::Remove);
        assert_eq!(marker_decision(None, 10, &judge(u64::MAX)), BatchDecision::Rewrite { horizon: Some(2_000) });
        assert_eq!(marker_decision(Some(1_500), 10, &judge(u64::MAX)), BatchDecision::Copy, "horizon not passed");
        // Replica-safe: below the floor it goes; at or past it, it stays (a replica has not cleaned past it).
        assert_eq!(marker_decision(Some(500), 9, &judge(10)), BatchDecision::Remove);
        assert_eq!(marker_decision(Some(500), 10, &judge(10)), BatchDecision::Copy);
        assert_eq!(marker_decision(Some(500), 50, &judge(10)), BatchDecision::Copy);
    }
}
