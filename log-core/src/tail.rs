//! Telling a torn tail from corruption.
//!
//! A crash can leave the end of the active segment torn: a batch cut short, zero fill (also what a Kafka
//! broker's preallocated segment holds past its data), or garbage where an unsynced write never landed.
//! Whatever a torn write leaves, no whole, valid batch continuing the segment's offsets follows the damage. So
//! a bad batch is a *torn tail* only when no such batch exists after it, and only a torn tail may be cut. A
//! bad batch followed by a valid one is *corruption* (a flipped bit, an overwritten block): the records after
//! it were written and may be the only copy of their keys, so it is an error and nothing is cut.
//!
//! The search is linear in the bytes after the damage: each position is probed cheaply (lengths, version or
//! magic, offsets), and the checksums computed for plausible starts are bounded by [`CHECKSUM_BUDGET`] times
//! the bytes searched. Damage crafted so that more would be needed is reported as corruption (nothing cut):
//! a torn write never looks like that.

use std::io;
use std::sync::Arc;

use crate::error::{CorruptKind, Error, Result};
use crate::format::Format;
use crate::scan::{SegmentScan, SegmentSource};
use crate::segment::{Stamp, SummaryBuilder};
use crate::storage::Segment;

/// A torn tail found at the end of the active segment.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TornTail {
    /// File name of the segment.
    pub segment: String,
    /// Where the valid batches end: the position it is (or would be) cut at.
    pub position: u64,
    /// Bytes from there to the end of the file.
    pub bytes: u64,
    /// What is wrong with the first bad batch.
    #[serde(serialize_with = "display")]
    pub kind: CorruptKind,
}

fn display<S: serde::Serializer>(kind: &CorruptKind, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.collect_str(kind)
}

/// Bytes scanned per read while searching for a valid batch.
const WINDOW_BYTES: usize = 1 << 20;

/// Checksum bytes a search may compute per byte it searches (plus one window): a torn tail of garbage or zeros
/// offers almost no plausible batch start, so this is only ever reached by crafted damage.
pub const CHECKSUM_BUDGET: u64 = 4;

/// What a search for a valid batch found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// A whole, valid batch starts here.
    At(u64),
    /// No valid batch starts in the range.
    None,
    /// Too many plausible starts to check within the budget: treat the damage as corruption.
    TooMany,
}

/// The position of the first whole batch of `format`, with a valid checksum and a base offset above `floor`,
/// that starts in `from..end` of a source read through `read_at`.
///
/// # Errors
/// Errors of `read_at`.
pub fn next_valid_batch(
    format: Format,
    read_at: &dyn Fn(u64, &mut [u8]) -> io::Result<()>,
    from: u64,
    end: u64,
    floor: Option<u64>,
) -> io::Result<Found> {
    let probe = format.probe_bytes();
    let mut budget = CHECKSUM_BUDGET.saturating_mul(end.saturating_sub(from)).saturating_add(WINDOW_BYTES as u64);
    let mut window = Vec::new();
    let mut batch = Vec::new();
    let mut start = from;
    while start < end {
        // Read a window plus enough lookahead to probe every position in it.
        let take = usize::try_from(end - start).unwrap_or(usize::MAX).min(WINDOW_BYTES + probe);
        window.resize(take, 0);
        read_at(start, &mut window)?;
        let last_window = start + take as u64 == end;
        let positions = if last_window { take } else { WINDOW_BYTES };
        for i in 0..positions {
            let at = start + i as u64;
            let Some(len) = window.get(i..).and_then(|head| format.plausible_start(head, end - at, floor)) else {
                continue;
            };
            if len as u64 > budget {
                return Ok(Found::TooMany);
            }
            budget -= len as u64;
            let bytes = match window.get(i..i + len) {
                Some(b) => b,
                None => {
                    batch.resize(len, 0);
                    read_at(at, &mut batch)?;
                    &batch[..]
                }
            };
            if format.parse(bytes, true).is_ok() {
                return Ok(Found::At(at));
            }
        }
        start += positions as u64;
    }
    Ok(Found::None)
}

