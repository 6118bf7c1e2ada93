//! Opening a directory on disk as a [`Log`]: a native log's directory, or a Kafka partition directory
//! (`<log dir>/<topic>-<partition>/`, its cleaner checkpoint in the log directory's `cleaner-offset-checkpoint`).
//!
//! Read-only opens take no lock, create nothing and map nothing a broker may change; writable opens lock
//! the directory (and, for a Kafka partition, take the broker's lock on the log directory) and never create a
//! log where there is none.

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use crate::look::{DirKind, Listing, dir_kind, holds_kafka_partitions};
pub use crate::open_error::OpenError;
use log_core::layout::Layout;
use log_core::{CheckpointFile, Format, Log, LogConfig, SegmentStore};

/// A log opened from a directory, with where its cleaner checkpoint lives.
#[derive(Debug)]
pub struct OpenedLog {
    /// The log.
    pub log: Log,
    /// The directory.
    pub dir: PathBuf,
    /// Where the checkpoint was read from, for reports.
    pub checkpoint_source: String,
}

fn store_error(dir: &Path) -> impl FnOnce(storage_file::Error) -> OpenError + '_ {
    move |source| OpenError::Store { dir: dir.to_path_buf(), source }
}

fn log_error(dir: &Path) -> impl FnOnce(log_core::Error) -> OpenError + '_ {
    move |source| match source {
        log_core::Error::NotALog { found, other_format } => {
            OpenError::NotALog { dir: dir.to_path_buf(), format: Format::Native, found, other_format }
        }
        source => OpenError::Log { dir: dir.to_path_buf(), source },
    }
}

/// Opens the log in `dir` for reading only, from a directory whose names did not change while it was read (a
/// running broker's cleaner renames files as it swaps segments): read again while they change, a few times
/// ([`crate::steady_read`]).
///
/// # Errors
/// [`OpenError`].
pub fn open_read_only(dir: &Path, format: Format) -> Result<OpenedLog, OpenError> {
    crate::steady_read::read_while_still(dir, || open_read_only_once(dir, format))
}

fn open_read_only_once(dir: &Path, format: Format) -> Result<OpenedLog, OpenError> {
    match format {
        Format::Native => {
            let store: Arc<dyn SegmentStore> =
                Arc::new(storage_file::FileStore::open_read_only(dir).map_err(store_error(dir))?);
            let log = Log::open(store, log_core::OpenOptions::new(LogConfig::default()).read_only(true))
                .map_err(log_error(dir))?;
            Ok(OpenedLog { log, dir: dir.to_path_buf(), checkpoint_source: log_core::names::CHECKPOINT_FILE.into() })
        }
        Format::Kafka => {
            let stores = storage_file::kafka::open_read_only(dir).map_err(store_error(dir))?;
            let source = stores.checkpoint.describe();
            let log = Log::open(
                stores.partition,
                log_core::OpenOptions::kafka(LogConfig::default(), stores.checkpoint).read_only(true),
            )
            .map_err(|e| kafka_error(dir, e))?;
            Ok(OpenedLog { log, dir: dir.to_path_buf(), checkpoint_source: source })
        }
    }
}

/// As [`open_read_only`] for a command that reads only the records (`dump`): a Kafka partition's checkpoint
/// files in its log directory (the cleaner's, the log start's, the high watermark's) are not read, so one that
/// is damaged or not a regular file does not keep the records from being read.
///
/// # Errors
/// As [`open_read_only`].
pub fn open_records_only(dir: &Path, format: Format) -> Result<OpenedLog, OpenError> {
    if format == Format::Native {
        return open_read_only(dir, format);
    }
    crate::steady_read::read_while_still(dir, || open_kafka_records_once(dir))
}

fn open_kafka_records_once(dir: &Path) -> Result<OpenedLog, OpenError> {
    let stores = storage_file::kafka::open_read_only(dir).map_err(store_error(dir))?;
    let checkpoint = log_core::CheckpointFile::Memory;
    let log = Log::open(
        stores.partition,
        log_core::OpenOptions::kafka(LogConfig::default(), checkpoint.clone()).read_only(true),
    )
    .map_err(|e| kafka_error(dir, e))?;
    Ok(OpenedLog { log, dir: dir.to_path_buf(), checkpoint_source: checkpoint.describe() })
}

/// Opens the existing log in `dir` for writing with `config`; a directory that holds no log is refused (a
/// command that changes a log never creates one).
///
/// # Errors
/// [`OpenError`]; [`OpenError::Store`] with a lock error when another process holds it.
pub fn open_writable(dir: &Path, format: Format, config: LogConfig) -> Result<OpenedLog, OpenError> {
    open_writable_as(dir, format, config, None, None)
}

