//! The cleaner checkpoint: the first dirty offset, and where each format keeps it.
//!
//! - A native log keeps it in its own store, in `cleaner-offset-checkpoint`: a header line and the offset.
//! - A Kafka partition's lives in its log directory (the partition directory's parent), in the broker's
//!   `cleaner-offset-checkpoint`: version `0`, an entry count, then `topic partition offset` lines, one per
//!   partition of the directory. A pass rewrites the file with its own line replaced (or added) and every other
//!   line as it was. [`crate::format::kafka::checkpoints`] reads and writes that format.
//!
//! Both are replaced atomically: a temporary file, sync, rename, directory sync. Every read is bounded in size.

use std::io;
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::format::kafka::checkpoints::{self, CheckpointEntries};
use crate::names::{CHECKPOINT_FILE, CHECKPOINT_TMP_FILE};
use crate::storage::SegmentStore;

const HEADER: &str = "logcompact-checkpoint 1\n";

/// Where a log's cleaner checkpoint is kept.
#[derive(Debug, Clone)]
pub enum CheckpointFile {
    /// In the log's own store (a native log).
    Own,
    /// The partition's line in the broker's `cleaner-offset-checkpoint` of the log directory `dir`.
    LogDir {
        /// The log directory.
        dir: Arc<dyn SegmentStore>,
        /// The topic.
        topic: String,
        /// The partition.
        partition: u32,
    },
    /// Nowhere on disk (a Kafka partition directory whose name is not `<topic>-<partition>`, or with no log
    /// directory around it): the checkpoint lives as long as the open log, and every open starts from the log's
    /// start, which is always correct, only slower.
    Memory,
}

/// The marker of a broker's clean stop in its log directory.
pub const CLEAN_SHUTDOWN_FILE: &str = ".kafka_cleanshutdown";

/// Serialises read-modify-write cycles of the shared checkpoint files of this process (a log directory's
/// partitions cleaned by several threads). Other processes are kept out by the broker's lock.
static SHARED_FILES: Mutex<()> = Mutex::new(());

impl CheckpointFile {
    /// Reads the checkpoint of the log in `store`; `Ok(None)` when none was written.
    ///
    /// # Errors
    /// [`Error::BadCheckpoint`] for a file that does not parse; [`Error::Io`].
    pub fn read(&self, store: &dyn SegmentStore) -> Result<Option<u64>> {
        match self {
            CheckpointFile::Own => read_own(store),
            CheckpointFile::LogDir { dir, topic, partition } => {
                let entries = checkpoints::read(&**dir, checkpoints::CLEANER_OFFSET_CHECKPOINT)?;
                match entries.and_then(|e| e.get(topic, *partition)) {
                    Some(o) => u64::try_from(o).map(Some).map_err(|_| Error::BadCheckpoint {
                        name: checkpoints::CLEANER_OFFSET_CHECKPOINT.into(),
                        reason: "a negative offset",
                    }),
                    None => Ok(None),
                }
            }
            CheckpointFile::Memory => Ok(None),
        }
    }

    /// Writes `offset` as the checkpoint of the log in `store`.
    ///
    /// # Errors
    /// [`Error::BadCheckpoint`] when the shared file does not parse (it is never overwritten then);
    /// [`Error::Io`].
    pub fn write(&self, store: &dyn SegmentStore, offset: u64) -> Result<()> {
        match self {
            CheckpointFile::Own => write_own(store, offset),
            CheckpointFile::LogDir { dir, topic, partition } => {
                let _serial = SHARED_FILES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                let name = checkpoints::CLEANER_OFFSET_CHECKPOINT;
                let mut entries = checkpoints::read(&**dir, name)?.unwrap_or_default();
                let offset = i64::try_from(offset).map_err(|_| Error::BadCheckpoint {
                    name: name.into(),
                    reason: "an offset beyond Kafka's range",
                })?;
                entries.set(topic, *partition, offset);
                checkpoints::write(&**dir, name, &entries)
            }
            CheckpointFile::Memory => Ok(()),
        }
    }

