//! The human summary of a pass, in the spirit of the lines Kafka's cleaner logs after each one.

use std::fmt::Write;

use log_core::human::{bytes, duration, rate};

use crate::stats::CleanStats;

fn share(part: f64, whole: f64) -> f64 {
    if whole > 0.0 { 100.0 * part / whole } else { 0.0 }
}

/// One line for one pass over the log `log`, for runs over many logs (what [`summary`] says in seven):
///
/// ```text
/// cleaner 0: orders pass 1: 4.1 MiB to 1.0 MiB (40000 to 10000 records, 75.0% smaller) in 0.05 s
/// ```
pub fn one_line(thread: Option<usize>, log: &str, stats: &CleanStats, passes: u64) -> String {
    let who = thread.map_or_else(|| "cleaner".to_owned(), |t| format!("cleaner {t}"));
    let p2 = &stats.pass2;
    format!(
        "{who}: {log} pass {passes}: {} to {} ({} to {} records, {:.1}% smaller) in {}{}",
        bytes(p2.bytes_read),
        bytes(p2.bytes_kept),
        p2.records_read,
        p2.records_kept,
        share(p2.bytes_read.saturating_sub(p2.bytes_kept) as f64, p2.bytes_read as f64),
        duration(stats.total_seconds),
        if stats.map_full { "; the map filled: another pass follows" } else { "" }
    )
}

/// The summary of one pass over the log `log` (by cleaner thread `thread`, when there are several; `passes`
/// on this log so far, this one included):
///
/// ```text
/// cleaner 0: cleaned log orders (dirty section: offsets 0-39999, map compact, pass 1)
///     6.2 MiB of log processed in 0.05 s (124.0 MiB/s)
///     indexed 2.1 MiB in 0.02 s (105.0 MiB/s, 40.0% of the time)
///     buffer utilization 12.3% (40000 keys, 314342 at most)
///     cleaned 4.1 MiB in 0.03 s (136.7 MiB/s, 60.0% of the time)
///     start size 4.1 MiB (40000 records), end size 1.0 MiB (10000 records)
///     75.0% size reduction (75.0% fewer records); 1 segment written, 3 merged into it, 0 removed
/// ```
pub fn summary(thread: Option<usize>, log: &str, stats: &CleanStats, passes: u64) -> String {
    let who = thread.map_or_else(|| "cleaner".to_owned(), |t| format!("cleaner {t}"));
    let (p1, p2) = (&stats.pass1, &stats.pass2);
    let total = stats.total_seconds;
    let read = p1.bytes_read + p2.bytes_read;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{who}: cleaned log {log} (dirty section: offsets {}, map {}, pass {passes}{})",
        log_core::human::offsets_until(stats.first_dirty_offset, stats.end_offset),
        stats.map,
        if stats.map_full { "; the map filled: the rest of the dirty section is left to a later pass" } else { "" }
    );
    let _ = writeln!(s, "    {} of log processed in {} ({})", bytes(read), duration(total), rate(read, total));
    phase_line(&mut s, "indexed", p1.bytes_read, p1.seconds, total);
    let m = &stats.offset_map;
    if m.capacity == u64::MAX {
        // The external pass: no table to fill, any number of keys in one pass.
        let _ = writeln!(s, "    buffer: {} keys (the external pass: any number in one pass)", m.entries);
    } else {
        let _ = writeln!(
            s,
            "    buffer utilization {:.1}% ({} keys, {} at most)",
            100.0 * m.utilization,
            m.entries,
            m.capacity
        );
    }
    phase_line(&mut s, "cleaned", p2.bytes_read, p2.seconds, total);
    let _ = writeln!(
        s,
        "    start size {} ({} records), end size {} ({} records)",
        bytes(p2.bytes_read),
        p2.records_read,
        bytes(p2.bytes_kept),
        p2.records_kept
    );
    let _ = write!(
        s,
        "    {:.1}% size reduction ({:.1}% fewer records); {} segment{} written, {} merged into {}, {} removed",
        share(p2.bytes_read.saturating_sub(p2.bytes_kept) as f64, p2.bytes_read as f64),
        share(p2.records_read.saturating_sub(p2.records_kept) as f64, p2.records_read as f64),
        stats.segments_rewritten,
        if stats.segments_rewritten == 1 { "" } else { "s" },
        stats.segments_merged,
        if stats.segments_rewritten == 1 { "it" } else { "them" },
        stats.segments_removed
    );
    s
}

/// One phase's line of the summary: what it did to how many bytes, in what time, at what rate, and its share of
/// the pass's `total` seconds.
fn phase_line(s: &mut String, did: &str, read: u64, seconds: f64, total: f64) {
    let _ = writeln!(
        s,
        "    {did} {} in {} ({}, {:.1}% of the time)",
        bytes(read),
        duration(seconds),
        rate(read, seconds),
        share(seconds, total)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_names_the_log_and_its_figures() {
        let mut stats =
            CleanStats { map: "compact".into(), end_offset: 40_000, total_seconds: 0.05, ..CleanStats::default() };
        stats.pass1.bytes_read = 2_202_010; // 2.1 MiB
        stats.pass1.seconds = 0.02;
        stats.pass2.bytes_read = 4_299_162; // 4.1 MiB
        stats.pass2.bytes_kept = 1_074_791;
        stats.pass2.records_read = 40_000;
        stats.pass2.records_kept = 10_000;
        stats.pass2.seconds = 0.03;
        stats.offset_map.utilization = 0.123;
        stats.segments_rewritten = 1;
        stats.segments_merged = 3;
        let text = summary(Some(0), "orders", &stats, 1);
        assert!(
            text.starts_with("cleaner 0: cleaned log orders (dirty section: offsets 0-39999, map compact, pass 1)"),
            "{text}"
        );
        assert!(text.contains("6.2 MiB of log processed in 0.05 s (124.0 MiB/s)"), "{text}");
        assert!(text.contains("indexed 2.1 MiB in 0.02 s (105.0 MiB/s, 40.0% of the time)"), "{text}");
        assert!(text.contains("buffer utilization 12.3%"), "{text}");
        assert!(text.contains("end size 1.0 MiB (10000 records)"), "{text}");
        stats.pass2.bytes_kept = 751_000;
        let small = summary(None, "orders", &stats, 2);
        assert!(small.contains("end size 733.4 KiB (10000 records)"), "below a MiB in KiB, never 0.7 MiB: {small}");
        assert!(
            text.contains("75.0% size reduction (75.0% fewer records); 1 segment written, 3 merged into it"),
            "{text}"
        );
        // The external pass holds no table: no "at most" figure, never the largest integer.
        stats.offset_map.capacity = u64::MAX;
        stats.offset_map.entries = 186_354;
        let external = summary(None, "orders", &stats, 1);
        assert!(external.contains("buffer: 186354 keys (the external pass: any number in one pass)"), "{external}");
        assert!(!external.contains(&u64::MAX.to_string()), "{external}");
    }
}
