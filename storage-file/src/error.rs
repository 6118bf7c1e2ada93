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
    /// A partition directory given inside one log directory lies in another (a symbolic link out of it): the
    /// lock of the log directory given would not cover it, and the lock of the one it lies in is not what was
    /// asked for.
    #[error(
        "{} lies outside the log directory {} it was given in (it resolves into {}): refused, since a broker's \
         lock on one does not cover the other; give the partition's real path",
        dir.display(),
        given_log_dir.display(),
        real_log_dir.display()
    )]
    OutsideLogDir {
        /// The partition directory, as given.
        dir: PathBuf,
        /// The log directory it was given in, resolved.
        given_log_dir: PathBuf,
        /// The log directory it lies in.
        real_log_dir: PathBuf,
    },
    /// The directory is a KRaft metadata log, which is never written: the broker's raft layer owns it and
    /// compacts it with snapshots ([`log_core::kafka::metadata_log`]).
    #[error(
        "{} is the cluster's KRaft metadata log ({sign}): the broker's raft layer owns it and compacts it with \
         snapshots, so it is never cleaned, repaired or changed here (dump, check and analyze read it)",
        dir.display()
    )]
    MetadataLog {
        /// The directory.
        dir: PathBuf,
        /// What shows it to be one.
        sign: log_core::kafka::metadata_log::MetadataLogSign,
    },
}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        match e {
            Error::Io { source, .. } => source,
            other => io::Error::other(other.to_string()),
        }
    }
}
