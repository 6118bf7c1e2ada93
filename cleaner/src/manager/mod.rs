//! The cleaner as Kafka runs it: many logs, a few threads, the dirtiest log first, lag bounds, failures
//! isolated and retried.
//!
//! A [`CleanerManager`] owns its logs (each with its [`LogSettings`]) and `log.cleaner.threads` threads, each
//! with its own offset map in an even share of the dedupe buffer (Kafka splits the buffer the same way). A
//! free thread takes the log its [`SchedulingPolicy`] picks among those it may clean (Kafka's: a log past its
//! maximum lag first, else the dirtiest above its minimum ratio), runs one pass on it, and goes back for the
//! next; when there is nothing to clean it waits `log.cleaner.backoff.ms`. A log whose active segment began
//! longer ago than its `max.compaction.lag.ms` is rolled first, as Kafka does, so that its records can be
//! cleaned at all. Every pass charges one shared I/O throttle (`log.cleaner.io.max.bytes.per.second`).
//!
//! A pass that fails marks its log uncleanable (error kept, failures counted, its dirty bytes reported) and
//! the others go on; the log is retried after a backoff that doubles, a bounded number of times, then only on
//! request ([`CleanerManager::retry_uncleanable`]). A log poisoned by a failed write is reopened for the
//! retry when it was added with an opener. Appends and reads go on while passes run.
//!
//! # Example
//! ```
//! use std::sync::Arc;
//! use cleaner::manager::{CleanerManager, ManagerConfig, Mode};
//! use cleaner::{LogSettings, SystemClock};
//! use log_core::{Log, LogConfig};
//!
//! let manager = CleanerManager::new(ManagerConfig::default(), Arc::new(SystemClock))?;
//! for name in ["orders", "users"] {
//!     let log = Arc::new(Log::open(Arc::new(storage_mem::MemStore::new()), log_core::OpenOptions::new(LogConfig::default()))?);
//!     log.put(b"k", b"1")?;
//!     log.put(b"k", b"2")?;
//!     log.roll()?;
//!     manager.add_log(name, log, LogSettings::default(), None)?;
//! }
//! let status = manager.run(Mode::UntilClean);
//! assert_eq!(status.passes, 2);
//! assert!(status.logs.iter().all(|l| l.dirty_bytes == 0));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod policy;
mod status;

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use log_core::Log;

pub use policy::{Candidate, DirtiestFirst, OldestDirtyFirst, SchedulingPolicy, policy_by_name};
pub use status::{Gauges, LogState, LogStatus, ManagerStatus};

use crate::clock::Clock;
use crate::config::{CleanerConfig, DEFAULT_DEDUPE_BUFFER_BYTES, DEFAULT_LOAD_FACTOR};
use crate::error::{Error, Result};
use crate::map::MapKind;
use crate::pace::panic_message;
use crate::pass::Cleaner;
use crate::settings::LogSettings;
use crate::stats::CleanStats;
use crate::throttle::Throttler;

/// Kafka's `log.cleaner.backoff.ms` default.
pub const DEFAULT_BACKOFF_MS: u64 = 15_000;

/// How a manager runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Until no log is cleanable and no pass runs (retries that are not due yet are not waited for: a caller that
    /// wants them runs again at the earliest `retry_at_ms` of [`ManagerStatus::logs`]).
    UntilClean,
    /// Until [`CleanerManager::stop`].
    Watch,
}

/// The manager's settings (Kafka's broker settings for the cleaner, under their names).
#[derive(Debug, Clone, PartialEq)]
pub struct ManagerConfig {
    /// `log.cleaner.threads` (1).
    pub threads: usize,
    /// `log.cleaner.dedupe.buffer.size` (128 MiB), split evenly between the threads.
    pub dedupe_buffer_bytes: usize,
    /// `log.cleaner.io.buffer.load.factor` (0.9).
    pub load_factor: f64,
    /// The offset map (Kafka's is `skimpy`).
    pub map: MapKind,
    /// `log.cleaner.backoff.ms` (15 s): how long a thread with nothing to clean sleeps.
    pub backoff_ms: u64,
    /// `log.cleaner.io.max.bytes.per.second` (unlimited): the bytes all threads together read per second.
    pub io_max_bytes_per_second: f64,
    /// Retries of a log whose pass failed before it waits for a request (3).
    pub max_retries: u32,
    /// The wait before the first retry (10 s); it doubles with every failure.
    pub retry_backoff_ms: u64,
    /// Where the external pass spills its runs (the system's temporary directory when `None`).
    pub spill_dir: Option<std::path::PathBuf>,
}

