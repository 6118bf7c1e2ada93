//! `dump --style kafka-dump-log`: what `kafka-dump-log.sh --deep-iteration --print-data-log --files F1,F2,...`
//! prints (Kafka 3.5 to 4.2, the Scala `kafka.tools.DumpLogSegments`), byte for byte, for scripts and runbooks
//! that parse it: segments (`.log`), offset and time indexes (`.index`, `.timeindex`, with
//! `--verify-index-only`), transaction indexes (`.txnindex`) and producer snapshots (`.snapshot`), with the
//! summaries it writes to standard error at the end (index mismatches, time index errors, non-consecutive
//! offsets). Written from the facts of Kafka's tool, not its code.
//!
//! Files are read with plain reads (never mapped: a broker may still change them), a batch at a time, so
//! memory is bounded by the largest batch whatever the file's size. Where Kafka's tool stops with an exception
//! (a record size below 14 bytes, a batch that does not decode, an index entry pointing nowhere) this one
//! stops with [`DumpLogError::Stopped`], having printed what Kafka's would have printed before it. Legacy
//! (magic 0 and 1) batches and KRaft control records are not decoded (also a [`DumpLogError::Stopped`]).
//!
//! Where several files have entries in one summary, Kafka prints them in the iteration order of Scala's
//! `mutable.HashMap` over their absolute paths; [`JvmMapOrder`] reproduces it.
//!
//! # Example
//! ```no_run
//! let mut out = std::io::stdout().lock();
//! let mut err = std::io::stderr().lock();
//! let files = ["/var/lib/kafka/data/orders-0/00000000000000000000.log".to_owned()];
//! logcompact::dump_log::dump_files(&files, &logcompact::dump_log::DumpLogOptions::default(), &mut out, &mut err)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![expect(clippy::big_endian_bytes, reason = "Kafka's files are big-endian")]

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use log_core::kafka::txn::{MarkerType, coordinator_epoch, marker_type};
use log_core::kafka::{Batch, BatchHeader, KafkaRecord};

use crate::producer_snapshot::{CorruptSnapshot, read_snapshot};

/// What `kafka-dump-log.sh` takes besides `--deep-iteration --print-data-log`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DumpLogOptions {
    /// `--verify-index-only`: index files are checked against their segment and only the problems are printed
    /// (in the summaries), not the entries.
    pub verify_index_only: bool,
}

