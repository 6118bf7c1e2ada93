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

use std::io::Write;

use log_core::{LogSnapshot, Record};

use crate::failure::Failure;

/// Writes `bytes` quoted and escaped (the module's rules), a run of plain characters at a time: a value of
/// hundreds of MB is never copied whole.
///
/// # Errors
/// A failed write.
pub fn write_quoted(out: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
    out.write_all(b"\"")?;
    for chunk in bytes.utf8_chunks() {
        let valid = chunk.valid();
        let mut plain = 0;
        for (at, c) in valid.char_indices() {
            let escaped: &[u8] = match c {
                '"' => b"\\\"",
                '\\' => b"\\\\",
                '\n' => b"\\n",
                '\r' => b"\\r",
                '\t' => b"\\t",
                c if c.is_control() => b"",
                _ => continue,
            };
            out.write_all(&valid.as_bytes()[plain..at])?;
            plain = at + c.len_utf8();
            if escaped.is_empty() {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    write!(out, "\\x{b:02x}")?;
                }
            } else {
                out.write_all(escaped)?;
            }
        }
        out.write_all(&valid.as_bytes()[plain..])?;
        for b in chunk.invalid() {
            write!(out, "\\x{b:02x}")?;
        }
    }
    out.write_all(b"\"")
}

/// Writes one record as a line (without the newline), its bytes escaped on the way out.
///
/// # Errors
/// A failed write.
pub fn write_line(out: &mut impl Write, r: &Record) -> std::io::Result<()> {
    write!(out, "offset={} timestamp={} key=", r.offset, r.timestamp)?;
    match &r.key {
        Some(k) => write_quoted(out, k)?,
        None => out.write_all(b"NULL")?,
    }
    out.write_all(b" value=")?;
    match &r.value {
        Some(v) => write_quoted(out, v)?,
        None => out.write_all(b"TOMBSTONE")?,
    }
    if let Some(h) = r.delete_horizon {
        write!(out, " delete_horizon={h}")?;
    }
    for h in &r.headers {
        out.write_all(b" header ")?;
        write_quoted(out, h.name.as_bytes())?;
        out.write_all(b"=")?;
        match &h.value {
            Some(v) => write_quoted(out, v)?,
            None => out.write_all(b"NULL")?,
        }
    }
    Ok(())
}

/// Writes every record of the snapshot, oldest first, one per line.
///
/// # Errors
/// A read error of the log, or a failed write.
pub fn dump(snapshot: &LogSnapshot, out: &mut impl Write) -> Result<(), Failure> {
    let failed = |e: std::io::Error| Failure::Runtime(format!("cannot write output: {e}"));
    for r in snapshot.reader(0) {
        let r = r.map_err(|e| Failure::from_log("cannot read the log", &e))?;
        write_line(out, &r).map_err(failed)?;
        out.write_all(b"\n").map_err(failed)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use log_core::Header;

    /// One record as a line (without the newline).
    pub fn line(r: &Record) -> String {
        let mut out = Vec::new();
        // Writing to a Vec cannot fail.
        let _ = write_line(&mut out, r);
        String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }

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
