//! Pass 1: key → latest offset over the dirty section, oldest first, stopping at the first key the map
//! refuses. Keys go to the map in runs of up to [`BATCH`], collected across batches (a whole mapped segment,
//! or a read window, at a time), so that a map can hide memory latency.

use std::sync::Arc;

use log_core::{Placed, SealedSegment};

use crate::error::Result;
use crate::keep::Pass1Txns;
use crate::map::BATCH;
use crate::pass::Pace;

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
/// changed nothing; each batch is checksummed once per pass instead of twice.
///
/// Returns the offset of the first key refused (the pass's end offset), if any, and what was read (counted on
/// `pace`'s progress tally as it is read).
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
    P: for<'k> FnMut(&mut Vec<(&'k [u8], u64)>) -> Option<u64> + ?Sized,
{
    let mut scanned = Scanned::default();
    let mut scratch = Vec::new();
    let mut buf: Vec<(&'static [u8], u64)> = Vec::with_capacity(BATCH);
    for segment in dirty {
        let mut scan = segment.scan_from(checkpoint, false);
        while let Some(window) = scan.next_window()? {
            let mut run: Vec<(&[u8], u64)> = recycle(std::mem::take(&mut buf));
            let mut refused = None;
            // The native format's frames: the batch-of-one fast path.
            if let Some(frames) = window.frames() {
                for item in frames {
                    let frame = item?;
                    let (rec, len) = (frame.record, frame.bytes.len() as u64);
                    if rec.offset < checkpoint {
                        continue;
                    }
                    if rec.offset >= limit {
                        break;
                    }
                    scanned.records += 1;
                    scanned.bytes += len;
                    pace.step(len, 1)?;
                    let Some(key) = rec.key else { continue };
                    run.push((key, rec.offset));
                    if run.len() == BATCH {
                        refused = flush(&mut run, put);
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
                    continue;
                }
                let corrupt = |kind| log_core::Error::Corrupt { segment: segment.name().to_owned(), position, kind };
                if let Some(records) = batch.records_in_place() {
                    for rec in records.map_err(corrupt)? {
                        let rec = rec.map_err(corrupt)?;
                        let Some(key) = rec.key.filter(|_| rec.offset >= checkpoint && rec.offset < limit) else {
                            continue;
                        };
                        run.push((key, rec.offset));
                        if run.len() == BATCH {
                            refused = flush(&mut run, put);
                            if refused.is_some() {
                                break;
                            }
                        }
                    }
                } else {
                    // A compressed batch's keys borrow the scratch buffer: the run so far goes first, then
                    // this batch's keys on their own.
                    refused = flush(&mut run, put);
                    if refused.is_none() {
                        let mut local: Vec<(&[u8], u64)> = Vec::with_capacity(BATCH);
                        for rec in batch.records(&mut scratch).map_err(corrupt)? {
                            let rec = rec.map_err(corrupt)?;
                            let Some(key) = rec.key.filter(|_| rec.offset >= checkpoint && rec.offset < limit) else {
                                continue;
                            };
                            local.push((key, rec.offset));
                            if local.len() == BATCH {
                                refused = flush(&mut local, put);
                                if refused.is_some() {
                                    break;
                                }
                            }
                        }
                        if refused.is_none() {
                            refused = flush(&mut local, put);
                        }
                    }
                }
                if refused.is_some() {
                    break;
                }
            }
            if refused.is_none() {
                refused = flush(&mut run, put);
            }
            buf = recycle(run);
            if let Some(r) = refused {
                return Ok((Some(r), scanned));
            }
        }
    }
    Ok((None, scanned))
}

/// Hands `run` to `put`; the offset of the first key refused, if any.
#[inline]
fn flush<P>(run: &mut Vec<(&[u8], u64)>, put: &mut P) -> Option<u64>
where
    P: for<'k> FnMut(&mut Vec<(&'k [u8], u64)>) -> Option<u64> + ?Sized,
{
    if run.is_empty() {
        return None;
    }
    let refused = put(run);
    run.clear();
    refused
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
