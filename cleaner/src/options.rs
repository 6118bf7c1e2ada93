//! What one pass takes of its log's settings ([`PassOptions`]), and how pass 2 groups segments ([`Grouping`]):
//! a leaf the settings, the passes and the manager all read, so none of them imports another for it.

use crate::settings::{DEFAULT_DELETE_RETENTION_MS, LogSettings};

/// What one pass takes of its log's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassOptions {
    /// Purge: a pass with the clock past every delete horizon stamped by an earlier pass, so every tombstone
    /// an earlier pass kept goes. A tombstone this pass sees for the first time is still kept and stamped: it
    /// must survive one pass so that consumers can see the delete.
    pub purge: bool,
    /// The log's `delete.retention.ms`: the horizon this pass stamps on tombstones it keeps for the first
    /// time is now plus this.
    pub delete_retention_ms: i64,
    /// The log's `min.compaction.lag.ms`: closed segments holding a record younger than this stay dirty.
    pub min_compaction_lag_ms: i64,
    /// How pass 2 groups segments.
    pub grouping: Grouping,
    /// Drop records without a key, as Kafka's cleaner does in a compacted topic (it counts them invalid: a
    /// broker refuses them there, so they are left from a time the topic was not compacted). When false, a
    /// pass that would drop one fails before its commit with [`Error::UnkeyedRecords`], the log unchanged:
    /// for a partition whose topic is not known to be compacted, where they are the data.
    pub drop_invalid: bool,
    /// The log's `max.decompressed.message.bytes`: a record of a compressed batch larger than this fails the
    /// pass ([`Error::RecordTooLarge`]), the log unchanged, as Kafka's cleaner fails on it.
    pub max_decompressed_message_bytes: u64,
    /// The broker's `producer.id.expiration.ms`: a producer whose last write is this much older than the
    /// pass's clock, with no transaction open, is not active when the partition's producer state is loaded
    /// ([`Log::active_producers`]), so its last batch is not kept for it.
    pub producer_id_expiration_ms: i64,
    /// Replica-safe removal (Redpanda's rule, applied offline): a tombstone or a transaction marker at or past
    /// this offset stays, whatever its delete horizon says, because some replica's cleaner has not cleaned past
    /// it (that replica may still hold an older value it shadows, or the transaction's data, and would keep
    /// them for good once it is gone from the leader). `None`: Kafka's rule, removal timed by the horizon alone.
    pub removal_floor: Option<u64>,
}

/// How pass 2 groups the closed segments it re-copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Grouping {
    /// Kafka's `groupSegmentsBySize`: adjacent segments whose sizes add up to at most `segment.bytes` become
    /// one output.
    #[default]
    BySize,
    /// Each segment is cleaned into a replacement of its own that keeps its base; only segments left empty
    /// go (the lesson's cleaning, `logcompact run` by default).
    None,
}

impl Default for PassOptions {
    fn default() -> Self {
        PassOptions {
            purge: false,
            delete_retention_ms: DEFAULT_DELETE_RETENTION_MS,
            min_compaction_lag_ms: 0,
            grouping: Grouping::BySize,
            drop_invalid: true,
            max_decompressed_message_bytes: crate::settings::DEFAULT_MAX_DECOMPRESSED_MESSAGE_BYTES,
            producer_id_expiration_ms: log_core::producers::DEFAULT_PRODUCER_ID_EXPIRATION_MS,
            removal_floor: None,
        }
    }
}

impl PassOptions {
    /// The default options with `purge` set.
    pub fn purge() -> Self {
        PassOptions { purge: true, ..PassOptions::default() }
    }
}

impl LogSettings {
    /// What one pass over the log takes of these settings.
    pub fn pass_options(&self, purge: bool) -> PassOptions {
        PassOptions {
            purge,
            delete_retention_ms: self.delete_retention_ms,
            min_compaction_lag_ms: self.min_compaction_lag_ms,
            grouping: Grouping::BySize,
            drop_invalid: true,
            max_decompressed_message_bytes: self.max_decompressed_message_bytes,
            producer_id_expiration_ms: log_core::producers::DEFAULT_PRODUCER_ID_EXPIRATION_MS,
            removal_floor: self.removal_floor,
        }
    }
}
