//! `logcompact`: the command line of the logcompact toolkit. It only parses arguments and calls the
//! libraries (`log-core`, the storage backends and `cleaner`).

#![warn(clippy::print_stderr, clippy::print_stdout)]

mod advise;
mod analyze_cmd;
mod backend;
mod clean;
mod failure;
mod format;
mod json;
mod kafka_cmd;
mod ops;
mod out;
mod progress;
mod records;
mod run;
mod script;
mod status;

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};
use cleaner::{CleanerConfig, DEFAULT_DELETE_RETENTION_MS, DEFAULT_LOAD_FACTOR, MapKind, PassOptions};
use log_core::LogConfig;
use log_core::workload::Workload;

use backend::Backend;
use failure::Failure;
use logcompact::size;

/// Kafka-style log compaction: a segmented keyed log, its two-pass cleaner and its offset maps.
#[derive(Debug, Parser)]
#[command(
    name = "logcompact",
    version,
    about = "Kafka-style log compaction: read, check, analyse, size, repair and compact keyed logs (this project's \
             own format, or a stopped Kafka broker's partitions in place, with --format kafka), and keep a data \
             directory compacted as Kafka's cleaner does",
    long_about = "Kafka-style log compaction: read, check, analyse, size, repair and compact keyed logs (this \
                  project's own format, or a stopped Kafka broker's partitions in place, with --format kafka), and \
                  keep a data directory compacted as Kafka's cleaner does.\n\n\
                  On a broker's partition (the broker stopped for anything that writes):\n  \
                  logcompact analyze --format kafka --dir /var/lib/kafka/data/orders-0   what compaction would \
                  reclaim, hanging transactions\n  \
                  logcompact dump    --format kafka --dir ... | head                      batches and records\n  \
                  logcompact advise  --format kafka --dir ...                             the dedupe buffer one \
                  pass needs\n  \
                  logcompact compact --format kafka --dir ... --until-clean               clean it in place\n  \
                  logcompact clean   --format kafka --data-dir /var/lib/kafka/data --until-clean\n\n\
                  Sizing without a log: logcompact advise --keys 50M --records 400M. The lesson's command \
                  language: logcompact run SCRIPT. Each command's --help says more.",
    after_help = failure::EXIT_CODES
)]
struct Cli {
    #[command(subcommand)]
    command: Commands,
}

#[derive(Debug, Subcommand)]
enum Commands {
    /// Run a script of log commands, one per line, and print what DUMP and READ show.
    ///
    /// Commands: PUT key value | DEL key | ROLL | COMPACT | COMPACT PURGE | DUMP | READ offset.
    /// Blank lines and lines starting with '#' are skipped. Example:
    ///
    ///   printf 'PUT a 1\nPUT a 2\nROLL\nCOMPACT\nDUMP\n' | logcompact run -
    #[command(verbatim_doc_comment, after_help = failure::EXIT_CODES)]
    Run(RunArgs),
    /// Append a deterministic synthetic workload to the log in a directory; prints a JSON summary. Records are
    /// timestamped 1 ms apart, the last one now.
    #[command(after_help = failure::EXIT_CODES)]
    Gen(GenArgs),
    /// Clean the log in a directory; prints each pass's statistics as one JSON line.
    #[command(after_help = failure::EXIT_CODES)]
    Compact(CompactArgs),
    /// Keep every log of a data directory (each subdirectory a log, or a stopped broker's partitions) compacted,
    /// as Kafka's cleaner threads do.
    ///
    /// Threads split the dedupe buffer; a free thread takes the log the policy picks (Kafka's: a log past
    /// max.compaction.lag.ms first, else the dirtiest above its min.cleanable.dirty.ratio) and runs one pass.
    /// Per-log settings, lowest first: the defaults (Kafka's; for __consumer_offsets and __transaction_state
    /// what Kafka creates them with), what earlier runs saved (<data-dir>/logcompact-settings.json), the
    /// --config file (defaults, then a [log] or [topic] section each), the flags. `status` shows where each
    /// setting came from. A second run on the same data directory is refused (exit 3); a Kafka log directory
    /// is held under the broker's own lock, so no broker starts on it meanwhile.
    /// A log whose pass fails is marked uncleanable and retried with backoff, then on SIGHUP; the others go
    /// on. Prints a summary per pass (or JSON lines), and keeps <data-dir>/cleaner-status.json up to date.
    /// SIGINT or SIGTERM abandons running passes (their logs unchanged); a second one ends at once.
    /// Exits 1 when a log is left uncleanable, after cleaning the others.
    #[command(verbatim_doc_comment, after_help = failure::EXIT_CODES)]
    Clean(CleanArgs),
    /// Show the cleaner's gauges (Kafka's names) from the last `clean` run and every log's dirty ratio, last
    /// clean and last error. Reads only: works beside a running `clean`.
    #[command(after_help = failure::EXIT_CODES)]
    Status(StatusArgs),
    /// Seal the active segment of the log in a directory, so that a pass can take its records.
    #[command(after_help = failure::EXIT_CODES)]
    Roll(RollArgs),
    /// Print the log in a directory, one record per line (keys, values and headers quoted and escaped), or
    /// as JSON. Reads only: takes no lock, changes nothing.
    #[command(after_help = failure::EXIT_CODES)]
    Dump(DumpArgs),
    /// Verify every checksum and invariant of the log in a directory without changing anything.
    ///
    /// Takes no lock, so it works beside a running writer and on a read-only mount. Exits 0 with a JSON
    /// report when every record is intact (notices on standard error tell what a crash left for the next open
    /// to repair), or 1 naming the file and byte position of the first problem.
    #[command(after_help = failure::EXIT_CODES)]
    Check(CheckArgs),
    /// Size the dedupe buffer: for each offset map, the buffer one pass needs, the passes a buffer takes,
    /// bytes per key and the collision probability.
    ///
    /// From counts (--keys, with --records for keys spread uniformly over that many records) or from a log
    /// (--dir: reads its dirty section without changing anything, counts the distinct keys exactly, or by
    /// HyperLogLog on very large logs, and replays pass 1 with every map to find the passes exactly).
    #[command(after_help = failure::EXIT_CODES)]
    Advise(AdviseArgs),
    /// Analyze a Kafka partition directory without changing it: records, keyed and unkeyed, tombstones,
    /// codecs, transactional and control batches, the dirty ratio against Kafka's cleaner-offset-checkpoint,
    /// what a full compaction would keep and reclaim (a dry run), and per map the buffer one pass needs.
    #[command(after_help = failure::EXIT_CODES)]
    Analyze(AnalyzeArgs),
    /// Show what a repair of a damaged log would drop, or with --apply do it.
    ///
    /// A repair drops damaged byte ranges of segments while keeping every valid record around them, sets
    /// aside a .swap file that is not a valid cleaned segment (restoring the segment it replaced), and sets
    /// aside an unreadable checkpoint. A copy of every cut byte is kept in repair-<time>.*.bytes files in the
    /// directory. Without --apply nothing is changed.
    #[command(after_help = failure::EXIT_CODES)]
    Repair(RepairArgs),
}

