//! Kafka's "skimpy" offset map: MD5 digests and offsets in one flat buffer.

use md5::{Digest, Md5};

use super::table::Table;
use super::{MapFull, OffsetMap};

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

/// The layout and probing of Kafka's `SkimpyOffsetMap`.
///
/// A zeroed buffer of `bytes` bytes holds `bytes / 24` slots; an all-zero digest marks an empty slot. The slot
/// for attempt `i` is the little-endian u32 at byte `min(i, 12)` of the digest, plus `max(0, i - 12)`, modulo
/// the slot count: the first 13 attempts look at different windows of the digest, then probing is linear.
///
/// Keys are not stored: two keys with the same MD5 digest are one key to this map (a collision makes the
/// cleaner drop the older key's latest record; at 2^-128 per pair this is accepted, as in Kafka). A key whose
/// digest is all zeros is stored with its first byte set to 1 so that it cannot look empty.
///
/// The map is full at `floor(slots × load_factor)` keys (Kafka's `log.cleaner.io.buffer.load.factor`), or
/// when a new key finds no free slot within [`MAX_ATTEMPTS`].
pub struct SkimpyMap {
    buf: Table,
    slots: usize,
    /// Most attempts any put of this pass needed: no stored key lies further along its probe sequence.
    longest: usize,
    capacity: usize,
    entries: usize,
    latest: Option<u64>,
    lookups: u64,
    probes: u64,
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
        let slots = bytes / SLOT_BYTES;
        let lf = if load_factor.is_finite() { load_factor.clamp(0.0, 1.0) } else { 1.0 };
        let capacity = ((slots as f64) * lf).floor() as usize;
        let buf = Table::new(slots * SLOT_BYTES)?;
        Ok(SkimpyMap { buf, slots, longest: 0, capacity, entries: 0, latest: None, lookups: 0, probes: 0 })
    }

    /// Keys a buffer of `bytes` bytes holds at `load_factor`.
    pub fn capacity_for(bytes: usize, load_factor: f64) -> usize {
        ((bytes / SLOT_BYTES) as f64 * load_factor).floor() as usize
    }

    fn digest(key: &[u8]) -> [u8; DIGEST_BYTES] {
        let mut d: [u8; DIGEST_BYTES] = Md5::digest(key).into();
        if d == [0; DIGEST_BYTES] {
            d[0] = 1;
        }
        d
    }

    fn slot_of(&self, digest: &[u8; DIGEST_BYTES], attempt: usize) -> usize {
        let at = attempt.min(WINDOW_ATTEMPTS);
        let mut window = [0u8; 4];
        window.copy_from_slice(&digest[at..at + 4]);
        let extra = attempt.saturating_sub(WINDOW_ATTEMPTS) as u64;
        ((u64::from(u32::from_le_bytes(window)) + extra) % self.slots as u64) as usize
    }

    /// Finds the slot holding `digest` within `limit` attempts, or the first empty slot on its probe path.
    /// `Err(())` when neither is found.
    fn find(&mut self, digest: &[u8; DIGEST_BYTES], limit: usize) -> Result<(usize, bool, usize), ()> {
        self.lookups += 1;
        if self.slots == 0 {
            return Err(());
        }
        // The windows cover at most 13 slots, then linear probing visits every slot within `slots` attempts.
        let bytes = self.buf.bytes();
        for attempt in 0..limit.min(WINDOW_ATTEMPTS + 1 + self.slots) {
            self.probes += 1;
            let slot = self.slot_of(digest, attempt);
            let base = slot * SLOT_BYTES;
            let stored = &bytes[base..base + DIGEST_BYTES];
            if stored == digest {
                return Ok((slot, true, attempt));
            }
            if stored.iter().all(|&b| b == 0) {
                return Ok((slot, false, attempt));
            }
        }
        Err(())
    }
}

