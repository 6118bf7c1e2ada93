//! What completing a pending cleaning swap would remove, and the proof that a cleaning pass could have removed
//! it: the one place this rule lives, for both segment formats (a Kafka `.log.swap`, a native `.log.swap`
//! holding a segment or a removal marker).
//!
//! Recovery completes a committed swap without the pass that wrote it, so before it does, the swap must be
//! something the protocol writes:
//!
//! - **A subset.** A swap that puts a segment in place holds only offsets the segments it replaces hold: a
//!   pass copies records, it never makes one up.
//! - **Only what a pass may drop.** Every record of the replaced segments that is not kept (in the swap, or,
//!   for a native group's removal marker, in the group's head before it) is one the keep rule
//!   (`cleaner/src/keep.rs`) may drop: a record without a key; a tombstone or transaction marker whose batch
//!   carries a delete horizon (only a pass that kept it before stamps one); data of an aborted transaction;
//!   or a record of a key with a later record in the replaced segments, in a `.deleted` segment of the same
//!   pass, or in a segment after the swap's range (the active segment included). So an empty or zero-filled
//!   `.swap` over a segment holding the latest record of a key, or a checksummed one whose range swallows
//!   records of the next segment, is refused.
//!
//! Anything else is corruption naming the `.swap` file, found before anything changes; `repair` sets such a
//! swap aside and keeps the segments it would have replaced.
//!
//! Memory: the offsets of one batch of the swap, and for each key whose removed records still wait for a later
//! record a 16-byte digest (SipHash with keys drawn for the run, so a crafted file cannot aim at a collision)
//! and an offset, at most [`MAX_PENDING_KEYS`]; a swap removing the latest records of more keys is refused as
//! unprovable, never completed on trust. Time: the replaced segments are read twice and the segments after the
//! range once, only while keys wait.

use std::collections::HashMap;
use std::hash::BuildHasher;

use crate::batch::{BatchRef, Format};
use crate::error::{CorruptKind, Error, Result};
use crate::kafka::txn::{SegmentTxns, TxnState};
use crate::record::RecordRef;
use crate::scan::{SegmentScan, SegmentSource, batch_bytes_at};
use crate::segment::SealedSegment;

/// Keys whose removed records may wait for a later record at once (about 40 MiB of map); a swap needing more
/// is refused as unprovable ([`CorruptKind::SwapUnprovable`]).
pub const MAX_PENDING_KEYS: usize = 1 << 20;

/// Ranges of removed offsets kept for a report; the rest are counted.
pub const SHOWN_RANGES: usize = 16;

/// The offsets completing a pending swap removes.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RemovedOffsets {
    /// The first [`SHOWN_RANGES`] ranges `(first, last)` of removed offsets, in order.
    pub ranges: Vec<(u64, u64)>,
    /// Ranges in all.
    pub range_count: u64,
    /// Records removed.
    pub records: u64,
    /// The last offset added.
    #[serde(skip)]
    last: Option<u64>,
}

impl RemovedOffsets {
    fn add(&mut self, offset: u64) {
        self.records += 1;
        let extends = self.last.is_some_and(|l| l.checked_add(1) == Some(offset));
        if !extends {
            self.range_count += 1;
            if self.ranges.len() < SHOWN_RANGES {
                self.ranges.push((offset, offset));
            }
        } else if self.range_count as usize == self.ranges.len()
            && let Some(r) = self.ranges.last_mut()
        {
            r.1 = offset;
        }
        self.last = Some(offset);
    }

    /// The ranges as text: `3-7, 12, ...and 4 more ranges`.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> =
            self.ranges.iter().map(|&(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") }).collect();
        let more = self.range_count.saturating_sub(self.ranges.len() as u64);
        if more > 0 {
            parts.push(format!("...and {more} more ranges"));
        }
        if parts.is_empty() { "none".to_owned() } else { parts.join(", ") }
    }
}

/// One pending swap's effect, proven possible: the `.swap` file and what completing it removes.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SwapEffect {
    /// The `.swap` file.
    pub file: String,
    /// The offsets it removes.
    pub removed: RemovedOffsets,
}

/// The bytes of one segment file, read through its batches.
#[derive(Debug, Clone)]
pub(crate) struct Part {
    pub(crate) name: String,
    pub(crate) source: SegmentSource,
    /// Where its data ends.
    pub(crate) end: u64,
}

impl Part {
    pub(crate) fn of(segment: &SealedSegment) -> Part {
        Part { name: segment.name().to_owned(), source: segment.source().clone(), end: segment.size() }
    }

    /// A file that may not be sealed (the active segment): read through reads, to its length.
    pub(crate) fn reads(name: &str, file: &std::sync::Arc<dyn crate::storage::Segment>) -> Part {
        Part { name: name.to_owned(), source: SegmentSource::Reads(std::sync::Arc::clone(file)), end: file.len() }
    }
}

