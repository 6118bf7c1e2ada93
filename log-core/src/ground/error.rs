//! The one error type of `log-core`.

use std::fmt;
use std::io;

use crate::format::kafka::codec::batch::BatchProblem;

/// The name errors and reports give the store's directory itself (listing it, syncing it): `.`, the
/// directory a caller names around the message.
pub const DIRECTORY: &str = ".";

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
    /// A bad frame inside the active segment with valid records after it. A torn write leaves no valid
    /// record after the damage, so this is corruption: open refuses the log and cuts nothing (an explicit
    /// repair can drop the damaged bytes, keeping a copy).
    #[error(
        "corrupt segment {segment:?} at byte {position}: {kind}; valid records follow at byte {resumes_at}, so this \
         is not a torn write and nothing was cut"
    )]
    CorruptNotTorn {
        /// File name of the segment.
        segment: String,
        /// Byte position of the first bad frame.
        position: u64,
        /// What is wrong there.
        kind: CorruptKind,
        /// Position of the first valid frame after the damage.
        resumes_at: u64,
    },
    /// A name in the store looks like one of the log's files but cannot be used; the log is refused rather
    /// than opened without it (a segment left out could hold records whose offsets would be handed out again).
    #[error("{name:?} cannot be part of the log: {reason}")]
    UnusableName {
        /// The name.
        name: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// The store holds no log of this format (found when a command that only reads opens it).
    #[error("not a log of this format: it holds {found}")]
    NotALog {
        /// What the store holds instead.
        found: String,
        /// True when it holds a log of the other format this build reads (opened with that format, it opens).
        other_format: bool,
    },
    /// The log was opened read-only.
    #[error("the log is open read-only")]
    ReadOnly,
    /// The next offset would pass [`crate::names::MAX_OFFSET`]; nothing was written.
    #[error("offset space exhausted: the next offset {next} would pass the largest offset {max}")]
    OffsetSpaceExhausted {
        /// The offset the append would have taken.
        next: u64,
        /// [`crate::names::MAX_OFFSET`].
        max: u64,
    },
    /// A reader that takes no lock saw the log change under it (a writer rolled or a cleaning swap
    /// committed) every time it tried to load a snapshot.
    #[error("the log kept changing while it was being read ({attempts} attempts); try again")]
    Changing {
        /// Loads tried.
        attempts: u32,
    },
    /// A record is too large to be framed.
    #[error("record of {size} bytes exceeds the limit of {max} bytes")]
    RecordTooLarge {
        /// Encoded size that was asked for.
        size: usize,
        /// [`crate::codec::MAX_RECORD_BYTES`].
        max: usize,
    },
    /// A header with a null value appended to a log of the native format, which cannot store one.
    #[error("a header has a null value, which only Kafka's format can store")]
    NullHeaderValue,
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
    /// A checkpoint file of a broker's log directory does not parse.
    #[error("corrupt checkpoint file {name:?}: {reason}")]
    BadCheckpointLine {
        /// File name.
        name: String,
        /// What is wrong, naming the line.
        reason: String,
    },
    /// A cleaning result does not fit the log it is applied to (a bug in the caller); nothing was changed.
    #[error("cannot apply the cleaning result for segment {base}: {problem}")]
    BadReplacement {
        /// The base of the segment (or the checkpoint) concerned.
        base: u64,
        /// What does not fit.
        problem: ReplacementProblem,
    },
}

/// Why a cleaning result does not fit its log ([`Error::BadReplacement`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplacementProblem {
    /// The segment is not (any more) a current closed segment of the log.
    #[error("it is not a current closed segment of the log")]
    NotCurrent,
    /// The segments of one replacement are not adjacent in the log.
    #[error("the segments replaced together are not adjacent")]
    NotAdjacent,
    /// Two replacements name the same segment.
    #[error("it is replaced twice")]
    ReplacedTwice,
    /// The output was not written for this segment by this transaction.
    #[error("the output file does not belong to it")]
    WrongOutput,
    /// The new checkpoint lies beyond the active segment's base.
    #[error("the checkpoint lies beyond the active segment's base {active_base}")]
    CheckpointBeyondActive {
        /// The active segment's base.
        active_base: u64,
    },
    /// A replacement holds no segment.
    #[error("a replacement holds no segment")]
    Empty,
}

