//! Kafka's per-segment indexes, as a broker writes them: the offset index (`.index`: relative offset i32,
//! position i32) and the time index (`.timeindex`: timestamp i64, relative offset i32), both big-endian, an
//! entry each time more than `index.interval.bytes` of batches were written since the last one, naming the
//! batch being appended (its last offset and position), as `LogSegment.append` does, and a last time-index
//! entry for the largest timestamp when the segment is closed (`onBecomeInactiveSegment`).
//!
//! A broker treats both as hints it can rebuild; this project never reads them back to serve a read (it walks
//! the batch headers instead) but writes them with every segment it writes, so the broker does not have to.

use crate::format::Stamp;

/// Kafka's default `index.interval.bytes`.
pub const INDEX_INTERVAL_BYTES: u64 = 4096;

/// The bytes of a Kafka segment's `.index` and `.timeindex`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KafkaIndexFiles {
    /// `.index`: relative offset i32, position i32 (big-endian).
    pub offset_index: Vec<u8>,
    /// `.timeindex`: timestamp i64, relative offset i32 (big-endian).
    pub time_index: Vec<u8>,
}

/// The two indexes of one segment being written.
#[derive(Debug, Clone)]
pub struct KafkaIndexes {
    base: u64,
    interval: u64,
    since_entry: u64,
    max_timestamp: i64,
    offset_of_max: u64,
    last_time_entry: Option<i64>,
    offset_index: Vec<u8>,
    time_index: Vec<u8>,
}

impl KafkaIndexes {
    /// Indexes of the segment based at `base`, an entry every `interval` bytes.
    pub fn new(base: u64, interval: u64) -> Self {
        KafkaIndexes {
            base,
            interval,
            since_entry: 0,
            max_timestamp: -1,
            offset_of_max: base,
            last_time_entry: None,
            offset_index: Vec::new(),
            time_index: Vec::new(),
        }
    }

    /// Notes a batch of `len` bytes appended at `position`.
    pub fn on_batch(&mut self, stamp: &Stamp, position: u64, len: u64) {
        if stamp.max_timestamp > self.max_timestamp {
            self.max_timestamp = stamp.max_timestamp;
            self.offset_of_max = stamp.last_offset;
        }
        if self.since_entry > self.interval {
            // Offsets and positions fit: a Kafka segment is below 2 GiB and a group's offsets within an i32 of
            // its base (the grouping keeps them so).
            let relative = stamp.last_offset.saturating_sub(self.base).min(i32::MAX as u64) as i32;
            self.offset_index.extend_from_slice(&relative.to_be_bytes());
            self.offset_index.extend_from_slice(&(position.min(i32::MAX as u64) as i32).to_be_bytes());
            self.time_entry();
            self.since_entry = 0;
        }
        self.since_entry += len;
    }

    fn time_entry(&mut self) {
        if self.max_timestamp >= 0 && self.last_time_entry.is_none_or(|t| self.max_timestamp > t) {
            let relative = self.offset_of_max.saturating_sub(self.base).min(i32::MAX as u64) as i32;
            self.time_index.extend_from_slice(&self.max_timestamp.to_be_bytes());
            self.time_index.extend_from_slice(&relative.to_be_bytes());
            self.last_time_entry = Some(self.max_timestamp);
        }
    }

    /// The files' bytes, with the closing time-index entry.
    pub fn finish(mut self) -> KafkaIndexFiles {
        self.time_entry();
        KafkaIndexFiles { offset_index: self.offset_index, time_index: self.time_index }
    }
}

/// Bytes of an offset-index entry.
pub const OFFSET_ENTRY_BYTES: usize = 8;
/// Bytes of a time-index entry.
pub const TIME_ENTRY_BYTES: usize = 12;

/// An offset-index entry as stored: `(relative offset, position)`.
pub fn offset_entry(e: &[u8; OFFSET_ENTRY_BYTES]) -> (i32, u32) {
    (i32::from_be_bytes([e[0], e[1], e[2], e[3]]), u32::from_be_bytes([e[4], e[5], e[6], e[7]]))
}

/// A time-index entry as stored: `(timestamp, relative offset)`.
pub fn time_entry(e: &[u8; TIME_ENTRY_BYTES]) -> (i64, i32) {
    let mut t = [0u8; 8];
    t.copy_from_slice(&e[..8]);
    (i64::from_be_bytes(t), i32::from_be_bytes([e[8], e[9], e[10], e[11]]))
}

/// Entries of an offset index: `(offset, position)`, offsets absolute. Bytes after the last whole entry (a
/// preallocated index's zeros are entries of offset `base`, position 0, as Kafka reads them) are ignored.
pub fn read_offset_index(bytes: &[u8], base: u64) -> Vec<(u64, u32)> {
    bytes
        .chunks_exact(OFFSET_ENTRY_BYTES)
        .filter_map(|e| e.try_into().ok())
        .map(|e| {
            let (rel, pos) = offset_entry(e);
            (base.saturating_add_signed(i64::from(rel)), pos)
        })
        .collect()
}

/// Entries of a time index: `(timestamp, offset)`, offsets absolute.
pub fn read_time_index(bytes: &[u8], base: u64) -> Vec<(i64, u64)> {
    bytes
        .chunks_exact(TIME_ENTRY_BYTES)
        .filter_map(|e| e.try_into().ok())
        .map(|e| {
            let (t, rel) = time_entry(e);
            (t, base.saturating_add_signed(i64::from(rel)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(last: u64, ts: i64) -> Stamp {
        Stamp { base_offset: last, last_offset: last, records: 1, max_timestamp: ts, delete_horizon: None }
    }

    #[test]
    fn entries_follow_kafkas_cadence_and_read_back() {
        let mut k = KafkaIndexes::new(100, 4096);
        let mut pos = 0;
        for i in 0..100u64 {
            k.on_batch(&stamp(100 + i, 1000 + i as i64), pos, 1000);
            pos += 1000;
        }
        let files = k.finish();
        let offsets = read_offset_index(&files.offset_index, 100);
        // No entry for the first batches; then one every time more than 4096 bytes went by.
        assert_eq!(offsets.first(), Some(&(105, 5000)));
        assert!(offsets.windows(2).all(|w| w[1].1 - w[0].1 == 5000), "{offsets:?}");
        let times = read_time_index(&files.time_index, 100);
        assert_eq!(times.len(), offsets.len() + 1, "a closing entry");
        assert_eq!(times.last(), Some(&(1099, 199)));
    }
}
