//! Kafka's "skimpy" offset map: MD5 digests and offsets in one flat buffer.

use md5::{Digest as _, Md5};

use super::hash::{HashBits, prefetch};
use super::md5x::{LANES, md5_lanes};
use super::table::Table;
use super::{BATCH, MapFull, MapKind, MapStats, OffsetMap, Probes, superseded_by};

/// Bytes of a slot: a 16-byte MD5 digest, then the offset as a little-endian u64.
pub const SLOT_BYTES: usize = 24;
const DIGEST_BYTES: usize = 16;
/// Attempts that use a distinct 4-byte window of the digest before probing turns linear.
const WINDOW_ATTEMPTS: usize = DIGEST_BYTES - 4;
/// Most attempts a lookup makes: the 13 windows, then up to 4096 linear steps. A put that finds no free slot
/// within them is refused as if the map were full, so every stored key lies within this many attempts of its
/// start and a lookup may stop there. Below a load of 0.9 a run that long is vanishingly rare (linear probing
/// at 0.9 exceeds d steps with probability about e^(-d/180)); near a load of 1.0 it is what keeps absent-key
/// lookups from walking the whole table.
pub const MAX_ATTEMPTS: usize = WINDOW_ATTEMPTS + 1 + 4096;

/// Most attempts whose slots a batch prefetches for every key (see `SkimpyMap::attempts_to_prefetch`).
const PREFETCHED_ATTEMPTS: usize = 3;

/// An MD5 digest's 16 bytes read as a little-endian number: byte `i` of the digest is bits `8i..8i + 8`.
type Digest = u128;

/// `x % d` for a `u32` `x` by a multiplication (Lemire, Kaser and Kurz, "Faster remainder by direct
/// computation", 2019): with `m = floor((2^64 - 1) / d) + 1` (wrapping to 0 for `d = 1`), `x % d` is the high
/// 64 bits of `(m * x mod 2^64) * d`, exact for every `x` and `d` below 2^32. A divisor of 2^32 or more leaves
/// every `u32` as it is.
#[derive(Debug, Clone, Copy)]
struct SlotModulo {
    divisor: u64,
    magic: u64,
}

impl SlotModulo {
    fn new(slots: usize) -> Self {
        let divisor = slots as u64;
        let magic = u64::MAX.checked_div(divisor).map_or(0, |q| q.wrapping_add(1));
        SlotModulo { divisor, magic }
    }

    fn of(self, x: u32) -> usize {
        if self.divisor > u64::from(u32::MAX) {
            return x as usize;
        }
        let low = self.magic.wrapping_mul(u64::from(x));
        ((u128::from(low) * u128::from(self.divisor)) >> 64) as usize
    }
}

/// The layout and probing of Kafka's `SkimpyOffsetMap`.
///
/// A zeroed buffer of `bytes` bytes holds `bytes / 24` slots; an all-zero digest marks an empty slot. The slot
/// for attempt `i` is Kafka's: the big-endian i32 at byte `min(i, 12)` of the digest, plus `max(0, i - 12)`,
/// made non-negative (`Utils.abs`), modulo the slot count: the first 13 attempts look at different windows of
/// the digest, then probing is linear (downwards for a negative window, as in Kafka).
///
/// Keys are not stored: two keys with the same MD5 digest are one key to this map (a collision makes the
/// cleaner drop the older key's latest record; at 2^-128 per pair this is accepted, as in Kafka). A key whose
/// digest is all zeros is stored with its first byte set to 1 so that it cannot look empty.
///
/// The map is full at `floor(slots × load_factor)` keys (Kafka's `log.cleaner.io.buffer.load.factor`), or
/// when a new key finds no free slot within [`MAX_ATTEMPTS`].
///
/// Batches ([`OffsetMap::put_batch`], [`OffsetMap::get_batch`]) hash sixteen keys at once with a multi-lane
/// MD5 and prefetch the slots of every key's likely attempts before probing any; the answers are the same as
/// one key at a time.
pub struct SkimpyMap {
    buf: Table,
    /// Slots this pass uses: the budget's, or fewer when the pass said how many keys it may put.
    slots: usize,
    /// `slots` as a divisor without a division instruction (one per probe otherwise).
    modulo: SlotModulo,
    /// Slots the budget holds.
    budget_slots: usize,
    load_factor: f64,
    /// Most attempts any put of this pass needed: no stored key lies further along its probe sequence.
    longest: usize,
    capacity: usize,
    entries: usize,
    latest: Option<u64>,
    lookups: u64,
    probes: u64,
    bits: HashBits,
}

