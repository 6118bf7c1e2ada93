//! Deterministic synthetic workloads: `logcompact gen`, the benchmarks and tests fill logs with them.

use crate::error::Result;
use crate::log::{AppendRecord, Log};

/// A keyed workload: `records` appends over `keys` distinct keys drawn uniformly by a seeded generator,
/// values of `value_bytes` bytes, and a share `tombstone_fraction` of deletes.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Workload {
    /// Appends.
    pub records: u64,
    /// Distinct keys.
    pub keys: u64,
    /// Bytes per value.
    pub value_bytes: usize,
    /// Share of appends that are tombstones, in `[0, 1]`.
    pub tombstone_fraction: f64,
    /// Generator seed: the same seed gives the same records.
    pub seed: u64,
}

/// SplitMix64: small, fast, and good enough to draw keys (not for cryptography).
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (`n > 0`), by multiply-shift (no modulo bias worth measuring at these sizes).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A float in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The key of key number `i`: `key-` and 12 digits (16 bytes, a typical small Kafka key).
pub fn key_of(i: u64, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(b"key-");
    let mut digits = [b'0'; 12];
    let mut n = i;
    for d in digits.iter_mut().rev() {
        *d = b'0' + (n % 10) as u8;
        n /= 10;
    }
    out.extend_from_slice(&digits);
}

impl Workload {
    /// Appends the workload to `log` with timestamps `base_timestamp + i`, calling `progress` with the count
    /// of appended records every 4096 records and at the end. Returns the number of tombstones written.
    ///
    /// # Errors
    /// As [`Log::append`].
    pub fn append_to(&self, log: &Log, base_timestamp: i64, mut progress: impl FnMut(u64)) -> Result<u64> {
        let mut rng = SplitMix64::new(self.seed);
        let mut key = Vec::with_capacity(16);
        let mut value = vec![0u8; self.value_bytes];
        let keys = self.keys.max(1);
        let mut tombstones = 0;
        for i in 0..self.records {
            key_of(rng.below(keys), &mut key);
            let tombstone = rng.unit() < self.tombstone_fraction;
            if !tombstone {
                let mut bits = rng.next_u64();
                for (j, b) in value.iter_mut().enumerate() {
                    if j % 8 == 0 && j > 0 {
                        bits = bits.rotate_left(13) ^ (i.wrapping_add(j as u64));
                    }
                    *b = b'a' + ((bits >> ((j % 8) * 8)) as u8 % 26);
                }
            }
            tombstones += u64::from(tombstone);
            let rec = AppendRecord {
                key: Some(&key),
                value: (!tombstone).then_some(&value[..]),
                timestamp: base_timestamp.saturating_add(i as i64),
                headers: &[],
            };
            log.append(&rec)?;
            if i % 4096 == 4095 {
                progress(i + 1);
            }
        }
        progress(self.records);
        Ok(tombstones)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_fixed_width() {
        let mut k = Vec::new();
        key_of(42, &mut k);
        assert_eq!(k, b"key-000000000042");
    }

    #[test]
    fn the_generator_is_deterministic_and_in_range() {
        let mut a = SplitMix64::new(7);
        let mut b = SplitMix64::new(7);
        for _ in 0..1000 {
            let x = a.below(10);
            assert_eq!(x, b.below(10));
            assert!(x < 10);
            let u = a.unit();
            b.unit();
            assert!((0.0..1.0).contains(&u));
        }
    }
}
