//! The one error type of `storage-file` (the storage traits themselves return `io::Result`).

use std::io;
use std::path::PathBuf;

/// Result with [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a directory cannot be opened as a store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file system call failed.
    #[error("{op} {path:?}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The path concerned.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// Another writer (another process, or another store in this one) has the directory open.
    #[error("{dir:?} is in use by another logcompact process that writes to it")]
    Locked {
        /// The directory.
        dir: PathBuf,
    },
    /// A Kafka broker (or another process cleaning its partitions) holds the lock of the log directory.
    #[error("{lock_file:?} is locked: a Kafka broker (or another logcompact process) is using this log directory")]
    BrokerLocked {
        /// The `.lock` file.
        lock_file: PathBuf,
    },
    /// The path exists and is not a directory.
    #[error("{0:?} is not a directory")]
    NotADirectory(PathBuf),
    /// The directory does not exist (and the command does not create one).
    #[error("{0:?} does not exist")]
    NotFound(PathBuf),
}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        match e {
            Error::Io { source, .. } => source,
            other => io::Error::other(other.to_string()),
        }
    }
}
