//! The one error type of `log-core`.

use std::fmt;
use std::io;

/// Result with [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong inside the log layer.
///
/// Corruption is reported with the segment's file name and the byte position of the bad frame, so an
/// operator can find it with a hex editor; I/O errors name the operation and the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The storage backend failed.
    #[error("I/O error during {op} on {name:?}: {source}")]
    Io {
        /// What the log was doing (`"append"`, `"rename"`, ...).
        op: &'static str,
        /// The file (or directory) concerned.
        name: String,
        /// The backend's error.
        #[source]
        source: io::Error,
    },
    /// Stored bytes do not decode as a record.
    #[error("corrupt segment {segment:?} at byte {position}: {kind}")]
    Corrupt {
        /// File name of the segment.
        segment: String,
        /// Byte position of the first bad frame.
        position: u64,
        /// What is wrong there.
        kind: CorruptKind,
    },
    /// A record is too large to be framed.
    #[error("record of {size} bytes exceeds the limit of {max} bytes")]
    RecordTooLarge {
        /// Encoded size that was asked for.
        size: usize,
        /// [`crate::codec::MAX_RECORD_BYTES`].
        max: usize,
    },
    /// An earlier write to storage (an append, sync, create, rename or delete) failed, so the durable state is
    /// unknown; the log refuses writes until it is reopened.
    #[error("the log is poisoned by an earlier failed write, sync or rename; reopen it")]
    Poisoned,
    /// A configuration value is out of range.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// The checkpoint file does not parse.
    #[error("corrupt checkpoint file {name:?}: {reason}")]
    BadCheckpoint {
        /// File name.
        name: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// A cleaning result does not fit the log it is applied to (a bug in the caller).
    #[error("cannot apply cleaning result: {0}")]
    BadReplacement(String),
}

impl Error {
    /// Wraps an I/O error of `op` on `name`; the name is copied only when there is an error, so the happy
    /// path (one append per record) allocates nothing.
    pub(crate) fn io<'a>(op: &'static str, name: &'a str) -> impl FnOnce(io::Error) -> Error + 'a {
        move |source| Error::Io { op, name: name.to_owned(), source }
    }
}

impl From<io::Error> for Error {
    /// For callers driving a backend directly; the log itself always names the operation and file.
    fn from(source: io::Error) -> Self {
        Error::Io { op: "storage", name: String::new(), source }
    }
}

/// The ways a stored frame can be bad.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CorruptKind {
    /// The frame runs past the end of the data.
    Truncated {
        /// Bytes the frame claims.
        needed: u64,
        /// Bytes actually left.
        available: u64,
    },
    /// The stored CRC32C does not match the body.
    ChecksumMismatch {
        /// CRC stored in the frame.
        stored: u32,
        /// CRC computed over the body.
        computed: u32,
    },
    /// The frame's body length is impossible.
    BadLength(u32),
    /// The frame has a format version this build does not know.
    UnknownVersion(u8),
    /// The body's fields do not add up.
    Malformed(&'static str),
    /// Offsets must strictly increase within and across segments.
    OffsetNotIncreasing {
        /// The previous record's offset.
        previous: u64,
        /// The offending record's offset.
        found: u64,
    },
    /// A record's offset lies below the base offset in the segment's name.
    OffsetBelowBase {
        /// Base offset from the file name.
        base: u64,
        /// The offending record's offset.
        found: u64,
    },
}

impl fmt::Display for CorruptKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CorruptKind::Truncated { needed, available } => {
                write!(f, "truncated frame: needs {needed} bytes, {available} left")
            }
            CorruptKind::ChecksumMismatch { stored, computed } => {
                write!(f, "checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")
            }
            CorruptKind::BadLength(len) => write!(f, "impossible frame length {len}"),
            CorruptKind::UnknownVersion(v) => write!(f, "unknown record format version {v}"),
            CorruptKind::Malformed(what) => write!(f, "malformed record: {what}"),
            CorruptKind::OffsetNotIncreasing { previous, found } => {
                write!(f, "offset {found} does not follow offset {previous}")
            }
            CorruptKind::OffsetBelowBase { base, found } => {
                write!(f, "offset {found} is below the segment's base offset {base}")
            }
        }
    }
}
