//! Pass 1: key → latest offset over the dirty section, oldest first, stopping at the first key the map
//! refuses. Keys go to the map in runs of up to [`BATCH`], collected across batches (a whole mapped segment,
//! or a read window, at a time), so that a map can hide memory latency.

use std::sync::Arc;

use log_core::{Placed, SealedSegment};

use crate::error::Result;
use crate::keep::Pass1Txns;
use crate::map::BATCH;
use crate::offset_order::OffsetOrder;
use crate::pace::Pace;

/// What a scan of the dirty section counted.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Scanned {
    pub(crate) records: u64,
    pub(crate) bytes: u64,
}

/// Maps the dirty section: every keyed record from `checkpoint` up to `limit` in `dirty`, handed to `put` in
/// runs, leaving out Kafka's control batches and the batches of aborted transactions
/// (`txns`), so that an aborted key never shadows a committed one. Nothing at or past `limit` (the first
/// uncleanable offset: a segment's base at or below Kafka's last stable offset, or the checkpoint) is mapped: an
/// open transaction's records may yet be aborted.
/// Checksums are not computed here: pass 2 reads every batch this pass reads (they all lie below the end
/// offset) and verifies it before anything is committed, so a damaged batch still fails the pass, having
/// changed nothing; each batch is checksummed once per pass instead of twice. Offsets are checked: a record out
/// of offset order fails the pass here ([`OffsetOrder`]), since no checksum covers a Kafka batch's base offset
/// and pass 2 asks the offsets a put superseded by offset.
///
/// Returns the pass's end offset when the map refused a key, and what was read (counted on `pace`'s progress
/// tally as it is read). The end offset is the refused key's for the native format's frames; for Kafka's
/// batches it is where Kafka's cleaner ends a pass ([`BatchEnds`]): after the last batch read whole.
///
/// Generic over the per-run hand-off, so that it is inlined into the scan.
pub(crate) fn map_dirty<P>(
    dirty: &[Arc<SealedSegment>],
    checkpoint: u64,
    limit: u64,
    txns: &mut Pass1Txns<'_>,
    pace: &mut Pace<'_>,
    put: &mut P,
) -> Result<(Option<u64>, Scanned)>
where
    P: for<'k> FnMut(&[(&'k [u8], u64)]) -> usize + ?Sized,
{
    let mut scanned = Scanned::default();
    let mut scratch = Vec::new();
    let mut buf: Vec<(&'static [u8], u64)> = Vec::with_capacity(BATCH);
    let mut ends = BatchEnds::default();
    // Records out of offset order are damage: the offsets the map's puts supersede are asked by offset.
    let mut order = OffsetOrder::new();
    for (i, segment) in dirty.iter().enumerate() {
        if i > 0 {
            ends.next_segment(segment.base());
        }
        order.segment(segment.base(), dirty.get(i + 1).map(|s| s.base()));
        let at = |position| move |kind| log_core::Error::Corrupt { segment: segment.name().to_owned(), position, kind };
        let mut scan = segment.scan_from(checkpoint, false);
        while let Some(window) = scan.next_window()? {
            let mut run: Vec<(&[u8], u64)> = recycle(std::mem::take(&mut buf));
            let mut refused = None;
            // The native format's frames: the batch-of-one fast path.
            // Offsets and keys only: pass 2 reads every frame whole, checksum included, before the pass commits.
            if let Some(mut frames) = window.frames() {
                loop {
                    let position = frames.position();
                    let Some(item) = frames.next_key() else { break };
                    let frame = item?;
                    let (offset, len) = (frame.offset, frame.len as u64);
                    order.check(offset).map_err(at(position))?;
                    if offset < checkpoint {
                        continue;
                    }
                    if offset >= limit {
                        break;
                    }
                    scanned.records += 1;
                    scanned.bytes += len;
                    pace.step(len, 1)?;
                    let Some(key) = frame.key else { continue };
                    run.push((key, offset));
                    if run.len() == BATCH {
                        refused = flush(&mut run, put, &mut ends);
                        if refused.is_some() {
                            break;
                        }
                    }
                }
            }
            let batches = if window.frames().is_some() { None } else { Some(window.batches()) };
            for item in batches.into_iter().flatten() {
                let Placed { batch, position } = item?;
                if batch.last_offset < checkpoint {
                    continue;
                }
                if batch.base_offset >= limit {
                    break;
                }
                scanned.records += batch.record_count;
                scanned.bytes += batch.len() as u64;
                pace.step(batch.len() as u64, batch.record_count)?;
                if !txns.maps(&batch) {
                    ends.read_whole(batch.last_offset);
                    continue;
                }
                ends.enter(batch.base_offset);
                let corrupt = at(position);
                if let Some(records) = batch.records_in_place() {
                    // Keys only: pass 2 reads every record whole (and verifies its batch) before anything is written.
                    let mut records = records.map_err(corrupt)?;
                    while let Some(rec) = records.next_key() {
                        let (offset, key) = rec.map_err(corrupt)?;
                        order.check(offset).map_err(corrupt)?;
                        let Some(key) = key.filter(|_| offset >= checkpoint && offset < limit) else {
                            continue;
                        };
                        run.push((key, offset));
                        if run.len() == BATCH {
                            refused = flush(&mut run, put, &mut ends);
                            if refused.is_some() {
                                break;
                            }
                        }
                    }
                } else {
                    // A compressed batch's keys borrow the scratch buffer: the run so far goes first, then
                    // this batch's keys on their own.
                    refused = flush(&mut run, put, &mut ends);
                    if refused.is_none() {
                        let mut local: Vec<(&[u8], u64)> = Vec::with_capacity(BATCH);
                        let mut records = batch.records(&mut scratch).map_err(corrupt)?;
                        while let Some(rec) = records.next_key() {
                            let (offset, key) = rec.map_err(corrupt)?;
                            order.check(offset).map_err(corrupt)?;
                            let Some(key) = key.filter(|_| offset >= checkpoint && offset < limit) else {
                                continue;
                            };
                            local.push((key, offset));
                            if local.len() == BATCH {
                                refused = flush(&mut local, put, &mut ends);
                                if refused.is_some() {
                                    break;
                                }
                            }
                        }
                        if refused.is_none() {
                            refused = flush(&mut local, put, &mut ends);
                        }
                    }
                }
                if refused.is_some() {
                    break;
                }
                ends.read_whole(batch.last_offset);
            }
            if refused.is_none() {
                refused = flush(&mut run, put, &mut ends);
            }
            buf = recycle(run);
            if let Some(r) = refused {
                return Ok((Some(ends.end(r, checkpoint)), scanned));
            }
        }
    }
    Ok((None, scanned))
}

/// Hands `run` to `put` (which returns how many of its keys, in order, the map took); the offset of the first
/// key refused, if any.
#[inline]
fn flush<P>(run: &mut Vec<(&[u8], u64)>, put: &mut P, ends: &mut BatchEnds) -> Option<u64>
where
    P: for<'k> FnMut(&[(&'k [u8], u64)]) -> usize + ?Sized,
{
    if run.is_empty() {
        return None;
    }
    let taken = put(run);
    if let Some(&(_, offset)) = taken.checked_sub(1).and_then(|last| run.get(last)) {
        ends.last_put = Some(offset);
    }
    let refused = run.get(taken).map(|&(_, offset)| offset);
    run.clear();
    if refused.is_none() {
        ends.handed();
    }
    refused
}

