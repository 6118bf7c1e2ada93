//! `storage-file`: the file backend of logcompact.
//!
//! [`FileStore`] keeps one log in one directory: each segment is a file named by log-core (`<20-digit
//! base>.log`, its `.lcindex` hint, the `.cleaned`/`.swap`/`.deleted` files of a cleaning swap and the cleaner
//! checkpoint). The active segment is appended through a write buffer that is flushed on sync and on seal;
//! sealed segments are memory-mapped, so the cleaner and readers scan them without copying. Directory
//! changes are made durable by fsyncing the directory. A writable store holds an exclusive `flock` on the
//! directory itself, which keeps a second writer out; a read-only store ([`FileStore::open_read_only`])
//! takes no lock and changes nothing, so it works on a read-only mount and beside a running writer. The byte
//! layout is in `docs/format.md`.
//!
//! # Example
//! ```
//! use std::sync::Arc;
//! use log_core::{Log, LogConfig, OpenOptions};
//!
//! let dir = tempfile::tempdir()?;
//! {
//!     let log = Log::open(Arc::new(storage_file::FileStore::open(dir.path())?), OpenOptions::new(LogConfig::default()))?;
//!     log.put(b"k", b"v")?;
//!     log.roll()?;
//! }
//! let log = Log::open(Arc::new(storage_file::FileStore::open(dir.path())?), OpenOptions::new(LogConfig::default()))?;
//! assert_eq!(log.read(0)?.and_then(|r| r.value), Some(b"v".to_vec()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod broker_lock;
mod direct;
mod error;
pub mod kafka;
mod segment;
mod store;
pub mod writeback;

pub use broker_lock::{BROKER_LOCK_FILE, LogDirLock, lock_log_dir};
pub use error::{Error, Result};
pub use segment::FileSegment;
pub use store::{
    Access, FileStore, LOCK_FILE, list_names, log_dir_of, metadata_log_sign, metadata_log_sign_in, refuse_metadata_log,
};