/// A pending swap to prove.
#[derive(Debug)]
pub(crate) struct Claim<'a> {
    pub(crate) format: Format,
    /// The `.swap` file (errors name it).
    pub(crate) file: &'a str,
    /// The offsets `[from, to)` it replaces: a removal marker's `kept` records count only inside it. Every
    /// record of `originals` goes unless kept, whatever its offset.
    pub(crate) range: (u64, u64),
    /// Records kept of the range: the swap's own segment (which must be a subset of `originals`), or, for a
    /// native removal marker, the segment before it (a group's head, which holds what the group kept).
    pub(crate) kept: Option<Part>,
    /// True when `kept` is the swap's own segment, whose every offset must be one of `originals`.
    pub(crate) kept_is_output: bool,
    /// The segment files of the range (live or `.deleted`), in base order.
    pub(crate) originals: &'a [Part],
    /// Where a later record of a removed record's key may be: `.deleted` segments of the same pass after the
    /// range, and the segments that stay after it (the active one included), in base order.
    pub(crate) later: &'a [Part],
}

/// The 16-byte digest of a key.
#[derive(Debug)]
struct Digest(std::hash::RandomState, std::hash::RandomState);

impl Digest {
    fn new() -> Digest {
        Digest(std::hash::RandomState::new(), std::hash::RandomState::new())
    }

    fn of(&self, key: &[u8]) -> u128 {
        (u128::from(self.0.hash_one(key)) << 64) | u128::from(self.1.hash_one(key))
    }
}

/// Proves `claim` (see the module docs) and returns the offsets completing it removes.
///
/// # Errors
/// [`Error::Corrupt`] naming the `.swap` file: [`CorruptKind::SwapNotFromItsSegments`],
/// [`CorruptKind::SwapRemovesLatest`], [`CorruptKind::SwapUnprovable`]; damage of an original names that file;
/// [`Error::Io`].
pub(crate) fn prove(claim: &Claim<'_>) -> Result<RemovedOffsets> {
    let corrupt = |kind| Error::Corrupt { segment: claim.file.to_owned(), position: 0, kind };
    let (from, to) = claim.range;
    let txns = transactions(claim)?;
    let digest = Digest::new();
    let mut removed = RemovedOffsets::default();
    // Key digest → the largest offset of a removed record of that key that needs a later record.
    let mut waiting: HashMap<u128, u64> = HashMap::new();
    let mut kept = claim.kept.as_ref().map(|p| Cursor::new(claim.format, p, from, to));
    let mut previous: Option<u64> = None;
    for part in claim.originals {
        for_each_record(claim.format, part, true, |batch, rec| {
            if previous.is_some_and(|p| rec.offset <= p) {
                let kind = CorruptKind::OffsetNotIncreasing { previous: previous.unwrap_or(0), found: rec.offset };
                return Err(Error::Corrupt { segment: part.name.clone(), position: 0, kind });
            }
            previous = Some(rec.offset);
            let mut is_kept = false;
            if let Some(cursor) = kept.as_mut() {
                while let Some(k) = cursor.peek()? {
                    if k > rec.offset {
                        break;
                    }
                    cursor.advance();
                    if k == rec.offset {
                        is_kept = true;
                        break;
                    }
                    if claim.kept_is_output {
                        return Err(corrupt(CorruptKind::SwapNotFromItsSegments { offset: k }));
                    }
                }
            }
            if is_kept {
                return Ok(());
            }
            removed.add(rec.offset);
            if !droppable_alone(batch, rec, txns.as_ref()) {
                let key = rec.key.unwrap_or_default();
                let at = waiting.entry(digest.of(key)).or_insert(rec.offset);
                *at = (*at).max(rec.offset);
                if waiting.len() > MAX_PENDING_KEYS {
                    return Err(corrupt(CorruptKind::SwapUnprovable { keys: MAX_PENDING_KEYS as u64 }));
                }
            }
            Ok(())
        })?;
    }
    if let Some(cursor) = kept.as_mut()
        && claim.kept_is_output
        && let Some(k) = cursor.peek()?
    {
        return Err(corrupt(CorruptKind::SwapNotFromItsSegments { offset: k }));
    }
    // A later record of each waiting key, in the replaced segments or after them.
    for (part, is_original) in claim.originals.iter().map(|p| (p, true)).chain(claim.later.iter().map(|p| (p, false))) {
        if waiting.is_empty() {
            break;
        }
        let walked = for_each_record(claim.format, part, true, |batch, rec| {
            if shadows(batch, txns.as_ref())
                && let Some(key) = rec.key
            {
                let d = digest.of(key);
                if waiting.get(&d).is_some_and(|&at| rec.offset > at) {
                    waiting.remove(&d);
                }
            }
            Ok(())
        });
        // Damage in a segment after the range (a torn tail of the active segment) ends what it can show; the
        // open reports damage of a closed segment on its own.
        if is_original {
            walked?;
        }
    }
    if let Some(&offset) = waiting.values().min() {
        return Err(corrupt(CorruptKind::SwapRemovesLatest { offset }));
    }
    Ok(removed)
}

