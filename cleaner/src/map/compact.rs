//! [`CompactMap`]: this project's offset map, 12 bytes a slot.
//!
//! # Layout
//! A slot is 12 bytes, little-endian: a u64 *tag* (bits 8..64: a 56-bit fingerprint; bits 0..8: the probe
//! distance plus one, 0 for an empty slot) and a u32 offset relative to the pass's base offset. The table
//! has `slots` home positions plus up to [`OVERFLOW`] slots after them (half the table for a tiny one), so
//! that probing never wraps around; an insertion whose run would pass the end is refused as [`MapFull`].
//!
//! # Hashing and identity (quotienting)
//! A key's xxh3-128 hash gives its home slot (the low 64 bits, scaled to `slots`) and its fingerprint (the top
//! 56 bits of the high 64). A slot stores only the fingerprint and how far it sits from its home; the home is
//! part of the key's identity without being stored. Two keys look alike only when they share home and
//! fingerprint: probability `1 / (slots · 2^56)` per pair, so `n² / (2 · slots · 2^56)` for `n` keys
//! (6.2e-10 for 10^8 keys at load 0.9).
//!
//! # Robin Hood ordering
//! Along a probe run, keys are kept in the order of their distance from home: an insertion takes the slot of
//! the first key that is closer to its home than the new key would be, and shifts the run after it by one.
//! So a lookup stops at the first empty slot *or* the first slot whose key is closer to home than the searched
//! key would be there: an absent key costs about as much as a present one, even at a high load (plain linear
//! probing walks about 50 slots per miss at load 0.9). Distances are capped at 254: an insertion that would
//! push a key further is refused as [`MapFull`], which bounds every lookup at 255 slots at any load.
//!
//! # Offsets
//! Offsets are stored relative to the base offset of the pass ([`OffsetMap::begin`]), in 32 bits. An offset
//! 2^32 or more above the base is refused as [`MapFull`]: the cleaner then ends the pass there, so a dirty
//! section spanning more offsets is mapped in chunks, as partial passes.
//!
//! # Batches
//! [`OffsetMap::put_batch`] and [`OffsetMap::get_batch`] hash a run of keys first and prefetch every home
//! slot, then probe: the random memory accesses of the run overlap instead of queueing.

use super::hash::{HashBits, prefetch, xxh3_128};
use super::table::Table;
use super::{BATCH, MapFull, MapKind, MapStats, OffsetMap, Probes};

/// Bytes of a slot.
pub const SLOT_BYTES: usize = 12;
/// Most slots after the last home position, so that a run starting near the end needs no wrap-around.
pub const OVERFLOW: usize = 256;
/// Largest distance from home (stored plus one in the tag's low byte).
const MAX_DISTANCE: u64 = 254;

/// Where a key lives and what identifies it.
#[derive(Debug, Clone, Copy)]
struct Hashed {
    home: usize,
    /// The fingerprint, already in the tag's position (bits 8..64).
    fp: u64,
}

/// This project's offset map (see the [module docs](self)).
pub struct CompactMap {
    table: Table,
    /// Home positions.
    slots: usize,
    /// All slots: the home positions and the overflow after them.
    total: usize,
    capacity: usize,
    entries: usize,
    base: u64,
    latest: Option<u64>,
    lookups: u64,
    probes: u64,
    bits: HashBits,
}

