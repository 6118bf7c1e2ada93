//! `bench`: benchmarks of logcompact. Kept out of the workspace's default members so that `cargo test` stays
//! fast. The criterion benches (`cargo bench -p bench`) and the binaries (`map-bench`, `storage-bench`) share
//! the seeded workloads and the timing helpers of this crate.
//!
//! # Example
//! ```
//! let keys = bench::Keys::new(1000, 16, 7);
//! assert_eq!(keys.get(3).len(), 16);
//! assert_ne!(keys.get(3), keys.get(4));
//! ```
#![deny(missing_docs)]

pub mod args;
pub mod bare;
pub mod digest;
pub mod head_to_head;
pub mod io_floor;
pub mod kafka;
pub mod maps;
pub mod report;
pub mod rss;
pub mod store;
pub mod vs_kafka;

/// Bytes in `n` GiB.
pub fn gib(n: f64) -> f64 {
    n * 1024.0 * 1024.0 * 1024.0
}

/// `n` distinct keys of `len` bytes (at least 16) in one buffer: key `i` starts with the 8 bytes of a seeded
/// bijective mix of `i` (so keys are distinct and in no useful order), then 8 more mixed bytes, padded with
/// `.` to `len`.
#[derive(Debug, Clone)]
pub struct Keys {
    bytes: Vec<u8>,
    len: usize,
}

impl Keys {
    /// The keys.
    pub fn new(n: usize, len: usize, seed: u64) -> Keys {
        let len = len.max(16);
        let mut bytes = vec![b'.'; n * len];
        let mut rng = log_core::workload::SplitMix64::new(seed);
        let salt = rng.next_u64();
        for (i, k) in bytes.chunks_exact_mut(len).enumerate() {
            // An invertible mix of `i`: distinct for distinct `i`, in no useful order.
            let mut x = (i as u64) ^ salt;
            x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            x ^= x >> 29;
            let y = x.wrapping_mul(0xBF58_476D_1CE4_E5B9) ^ salt;
            k[..8].copy_from_slice(&x.to_le_bytes());
            k[8..16].copy_from_slice(&y.to_le_bytes());
        }
        Keys { bytes, len }
    }

    /// Key `i`.
    pub fn get(&self, i: usize) -> &[u8] {
        &self.bytes[i * self.len..(i + 1) * self.len]
    }

    /// How many keys.
    pub fn len(&self) -> usize {
        self.bytes.len() / self.len
    }

    /// True when there is none.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Bytes per key.
    pub fn key_len(&self) -> usize {
        self.len
    }
}
