//! File names of a log: `<20-digit base offset>.log` and its swap-protocol variants, as Kafka names them, plus
//! this project's `.lcindex` hint (named so that it cannot be mistaken for Kafka's `.index`).

/// Width of the zero-padded base offset in a segment name (Kafka's 20 digits).
pub const BASE_DIGITS: usize = 20;
/// Name of the file holding the cleaner checkpoint (the first dirty offset).
pub const CHECKPOINT_FILE: &str = "cleaner-offset-checkpoint";
/// Temporary name the checkpoint is written under before its atomic rename.
pub const CHECKPOINT_TMP_FILE: &str = "cleaner-offset-checkpoint.tmp";
/// Offsets are below this bound (Kafka's offsets are signed 64-bit): an append that would need this offset
/// fails with [`crate::Error::OffsetSpaceExhausted`], and a name or a record beyond it is refused.
pub const MAX_OFFSET: u64 = i64::MAX as u64;

/// The role of a file, given by its suffix.
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
    /// The file name suffix, dot included.
    pub fn suffix(self) -> &'static str {
        match self {
            FileKind::Log => ".log",
            FileKind::Index => ".lcindex",
            FileKind::Cleaned => ".log.cleaned",
            FileKind::Swap => ".log.swap",
            FileKind::Deleted => ".log.deleted",
        }
    }

    /// Every kind.
    pub const ALL: [FileKind; 5] =
        [FileKind::Log, FileKind::Index, FileKind::Cleaned, FileKind::Swap, FileKind::Deleted];
}

/// The name of the file of kind `kind` for the segment with base offset `base`.
pub fn file_name(base: u64, kind: FileKind) -> String {
    format!("{base:0width$}{}", kind.suffix(), width = BASE_DIGITS)
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
    // The longest suffix first: ".log.cleaned" also ends in nothing shorter, but be explicit.
    let Some(kind) = FileKind::ALL.into_iter().find(|k| name.ends_with(k.suffix())) else {
        return NameClass::Foreign;
    };
    let stem = &name[..name.len() - kind.suffix().len()];
    if stem.len() != BASE_DIGITS || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return NameClass::Unusable("its base offset is not 20 decimal digits");
    }
    match stem.parse::<u64>() {
        Ok(base) if base < MAX_OFFSET => NameClass::Ours(base, kind),
        _ => NameClass::Unusable("its base offset is beyond the largest offset (2^63 - 1)"),
    }
}

/// Parses a name built by [`file_name`]; `None` for any other name.
pub fn parse_file_name(name: &str) -> Option<(u64, FileKind)> {
    match classify(name) {
        NameClass::Ours(base, kind) => Some((base, kind)),
        NameClass::Unusable(_) | NameClass::Foreign => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for base in [0, 1, 42, MAX_OFFSET - 1] {
            for kind in FileKind::ALL {
                let name = file_name(base, kind);
                assert_eq!(parse_file_name(&name), Some((base, kind)), "{name}");
            }
        }
        assert_eq!(file_name(4, FileKind::Log), "00000000000000000004.log");
    }

    #[test]
    fn foreign_names_do_not_parse() {
        for name in
            ["", "00000000000000000004.txt", CHECKPOINT_FILE, "00000000000000000004", "00000000000000000004.index"]
        {
            assert_eq!(classify(name), NameClass::Foreign, "{name}");
        }
    }

    #[test]
    fn names_with_our_suffix_that_cannot_be_used_are_unusable_not_ignored() {
        for name in [
            "x.log",
            "0000000000000000000a.log",
            "4.log",
            "99999999999999999999.log",
            "09223372036854775807.log",
            "18446744073709551615.log.swap",
            "000000000000000000001.log",
        ] {
            assert!(matches!(classify(name), NameClass::Unusable(_)), "{name}");
        }
    }
}
