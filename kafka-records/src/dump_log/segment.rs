//! `.log` segments and `.checkpoint` raft snapshots, as Kafka 4.4's `DumpLogSegments.dumpLog` prints them:
//! a header line, then each batch's line and each of its records' lines, then the trailing bytes that form no
//! batch. Every record whose offset does not follow the previous one (-1 before the first) is noted for the
//! non-consecutive summary.
//!
//! Invariant: one batch is in memory at a time (read with a plain positioned read), so memory is bounded by
//! the largest batch.
#![expect(clippy::big_endian_bytes, reason = "Kafka's files are big-endian")]

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;

use log_core::kafka::{Batch, BatchHeader, KafkaRecord};

use super::{Decoder, DumpLogError, DumpLogOptions, Summaries, absolute, died, open_failed, parse_long, read_failed};
use crate::coordinator_records;
use crate::kraft::schema::{ControlRecord, control_record_json, metadata_record_json};
use crate::wire::{WireError, java_utf8};

/// Bytes of a batch up to its magic byte: offset, length, leader epoch, magic.
const UP_TO_MAGIC: u64 = 17;
/// The smallest record Kafka's file reader accepts (`LegacyRecord.RECORD_OVERHEAD_V0`).
const MIN_RECORD_OVERHEAD: i32 = 14;
/// Kafka's `java.lang.RuntimeException`.
const RUNTIME: &str = "java.lang.RuntimeException";
/// Kafka's `InvalidRecordException`.
const INVALID_RECORD: &str = "org.apache.kafka.common.InvalidRecordException";

/// A segment file read batch by batch as Kafka's `FileRecords` reads it.
pub(super) struct SegmentFile {
    file: File,
    /// The file's length.
    pub(super) len: u64,
    /// The path as Kafka names it in its messages.
    shown: String,
    buf: Vec<u8>,
}

/// Where Kafka's batch iteration ends: a batch, or the end of what it reads.
pub(super) enum Next {
    Batch { size: u64 },
    End,
}

impl SegmentFile {
    /// Opens `path` (named `shown` in Kafka's messages).
    pub(super) fn open(path: &str, shown: &str) -> Result<SegmentFile, DumpLogError> {
        let file = File::open(path).map_err(|e| open_failed(shown, &e))?;
        let len = file.metadata().map_err(|e| read_failed(&e))?.len();
        Ok(SegmentFile { file, len, shown: shown.to_owned(), buf: Vec::new() })
    }

    /// `len` bytes at `at`.
    pub(super) fn read_at(&mut self, at: u64, len: usize) -> Result<&[u8], DumpLogError> {
        self.buf.resize(len, 0);
        self.file.read_exact_at(&mut self.buf, at).map_err(|e| read_failed(&e))?;
        Ok(&self.buf)
    }

    /// The batch at `position` of a slice ending at `end`, as `FileLogInputStream.nextBatch` finds it.
    pub(super) fn next(&mut self, position: u64, end: u64) -> Result<Next, DumpLogError> {
        if position + UP_TO_MAGIC >= end {
            return Ok(Next::End);
        }
        let head = self.read_at(position, UP_TO_MAGIC as usize)?;
        let size = i32::from_be_bytes([head[8], head[9], head[10], head[11]]);
        if size < MIN_RECORD_OVERHEAD {
            return Err(died(
                "org.apache.kafka.common.errors.CorruptRecordException",
                format!(
                    "Found record size {size} smaller than minimum record overhead ({MIN_RECORD_OVERHEAD}) in file {}.",
                    self.shown
                ),
            ));
        }
        let size = size as u64;
        if position + 12 + size > end {
            return Ok(Next::End);
        }
        Ok(Next::Batch { size: 12 + size })
    }
}

/// What one file's records need while they are printed.
struct Ctx<'a> {
    opts: &'a DumpLogOptions,
    abs: String,
    last_offset: i64,
}

impl Ctx<'_> {
    /// Notes `offset` for the non-consecutive summary.
    fn seen(&mut self, offset: i64, summaries: &mut Summaries) {
        if offset != self.last_offset + 1 {
            summaries.non_consecutive.compute_if_absent(&self.abs, BTreeMap::new).insert(self.last_offset, offset);
        }
        self.last_offset = offset;
    }
}