/// Why a dump stopped.
#[derive(Debug, thiserror::Error)]
pub enum DumpLogError {
    /// A file could not be read.
    #[error("cannot read {file}: {source}")]
    Read {
        /// The file.
        file: String,
        /// What the system said.
        source: io::Error,
    },
    /// Kafka's tool stops here with an exception; so does this one, after the same output.
    #[error("{file}: {what}")]
    Stopped {
        /// The file.
        file: String,
        /// What Kafka's tool would throw.
        what: String,
    },
    /// Standard output or standard error could not be written.
    #[error("cannot write output: {0}")]
    Output(#[from] io::Error),
}

/// `kafka-dump-log.sh`'s largest message (`--max-message-size`): an index entry's batch is looked for within it.
const MAX_MESSAGE_SIZE: u64 = 5_242_880;
/// Bytes of a batch up to its magic byte: offset, length, leader epoch, magic.
const UP_TO_MAGIC: u64 = 17;
/// The smallest record Kafka's file reader accepts (`LegacyRecord.RECORD_OVERHEAD_V0`).
const MIN_RECORD_OVERHEAD: i32 = 14;
/// An offset index entry: relative offset and position (i32 each).
const OFFSET_ENTRY: u64 = 8;
/// A time index entry: timestamp (i64) and relative offset (i32).
const TIME_ENTRY: u64 = 12;
/// A `.txnindex` entry.
const TXN_ENTRY: usize = 34;

/// Dumps `files` (as given on `kafka-dump-log.sh`'s `--files`) in order to `out`, then writes the summaries
/// to `err`, as Kafka's tool does.
///
/// # Errors
/// [`DumpLogError`]: the summaries gathered so far are not printed then (Kafka's tool dies with its exception).
pub fn dump_files(
    files: &[String],
    opts: &DumpLogOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), DumpLogError> {
    let mut summaries = Summaries::default();
    for given in files {
        let shown = java_file_string(given);
        writeln!(out, "Dumping {shown}")?;
        let name = shown.rsplit('/').next().unwrap_or_default();
        let Some(dot) = name.rfind('.') else {
            return Err(stopped(&shown, "StringIndexOutOfBoundsException: the file name has no suffix"));
        };
        match &name[dot..] {
            ".log" => dump_segment(&shown, name, out, &mut summaries)?,
            ".index" => dump_offset_index(&shown, name, opts, out, &mut summaries)?,
            ".timeindex" => dump_time_index(&shown, name, opts, out, &mut summaries)?,
            ".snapshot" => dump_snapshot(&shown, out, err)?,
            ".txnindex" => dump_txn_index(&shown, name, out)?,
            _ => writeln!(err, "Ignoring unknown file {shown}")?,
        }
    }
    summaries.print(err)?;
    Ok(())
}

fn stopped(file: &str, what: impl Into<String>) -> DumpLogError {
    DumpLogError::Stopped { file: file.to_owned(), what: what.into() }
}

/// `java.io.File.toString` of a path on Unix: repeated slashes collapsed, a trailing one dropped.
pub fn java_file_string(path: &str) -> String {
    let mut s = String::with_capacity(path.len());
    for c in path.chars() {
        if c == '/' && s.ends_with('/') {
            continue;
        }
        s.push(c);
    }
    if s.len() > 1 && s.ends_with('/') {
        s.pop();
    }
    s
}

/// `java.io.File.getAbsolutePath` of such a path: the working directory prefixed to a relative one, `.` and
/// `..` left as they are.
fn absolute(shown: &str) -> String {
    if shown.starts_with('/') {
        return shown.to_owned();
    }
    let cwd = std::env::current_dir().map(|p| p.display().to_string()).unwrap_or_default();
    java_file_string(&format!("{cwd}/{shown}"))
}

/// Java's `new String(bytes, UTF_8)`: invalid sequences become U+FFFD as Rust's lossy decoding makes them,
/// except an encoded surrogate (`ED A0..BF`, then a continuation byte or not), one U+FFFD where Rust makes one
/// a byte.
pub fn java_utf8(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    let mut rest = bytes;
    loop {
        match std::str::from_utf8(rest) {
            Ok(valid) => {
                s.push_str(valid);
                return s;
            }
            Err(e) => {
                let (valid, bad) = rest.split_at(e.valid_up_to());
                s.push_str(std::str::from_utf8(valid).unwrap_or_default());
                s.push('\u{FFFD}');
                let skip = if bad.len() >= 2 && bad[0] == 0xED && (0xA0..=0xBF).contains(&bad[1]) {
                    if bad.get(2).is_some_and(|b| (0x80..=0xBF).contains(b)) { 3 } else { 2 }
                } else {
                    e.error_len().unwrap_or(bad.len())
                };
                rest = &bad[skip..];
            }
        }
    }
}

/// Kafka's `DefaultRecordBatch.incrementSequence`: `sequence + increment`, wrapping past `i32::MAX` to 0.
fn increment_sequence(sequence: i32, increment: i32) -> i32 {
    if sequence > i32::MAX - increment { increment - (i32::MAX - sequence) - 1 } else { sequence + increment }
}

/// Kafka's `DefaultRecordBatch.decrementSequence`.
fn decrement_sequence(sequence: i32, decrement: i32) -> i32 {
    if sequence < decrement { i32::MAX - (decrement - sequence) + 1 } else { sequence - decrement }
}

/// A segment file read batch by batch as Kafka's `FileRecords` reads it.
struct SegmentFile {
    file: File,
    len: u64,
    shown: String,
    buf: Vec<u8>,
}

/// Where Kafka's batch iteration ends: a batch, or the end of what it reads.
enum Next {
    Batch { size: u64 },
    End,
}

impl SegmentFile {
    fn open(path: &str, shown: &str) -> Result<SegmentFile, DumpLogError> {
        let read = |source| DumpLogError::Read { file: shown.to_owned(), source };
        let file = File::open(path).map_err(read)?;
        let len = file.metadata().map_err(read)?.len();
        Ok(SegmentFile { file, len, shown: shown.to_owned(), buf: Vec::new() })
    }

