//! Kafka partition directories on disk: a partition `<log dir>/<topic>-<partition>/` opened with its cleaner
//! checkpoint in the log directory's `cleaner-offset-checkpoint`, for reading (no lock, nothing mapped, nothing
//! written) or for writing (under the broker's lock on the log directory).

use std::path::Path;
use std::sync::Arc;

use log_core::kafka::topic_partition;
use log_core::{CheckpointFile, SegmentStore};

use crate::error::Result;
use crate::store::{FileStore, log_dir_of};

/// A partition directory's stores: the partition's own and where its cleaner checkpoint lives.
#[derive(Debug, Clone)]
pub struct PartitionStores {
    /// The partition directory.
    pub partition: Arc<dyn SegmentStore>,
    /// Where its cleaner checkpoint is: the log directory's file, when the directory's name is
    /// `<topic>-<partition>`; else in memory only.
    pub checkpoint: CheckpointFile,
    /// `(topic, partition)` from the directory's name.
    pub topic_partition: Option<(String, u32)>,
}

fn name_of(dir: &Path) -> Option<(String, u32)> {
    let full = dir.canonicalize().ok()?;
    let name = full.file_name()?.to_str()?;
    topic_partition(name).map(|(t, p)| (t.to_owned(), p))
}

/// Opens the partition directory `dir` for reading only: no lock, nothing created, no file mapped.
///
/// # Errors
/// As [`FileStore::open_read_only`].
pub fn open_read_only(dir: &Path) -> Result<PartitionStores> {
    let partition: Arc<dyn SegmentStore> = Arc::new(FileStore::open_read_only(dir)?);
    let topic_partition = name_of(dir);
    let checkpoint = match (&topic_partition, log_dir_of(dir).ok()) {
        (Some((topic, p)), Some(log_dir)) => match FileStore::open_read_only(&log_dir) {
            Ok(store) => CheckpointFile::LogDir { dir: Arc::new(store), topic: topic.clone(), partition: *p },
            Err(_) => CheckpointFile::Memory,
        },
        _ => CheckpointFile::Memory,
    };
    Ok(PartitionStores { partition, checkpoint, topic_partition })
}

/// Opens the partition directory `dir` for writing, under the broker's lock on its log directory.
///
/// # Errors
/// As [`FileStore::open_kafka_partition`].
pub fn open_writable(dir: &Path) -> Result<PartitionStores> {
    open_writable_named(dir, name_of(dir), &crate::list_names(dir))
}

/// As [`open_writable`], with the names in `dir` its caller listed already (before anything was locked).
///
/// # Errors
/// As [`FileStore::open_kafka_partition`].
pub fn open_writable_listed(dir: &Path, names: &[String]) -> Result<PartitionStores> {
    open_writable_named(dir, name_of(dir), names)
}

/// [`open_writable`] with the topic and partition given (the checkpoint line they name) and the names listed.
fn open_writable_named(
    dir: &Path,
    topic_partition: Option<(String, u32)>,
    names: &[String],
) -> Result<PartitionStores> {
    let store = FileStore::open_kafka_partition_listed(dir, names)?;
    let checkpoint = match (&topic_partition, store.broker_lock().cloned()) {
        (Some((topic, p)), Some(lock)) => {
            let log_dir = log_dir_of(dir)?;
            CheckpointFile::LogDir {
                dir: Arc::new(FileStore::open_log_dir(&log_dir, lock)?),
                topic: topic.clone(),
                partition: *p,
            }
        }
        _ => CheckpointFile::Memory,
    };
    Ok(PartitionStores { partition: Arc::new(store), checkpoint, topic_partition })
}

/// The file a broker writes at the root of each of its log directories.
pub const META_PROPERTIES: &str = "meta.properties";

/// True when `dir` is a broker's log directory (it holds `meta.properties`, which a broker writes when it
/// formats or first uses one).
pub fn is_broker_log_dir(dir: &Path) -> bool {
    dir.join(META_PROPERTIES).is_file()
}

/// Opens a copy of a partition made in `dir` for writing. Inside a broker's log directory
/// ([`is_broker_log_dir`]) it is a partition like any other ([`open_writable`]); elsewhere (a copy made to
/// inspect it, say) it takes only its own directory's lock, and its checkpoint lives in memory only, so copies
/// side by side in one directory can be compacted at once.
///
/// # Errors
/// As [`open_writable`].
pub fn open_writable_copy(dir: &Path) -> Result<PartitionStores> {
    if log_dir_of(dir).is_ok_and(|p| is_broker_log_dir(&p)) {
        return open_writable(dir);
    }
    let store = FileStore::open_existing(dir)?;
    Ok(PartitionStores {
        partition: Arc::new(store),
        checkpoint: CheckpointFile::Memory,
        topic_partition: name_of(dir),
    })
}

/// As [`open_writable_copy`] for a copy made in `dir` under a temporary name, to be renamed `target` (a
/// directory beside it) once it is compacted: the topic and partition, and so the checkpoint line in a
/// broker's log directory, are `target`'s.
///
/// # Errors
/// As [`open_writable`].
pub fn open_writable_copy_as(dir: &Path, target: &Path) -> Result<PartitionStores> {
    if !log_dir_of(dir).is_ok_and(|p| is_broker_log_dir(&p)) {
        return open_writable_copy(dir);
    }
    let named = target.file_name().and_then(|n| n.to_str()).and_then(topic_partition);
    open_writable_named(dir, named.map(|(t, p)| (t.to_owned(), p)), &crate::list_names(dir))
}