impl std::fmt::Debug for CompactMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactMap")
            .field("slots", &self.slots)
            .field("capacity", &self.capacity)
            .field("entries", &self.entries)
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl CompactMap {
    /// A map in a budget of `bytes` bytes, full at `floor(slots × load_factor)` keys.
    ///
    /// # Errors
    /// The operating system's error when it cannot map the budget.
    pub fn new(bytes: usize, load_factor: f64) -> std::io::Result<Self> {
        Self::with_bits(bytes, load_factor, HashBits::ALL)
    }

    pub(crate) fn with_bits(bytes: usize, load_factor: f64, bits: HashBits) -> std::io::Result<Self> {
        let (slots, total) = Self::slots_for(bytes);
        let table = Table::new(total * SLOT_BYTES)?;
        let capacity = Self::capacity_for(bytes, load_factor);
        Ok(CompactMap { table, slots, total, capacity, entries: 0, base: 0, latest: None, lookups: 0, probes: 0, bits })
    }

    /// Home positions and all slots in a budget of `bytes` (the overflow comes out of the budget too).
    fn slots_for(bytes: usize) -> (usize, usize) {
        let total = bytes / SLOT_BYTES;
        (total - (total / 2).min(OVERFLOW), total)
    }

    /// Keys a budget of `bytes` holds at `load_factor` (clamped to `(0, 1]`).
    pub fn capacity_for(bytes: usize, load_factor: f64) -> usize {
        let lf = if load_factor.is_finite() { load_factor.clamp(0.0, 1.0) } else { 1.0 };
        (Self::slots_for(bytes).0 as f64 * lf).floor() as usize
    }

    #[inline]
    fn hash(&self, key: &[u8]) -> Hashed {
        let h = self.bits.mask(xxh3_128(key));
        let (lo, hi) = (h as u64, (h >> 64) as u64);
        let home = ((u128::from(lo) * self.slots as u128) >> 64) as usize;
        Hashed { home, fp: hi & !0xff }
    }

    #[inline]
    fn tag_at(bytes: &[u8], slot: usize) -> u64 {
        let at = slot * SLOT_BYTES;
        let b = &bytes[at..at + 8];
        u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    }

    #[inline]
    fn offset_at(bytes: &[u8], slot: usize) -> u32 {
        let at = slot * SLOT_BYTES + 8;
        let b = &bytes[at..at + 4];
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }

    fn write_slot(&mut self, slot: usize, tag: u64, rel: u32) {
        let out = self.table.write(slot * SLOT_BYTES, SLOT_BYTES);
        out[..8].copy_from_slice(&tag.to_le_bytes());
        out[8..].copy_from_slice(&rel.to_le_bytes());
    }

    /// Walks the run from `h.home`: `Ok(slot)` where the key is, or `Err((slot, distance))` where it would be
    /// inserted (the first empty slot or the first key closer to its home). Also returns the slots inspected.
    #[inline]
    fn search(&self, h: Hashed) -> (Result<usize, (usize, u64)>, u64) {
        let bytes = self.table.bytes();
        let mut slot = h.home;
        let mut distance = 0u64;
        loop {
            if slot >= self.total {
                return (Err((slot, MAX_DISTANCE + 1)), distance);
            }
            let tag = Self::tag_at(bytes, slot);
            let stored = tag & 0xff;
            if stored == 0 || stored - 1 < distance {
                return (Err((slot, distance)), distance + 1);
            }
            if stored - 1 == distance && tag & !0xff == h.fp {
                return (Ok(slot), distance + 1);
            }
            distance += 1;
            slot += 1;
            if distance > MAX_DISTANCE {
                return (Err((slot, distance)), distance);
            }
        }
    }

    fn put_hashed(&mut self, h: Hashed, offset: u64) -> Result<(), MapFull> {
        self.lookups += 1;
        let Some(rel) = offset.checked_sub(self.base).and_then(|r| u32::try_from(r).ok()) else {
            return Err(MapFull);
        };
        if self.slots == 0 {
            return Err(MapFull);
        }
        let (found, inspected) = self.search(h);
        self.probes += inspected;
        let (at, distance) = match found {
            Ok(slot) => {
                let tag = Self::tag_at(self.table.bytes(), slot);
                self.write_slot(slot, tag, rel);
                self.latest = Some(offset);
                return Ok(());
            }
            Err(place) => place,
        };
        if self.entries >= self.capacity || distance > MAX_DISTANCE {
            return Err(MapFull);
        }
        // Find the end of the run from `at`, checking that every key it shifts stays within the cap.
        let bytes = self.table.bytes();
        let mut end = at;
        loop {
            let stored = Self::tag_at(bytes, end) & 0xff;
            if stored == 0 {
                break;
            }
            if stored > MAX_DISTANCE || end + 1 >= self.total {
                return Err(MapFull);
            }
            end += 1;
        }
        // Shift `at..end` one slot on (each key one further from home), then place the new key at `at`.
        if end > at {
            let out = self.table.write(at * SLOT_BYTES, (end + 1 - at) * SLOT_BYTES);
            out.copy_within(0..(end - at) * SLOT_BYTES, SLOT_BYTES);
            for s in 1..=(end - at) {
                let t = &mut out[s * SLOT_BYTES..s * SLOT_BYTES + 8];
                t[0] += 1;
            }
        }
        self.write_slot(at, h.fp | (distance + 1), rel);
        self.entries += 1;
        self.latest = Some(offset);
        Ok(())
    }

    fn get_hashed(&self, h: Hashed, probes: &mut Probes) -> Option<u64> {
        probes.lookups += 1;
        if self.slots == 0 {
            return None;
        }
        let (found, inspected) = self.search(h);
        probes.probes += inspected;
        found.ok().map(|slot| self.base + u64::from(Self::offset_at(self.table.bytes(), slot)))
    }

    fn hash_batch(&self, keys: &[&[u8]], out: &mut [Hashed; BATCH]) {
        for (h, k) in out.iter_mut().zip(keys) {
            *h = self.hash(k);
            // A run is a few slots long (about 5.7 at load 0.9): often it continues into the next line.
            let at = h.home * SLOT_BYTES;
            prefetch(self.table.bytes(), at);
            prefetch(self.table.bytes(), at + 64);
        }
    }
}

