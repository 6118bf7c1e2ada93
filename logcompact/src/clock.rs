//! A clock a pass may trust. Every delete horizon a pass stamps is its clock plus `delete.retention.ms`, and a
//! later pass drops the tombstones and markers whose horizon is behind its clock: a clock set in the past stamps
//! horizons that have already passed (the next pass purges every tombstone), one set in the future purges them
//! now. So a clock given by hand (`--now-ms`) is refused when it lies before the newest record of the log (beyond
//! what a broker lets a record lead its own clock: Kafka's `message.timestamp.after.max.ms`, an hour) or more than
//! a day after the system clock, unless the caller says it knows ([`ClockTrust::Trusted`]).
//!
//! ```
//! use logcompact::{ClockError, check_clock};
//! // A clock ten years ahead of the system's.
//! let now = 1_800_000_000_000;
//! let ten_years = 10 * 365 * 86_400_000;
//! assert!(matches!(check_clock(now + ten_years, now), Err(ClockError::AheadOfSystem { .. })));
//! assert!(check_clock(now, now).is_ok());
//! ```

use log_core::Log;

/// How far a record's timestamp may lead the broker's clock (Kafka's default `message.timestamp.after.max.ms`).
pub const RECORDS_MAY_LEAD_MS: i64 = 3_600_000;

/// How far a clock given by hand may lead the system clock.
pub const CLOCK_MAY_LEAD_SYSTEM_MS: i64 = 86_400_000;

/// Whether a pass's clock is checked against the log and the system clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClockTrust {
    /// Checked ([`check_clock`], [`check_clock_for_log`]).
    #[default]
    Checked,
    /// Taken as it is (the caller knows the clock is right: `--i-know-the-clock`).
    Trusted,
}

/// Why a clock is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClockError {
    /// Before 1970.
    #[error("the clock {now_ms} is before 1970")]
    BeforeEpoch {
        /// The clock, ms since the epoch.
        now_ms: i64,
    },
    /// More than a day after the system clock.
    #[error(
        "the clock {now_ms} is {} h after the system clock ({system_ms}): every delete horizon would pass at once",
        (now_ms - system_ms) / 3_600_000
    )]
    AheadOfSystem {
        /// The clock.
        now_ms: i64,
        /// The system clock.
        system_ms: i64,
    },
    /// Before the newest record of the log, by more than a record may lead a broker's clock.
    #[error(
        "the clock {now_ms} is {} s before the newest record of the log ({newest_ms}): the delete horizons it \
         stamps would already have passed",
        (newest_ms - now_ms) / 1000
    )]
    BeforeRecords {
        /// The clock.
        now_ms: i64,
        /// The newest record's timestamp.
        newest_ms: i64,
    },
}

/// Checks a clock given by hand against the system clock.
///
/// # Errors
/// [`ClockError::BeforeEpoch`]; [`ClockError::AheadOfSystem`] past [`CLOCK_MAY_LEAD_SYSTEM_MS`].
pub fn check_clock(now_ms: i64, system_ms: i64) -> Result<(), ClockError> {
    if now_ms < 0 {
        return Err(ClockError::BeforeEpoch { now_ms });
    }
    if now_ms.saturating_sub(system_ms) > CLOCK_MAY_LEAD_SYSTEM_MS {
        return Err(ClockError::AheadOfSystem { now_ms, system_ms });
    }
    Ok(())
}

/// The newest record timestamp of `log`, if it holds any.
pub fn newest_timestamp(log: &Log) -> Option<i64> {
    let snapshot = log.snapshot();
    snapshot.closed().iter().filter_map(|s| s.summary().max_timestamp).chain(snapshot.active_max_timestamp()).max()
}

/// Checks that a pass on `log` at `now_ms` stamps no delete horizon in the past of its records: `now_ms` is not
/// before the newest record by more than [`RECORDS_MAY_LEAD_MS`].
///
/// # Errors
/// [`ClockError::BeforeEpoch`]; [`ClockError::BeforeRecords`].
pub fn check_clock_for_log(now_ms: i64, log: &Log) -> Result<(), ClockError> {
    if now_ms < 0 {
        return Err(ClockError::BeforeEpoch { now_ms });
    }
    match newest_timestamp(log) {
        Some(newest_ms) if now_ms.saturating_add(RECORDS_MAY_LEAD_MS) < newest_ms => {
            Err(ClockError::BeforeRecords { now_ms, newest_ms })
        }
        _ => Ok(()),
    }
}

/// A duration in ms as people read it: seconds, minutes, hours or days.
pub fn age(ms: i64) -> String {
    let s = ms / 1000;
    match s {
        _ if s < 120 => format!("{s} s"),
        _ if s < 7_200 => format!("{} min", s / 60),
        _ if s < 172_800 => format!("{} h", s / 3_600),
        _ => format!("{} days", s / 86_400),
    }
}
