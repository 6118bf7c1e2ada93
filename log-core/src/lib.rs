//! `log-core`: the record model, the record codec, the storage traits and the segmented [`Log`] of
//! logcompact, a toolkit for Kafka-style log compaction.
//!
//! A log is a sequence of segments named by their base offset. Appends go to the last, active segment; a
//! roll seals it and opens a new one. Every record keeps its offset for life: the cleaner (in the `cleaner`
//! crate) removes superseded records but never renumbers, so a compacted log has gaps and a read at a removed
//! offset returns the next record that exists. This crate knows no backend: it talks to storage only through
//! [`SegmentStore`] and [`Segment`], implemented by `storage-mem` and `storage-file`.
//!
//! The public surface: the [`Log`] itself with its [`OpenOptions`], its [`LogSnapshot`] readers and its cleaning
//! transaction ([`Cleaning`]); records ([`Record`], [`RecordRef`]); sealed segments, scans and writers
//! ([`SealedSegment`], [`SegmentScan`], [`SegmentWriter`]); [`storage`] (backend traits); [`format`](mod@format) (the
//! segment-format seam, each format's own files under it: [`codec`], the checksummed frame; [`kafka`]);
//! [`names`] (file names); [`check`], [`repair`]; [`progress`] and [`human`] for front ends. The rest (the
//! sparse index, checksums, torn tails, transaction state) is internal.
//!
//! # Example
//! ```
//! use std::sync::Arc;
//! use log_core::{Log, LogConfig, OpenOptions};
//!
//! let log = Log::open(Arc::new(storage_mem::MemStore::new()), OpenOptions::new(LogConfig::default()))?;
//! let a = log.put(b"user-1", b"alice")?;
//! log.roll()?;
//! log.delete(b"user-1")?;
//! assert_eq!(log.read(a)?.and_then(|r| r.value), Some(b"alice".to_vec()));
//! assert_eq!(log.next_offset(), 2);
//! # Ok::<(), log_core::Error>(())
//! ```
#![deny(missing_docs)]

pub mod check;
pub mod cleaning;
mod config;
pub mod format;
mod ground;
mod group_copy;
pub mod hooked;
pub mod human;
mod index;
mod log;
mod open;
mod options;
pub mod progress;
pub mod protocol;
mod reader;
pub mod repair;
mod scan;
mod segment;
mod swap;
pub mod swap_proof;
mod tail;
pub mod workload;

/// The CRC-32C every frame and batch is checked with, and the cache hints scans read ahead with (public for
/// the benchmarks' floors, which must do what a pass does, as fast as a pass does it).
pub use ground::{aligned, cache, checksum};
pub(crate) use ground::{error, record};
pub use ground::{names, producers, storage, txn};

pub use format as batch;
pub use format::checkpoint;
pub use format::native::{codec, removal};
pub use protocol::native::layout;

/// Kafka's format under one name: its bytes (batches, codecs, file names, side files: [`format::kafka`]) and
/// its protocols above them (recovery, producer state, the transaction index: [`protocol::kafka`]).
pub mod kafka {
    pub use crate::format::kafka::*;
    pub use crate::protocol::kafka::*;
}

pub use batch::{BatchRef, Format};
pub use checkpoint::CheckpointFile;
pub use cleaning::{Cleaning, DirtySection, Replacement};
pub use config::{DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_SEGMENT_BYTES, LogConfig, SyncPolicy};
pub use error::{CorruptKind, DIRECTORY, Error, ReplacementProblem, Result};
pub use group_copy::GroupCopy;
pub use kafka::txn::for_each_kafka_header;
pub use log::{AppendRecord, CheckpointReset, Log, RecoveryReport, now_ms};
pub use options::OpenOptions;
pub use reader::{LogReader, LogSnapshot};
pub use record::{Header, Record, RecordRef};
pub use scan::{Batches, Frame, FrameKey, Frames, Placed, SegmentScan, Window};
pub use segment::{SealedSegment, SegmentWriter, Stamp};
pub use storage::SegmentSource;
pub use storage::{ReleasableBytes, Segment, SegmentBytes, SegmentStore};
pub use tail::TornTail;
