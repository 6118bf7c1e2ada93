//! `logcompact clean --data-dir DIR`: the cleaner manager over every log of a data directory (each
//! subdirectory a log), as a broker runs its cleaner threads.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cleaner::manager::{CleanerManager, Event, LogState, ManagerConfig, ManagerStatus, Mode, Opener};
use cleaner::{LogSettings, SystemClock};
use log_core::{Log, LogConfig};

use crate::failure::Failure;
use crate::out::QuietPipe;
use crate::settings_file::SettingsFile;
use crate::status_file::{self, StatusFile};
use crate::{backend, progress};

/// What `clean` was asked to do.
#[derive(Debug)]
pub struct CleanRequest<'a> {
    /// The data directory.
    pub data_dir: &'a Path,
    /// The manager's settings.
    pub manager: ManagerConfig,
    /// The scheduling policy's name.
    pub policy: &'a str,
    /// Every log's settings from the command line (the settings file goes over them).
    pub settings: LogSettings,
    /// The settings file.
    pub config_file: Option<&'a Path>,
    /// Until clean, or watching.
    pub mode: Mode,
    /// JSON lines instead of the human summary.
    pub json: bool,
}

/// The log directories of `data_dir`: its subdirectories, by name, hidden ones left out.
///
/// # Errors
/// [`Failure::Usage`] when `data_dir` cannot be listed.
pub fn log_dirs(data_dir: &Path) -> Result<Vec<(String, PathBuf)>, Failure> {
    let entries = std::fs::read_dir(data_dir)
        .map_err(|e| Failure::Usage(format!("cannot list the data directory {}: {e}", data_dir.display())))?;
    let mut dirs = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Failure::Runtime(format!("cannot list {}: {e}", data_dir.display())))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        dirs.push((name, entry.path()));
    }
    dirs.sort();
    Ok(dirs)
}

/// Reads the settings file, if one was given.
///
/// # Errors
/// [`Failure::Usage`] naming the file and line.
pub fn settings_file(path: Option<&Path>) -> Result<SettingsFile, Failure> {
    let Some(path) = path else { return Ok(SettingsFile::default()) };
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::Usage(format!("cannot read the settings file {}: {e}", path.display())))?;
    SettingsFile::parse(&text).map_err(|e| Failure::Usage(format!("{}: {e}", path.display())))
}

/// Opens the log in `dir` for writing; another writer's lock is an error of kind `WouldBlock`, which the
/// manager takes as "busy, try later".
fn opener(dir: PathBuf, segment_bytes: u64) -> Opener {
    Box::new(move || {
        let store = storage_file::FileStore::open_existing(&dir).map_err(|e| {
            let source = match e {
                storage_file::Error::Locked { .. } => {
                    std::io::Error::new(std::io::ErrorKind::WouldBlock, e.to_string())
                }
                other => other.into(),
            };
            log_core::Error::Io { op: "open", name: dir.display().to_string(), source }
        })?;
        Log::open(Arc::new(store), LogConfig { segment_bytes, ..LogConfig::default() })
    })
}

/// Opens the log in `dir` read-only (no lock), to measure it between passes.
fn peeker(dir: PathBuf) -> Opener {
    Box::new(move || {
        let store = storage_file::FileStore::open_read_only(&dir).map_err(|e| log_core::Error::Io {
            op: "open",
            name: dir.display().to_string(),
            source: e.into(),
        })?;
        Log::open_read_only(Arc::new(store), LogConfig::default())
    })
}

/// Adds the log in `dir` to a watching manager. Watching, a log is opened for each pass and closed after it, so
/// that its writer may append between passes; it is measured through read-only opens. A directory that holds no
/// log (yet) is [`Failure::Usage`].
fn watch_log(manager: &CleanerManager, name: &str, dir: &Path, settings: LogSettings) -> Result<(), Failure> {
    backend::open_read_only_store(dir).and_then(|s| backend::refuse_empty(dir, &*s))?;
    let open = opener(dir.to_path_buf(), settings.segment_bytes);
    manager.add_detached(name, settings, open, peeker(dir.to_path_buf())).map_err(|e| Failure::from_cleaner(name, &e))
}