/// Scans the active segment `name` (based at `base`) from its start. Returns the summary of its valid batches
/// and, when it ends in a torn tail (or a zero fill), where and why.
///
/// # Errors
/// [`Error::CorruptNotTorn`] when valid batches follow a bad one (or a crafted tail would take more than
/// linear time to tell); [`Error::Corrupt`] for a frame of an unknown format version (a record of a newer
/// format is never cut); [`Error::Io`].
pub(crate) fn scan_active(
    format: Format,
    base: u64,
    name: &str,
    file: &Arc<dyn Segment>,
    floor: Option<u64>,
    interval: u64,
) -> Result<(SummaryBuilder, Option<TornTail>)> {
    let mut summary = SummaryBuilder::new(format, base, interval);
    let len = file.len();
    let source = SegmentSource::Reads(Arc::clone(file));
    let mut scan = SegmentScan::new(format, name, &source, 0, len, true);
    let mut bad = None;
    'scan: while let Some(window) = scan.next_window()? {
        for item in window.batches() {
            let placed = match item {
                Ok(p) => p,
                Err(Error::Corrupt { kind, position, .. }) if kind.is_other_format() => {
                    // Not a torn write but data of another format version (a newer frame, a Kafka message set
                    // older than magic 2): refuse rather than cut it away.
                    return Err(Error::Corrupt { segment: name.to_owned(), position, kind });
                }
                Err(Error::Corrupt { kind, position, .. }) => {
                    bad = Some((position, kind));
                    break 'scan;
                }
                Err(e) => return Err(e),
            };
            let (pos, batch) = (placed.position, placed.batch);
            if let Some(previous) = floor.filter(|&f| batch.base_offset <= f) {
                bad = Some((pos, CorruptKind::OffsetNotIncreasing { previous, found: batch.base_offset }));
                break 'scan;
            }
            if let Err(kind) = summary.note(base, Stamp::of(&batch), pos, batch.len() as u64) {
                bad = Some((pos, kind));
                break 'scan;
            }
        }
    }
    let (position, kind) = match (bad, scan.zero_fill()) {
        (Some(b), _) => b,
        (None, Some(at)) => (at, CorruptKind::ZeroFill),
        (None, None) => return Ok((summary, None)),
    };
    drop(scan);
    // A batch continuing the segment has a base offset above the last good one and at or above the base.
    let last_good = summary.summary.last_offset.or(floor).max(base.checked_sub(1));
    let read_at = |pos: u64, out: &mut [u8]| file.read_at(pos, out);
    match next_valid_batch(format, &read_at, position + 1, len, last_good).map_err(Error::io("read", name))? {
        Found::None => {
            Ok((summary, Some(TornTail { segment: name.to_owned(), position, bytes: len - position, kind })))
        }
        Found::At(resumes_at) => Err(Error::CorruptNotTorn { segment: name.to_owned(), position, kind, resumes_at }),
        Found::TooMany => Err(Error::Corrupt { segment: name.to_owned(), position, kind: CorruptKind::AmbiguousTail }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::test_frames as frames;

    fn find(bytes: &[u8], from: u64, floor: Option<u64>) -> Found {
        let read_at = |pos: u64, out: &mut [u8]| {
            let start = usize::try_from(pos).map_err(|_| io::ErrorKind::InvalidInput)?;
            out.copy_from_slice(bytes.get(start..start + out.len()).ok_or(io::ErrorKind::UnexpectedEof)?);
            Ok(())
        };
        next_valid_batch(Format::Native, &read_at, from, bytes.len() as u64, floor).expect("reads")
    }

    #[test]
    fn finds_the_frame_after_a_damaged_one() {
        let mut bytes = frames(0..10);
        let frame = bytes.len() / 10;
        bytes[3 * frame + 12] ^= 0x40;
        assert_eq!(find(&bytes, 3 * frame as u64 + 1, Some(2)), Found::At(4 * frame as u64));
    }

    #[test]
    fn zero_fill_garbage_and_a_cut_frame_hold_no_valid_frame() {
        let mut bytes = frames(0..3);
        let end = bytes.len();
        bytes.extend_from_slice(&[0; 5000]);
        assert_eq!(find(&bytes, end as u64, Some(2)), Found::None);
        let mut garbage = frames(0..3);
        let mut x = 0x1234_5678u32;
        for _ in 0..(3 * WINDOW_BYTES) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            garbage.push(x as u8);
        }
        assert_eq!(find(&garbage, end as u64, Some(2)), Found::None, "random bytes across windows");
        let whole = frames(0..4);
        assert_eq!(find(&whole[..whole.len() - 3], end as u64, Some(2)), Found::None, "a frame cut short");
    }

    #[test]
    fn frames_that_do_not_continue_the_offsets_do_not_count() {
        // An old frame (offset 1) behind the damage is not data a writer appended after offset 5.
        let bytes = frames([1]);
        assert_eq!(find(&bytes, 0, Some(5)), Found::None);
        assert_eq!(find(&bytes, 0, Some(0)), Found::At(0));
    }

    #[test]
    fn a_frame_straddling_windows_is_found() {
        let mut bytes = vec![0u8; WINDOW_BYTES - 10];
        let at = bytes.len() as u64;
        bytes.extend(frames([9]));
        assert_eq!(find(&bytes, 0, None), Found::At(at));
    }

    #[test]
    fn a_tail_crafted_to_look_like_frames_everywhere_is_refused_within_linear_work() {
        // Every 20 bytes, a plausible header of a frame running almost to the end: checking each one would take
        // quadratic time (about 4e11 checksum bytes here). The budget stops the search as corruption instead.
        let len = 4usize << 20;
        let mut bytes = vec![0u8; len];
        let mut p = 0;
        let mut k = 1u64;
        while p + 200 <= len {
            let body = (len - p - 8 - 100) as u32;
            bytes[p..p + 4].copy_from_slice(&body.to_le_bytes());
            bytes[p + 8] = crate::codec::FORMAT_VERSION;
            bytes[p + 10..p + 18].copy_from_slice(&k.to_le_bytes());
            p += 20;
            k += 1;
        }
        assert_eq!(find(&bytes, 0, None), Found::TooMany);
        // Garbage of the same size with no plausible start is searched to the end and found empty.
        assert_eq!(find(&vec![0u8; len], 0, None), Found::None);
    }
}
