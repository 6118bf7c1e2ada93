//! What a manager is told (its configuration, its run mode, how to open a log) and what it tells (its
//! events).

use std::sync::Arc;

use log_core::Log;

use crate::config::{CleanerConfig, DEFAULT_DEDUPE_BUFFER_BYTES, DEFAULT_LOAD_FACTOR};
use crate::error::{Error, Result};
use crate::map::MapKind;
use crate::stats::CleanStats;

/// Kafka's `log.cleaner.backoff.ms` default.
pub const DEFAULT_BACKOFF_MS: u64 = 15_000;

/// How a manager runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Until no log is cleanable and no pass runs (retries that are not due yet are not waited for: a caller that
    /// wants them runs again at the earliest `retry_at_ms` of [`ManagerStatus::logs`]).
    UntilClean,
    /// Until [`CleanerManager::stop`].
    Watch,
}

/// The manager's settings (Kafka's broker settings for the cleaner, under their names).
#[derive(Debug, Clone, PartialEq)]
pub struct ManagerConfig {
    /// `log.cleaner.threads` (1).
    pub threads: usize,
    /// `log.cleaner.dedupe.buffer.size` (128 MiB), split evenly between the threads.
    pub dedupe_buffer_bytes: usize,
    /// `log.cleaner.io.buffer.load.factor` (0.9).
    pub load_factor: f64,
    /// The offset map (Kafka's is `skimpy`).
    pub map: MapKind,
    /// `log.cleaner.backoff.ms` (15 s): how long a thread with nothing to clean sleeps.
    pub backoff_ms: u64,
    /// `log.cleaner.io.max.bytes.per.second` (unlimited): the bytes all threads together read per second.
    pub io_max_bytes_per_second: f64,
    /// Retries of a log whose pass failed before it waits for a request (3).
    pub max_retries: u32,
    /// The wait before the first retry (10 s); it doubles with every failure.
    pub retry_backoff_ms: u64,
    /// Where the external pass spills its runs (the system's temporary directory when `None`).
    pub spill_dir: Option<std::path::PathBuf>,
    /// One pass whatever the keys: a map that fills falls back to the external pass
    /// ([`CleanerConfig::one_pass`], `--map auto`).
    pub one_pass: bool,
}

impl Default for ManagerConfig {
    fn default() -> Self {
        ManagerConfig {
            threads: 1,
            dedupe_buffer_bytes: DEFAULT_DEDUPE_BUFFER_BYTES,
            load_factor: DEFAULT_LOAD_FACTOR,
            map: MapKind::Skimpy,
            backoff_ms: DEFAULT_BACKOFF_MS,
            io_max_bytes_per_second: f64::INFINITY,
            max_retries: 3,
            retry_backoff_ms: 10_000,
            spill_dir: None,
            one_pass: false,
        }
    }
}

impl ManagerConfig {
    /// The configuration of one thread's cleaner: its share of the buffer.
    pub fn thread_config(&self) -> CleanerConfig {
        CleanerConfig {
            map: self.map,
            dedupe_buffer_bytes: self.dedupe_buffer_bytes / self.threads.max(1),
            load_factor: self.load_factor,
            spill_dir: self.spill_dir.clone(),
            threads: 1,
            one_pass: self.one_pass,
        }
    }

    /// Checks the values (and that a thread's share of the buffer holds a key).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] or [`Error::BufferTooSmall`].
    pub fn validate(&self) -> Result<()> {
        if !(1..=crate::MAX_PASS_THREADS).contains(&self.threads) {
            return Err(Error::invalid("log.cleaner.threads", self.threads, "from 1 to 256"));
        }
        if self.io_max_bytes_per_second.is_nan() || self.io_max_bytes_per_second <= 0.0 {
            return Err(Error::invalid(
                "log.cleaner.io.max.bytes.per.second",
                self.io_max_bytes_per_second,
                "positive",
            ));
        }
        self.thread_config().validate()
    }
}

/// Opens a log: again for a retry after a failed write poisoned it, or for each pass of a detached log.
/// [`Error::Busy`] says another process holds it: not a failure, the log is tried again later.
pub type Opener = Box<dyn Fn() -> Result<Log> + Send + Sync>;

/// An [`Opener`] shared by the states a log goes through (attached, unopened).
pub(super) type SharedOpener = Arc<dyn Fn() -> Result<Log> + Send + Sync>;

/// What the manager reports as it works.
#[derive(Debug, Clone)]
pub enum Event {
    /// A pass ended.
    Cleaned {
        /// The thread.
        thread: usize,
        /// The log.
        log: String,
        /// The pass's statistics.
        stats: Box<CleanStats>,
        /// Passes run on this log so far.
        passes: u64,
    },
    /// A pass failed: the log is uncleanable until `retry_at_ms` (or a request, when `None`).
    Failed {
        /// The thread.
        thread: usize,
        /// The log.
        log: String,
        /// What went wrong ([`Error::is_corruption`] tells damage to stored data).
        error: Arc<Error>,
        /// Passes that failed in a row.
        failures: u32,
        /// When it is retried.
        retry_at_ms: Option<i64>,
    },
    /// The active segment was rolled because its first record was older than `max.compaction.lag.ms`.
    Rolled {
        /// The log.
        log: String,
    },
}
