//! `dump --json`: the log as JSON, with bytes shown as UTF-8 text and other bytes escaped.

use log_core::LogSnapshot;

use crate::failure::Failure;

/// Writes `bytes` as a JSON string of text: valid UTF-8 as is, a backslash as `\\`, every other byte as
/// `\xNN`, then escaped as JSON (what `serde_json` writes for that text, byte for byte), a run of plain
/// characters at a time: a value of hundreds of MB is never copied whole.
///
/// # Errors
/// A failed write.
pub fn write_escaped(out: &mut (impl std::io::Write + ?Sized), bytes: &[u8]) -> std::io::Result<()> {
    out.write_all(b"\"")?;
    for chunk in bytes.utf8_chunks() {
        let valid = chunk.valid().as_bytes();
        let mut plain = 0;
        for (at, &b) in valid.iter().enumerate() {
            // Every byte JSON escapes is ASCII, so it is never inside a multi-byte character.
            let escaped: &[u8] = match b {
                b'"' => b"\\\"",
                // Doubled as text, each doubled by JSON.
                b'\\' => b"\\\\\\\\",
                b'\n' => b"\\n",
                b'\r' => b"\\r",
                b'\t' => b"\\t",
                0x08 => b"\\b",
                0x0c => b"\\f",
                0..=0x1f => b"",
                _ => continue,
            };
            out.write_all(&valid[plain..at])?;
            plain = at + 1;
            if escaped.is_empty() {
                write!(out, "\\u{b:04x}")?;
            } else {
                out.write_all(escaped)?;
            }
        }
        out.write_all(&valid[plain..])?;
        for b in chunk.invalid() {
            // `\xNN`, its backslash doubled by JSON.
            write!(out, "\\\\x{b:02x}")?;
        }
    }
    out.write_all(b"\"")
}

/// Writes one record as `dump --json` shows it: `offset`, `timestamp`, `key`, `value`, `headers` (each
/// `{"name", "value"}`) and `delete_horizon`, in that order, bytes as [`write_escaped`] shows them (null for none),
/// escaped on the way out.
fn write_record(out: &mut dyn std::io::Write, r: &log_core::RecordRef<'_>) -> std::io::Result<()> {
    let bytes = |out: &mut dyn std::io::Write, b: Option<&[u8]>| match b {
        Some(b) => write_escaped(out, b),
        None => out.write_all(b"null"),
    };
    write!(out, "{{\"offset\":{},\"timestamp\":{},\"key\":", r.offset, r.timestamp)?;
    bytes(out, r.key)?;
    out.write_all(b",\"value\":")?;
    bytes(out, r.value)?;
    out.write_all(b",\"headers\":[")?;
    for (i, (name, value)) in r.headers().enumerate() {
        out.write_all(if i == 0 { b"{\"name\":" } else { b",{\"name\":" })?;
        write_escaped(out, name)?;
        out.write_all(b",\"value\":")?;
        bytes(out, value)?;
        out.write_all(b"}")?;
    }
    out.write_all(b"],\"delete_horizon\":")?;
    match r.delete_horizon {
        Some(h) => write!(out, "{h}}}"),
        None => out.write_all(b"null}"),
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
                write_record(&mut *out, r).map_err(failed)?;
            }
        }
        out.write_all(b"]}").map_err(failed)?;
    }
    out.write_all(b"]\n").map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Write;

    /// The reference [`write_escaped`] is held to: bytes as text: valid UTF-8 as is, a backslash as `\\`, every other byte as `\xNN`.
    fn escape(bytes: &[u8]) -> String {
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

    #[test]
    fn escapes_what_is_not_utf8() {
        assert_eq!(escape(b"plain"), "plain");
        assert_eq!(escape("é".as_bytes()), "é");
        assert_eq!(escape(b"a\xffb\\"), "a\\xffb\\\\");
    }

    #[test]
    fn written_escaped_is_what_serde_json_writes_for_escape() {
        let mut cases: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"plain".to_vec(),
            "\u{85}é\u{2028}".into(),
            b"a\"b\\c\x00\x1f\x7f\x08\x0c\n\r\t".to_vec(),
        ];
        // Every byte, alone and beside a multi-byte character, and random strings of them.
        cases.extend((0..=255u8).map(|b| vec![b, 0xc3, 0xa9, b]));
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2000 {
            let len = (x % 40) as usize;
            let mut v = Vec::with_capacity(len);
            for _ in 0..len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                v.push(x as u8);
            }
            cases.push(v);
        }
        for bytes in cases {
            let mut written = Vec::new();
            write_escaped(&mut written, &bytes).expect("write");
            let expected = serde_json::to_string(&escape(&bytes)).expect("json");
            assert_eq!(String::from_utf8_lossy(&written), expected, "{bytes:?}");
        }
    }
}
