//! Per-log compaction settings, Kafka's topic configurations under their names and with their defaults.
//!
//! Kafka makes these per topic (a broker default, overridden per topic); so does the cleaner manager here,
//! and a single pass takes what it needs of them ([`LogSettings::pass_options`], in `options.rs`).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Kafka's `delete.retention.ms` default: one day.
pub const DEFAULT_DELETE_RETENTION_MS: i64 = 24 * 60 * 60 * 1000;
/// Kafka's `min.cleanable.dirty.ratio` default.
pub const DEFAULT_MIN_CLEANABLE_DIRTY_RATIO: f64 = 0.5;

/// `cleanup.policy`: what happens to a log's old records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CleanupPolicy {
    /// `compact`: the cleaner keeps the latest record of each key.
    Compact,
    /// `delete`: old segments are deleted by retention time or size; the cleaner leaves the log alone.
    /// (Retention deletion is not part of this toolkit: such logs are only reported.)
    Delete,
    /// `compact,delete`: compacted, and subject to retention as well.
    CompactDelete,
}

impl CleanupPolicy {
    /// Parses Kafka's spelling: `compact`, `delete`, `compact,delete` (either order).
    pub fn from_name(name: &str) -> Option<Self> {
        let mut parts: Vec<&str> = name.split(',').map(str::trim).collect();
        parts.sort_unstable();
        match parts.as_slice() {
            ["compact"] => Some(CleanupPolicy::Compact),
            ["delete"] => Some(CleanupPolicy::Delete),
            ["compact", "delete"] => Some(CleanupPolicy::CompactDelete),
            _ => None,
        }
    }

    /// Kafka's spelling.
    pub fn name(self) -> &'static str {
        match self {
            CleanupPolicy::Compact => "compact",
            CleanupPolicy::Delete => "delete",
            CleanupPolicy::CompactDelete => "compact,delete",
        }
    }

    /// True when the cleaner compacts such a log.
    pub fn compacts(self) -> bool {
        self != CleanupPolicy::Delete
    }
}

/// One log's compaction settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogSettings {
    /// `cleanup.policy` (`compact`).
    pub cleanup_policy: CleanupPolicy,
    /// `min.cleanable.dirty.ratio` (0.5): the share of dirty bytes a log needs before it is cleaned, unless
    /// its oldest dirty record is past `max.compaction.lag.ms`.
    pub min_cleanable_dirty_ratio: f64,
    /// `min.compaction.lag.ms` (0): a closed segment holding a record younger than this is not cleaned yet.
    pub min_compaction_lag_ms: i64,
    /// `max.compaction.lag.ms` (`i64::MAX`, never): a log whose oldest dirty record is older than this is
    /// cleaned whatever its dirty ratio, and an active segment whose first record is older is rolled so that
    /// it can be.
    pub max_compaction_lag_ms: i64,
    /// `delete.retention.ms` (one day): how long a tombstone lives after the first pass that keeps it.
    pub delete_retention_ms: i64,
    /// `segment.bytes` (1 GiB): the size the log rolls at, and the most a group of cleaned segments merges
    /// into.
    pub segment_bytes: u64,
    /// `max.decompressed.message.bytes` (2147483639): the largest record a compressed batch may hold; a pass
    /// that meets a larger one fails, as Kafka's cleaner fails on it.
    #[serde(default = "default_max_decompressed")]
    pub max_decompressed_message_bytes: u64,
    /// `index.interval.bytes` (4096): bytes of batches between two entries of a segment's offset and time
    /// indexes, in the segments a pass writes.
    #[serde(default = "default_index_interval")]
    pub index_interval_bytes: u64,
    /// Replica-safe removal: tombstones and markers at or past this offset stay ([`crate::PassOptions::removal_floor`]).
    /// Not a Kafka setting: given for one run (`clean --replica-audits`), never saved.
    #[serde(skip)]
    pub removal_floor: Option<u64>,
}

fn default_index_interval() -> u64 {
    log_core::DEFAULT_INDEX_INTERVAL_BYTES
}

/// Kafka's default `max.decompressed.message.bytes`.
pub const DEFAULT_MAX_DECOMPRESSED_MESSAGE_BYTES: u64 = 2_147_483_639;

fn default_max_decompressed() -> u64 {
    DEFAULT_MAX_DECOMPRESSED_MESSAGE_BYTES
}

impl Default for LogSettings {
    fn default() -> Self {
        LogSettings {
            cleanup_policy: CleanupPolicy::Compact,
            min_cleanable_dirty_ratio: DEFAULT_MIN_CLEANABLE_DIRTY_RATIO,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            delete_retention_ms: DEFAULT_DELETE_RETENTION_MS,
            segment_bytes: log_core::DEFAULT_SEGMENT_BYTES,
            max_decompressed_message_bytes: DEFAULT_MAX_DECOMPRESSED_MESSAGE_BYTES,
            index_interval_bytes: log_core::DEFAULT_INDEX_INTERVAL_BYTES,
            removal_floor: None,
        }
    }
}

/// The names [`LogSettings::set`] takes, Kafka's.
pub const SETTING_NAMES: [&str; 8] = [
    "cleanup.policy",
    "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms",
    "max.compaction.lag.ms",
    "delete.retention.ms",
    "segment.bytes",
    "max.decompressed.message.bytes",
    "index.interval.bytes",
];

