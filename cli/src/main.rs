//! `logcompact`: the command line of the logcompact toolkit. It only parses arguments and calls the
//! libraries (`log-core`, the storage backends and `cleaner`).

mod advise;
mod backend;
mod failure;
mod format;
mod json;
mod ops;
mod out;
mod progress;
mod run;
mod script;
mod size;

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use cleaner::{CleanerConfig, DEFAULT_DELETE_RETENTION_MS, DEFAULT_LOAD_FACTOR, MapKind, PassOptions};
use log_core::LogConfig;
use log_core::workload::Workload;

use backend::Backend;
use failure::Failure;

/// Kafka-style log compaction: a segmented keyed log, its two-pass cleaner and its offset maps.
#[derive(Debug, Parser)]
#[command(name = "logcompact", version, about, long_about = None, after_help = failure::EXIT_CODES)]
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
    /// Append a deterministic synthetic workload to the log in a directory; prints a JSON summary.
    #[command(after_help = failure::EXIT_CODES)]
    Gen(GenArgs),
    /// Clean the log in a directory; prints each pass's statistics as one JSON line.
    #[command(after_help = failure::EXIT_CODES)]
    Compact(CompactArgs),
    /// Print the log in a directory, as DUMP does or as JSON. Reads only: takes no lock, changes nothing.
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
}

impl From<MapArg> for MapKind {
    fn from(m: MapArg) -> MapKind {
        match m {
            MapArg::Skimpy => MapKind::Skimpy,
            MapArg::Fullkey => MapKind::FullKey,
            MapArg::Compact => MapKind::Compact,
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
    /// How long a tombstone lives after the first pass that keeps it (delete.retention.ms).
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_DELETE_RETENTION_MS, allow_hyphen_values = true)]
    delete_retention_ms: i64,
}

impl CleanerArgs {
    fn config(&self) -> Result<CleanerConfig, Failure> {
        let config = CleanerConfig {
            map: self.map.into(),
            dedupe_buffer_bytes: usize::try_from(self.dedupe_buffer)
                .map_err(|_| Failure::Usage("--dedupe-buffer is too large for this machine's address space".into()))?,
            load_factor: self.load_factor,
            threads: 1,
        };
        config.validate().map_err(|e| Failure::from_cleaner("bad cleaner settings", &e))?;
        if self.delete_retention_ms < 0 {
            return Err(Failure::Usage(format!("--delete-retention-ms {} is negative", self.delete_retention_ms)));
        }
        Ok(config)
    }

    /// What a pass takes of these options.
    fn pass_options(&self) -> PassOptions {
        PassOptions { delete_retention_ms: self.delete_retention_ms, ..PassOptions::default() }
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
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    records: u64,
    /// Distinct keys, drawn uniformly.
    #[arg(long, value_name = "K", allow_hyphen_values = true)]
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
    /// Purge: tombstones kept by an earlier pass go now, whatever their delete horizon.
    #[arg(long)]
    purge: bool,
    /// Repeat passes until the whole dirty section has been cleaned.
    #[arg(long)]
    until_clean: bool,
}

#[derive(Debug, Args)]
struct DumpArgs {
    /// The log's directory.
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// Print JSON: a list of segments with base, state and records.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct CheckArgs {
    /// The log's directory.
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
}

#[derive(Debug, Args)]
struct AdviseArgs {
    /// Distinct keys of the dirty section.
    #[arg(long, value_name = "N", required_unless_present = "dir", conflicts_with = "dir", allow_hyphen_values = true)]
    keys: Option<u64>,
    /// Bytes per key (matters for the fullkey map).
    #[arg(long, value_name = "B", default_value_t = 16, allow_hyphen_values = true)]
    key_bytes: usize,
    /// Records the keys are spread over (uniformly), for a passes figure beyond the lower bound.
    #[arg(long, value_name = "R", conflicts_with = "dir", allow_hyphen_values = true)]
    records: Option<u64>,
    /// A log's directory: advice for its dirty section.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
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
    let result = if args.script == "-" {
        run::run_script(
            io::stdin().lock(),
            &log,
            &cleaner_config,
            args.cleaner.pass_options(),
            args.stats,
            &mut out,
            &mut err,
        )
    } else {
        let file = File::open(&args.script)
            .map_err(|e| Failure::Usage(format!("cannot open script {:?}: {e}", PathBuf::from(&args.script))))?;
        run::run_script(
            BufReader::new(file),
            &log,
            &cleaner_config,
            args.cleaner.pass_options(),
            args.stats,
            &mut out,
            &mut err,
        )
    };
    out.flush().map_err(|e| Failure::Runtime(format!("cannot write output: {e}")))?;
    result?;
    // Everything the script wrote is durable when the run ends.
    log.sync().map_err(|e| Failure::from_log("cannot sync the log", &e))
}

fn main() -> ExitCode {
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
        Commands::Compact(a) => a.cleaner.config().and_then(|c| {
            let options = PassOptions { purge: a.purge, ..a.cleaner.pass_options() };
            ops::compact(&a.dir, &c, options, a.until_clean)
        }),
        Commands::Dump(a) => ops::dump(&a.dir, a.json),
        Commands::Check(a) => ops::check(&a.dir),
        Commands::Repair(a) => ops::repair(&a.dir, a.apply, a.json),
        Commands::Advise(a) => {
            let budget = cleaner::advise::Budget {
                total_bytes: a.dedupe_buffer,
                threads: a.threads,
                load_factor: a.load_factor,
            };
            let source = match (&a.dir, a.keys) {
                (Some(dir), _) => advise::Source::Dir(dir),
                (None, Some(keys)) => advise::Source::Counts { keys, key_bytes: a.key_bytes, records: a.records },
                (None, None) => unreachable!("clap requires --keys or --dir"),
            };
            advise::advise(source, budget, a.json)
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("{failure}");
            failure.exit_code()
        }
    }
}
