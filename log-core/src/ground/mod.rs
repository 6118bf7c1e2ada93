//! The ground floor: what every floor above stands on and that imports nothing above it (only the Kafka
//! codec, a leaf): errors, records, offsets and file names, the storage traits, checksums, and the
//! format-free transaction and producer types.

pub mod aligned;
pub mod cache;
pub mod checksum;
pub mod error;
pub mod names;
pub mod producers;
pub mod record;
pub mod storage;
pub mod txn;
