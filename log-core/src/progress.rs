//! How far a long read has got: a [`Meter`] the reading code adds bytes and records to, and that a reporter
//! on another thread reads (the command line draws it on a terminal, or prints a line every few seconds).
//!
//! Invariants:
//! - updating is cheap: readers count into a local [`Tally`] and hand it to the meter every
//!   [`TALLY_BYTES`] or so (two relaxed atomic adds), never per record, never allocating;
//! - a meter's counters only grow within a stage; [`Meter::begin`] starts a stage (its name and total) and sets
//!   them back to zero, except on a [`Meter::running_total`], shared by work that runs side by side (the logs
//!   of a data directory, a cleaner's threads), where stages are ignored and everything adds up;
//! - a reading is a snapshot of relaxed counters: `bytes` may trail `records` by a tally and may exceed
//!   `bytes_total` (a total is an estimate); a reporter clamps what it shows.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Bytes a [`Tally`] gathers before it hands them to its meter.
pub const TALLY_BYTES: u64 = 256 << 10;

/// Progress counters shared between the code doing the work and a reporter.
#[derive(Debug)]
pub struct Meter {
    bytes: AtomicU64,
    records: AtomicU64,
    items: AtomicU64,
    stage: Mutex<Stage>,
    staged: bool,
}

/// The stage a meter is in.
#[derive(Debug, Clone)]
struct Stage {
    name: String,
    bytes_total: Option<u64>,
    records_total: Option<u64>,
    items_total: Option<u64>,
    unit: &'static str,
    started: Instant,
    generation: u64,
}

/// What a meter shows at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// The stage's name (`""` before any).
    pub stage: String,
    /// Bumped by every [`Meter::begin`]: a reporter seeing it change starts its rate afresh.
    pub generation: u64,
    /// Bytes read in this stage.
    pub bytes: u64,
    /// The stage's bytes in all, when known.
    pub bytes_total: Option<u64>,
    /// Records read in this stage.
    pub records: u64,
    /// The stage's records in all, when known.
    pub records_total: Option<u64>,
    /// Whole items (logs, passes) done, and how many there are when known.
    pub items: u64,
    /// The items in all, when known.
    pub items_total: Option<u64>,
    /// What an item is, plural (`logs`).
    pub unit: &'static str,
    /// Seconds since the stage began.
    pub seconds: f64,
}

impl Default for Meter {
    fn default() -> Self {
        Meter::staged()
    }
}

impl Meter {
    fn new(staged: bool) -> Meter {
        Meter {
            bytes: AtomicU64::new(0),
            records: AtomicU64::new(0),
            items: AtomicU64::new(0),
            stage: Mutex::new(Stage {
                name: String::new(),
                bytes_total: None,
                records_total: None,
                items_total: None,
                unit: "",
                started: Instant::now(),
                generation: 0,
            }),
            staged,
        }
    }

    /// A meter whose stages each start from zero (one piece of work after another: a pass's two halves).
    #[must_use]
    pub fn staged() -> Meter {
        Meter::new(true)
    }

    /// A meter that ignores [`Meter::begin`] and adds everything up: for work running side by side.
    #[must_use]
    pub fn running_total() -> Meter {
        Meter::new(false)
    }

