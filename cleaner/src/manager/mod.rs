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

mod config;
mod policy;
mod state;
mod status;
mod worker;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use log_core::Log;

pub use config::{DEFAULT_BACKOFF_MS, Event, ManagerConfig, Mode, Opener};
pub use policy::{Candidate, DirtiestFirst, OldestDirtyFirst, SchedulingPolicy, policy_by_name};
pub use status::{Gauges, LogState, LogStatus, ManagerStatus};

use config::SharedOpener;
use state::*;
use worker::*;

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::pass::Cleaner;
use crate::settings::LogSettings;
use crate::throttle::Throttler;

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
