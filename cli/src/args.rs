//! The flag groups several commands share, each declared once and flattened into the commands that take it:
//! the directory's format, the offset map, the dedupe buffer, the cleaner threads, the broker's own settings,
//! a topic's settings and the clock. A flag means the same thing on every command that has it.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use cleaner::{CleanerConfig, DEFAULT_LOAD_FACTOR, MapKind};

use crate::failure::Failure;

/// The segment format of a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum FormatArg {
    /// This project's own log (frames, .lcindex hints).
    #[default]
    Native,
    /// A Kafka partition directory (magic 2 record batches, Kafka's .index and .timeindex).
    Kafka,
}

impl From<FormatArg> for log_core::Format {
    fn from(f: FormatArg) -> log_core::Format {
        match f {
            FormatArg::Native => log_core::Format::Native,
            FormatArg::Kafka => log_core::Format::Kafka,
        }
    }
}

/// The offset maps, on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MapArg {
    /// Kafka's SkimpyOffsetMap: MD5 digests, 24 bytes a slot (26.7 bytes a key at load 0.9).
    Skimpy,
    /// Whole keys in a hash table: exact, about 16 + key length + 17-39 bytes a key.
    Fullkey,
    /// 56-bit fingerprints, 12 bytes a slot (13.3 bytes a key at load 0.9), fast misses.
    Compact,
    /// Not a map: sorted runs of (key hash, offset) in the buffer, spilled to a temporary file and merged, so
    /// one pass cleans any number of distinct keys (it also reads the clean segments' keys, and writes about
    /// 16 bytes a record to --spill-dir).
    External,
    /// Skimpy while one pass of it holds the dirty section (Kafka's files, byte for byte), else the external
    /// pass: one pass whatever the keys, never several (a map that fills costs the part of pass 1 it read).
    Auto,
}

impl From<MapArg> for MapKind {
    fn from(m: MapArg) -> MapKind {
        match m {
            MapArg::Skimpy => MapKind::Skimpy,
            MapArg::Fullkey => MapKind::FullKey,
            MapArg::Compact => MapKind::Compact,
            MapArg::External => MapKind::External,
            MapArg::Auto => MapKind::Skimpy,
        }
    }
}

/// The offset map of a pass (`run`, `compact`, `clean`).
#[derive(Debug, Args)]
pub struct MapArgs {
    /// The offset map of pass 1 (Kafka's: skimpy).
    ///
    /// skimpy is Kafka's map (an MD5 digest and an offset, 24 bytes a slot), fullkey an exact map of whole keys,
    /// compact this project's map of 12 bytes a slot, external the external pass (any key count in one pass),
    /// and auto one pass always: skimpy's files where one pass of it holds the dirty section, else the external
    /// pass (a backlog's way), taken at once where the section has more offsets than skimpy holds keys and is
    /// at least the size of the log before it, and after skimpy fills otherwise.
    #[arg(long, value_enum, default_value_t = MapArg::Skimpy)]
    pub map: MapArg,
    /// Where --map external spills its sorted runs.
    ///
    /// With --map external: the directory its sorted runs are written to (default: the system's temporary
    /// directory); they are removed as the pass ends.
    #[arg(long, hide_short_help = true, value_name = "DIR")]
    pub spill_dir: Option<PathBuf>,
}

impl MapArgs {
    /// Refuses a spill directory given to a map that writes none.
    ///
    /// # Errors
    /// [`Failure::Usage`].
    pub fn checked(&self) -> Result<(), Failure> {
        if self.spill_dir.is_some() && !matches!(self.map, MapArg::External | MapArg::Auto) {
            return Err(Failure::Usage(
                "--spill-dir is where --map external (or auto, where its map would fill) writes its runs; other maps \
                 write none"
                    .into(),
            ));
        }
        Ok(())
    }

    /// One pass whatever the keys: `--map auto`.
    pub fn one_pass(&self) -> bool {
        self.map == MapArg::Auto
    }
}

/// The dedupe buffer and its load factor (every command that cleans or sizes a pass).
#[derive(Debug, Args)]
pub struct BufferArgs {
    /// Offset map memory for all threads together (log.cleaner.dedupe.buffer.size).
    ///
    /// Offset map memory for all cleaner threads together (log.cleaner.dedupe.buffer.size), e.g. 4096, 64KiB,
    /// 128MiB, 1.5GiB. Small buffers give partial passes; the buffer must hold at least one key (48 bytes at
    /// load factor 0.9).
    #[arg(long, value_name = "BYTES", default_value = "128MiB", value_parser = logcompact::parse_bytes, allow_hyphen_values = true)]
    pub dedupe_buffer: u64,
    /// Share of the map's slots that may fill (log.cleaner.io.buffer.load.factor), in [0.01, 1].
    #[arg(long, hide_short_help = true, value_name = "F", default_value_t = DEFAULT_LOAD_FACTOR, allow_hyphen_values = true)]
    pub load_factor: f64,
}