/// Watching: adds the logs that appeared in the data directory since the last look (as Kafka takes on new
/// partitions). Directories that hold no log yet are looked at again next time.
fn add_new_logs(
    manager: &CleanerManager,
    data_dir: &Path,
    file: &SettingsFile,
    base: &LogSettings,
    known: &mut Vec<String>,
) {
    let Ok(dirs) = log_dirs(data_dir) else { return };
    for (name, dir) in dirs {
        if known.contains(&name) {
            continue;
        }
        let Ok(settings) = file.settings_for(&name, base) else { continue };
        match watch_log(manager, &name, &dir, settings) {
            Ok(()) => {
                eprintln!("watching a new log: {name}");
                known.push(name);
            }
            Err(Failure::Usage(_)) => {}
            Err(f) => {
                eprintln!("cannot watch {}: {f}", dir.display());
                known.push(name);
            }
        }
    }
}

/// Runs the manager over the data directory until it is clean, or until a signal when watching.
///
/// Until clean, every log is held open (and locked) for the run. Watching, a log is opened for each pass and
/// closed after it, so that a writer may hold it in between (a pass then waits for the next round).
///
/// SIGINT and SIGTERM stop it: running passes are abandoned (their logs unchanged) and the status written; a
/// second signal ends the process at once. SIGHUP makes every uncleanable log due for a retry.
///
/// # Errors
/// [`Failure::Usage`] for bad settings or a data directory without logs; [`Failure::Corruption`] when a log
/// is left uncleanable (after the others were cleaned); [`Failure::Runtime`] when an until-clean run is
/// interrupted.
pub fn clean(req: &CleanRequest<'_>) -> Result<(), Failure> {
    let file = settings_file(req.config_file)?;
    let dirs = log_dirs(req.data_dir)?;
    for name in file.logs.keys().filter(|n| !dirs.iter().any(|(d, _)| d == *n)) {
        eprintln!("warning: the settings file has a section [{name}] but {} has no such log", req.data_dir.display());
    }
    let policy = cleaner::manager::policy_by_name(req.policy).ok_or_else(|| {
        Failure::Usage(format!("unknown policy {:?} (dirtiest-first or oldest-dirty-first)", req.policy))
    })?;
    let manager = CleanerManager::with_policy(req.manager.clone(), Arc::new(SystemClock), policy)
        .map_err(|e| Failure::from_cleaner("bad cleaner settings", &e))?;
    let mut added = 0;
    for (name, dir) in &dirs {
        let settings = file.settings_for(name, &req.settings).map_err(|e| {
            Failure::Usage(format!("{}: {e}", req.config_file.map_or_else(String::new, |p| p.display().to_string())))
        })?;
        let open = opener(dir.clone(), settings.segment_bytes);
        if req.mode == Mode::Watch {
            match watch_log(&manager, name, dir, settings) {
                Ok(()) => added += 1,
                Err(Failure::Usage(why)) => eprintln!("skipping {}: {why}", dir.display()),
                Err(f) => return Err(f),
            }
            continue;
        }
        let store = match backend::open_existing_store(dir) {
            Ok(store) => store,
            Err(Failure::Usage(why)) => {
                eprintln!("skipping {}: {why}", dir.display());
                continue;
            }
            Err(f) => {
                // In use by a writer, or unreadable: uncleanable for now, retried as retries come due.
                manager
                    .add_unopened(name, settings, open, f.to_string(), false)
                    .map_err(|e| Failure::from_cleaner(name, &e))?;
                added += 1;
                continue;
            }
        };
        let config = LogConfig { segment_bytes: settings.segment_bytes, ..LogConfig::default() };
        match Log::open(store, config) {
            Ok(log) => {
                for line in backend::describe_recovery(log.recovery_report(), true) {
                    eprintln!("{name}: {line}");
                }
                manager
                    .add_log(name, Arc::new(log), settings, Some(open))
                    .map_err(|e| Failure::from_cleaner(name, &e))?
            }
            Err(e) => manager
                .add_unopened(name, settings, open, format!("cannot open the log: {e}"), e.is_corruption())
                .map_err(|e| Failure::from_cleaner(name, &e))?,
        }
        added += 1;
    }
    if added == 0 {
        return Err(Failure::Usage(format!(
            "{} holds no log: every subdirectory is a log's directory, and none was found",
            req.data_dir.display()
        )));
    }
    let initial = manager.status();
    let cleanable = initial.logs.iter().filter(|l| l.state == LogState::Idle && l.dirty_bytes > 0).count() as u64;
    let bar = progress::bar(cleanable, "passes", false);
    listen(&manager, req.json, &bar);

    let interrupted = Arc::new(AtomicBool::new(false));
    let retry = Arc::new(AtomicBool::new(false));
    register_signals(&interrupted, &retry)?;
    let started_ms = log_core::now_ms();
    let mode = if req.mode == Mode::Watch { "watch" } else { "until-clean" };
    let snapshot = |status: ManagerStatus, running: bool| StatusFile {
        version: status_file::VERSION,
        pid: std::process::id(),
        mode: mode.to_owned(),
        started_ms,
        running,
        status,
    };
    let manager = Arc::new(manager);
    let done = Arc::new(AtomicBool::new(false));
    let monitor = {
        let (manager, done, interrupted, retry) =
            (Arc::clone(&manager), Arc::clone(&done), Arc::clone(&interrupted), Arc::clone(&retry));
        let data_dir = req.data_dir.to_path_buf();
        let warned = Mutex::new(false);
        let watching = req.mode == Mode::Watch;
        let base = req.settings.clone();
        let mut known: Vec<String> = manager.status().logs.into_iter().map(|l| l.name).collect();
        std::thread::spawn(move || {
            let mut last_write = Instant::now();
            while !done.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(50));
                if interrupted.load(Ordering::SeqCst) {
                    manager.stop(true);
                    break;
                }
                if retry.swap(false, Ordering::SeqCst) {
                    let n = manager.retry_uncleanable(None);
                    eprintln!("SIGHUP: {n} uncleanable log(s) due for a retry now");
                }
                if last_write.elapsed() >= Duration::from_secs(1) {
                    last_write = Instant::now();
                    if watching {
                        add_new_logs(&manager, &data_dir, &file, &base, &mut known);
                    }
                    let file = StatusFile {
                        version: status_file::VERSION,
                        pid: std::process::id(),
                        mode: mode.to_owned(),
                        started_ms,
                        running: true,
                        status: manager.status(),
                    };
                    if let Err(e) = status_file::write(&data_dir, &file) {
                        let mut w = warned.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                        if !*w {
                            eprintln!("warning: cannot write {}: {e}", status_file::path(&data_dir).display());
                            *w = true;
                        }
                    }
                }
            }
        })
    };
    let status = run_until_settled(&manager, req.mode, &interrupted);
    done.store(true, Ordering::SeqCst);
    let _ = monitor.join();
    bar.finish_and_clear();
    if let Err(e) = status_file::write(req.data_dir, &snapshot(status.clone(), false)) {
        eprintln!("warning: cannot write {}: {e}", status_file::path(req.data_dir).display());
    }
    report(&status, req.json)?;
    let uncleanable: Vec<&str> =
        status.logs.iter().filter(|l| l.state == LogState::Uncleanable).map(|l| l.name.as_str()).collect();
    if !uncleanable.is_empty() {
        return Err(Failure::Corruption(format!(
            "{} log(s) left uncleanable: {} (the others were cleaned; `logcompact status --data-dir {}` shows why)",
            uncleanable.len(),
            uncleanable.join(", "),
            req.data_dir.display()
        )));
    }
    if interrupted.load(Ordering::SeqCst) && req.mode == Mode::UntilClean {
        return Err(Failure::Runtime("interrupted: running passes were abandoned, their logs unchanged".into()));
    }
    Ok(())
}

