//! The data-directory service: Kafka's cleaner manager over every log of a directory, as a broker runs its
//! cleaner threads. A native data directory holds a log in each subdirectory; a Kafka log directory (of a
//! stopped broker) holds a partition in each `<topic>-<partition>` subdirectory.
//!
//! [`clean`] finds the logs, decides which are compacted and with which settings ([`settings`]), takes the
//! directory (a second run on it is refused: for a Kafka log directory this is the broker's own lock, so no
//! broker starts while it runs), opens the logs, runs the manager until nothing is cleanable or until asked to
//! stop, keeps `cleaner-status.json` up to date ([`status_file`]), and saves its settings for later runs.
//! [`status`] reads what the last run left and measures every log read-only.
//!
//! # Example
//! ```no_run
//! use std::sync::Arc;
//! use std::sync::atomic::AtomicBool;
//! use logcompact::datadir::{CleanRequest, Hooks, clean, settings::Layers};
//! use logcompact::Format;
//!
//! let req = CleanRequest {
//!     data_dir: "/var/lib/kafka/data".into(),
//!     format: Format::Kafka,
//!     manager: cleaner::manager::ManagerConfig::default(),
//!     policy: "dirtiest-first".into(),
//!     layers: Layers { format: Format::Kafka, ..Layers::default() },
//!     mode: cleaner::manager::Mode::UntilClean,
//!     now_ms: None,
//!     clock_trust: logcompact::ClockTrust::Checked,
//!     replica_floors: None,
//! };
//! let done = clean(&req, &Hooks::quiet())?;
//! println!("{} passes", done.status.passes);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod analyze;
pub mod settings;
pub mod status_file;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cleaner::manager::{CleanerManager, Event, LogState, LogStatus, ManagerConfig, ManagerStatus, Mode, Opener};
use cleaner::{LogSettings, SystemClock};
use log_core::{Format, LogConfig};

use crate::dir::{OpenError, open_read_only, open_writable};
use settings::{Layers, Resolved, SettingsError};
use status_file::StatusFile;

