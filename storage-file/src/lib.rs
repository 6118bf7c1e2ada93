//! `storage-file`: the file backend of logcompact.
//!
//! [`FileStore`] keeps one log in one directory: each segment is a file named by log-core (`<20-digit
//! base>.log`, its `.index` hint, the `.cleaned`/`.swap`/`.deleted` files of a cleaning swap and the cleaner
//! checkpoint). The active segment is appended through a write buffer that is flushed on sync and on seal;
//! sealed segments are memory-mapped, so the cleaner and readers scan them without copying. Directory
//! changes are made durable by fsyncing the directory. A lock file keeps a second process out of the
//! directory while the store is open. The byte layout is in `docs/format.md`.
//!
//! # Example
//! ```
//! use std::sync::Arc;
//! use log_core::{Log, LogConfig};
//!
//! let dir = tempfile::tempdir()?;
//! {
//!     let log = Log::open(Arc::new(storage_file::FileStore::open(dir.path())?), LogConfig::default())?;
//!     log.put(b"k", b"v")?;
//!     log.roll()?;
//! }
//! let log = Log::open(Arc::new(storage_file::FileStore::open(dir.path())?), LogConfig::default())?;
//! assert_eq!(log.read(0)?.and_then(|r| r.value), Some(b"v".to_vec()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod error;
mod segment;
mod store;

pub use error::{Error, Result};
pub use segment::FileSegment;
pub use store::{FileStore, LOCK_FILE};