    /// The broker's other offsets for the partition, from its log directory: the log start offset
    /// (`log-start-offset-checkpoint`: nothing below it is live, so no cleaning starts below it) and the high
    /// watermark (`replication-offset-checkpoint`: nothing at or past it is committed to the replicas, so no
    /// cleaning reaches it). `(None, None)` for a log without a log directory, or where the files or the
    /// partition's lines are missing.
    ///
    /// # Errors
    /// [`Error::BadCheckpoint`] for a file that does not parse or holds a negative offset; [`Error::Io`].
    pub fn broker_offsets(&self) -> Result<(Option<u64>, Option<u64>)> {
        let CheckpointFile::LogDir { dir, topic, partition } = self else { return Ok((None, None)) };
        let read = |name: &'static str| -> Result<Option<u64>> {
            match checkpoints::read(&**dir, name)?.and_then(|e| e.get(topic, *partition)) {
                Some(o) => u64::try_from(o)
                    .map(Some)
                    .map_err(|_| Error::BadCheckpoint { name: name.into(), reason: "a negative offset" }),
                None => Ok(None),
            }
        };
        Ok((read(checkpoints::LOG_START_OFFSET_CHECKPOINT)?, read(checkpoints::REPLICATION_OFFSET_CHECKPOINT)?))
    }

    /// The recovery point the broker recorded for the partition (`recovery-point-offset-checkpoint`), if any.
    ///
    /// # Errors
    /// [`Error::BadCheckpoint`] for a file that does not parse or a negative offset; [`Error::Io`].
    pub fn recovery_point(&self) -> Result<Option<u64>> {
        let CheckpointFile::LogDir { dir, topic, partition } = self else { return Ok(None) };
        let name = checkpoints::RECOVERY_POINT_OFFSET_CHECKPOINT;
        match checkpoints::read(&**dir, name)?.and_then(|e| e.get(topic, *partition)) {
            Some(o) => u64::try_from(o)
                .map(Some)
                .map_err(|_| Error::BadCheckpoint { name: name.into(), reason: "a negative offset" }),
            None => Ok(None),
        }
    }

    /// True when the broker whose log directory holds the partition was stopped cleanly: the directory holds
    /// `.kafka_cleanshutdown`, which a broker writes last on a clean stop and deletes as it starts. A partition
    /// with no log directory around it (a copy) is not known to be: its producers are then read from its
    /// snapshots, or from its batches where it has none, which keeps every producer's last write (a broker
    /// loading a partition with no snapshot after a clean stop starts with no producer at all).
    ///
    /// # Errors
    /// [`Error::Io`] listing the log directory.
    pub fn clean_shutdown(&self) -> Result<bool> {
        let CheckpointFile::LogDir { dir, .. } = self else { return Ok(false) };
        let names = dir.list().map_err(Error::io("list", crate::DIRECTORY))?;
        Ok(names.iter().any(|n| n == CLEAN_SHUTDOWN_FILE))
    }

    /// The file it lives in, for messages.
    pub fn describe(&self) -> String {
        match self {
            CheckpointFile::Own => CHECKPOINT_FILE.to_owned(),
            CheckpointFile::LogDir { topic, partition, .. } => {
                format!("the log directory's {} ({topic} {partition})", checkpoints::CLEANER_OFFSET_CHECKPOINT)
            }
            CheckpointFile::Memory => "kept in memory for this run only, in no file (a partition's is kept in \
                                        its log directory's cleaner-offset-checkpoint when the directory is named \
                                        <topic>-<partition>, and for a copy when it is made inside a broker's log \
                                        directory, one holding meta.properties)"
                .to_owned(),
        }
    }
}

/// Entries of a Kafka checkpoint file kept in memory (for tests of the format).
pub fn parse_kafka(text: &str) -> Result<CheckpointEntries, String> {
    checkpoints::parse(text)
}

/// Reads a native log's checkpoint; `Ok(None)` when no pass has committed yet.
pub(crate) fn read_own(store: &dyn SegmentStore) -> Result<Option<u64>> {
    let file = match store.open(CHECKPOINT_FILE) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("open", CHECKPOINT_FILE)(e)),
    };
    let len = file.len();
    if len > 256 {
        return Err(Error::BadCheckpoint { name: CHECKPOINT_FILE.into(), reason: "file is too long" });
    }
    let mut buf = vec![0u8; len as usize];
    file.read_at(0, &mut buf).map_err(Error::io("read", CHECKPOINT_FILE))?;
    let bad = |reason| Error::BadCheckpoint { name: CHECKPOINT_FILE.into(), reason };
    let text = std::str::from_utf8(&buf).map_err(|_| bad("not UTF-8"))?;
    let rest = text.strip_prefix(HEADER).ok_or(bad("missing header line"))?;
    let line = rest.strip_suffix('\n').ok_or(bad("missing final newline"))?;
    if line.is_empty() || !line.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad("offset is not a decimal number"));
    }
    line.parse().map(Some).map_err(|_| bad("offset is out of range"))
}

/// Writes a native log's checkpoint: temporary file, sync, rename over the old one, directory sync.
fn write_own(store: &dyn SegmentStore, offset: u64) -> Result<()> {
    write_atomically(store, CHECKPOINT_FILE, CHECKPOINT_TMP_FILE, format!("{HEADER}{offset}\n").as_bytes())
}

/// Replaces `name` in `store` with `bytes`: `tmp` written and synced, renamed over it, the directory synced.
pub(crate) fn write_atomically(store: &dyn SegmentStore, name: &str, tmp: &str, bytes: &[u8]) -> Result<()> {
    match store.delete(tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io("delete", tmp)(e)),
    }
    let file = store.create(tmp).map_err(Error::io("create", tmp))?;
    let written = file
        .append(bytes)
        .map_err(Error::io("append", tmp))
        .and_then(|_| file.sync().map_err(Error::io("sync", tmp)))
        .and_then(|()| file.seal().map_err(Error::io("seal", tmp)));
    drop(file);
    if let Err(e) = written {
        // A full disk leaves a part-written temporary nobody reads: removed, best effort (the old file stands
        // whatever happens, and the next write deletes a temporary first).
        let _ = store.delete(tmp);
        return Err(e);
    }
    store.rename(tmp, name).map_err(Error::io("rename", name))?;
    store.sync_dir().map_err(Error::io("sync directory", name))
}