impl Default for ManagerConfig {
    fn default() -> Self {
        ManagerConfig {
            threads: 1,
            dedupe_buffer_bytes: DEFAULT_DEDUPE_BUFFER_BYTES,
            load_factor: DEFAULT_LOAD_FACTOR,
            map: MapKind::Skimpy,
            backoff_ms: DEFAULT_BACKOFF_MS,
            io_max_bytes_per_second: f64::INFINITY,
            max_retries: 3,
            retry_backoff_ms: 10_000,
            spill_dir: None,
        }
    }
}

impl ManagerConfig {
    /// The configuration of one thread's cleaner: its share of the buffer.
    pub fn thread_config(&self) -> CleanerConfig {
        CleanerConfig {
            map: self.map,
            dedupe_buffer_bytes: self.dedupe_buffer_bytes / self.threads.max(1),
            load_factor: self.load_factor,
            spill_dir: self.spill_dir.clone(),
            threads: 1,
        }
    }

    /// Checks the values (and that a thread's share of the buffer holds a key).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] or [`Error::BufferTooSmall`].
    pub fn validate(&self) -> Result<()> {
        if !(1..=crate::MAX_PASS_THREADS).contains(&self.threads) {
            return Err(Error::invalid("log.cleaner.threads", self.threads, "from 1 to 256"));
        }
        if self.io_max_bytes_per_second.is_nan() || self.io_max_bytes_per_second <= 0.0 {
            return Err(Error::invalid(
                "log.cleaner.io.max.bytes.per.second",
                self.io_max_bytes_per_second,
                "positive",
            ));
        }
        self.thread_config().validate()
    }
}

/// Opens a log: again for a retry after a failed write poisoned it, or for each pass of a detached log.
/// [`Error::Busy`] says another process holds it: not a failure, the log is tried again later.
pub type Opener = Box<dyn Fn() -> Result<Log> + Send + Sync>;

/// An [`Opener`] shared by the states a log goes through (attached, unopened).
type SharedOpener = Arc<dyn Fn() -> Result<Log> + Send + Sync>;

/// What the manager reports as it works.
#[derive(Debug, Clone)]
pub enum Event {
    /// A pass ended.
    Cleaned {
        /// The thread.
        thread: usize,
        /// The log.
        log: String,
        /// The pass's statistics.
        stats: Box<CleanStats>,
        /// Passes run on this log so far.
        passes: u64,
    },
    /// A pass failed: the log is uncleanable until `retry_at_ms` (or a request, when `None`).
    Failed {
        /// The thread.
        thread: usize,
        /// The log.
        log: String,
        /// What went wrong ([`Error::is_corruption`] tells damage to stored data).
        error: Arc<Error>,
        /// Passes that failed in a row.
        failures: u32,
        /// When it is retried.
        retry_at_ms: Option<i64>,
    },
    /// The active segment was rolled because its first record was older than `max.compaction.lag.ms`.
    Rolled {
        /// The log.
        log: String,
    },
}

/// What a failed log was doing when it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Opening it (added unopened, or a detached log opened for a pass).
    Open,
    /// Reopening it for a retry after a failed write poisoned it.
    Reopen,
    /// A cleaning pass.
    Pass,
}

/// A failed log's record: the error itself, what failed, how often in a row and when it is retried.
#[derive(Debug, Clone)]
struct Failure {
    step: Step,
    error: Arc<Error>,
    /// In a row.
    count: u32,
    retry_at_ms: Option<i64>,
}

impl Failure {
    /// The error with what was being done, as the status reports it.
    fn describe(&self) -> String {
        match self.step {
            Step::Open => format!("cannot open the log: {}", self.error),
            Step::Reopen => format!("cannot reopen the log for a retry: {}", self.error),
            Step::Pass => self.error.to_string(),
        }
    }
}

/// How the manager holds a log: the one place that says whether it is open.
enum Handle {
    /// Open for the manager's life ([`CleanerManager::add_log`]); `reopen` opens it again for a retry after a
    /// failed write poisoned it (without one, a poisoned log stays uncleanable).
    Attached { log: Arc<Log>, reopen: Option<SharedOpener> },
    /// Opened for each pass and closed after it ([`CleanerManager::add_detached`]), so that another process may
    /// write to it between passes; `peek` opens it read-only to measure it.
    Detached {
        open: Opener,
        peek: Opener,
        /// The last dirty section a peek measured, and when.
        peeked: Option<(i64, log_core::DirtySection)>,
        /// Its open found another writer: not tried again before this.
        busy_until: Option<i64>,
    },
    /// Not open: it could not be opened ([`CleanerManager::add_unopened`]), or its reopen for a retry failed;
    /// `open` is tried again as retries come due.
    Unopened { open: SharedOpener },
}

