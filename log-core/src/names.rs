//! File names of a log: `<20-digit base offset>.log` and its swap-protocol variants, as Kafka names them.

/// Width of the zero-padded base offset in a segment name (Kafka's 20 digits).
pub const BASE_DIGITS: usize = 20;
/// Name of the file holding the cleaner checkpoint (the first dirty offset).
pub const CHECKPOINT_FILE: &str = "cleaner-offset-checkpoint";
/// Temporary name the checkpoint is written under before its atomic rename.
pub const CHECKPOINT_TMP_FILE: &str = "cleaner-offset-checkpoint.tmp";

/// The role of a file, given by its suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FileKind {
    /// `.log`: a live segment.
    Log,
    /// `.index`: the sparse offset index of a segment, a hint rebuilt when missing or wrong.
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
            FileKind::Index => ".index",
            FileKind::Cleaned => ".log.cleaned",
            FileKind::Swap => ".log.swap",
            FileKind::Deleted => ".log.deleted",
        }
    }

    const ALL: [FileKind; 5] = [FileKind::Log, FileKind::Index, FileKind::Cleaned, FileKind::Swap, FileKind::Deleted];
}

/// The name of the file of kind `kind` for the segment with base offset `base`.
pub fn file_name(base: u64, kind: FileKind) -> String {
    format!("{base:0width$}{}", kind.suffix(), width = BASE_DIGITS)
}

/// Parses a name built by [`file_name`]; `None` for any other name.
pub fn parse_file_name(name: &str) -> Option<(u64, FileKind)> {
    let digits = name.get(..BASE_DIGITS)?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let base = digits.parse().ok()?;
    let suffix = name.get(BASE_DIGITS..)?;
    let kind = FileKind::ALL.into_iter().find(|k| k.suffix() == suffix)?;
    Some((base, kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for base in [0, 1, 42, u64::MAX] {
            for kind in FileKind::ALL {
                let name = file_name(base, kind);
                assert_eq!(parse_file_name(&name), Some((base, kind)), "{name}");
            }
        }
        assert_eq!(file_name(4, FileKind::Log), "00000000000000000004.log");
    }

    #[test]
    fn foreign_names_do_not_parse() {
        for name in [
            "",
            "x.log",
            "0000000000000000000a.log",
            "00000000000000000004.txt",
            CHECKPOINT_FILE,
            "00000000000000000004",
        ] {
            assert_eq!(parse_file_name(name), None, "{name}");
        }
    }
}
