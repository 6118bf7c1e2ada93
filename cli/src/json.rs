//! `dump --json`: the log as JSON, with bytes shown as UTF-8 text and other bytes escaped.

use std::fmt::Write;

use log_core::LogSnapshot;

use crate::failure::Failure;
use serde::Serialize;

/// One record.
#[derive(Debug, Serialize)]
pub struct JsonRecord {
    /// Offset.
    pub offset: u64,
    /// Timestamp in ms.
    pub timestamp: i64,
    /// Key (null when the record has none).
    pub key: Option<String>,
    /// Value (null for a tombstone).
    pub value: Option<String>,
    /// Headers in order.
    pub headers: Vec<JsonHeader>,
    /// Delete horizon of a tombstone kept by a pass (null otherwise).
    pub delete_horizon: Option<i64>,
}

/// One header.
#[derive(Debug, Serialize)]
pub struct JsonHeader {
    /// Name.
    pub name: String,
    /// Value (null for a null value, which only Kafka's format has).
    pub value: Option<String>,
}

/// Bytes as text: valid UTF-8 as is, a backslash as `\\`, every other byte as `\xNN`.
pub fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\\' {
                out.push_str("\\\\");
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

fn record_ref(r: &log_core::RecordRef<'_>) -> JsonRecord {
    JsonRecord {
        offset: r.offset,
        timestamp: r.timestamp,
        key: r.key.map(escape),
        value: r.value.map(escape),
        headers: r.headers().map(|(n, v)| JsonHeader { name: escape(n), value: v.map(escape) }).collect(),
        delete_horizon: r.delete_horizon,
    }
}

/// Writes every segment of the snapshot as a JSON array of segments, a record at a time (memory stays that of
/// one read window, whatever the log's size).
///
/// # Errors
/// [`Failure::from_log`] for a read error of the log; [`Failure::Runtime`] when the output cannot be written.
pub fn write_segments(snapshot: &LogSnapshot, out: &mut dyn std::io::Write) -> Result<(), Failure> {
    let failed = |e: std::io::Error| Failure::Runtime(format!("cannot write output: {e}"));
    let read = |e: log_core::Error| Failure::from_log("cannot read the log", &e);
    let closed = snapshot.closed();
    let active = log_core::SegmentScan::new(
        log_core::Format::Native,
        snapshot.active_name(),
        snapshot.active_source(),
        0,
        snapshot.active_len(),
        true,
    );
    let scans =
        closed.iter().map(|s| (s.base(), "closed", s.scan())).chain([(snapshot.active_base(), "active", active)]);
    out.write_all(b"[").map_err(failed)?;
    for (i, (base, state, mut scan)) in scans.enumerate() {
        let sep = if i == 0 { "" } else { "," };
        write!(out, "{sep}{{\"base\":{base},\"state\":\"{state}\",\"records\":[").map_err(failed)?;
        let mut first = true;
        while let Some(window) = scan.next_window().map_err(read)? {
            for item in window.batches() {
                let placed = item.map_err(read)?;
                let Some(r) = placed.batch.native_record() else { continue };
                if !first {
                    out.write_all(b",").map_err(failed)?;
                }
                first = false;
                serde_json::to_writer(&mut *out, &record_ref(r)).map_err(|e| failed(e.into()))?;
            }
        }
        out.write_all(b"]}").map_err(failed)?;
    }
    out.write_all(b"]\n").map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_is_not_utf8() {
        assert_eq!(escape(b"plain"), "plain");
        assert_eq!(escape("é".as_bytes()), "é");
        assert_eq!(escape(b"a\xffb\\"), "a\\xffb\\\\");
    }
}