impl Handle {
    /// The open log, for an attached one.
    fn log(&self) -> Option<&Arc<Log>> {
        match self {
            Handle::Attached { log, .. } => Some(log),
            Handle::Detached { .. } | Handle::Unopened { .. } => None,
        }
    }

    /// True when the log can be measured and picked for a pass (attached, or detached and not busy at `now`).
    fn pickable(&self, now: i64) -> bool {
        match self {
            Handle::Attached { .. } => true,
            Handle::Detached { busy_until, .. } => busy_until.is_none_or(|b| b <= now),
            Handle::Unopened { .. } => false,
        }
    }
}

struct Entry {
    name: String,
    handle: Handle,
    settings: LogSettings,
    cleaning: bool,
    passes: u64,
    total_failures: u64,
    last_clean_ms: Option<i64>,
    last_clean_secs: Option<f64>,
    failure: Option<Failure>,
}

impl Entry {
    /// A log held by `handle`, with no history yet.
    fn new(name: &str, settings: LogSettings, handle: Handle) -> Entry {
        Entry {
            name: name.to_owned(),
            handle,
            settings,
            cleaning: false,
            passes: 0,
            total_failures: 0,
            last_clean_ms: None,
            last_clean_secs: None,
            failure: None,
        }
    }

    /// Records a failure at `step` (the one place that does): counted in a row and in all, retried after a
    /// backoff that doubles with each failure in a row, or only on request once `max_retries` are spent.
    fn fail(&mut self, step: Step, error: Error, now: i64, config: &ManagerConfig) -> &Failure {
        self.total_failures += 1;
        let count = self.failure.as_ref().map_or(0, |f| f.count) + 1;
        let retry_at_ms =
            (count <= config.max_retries).then(|| now.saturating_add(retry_backoff(config.retry_backoff_ms, count)));
        self.failure.insert(Failure { step, error: Arc::new(error), count, retry_at_ms })
    }
}

/// A thread's last pass, for the gauges.
#[derive(Debug, Clone, Copy, Default)]
struct LastRun {
    utilization: f64,
    bytes_read: u64,
    bytes_written: u64,
    seconds: f64,
    delay_ms: i64,
}

#[derive(Default)]
struct State {
    logs: Vec<Entry>,
    last_runs: Vec<LastRun>,
    dead_threads: u64,
    passes: u64,
    /// An until-clean run found nothing more to do.
    finished: bool,
    stopping: bool,
    /// When a thread last looked for a log to clean (Kafka's `timeOfLastRun`); the manager's start before.
    last_grab_ms: i64,
    /// The highest dirty ratio among the logs that look found cleanable (Kafka's
    /// `dirtiestLogCleanableRatio`).
    last_grab_max_dirty_ratio: f64,
}

type Listener = Box<dyn Fn(&Event) + Send + Sync>;

struct Shared {
    config: ManagerConfig,
    clock: Arc<dyn Clock>,
    policy: Box<dyn SchedulingPolicy>,
    state: Mutex<State>,
    wake: Condvar,
    abort: Arc<AtomicBool>,
    listener: Mutex<Option<Listener>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn emit(&self, event: &Event) {
        if let Some(f) = &*self.listener.lock().unwrap_or_else(std::sync::PoisonError::into_inner) {
            f(event);
        }
    }
}

/// See the module docs.
pub struct CleanerManager {
    shared: Arc<Shared>,
    cleaners: Mutex<Vec<Cleaner>>,
}

impl std::fmt::Debug for CleanerManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CleanerManager").field("config", &self.shared.config).finish_non_exhaustive()
    }
}

/// What one thread picked.
struct Pick {
    index: usize,
    log: Arc<Log>,
    settings: LogSettings,
    delay_ms: i64,
}

impl CleanerManager {
    /// A manager with Kafka's scheduling policy; its threads' maps are built now (so a buffer the machine
    /// cannot give fails here), and start with [`CleanerManager::run`] or [`CleanerManager::spawn`].
    ///
    /// # Errors
    /// As [`ManagerConfig::validate`]; [`Error::OutOfMemory`].
    pub fn new(config: ManagerConfig, clock: Arc<dyn Clock>) -> Result<Self> {
        Self::with_policy(config, clock, Box::new(DirtiestFirst))
    }

