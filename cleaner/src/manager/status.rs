//! What an operator reads of a running manager: Kafka's cleaner gauges, and per log the figures that say
//! which one is stuck (the gauges alone are maxima that hide it).

use serde::{Deserialize, Serialize};

/// Kafka's `kafka.log:type=LogCleaner` and `LogCleanerManager` gauges, under their names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Gauges {
    /// The largest buffer utilization (keys held over slots) among the threads' last passes, in percent.
    #[serde(rename = "max-buffer-utilization-percent")]
    pub max_buffer_utilization_percent: f64,
    /// Bytes written over bytes read by pass 2, over the threads' last passes, in percent.
    #[serde(rename = "cleaner-recopy-percent")]
    pub cleaner_recopy_percent: f64,
    /// The longest of the threads' last passes, in seconds.
    #[serde(rename = "max-clean-time-secs")]
    pub max_clean_time_secs: f64,
    /// How far past `max.compaction.lag.ms` the logs of the threads' last passes were when taken, at most,
    /// in seconds.
    #[serde(rename = "max-compaction-delay-secs")]
    pub max_compaction_delay_secs: f64,
    /// Logs marked uncleanable.
    #[serde(rename = "uncleanable-partitions-count")]
    pub uncleanable_partitions_count: u64,
    /// Dirty bytes of the logs marked uncleanable.
    #[serde(rename = "uncleanable-bytes")]
    pub uncleanable_bytes: u64,
    /// Cleaner threads that died (a panic outside a pass).
    #[serde(rename = "DeadThreadCount")]
    pub dead_thread_count: u64,
    /// Milliseconds since a cleaner thread last looked for a log to clean (since the start before the first
    /// look).
    #[serde(rename = "time-since-last-run-ms", default)]
    pub time_since_last_run_ms: i64,
    /// The highest dirty ratio, in percent, among the cleanable logs at that look.
    #[serde(rename = "max-dirty-percent", default)]
    pub max_dirty_percent: f64,
}

/// Where a log stands with the manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogState {
    /// Waiting for a thread (or for more dirt).
    Idle,
    /// A pass is running on it.
    Cleaning,
    /// Its last pass failed; retried at `retry_at_ms`, or only on request when that is `None`.
    Uncleanable,
    /// Its `cleanup.policy` is `delete`: the cleaner leaves it alone.
    NotCompacted,
}

/// One log's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogStatus {
    /// The log's name.
    pub name: String,
    /// Its state.
    pub state: LogState,
    /// Dirty bytes over clean plus dirty bytes, now.
    pub dirty_ratio: f64,
    /// Bytes a pass could take now.
    pub dirty_bytes: u64,
    /// Bytes already through a pass.
    pub clean_bytes: u64,
    /// Bytes of the active segment and of segments too young to clean.
    pub held_back_bytes: u64,
    /// Its `min.cleanable.dirty.ratio`.
    pub min_cleanable_dirty_ratio: f64,
    /// Its settings.
    pub settings: crate::settings::LogSettings,
    /// How far past `max.compaction.lag.ms` its oldest dirty record is, in ms (0 when it is not).
    pub compaction_delay_ms: i64,
    /// Passes run on it by this manager.
    pub passes: u64,
    /// When its last pass ended (ms since the epoch).
    pub last_clean_ms: Option<i64>,
    /// Seconds its last pass took.
    pub last_clean_secs: Option<f64>,
    /// Its last error, if its last pass failed.
    pub last_error: Option<String>,
    /// True when that error is damage to stored data (not a busy log, an I/O error, a full disk).
    #[serde(default)]
    pub last_error_is_corruption: bool,
    /// Passes that failed in a row.
    pub failures: u32,
    /// Passes that failed in all.
    pub total_failures: u64,
    /// When the next retry of a failed log is due (ms since the epoch); `None` when retries are spent (then
    /// only on request).
    pub retry_at_ms: Option<i64>,
}

/// The manager's status.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ManagerStatus {
    /// When the status was taken (ms since the epoch).
    pub at_ms: i64,
    /// Cleaner threads.
    pub threads: usize,
    /// The scheduling policy.
    pub policy: String,
    /// Passes run in all.
    pub passes: u64,
    /// The gauges.
    pub gauges: Gauges,
    /// Every log, by name.
    pub logs: Vec<LogStatus>,
}
