//! Offset indexes (`.index`), time indexes (`.timeindex`), transaction indexes (`.txnindex`) and producer
//! snapshots (`.snapshot`), as Kafka 4.4's `DumpLogSegments` prints them: each entry a line (unless
//! `--verify-index-only`), each checked against the segment it indexes, the problems kept for the summaries;
//! with `--index-sanity-check`, only the check a broker makes when it opens an index.
//!
//! Index files are small (10 MiB at most by Kafka's default) and read whole; their segments are read a batch
//! header at a time.
#![expect(clippy::big_endian_bytes, reason = "Kafka's files are big-endian")]

use std::collections::BTreeMap;
use std::io::{self, Write};

use log_core::kafka::Batch;

use super::segment::{Next, SegmentFile, header_fields};
use super::{DumpLogError, DumpLogOptions, Summaries, absolute, died, open_failed, parse_long};
use crate::producer_snapshot::{CorruptSnapshot, read_snapshot};

/// An offset index entry: relative offset and position (i32 each).
const OFFSET_ENTRY: u64 = 8;
/// A time index entry: timestamp (i64) and relative offset (i32).
const TIME_ENTRY: u64 = 12;
/// A `.txnindex` entry.
const TXN_ENTRY: usize = 34;
/// Kafka's `CorruptIndexException`.
const CORRUPT_INDEX: &str = "org.apache.kafka.storage.internals.log.CorruptIndexException";

/// The base offset in an index file's name (the digits before its first dot), and its segment's path.
fn index_start(name: &str, shown: &str) -> Result<(i64, String, String), DumpLogError> {
    let stem = name.split('.').next().unwrap_or_default();
    let start = parse_long(stem)?;
    let abs = absolute(shown);
    let dir = abs.rsplit_once('/').map_or("", |(d, _)| d);
    Ok((start, format!("{dir}/{stem}.log"), format!("{dir}/{stem}")))
}

