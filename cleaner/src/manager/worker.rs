//! A cleaner thread's loop and the scheduling it asks of the shared state: which log it takes next, when it
//! wakes, which active segments to roll, which logs to reopen, and what a pass's end changes.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::pace::panic_message;
use crate::pass::Cleaner;
use crate::stats::CleanStats;

use super::config::*;
use super::policy::Candidate;
use super::state::*;

/// Counts a thread that dies outside a pass (a panic in the manager's own code).
pub(super) struct DeathWatch<'a>(&'a Shared);

impl Drop for DeathWatch<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.lock().dead_threads += 1;
            self.0.wake.notify_all();
        }
    }
}

/// One cleaner thread: picks, cleans, reports, until the mode says stop. Returns its cleaner.
pub(super) fn worker(shared: &Shared, thread: usize, mut cleaner: Cleaner, mode: Mode) -> Cleaner {
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
pub(super) fn next_pick(shared: &Shared, mode: Mode) -> Option<Pick> {
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
pub(super) fn next_wake(state: &State, now: i64, backoff_ms: u64) -> u64 {
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
pub(super) fn dirty_of(e: &mut Entry, now: i64) -> log_core::DirtySection {
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
pub(super) fn cached_dirty(e: &Entry, now: i64) -> log_core::DirtySection {
    match &e.handle {
        Handle::Attached { log, .. } => log.dirty_section(now, e.settings.min_compaction_lag_ms),
        Handle::Detached { peeked, .. } => peeked.map(|(_, d)| d).unwrap_or_default(),
        Handle::Unopened { .. } => log_core::DirtySection::default(),
    }
}

/// The time until which a log whose open found another writer is left alone.
pub(super) fn busy_until(shared: &Shared, now: i64) -> i64 {
    now.saturating_add(i64::try_from(shared.config.backoff_ms).unwrap_or(0))
}

/// Kafka rolls an active segment whose first record is older than `max.compaction.lag.ms`, so that it can be
/// cleaned: its records would otherwise wait for the next roll by size, however long that takes.
pub(super) fn roll_overdue_active_segments(shared: &Shared, state: &mut State, now: i64) {
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
pub(super) fn reopen_due(shared: &Shared, state: &mut State, now: i64) {
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
pub(super) fn choose(shared: &Shared, state: &mut State, now: i64) -> Option<Pick> {
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

/// Records how a pass ended.
pub(super) fn finish_pick(shared: &Shared, thread: usize, pick: &Pick, outcome: Result<Option<CleanStats>>) {
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