    /// As [`CleanerManager::new`] with another scheduling policy.
    ///
    /// # Errors
    /// As [`CleanerManager::new`].
    pub fn with_policy(
        config: ManagerConfig,
        clock: Arc<dyn Clock>,
        policy: Box<dyn SchedulingPolicy>,
    ) -> Result<Self> {
        config.validate()?;
        let abort = Arc::new(AtomicBool::new(false));
        let throttle = config
            .io_max_bytes_per_second
            .is_finite()
            .then(|| Arc::new(Throttler::new(config.io_max_bytes_per_second)));
        let mut cleaners = Vec::with_capacity(config.threads);
        for _ in 0..config.threads {
            let mut c = Cleaner::new(config.thread_config(), Arc::clone(&clock))?;
            c.stop_when(Arc::clone(&abort));
            if let Some(t) = &throttle {
                c.throttle(Arc::clone(t));
            }
            cleaners.push(c);
        }
        let state = State {
            last_runs: vec![LastRun::default(); config.threads],
            last_grab_ms: clock.now_ms(),
            ..State::default()
        };
        let shared = Arc::new(Shared {
            config,
            clock,
            policy,
            state: Mutex::new(state),
            wake: Condvar::new(),
            abort,
            listener: Mutex::new(None),
        });
        Ok(CleanerManager { shared, cleaners: Mutex::new(cleaners) })
    }

    /// Counts the bytes and records every thread's passes read on `meter` (a
    /// [`log_core::progress::Meter::running_total`], since the threads' passes run side by side).
    pub fn report_to(&self, meter: &Arc<log_core::progress::Meter>) {
        for c in self.cleaners.lock().unwrap_or_else(std::sync::PoisonError::into_inner).iter_mut() {
            c.report_to(Arc::clone(meter));
        }
    }

