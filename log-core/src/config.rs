//! Configuration of a [`crate::Log`], under Kafka's names and defaults.

use crate::error::{Error, Result};

/// When appended bytes are synced to the backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum SyncPolicy {
    /// After every append (Kafka's `flush.messages=1`): nothing acknowledged is ever lost, slowest.
    EveryAppend,
    /// Once at least this many bytes were appended since the last sync, and on roll.
    EveryBytes(u64),
    /// On an append at least this many ms after the last sync, and on roll (there is no background
    /// flusher: an idle log keeps its unsynced tail until the next append, roll or [`crate::Log::sync`]).
    EveryMillis(u64),
    /// Only when asked ([`crate::Log::sync`]) and when a roll seals a segment (the default). A sealed segment is
    /// always synced before it counts as closed, so recovery only ever has to cut a torn tail off the active
    /// segment; between rolls, like Kafka, which leaves flushing to the OS and to replication, a crash may
    /// lose the unsynced tail of the active segment.
    OnRoll,
}

/// Settings of a log.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LogConfig {
    /// `segment.bytes`: the active segment is rolled before an append would take it past this size
    /// (default 1 GiB).
    pub segment_bytes: u64,
    /// `index.interval.bytes`: bytes between two entries of the sparse offset index (default 4096).
    pub index_interval_bytes: u64,
    /// When to sync appends.
    pub sync: SyncPolicy,
}

/// Kafka's default `segment.bytes`, 1 GiB.
pub const DEFAULT_SEGMENT_BYTES: u64 = 1 << 30;
/// Kafka's default `index.interval.bytes`.
pub const DEFAULT_INDEX_INTERVAL_BYTES: u64 = 4096;

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            index_interval_bytes: DEFAULT_INDEX_INTERVAL_BYTES,
            sync: SyncPolicy::OnRoll,
        }
    }
}

impl LogConfig {
    /// Checks the values.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the bad setting.
    pub fn validate(&self) -> Result<()> {
        self.validate_for(crate::Format::default())
    }

    /// Checks the values for a log of `format`, whose segments may be bounded (a Kafka segment, whose index
    /// entries hold 32-bit positions, is at most 2 GiB - 1: Kafka's `segment.bytes` is an int).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the bad setting.
    pub fn validate_for(&self, format: crate::Format) -> Result<()> {
        if let Some(problem) = format.segment_bytes_problem(self.segment_bytes) {
            return Err(Error::InvalidConfig(problem));
        }
        if self.segment_bytes == 0 {
            return Err(Error::InvalidConfig("segment.bytes must be at least 1".into()));
        }
        // Kafka takes 0 (an index entry for every batch but the first); the native format's hints need a step.
        if self.index_interval_bytes == 0 && format == crate::Format::Native {
            return Err(Error::InvalidConfig("index.interval.bytes must be at least 1".into()));
        }
        if self.sync == SyncPolicy::EveryBytes(0) {
            return Err(Error::InvalidConfig("sync every N bytes needs N >= 1".into()));
        }
        Ok(())
    }
}