/// A `.log` or `.checkpoint` file.
pub(super) fn dump(
    shown: &str,
    name: &str,
    opts: &DumpLogOptions,
    out: &mut dyn Write,
    summaries: &mut Summaries,
) -> Result<(), DumpLogError> {
    if name.ends_with(".log") {
        let start = parse_long(name.split('.').next().unwrap_or_default())?;
        writeln!(out, "Log starting offset: {start}")?;
    } else if name == "bootstrap.checkpoint" {
        writeln!(out, "KRaft bootstrap snapshot")?;
    } else {
        let (offset, epoch) = snapshot_id(name)?;
        writeln!(out, "Snapshot end offset: {offset}, epoch: {epoch}")?;
    }
    let mut seg = SegmentFile::open(shown, shown)?;
    // `slice(0, maxBytes)`.
    let end = seg.len.min(opts.max_bytes.max(0) as u64).min(i32::MAX as u64);
    let mut position = 0u64;
    let mut ctx = Ctx { opts, abs: absolute(shown), last_offset: -1 };
    let mut scratch = Vec::new();
    while let Next::Batch { size } = seg.next(position, end)? {
        let bytes = seg.read_at(position, size as usize)?.to_vec();
        if (bytes[16] as i8) < 2 {
            let records = super::legacy::print_batch(shown, &bytes, position, out)?;
            for r in &records {
                ctx.seen(r.offset, summaries);
                print_legacy_record(r, ctx.opts, out)?;
            }
        } else {
            print_batch(&bytes, position, &mut ctx, out, &mut scratch, summaries)?;
        }
        position += size;
    }
    let trailing = end - position;
    if trailing > 0 && opts.max_bytes == i32::MAX {
        writeln!(out, "Found {trailing} invalid bytes at the end of {name}")?;
    }
    Ok(())
}

/// `Snapshots.parse`: the end offset (the name's first 20 characters) and epoch (the 10 after a dash).
fn snapshot_id(name: &str) -> Result<(i64, i64), DumpLogError> {
    let part = |from: usize, to: usize| {
        name.get(from..to).ok_or_else(|| {
            died(
                "java.lang.StringIndexOutOfBoundsException",
                format!("begin {from}, end {to}, length {}", name.encode_utf16().count()),
            )
        })
    };
    let offset = parse_long(part(0, 20)?)?;
    let epoch = parse_long(part(21, 31)?)?;
    if i32::try_from(epoch).is_err() {
        return Err(died("java.lang.NumberFormatException", format!("For input string: \"{}\"", part(21, 31)?)));
    }
    Ok((offset, epoch))
}

/// Kafka's `DefaultRecordBatch.incrementSequence`: `sequence + increment`, wrapping past `i32::MAX` to 0.
fn increment_sequence(sequence: i32, increment: i32) -> i32 {
    if sequence > i32::MAX - increment { increment - (i32::MAX - sequence) - 1 } else { sequence + increment }
}

/// One batch (magic 2 or above) and its records' lines.
fn print_batch(
    bytes: &[u8],
    position: u64,
    ctx: &mut Ctx<'_>,
    out: &mut dyn Write,
    scratch: &mut Vec<u8>,
    summaries: &mut Summaries,
) -> Result<(), DumpLogError> {
    let magic = bytes[16] as i8;
    if bytes.len() < log_core::kafka::HEADER_BYTES {
        return Err(died(
            "org.apache.kafka.common.errors.CorruptRecordException",
            format!("Record batch at position {position} has {} bytes, fewer than its header", bytes.len()),
        ));
    }
    let h = header_fields(bytes);
    let Some(codec) = h.compression() else {
        return Err(died(
            "java.lang.IllegalArgumentException",
            format!("Unknown compression type id: {}", h.attributes & 0x07),
        ));
    };
    let last_sequence =
        if h.base_sequence == -1 { -1 } else { increment_sequence(h.base_sequence, h.last_offset_delta) };
    let horizon = h.delete_horizon().map_or_else(|| "OptionalLong.empty".to_owned(), |d| format!("OptionalLong[{d}]"));
    let timestamp_type = if h.is_log_append_time() { "LogAppendTime" } else { "CreateTime" };
    let valid = crc32c::crc32c(&bytes[21..]) == h.crc;
    writeln!(
        out,
        "baseOffset: {} lastOffset: {} count: {} baseSequence: {} lastSequence: {last_sequence} producerId: {} \
         producerEpoch: {} partitionLeaderEpoch: {} isTransactional: {} isControl: {} deleteHorizonMs: {horizon} \
         position: {position} {timestamp_type}: {} size: {} magic: {magic} compresscodec: {} crc: {} isvalid: {valid}",
        h.base_offset,
        h.last_offset(),
        h.records_count,
        h.base_sequence,
        h.producer_id,
        h.producer_epoch,
        h.partition_leader_epoch,
        h.is_transactional(),
        h.is_control(),
        h.max_timestamp,
        bytes.len(),
        codec.name(),
        h.crc,
    )?;
    if h.records_count < 0 {
        return Err(died(INVALID_RECORD, format!("Found invalid record count {} in magic v2 batch", h.records_count)));
    }
    if h.records_count == 0 {
        return Ok(());
    }
    let batch = Batch { header: h, bytes };
    let records = batch.records(scratch).map_err(|e| died(INVALID_RECORD, e.to_string()))?;
    // Kafka reads a record just before printing it, and finds bytes left over while reading the last one: that
    // record is then not printed. The records of one batch are in memory already, so they are read first.
    let records: Vec<Result<KafkaRecord<'_>, _>> = records.collect();
    let bad = records.iter().position(Result::is_err);
    let printable = match bad {
        Some(i) if i == h.records_count as usize => i.saturating_sub(1),
        Some(i) => i,
        None => records.len(),
    };
    for r in records.iter().take(printable).flatten() {
        ctx.seen(r.offset, summaries);
        print_record(&h, r, ctx.opts, out)?;
    }
    match bad.map(|i| &records[i]) {
        Some(Err(e)) => Err(died(INVALID_RECORD, e.to_string())),
        _ => Ok(()),
    }
}