    /// Calls `f` with every [`Event`] (from the cleaner threads, sometimes while the manager's state is
    /// locked: `f` must not call back into the manager).
    pub fn on_event(&self, f: impl Fn(&Event) + Send + Sync + 'static) {
        *self.shared.listener.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Box::new(f));
    }

    /// Adds a log under `name` with its settings; `opener` reopens it for a retry after a failed write
    /// (without one, a poisoned log stays uncleanable).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for bad settings or a name already taken.
    pub fn add_log(&self, name: &str, log: Arc<Log>, settings: LogSettings, opener: Option<Opener>) -> Result<()> {
        let handle = Handle::Attached { log, reopen: opener.map(SharedOpener::from) };
        self.insert(Entry::new(name, settings, handle))
    }

    /// Adds a **detached** log: opened with `open` for each pass and closed after it, so that another process
    /// may write to it between passes (a file log's directory is locked by its writer). `peek` opens it
    /// read-only to measure its dirty section. An `open` that fails with [`Error::Busy`] means another writer
    /// holds the log: the pass waits for the next round, and no failure is counted.
    ///
    /// # Errors
    /// As [`CleanerManager::add_log`].
    pub fn add_detached(&self, name: &str, settings: LogSettings, open: Opener, peek: Opener) -> Result<()> {
        self.insert(Entry::new(name, settings, Handle::Detached { open, peek, peeked: None, busy_until: None }))
    }

    /// Adds a log that could not be opened (`error` says why): it starts uncleanable, and `opener` is tried
    /// again as a retry comes due.
    ///
    /// # Errors
    /// As [`CleanerManager::add_log`].
    pub fn add_unopened(&self, name: &str, settings: LogSettings, opener: Opener, error: Error) -> Result<()> {
        let now = self.shared.clock.now_ms();
        let mut entry = Entry::new(name, settings, Handle::Unopened { open: SharedOpener::from(opener) });
        entry.fail(Step::Open, error, now, &self.shared.config);
        self.insert(entry)
    }

    /// Adds an entry, refusing bad settings and a name already taken, and wakes the threads.
    fn insert(&self, entry: Entry) -> Result<()> {
        entry.settings.validate()?;
        let mut state = self.shared.lock();
        if state.logs.iter().any(|e| e.name == entry.name) {
            return Err(Error::invalid("log name", &entry.name, "a name not taken by another log"));
        }
        state.logs.push(entry);
        state.logs.sort_by(|a, b| a.name.cmp(&b.name));
        drop(state);
        self.shared.wake.notify_all();
        Ok(())
    }

    /// The flag that stops running passes (before their commit, leaving their logs unchanged); set it from a
    /// signal handler, then call [`CleanerManager::stop`].
    pub fn abort_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.shared.abort)
    }

    /// Asks the threads to stop: no new pass starts; with `abort`, running passes are abandoned (their logs
    /// unchanged), else they finish.
    pub fn stop(&self, abort: bool) {
        if abort {
            self.shared.abort.store(true, Ordering::SeqCst);
        }
        self.shared.lock().stopping = true;
        self.shared.wake.notify_all();
    }

    /// Makes uncleanable logs (all, or the one named) due for a retry now, their failure count reset. Returns
    /// how many.
    pub fn retry_uncleanable(&self, name: Option<&str>) -> usize {
        let now = self.shared.clock.now_ms();
        let mut state = self.shared.lock();
        let mut n = 0;
        for e in state.logs.iter_mut().filter(|e| name.is_none_or(|n| n == e.name)) {
            if let Some(f) = &mut e.failure {
                f.count = 0;
                f.retry_at_ms = Some(now);
                n += 1;
            }
        }
        drop(state);
        self.shared.wake.notify_all();
        n
    }

    /// Runs the threads in `mode` on the calling thread's behalf and returns the status when they end (an
    /// until-clean run ends by itself; a watching one when [`CleanerManager::stop`] is called from elsewhere,
    /// a signal handler's flag say).
    pub fn run(&self, mode: Mode) -> ManagerStatus {
        let cleaners = std::mem::take(&mut *self.cleaners.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        let handles: Vec<_> = cleaners
            .into_iter()
            .enumerate()
            .map(|(thread, cleaner)| {
                let shared = Arc::clone(&self.shared);
                std::thread::Builder::new()
                    .name(format!("cleaner-{thread}"))
                    .spawn(move || worker(&shared, thread, cleaner, mode))
            })
            .collect();
        let mut cleaners = Vec::new();
        for h in handles {
            match h.map_err(|_| ()).and_then(|h| h.join().map_err(|_| ())) {
                Ok(c) => cleaners.push(c),
                Err(()) => self.shared.lock().dead_threads += 1,
            }
        }
        // Threads that survived hand their cleaners back, so the manager can run again.
        *self.cleaners.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = cleaners;
        let mut state = self.shared.lock();
        state.finished = false;
        state.stopping = false;
        drop(state);
        self.shared.abort.store(false, Ordering::SeqCst);
        self.status()
    }

    /// The gauges and every log's figures now.
    pub fn status(&self) -> ManagerStatus {
        let now = self.shared.clock.now_ms();
        let mut state = self.shared.lock();
        for e in state.logs.iter_mut().filter(|e| e.handle.log().is_none()) {
            dirty_of(e, now);
        }
        let mut gauges = Gauges {
            dead_thread_count: state.dead_threads,
            time_since_last_run_ms: now.saturating_sub(state.last_grab_ms).max(0),
            max_dirty_percent: 100.0 * state.last_grab_max_dirty_ratio,
            ..Gauges::default()
        };
        let (mut read, mut written) = (0u64, 0u64);
        for r in &state.last_runs {
            gauges.max_buffer_utilization_percent = gauges.max_buffer_utilization_percent.max(100.0 * r.utilization);
            gauges.max_clean_time_secs = gauges.max_clean_time_secs.max(r.seconds);
            gauges.max_compaction_delay_secs = gauges.max_compaction_delay_secs.max(r.delay_ms as f64 / 1000.0);
            read += r.bytes_read;
            written += r.bytes_written;
        }
        gauges.cleaner_recopy_percent = if read == 0 { 0.0 } else { 100.0 * written as f64 / read as f64 };
        let logs: Vec<LogStatus> = state
            .logs
            .iter()
            .map(|e| {
                let d = cached_dirty(e, now);
                let state = if !e.settings.cleanup_policy.compacts() {
                    LogState::NotCompacted
                } else if e.cleaning {
                    LogState::Cleaning
                } else if e.failure.is_some() {
                    LogState::Uncleanable
                } else {
                    LogState::Idle
                };
                if state == LogState::Uncleanable {
                    gauges.uncleanable_partitions_count += 1;
                    gauges.uncleanable_bytes += d.dirty_bytes;
                }
                LogStatus {
                    name: e.name.clone(),
                    state,
                    dirty_ratio: d.dirty_ratio(),
                    dirty_bytes: d.dirty_bytes,
                    clean_bytes: d.clean_bytes,
                    held_back_bytes: d.too_young_bytes + d.active_bytes,
                    min_cleanable_dirty_ratio: e.settings.min_cleanable_dirty_ratio,
                    settings: e.settings.clone(),
                    compaction_delay_ms: d.compaction_delay_ms(now, e.settings.max_compaction_lag_ms),
                    passes: e.passes,
                    last_clean_ms: e.last_clean_ms,
                    last_clean_secs: e.last_clean_secs,
                    last_error: e.failure.as_ref().map(Failure::describe),
                    last_error_is_corruption: e.failure.as_ref().is_some_and(|f| f.error.is_corruption()),
                    failures: e.failure.as_ref().map_or(0, |f| f.count),
                    total_failures: e.total_failures,
                    retry_at_ms: e.failure.as_ref().and_then(|f| f.retry_at_ms),
                }
            })
            .collect();
        ManagerStatus {
            at_ms: now,
            threads: self.shared.config.threads,
            policy: self.shared.policy.name().to_owned(),
            passes: state.passes,
            gauges,
            logs,
        }
    }

    /// True when some log is uncleanable now.
    pub fn any_uncleanable(&self) -> bool {
        self.shared.lock().logs.iter().any(|e| e.failure.is_some())
    }

    /// True when a log's last failure was damage to stored data.
    pub fn any_corruption(&self) -> bool {
        self.shared.lock().logs.iter().any(|e| e.failure.as_ref().is_some_and(|f| f.error.is_corruption()))
    }
}

