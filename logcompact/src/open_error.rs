//! Why a directory could not be opened as a log: the one error of opening, telling (and looking at) a
//! directory, shared by `dir` (the opens) and `look` (what a directory is).

use std::path::PathBuf;

use log_core::Format;

/// Why a directory could not be opened as a log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The directory cannot be used as a store (missing, not a directory, unreadable, locked).
    #[error("{dir}: {source}")]
    Store {
        /// The directory.
        dir: PathBuf,
        /// What the backend said.
        #[source]
        source: storage_file::Error,
    },
    /// The directory holds no log of the format asked for.
    #[error("{} is not a {}: it holds {found}", dir.display(), if *format == Format::Kafka { "Kafka partition" } else { "logcompact log" })]
    NotALog {
        /// The directory.
        dir: PathBuf,
        /// The format asked for.
        format: Format,
        /// What it holds instead.
        found: String,
        /// True when it holds a log of the other format this build reads (opened with that format, it opens).
        other_format: bool,
    },
    /// The log failed to open (corruption, I/O).
    #[error("{dir}: {source}")]
    Log {
        /// The directory.
        dir: PathBuf,
        /// The log's error.
        #[source]
        source: log_core::Error,
    },
}

impl OpenError {
    /// True when another process holds the directory (or its broker's log directory).
    pub fn is_busy(&self) -> bool {
        matches!(
            self,
            OpenError::Store {
                source: storage_file::Error::Locked { .. } | storage_file::Error::BrokerLocked { .. },
                ..
            }
        )
    }
}
