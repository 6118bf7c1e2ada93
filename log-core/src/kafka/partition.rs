//! A Kafka partition directory, read through a [`SegmentStore`] without changing it: its segments
//! (`<20-digit base>.log`) in offset order, each scanned batch by batch with every CRC checked.
//!
//! Kafka's own indexes (`.index`, `.timeindex`, `.txnindex`), producer snapshots, `leader-epoch-checkpoint` and
//! `partition.metadata` are listed as the partition's other files and not read. A segment cut off in the middle
//! of its last batch is a torn tail only in the last (active) segment, as Kafka's recovery would cut it;
//! anywhere else, and any CRC mismatch, is corruption naming the file and byte.

use super::batch::{Batch, BatchProblem};
use crate::storage::{SegmentBytes, SegmentStore};

/// Why a partition cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum PartitionError {
    /// The store could not be listed or a file read.
    #[error("cannot {op} {name}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file.
        name: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A batch is damaged or not a magic 2 batch.
    #[error("{file} at byte {position}: {problem}")]
    Batch {
        /// The segment file.
        file: String,
        /// Where the batch starts.
        position: u64,
        /// What is wrong.
        problem: BatchProblem,
    },
    /// The directory is not a Kafka partition.
    #[error("not a Kafka partition directory: {what}")]
    NotKafka {
        /// What was found.
        what: String,
    },
    /// A `.swap` file: a Kafka cleaning swap in progress, which only Kafka's own recovery may finish.
    #[error("{name}: a Kafka cleaner swap is in progress (let the broker recover the partition first)")]
    SwapInProgress {
        /// The file.
        name: String,
    },
    /// A segment name whose base offset is not below the next segment's first offset, or overlapping
    /// batches.
    #[error(
        "{file} at byte {position}: batch offset {offset} is not after the previous batch's last offset {previous}"
    )]
    OutOfOrder {
        /// The file.
        file: String,
        /// Where the batch starts.
        position: u64,
        /// Its base offset.
        offset: i64,
        /// The previous last offset.
        previous: i64,
    },
}

impl PartitionError {
    /// True for damage to stored data (as opposed to an I/O failure or a wrong directory).
    pub fn is_corruption(&self) -> bool {
        matches!(self, PartitionError::Batch { .. } | PartitionError::OutOfOrder { .. })
    }
}

/// One segment file of a partition.
#[derive(Debug, Clone)]
pub struct KafkaSegment {
    /// Its base offset (from its name).
    pub base: i64,
    /// Its file name.
    pub name: String,
    /// Its bytes.
    pub bytes: SegmentBytes,
}

impl KafkaSegment {
    /// Its batches in order, each with its position; ends at the first problem (an `Err`), or at a torn tail.
    pub fn batches(&self) -> BatchScan<'_> {
        BatchScan { segment: self, pos: 0, failed: false, verify: true }
    }
}

/// The batches of a segment.
#[derive(Debug)]
pub struct BatchScan<'a> {
    segment: &'a KafkaSegment,
    pos: usize,
    failed: bool,
    verify: bool,
}

impl<'a> Iterator for BatchScan<'a> {
    type Item = Result<(u64, Batch<'a>), PartitionError>;

    fn next(&mut self) -> Option<Self::Item> {
        let bytes: &'a [u8] = &self.segment.bytes;
        if self.failed || self.pos >= bytes.len() {
            return None;
        }
        let at = self.pos;
        let parsed = if self.verify { Batch::parse(&bytes[at..]) } else { Batch::parse_unverified(&bytes[at..]) };
        match parsed {
            Ok(batch) => {
                self.pos += batch.bytes.len();
                Some(Ok((at as u64, batch)))
            }
            Err(problem) => {
                self.failed = true;
                Some(Err(PartitionError::Batch { file: self.segment.name.clone(), position: at as u64, problem }))
            }
        }
    }
}

/// A partition: its segments in offset order and its other files.
#[derive(Debug, Clone)]
pub struct Partition {
    /// Segments, by base offset; the last is the active one.
    pub segments: Vec<KafkaSegment>,
    /// The names of every other file (indexes, snapshots, epoch checkpoint, metadata).
    pub other_files: Vec<String>,
}

/// `<20 digits>.log` → its base offset.
fn segment_base(name: &str) -> Option<i64> {
    let stem = name.strip_suffix(".log")?;
    (stem.len() == 20 && stem.bytes().all(|b| b.is_ascii_digit())).then(|| stem.parse().ok()).flatten()
}

/// Files this project writes into its own log directories, which a Kafka partition never holds.
fn is_native_file(name: &str) -> bool {
    name.ends_with(".lcindex") || name == "cleaner-checkpoint" || name == "logcompact.lock"
}

impl Partition {
    /// Reads the partition in `store` (a store opened read-only changes nothing).
    ///
    /// # Errors
    /// [`PartitionError::NotKafka`] for a directory without segments or one of this project's own logs;
    /// [`PartitionError::SwapInProgress`]; [`PartitionError::Io`].
    pub fn open(store: &dyn SegmentStore) -> Result<Partition, PartitionError> {
        let names = store.list().map_err(|source| PartitionError::Io { op: "list", name: ".".into(), source })?;
        let mut segments = Vec::new();
        let mut other_files = Vec::new();
        let mut native = Vec::new();
        for name in names {
            if let Some(base) = segment_base(&name) {
                let file = store.open(&name).map_err(|source| PartitionError::Io {
                    op: "open",
                    name: name.clone(),
                    source,
                })?;
                let bytes = match file.seal().and_then(|()| file.view()) {
                    Ok(bytes) => bytes,
                    Err(_) => {
                        let mut buf = vec![0u8; usize::try_from(file.len()).unwrap_or(usize::MAX)];
                        file.read_at(0, &mut buf).map_err(|source| PartitionError::Io {
                            op: "read",
                            name: name.clone(),
                            source,
                        })?;
                        SegmentBytes::new(buf)
                    }
                };
                segments.push(KafkaSegment { base, name, bytes });
            } else if name.ends_with(".swap") {
                return Err(PartitionError::SwapInProgress { name });
            } else if is_native_file(&name) {
                native.push(name);
            } else {
                other_files.push(name);
            }
        }
        if !native.is_empty() {
            return Err(PartitionError::NotKafka {
                what: format!("a log of this project's own format (its files: {})", native.join(", ")),
            });
        }
        if segments.is_empty() {
            return Err(PartitionError::NotKafka { what: "no segment file (<20-digit base>.log)".into() });
        }
        if let Some(first) = segments.iter().find(|s| s.bytes.len() > super::batch::MAGIC_OFFSET)
            && crate::codec::plausible_frame_start(&first.bytes, first.bytes.len() as u64, None).is_some()
            && Batch::parse(&first.bytes).is_err()
        {
            return Err(PartitionError::NotKafka {
                what: format!("{} starts with a record frame of this project's own format", first.name),
            });
        }
        segments.sort_by_key(|s| s.base);
        Ok(Partition { segments, other_files })
    }

