//! The bare limit an offset map is measured against: 16-byte slots (a 64-bit xxh3 hash and the offset),
//! plain linear probing, no budget or statistics, keys hashed and their slots prefetched 16 at a time. It is
//! not a usable map (a hash collision merges keys, nothing bounds the probes); it shows what the machine's
//! memory allows, so that a real map's figures can be read as a ratio to it in the same run.

use cleaner::map::prefetch;

/// The bare table.
#[derive(Debug)]
pub struct BareMap {
    slots: Vec<[u64; 2]>,
}

impl BareMap {
    /// A table with room for `keys` keys at load `load_factor`.
    pub fn new(keys: usize, load_factor: f64) -> BareMap {
        let slots = ((keys as f64 / load_factor).ceil() as usize).max(1);
        BareMap { slots: vec![[0, 0]; slots] }
    }

    fn home(&self, h: u64) -> usize {
        ((u128::from(h) * self.slots.len() as u128) >> 64) as usize
    }

    fn hash(key: &[u8]) -> u64 {
        xxhash_rust::xxh3::xxh3_64(key) | 1
    }

    fn prefetch_all(&self, keys: &[&[u8]], hashes: &mut [u64; 16]) {
        for (h, k) in hashes.iter_mut().zip(keys) {
            *h = Self::hash(k);
            prefetch(&self.slots, self.home(*h));
        }
    }

    /// Puts a run of up to 16 keys.
    pub fn put_batch(&mut self, batch: &[(&[u8], u64)]) {
        let mut keys: [&[u8]; 16] = [&[]; 16];
        for (k, &(key, _)) in keys.iter_mut().zip(batch) {
            *k = key;
        }
        let mut hashes = [0u64; 16];
        self.prefetch_all(&keys[..batch.len()], &mut hashes);
        let n = self.slots.len();
        for (&h, &(_, offset)) in hashes.iter().zip(batch) {
            let mut i = self.home(h);
            loop {
                let slot = &mut self.slots[i];
                if slot[0] == 0 || slot[0] == h {
                    *slot = [h, offset];
                    break;
                }
                i = if i + 1 == n { 0 } else { i + 1 };
            }
        }
    }

    /// Looks up a run of up to 16 keys.
    pub fn get_batch(&self, keys: &[&[u8]], out: &mut [Option<u64>]) {
        let mut hashes = [0u64; 16];
        self.prefetch_all(keys, &mut hashes);
        let n = self.slots.len();
        for (&h, o) in hashes.iter().zip(out.iter_mut()).take(keys.len()) {
            let mut i = self.home(h);
            *o = loop {
                let slot = self.slots[i];
                if slot[0] == h {
                    break Some(slot[1]);
                }
                if slot[0] == 0 {
                    break None;
                }
                i = if i + 1 == n { 0 } else { i + 1 };
            };
        }
    }
}
