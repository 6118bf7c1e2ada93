//! A thread's pace through a pass: its stop flag and I/O throttle, consulted every [`PACE_BYTES`] it reads,
//! and its progress tally. Pass 1, pass 2 (whole or split over threads) and the external pass each carry one;
//! it lives apart from the pass so that none of them imports the pass that runs them.

use std::sync::atomic::{AtomicBool, Ordering};

use log_core::progress::Tally;

use crate::error::{Error, Result};
use crate::throttle::Throttler;

/// Bytes a thread reads between two looks at the stop flag and two charges to the I/O throttle.
const PACE_BYTES: u64 = 256 << 10;

/// A thread's stop flag and throttle, consulted every [`PACE_BYTES`], and its progress tally.
pub(crate) struct Pace<'a> {
    abort: Option<&'a AtomicBool>,
    throttle: Option<&'a Throttler>,
    pending: u64,
    tally: Tally<'a>,
}

impl<'a> Pace<'a> {
    /// A pace that looks at `abort` and charges `throttle` (either may be absent), counting into `tally`.
    pub(crate) fn new(abort: Option<&'a AtomicBool>, throttle: Option<&'a Throttler>, tally: Tally<'a>) -> Self {
        Pace { abort, throttle, pending: 0, tally }
    }

    /// `bytes` holding `records` read.
    #[inline]
    pub(crate) fn step(&mut self, bytes: u64, records: u64) -> Result<()> {
        self.tally.add(bytes, records);
        self.pending += bytes;
        if self.pending < PACE_BYTES {
            return Ok(());
        }
        self.flush()
    }

    pub(crate) fn flush(&mut self) -> Result<()> {
        self.settle();
        if self.abort.is_some_and(|a| a.load(Ordering::Relaxed)) {
            return Err(Error::Aborted);
        }
        Ok(())
    }

    /// Charges what is pending to the throttle, at the end of a thread's work. (The stop flag's last look is
    /// the pass's own, just before its commit.)
    pub(crate) fn settle(&mut self) {
        if let Some(t) = self.throttle {
            t.charge(self.pending);
        }
        self.pending = 0;
        self.tally.flush();
    }
}

/// The message of a caught panic.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}
