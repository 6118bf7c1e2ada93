//! Reading a stopped KRaft node's metadata log as its broker loads it at start: the latest raft snapshot
//! (`<20-digit end offset>-<10-digit epoch>.checkpoint`, the greatest by epoch, then offset), then every data
//! record of the log's segments at or past the snapshot's end offset, in offset order. Control batches (leader
//! changes, snapshot headers and footers, voters) carry no metadata and are passed over.
//!
//! Files are read a batch at a time with plain reads: nothing is mapped, locked or written (the directory is
//! the broker's raft layer's, [`log_core::kafka::metadata_log`]). A batch is at most [`MAX_BATCH_BYTES`] (the
//! raft layer writes at most 8 MiB), checked before it is read.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use log_core::kafka::metadata_log::is_raft_snapshot;
use log_core::kafka::{Batch, LOG_OVERHEAD};

/// The largest metadata batch read (eight times what the raft layer writes).
pub const MAX_BATCH_BYTES: usize = 64 << 20;

/// Why the metadata log could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MetadataLogError {
    /// A file could not be listed or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A batch is damaged, cut off, or larger than a metadata batch can be.
    #[error("{} at byte {position}: {what}", path.display())]
    BadBatch {
        /// The file.
        path: PathBuf,
        /// Where the batch starts.
        position: u64,
        /// What is wrong.
        what: String,
    },
}

/// One metadata record: its offset in the log (in a snapshot, its place in the file) and its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataRecord {
    /// The record's offset.
    pub offset: i64,
    /// Its value (a metadata record: frame version, api key, version, body).
    pub value: Vec<u8>,
    /// Its timestamp.
    pub timestamp: i64,
}

/// Where a replay starts: the snapshot taken and the segments read after it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sources {
    /// The snapshot replayed first, if there is one.
    pub snapshot: Option<PathBuf>,
    /// Its end offset (records of the log below it are in it); 0 without a snapshot.
    pub snapshot_end: i64,
    /// The log's segments, in offset order.
    pub segments: Vec<PathBuf>,
}

/// `(end offset, epoch)` of a finished raft snapshot's file name.
fn snapshot_id(name: &str) -> Option<(i64, i64)> {
    let stem = name.strip_suffix(".checkpoint")?;
    let (offset, epoch) = stem.split_once('-')?;
    Some((offset.parse().ok()?, epoch.parse().ok()?))
}

/// The files of the metadata log in `dir` that a broker's start reads.
///
/// # Errors
/// [`MetadataLogError::Io`] when `dir` cannot be listed.
pub fn sources(dir: &Path) -> Result<Sources, MetadataLogError> {
    let io = |source| MetadataLogError::Io { path: dir.to_path_buf(), source };
    let mut snapshots = Vec::new();
    let mut segments = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let name = entry.map_err(io)?.file_name().to_string_lossy().into_owned();
        // Finished snapshots only: a `.part` is being written, a `.deleted` is going.
        if is_raft_snapshot(&name) && name.ends_with(".checkpoint") {
            if let Some((end, epoch)) = snapshot_id(&name) {
                snapshots.push(((epoch, end), name));
            }
        } else if let Some(base) = name
            .strip_suffix(".log")
            .filter(|b| b.len() == 20 && b.bytes().all(|c| c.is_ascii_digit()))
            .and_then(|b| b.parse::<i64>().ok())
        {
            segments.push((base, name));
        }
    }
    snapshots.sort();
    segments.sort();
    let latest = snapshots.pop();
    Ok(Sources {
        snapshot_end: latest.as_ref().map_or(0, |((_, end), _)| *end),
        snapshot: latest.map(|(_, name)| dir.join(name)),
        segments: segments.into_iter().map(|(_, name)| dir.join(name)).collect(),
    })
}

/// Calls `each` with every data record of the file at `path` at or past `from`, in file order.
///
/// # Errors
/// [`MetadataLogError`] for an unreadable file or a damaged batch; a batch cut off at the end of the file (a
/// torn tail the broker would cut) ends the file instead.
#[expect(clippy::big_endian_bytes, reason = "Kafka's batch length is big-endian")]
pub fn each_record(path: &Path, from: i64, each: &mut dyn FnMut(MetadataRecord)) -> Result<(), MetadataLogError> {
    let io = |source| MetadataLogError::Io { path: path.to_path_buf(), source };
    let file = File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut position = 0u64;
    let mut bytes = Vec::new();
    let mut scratch = Vec::new();
    while position + LOG_OVERHEAD as u64 <= len {
        let at = position;
        let bad = |what: String| MetadataLogError::BadBatch { path: path.to_path_buf(), position: at, what };
        let mut head = [0u8; LOG_OVERHEAD];
        reader.read_exact(&mut head).map_err(io)?;
        let batch_length = i32::from_be_bytes([head[8], head[9], head[10], head[11]]);
        let size = usize::try_from(batch_length).map_err(|_| bad(format!("a negative batch length {batch_length}")))?;
        if size > MAX_BATCH_BYTES {
            return Err(bad(format!("a batch of {size} bytes, more than a metadata batch can be")));
        }
        if position + (LOG_OVERHEAD + size) as u64 > len {
            // A torn tail: what a broker's recovery cuts.
            break;
        }
        bytes.clear();
        bytes.extend_from_slice(&head);
        bytes.resize(LOG_OVERHEAD + size, 0);
        reader.read_exact(&mut bytes[LOG_OVERHEAD..]).map_err(io)?;
        let batch = Batch::parse(&bytes).map_err(|e| bad(e.to_string()))?;
        position += bytes.len() as u64;
        if batch.header.is_control() || batch.header.last_offset() < from {
            continue;
        }
        for record in batch.records(&mut scratch).map_err(|e| bad(e.to_string()))? {
            let record = record.map_err(|e| bad(e.to_string()))?;
            if record.offset >= from {
                each(MetadataRecord {
                    offset: record.offset,
                    value: record.value.unwrap_or_default().to_vec(),
                    timestamp: record.timestamp,
                });
            }
        }
    }
    Ok(())
}

/// Calls `each` with every record a broker's start replays from the metadata log in `dir`: the latest
/// snapshot's, then the log's from the snapshot's end offset on. Returns what was read.
///
/// # Errors
/// As [`sources`] and [`each_record`].
pub fn replay(dir: &Path, each: &mut dyn FnMut(MetadataRecord)) -> Result<Sources, MetadataLogError> {
    let found = sources(dir)?;
    if let Some(snapshot) = &found.snapshot {
        each_record(snapshot, 0, each)?;
    }
    for segment in &found.segments {
        each_record(segment, found.snapshot_end, each)?;
    }
    Ok(found)
}