impl BufferArgs {
    /// The buffer in bytes, as this machine addresses them.
    ///
    /// # Errors
    /// [`Failure::Usage`] for a buffer larger than the address space.
    pub fn bytes(&self) -> Result<usize, Failure> {
        usize::try_from(self.dedupe_buffer)
            .map_err(|_| Failure::Usage("--dedupe-buffer is too large for this machine's address space".into()))
    }

    /// The buffer split between `threads` cleaner threads, as `advise` and `analyze` size it.
    pub fn budget(&self, threads: &ThreadsArgs) -> cleaner::advise::Budget {
        cleaner::advise::Budget {
            total_bytes: self.dedupe_buffer,
            threads: threads.threads,
            load_factor: self.load_factor,
        }
    }
}

/// Cleaner threads (`clean`, `analyze`, `advise`): always Kafka's `log.cleaner.threads`, between which the
/// dedupe buffer is split, each cleaning one log at a time. `compact`'s threads within one pass are
/// `--copy-threads`.
#[derive(Debug, Args)]
pub struct ThreadsArgs {
    /// Cleaner threads (log.cleaner.threads)
    ///
    /// The dedupe buffer is split evenly between them, and each cleans one log at a time.
    #[arg(long, value_name = "T", default_value_t = 1, allow_hyphen_values = true)]
    pub threads: u32,
}

impl ThreadsArgs {
    /// The thread count as the manager takes it.
    pub fn count(&self) -> usize {
        usize::try_from(self.threads).unwrap_or(usize::MAX)
    }
}

/// The cleaner's settings of one pass from the flag groups (`run`, `compact`).
///
/// # Errors
/// [`Failure::Usage`] for settings the cleaner refuses.
pub fn cleaner_config(map: &MapArgs, buffer: &BufferArgs, copy_threads: u32) -> Result<CleanerConfig, Failure> {
    map.checked()?;
    let config = CleanerConfig {
        map: map.map.into(),
        dedupe_buffer_bytes: buffer.bytes()?,
        load_factor: buffer.load_factor,
        spill_dir: map.spill_dir.clone(),
        threads: usize::try_from(copy_threads).unwrap_or(usize::MAX),
        one_pass: map.one_pass(),
    };
    config.validate().map_err(|e| match e {
        // The only thread count of a pass's settings is this flag's.
        cleaner::Error::InvalidConfig { setting: "threads", .. } => {
            Failure::Usage(format!("--copy-threads {copy_threads}: {e}"))
        }
        _ => Failure::from_cleaner("bad cleaner settings", &e),
    })?;
    Ok(config)
}

/// Where a stopped Kafka broker's own settings of its topics are read (with --format kafka).
#[derive(Debug, Args)]
pub struct BrokerArgs {
    /// The broker's KRaft metadata log, which gives each topic its settings (default: found).
    ///
    /// The broker's KRaft metadata log (its `__cluster_metadata-0`, or the directory holding it), whose topic
    /// and broker configs give each topic its settings. Default: found from the log directory (it, or a log
    /// directory beside it of the same cluster.id and node.id, holding `__cluster_metadata-0`).
    #[arg(long, value_name = "DIR")]
    pub metadata_dir: Option<PathBuf>,
    /// The broker's server.properties
    ///
    /// Its static log.* settings (under the metadata's dynamic ones) and where its metadata log lies
    /// (metadata.log.dir, else the first of log.dirs).
    #[arg(long, value_name = "FILE")]
    pub broker_config: Option<PathBuf>,
}

impl BrokerArgs {
    /// Where the library looks for the broker's settings of logs of `format`.
    ///
    /// # Errors
    /// [`Failure::Usage`] for either flag with the native format, which has no broker to read (never ignored).
    pub fn source(&self, format: log_core::Format) -> Result<logcompact::datadir::BrokerSource, Failure> {
        let given =
            [("--metadata-dir", self.metadata_dir.is_some()), ("--broker-config", self.broker_config.is_some())];
        if format == log_core::Format::Native
            && let Some((flag, _)) = given.iter().find(|(_, set)| *set)
        {
            return Err(Failure::Usage(format!(
                "{flag} reads a Kafka broker's settings of its topics: it goes with --format kafka"
            )));
        }
        Ok(logcompact::datadir::BrokerSource {
            metadata_dir: self.metadata_dir.clone(),
            server_properties: self.broker_config.clone(),
        })
    }
}

/// [`tell_broker_notice`] for a warning only (a note is left out): for a command failing before its answer.
pub fn tell_broker_warning(layers: &logcompact::datadir::settings::Layers) {
    if layers.broker_notice.as_ref().is_some_and(|n| n.starts_with("warning:")) {
        tell_broker_notice(layers);
    }
}

/// Tells on standard error where the broker's settings came from, or why they could not be read.
pub fn tell_broker_notice(layers: &logcompact::datadir::settings::Layers) {
    if let Some(n) = &layers.broker_notice {
        if n.starts_with("warning:") {
            crate::out::diag!("{n}");
        } else {
            crate::out::diag!("note: {n}");
        }
    }
}

