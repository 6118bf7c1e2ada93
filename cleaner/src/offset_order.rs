//! Pass 1's check that records come in offset order: each above the one before it, within its segment.
//!
//! Why pass 1 checks what opening a log checks already: a pass names records by offset, not only by key. The
//! external pass's entries and the offsets a map's puts supersede (`superseded.rs`) are asked by offset in
//! pass 2, so a record whose offset is out of order would name another record, and pass 2 could drop that one,
//! another key's record, as stale, possibly in a segment copied before pass 2 met the damage, and with no error
//! from the writer (which sees only the records kept). Opening does not see every such record: a native log
//! trusts a segment's hint instead of reading it (its first frame and its tail are checked), and a segment can
//! change after it was opened (a Kafka log's open reads every batch; a batch's records are checked against it
//! on every read, but not against the batches and segments around it).
//!
//! The last segment a pass reads has no next base to stay below (the pass is not given the segment after it):
//! its records at or past the pass's limit are neither put nor asked about, and pass 2 leaves them where they are.

use log_core::CorruptKind;
use log_core::names::MAX_OFFSET;

/// The offsets pass 1 may still meet: above the last record read, below the base of the segment after the one
/// being read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OffsetOrder {
    /// The base of the segment being read.
    base: u64,
    /// The least offset the next record may have: one past the last record read, or the segment's base.
    floor: u64,
    /// The base of the segment after the one being read, or for the last the pass reads the largest offset
    /// ([`log_core::names::MAX_OFFSET`]).
    ceiling: u64,
    /// Whether a segment follows the one being read.
    followed: bool,
}

impl OffsetOrder {
    /// Before the first segment: any offset below [`MAX_OFFSET`] may come.
    pub(crate) fn new() -> Self {
        OffsetOrder { base: 0, floor: 0, ceiling: MAX_OFFSET, followed: false }
    }

    /// The pass starts reading the segment based at `base`, which the one based at `next` follows (`None`: the
    /// last segment the pass reads). Segments come in the log's order.
    pub(crate) fn segment(&mut self, base: u64, next: Option<u64>) {
        self.base = base;
        self.floor = self.floor.max(base);
        self.ceiling = next.unwrap_or(MAX_OFFSET);
        self.followed = next.is_some();
    }

    /// Takes the offset of the next record of the segment; the damage when it is out of order.
    ///
    /// # Errors
    /// [`CorruptKind::OffsetBeyondNextSegment`] (or [`CorruptKind::OffsetOutOfRange`] in the last segment),
    /// [`CorruptKind::OffsetBelowBase`] or [`CorruptKind::OffsetNotIncreasing`]. A record too high for its
    /// place but below the ceiling is caught as the record after it, which does not follow it.
    #[inline]
    pub(crate) fn check(&mut self, offset: u64) -> Result<(), CorruptKind> {
        if offset < self.floor || offset >= self.ceiling {
            return Err(self.damage(offset));
        }
        // Below the ceiling, so below u64::MAX.
        self.floor = offset + 1;
        Ok(())
    }

    #[cold]
    fn damage(&self, found: u64) -> CorruptKind {
        if found >= self.ceiling && self.followed {
            CorruptKind::OffsetBeyondNextSegment { next_base: self.ceiling, found }
        } else if found >= self.ceiling {
            CorruptKind::OffsetOutOfRange(found)
        } else if found < self.base {
            CorruptKind::OffsetBelowBase { base: self.base, found }
        } else {
            // At or above the base and below the floor: the floor is above the base, so a record of the pass
            // set it, one past its offset.
            CorruptKind::OffsetNotIncreasing { previous: self.floor - 1, found }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_must_rise_within_their_segment() {
        let mut order = OffsetOrder::new();
        order.segment(100, Some(200));
        // Gaps are fine (a cleaned segment's records start above its base, and skip what a pass removed).
        for o in [105, 106, 150, 199] {
            assert_eq!(order.check(o), Ok(()), "{o}");
        }
        assert_eq!(order.check(199), Err(CorruptKind::OffsetNotIncreasing { previous: 199, found: 199 }));
        assert_eq!(order.check(120), Err(CorruptKind::OffsetNotIncreasing { previous: 199, found: 120 }));
        assert_eq!(order.check(99), Err(CorruptKind::OffsetBelowBase { base: 100, found: 99 }));
        assert_eq!(order.check(200), Err(CorruptKind::OffsetBeyondNextSegment { next_base: 200, found: 200 }));
        // The next segment, and the last, with no ceiling but the largest offset.
        order.segment(200, None);
        assert_eq!(order.check(150), Err(CorruptKind::OffsetBelowBase { base: 200, found: 150 }));
        assert_eq!(order.check(MAX_OFFSET - 1), Ok(()));
        assert_eq!(order.check(MAX_OFFSET), Err(CorruptKind::OffsetOutOfRange(MAX_OFFSET)));
        // A first segment's first record may lie anywhere in it; an empty segment passes.
        let mut order = OffsetOrder::new();
        order.segment(7, Some(8));
        order.segment(8, Some(30));
        assert_eq!(order.check(29), Ok(()));
    }
}