/// Why the service could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataDirError {
    /// The data directory cannot be listed (or opened to be locked).
    #[error("cannot read the data directory {}: {source}", dir.display())]
    Unreadable {
        /// The directory.
        dir: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
    /// The data directory holds no log to work on.
    #[error("{} holds no log to {what}{}", dir.display(), if *left_alone > 0 { format!(": {left_alone} partition(s) left alone, their topics' cleanup.policy taken as delete (only for topics the broker compacts, name them in a settings section with cleanup.policy = compact)") } else { String::new() })]
    NoLogs {
        /// The directory.
        dir: PathBuf,
        /// What was to be done (`compact`, `show`).
        what: &'static str,
        /// Kafka partitions found but left alone, their topics named in no section.
        left_alone: usize,
        /// The format asked for.
        format: Format,
    },
    /// Another process holds the directory (a broker, or another `clean`).
    #[error("{} is in use: {holder}", dir.display())]
    Busy {
        /// The directory.
        dir: PathBuf,
        /// Who holds it, as far as known.
        holder: String,
        /// The lock held is a Kafka log directory's `.lock`: a broker may hold it.
        broker_lock: bool,
    },
    /// No such scheduling policy.
    #[error("unknown policy {name:?} (dirtiest-first or oldest-dirty-first)")]
    UnknownPolicy {
        /// The name given.
        name: String,
    },
    /// The settings are wrong.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// The broker's metadata log or settings file named cannot be read.
    #[error(transparent)]
    Broker(#[from] kafka_records::kraft::BrokerSettingsError),
    /// The broker's metadata log cannot be chosen.
    #[error(transparent)]
    Metadata(#[from] kafka_records::kraft::LocateError),
    /// A partition directory that belongs to no topic the broker knows: left alone.
    #[error("{}: {stray}", dir.display())]
    Stray {
        /// The directory.
        dir: PathBuf,
        /// How it is stray.
        stray: kafka_records::kraft::Stray,
    },
    /// The manager's settings are wrong.
    #[error(transparent)]
    Cleaner(#[from] cleaner::Error),
    /// The clock would stamp delete horizons in the past of a log's records: nothing is cleaned.
    #[error("{log}: {source}")]
    Clock {
        /// The log.
        log: String,
        /// Why.
        #[source]
        source: crate::clock::ClockError,
    },
}

/// A log of a data directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Its directory's name (the log's name in reports).
    pub name: String,
    /// Its directory.
    pub dir: PathBuf,
    /// What its settings are looked up by: the directory's name (native), or its topic (Kafka).
    pub settings_name: String,
}

/// The logs of a data directory, and what was passed over.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Discovery {
    /// The logs, by name.
    pub logs: Vec<Found>,
    /// Directories passed over, with why (a Kafka directory that is no partition: `-delete`, `-future`...).
    pub ignored: Vec<(String, String)>,
}

/// How a data directory's listing names the KRaft metadata log, which no command writes
/// ([`storage_file::refuse_metadata_log`]).
pub const NEVER_CLEANED: &str = "the cluster's metadata log: never cleaned (the broker's raft layer owns it)";

/// The logs of `data_dir`: its subdirectories (hidden ones left out), and for a Kafka log directory only
/// those named `<topic>-<partition>`. A KRaft metadata log is never one of them (it is listed as ignored, in
/// either format).
///
/// # Errors
/// [`DataDirError::Unreadable`] when `data_dir` cannot be listed.
pub fn discover(data_dir: &Path, format: Format) -> Result<Discovery, DataDirError> {
    let unreadable = |source| DataDirError::Unreadable { dir: data_dir.to_path_buf(), source };
    let entries = std::fs::read_dir(data_dir).map_err(unreadable)?;
    let mut found = Discovery::default();
    for entry in entries {
        let entry = entry.map_err(unreadable)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        if entry.file_type().is_ok_and(|t| t.is_symlink()) {
            if entry.path().is_dir() {
                let to = std::fs::read_link(entry.path()).map(|p| p.display().to_string()).unwrap_or_default();
                found.ignored.push((
                    name,
                    format!(
                        "a symbolic link to {to}: a log is taken only where it lies, under its own directory's lock \
                         (give that directory)"
                    ),
                ));
            }
            continue;
        }
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        if let Some(sign) = storage_file::metadata_log_sign(&entry.path()) {
            found.ignored.push((name, format!("{NEVER_CLEANED} ({sign})")));
            continue;
        }
        let settings_name = match format {
            Format::Native => name.clone(),
            Format::Kafka => match log_core::kafka::topic_partition(&name) {
                Some((topic, _)) => topic.to_owned(),
                None => {
                    found.ignored.push((name, "not a partition directory (<topic>-<partition>)".into()));
                    continue;
                }
            },
        };
        found.logs.push(Found { name, dir: entry.path(), settings_name });
    }
    found.logs.sort_by(|a, b| a.name.cmp(&b.name));
    found.ignored.sort();
    Ok(found)
}

/// What [`clean`] is asked to do.
#[derive(Debug, Clone)]
pub struct CleanRequest {
    /// The data directory.
    pub data_dir: PathBuf,
    /// Its format.
    pub format: Format,
    /// The manager's settings.
    pub manager: ManagerConfig,
    /// The scheduling policy's name.
    pub policy: String,
    /// The settings' layers.
    pub layers: Layers,
    /// Until clean, or watching.
    pub mode: Mode,
    /// "Now" for every pass, fixed (until clean only: no time passes, so no retry comes due and a log whose
    /// pass failed is left uncleanable at once); `None` for the system clock.
    pub now_ms: Option<i64>,
    /// Whether the clock is checked against each log's newest record before any pass ([`crate::ClockTrust`]).
    pub clock_trust: crate::clock::ClockTrust,
    /// Replica-safe removal of tombstones and markers (a Kafka log directory): each partition's floor, as the
    /// other replicas' audits give it (`crate::audit::ReplicaFloors::all`); a partition not named keeps every
    /// tombstone and marker. `None`: removal timed by the horizon alone, as Kafka's cleaner does.
    pub replica_floors: Option<BTreeMap<String, u64>>,
}

/// How [`clean`] reports and is stopped.
pub struct Hooks {
    /// Once the logs are taken on, with the manager's status then (what is to be cleaned).
    pub on_start: Arc<dyn Fn(&ManagerStatus) + Send + Sync>,
    /// Every event of the manager (a pass done or failed, a roll).
    pub on_event: Arc<dyn Fn(&Event) + Send + Sync>,
    /// A line worth telling an operator (a log skipped, a new log watched, a warning).
    pub on_notice: Arc<dyn Fn(&str) + Send + Sync>,
    /// The manager's status, about once a second while it runs and once at the end (for metrics).
    pub on_status: Arc<dyn Fn(&ManagerStatus) + Send + Sync>,
    /// Set to stop: running passes are abandoned, their logs unchanged.
    pub stop: Arc<AtomicBool>,
    /// Set to make every uncleanable log due for a retry now (cleared when taken).
    pub retry: Arc<AtomicBool>,
    /// Where every pass counts the bytes and records it reads (a [`log_core::progress::Meter::running_total`]:
    /// the threads' passes run side by side).
    pub meter: Option<Arc<log_core::progress::Meter>>,
}

impl Hooks {
    /// Hooks that report nothing and are never set.
    pub fn quiet() -> Hooks {
        Hooks {
            on_start: Arc::new(|_| {}),
            on_event: Arc::new(|_| {}),
            on_notice: Arc::new(|_| {}),
            on_status: Arc::new(|_| {}),
            stop: Arc::new(AtomicBool::new(false)),
            retry: Arc::new(AtomicBool::new(false)),
            meter: None,
        }
    }
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks").finish_non_exhaustive()
    }
}

/// What a run ended with.
#[derive(Debug, Clone)]
pub struct Finished {
    /// The manager's status at the end.
    pub status: ManagerStatus,
    /// The run was stopped (by [`Hooks::stop`]) before it was done.
    pub interrupted: bool,
    /// Logs left alone (not compacted), with why.
    pub left_alone: Vec<(String, String)>,
    /// Logs skipped because their topic's settings are ones Kafka refuses (a topic config that does not
    /// parse or is out of range), with the setting and the value: the others were cleaned.
    pub skipped: Vec<(String, String)>,
}

