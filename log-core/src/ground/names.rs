//! The one naming scheme of every file of a log, in both formats: `<20-digit base offset><file><stage>`, as
//! Kafka names a partition's files. A segment's batches are `.log`; beside them Kafka keeps `.index`,
//! `.timeindex` and `.txnindex`, and this project's native format its `.lcindex` hint (named so that it cannot
//! be mistaken for Kafka's `.index`). A cleaning pass writes each file under `.cleaned`, commits it as
//! `.swap`, and renames what it replaces `.deleted`. Which of these names a format uses, and how it reads the
//! others it finds, is the format's own (`format::native::names`, `format::kafka::files`).

/// Width of the zero-padded base offset in a segment name (Kafka's 20 digits).
pub const BASE_DIGITS: usize = 20;
/// Name of the file holding the cleaner checkpoint (the first dirty offset): a native log's own, and a broker's
/// log directory's shared one.
pub const CHECKPOINT_FILE: &str = "cleaner-offset-checkpoint";
/// Temporary name the checkpoint is written under before its atomic rename.
pub const CHECKPOINT_TMP_FILE: &str = "cleaner-offset-checkpoint.tmp";
/// Offsets are below this bound (Kafka's offsets are signed 64-bit): an append that would need this offset
/// fails with [`crate::Error::OffsetSpaceExhausted`], and a name or a record beyond it is refused.
pub const MAX_OFFSET: u64 = i64::MAX as u64;

/// One of a segment's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SegmentFile {
    /// `.log`: the batches.
    Log,
    /// `.index`: Kafka's offset index.
    OffsetIndex,
    /// `.timeindex`: Kafka's time index.
    TimeIndex,
    /// `.txnindex`: the aborted transactions whose markers the segment holds (Kafka).
    TxnIndex,
    /// `.lcindex`: the native format's sparse offset index, a hint rebuilt when missing or wrong.
    Hint,
}

impl SegmentFile {
    /// Its suffix.
    pub fn suffix(self) -> &'static str {
        match self {
            SegmentFile::Log => ".log",
            SegmentFile::OffsetIndex => ".index",
            SegmentFile::TimeIndex => ".timeindex",
            SegmentFile::TxnIndex => ".txnindex",
            SegmentFile::Hint => ".lcindex",
        }
    }
}

/// Where a segment file stands in the cleaner's swap protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    /// In use.
    Live,
    /// Written by a pass, not committed.
    Cleaned,
    /// Committed, waiting to replace the segments it covers.
    Swap,
    /// Replaced, waiting to be deleted.
    Deleted,
}

impl Stage {
    /// Every stage.
    pub const ALL: [Stage; 4] = [Stage::Live, Stage::Cleaned, Stage::Swap, Stage::Deleted];

    /// Its suffix after the file's own.
    pub fn suffix(self) -> &'static str {
        match self {
            Stage::Live => "",
            Stage::Cleaned => ".cleaned",
            Stage::Swap => ".swap",
            Stage::Deleted => ".deleted",
        }
    }
}

/// `<20-digit base><file suffix><stage suffix>`.
pub fn name(base: u64, file: SegmentFile, stage: Stage) -> String {
    format!("{base:0width$}{}{}", file.suffix(), stage.suffix(), width = BASE_DIGITS)
}

/// The bytes of the files a segment's writer builds beside its `.log` (Kafka's `.index` and `.timeindex`; none
/// for the native format, whose hint is written from the finished segment), for the caller to write under the
/// stage it needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SideFiles {
    /// Each file and its bytes.
    pub files: Vec<(SegmentFile, Vec<u8>)>,
}

impl SideFiles {
    /// The bytes of `file`, if the writer built it.
    pub fn get(&self, file: SegmentFile) -> Option<&[u8]> {
        self.files.iter().find(|(f, _)| *f == file).map(|(_, b)| &b[..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_kafkas_scheme() {
        assert_eq!(name(4, SegmentFile::Log, Stage::Live), "00000000000000000004.log");
        assert_eq!(name(7, SegmentFile::Log, Stage::Swap), "00000000000000000007.log.swap");
        assert_eq!(name(7, SegmentFile::Hint, Stage::Live), "00000000000000000007.lcindex");
        assert_eq!(name(0, SegmentFile::TxnIndex, Stage::Cleaned), "00000000000000000000.txnindex.cleaned");
    }
}
