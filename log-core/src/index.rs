//! The sparse offset index of a segment: one `(offset, position)` entry every `interval` bytes, so a read
//! at an offset seeks close to its record and scans at most about `interval` bytes.

/// Entries an index keeps at most (64 KiB): past them it keeps every second one (see [`OffsetIndex`]).
pub(crate) const MAX_KEPT_ENTRIES: usize = 4096;

/// Sparse index of one segment. Entries are sorted by offset and by position.
///
/// The *full* index has an entry every `interval` bytes, as Kafka's `.index` does (its entry count steers
/// how Kafka's cleaner groups segments, [`OffsetIndex::len`]). Memory: an index keeps every `stride`-th entry
/// of the full one, `stride` doubling (every second kept entry dropped) whenever it would keep more than
/// [`MAX_KEPT_ENTRIES`]. So a log's indexes take at most 64 KiB a segment whatever the segment's size (a
/// 16 GiB partition of 8 KiB batches kept 33 MB of full indexes in memory, more than a cleaner's whole
/// allowance beyond its buffer), and a seek scans from an entry at most `stride` full entries (about
/// `stride * interval` bytes, 256 KiB in a 1 GiB segment of 8 KiB batches) before its record.
#[derive(Debug, Clone, Default)]
pub struct OffsetIndex {
    /// Full entries `0, stride, 2 * stride, ...`.
    entries: Vec<(u64, u64)>,
    interval: u64,
    /// Bytes appended since the last full entry; a full entry is made before the first record past `interval`.
    since_last: u64,
    /// Entries of the full index.
    full_len: usize,
    /// A power of two.
    stride: usize,
}

impl OffsetIndex {
    /// An empty index making a full entry every `interval` bytes (Kafka's `index.interval.bytes`, 4096).
    pub fn new(interval: u64) -> Self {
        OffsetIndex { entries: Vec::new(), interval: interval.max(1), since_last: 0, full_len: 0, stride: 1 }
    }

    /// An index from saved entries, the kept ones of a full index of `full_len`; `None` unless they are
    /// sorted by offset and by position and are every `stride`-th of the full ones for a power of two
    /// `stride`.
    pub fn from_entries(interval: u64, entries: Vec<(u64, u64)>, full_len: usize) -> Option<Self> {
        let sorted = entries.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1);
        let stride = (0..usize::BITS).map(|b| 1usize << b).find(|&s| full_len.div_ceil(s) == entries.len());
        let stride = stride.filter(|&s| s == 1 || full_len.div_ceil(s / 2) > MAX_KEPT_ENTRIES);
        // `since_last` is irrelevant for a sealed segment, which gets no more appends.
        Some(OffsetIndex { entries, interval: interval.max(1), since_last: 0, full_len, stride: stride? })
            .filter(|_| sorted)
    }

    /// Bytes between full entries.
    pub fn interval(&self) -> u64 {
        self.interval
    }

    /// Notes a record of `frame_len` bytes with `offset` written at `position`.
    pub fn on_append(&mut self, offset: u64, position: u64, frame_len: u64) {
        if self.full_len == 0 || self.since_last >= self.interval {
            if self.full_len.is_multiple_of(self.stride) {
                if self.entries.len() == MAX_KEPT_ENTRIES {
                    let mut i = 0;
                    self.entries.retain(|_| {
                        i += 1;
                        i % 2 == 1
                    });
                    self.stride *= 2;
                }
                if self.full_len.is_multiple_of(self.stride) {
                    self.entries.push((offset, position));
                }
            }
            self.full_len += 1;
            self.since_last = 0;
        }
        self.since_last += frame_len;
    }

    /// The position to start scanning from to find the first record with an offset `>= offset`: the
    /// position of the last kept entry whose offset is `<= offset`, or 0.
    pub fn seek(&self, offset: u64) -> u64 {
        self.seek_entry(offset).map_or(0, |(_, p)| p)
    }

    /// The last kept entry `(offset, position)` whose offset is `<= offset`, if any.
    pub fn seek_entry(&self, offset: u64) -> Option<(u64, u64)> {
        let i = self.entries.partition_point(|&(o, _)| o <= offset);
        i.checked_sub(1).and_then(|i| self.entries.get(i)).copied()
    }

    /// Entries of the full index (what Kafka's `.index` of the segment would hold).
    pub fn len(&self) -> usize {
        self.full_len
    }

    /// True when the index has no entry.
    pub fn is_empty(&self) -> bool {
        self.full_len == 0
    }

    /// The kept entries, sorted.
    pub fn entries(&self) -> &[(u64, u64)] {
        &self.entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seek_finds_the_floor_entry() {
        let mut idx = OffsetIndex::new(100);
        let mut pos = 0;
        for off in 0..50u64 {
            idx.on_append(off * 2, pos, 30);
            pos += 30;
        }
        assert!(idx.len() > 5 && idx.len() < 50);
        for target in 0..120u64 {
            // The greatest entry at or below the target, exactly: an index that seeks to 0 is no index.
            let want = idx.entries().iter().rev().find(|&&(o, _)| o <= target).map_or(0, |&(_, p)| p);
            assert_eq!(idx.seek(target), want, "target {target}");
        }
        assert_eq!(idx.seek(0), 0);
        assert!(idx.seek(99) > 0);
    }

    /// Past [`MAX_KEPT_ENTRIES`] the index keeps every second entry of the full one, again and again, still
    /// counts the full index's entries, seeks no further back than its stride, and reads back from its parts.
    #[test]
    fn a_long_index_keeps_every_stride_th_entry_and_counts_them_all() {
        let mut idx = OffsetIndex::new(100);
        let mut full = Vec::new();
        let mut pos = 0;
        for off in 0..(MAX_KEPT_ENTRIES as u64 * 5 + 17) {
            let before = idx.len();
            idx.on_append(off, pos, 100);
            if idx.len() > before {
                full.push((off, pos));
            }
            pos += 100;
            assert_eq!(idx.len(), full.len());
            assert!(idx.entries().len() <= MAX_KEPT_ENTRIES);
        }
        let stride = full.len().div_ceil(idx.entries().len());
        assert_eq!(stride, 8, "{} full entries", full.len());
        let kept: Vec<(u64, u64)> = full.iter().step_by(stride).copied().collect();
        assert_eq!(idx.entries(), kept.as_slice());
        for target in (0..full.len() as u64).step_by(97) {
            let (o, _) = idx.seek_entry(target).expect("an entry at 0");
            assert!(o <= target && target - o < stride as u64, "target {target} from {o}");
        }
        let back = OffsetIndex::from_entries(100, kept.clone(), full.len()).expect("parts");
        assert_eq!((back.len(), back.entries()), (idx.len(), idx.entries()));
        assert!(OffsetIndex::from_entries(100, kept.clone(), full.len() + 8 * 3).is_none(), "kept, but not every 8th");
        assert!(OffsetIndex::from_entries(100, full[..10].to_vec(), 40).is_none(), "a stride under the cap");
        assert!(OffsetIndex::from_entries(100, full[..10].to_vec(), 10).is_some());
    }
}
