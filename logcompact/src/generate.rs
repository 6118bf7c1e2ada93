//! `gen`: a deterministic synthetic workload appended to the native log in a directory (created if missing;
//! appends continue an existing log), for trying the cleaner on data of a known shape.

use std::path::{Path, PathBuf};
use std::time::Instant;

use log_core::LogConfig;
use log_core::workload::Workload;
use serde::Serialize;

use crate::dir::{OpenError, open_or_create};

/// What [`generate`] appended.
#[derive(Debug, Clone, Serialize)]
pub struct Generated {
    /// Records appended.
    pub records: u64,
    /// Tombstones among them.
    pub tombstones: u64,
    /// The log's next offset after them.
    pub next_offset: u64,
    /// Segments of the log, the active one included.
    pub segments: usize,
    /// Time taken, appending and syncing.
    pub seconds: f64,
    /// Records appended a second.
    pub records_per_second: f64,
    /// The workload.
    pub workload: Workload,
    /// Bytes of the log's segments after the appends.
    #[serde(skip)]
    pub bytes: u64,
    /// Records in the active segment, which no pass takes.
    #[serde(skip)]
    pub active_records: u64,
    /// What opening the log repaired, as sentences.
    #[serde(skip)]
    pub recovery: Vec<String>,
}

/// Why [`generate`] appended nothing, or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GenerateError {
    /// A workload without keys.
    #[error("a workload needs at least one key")]
    NoKeys,
    /// Values larger than a record can carry.
    #[error("a value of {given} bytes is larger than a record can be ({limit} bytes of value at most)")]
    ValueTooLarge {
        /// The value size asked for.
        given: usize,
        /// The largest a record of 16-byte keys carries.
        limit: usize,
    },
    /// The log's settings are wrong.
    #[error("{0}")]
    Config(#[source] log_core::Error),
    /// The directory could not be opened or created as a log.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// An append or the final sync failed.
    #[error("{}: {what}: {source}", dir.display())]
    Log {
        /// The directory.
        dir: PathBuf,
        /// What failed (`cannot append`, `cannot sync the log`).
        what: &'static str,
        /// The log's error.
        #[source]
        source: Box<log_core::Error>,
    },
}

/// Appends `workload` to the native log in `dir` (created if missing) with `config`, timestamps 1 ms apart
/// ending now (never in the future, where `min.compaction.lag.ms` would hold them), calling `progress` with the
/// records and bytes appended so far (every 4096 records); syncs before returning. Everything is checked before a byte is allocated or
/// written.
///
/// # Errors
/// [`GenerateError`].
pub fn generate(
    dir: &Path,
    workload: Workload,
    config: LogConfig,
    mut progress: impl FnMut(u64, u64),
) -> Result<Generated, GenerateError> {
    if workload.keys == 0 {
        return Err(GenerateError::NoKeys);
    }
    let limit = log_core::codec::MAX_RECORD_BYTES - 64;
    if workload.value_bytes > limit {
        return Err(GenerateError::ValueTooLarge { given: workload.value_bytes, limit });
    }
    config.validate().map_err(GenerateError::Config)?;
    let opened = open_or_create(dir, log_core::Format::Native, config)?;
    let log = &opened.log;
    let recovery = crate::describe_recovery(log.recovery_report(), true);
    let failed = |what| move |source| GenerateError::Log { dir: dir.to_path_buf(), what, source: Box::new(source) };
    let started = Instant::now();
    let base_timestamp = log_core::now_ms().saturating_sub(i64::try_from(workload.records).unwrap_or(i64::MAX));
    let before = size(log);
    let appended = |n| progress(n, size(log).saturating_sub(before));
    let tombstones = workload.append_to(log, base_timestamp, appended).map_err(failed("cannot append"))?;
    log.sync().map_err(failed("cannot sync the log"))?;
    let seconds = started.elapsed().as_secs_f64();
    let snapshot = log.snapshot();
    let bytes = size(log);
    Ok(Generated {
        records: workload.records,
        tombstones,
        next_offset: log.next_offset(),
        segments: snapshot.closed().len() + 1,
        seconds,
        records_per_second: workload.records as f64 / seconds.max(1e-9),
        workload,
        bytes,
        active_records: log.dirty_section(log_core::now_ms(), 0).active_records,
        recovery,
    })
}

/// The bytes of every segment of `log`.
fn size(log: &log_core::Log) -> u64 {
    let snapshot = log.snapshot();
    snapshot.closed().iter().map(|s| s.size()).sum::<u64>() + snapshot.active_len()
}
