//! Telling a torn tail from corruption.
//!
//! A crash can leave the end of the active segment torn: a frame cut short, zero fill, or garbage where an
//! unsynced write never landed. Whatever a torn write leaves, no whole, valid frame continuing the segment's
//! offsets follows the damage. So a bad frame is a *torn tail* only when no such frame exists after it, and
//! only a torn tail may be cut. A bad frame followed by a valid one is *corruption* (a flipped bit, an
//! overwritten block): the records after it were written and may be the only copy of their keys, so it is an
//! error and nothing is cut.

use std::io;
use std::sync::Arc;

use crate::codec;
use crate::error::{CorruptKind, Error, Result};
use crate::segment::{ChunkReader, SegmentSummary};
use crate::storage::Segment;

/// A torn tail found at the end of the active segment.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TornTail {
    /// File name of the segment.
    pub segment: String,
    /// Where the valid frames end: the position it is (or would be) cut at.
    pub position: u64,
    /// Bytes from there to the end of the file.
    pub bytes: u64,
    /// What is wrong with the first bad frame.
    #[serde(serialize_with = "display")]
    pub kind: CorruptKind,
}

fn display<S: serde::Serializer>(kind: &CorruptKind, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.collect_str(kind)
}

/// Bytes scanned per read while searching for a valid frame.
const WINDOW_BYTES: usize = 1 << 20;

/// The position of the first whole frame of the current version, with a valid checksum and an offset above
/// `floor`, that starts in `from..end` of a source read through `read_at`; `None` when there is none.
///
/// # Errors
/// Errors of `read_at`.
pub fn next_valid_frame(
    read_at: &dyn Fn(u64, &mut [u8]) -> io::Result<()>,
    from: u64,
    end: u64,
    floor: Option<u64>,
) -> io::Result<Option<u64>> {
    let mut window = Vec::new();
    let mut frame = Vec::new();
    let mut start = from;
    while start < end {
        // Read a window plus enough lookahead to probe every position in it.
        let take = usize::try_from(end - start).unwrap_or(usize::MAX).min(WINDOW_BYTES + codec::PROBE_BYTES);
        window.resize(take, 0);
        read_at(start, &mut window)?;
        let last_window = start + take as u64 == end;
        let positions = if last_window { take } else { WINDOW_BYTES };
        for i in 0..positions {
            let at = start + i as u64;
            let Some(len) = window.get(i..).and_then(|head| codec::plausible_frame_start(head, end - at, floor)) else {
                continue;
            };
            let bytes = match window.get(i..i + len) {
                Some(b) => b,
                None => {
                    frame.resize(len, 0);
                    read_at(at, &mut frame)?;
                    &frame[..]
                }
            };
            if codec::decode(bytes).is_ok() {
                return Ok(Some(at));
            }
        }
        start += positions as u64;
    }
    Ok(None)
}

