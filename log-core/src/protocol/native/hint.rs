//! The `.lcindex` file of a sealed segment: its [`SegmentSummary`] (sparse index, offsets, counts) saved so
//! that opening a log need not scan the segment. It is only a hint: it is used when it checks out (magic,
//! version, CRC, and the segment's current length) and rebuilt from the segment otherwise.
//!
//! Layout, little-endian: `b"LCIX"`, u8 version (3), 3 zero bytes, u64 segment length, u64 base, u64 index
//! interval, u64 records, u8 flags (bit 0 first/last offsets and timestamps present, bit 1 max horizon
//! present), 7 zero bytes, u64 first offset, u64 last offset, i64 max delete horizon, i64 first timestamp,
//! i64 max timestamp, u64 entry count, u64 full entry count (the index's kept entries are every stride-th of
//! the full index's, [`OffsetIndex`]), entries of (u64 offset, u64 position), then u32 CRC-32C of everything
//! before it. A hint of another version (1 had no timestamps, 2 no full count) is unreadable to this version
//! and rebuilt from its segment.
//!
//! The timestamps are trusted as the hint states them (checking the largest would need a scan): they steer
//! only when a segment may be cleaned (the compaction lags), never what a read or a pass keeps.

use crate::error::{Error, Result};
use crate::format::Format;
use crate::format::native::names::{FileKind, file_name};
use crate::index::OffsetIndex;
use crate::scan::{SegmentScan, batch_bytes_at};
use crate::segment::SegmentSummary;
use crate::storage::{SegmentSource, SegmentStore};

const MAGIC: &[u8; 4] = b"LCIX";
const VERSION: u8 = 3;
const FIXED: usize = 4 + 4 + 8 * 4 + 8 + 8 * 5 + 8 + 8;

/// Encodes the summary of a segment of `segment_len` bytes based at `base`.
pub(crate) fn encode(base: u64, segment_len: u64, s: &SegmentSummary) -> Vec<u8> {
    let entries = s.index.entries();
    let mut out = Vec::with_capacity(FIXED + entries.len() * 16 + 4);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[VERSION, 0, 0, 0]);
    out.extend_from_slice(&segment_len.to_le_bytes());
    out.extend_from_slice(&base.to_le_bytes());
    out.extend_from_slice(&s.index.interval().to_le_bytes());
    out.extend_from_slice(&s.records.to_le_bytes());
    let mut flags = 0u8;
    if s.first_offset.is_some() {
        flags |= 1;
    }
    if s.max_delete_horizon.is_some() {
        flags |= 2;
    }
    out.extend_from_slice(&[flags, 0, 0, 0, 0, 0, 0, 0]);
    out.extend_from_slice(&s.first_offset.unwrap_or(0).to_le_bytes());
    out.extend_from_slice(&s.last_offset.unwrap_or(0).to_le_bytes());
    out.extend_from_slice(&s.max_delete_horizon.unwrap_or(0).to_le_bytes());
    out.extend_from_slice(&s.first_timestamp.unwrap_or(0).to_le_bytes());
    out.extend_from_slice(&s.max_timestamp.unwrap_or(0).to_le_bytes());
    out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    out.extend_from_slice(&(s.index.len() as u64).to_le_bytes());
    for &(o, p) in entries {
        out.extend_from_slice(&o.to_le_bytes());
        out.extend_from_slice(&p.to_le_bytes());
    }
    let crc = crate::checksum::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Why an index file was not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexProblem {
    /// Too short, bad magic, version or CRC.
    Unreadable,
    /// It describes another segment (base or length differ).
    Stale,
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    b.get(at..at + 8).and_then(|s| s.try_into().ok()).map(u64::from_le_bytes)
}

