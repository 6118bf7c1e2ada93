//! How the native format reads the names in its store: the [`crate::names`] scheme's `.log` segments (also
//! `.cleaned`, `.swap` and `.deleted`) and `.lcindex` hints; anything else is not part of the log.

use crate::names::{BASE_DIGITS, MAX_OFFSET, SegmentFile, Stage, name};

/// One of the files of a native log: a segment's `.log` at every stage of the swap protocol, and its hint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FileKind {
    /// `.log`: a live segment.
    Log,
    /// `.lcindex`: the sparse offset index of a segment, a hint rebuilt when missing or wrong.
    Index,
    /// `.log.cleaned`: output of a cleaning pass not yet committed.
    Cleaned,
    /// `.log.swap`: committed cleaning output waiting to replace its `.log`.
    Swap,
    /// `.log.deleted`: a replaced segment waiting for deletion.
    Deleted,
}

impl FileKind {
    /// Every kind.
    pub const ALL: [FileKind; 5] =
        [FileKind::Log, FileKind::Index, FileKind::Cleaned, FileKind::Swap, FileKind::Deleted];

    /// The file and stage of the [`crate::names`] scheme this kind is.
    pub fn file_and_stage(self) -> (SegmentFile, Stage) {
        match self {
            FileKind::Log => (SegmentFile::Log, Stage::Live),
            FileKind::Index => (SegmentFile::Hint, Stage::Live),
            FileKind::Cleaned => (SegmentFile::Log, Stage::Cleaned),
            FileKind::Swap => (SegmentFile::Log, Stage::Swap),
            FileKind::Deleted => (SegmentFile::Log, Stage::Deleted),
        }
    }

    /// The file name suffix, dot included.
    pub fn suffix(self) -> String {
        let (file, stage) = self.file_and_stage();
        format!("{}{}", file.suffix(), stage.suffix())
    }
}

/// The name of the file of kind `kind` for the segment with base offset `base`.
pub fn file_name(base: u64, kind: FileKind) -> String {
    let (file, stage) = kind.file_and_stage();
    name(base, file, stage)
}

/// Parses a name built by [`file_name`]; `None` for any other name.
pub fn parse_file_name(name: &str) -> Option<(u64, FileKind)> {
    match classify(name) {
        NameClass::Ours(base, kind) => Some((base, kind)),
        NameClass::Unusable(_) | NameClass::Foreign => None,
    }
}

/// What a name in a log's store is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameClass {
    /// One of the log's files: its base offset and kind.
    Ours(u64, FileKind),
    /// A name with one of the log's suffixes that the log cannot use (its base is not 20 digits, or lies at
    /// or beyond [`MAX_OFFSET`]). Opening refuses such a log rather than ignore a segment that may hold
    /// records; `check` reports it.
    Unusable(&'static str),
    /// Any other name: not part of the log.
    Foreign,
}

/// Classifies a name.
pub fn classify(name: &str) -> NameClass {
    // No suffix of a kind ends another kind's (".log.cleaned" does not end in ".log"): at most one matches.
    let Some((stem, kind)) = FileKind::ALL.into_iter().find_map(|k| {
        let (file, stage) = k.file_and_stage();
        name.strip_suffix(stage.suffix()).and_then(|r| r.strip_suffix(file.suffix())).map(|stem| (stem, k))
    }) else {
        return NameClass::Foreign;
    };
    if stem.len() != BASE_DIGITS || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return NameClass::Unusable("its base offset is not 20 decimal digits");
    }
    match stem.parse::<u64>() {
        Ok(base) if base < MAX_OFFSET => NameClass::Ours(base, kind),
        _ => NameClass::Unusable("its base offset is beyond the largest offset (2^63 - 1)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::CHECKPOINT_FILE;

    #[test]
    fn names_round_trip() {
        for base in [0, 1, 42, MAX_OFFSET - 1] {
            for kind in FileKind::ALL {
                let n = file_name(base, kind);
                assert_eq!(parse_file_name(&n), Some((base, kind)), "{n}");
            }
        }
        assert_eq!(file_name(4, FileKind::Log), "00000000000000000004.log");
    }

    #[test]
    fn foreign_names_do_not_parse() {
        for n in [
            "",
            "00000000000000000004.txt",
            CHECKPOINT_FILE,
            "00000000000000000004",
            "00000000000000000004.index",
            "00000000000000000004.lcindex.swap",
        ] {
            assert_eq!(classify(n), NameClass::Foreign, "{n}");
        }
    }

    #[test]
    fn names_with_our_suffix_that_cannot_be_used_are_unusable_not_ignored() {
        for n in [
            "x.log",
            "0000000000000000000a.log",
            "4.log",
            "99999999999999999999.log",
            "09223372036854775807.log",
            "18446744073709551615.log.swap",
            "000000000000000000001.log",
        ] {
            assert!(matches!(classify(n), NameClass::Unusable(_)), "{n}");
        }
    }
}
