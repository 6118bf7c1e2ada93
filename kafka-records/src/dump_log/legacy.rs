//! Legacy (magic 0 and 1) message sets, as Kafka 4.4's `DumpLogSegments` prints them: each outer message is a
//! "batch" line (`offset: LAST position: ... magic: M compresscodec: ... crc: ... isvalid: ...`); its records
//! are itself when uncompressed, else the messages inside its decompressed value (Kafka's deep iteration):
//! magic 1 inner offsets are relative (absolute = outer offset - last inner offset + inner offset), magic 0
//! ones absolute, and under a magic 1 `LogAppendTime` wrapper every inner message takes the wrapper's time.
//!
//! Invariant: one outer message and its decompressed value are in memory at a time, the value bounded by
//! [`log_core::kafka::MAX_DECOMPRESSED_BYTES`].
#![expect(clippy::big_endian_bytes, reason = "Kafka's files are big-endian")]

use std::io::Write;

use log_core::kafka::Compression;

use super::{DumpLogError, died};

/// A legacy record as the tool prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LegacyRecord {
    /// Its absolute offset.
    pub offset: i64,
    /// `CreateTime`, `LogAppendTime` or `NoTimestampType` (the outer message's type).
    pub timestamp_type: &'static str,
    /// Its timestamp (-1 for magic 0).
    pub timestamp: i64,
    /// Its stored CRC.
    pub crc: u32,
    /// Whether the CRC matches its bytes.
    pub valid: bool,
    /// Its key.
    pub key: Option<Vec<u8>>,
    /// Its value.
    pub value: Option<Vec<u8>>,
}

/// One message of a legacy message set: `offset i64, size i32, crc u32, magic i8, attributes i8,
/// [timestamp i64 when magic 1], key (i32 length), value (i32 length)`.
struct Message<'a> {
    offset: i64,
    crc: u32,
    valid: bool,
    magic: i8,
    attributes: u8,
    timestamp: i64,
    key: Option<&'a [u8]>,
    value: Option<&'a [u8]>,
}

fn short() -> DumpLogError {
    DumpLogError::Died { class: "java.nio.BufferUnderflowException", message: None }
}

fn be_i32(b: &[u8], at: usize) -> Result<i32, DumpLogError> {
    let s = b.get(at..at + 4).ok_or_else(short)?;
    Ok(i32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

fn be_i64(b: &[u8], at: usize) -> Result<i64, DumpLogError> {
    let s = b.get(at..at + 8).ok_or_else(short)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Ok(i64::from_be_bytes(a))
}

/// Parses the message whose log entry (offset and size first) is `entry`.
fn parse(entry: &[u8]) -> Result<Message<'_>, DumpLogError> {
    let offset = be_i64(entry, 0)?;
    let crc = be_i32(entry, 12)? as u32;
    let magic = *entry.get(16).ok_or_else(short)? as i8;
    let attributes = *entry.get(17).ok_or_else(short)?;
    let valid = crc32_ieee(&entry[16..]) == crc;
    let (timestamp, mut at) = if magic >= 1 { (be_i64(entry, 18)?, 26) } else { (-1, 18) };
    let mut bytes = || -> Result<Option<&[u8]>, DumpLogError> {
        let len = be_i32(entry, at)?;
        at += 4;
        if len < 0 {
            return Ok(None);
        }
        let run = entry.get(at..at + len as usize).ok_or_else(short)?;
        at += len as usize;
        Ok(Some(run))
    };
    let key = bytes()?;
    let value = bytes()?;
    Ok(Message { offset, crc, valid, magic, attributes, timestamp, key, value })
}

/// CRC-32 (IEEE), as legacy messages carry it.
fn crc32_ieee(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

fn timestamp_type(magic: i8, attributes: u8) -> &'static str {
    match (magic, attributes & 0x08 != 0) {
        (0, _) => "NoTimestampType",
        (_, true) => "LogAppendTime",
        (_, false) => "CreateTime",
    }
}

/// Magic 0 LZ4 values carry a descriptor checksum Kafka computed over the wrong bytes (and ignores): the
/// frame with the right one, for a reader that checks it.
fn fix_lz4_descriptor(data: &[u8]) -> Vec<u8> {
    let mut fixed = data.to_vec();
    if let Some(&flg) = data.get(4) {
        let descriptor = 2 + if flg & 0x08 != 0 { 8 } else { 0 };
        if let Some(d) = data.get(4..4 + descriptor)
            && 4 + descriptor < fixed.len()
        {
            fixed[4 + descriptor] = (xxhash_rust::xxh32::xxh32(d, 0) >> 8) as u8;
        }
    }
    fixed
}

/// Prints the outer message `bytes` (a whole log entry at `position`) as Kafka prints a legacy batch, and gives
/// its records.
pub(super) fn print_batch(
    shown: &str,
    bytes: &[u8],
    position: u64,
    out: &mut dyn Write,
) -> Result<Vec<LegacyRecord>, DumpLogError> {
    let outer = parse(bytes)?;
    let kind = timestamp_type(outer.magic, outer.attributes);
    let codec_id = outer.attributes & 0x07;
    let Some(codec) = Compression::from_bits(codec_id).filter(|c| *c != Compression::Zstd) else {
        return Err(died("java.lang.IllegalArgumentException", format!("Unknown compression type id: {codec_id}")));
    };
    writeln!(
        out,
        "offset: {} position: {position} {kind}: {} size: {} magic: {} compresscodec: {} crc: {} isvalid: {}",
        outer.offset,
        outer.timestamp,
        bytes.len(),
        outer.magic,
        codec.name(),
        outer.crc,
        outer.valid
    )?;
    let record = |m: &Message<'_>, offset: i64, timestamp: i64| LegacyRecord {
        offset,
        timestamp_type: kind,
        timestamp,
        crc: m.crc,
        valid: m.valid,
        key: m.key.map(<[u8]>::to_vec),
        value: m.value.map(<[u8]>::to_vec),
    };
    if codec == Compression::None {
        return Ok(vec![record(&outer, outer.offset, outer.timestamp)]);
    }
    let data = outer.value.unwrap_or_default();
    let data = if codec == Compression::Lz4 && outer.magic == 0 { fix_lz4_descriptor(data) } else { data.to_vec() };
    let mut inner_bytes = Vec::new();
    log_core::kafka::compression::decompress(codec, &data, log_core::kafka::MAX_DECOMPRESSED_BYTES, &mut inner_bytes)
        .map_err(|e| DumpLogError::Unsupported {
        file: shown.to_owned(),
        what: format!(
            "the {} value of the legacy message at position {position} does not decompress: {e}",
            codec.name()
        ),
    })?;
    let mut inner = Vec::new();
    let mut at = 0usize;
    while at + 12 <= inner_bytes.len() {
        let size = be_i32(&inner_bytes, at + 8)?;
        let end = at + 12 + usize::try_from(size).map_err(|_| short())?;
        let entry = inner_bytes.get(at..end).ok_or_else(short)?;
        inner.push(parse(entry)?);
        at = end;
    }
    let last_inner = inner.last().map_or(0, |m| m.offset);
    let log_append = outer.magic >= 1 && kind == "LogAppendTime";
    Ok(inner
        .iter()
        .map(|m| {
            let offset = if outer.magic >= 1 { outer.offset - last_inner + m.offset } else { m.offset };
            record(m, offset, if log_append { outer.timestamp } else { m.timestamp })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ieee_crc_is_the_standard_one() {
        assert_eq!(crc32_ieee(b"123456789"), 0xCBF4_3926);
    }
}