impl std::fmt::Debug for SkimpyMap {
    /// The geometry and counters, not the buffer (128 MiB by default).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkimpyMap")
            .field("slots", &self.slots)
            .field("capacity", &self.capacity)
            .field("entries", &self.entries)
            .field("lookups", &self.lookups)
            .field("probes", &self.probes)
            .finish_non_exhaustive()
    }
}

impl SkimpyMap {
    /// A map in a buffer of `bytes` bytes that is full at `floor(bytes / 24 × load_factor)` keys. The buffer is
    /// mapped lazily: only the pages a pass writes become resident.
    ///
    /// `load_factor` is clamped to `(0, 1]`.
    ///
    /// # Errors
    /// The operating system's error when it cannot map `bytes` bytes.
    pub fn new(bytes: usize, load_factor: f64) -> std::io::Result<Self> {
        Self::with_bits(bytes, load_factor, HashBits::ALL)
    }

    pub(crate) fn with_bits(bytes: usize, load_factor: f64, bits: HashBits) -> std::io::Result<Self> {
        let slots = bytes / SLOT_BYTES;
        let buf = Table::new(slots * SLOT_BYTES)?;
        let capacity = Self::capacity_for(bytes, load_factor);
        let load_factor = if load_factor.is_finite() { load_factor.clamp(0.0, 1.0) } else { 1.0 };
        Ok(SkimpyMap {
            buf,
            slots,
            modulo: SlotModulo::new(slots),
            budget_slots: slots,
            load_factor,
            longest: 0,
            capacity,
            entries: 0,
            latest: None,
            lookups: 0,
            probes: 0,
            bits,
        })
    }

    /// Forgets every key and uses `slots` slots this pass (pages past them, touched by an earlier pass, go
    /// back to the system).
    fn start_pass(&mut self, slots: usize) {
        self.buf.clear();
        self.buf.release_from(slots * SLOT_BYTES);
        self.slots = slots;
        self.modulo = SlotModulo::new(slots);
        self.capacity = (slots as f64 * self.load_factor).floor() as usize;
        self.longest = 0;
        self.entries = 0;
        self.latest = None;
        self.lookups = 0;
        self.probes = 0;
    }

    /// Keys a buffer of `bytes` bytes holds at `load_factor` (clamped to `(0, 1]`).
    pub fn capacity_for(bytes: usize, load_factor: f64) -> usize {
        let lf = if load_factor.is_finite() { load_factor.clamp(0.0, 1.0) } else { 1.0 };
        ((bytes / SLOT_BYTES) as f64 * lf).floor() as usize
    }

    fn finish(&self, mut d: Digest) -> Digest {
        if self.bits != HashBits::ALL {
            d = self.bits.mask(d);
        }
        // All zeros marks an empty slot: the digest's first byte becomes 1.
        if d == 0 {
            d = 1;
        }
        d
    }

    fn digest(&self, key: &[u8]) -> Digest {
        self.finish(u128::from_le_bytes(Md5::digest(key).into()))
    }

    /// Kafka's `SkimpyOffsetMap.positionOf`: the big-endian i32 at byte `min(attempt, 12)` of the digest, plus
    /// `max(0, attempt - 12)` (wrapping as Java's `int` does), made non-negative by Kafka's `Utils.abs` (which
    /// takes `i32::MIN` to 0), modulo the slot count. The same keys land in the same slots, with the same probe
    /// counts, as in Kafka's own map of as many slots.
    fn slot_of(&self, digest: Digest, attempt: usize) -> usize {
        let at = attempt.min(WINDOW_ATTEMPTS);
        // Bytes at..at + 4 of the digest, the first the most significant.
        let window = ((digest >> (8 * at)) as u32).swap_bytes() as i32;
        let extra = attempt.saturating_sub(WINDOW_ATTEMPTS) as i32;
        let probe = window.wrapping_add(extra);
        let non_negative = if probe == i32::MIN { 0 } else { probe.unsigned_abs() };
        self.modulo.of(non_negative)
    }

