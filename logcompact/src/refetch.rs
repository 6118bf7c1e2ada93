//! Kafka's remedy for a replica that disagrees with the others ([`crate::audit`]): with its broker stopped, the
//! partition directory moves out of the log directory, so that at its next start the broker, which the
//! metadata still names as a replica, makes the partition anew and fetches all of it from the leader.
//!
//! Done under the broker's own lock on the log directory (a running broker holds it: refused), with every
//! path resolved (a symbolic link cannot lead the move elsewhere). The partition's lines leave the log
//! directory's checkpoint files first (each replaced whole: written, synced, renamed), then the directory is
//! renamed, never copied: nothing is deleted, and the moved directory keeps every byte for inspection. A crash
//! between the two steps leaves a partition without checkpoint lines, which the broker recovers from its
//! segments as after an unclean stop.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use log_core::SegmentStore;
use log_core::kafka::checkpoints;

/// What [`refetch`] is asked to do.
#[derive(Debug, Clone)]
pub struct RefetchRequest {
    /// The broker's log directory holding the partition.
    pub log_dir: PathBuf,
    /// `<topic>-<partition>`.
    pub partition: String,
    /// Where the partition directory goes (outside every log directory of the broker; the same file system).
    pub to: PathBuf,
}

/// What [`refetch`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refetched {
    /// Where the partition directory is now.
    pub moved_to: PathBuf,
    /// The checkpoint files whose line of the partition was removed.
    pub checkpoints: Vec<&'static str>,
}

/// Why a refetch was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum RefetchError {
    /// Not a partition directory of the log directory.
    #[error("{}: no partition directory {partition} in it", log_dir.display())]
    NoPartition {
        /// The log directory.
        log_dir: PathBuf,
        /// The partition asked for.
        partition: String,
    },
    /// The metadata log, which the raft layer owns.
    #[error("{partition} is the cluster's metadata log: never moved (the broker's raft layer owns it)")]
    MetadataLog {
        /// The partition asked for.
        partition: String,
    },
    /// The destination lies inside the log directory (a stray directory there stops the broker).
    #[error("{} lies inside the log directory {}: a directory left there stops the broker; give one outside it", to.display(), log_dir.display())]
    InsideLogDir {
        /// The destination.
        to: PathBuf,
        /// The log directory.
        log_dir: PathBuf,
    },
    /// The broker (or another run) holds the log directory.
    #[error("{}: {source}", log_dir.display())]
    Busy {
        /// The log directory.
        log_dir: PathBuf,
        /// What the lock said.
        #[source]
        source: storage_file::Error,
    },
    /// A checkpoint file could not be rewritten.
    #[error("{}: {source}", log_dir.display())]
    Checkpoint {
        /// The log directory.
        log_dir: PathBuf,
        /// The error.
        #[source]
        source: log_core::Error,
    },
    /// A file operation failed.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was done.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// The checkpoint files of a log directory that name partitions.
const CHECKPOINT_FILES: [&str; 4] = [
    checkpoints::CLEANER_OFFSET_CHECKPOINT,
    checkpoints::RECOVERY_POINT_OFFSET_CHECKPOINT,
    checkpoints::LOG_START_OFFSET_CHECKPOINT,
    checkpoints::REPLICATION_OFFSET_CHECKPOINT,
];

/// Syncs the directory `dir` (the destination, which no store of ours holds).
fn sync_dir(dir: &Path) -> Result<(), RefetchError> {
    std::fs::File::open(dir).and_then(|f| f.sync_all()).map_err(|source| RefetchError::Io {
        what: "sync",
        path: dir.to_path_buf(),
        source,
    })
}

/// Moves the partition out of the broker's log directory, as [`RefetchRequest`] says.
///
/// # Errors
/// [`RefetchError`]; nothing is changed when the request is refused.
pub fn refetch(req: &RefetchRequest) -> Result<Refetched, RefetchError> {
    fn io<'p>(what: &'static str, path: &'p Path) -> impl FnOnce(std::io::Error) -> RefetchError + 'p {
        move |source| RefetchError::Io { what, path: path.to_path_buf(), source }
    }
    let log_dir = req.log_dir.canonicalize().map_err(io("open", &req.log_dir))?;
    let no_partition = || RefetchError::NoPartition { log_dir: req.log_dir.clone(), partition: req.partition.clone() };
    let (topic, partition) = log_core::kafka::topic_partition(&req.partition).ok_or_else(no_partition)?;
    let dir = log_dir.join(&req.partition);
    // The directory itself, not a link to one elsewhere.
    let meta = std::fs::symlink_metadata(&dir).map_err(|_| no_partition())?;
    if !meta.is_dir() || req.partition.contains('/') {
        return Err(no_partition());
    }
    if storage_file::metadata_log_sign(&dir).is_some() {
        return Err(RefetchError::MetadataLog { partition: req.partition.clone() });
    }
    let to = req.to.canonicalize().map_err(io("open", &req.to))?;
    if to.starts_with(&log_dir) {
        return Err(RefetchError::InsideLogDir { to: req.to.clone(), log_dir: req.log_dir.clone() });
    }
    let lock = storage_file::lock_log_dir(&log_dir)
        .map_err(|source| RefetchError::Busy { log_dir: req.log_dir.clone(), source })?;
    let moved_to = to.join(format!("{}.refetched-{}", req.partition, log_core::now_ms()));
    if moved_to.exists() {
        return Err(RefetchError::Io {
            what: "move to",
            path: moved_to,
            source: std::io::Error::from(std::io::ErrorKind::AlreadyExists),
        });
    }
    let store = storage_file::FileStore::open_log_dir(&log_dir, Arc::clone(&lock))
        .map_err(|source| RefetchError::Busy { log_dir: req.log_dir.clone(), source })?;
    let mut edited = Vec::new();
    for name in CHECKPOINT_FILES {
        let checkpoint = |source| RefetchError::Checkpoint { log_dir: req.log_dir.clone(), source };
        let Some(mut entries) = checkpoints::read(&store, name).map_err(checkpoint)? else { continue };
        if entries.remove(topic, partition) {
            checkpoints::write(&store, name, &entries).map_err(checkpoint)?;
            edited.push(name);
        }
    }
    std::fs::rename(&dir, &moved_to).map_err(io("move", &dir))?;
    store.sync_dir().map_err(io("sync", &log_dir))?;
    sync_dir(&to)?;
    drop(lock);
    Ok(Refetched { moved_to, checkpoints: edited })
}