    fn read_at(&mut self, at: u64, len: usize) -> Result<&[u8], DumpLogError> {
        self.buf.resize(len, 0);
        self.file
            .read_exact_at(&mut self.buf, at)
            .map_err(|source| DumpLogError::Read { file: self.shown.clone(), source })?;
        Ok(&self.buf)
    }

    /// The batch at `position` of a slice ending at `end`, as `FileLogInputStream.nextBatch` finds it.
    fn next(&mut self, position: u64, end: u64) -> Result<Next, DumpLogError> {
        if position + UP_TO_MAGIC >= end {
            return Ok(Next::End);
        }
        let head = self.read_at(position, UP_TO_MAGIC as usize)?;
        let size = i32::from_be_bytes([head[8], head[9], head[10], head[11]]);
        if size < MIN_RECORD_OVERHEAD {
            let what = format!(
                "CorruptRecordException: Found record size {size} smaller than minimum record overhead \
                 ({MIN_RECORD_OVERHEAD}) in file {}.",
                self.shown
            );
            return Err(stopped(&self.shown, what));
        }
        let size = size as u64;
        if position + 12 + size > end {
            return Ok(Next::End);
        }
        Ok(Next::Batch { size: 12 + size })
    }
}

/// A `.log` file: the header line, every batch and record, trailing bytes; gaps between offsets noted.
fn dump_segment(shown: &str, name: &str, out: &mut dyn Write, summaries: &mut Summaries) -> Result<(), DumpLogError> {
    let start = name.split('.').next().unwrap_or_default();
    let start: i64 =
        start.parse().map_err(|_| stopped(shown, format!("NumberFormatException: For input string: \"{start}\"")))?;
    writeln!(out, "Log starting offset: {start}")?;
    let mut seg = SegmentFile::open(shown, shown)?;
    let end = seg.len.min(i32::MAX as u64);
    let (mut position, mut last_offset) = (0u64, -1i64);
    let mut scratch = Vec::new();
    let abs = absolute(shown);
    while let Next::Batch { size } = seg.next(position, end)? {
        let bytes = seg.read_at(position, size as usize)?.to_vec();
        print_batch(shown, &bytes, position, out, &mut scratch, &mut |offset| {
            if last_offset != -1 && offset != last_offset + 1 {
                summaries.non_consecutive.push(&abs, (last_offset, offset), true);
            }
            last_offset = offset;
        })?;
        position += size;
    }
    let trailing = seg.len.min(i32::MAX as u64) - position;
    if trailing > 0 {
        writeln!(out, "Found {trailing} invalid bytes at the end of {name}")?;
    }
    Ok(())
}

/// One batch's line and its records' lines.
fn print_batch(
    shown: &str,
    bytes: &[u8],
    position: u64,
    out: &mut dyn Write,
    scratch: &mut Vec<u8>,
    on_record: &mut dyn FnMut(i64),
) -> Result<(), DumpLogError> {
    let magic = bytes[16] as i8;
    if magic < 2 {
        return Err(stopped(
            shown,
            format!(
                "batch at position {position}: message format v{magic} (magic {magic}) is not decoded by this tool"
            ),
        ));
    }
    let fail = |what: String| stopped(shown, format!("batch at position {position}: {what}"));
    if bytes.len() < log_core::kafka::HEADER_BYTES {
        return Err(fail(format!("its {} bytes cannot hold a magic {magic} header", bytes.len())));
    }
    let h = header_fields(bytes);
    let codec = match h.compression() {
        Some(c) => c,
        None => {
            return Err(fail(format!(
                "IllegalArgumentException: Unknown compression type id: {}",
                h.attributes & 0x07
            )));
        }
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
        return Err(fail(format!(
            "InvalidRecordException: Found invalid record count {} in magic v2 batch",
            h.records_count
        )));
    }
    if h.records_count == 0 {
        return Ok(());
    }
    let batch = Batch { header: h, bytes };
    let records = batch.records(scratch).map_err(|e| fail(format!("{e}")))?;
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
        on_record(r.offset);
        print_record(shown, &h, r, out)?;
    }
    match bad.map(|i| &records[i]) {
        Some(Err(e)) => Err(fail(format!("{e}"))),
        _ => Ok(()),
    }
}

