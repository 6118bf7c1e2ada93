//! How a log is opened: its settings, the format of its segments, where its cleaner checkpoint lives and
//! whether it may be written. [`Log::open`] takes them all: a caller that serves both formats (a data
//! directory, a command) opens any log through one call, and one skeleton (`open.rs`) asks the format for its
//! recovery (`protocol/native/open.rs`, `protocol/kafka/recovery.rs`).

use std::sync::Arc;

use crate::checkpoint::CheckpointFile;
use crate::config::LogConfig;
use crate::error::Result;
use crate::format::Format;
use crate::log::Log;
use crate::storage::SegmentStore;

/// The options of [`Log::open`].
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// The log's settings.
    pub config: LogConfig,
    /// The format of its segments.
    pub format: Format,
    /// Where its cleaner checkpoint lives: in the log's own store for a native log; for a Kafka partition the
    /// broker's log directory, or nowhere.
    pub checkpoint: CheckpointFile,
    /// Open for reading only: nothing is written, created, cut or removed and no lock is taken (see
    /// [`Log::open`]).
    pub read_only: bool,
}

impl OpenOptions {
    /// A native log with `config`, its checkpoint in its own store, opened for writing.
    pub fn new(config: LogConfig) -> OpenOptions {
        OpenOptions { config, format: Format::Native, checkpoint: CheckpointFile::Own, read_only: false }
    }

    /// A Kafka partition with `config` whose checkpoint lives in `checkpoint`, opened for writing.
    pub fn kafka(config: LogConfig, checkpoint: CheckpointFile) -> OpenOptions {
        OpenOptions { config, format: Format::Kafka, checkpoint, read_only: false }
    }

    /// The same options, for reading only when `read_only`.
    #[must_use]
    pub fn read_only(mut self, read_only: bool) -> OpenOptions {
        self.read_only = read_only;
        self
    }
}

impl Log {
    /// Opens the log in `store` as `options` say: writable, recovering it (a native log: an interrupted swap
    /// completed or rolled back, a torn tail cut back to its last whole record, stray files removed; a Kafka
    /// partition: a broker's recovery rules), or read-only, seeing it as that recovery would leave it while
    /// changing nothing, taking no lock and (Kafka) mapping no file; [`Log::recovery_report`] says what was or
    /// would be repaired.
    ///
    /// # Examples
    /// ```
    /// use std::sync::Arc;
    /// use log_core::{Log, LogConfig, OpenOptions};
    ///
    /// let store: Arc<dyn log_core::SegmentStore> = Arc::new(storage_mem::MemStore::new());
    /// let log = Log::open(Arc::clone(&store), OpenOptions::new(LogConfig::default()))?;
    /// log.put(b"k", b"v")?;
    /// drop(log);
    /// let reader = Log::open(store, OpenOptions::new(LogConfig::default()).read_only(true))?;
    /// assert_eq!(reader.next_offset(), 1);
    /// # Ok::<(), log_core::Error>(())
    /// ```
    ///
    /// # Errors
    /// As the open the options name; [`crate::Error::InvalidConfig`] for a native log whose checkpoint is asked to
    /// live anywhere but its own store.
    pub fn open(store: Arc<dyn SegmentStore>, options: OpenOptions) -> Result<Log> {
        let OpenOptions { config, format, checkpoint, read_only } = options;
        format.require_checkpoint_placement(&checkpoint)?;
        crate::open::open(format, store, config, checkpoint, read_only)
    }
}
