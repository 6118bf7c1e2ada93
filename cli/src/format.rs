//! How `DUMP` and `READ` print records.

use std::io::Write;

use log_core::{LogSnapshot, Record};

use crate::failure::Failure;

/// `OFFSET KEY=VALUE`, with `TOMBSTONE` for a null value and `<no key>` for an unkeyed record. Bytes that are
/// not UTF-8 are shown with the replacement character.
pub fn record(r: &Record) -> String {
    let key = r.key.as_deref().map_or("<no key>".into(), String::from_utf8_lossy);
    let value = r.value.as_deref().map_or("TOMBSTONE".into(), String::from_utf8_lossy);
    format!("{} {key}={value}", r.offset)
}

fn write_failed(e: std::io::Error) -> Failure {
    Failure::Runtime(format!("cannot write output: {e}"))
}

/// Writes one line per segment, oldest first: `segment BASE: OFFSET KEY=VALUE ... (closed)`, the active
/// segment last with `(active)`.
///
/// # Errors
/// A read error of the log, or a failed write.
pub fn dump(snapshot: &LogSnapshot, out: &mut impl Write) -> Result<(), Failure> {
    let read = |e: log_core::Error| Failure::from_log("cannot read the log", &e);
    for segment in snapshot.closed() {
        write!(out, "segment {}:", segment.base()).map_err(write_failed)?;
        for rec in segment.read_records().map_err(read)? {
            write!(out, " {}", record(&rec)).map_err(write_failed)?;
        }
        writeln!(out, " (closed)").map_err(write_failed)?;
    }
    write!(out, "segment {}:", snapshot.active_base()).map_err(write_failed)?;
    for rec in snapshot.active_records().map_err(read)? {
        write!(out, " {}", record(&rec)).map_err(write_failed)?;
    }
    writeln!(out, " (active)").map_err(write_failed)
}
