//! `logcompact advise`: prints what the library's `cleaner::advise` finds, as a table or JSON.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use cleaner::advise::{Budget, KeyCount, LogAdvice, MapAdvice, from_counts, from_log_until};
use log_core::human::{bytes, duration};
use logcompact::progress::Meter;
use serde::Serialize;

use crate::args::{BrokerArgs, BufferArgs, FormatArg, ThreadsArgs, tell_broker_notice};
use crate::failure::Failure;
use crate::out::QuietPipe;
use crate::progress::Reporter;

/// `advise`'s arguments.
#[derive(Debug, Args)]
pub struct AdviseArgs {
    /// Distinct keys of the dirty section.
    #[arg(long, value_name = "N", required_unless_present = "dir", conflicts_with = "dir", value_parser = logcompact::parse_count, allow_hyphen_values = true)]
    keys: Option<u64>,
    /// Bytes per key (matters for the fullkey map); with --dir the keys' own sizes are used. Default: 16.
    #[arg(long, value_name = "B", conflicts_with = "dir", allow_hyphen_values = true)]
    key_bytes: Option<usize>,
    /// Records the keys are spread over (uniformly), for a passes figure beyond the lower bound.
    #[arg(long, value_name = "R", conflicts_with = "dir", value_parser = logcompact::parse_count, allow_hyphen_values = true)]
    records: Option<u64>,
    /// A log's directory: advice for its dirty section.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// The directory's format (with --dir). Default: native.
    #[arg(long, value_enum, conflicts_with = "keys")]
    format: Option<FormatArg>,
    /// The first dirty offset (with --dir; default: the cleaner checkpoint, a Kafka partition's in its log
    /// directory).
    #[arg(long, value_name = "OFFSET", conflicts_with = "keys", value_parser = logcompact::parse_count, allow_hyphen_values = true)]
    checkpoint: Option<u64>,
    /// A settings file (with --dir; Kafka's names, a [section] per topic or log), over the broker's metadata
    /// and the settings an earlier `clean` saved: its min.compaction.lag.ms bounds the dirty section a pass takes.
    #[arg(long, value_name = "FILE", requires = "dir")]
    config: Option<PathBuf>,
    #[command(flatten)]
    broker: BrokerArgs,
    #[command(flatten)]
    threads: ThreadsArgs,
    #[command(flatten)]
    buffer: BufferArgs,
    /// Print a JSON array, one object per map.
    #[arg(long)]
    json: bool,
}

/// Runs `advise`: from the counts given, or from a log's dirty section.
///
/// # Errors
/// As [`advise`].
pub fn run(a: &AdviseArgs) -> Result<(), Failure> {
    let budget = a.buffer.budget(&a.threads);
    let source = match (&a.dir, a.keys) {
        (Some(dir), _) => {
            let format = a.format.unwrap_or_default().into();
            crate::mistakes::one_log(dir, format, "advise", None)?;
            // The topic's settings as a pass resolves them: the lag bounds the section the pass would map.
            let (resolved, layers) =
                logcompact::datadir::settings_of(dir, format, a.config.as_deref(), &[], &a.broker.source(format)?)
                    .map_err(|e| Failure::from_data_dir(&e))?;
            tell_broker_notice(&layers);
            Source::Dir {
                dir,
                format,
                checkpoint: a.checkpoint,
                lag_ms: resolved.settings.min_compaction_lag_ms,
                settings: resolved.given(),
            }
        }
        (None, Some(_)) if a.broker.metadata_dir.is_some() || a.broker.broker_config.is_some() => {
            return Err(Failure::Usage(
                "--metadata-dir and --broker-config give a partition's settings: they go with --dir, not --keys".into(),
            ));
        }
        (None, Some(keys)) => Source::Counts { keys, key_bytes: a.key_bytes.unwrap_or(16), records: a.records },
        (None, None) => return Err(Failure::Usage("give --keys N or --dir DIR".into())),
    };
    advise(source, budget, a.json)
}