/// Where a pass over Kafka's batches ends when the map refuses a key: where Kafka's cleaner ends it
/// (`Cleaner.buildOffsetMap`: the end offset is the map's latest offset plus one, which every put moves to
/// the offset put, every batch read whole to its last offset, and every segment read whole to the next
/// segment's base less one). With keyed records that is the refused record's own offset, unless it is the
/// first of its batch, where it is the offset after the batch before (lower where a pass removed batches
/// between them). The keys of the refused record's batch the map took stay mapped, so pass 2 keeps those
/// records (they lie past the end offset) and drops the older records of their keys, as Kafka's does.
#[derive(Debug, Default)]
struct BatchEnds {
    /// The offset after the last batch read whole, or the base of the segment being read (none yet: the
    /// first batch read).
    read_to: Option<u64>,
    /// The offset of the last key the map took.
    last_put: Option<u64>,
    /// `(base offset, read_to when it was entered)` of the batches whose keys may still be refused: the
    /// batch being read and those whose keys wait in the run (the run holds at most [`BATCH`] keys).
    open: Vec<(u64, Option<u64>)>,
}

impl BatchEnds {
    /// A mapped batch starts.
    fn enter(&mut self, base_offset: u64) {
        self.open.push((base_offset, self.read_to));
    }

    /// A batch (mapped or not) was read to its end.
    fn read_whole(&mut self, last_offset: u64) {
        self.read_to = Some(last_offset.saturating_add(1));
    }

