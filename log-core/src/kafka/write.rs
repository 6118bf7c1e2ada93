//! Writing a Kafka partition directory: segments of magic 2 batches with Kafka's offset index (`.index`:
//! relative offset i32, position i32) and time index (`.timeindex`: timestamp i64, relative offset i32), both
//! big-endian, an entry each time more than `index.interval.bytes` of batches were written since the last one,
//! as Kafka's `LogSegment.append` does (the entry names the batch's last offset and its position), and a last
//! time-index entry when a segment is closed.
//!
//! Files are written under a `.cleaned` name, synced, then renamed into place and the directory synced, so a
//! crash leaves either no segment or a whole one.

use std::sync::Arc;

use super::batch::BatchHeader;
use crate::storage::{Segment, SegmentStore};

/// Kafka's default `index.interval.bytes`.
pub const INDEX_INTERVAL_BYTES: u64 = 4096;

/// `<20-digit base><suffix>`.
pub fn file_name(base: i64, suffix: &str) -> String {
    format!("{base:020}{suffix}")
}

/// Writes one segment and its indexes.
#[derive(Debug)]
pub struct SegmentOut {
    base: i64,
    log: Arc<dyn Segment>,
    index: Vec<u8>,
    time_index: Vec<u8>,
    since_entry: u64,
    position: u64,
    max_timestamp: i64,
    offset_of_max: i64,
    last_time_entry: Option<i64>,
    interval: u64,
}

fn io(op: &'static str, name: String) -> impl FnOnce(std::io::Error) -> super::PartitionError {
    move |source| super::PartitionError::Io { op, name, source }
}

impl SegmentOut {
    /// Starts `<base>.log.cleaned` in `store`.
    ///
    /// # Errors
    /// The store's error.
    pub fn create(store: &dyn SegmentStore, base: i64) -> Result<SegmentOut, super::PartitionError> {
        let name = file_name(base, ".log.cleaned");
        let log = store.create(&name).map_err(io("create", name))?;
        Ok(SegmentOut {
            base,
            log,
            index: Vec::new(),
            time_index: Vec::new(),
            since_entry: 0,
            position: 0,
            max_timestamp: -1,
            offset_of_max: base,
            last_time_entry: None,
            interval: INDEX_INTERVAL_BYTES,
        })
    }

    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        self.position
    }

    /// True before the first batch.
    pub fn is_empty(&self) -> bool {
        self.position == 0
    }

    /// Appends one batch (`bytes`, whose header is `header`).
    ///
    /// # Errors
    /// The store's error.
    pub fn append(&mut self, header: &BatchHeader, bytes: &[u8]) -> Result<(), super::PartitionError> {
        if header.max_timestamp > self.max_timestamp {
            self.max_timestamp = header.max_timestamp;
            self.offset_of_max = header.last_offset();
        }
        if self.since_entry > self.interval {
            let relative = (header.last_offset() - self.base) as i32;
            self.index.extend_from_slice(&relative.to_be_bytes());
            self.index.extend_from_slice(&(self.position as i32).to_be_bytes());
            self.time_entry();
            self.since_entry = 0;
        }
        self.log.append(bytes).map_err(io("write", file_name(self.base, ".log.cleaned")))?;
        self.position += bytes.len() as u64;
        self.since_entry += bytes.len() as u64;
        Ok(())
    }

    fn time_entry(&mut self) {
        if self.max_timestamp >= 0 && self.last_time_entry.is_none_or(|t| self.max_timestamp > t) {
            self.time_index.extend_from_slice(&self.max_timestamp.to_be_bytes());
            self.time_index.extend_from_slice(&((self.offset_of_max - self.base) as i32).to_be_bytes());
            self.last_time_entry = Some(self.max_timestamp);
        }
    }

    /// Writes the indexes, syncs everything and renames the three files into place.
    ///
    /// # Errors
    /// The store's error.
    pub fn finish(mut self, store: &dyn SegmentStore) -> Result<(), super::PartitionError> {
        self.time_entry();
        self.log.sync().map_err(io("sync", file_name(self.base, ".log.cleaned")))?;
        self.log.seal().map_err(io("seal", file_name(self.base, ".log.cleaned")))?;
        for (suffix, bytes) in [(".index", &self.index), (".timeindex", &self.time_index)] {
            let name = file_name(self.base, &format!("{suffix}.cleaned"));
            let f = store.create(&name).map_err(io("create", name.clone()))?;
            f.append(bytes).map_err(io("write", name.clone()))?;
            f.sync().map_err(io("sync", name.clone()))?;
            f.seal().map_err(io("seal", name))?;
        }
        for suffix in [".index", ".timeindex", ".log"] {
            let from = file_name(self.base, &format!("{suffix}.cleaned"));
            store.rename(&from, &file_name(self.base, suffix)).map_err(io("rename", from))?;
        }
        store.sync_dir().map_err(io("sync", ".".into()))
    }
}