/// The header of a batch with magic 2 or above (Kafka reads any such as magic 2).
fn header_fields(b: &[u8]) -> BatchHeader {
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

/// A record's line: its metadata, then a marker's type and epoch, or its key and payload.
fn print_record(shown: &str, h: &BatchHeader, r: &KafkaRecord<'_>, out: &mut dyn Write) -> Result<(), DumpLogError> {
    let timestamp_type = if h.is_log_append_time() { "LogAppendTime" } else { "CreateTime" };
    let size = |b: Option<&[u8]>| b.map_or(-1, |b| b.len() as i64);
    let sequence =
        if h.base_sequence >= 0 { increment_sequence(h.base_sequence, (r.offset - h.base_offset) as i32) } else { -1 };
    let keys: Vec<String> = r.headers().map(|(k, _)| java_utf8(k)).collect();
    let mut line = format!(
        "| offset: {} {timestamp_type}: {} keySize: {} valueSize: {} sequence: {sequence} headerKeys: [{}]",
        r.offset,
        r.timestamp,
        size(r.key),
        size(r.value),
        keys.join(",")
    );
    if h.is_control() {
        let fail = |what: &str| stopped(shown, format!("control record at offset {}: {what}", r.offset));
        let key = r.key.ok_or_else(|| fail("NullPointerException: a control record without a key"))?;
        if key.len() < 4 {
            return Err(fail("InvalidRecordException: Invalid value size found for end control record key"));
        }
        if i16::from_be_bytes([key[0], key[1]]) < 0 {
            return Err(fail("InvalidRecordException: Invalid version found for control record"));
        }
        match marker_type(Some(key)) {
            Some(kind @ (MarkerType::Abort | MarkerType::Commit)) => {
                let value = r.value.filter(|v| v.len() >= 6 && i16::from_be_bytes([v[0], v[1]]) >= 0);
                let epoch = coordinator_epoch(value).ok_or_else(|| {
                    fail("InvalidRecordException: Invalid value size found for end transaction marker")
                })?;
                line.push_str(&format!(" endTxnMarker: {kind} coordinatorEpoch: {epoch}"));
            }
            Some(MarkerType::Other(2)) => line.push_str(" controlType: LEADER_CHANGE(2)"),
            Some(MarkerType::Other(t @ 3..=6)) => {
                return Err(fail(&format!("KRaft control record type {t} is not decoded by this tool")));
            }
            Some(MarkerType::Other(t)) => line.push_str(&format!(" controlType: UNKNOWN({t})")),
            None => unreachable!("a key of at least 4 bytes has a type"),
        }
    } else {
        if let Some(k) = r.key {
            line.push_str(" key: ");
            line.push_str(&java_utf8(k));
        }
        if let Some(v) = r.value {
            line.push_str(" payload: ");
            line.push_str(&java_utf8(v));
        }
    }
    writeln!(out, "{line}")?;
    Ok(())
}

/// The base offset in an index file's name (the digits before its first dot), and its segment's path.
fn index_start(shown: &str, name: &str) -> Result<(i64, String), DumpLogError> {
    let stem = name.split('.').next().unwrap_or_default();
    let start: i64 =
        stem.parse().map_err(|_| stopped(shown, format!("NumberFormatException: For input string: \"{stem}\"")))?;
    let abs = absolute(shown);
    let dir = abs.rsplit_once('/').map_or("", |(d, _)| d);
    Ok((start, format!("{dir}/{stem}.log")))
}

fn read_whole(path: &str, shown: &str) -> Result<Vec<u8>, DumpLogError> {
    std::fs::read(path).map_err(|source| DumpLogError::Read { file: shown.to_owned(), source })
}

/// The entries of an offset index: (offset, position), all slots of the file (a preallocated tail included).
fn offset_entries(bytes: &[u8], start: i64) -> Vec<(i64, i64)> {
    bytes
        .chunks_exact(OFFSET_ENTRY as usize)
        .map(|e| {
            let rel = i32::from_be_bytes([e[0], e[1], e[2], e[3]]);
            let pos = i32::from_be_bytes([e[4], e[5], e[6], e[7]]);
            (start + i64::from(rel), i64::from(pos))
        })
        .collect()
}

/// A `.index` file: each entry, checked against the first batch at its position.
fn dump_offset_index(
    shown: &str,
    name: &str,
    opts: &DumpLogOptions,
    out: &mut dyn Write,
    summaries: &mut Summaries,
) -> Result<(), DumpLogError> {
    let (start, log_path) = index_start(shown, name)?;
    let mut seg = SegmentFile::open(&log_path, &log_path)?;
    let entries = offset_entries(&read_whole(shown, shown)?, start);
    if entries.is_empty() {
        writeln!(out, "{shown} is empty.")?;
        return Ok(());
    }
    let abs = absolute(shown);
    for (i, &(offset, position)) in entries.iter().enumerate() {
        if i > 0 && offset == start {
            break;
        }
        let Ok(position) = u64::try_from(position) else {
            return Err(stopped(shown, format!("IllegalArgumentException: Invalid position: {position}")));
        };
        if position > seg.len {
            return Err(stopped(
                shown,
                format!("IllegalArgumentException: Slice from position {position} exceeds end position of {log_path}"),
            ));
        }
        let end = (position + MAX_MESSAGE_SIZE).min(seg.len);
        let last = match seg.next(position, end)? {
            Next::Batch { size } => {
                let head = seg.read_at(position, size.min(27) as usize)?;
                batch_last_offset(head)
            }
            Next::End => {
                return Err(stopped(
                    shown,
                    format!("NoSuchElementException: no batch at position {position} of {log_path}"),
                ));
            }
        };
        if last != offset {
            summaries.index_mismatches.push(&abs, (offset, last), true);
        }
        if !opts.verify_index_only {
            writeln!(out, "offset: {offset} position: {position}")?;
        }
    }
    Ok(())
}

/// A batch's last offset from its first bytes (magic 2: base + last offset delta; Kafka reads older batches'
/// offset field as their last offset).
fn batch_last_offset(head: &[u8]) -> i64 {
    let base = i64::from_be_bytes([head[0], head[1], head[2], head[3], head[4], head[5], head[6], head[7]]);
    if head.len() >= 27 && (head[16] as i8) >= 2 {
        base + i64::from(i32::from_be_bytes([head[23], head[24], head[25], head[26]]))
    } else {
        base
    }
}

/// `AbstractIndex.largestLowerBoundSlotFor` over offset index entries: the slot of the largest offset at or
/// below `target`, searching the last 1024 entries first as Kafka does (which decides the answer when the
/// entries are not sorted).
fn largest_lower_bound(entries: &[(i64, i64)], target: i64) -> Option<usize> {
    if entries.is_empty() {
        return None;
    }
    let search = |lo: usize, hi: usize| {
        let (mut lo, mut hi) = (lo, hi);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            let found = entries[mid].0;
            if found > target {
                hi = mid - 1;
            } else if found < target {
                lo = mid;
            } else {
                return mid;
            }
        }
        lo
    };
    let last = entries.len() - 1;
    let first_hot = last.saturating_sub(8192 / OFFSET_ENTRY as usize);
    if entries[first_hot].0 < target {
        return Some(search(first_hot, last));
    }
    if entries[0].0 > target {
        return None;
    }
    Some(search(0, first_hot))
}

