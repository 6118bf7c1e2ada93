//! The sparse offset index of a segment: one `(offset, position)` entry every `interval` bytes, so a read
//! at an offset seeks close to its record and scans at most about `interval` bytes.

/// Sparse index of one segment. Entries are sorted by offset and by position.
#[derive(Debug, Clone, Default)]
pub struct OffsetIndex {
    entries: Vec<(u64, u64)>,
    interval: u64,
    /// Bytes appended since the last entry; an entry is added before the first record past `interval`.
    since_last: u64,
}

impl OffsetIndex {
    /// An empty index adding an entry every `interval` bytes (Kafka's `index.interval.bytes`, 4096).
    pub fn new(interval: u64) -> Self {
        OffsetIndex { entries: Vec::new(), interval: interval.max(1), since_last: 0 }
    }

    /// An index from saved entries; `None` unless they are sorted by offset and by position.
    pub fn from_entries(interval: u64, entries: Vec<(u64, u64)>) -> Option<Self> {
        let sorted = entries.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1);
        // `since_last` is irrelevant for a sealed segment, which gets no more appends.
        sorted.then_some(OffsetIndex { entries, interval: interval.max(1), since_last: 0 })
    }

    /// Bytes between entries.
    pub fn interval(&self) -> u64 {
        self.interval
    }

    /// Notes a record of `frame_len` bytes with `offset` written at `position`.
    pub fn on_append(&mut self, offset: u64, position: u64, frame_len: u64) {
        if self.entries.is_empty() || self.since_last >= self.interval {
            self.entries.push((offset, position));
            self.since_last = 0;
        }
        self.since_last += frame_len;
    }

    /// The position to start scanning from to find the first record with an offset `>= offset`: the
    /// position of the last entry whose offset is `<= offset`, or 0.
    pub fn seek(&self, offset: u64) -> u64 {
        self.seek_entry(offset).map_or(0, |(_, p)| p)
    }

    /// The last entry `(offset, position)` whose offset is `<= offset`, if any.
    pub fn seek_entry(&self, offset: u64) -> Option<(u64, u64)> {
        let i = self.entries.partition_point(|&(o, _)| o <= offset);
        i.checked_sub(1).and_then(|i| self.entries.get(i)).copied()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the index has no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries, sorted.
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
}
