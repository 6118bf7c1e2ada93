//! [`HyperLogLog`]: an estimate of how many distinct keys a log holds, in fixed memory, for logs whose keys
//! do not fit in memory to be counted exactly.
//!
//! With `2^p` one-byte registers the relative standard error is `1.04 / sqrt(2^p)`: 0.81% at the `p = 14`
//! used here (16 KiB). Small counts use linear counting (exact to within a fraction of a percent below a few
//! thousand keys), as in the original paper's corrections.
//!
//! The estimate costs the same whatever the registers: the sum it needs is kept as registers rise, exactly (in
//! fixed point), so a pass can ask it after every key that changed a register ([`HyperLogLog::add_hash`]
//! says which) and learn where the count of its keys passed a bound (`external/fill_watch.rs`).

use crate::map::hash::xxh3_64;

/// Register bits: 2^14 registers.
const P: u32 = 14;
const REGISTERS: usize = 1 << P;

/// `2^-rank` in fixed point: the unit is `2^-64` (a rank is at most 64 - P + 1 = 51).
fn weight(rank: u8) -> u128 {
    1u128 << (64 - u32::from(rank))
}

/// A HyperLogLog sketch of 64-bit hashes.
#[derive(Debug, Clone)]
pub struct HyperLogLog {
    registers: Vec<u8>,
    /// The sum of `2^-register` over the registers, in units of `2^-64`: exact, kept as registers rise.
    sum: u128,
    /// Registers still zero.
    zeros: usize,
}

impl Default for HyperLogLog {
    fn default() -> Self {
        HyperLogLog { registers: vec![0; REGISTERS], sum: weight(0) * REGISTERS as u128, zeros: REGISTERS }
    }
}

impl HyperLogLog {
    /// The relative standard error of [`HyperLogLog::estimate`].
    pub const RELATIVE_ERROR: f64 = 1.04 / 128.0; // sqrt(2^14) = 128

    /// Adds a key; whether a register rose.
    pub fn add(&mut self, key: &[u8]) -> bool {
        self.add_hash(xxh3_64(key))
    }

    /// Adds a key by its 64-bit hash; whether a register rose (only then can the estimate change).
    pub fn add_hash(&mut self, h: u64) -> bool {
        let index = (h >> (64 - P)) as usize;
        // The rank of the first one bit in the remaining 50 bits (a guard bit ends the count).
        let rank = ((h << P) | (1 << (P - 1))).leading_zeros() as u8 + 1;
        match self.registers.get_mut(index) {
            Some(r) if *r < rank => {
                self.sum = self.sum - weight(*r) + weight(rank);
                self.zeros -= usize::from(*r == 0);
                *r = rank;
                true
            }
            _ => false,
        }
    }

    /// The estimated number of distinct keys added.
    pub fn estimate(&self) -> f64 {
        let m = REGISTERS as f64;
        let alpha = 0.7213 / (1.0 + 1.079 / m);
        let sum = self.sum as f64 / 2f64.powi(64);
        let raw = alpha * m * m / sum;
        if raw <= 2.5 * m && self.zeros > 0 { m * (m / self.zeros as f64).ln() } else { raw }
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

    #[test]
    fn the_kept_sum_is_the_registers_sum() {
        let mut h = HyperLogLog::default();
        let mut rose = 0;
        for i in 0..200_000u64 {
            rose += usize::from(h.add(&i.to_le_bytes()));
            if i % 20_000 == 0 {
                let sum: f64 = h.registers.iter().map(|&r| 2f64.powi(-i32::from(r))).sum();
                assert_eq!(h.sum as f64 / 2f64.powi(64), sum, "after {i} keys");
                assert_eq!(h.zeros, h.registers.iter().filter(|&&r| r == 0).count());
            }
        }
        assert!(!h.add(&0u64.to_le_bytes()), "a repeat raises nothing");
        assert!(rose > 16_384 && rose < 200_000, "{rose} rises");
    }
}