/// The offset maps, on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum MapArg {
    /// Kafka's SkimpyOffsetMap: MD5 digests, 24 bytes a slot (26.7 bytes a key at load 0.9).
    Skimpy,
    /// Whole keys in a hash table: exact, about 16 + key length + 17-39 bytes a key.
    Fullkey,
    /// 56-bit fingerprints, 12 bytes a slot (13.3 bytes a key at load 0.9), fast misses.
    Compact,
    /// Not a map: sorted runs of (key hash, offset) in the buffer, spilled to a temporary file and merged, so
    /// one pass cleans any number of distinct keys (it also reads the clean segments' keys, and writes about
    /// 24 bytes a record to --spill-dir).
    External,
}

impl From<FormatArg> for log_core::Format {
    fn from(f: FormatArg) -> log_core::Format {
        match f {
            FormatArg::Native => log_core::Format::Native,
            FormatArg::Kafka => log_core::Format::Kafka,
        }
    }
}

impl From<MapArg> for MapKind {
    fn from(m: MapArg) -> MapKind {
        match m {
            MapArg::Skimpy => MapKind::Skimpy,
            MapArg::Fullkey => MapKind::FullKey,
            MapArg::Compact => MapKind::Compact,
            MapArg::External => MapKind::External,
        }
    }
}

/// Options shared by every command that cleans.
#[derive(Debug, Args)]
struct CleanerArgs {
    /// The offset map of pass 1 (Kafka's is skimpy).
    #[arg(long, value_enum, default_value_t = MapArg::Skimpy)]
    map: MapArg,
    /// Offset map memory (log.cleaner.dedupe.buffer.size), e.g. 4096, 64KiB, 128MiB, 1.5GiB. Small buffers
    /// give partial passes; the buffer must hold at least one key (48 bytes at load factor 0.9).
    #[arg(long, value_name = "BYTES", default_value = "128MiB", value_parser = size::parse_bytes, allow_hyphen_values = true)]
    dedupe_buffer: u64,
    /// Share of the map's slots that may fill (log.cleaner.io.buffer.load.factor), in [0.01, 1].
    #[arg(long, value_name = "F", default_value_t = DEFAULT_LOAD_FACTOR, allow_hyphen_values = true)]
    load_factor: f64,
    /// How long a tombstone lives after the first pass that keeps it (delete.retention.ms). Default: the
    /// topic's (compact: as the broker's metadata, saved settings or --config give it), else one day.
    #[arg(long, value_name = "MS", allow_hyphen_values = true)]
    delete_retention_ms: Option<i64>,
    /// With --map external: the directory its sorted runs are written to (default: the system's temporary
    /// directory); they are removed as the pass ends.
    #[arg(long, value_name = "DIR")]
    spill_dir: Option<PathBuf>,
}

impl CleanerArgs {
    fn config(&self) -> Result<CleanerConfig, Failure> {
        let config = CleanerConfig {
            map: self.map.into(),
            dedupe_buffer_bytes: usize::try_from(self.dedupe_buffer)
                .map_err(|_| Failure::Usage("--dedupe-buffer is too large for this machine's address space".into()))?,
            load_factor: self.load_factor,
            spill_dir: self.spill_dir.clone(),
            threads: 1,
        };
        if self.spill_dir.is_some() && self.map != MapArg::External {
            return Err(Failure::Usage(
                "--spill-dir is where --map external writes its runs; other maps write none".into(),
            ));
        }
        config.validate().map_err(|e| Failure::from_cleaner("bad cleaner settings", &e))?;
        if let Some(ms) = self.delete_retention_ms.filter(|ms| *ms < 0) {
            return Err(Failure::Usage(format!("--delete-retention-ms {ms} is negative")));
        }
        Ok(config)
    }

    /// What a pass takes of these options.
    fn pass_options(&self) -> PassOptions {
        PassOptions {
            delete_retention_ms: self.delete_retention_ms.unwrap_or(DEFAULT_DELETE_RETENTION_MS),
            ..PassOptions::default()
        }
    }
}

#[derive(Debug, Args)]
struct RunArgs {
    /// The script: a file path, or '-' for standard input.
    #[arg(value_name = "SCRIPT")]
    script: String,
    #[command(flatten)]
    cleaner: CleanerArgs,
    /// Roll the active segment before an append would take it past this size (segment.bytes).
    #[arg(long, value_name = "BYTES", default_value = "1GiB", value_parser = size::parse_bytes, allow_hyphen_values = true)]
    segment_bytes: u64,
    /// Print each pass's statistics as one JSON line on standard error.
    #[arg(long)]
    stats: bool,
    /// COMPACT merges adjacent closed segments up to --segment-bytes into one, as Kafka's cleaner groups them
    /// (and as every directory command does). Without it COMPACT follows the lesson: each closed segment is
    /// cleaned into a replacement that keeps its base, and only segments left empty go.
    #[arg(long)]
    group_segments: bool,
    /// Where the log lives: in memory (gone at exit) or in files under --dir (created or reopened, so a
    /// second run continues the first).
    #[arg(long, value_enum, default_value_t = Backend::Mem)]
    backend: Backend,
    /// The log's directory, for --backend file.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct GenArgs {
    /// The log's directory (created if missing; appends continue an existing log).
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// Records to append.
    #[arg(long, value_name = "N", value_parser = size::parse_count, allow_hyphen_values = true)]
    records: u64,
    /// Distinct keys, drawn uniformly.
    #[arg(long, value_name = "K", value_parser = size::parse_count, allow_hyphen_values = true)]
    keys: u64,
    /// Bytes per value (at most 64 MiB).
    #[arg(long, value_name = "B", default_value = "100", value_parser = size::parse_bytes, allow_hyphen_values = true)]
    value_bytes: u64,
    /// Share of appends that are tombstones, in [0, 1].
    #[arg(long, value_name = "FRACTION", default_value = "0", value_parser = size::parse_fraction, allow_hyphen_values = true)]
    tombstones: f64,
    /// Roll segments at this size (segment.bytes).
    #[arg(long, value_name = "S", default_value = "1GiB", value_parser = size::parse_bytes, allow_hyphen_values = true)]
    segment_bytes: u64,
    /// Generator seed: the same seed appends the same records.
    #[arg(long, value_name = "X", default_value_t = 1)]
    seed: u64,
}