impl Finished {
    /// The names of the logs left uncleanable.
    pub fn uncleanable(&self) -> Vec<&str> {
        self.status.logs.iter().filter(|l| l.state == LogState::Uncleanable).map(|l| l.name.as_str()).collect()
    }

    /// Each log left uncleanable with its last error.
    pub fn uncleanable_with_errors(&self) -> Vec<(&str, &str)> {
        self.status
            .logs
            .iter()
            .filter(|l| l.state == LogState::Uncleanable)
            .map(|l| (l.name.as_str(), l.last_error.as_deref().unwrap_or("no error recorded")))
            .collect()
    }

    /// True when a log was left uncleanable by damage to its data (else by I/O, a full disk, a busy log).
    pub fn uncleanable_by_corruption(&self) -> bool {
        self.status.logs.iter().any(|l| l.state == LogState::Uncleanable && l.last_error_is_corruption)
    }
}

/// The hold of one run on its data directory.
enum DirLock {
    /// A Kafka log directory: the broker's lock.
    Broker(#[allow(dead_code)] Arc<storage_file::LogDirLock>),
    /// A native data directory: an exclusive `flock` on the directory.
    Flock(#[allow(dead_code)] File),
}

/// Takes `data_dir` for one run, or says who holds it.
fn take(data_dir: &Path, format: Format) -> Result<DirLock, DataDirError> {
    let busy = |holder: String| DataDirError::Busy {
        dir: data_dir.to_path_buf(),
        holder,
        broker_lock: format == Format::Kafka,
    };
    match format {
        Format::Kafka => match storage_file::lock_log_dir(data_dir) {
            Ok(lock) => Ok(DirLock::Broker(lock)),
            Err(e @ storage_file::Error::BrokerLocked { .. }) => Err(busy(e.to_string())),
            Err(e) => Err(DataDirError::Unreadable { dir: data_dir.to_path_buf(), source: e.into() }),
        },
        Format::Native => {
            let unreadable = |source| DataDirError::Unreadable { dir: data_dir.to_path_buf(), source };
            let dir = File::open(data_dir).map_err(unreadable)?;
            match dir.try_lock() {
                Ok(()) => Ok(DirLock::Flock(dir)),
                Err(std::fs::TryLockError::WouldBlock) => Err(busy("another `logcompact clean` runs on it".into())),
                Err(std::fs::TryLockError::Error(e)) => Err(unreadable(e)),
            }
        }
    }
}

/// An open error as the manager takes it: another process's lock is "busy, try later"
/// ([`cleaner::Error::Busy`]), the log's own error stays itself, anything else cannot be opened.
fn as_manager_error(e: OpenError) -> cleaner::Error {
    if e.is_busy() {
        return cleaner::Error::Busy { holder: e.to_string() };
    }
    match e {
        OpenError::Log { source, .. } => cleaner::Error::Log(source),
        other => cleaner::Error::Unopenable { source: Box::new(other) },
    }
}

/// Opens the log in `dir` for writing.
fn opener(dir: PathBuf, format: Format, config: LogConfig) -> Opener {
    Box::new(move || open_writable(&dir, format, config.clone()).map(|o| o.log).map_err(as_manager_error))
}

/// Opens the log in `dir` read-only (no lock), to measure it between passes.
fn peeker(dir: PathBuf, format: Format) -> Opener {
    Box::new(move || open_read_only(&dir, format).map(|o| o.log).map_err(as_manager_error))
}

/// The run's view of which logs it has.
struct Known {
    names: Vec<String>,
}

/// Adds the log `found` to the manager; `Ok(false)` when it is left alone (a Kafka topic nobody named, a
/// directory that holds no log yet), with why in `left_alone`.
fn add(
    manager: &CleanerManager,
    req: &CleanRequest,
    found: &Found,
    left_alone: &mut Vec<(String, String)>,
    sources: &mut BTreeMap<String, BTreeMap<String, String>>,
    notice: &dyn Fn(&str),
) -> Result<bool, DataDirError> {
    if let Some(stray) = req.layers.stray(&found.dir, &found.settings_name) {
        left_alone.push((found.name.clone(), stray.to_string()));
        return Ok(false);
    }
    let Some(Resolved { mut settings, sources: from }) = req.layers.resolve(&found.settings_name)? else {
        left_alone.push((found.name.clone(), req.layers.why_left_alone(&found.settings_name)));
        return Ok(false);
    };
    if let Some(floors) = &req.replica_floors {
        let floor = floors.get(&found.name).copied().unwrap_or(0);
        if floor == 0 {
            notice(&format!(
                "{}: some replica has no audit holding it, or has not cleaned: every tombstone and marker stays",
                found.name
            ));
        }
        settings.removal_floor = Some(floor);
    }
    let open = opener(found.dir.clone(), req.format, settings.log_config());
    if req.mode == Mode::Watch {
        // Watching, a log is opened for each pass and closed after it; it is measured read-only.
        if let Err(e @ OpenError::NotALog { .. }) = open_read_only(&found.dir, req.format) {
            notice(&format!("skipping {}: {e}", found.dir.display()));
            return Ok(false);
        }
        manager.add_detached(&found.name, settings, open, peeker(found.dir.clone(), req.format))?;
        sources.insert(found.name.clone(), from);
        return Ok(true);
    }
    match open_writable(&found.dir, req.format, settings.log_config()) {
        Ok(opened) => {
            if req.clock_trust == crate::clock::ClockTrust::Checked {
                let now = req.now_ms.unwrap_or_else(log_core::now_ms);
                crate::clock::check_clock_for_log(now, &opened.log)
                    .map_err(|source| DataDirError::Clock { log: found.name.clone(), source })?;
            }
            for line in crate::describe_recovery(opened.log.recovery_report(), true) {
                notice(&format!("{}: {line}", found.name));
            }
            manager.add_log(&found.name, Arc::new(opened.log), settings, Some(open))?;
        }
        Err(e @ OpenError::NotALog { .. }) => {
            notice(&format!("skipping {}: {e}", found.dir.display()));
            return Ok(false);
        }
        Err(e) => {
            // In use, damaged or unreadable: uncleanable for now, retried as retries come due.
            manager.add_unopened(&found.name, settings, open, as_manager_error(e))?;
        }
    }
    sources.insert(found.name.clone(), from);
    Ok(true)
}

/// Runs the manager over `req.data_dir` until it is clean, or until [`Hooks::stop`] when watching.
///
/// Until clean, every log is held open (and locked) for the run, and a log whose pass failed and has a retry
/// scheduled is waited for, so that "left uncleanable" means its retries are used up. Watching, a log is opened
/// for each pass and closed after it, so that a writer may hold it in between, and new logs are taken on as
/// they appear.
///
/// # Errors
/// [`DataDirError::Busy`] when another process holds the directory; [`DataDirError::NoLogs`] for a directory
/// without logs; [`DataDirError::Settings`] for bad settings; [`DataDirError::Unreadable`].
pub fn clean(req: &CleanRequest, hooks: &Hooks) -> Result<Finished, DataDirError> {
    let found = discover(&req.data_dir, req.format)?;
    let _lock = take(&req.data_dir, req.format)?;
    let notice = |s: &str| (hooks.on_notice)(s);
    let names: Vec<String> = found.logs.iter().map(|f| f.settings_name.clone()).collect();
    for name in req.layers.unknown_sections(&names) {
        let partition = found.logs.iter().find(|f| &f.name == name && f.settings_name != f.name);
        match partition {
            Some(f) => notice(&format!(
                "warning: the settings have a section [{name}], but sections name topics: [{}] applies to every {}-N",
                f.settings_name, f.settings_name
            )),
            None => notice(&format!(
                "warning: the settings have a section [{name}] but {} has no such log",
                req.data_dir.display()
            )),
        }
    }
    for (name, why) in &found.ignored {
        notice(&format!("ignoring {name}: {why}"));
    }
    let policy = cleaner::manager::policy_by_name(&req.policy)
        .ok_or_else(|| DataDirError::UnknownPolicy { name: req.policy.clone() })?;
    let clock: Arc<dyn cleaner::Clock> = match req.now_ms {
        Some(ms) => Arc::new(cleaner::ManualClock::new(ms)),
        None => Arc::new(SystemClock),
    };
    let manager = CleanerManager::with_policy(req.manager.clone(), clock, policy)?;
    if let Some(meter) = &hooks.meter {
        manager.report_to(meter);
    }
    let events = Arc::clone(&hooks.on_event);
    manager.on_event(move |e| events(e));
    let mut left_alone = Vec::new();
    let mut skipped = Vec::new();
    let mut sources = BTreeMap::new();
    let mut known = Known { names: Vec::new() };
    for f in &found.logs {
        match add(&manager, req, f, &mut left_alone, &mut sources, &notice) {
            Ok(true) => known.names.push(f.name.clone()),
            Ok(false) => {}
            // One topic's settings that Kafka would refuse leave its partitions alone, not the directory.
            Err(DataDirError::Settings(e)) => skipped.push((f.name.clone(), e.to_string())),
            Err(e) => return Err(e),
        }
    }
    if known.names.is_empty() && req.mode == Mode::UntilClean && skipped.is_empty() {
        return Err(DataDirError::NoLogs {
            dir: req.data_dir.clone(),
            what: "compact",
            left_alone: left_alone.len(),
            format: req.format,
        });
    }
    // Settings given once hold for later runs until replaced.
    let save = req.layers.to_save();
    if save != req.layers.saved
        && let Err(e) = save.write(&req.data_dir)
    {
        notice(&format!("warning: cannot save the settings in {}: {e}", req.data_dir.display()));
    }
    let first = manager.status();
    (hooks.on_start)(&first);
    (hooks.on_status)(&first);
    let started_ms = log_core::now_ms();
    let mode = if req.mode == Mode::Watch { "watch" } else { "until-clean" };
    let snapshot = Snapshot { sources: sources.clone(), format: req.format, started_ms, mode };
    let manager = Arc::new(manager);
    let done = Arc::new(AtomicBool::new(false));
    let added_sources: Arc<Mutex<BTreeMap<String, BTreeMap<String, String>>>> = Arc::new(Mutex::new(BTreeMap::new()));
    let monitor = {
        let (manager, done) = (Arc::clone(&manager), Arc::clone(&done));
        let (stop, retry, notify) = (Arc::clone(&hooks.stop), Arc::clone(&hooks.retry), Arc::clone(&hooks.on_notice));
        let on_status = Arc::clone(&hooks.on_status);
        let req = req.clone();
        let added_sources = Arc::clone(&added_sources);
        let snapshot = snapshot.clone();
        let mut known = known;
        std::thread::spawn(move || {
            let warned = AtomicBool::new(false);
            let mut last_write = Instant::now();
            while !done.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(50));
                if stop.load(Ordering::SeqCst) {
                    manager.stop(true);
                    break;
                }
                if retry.swap(false, Ordering::SeqCst) {
                    let n = manager.retry_uncleanable(None);
                    notify(&format!("{n} uncleanable log(s) due for a retry now"));
                }
                if last_write.elapsed() < Duration::from_secs(1) {
                    continue;
                }
                last_write = Instant::now();
                if req.mode == Mode::Watch {
                    watch_new_logs(&manager, &req, &mut known, &added_sources, &*notify);
                }
                let extra = added_sources.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
                let now = manager.status();
                on_status(&now);
                if let Err(e) = status_file::write(&req.data_dir, &snapshot.at(now, true, &extra))
                    && !warned.swap(true, Ordering::SeqCst)
                {
                    notify(&format!("warning: cannot write {}: {e}", status_file::path(&req.data_dir).display()));
                }
            }
        })
    };
    let status =
        if req.now_ms.is_some() { manager.run(req.mode) } else { run_until_settled(&manager, req.mode, &hooks.stop) };
    done.store(true, Ordering::SeqCst);
    let _ = monitor.join();
    (hooks.on_status)(&status);
    let extra = added_sources.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    if let Err(e) = status_file::write(&req.data_dir, &snapshot.at(status.clone(), false, &extra)) {
        notice(&format!("warning: cannot write {}: {e}", status_file::path(&req.data_dir).display()));
    }
    let mut status = status;
    if let Ok(Some(recorded)) = status_file::read(&req.data_dir) {
        with_history(&mut status, &recorded);
    }
    Ok(Finished { status, interrupted: hooks.stop.load(Ordering::SeqCst), left_alone, skipped })
}

