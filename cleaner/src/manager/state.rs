//! What a manager keeps under its one lock: each log's entry (its settings, how it is held, its failures and
//! last run) and the threads' shared state.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use log_core::Log;

use crate::clock::Clock;
use crate::error::Error;
use crate::settings::LogSettings;

use super::config::*;
use super::policy::SchedulingPolicy;

/// What a failed log was doing when it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// Opening it (added unopened, or a detached log opened for a pass).
    Open,
    /// Reopening it for a retry after a failed write poisoned it.
    Reopen,
    /// A cleaning pass.
    Pass,
}

/// A failed log's record: the error itself, what failed, how often in a row and when it is retried.
#[derive(Debug, Clone)]
pub(super) struct Failure {
    pub(super) step: Step,
    pub(super) error: Arc<Error>,
    /// In a row.
    pub(super) count: u32,
    pub(super) retry_at_ms: Option<i64>,
}

impl Failure {
    /// The error with what was being done, as the status reports it.
    pub(super) fn describe(&self) -> String {
        match self.step {
            Step::Open => format!("cannot open the log: {}", self.error),
            Step::Reopen => format!("cannot reopen the log for a retry: {}", self.error),
            Step::Pass => self.error.to_string(),
        }
    }
}

/// How the manager holds a log: the one place that says whether it is open.
pub(super) enum Handle {
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
    pub(super) fn log(&self) -> Option<&Arc<Log>> {
        match self {
            Handle::Attached { log, .. } => Some(log),
            Handle::Detached { .. } | Handle::Unopened { .. } => None,
        }
    }

    /// True when the log can be measured and picked for a pass (attached, or detached and not busy at `now`).
    pub(super) fn pickable(&self, now: i64) -> bool {
        match self {
            Handle::Attached { .. } => true,
            Handle::Detached { busy_until, .. } => busy_until.is_none_or(|b| b <= now),
            Handle::Unopened { .. } => false,
        }
    }
}

pub(super) struct Entry {
    pub(super) name: String,
    pub(super) handle: Handle,
    pub(super) settings: LogSettings,
    pub(super) cleaning: bool,
    pub(super) passes: u64,
    pub(super) total_failures: u64,
    pub(super) last_clean_ms: Option<i64>,
    pub(super) last_clean_secs: Option<f64>,
    pub(super) failure: Option<Failure>,
}

impl Entry {
    /// A log held by `handle`, with no history yet.
    pub(super) fn new(name: &str, settings: LogSettings, handle: Handle) -> Entry {
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
    pub(super) fn fail(&mut self, step: Step, error: Error, now: i64, config: &ManagerConfig) -> &Failure {
        self.total_failures += 1;
        let count = self.failure.as_ref().map_or(0, |f| f.count) + 1;
        let retry_at_ms =
            (count <= config.max_retries).then(|| now.saturating_add(retry_backoff(config.retry_backoff_ms, count)));
        self.failure.insert(Failure { step, error: Arc::new(error), count, retry_at_ms })
    }
}

/// A thread's last pass, for the gauges.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct LastRun {
    pub(super) utilization: f64,
    pub(super) bytes_read: u64,
    pub(super) bytes_written: u64,
    pub(super) seconds: f64,
    pub(super) delay_ms: i64,
}

#[derive(Default)]
pub(super) struct State {
    pub(super) logs: Vec<Entry>,
    pub(super) last_runs: Vec<LastRun>,
    pub(super) dead_threads: u64,
    pub(super) passes: u64,
    /// An until-clean run found nothing more to do.
    pub(super) finished: bool,
    pub(super) stopping: bool,
    /// When a thread last looked for a log to clean (Kafka's `timeOfLastRun`); the manager's start before.
    pub(super) last_grab_ms: i64,
    /// The highest dirty ratio among the logs that look found cleanable (Kafka's
    /// `dirtiestLogCleanableRatio`).
    pub(super) last_grab_max_dirty_ratio: f64,
}

pub(super) type Listener = Box<dyn Fn(&Event) + Send + Sync>;

pub(super) struct Shared {
    pub(super) config: ManagerConfig,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) policy: Box<dyn SchedulingPolicy>,
    pub(super) state: Mutex<State>,
    pub(super) wake: Condvar,
    pub(super) abort: Arc<AtomicBool>,
    pub(super) listener: Mutex<Option<Listener>>,
}

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn emit(&self, event: &Event) {
        if let Some(f) = &*self.listener.lock().unwrap_or_else(std::sync::PoisonError::into_inner) {
            f(event);
        }
    }
}

/// What one thread picked.
pub(super) struct Pick {
    pub(super) index: usize,
    pub(super) log: Arc<Log>,
    pub(super) settings: LogSettings,
    pub(super) delay_ms: i64,
}

/// The wait before retry number `count` (1 for the first): the backoff, doubled for every failure before.
pub(super) fn retry_backoff(backoff_ms: u64, count: u32) -> i64 {
    let ms = backoff_ms.saturating_mul(1u64 << count.saturating_sub(1).min(20));
    i64::try_from(ms).unwrap_or(i64::MAX)
}