impl OffsetMap for CompactMap {
    fn kind(&self) -> MapKind {
        MapKind::Compact
    }

    fn begin(&mut self, base_offset: u64) {
        self.table.clear();
        self.entries = 0;
        self.base = base_offset;
        self.latest = None;
        self.lookups = 0;
        self.probes = 0;
    }

    fn put(&mut self, key: &[u8], offset: u64) -> Result<(), MapFull> {
        let h = self.hash(key);
        self.put_hashed(h, offset)
    }

    fn put_batch(&mut self, batch: &[(&[u8], u64)]) -> usize {
        let mut done = 0;
        let mut hashed = [Hashed { home: 0, fp: 0 }; BATCH];
        let mut keys: [&[u8]; BATCH] = [&[]; BATCH];
        for run in batch.chunks(BATCH) {
            for (k, &(key, _)) in keys.iter_mut().zip(run) {
                *k = key;
            }
            self.hash_batch(&keys[..run.len()], &mut hashed);
            for (&h, &(_, offset)) in hashed.iter().zip(run) {
                if self.put_hashed(h, offset).is_err() {
                    return done;
                }
                done += 1;
            }
        }
        done
    }

    fn get(&self, key: &[u8], probes: &mut Probes) -> Option<u64> {
        self.get_hashed(self.hash(key), probes)
    }

    fn get_batch(&self, keys: &[&[u8]], out: &mut [Option<u64>], probes: &mut Probes) {
        let mut hashed = [Hashed { home: 0, fp: 0 }; BATCH];
        for (run, out) in keys.chunks(BATCH).zip(out.chunks_mut(BATCH)) {
            self.hash_batch(run, &mut hashed);
            for (&h, o) in hashed.iter().zip(out.iter_mut()).take(run.len()) {
                *o = self.get_hashed(h, probes);
            }
        }
    }