    /// The previous segment was read to its end; the next starts at `base`.
    fn next_segment(&mut self, base: u64) {
        self.read_to = Some(base);
    }

    /// The run was taken whole: only the batch being read (the last entered) may still see a key refused.
    fn handed(&mut self) {
        let done = self.open.len().saturating_sub(1);
        self.open.drain(..done);
    }

    /// The end offset for a key refused at `refused`: Kafka's, from where the batch holding it was entered
    /// and the last key taken; `refused` itself where no batch holds it (the native format's frames) or
    /// that would not move past `checkpoint` (a first batch read holding more keys than the map).
    fn end(&self, refused: u64, checkpoint: u64) -> u64 {
        let Some(&(_, read_to)) = self.open.iter().rev().find(|&&(base, _)| base <= refused) else {
            return refused;
        };
        let after_put = self.last_put.filter(|&p| p < refused).map(|p| p + 1);
        read_to.max(after_put).filter(|&end| end > checkpoint).unwrap_or(refused)
    }
}

/// An empty vector of another element type on the same allocation (the standard library collects in place
/// when the layouts match), so per-window vectors of borrowed items cost no allocation.
pub(crate) fn recycle<T, U>(mut v: Vec<T>) -> Vec<U> {
    v.clear();
    v.into_iter().map(|_| unreachable_empty()).collect()
}

fn unreachable_empty<U>() -> U {
    unreachable!("the vector is empty")
}

#[cfg(test)]
mod tests {
    use super::BatchEnds;

    #[test]
    fn a_pass_ends_where_kafkas_cleaner_ends_it() {
        // Batches 100-109 and 110-119 read whole; a key of 120-129 refused at 125 after 120-124 were put.
        let mut ends = BatchEnds::default();
        ends.next_segment(100);
        for (base, last) in [(100, 109), (110, 119)] {
            ends.enter(base);
            ends.read_whole(last);
        }
        ends.enter(120);
        ends.last_put = Some(124);
        assert_eq!(ends.end(125, 100), 125, "inside a batch: the refused key's offset");
        // Refused at the batch's first record: after the batch before, even across a gap a pass made.
        let mut ends = BatchEnds::default();
        ends.enter(100);
        ends.read_whole(109);
        ends.last_put = Some(109);
        ends.enter(130);
        assert_eq!(ends.end(130, 100), 110, "the batch before ends at 109; 110-129 were removed");
        // An unkeyed record before the refused one: after the last key put.
        let mut ends = BatchEnds::default();
        ends.next_segment(200);
        ends.enter(200);
        ends.last_put = Some(203);
        assert_eq!(ends.end(206, 0), 204);
        // A key refused in a batch whose keys wait in the run behind a later batch's.
        let mut ends = BatchEnds::default();
        ends.next_segment(0);
        ends.enter(0);
        ends.read_whole(9);
        ends.enter(10);
        assert_eq!(ends.end(5, 0), 5, "the first batch read: its own key's offset (no progress otherwise)");
        assert_eq!(ends.end(10, 0), 10);
        // No batch holds it (the native format's frames): the refused offset.
        assert_eq!(BatchEnds::default().end(42, 0), 42);
    }
}
