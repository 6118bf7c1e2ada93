//! Hashing and prefetching shared by the maps.
//!
//! The `collision-test` feature adds [`HashBits`]: a map built with it keeps only a few bits of every hash,
//! so that distinct keys collide often and tests can show what each map does with a collision.

/// The 128-bit xxh3 hash of a key (4-5 ns for a 16-byte key on this project's machine; MD5 takes 155 ns, 48 ns
/// in sixteen lanes).
#[inline]
pub fn xxh3_128(key: &[u8]) -> u128 {
    xxhash_rust::xxh3::xxh3_128(key)
}

/// The 64-bit xxh3 hash of a key.
#[inline]
pub fn xxh3_64(key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key)
}

/// Maps call it for every key of a batch before probing any, so that the misses of the batch overlap instead
/// of being paid one after the other.
pub use log_core::cache::prefetch;

/// How many bits of each hash a map keeps (all, unless a test asks for fewer to force collisions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashBits(pub u32);

impl HashBits {
    /// Every bit: the normal case.
    pub const ALL: HashBits = HashBits(128);

    /// `h` reduced to `self.0` bits of information: the low bits are kept and spread again over all 128 bits
    /// by a fixed bijection, so that slots and fingerprints still look random while two keys collide exactly
    /// when their low bits agree (probability `2^-bits` per pair).
    #[inline]
    pub fn mask(self, h: u128) -> u128 {
        if self.0 >= 128 {
            return h;
        }
        let mut x = h & ((1u128 << self.0) - 1);
        // Multiply-xorshift rounds: odd multipliers and shifts are invertible, so distinct inputs stay distinct.
        for m in [0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835u128, 0xD6E8_FEB8_6659_FD93_C13F_6D4F_D4A5_4F35] {
            x = (x ^ (x >> 67)).wrapping_mul(m);
        }
        x ^ (x >> 71)
    }
}