    fn len(&self) -> usize {
        self.entries
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn latest_offset(&self) -> Option<u64> {
        self.latest
    }

    fn stats(&self) -> MapStats {
        let memory = self.table.len() as u64;
        MapStats {
            entries: self.entries as u64,
            capacity: self.capacity as u64,
            slots: self.slots as u64,
            bytes_per_slot: SLOT_BYTES as f64,
            utilization: if self.slots == 0 { 0.0 } else { self.entries as f64 / self.slots as f64 },
            memory_bytes: memory,
            touched_bytes: self.table.touched_bytes() as u64,
            bytes_per_key: if self.capacity == 0 { 0.0 } else { memory as f64 / self.capacity as f64 },
            lookups: self.lookups,
            probes: self.probes,
            probes_per_lookup: if self.lookups == 0 { 0.0 } else { self.probes as f64 / self.lookups as f64 },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(m: &CompactMap, key: &[u8]) -> Option<u64> {
        m.get(key, &mut Probes::default())
    }

    fn key(i: u64) -> Vec<u8> {
        format!("key-{i:012}").into_bytes()
    }

    #[test]
    fn put_get_overwrite_and_relative_offsets() {
        let mut m = CompactMap::new(12 * 1000, 0.9).expect("map");
        m.begin(1 << 40);
        assert_eq!(get(&m, b"a"), None);
        m.put(b"a", (1 << 40) + 5).expect("room");
        m.put(b"b", (1 << 40) + 6).expect("room");
        m.put(b"a", (1 << 40) + 7).expect("overwrite");
        assert_eq!(get(&m, b"a"), Some((1 << 40) + 7));
        assert_eq!(get(&m, b"b"), Some((1 << 40) + 6));
        assert_eq!(m.len(), 2);
        // Offsets that 32 bits above the base cannot hold are refused: the pass ends there.
        assert_eq!(m.put(b"c", (1 << 40) + (1 << 32)), Err(MapFull));
        assert_eq!(m.put(b"c", (1 << 40) - 1), Err(MapFull), "below the base");
        m.put(b"c", (1 << 40) + u64::from(u32::MAX)).expect("the largest relative offset");
        m.begin(0);
        assert_eq!((m.len(), get(&m, b"a")), (0, None));
    }

    #[test]
    fn holds_its_capacity_and_every_key_stays_reachable() {
        for lf in [0.5, 0.9, 0.95, 1.0] {
            let mut m = CompactMap::new(12 * 50_000, lf).expect("map");
            m.begin(0);
            let mut n = 0u64;
            while m.put(&key(n), n * 3).is_ok() {
                n += 1;
            }
            assert!(n as usize >= m.capacity() * 98 / 100, "load {lf}: {n} of {}", m.capacity());
            assert!(n as usize <= m.capacity());
            for i in 0..n {
                assert_eq!(get(&m, &key(i)), Some(i * 3), "load {lf} key {i}");
            }
            // Absent keys are found absent in a few probes, even when full.
            let mut p = Probes::default();
            for i in n + 1..n + 10_001 {
                assert_eq!(m.get(&key(i), &mut p), None);
            }
            let per_miss = p.probes as f64 / p.lookups as f64;
            let bound = match lf {
                x if x <= 0.9 => 8.0,
                x if x <= 0.95 => 16.0,
                _ => 255.0,
            };
            assert!(per_miss < bound, "load {lf}: {per_miss} probes per miss");
            eprintln!("load {lf}: {per_miss:.2} probes per miss");
        }
    }

    #[test]
    fn twelve_bytes_a_slot() {
        let m = CompactMap::new(12 << 20, 0.9).expect("map");
        let s = m.stats();
        assert_eq!(s.bytes_per_slot, 12.0);
        assert_eq!(s.memory_bytes, (s.slots + OVERFLOW as u64) * 12);
        // A tiny budget still holds a key: the overflow shrinks with the table.
        let mut tiny = CompactMap::new(48, 0.9).expect("map");
        tiny.begin(0);
        assert_eq!(tiny.capacity(), 1);
        tiny.put(b"k", 3).expect("one key");
        assert_eq!((tiny.put(b"other", 4), get(&tiny, b"k")), (Err(MapFull), Some(3)));
        assert!(s.bytes_per_key < 13.4, "{}", s.bytes_per_key);
    }

    #[test]
    fn batches_give_the_same_answers_as_single_keys() {
        let keys: Vec<Vec<u8>> = (0..3000u64).map(|i| key(i * 7919 % 2011)).collect();
        let mut one = CompactMap::new(12 * 4000, 0.9).expect("map");
        let mut batched = CompactMap::new(12 * 4000, 0.9).expect("map");
        one.begin(10);
        batched.begin(10);
        let pairs: Vec<(&[u8], u64)> = keys.iter().enumerate().map(|(i, k)| (&k[..], 10 + i as u64)).collect();
        for &(k, o) in &pairs {
            one.put(k, o).expect("room");
        }
        assert_eq!(batched.put_batch(&pairs), pairs.len());
        let probe: Vec<Vec<u8>> = (0..2500u64).map(key).collect();
        let refs: Vec<&[u8]> = probe.iter().map(|k| &k[..]).collect();
        let mut out = vec![None; refs.len()];
        batched.get_batch(&refs, &mut out, &mut Probes::default());
        for (k, got) in refs.iter().zip(&out) {
            assert_eq!(*got, get(&one, k));
        }
    }
}