impl Error {
    /// True for every kind of corruption or loss of stored data (as opposed to I/O failures, bad input and
    /// misuse): what `logcompact` reports with exit code 1.
    pub fn is_corruption(&self) -> bool {
        matches!(
            self,
            Error::Corrupt { .. }
                | Error::CorruptNotTorn { .. }
                | Error::BadCheckpoint { .. }
                | Error::BadCheckpointLine { .. }
        )
    }

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

/// The ways a stored frame can be bad. (Decoders build one only on the error path, `ok_or_else`: a Kafka
/// problem can hold a codec's message, so a value built eagerly would cost a drop on every good frame.)
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
    /// A record's offset is at or beyond [`crate::names::MAX_OFFSET`].
    OffsetOutOfRange(u64),
    /// A record's offset lies at or beyond the base of the segment that follows.
    OffsetBeyondNextSegment {
        /// Base offset of the next segment.
        next_base: u64,
        /// The offending record's offset.
        found: u64,
    },
    /// A `.swap` file that should mark a removed segment is not a valid removal marker.
    BadRemovalMarker(&'static str),
    /// A `.swap` file at or past the active segment's base, or a removal marker whose range reaches it: no
    /// cleaning pass writes one (the active segment never takes part), so it is never completed.
    SwapOverActive {
        /// The active segment's base (`None`: the store holds no `.log` at all).
        active_base: Option<u64>,
    },
    /// A `.swap` that would put in place an offset none of the segments it replaces holds: a cleaning pass
    /// copies records, it never makes one up.
    SwapNotFromItsSegments {
        /// The first such offset.
        offset: u64,
    },
    /// Completing a `.swap` would remove a record no cleaning pass drops: the latest of its key (no later
    /// record of the key is left), not a tombstone or marker past a delete horizon, not aborted data.
    SwapRemovesLatest {
        /// The first such record's offset.
        offset: u64,
    },
    /// Completing a `.swap` would remove the latest records of more keys than the proof that a pass could
    /// have dropped them keeps in memory ([`crate::swap_proof::MAX_PENDING_KEYS`]): not completed on trust.
    SwapUnprovable {
        /// The keys the proof holds at most.
        keys: u64,
    },
    /// A Kafka record batch is damaged.
    Kafka(BatchProblem),
    /// Damage in the active segment followed by more plausible batch starts than a torn write leaves (crafted
    /// or overwritten data), too many to check within the search's budget: treated as corruption, not cut.
    AmbiguousTail,
    /// A preallocated segment's zero fill (Kafka's `log.preallocate`): where its data ends, not a batch.
    ZeroFill,
    /// A Kafka `.txnindex` disagrees with the partition's transaction markers.
    TxnIndex(crate::txn::IndexDisagreement),
}

impl CorruptKind {
    /// True for intact data of a format version this build does not read (a frame of a newer version, a Kafka
    /// message set older than magic 2): never cut as a torn tail, and reported as a format not read.
    pub fn is_other_format(&self) -> bool {
        matches!(self, CorruptKind::UnknownVersion(_) | CorruptKind::Kafka(BatchProblem::OldMagic { .. }))
    }
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
            CorruptKind::OffsetOutOfRange(o) => write!(f, "offset {o} is beyond the largest offset (2^63 - 1)"),
            CorruptKind::OffsetBeyondNextSegment { next_base, found } => {
                write!(f, "offset {found} is not below the next segment's base offset {next_base}")
            }
            CorruptKind::BadRemovalMarker(what) => write!(f, "bad removal marker: {what}"),
            CorruptKind::SwapOverActive { active_base: Some(a) } => write!(
                f,
                "it would replace or remove the active segment (base {a}), which no cleaning pass touches: not a swap \
                 to complete"
            ),
            CorruptKind::SwapNotFromItsSegments { offset } => write!(
                f,
                "it holds offset {offset}, which none of the segments it would replace holds: not what a cleaning pass \
                 writes"
            ),
            CorruptKind::SwapRemovesLatest { offset } => write!(
                f,
                "completing it would remove the record at offset {offset}, the latest of its key (no later record of \
                 the key, no delete horizon): not what a cleaning pass writes"
            ),
            CorruptKind::SwapUnprovable { keys } => write!(
                f,
                "completing it would remove the latest records of more than {keys} keys, too many to prove each one \
                 shadowed: not completed on trust"
            ),
            CorruptKind::Kafka(p) => write!(f, "{p}"),
            CorruptKind::AmbiguousTail => write!(
                f,
                "damage followed by more plausible batch starts than a torn write leaves (crafted or overwritten \
                 data): not cut"
            ),
            CorruptKind::ZeroFill => write!(f, "zero fill (preallocated space no batch was written to)"),
            CorruptKind::TxnIndex(d) => write!(f, "the transaction index disagrees with the partition's markers: {d}"),
            CorruptKind::SwapOverActive { active_base: None } => {
                write!(f, "no segment file is left for it to replace: not a swap to complete")
            }
        }
    }
}
