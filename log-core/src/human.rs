//! How every command writes sizes, rates, durations and offset ranges for a person to read: one rule in one
//! place, so that `compact`, `clean`, `status`, `analyze`, `advise`, `check` and `repair` never disagree on a
//! unit or a precision. Machine output (`--json`) keeps the raw numbers; these are only for text.
//!
//! The rules:
//! - sizes in binary units, the largest that keeps the figure at or above 1 (`B`, `KiB`, `MiB`, `GiB`,
//!   `TiB`), one decimal: a partition of a few hundred kilobytes reads `733.4 KiB`, never `0.7 MiB`, so a pass
//!   that changes it shows the change;
//! - durations as the two largest units that matter (`2 d 3 h`, `4 h 12 min`, `3 min 5 s`), seconds with two
//!   decimals below ten seconds (`0.25 s`): never a raw count of seconds for an age;
//! - offset ranges inclusive, `first-last` (a single offset alone), and an empty range said in words.

/// `bytes` for a person: `512 B`, `733.4 KiB`, `26.7 MiB`, `1.5 GiB`.
pub fn bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{bytes} B") } else { format!("{v:.1} {}", UNITS[unit]) }
}

/// `bytes` read or written in `seconds`, per second: `124.0 MiB/s` (`-` when no time passed, a rate that
/// would be infinite).
pub fn rate(bytes: u64, seconds: f64) -> String {
    if seconds > 0.0 && seconds.is_finite() {
        // A rate above 2^64 bytes a second is no rate a disk gives; saturate rather than wrap.
        let per_second = (bytes as f64 / seconds).min(u64::MAX as f64);
        format!("{}/s", self::bytes(per_second as u64))
    } else {
        "-".to_owned()
    }
}

/// A duration of `seconds` for a person: `0.25 s`, `42.0 s`, `3 min 5 s`, `4 h 12 min`, `2 d 3 h`. Negative
/// or not-a-number durations (a clock set back) read as `0 s`.
pub fn duration(seconds: f64) -> String {
    if seconds.is_nan() || seconds <= 0.0 {
        return "0 s".to_owned();
    }
    if seconds < 10.0 {
        return format!("{seconds:.2} s");
    }
    if seconds < 60.0 {
        return format!("{seconds:.1} s");
    }
    // Whole seconds from here: a minute or more is not read to the millisecond.
    let whole = seconds.min(u64::MAX as f64).round() as u64;
    let (d, h, m, s) = (whole / 86_400, whole / 3600 % 24, whole / 60 % 60, whole % 60);
    if d > 0 {
        format!("{d} d {h} h")
    } else if h > 0 {
        format!("{h} h {m} min")
    } else {
        format!("{m} min {s} s")
    }
}

/// A duration of `ms` milliseconds, as [`duration`].
pub fn duration_ms(ms: u64) -> String {
    duration(ms as f64 / 1000.0)
}

/// The inclusive offset range `first..=last`: `4750-4799`, or `4750` for one offset.
pub fn offsets(first: u64, last: u64) -> String {
    if first == last { first.to_string() } else { format!("{first}-{last}") }
}

/// The offsets from `first` up to (not including) `end`, as [`offsets`]; `none` when the range is empty.
pub fn offsets_until(first: u64, end: u64) -> String {
    if end > first { offsets(first, end - 1) } else { "none".to_owned() }
}

/// `n` with the word for one or many of it: `1 record`, `2 records`, `0 records`.
pub fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_the_unit_that_shows_a_change() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1024), "1.0 KiB");
        assert_eq!(bytes(751_000), "733.4 KiB", "below a MiB in KiB, never 0.7 MiB");
        assert_eq!(bytes(28_000_000), "26.7 MiB");
        assert_eq!(bytes(3 << 29), "1.5 GiB");
        assert_eq!(bytes(u64::MAX), "16777216.0 TiB");
        assert_eq!(rate(130 << 20, 1.0), "130.0 MiB/s");
        assert_eq!(rate(1, 0.0), "-");
    }

    #[test]
    fn durations_read_as_durations() {
        assert_eq!(duration(0.0), "0 s");
        assert_eq!(duration(-3.0), "0 s");
        assert_eq!(duration(f64::NAN), "0 s");
        assert_eq!(duration(0.254), "0.25 s");
        assert_eq!(duration(42.04), "42.0 s");
        assert_eq!(duration(185.0), "3 min 5 s");
        assert_eq!(duration(4.0 * 3600.0 + 12.0 * 60.0 + 7.0), "4 h 12 min");
        assert_eq!(duration_ms(173_475_000), "2 d 0 h", "the issue's 173475 s");
        assert_eq!(duration_ms((2 * 86_400 + 3 * 3600) * 1000), "2 d 3 h");
        assert!(duration(f64::INFINITY).ends_with(" h"), "saturates, never panics");
    }

    #[test]
    fn offset_ranges_are_never_half_empty() {
        assert_eq!(offsets(4750, 4799), "4750-4799");
        assert_eq!(offsets(7, 7), "7");
        assert_eq!(offsets_until(0, 18_964), "0-18963");
        assert_eq!(offsets_until(5, 5), "none");
        assert_eq!(offsets_until(9, 5), "none");
        assert_eq!(count(1, "record", "records"), "1 record");
        assert_eq!(count(0, "record", "records"), "0 records");
    }
}