/// A `.timeindex` file: each entry, checked against the batch its offset names (found through the offset
/// index, as Kafka finds it).
fn dump_time_index(
    shown: &str,
    name: &str,
    opts: &DumpLogOptions,
    out: &mut dyn Write,
    summaries: &mut Summaries,
) -> Result<(), DumpLogError> {
    let (start, log_path) = index_start(shown, name)?;
    let mut seg = SegmentFile::open(&log_path, &log_path)?;
    let index_path = format!("{}.index", log_path.trim_end_matches(".log"));
    let offsets = offset_entries(&read_whole(&index_path, &index_path)?, start);
    let times: Vec<(i64, i64)> = read_whole(shown, shown)?
        .chunks_exact(TIME_ENTRY as usize)
        .map(|e| {
            let mut t = [0u8; 8];
            t.copy_from_slice(&e[..8]);
            (i64::from_be_bytes(t), start + i64::from(i32::from_be_bytes([e[8], e[9], e[10], e[11]])))
        })
        .collect();
    let abs = absolute(shown);
    let mut scratch = Vec::new();
    let mut previous = -1i64;
    for (i, &(timestamp, offset)) in times.iter().enumerate() {
        if i > 0 && offset == start {
            break;
        }
        let from = largest_lower_bound(&offsets, offset).map_or(0, |slot| offsets[slot].1);
        let mut position = u64::try_from(from).unwrap_or(0);
        let mut found = None;
        while let Next::Batch { size } = seg.next(position, seg.len.min(i32::MAX as u64))? {
            let head = seg.read_at(position, size.min(27) as usize)?;
            let last = batch_last_offset(head);
            if last >= offset {
                found = Some((position, size, last));
                break;
            }
            position += size;
        }
        match found {
            None => summaries.time_not_found.push(&abs, (offset, -1), false),
            Some((_, _, last)) if last != offset => summaries.time_not_found.push(&abs, (offset, last), false),
            Some((at, size, _)) => {
                let bytes = seg.read_at(at, size as usize)?.to_vec();
                let max = max_record_timestamp(shown, &bytes, at, &mut scratch)?;
                if max != timestamp {
                    summaries.time_mismatches.push(&abs, (timestamp, max), false);
                }
                if previous >= timestamp {
                    summaries.time_out_of_order.push(&abs, (timestamp, previous), false);
                }
            }
        }
        if !opts.verify_index_only {
            writeln!(out, "timestamp: {timestamp} offset: {offset}")?;
        }
        previous = timestamp;
    }
    Ok(())
}