/// Decodes an index file for the segment based at `base` that now has `segment_len` bytes.
pub(crate) fn decode(bytes: &[u8], base: u64, segment_len: u64) -> Result<SegmentSummary, IndexProblem> {
    use IndexProblem::{Stale, Unreadable};
    let body_len = bytes.len().checked_sub(4).ok_or(Unreadable)?;
    let (body, crc) = bytes.split_at(body_len);
    let crc = u32::from_le_bytes(crc.try_into().map_err(|_| Unreadable)?);
    if body.len() < FIXED || crate::checksum::crc32c(body) != crc || &body[..4] != MAGIC || body[4] != VERSION {
        return Err(Unreadable);
    }
    let field = |at| u64_at(body, at).ok_or(Unreadable);
    if field(8)? != segment_len || field(16)? != base {
        return Err(Stale);
    }
    let interval = field(24)?;
    let records = field(32)?;
    let flags = body[40];
    let first = field(48)?;
    let last = field(56)?;
    let horizon = field(64)? as i64;
    let first_timestamp = field(72)? as i64;
    let max_timestamp = field(80)? as i64;
    let count = field(88)?;
    let full_count = usize::try_from(field(96)?).map_err(|_| Unreadable)?;
    let expected = (count as usize).checked_mul(16).and_then(|n| n.checked_add(FIXED)).ok_or(Unreadable)?;
    if expected != body.len() {
        return Err(Unreadable);
    }
    let mut entries = Vec::with_capacity(count as usize);
    for i in 0..count as usize {
        let at = FIXED + i * 16;
        entries.push((field(at)?, field(at + 8)?));
    }
    // Every entry must point inside the segment, and the first at its start.
    if entries.iter().any(|&(_, p)| p >= segment_len) || entries.first().is_some_and(|&(_, p)| p != 0) {
        return Err(Unreadable);
    }
    let index = OffsetIndex::from_entries(interval, entries, full_count).ok_or(Unreadable)?;
    Ok(SegmentSummary {
        index,
        first_offset: (flags & 1 != 0).then_some(first),
        last_offset: (flags & 1 != 0).then_some(last),
        records,
        // A native segment holds one record a batch.
        batches: records,
        max_delete_horizon: (flags & 2 != 0).then_some(horizon),
        first_timestamp: (flags & 1 != 0).then_some(first_timestamp),
        max_timestamp: (flags & 1 != 0).then_some(max_timestamp),
    })
}

/// Reads the `.lcindex` hint of the native segment based at `base`; `None` if missing or unusable. A hint
/// that decodes is trusted only if it matches the segment where that is cheap to see: its first entry is the
/// first frame and carries the first offset, and the frames from its last entry on chain to the end of the
/// segment and end at its last offset. The other entries are checked when a read uses one
/// ([`crate::SealedSegment::seek`]), so a crafted hint can never make a read skip records.
pub(crate) fn read(
    store: &dyn SegmentStore,
    base: u64,
    name: &str,
    source: &SegmentSource,
    len: u64,
) -> Option<SegmentSummary> {
    let file = store.open(&file_name(base, FileKind::Index)).ok()?;
    let size = usize::try_from(file.len()).ok()?;
    // An index holds at most one 16-byte entry per frame; anything larger is not an index of this segment.
    if size as u64 > 128 + len.saturating_mul(2) {
        return None;
    }
    let mut raw = vec![0; size];
    file.read_at(0, &mut raw).ok()?;
    let summary = decode(&raw, base, len).ok()?;
    hint_matches(&summary, base, name, source, len).then_some(summary)
}

/// Writes and syncs the `.lcindex` hint of the native segment based at `base`, `segment_len` bytes long, whose
/// scan learned `summary` (its name becomes durable with the caller's next directory sync). A hint that is
/// never written, or torn by a crash, is rebuilt on open, but a failed write or sync is still an error: the log
/// treats every failed sync alike.
///
/// # Errors
/// [`crate::Error::Io`] naming the hint.
pub(crate) fn write(store: &dyn SegmentStore, base: u64, segment_len: u64, summary: &SegmentSummary) -> Result<()> {
    let name = file_name(base, FileKind::Index);
    match store.delete(&name) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(Error::io("delete", &name)(e)),
        _ => {}
    }
    let file = store.create(&name).map_err(Error::io("create", &name))?;
    file.append(&encode(base, segment_len, summary)).map_err(Error::io("append", &name))?;
    file.sync().map_err(Error::io("sync", &name))?;
    file.seal().map_err(Error::io("seal", &name))
}

