//! The one error type of the `cleaner` crate.

/// Result with [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can stop a cleaning pass.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The log failed: I/O, corruption (naming segment and position), or a poisoned log.
    #[error(transparent)]
    Log(#[from] log_core::Error),
    /// The dedupe buffer cannot hold a single key, so no pass could make progress.
    #[error(
        "dedupe buffer of {bytes} bytes holds no key at load factor {load_factor}; the {map} map needs at least {min_bytes} bytes"
    )]
    BufferTooSmall {
        /// Buffer size asked for.
        bytes: usize,
        /// Load factor asked for.
        load_factor: f64,
        /// Map kind.
        map: &'static str,
        /// Smallest buffer that holds one key.
        min_bytes: usize,
    },
    /// The machine cannot give the offset map its budget.
    #[error("cannot allocate a dedupe buffer of {bytes} bytes: {source}")]
    OutOfMemory {
        /// The budget asked for.
        bytes: usize,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A configuration value is out of range.
    #[error("invalid setting {setting} = {value}: {expected}")]
    InvalidConfig {
        /// The setting, by Kafka's name where it has one.
        setting: &'static str,
        /// The value given.
        value: String,
        /// What it must be.
        expected: &'static str,
    },
    /// A setting name this toolkit does not know.
    #[error(
        "unknown setting {name:?} (known: cleanup.policy, min.cleanable.dirty.ratio, min.compaction.lag.ms, max.compaction.lag.ms, delete.retention.ms, segment.bytes)"
    )]
    UnknownSetting {
        /// The name given.
        name: String,
    },
    /// A compressed batch holds a record larger than the log's `max.decompressed.message.bytes`: the pass fails,
    /// the log unchanged, as Kafka's cleaner fails on it (and marks the partition uncleanable).
    #[error(
        "{segment}: the record at offset {offset} is {bytes} bytes, over max.decompressed.message.bytes ({limit}), \
         as Kafka's cleaner would find it (\"Invalid record size\"); nothing was changed: raise the topic's \
         max.decompressed.message.bytes to clean it"
    )]
    RecordTooLarge {
        /// The segment.
        segment: String,
        /// The record's offset.
        offset: u64,
        /// Its size (its body, as Kafka counts it).
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The pass would drop records without a key and was not to ([`crate::PassOptions::drop_invalid`]); the log
    /// is unchanged.
    #[error(
        "the pass would drop {count} record(s) without a key (Kafka's cleaner drops them only in a compacted \
         topic, where a broker refuses them); nothing was changed"
    )]
    UnkeyedRecords {
        /// Records without a key the pass would have dropped.
        count: u64,
    },
    /// The external pass was asked for a section of more offsets than its entries hold ([`crate::external`]'s
    /// entries keep 40 bits of an offset from the pass's first); the log is unchanged.
    #[error(
        "the external pass spans at most {most} offsets, and this one would span {first}..{limit}: clean it with a \
         map (--map skimpy or compact); nothing was changed"
    )]
    SectionTooLong {
        /// The pass's first offset (its first closed segment's base).
        first: u64,
        /// The offset it would end below.
        limit: u64,
        /// The most offsets it spans.
        most: u64,
    },
    /// The pass was stopped on request (a shutdown) before its commit; the log is unchanged.
    #[error("the cleaning pass was stopped before its commit; the log is unchanged")]
    Aborted,
    /// Another process holds the log (the lock of its directory, or of its broker's log directory): not a
    /// failure of the log; a manager tries it again later and counts nothing.
    #[error("the log is busy: {holder}")]
    Busy {
        /// Who holds it, as the lock's owner is described.
        holder: String,
    },
    /// The log could not be opened for a reason outside `log-core` (its directory cannot be used as a store,
    /// say).
    #[error("{source}")]
    Unopenable {
        /// What the opener said.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The pass panicked (a bug); the log is unchanged unless the commit had begun, and then as after a
    /// failed commit.
    #[error("the cleaning pass panicked: {message}")]
    Panicked {
        /// The panic's message.
        message: String,
    },
}

impl Error {
    /// True for damage to stored data (what the log reports as corruption), as opposed to a busy log, an I/O
    /// failure, a full disk or bad settings.
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Log(e) if e.is_corruption())
    }

    /// An out-of-range setting.
    pub(crate) fn invalid(setting: &'static str, value: impl std::fmt::Display, expected: &'static str) -> Self {
        Error::InvalidConfig { setting, value: value.to_string(), expected }
    }
}
