//! Where a map would have filled, seen from the external pass's pass 1, for `--map auto` when it takes the
//! external pass without running the map first (`pass.rs`, `auto_goes_external`).
//!
//! Kafka's map refuses the first keyed record it meets once it holds its capacity of keys, and its pass ends
//! there. The external pass maps every key, so whether the map would have filled is exact after the pass
//! (the distinct keys it mapped, [`super::Mapped::mapped_keys`], against the capacity). Where it would have
//! filled is not: that needs the count of distinct keys at every offset. A [`HyperLogLog`] over the mapped
//! entries, in pass 1's order, gives it within about 1% (16 KiB, a few nanoseconds an entry until it passes
//! the capacity, nothing after): the offset at which its estimate first reaches the capacity.

use crate::hll::HyperLogLog;

use super::entry::Entry;

/// Watches the mapped entries of a pass 1 for the offset at which their distinct keys reach `capacity`.
#[derive(Debug)]
pub(crate) struct FillWatch {
    sketch: HyperLogLog,
    capacity: f64,
    /// The pass's first offset: entries hold offsets from it.
    start: u64,
    /// The entry's offset (from `start`) at which the capacity was reached.
    reached_at: Option<u64>,
}

impl FillWatch {
    pub(crate) fn new(capacity: usize) -> Self {
        FillWatch { sketch: HyperLogLog::default(), capacity: capacity as f64, start: 0, reached_at: None }
    }

    /// Starts watching a pass whose entries hold offsets from `start`.
    pub(super) fn begin(&mut self, start: u64) {
        *self = FillWatch { start, ..FillWatch::new(self.capacity as usize) };
    }

    /// Sees the next entry of pass 1, in the log's order.
    #[inline]
    pub(super) fn see(&mut self, e: Entry) {
        if self.reached_at.is_none()
            && e.mapped()
            && self.sketch.add_hash(e.hi())
            && self.sketch.estimate() >= self.capacity
        {
            self.reached_at = Some(e.offset());
        }
    }

    /// The offset of the entry at which the estimated distinct keys reached the capacity, if they did.
    pub(crate) fn reached_at(&self) -> Option<u64> {
        self.reached_at.map(|o| o + self.start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_capacity_is_reached_near_the_offset_where_the_keys_pass_it() {
        // 400,000 records over 200,000 keys in a scrambled order; a map of 50,000 keys.
        let keys = 200_000u64;
        let key_of = |o: u64| (o.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20) % keys;
        let mut seen = std::collections::HashSet::new();
        let mut exact = None;
        let mut watch = FillWatch::new(50_000);
        for offset in 0..400_000u64 {
            let k = key_of(offset);
            let hash = xxhash_rust::xxh3::xxh3_128(&k.to_le_bytes());
            // An entry only asked about (the clean section's, here of other keys) counts for nothing.
            let other = xxhash_rust::xxh3::xxh3_128(&(k + keys).to_le_bytes());
            watch.see(Entry::new(other, offset, false));
            watch.see(Entry::new(hash, offset, true));
            if seen.insert(k) && seen.len() == 50_000 {
                exact = Some(offset);
            }
        }
        let (exact, got) = (exact.expect("filled"), watch.reached_at().expect("reached"));
        let off = exact.abs_diff(got) as f64 / exact as f64;
        assert!(off < 0.04, "reached at {got}, exactly at {exact}");
        let mut few = FillWatch::new(50_000);
        for offset in 0..400_000u64 {
            few.see(Entry::new(xxhash_rust::xxh3::xxh3_128(&(offset % 1000).to_le_bytes()), offset, true));
        }
        assert_eq!(few.reached_at(), None, "1,000 keys never reach 50,000");
    }
}
