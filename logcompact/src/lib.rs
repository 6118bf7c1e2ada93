//! `logcompact`: the front door of the logcompact toolkit. It opens a directory on disk as a log, either this
//! project's native log or a Kafka partition directory (`<log dir>/<topic>-<partition>/`), compacts it in place
//! or into a copy with Kafka's two-pass cleaner, and runs Kafka's cleaner manager over a whole data directory.
//! Everything the `logcompact` command line does is here; the command line only parses and prints:
//! [`open_or_create`], [`open_read_only`] and [`open_writable`] for a directory of either format, [`check`],
//! [`walk_kafka`] (and [`kafka::dump_log`], Kafka's own dump style), [`analyze`] (and [`datadir::analyze`] for a
//! whole data directory), [`compact`], [`datadir::clean`] with the [`manager`]'s types, [`repair`], [`refetch`]
//! and [`generate`], each at the top; the families of their own are [`dir`] (opening a directory), [`datadir`] (a
//! data directory: settings, `clean`, status) and [`audit`] (replicas). A program needs no other crate of the
//! workspace.
//!
//! The layers underneath, for embedding one piece: `log_core` (the log, both segment formats, recovery, the
//! cleaning transaction), `storage_file` and `storage_mem` (backends), `cleaner` (offset maps, the passes, the
//! manager).
//!
//! # Example
//! Compact a Kafka partition of a stopped broker in place, until nothing is dirty:
//! ```no_run
//! use std::sync::Arc;
//! use logcompact::{Cleaner, CleanerConfig, CompactRequest, Format, SystemClock};
//! use logcompact::datadir::{BrokerSource, settings_of};
//!
//! let dir = std::path::Path::new("/var/lib/kafka/data/orders-0");
//! let (_, settings) = settings_of(dir, Format::Kafka, None, &[], &BrokerSource::default())?;
//! // The topic's own settings, read from the stopped broker's metadata log: a partition of a topic they do not
//! // show compacted is refused.
//! let req = CompactRequest::kafka(dir, settings);
//! let mut cleaner = Cleaner::new(CleanerConfig::default(), Arc::new(SystemClock))?;
//! let outcome = logcompact::compact(&req, &mut cleaner, |stats| {
//!     println!("pass up to offset {}", stats.end_offset);
//!     Ok(())
//! })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]
#![warn(clippy::print_stderr, clippy::print_stdout)]

/// Kafka's own records (KRaft metadata and the topic settings it holds, coordinator records, consumer offsets,
/// producer snapshots, `kafka-dump-log.sh`'s dump): the `kafka-records` crate.
pub use kafka_records as kafka;

mod analyze;
pub mod audit;
mod check;
mod clock;
mod compact;
mod copy;
pub mod datadir;
pub mod dir;
mod dump;
mod generate;
mod look;
mod metered;
mod metrics;
mod open_error;
mod recovery;
mod refetch;
mod repair;
mod size;
mod steady_read;
mod throttle;

/// Kafka's cleaner manager: threads, scheduling, failures and their states, events and status
/// ([`cleaner::manager`]), as [`datadir::clean`] runs it over a data directory.
pub use cleaner::manager;
/// A pass's statistics as Kafka's cleaner logs them (`log-cleaner.log`'s lines).
pub use cleaner::summary::summary;
pub use cleaner::{CleanStats, Cleaner, CleanerConfig, ManualClock, MapKind, PassOptions, SystemClock};
pub use dir::{OpenError, OpenedLog, open_or_create, open_read_only, open_records_only, open_writable};
/// Progress of a long read or write: a [`progress::Meter`] the commands count on and a reporter reads.
pub use log_core::progress;
pub use log_core::{DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_SEGMENT_BYTES, Format, Log, LogConfig, Record};
pub use recovery::describe_recovery;

// The commands, each a file of its own, and what they need, at the top.
pub use analyze::{AnalyzeError, AnalyzeRequest, LogAnalysis, analyze, analyze_opened};
pub use check::{
    CheckError, DirCheck, DirCheckOptions, LogCheck, LogVerdict, check, check_data_dir, check_limited,
    predict_for_partition, predict_record_limit,
};
pub use clock::{
    CLOCK_MAY_LEAD_SYSTEM_MS, ClockError, ClockTrust, RECORDS_MAY_LEAD_MS, check_clock, check_clock_for_log,
    newest_timestamp,
};
pub use compact::{
    Asserted, CompactError, CompactOutcome, CompactRequest, Compaction, PolicyVerdict, compact, compact_log,
    compact_observed, nothing_cleanable, topic_policy,
};
pub use copy::{Copied, CopyError, STAGE_COPY, Unplaced, copy_beside, copy_beside_metered, copy_log};
pub use dump::{DumpError, DumpFilter, DumpedBatch, Step as DumpStep, walk_kafka};
pub use generate::{GenerateError, Generated, generate};
pub use metered::{MeteredStore, ReadMeter, metered};
pub use metrics::{MetricsError, MetricsServer, render as render_metrics};
pub use refetch::{RefetchError, RefetchRequest, Refetched, refetch};
pub use repair::{RepairError, Repaired, repair, repair_metered};
pub use size::{parse_bytes, parse_count, parse_fraction};
pub use throttle::{ReadRate, ReadRateHook, ThrottledStore, throttled};