/// Scans the active segment `name` (based at `base`) from its start. Returns the summary of its valid frames
/// and, when it ends in a torn tail, where and why.
///
/// # Errors
/// [`Error::CorruptNotTorn`] when valid frames follow a bad one; [`Error::Corrupt`] for a frame of an unknown
/// format version (a record of a newer format is never cut); [`Error::Io`].
pub(crate) fn scan_active(
    base: u64,
    name: &str,
    file: &Arc<dyn Segment>,
    floor: Option<u64>,
    interval: u64,
) -> Result<(SegmentSummary, Option<TornTail>)> {
    let mut summary = SegmentSummary::new(interval);
    let len = file.len();
    let mut reader = ChunkReader::new(Arc::clone(file), 0, len);
    let (position, kind) = loop {
        let position = reader.position();
        match reader.next_frame().map_err(Error::io("read", name))? {
            None => return Ok((summary, None)),
            Some(Err(CorruptKind::UnknownVersion(v))) => {
                // Not a torn write but a record of a newer format: refuse rather than cut it away.
                let kind = CorruptKind::UnknownVersion(v);
                return Err(Error::Corrupt { segment: name.to_owned(), position, kind });
            }
            Some(Err(kind)) => break (position, kind),
            Some(Ok((pos, rec, frame_len))) => {
                if let Some(previous) = floor.filter(|&f| rec.offset <= f) {
                    break (pos, CorruptKind::OffsetNotIncreasing { previous, found: rec.offset });
                }
                if let Err(kind) = summary.note(base, crate::segment::Stamp::of(&rec), pos, frame_len as u64) {
                    break (pos, kind);
                }
            }
        }
    };
    // A frame continuing the segment has an offset above the last good one and at or above the base.
    let last_good = summary.last_offset.or(floor).max(base.checked_sub(1));
    let read_at = |pos: u64, out: &mut [u8]| file.read_at(pos, out);
    if let Some(resumes_at) =
        next_valid_frame(&read_at, position + 1, len, last_good).map_err(Error::io("read", name))?
    {
        return Err(Error::CorruptNotTorn { segment: name.to_owned(), position, kind, resumes_at });
    }
    Ok((summary, Some(TornTail { segment: name.to_owned(), position, bytes: len - position, kind })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{EncodeFields, encode};

    fn frames(offsets: impl IntoIterator<Item = u64>) -> Vec<u8> {
        let mut out = Vec::new();
        for offset in offsets {
            let fields =
                EncodeFields { offset, timestamp: 7, key: Some(b"key"), value: Some(b"value"), delete_horizon: None };
            encode(&fields, std::iter::empty(), &mut out).expect("encodes");
        }
        out
    }

    fn find(bytes: &[u8], from: u64, floor: Option<u64>) -> Option<u64> {
        let read_at = |pos: u64, out: &mut [u8]| {
            let start = usize::try_from(pos).map_err(|_| io::ErrorKind::InvalidInput)?;
            out.copy_from_slice(bytes.get(start..start + out.len()).ok_or(io::ErrorKind::UnexpectedEof)?);
            Ok(())
        };
        next_valid_frame(&read_at, from, bytes.len() as u64, floor).expect("reads")
    }

    #[test]
    fn finds_the_frame_after_a_damaged_one() {
        let mut bytes = frames(0..10);
        let frame = bytes.len() / 10;
        bytes[3 * frame + 12] ^= 0x40;
        assert_eq!(find(&bytes, 3 * frame as u64 + 1, Some(2)), Some(4 * frame as u64));
    }

    #[test]
    fn zero_fill_garbage_and_a_cut_frame_hold_no_valid_frame() {
        let mut bytes = frames(0..3);
        let end = bytes.len();
        bytes.extend_from_slice(&[0; 5000]);
        assert_eq!(find(&bytes, end as u64, Some(2)), None);
        let mut garbage = frames(0..3);
        let mut x = 0x1234_5678u32;
        for _ in 0..(3 * WINDOW_BYTES) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            garbage.push(x as u8);
        }
        assert_eq!(find(&garbage, end as u64, Some(2)), None, "random bytes across windows");
        let whole = frames(0..4);
        assert_eq!(find(&whole[..whole.len() - 3], end as u64, Some(2)), None, "a frame cut short");
    }

    #[test]
    fn frames_that_do_not_continue_the_offsets_do_not_count() {
        // An old frame (offset 1) behind the damage is not data a writer appended after offset 5.
        let bytes = frames([1]);
        assert_eq!(find(&bytes, 0, Some(5)), None);
        assert_eq!(find(&bytes, 0, Some(0)), Some(0));
    }

    #[test]
    fn a_frame_straddling_windows_is_found() {
        let mut bytes = vec![0u8; WINDOW_BYTES - 10];
        let at = bytes.len() as u64;
        bytes.extend(frames([9]));
        assert_eq!(find(&bytes, 0, None), Some(at));
    }
}