/// As [`open_writable`], with the directory's names read already before anything was locked
/// ([`Listing::read`]), so that a Kafka partition's directory is not listed again to tell what it is.
///
/// # Errors
/// As [`open_writable`].
pub fn open_writable_listed(
    dir: &Path,
    format: Format,
    config: LogConfig,
    listing: &Listing,
) -> Result<OpenedLog, OpenError> {
    open_writable_as(dir, format, config, None, Some(listing))
}

/// Opens the log in `dir` for writing with `config`, creating the directory and an empty log of `format` where
/// there is none: for a program that writes a log of its own (the `gen` command, the examples). A Kafka
/// partition is created as a broker lays one out (`<log dir>/<topic>-<partition>/`, taken under the broker's
/// lock on its log directory). Commands that change a log someone else wrote use [`open_writable`], which never
/// creates one.
///
/// # Errors
/// [`OpenError`]; [`OpenError::NotALog`] for a directory holding a log of the other format.
pub fn open_or_create(dir: &Path, format: Format, config: LogConfig) -> Result<OpenedLog, OpenError> {
    match format {
        Format::Native => {
            let store: Arc<dyn SegmentStore> = Arc::new(storage_file::FileStore::open(dir).map_err(store_error(dir))?);
            let log = Log::open(store, log_core::OpenOptions::new(config)).map_err(log_error(dir))?;
            Ok(OpenedLog { log, dir: dir.to_path_buf(), checkpoint_source: log_core::names::CHECKPOINT_FILE.into() })
        }
        Format::Kafka => {
            std::fs::create_dir_all(dir).map_err(|source| OpenError::Store {
                dir: dir.to_path_buf(),
                source: storage_file::Error::Io { op: "create", path: dir.to_path_buf(), source },
            })?;
            let stores = storage_file::kafka::open_writable(dir).map_err(store_error(dir))?;
            let source = stores.checkpoint.describe();
            let log = Log::open(stores.partition, log_core::OpenOptions::kafka(config, stores.checkpoint))
                .map_err(|e| kafka_error(dir, e))?;
            Ok(OpenedLog { log, dir: dir.to_path_buf(), checkpoint_source: source })
        }
    }
}

/// As [`open_writable`] for a copy made by this process (`compact --out`): a Kafka copy outside a broker's log
/// directory takes no broker lock and keeps its checkpoint in memory
/// ([`storage_file::kafka::open_writable_copy`]).
///
/// # Errors
/// As [`open_writable`].
pub fn open_writable_copy(dir: &Path, format: Format, config: LogConfig) -> Result<OpenedLog, OpenError> {
    open_writable_as(dir, format, config, Some(dir), None)
}

/// As [`open_writable_copy`] for a copy made in `dir` under a temporary name, to be renamed `target` once
/// compacted: a Kafka copy's topic and partition (its checkpoint line in a broker's log directory) are
/// `target`'s.
///
/// # Errors
/// As [`open_writable`].
pub fn open_writable_copy_as(
    dir: &Path,
    target: &Path,
    format: Format,
    config: LogConfig,
) -> Result<OpenedLog, OpenError> {
    open_writable_as(dir, format, config, Some(target), None)
}

/// Opens `dir` for writing; `copy_of` names the copy's target when it is a copy made by this process, and
/// `listing` the directory's names when they were read already.
fn open_writable_as(
    dir: &Path,
    format: Format,
    config: LogConfig,
    copy_of: Option<&Path>,
    listing: Option<&Listing>,
) -> Result<OpenedLog, OpenError> {
    match format {
        Format::Native => {
            let store = native_store(dir, true)?;
            let log = Log::open(store, log_core::OpenOptions::new(config)).map_err(log_error(dir))?;
            Ok(OpenedLog { log, dir: dir.to_path_buf(), checkpoint_source: log_core::names::CHECKPOINT_FILE.into() })
        }
        Format::Kafka => {
            let stores = match copy_of {
                Some(target) => kafka_copy_stores(dir, target)?,
                // A listing of another directory is no look at this one: it is listed here.
                None => match listing.filter(|l| l.dir() == dir) {
                    Some(listing) => kafka_stores_listed(dir, true, listing)?,
                    None => kafka_stores(dir, true)?,
                },
            };
            let source = stores.checkpoint.describe();
            let log = Log::open(stores.partition, log_core::OpenOptions::kafka(config, stores.checkpoint))
                .map_err(|e| kafka_error(dir, e))?;
            Ok(OpenedLog { log, dir: dir.to_path_buf(), checkpoint_source: source })
        }
    }
}

/// The store of the native log in `dir`: locked for writing (`writable`), or read-only (no lock); a directory
/// that holds no native log is refused.
///
/// # Errors
/// [`OpenError::Store`]; [`OpenError::NotALog`].
pub fn native_store(dir: &Path, writable: bool) -> Result<Arc<dyn SegmentStore>, OpenError> {
    let store: Arc<dyn SegmentStore> = if writable {
        Arc::new(storage_file::FileStore::open_existing(dir).map_err(store_error(dir))?)
    } else {
        Arc::new(storage_file::FileStore::open_read_only(dir).map_err(store_error(dir))?)
    };
    refuse_empty(dir, &*store)?;
    Ok(store)
}