/// The largest record timestamp of a batch (-1 for none), decoding its records as Kafka does.
fn max_record_timestamp(shown: &str, bytes: &[u8], position: u64, scratch: &mut Vec<u8>) -> Result<i64, DumpLogError> {
    if (bytes[16] as i8) < 2 {
        return Err(stopped(
            shown,
            format!("batch at position {position}: legacy message formats are not decoded by this tool"),
        ));
    }
    let h = header_fields(bytes);
    let fail = |what: String| stopped(shown, format!("batch at position {position}: {what}"));
    if h.compression().is_none() {
        return Err(fail(format!("IllegalArgumentException: Unknown compression type id: {}", h.attributes & 0x07)));
    }
    let batch = Batch { header: h, bytes };
    let mut max = -1;
    for r in batch.records(scratch).map_err(|e| fail(format!("{e}")))? {
        max = max.max(r.map_err(|e| fail(format!("{e}")))?.timestamp);
    }
    Ok(max)
}

/// A `.txnindex` file: an entry a line (the version is the entry's first byte, as Kafka reads it).
fn dump_txn_index(shown: &str, name: &str, out: &mut dyn Write) -> Result<(), DumpLogError> {
    let _ = name;
    let bytes = match std::fs::read(shown) {
        Ok(b) => b,
        // Kafka's index of a missing file is empty.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(source) => return Err(DumpLogError::Read { file: shown.to_owned(), source }),
    };
    for e in bytes.chunks_exact(TXN_ENTRY) {
        let version = e[0] as i8;
        if version > 0 {
            return Err(stopped(
                shown,
                format!(
                    "KafkaException: Unexpected aborted transaction version {version} in transaction index {}, \
                     current version is 0",
                    absolute(shown)
                ),
            ));
        }
        let long = |at: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&e[at..at + 8]);
            i64::from_be_bytes(a)
        };
        writeln!(
            out,
            "version: {version} producerId: {} firstOffset: {} lastOffset: {} lastStableOffset: {}",
            long(2),
            long(10),
            long(18),
            long(26)
        )?;
    }
    Ok(())
}

/// A `.snapshot` file: an entry a line, or Kafka's one line on standard error for one it cannot read.
fn dump_snapshot(shown: &str, out: &mut dyn Write, err: &mut dyn Write) -> Result<(), DumpLogError> {
    let bytes = read_whole(shown, shown)?;
    match read_snapshot(&bytes) {
        Err(CorruptSnapshot(message)) => writeln!(err, "{message}")?,
        Ok(entries) => {
            for e in entries {
                let txn = if e.current_txn_first_offset >= 0 {
                    format!("OptionalLong[{}]", e.current_txn_first_offset)
                } else {
                    "OptionalLong.empty".to_owned()
                };
                let mut line = format!(
                    "producerId: {} producerEpoch: {} coordinatorEpoch: {} currentTxnFirstOffset: {txn} \
                     lastTimestamp: {} ",
                    e.producer_id, e.producer_epoch, e.coordinator_epoch, e.timestamp
                );
                if e.last_offset >= 0 {
                    line.push_str(&format!(
                        "firstSequence: {} lastSequence: {} lastOffset: {} offsetDelta: {} timestamp: {}",
                        decrement_sequence(e.last_sequence, e.offset_delta),
                        e.last_sequence,
                        e.last_offset,
                        e.offset_delta,
                        e.timestamp
                    ));
                }
                writeln!(out, "{line}")?;
            }
        }
    }
    Ok(())
}

