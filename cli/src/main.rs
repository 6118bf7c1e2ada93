//! `logcompact`: the command line of the logcompact toolkit. It only parses arguments and calls the
//! libraries (`log-core`, the storage backends and `cleaner`).

mod failure;
mod format;
mod run;
mod script;
mod size;

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use cleaner::{CleanerConfig, DEFAULT_DELETE_RETENTION_MS, DEFAULT_LOAD_FACTOR};
use log_core::LogConfig;

use failure::Failure;

/// Kafka-style log compaction: a segmented keyed log, its two-pass cleaner and its offset maps.
#[derive(Debug, Parser)]
#[command(name = "logcompact", version, about, long_about = None)]
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
    #[command(verbatim_doc_comment)]
    Run(RunArgs),
}

/// Options shared by every command that cleans.
#[derive(Debug, Args)]
struct CleanerArgs {
    /// Offset map memory (log.cleaner.dedupe.buffer.size), e.g. 4096, 64KiB, 128MiB. Small buffers give
    /// partial passes; the buffer must hold at least one key (48 bytes at load factor 0.9).
    #[arg(long, value_name = "BYTES", default_value = "128MiB", value_parser = size::parse_bytes)]
    dedupe_buffer: u64,
    /// Share of the map's slots that may fill (log.cleaner.io.buffer.load.factor), in (0, 1].
    #[arg(long, value_name = "F", default_value_t = DEFAULT_LOAD_FACTOR)]
    load_factor: f64,
    /// How long a tombstone lives after the first pass that keeps it (delete.retention.ms).
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_DELETE_RETENTION_MS)]
    delete_retention_ms: i64,
}

impl CleanerArgs {
    fn config(&self) -> Result<CleanerConfig, Failure> {
        let config = CleanerConfig {
            dedupe_buffer_bytes: usize::try_from(self.dedupe_buffer)
                .map_err(|_| Failure::Usage("--dedupe-buffer is too large".into()))?,
            load_factor: self.load_factor,
            delete_retention_ms: self.delete_retention_ms,
        };
        config.validate().map_err(|e| Failure::Usage(e.to_string()))?;
        Ok(config)
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
    #[arg(long, value_name = "BYTES", default_value = "1GiB", value_parser = size::parse_bytes)]
    segment_bytes: u64,
    /// Print each pass's statistics as one JSON line on standard error.
    #[arg(long)]
    stats: bool,
}

fn run(args: &RunArgs) -> Result<(), Failure> {
    let cleaner_config = args.cleaner.config()?;
    let log_config = LogConfig { segment_bytes: args.segment_bytes, ..LogConfig::default() };
    let log = run::open_mem_log(log_config)?;
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut err = io::stderr();
    let result = if args.script == "-" {
        run::run_script(io::stdin().lock(), &log, &cleaner_config, args.stats, &mut out, &mut err)
    } else {
        let file = File::open(&args.script)
            .map_err(|e| Failure::Usage(format!("cannot open script {:?}: {e}", PathBuf::from(&args.script))))?;
        run::run_script(BufReader::new(file), &log, &cleaner_config, args.stats, &mut out, &mut err)
    };
    out.flush().map_err(|e| Failure::Runtime(format!("cannot write output: {e}")))?;
    result
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Commands::Run(args) => run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("{failure}");
            failure.exit_code()
        }
    }
}
