//! The offset map of a pass: one map, or (for a pass over one log by several threads) one map per thread,
//! each owning the keys whose shard hash falls to it, in an even share of the dedupe buffer.

use crate::map::{BATCH, MapKind, MapStats, OffsetMap, Probes};

/// Seeds the shard hash apart from the hashes the maps index their tables by, so that the keys of one shard
/// still spread over all of its slots.
const SHARD_SEED: u64 = 0x5bd1_e995_9e37_79b9;

/// The shard of `key` among `n`.
#[inline]
pub(crate) fn shard_of(key: &[u8], n: usize) -> usize {
    if n <= 1 {
        return 0;
    }
    let h = xxhash_rust::xxh3::xxh3_64_with_seed(key, SHARD_SEED);
    ((u128::from(h) * n as u128) >> 64) as usize
}

/// One map per shard.
pub(crate) struct Shards {
    pub(crate) maps: Vec<Box<dyn OffsetMap>>,
}

impl Shards {
    pub(crate) fn kind(&self) -> MapKind {
        self.maps.first().map_or(MapKind::Skimpy, |m| m.kind())
    }

    pub(crate) fn count(&self) -> usize {
        self.maps.len()
    }

    /// Keys the shards hold at most (together).
    pub(crate) fn capacity(&self) -> usize {
        self.maps.iter().map(|m| m.capacity()).sum()
    }

    /// Looks up a run of keys (at most [`BATCH`]), each in its shard; `out[i]` for `keys[i]`. With one shard
    /// the run goes to the map as it is; with several it is split into one run per shard, so each map still
    /// gets batches it can prefetch for.
    pub(crate) fn get_batch(&self, keys: &[&[u8]], out: &mut [Option<u64>], probes: &mut Probes) {
        if let [map] = self.maps.as_slice() {
            map.get_batch(keys, out, probes);
            return;
        }
        let n = self.maps.len();
        let mut shard = [0usize; BATCH];
        for (s, k) in shard.iter_mut().zip(keys) {
            *s = shard_of(k, n);
        }
        let mut run: Vec<&[u8]> = Vec::with_capacity(BATCH);
        let mut at = [0usize; BATCH];
        let mut found = [None; BATCH];
        for (i, map) in self.maps.iter().enumerate() {
            run.clear();
            for (j, k) in keys.iter().enumerate().filter(|&(j, _)| shard[j] == i) {
                at[run.len()] = j;
                run.push(k);
            }
            if run.is_empty() {
                continue;
            }
            map.get_batch(&run, &mut found, probes);
            for (r, &j) in at.iter().take(run.len()).enumerate() {
                out[j] = found[r];
            }
        }
    }

    /// The figures of all shards together.
    pub(crate) fn stats(&self) -> MapStats {
        let mut all = MapStats::default();
        let mut sized_bytes = 0.0;
        for m in &self.maps {
            let s = m.stats();
            all.entries += s.entries;
            all.capacity += s.capacity;
            all.slots += s.slots;
            all.memory_bytes += s.memory_bytes;
            all.allocated_bytes += s.allocated_bytes;
            all.touched_bytes += s.touched_bytes;
            sized_bytes += s.bytes_per_key * s.capacity as f64;
            all.lookups += s.lookups;
            all.probes += s.probes;
            all.bytes_per_slot = s.bytes_per_slot;
        }
        all.utilization = if all.slots == 0 { 0.0 } else { all.entries as f64 / all.slots as f64 };
        // As each map reports it: slot maps, table bytes per key they can hold; fullkey, memory per key held.
        all.bytes_per_key = if all.capacity == 0 { 0.0 } else { sized_bytes / all.capacity as f64 };
        debug_assert!(all.bytes_per_key.is_finite());
        if self.kind() == MapKind::FullKey {
            all.bytes_per_key = if all.entries == 0 { 0.0 } else { all.touched_bytes as f64 / all.entries as f64 };
        }
        all.probes_per_lookup = if all.lookups == 0 { 0.0 } else { all.probes as f64 / all.lookups as f64 };
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_spread_evenly_over_shards() {
        let mut counts = [0usize; 3];
        for i in 0..30_000u32 {
            counts[shard_of(&i.to_le_bytes(), 3)] += 1;
        }
        assert!(counts.iter().all(|&c| (9_000..11_000).contains(&c)), "{counts:?}");
        assert_eq!(shard_of(b"any", 1), 0);
    }

    #[test]
    fn a_batch_finds_each_key_in_its_shard() {
        let maps: Vec<Box<dyn OffsetMap>> =
            (0..3).map(|_| MapKind::Compact.build(1 << 16, 0.9).expect("map")).collect();
        let mut shards = Shards { maps };
        let keys: Vec<[u8; 4]> = (0..BATCH as u32).map(|i| i.to_le_bytes()).collect();
        for (i, k) in keys.iter().enumerate() {
            let s = shard_of(k, 3);
            shards.maps[s].put(k, 100 + i as u64).expect("room");
        }
        let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
        let mut out = [None; BATCH];
        shards.get_batch(&refs, &mut out, &mut Probes::default());
        let want: Vec<Option<u64>> = (0..BATCH as u64).map(|i| Some(100 + i)).collect();
        assert_eq!(out.to_vec(), want);
        assert_eq!(shards.stats().entries, BATCH as u64);
    }

    #[test]
    fn bytes_per_key_of_sharded_slot_maps_is_what_one_map_reports() {
        for kind in [MapKind::Compact, MapKind::Skimpy] {
            let one = kind.build(1 << 20, 0.9).expect("map");
            let maps: Vec<Box<dyn OffsetMap>> = (0..2).map(|_| kind.build(1 << 19, 0.9).expect("map")).collect();
            let mut shards = Shards { maps };
            for i in 0..100u32 {
                let k = i.to_le_bytes();
                let s = shard_of(&k, 2);
                shards.maps[s].put(&k, u64::from(i)).expect("room");
            }
            let (a, b) = (one.stats().bytes_per_key, shards.stats().bytes_per_key);
            assert!((a - b).abs() / a < 0.01, "{kind:?}: one map {a}, two shards {b}");
        }
    }
}