#[derive(Debug, Args)]
struct CompactArgs {
    /// The log's directory.
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    #[command(flatten)]
    cleaner: CleanerArgs,
    /// Purge: tombstones kept by an earlier pass go now, whatever their delete horizon, in this run's passes
    /// (a pass runs only over a dirty section: on a log with nothing dirty, roll or append first).
    #[arg(long)]
    purge: bool,
    /// Repeat passes until the whole dirty section has been cleaned.
    #[arg(long)]
    until_clean: bool,
    /// The log's segment.bytes: the most a group of cleaned segments is merged into. Default: the topic's (a
    /// Kafka topic's internal.segment.bytes when set), else 1GiB.
    #[arg(long, value_name = "BYTES", value_parser = size::parse_bytes, allow_hyphen_values = true)]
    segment_bytes: Option<u64>,
    /// Leave closed segments holding a record younger than this dirty (min.compaction.lag.ms). Default: the
    /// topic's, else 0.
    #[arg(long, value_name = "MS", allow_hyphen_values = true)]
    min_compaction_lag_ms: Option<i64>,
    /// cleanup.policy: compact a Kafka partition whose topic the broker's metadata or the settings say is not
    /// compacted (delete), or one whose policy nothing here gives (then also --drop-invalid to drop its
    /// records without a key).
    #[arg(long, value_name = "POLICY")]
    cleanup_policy: Option<String>,
    /// Drop records without a key, as Kafka's cleaner drops them in a compacted topic. Without it, a pass that
    /// would drop one changes nothing and fails (exit 2), unless the topic is known to be compacted.
    #[arg(long)]
    drop_invalid: bool,
    /// A settings file as `clean` takes it (Kafka's names, a [section] per topic or log), over the settings a
    /// `clean` saved in the log's parent directory and the broker's metadata.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    broker: BrokerArgs,
    /// Do nothing unless at least this share of the closed bytes is dirty (min.cleanable.dirty.ratio; 0 for
    /// this command, which cleans when asked, 0.5 for `clean`).
    #[arg(long, value_name = "R", default_value_t = 0.0, allow_hyphen_values = true)]
    min_cleanable_dirty_ratio: f64,
    /// Threads of one pass: groups of segments copied in parallel (pass 1 reads once into one map of the whole
    /// buffer).
    #[arg(long, value_name = "T", default_value_t = 1, allow_hyphen_values = true)]
    threads: usize,
    /// The directory's format: a native log, or a Kafka partition directory of a stopped broker (cleaned in
    /// place under the broker's lock on its log directory, with Kafka's own swap protocol).
    #[arg(long, value_enum, default_value_t = FormatArg::Native)]
    format: FormatArg,
    /// Compact a copy made in this directory (which must not exist, or be empty) instead: --dir is then only
    /// read, never written. Never inside a broker's log directory (one holding meta.properties): a broker would
    /// take it for a partition it does not own, or refuse to start. The copy's cleaner checkpoint lives for this
    /// run only (the passes start from the source's checkpoint).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Start from this first dirty offset instead of the cleaner checkpoint (the pass then writes its own).
    #[arg(long, value_name = "OFFSET", value_parser = size::parse_count, allow_hyphen_values = true)]
    checkpoint: Option<u64>,
    #[command(flatten)]
    clock: ClockArgs,
}

/// Where a stopped Kafka broker's own settings of its topics are read (with --format kafka).
#[derive(Debug, Args)]
struct BrokerArgs {
    /// The broker's KRaft metadata log (its `__cluster_metadata-0`, or the directory holding it), whose topic
    /// and broker configs give each topic its settings. Default: found from the log directory (it, or a log
    /// directory beside it of the same cluster.id and node.id, holding `__cluster_metadata-0`).
    #[arg(long, value_name = "DIR")]
    metadata_dir: Option<PathBuf>,
    /// The broker's server.properties: its static log.* settings (under the metadata's dynamic ones) and where
    /// its metadata log lies (metadata.log.dir, else the first of log.dirs).
    #[arg(long, value_name = "FILE")]
    broker_config: Option<PathBuf>,
}

impl BrokerArgs {
    fn source(&self) -> logcompact::datadir::BrokerSource {
        logcompact::datadir::BrokerSource {
            metadata_dir: self.metadata_dir.clone(),
            server_properties: self.broker_config.clone(),
        }
    }
}

/// Tells on standard error where the broker's settings came from, or why they could not be read.
fn tell_broker_notice(layers: &logcompact::datadir::settings::Layers) {
    if let Some(n) = &layers.broker_notice {
        let line = if n.starts_with("warning:") { n.clone() } else { format!("note: {n}") };
        let _ = writeln!(std::io::stderr(), "{line}");
    }
}

/// The clock of the passes, fixed for reproducible output.
#[derive(Debug, Args)]
struct ClockArgs {
    /// Take "now" as this time (ms since the Unix epoch) for every pass, as Kafka's tests inject their Time:
    /// the delete horizons stamped into kept tombstones' batches, which tombstones are past theirs, and the
    /// compaction lags are all judged by it, so the same input, settings and clock give the same bytes.
    #[arg(long, value_name = "MS", allow_hyphen_values = true)]
    now_ms: Option<i64>,
}

impl ClockArgs {
    /// The clock: fixed at --now-ms, or the system's.
    fn clock(&self) -> Result<Arc<dyn cleaner::Clock>, Failure> {
        match self.now_ms {
            Some(ms) if ms < 0 => Err(Failure::Usage(format!("--now-ms {ms} is before 1970"))),
            Some(ms) => Ok(Arc::new(cleaner::ManualClock::new(ms))),
            None => Ok(Arc::new(cleaner::SystemClock)),
        }
    }
}

/// A log's settings (Kafka's topic settings), for `clean` and `status`. Each given flag goes over the settings
/// file and is saved for later runs; one not given takes the settings file's value, the saved one, or the
/// default.
#[derive(Debug, Args)]
struct LogSettingsArgs {
    /// cleanup.policy: compact, delete (the cleaner leaves the log alone) or compact,delete. Default: compact;
    /// for a Kafka topic delete (Kafka's default), or compact when a settings section names the topic.
    #[arg(long, value_name = "POLICY")]
    cleanup_policy: Option<String>,
    /// min.cleanable.dirty.ratio: the share of dirty bytes a log needs before it is cleaned. Default: 0.5.
    #[arg(long, value_name = "R", allow_hyphen_values = true)]
    min_cleanable_dirty_ratio: Option<String>,
    /// min.compaction.lag.ms: closed segments holding a record younger than this are not cleaned yet. Default: 0.
    #[arg(long, value_name = "MS", allow_hyphen_values = true)]
    min_compaction_lag_ms: Option<String>,
    /// max.compaction.lag.ms: a log whose oldest dirty record is older is cleaned whatever its ratio (and its
    /// active segment rolled once its first record is older). Default: never.
    #[arg(long, value_name = "MS", allow_hyphen_values = true)]
    max_compaction_lag_ms: Option<String>,
    /// delete.retention.ms: how long a tombstone lives after the first pass that keeps it. Default: 86400000.
    #[arg(long, value_name = "MS", allow_hyphen_values = true)]
    delete_retention_ms: Option<String>,
    /// segment.bytes: the size logs roll at, and the most cleaned segments are merged into. Default: 1GiB.
    #[arg(long, value_name = "BYTES", allow_hyphen_values = true)]
    segment_bytes: Option<String>,
}

