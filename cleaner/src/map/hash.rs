//! Hashing and prefetching shared by the maps.
//!
//! The `collision-test` feature adds [`HashBits`]: a map built with it keeps only a few bits of every hash,
//! so that distinct keys collide often and tests can show what each map does with a collision.

/// The 128-bit xxh3 hash of a key (4-5 ns for a 16-byte key on this project's machine; MD5 takes 145 ns).
#[inline]
pub fn xxh3_128(key: &[u8]) -> u128 {
    xxhash_rust::xxh3::xxh3_128(key)
}

/// The 64-bit xxh3 hash of a key.
#[inline]
pub fn xxh3_64(key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key)
}

/// Asks the CPU to start loading the cache line holding `bytes[at]` (a hint: no effect on results, and
/// nothing happens for an index out of range). Maps call it for every key of a batch before probing any,
/// so that the misses of the batch overlap instead of being paid one after the other.
#[inline]
pub fn prefetch(bytes: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(b) = bytes.get(at) {
        // SAFETY: `_mm_prefetch` only hints the cache; it reads nothing and cannot fault, whatever the
        // address. SSE, which it needs, is part of every x86_64 CPU.
        #[expect(unsafe_code, reason = "a cache hint; see SAFETY")]
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(std::ptr::from_ref(b).cast());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, at);
}

/// How many bits of each hash a map keeps (all, unless a test asks for fewer to force collisions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashBits(pub u32);

impl HashBits {
    /// Every bit: the normal case.
    pub const ALL: HashBits = HashBits(128);

    /// `h` with all but the low `self.0` bits cleared.
    #[inline]
    pub fn mask(self, h: u128) -> u128 {
        if self.0 >= 128 { h } else { h & ((1u128 << self.0) - 1) }
    }
}