/// Where the key counts come from.
#[derive(Debug)]
pub enum Source<'a> {
    /// Counts given on the command line.
    Counts {
        /// Distinct keys.
        keys: u64,
        /// Bytes per key.
        key_bytes: usize,
        /// Records over which the keys are spread, if known.
        records: Option<u64>,
    },
    /// The dirty section of the log in a directory, as a pass would take it.
    Dir {
        /// The log's directory.
        dir: &'a Path,
        /// Its format.
        format: log_core::Format,
        /// The first dirty offset, if given (else the cleaner checkpoint).
        checkpoint: Option<u64>,
        /// Its `min.compaction.lag.ms`: records younger than this end the section.
        lag_ms: i64,
        /// The settings used, with where each came from ([`logcompact::datadir::settings::Resolved::given`]).
        settings: String,
    },
}

/// One line of `--json`: a map's advice, with how the keys were counted.
#[derive(Debug, Serialize)]
struct JsonAdvice<'a> {
    #[serde(flatten)]
    advice: &'a MapAdvice,
    keys_exact: bool,
    keys_relative_error: f64,
    dirty_records: Option<u64>,
}

/// Prints the advice for `source` with `budget`.
///
/// # Errors
/// [`Failure::Usage`] for bad settings or a directory without a log; [`Failure::Corruption`] when the log is
/// damaged; [`Failure::Runtime`] when it cannot be read.
fn advise(source: Source<'_>, budget: Budget, as_json: bool) -> Result<(), Failure> {
    let bad = |e: cleaner::Error| Failure::from_cleaner("cannot advise", &e);
    let (maps, count, log): (Vec<MapAdvice>, KeyCount, Option<LogAdvice>) = match source {
        Source::Counts { keys, key_bytes, records } => {
            let maps = from_counts(keys, key_bytes, records, budget).map_err(bad)?;
            (maps, KeyCount { keys, exact: true, relative_error: 0.0 }, None)
        }
        Source::Dir { dir, format, checkpoint, lag_ms, settings } => {
            let opened = logcompact::open_read_only(dir, format).map_err(|e| Failure::from_open(&e))?;
            if let Some(c) = checkpoint {
                logcompact::dir::start_dirty_at(&opened.log, c).map_err(|e| Failure::from_checkpoint(&e))?;
            }
            let end = opened.log.dirty_section(log_core::now_ms(), lag_ms).first_uncleanable_offset;
            let meter = Arc::new(Meter::staged());
            let progress = Reporter::start("advise", Arc::clone(&meter));
            let advice = from_log_until(&opened.log, budget, end, Some(&meter));
            progress.finish();
            let advice = advice.map_err(bad)?;
            if !as_json {
                let mut out = QuietPipe::new(std::io::stdout().lock());
                writeln!(out, "settings: {settings}")
                    .map_err(|e| Failure::Runtime(format!("cannot write output: {e}")))?;
            }
            (advice.maps.clone(), advice.distinct, Some(advice))
        }
    };
    print(&maps, count, log.as_ref(), budget, as_json)
}

