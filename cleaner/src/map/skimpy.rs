//! Kafka's "skimpy" offset map: MD5 digests and offsets in one flat buffer.

use md5::{Digest, Md5};

use super::{MapFull, OffsetMap};

/// Bytes of a slot: a 16-byte MD5 digest, then the offset as a little-endian u64.
pub const SLOT_BYTES: usize = 24;
const DIGEST_BYTES: usize = 16;
/// Attempts that use a distinct 4-byte window of the digest before probing turns linear.
const WINDOW_ATTEMPTS: usize = DIGEST_BYTES - 4;

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
/// The map is full at `floor(slots × load_factor)` keys (Kafka's `log.cleaner.io.buffer.load.factor`).
pub struct SkimpyMap {
    buf: Vec<u8>,
    slots: usize,
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
    /// A map in a buffer of `bytes` bytes that is full at `floor(bytes / 24 × load_factor)` keys.
    ///
    /// `load_factor` is clamped to `(0, 1]`.
    pub fn new(bytes: usize, load_factor: f64) -> Self {
        let slots = bytes / SLOT_BYTES;
        let lf = if load_factor.is_finite() { load_factor.clamp(0.0, 1.0) } else { 1.0 };
        let capacity = ((slots as f64) * lf).floor() as usize;
        SkimpyMap { buf: vec![0; slots * SLOT_BYTES], slots, capacity, entries: 0, latest: None, lookups: 0, probes: 0 }
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

    /// Finds the slot holding `digest`, or the first empty slot on its probe path. `Err(())` when neither
    /// exists (a completely full table with the key absent).
    fn find(&mut self, digest: &[u8; DIGEST_BYTES]) -> Result<(usize, bool), ()> {
        self.lookups += 1;
        if self.slots == 0 {
            return Err(());
        }
        // The windows cover at most 13 slots, then linear probing visits every slot within `slots` attempts.
        for attempt in 0..WINDOW_ATTEMPTS + 1 + self.slots {
            self.probes += 1;
            let slot = self.slot_of(digest, attempt);
            let base = slot * SLOT_BYTES;
            let stored = &self.buf[base..base + DIGEST_BYTES];
            if stored == digest {
                return Ok((slot, true));
            }
            if stored.iter().all(|&b| b == 0) {
                return Ok((slot, false));
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
        let (slot, present) = self.find(&digest).map_err(|()| MapFull)?;
        if !present {
            if self.entries >= self.capacity {
                return Err(MapFull);
            }
            self.entries += 1;
        }
        let base = slot * SLOT_BYTES;
        self.buf[base..base + DIGEST_BYTES].copy_from_slice(&digest);
        self.buf[base + DIGEST_BYTES..base + SLOT_BYTES].copy_from_slice(&offset.to_le_bytes());
        self.latest = Some(offset);
        Ok(())
    }

    fn get(&mut self, key: &[u8]) -> Option<u64> {
        let digest = Self::digest(key);
        match self.find(&digest) {
            Ok((slot, true)) => {
                let base = slot * SLOT_BYTES + DIGEST_BYTES;
                let mut raw = [0u8; 8];
                raw.copy_from_slice(&self.buf[base..base + 8]);
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
        if self.entries > 0 {
            self.buf.fill(0);
        }
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
        let mut m = SkimpyMap::new(24 * 100, 0.9);
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
        let m = SkimpyMap::new(128 << 20, 0.9);
        assert_eq!(m.slots(), 5_592_405);
        assert_eq!(m.capacity(), 5_033_164);
    }

    #[test]
    fn full_at_the_load_factor_but_overwrites_still_work() {
        let mut m = SkimpyMap::new(24 * 10, 0.9);
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
        let mut m = SkimpyMap::new(24 * 7, 1.0);
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
        let mut m = SkimpyMap::new(10, 0.9);
        assert_eq!((m.slots(), m.capacity()), (0, 0));
        assert_eq!(m.put(b"a", 1), Err(MapFull));
        assert_eq!(m.get(b"a"), None);
    }

    #[test]
    fn many_keys_round_trip() {
        let mut m = SkimpyMap::new(24 * 20_000, 0.9);
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
