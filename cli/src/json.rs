//! `dump --json`: the log as JSON, with bytes shown as UTF-8 text and other bytes escaped.

use std::fmt::Write;

use log_core::{LogSnapshot, Record};
use serde::Serialize;

/// One segment.
#[derive(Debug, Serialize)]
pub struct JsonSegment {
    /// Base offset.
    pub base: u64,
    /// `"closed"` or `"active"`.
    pub state: &'static str,
    /// Records, oldest first.
    pub records: Vec<JsonRecord>,
}

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

fn record(r: &Record) -> JsonRecord {
    JsonRecord {
        offset: r.offset,
        timestamp: r.timestamp,
        key: r.key.as_deref().map(escape),
        value: r.value.as_deref().map(escape),
        headers: r
            .headers
            .iter()
            .map(|h| JsonHeader { name: h.name.clone(), value: h.value.as_deref().map(escape) })
            .collect(),
        delete_horizon: r.delete_horizon,
    }
}

/// Every segment of the snapshot.
///
/// # Errors
/// A read error of the log.
pub fn segments(snapshot: &LogSnapshot) -> log_core::Result<Vec<JsonSegment>> {
    let mut out = Vec::new();
    for s in snapshot.closed() {
        let records = s.read_records()?.iter().map(record).collect();
        out.push(JsonSegment { base: s.base(), state: "closed", records });
    }
    let records = snapshot.active_records()?.iter().map(record).collect();
    out.push(JsonSegment { base: snapshot.active_base(), state: "active", records });
    Ok(out)
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
