//! `logcompact status --data-dir DIR`: Kafka's cleaner gauges as the last `clean` run left them, and every
//! log's dirty figures as they stand now. Reads only: every log is opened read-only (no lock, nothing
//! written), so it works beside a running `clean`.

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use cleaner::LogSettings;
use cleaner::manager::{LogState, LogStatus, ManagerStatus};
use serde::Serialize;

use crate::failure::Failure;
use crate::out::QuietPipe;
use crate::status_file::{self, StatusFile};

fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30)),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / f64::from(1u32 << 20)),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

fn state_name(s: LogState) -> &'static str {
    match s {
        LogState::Idle => "idle",
        LogState::Cleaning => "cleaning",
        LogState::Uncleanable => "UNCLEANABLE",
        LogState::NotCompacted => "not compacted",
    }
}

/// The gauges and a line per log, as text. `file` adds where the gauges come from.
pub fn table(status: &ManagerStatus, file: Option<&StatusFile>) -> String {
    let mut s = String::new();
    let g = &status.gauges;
    match file {
        Some(f) => {
            let how = if f.running { "running" } else { "ended" };
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
                "cleaner gauges ({} thread(s), {} policy, {} passes):",
                status.threads, status.policy, status.passes
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
    ] {
        let _ = writeln!(s, "  {name:<32} {value}");
    }
    let _ = writeln!(
        s,
        "\n{:<20} {:<13} {:>11} {:>9} {:>10} {:>10} {:>10} {:>6}  {:<20}  last error",
        "log", "state", "dirty ratio", "min ratio", "dirty", "clean", "other", "passes", "last clean"
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
            "{:<20} {:<13} {:>10.1}% {:>8.0}% {:>10} {:>10} {:>10} {:>6}  {:<20}  {error}",
            l.name,
            state_name(l.state),
            100.0 * l.dirty_ratio,
            100.0 * l.min_cleanable_dirty_ratio,
            size(l.dirty_bytes),
            size(l.clean_bytes),
            size(l.held_back_bytes),
            l.passes,
            last
        );
    }
    let _ = write!(
        s,
        "(dirty: bytes a pass may take now; clean: bytes already through a pass; other: the active segment and \
         segments younger than min.compaction.lag.ms)"
    );
    s
}

/// What `status --json` prints.
#[derive(Debug, Serialize)]
struct StatusOutput {
    /// The last `clean` run's status file, if any.
    status_file: Option<StatusFile>,
    /// The status with every log's figures as they stand now.
    status: ManagerStatus,
    /// Logs that could not be read, with the reason.
    unreadable: Vec<(String, String)>,
}

/// Prints the status of the data directory.
///
/// # Errors
/// [`Failure::Usage`] for a data directory that cannot be listed or holds no log, or a bad settings file.
pub fn status(data_dir: &Path, settings: &LogSettings, config_file: Option<&Path>, json: bool) -> Result<(), Failure> {
    let file = crate::clean::settings_file(config_file)?;
    let dirs = crate::clean::log_dirs(data_dir)?;
    let recorded = match status_file::read(data_dir) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("warning: the status file cannot be read ({e}); showing live figures only");
            None
        }
    };
    let now = log_core::now_ms();
    let mut logs = Vec::new();
    let mut unreadable = Vec::new();
    for (name, dir) in &dirs {
        let last = recorded.as_ref().and_then(|f| f.status.logs.iter().find(|l| &l.name == name));
        // The settings the last run used, unless a settings file is given.
        let settings = match (last, config_file) {
            (Some(l), None) => l.settings.clone(),
            _ => file.settings_for(name, settings).map_err(|e| Failure::Usage(e.to_string()))?,
        };
        let log = storage_file::FileStore::open_read_only(dir).map_err(|e| e.to_string()).and_then(|store| {
            log_core::Log::open_read_only(Arc::new(store), log_core::LogConfig::default()).map_err(|e| e.to_string())
        });
        let log = match log {
            Ok(log) => log,
            Err(why) => {
                if !why.contains("no logcompact log") {
                    unreadable.push((name.clone(), why));
                }
                continue;
            }
        };
        let d = log.dirty_section(now, settings.min_compaction_lag_ms);
        let state = match last {
            _ if !settings.cleanup_policy.compacts() => LogState::NotCompacted,
            Some(l) if recorded.as_ref().is_some_and(|f| f.running) || l.state == LogState::Uncleanable => l.state,
            _ => LogState::Idle,
        };
        logs.push(LogStatus {
            name: name.clone(),
            state,
            dirty_ratio: d.dirty_ratio(),
            dirty_bytes: d.dirty_bytes,
            clean_bytes: d.clean_bytes,
            held_back_bytes: d.too_young_bytes + d.active_bytes,
            min_cleanable_dirty_ratio: settings.min_cleanable_dirty_ratio,
            compaction_delay_ms: d.compaction_delay_ms(now, settings.max_compaction_lag_ms),
            passes: last.map_or(0, |l| l.passes),
            last_clean_ms: last.and_then(|l| l.last_clean_ms),
            last_clean_secs: last.and_then(|l| l.last_clean_secs),
            last_error: last.and_then(|l| l.last_error.clone()),
            failures: last.map_or(0, |l| l.failures),
            total_failures: last.map_or(0, |l| l.total_failures),
            retry_at_ms: last.and_then(|l| l.retry_at_ms),
            settings,
        });
    }
    if logs.is_empty() && unreadable.is_empty() {
        return Err(Failure::Usage(format!("{} holds no log in its subdirectories", data_dir.display())));
    }
    let status = ManagerStatus {
        at_ms: now,
        gauges: recorded.as_ref().map(|f| f.status.gauges.clone()).unwrap_or_default(),
        threads: recorded.as_ref().map_or(0, |f| f.status.threads),
        policy: recorded.as_ref().map_or_else(|| "-".to_owned(), |f| f.status.policy.clone()),
        passes: recorded.as_ref().map_or(0, |f| f.status.passes),
        logs,
    };
    let mut out = QuietPipe::new(std::io::stdout().lock());
    let failed = |e: std::io::Error| Failure::Runtime(format!("cannot write output: {e}"));
    if json {
        let text = serde_json::to_string(&StatusOutput { status_file: recorded, status, unreadable })
            .map_err(|e| Failure::Runtime(e.to_string()))?;
        return writeln!(out, "{text}").map_err(failed);
    }
    if recorded.is_none() {
        writeln!(out, "no `logcompact clean` has run on {} yet (no {})", data_dir.display(), status_file::STATUS_FILE)
            .map_err(failed)?;
    }
    writeln!(out, "{}", table(&status, recorded.as_ref())).map_err(failed)?;
    for (name, why) in &unreadable {
        writeln!(out, "{name}: cannot be read: {why}").map_err(failed)?;
    }
    Ok(())
}