/// An index file's bytes; a missing one is empty (Kafka's tool creates it empty).
fn read_index(path: &str, shown: &str) -> Result<Vec<u8>, DumpLogError> {
    match std::fs::read(path) {
        Ok(b) => Ok(b),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(open_failed(shown, &e)),
    }
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
pub(super) fn dump_offset_index(
    shown: &str,
    name: &str,
    opts: &DumpLogOptions,
    out: &mut dyn Write,
    summaries: &mut Summaries,
) -> Result<(), DumpLogError> {
    let (start, log_path, _) = index_start(name, shown)?;
    let mut seg = SegmentFile::open(&log_path, &log_path)?;
    let bytes = read_index(shown, shown)?;
    let entries = offset_entries(&bytes, start);
    if entries.is_empty() {
        writeln!(out, "{shown} is empty.")?;
        return Ok(());
    }
    let abs = absolute(shown);
    if opts.index_sanity_check {
        let last = entries[entries.len() - 1].0;
        if last < start {
            return Err(died(
                CORRUPT_INDEX,
                format!(
                    "Corrupt index found, index file ({abs}) has non-zero size but the last offset is {last} which \
                     is less than the base offset {start}."
                ),
            ));
        }
        if !(bytes.len() as u64).is_multiple_of(OFFSET_ENTRY) {
            return Err(died(
                CORRUPT_INDEX,
                format!(
                    "Index file {abs} is corrupt, found {} bytes which is neither positive nor a multiple of \
                     {OFFSET_ENTRY}",
                    bytes.len()
                ),
            ));
        }
        writeln!(out, "{shown} passed sanity check.")?;
        return Ok(());
    }
    for (i, &(offset, position)) in entries.iter().enumerate() {
        if i > 0 && offset == start {
            break;
        }
        let Ok(position) = u64::try_from(position) else {
            return Err(died("java.lang.IllegalArgumentException", format!("Invalid position: {position}")));
        };
        if position > seg.len {
            return Err(died(
                "java.lang.IllegalArgumentException",
                format!("Slice from position {position} exceeds end position of {log_path}"),
            ));
        }
        let end = (position + opts.max_message_size.max(0) as u64).min(seg.len);
        let last = match seg.next(position, end)? {
            Next::Batch { size } => batch_last_offset(seg.read_at(position, size.min(27) as usize)?),
            Next::End => return Err(DumpLogError::Died { class: "java.util.NoSuchElementException", message: None }),
        };
        if last != offset {
            summaries.index_mismatches.compute_if_absent(&abs, BTreeMap::new).insert(offset, last);
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
pub(super) fn dump_time_index(
    shown: &str,
    name: &str,
    opts: &DumpLogOptions,
    out: &mut dyn Write,
    summaries: &mut Summaries,
) -> Result<(), DumpLogError> {
    let (start, log_path, stem) = index_start(name, shown)?;
    let mut seg = SegmentFile::open(&log_path, &log_path)?;
    let index_path = format!("{stem}.index");
    let offsets = offset_entries(&read_index(&index_path, &index_path)?, start);
    let bytes = read_index(shown, shown)?;
    let times: Vec<(i64, i64)> = bytes
        .chunks_exact(TIME_ENTRY as usize)
        .map(|e| {
            let mut t = [0u8; 8];
            t.copy_from_slice(&e[..8]);
            (i64::from_be_bytes(t), start + i64::from(i32::from_be_bytes([e[8], e[9], e[10], e[11]])))
        })
        .collect();
    let abs = absolute(shown);
    if opts.index_sanity_check {
        return time_sanity_check(&times, bytes.len(), start, &abs, shown, out);
    }
    let mut scratch = Vec::new();
    let mut previous = -1i64;
    let end = seg.len.min(i32::MAX as u64);
    for (i, &(timestamp, offset)) in times.iter().enumerate() {
        if i > 0 && offset == start {
            break;
        }
        let from = largest_lower_bound(&offsets, offset).map_or(0, |slot| offsets[slot].1);
        let mut position = u64::try_from(from).unwrap_or(0);
        let mut found = None;
        while let Next::Batch { size } = seg.next(position, end)? {
            let last = batch_last_offset(seg.read_at(position, size.min(27) as usize)?);
            if found.is_none() && last >= offset {
                found = Some((position, size, last));
                if i > 0 {
                    break;
                }
            }
            // Kafka lists every batch to the end of the segment before it looks: the first entry's look
            // meets any batch it cannot read.
            position += size;
        }
        match found {
            None => summaries.time_not_found.compute_if_absent(&abs, Vec::new).push((offset, -1)),
            Some((_, _, last)) if last != offset => {
                summaries.time_not_found.compute_if_absent(&abs, Vec::new).push((offset, last));
            }
            Some((at, size, _)) => {
                let batch = seg.read_at(at, size as usize)?.to_vec();
                let max = max_record_timestamp(&batch, &mut scratch)?;
                if max != timestamp {
                    summaries.time_mismatches.compute_if_absent(&abs, Vec::new).push((timestamp, max));
                }
                if previous >= timestamp {
                    summaries.time_out_of_order.compute_if_absent(&abs, Vec::new).push((timestamp, previous));
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

/// `TimeIndex.sanityCheck`.
fn time_sanity_check(
    times: &[(i64, i64)],
    len: usize,
    start: i64,
    abs: &str,
    shown: &str,
    out: &mut dyn Write,
) -> Result<(), DumpLogError> {
    if let (Some(&(first, _)), Some(&(last_timestamp, last_offset))) = (times.first(), times.last()) {
        if last_timestamp < first {
            return Err(died(
                CORRUPT_INDEX,
                format!(
                    "Corrupt time index found, time index file ({abs}) has non-zero size but the last timestamp is \
                     {last_timestamp} which is less than the first timestamp {first}"
                ),
            ));
        }
        if last_offset < start {
            return Err(died(
                CORRUPT_INDEX,
                format!(
                    "Corrupt time index found, time index file ({abs}) has non-zero size but the last offset is \
                     {last_offset} which is less than the first offset {start}"
                ),
            ));
        }
    }
    if !(len as u64).is_multiple_of(TIME_ENTRY) {
        return Err(died(
            CORRUPT_INDEX,
            format!(
                "Time index file {abs} is corrupt, found {len} bytes which is neither positive nor a multiple of \
                 {TIME_ENTRY}"
            ),
        ));
    }
    writeln!(out, "{shown} passed sanity check.")?;
    Ok(())
}

/// The largest record timestamp of a batch (-1 for none), decoding its records as Kafka does.
fn max_record_timestamp(bytes: &[u8], scratch: &mut Vec<u8>) -> Result<i64, DumpLogError> {
    let invalid = |e: String| died("org.apache.kafka.common.InvalidRecordException", e);
    if (bytes[16] as i8) < 2 {
        // A legacy message is its own single record.
        if bytes[16] == 1 && bytes.len() >= 26 {
            let mut t = [0u8; 8];
            t.copy_from_slice(&bytes[18..26]);
            return Ok(i64::from_be_bytes(t));
        }
        return Ok(-1);
    }
    if bytes.len() < log_core::kafka::HEADER_BYTES {
        return Err(invalid(format!("a batch of {} bytes has no room for its header", bytes.len())));
    }
    let header = header_fields(bytes);
    if header.compression().is_none() {
        return Err(died(
            "java.lang.IllegalArgumentException",
            format!("Unknown compression type id: {}", header.attributes & 0x07),
        ));
    }
    let batch = Batch { header, bytes };
    let mut max = -1;
    for r in batch.records(scratch).map_err(|e| invalid(e.to_string()))? {
        max = max.max(r.map_err(|e| invalid(e.to_string()))?.timestamp);
    }
    Ok(max)
}

/// A `.txnindex` file: an entry a line (a missing file is an empty index to Kafka).
pub(super) fn dump_txn_index(shown: &str, out: &mut dyn Write) -> Result<(), DumpLogError> {
    let bytes = read_index(shown, shown)?;
    for e in bytes.chunks_exact(TXN_ENTRY) {
        let version = e[0] as i8;
        if version > 0 {
            return Err(died(
                "org.apache.kafka.common.KafkaException",
                format!(
                    "Unexpected aborted transaction version {version} in transaction index {}, current version is 0",
                    absolute(shown)
                ),
            ));
        }
        let long = |at: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&e[at..at + 8]);
            i64::from_be_bytes(a)
        };
        // Kafka 4.4 prints the current version, whatever the entry holds.
        writeln!(
            out,
            "version: 0 producerId: {} firstOffset: {} lastOffset: {} lastStableOffset: {}",
            long(2),
            long(10),
            long(18),
            long(26)
        )?;
    }
    Ok(())
}

/// Kafka's `DefaultRecordBatch.decrementSequence`.
fn decrement_sequence(sequence: i32, decrement: i32) -> i32 {
    if sequence < decrement { i32::MAX - (decrement - sequence) + 1 } else { sequence - decrement }
}

/// A `.snapshot` file: an entry a line, or Kafka's one line on standard error for one it cannot read.
pub(super) fn dump_producer_snapshot(
    shown: &str,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), DumpLogError> {
    let bytes = std::fs::read(shown).map_err(|e| open_failed(shown, &e))?;
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
                     lastTimestamp: {}",
                    e.producer_id, e.producer_epoch, e.coordinator_epoch, e.timestamp
                );
                if e.last_offset >= 0 {
                    line.push_str(&format!(
                        " firstSequence: {} lastSequence: {} lastOffset: {} offsetDelta: {} timestamp: {}",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_go_back_as_kafkas_do() {
        assert_eq!(decrement_sequence(0, 1), i32::MAX);
        assert_eq!(decrement_sequence(9, 4), 5);
    }

    #[test]
    fn the_lookup_searches_the_warm_entries_first() {
        let entries: Vec<(i64, i64)> = (0..3000).map(|i| (i * 10, i * 100)).collect();
        assert_eq!(largest_lower_bound(&entries, 25), Some(2));
        assert_eq!(largest_lower_bound(&entries, 29_995), Some(2999));
        assert_eq!(largest_lower_bound(&entries, -1), None);
        let mut tail = entries.clone();
        tail.extend(std::iter::repeat_n((0, 0), 2000));
        assert_eq!(largest_lower_bound(&tail, 500), Some(4999));
    }
}