impl LogSettingsArgs {
    /// The flags given, as `(setting, value, flag)`.
    fn flags(&self) -> Vec<(&'static str, String, &'static str)> {
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

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("mode").required(true).args(["until_clean", "watch"])))]
struct CleanArgs {
    /// The data directory: every subdirectory is a log's directory (with --format kafka: a stopped broker's
    /// log directory, every `<topic>-<partition>` subdirectory a partition).
    #[arg(long, value_name = "DIR")]
    data_dir: PathBuf,
    /// The logs' format. A Kafka log directory is held under the broker's lock for the run; only partitions
    /// of topics named in a --config section, and Kafka's internal topics, are compacted.
    #[arg(long, value_enum, default_value_t = FormatArg::Native)]
    format: FormatArg,
    /// Run until no log is cleanable, then exit.
    #[arg(long)]
    until_clean: bool,
    /// Keep cleaning as logs get dirty, until SIGINT or SIGTERM.
    #[arg(long)]
    watch: bool,
    /// Cleaner threads (log.cleaner.threads); the dedupe buffer is split between them.
    #[arg(long, value_name = "T", default_value_t = 1, allow_hyphen_values = true)]
    threads: usize,
    /// The offset map of every thread (Kafka's is skimpy; external: the external pass).
    #[arg(long, value_enum, default_value_t = MapArg::Skimpy)]
    map: MapArg,
    /// With --map external: where its sorted runs are written (default: the system's temporary directory).
    #[arg(long, value_name = "DIR")]
    spill_dir: Option<PathBuf>,
    /// Offset map memory for all threads together (log.cleaner.dedupe.buffer.size).
    #[arg(long, value_name = "BYTES", default_value = "128MiB", value_parser = size::parse_bytes, allow_hyphen_values = true)]
    dedupe_buffer: u64,
    /// log.cleaner.io.buffer.load.factor, in [0.01, 1].
    #[arg(long, value_name = "F", default_value_t = DEFAULT_LOAD_FACTOR, allow_hyphen_values = true)]
    load_factor: f64,
    /// log.cleaner.backoff.ms: how long a watching thread with nothing to clean sleeps (--watch only: an
    /// --until-clean run ends when nothing is cleanable). Default: 15000.
    #[arg(long, value_name = "MS", conflicts_with = "until_clean", allow_hyphen_values = true)]
    backoff_ms: Option<u64>,
    /// log.cleaner.io.max.bytes.per.second: the bytes all threads together read per second. Default: no limit.
    #[arg(long, value_name = "BYTES", value_parser = size::parse_bytes, allow_hyphen_values = true)]
    io_max_bytes_per_second: Option<u64>,
    /// Retries of a log whose pass failed before it waits for SIGHUP or a new run (--until-clean waits for them;
    /// 0 ends it at the first failure).
    #[arg(long, value_name = "N", default_value_t = 3, allow_hyphen_values = true)]
    max_retries: u32,
    /// The wait before the first retry of a failed log; it doubles with every failure.
    #[arg(long, value_name = "MS", default_value_t = 10_000, allow_hyphen_values = true)]
    retry_backoff_ms: u64,
    /// Which log a free thread takes: dirtiest-first (Kafka's) or oldest-dirty-first (no log starves).
    #[arg(long, value_name = "POLICY", default_value = "dirtiest-first")]
    policy: String,
    /// --until-clean only: with the clock fixed no retry comes due, so a log whose pass fails is left
    /// uncleanable at once.
    #[command(flatten)]
    clock: ClockArgs,
    #[command(flatten)]
    settings: LogSettingsArgs,
    /// Per-log settings: `name = value` lines for every log, then `[log]` sections (a topic's name in a Kafka
    /// log directory), with Kafka's setting names. Saved in the data directory for later runs, until replaced.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    broker: BrokerArgs,
    /// Print each event as one JSON line, and the final status as JSON.
    #[arg(long)]
    json: bool,
    /// Serve Prometheus metrics at http://HOST:PORT/metrics while the run lasts: Kafka's cleaner gauges under
    /// the JMX exporter's names (kafka_log_logcleaner_*, kafka_log_logcleanermanager_*) and per-log series
    /// (logcompact_log_*). Port 0 takes a free port; the address is printed on standard error.
    #[arg(long, value_name = "HOST:PORT")]
    metrics_addr: Option<String>,
}

#[derive(Debug, Args)]
struct StatusArgs {
    /// The data directory.
    #[arg(long, value_name = "DIR")]
    data_dir: PathBuf,
    /// The logs' format (a Kafka log directory: every `<topic>-<partition>` subdirectory a partition).
    #[arg(long, value_enum, default_value_t = FormatArg::Native)]
    format: FormatArg,
    #[command(flatten)]
    settings: LogSettingsArgs,
    /// A settings file as `clean` takes it. Without it, and without flags, a log takes the settings the last
    /// `clean` run saved in the data directory.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    broker: BrokerArgs,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct RollArgs {
    /// The log's directory.
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// The directory's format.
    #[arg(long, value_enum, default_value_t = FormatArg::Native)]
    format: FormatArg,
}

/// The segment format of a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
enum FormatArg {
    /// This project's own log (frames, .lcindex hints).
    #[default]
    Native,
    /// A Kafka partition directory (magic 2 record batches, Kafka's .index and .timeindex).
    Kafka,
}

/// How `dump` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
enum DumpStyle {
    /// This tool's own: a line a record (native), or a line a batch and a line a record (Kafka).
    #[default]
    Logcompact,
    /// Exactly what Kafka 4.4's `kafka-dump-log.sh --deep-iteration --print-data-log` prints, with its
    /// summaries on standard error (Kafka's shallow mode, batch lines only, is not offered).
    KafkaDumpLog,
}

