//! `logcompact status --data-dir DIR`: Kafka's cleaner gauges as the last `clean` run left them, and every
//! log's dirty figures as they stand now. Reads only: every log is opened read-only (no lock, nothing
//! written), so it works beside a running `clean`.

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use cleaner::manager::{LogState, ManagerStatus};
use logcompact::Format;
use logcompact::datadir::{
    self,
    settings::{Layers, Resolved},
    status_file::{self, StatusFile},
};

use log_core::human::bytes;

use crate::args::{BrokerArgs, FormatArg, LogSettingsArgs, tell_broker_notice};
use crate::failure::Failure;
use crate::out::QuietPipe;

/// `status`'s arguments.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The data directory.
    #[arg(long, value_name = "DIR")]
    data_dir: PathBuf,
    /// The logs' format (a Kafka log directory: every `<topic>-<partition>` subdirectory a partition).
    #[arg(long, value_enum, default_value_t = FormatArg::Native)]
    format: FormatArg,
    #[command(flatten)]
    settings: LogSettingsArgs,
    /// A settings file as `clean` takes it.
    ///
    /// Without it, and without flags, a log takes the settings the last `clean` run saved in the data directory.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    broker: BrokerArgs,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `status`: the settings resolved as `clean` resolves them, then the report.
///
/// # Errors
/// As [`status`].
pub fn run(a: &StatusArgs) -> Result<(), Failure> {
    crate::mistakes::data_dir(&a.data_dir, a.format.into(), "status", "analyze")?;
    let layers = datadir::layers(
        &a.data_dir,
        a.format.into(),
        a.config.as_deref(),
        &a.settings.flags(),
        &a.broker.source(a.format.into())?,
    )
    .map_err(|e| Failure::from_data_dir(&e))?;
    tell_broker_notice(&layers);
    status(&a.data_dir, a.format.into(), &layers, a.json)
}

/// The width of the log column: the longest name, at least 20.
fn name_width(logs: &[cleaner::manager::LogStatus]) -> usize {
    logs.iter().map(|l| l.name.chars().count()).max().unwrap_or(0).max(20)
}

fn state_name(s: LogState) -> &'static str {
    match s {
        LogState::Idle => "idle",
        LogState::Cleaning => "cleaning",
        LogState::Uncleanable => "UNCLEANABLE",
        LogState::NotCompacted => "not compacted",
    }
}