/// True for a removed record no later record needs to stand behind: no key, a tombstone or marker whose batch
/// carries a delete horizon, data of an aborted transaction.
fn droppable_alone(batch: &BatchRef<'_>, rec: &RecordRef<'_>, txns: Option<&TxnState>) -> bool {
    if batch.is_control() {
        return batch.delete_horizon.is_some();
    }
    if aborted(batch, txns) {
        return true;
    }
    rec.key.is_none() || (rec.is_tombstone() && rec.delete_horizon.is_some())
}

/// True for a batch whose records a pass's first pass maps, so they shadow older records of their keys.
fn shadows(batch: &BatchRef<'_>, txns: Option<&TxnState>) -> bool {
    !batch.is_control() && !aborted(batch, txns)
}

fn aborted(batch: &BatchRef<'_>, txns: Option<&TxnState>) -> bool {
    batch.is_transactional()
        && !batch.is_control()
        && batch.producer_id().zip(txns).is_some_and(|(p, t)| t.is_aborted(p, batch.base_offset))
}

/// The transaction state of the replaced segments and those after them, for a Kafka claim whose originals hold
/// transactional data (`None` otherwise).
fn transactions(claim: &Claim<'_>) -> Result<Option<TxnState>> {
    if claim.format != Format::Kafka {
        return Ok(None);
    }
    let mut segments = Vec::new();
    for p in claim.originals {
        segments.push(SegmentTxns::scan(&p.source, &p.name, p.end)?);
    }
    let has_data =
        segments.iter().any(|s| s.events.iter().any(|e| matches!(e, crate::kafka::txn::TxnEvent::Data { .. })));
    if !has_data {
        return Ok(None);
    }
    for p in claim.later {
        // A segment after the range that does not walk (a torn tail) adds what it can: nothing.
        segments.push(SegmentTxns::scan(&p.source, &p.name, p.end).unwrap_or_default());
    }
    Ok(Some(TxnState::fold(segments.iter(), u64::MAX)))
}

/// Calls `f` with every record of `part` and its batch, in order, checksums verified.
fn for_each_record(
    format: Format,
    part: &Part,
    verify: bool,
    mut f: impl FnMut(&BatchRef<'_>, &RecordRef<'_>) -> Result<()>,
) -> Result<()> {
    let mut scan = SegmentScan::new(format, &part.name, &part.source, 0, part.end, verify);
    let mut scratch = Vec::new();
    while let Some(window) = scan.next_window()? {
        for placed in window.batches() {
            let placed = placed?;
            let corrupt = |kind| Error::Corrupt { segment: part.name.clone(), position: placed.position, kind };
            for rec in placed.batch.records(&mut scratch).map_err(corrupt)? {
                f(&placed.batch, &rec.map_err(corrupt)?)?;
            }
        }
    }
    Ok(())
}

/// The offsets in `[from, to)` of a segment's records, pulled one at a time; one batch's offsets are held.
struct Cursor<'a> {
    format: Format,
    part: &'a Part,
    from: u64,
    to: u64,
    pos: u64,
    buf: Vec<u8>,
    scratch: Vec<u8>,
    offsets: Vec<u64>,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn new(format: Format, part: &'a Part, from: u64, to: u64) -> Cursor<'a> {
        Cursor { format, part, from, to, pos: 0, buf: Vec::new(), scratch: Vec::new(), offsets: Vec::new(), at: 0 }
    }

    /// The next offset, without taking it.
    fn peek(&mut self) -> Result<Option<u64>> {
        while self.at == self.offsets.len() {
            let Cursor { format, part, from, to, pos, buf, scratch, offsets, at } = self;
            let Some(bytes) = batch_bytes_at(*format, &part.name, &part.source, *pos, part.end, buf)? else {
                return Ok(None);
            };
            if format.is_zero_header(bytes) {
                return Ok(None);
            }
            let corrupt = |kind| Error::Corrupt { segment: part.name.clone(), position: *pos, kind };
            let batch = format.parse(bytes, true).map_err(corrupt)?;
            offsets.clear();
            *at = 0;
            for rec in batch.records(scratch).map_err(corrupt)? {
                let o = rec.map_err(corrupt)?.offset;
                if (*from..*to).contains(&o) {
                    offsets.push(o);
                }
            }
            *pos += batch.len() as u64;
        }
        Ok(self.offsets.get(self.at).copied())
    }

    fn advance(&mut self) {
        self.at += 1;
    }
}