/// Gives each log of a run's final `status` its history as `status` shows it from `recorded` (the status file
/// the run just wrote): the passes of earlier runs and of `compact` added to this run's, and the later of its
/// last clean and its last compaction, so that a run with nothing to do and `status` a moment later agree.
fn with_history(status: &mut ManagerStatus, recorded: &status_file::StatusFile) {
    for log in &mut status.logs {
        log.passes += recorded.passes_before.get(&log.name).copied().unwrap_or(0);
        let cleaned = recorded
            .status
            .logs
            .iter()
            .find(|l| l.name == log.name)
            .and_then(|l| Some(status_file::LastPass { ended_ms: l.last_clean_ms?, secs: l.last_clean_secs? }));
        let compacted = recorded.last_compactions.get(&log.name).copied();
        let own =
            log.last_clean_ms.zip(log.last_clean_secs).map(|(ended_ms, secs)| status_file::LastPass { ended_ms, secs });
        if let Some(last) = own.into_iter().chain(cleaned).chain(compacted).max_by_key(|p| p.ended_ms) {
            log.last_clean_ms = Some(last.ended_ms);
            log.last_clean_secs = Some(last.secs);
        }
    }
}

/// What a status file is made of besides the manager's status.
#[derive(Clone)]
struct Snapshot {
    sources: BTreeMap<String, BTreeMap<String, String>>,
    format: Format,
    started_ms: i64,
    mode: &'static str,
}

