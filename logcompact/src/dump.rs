//! Walking a Kafka partition directory batch by batch for a dump: every segment in offset order, the batches
//! an offset range and a key select, each batch's records decoded one at a time (memory bounded by one batch
//! and one read window, whatever the partition's size), then the torn tail a crash left, if any.
//!
//! The partition is opened read-only and records only ([`crate::open_records_only`]): no lock, nothing written
//! or mapped that a broker may change, and a damaged checkpoint file of the log directory does not keep its
//! records from being read. How batches and records are printed is the caller's.
//!
//! # Example
//! ```no_run
//! use logcompact::{DumpFilter, DumpStep as Step, walk_kafka};
//!
//! let filter = DumpFilter { key: Some(b"k42".to_vec()), ..DumpFilter::default() };
//! let mut scratch = Vec::new();
//! walk_kafka("/var/lib/kafka/data/orders-0".as_ref(), &filter, |step| {
//!     if let Step::Batch(b) = step {
//!         b.for_each_record(&mut scratch, |r| {
//!             println!("{} {:?}", r.offset, r.value);
//!             Ok(())
//!         })?;
//!     }
//!     Ok(())
//! })?;
//! # Ok::<(), logcompact::DumpError>(())
//! ```

use std::path::{Path, PathBuf};

use log_core::kafka::BatchHeader;
use log_core::{BatchRef, Format, RecordRef, SegmentScan, TornTail};

use crate::dir::{OpenError, open_records_only};

/// Which batches and records a dump shows. The default shows everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DumpFilter {
    /// Only batches reaching this offset or later, and their records from it.
    pub from_offset: Option<u64>,
    /// Only batches starting at this offset or earlier, and their records up to it.
    pub to_offset: Option<u64>,
    /// Only records with this key (and the batches holding one).
    pub key: Option<Vec<u8>>,
}

impl DumpFilter {
    /// Whether a batch of offsets `base..=last` lies in the range.
    pub fn batch_in_range(&self, base: u64, last: u64) -> bool {
        self.from_offset.is_none_or(|f| last >= f) && self.to_offset.is_none_or(|t| base <= t)
    }

    /// Whether the record at `offset` with `key` is shown.
    pub fn record_wanted(&self, offset: u64, key: Option<&[u8]>) -> bool {
        self.from_offset.is_none_or(|f| offset >= f)
            && self.to_offset.is_none_or(|t| offset <= t)
            && self.key.as_deref().is_none_or(|k| key == Some(k))
    }
}

/// Why a dump stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DumpError {
    /// The directory could not be opened as a Kafka partition.
    #[error(transparent)]
    Open(Box<OpenError>),
    /// A batch or record could not be read (damage names the segment and byte position); what came before it
    /// was handed to the visitor.
    #[error("{}: {source}", dir.display())]
    Log {
        /// The partition's directory.
        dir: PathBuf,
        /// The log's error.
        #[source]
        source: Box<log_core::Error>,
    },
    /// The visitor could not write what it was handed.
    #[error("cannot write output: {0}")]
    Output(#[from] std::io::Error),
}

/// One step of a walk.
#[derive(Debug)]
pub enum Step<'b, 'a> {
    /// A segment begins: its file name (every segment is announced, even one no batch of which is selected).
    Segment(&'a str),
    /// A batch the filter selects.
    Batch(&'b DumpedBatch<'a>),
}

/// A batch the filter selects, with where it lies.
#[derive(Debug)]
pub struct DumpedBatch<'a> {
    /// The segment's file name.
    pub segment: &'a str,
    /// The batch's byte position in the segment.
    pub position: u64,
    /// Its Kafka header.
    pub header: BatchHeader,
    /// Its size in bytes.
    pub size: usize,
    batch: BatchRef<'a>,
    filter: &'a DumpFilter,
    dir: &'a Path,
}

impl DumpedBatch<'_> {
    /// Calls `each` with every record of the batch the filter selects, in offset order, decoding one at a time
    /// (a compressed batch's records are decompressed into `scratch`).
    ///
    /// # Errors
    /// [`DumpError::Log`] for a record that does not decode; whatever `each` returns.
    pub fn for_each_record(
        &self,
        scratch: &mut Vec<u8>,
        mut each: impl FnMut(&RecordRef<'_>) -> Result<(), DumpError>,
    ) -> Result<(), DumpError> {
        let bad = |kind| self.damaged(kind);
        for r in self.batch.records(scratch).map_err(bad)? {
            let r = r.map_err(bad)?;
            if self.filter.record_wanted(r.offset, r.key) {
                each(&r)?;
            }
        }
        Ok(())
    }

    fn damaged(&self, kind: log_core::CorruptKind) -> DumpError {
        let source = log_core::Error::Corrupt { segment: self.segment.to_owned(), position: self.position, kind };
        DumpError::Log { dir: self.dir.to_path_buf(), source: Box::new(source) }
    }

    /// Whether any record of the batch has the filter's key.
    fn holds_key(&self, scratch: &mut Vec<u8>) -> Result<bool, DumpError> {
        let mut any = false;
        self.for_each_record(scratch, |_| {
            any = true;
            Ok(())
        })?;
        Ok(any)
    }
}

/// Walks the Kafka partition in `dir`: `visit` gets each segment (closed ones in offset order, then the
/// active one) and each batch `filter` selects, as they are read. Returns the torn tail a crash left at the end
/// of the active segment (the bytes a broker's recovery cuts), which the walk does not read.
///
/// # Errors
/// [`DumpError::Open`] when `dir` is no Kafka partition; [`DumpError::Log`] for a damaged batch, after every
/// batch before it was visited; whatever `visit` returns.
pub fn walk_kafka(
    dir: &Path,
    filter: &DumpFilter,
    mut visit: impl FnMut(Step<'_, '_>) -> Result<(), DumpError>,
) -> Result<Option<TornTail>, DumpError> {
    let opened = open_records_only(dir, Format::Kafka).map_err(|e| DumpError::Open(Box::new(e)))?;
    let log = &opened.log;
    let snapshot = log.snapshot();
    let failed = |source| DumpError::Log { dir: dir.to_path_buf(), source: Box::new(source) };
    let mut scratch = Vec::new();
    let active = SegmentScan::new(
        Format::Kafka,
        snapshot.active_name(),
        snapshot.active_source(),
        0,
        snapshot.active_len(),
        true,
    );
    let segments =
        snapshot.closed().iter().map(|s| (s.name(), s.scan())).chain(std::iter::once((snapshot.active_name(), active)));
    for (file, mut scan) in segments {
        visit(Step::Segment(file))?;
        while let Some(window) = scan.next_window().map_err(failed)? {
            for item in window.batches() {
                let placed = item.map_err(failed)?;
                let b = placed.batch;
                let Some(header) = b.kafka_header() else { continue };
                if !filter.batch_in_range(b.base_offset, b.last_offset) {
                    continue;
                }
                let batch = DumpedBatch {
                    segment: file,
                    position: placed.position,
                    header: *header,
                    size: b.len(),
                    batch: b,
                    filter,
                    dir,
                };
                if filter.key.is_some() && !batch.holds_key(&mut scratch)? {
                    continue;
                }
                visit(Step::Batch(&batch))?;
            }
        }
    }
    Ok(log.recovery_report().truncated_tail.clone())
}