#[derive(Debug, Args)]
struct DumpArgs {
    /// The log's directory.
    #[arg(long, value_name = "DIR", required_unless_present = "files", conflicts_with = "files")]
    dir: Option<PathBuf>,
    /// The directory's format: a native log, or a Kafka partition (`kafka-dump-log.sh --print-data-log`).
    #[arg(long, value_enum, default_value_t = FormatArg::Native)]
    format: FormatArg,
    /// Print JSON: a list of segments with base, state and records.
    #[arg(long)]
    json: bool,
    /// Print one line per segment as the script language's DUMP does, instead of one line per record.
    #[arg(long, conflicts_with = "json")]
    segments: bool,
    /// Kafka: print one JSON object a batch, one a line (streamed; memory bounded by one batch).
    #[arg(long, conflicts_with_all = ["json", "segments"])]
    json_lines: bool,
    /// Kafka: only batches reaching this offset or later, and their records from it.
    #[arg(long, value_name = "OFFSET", value_parser = size::parse_count, allow_hyphen_values = true)]
    from_offset: Option<u64>,
    /// Kafka: only batches starting at this offset or earlier, and their records up to it.
    #[arg(long, value_name = "OFFSET", value_parser = size::parse_count, allow_hyphen_values = true)]
    to_offset: Option<u64>,
    /// Kafka: only records with this key (its UTF-8 bytes), and the batches holding one.
    #[arg(long, value_name = "KEY")]
    key: Option<String>,
    /// Kafka: decode `__consumer_offsets` records (committed offsets: group, topic, partition, offset; group
    /// metadata; the new consumer protocol's records; tombstones). With the kafka-dump-log style, as
    /// `kafka-dump-log.sh --offsets-decoder` prints them.
    #[arg(long)]
    offsets_decoder: bool,
    /// Kafka: the output's style. kafka-dump-log prints what Kafka 4.4's `kafka-dump-log.sh --deep-iteration
    /// --print-data-log --files` prints for the partition's segments (or for --files), line for line.
    #[arg(long, value_enum, default_value_t = DumpStyle::Logcompact)]
    style: DumpStyle,
    /// Kafka files to dump as `kafka-dump-log.sh --files` takes them (comma separated: .log, .checkpoint,
    /// .index, .timeindex, .txnindex, .snapshot), instead of --dir; implies --style kafka-dump-log.
    #[arg(long, value_name = "F1,F2,...")]
    files: Option<String>,
    #[command(flatten)]
    kafka_dump_log: KafkaDumpLogArgs,
}

/// The flags of `kafka-dump-log.sh` that the kafka-dump-log style takes, and those it names to refuse them.
#[derive(Debug, Args)]
struct KafkaDumpLogArgs {
    /// With the kafka-dump-log style: check every .index and .timeindex entry against its segment and print
    /// only the problems (on standard error), as `kafka-dump-log.sh --verify-index-only` does.
    #[arg(long)]
    verify_index_only: bool,
    /// kafka-dump-log style: only check each index as a broker checks it on opening (`--index-sanity-check`).
    #[arg(long)]
    index_sanity_check: bool,
    /// kafka-dump-log style: accepted as Kafka's flag; the style always iterates records. Alone (without
    /// --print-data-log or a decoder) it is refused: Kafka would then print records without their contents.
    #[arg(long)]
    deep_iteration: bool,
    /// kafka-dump-log style: accepted as Kafka's flag; the style always prints record contents.
    #[arg(long)]
    print_data_log: bool,
    /// kafka-dump-log style: decode `__transaction_state` records as `--transaction-log-decoder` does.
    #[arg(long)]
    transaction_log_decoder: bool,
    /// kafka-dump-log style: decode KRaft metadata records as `--cluster-metadata-decoder` does.
    #[arg(long)]
    cluster_metadata_decoder: bool,
    /// kafka-dump-log style: decode `__share_group_state` records as `--share-group-state-decoder` does.
    #[arg(long)]
    share_group_state_decoder: bool,
    /// kafka-dump-log style: record lines without their metadata (`| key: K payload: V`).
    #[arg(long)]
    skip_record_metadata: bool,
    /// kafka-dump-log style: read only the batches wholly within the first N bytes of each segment.
    #[arg(long, value_name = "N")]
    max_bytes: Option<i32>,
    /// kafka-dump-log style: how far after an index entry's position its batch is looked for (default 5242880).
    #[arg(long, value_name = "N")]
    max_message_size: Option<i32>,
    /// Refused: Kafka's remote log metadata decoder is not reproduced.
    #[arg(long, hide = true)]
    remote_log_metadata_decoder: bool,
    /// Refused: Java decoder classes cannot be loaded.
    #[arg(long, hide = true, value_name = "CLASS", num_args = 0..=1, default_missing_value = "")]
    key_decoder_class: Option<String>,
    /// Refused: Java decoder classes cannot be loaded.
    #[arg(long, hide = true, value_name = "CLASS", num_args = 0..=1, default_missing_value = "")]
    value_decoder_class: Option<String>,
}

impl KafkaDumpLogArgs {
    /// The flags given that only the kafka-dump-log style takes.
    fn given(&self) -> Vec<&'static str> {
        [
            (self.verify_index_only, "--verify-index-only"),
            (self.index_sanity_check, "--index-sanity-check"),
            (self.deep_iteration, "--deep-iteration"),
            (self.print_data_log, "--print-data-log"),
            (self.transaction_log_decoder, "--transaction-log-decoder"),
            (self.cluster_metadata_decoder, "--cluster-metadata-decoder"),
            (self.share_group_state_decoder, "--share-group-state-decoder"),
            (self.skip_record_metadata, "--skip-record-metadata"),
            (self.max_bytes.is_some(), "--max-bytes"),
            (self.max_message_size.is_some(), "--max-message-size"),
            (self.remote_log_metadata_decoder, "--remote-log-metadata-decoder"),
            (self.key_decoder_class.is_some(), "--key-decoder-class"),
            (self.value_decoder_class.is_some(), "--value-decoder-class"),
        ]
        .into_iter()
        .filter_map(|(given, flag)| given.then_some(flag))
        .collect()
    }

    /// The options of the style, or why they cannot be honoured.
    fn options(&self, offsets_decoder: bool) -> Result<logcompact::dump_log::DumpLogOptions, Failure> {
        use logcompact::dump_log::{Decoder, DumpLogOptions};
        let unsupported: Vec<&str> = [
            (self.remote_log_metadata_decoder, "--remote-log-metadata-decoder (Kafka's remote storage metadata)"),
            (self.key_decoder_class.is_some(), "--key-decoder-class (a Java class)"),
            (self.value_decoder_class.is_some(), "--value-decoder-class (a Java class)"),
        ]
        .into_iter()
        .filter_map(|(given, flag)| given.then_some(flag))
        .collect();
        if !unsupported.is_empty() {
            return Err(Failure::Usage(format!(
                "{} cannot be reproduced by this tool; run kafka-dump-log.sh for it",
                unsupported.join(", ")
            )));
        }
        let decoders: Vec<(Decoder, &str)> = [
            (offsets_decoder, Decoder::Offsets, "--offsets-decoder"),
            (self.transaction_log_decoder, Decoder::TransactionLog, "--transaction-log-decoder"),
            (self.cluster_metadata_decoder, Decoder::ClusterMetadata, "--cluster-metadata-decoder"),
            (self.share_group_state_decoder, Decoder::ShareGroupState, "--share-group-state-decoder"),
        ]
        .into_iter()
        .filter_map(|(given, d, flag)| given.then_some((d, flag)))
        .collect();
        if decoders.len() > 1 {
            let flags: Vec<&str> = decoders.iter().map(|(_, f)| *f).collect();
            return Err(Failure::Usage(format!(
                "{}: one decoder at a time (kafka-dump-log.sh would silently use the first)",
                flags.join(", ")
            )));
        }
        if self.deep_iteration && !self.print_data_log && decoders.is_empty() {
            return Err(Failure::Usage(
                "--deep-iteration without --print-data-log or a decoder makes kafka-dump-log.sh print records \
                 without their keys and payloads; this style always prints them: add --print-data-log"
                    .into(),
            ));
        }
        for (value, flag) in [(self.max_bytes, "--max-bytes"), (self.max_message_size, "--max-message-size")] {
            if value.is_some_and(|v| v < 0) {
                return Err(Failure::Usage(format!("{flag} {} is negative", value.unwrap_or_default())));
            }
        }
        let defaults = DumpLogOptions::default();
        Ok(DumpLogOptions {
            verify_index_only: self.verify_index_only,
            index_sanity_check: self.index_sanity_check,
            skip_record_metadata: self.skip_record_metadata,
            max_bytes: self.max_bytes.unwrap_or(defaults.max_bytes),
            max_message_size: self.max_message_size.unwrap_or(defaults.max_message_size),
            decoder: decoders.first().map_or(Decoder::Text, |(d, _)| *d),
        })
    }
}