impl Snapshot {
    /// The status file for `status`, with the settings' sources of the logs added since the start.
    fn at(
        &self,
        status: ManagerStatus,
        running: bool,
        extra: &BTreeMap<String, BTreeMap<String, String>>,
    ) -> StatusFile {
        let mut sources = self.sources.clone();
        sources.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
        StatusFile {
            version: status_file::VERSION,
            pid: std::process::id(),
            pid_start: status_file::start_time(std::process::id()),
            mode: self.mode.to_owned(),
            format: self.format,
            started_ms: self.started_ms,
            running,
            status,
            sources,
            // Filled from the file this one replaces (status_file::write).
            passes_before: BTreeMap::new(),
            last_compactions: BTreeMap::new(),
        }
    }
}

/// Watching: adds the logs that appeared in the data directory since the last look (as a broker takes on new
/// partitions). Directories that hold no log yet are looked at again next time.
fn watch_new_logs(
    manager: &CleanerManager,
    req: &CleanRequest,
    known: &mut Known,
    added: &Mutex<BTreeMap<String, BTreeMap<String, String>>>,
    notify: &dyn Fn(&str),
) {
    let Ok(found) = discover(&req.data_dir, req.format) else { return };
    let new: Vec<&Found> = found.logs.iter().filter(|f| !known.names.contains(&f.name)).collect();
    for f in new {
        let mut left = Vec::new();
        let mut sources = BTreeMap::new();
        match add(manager, req, f, &mut left, &mut sources, &|_| {}) {
            Ok(true) => {
                notify(&format!("watching a new log: {}", f.name));
                known.names.push(f.name.clone());
                added.lock().unwrap_or_else(std::sync::PoisonError::into_inner).extend(sources);
            }
            Ok(false) if !left.is_empty() => known.names.push(f.name.clone()),
            Ok(false) => {}
            Err(e) => {
                notify(&format!("cannot watch {}: {e}", f.dir.display()));
                known.names.push(f.name.clone());
            }
        }
    }
}

