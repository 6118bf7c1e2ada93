//! Kafka's on-disk partition format, its bytes: magic 2 record batches and their codecs, file names, the
//! offset and time indexes, checkpoint files, producer snapshots and the metadata log's records. Its protocols
//! above the bytes (a partition directory read as a broker reads it, the cleaner's output and swap, producer
//! state, the transaction index) are in [`crate::protocol::kafka`]; [`crate::kafka`] names both.
//!
//! This is the second segment format beside this project's own frames: the cleaner reads keys from the
//! records of batches, keeps a batch's bytes as they are when it keeps every record of it, and re-encodes
//! (and re-compresses with the batch's codec) a batch it filters, keeping Kafka's header fields and offsets.
//!
//! ```
//! use log_core::kafka::{Batch, Compression, RecordToWrite, new_header, write_batch};
//! let records = [RecordToWrite { offset: 7, timestamp: 1_000, key: Some(b"k"), value: None, header_count: 0, header_bytes: &[] }];
//! let mut bytes = Vec::new();
//! write_batch(&new_header(7, 0), Compression::Lz4, Some(2_000), &records, &mut bytes, &mut Vec::new())?;
//! let batch = Batch::parse(&bytes)?;
//! assert_eq!(batch.header.delete_horizon(), Some(2_000));
//! let mut scratch = Vec::new();
//! let first = batch.records(&mut scratch)?.next().expect("one record")?;
//! assert_eq!((first.offset, first.key, first.value), (7, Some(&b"k"[..]), None));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![expect(clippy::big_endian_bytes, reason = "Kafka's format is big-endian")]

pub(crate) mod append;
pub mod checkpoints;
pub mod codec;
pub mod files;
pub mod index;
pub mod metadata_log;
pub mod producer_snapshot;
pub mod txn;

pub use codec::{compression, varint};

pub use checkpoints::topic_partition;
pub use codec::batch::{
    Batch, BatchHeader, BatchProblem, HEADER_BYTES, KafkaRecord, LOG_OVERHEAD, MAGIC_OFFSET, MAX_DECOMPRESSED_BYTES,
    MIN_RECORD_BYTES, Records,
};
pub use codec::build::{BuildError, RecordToWrite, new_header, write_batch, write_batch_from};
pub use codec::compression::{Compression, DecompressError};
pub use index::INDEX_INTERVAL_BYTES;