/// Runs the manager. In until-clean mode a log that failed and has a retry scheduled is waited for (the wait
/// ends early on a signal), so that "left uncleanable" means its retries are used up.
fn run_until_settled(manager: &CleanerManager, mode: Mode, interrupted: &AtomicBool) -> ManagerStatus {
    loop {
        let status = manager.run(mode);
        let next_retry = status.logs.iter().filter_map(|l| l.retry_at_ms).min();
        let (Mode::UntilClean, Some(at)) = (mode, next_retry) else { return status };
        if interrupted.load(Ordering::SeqCst) {
            return status;
        }
        let wait = Duration::from_millis(u64::try_from(at.saturating_sub(log_core::now_ms())).unwrap_or(0));
        let until = Instant::now() + wait;
        while Instant::now() < until && !interrupted.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20).min(until.saturating_duration_since(Instant::now())));
        }
        if interrupted.load(Ordering::SeqCst) {
            return manager.status();
        }
    }
}

/// Prints every event: the human summary of each pass (Kafka's cleaner log lines), or one JSON line.
fn listen(manager: &CleanerManager, json: bool, bar: &indicatif::ProgressBar) {
    let bar = bar.clone();
    manager.on_event(move |event| {
        if let Event::Cleaned { stats, .. } = event {
            // A partial pass leaves its log dirty: one more pass to count. The total never trails the count.
            if stats.map_full {
                bar.inc_length(1);
            }
            bar.inc(1);
            if bar.position() > bar.length().unwrap_or(0) {
                bar.set_length(bar.position());
            }
        }
        let text = if json { json_event(event) } else { human_event(event) };
        bar.suspend(|| {
            let mut out = QuietPipe::new(std::io::stdout().lock());
            let _ = writeln!(out, "{text}").and_then(|()| out.flush());
        });
    });
}