/// The cheap part of trusting a hint (see [`read`]).
pub(crate) fn hint_matches(summary: &SegmentSummary, base: u64, name: &str, source: &SegmentSource, len: u64) -> bool {
    let entries = summary.index.entries();
    let (Some(&(first, 0)), Some(&(_, tail))) = (entries.first(), entries.last()) else {
        return len == 0 && summary.records == 0;
    };
    let mut buf = Vec::new();
    let first_ok = matches!(
        batch_bytes_at(Format::Native, name, source, 0, len, &mut buf).ok().flatten().map(|b| Format::Native.parse(b, true)),
        Some(Ok(b)) if b.base_offset == first && first >= base && summary.first_timestamp == Some(b.max_timestamp)
    );
    if !first_ok || summary.first_offset != Some(first) {
        return false;
    }
    let mut last = None;
    let mut scan = SegmentScan::new(Format::Native, name, source, tail, len, true);
    loop {
        match scan.next_window() {
            Ok(Some(window)) => {
                for item in window.batches() {
                    match item {
                        Ok(p) if last.is_none_or(|l| p.batch.base_offset > l) => last = Some(p.batch.last_offset),
                        _ => return false,
                    }
                }
            }
            Ok(None) => break,
            Err(_) => return false,
        }
    }
    last == summary.last_offset
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary() -> SegmentSummary {
        let mut s = SegmentSummary::new(100);
        for i in 0..50u64 {
            let stamp = crate::segment::Stamp {
                base_offset: 10 + i * 2,
                last_offset: 10 + i * 2,
                records: 1,
                max_timestamp: 1000 - i as i64,
                delete_horizon: (i == 7).then_some(99),
            };
            s.note(10, stamp, i * 40, 40).expect("increasing");
        }
        s
    }

    #[test]
    fn round_trip() {
        let s = summary();
        let bytes = encode(10, 2000, &s);
        let back = decode(&bytes, 10, 2000).expect("valid");
        assert_eq!(back.index.entries(), s.index.entries());
        assert_eq!((back.first_offset, back.last_offset, back.records), (Some(10), Some(108), 50));
        assert_eq!(back.max_delete_horizon, Some(99));
        assert_eq!((back.first_timestamp, back.max_timestamp), (Some(1000), Some(1000)));
    }

    #[test]
    fn a_hint_for_another_length_or_base_is_stale() {
        let bytes = encode(10, 2000, &summary());
        assert_eq!(decode(&bytes, 10, 1999).map(|_| ()), Err(IndexProblem::Stale));
        assert_eq!(decode(&bytes, 11, 2000).map(|_| ()), Err(IndexProblem::Stale));
    }

    #[test]
    fn entries_outside_the_segment_are_refused() {
        let mut s = summary();
        s.index = OffsetIndex::from_entries(100, vec![(10, 0), (20, 5000)], 2).expect("sorted");
        let bytes = encode(10, 2000, &s);
        assert_eq!(decode(&bytes, 10, 2000).map(|_| ()), Err(IndexProblem::Unreadable));
    }

    #[test]
    fn damaged_hints_are_unreadable() {
        let bytes = encode(10, 2000, &summary());
        for cut in [0, 3, 10, bytes.len() - 1] {
            assert_eq!(decode(&bytes[..cut], 10, 2000).map(|_| ()), Err(IndexProblem::Unreadable));
        }
        for at in [0, 9, 60, bytes.len() - 2] {
            let mut b = bytes.clone();
            b[at] ^= 1;
            assert!(decode(&b, 10, 2000).is_err());
        }
    }
}