    /// Finds the slot holding `digest` within `limit` attempts, or the first empty slot on its probe path.
    /// Returns `(slot, present, attempts)`; `None` when neither is found.
    fn find(&self, digest: Digest, limit: usize) -> Option<(usize, bool, usize)> {
        if self.slots == 0 {
            return None;
        }
        // The windows cover at most 13 slots, then linear probing visits every slot within `slots` attempts.
        let bytes = self.buf.bytes();
        for attempt in 0..limit.min(WINDOW_ATTEMPTS + 1 + self.slots) {
            let slot = self.slot_of(digest, attempt);
            let base = slot * SLOT_BYTES;
            let stored = bytes.get(base..base + DIGEST_BYTES).and_then(|b| <[u8; DIGEST_BYTES]>::try_from(b).ok());
            // A slot is always inside the buffer (`slot < slots`); `None` is unreachable and reads as empty.
            let stored = stored.map_or(0, u128::from_le_bytes);
            if stored == digest {
                return Some((slot, true, attempt + 1));
            }
            if stored == 0 {
                return Some((slot, false, attempt + 1));
            }
        }
        None
    }

    /// Puts a digest: the key's earlier offset when it held one (the put replaced it), `None` for a new key.
    fn put_digest(&mut self, digest: Digest, offset: u64) -> Result<Option<u64>, MapFull> {
        // A full map refuses every key, one it holds included: Kafka's cleaner asks `map.size <
        // maxDesiredMapSize` before each put, so a pass ends at the first keyed record after the map filled.
        if self.entries >= self.capacity {
            return Err(MapFull);
        }
        self.lookups += 1;
        let found = self.find(digest, MAX_ATTEMPTS);
        self.probes += found.map_or(MAX_ATTEMPTS.min(self.slots) as u64, |(_, _, a)| a as u64);
        let (slot, present, attempts) = found.ok_or(MapFull)?;
        if !present {
            self.entries += 1;
            self.longest = self.longest.max(attempts);
        }
        let out = self.buf.write(slot * SLOT_BYTES, SLOT_BYTES);
        let earlier = present.then(|| {
            let b = &out[DIGEST_BYTES..];
            u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
        });
        out[..DIGEST_BYTES].copy_from_slice(&digest.to_le_bytes());
        out[DIGEST_BYTES..].copy_from_slice(&offset.to_le_bytes());
        self.latest = Some(offset);
        Ok(earlier)
    }

    /// Puts a run of keys in order, digested [`BATCH`] at a time; hands `superseded` each earlier offset a put
    /// replaced, and returns how many keys were put before the first refused one.
    #[inline]
    fn put_run(&mut self, batch: &[(&[u8], u64)], mut superseded: impl FnMut(u64)) -> usize {
        let mut done = 0;
        let mut digests = [0; BATCH];
        let mut keys: [&[u8]; BATCH] = [&[]; BATCH];
        for run in batch.chunks(BATCH) {
            for (k, &(key, _)) in keys.iter_mut().zip(run) {
                *k = key;
            }
            self.hash_batch(&keys[..run.len()], &mut digests);
            for (d, &(_, offset)) in digests.iter().zip(run) {
                match self.put_digest(*d, offset) {
                    Ok(earlier) => superseded_by(earlier, offset, &mut superseded),
                    Err(MapFull) => return done,
                }
                done += 1;
            }
        }
        done
    }

    fn get_digest(&self, digest: Digest, probes: &mut Probes) -> Option<u64> {
        probes.lookups += 1;
        let found = self.find(digest, self.longest.max(1));
        probes.probes += found.map_or(self.longest.max(1) as u64, |(_, _, a)| a as u64);
        match found {
            Some((slot, true, _)) => {
                let base = slot * SLOT_BYTES + DIGEST_BYTES;
                let raw = &self.buf.bytes()[base..base + 8];
                Some(u64::from_le_bytes([raw[0], raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7]]))
            }
            _ => None,
        }
    }

    /// Hashes `keys` (at most [`BATCH`]) [`LANES`] at a time and prefetches the slots of each key's likely
    /// attempts before any key probes (with `BATCH == LANES`, one call of the lanes; were a batch longer, the
    /// hashing of its later lanes would hide the latency of the earlier ones' lines).
    fn hash_batch(&self, keys: &[&[u8]], out: &mut [Digest; BATCH]) {
        let attempts = self.attempts_to_prefetch();
        for (chunk, digests) in keys.chunks(LANES).zip(out.chunks_mut(LANES)) {
            md5_lanes(chunk, digests);
            for d in digests.iter_mut().take(chunk.len()) {
                *d = self.finish(*d);
                for attempt in 0..attempts {
                    prefetch(self.buf.bytes(), self.slot_of(*d, attempt) * SLOT_BYTES);
                }
            }
        }
    }

    /// How many of a key's first attempts a batch prefetches: as many as a lookup at the map's load is
    /// likely to make. At load 0.9 a lookup makes 2.2 attempts on average, each a random slot, and three
    /// prefetched measured ahead of two (2.23x against 2.32x the floor over a pass, 10M records over 1M keys
    /// in memory; 2.01x against 2.23x on files) and two ahead of one (2.32x against 2.48x). In a table much
    /// larger than its keys (a pass sizes it by its offsets, not knowing how many keys they hold) nearly every
    /// lookup ends at its first attempt, and the extra lines only crowd out the ones needed.
    fn attempts_to_prefetch(&self) -> usize {
        let load = if self.slots == 0 { return 0 } else { self.entries as f64 / self.slots as f64 };
        match load {
            l if l < 0.3 => 1,
            l if l < 0.6 => 2,
            _ => PREFETCHED_ATTEMPTS,
        }
    }
}