/// Scala 2.13's `mutable.HashMap` keyed by a file's absolute path, for the order Kafka prints its summaries
/// in: buckets of `hash & (table length - 1)` in turn, each ordered by hash, where the hash is Java's
/// `String.hashCode` spread as `h ^ (h >>> 16)`; the table starts at 16 slots and doubles when a put finds it
/// three quarters full (checked on every put, an update too).
#[derive(Debug, Clone)]
pub struct JvmMapOrder<V> {
    entries: Vec<(String, i32, V)>,
    table: usize,
}

impl<V> Default for JvmMapOrder<V> {
    fn default() -> Self {
        JvmMapOrder { entries: Vec::new(), table: 16 }
    }
}

/// Java's `String.hashCode`, over UTF-16 code units.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

impl<V> JvmMapOrder<V> {
    fn grow_if_needed(&mut self) {
        let threshold = self.table * 3 / 4;
        if self.entries.len() + 1 >= threshold {
            self.table *= 2;
        }
    }

    /// The value for `key`, made with `make` (one put) when there is none.
    fn entry(&mut self, key: &str, make: impl FnOnce() -> V, put_always: bool) -> &mut V {
        let exists = self.entries.iter().position(|(k, _, _)| k == key);
        if put_always || exists.is_none() {
            self.grow_if_needed();
        }
        let i = match exists {
            Some(i) => i,
            None => {
                let h = java_string_hash(key);
                self.entries.push((key.to_owned(), h ^ ((h as u32) >> 16) as i32, make()));
                self.entries.len() - 1
            }
        };
        &mut self.entries[i].2
    }

    /// The entries in the map's iteration order.
    pub fn in_order(&self) -> Vec<(&str, &V)> {
        let mask = self.table - 1;
        let mut order: Vec<(usize, i32, usize)> =
            self.entries.iter().enumerate().map(|(i, (_, h, _))| ((*h as u32 as usize) & mask, *h, i)).collect();
        order.sort();
        order.into_iter().map(|(_, _, i)| (self.entries[i].0.as_str(), &self.entries[i].2)).collect()
    }
}

/// Pairs gathered per file for one summary.
#[derive(Debug, Default)]
struct PairsByFile(JvmMapOrder<Vec<(i64, i64)>>);

impl PairsByFile {
    /// Adds a pair for `file`: `prepend` as Scala's `::=` (the newest printed first, and a put each time);
    /// otherwise appended to a buffer put once.
    fn push(&mut self, file: &str, pair: (i64, i64), prepend: bool) {
        let v = self.0.entry(file, Vec::new, prepend);
        v.push(pair);
    }

    /// The pairs of each file in print order.
    fn each(&self, prepended: bool) -> Vec<(&str, Vec<(i64, i64)>)> {
        self.0
            .in_order()
            .into_iter()
            .map(|(f, v)| (f, if prepended { v.iter().rev().copied().collect() } else { v.clone() }))
            .collect()
    }
}

/// What Kafka's tool prints on standard error after every file.
#[derive(Debug, Default)]
struct Summaries {
    index_mismatches: PairsByFile,
    time_mismatches: PairsByFile,
    time_out_of_order: PairsByFile,
    time_not_found: PairsByFile,
    non_consecutive: PairsByFile,
}