/// Runs the manager. In until-clean mode a log that failed and has a retry scheduled is waited for (the wait
/// ends early on a stop), so that "left uncleanable" means its retries are used up.
fn run_until_settled(manager: &CleanerManager, mode: Mode, stop: &AtomicBool) -> ManagerStatus {
    loop {
        let status = manager.run(mode);
        let next_retry = status.logs.iter().filter_map(|l| l.retry_at_ms).min();
        let (Mode::UntilClean, Some(at)) = (mode, next_retry) else { return status };
        if stop.load(Ordering::SeqCst) {
            return status;
        }
        let wait = Duration::from_millis(u64::try_from(at.saturating_sub(log_core::now_ms())).unwrap_or(0));
        let until = Instant::now() + wait;
        while Instant::now() < until && !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20).min(until.saturating_duration_since(Instant::now())));
        }
        if stop.load(Ordering::SeqCst) {
            return manager.status();
        }
    }
}

/// What [`status`] found.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StatusReport {
    /// The last run's status file, if any.
    pub status_file: Option<StatusFile>,
    /// True when that run is still going (its process lives).
    pub running: bool,
    /// Every log's figures as they stand now, with the last run's gauges.
    pub status: ManagerStatus,
    /// Per log, where each setting came from.
    pub sources: BTreeMap<String, BTreeMap<String, String>>,
    /// Logs left alone (not compacted), with why.
    pub left_alone: Vec<(String, String)>,
    /// Logs that could not be read, with why.
    pub unreadable: Vec<(String, String)>,
    /// Directories that are not logs to clean (the KRaft metadata log, a partition being deleted), with why.
    pub ignored: Vec<(String, String)>,
    /// What an operator should know (a status file that does not parse).
    pub warnings: Vec<String>,
}

/// The data directory's status: the last run's gauges and every log's figures now, each log opened read-only
/// (no lock, nothing written), with the settings `layers` give it (without a settings file or flags, the ones
/// the last run saved).
///
/// # Errors
/// [`DataDirError::NoLogs`] for a directory without logs; [`DataDirError::Settings`].
pub fn status(data_dir: &Path, format: Format, layers: &Layers) -> Result<StatusReport, DataDirError> {
    let found = discover(data_dir, format)?;
    let mut warnings = Vec::new();
    let recorded = status_file::read(data_dir).unwrap_or_else(|why| {
        warnings.push(format!(
            "the status file {} cannot be read ({why}); showing live figures only",
            status_file::path(data_dir).display()
        ));
        None
    });
    let running = recorded.as_ref().is_some_and(StatusFile::writer_alive);
    let now = log_core::now_ms();
    let mut logs = Vec::new();
    let (mut unreadable, mut left_alone) = (Vec::new(), Vec::new());
    let mut sources = BTreeMap::new();
    for f in &found.logs {
        let last = recorded.as_ref().and_then(|r| r.status.logs.iter().find(|l| l.name == f.name));
        if let Some(stray) = layers.stray(&f.dir, &f.settings_name) {
            left_alone.push((f.name.clone(), stray.to_string()));
            continue;
        }
        let resolved = match layers.resolve(&f.settings_name) {
            Ok(r) => r,
            // A topic whose settings Kafka would refuse is named, not a reason to show nothing.
            Err(e) => {
                unreadable.push((f.name.clone(), format!("its topic's settings: {e}")));
                continue;
            }
        };
        let Some(resolved) = resolved else {
            left_alone.push((f.name.clone(), layers.why_left_alone(&f.settings_name)));
            continue;
        };
        let settings: LogSettings = resolved.settings;
        sources.insert(f.name.clone(), resolved.sources);
        let log = match open_read_only(&f.dir, format) {
            Ok(o) => o.log,
            Err(OpenError::NotALog { .. }) => continue,
            Err(e) => {
                unreadable.push((f.name.clone(), e.to_string()));
                continue;
            }
        };
        let d = log.dirty_section(now, settings.min_compaction_lag_ms);
        let cleaned =
            last.and_then(|l| Some(status_file::LastPass { ended_ms: l.last_clean_ms?, secs: l.last_clean_secs? }));
        let compacted = recorded.as_ref().and_then(|r| r.last_compactions.get(&f.name)).copied();
        let last_pass = cleaned.into_iter().chain(compacted).max_by_key(|p| p.ended_ms);
        let state = match last {
            _ if !settings.cleanup_policy.compacts() => LogState::NotCompacted,
            Some(l) if running || l.state == LogState::Uncleanable => l.state,
            _ => LogState::Idle,
        };
        logs.push(LogStatus {
            name: f.name.clone(),
            state,
            dirty_ratio: d.dirty_ratio(),
            dirty_bytes: d.dirty_bytes,
            clean_bytes: d.clean_bytes,
            held_back_bytes: d.too_young_bytes + d.active_bytes,
            min_cleanable_dirty_ratio: settings.min_cleanable_dirty_ratio,
            compaction_delay_ms: d.compaction_delay_ms(now, settings.max_compaction_lag_ms),
            // `clean`'s passes of this run and of earlier ones, and `compact`'s; the later of their last passes.
            passes: last.map_or(0, |l| l.passes)
                + recorded.as_ref().and_then(|r| r.passes_before.get(&f.name)).copied().unwrap_or(0),
            last_clean_ms: last_pass.map(|p| p.ended_ms),
            last_clean_secs: last_pass.map(|p| p.secs),
            last_error: last.and_then(|l| l.last_error.clone()),
            last_error_is_corruption: last.is_some_and(|l| l.last_error_is_corruption),
            failures: last.map_or(0, |l| l.failures),
            total_failures: last.map_or(0, |l| l.total_failures),
            retry_at_ms: last.and_then(|l| l.retry_at_ms),
            settings,
        });
    }
    if logs.is_empty() && unreadable.is_empty() && left_alone.is_empty() {
        return Err(DataDirError::NoLogs { dir: data_dir.to_path_buf(), what: "show", left_alone: 0, format });
    }
    let status = ManagerStatus {
        at_ms: now,
        gauges: recorded.as_ref().map(|f| f.status.gauges.clone()).unwrap_or_default(),
        threads: recorded.as_ref().map_or(0, |f| f.status.threads),
        policy: recorded.as_ref().map_or_else(|| "-".to_owned(), |f| f.status.policy.clone()),
        passes: recorded.as_ref().map_or(0, |f| f.status.passes),
        logs,
    };
    let ignored = found.ignored;
    Ok(StatusReport { status_file: recorded, running, status, sources, left_alone, unreadable, ignored, warnings })
}

