//! What opening a log repaired, as sentences for an operator.

use log_core::RecoveryReport;

/// Lines describing what a recovery report says was repaired (`done`) or will be (`!done`).
pub fn describe_recovery(r: &RecoveryReport, done: bool) -> Vec<String> {
    let (did, will) = if done { ("", "") } else { ("the next open ", "will ") };
    let mut lines = Vec::new();
    if let Some(t) = &r.truncated_tail {
        let verb = if done { "cut" } else { "will cut" };
        lines.push(format!(
            "recovery: {did}{verb} a torn tail of {} bytes off {} at byte {} ({})",
            t.bytes, t.segment, t.position, t.kind
        ));
    }
    if r.swaps_completed > 0 {
        let verb = if done { "completed" } else { "complete" };
        lines
            .push(format!("recovery: {did}{will}{verb} an interrupted cleaning swap ({} segments)", r.swaps_completed));
    }
    for e in r.pending_swaps.iter().filter(|e| e.removed.records > 0) {
        let verb = if done { "removed" } else { "removes" };
        lines.push(format!(
            "recovery: completing {} {verb} {} records a cleaning pass may drop, at offsets {}",
            e.file,
            e.removed.records,
            e.removed.describe()
        ));
    }
    if r.cleaned_files_discarded > 0 {
        let verb = if done { "rolled back" } else { "roll back" };
        lines.push(format!(
            "recovery: {did}{will}{verb} an interrupted cleaning swap ({} files)",
            r.cleaned_files_discarded
        ));
    }
    if let Some(c) = r.checkpoint_reset {
        lines.push(format!(
            "recovery: the cleaner checkpoint {} is past the end of the log; cleaning restarts from offset {}",
            c.found, c.reset_to
        ));
    }
    for name in &r.ignored_files {
        lines.push(format!("notice: {name} is not a file of the log: left alone"));
    }
    lines
}
