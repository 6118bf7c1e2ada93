//! Time for the delete horizon of tombstones, injectable so tests and the CLI control it.

use std::fmt::Debug;
use std::sync::atomic::{AtomicI64, Ordering};

/// A source of "now" in milliseconds since the Unix epoch.
pub trait Clock: Debug + Send + Sync {
    /// The current time in ms.
    fn now_ms(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        log_core::now_ms()
    }
}

/// A clock that moves only when told to.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// A clock reading `ms`.
    pub fn new(ms: i64) -> Self {
        ManualClock(AtomicI64::new(ms))
    }

    /// Sets the time.
    pub fn set(&self, ms: i64) {
        self.0.store(ms, Ordering::Relaxed);
    }

    /// Moves the time forward by `ms`.
    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::Relaxed);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}