/// Where a stopped Kafka broker's own settings of its topics are read from (Kafka log directories only).
#[derive(Debug, Clone, Default)]
pub struct BrokerSource {
    /// The metadata log (`__cluster_metadata-0`, or the log directory holding it); when `None`, found from the
    /// data directory ([`kafka_records::kraft::locate`]).
    pub metadata_dir: Option<PathBuf>,
    /// The broker's `server.properties`: its static settings, and where its metadata log lies.
    pub server_properties: Option<PathBuf>,
}

/// Reads the layers of settings of a run on `data_dir`: for a Kafka log directory the broker's own settings of
/// its topics (its metadata log, and `server.properties` when given), then the saved ones, the settings file
/// at `config` (if given) and `flags` (`(setting, value, flag)`, the flags given explicitly).
///
/// A metadata log found but unreadable is said in [`Layers::broker_notice`] and left out (Kafka's defaults and
/// the settings given stand); one named by `broker.metadata_dir` that cannot be read is an error.
///
/// # Errors
/// [`DataDirError::Settings`], for a value of the settings file or a flag that fits no log too
/// ([`Layers::check_values`]), before anything runs; [`DataDirError::Broker`] for a metadata log or
/// `server.properties` named and unreadable.
pub fn layers(
    data_dir: &Path,
    format: Format,
    config: Option<&Path>,
    flags: &[(&str, String, &str)],
    broker: &BrokerSource,
) -> Result<Layers, DataDirError> {
    let saved = settings::Saved::read(data_dir)?;
    let file = config.map(settings::SettingsFile::read).transpose()?;
    let flags = flags.iter().map(|(s, v, f)| ((*s).to_owned(), (v.clone(), (*f).to_owned()))).collect();
    let mut layers = Layers { format, saved, file, flags, ..Layers::default() };
    layers.check_values()?;
    if format == Format::Kafka {
        load_broker(data_dir, broker, &mut layers)?;
    }
    Ok(layers)
}