impl LogSettings {
    /// Checks every value.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the first bad setting.
    pub fn validate(&self) -> Result<()> {
        if !(0.0..=1.0).contains(&self.min_cleanable_dirty_ratio) {
            return Err(Error::invalid("min.cleanable.dirty.ratio", self.min_cleanable_dirty_ratio, "in [0, 1]"));
        }
        if self.min_compaction_lag_ms < 0 {
            return Err(Error::invalid("min.compaction.lag.ms", self.min_compaction_lag_ms, "at least 0"));
        }
        if self.max_compaction_lag_ms < 1 {
            return Err(Error::invalid("max.compaction.lag.ms", self.max_compaction_lag_ms, "at least 1"));
        }
        if self.max_compaction_lag_ms < self.min_compaction_lag_ms {
            return Err(Error::invalid(
                "max.compaction.lag.ms",
                self.max_compaction_lag_ms,
                "at least min.compaction.lag.ms",
            ));
        }
        if self.delete_retention_ms < 0 {
            return Err(Error::invalid("delete.retention.ms", self.delete_retention_ms, "at least 0"));
        }
        if self.segment_bytes < 1 {
            return Err(Error::invalid("segment.bytes", self.segment_bytes, "at least 1"));
        }
        if self.index_interval_bytes > i32::MAX as u64 {
            return Err(Error::invalid("index.interval.bytes", self.index_interval_bytes, "in [0, 2147483647]"));
        }
        if !(1..=DEFAULT_MAX_DECOMPRESSED_MESSAGE_BYTES).contains(&self.max_decompressed_message_bytes) {
            return Err(Error::invalid(
                "max.decompressed.message.bytes",
                self.max_decompressed_message_bytes,
                "in [1, 2147483639]",
            ));
        }
        Ok(())
    }

    /// One setting by its Kafka name, as text (`max.compaction.lag.ms` at its "never" value prints as such); an
    /// unknown name gives an empty string.
    pub fn get(&self, name: &str) -> String {
        match name {
            "cleanup.policy" => self.cleanup_policy.name().to_owned(),
            "min.cleanable.dirty.ratio" => self.min_cleanable_dirty_ratio.to_string(),
            "min.compaction.lag.ms" => self.min_compaction_lag_ms.to_string(),
            "max.compaction.lag.ms" if self.max_compaction_lag_ms == i64::MAX => "never".to_owned(),
            "max.compaction.lag.ms" => self.max_compaction_lag_ms.to_string(),
            "delete.retention.ms" => self.delete_retention_ms.to_string(),
            "segment.bytes" => self.segment_bytes.to_string(),
            "max.decompressed.message.bytes" => self.max_decompressed_message_bytes.to_string(),
            "index.interval.bytes" => self.index_interval_bytes.to_string(),
            _ => String::new(),
        }
    }

    /// Sets one setting by its Kafka name from text (`segment.bytes` takes a plain byte count here; the
    /// command line parses units before it calls this).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for an unknown name or a value that does not parse or is out of range.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        let value = value.trim();
        let int =
            |setting: &'static str| value.parse::<i64>().map_err(|_| Error::invalid(setting, value, "a whole number"));
        match name {
            "cleanup.policy" => {
                self.cleanup_policy = CleanupPolicy::from_name(value)
                    .ok_or_else(|| Error::invalid("cleanup.policy", value, "compact, delete or compact,delete"))?;
            }
            "min.cleanable.dirty.ratio" => {
                self.min_cleanable_dirty_ratio = value
                    .parse()
                    .map_err(|_| Error::invalid("min.cleanable.dirty.ratio", value, "a number in [0, 1]"))?;
            }
            "min.compaction.lag.ms" => self.min_compaction_lag_ms = int("min.compaction.lag.ms")?,
            "max.compaction.lag.ms" => self.max_compaction_lag_ms = int("max.compaction.lag.ms")?,
            "delete.retention.ms" => self.delete_retention_ms = int("delete.retention.ms")?,
            "segment.bytes" => {
                self.segment_bytes =
                    value.parse().map_err(|_| Error::invalid("segment.bytes", value, "a whole number of bytes"))?;
            }
            "index.interval.bytes" => {
                self.index_interval_bytes = value
                    .parse()
                    .map_err(|_| Error::invalid("index.interval.bytes", value, "a whole number of bytes"))?;
            }
            "max.decompressed.message.bytes" => {
                self.max_decompressed_message_bytes = value
                    .parse()
                    .map_err(|_| Error::invalid("max.decompressed.message.bytes", value, "a whole number of bytes"))?;
            }
            _ => return Err(Error::UnknownSetting { name: name.to_owned() }),
        }
        self.validate()
    }

    /// The log's own settings: its `segment.bytes` and `index.interval.bytes`.
    pub fn log_config(&self) -> log_core::LogConfig {
        log_core::LogConfig {
            segment_bytes: self.segment_bytes,
            index_interval_bytes: self.index_interval_bytes,
            ..log_core::LogConfig::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_names_set_and_bad_values_are_refused() {
        let mut s = LogSettings::default();
        s.set("cleanup.policy", "delete,compact").expect("either order");
        assert_eq!(s.cleanup_policy, CleanupPolicy::CompactDelete);
        s.set("min.compaction.lag.ms", "1000").expect("lag");
        s.set("max.compaction.lag.ms", "5000").expect("lag");
        assert_eq!((s.min_compaction_lag_ms, s.max_compaction_lag_ms), (1000, 5000));
        for (name, value) in [
            ("min.cleanable.dirty.ratio", "1.5"),
            ("min.cleanable.dirty.ratio", "half"),
            ("max.compaction.lag.ms", "10"),
            ("delete.retention.ms", "-1"),
            ("cleanup.policy", "keep"),
            ("segment.bytes", "0"),
        ] {
            let mut t = s.clone();
            assert!(matches!(t.set(name, value), Err(Error::InvalidConfig { .. })), "{name}={value}");
        }
        assert!(matches!(s.set("retention.bytes", "1"), Err(Error::UnknownSetting { .. })));
    }
}