fn json_event(event: &Event) -> String {
    let value = match event {
        Event::Cleaned { thread, log, stats, passes } => {
            serde_json::json!({"event": "cleaned", "thread": thread, "log": log, "passes": passes, "stats": stats})
        }
        Event::Failed { thread, log, error, corruption, failures, retry_at_ms } => serde_json::json!({
            "event": "failed", "thread": thread, "log": log, "error": error, "corruption": corruption,
            "failures": failures, "retry_at_ms": retry_at_ms,
        }),
        Event::Rolled { log } => serde_json::json!({"event": "rolled", "log": log}),
    };
    value.to_string()
}

fn human_event(event: &Event) -> String {
    match event {
        Event::Cleaned { thread, log, stats, passes } => cleaner::summary::summary(Some(*thread), log, stats, *passes),
        Event::Failed { thread, log, error, failures, retry_at_ms, .. } => {
            let next = retry_at_ms.map_or_else(
                || "no retry left: SIGHUP or a new run retries it".to_owned(),
                |at| format!("retried after {}", status_file::utc(at)),
            );
            format!("cleaner {thread}: log {log} is uncleanable (failure {failures}, {next}): {error}")
        }
        Event::Rolled { log } => {
            format!("rolled the active segment of {log}: its first record is older than max.compaction.lag.ms")
        }
    }
}

/// The final word: the gauges and a line per log, or the status as JSON.
fn report(status: &ManagerStatus, json: bool) -> Result<(), Failure> {
    let mut out = QuietPipe::new(std::io::stdout().lock());
    let failed = |e: std::io::Error| Failure::Runtime(format!("cannot write output: {e}"));
    if json {
        let text = serde_json::to_string(&serde_json::json!({"event": "finished", "status": status}))
            .map_err(|e| Failure::Runtime(e.to_string()))?;
        return writeln!(out, "{text}").map_err(failed);
    }
    writeln!(out, "{}", crate::status::table(status, None)).map_err(failed)
}

fn register_signals(interrupted: &Arc<AtomicBool>, retry: &Arc<AtomicBool>) -> Result<(), Failure> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let failed = |e: std::io::Error| Failure::Runtime(format!("cannot install signal handlers: {e}"));
    for sig in [SIGINT, SIGTERM] {
        // A second signal, once the first has set the flag, ends the process at once.
        signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(interrupted)).map_err(failed)?;
        signal_hook::flag::register(sig, Arc::clone(interrupted)).map_err(failed)?;
    }
    signal_hook::flag::register(SIGHUP, Arc::clone(retry)).map_err(failed)?;
    Ok(())
}