impl OffsetMap for SkimpyMap {
    fn kind(&self) -> &'static str {
        "skimpy_md5"
    }

    fn put(&mut self, key: &[u8], offset: u64) -> Result<(), MapFull> {
        let digest = Self::digest(key);
        let (slot, present, attempt) = self.find(&digest, MAX_ATTEMPTS).map_err(|()| MapFull)?;
        if !present {
            if self.entries >= self.capacity {
                return Err(MapFull);
            }
            self.entries += 1;
            self.longest = self.longest.max(attempt + 1);
        }
        let base = slot * SLOT_BYTES;
        let out = self.buf.write(base, SLOT_BYTES);
        out[..DIGEST_BYTES].copy_from_slice(&digest);
        out[DIGEST_BYTES..].copy_from_slice(&offset.to_le_bytes());
        self.latest = Some(offset);
        Ok(())
    }

    fn get(&mut self, key: &[u8]) -> Option<u64> {
        let digest = Self::digest(key);
        match self.find(&digest, self.longest.max(1)) {
            Ok((slot, true, _)) => {
                let base = slot * SLOT_BYTES + DIGEST_BYTES;
                let mut raw = [0u8; 8];
                raw.copy_from_slice(&self.buf.bytes()[base..base + 8]);
                Some(u64::from_le_bytes(raw))
            }
            _ => None,
        }
    }

    fn len(&self) -> usize {
        self.entries
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn slots(&self) -> usize {
        self.slots
    }

    fn clear(&mut self) {
        self.buf.clear();
        self.longest = 0;
        self.entries = 0;
        self.latest = None;
        self.lookups = 0;
        self.probes = 0;
    }

    fn latest_offset(&self) -> Option<u64> {
        self.latest
    }

    fn memory_bytes(&self) -> usize {
        self.buf.len()
    }

    fn touched_bytes(&self) -> usize {
        self.buf.touched_bytes()
    }

    fn lookups(&self) -> u64 {
        self.lookups
    }

    fn probes(&self) -> u64 {
        self.probes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_overwrite() {
        let mut m = SkimpyMap::new(24 * 100, 0.9).expect("map");
        assert_eq!(m.capacity(), 90);
        assert_eq!(m.get(b"a"), None);
        m.put(b"a", 1).expect("room");
        m.put(b"b", 2).expect("room");
        m.put(b"a", 3).expect("overwrite");
        assert_eq!(m.get(b"a"), Some(3));
        assert_eq!(m.get(b"b"), Some(2));
        assert_eq!(m.get(b"c"), None);
        assert_eq!(m.len(), 2);
        assert_eq!(m.latest_offset(), Some(3));
        assert!(m.probes() >= m.lookups());
        m.clear();
        assert_eq!((m.len(), m.get(b"a"), m.latest_offset()), (0, None, None));
    }

    #[test]
    fn kafka_default_geometry() {
        let m = SkimpyMap::new(128 << 20, 0.9).expect("map");
        assert_eq!(m.slots(), 5_592_405);
        assert_eq!(m.capacity(), 5_033_164);
    }

    #[test]
    fn full_at_the_load_factor_but_overwrites_still_work() {
        let mut m = SkimpyMap::new(24 * 10, 0.9).expect("map");
        for i in 0..9u64 {
            m.put(format!("k{i}").as_bytes(), i).expect("below the load factor");
        }
        assert_eq!(m.put(b"new", 100), Err(MapFull));
        assert_eq!(m.len(), 9);
        assert_eq!(m.get(b"new"), None);
        m.put(b"k3", 200).expect("an existing key is not new");
        assert_eq!(m.get(b"k3"), Some(200));
    }

    #[test]
    fn get_of_absent_key_on_a_completely_full_map_terminates() {
        let mut m = SkimpyMap::new(24 * 7, 1.0).expect("map");
        for i in 0..7u64 {
            m.put(&i.to_le_bytes(), i).expect("room");
        }
        assert_eq!(m.len(), 7);
        assert_eq!(m.get(b"absent"), None);
        assert_eq!(m.put(b"absent", 1), Err(MapFull));
        for i in 0..7u64 {
            assert_eq!(m.get(&i.to_le_bytes()), Some(i));
        }
    }

    #[test]
    fn zero_sized_buffer_holds_nothing() {
        let mut m = SkimpyMap::new(10, 0.9).expect("map");
        assert_eq!((m.slots(), m.capacity()), (0, 0));
        assert_eq!(m.put(b"a", 1), Err(MapFull));
        assert_eq!(m.get(b"a"), None);
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
        let before = m.probes();
        assert_eq!(m.get(b"absent key"), None);
        assert!(m.probes() - before <= MAX_ATTEMPTS as u64, "{} probes", m.probes() - before);
        for i in (0..stored).step_by(997) {
            assert_eq!(m.get(&i.to_le_bytes()), Some(i), "stored keys stay reachable");
        }
    }

    #[test]
    fn many_keys_round_trip() {
        let mut m = SkimpyMap::new(24 * 20_000, 0.9).expect("map");
        for i in 0..18_000u64 {
            m.put(format!("key-{i}").as_bytes(), i * 3).expect("room");
        }
        for i in 0..18_000u64 {
            assert_eq!(m.get(format!("key-{i}").as_bytes()), Some(i * 3));
        }
        assert!(m.get(b"key-x").is_none());
        let per_lookup = m.probes() as f64 / m.lookups() as f64;
        assert!(per_lookup >= 1.0);
    }
}
