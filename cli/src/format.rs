//! How `DUMP` and `READ` print records.

use std::fmt::Write;

use log_core::{LogSnapshot, Record};

/// `OFFSET KEY=VALUE`, with `TOMBSTONE` for a null value and `<no key>` for an unkeyed record. Bytes that are
/// not UTF-8 are shown with the replacement character.
pub fn record(r: &Record) -> String {
    let key = r.key.as_deref().map_or("<no key>".into(), String::from_utf8_lossy);
    let value = r.value.as_deref().map_or("TOMBSTONE".into(), String::from_utf8_lossy);
    format!("{} {key}={value}", r.offset)
}

/// One line per segment, oldest first: `segment BASE: OFFSET KEY=VALUE ... (closed)`, the active segment
/// last with `(active)`.
///
/// # Errors
/// A read error of the log.
pub fn dump(snapshot: &LogSnapshot) -> log_core::Result<Vec<String>> {
    let mut lines = Vec::new();
    for segment in snapshot.closed() {
        let mut line = format!("segment {}:", segment.base());
        for item in segment.records() {
            let (_, rec, _) = item?;
            let _ = write!(line, " {}", record(&rec.to_record()));
        }
        line.push_str(" (closed)");
        lines.push(line);
    }
    let mut line = format!("segment {}:", snapshot.active_base());
    for rec in snapshot.active_records()? {
        let _ = write!(line, " {}", record(&rec));
    }
    line.push_str(" (active)");
    lines.push(line);
    Ok(lines)
}