/// Counts a thread that dies outside a pass (a panic in the manager's own code).
struct DeathWatch<'a>(&'a Shared);

impl Drop for DeathWatch<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.lock().dead_threads += 1;
            self.0.wake.notify_all();
        }
    }
}

/// One cleaner thread: picks, cleans, reports, until the mode says stop. Returns its cleaner.
fn worker(shared: &Shared, thread: usize, mut cleaner: Cleaner, mode: Mode) -> Cleaner {
    let _watch = DeathWatch(shared);
    while let Some(pick) = next_pick(shared, mode) {
        let options = pick.settings.pass_options(false);
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| match pick.log.try_begin_cleaning() {
            Ok(Some(cleaning)) => cleaner.clean_in(cleaning, options).map(Some),
            // Another pass holds it (one started outside the manager): not a failure, try again later.
            Ok(None) => Ok(None),
            Err(e) => Err(Error::Log(e)),
        }))
        .unwrap_or_else(|p| Err(Error::Panicked { message: panic_message(&*p) }));
        finish_pick(shared, thread, &pick, outcome);
    }
    cleaner
}

/// Waits for the next log this thread should clean; `None` when the thread should end.
fn next_pick(shared: &Shared, mode: Mode) -> Option<Pick> {
    let mut state = shared.lock();
    loop {
        if state.stopping || state.finished || shared.abort.load(Ordering::SeqCst) {
            return None;
        }
        let now = shared.clock.now_ms();
        roll_overdue_active_segments(shared, &mut state, now);
        if let Some(pick) = choose(shared, &mut state, now) {
            return Some(pick);
        }
        let busy = state.logs.iter().any(|e| e.cleaning);
        if mode == Mode::UntilClean && !busy {
            state.finished = true;
            shared.wake.notify_all();
            return None;
        }
        // Nothing to clean now: back off, or wait for a pass to end (it may leave its log dirty still).
        let wait = match mode {
            Mode::UntilClean => Duration::from_millis(shared.config.backoff_ms.clamp(1, 100)),
            Mode::Watch => Duration::from_millis(next_wake(&state, now, shared.config.backoff_ms)),
        };
        state = shared.wake.wait_timeout(state, wait).unwrap_or_else(|e| e.into_inner()).0;
    }
}

/// How long a watching thread with nothing to clean sleeps: the backoff, or less when a retry is due sooner.
fn next_wake(state: &State, now: i64, backoff_ms: u64) -> u64 {
    let retry = state
        .logs
        .iter()
        .filter_map(|e| e.failure.as_ref().and_then(|f| f.retry_at_ms))
        .map(|at| u64::try_from(at.saturating_sub(now)).unwrap_or(0))
        .min();
    retry.map_or(backoff_ms, |r| r.min(backoff_ms)).max(1)
}

