//! [`HyperLogLog`]: an estimate of how many distinct keys a log holds, in fixed memory, for logs whose keys
//! do not fit in memory to be counted exactly.
//!
//! With `2^p` one-byte registers the relative standard error is `1.04 / sqrt(2^p)`: 0.81% at the `p = 14`
//! used here (16 KiB). Small counts use linear counting (exact to within a fraction of a percent below a few
//! thousand keys), as in the original paper's corrections.

use crate::map::hash::xxh3_64;

/// Register bits: 2^14 registers.
const P: u32 = 14;
const REGISTERS: usize = 1 << P;

/// A HyperLogLog sketch of 64-bit hashes.
#[derive(Debug, Clone)]
pub struct HyperLogLog {
    registers: Vec<u8>,
}

impl Default for HyperLogLog {
    fn default() -> Self {
        HyperLogLog { registers: vec![0; REGISTERS] }
    }
}

impl HyperLogLog {
    /// The relative standard error of [`HyperLogLog::estimate`].
    pub const RELATIVE_ERROR: f64 = 1.04 / 128.0; // sqrt(2^14) = 128

    /// Adds a key.
    pub fn add(&mut self, key: &[u8]) {
        self.add_hash(xxh3_64(key));
    }

    /// Adds a key by its 64-bit hash.
    pub fn add_hash(&mut self, h: u64) {
        let index = (h >> (64 - P)) as usize;
        // The rank of the first one bit in the remaining 50 bits (a guard bit ends the count).
        let rank = ((h << P) | (1 << (P - 1))).leading_zeros() as u8 + 1;
        if let Some(r) = self.registers.get_mut(index)
            && *r < rank
        {
            *r = rank;
        }
    }

    /// The estimated number of distinct keys added.
    pub fn estimate(&self) -> f64 {
        let m = REGISTERS as f64;
        let alpha = 0.7213 / (1.0 + 1.079 / m);
        let sum: f64 = self.registers.iter().map(|&r| 2f64.powi(-i32::from(r))).sum();
        let raw = alpha * m * m / sum;
        let zeros = self.registers.iter().filter(|&&r| r == 0).count();
        if raw <= 2.5 * m && zeros > 0 { m * (m / zeros as f64).ln() } else { raw }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_within_a_few_standard_errors() {
        for n in [100u64, 5_000, 50_000, 1_000_000] {
            let mut h = HyperLogLog::default();
            for i in 0..n {
                h.add(&i.to_le_bytes());
                h.add(&i.to_le_bytes()); // repeats change nothing
            }
            let e = h.estimate();
            let rel = (e - n as f64).abs() / n as f64;
            assert!(rel < 4.0 * HyperLogLog::RELATIVE_ERROR, "{n} keys estimated {e:.0} ({:.2}%)", rel * 100.0);
        }
        assert!((HyperLogLog::RELATIVE_ERROR - 0.008125).abs() < 1e-6);
    }
}