/// The settings of the one log in `dir` (a Kafka partition, or a native log), as `clean` would resolve them in
/// its data directory (`dir`'s parent): the broker's own (Kafka), the saved ones, `config`, `flags`. Returns
/// them whatever their `cleanup.policy`, with the layers (for [`Layers::why_left_alone`] and the broker notice).
///
/// # Errors
/// As [`layers`]; [`DataDirError::Settings`] for a value that does not fit.
pub fn settings_of(
    dir: &Path,
    format: Format,
    config: Option<&Path>,
    flags: &[(&str, String, &str)],
    broker: &BrokerSource,
) -> Result<(Resolved, Layers), DataDirError> {
    let full = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    // The data directory as the user gave it (`data` for `data/orders-0`, `.` for `orders-0`), so that the
    // notes name it so; resolved only where the path names none by itself (`.`, `..`).
    // A link is followed: the given parent is kept only when it is where the directory really lies.
    let real_parent = full.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let given = match (dir.parent(), dir.file_name()) {
        (Some(p), Some(_)) if !p.as_os_str().is_empty() => Some(p.to_path_buf()),
        (Some(_), Some(_)) => Some(PathBuf::from(".")),
        _ => None,
    };
    let parent = given.filter(|g| g.canonicalize().is_ok_and(|c| c == real_parent)).unwrap_or(real_parent);
    let name = match format {
        Format::Native => full.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        Format::Kafka => topic_of(&full),
    };
    let layers = layers(&parent, format, config, flags, broker)?;
    if let Some(stray) = layers.stray(&full, &name) {
        return Err(DataDirError::Stray { dir: dir.to_path_buf(), stray });
    }
    let resolved = layers.resolve_all(&name)?;
    Ok((resolved, layers))
}

/// The topic of the Kafka partition directory `dir` (`<topic>-<partition>`, symbolic links resolved), or the
/// directory's name when it is none.
pub fn topic_of(dir: &Path) -> String {
    let full = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let name = full.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    log_core::kafka::topic_partition(&name).map_or(name.clone(), |(t, _)| t.to_owned())
}

/// Reads the broker's settings into `layers` (see [`layers`]).
fn load_broker(data_dir: &Path, source: &BrokerSource, layers: &mut Layers) -> Result<(), DataDirError> {
    use kafka_records::kraft::{BrokerSettings, broker_settings};
    let props = source.server_properties.as_deref().map(broker_settings::read_properties).transpose()?;
    if let (Some(p), Some(path)) = (&props, &source.server_properties) {
        broker_settings::check_properties(p)
            .map_err(|why| kafka_records::kraft::BrokerSettingsError::Properties { path: path.clone(), why })?;
    }
    let named = source.metadata_dir.as_ref().map(|d| {
        let inner = d.join("__cluster_metadata-0");
        if inner.is_dir() { inner } else { d.clone() }
    });
    let (dir, how) = match named.clone() {
        Some(d) => (d, "given as the metadata directory".to_owned()),
        None => match kafka_records::kraft::locate(data_dir, props.as_ref())? {
            kafka_records::kraft::Location::Found { dir, how } => (dir, how),
            kafka_records::kraft::Location::NotFound { why } => {
                layers.broker_notice = Some(format!(
                    "no KRaft metadata log read: {why}. Topics take Kafka's defaults (cleanup.policy delete: nothing is \
                     compacted on a guess) and the settings given; give --metadata-dir to read the broker's"
                ));
                return Ok(());
            }
        },
    };
    let node = kafka_records::kraft::meta_property(data_dir, "node.id")
        .or_else(|| props.as_ref().and_then(|p| p.get("node.id").cloned()));
    match BrokerSettings::load(&dir, node, source.server_properties.as_deref()) {
        Ok(b) => {
            let age = b.image.last_timestamp.map_or_else(String::new, |t| {
                format!(", its last record {} old", crate::clock::age(log_core::now_ms().saturating_sub(t)))
            });
            layers.broker_notice = Some(format!(
                "topic settings from the broker's metadata log {} ({how}; {}{}{age}){}",
                dir.display(),
                b.sources.snapshot.as_ref().map_or_else(String::new, |s| format!(
                    "snapshot {}, then ",
                    s.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
                )),
                log_core::human::count(b.image.records, "record", "records"),
                source.server_properties.as_ref().map_or_else(
                    || {
                        "; server.properties not read: nothing to do unless it sets log.* defaults of its own, \
                         then give it with --broker-config"
                            .to_owned()
                    },
                    |p| format!(" and {}", p.display())
                )
            ));
            layers.broker = Some(Arc::new(b));
            Ok(())
        }
        Err(e) if named.is_some() => Err(DataDirError::Broker(e)),
        Err(e) => {
            layers.broker_notice = Some(format!(
                "warning: cannot read the broker's settings ({e}): topics take Kafka's defaults and the settings given"
            ));
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kafka_log_directory_holds_partitions_and_nothing_else() {
        let tmp = tempfile::tempdir().expect("tempdir");
        for d in ["orders-0", "orders-1", "__consumer_offsets-12", "orders-0.1a2b-delete", "orders-0-future", ".hidden"]
        {
            std::fs::create_dir(tmp.path().join(d)).expect("mkdir");
        }
        std::fs::write(tmp.path().join("server.log"), b"x").expect("write");
        let found = discover(tmp.path(), Format::Kafka).expect("list");
        let names: Vec<(&str, &str)> = found.logs.iter().map(|f| (f.name.as_str(), f.settings_name.as_str())).collect();
        assert_eq!(
            names,
            [("__consumer_offsets-12", "__consumer_offsets"), ("orders-0", "orders"), ("orders-1", "orders")]
        );
        let ignored: Vec<&str> = found.ignored.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(ignored, ["orders-0-future", "orders-0.1a2b-delete"]);
    }
}
