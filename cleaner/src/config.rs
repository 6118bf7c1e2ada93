//! Cleaner settings, under Kafka's names and with Kafka's defaults.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::map::{BuildError, MapKind, OffsetMap};

/// Kafka's `log.cleaner.dedupe.buffer.size` default: 128 MiB.
pub const DEFAULT_DEDUPE_BUFFER_BYTES: usize = 128 << 20;
/// Kafka's `log.cleaner.io.buffer.load.factor` default.
pub const DEFAULT_LOAD_FACTOR: f64 = 0.9;
/// Smallest load factor accepted: below it a map wastes nearly all its memory, and the slot count needed to
/// hold one key grows without bound.
pub const MIN_LOAD_FACTOR: f64 = 0.01;
/// Most threads one pass may use.
pub const MAX_PASS_THREADS: usize = 256;

/// How a cleaner is set up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CleanerConfig {
    /// The offset map (Kafka's is [`MapKind::Skimpy`], the default).
    pub map: MapKind,
    /// `log.cleaner.dedupe.buffer.size`: bytes of the offset map.
    pub dedupe_buffer_bytes: usize,
    /// `log.cleaner.io.buffer.load.factor`: the share of the map's slots that may fill, in
    /// `[MIN_LOAD_FACTOR, 1]`.
    pub load_factor: f64,
    /// Where the external pass (`MapKind::External`) writes its sorted runs: the system's temporary directory
    /// when `None`.
    #[serde(default)]
    pub spill_dir: Option<std::path::PathBuf>,
    /// Threads of one pass over one log (1, Kafka's way, unless asked): pass 2 copies groups of segments in
    /// parallel, and where a pass has one group judges its segments on all of them, one thread writing the
    /// group's output in order; pass 1 reads the dirty section once into one map of the
    /// whole buffer (a map split between
    /// threads made every thread decode the whole section for its share of the keys: 1.28 times the time of
    /// one thread, measured); the external pass's pass 1 reads on one thread and partitions, sorts, judges and
    /// spills on another.
    pub threads: usize,
    /// One pass whatever the keys (`--map auto`): when the map fills before the dirty section's end, the pass
    /// maps the section again with the external pass, in the same buffer, instead of leaving the rest to more
    /// passes ([`crate::CleanStats::fell_back`] says so). A section the map holds is cleaned by the map, so the
    /// files stay Kafka's wherever Kafka's cleaner takes one pass too; the records kept are Kafka's always.
    /// Without effect for [`MapKind::External`].
    #[serde(default)]
    pub one_pass: bool,
}

impl Default for CleanerConfig {
    fn default() -> Self {
        CleanerConfig {
            map: MapKind::Skimpy,
            dedupe_buffer_bytes: DEFAULT_DEDUPE_BUFFER_BYTES,
            load_factor: DEFAULT_LOAD_FACTOR,
            spill_dir: None,
            threads: 1,
            one_pass: false,
        }
    }
}

impl CleanerConfig {
    /// Checks the values and that the map in the buffer holds at least one key.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] or [`Error::BufferTooSmall`].
    pub fn validate(&self) -> Result<()> {
        if !(MIN_LOAD_FACTOR..=1.0).contains(&self.load_factor) {
            return Err(Error::invalid(
                "log.cleaner.io.buffer.load.factor",
                self.load_factor,
                "a load factor in [0.01, 1]",
            ));
        }
        if !(1..=MAX_PASS_THREADS).contains(&self.threads) {
            return Err(Error::invalid("threads", self.threads, "from 1 to 256"));
        }
        if self.map.keys_for(self.dedupe_buffer_bytes, self.load_factor, 1) == 0 {
            return Err(self.too_small());
        }
        Ok(())
    }

    fn too_small(&self) -> Error {
        Error::BufferTooSmall {
            bytes: self.dedupe_buffer_bytes,
            load_factor: self.load_factor,
            map: self.map.name(),
            min_bytes: self.map.min_bytes(self.load_factor, 1),
        }
    }

    /// The offset map this configuration asks for, in its whole budget.
    ///
    /// # Errors
    /// As [`CleanerConfig::validate`]; [`Error::OutOfMemory`] when the machine cannot map the budget.
    pub fn build_map(&self) -> Result<Box<dyn OffsetMap>> {
        self.validate()?;
        self.map.build(self.dedupe_buffer_bytes, self.load_factor).map_err(|e| match e {
            BuildError::TooSmall { .. } | BuildError::NotAMap => self.too_small(),
            BuildError::OutOfMemory(source) => Error::OutOfMemory { bytes: self.dedupe_buffer_bytes, source },
        })
    }
}

/// Smallest buffer in which a skimpy map at `load_factor` (in `[MIN_LOAD_FACTOR, 1]`; others are clamped)
/// holds one key.
pub fn min_skimpy_bytes(load_factor: f64) -> usize {
    let load_factor = if load_factor.is_nan() { 1.0 } else { load_factor.clamp(MIN_LOAD_FACTOR, 1.0) };
    MapKind::Skimpy.min_bytes(load_factor, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_minimum_buffer_holds_exactly_one_key() {
        for kind in MapKind::ALL {
            for lf in [1.0, 0.95, 0.9, 0.5, 0.1, 0.01] {
                let min = kind.min_bytes(lf, 1);
                assert_eq!(kind.keys_for(min, lf, 1), 1, "{kind} at load factor {lf}");
                assert_eq!(kind.keys_for(min - 1, lf, 1), 0, "{kind} at load factor {lf}");
                let c = CleanerConfig { map: kind, dedupe_buffer_bytes: min, load_factor: lf, ..Default::default() };
                assert!(c.build_map().is_ok_and(|m| m.capacity() >= 1), "{kind} at {lf}");
                let c = CleanerConfig { dedupe_buffer_bytes: min - 1, ..c };
                assert!(matches!(c.build_map(), Err(Error::BufferTooSmall { .. })), "{kind} at {lf}");
            }
        }
        assert_eq!(min_skimpy_bytes(0.9), 48);
    }

    #[test]
    fn load_factors_outside_the_range_are_refused() {
        for lf in [0.0, 1e-300, 0.009, 1.0001, f64::NAN, f64::INFINITY, -0.5] {
            let c = CleanerConfig { load_factor: lf, ..CleanerConfig::default() };
            assert!(matches!(c.validate(), Err(Error::InvalidConfig { .. })), "{lf}");
        }
        assert_eq!(min_skimpy_bytes(1e-300), min_skimpy_bytes(MIN_LOAD_FACTOR), "clamped, never a long loop");
    }

    #[test]
    fn a_budget_the_machine_cannot_map_is_an_error() {
        for map in [MapKind::Skimpy, MapKind::Compact] {
            let c = CleanerConfig { map, dedupe_buffer_bytes: usize::MAX / 2, ..CleanerConfig::default() };
            assert!(matches!(c.build_map(), Err(Error::OutOfMemory { .. })), "{map}");
        }
    }
}
