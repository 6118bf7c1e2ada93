//! The words of a progress line, the same on a terminal and off one: what is being done, how far, how fast, and
//! how long is left. `compact: pass 1 (offset map): 12.3 MiB of 40.0 MiB read, 120000 records, 35.2 MiB/s,
//! about 1 s left`.

use log_core::human;
use log_core::progress::Reading;

/// The line for `r` of the command `what`, whose bytes are `verb` (`read`, `written`), its rate over the
/// stage's time so far.
///
/// Invariants: never more done than the total shown (a total is an estimate); the time left only once
/// something has been done, from the bytes when their total is known, else the records', else the items'.
pub fn line(what: &str, verb: &str, r: &Reading) -> String {
    let mut parts = Vec::with_capacity(5);
    if let Some(items_total) = r.items_total {
        parts.push(format!("{} of {items_total} {}", r.items.min(items_total), r.unit));
    } else if !r.unit.is_empty() {
        parts.push(format!("{}: {}", r.unit, r.items));
    }
    let head = if r.stage.is_empty() { what.to_owned() } else { format!("{what}: {}", r.stage) };
    if r.bytes == 0 && r.records == 0 && r.bytes_total.is_none() {
        // Nothing counted yet (a log being opened): no figures to show but the items'.
        parts.push("starting".to_owned());
        return format!("{head}: {}", parts.join(", "));
    }
    parts.push(match r.bytes_total {
        Some(total) => format!("{} of {} {verb}", human::bytes(r.bytes.min(total)), human::bytes(total)),
        None => format!("{} {verb}", human::bytes(r.bytes)),
    });
    parts.push(match r.records_total {
        Some(total) => format!("{} of {total} records", r.records.min(total)),
        None => human::count(r.records, "record", "records"),
    });
    parts.push(human::rate(r.bytes, r.seconds));
    if let Some(left) = seconds_left(r) {
        parts.push(format!("about {} left", left_words(left)));
    }
    format!("{head}: {}", parts.join(", "))
}

/// Seconds left at the pace so far: by bytes when their total is known, else by records, else by items.
fn seconds_left(r: &Reading) -> Option<f64> {
    let (done, total) = match (r.bytes_total, r.records_total, r.items_total) {
        (Some(total), _, _) => (r.bytes, total),
        (None, Some(total), _) => (r.records, total),
        (None, None, Some(total)) => (r.items, total),
        (None, None, None) => return None,
    };
    (r.seconds > 0.0 && done > 0).then(|| total.saturating_sub(done) as f64 * r.seconds / done as f64)
}

/// A time left, in whole seconds below a minute (an estimate is not read to the hundredth).
fn left_words(seconds: f64) -> String {
    if seconds < 59.5 { format!("{} s", seconds.ceil().max(0.0) as u64) } else { human::duration(seconds) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading() -> Reading {
        Reading {
            stage: "pass 1 (offset map)".into(),
            generation: 1,
            bytes: 12 << 20,
            bytes_total: Some(40 << 20),
            records: 120_000,
            records_total: None,
            items: 0,
            items_total: None,
            unit: "",
            seconds: 2.0,
        }
    }

    #[test]
    fn a_line_says_how_far_how_fast_and_how_long_is_left() {
        assert_eq!(
            line("compact", "read", &reading()),
            "compact: pass 1 (offset map): 12.0 MiB of 40.0 MiB read, 120000 records, 6.0 MiB/s, about 5 s left"
        );
    }

    #[test]
    fn without_a_byte_total_the_items_tell_the_time_left() {
        let r = Reading {
            stage: String::new(),
            bytes_total: None,
            items: 1,
            items_total: Some(4),
            unit: "logs",
            seconds: 100.0,
            ..reading()
        };
        assert_eq!(
            line("check", "read", &r),
            "check: 1 of 4 logs, 12.0 MiB read, 120000 records, 122.9 KiB/s, about 5 min 0 s left"
        );
        let none_done = Reading { items: 0, ..r.clone() };
        assert!(!line("check", "read", &none_done).contains("left"), "no estimate before the first item");
        let no_total = Reading { items_total: None, unit: "passes", ..r };
        assert_eq!(line("clean", "read", &no_total), "clean: passes: 1, 12.0 MiB read, 120000 records, 122.9 KiB/s");
    }

    #[test]
    fn a_writer_counts_its_records_against_their_total() {
        let r = Reading { stage: String::new(), bytes_total: None, records_total: Some(480_000), ..reading() };
        assert_eq!(
            line("gen", "written", &r),
            "gen: 12.0 MiB written, 120000 of 480000 records, 6.0 MiB/s, about 6 s left"
        );
    }

    #[test]
    fn before_anything_is_counted_a_line_says_it_is_starting() {
        let r = Reading { stage: String::new(), bytes: 0, records: 0, bytes_total: None, ..reading() };
        assert_eq!(line("check", "read", &r), "check: starting");
        let r = Reading { items_total: Some(3), unit: "logs", ..r };
        assert_eq!(line("check", "read", &r), "check: 0 of 3 logs, starting");
    }

    #[test]
    fn more_read_than_the_estimate_never_shows_past_the_total() {
        let r = Reading { bytes: 50 << 20, ..reading() };
        assert!(line("compact", "read", &r).contains("40.0 MiB of 40.0 MiB read"), "{}", line("compact", "read", &r));
        assert!(line("compact", "read", &r).ends_with("about 0 s left"), "{}", line("compact", "read", &r));
    }
}