/// The dirty section of `e` now: from its open log, or (for a detached log) from a read-only open at most a
/// second old by the manager's clock; nothing for a log that is not open.
fn dirty_of(e: &mut Entry, now: i64) -> log_core::DirtySection {
    let lag = e.settings.min_compaction_lag_ms;
    match &mut e.handle {
        Handle::Attached { log, .. } => log.dirty_section(now, lag),
        Handle::Detached { peek, peeked, .. } => {
            if let Some((_, d)) = peeked.filter(|&(at, _)| now.saturating_sub(at) < 1000 && at <= now) {
                return d;
            }
            let d = peek().ok().map(|log| log.dirty_section(now, lag)).unwrap_or_default();
            *peeked = Some((now, d));
            d
        }
        Handle::Unopened { .. } => log_core::DirtySection::default(),
    }
}

/// What [`dirty_of`] last found, without opening anything.
fn cached_dirty(e: &Entry, now: i64) -> log_core::DirtySection {
    match &e.handle {
        Handle::Attached { log, .. } => log.dirty_section(now, e.settings.min_compaction_lag_ms),
        Handle::Detached { peeked, .. } => peeked.map(|(_, d)| d).unwrap_or_default(),
        Handle::Unopened { .. } => log_core::DirtySection::default(),
    }
}

/// The time until which a log whose open found another writer is left alone.
fn busy_until(shared: &Shared, now: i64) -> i64 {
    now.saturating_add(i64::try_from(shared.config.backoff_ms).unwrap_or(0))
}

/// Kafka rolls an active segment whose first record is older than `max.compaction.lag.ms`, so that it can be
/// cleaned: its records would otherwise wait for the next roll by size, however long that takes.
fn roll_overdue_active_segments(shared: &Shared, state: &mut State, now: i64) {
    for e in
        state.logs.iter_mut().filter(|e| !e.cleaning && e.failure.is_none() && e.settings.cleanup_policy.compacts())
    {
        let lag = e.settings.max_compaction_lag_ms;
        if lag == i64::MAX || !e.handle.pickable(now) {
            continue;
        }
        let d = dirty_of(e, now);
        if d.active_first_timestamp.is_none_or(|t| now.saturating_sub(t) <= lag) {
            continue;
        }
        let opened;
        let log = match &mut e.handle {
            Handle::Attached { log, .. } => &**log,
            Handle::Detached { open, busy_until: busy, .. } => match open() {
                Ok(log) => {
                    opened = log;
                    &opened
                }
                Err(Error::Busy { .. }) => {
                    *busy = Some(busy_until(shared, now));
                    continue;
                }
                Err(_) => continue,
            },
            Handle::Unopened { .. } => continue,
        };
        if !log.is_read_only() && log.roll().is_ok_and(|rolled| rolled) {
            if let Handle::Detached { peeked, .. } = &mut e.handle {
                *peeked = None;
            }
            shared.emit(&Event::Rolled { log: e.name.clone() });
        }
    }
}

/// Reopens the failed logs due for a retry whose handle is poisoned (or was lost).
fn reopen_due(shared: &Shared, state: &mut State, now: i64) {
    for e in state.logs.iter_mut() {
        let due = e.failure.as_ref().is_some_and(|f| f.retry_at_ms.is_some_and(|at| at <= now));
        if !due || e.cleaning {
            continue;
        }
        let open = match &e.handle {
            Handle::Attached { log, reopen: Some(open) } if log.is_poisoned() => Arc::clone(open),
            Handle::Unopened { open } => Arc::clone(open),
            Handle::Attached { .. } | Handle::Detached { .. } => continue,
        };
        // Our handle goes first: a file log holds its directory's lock until it is dropped.
        e.handle = Handle::Unopened { open: Arc::clone(&open) };
        match open() {
            Ok(log) => e.handle = Handle::Attached { log: Arc::new(log), reopen: Some(open) },
            Err(err) => {
                e.fail(Step::Reopen, err, now, &shared.config);
            }
        }
    }
}