/// The header of a batch with magic 2 or above (Kafka reads any such as magic 2).
pub(super) fn header_fields(b: &[u8]) -> BatchHeader {
    let i64_at = |at: usize| {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[at..at + 8]);
        i64::from_be_bytes(a)
    };
    let i32_at = |at: usize| i32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    BatchHeader {
        base_offset: i64_at(0),
        batch_length: i32_at(8),
        partition_leader_epoch: i32_at(12),
        magic: b[16] as i8,
        crc: i32_at(17) as u32,
        // Kafka takes the attributes' low byte.
        attributes: i16::from(b[22]),
        last_offset_delta: i32_at(23),
        base_timestamp: i64_at(27),
        max_timestamp: i64_at(35),
        producer_id: i64_at(43),
        producer_epoch: i16::from_be_bytes([b[51], b[52]]),
        base_sequence: i32_at(53),
        records_count: i32_at(57),
    }
}

/// A legacy record's line: its metadata, then its key and payload.
fn print_legacy_record(
    r: &super::legacy::LegacyRecord,
    opts: &DumpLogOptions,
    out: &mut dyn Write,
) -> Result<(), DumpLogError> {
    let mut line = String::new();
    if !opts.skip_record_metadata {
        let size = |b: Option<&Vec<u8>>| b.map_or(-1, |b| b.len() as i64);
        line = format!(
            "| offset: {} {}: {} keySize: {} valueSize: {} isValid: {} crc: {}",
            r.offset,
            r.timestamp_type,
            r.timestamp,
            size(r.key.as_ref()),
            size(r.value.as_ref()),
            r.valid,
            r.crc
        );
    }
    let prefix = if opts.skip_record_metadata { "| " } else { " " };
    match contents(opts.decoder, r.offset, r.key.as_deref(), r.value.as_deref()) {
        Ok((k, v)) => append_contents(&mut line, prefix, k, v),
        Err(e) => return cut(out, &line, e),
    }
    writeln!(out, "{line}")?;
    Ok(())
}

/// Writes `line` without its newline (Kafka had printed it when it died) and gives `e`.
fn cut(out: &mut dyn Write, line: &str, e: DumpLogError) -> Result<(), DumpLogError> {
    write!(out, "{line}")?;
    Err(e)
}

/// A record's line: its metadata (a control record's type and contents), then its key and payload.
fn print_record(
    h: &BatchHeader,
    r: &KafkaRecord<'_>,
    opts: &DumpLogOptions,
    out: &mut dyn Write,
) -> Result<(), DumpLogError> {
    let mut line = String::new();
    if !opts.skip_record_metadata {
        let timestamp_type = if h.is_log_append_time() { "LogAppendTime" } else { "CreateTime" };
        let size = |b: Option<&[u8]>| b.map_or(-1, |b| b.len() as i64);
        let sequence = if h.base_sequence >= 0 {
            increment_sequence(h.base_sequence, (r.offset - h.base_offset) as i32)
        } else {
            -1
        };
        let keys: Vec<String> = r.headers().map(|(k, _)| java_utf8(k)).collect();
        line = format!(
            "| offset: {} {timestamp_type}: {} keySize: {} valueSize: {} sequence: {sequence} headerKeys: [{}]",
            r.offset,
            r.timestamp,
            size(r.key),
            size(r.value),
            keys.join(",")
        );
        if h.is_control() {
            match control_suffix(r.key, r.value) {
                Ok(suffix) => line.push_str(&suffix),
                Err(e) => return cut(out, &line, e),
            }
        }
    }
    if !h.is_control() {
        let prefix = if opts.skip_record_metadata { "| " } else { " " };
        match contents(opts.decoder, r.offset, r.key, r.value) {
            Ok((key, value)) => append_contents(&mut line, prefix, key, value),
            Err(e) => return cut(out, &line, e),
        }
    }
    writeln!(out, "{line}")?;
    Ok(())
}