    fn stage(&self) -> std::sync::MutexGuard<'_, Stage> {
        // A poisoned lock means a panic elsewhere while a stage was set: its fields are still valid.
        self.stage.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts the stage `name` of `bytes_total` bytes when known, its counters at zero (nothing on a
    /// [`Meter::running_total`]).
    pub fn begin(&self, name: &str, bytes_total: Option<u64>) {
        if !self.staged {
            return;
        }
        let mut stage = self.stage();
        stage.name.clear();
        stage.name.push_str(name);
        stage.bytes_total = bytes_total;
        stage.records_total = None;
        stage.started = Instant::now();
        stage.generation += 1;
        self.bytes.store(0, Ordering::Relaxed);
        self.records.store(0, Ordering::Relaxed);
    }

    /// The stage's records in all (when its bytes are not known ahead: a writer's).
    pub fn expect_records(&self, total: u64) {
        self.stage().records_total = Some(total);
    }

    /// Counts items (`unit`, plural) done out of `total` when known, whatever the stage.
    pub fn set_items(&self, unit: &'static str, total: Option<u64>) {
        let mut stage = self.stage();
        stage.unit = unit;
        stage.items_total = total;
    }

    /// The bytes of all the work, when known ahead (a running total's logs together), whatever the stage.
    pub fn set_bytes_total(&self, total: Option<u64>) {
        self.stage().bytes_total = total;
    }

    /// Names the work on a [`Meter::running_total`] (which otherwise ignores stages).
    pub fn name(&self, name: &str) {
        let mut stage = self.stage();
        stage.name.clear();
        stage.name.push_str(name);
    }

    /// Adds `bytes` and `records` read.
    #[inline]
    pub fn add(&self, bytes: u64, records: u64) {
        if bytes > 0 {
            self.bytes.fetch_add(bytes, Ordering::Relaxed);
        }
        if records > 0 {
            self.records.fetch_add(records, Ordering::Relaxed);
        }
    }

    /// One more item done.
    pub fn item_done(&self) {
        self.items.fetch_add(1, Ordering::Relaxed);
    }

    /// A tally that hands what it counts to this meter.
    #[must_use]
    pub fn tally(&self) -> Tally<'_> {
        Tally { meter: Some(self), bytes: 0, records: 0 }
    }

    /// What the meter shows now.
    #[must_use]
    pub fn read(&self) -> Reading {
        let stage = self.stage().clone();
        Reading {
            stage: stage.name,
            generation: stage.generation,
            bytes: self.bytes.load(Ordering::Relaxed),
            bytes_total: stage.bytes_total,
            records: self.records.load(Ordering::Relaxed),
            records_total: stage.records_total,
            items: self.items.load(Ordering::Relaxed),
            items_total: stage.items_total,
            unit: stage.unit,
            seconds: stage.started.elapsed().as_secs_f64(),
        }
    }
}

/// A reader's local count, handed to its meter (if any) every [`TALLY_BYTES`] and when dropped.
#[derive(Debug)]
pub struct Tally<'a> {
    meter: Option<&'a Meter>,
    bytes: u64,
    records: u64,
}

impl<'a> Tally<'a> {
    /// A tally for `meter`, if any.
    #[must_use]
    pub fn of(meter: Option<&'a Meter>) -> Tally<'a> {
        Tally { meter, bytes: 0, records: 0 }
    }

    /// Counts `bytes` and `records` read.
    #[inline]
    pub fn add(&mut self, bytes: u64, records: u64) {
        self.bytes += bytes;
        self.records += records;
        if self.bytes >= TALLY_BYTES {
            self.flush();
        }
    }

    /// Hands what is counted to the meter.
    pub fn flush(&mut self) {
        if let Some(m) = self.meter {
            m.add(self.bytes, self.records);
        }
        self.bytes = 0;
        self.records = 0;
    }
}

impl Drop for Tally<'_> {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_hands_its_counts_over_in_steps_and_when_dropped() {
        let meter = Meter::staged();
        meter.begin("read", Some(1 << 20));
        {
            let mut t = meter.tally();
            t.add(TALLY_BYTES - 1, 10);
            assert_eq!(meter.read().bytes, 0, "nothing handed over below a step");
            t.add(1, 1);
            assert_eq!((meter.read().bytes, meter.read().records), (TALLY_BYTES, 11));
            t.add(5, 2);
        }
        let r = meter.read();
        assert_eq!((r.bytes, r.records, r.bytes_total, r.stage.as_str()), (TALLY_BYTES + 5, 13, Some(1 << 20), "read"));
    }

    #[test]
    fn a_stage_starts_from_zero_but_a_running_total_adds_up() {
        let staged = Meter::staged();
        staged.add(100, 1);
        staged.begin("two", None);
        let r = staged.read();
        assert_eq!((r.bytes, r.records, r.generation, r.stage.as_str()), (0, 0, 1, "two"));
        let total = Meter::running_total();
        total.name("clean");
        total.add(100, 1);
        total.begin("two", None);
        total.add(50, 1);
        let r = total.read();
        assert_eq!((r.bytes, r.records, r.generation, r.stage.as_str()), (150, 2, 0, "clean"));
    }
}
