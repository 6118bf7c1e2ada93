//! What a directory given to a command is, told before anything in it is opened for writing: one log (or
//! partition), a directory of logs (a Kafka broker's log directory or a data directory), or neither. It looks
//! at names only, and for a directory of partitions without `meta.properties` opens a few subdirectories
//! read-only as a native open would refuse them: nothing is written, locked or mapped. The front ends turn a
//! [`DirKind`] into their own words (a command line names its flags); the rule lives here once.

use std::path::{Path, PathBuf};

use log_core::layout::Layout;

use crate::open_error::OpenError;

/// At most this many subdirectories are looked at: enough to recognise a directory of logs, few enough to cost
/// nothing on a broker with thousands of partitions.
const LOOK_AT: usize = 16;

/// The names in a directory, read once before anything in it is opened or locked and handed down to the open,
/// so that telling what the directory is (a partition, the metadata log, no log at all) lists it once. The
/// open's recovery lists it again under the lock, where the names are the ones that count.
///
/// A listing is only ever read from its directory (no other constructor), and an open given one of another
/// directory lists its own: the refusals it feeds (the metadata log above all) cannot be talked out of by a
/// caller's names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    dir: PathBuf,
    names: Vec<String>,
}

impl Listing {
    /// Lists `dir`: no names when it cannot be listed (the open that follows says why).
    pub fn read(dir: &Path) -> Listing {
        Listing { dir: dir.to_path_buf(), names: storage_file::list_names(dir) }
    }

    /// The directory listed.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The names, in no order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Refuses the KRaft metadata log (the directory listed), which no command writes or locks, for what it
    /// is, before anything else is asked about it.
    ///
    /// # Errors
    /// [`OpenError::Store`] holding [`storage_file::Error::MetadataLog`].
    pub fn refuse_metadata_log(&self) -> Result<(), OpenError> {
        let dir = &self.dir;
        match storage_file::metadata_log_sign_in(dir, &self.names) {
            Some(sign) => Err(OpenError::Store {
                dir: dir.to_path_buf(),
                source: storage_file::Error::MetadataLog { dir: dir.to_path_buf(), sign },
            }),
            None => Ok(()),
        }
    }

    /// True when the names hold a segment, or a segment's swap, of Kafka's.
    pub(crate) fn has_kafka_segment(&self) -> bool {
        use log_core::kafka::files::{KafkaName, SegmentFile, Stage, classify};
        self.names.iter().any(|n| {
            matches!(classify(n), KafkaName::Segment { file: SegmentFile::Log, stage: Stage::Live | Stage::Swap, .. })
        })
    }
}

/// What a directory is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DirKind {
    /// Nothing is there.
    Missing,
    /// A file, not a directory.
    NotADirectory,
    /// It holds segment files (`<20-digit base>.log`) at its root: one log, or one partition.
    OneLog,
    /// It holds logs in subdirectories, not at its root.
    Logs {
        /// Up to 16 of the subdirectories that hold segment files, sorted.
        logs: Vec<String>,
        /// True for a Kafka broker's log directory: it holds `meta.properties`, or its logs are all
        /// `<topic>-<partition>` directories holding Kafka partitions.
        broker: bool,
    },
    /// Neither a log nor a directory of logs (empty, say): the command's own open says what it lacks.
    Other,
}

impl Listing {
    /// What the directory listed is ([`DirKind`]).
    pub fn kind(&self) -> DirKind {
        let dir = &self.dir;
        if !dir.exists() {
            return DirKind::Missing;
        }
        if !dir.is_dir() {
            return DirKind::NotADirectory;
        }
        if self.names().iter().any(|n| is_segment_name(n)) {
            return DirKind::OneLog;
        }
        logs_kind(dir)
    }
}

/// What `dir` is, listed here (see [`Listing::kind`]).
pub fn dir_kind(dir: &Path) -> DirKind {
    Listing::read(dir).kind()
}

/// [`DirKind::Logs`] for a directory whose root holds no segment file and some subdirectory does, else
/// [`DirKind::Other`].
fn logs_kind(dir: &Path) -> DirKind {
    let logs = logs_in(dir);
    if logs.is_empty() && !dir.join(storage_file::kafka::META_PROPERTIES).is_file() {
        return DirKind::Other;
    }
    let broker = is_broker_log_dir(dir, &logs);
    DirKind::Logs { logs, broker }
}

/// Whether `name` is a segment file's: a 20-digit base offset and `.log`.
fn is_segment_name(name: &str) -> bool {
    name.strip_suffix(".log").is_some_and(|base| base.len() == 20 && base.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether `dir` holds a segment file at its root.
fn holds_segments(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .map(|entries| entries.flatten().any(|e| e.file_name().to_str().is_some_and(is_segment_name)))
        .unwrap_or(false)
}

/// The names of up to [`LOOK_AT`] subdirectories of `dir` that hold segment files, sorted.
fn logs_in(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|e| e.path().is_dir())
        .take(LOOK_AT * 4)
        .filter(|e| holds_segments(&e.path()))
        .filter_map(|e| e.file_name().into_string().ok())
        .take(LOOK_AT)
        .collect();
    names.sort();
    names
}

/// Whether `dir` is a Kafka broker's log directory: it holds `meta.properties`, or its logs are named
/// `<topic>-<partition>` and one of them is a Kafka partition.
fn is_broker_log_dir(dir: &Path, logs: &[String]) -> bool {
    if storage_file::kafka::is_broker_log_dir(dir) {
        return true;
    }
    !logs.is_empty()
        && logs.iter().all(|n| log_core::kafka::topic_partition(n).is_some())
        && holds_kafka_partitions(dir)
}

/// Whether one of the first subdirectories of `dir` is a Kafka partition, as a native open refuses it (a
/// directory of partitions given without `--format kafka`, say).
pub fn holds_kafka_partitions(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else { return false };
    entries.flatten().take(LOOK_AT).filter(|e| e.path().is_dir()).any(|sub| {
        let Ok(store) = storage_file::FileStore::open_read_only(sub.path()) else { return false };
        // As a native open refuses it: a log of the other format this build reads.
        Layout::scan(&store).is_ok_and(|layout| matches!(layout.foreign_format(&store), Some((_, true))))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_a_directory_of_logs_and_neither_are_told_apart() {
        assert!(is_segment_name("00000000000000000000.log"));
        assert!(!is_segment_name("0000000000000000000.log") && !is_segment_name("00000000000000000000.index"));
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path();
        assert_eq!(dir_kind(&root.join("nothing")), DirKind::Missing);
        std::fs::write(root.join("file"), b"x").expect("file");
        assert_eq!(dir_kind(&root.join("file")), DirKind::NotADirectory);
        let data = root.join("data");
        std::fs::create_dir_all(data.join("a")).expect("mkdir");
        assert_eq!(dir_kind(&data), DirKind::Other);
        std::fs::write(data.join("a").join("00000000000000000000.log"), b"").expect("segment");
        assert_eq!(dir_kind(&data.join("a")), DirKind::OneLog);
        assert_eq!(dir_kind(&data), DirKind::Logs { logs: vec!["a".into()], broker: false });
        std::fs::write(data.join(storage_file::kafka::META_PROPERTIES), b"").expect("meta.properties");
        assert_eq!(dir_kind(&data), DirKind::Logs { logs: vec!["a".into()], broker: true });
    }
}