impl OffsetMap for SkimpyMap {
    fn kind(&self) -> MapKind {
        MapKind::Skimpy
    }

    fn begin(&mut self, _base_offset: u64) {
        self.start_pass(self.budget_slots);
    }

    /// Kafka's map over the slots `max_keys` keys need at the load factor (its own map takes the whole buffer
    /// always): the keys sit in the slots, and probe as often, as in Kafka's map of that many slots.
    fn begin_bounded(&mut self, _base_offset: u64, max_keys: u64) {
        let needed = (max_keys as f64 / self.load_factor.max(f64::MIN_POSITIVE)).ceil() + 1.0;
        let slots = if needed >= self.budget_slots as f64 { self.budget_slots } else { needed as usize };
        self.start_pass(slots);
    }

    fn put(&mut self, key: &[u8], offset: u64) -> Result<(), MapFull> {
        let digest = self.digest(key);
        self.put_digest(digest, offset).map(drop)
    }

    fn put_batch(&mut self, batch: &[(&[u8], u64)]) -> usize {
        self.put_run(batch, |_| {})
    }

    fn put_batch_superseding(&mut self, batch: &[(&[u8], u64)], superseded: &mut Vec<u64>) -> usize {
        self.put_run(batch, |earlier| superseded.push(earlier))
    }

    fn get(&self, key: &[u8], probes: &mut Probes) -> Option<u64> {
        self.get_digest(self.digest(key), probes)
    }

    fn get_batch(&self, keys: &[&[u8]], out: &mut [Option<u64>], probes: &mut Probes) {
        let mut digests = [0; BATCH];
        for (run, out) in keys.chunks(BATCH).zip(out.chunks_mut(BATCH)) {
            self.hash_batch(run, &mut digests);
            for (d, o) in digests.iter().zip(out.iter_mut()).take(run.len()) {
                *o = self.get_digest(*d, probes);
            }
        }
    }

    fn len(&self) -> usize {
        self.entries
    }

    /// Keys the budget holds (a pass that said how many keys it may put can hold fewer, all it needs).
    fn capacity(&self) -> usize {
        (self.budget_slots as f64 * self.load_factor).floor() as usize
    }

    fn latest_offset(&self) -> Option<u64> {
        self.latest
    }

