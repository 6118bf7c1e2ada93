//! Points in time on the command line (`check --modified-since`): an age (`90s`, `30m`, `24h`, `7d`, counted
//! back from now), a UTC date or date and time (`2026-12-01`, `2026-12-01T08:30:00Z`, `2026-12-01 08:30`), or
//! milliseconds since the Unix epoch (as Kafka's record timestamps and `--now-ms` count time).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Parses a point in time as the module says.
///
/// # Errors
/// A message naming what was expected.
pub fn parse_time(text: &str) -> Result<SystemTime, String> {
    let t = text.trim();
    let bad = || {
        format!(
            "'{text}' is not a time: give an age (90s, 30m, 24h, 7d), a UTC date and time (2026-12-01T08:30:00Z) \
             or milliseconds since the epoch"
        )
    };
    if t.is_empty() {
        return Err(bad());
    }
    if t.bytes().all(|b| b.is_ascii_digit()) {
        let ms: u64 = t.parse().map_err(|_| bad())?;
        return UNIX_EPOCH.checked_add(Duration::from_millis(ms)).ok_or_else(bad);
    }
    if let Some(age) = parse_age(t) {
        return SystemTime::now().checked_sub(age).ok_or_else(bad);
    }
    let seconds = parse_utc(t).ok_or_else(bad)?;
    UNIX_EPOCH.checked_add(Duration::from_secs(seconds)).ok_or_else(bad)
}

/// `<digits><s|m|h|d>`.
fn parse_age(t: &str) -> Option<Duration> {
    let unit = t.chars().last()?;
    let n: u64 = t[..t.len() - unit.len_utf8()].parse().ok()?;
    let seconds = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => return None,
    };
    Some(Duration::from_secs(n.checked_mul(seconds)?))
}

/// `YYYY-MM-DD`, then optionally `T` or a space, `HH:MM` and `:SS`, then optionally `Z`: seconds since the
/// epoch, as UTC.
fn parse_utc(t: &str) -> Option<u64> {
    let t = t.strip_suffix('Z').unwrap_or(t);
    let (date, time) = match t.find(['T', ' ']) {
        Some(i) => (&t[..i], Some(&t[i + 1..])),
        None => (t, None),
    };
    let mut d = date.split('-');
    let (year, month, day): (u64, u64, u64) =
        (d.next()?.parse().ok()?, d.next()?.parse().ok()?, d.next()?.parse().ok()?);
    if d.next().is_some() || !(1970..=9999).contains(&year) || !(1..=12).contains(&month) {
        return None;
    }
    if day == 0 || day > days_in_month(year, month) {
        return None;
    }
    let (mut hour, mut minute, mut second) = (0, 0, 0);
    if let Some(time) = time {
        let mut parts = time.split(':');
        hour = parts.next()?.parse().ok()?;
        minute = parts.next()?.parse().ok()?;
        if let Some(s) = parts.next() {
            second = s.parse().ok()?;
        }
        if parts.next().is_some() || hour > 23 || minute > 59 || second > 59 {
            return None;
        }
    }
    let days = days_before_year(year) + (1..month).map(|m| days_in_month(year, m)).sum::<u64>() + day - 1;
    Some(days * 86_400 + hour * 3600 + minute * 60 + second)
}

fn is_leap(year: u64) -> bool {
    (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400)
}

fn days_in_month(year: u64, month: u64) -> u64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the first of January of `year` (>= 1970).
fn days_before_year(year: u64) -> u64 {
    (1970..year).map(|y| if is_leap(y) { 366 } else { 365 }).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(t: SystemTime) -> u64 {
        t.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
    }

    #[test]
    fn dates_and_times_are_utc() {
        assert_eq!(parse_utc("1970-01-01"), Some(0));
        assert_eq!(parse_utc("2000-03-01T00:00:00Z"), Some(951_868_800));
        assert_eq!(parse_utc("2026-12-03T18:31:28Z"), Some(1_796_322_688));
        assert_eq!(parse_utc("2026-12-03 18:31"), Some(1_796_322_660));
        assert_eq!(parse_utc("2024-02-30"), None);
        assert_eq!(parse_utc("2026-13-01"), None);
        assert_eq!(parse_utc("2026-12-03T24:00"), None);
    }

    #[test]
    fn ages_count_back_from_now_and_numbers_are_epoch_milliseconds() {
        let now = secs(SystemTime::now());
        let day_ago = secs(parse_time("1d").expect("age"));
        assert!((now - 86_400..=now - 86_399).contains(&day_ago), "{now} {day_ago}");
        assert_eq!(secs(parse_time("1796322688000").expect("ms")), 1_796_322_688);
        assert!(parse_time("3 weeks").is_err());
        assert!(parse_time("").is_err());
        assert!(parse_time("99999999999999999999d").is_err());
    }
}