/// The gauges and a line per log, as text. `file` adds where the gauges come from, and whether that run goes on.
pub fn table(status: &ManagerStatus, file: Option<(&StatusFile, bool)>) -> String {
    let mut s = String::new();
    let g = &status.gauges;
    match file {
        Some((f, _)) if f.mode == "compact" => {
            let _ = writeln!(
                s,
                "cleaner gauges (none: no `logcompact clean` has run here; the passes counted below are \
                 `logcompact compact`'s):"
            );
        }
        Some((f, alive)) => {
            let how = match (f.running, alive) {
                (_, true) => "running",
                (true, false) => "died (its process is gone)",
                (false, false) => "ended",
            };
            let _ = writeln!(
                s,
                "cleaner gauges (`logcompact clean` pid {}, {} mode, {how}; written {}):",
                f.pid,
                f.mode,
                status_file::utc(f.status.at_ms)
            );
        }
        None => {
            let _ = writeln!(
                s,
                "cleaner gauges ({}, {} policy, {}):",
                log_core::human::count(status.threads as u64, "thread", "threads"),
                status.policy,
                log_core::human::count(status.passes, "pass", "passes")
            );
        }
    }
    for (name, value) in [
        ("max-buffer-utilization-percent", format!("{:.1}", g.max_buffer_utilization_percent)),
        ("cleaner-recopy-percent", format!("{:.1}", g.cleaner_recopy_percent)),
        ("max-clean-time-secs", format!("{:.2}", g.max_clean_time_secs)),
        ("max-compaction-delay-secs", format!("{:.1}", g.max_compaction_delay_secs)),
        ("uncleanable-partitions-count", g.uncleanable_partitions_count.to_string()),
        ("uncleanable-bytes", g.uncleanable_bytes.to_string()),
        ("DeadThreadCount", g.dead_thread_count.to_string()),
        ("time-since-last-run-ms", g.time_since_last_run_ms.to_string()),
        ("max-dirty-percent", format!("{:.1}", g.max_dirty_percent)),
    ] {
        let _ = writeln!(s, "  {name:<32} {value}");
    }
    let _ = writeln!(
        s,
        "\n{:<w$} {:<13} {:>11} {:>9} {:>10} {:>10} {:>10} {:>6}  {:<20}  last error",
        "log",
        "state",
        "dirty ratio",
        "min ratio",
        "dirty",
        "clean",
        "other",
        "passes",
        "last clean",
        w = name_width(&status.logs)
    );
    for l in &status.logs {
        let last = l.last_clean_ms.map_or_else(|| "-".to_owned(), status_file::utc);
        let error = match (&l.last_error, l.retry_at_ms) {
            (Some(e), Some(at)) => format!("{e} (failure {}, retry after {})", l.failures, status_file::utc(at)),
            (Some(e), None) => format!("{e} (failure {}, no retry left)", l.failures),
            (None, _) => "-".to_owned(),
        };
        let _ = writeln!(
            s,
            "{:<w$} {:<13} {:>10.1}% {:>8.0}% {:>10} {:>10} {:>10} {:>6}  {:<20}  {error}",
            l.name,
            state_name(l.state),
            100.0 * l.dirty_ratio,
            100.0 * l.min_cleanable_dirty_ratio,
            bytes(l.dirty_bytes),
            bytes(l.clean_bytes),
            bytes(l.held_back_bytes),
            l.passes,
            last,
            w = name_width(&status.logs)
        );
    }
    let _ = write!(
        s,
        "(dirty: bytes a pass may take now; clean: bytes already through a pass; other: the active segment and \
         segments younger than min.compaction.lag.ms)"
    );
    s
}

/// Prints the status of the data directory.
///
/// # Errors
/// [`Failure::Usage`] for a data directory that cannot be listed or holds no log, or bad settings.
fn status(data_dir: &Path, format: Format, layers: &Layers, json: bool) -> Result<(), Failure> {
    let report = datadir::status(data_dir, format, layers).map_err(|e| Failure::from_data_dir(&e))?;
    for w in &report.warnings {
        crate::out::diag!("warning: {w}");
    }
    let mut out = QuietPipe::new(std::io::stdout().lock());
    let failed = |e: std::io::Error| Failure::Runtime(format!("cannot write output: {e}"));
    if json {
        let text = serde_json::to_string(&report).map_err(|e| Failure::Runtime(e.to_string()))?;
        return writeln!(out, "{text}").map_err(failed);
    }
    let recorded = report.status_file.as_ref().map(|f| (f, report.running));
    if recorded.is_none() {
        writeln!(out, "no `logcompact clean` has run on {} yet (no {})", data_dir.display(), status_file::STATUS_FILE)
            .map_err(failed)?;
    }
    writeln!(out, "{}", table(&report.status, recorded)).map_err(failed)?;
    for (name, why) in &report.unreadable {
        writeln!(out, "{name}: cannot be read: {why}").map_err(failed)?;
    }
    for (name, why) in &report.left_alone {
        writeln!(out, "{name}: left alone: {why}").map_err(failed)?;
    }
    for (name, why) in &report.ignored {
        writeln!(out, "{name}: {why}").map_err(failed)?;
    }
    writeln!(out, "{}", sources(&report)).map_err(failed)
}

/// Where each log's settings came from, the settings a default left out.
fn sources(report: &datadir::StatusReport) -> String {
    let mut s = String::from("\nsettings (where each came from):");
    for l in &report.status.logs {
        let Some(from) = report.sources.get(&l.name) else { continue };
        let resolved = Resolved { settings: l.settings.clone(), sources: from.clone() };
        let _ = write!(s, "\n  {:<w$} {}", l.name, resolved.given(), w = name_width(&report.status.logs));
    }
    s
}
