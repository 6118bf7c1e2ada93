//! The files of a Kafka partition directory, by name: a segment's `<20-digit base>.log` with its `.index`,
//! `.timeindex` and `.txnindex`, each also under the cleaner's `.cleaned`, `.swap` and `.deleted` suffixes;
//! producer snapshots (`<offset>.snapshot`); and the broker's own files (`leader-epoch-checkpoint`,
//! `partition.metadata`), left alone.

use super::index::KafkaIndexFiles;
use crate::error::{Error, Result};
use crate::names::{BASE_DIGITS, MAX_OFFSET};
use crate::storage::SegmentStore;

pub use crate::names::{SegmentFile, Stage, name};

/// Every file of a Kafka segment, the log first (the order Kafka renames them in).
pub const FILES: [SegmentFile; 4] =
    [SegmentFile::Log, SegmentFile::OffsetIndex, SegmentFile::TimeIndex, SegmentFile::TxnIndex];

/// What a name in a partition directory is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KafkaName {
    /// A segment file.
    Segment {
        /// Its base offset.
        base: u64,
        /// Which file.
        file: SegmentFile,
        /// Its stage.
        stage: Stage,
    },
    /// A producer state snapshot (`<offset>.snapshot`, or `.snapshot.deleted`).
    Snapshot,
    /// A name Kafka would take for a segment file but that cannot be one (its base is not 20 digits, or lies
    /// beyond Kafka's offsets): the partition is refused rather than read without it.
    Unusable(&'static str),
    /// A file the broker keeps beside the segments (`leader-epoch-checkpoint`, `partition.metadata`, their
    /// temporary files).
    Broker,
    /// Anything else (a `server.log` dropped in the directory, say): not part of the partition, ignored.
    Foreign,
}

/// Classifies a name.
pub fn classify(name: &str) -> KafkaName {
    if name.starts_with("leader-epoch-checkpoint") || name.starts_with("partition.metadata") {
        return KafkaName::Broker;
    }
    // The raft layer's own files in the metadata log's directory: its snapshots and its quorum state.
    if super::metadata_log::is_raft_snapshot(name) || name == super::metadata_log::QUORUM_STATE_FILE {
        return KafkaName::Broker;
    }
    let (rest, stage) = [Stage::Cleaned, Stage::Swap, Stage::Deleted]
        .into_iter()
        .find_map(|st| name.strip_suffix(st.suffix()).map(|r| (r, st)))
        .unwrap_or((name, Stage::Live));
    if let Some(stem) = rest.strip_suffix(".snapshot") {
        return if digits(stem) { KafkaName::Snapshot } else { KafkaName::Foreign };
    }
    let Some((stem, file)) = FILES.into_iter().find_map(|f| rest.strip_suffix(f.suffix()).map(|s| (s, f))) else {
        return KafkaName::Foreign;
    };
    if !digits(stem) {
        return KafkaName::Foreign;
    }
    if stem.len() != BASE_DIGITS {
        return KafkaName::Unusable("Kafka names segment files by a 20-digit base offset");
    }
    match stem.parse::<u64>() {
        Ok(base) if base < MAX_OFFSET => KafkaName::Segment { base, file, stage },
        _ => KafkaName::Unusable("its base offset is beyond Kafka's largest offset (2^63 - 1)"),
    }
}

fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Writes a segment's `.index` and `.timeindex` at `stage` (replacing files of those names), synced; the
/// names become durable with the caller's next directory sync.
///
/// # Errors
/// [`Error::Io`] naming the file.
pub fn write_indexes(store: &dyn SegmentStore, base: u64, files: &KafkaIndexFiles, stage: Stage) -> Result<()> {
    for (file, bytes) in [(SegmentFile::OffsetIndex, &files.offset_index), (SegmentFile::TimeIndex, &files.time_index)]
    {
        write_file(store, &name(base, file, stage), bytes)?;
    }
    Ok(())
}

/// Writes `bytes` as the file `name` (replacing one of that name), synced.
///
/// # Errors
/// [`Error::Io`] naming the file.
pub fn write_file(store: &dyn SegmentStore, name: &str, bytes: &[u8]) -> Result<()> {
    match store.delete(name) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(Error::io("delete", name)(e)),
        _ => {}
    }
    let f = store.create(name).map_err(Error::io("create", name))?;
    if !bytes.is_empty() {
        f.append(bytes).map_err(Error::io("append", name))?;
    }
    f.sync().map_err(Error::io("sync", name))?;
    f.seal().map_err(Error::io("seal", name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_classify_as_kafka_reads_them() {
        for file in FILES {
            for stage in [Stage::Live, Stage::Cleaned, Stage::Swap, Stage::Deleted] {
                let n = name(42, file, stage);
                assert_eq!(classify(&n), KafkaName::Segment { base: 42, file, stage }, "{n}");
            }
        }
        assert_eq!(name(7, SegmentFile::Log, Stage::Swap), "00000000000000000007.log.swap");
        for foreign in ["server.log", "log-cleaner.log", "notes.txt", ".lock", "x.index"] {
            assert_eq!(classify(foreign), KafkaName::Foreign, "{foreign}");
        }
        for unusable in ["0.log", "99999999999999999999.log", "09223372036854775807.index", "123.log.swap"] {
            assert!(matches!(classify(unusable), KafkaName::Unusable(_)), "{unusable}");
        }
        assert_eq!(classify("00000000000000000100.snapshot"), KafkaName::Snapshot);
        assert_eq!(classify("leader-epoch-checkpoint"), KafkaName::Broker);
        assert_eq!(classify("partition.metadata"), KafkaName::Broker);
        assert_eq!(classify("quorum-state"), KafkaName::Broker);
        assert_eq!(classify("00000000000000000132-0000000001.checkpoint"), KafkaName::Broker);
    }
}
