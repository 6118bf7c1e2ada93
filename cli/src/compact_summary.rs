//! The closing lines `compact` prints for a person: what the passes did to the log in all (sizes before and
//! after, records removed, time) and the next step, if any. Each pass's own figures come before it, in the
//! cleaner's summary (`cleaner::summary`), as `clean` prints them.

use cleaner::CleanStats;
use log_core::DirtySection;
use log_core::human::{bytes, count, duration};
use logcompact::Compaction;

use crate::hints::format_flag;

/// Bytes of closed segments: what a pass may rewrite (the active segment is never cleaned).
fn closed_bytes(s: &DirtySection) -> u64 {
    s.clean_bytes.saturating_add(s.dirty_bytes).saturating_add(s.too_young_bytes)
}

/// Two lines: `compacted DIR in N passes (T): closed segments A to B (P% smaller); R records removed (...)`,
/// then `next: ...`. Records removed are summed over the passes (a record is removed by one pass only);
/// sizes are measured on the log before the first pass and after the last.
pub fn summary(done: &Compaction, passes: &[CleanStats], format: log_core::Format) -> String {
    let dir = done.dir.display();
    let seconds: f64 = passes.iter().map(|p| p.total_seconds).sum();
    let removed: u64 = passes.iter().map(|p| p.pass2.records_read.saturating_sub(p.pass2.records_kept)).sum();
    let tombstones: u64 = passes.iter().map(|p| p.tombstones_dropped).sum();
    let aborted: u64 = passes.iter().map(|p| p.pass2.aborted_records_removed).sum();
    let (before, after) = (closed_bytes(&done.before), closed_bytes(&done.after));
    let smaller = if before == 0 { 0.0 } else { 100.0 * before.saturating_sub(after) as f64 / before as f64 };
    let mut why = vec![format!("{} among them", count(tombstones, "tombstone", "tombstones"))];
    if aborted > 0 {
        why.push(format!("{aborted} of aborted transactions"));
    }
    let done_line = format!(
        "compacted {dir} in {} ({}): closed segments {} to {} ({smaller:.1}% smaller); {} removed ({})",
        count(passes.len() as u64, "pass", "passes"),
        duration(seconds),
        bytes(before),
        bytes(after),
        count(removed, "record", "records"),
        why.join(", ")
    );
    format!("{done_line}\nnext: {}", next_step(done, passes, format))
}

/// What the operator can do next, from the log as the last pass left it.
fn next_step(done: &Compaction, passes: &[CleanStats], format: log_core::Format) -> String {
    let dir = done.dir.display();
    let flag = format_flag(format);
    let a = &done.after;
    if passes.last().is_some_and(|p| p.map_full) || a.dirty_bytes > 0 {
        return format!(
            "{} of the log is still dirty (the buffer filled before the end of the dirty section): run again with \
             --until-clean, or `logcompact advise --dir {dir}{flag}` for the buffer one pass needs",
            bytes(a.dirty_bytes)
        );
    }
    if a.closed_segments == 0 && a.active_records == 0 {
        return format!("nothing: the log is empty now (its next offset is {})", done.next_offset);
    }
    let mut waiting = Vec::new();
    if a.too_young_bytes > 0 && a.held_by_last_stable_offset {
        // Every closed segment from the one holding the last stable offset on waits for it, whatever its age.
        waiting.push(format!(
            "{} of closed segments wait until the last stable offset ({}) moves past them: {}",
            bytes(a.too_young_bytes),
            a.last_stable_offset.unwrap_or(0),
            if a.open_transactions > 0 {
                "open transactions hold it (`logcompact analyze --format kafka` names them)"
            } else {
                "the broker's high watermark holds it until the replicas have the records"
            }
        ));
    } else if a.too_young_bytes > 0 {
        waiting.push(format!(
            "{} of closed segments wait until their records are older than min.compaction.lag.ms",
            bytes(a.too_young_bytes)
        ));
    }
    if a.active_records > 0 {
        waiting.push(format!(
            "the active segment's {} are cleaned once it is sealed: `logcompact roll --dir {dir}{flag}`, then \
             compact again",
            count(a.active_records, "record", "records"),
        ));
    }
    if waiting.is_empty() { "nothing: every record is through a pass".to_owned() } else { waiting.join("; ") }
}
