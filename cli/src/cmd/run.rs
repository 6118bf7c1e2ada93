//! `logcompact run`: executes a script of the seed's command language against a log.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use cleaner::{Cleaner, CleanerConfig, DEFAULT_DELETE_RETENTION_MS, PassOptions, SystemClock};
use log_core::{Log, LogConfig};

use crate::args::{BufferArgs, MapArgs, cleaner_config};
use crate::backend::{self, Backend};
use crate::failure::Failure;
use crate::format;
use crate::script::{Command, parse_line};

/// `run`'s arguments.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The script: a file path, or '-' for standard input.
    #[arg(value_name = "SCRIPT")]
    script: String,
    #[command(flatten)]
    map: MapArgs,
    #[command(flatten)]
    buffer: BufferArgs,
    /// How long a tombstone lives after the first pass that keeps it (delete.retention.ms).
    ///
    /// Default: one day.
    #[arg(long, value_name = "MS", allow_hyphen_values = true)]
    delete_retention_ms: Option<i64>,
    /// Roll the active segment before an append would take it past this size (segment.bytes).
    #[arg(long, value_name = "BYTES", default_value = "1GiB", value_parser = logcompact::parse_bytes, allow_hyphen_values = true)]
    segment_bytes: u64,
    /// Print each pass's statistics as one JSON line on standard error.
    #[arg(long)]
    stats: bool,
    /// COMPACT merges adjacent closed segments up to --segment-bytes into one, as Kafka's cleaner groups them
    /// (and as every directory command does). Without it COMPACT follows the lesson: each closed segment is
    /// cleaned into a replacement that keeps its base, and only segments left empty go.
    #[arg(long)]
    group_segments: bool,
    /// Where the log lives
    ///
    /// In memory (gone at exit) or in files under --dir (created or reopened, so a second run continues the first).
    #[arg(long, value_enum, default_value_t = Backend::Mem)]
    backend: Backend,
    /// The log's directory, for --backend file.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// Runs the script against a log in memory or in a directory; everything it wrote is synced at the end.
///
/// # Errors
/// [`Failure::Script`] for a bad line; as opening the log and cleaning it.
pub fn run(args: &RunArgs) -> Result<(), Failure> {
    let cleaner_config = cleaner_config(&args.map, &args.buffer, 1)?;
    let delete_retention_ms = match args.delete_retention_ms {
        Some(ms) if ms < 0 => return Err(Failure::Usage(format!("--delete-retention-ms {ms} is negative"))),
        Some(ms) => ms,
        None => DEFAULT_DELETE_RETENTION_MS,
    };
    let log_config = LogConfig { segment_bytes: args.segment_bytes, ..LogConfig::default() };
    // Only where the log is written to that directory (with --backend mem, --dir is refused below).
    if let (Backend::File, Some(dir)) = (args.backend, args.dir.as_deref()) {
        crate::mistakes::one_log_or_new(dir, log_core::Format::Native, "run --backend file")?;
    }
    let store = backend::open_store(args.backend, args.dir.as_deref())?;
    let log = backend::open_log(store, log_config)?;
    let stdout = io::stdout();
    let mut out = crate::out::QuietPipe::new(BufWriter::new(stdout.lock()));
    let mut err = io::stderr();
    let grouping = if args.group_segments { cleaner::Grouping::BySize } else { cleaner::Grouping::None };
    let options = PassOptions { grouping, delete_retention_ms, ..PassOptions::default() };
    let result = if args.script == "-" {
        run_script(io::stdin().lock(), &log, &cleaner_config, options, args.stats, &mut out, &mut err)
    } else {
        let file = File::open(&args.script)
            .map_err(|e| Failure::Usage(format!("cannot open script {:?}: {e}", PathBuf::from(&args.script))))?;
        run_script(BufReader::new(file), &log, &cleaner_config, options, args.stats, &mut out, &mut err)
    };
    out.flush().map_err(|e| Failure::Runtime(format!("cannot write output: {e}")))?;
    result?;
    // Everything the script wrote is durable when the run ends.
    log.sync().map_err(|e| Failure::from_log("cannot sync the log", &e))
}

/// Runs every line of `input` against `log`, printing what `DUMP` and `READ` print to `out` and, when
/// `stats` is set, one JSON line of statistics per pass to `err`.
///
/// # Errors
/// [`Failure::Script`] for a bad line (naming its number); [`Failure::Runtime`] when the log or the cleaner
/// fails.
pub fn run_script(
    input: impl BufRead,
    log: &Log,
    cleaner_config: &CleanerConfig,
    pass_options: PassOptions,
    stats: bool,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<(), Failure> {
    let mut cleaner = Cleaner::new(cleaner_config.clone(), Arc::new(SystemClock))
        .map_err(|e| Failure::from_cleaner("cannot build the offset map", &e))?;
    let mut warned = false;
    for (index, line) in input.lines().enumerate() {
        let number = index + 1;
        let line = line.map_err(|e| Failure::Runtime(format!("cannot read line {number}: {e}")))?;
        let command = match parse_line(&line) {
            Ok(Some(c)) => c,
            Ok(None) => continue,
            Err(e) => return Err(Failure::Script { line: number, message: e.to_string() }),
        };
        let at = |e: &dyn std::fmt::Display| Failure::Runtime(format!("line {number}: {e}"));
        let log_err = |e: log_core::Error| Failure::from_log(&format!("line {number}"), &e);
        match command {
            Command::Put { key, value } => {
                log.put(key.as_bytes(), value.as_bytes()).map_err(log_err)?;
            }
            Command::Del { key } => {
                log.delete(key.as_bytes()).map_err(log_err)?;
            }
            Command::Roll => {
                log.roll().map_err(log_err)?;
            }
            Command::Compact { purge } => {
                let s = cleaner
                    .clean(log, PassOptions { purge, ..pass_options })
                    .map_err(|e| Failure::from_cleaner(&format!("line {number}"), &e))?;
                if stats {
                    let json = serde_json::to_string(&s).map_err(|e| at(&e))?;
                    writeln!(err, "{json}").map_err(|e| at(&e))?;
                }
                if let Some(passes) = s.passes_needed().filter(|_| !warned) {
                    warned = true;
                    writeln!(err, "{}", crate::hints::many_passes_warning(&s, passes, None)).map_err(|e| at(&e))?;
                }
            }
            Command::Dump => format::dump(&log.snapshot(), out)?,
            Command::Read { offset } => match log.read(offset).map_err(log_err)? {
                Some(r) => writeln!(out, "{}", format::record(&r)).map_err(|e| at(&e))?,
                None => writeln!(out, "END").map_err(|e| at(&e))?,
            },
        }
    }
    Ok(())
}
