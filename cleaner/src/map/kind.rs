//! [`MapKind`]'s sizes and builders: the one place that knows how each map is built from a byte budget and a load factor, what its
//! smallest usable budget is, and how many keys a budget holds. No caller constructs a particular map.

use super::compact::CompactMap;
use super::fullkey::FullKeyMap;
use super::hash::HashBits;
use super::seam::{MapKind, OffsetMap};
use super::skimpy::SkimpyMap;

/// Why a map cannot be built.
#[derive(Debug)]
pub enum BuildError {
    /// The budget holds no key.
    TooSmall {
        /// The smallest budget that holds one key.
        min_bytes: usize,
    },
    /// The machine cannot map the budget.
    OutOfMemory(std::io::Error),
    /// The kind is the external pass, which keeps no map in memory.
    NotAMap,
}

impl MapKind {
    /// Bytes of one slot (for `fullkey`, of one table entry with its control byte, keys not counted).
    pub fn bytes_per_slot(self) -> f64 {
        match self {
            MapKind::Skimpy => super::skimpy::SLOT_BYTES as f64,
            MapKind::FullKey => FullKeyMap::ENTRY_BYTES as f64,
            MapKind::Compact => super::compact::SLOT_BYTES as f64,
            MapKind::External => crate::external::budget::ENTRY_BYTES as f64,
        }
    }

    /// Keys a budget of `bytes` holds at `load_factor`, for keys of `key_bytes` bytes (only `fullkey` depends
    /// on the key length).
    pub fn keys_for(self, bytes: usize, load_factor: f64, key_bytes: usize) -> usize {
        match self {
            MapKind::Skimpy => SkimpyMap::capacity_for(bytes, load_factor),
            MapKind::FullKey => FullKeyMap::capacity_for(bytes, key_bytes),
            MapKind::Compact => CompactMap::capacity_for(bytes, load_factor),
            // Any number of keys in one pass, once the budget holds its smallest buffer.
            MapKind::External => {
                if bytes >= crate::external::budget::MIN_BUDGET_BYTES {
                    usize::MAX
                } else {
                    0
                }
            }
        }
    }

    /// The smallest budget that holds `keys` keys of `key_bytes` bytes at `load_factor` in one pass. For
    /// `skimpy` that is room for one key more: a full `skimpy` map refuses every key, one it holds included
    /// (as Kafka's cleaner does), so a pass over records after the last new key needs the map not yet full.
    pub fn bytes_for(self, keys: usize, load_factor: f64, key_bytes: usize) -> usize {
        let keys = if self == MapKind::Skimpy && keys > 0 { keys.saturating_add(1) } else { keys };
        self.bytes_holding(keys, load_factor, key_bytes)
    }