impl Summaries {
    fn print(&self, err: &mut dyn Write) -> io::Result<()> {
        for (file, pairs) in self.index_mismatches.each(true) {
            writeln!(err, "Mismatches in :{file}")?;
            for (index, log) in pairs {
                writeln!(err, "  Index offset: {index}, log offset: {log}")?;
            }
        }
        for (file, pairs) in self.time_mismatches.each(false) {
            writeln!(err, "Found timestamp mismatch in :{file}")?;
            for (index, log) in pairs {
                writeln!(err, "  Index timestamp: {index}, log timestamp: {log}")?;
            }
        }
        for (file, pairs) in self.time_out_of_order.each(false) {
            writeln!(err, "Found out of order timestamp in :{file}")?;
            for (index, previous) in pairs {
                writeln!(err, "  Index timestamp: {index}, Previously indexed timestamp: {previous}")?;
            }
        }
        for (_, pairs) in self.time_not_found.each(false) {
            writeln!(err, "The following indexed offsets are not found in the log.")?;
            for (index, log) in pairs {
                writeln!(err, "Indexed offset: {index}, found log offset: {log}")?;
            }
        }
        for (file, pairs) in self.non_consecutive.each(true) {
            writeln!(err, "Non-consecutive offsets in {file}")?;
            for (first, second) in pairs {
                writeln!(err, "  {first} is followed by {second}")?;
            }
        }
        Ok(())
    }
}

/// The `.log` files of a partition directory in base order, as paths under `dir` as given (what
/// `kafka-dump-log.sh --files` would be given to dump a whole partition).
///
/// # Errors
/// The directory cannot be listed.
pub fn segment_files(dir: &Path) -> io::Result<Vec<String>> {
    let mut bases: Vec<(u64, String)> = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let name = e?.file_name().to_string_lossy().into_owned();
        if let log_core::kafka::files::KafkaName::Segment {
            base,
            file: log_core::kafka::files::SegmentFile::Log,
            stage: log_core::kafka::files::Stage::Live,
        } = log_core::kafka::files::classify(&name)
        {
            bases.push((base, name));
        }
    }
    bases.sort();
    let dir = dir.display().to_string();
    Ok(bases.into_iter().map(|(_, name)| format!("{dir}/{name}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_decoding_takes_an_encoded_surrogate_as_one_character() {
        assert_eq!(java_utf8(b"a\xED\xA0\x80b"), "a\u{FFFD}b");
        assert_eq!(java_utf8(b"a\xED\xA0Ab"), "a\u{FFFD}Ab");
        assert_eq!(java_utf8(b"\xC0\x80"), "\u{FFFD}\u{FFFD}");
        assert_eq!(java_utf8("é✓".as_bytes()), "é✓");
        assert_eq!(java_utf8(b"x\xE2\x9C"), "x\u{FFFD}");
    }

    #[test]
    fn sequences_wrap_as_kafkas_do() {
        assert_eq!(increment_sequence(i32::MAX, 1), 0);
        assert_eq!(increment_sequence(5, 3), 8);
        assert_eq!(decrement_sequence(0, 1), i32::MAX);
        assert_eq!(decrement_sequence(9, 4), 5);
    }

    #[test]
    fn paths_print_as_java_files_do() {
        assert_eq!(java_file_string("a//b/"), "a/b");
        assert_eq!(java_file_string("/"), "/");
        assert_eq!(java_file_string("./x.log"), "./x.log");
    }

    #[test]
    fn the_lookup_searches_the_warm_entries_first() {
        let entries: Vec<(i64, i64)> = (0..3000).map(|i| (i * 10, i * 100)).collect();
        assert_eq!(largest_lower_bound(&entries, 25), Some(2));
        assert_eq!(largest_lower_bound(&entries, 29_995), Some(2999));
        assert_eq!(largest_lower_bound(&entries, -1), None);
        // A zero-filled tail: the warm section's first slot is below the target, so the search stays there.
        let mut tail = entries.clone();
        tail.extend(std::iter::repeat_n((0, 0), 2000));
        assert_eq!(largest_lower_bound(&tail, 500), Some(4999));
    }

    #[test]
    fn map_order_follows_buckets_then_hashes() {
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("hello"), 99_162_322);
        let mut m: JvmMapOrder<u32> = JvmMapOrder::default();
        for k in ["/b", "/a", "/c"] {
            *m.entry(k, || 0, true) += 1;
        }
        let order: Vec<&str> = m.in_order().into_iter().map(|(k, _)| k).collect();
        // "/a" hashes 1536 (bucket 0), "/b" 1537 (bucket 1), "/c" 1538 (bucket 2).
        assert_eq!(order, ["/a", "/b", "/c"]);
    }
}