    fn stats(&self) -> MapStats {
        MapStats {
            capacity: self.capacity() as u64,
            bytes_per_slot: SLOT_BYTES as f64,
            memory_bytes: self.buf.len() as u64,
            allocated_bytes: (self.slots * SLOT_BYTES) as u64,
            touched_bytes: self.buf.touched_bytes() as u64,
            bytes_per_key: super::seam::ratio(self.buf.len() as u64, self.capacity() as u64),
            ..MapStats::counted(self.entries as u64, self.budget_slots as u64, self.lookups, self.probes)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(m: &SkimpyMap, key: &[u8]) -> Option<u64> {
        m.get(key, &mut Probes::default())
    }

    /// Kafka's `SkimpyOffsetMap.put` as its source describes it, written plainly: the slot of each attempt is
    /// `abs(readIntBE(digest, min(attempt, 12)) + max(0, attempt - 12)) % slots` with Java's int arithmetic and
    /// `Utils.abs` (MIN -> 0); every attempt is a probe. Returns each key's slot and the probes of all puts.
    #[expect(clippy::big_endian_bytes, reason = "Kafka reads the digest big-endian")]
    fn kafka_reference(keys: &[Vec<u8>], slots: usize) -> (Vec<usize>, u64) {
        let mut table: Vec<Option<[u8; 16]>> = vec![None; slots];
        let (mut placed, mut probes) = (Vec::new(), 0u64);
        for k in keys {
            let d: [u8; 16] = Md5::digest(k).into();
            let mut attempt: i32 = 0;
            loop {
                let at = attempt.min(12) as usize;
                let p =
                    i32::from_be_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]]).wrapping_add((attempt - 12).max(0));
                let slot = (if p == i32::MIN { 0 } else { p.abs() }) as usize % slots;
                probes += 1;
                match table[slot] {
                    None => {
                        table[slot] = Some(d);
                        placed.push(slot);
                        break;
                    }
                    Some(e) if e == d => {
                        placed.push(slot);
                        break;
                    }
                    Some(_) => attempt += 1,
                }
            }
        }
        (placed, probes)
    }

    #[test]
    fn slots_and_probes_are_those_of_kafkas_own_map() {
        // A map filled to its load factor, so that many keys probe past their first window and some go linear.
        let slots = 1000;
        let mut m = SkimpyMap::new(slots * SLOT_BYTES, 0.99).expect("map");
        let keys: Vec<Vec<u8>> = (0..990u32).map(|i| format!("key-{i}").into_bytes()).collect();
        for (i, k) in keys.iter().enumerate() {
            m.put(k, i as u64).expect("room");
        }
        let (kafka_slots, kafka_probes) = kafka_reference(&keys, slots);
        let ours: Vec<usize> = keys.iter().map(|k| m.find(m.digest(k), MAX_ATTEMPTS).expect("present").0).collect();
        assert_eq!(ours, kafka_slots, "every key sits in the slot Kafka's map puts it in");
        assert_eq!(m.stats().probes, kafka_probes, "the puts probe as often as Kafka's");
        assert!(m.longest > WINDOW_ATTEMPTS + 1, "some keys went past the digest's windows: {}", m.longest);
    }

    #[test]
    fn the_remainder_by_multiplication_is_the_remainder() {
        let xs = [0u32, 1, 2, 3, 7, 1000, 65_535, 65_536, 1 << 30, i32::MAX as u32, u32::MAX - 1, u32::MAX];
        let ds = [1u64, 2, 3, 7, 10, 1000, 5_592_405, (1 << 31) - 1, 1 << 31, u32::MAX as u64 - 1, u32::MAX as u64];
        for &d in &ds {
            let m = SlotModulo::new(d as usize);
            for &x in &xs {
                assert_eq!(m.of(x), (u64::from(x) % d) as usize, "{x} % {d}");
            }
            let mut x = 0x9E37_79B9u32;
            for _ in 0..10_000 {
                x = x.wrapping_mul(0x0101_0101).wrapping_add(0x7F4A_7C15);
                assert_eq!(m.of(x), (u64::from(x) % d) as usize, "{x} % {d}");
            }
        }
        // Divisors from 2^32 up leave every u32 as it is (where usize holds them).
        for big in [1u64 << 32, 1 << 33] {
            if let Ok(big) = usize::try_from(big) {
                assert_eq!(SlotModulo::new(big).of(u32::MAX), u32::MAX as usize);
            }
        }
    }

    #[test]
    fn put_get_overwrite() {
        let mut m = SkimpyMap::new(24 * 100, 0.9).expect("map");
        assert_eq!(m.capacity(), 90);
        assert_eq!(get(&m, b"a"), None);
        m.put(b"a", 1).expect("room");
        m.put(b"b", 2).expect("room");
        m.put(b"a", 3).expect("overwrite");
        assert_eq!(get(&m, b"a"), Some(3));
        assert_eq!(get(&m, b"b"), Some(2));
        assert_eq!(get(&m, b"c"), None);
        assert_eq!(m.len(), 2);
        assert_eq!(m.latest_offset(), Some(3));
        let s = m.stats();
        assert!(s.probes >= s.lookups && s.lookups == 3);
        m.begin(0);
        assert_eq!((m.len(), get(&m, b"a"), m.latest_offset()), (0, None, None));
    }

    #[test]
    fn kafka_default_geometry() {
        let m = SkimpyMap::new(128 << 20, 0.9).expect("map");
        assert_eq!(m.stats().slots, 5_592_405);
        assert_eq!(m.capacity(), 5_033_164);
    }

    #[test]
    fn full_at_the_load_factor_it_refuses_every_key_as_kafkas_map_does() {
        let mut m = SkimpyMap::new(24 * 10, 0.9).expect("map");
        for i in 0..8u64 {
            m.put(format!("k{i}").as_bytes(), i).expect("below the load factor");
        }
        m.put(b"k3", 200).expect("an existing key, the map not full");
        m.put(b"k8", 8).expect("the last key below the load factor");
        assert_eq!(m.put(b"new", 100), Err(MapFull));
        assert_eq!(m.put(b"k3", 300), Err(MapFull), "a key it holds too, as Kafka's cleaner asks size < desired");
        assert_eq!(m.len(), 9);
        assert_eq!(get(&m, b"new"), None);
        assert_eq!(get(&m, b"k3"), Some(200));
    }

    #[test]
    fn get_of_absent_key_on_a_completely_full_map_terminates() {
        let mut m = SkimpyMap::new(24 * 7, 1.0).expect("map");
        for i in 0..7u64 {
            m.put(&i.to_le_bytes(), i).expect("room");
        }
        assert_eq!(m.len(), 7);
        assert_eq!(get(&m, b"absent"), None);
        assert_eq!(m.put(b"absent", 1), Err(MapFull));
        for i in 0..7u64 {
            assert_eq!(get(&m, &i.to_le_bytes()), Some(i));
        }
    }

    #[test]
    fn zero_sized_buffer_holds_nothing() {
        let mut m = SkimpyMap::new(10, 0.9).expect("map");
        assert_eq!((m.stats().slots, m.capacity()), (0, 0));
        assert_eq!(m.put(b"a", 1), Err(MapFull));
        assert_eq!(get(&m, b"a"), None);
    }

    #[test]
    fn lookups_on_a_full_map_stop_within_the_attempt_bound() {
        // At load 1.0 the last keys would walk the whole table; puts past the bound are refused as full and
        // an absent key costs at most MAX_ATTEMPTS probes, not one per slot.
        let slots = 200_000;
        let mut m = SkimpyMap::new(24 * slots, 1.0).expect("map");
        let mut stored = 0u64;
        for i in 0..slots as u64 {
            if m.put(&i.to_le_bytes(), i).is_err() {
                break;
            }
            stored += 1;
        }
        assert!(stored as f64 > slots as f64 * 0.9, "the map fills well past 0.9 ({stored})");
        let mut probes = Probes::default();
        assert_eq!(m.get(b"absent key", &mut probes), None);
        assert!(probes.probes <= MAX_ATTEMPTS as u64, "{} probes", probes.probes);
        for i in (0..stored).step_by(997) {
            assert_eq!(get(&m, &i.to_le_bytes()), Some(i), "stored keys stay reachable");
        }
    }

    #[test]
    fn batches_give_the_same_answers_as_single_keys() {
        let keys: Vec<Vec<u8>> = (0..1000u32).map(|i| format!("key-{}", i * 7919 % 1013).into_bytes()).collect();
        let mut one = SkimpyMap::new(24 * 2000, 0.9).expect("map");
        let mut batched = SkimpyMap::new(24 * 2000, 0.9).expect("map");
        let pairs: Vec<(&[u8], u64)> = keys.iter().enumerate().map(|(i, k)| (&k[..], i as u64)).collect();
        for &(k, o) in &pairs {
            one.put(k, o).expect("room");
        }
        assert_eq!(batched.put_batch(&pairs), pairs.len());
        let probe: Vec<Vec<u8>> = (0..1500u32).map(|i| format!("key-{i}").into_bytes()).collect();
        let refs: Vec<&[u8]> = probe.iter().map(|k| &k[..]).collect();
        let mut out = vec![None; refs.len()];
        batched.get_batch(&refs, &mut out, &mut Probes::default());
        for (k, got) in refs.iter().zip(&out) {
            assert_eq!(*got, get(&one, k), "{}", String::from_utf8_lossy(k));
        }
        assert_eq!(one.stats().entries, batched.stats().entries);
    }

    #[test]
    fn a_batch_stops_at_the_first_refused_key() {
        let mut m = SkimpyMap::new(24 * 10, 0.9).expect("map");
        let keys: Vec<Vec<u8>> = (0..20u32).map(|i| format!("k{i}").into_bytes()).collect();
        let pairs: Vec<(&[u8], u64)> = keys.iter().enumerate().map(|(i, k)| (&k[..], i as u64)).collect();
        assert_eq!(m.put_batch(&pairs), 9);
        assert_eq!((m.len(), m.latest_offset()), (9, Some(8)));
    }
}
