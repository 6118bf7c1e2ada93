//! Progress of a long command on standard error, read from a [`Meter`] the libraries count on: on a terminal
//! one line redrawn a few times a second (from the first second on, cleared at the end); off a terminal a
//! plain line every [`DEFAULT_INTERVAL`] (`LOGCOMPACT_PROGRESS_INTERVAL_MS` sets it, `off` or `0` silences
//! progress everywhere). A run shorter than its first interval prints nothing, so a short command's standard
//! error stays as it was; standard output is never written.
//!
//! Invariants: the reporter only reads the meter (relaxed loads on its own thread), so the work it watches
//! never waits on it; a failed write to standard error is ignored; every other line a command writes while a
//! reporter runs goes through [`Reporter::suspend`], so a terminal's progress line never cuts it.

mod line;

use std::io::IsTerminal;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use log_core::progress::Meter;

/// How often a line is printed off a terminal unless `LOGCOMPACT_PROGRESS_INTERVAL_MS` says otherwise.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);
/// The environment variable setting the interval (milliseconds, or `off`).
pub const INTERVAL_VAR: &str = "LOGCOMPACT_PROGRESS_INTERVAL_MS";
/// How long a run goes before a terminal shows its line.
const TERMINAL_DELAY: Duration = Duration::from_secs(1);
/// How often a terminal's line is redrawn.
const TERMINAL_TICK: Duration = Duration::from_millis(200);

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Off,
    Terminal,
    Lines(Duration),
}

/// The mode for this process: `LOGCOMPACT_PROGRESS_INTERVAL_MS`, then whether standard error is a terminal.
fn mode() -> Mode {
    let interval = match std::env::var(INTERVAL_VAR) {
        Err(_) => DEFAULT_INTERVAL,
        Ok(v) => match parse_interval(&v) {
            Some(None) => return Mode::Off,
            Some(Some(d)) => d,
            None => {
                crate::out::diag!(
                    "note: {INTERVAL_VAR}={v:?} is neither milliseconds nor off: progress every {} s",
                    DEFAULT_INTERVAL.as_secs()
                );
                DEFAULT_INTERVAL
            }
        },
    };
    if std::io::stderr().is_terminal() { Mode::Terminal } else { Mode::Lines(interval) }
}

/// `Some(None)` for off, `Some(Some(d))` for an interval, `None` for neither.
fn parse_interval(v: &str) -> Option<Option<Duration>> {
    match v.trim() {
        "off" | "0" => Some(None),
        ms => ms.parse::<u64>().ok().map(|ms| Some(Duration::from_millis(ms))),
    }
}

/// A running reporter: stop it with [`Reporter::finish`] (or by dropping it), which clears a terminal's line.
#[derive(Debug)]
pub struct Reporter {
    bar: ProgressBar,
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Reporter {
    /// Starts reporting `meter` as the reads of the command `what`, as this process's mode says.
    pub fn start(what: &'static str, meter: Arc<Meter>) -> Reporter {
        Reporter::with_mode(what, "read", meter, mode())
    }

    /// As [`Reporter::start`] for a command that writes its bytes.
    pub fn start_writing(what: &'static str, meter: Arc<Meter>) -> Reporter {
        Reporter::with_mode(what, "written", meter, mode())
    }

    fn with_mode(what: &'static str, verb: &'static str, meter: Arc<Meter>, mode: Mode) -> Reporter {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        if let Ok(style) = ProgressStyle::with_template("{wide_msg}") {
            bar.set_style(style);
        }
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let thread = match mode {
            Mode::Off => None,
            Mode::Terminal | Mode::Lines(_) => {
                let (bar, stop) = (bar.clone(), Arc::clone(&stop));
                // No thread, no progress: the command goes on without it.
                std::thread::Builder::new()
                    .name("progress".into())
                    .spawn(move || report((what, verb), &meter, mode, &bar, &stop))
                    .ok()
            }
        };
        Reporter { bar, stop, thread }
    }

    /// Runs `f` (which writes a line for people) with a terminal's progress line out of its way.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.bar.suspend(f)
    }

    /// A handle for other threads' lines, as [`Reporter::suspend`]; it outlives the reporter harmlessly.
    pub fn pause(&self) -> Pause {
        Pause(self.bar.clone())
    }

    /// Stops reporting and clears a terminal's line.
    pub fn finish(self) {
        drop(self);
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        let (lock, wake) = &*self.stop;
        *lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = true;
        wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.bar.finish_and_clear();
    }
}

/// Runs `f` with a meter whose progress is reported as the reads of the command `what` (a `staged` meter, else
/// a running total), until `f` returns.
pub fn during<T>(what: &'static str, staged: bool, f: impl FnOnce(&Meter) -> T) -> T {
    let meter = Arc::new(if staged { Meter::staged() } else { Meter::running_total() });
    let reporter = Reporter::start(what, Arc::clone(&meter));
    let out = f(&meter);
    reporter.finish();
    out
}

/// [`Reporter::suspend`] for a line written elsewhere (an event of a cleaner thread).
#[derive(Debug, Clone)]
pub struct Pause(ProgressBar);

impl Pause {
    /// Runs `f` with a terminal's progress line out of its way.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.0.suspend(f)
    }
}

/// The reporter's thread: until stopped, a line every interval (off a terminal), or the terminal's line
/// redrawn every tick from its first second on.
fn report((what, verb): (&str, &str), meter: &Meter, mode: Mode, bar: &ProgressBar, stop: &(Mutex<bool>, Condvar)) {
    let started = Instant::now();
    let tick = match mode {
        Mode::Lines(interval) => interval,
        _ => TERMINAL_TICK,
    };
    let (lock, wake) = stop;
    let mut stopped = lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut drawn = false;
    loop {
        // The flag is looked at before waiting too: a stop may come before this thread first waits.
        let (guard, _) = wake
            .wait_timeout_while(stopped, tick, |stopped| !*stopped)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        stopped = guard;
        if *stopped {
            return;
        }
        let text = line::line(what, verb, &meter.read());
        match mode {
            Mode::Lines(_) => crate::out::diag!("{text}"),
            _ if started.elapsed() < TERMINAL_DELAY => {}
            _ => {
                if !drawn {
                    bar.set_draw_target(ProgressDrawTarget::stderr());
                    drawn = true;
                }
                bar.set_message(text);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_is_milliseconds_or_off() {
        assert_eq!(parse_interval("50"), Some(Some(Duration::from_millis(50))));
        assert_eq!(parse_interval("off"), Some(None));
        assert_eq!(parse_interval("0"), Some(None));
        assert_eq!(parse_interval("5s"), None);
    }

    #[test]
    fn a_reporter_stops_at_once_when_finished() {
        for pause in [Duration::ZERO, Duration::from_millis(50)] {
            let started = Instant::now();
            let r =
                Reporter::with_mode("test", "read", Arc::new(Meter::staged()), Mode::Lines(Duration::from_secs(60)));
            // At once (perhaps before its thread first waits), or once it waits.
            std::thread::sleep(pause);
            r.finish();
            assert!(started.elapsed() < Duration::from_secs(5), "finish waited for the interval");
        }
    }
}
