//! `cleaner`: Kafka's log cleaner for a [`log_core::Log`]: the [`OffsetMap`] trait and its three maps (Kafka's
//! MD5 [`SkimpyMap`], the exact [`FullKeyMap`], this project's 12-byte-slot [`CompactMap`], built by
//! [`MapKind`]), and the two-pass [`Cleaner`].
//!
//! A pass maps key → latest offset over the dirty section of the log (from the cleaner checkpoint to the
//! active segment) in a fixed memory budget, then re-copies the closed segments keeping only the latest
//! record of each key, at its original offset. Tombstones get a delete horizon the first time a pass keeps
//! them and go on a later pass once it has passed (KIP-534). When the map fills before the dirty section
//! ends, the pass is partial and the next one continues; repeated passes converge to the full result.
//!
//! # Example
//! ```
//! use std::sync::Arc;
//! use cleaner::{Cleaner, CleanerConfig, MapKind, PassOptions, SystemClock};
//! use log_core::{Log, LogConfig, OpenOptions};
//!
//! let log = Log::open(Arc::new(storage_mem::MemStore::new()), OpenOptions::new(LogConfig::default()))?;
//! log.put(b"p", b"1")?;
//! log.put(b"p", b"2")?;
//! log.roll()?;
//! let config = CleanerConfig { map: MapKind::Compact, dedupe_buffer_bytes: 1 << 20, ..CleanerConfig::default() };
//! let mut cleaner = Cleaner::new(config, Arc::new(SystemClock))?;
//! let stats = cleaner.clean(&log, PassOptions::default())?;
//! assert_eq!(stats.stale_dropped, 1);
//! assert_eq!(log.read(0)?.map(|r| r.offset), Some(1)); // offset 0 is gone; 1 keeps its offset
//! # Ok::<(), cleaner::Error>(())
//! ```
#![deny(missing_docs)]

pub mod advise;
pub mod allocator;
pub mod analyze;
mod clock;
mod config;
mod error;
pub mod external;
mod finisher;
pub mod hll;
mod keep;
pub mod manager;
pub mod map;
mod offset_order;
mod options;
mod pace;
mod pass;
mod pass1;
mod pass2;
mod pass2_split;
pub mod settings;
mod stats;
pub mod summary;
mod superseded;
pub mod throttle;

pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{
    CleanerConfig, DEFAULT_DEDUPE_BUFFER_BYTES, DEFAULT_LOAD_FACTOR, MAX_PASS_THREADS, MIN_LOAD_FACTOR,
    min_skimpy_bytes,
};
pub use error::{Error, Result};
pub use map::{CompactMap, FullKeyMap, MapFull, MapKind, MapStats, OffsetMap, Probes, SkimpyMap};
pub use options::{Grouping, PassOptions};
pub use pass::{Cleaner, DryRun, STAGE_COPY, STAGE_MAP};
pub use settings::{CleanupPolicy, DEFAULT_DELETE_RETENTION_MS, DEFAULT_MIN_CLEANABLE_DIRTY_RATIO, LogSettings};
pub use stats::{CleanStats, FellBack, Pass1Stats, Pass2Stats};
pub use throttle::Throttler;