/// Picks a log by the policy and marks it being cleaned (opening a detached one); reopens a poisoned log
/// that is due for a retry.
fn choose(shared: &Shared, state: &mut State, now: i64) -> Option<Pick> {
    reopen_due(shared, state, now);
    let mut passed_over: Vec<usize> = Vec::new();
    state.last_grab_ms = now;
    let mut first_look = true;
    loop {
        let eligible: Vec<usize> = (0..state.logs.len())
            .filter(|&i| {
                let e = &state.logs[i];
                let waiting = e.failure.as_ref().is_some_and(|f| f.retry_at_ms.is_none_or(|at| at > now));
                !e.cleaning
                    && !waiting
                    && e.handle.pickable(now)
                    && e.settings.cleanup_policy.compacts()
                    && !passed_over.contains(&i)
            })
            .collect();
        let sections: Vec<_> = eligible.iter().map(|&i| dirty_of(&mut state.logs[i], now)).collect();
        if std::mem::take(&mut first_look) {
            state.last_grab_max_dirty_ratio = sections
                .iter()
                .filter(|d| d.is_cleanable())
                .map(log_core::DirtySection::dirty_ratio)
                .fold(0.0, f64::max);
        }
        let candidates: Vec<Candidate<'_>> = eligible
            .iter()
            .zip(&sections)
            .map(|(&i, &dirty)| {
                let e = &state.logs[i];
                Candidate {
                    name: &e.name,
                    dirty,
                    settings: &e.settings,
                    compaction_delay_ms: dirty.compaction_delay_ms(now, e.settings.max_compaction_lag_ms),
                    last_clean_ms: e.last_clean_ms,
                }
            })
            .collect();
        // A failed log due for a retry is tried whatever its ratio: the retry tells whether it recovered.
        let retry = candidates
            .iter()
            .position(|c| c.dirty.is_cleanable() && state.logs.iter().any(|e| e.name == c.name && e.failure.is_some()));
        let chosen = retry.or_else(|| shared.policy.choose(&candidates, now))?;
        let delay_ms = candidates[chosen].compaction_delay_ms;
        let index = eligible[chosen];
        drop(candidates);
        let e = &mut state.logs[index];
        let log = match &mut e.handle {
            Handle::Attached { log, .. } => Arc::clone(log),
            Handle::Detached { open, busy_until: busy, .. } => match open() {
                Ok(log) => {
                    *busy = None;
                    Arc::new(log)
                }
                Err(Error::Busy { .. }) => {
                    // Another writer has it now: not a failure; the next round tries again.
                    *busy = Some(busy_until(shared, now));
                    passed_over.push(index);
                    continue;
                }
                Err(err) => {
                    e.fail(Step::Open, err, now, &shared.config);
                    passed_over.push(index);
                    continue;
                }
            },
            Handle::Unopened { .. } => {
                passed_over.push(index);
                continue;
            }
        };
        e.cleaning = true;
        return Some(Pick { index, log, settings: e.settings.clone(), delay_ms });
    }
}

/// The wait before retry number `count` (1 for the first): the backoff, doubled for every failure before.
fn retry_backoff(backoff_ms: u64, count: u32) -> i64 {
    let ms = backoff_ms.saturating_mul(1u64 << count.saturating_sub(1).min(20));
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// Records how a pass ended.
fn finish_pick(shared: &Shared, thread: usize, pick: &Pick, outcome: Result<Option<CleanStats>>) {
    let now = shared.clock.now_ms();
    let mut state = shared.lock();
    let config = &shared.config;
    let event = match outcome {
        Ok(Some(stats)) => {
            state.passes += 1;
            state.last_runs[thread] = LastRun {
                utilization: stats.offset_map.utilization,
                bytes_read: stats.pass2.bytes_read,
                bytes_written: stats.pass2.bytes_kept,
                seconds: stats.total_seconds,
                delay_ms: pick.delay_ms,
            };
            let e = &mut state.logs[pick.index];
            e.passes += 1;
            e.last_clean_ms = Some(now);
            e.last_clean_secs = Some(stats.total_seconds);
            e.failure = None;
            Some(Event::Cleaned { thread, log: e.name.clone(), stats: Box::new(stats), passes: e.passes })
        }
        Ok(None) | Err(Error::Aborted) => None,
        Err(error) => {
            let e = &mut state.logs[pick.index];
            let failure = e.fail(Step::Pass, error, now, config);
            let (error, failures, retry_at_ms) = (Arc::clone(&failure.error), failure.count, failure.retry_at_ms);
            Some(Event::Failed { thread, log: e.name.clone(), error, failures, retry_at_ms })
        }
    };
    let e = &mut state.logs[pick.index];
    e.cleaning = false;
    // A detached log is measured afresh after its pass.
    if let Handle::Detached { peeked, .. } = &mut e.handle {
        *peeked = None;
    }
    drop(state);
    shared.wake.notify_all();
    if let Some(event) = event {
        shared.emit(&event);
    }
}
