//! `dump --dir`: one record per line, every field labelled and every byte string quoted and escaped, so that
//! no key, value or header can look like another record, another field or a tombstone.
//!
//! ```text
//! offset=0 timestamp=1733000000000 key="user-1" value="alice"
//! offset=3 timestamp=1733000000123 key="user-2" value=TOMBSTONE delete_horizon=1733086400123
//! offset=7 timestamp=1733000000456 key=NULL value="line one\nline two" header "trace"="a\x00b"
//! ```
//!
//! Inside quotes: `\"`, `\\`, `\n`, `\r`, `\t`, other control characters and bytes that are not UTF-8 as
//! `\xNN`; everything else (printable UTF-8) as it is. An unkeyed record's key is `NULL` and a tombstone's
//! value `TOMBSTONE`, both unquoted, so the value `"TOMBSTONE"` (quoted) is never mistaken for one.

use std::fmt::Write as _;
use std::io::Write;

use log_core::{LogSnapshot, Record};

use crate::failure::Failure;

/// `bytes` quoted and escaped.
pub fn quoted(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() => {
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        let _ = write!(out, "\\x{b:02x}");
                    }
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out.push('"');
    out
}

/// One record as a line (without the newline).
pub fn line(r: &Record) -> String {
    let key = r.key.as_deref().map_or_else(|| "NULL".to_owned(), quoted);
    let value = r.value.as_deref().map_or_else(|| "TOMBSTONE".to_owned(), quoted);
    let mut s = format!("offset={} timestamp={} key={key} value={value}", r.offset, r.timestamp);
    if let Some(h) = r.delete_horizon {
        let _ = write!(s, " delete_horizon={h}");
    }
    for h in &r.headers {
        let value = h.value.as_deref().map_or_else(|| "NULL".to_owned(), quoted);
        let _ = write!(s, " header {}={value}", quoted(h.name.as_bytes()));
    }
    s
}

/// Writes every record of the snapshot, oldest first, one per line.
///
/// # Errors
/// A read error of the log, or a failed write.
pub fn dump(snapshot: &LogSnapshot, out: &mut impl Write) -> Result<(), Failure> {
    for r in snapshot.reader(0) {
        let r = r.map_err(|e| Failure::from_log("cannot read the log", &e))?;
        writeln!(out, "{}", line(&r)).map_err(|e| Failure::Runtime(format!("cannot write output: {e}")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use log_core::Header;

    fn record(key: Option<&[u8]>, value: Option<&[u8]>) -> Record {
        Record {
            offset: 7,
            timestamp: 11,
            key: key.map(<[u8]>::to_vec),
            value: value.map(<[u8]>::to_vec),
            headers: Vec::new(),
            delete_horizon: None,
        }
    }

    #[test]
    fn no_value_can_pass_for_another_record_or_a_tombstone() {
        assert_eq!(line(&record(Some(b"k"), None)), "offset=7 timestamp=11 key=\"k\" value=TOMBSTONE");
        assert_eq!(
            line(&record(Some(b"k"), Some(b"TOMBSTONE"))),
            "offset=7 timestamp=11 key=\"k\" value=\"TOMBSTONE\""
        );
        let sneaky = b"x\"\noffset=8 timestamp=0 key=\"k\" value=TOMBSTONE";
        let l = line(&record(Some(b"k"), Some(sneaky)));
        assert!(!l.contains('\n'), "{l}");
        assert_eq!(
            l,
            "offset=7 timestamp=11 key=\"k\" value=\"x\\\"\\noffset=8 timestamp=0 key=\\\"k\\\" value=TOMBSTONE\""
        );
        assert_eq!(
            line(&record(None, Some(b"\xff\x01\t\\"))),
            "offset=7 timestamp=11 key=NULL value=\"\\xff\\x01\\t\\\\\""
        );
        let mut r = record(Some("é".as_bytes()), Some(b"v"));
        r.headers.push(Header::new("h", b"a\x00b".to_vec()));
        r.delete_horizon = Some(99);
        assert_eq!(line(&r), "offset=7 timestamp=11 key=\"é\" value=\"v\" delete_horizon=99 header \"h\"=\"a\\x00b\"");
    }
}