#[derive(Debug, Args)]
struct CheckArgs {
    /// The log's directory.
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// The directory's format.
    #[arg(long, value_enum, default_value_t = FormatArg::Native)]
    format: FormatArg,
}

#[derive(Debug, Args)]
struct AnalyzeArgs {
    /// The directory: a Kafka partition (`<topic>-<partition>`) or, with --format native, a native log.
    #[arg(long, value_name = "DIR", required_unless_present = "data_dir", conflicts_with = "data_dir")]
    dir: Option<PathBuf>,
    /// A whole data directory instead (a stopped broker's log directory, or, with --format native, a directory
    /// of logs): a row a log, most reclaimable bytes first, with whether Kafka's cleaner would pick it now.
    #[arg(long, value_name = "DIR", conflicts_with = "checkpoint")]
    data_dir: Option<PathBuf>,
    /// With --data-dir: a settings file (Kafka's names, a [section] per topic or log), over the settings an
    /// earlier `clean` saved.
    #[arg(long, value_name = "FILE", requires = "data_dir")]
    config: Option<PathBuf>,
    #[command(flatten)]
    broker: BrokerArgs,
    /// The directory's format.
    #[arg(long, value_enum, default_value_t = FormatArg::Kafka)]
    format: FormatArg,
    /// The first dirty offset; default: the cleaner checkpoint (a Kafka partition's in its log directory's
    /// cleaner-offset-checkpoint), else the log's start.
    #[arg(long, value_name = "OFFSET", value_parser = size::parse_count, allow_hyphen_values = true)]
    checkpoint: Option<u64>,
    /// Cleaner threads (log.cleaner.threads): the buffer is split evenly between them.
    #[arg(long, value_name = "T", default_value_t = 1, allow_hyphen_values = true)]
    threads: u32,
    /// The dedupe buffer for all threads (log.cleaner.dedupe.buffer.size).
    #[arg(long, value_name = "BYTES", default_value = "128MiB", value_parser = size::parse_bytes, allow_hyphen_values = true)]
    dedupe_buffer: u64,
    /// The maps' load factor (log.cleaner.io.buffer.load.factor).
    #[arg(long, value_name = "F", default_value_t = DEFAULT_LOAD_FACTOR, allow_hyphen_values = true)]
    load_factor: f64,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct AdviseArgs {
    /// Distinct keys of the dirty section.
    #[arg(long, value_name = "N", required_unless_present = "dir", conflicts_with = "dir", value_parser = size::parse_count, allow_hyphen_values = true)]
    keys: Option<u64>,
    /// Bytes per key (matters for the fullkey map); with --dir the keys' own sizes are used. Default: 16.
    #[arg(long, value_name = "B", conflicts_with = "dir", allow_hyphen_values = true)]
    key_bytes: Option<usize>,
    /// Records the keys are spread over (uniformly), for a passes figure beyond the lower bound.
    #[arg(long, value_name = "R", conflicts_with = "dir", value_parser = size::parse_count, allow_hyphen_values = true)]
    records: Option<u64>,
    /// A log's directory: advice for its dirty section.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// The directory's format (with --dir). Default: native.
    #[arg(long, value_enum, conflicts_with = "keys")]
    format: Option<FormatArg>,
    /// The first dirty offset (with --dir; default: the cleaner checkpoint, a Kafka partition's in its log
    /// directory).
    #[arg(long, value_name = "OFFSET", conflicts_with = "keys", value_parser = size::parse_count, allow_hyphen_values = true)]
    checkpoint: Option<u64>,
    /// Cleaner threads (log.cleaner.threads): the buffer is split evenly between them.
    #[arg(long, value_name = "T", default_value_t = 1, allow_hyphen_values = true)]
    threads: u32,
    /// The dedupe buffer for all threads (log.cleaner.dedupe.buffer.size).
    #[arg(long, value_name = "BYTES", default_value = "128MiB", value_parser = size::parse_bytes, allow_hyphen_values = true)]
    dedupe_buffer: u64,
    /// The maps' load factor (log.cleaner.io.buffer.load.factor).
    #[arg(long, value_name = "F", default_value_t = DEFAULT_LOAD_FACTOR, allow_hyphen_values = true)]
    load_factor: f64,
    /// Print a JSON array, one object per map.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct RepairArgs {
    /// The log's directory.
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// The directory's format: a native log, or a Kafka partition directory of a stopped broker (repaired
    /// under the broker's lock; cut segments get their .index and .timeindex rewritten).
    #[arg(long, value_enum, default_value_t = FormatArg::Native)]
    format: FormatArg,
    /// Carry the repair out (without it, only show what it would drop).
    #[arg(long)]
    apply: bool,
    /// Print the plan as JSON.
    #[arg(long)]
    json: bool,
}

fn run(args: &RunArgs) -> Result<(), Failure> {
    let cleaner_config = args.cleaner.config()?;
    let log_config = LogConfig { segment_bytes: args.segment_bytes, ..LogConfig::default() };
    let store = backend::open_store(args.backend, args.dir.as_deref())?;
    let log = backend::open_log(store, log_config)?;
    let stdout = io::stdout();
    let mut out = out::QuietPipe::new(BufWriter::new(stdout.lock()));
    let mut err = io::stderr();
    let grouping = if args.group_segments { cleaner::Grouping::BySize } else { cleaner::Grouping::None };
    let options = PassOptions { grouping, ..args.cleaner.pass_options() };
    let result = if args.script == "-" {
        run::run_script(io::stdin().lock(), &log, &cleaner_config, options, args.stats, &mut out, &mut err)
    } else {
        let file = File::open(&args.script)
            .map_err(|e| Failure::Usage(format!("cannot open script {:?}: {e}", PathBuf::from(&args.script))))?;
        run::run_script(BufReader::new(file), &log, &cleaner_config, options, args.stats, &mut out, &mut err)
    };
    out.flush().map_err(|e| Failure::Runtime(format!("cannot write output: {e}")))?;
    result?;
    // Everything the script wrote is durable when the run ends.
    log.sync().map_err(|e| Failure::from_log("cannot sync the log", &e))
}

fn clean_command(a: &CleanArgs) -> Result<(), Failure> {
    let manager = cleaner::manager::ManagerConfig {
        threads: a.threads,
        dedupe_buffer_bytes: usize::try_from(a.dedupe_buffer)
            .map_err(|_| Failure::Usage("--dedupe-buffer is too large for this machine's address space".into()))?,
        load_factor: a.load_factor,
        map: a.map.into(),
        backoff_ms: a.backoff_ms.unwrap_or(cleaner::manager::DEFAULT_BACKOFF_MS),
        io_max_bytes_per_second: a.io_max_bytes_per_second.map_or(f64::INFINITY, |b| b as f64),
        max_retries: a.max_retries,
        retry_backoff_ms: a.retry_backoff_ms,
        spill_dir: a.spill_dir.clone(),
    };
    if a.spill_dir.is_some() && a.map != MapArg::External {
        return Err(Failure::Usage(
            "--spill-dir is where --map external writes its runs; other maps write none".into(),
        ));
    }
    if a.watch && a.clock.now_ms.is_some() {
        return Err(Failure::Usage("--now-ms fixes the clock, so it goes with --until-clean, not --watch".into()));
    }
    let format = a.format.into();
    let layers =
        logcompact::datadir::layers(&a.data_dir, format, a.config.as_deref(), &a.settings.flags(), &a.broker.source())
            .map_err(|e| Failure::from_data_dir(&e))?;
    tell_broker_notice(&layers);
    let request = logcompact::datadir::CleanRequest {
        data_dir: a.data_dir.clone(),
        format,
        manager,
        policy: a.policy.clone(),
        layers,
        mode: if a.watch { cleaner::manager::Mode::Watch } else { cleaner::manager::Mode::UntilClean },
        now_ms: a.clock.now_ms,
    };
    clean::clean(&request, a.json, a.metrics_addr.as_deref())
}

/// `compact`: the log's settings resolved as `clean` resolves them (the broker's metadata, saved settings,
/// --config, then these flags), a topic known not to be compacted refused, then the passes.
fn compact_command(a: &CompactArgs) -> Result<(), Failure> {
    let c = a.cleaner.config()?;
    let c = CleanerConfig { threads: a.threads, ..c };
    c.validate().map_err(|e| Failure::from_cleaner("bad cleaner settings", &e))?;
    let format: log_core::Format = a.format.into();
    let given: Vec<(&str, Option<String>, &str)> = vec![
        ("segment.bytes", a.segment_bytes.map(|v| v.to_string()), "--segment-bytes"),
        ("min.compaction.lag.ms", a.min_compaction_lag_ms.map(|v| v.to_string()), "--min-compaction-lag-ms"),
        ("delete.retention.ms", a.cleaner.delete_retention_ms.map(|v| v.to_string()), "--delete-retention-ms"),
        ("cleanup.policy", a.cleanup_policy.clone(), "--cleanup-policy"),
    ];
    let flags: Vec<(&str, String, &str)> = given.into_iter().filter_map(|(s, v, f)| v.map(|v| (s, v, f))).collect();
    let (resolved, layers) =
        logcompact::datadir::settings_of(&a.dir, format, a.config.as_deref(), &flags, &a.broker.source())
            .map_err(|e| Failure::from_data_dir(&e))?;
    let policy_from = resolved.sources.get("cleanup.policy").cloned().unwrap_or_default();
    let known = policy_from != "default" && policy_from != "Kafka's default for a topic";
    let mut drop_invalid = a.drop_invalid;
    if format == log_core::Format::Kafka {
        if !resolved.settings.cleanup_policy.compacts() && known {
            return Err(Failure::Usage(format!(
                "{}: {}; give --cleanup-policy compact to compact it anyway",
                a.dir.display(),
                layers.why_left_alone(&layers_topic(&a.dir))
            )));
        }
        if known {
            // Kafka's cleaner drops records without a key in a compacted topic.
            drop_invalid = true;
        } else {
            let why = layers.broker_notice.clone().unwrap_or_default();
            let _ = writeln!(
                std::io::stderr(),
                "note: nothing here gives topic {}'s cleanup.policy ({why}): compacting as asked, with Kafka's defaults \
                 for what no flag gives; records without a key are kept unless --drop-invalid",
                layers_topic(&a.dir)
            );
        }
    }
    let s = &resolved.settings;
    let options = PassOptions {
        purge: a.purge,
        min_compaction_lag_ms: s.min_compaction_lag_ms,
        delete_retention_ms: s.delete_retention_ms,
        drop_invalid: drop_invalid || format == log_core::Format::Native,
        max_decompressed_message_bytes: s.max_decompressed_message_bytes,
        ..PassOptions::default()
    };
    let request = ops::CompactRequest {
        config: &c,
        clock: a.clock.clock()?,
        request: logcompact::CompactRequest {
            dir: a.dir.clone(),
            format,
            options,
            until_clean: a.until_clean,
            segment_bytes: s.segment_bytes,
            min_cleanable_dirty_ratio: a.min_cleanable_dirty_ratio,
            checkpoint: a.checkpoint,
            out: a.out.clone(),
        },
    };
    ops::compact(&request)
}

/// The topic of the Kafka partition directory `dir` (its name when it is none).
fn layers_topic(dir: &std::path::Path) -> String {
    let full = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let name = full.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    log_core::kafka::topic_partition(&name).map_or(name.clone(), |(t, _)| t.to_owned())
}

/// `dump`: the native or Kafka dump, or the kafka-dump-log style, each refusing the flags it cannot honour.
fn dump_command(a: &DumpArgs) -> Result<(), Failure> {
    if let (Some(from), Some(to)) = (a.from_offset, a.to_offset)
        && from > to
    {
        return Err(Failure::Usage(format!("--from-offset {from} is past --to-offset {to}: no record lies between")));
    }
    let dump_log = a.style == DumpStyle::KafkaDumpLog || a.files.is_some();
    let kafka_only: Vec<&str> = [
        (a.json_lines, "--json-lines"),
        (a.from_offset.is_some(), "--from-offset"),
        (a.to_offset.is_some(), "--to-offset"),
        (a.key.is_some(), "--key"),
    ]
    .into_iter()
    .filter_map(|(given, flag)| given.then_some(flag))
    .collect();
    if dump_log {
        if a.format != FormatArg::Kafka {
            return Err(Failure::Usage(
                "--style kafka-dump-log and --files read Kafka files: add --format kafka".into(),
            ));
        }
        if a.style == DumpStyle::Logcompact && a.files.is_some() && std::env::args().any(|x| x.starts_with("--style")) {
            return Err(Failure::Usage("--files dumps in the kafka-dump-log style only".into()));
        }
        let refused: Vec<&str> = kafka_only
            .iter()
            .copied()
            .chain(a.json.then_some("--json"))
            .chain(a.segments.then_some("--segments"))
            .collect();
        if !refused.is_empty() {
            return Err(Failure::Usage(format!(
                "{} cannot be used with --style kafka-dump-log, which prints exactly what kafka-dump-log.sh prints",
                refused.join(", ")
            )));
        }
        let files = match (&a.files, &a.dir) {
            (Some(list), _) => kafka_files_argument(list),
            (None, Some(dir)) => logcompact::dump_log::segment_files(dir)
                .map_err(|e| Failure::Usage(format!("cannot list {}: {e}", dir.display())))?,
            (None, None) => unreachable!("clap requires --dir or --files"),
        };
        let opts = a.kafka_dump_log.options(a.offsets_decoder)?;
        return kafka_cmd::dump_log(&files, opts);
    }
    let style_only = a.kafka_dump_log.given();
    if !style_only.is_empty() {
        return Err(Failure::Usage(format!(
            "{} need --style kafka-dump-log (they are kafka-dump-log.sh's flags)",
            style_only.join(", ")
        )));
    }
    let Some(dir) = &a.dir else { unreachable!("--files implies the kafka-dump-log style") };
    if a.format == FormatArg::Kafka {
        if a.segments {
            return Err(Failure::Usage(
                "--segments is the native format's lesson view; a Kafka dump already shows batches and segments".into(),
            ));
        }
        let opts = kafka_cmd::DumpOptions {
            json: a.json,
            json_lines: a.json_lines,
            from_offset: a.from_offset,
            to_offset: a.to_offset,
            key: a.key.as_ref().map(|k| k.as_bytes().to_vec()),
            offsets_decoder: a.offsets_decoder,
        };
        return kafka_cmd::dump(dir, &opts);
    }
    let kafka_only: Vec<&str> =
        kafka_only.into_iter().chain(a.offsets_decoder.then_some("--offsets-decoder")).collect();
    if !kafka_only.is_empty() {
        return Err(Failure::Usage(format!(
            "{} are for --format kafka; a native log's dump is one record a line already",
            kafka_only.join(", ")
        )));
    }
    ops::dump(dir, a.json, a.segments)
}

/// `--files` as `kafka-dump-log.sh` splits it (Java's `String.split(",")`): at commas, trailing empty items
/// dropped, nothing trimmed; an empty item in the middle is kept (Kafka prints `Dumping ` and ignores it).
fn kafka_files_argument(list: &str) -> Vec<String> {
    // Java keeps an empty string as its one item; a list of only commas is no item at all.
    if list.is_empty() {
        return vec![String::new()];
    }
    let mut files: Vec<String> = list.split(',').map(str::to_owned).collect();
    while files.last().is_some_and(String::is_empty) {
        files.pop();
    }
    files
}

fn main() -> ExitCode {
    cleaner::allocator::return_large_frees_to_the_system();
    let cli = Cli::parse();
    let result = match &cli.command {
        Commands::Run(args) => run(args),
        Commands::Gen(a) => match usize::try_from(a.value_bytes) {
            Err(_) => Err(Failure::Usage(format!("--value-bytes {} is too large", a.value_bytes))),
            Ok(value_bytes) => {
                let workload = Workload {
                    records: a.records,
                    keys: a.keys,
                    value_bytes,
                    tombstone_fraction: a.tombstones,
                    seed: a.seed,
                };
                let config = LogConfig { segment_bytes: a.segment_bytes, ..LogConfig::default() };
                ops::generate(&a.dir, workload, config)
            }
        },
        Commands::Compact(a) => compact_command(a),
        Commands::Clean(a) => clean_command(a),
        Commands::Status(a) => logcompact::datadir::layers(
            &a.data_dir,
            a.format.into(),
            a.config.as_deref(),
            &a.settings.flags(),
            &a.broker.source(),
        )
        .map_err(|e| Failure::from_data_dir(&e))
        .and_then(|layers| {
            tell_broker_notice(&layers);
            status::status(&a.data_dir, a.format.into(), &layers, a.json)
        }),
        Commands::Roll(a) => ops::roll(&a.dir, a.format.into()),
        Commands::Dump(a) => dump_command(a),
        Commands::Check(a) if a.format == FormatArg::Kafka => kafka_cmd::check(&a.dir),
        Commands::Check(a) => ops::check(&a.dir),
        Commands::Analyze(a) => {
            let budget = cleaner::advise::Budget {
                total_bytes: a.dedupe_buffer,
                threads: a.threads,
                load_factor: a.load_factor,
            };
            match (&a.dir, &a.data_dir) {
                (Some(dir), _) => {
                    let req =
                        analyze_cmd::AnalyzeRequest { dir, format: a.format.into(), checkpoint: a.checkpoint, budget };
                    analyze_cmd::analyze(req, a.json)
                }
                (None, Some(data_dir)) => {
                    logcompact::datadir::layers(data_dir, a.format.into(), a.config.as_deref(), &[], &a.broker.source())
                        .map_err(|e| Failure::from_data_dir(&e))
                        .and_then(|layers| {
                            tell_broker_notice(&layers);
                            analyze_cmd::analyze_data_dir(data_dir, a.format.into(), &layers, budget, a.json)
                        })
                }
                (None, None) => unreachable!("clap requires --dir or --data-dir"),
            }
        }
        Commands::Repair(a) => ops::repair(&a.dir, a.format.into(), a.apply, a.json),
        Commands::Advise(a) => {
            let budget = cleaner::advise::Budget {
                total_bytes: a.dedupe_buffer,
                threads: a.threads,
                load_factor: a.load_factor,
            };
            let source = match (&a.dir, a.keys) {
                (Some(dir), _) => advise::Source::Dir(dir, a.format.unwrap_or_default().into(), a.checkpoint),
                (None, Some(keys)) => {
                    advise::Source::Counts { keys, key_bytes: a.key_bytes.unwrap_or(16), records: a.records }
                }
                (None, None) => unreachable!("clap requires --keys or --dir"),
            };
            advise::advise(source, budget, a.json)
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            crate::out::diag!("{failure}");
            failure.exit_code()
        }
    }
}