/// The stores of the Kafka partition in `dir`: under the broker's lock on its log directory (`writable`), or
/// read-only (no lock, nothing mapped). A directory without a segment is refused before anything is locked or
/// created.
///
/// # Errors
/// [`OpenError::Store`] (a lock error when a broker holds it); [`OpenError::NotALog`].
pub fn kafka_stores(dir: &Path, writable: bool) -> Result<storage_file::kafka::PartitionStores, OpenError> {
    kafka_stores_listed(dir, writable, &Listing::read(dir))
}

/// As [`kafka_stores`], with the directory's names read already ([`Listing::read`]).
fn kafka_stores_listed(
    dir: &Path,
    writable: bool,
    listing: &Listing,
) -> Result<storage_file::kafka::PartitionStores, OpenError> {
    refuse_no_kafka_segment(dir, listing)?;
    if writable {
        storage_file::kafka::open_writable_listed(dir, listing.names()).map_err(store_error(dir))
    } else {
        storage_file::kafka::open_read_only(dir).map_err(store_error(dir))
    }
}

/// As [`kafka_stores`] for a copy made by this process: outside a broker's log directory no broker lock is
/// taken and the checkpoint is kept in memory.
fn kafka_copy_stores(dir: &Path, target: &Path) -> Result<storage_file::kafka::PartitionStores, OpenError> {
    refuse_no_kafka_segment(dir, &Listing::read(dir))?;
    storage_file::kafka::open_writable_copy_as(dir, target).map_err(store_error(dir))
}

/// Refuses a directory with neither a segment nor a segment swap of Kafka's.
fn refuse_no_kafka_segment(dir: &Path, listing: &Listing) -> Result<(), OpenError> {
    if !listing.has_kafka_segment() {
        return Err(OpenError::NotALog {
            dir: dir.to_path_buf(),
            format: Format::Kafka,
            found: "no segment file (<20-digit base>.log)".into(),
            other_format: false,
        });
    }
    Ok(())
}

fn kafka_error(dir: &Path, e: log_core::Error) -> OpenError {
    match e {
        log_core::Error::NotALog { found, other_format } => {
            OpenError::NotALog { dir: dir.to_path_buf(), format: Format::Kafka, found, other_format }
        }
        source => OpenError::Log { dir: dir.to_path_buf(), source },
    }
}

/// Refuses a native store that holds no log, or a log of another format.
///
/// # Errors
/// [`OpenError::NotALog`] saying what the directory holds instead.
pub fn refuse_empty(dir: &Path, store: &dyn SegmentStore) -> Result<(), OpenError> {
    let layout = Layout::scan(store).map_err(log_error(dir))?;
    if let Some((found, other_format)) = layout.foreign_format(store) {
        return Err(OpenError::NotALog { dir: dir.to_path_buf(), format: Format::Native, found, other_format });
    }
    if layout.has_no_segments() {
        let found = layout.describe();
        return Err(OpenError::NotALog { dir: dir.to_path_buf(), format: Format::Native, found, other_format: false });
    }
    Ok(())
}

/// A first dirty offset given by hand past the end of the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the first dirty offset {given} given is past the end of the log (its next offset is {end})")]
pub struct CheckpointPastEnd {
    /// The offset given.
    pub given: u64,
    /// The log's next offset.
    pub end: u64,
}

/// Starts the log's dirty section at `checkpoint` (for this process only: nothing is written), refusing an
/// offset past the end of the log instead of clamping it.
///
/// # Errors
/// [`CheckpointPastEnd`].
pub fn start_dirty_at(log: &Log, checkpoint: u64) -> Result<(), CheckpointPastEnd> {
    let end = log.next_offset();
    if checkpoint > end {
        return Err(CheckpointPastEnd { given: checkpoint, end });
    }
    log.set_cleaner_checkpoint(checkpoint);
    Ok(())
}

/// The checkpoint file of a native log, for naming in reports.
pub fn checkpoint_place(format: Format) -> &'static str {
    match format {
        Format::Native => log_core::names::CHECKPOINT_FILE,
        Format::Kafka => "the log directory's cleaner-offset-checkpoint",
    }
}

/// Where a Kafka partition directory's checkpoint lives, without opening it.
pub fn kafka_checkpoint(dir: &Path) -> CheckpointFile {
    storage_file::kafka::open_read_only(dir).map_or(CheckpointFile::Memory, |s| s.checkpoint)
}

/// The bytes of the segment files (`*.log`) in `dir`, read from its listing and the files' sizes (nothing is
/// opened): what reading the log costs, for a progress total. A directory that cannot be listed counts 0.
pub fn segment_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}
