//! Where a map would have filled, seen from the external pass's pass 1, for `--map auto` when it takes the
//! external pass without running the map first (`pass.rs`, `auto_goes_external`).
//!
//! Kafka's map refuses the first keyed record it meets once it holds its capacity of keys, and its pass ends
//! there. The external pass maps every key, so whether the map would have filled is known after the pass
//! (the distinct keys it mapped, [`super::Mapped::mapped_keys`], against the capacity; exact but at two edges:
//! a section of exactly the capacity's keys counts as filling, and a map that refuses a key before its
//! capacity, at a probe limit, is not foreseen). Where it would have filled needs the count of distinct keys
//! at every offset. A [`HyperLogLog`] over the mapped entries, in pass 1's order, gives it within about 1%
//! (16 KiB, a few nanoseconds an entry until it passes the capacity, nothing after): the first mapped entry
//! after its estimate reaches the capacity is where the map would refuse.

use crate::hll::HyperLogLog;

use super::entry::Entry;

/// Watches the mapped entries of a pass 1 for the offset at which their distinct keys reach `capacity`.
#[derive(Debug)]
pub(crate) struct FillWatch {
    sketch: HyperLogLog,
    capacity: f64,
    /// The pass's first offset: entries hold offsets from it.
    start: u64,
    /// Whether the estimate has reached the capacity.
    reached: bool,
    /// The offset (from `start`) of the first mapped entry after that: where the map would refuse.
    refused_at: Option<u64>,
}

impl FillWatch {
    pub(crate) fn new(capacity: usize) -> Self {
        FillWatch {
            sketch: HyperLogLog::default(),
            capacity: capacity as f64,
            start: 0,
            reached: false,
            refused_at: None,
        }
    }

    /// Starts watching a pass whose entries hold offsets from `start`.
    pub(super) fn begin(&mut self, start: u64) {
        *self = FillWatch { start, ..FillWatch::new(self.capacity as usize) };
    }

    /// Sees the next entry of pass 1, in the log's order.
    #[inline]
    pub(super) fn see(&mut self, e: Entry) {
        if self.refused_at.is_some() || !e.mapped() {
            return;
        }
        if self.reached {
            self.refused_at = Some(e.offset());
        } else if self.sketch.add_hash(e.hi()) && self.sketch.estimate() >= self.capacity {
            self.reached = true;
        }
    }

    /// The offset of the first mapped entry after the estimated distinct keys reached the capacity, if they did
    /// and one came after: where the map would have refused a key and ended its pass.
    pub(crate) fn refused_at(&self) -> Option<u64> {
        self.refused_at.map(|o| o + self.start)
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
        // The map refuses the record after its capacity-th key.
        let (exact, got) = (exact.expect("filled") + 1, watch.refused_at().expect("reached"));
        let off = exact.abs_diff(got) as f64 / exact as f64;
        assert!(off < 0.04, "reached at {got}, exactly at {exact}");
        let mut few = FillWatch::new(50_000);
        for offset in 0..400_000u64 {
            few.see(Entry::new(xxhash_rust::xxh3::xxh3_128(&(offset % 1000).to_le_bytes()), offset, true));
        }
        assert_eq!(few.refused_at(), None, "1,000 keys never reach 50,000");
    }

    #[test]
    fn the_map_refuses_the_next_mapped_record_after_its_capacity() {
        // A map of one key: full after the first mapped record; the next mapped one (not the one only asked
        // about) is refused. Offsets are from the pass's first.
        let mut watch = FillWatch::new(1);
        watch.begin(1_000);
        let hash = |k: u64| xxhash_rust::xxh3::xxh3_128(&k.to_le_bytes());
        watch.see(Entry::new(hash(1), 10, true));
        assert_eq!(watch.refused_at(), None, "the capacity-th key is taken");
        watch.see(Entry::new(hash(2), 11, false));
        watch.see(Entry::new(hash(1), 12, true));
        watch.see(Entry::new(hash(3), 13, true));
        assert_eq!(watch.refused_at(), Some(1_012), "the next mapped record, a key it holds or not");
    }
}