/// Prints advice per map: a table, or a JSON array.
///
/// # Errors
/// [`Failure::Runtime`] when the output cannot be written.
pub fn print(
    maps: &[MapAdvice],
    count: KeyCount,
    log: Option<&LogAdvice>,
    budget: Budget,
    as_json: bool,
) -> Result<(), Failure> {
    let mut out = QuietPipe::new(std::io::stdout().lock());
    let failed = |e: std::io::Error| Failure::Runtime(format!("cannot write output: {e}"));
    if as_json {
        let rows: Vec<JsonAdvice<'_>> = maps
            .iter()
            .map(|a| JsonAdvice {
                advice: a,
                keys_exact: count.exact,
                keys_relative_error: count.relative_error,
                dirty_records: log.map(|l| l.dirty_records),
            })
            .collect();
        let text = serde_json::to_string(&rows).map_err(|e| Failure::Runtime(e.to_string()))?;
        return writeln!(out, "{text}").map_err(failed);
    }
    let keys = if count.exact {
        format!("{} distinct keys", count.keys)
    } else {
        format!("about {} distinct keys (HyperLogLog, ±{:.1}%)", count.keys, count.relative_error * 100.0)
    };
    let key_bytes = maps.first().map_or(16, |m| m.key_bytes);
    if let Some(l) = log {
        writeln!(
            out,
            "dirty section from offset {}: {} records ({} keyed, {}), {keys} of {key_bytes} bytes on average",
            l.first_dirty_offset,
            l.dirty_records,
            l.keyed_records,
            bytes(l.dirty_bytes)
        )
        .map_err(failed)?;
    } else {
        writeln!(out, "{keys} of {key_bytes} bytes").map_err(failed)?;
    }
    writeln!(
        out,
        "dedupe buffer {} over {} thread(s): {} a thread, load factor {}\n",
        bytes(budget.total_bytes),
        budget.threads,
        bytes(budget.per_thread()),
        budget.load_factor
    )
    .map_err(failed)?;
    writeln!(
        out,
        "{:<8} {:>9} {:>13} {:>8} {:>20} {:>13}  {:>10}",
        "map", "bytes/key", "keys a pass", "passes", "buffer for 1 pass", "P(collision)", "est. time"
    )
    .map_err(failed)?;
    let mut capped = None;
    for a in maps {
        let passes = a.passes.map_or_else(|| "never".to_owned(), |p| p.to_string());
        let over_cap = a.kafka_thread_cap.filter(|&cap| a.keys > cap);
        if over_cap.is_some() {
            capped = over_cap;
        }
        let p = if a.collision_probability == 0.0 {
            "0 (exact)".to_owned()
        } else {
            format!("{:.1e}", a.collision_probability)
        };
        let external = a.map == cleaner::MapKind::External;
        let (per_key, held, one) = if external {
            ("-".to_owned(), "any".to_owned(), "any".to_owned())
        } else {
            (
                format!("{:.1}", a.bytes_per_key),
                a.capacity.to_string(),
                format!("{}{}", bytes(a.total_buffer_bytes_for_one_pass), if over_cap.is_some() { "*" } else { "" }),
            )
        };
        let time = a.estimated_seconds.map_or_else(|| "-".to_owned(), duration);
        writeln!(out, "{:<8} {per_key:>9} {held:>13} {passes:>8} {one:>20} {p:>13}  {time:>10}", a.map.name())
            .map_err(failed)?;
    }
    // When every map takes several passes in this buffer, the external pass's one is worth saying.
    let best = maps
        .iter()
        .filter(|a| a.map != cleaner::MapKind::External)
        .filter_map(|a| Some((a.passes?, a)))
        .min_by_key(|(p, _)| *p);
    let external = maps.iter().find(|a| a.map == cleaner::MapKind::External);
    if let (Some((passes, map)), Some(ext)) = (best, external)
        && passes >= 3
    {
        let times = match (map.estimated_seconds, ext.estimated_seconds) {
            (Some(m), Some(e)) => format!(" (about {} against {} for {})", duration(e), duration(m), map.map.name()),
            _ => String::new(),
        };
        writeln!(
            out,
            "\nin this buffer the best map takes {passes} passes, each re-reading the log: --map external cleans \
             it in one pass{times}, spilling about {} bytes a record to --spill-dir",
            cleaner::external::ENTRY_BYTES
        )
        .map_err(failed)?;
    }
    if let Some(cap) = capped {
        writeln!(
            out,
            "* skimpy as Kafka runs it: a cleaner thread's buffer is at most 2 GiB (log.cleaner.dedupe.buffer.size \
             / log.cleaner.threads, capped at 2^31 - 1 bytes), which holds {cap} keys: a log with more takes \
             several passes whatever the buffer (each log is cleaned by one thread)"
        )
        .map_err(failed)?;
    }
    let basis = maps.first().map_or("", |m| m.passes_basis);
    let note = match basis {
        "lower bound" => {
            "passes: a lower bound (each key's records together); give --records or --dir for a real figure"
        }
        "uniform keys" => "passes: keys taken as spread uniformly over the records",
        _ => "passes: pass 1 replayed on the log, as the cleaner would run it",
    };
    writeln!(out, "\n{note}; buffer for 1 pass: log.cleaner.dedupe.buffer.size for all threads").map_err(failed)?;
    if maps.iter().any(|a| a.estimated_seconds.is_some()) {
        writeln!(
            out,
            "est. time: what the passes cost a record on this project's reference machine (2 cores), times the \
             records; an estimate for comparing choices: measure yours with pass-bench"
        )
        .map_err(failed)?;
    }
    Ok(())
}