/// The clock of the passes, fixed for reproducible output.
#[derive(Debug, Args)]
pub struct ClockArgs {
    /// Take "now" as this time (ms since the Unix epoch) for every pass, as Kafka's tests inject their Time
    ///
    /// The delete horizons stamped into kept tombstones' batches, which tombstones are past theirs, and the
    /// compaction lags are all judged by it, so the same input, settings and clock give the same bytes.
    #[arg(long, hide_short_help = true, value_name = "MS", allow_hyphen_values = true)]
    pub now_ms: Option<i64>,
    /// Take the clock as it is
    ///
    /// Without it a clock more than a day after the system's, or more than an hour before the newest record of a log,
    /// is refused (its delete horizons would purge tombstones early).
    #[arg(long, hide_short_help = true)]
    pub i_know_the_clock: bool,
}

impl ClockArgs {
    /// The clock: fixed at --now-ms, or the system's.
    ///
    /// # Errors
    /// [`Failure::Usage`] for a time before 1970, or more than a day after the system clock (unless
    /// --i-know-the-clock).
    pub fn clock(&self) -> Result<Arc<dyn cleaner::Clock>, Failure> {
        match self.now_ms {
            Some(ms) if ms < 0 => Err(Failure::Usage(format!("--now-ms {ms} is before 1970"))),
            Some(ms) => {
                if !self.i_know_the_clock {
                    logcompact::check_clock(ms, log_core::now_ms()).map_err(|e| {
                        Failure::Usage(format!("--now-ms: {e} (give --i-know-the-clock if it is right)"))
                    })?;
                }
                Ok(Arc::new(cleaner::ManualClock::new(ms)))
            }
            None => Ok(Arc::new(cleaner::SystemClock)),
        }
    }

    /// Whether the passes' clock is checked against each log's records.
    pub fn trust(&self) -> logcompact::ClockTrust {
        if self.i_know_the_clock { logcompact::ClockTrust::Trusted } else { logcompact::ClockTrust::Checked }
    }
}

/// A log's settings (Kafka's topic settings), for `clean` and `status`. Each given flag goes over the settings
/// file and is saved for later runs; one not given takes the settings file's value, the saved one, or the
/// default.
#[derive(Debug, Args)]
pub struct LogSettingsArgs {
    /// cleanup.policy: compact, delete (the cleaner leaves the log alone) or compact,delete.
    ///
    /// Default: compact; for a Kafka topic delete (Kafka's default), or compact when a settings section names the
    /// topic.
    #[arg(long, hide_short_help = true, value_name = "POLICY")]
    pub cleanup_policy: Option<String>,
    /// min.cleanable.dirty.ratio (default 0.5).
    ///
    /// min.cleanable.dirty.ratio: the share of dirty bytes a log needs before it is cleaned. Default: 0.5.
    #[arg(long, hide_short_help = true, value_name = "R", allow_hyphen_values = true)]
    pub min_cleanable_dirty_ratio: Option<String>,
    /// min.compaction.lag.ms: closed segments holding a record younger than this are not cleaned yet.
    ///
    /// Default: 0.
    #[arg(long, hide_short_help = true, value_name = "MS", allow_hyphen_values = true)]
    pub min_compaction_lag_ms: Option<String>,
    /// max.compaction.lag.ms (default: never).
    ///
    /// max.compaction.lag.ms: a log whose oldest dirty record is older is cleaned whatever its ratio (and its
    /// active segment rolled once its first record is older). Default: never.
    #[arg(long, hide_short_help = true, value_name = "MS", allow_hyphen_values = true)]
    pub max_compaction_lag_ms: Option<String>,
    /// delete.retention.ms: how long a tombstone lives after the first pass that keeps it.
    ///
    /// Default: 86400000.
    #[arg(long, hide_short_help = true, value_name = "MS", allow_hyphen_values = true)]
    pub delete_retention_ms: Option<String>,
    /// segment.bytes (default 1GiB).
    ///
    /// segment.bytes: the size logs roll at, and the most cleaned segments are merged into. Default: 1GiB.
    #[arg(long, hide_short_help = true, value_name = "BYTES", allow_hyphen_values = true)]
    pub segment_bytes: Option<String>,
}

impl LogSettingsArgs {
    /// The flags given, as `(setting, value, flag)`.
    pub fn flags(&self) -> Vec<(&'static str, String, &'static str)> {
        [
            ("cleanup.policy", &self.cleanup_policy, "--cleanup-policy"),
            ("min.cleanable.dirty.ratio", &self.min_cleanable_dirty_ratio, "--min-cleanable-dirty-ratio"),
            ("min.compaction.lag.ms", &self.min_compaction_lag_ms, "--min-compaction-lag-ms"),
            ("max.compaction.lag.ms", &self.max_compaction_lag_ms, "--max-compaction-lag-ms"),
            ("delete.retention.ms", &self.delete_retention_ms, "--delete-retention-ms"),
            ("segment.bytes", &self.segment_bytes, "--segment-bytes"),
        ]
        .into_iter()
        .filter_map(|(setting, value, flag)| value.as_ref().map(|v| (setting, v.clone(), flag)))
        .collect()
    }
}
