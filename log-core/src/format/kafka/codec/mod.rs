//! Kafka's record batch codec: magic 2 batches ([`batch`]), building them ([`build`]), their compression
//! codecs ([`compression`]) and the zig-zag varints inside records ([`varint`]).
//!
//! A leaf: it knows bytes only, and imports nothing of the log (no error type, record, segment or store of
//! the crate), so that the log's files may use it and it never points back at them.

pub mod batch;
pub mod build;
pub mod compression;
mod inflate;
pub mod varint;