    /// The smallest budget whose map takes `keys` keys (for `skimpy`, one pass only when the last of them is
    /// the last keyed record: see [`MapKind::bytes_for`]).
    pub fn bytes_holding(self, keys: usize, load_factor: f64, key_bytes: usize) -> usize {
        if keys == 0 {
            return 0;
        }
        if self == MapKind::External {
            return crate::external::budget::MIN_BUDGET_BYTES;
        }
        // Capacities grow with the budget, so search the smallest budget whose capacity suffices.
        let (mut lo, mut hi) = (0usize, 64usize);
        while self.keys_for(hi, load_factor, key_bytes) < keys {
            lo = hi;
            match hi.checked_mul(2) {
                Some(h) => hi = h,
                None => return usize::MAX,
            }
        }
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            if self.keys_for(mid, load_factor, key_bytes) >= keys {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi
    }

    /// The smallest budget that holds one key (of `key_bytes` bytes for `fullkey`).
    pub fn min_bytes(self, load_factor: f64, key_bytes: usize) -> usize {
        self.bytes_holding(1, load_factor, key_bytes)
    }

    /// Builds a map in a budget of `bytes` at `load_factor` (in `[0.01, 1]`; `fullkey` grows its table as
    /// hashbrown does and ignores it).
    ///
    /// # Errors
    /// [`BuildError::TooSmall`] for a budget that holds no key; [`BuildError::OutOfMemory`] when the machine
    /// cannot map it.
    pub fn build(self, bytes: usize, load_factor: f64) -> Result<Box<dyn OffsetMap>, BuildError> {
        self.build_with(bytes, load_factor, HashBits::ALL)
    }

    /// As [`MapKind::build`], keeping only `bits` bits of every hash so that distinct keys collide often:
    /// for tests that show what each map does with a collision.
    ///
    /// # Errors
    /// As [`MapKind::build`].
    #[cfg(feature = "collision-test")]
    pub fn build_with_hash_bits(
        self,
        bytes: usize,
        load_factor: f64,
        bits: HashBits,
    ) -> Result<Box<dyn OffsetMap>, BuildError> {
        self.build_with(bytes, load_factor, bits)
    }

    fn build_with(self, bytes: usize, load_factor: f64, bits: HashBits) -> Result<Box<dyn OffsetMap>, BuildError> {
        if self == MapKind::External {
            return Err(BuildError::NotAMap);
        }
        // The key length only matters for `fullkey`, whose minimum is for a one-byte key.
        if self.keys_for(bytes, load_factor, 1) == 0 {
            return Err(BuildError::TooSmall { min_bytes: self.min_bytes(load_factor, 1) });
        }
        Ok(match self {
            MapKind::Skimpy => {
                Box::new(SkimpyMap::with_bits(bytes, load_factor, bits).map_err(BuildError::OutOfMemory)?)
            }
            MapKind::FullKey => Box::new(FullKeyMap::new(bytes, bits)),
            MapKind::Compact => {
                Box::new(CompactMap::with_bits(bytes, load_factor, bits).map_err(BuildError::OutOfMemory)?)
            }
            MapKind::External => return Err(BuildError::NotAMap),
        })
    }

    /// The probability that at least two of `keys` distinct keys mapped in one pass look alike to this map
    /// (so that one of them loses its latest record), for a map sized for one pass at `load_factor`.
    ///
    /// `skimpy` compares 128-bit MD5 digests: about `n² / 2^129`; `external` 87 bits of an xxh3-128 hash (its
    /// 16-byte entries): about `n² / 2^88`. `compact` identifies a key by its home slot
    /// and a 56-bit fingerprint: about `n² / (2 · slots · 2^56)` with `slots = n / load_factor`. `fullkey`
    /// compares whole keys: 0.
    pub fn collision_probability(self, keys: u64, load_factor: f64) -> f64 {
        let n = keys as f64;
        let p = match self {
            MapKind::Skimpy => n * n / 2f64.powi(129),
            MapKind::External => n * n / 2f64.powi(88),
            MapKind::FullKey => 0.0,
            MapKind::Compact => {
                let slots = (n / load_factor.clamp(0.01, 1.0)).max(1.0);
                n * n / (2.0 * slots * 2f64.powi(56))
            }
        };
        p.min(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in MapKind::ALL {
            assert_eq!(MapKind::from_name(k.name()), Some(k));
        }
        assert_eq!(MapKind::from_name("md5"), None);
    }

    #[test]
    fn budgets_for_keys_are_the_smallest_that_hold_them() {
        for kind in MapKind::ALL {
            for keys in [1usize, 2, 100, 5_033_164] {
                let b = kind.bytes_for(keys, 0.9, 16);
                // skimpy: room for one key more (a full skimpy map refuses even a key it holds).
                let held = if kind == MapKind::Skimpy { keys + 1 } else { keys };
                assert!(kind.keys_for(b, 0.9, 16) >= held, "{kind} {keys}");
                assert!(kind.keys_for(b - 1, 0.9, 16) < held, "{kind} {keys}");
            }
        }
        // Kafka's default buffer holds 5,033,164 keys in the skimpy map.
        assert_eq!(MapKind::Skimpy.keys_for(128 << 20, 0.9, 16), 5_033_164);
        assert_eq!(MapKind::Skimpy.min_bytes(0.9, 16), 48);
    }

    #[test]
    fn collision_probabilities_in_the_docs() {
        let p = |k: MapKind, n: u64| k.collision_probability(n, 0.9);
        // The figures of the module docs, to two digits.
        let close = |a: f64, b: f64| (a / b - 1.0).abs() < 0.05;
        assert!(close(p(MapKind::Skimpy, 1_000_000), 1.47e-27));
        assert!(close(p(MapKind::Skimpy, 100_000_000), 1.47e-23));
        assert!(close(p(MapKind::Skimpy, 10_000_000_000), 1.47e-19));
        assert!(close(p(MapKind::Compact, 1_000_000), 6.25e-12));
        assert!(close(p(MapKind::Compact, 100_000_000), 6.25e-10));
        assert!(close(p(MapKind::Compact, 10_000_000_000), 6.25e-8));
        assert!(p(MapKind::Compact, 100_000_000) <= 1e-9, "the requirement at 10^8 keys");
        assert!(close(p(MapKind::External, 100_000_000), 3.23e-11));
        assert!(p(MapKind::External, 100_000_000) <= 1e-9, "the requirement at 10^8 keys");
        assert_eq!(p(MapKind::FullKey, 10_000_000_000), 0.0);
    }
}