/// `printRecordContents`: ` key: K` when there is a key, then ` payload: V` when there is a value.
fn append_contents(line: &mut String, prefix: &str, key: Option<String>, value: Option<String>) {
    let mut prefix = prefix;
    if let Some(k) = key {
        line.push_str(prefix);
        line.push_str("key: ");
        line.push_str(&k);
        prefix = " ";
    }
    if let Some(v) = value {
        line.push_str(prefix);
        line.push_str("payload: ");
        line.push_str(&v);
    }
}

/// What the decoder makes of a data record: its key and payload text.
fn contents(
    decoder: Decoder,
    offset: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) -> Result<(Option<String>, Option<String>), DumpLogError> {
    if let Some(who) = decoder.coordinator() {
        let d = coordinator_records::decode(who, offset, key, value).map_err(|m| died(RUNTIME, m))?;
        return Ok((Some(d.key), d.value));
    }
    if decoder == Decoder::ClusterMetadata {
        let payload = metadata_record_json(value.unwrap_or_default())
            .unwrap_or_else(|message| format!("Error at {offset}, skipping. {message}"));
        return Ok((None, Some(payload)));
    }
    Ok((key.map(java_utf8), value.map(java_utf8)))
}

/// The exception a generated message reader's failure is.
fn wire_died(e: &WireError) -> DumpLogError {
    match e {
        WireError::Underflow => DumpLogError::Died { class: "java.nio.BufferUnderflowException", message: None },
        other => died(RUNTIME, other.to_string()),
    }
}

/// `printControlRecord`: what follows a control record's metadata.
fn control_suffix(key: Option<&[u8]>, value: Option<&[u8]>) -> Result<String, DumpLogError> {
    let npe = || DumpLogError::Died { class: "java.lang.NullPointerException", message: None };
    let key = key.ok_or_else(npe)?;
    if key.len() < 4 {
        return Err(died(
            INVALID_RECORD,
            format!(
                "Invalid value size found for control record key. Must have at least 4 bytes, but found only {}",
                key.len()
            ),
        ));
    }
    let version = i16::from_be_bytes([key[0], key[1]]);
    if version < 0 {
        return Err(died(
            INVALID_RECORD,
            format!("Invalid version found for control record: {version}. May indicate data corruption"),
        ));
    }
    let id = i16::from_be_bytes([key[2], key[3]]);
    if id == 0 || id == 1 {
        let value = value.ok_or_else(npe)?;
        if value.len() < 2 {
            return Err(DumpLogError::Died { class: "java.lang.IndexOutOfBoundsException", message: None });
        }
        let marker_version = i16::from_be_bytes([value[0], value[1]]);
        if marker_version < 0 {
            return Err(died(
                INVALID_RECORD,
                format!(
                    "Invalid version found for end transaction marker: {marker_version}. May indicate data corruption"
                ),
            ));
        }
        if value.len() < 6 {
            return Err(died(
                INVALID_RECORD,
                format!(
                    "Invalid value size found for end transaction marker. Must have at least 6 bytes, but found only {}",
                    value.len()
                ),
            ));
        }
        let epoch = i32::from_be_bytes([value[2], value[3], value[4], value[5]]);
        let kind = if id == 0 { "ABORT" } else { "COMMIT" };
        return Ok(format!(" endTxnMarker: {kind} coordinatorEpoch: {epoch}"));
    }
    match ControlRecord::from_type(id) {
        Some(kind) => {
            let value = value.ok_or_else(npe)?;
            let json = control_record_json(kind, value).map_err(|e| wire_died(&e))?;
            Ok(format!(" {} {json}", kind.label()))
        }
        None => Ok(format!(" controlType: UNKNOWN({id})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_wrap_as_kafkas_do() {
        assert_eq!(increment_sequence(i32::MAX, 1), 0);
        assert_eq!(increment_sequence(5, 3), 8);
    }

    #[test]
    fn snapshot_names_parse_as_kafkas_snapshots_parse_them() {
        assert_eq!(snapshot_id("00000000000000000258-0000000002.checkpoint").ok(), Some((258, 2)));
        let e = snapshot_id("not-a-snapshot.checkpoint").err().map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("java.lang.NumberFormatException: For input string: \"not-a-snapshot.check\""));
    }
}
