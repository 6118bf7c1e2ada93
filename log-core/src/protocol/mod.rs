//! The formats' protocols: the top floor of the crate. Each format's file work above its bytes (its
//! directory layout, recovery, the cleaner's swap, check and repair) and `dispatch`, the one place that tells
//! the formats apart for the core.
//!
//! Floors (checked by the workspace's layering test): `ground/` (errors, records, names, storage, the
//! format-free transaction and producer types) and the Kafka codec at the bottom; `format/` (the byte seam:
//! [`crate::Format`], [`crate::BatchRef`], each format's codec, names and side files) above it; the core
//! (`Log`, reading, recovery's skeleton, the cleaning transaction) above that; and this folder and `repair/`
//! on top. The core asks a format what differs through `Format`'s methods, which `dispatch` answers by calling
//! down into `kafka/` and `native/` here; no file imports a floor above its own.

pub(crate) mod dispatch;
pub mod kafka;
pub mod native;