    /// The active segment's base offset (Kafka never cleans the active segment).
    pub fn active_base(&self) -> i64 {
        self.segments.last().map_or(0, |s| s.base)
    }

    /// Every batch of every segment, in order, checked: CRCs, order of offsets. A batch cut off at the end of
    /// the last segment is a torn tail: the scan ends there and `torn_tail` says where.
    pub fn scan(&self) -> PartitionScan<'_> {
        self.scan_with(true)
    }

    /// As [`Partition::scan`] without checking CRCs (see [`Batch::parse_unverified`]).
    pub fn scan_unverified(&self) -> PartitionScan<'_> {
        self.scan_with(false)
    }

    fn scan_with(&self, verify: bool) -> PartitionScan<'_> {
        PartitionScan {
            partition: self,
            segment: 0,
            inner: None,
            last_offset: None,
            torn_tail: None,
            done: false,
            verify,
        }
    }
}

/// Where a torn tail starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// The segment file.
    pub file: String,
    /// The byte where the cut batch starts.
    pub position: u64,
    /// Bytes from there to the end.
    pub bytes: u64,
}

/// A checked scan of a partition's batches.
#[derive(Debug)]
pub struct PartitionScan<'a> {
    partition: &'a Partition,
    segment: usize,
    inner: Option<BatchScan<'a>>,
    last_offset: Option<i64>,
    /// Set when the scan met a torn tail.
    pub torn_tail: Option<TornTail>,
    done: bool,
    verify: bool,
}

/// A batch with its place.
#[derive(Debug, Clone, Copy)]
pub struct PlacedBatch<'a> {
    /// The index of its segment in [`Partition::segments`].
    pub segment: usize,
    /// Its byte position in the segment.
    pub position: u64,
    /// The batch.
    pub batch: Batch<'a>,
}

impl<'a> Iterator for PartitionScan<'a> {
    type Item = Result<PlacedBatch<'a>, PartitionError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            let segments = &self.partition.segments;
            let Some(seg) = segments.get(self.segment) else {
                self.done = true;
                return None;
            };
            let verify = self.verify;
            let inner = self.inner.get_or_insert_with(|| BatchScan { verify, ..seg.batches() });
            match inner.next() {
                None => {
                    self.segment += 1;
                    self.inner = None;
                }
                Some(Ok((position, batch))) => {
                    if let Some(previous) = self.last_offset.filter(|&p| batch.header.base_offset <= p) {
                        self.done = true;
                        return Some(Err(PartitionError::OutOfOrder {
                            file: seg.name.clone(),
                            position,
                            offset: batch.header.base_offset,
                            previous,
                        }));
                    }
                    self.last_offset = Some(batch.header.last_offset());
                    return Some(Ok(PlacedBatch { segment: self.segment, position, batch }));
                }
                Some(Err(PartitionError::Batch { file, position, problem: BatchProblem::Truncated { .. } }))
                    if self.segment + 1 == segments.len() =>
                {
                    self.done = true;
                    self.torn_tail = Some(TornTail { file, position, bytes: seg.bytes.len() as u64 - position });
                    return None;
                }
                Some(Err(e)) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

/// Kafka's `cleaner-offset-checkpoint` (in the log directory, the partition directory's parent): version `0`,
/// a count, then `topic partition offset` lines. The offset for `topic`/`partition`, if listed.
///
/// # Errors
/// A line that does not parse, naming it.
pub fn checkpoint_offset(text: &str, topic: &str, partition: u32) -> Result<Option<i64>, String> {
    let mut lines = text.lines();
    match lines.next().map(str::trim) {
        Some("0") => {}
        other => return Err(format!("line 1: version {other:?}, expected 0")),
    }
    lines.next().ok_or("line 2: the entry count is missing")?;
    for (i, line) in lines.enumerate() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [t, p, o] = fields[..] else { return Err(format!("line {}: expected `topic partition offset`", i + 3)) };
        let (Ok(p), Ok(o)) = (p.parse::<u32>(), o.parse::<i64>()) else {
            return Err(format!("line {}: partition and offset must be numbers", i + 3));
        };
        if t == topic && p == partition {
            return Ok(Some(o));
        }
    }
    Ok(None)
}

/// `orders-3` → (`orders`, 3): a partition directory's name.
pub fn topic_partition(dir_name: &str) -> Option<(&str, u32)> {
    let (topic, p) = dir_name.rsplit_once('-')?;
    Some((topic, p.parse().ok()?))
}
