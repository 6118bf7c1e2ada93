//! `check`: a read-only verification of every file of a log, for operators (`logcompact check`).
//!
//! It opens the log with [`Log::open`] read-only (so it changes nothing, takes no lock and works beside a
//! running writer), then scans every frame of every segment whatever the hints say and verifies every hint
//! against its segment. What it finds falls in two classes:
//!
//! - a [`Problem`]: stored data is damaged or cannot be reached (a bad frame in a closed segment, a bad frame
//!   followed by valid ones in the active segment, a `.swap` that would replace a segment with garbage, a
//!   name the log cannot use, an unreadable checkpoint). `check` reports the first one.
//! - a [`Notice`]: something the next writable open repairs on its own without losing a record (an
//!   interrupted cleaning swap, a torn tail, a missing or wrong hint, leftovers of a pass, a checkpoint past
//!   the end). A log with notices only is intact.

use std::fmt;
use std::sync::Arc;

use crate::error::Error;
use crate::log::Log;
use crate::progress::{Meter, Tally};
use crate::storage::SegmentStore;
use crate::{CheckpointFile, Format};

/// Verifies every checksum and invariant of the log of `format` in `store`, its cleaner checkpoint in
/// `checkpoint`, without changing anything, counting what it reads on `meter` when one is given: one entry for
/// both formats, which each answer in their own module. A native log keeps its checkpoint in
/// its own store, so `checkpoint` must then be [`crate::CheckpointFile::Own`]: any other is a problem, never
/// silently read elsewhere ([`Log::open`] refuses the same).
///
/// # Errors
/// The first [`Problem`] found.
pub fn check(
    store: Arc<dyn SegmentStore>,
    format: Format,
    checkpoint: CheckpointFile,
    meter: Option<&Meter>,
) -> Result<CheckReport, Problem> {
    format.require_checkpoint_placement(&checkpoint)?;
    format.check(store, checkpoint, meter)
}

/// What a check saw when it found no problem.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CheckReport {
    /// Segments (the active one included).
    pub segments: u64,
    /// Records.
    pub records: u64,
    /// Bytes of segments.
    pub bytes: u64,
    /// Index hints present and verified.
    pub indexes_verified: u64,
    /// Closed segments without a usable index hint (allowed: it is rebuilt on open).
    pub indexes_missing: u64,
    /// The cleaner checkpoint, if one was written.
    pub checkpoint: Option<u64>,
    /// What the next writable open repairs on its own; none of it loses a record.
    pub notices: Vec<Notice>,
    /// Files in the store that are not part of the log (ignored by it).
    pub other_files: Vec<String>,
    /// The largest record of a compressed batch, by its decoded size as Kafka bounds it
    /// (`max.decompressed.message.bytes`, which makes Kafka's cleaner fail a partition holding a larger one;
    /// uncompressed batches are not bounded). `None` when no batch is compressed.
    pub largest_compressed_record: Option<RecordSize>,
    /// What stands in a cleaner's way without being damage (filled by callers that know the log's settings:
    /// a record over the topic's `max.decompressed.message.bytes`).
    pub warnings: Vec<Notice>,
}

/// Where a record is and how large it is decoded ([`crate::RecordRef::body_bytes`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RecordSize {
    /// The segment file holding it.
    pub file: String,
    /// Its offset.
    pub offset: u64,
    /// Its size in bytes after its length varint.
    pub bytes: u64,
}

/// Something the next writable open repairs by itself.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Notice {
    /// The file concerned (or [`crate::DIRECTORY`], the directory itself).
    pub file: String,
    /// What is there and what the next open does about it.
    pub what: String,
}

/// How bad a [`Problem`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum ProblemClass {
    /// Stored data is damaged or cannot be reached.
    Corruption,
    /// The store does not hold a log of this format.
    NotALog,
    /// The store holds a log of the other format this build reads: checked with that format, it is read.
    AnotherFormat,
    /// Intact data of a format version this build does not read (a Kafka message set older than magic 2).
    OtherFormat,
    /// A name the log would take for one of its files that it cannot use (a directory or a symbolic link under
    /// a segment's or a swap's name): no repair can read or remove it; it is moved by hand.
    UnusableName,
    /// The store could not be read (an I/O error) or kept changing.
    Unreadable,
}

/// The first problem found.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    /// How bad it is.
    pub class: ProblemClass,
    /// File name.
    pub file: String,
    /// Byte position in the file, where it applies.
    pub position: Option<u64>,
    /// What is wrong.
    pub what: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Some(p) => write!(f, "{} at byte {p}: {}", self.file, self.what),
            None => write!(f, "{}: {}", self.file, self.what),
        }
    }
}

impl std::error::Error for Problem {}

pub(crate) fn corruption(file: &str, position: Option<u64>, what: impl Into<String>) -> Problem {
    Problem { class: ProblemClass::Corruption, file: file.to_owned(), position, what: what.into() }
}

pub(crate) fn notice(file: &str, what: impl Into<String>) -> Notice {
    Notice { file: file.to_owned(), what: what.into() }
}

impl From<Error> for Problem {
    fn from(e: Error) -> Problem {
        let what = e.to_string();
        match e {
            Error::Corrupt { segment, position, kind } if kind.is_other_format() => Problem {
                class: ProblemClass::OtherFormat,
                file: segment,
                position: Some(position),
                what: kind.to_string(),
            },
            Error::Corrupt { segment, position, kind } => corruption(&segment, Some(position), kind.to_string()),
            Error::CorruptNotTorn { segment, position, .. } => corruption(&segment, Some(position), what),
            Error::UnusableName { name, .. } => {
                Problem { class: ProblemClass::UnusableName, file: name, position: None, what }
            }
            Error::BadCheckpoint { name, reason } => corruption(&name, None, reason),
            Error::BadCheckpointLine { name, reason } => corruption(&name, None, reason),
            Error::NotALog { other_format, .. } => {
                let class = if other_format { ProblemClass::AnotherFormat } else { ProblemClass::NotALog };
                Problem { class, file: crate::error::DIRECTORY.into(), position: None, what }
            }
            Error::Io { name, .. } => Problem { class: ProblemClass::Unreadable, file: name, position: None, what },
            _ => {
                Problem { class: ProblemClass::Unreadable, file: crate::error::DIRECTORY.into(), position: None, what }
            }
        }
    }
}

/// The stage a [`Meter`] shows while a check reads a log.
pub const STAGE: &str = "";

/// Scans every batch and record of every segment of `log` (opened read-only), checksums included, counting
/// what it reads on `meter`.
pub(crate) fn check_log(log: &Log, mut report: CheckReport, meter: Option<&Meter>) -> Result<CheckReport, Problem> {
    report.notices.extend(pending_notices(log));
    report.other_files.extend(log.recovery_report().ignored_files.iter().cloned());
    let snapshot = log.snapshot();
    if let Some(m) = meter {
        m.begin(STAGE, Some(snapshot.closed().iter().map(|s| s.size()).sum::<u64>() + snapshot.active_len()));
    }
    let mut read = Tally::of(meter);
    let mut scratch = Vec::new();
    for segment in snapshot.closed() {
        scan_segment(segment.scan(), segment.name(), segment.base(), &mut scratch, &mut report, &mut read)?;
        report.segments += 1;
        report.records += segment.summary().records;
        report.bytes += segment.size();
    }
    // The active segment was scanned batch by batch by the open (a bad batch with valid ones after it fails
    // it); its records are decoded here too.
    let active = crate::SegmentScan::new(
        log.format(),
        snapshot.active_name(),
        snapshot.active_source(),
        0,
        snapshot.active_len(),
        true,
    );
    scan_segment(active, snapshot.active_name(), snapshot.active_base(), &mut scratch, &mut report, &mut read)?;
    report.segments += 1;
    report.records += snapshot.active_records_count();
    report.bytes += snapshot.active_len();
    Ok(report)
}

/// Every batch and record of one segment: checksums, record decoding, offsets increasing from its base; the
/// largest record of a compressed batch noted in `report`.
fn scan_segment(
    mut scan: crate::SegmentScan<'_>,
    name: &str,
    base: u64,
    scratch: &mut Vec<u8>,
    report: &mut CheckReport,
    read: &mut Tally<'_>,
) -> Result<(), Problem> {
    let mut previous: Option<u64> = None;
    while let Some(window) = scan.next_window()? {
        for item in window.batches() {
            let placed = item?;
            let b = placed.batch;
            read.add(b.len() as u64, b.record_count);
            if previous.is_some_and(|p| b.base_offset <= p) || b.base_offset < base {
                let what =
                    format!("offset {} does not follow {previous:?} in a segment based at {base}", b.base_offset);
                return Err(corruption(name, Some(placed.position), what));
            }
            previous = Some(b.last_offset);
            let records =
                b.records(scratch).map_err(|kind| corruption(name, Some(placed.position), kind.to_string()))?;
            let compressed = b.is_compressed();
            for rec in records {
                let rec = rec.map_err(|kind| corruption(name, Some(placed.position), kind.to_string()))?;
                let bytes = rec.body_bytes as u64;
                if compressed && report.largest_compressed_record.as_ref().is_none_or(|l| bytes > l.bytes) {
                    let largest = RecordSize { file: name.to_owned(), offset: rec.offset, bytes };
                    report.largest_compressed_record = Some(largest);
                }
            }
        }
    }
    Ok(())
}

/// Notices for what the next writable open will repair, from the read-only open's report.
/// The files of the store with one of `suffixes`, up to five named, for a notice (the directory when none).
fn files_ending(log: &Log, suffixes: &[&str]) -> String {
    let mut names: Vec<String> = log
        .store()
        .list()
        .unwrap_or_default()
        .into_iter()
        .filter(|n| suffixes.iter().any(|s| n.ends_with(s)))
        .collect();
    names.sort();
    match names.len() {
        0 => crate::error::DIRECTORY.to_owned(),
        n if n > 5 => format!("{} and {} more", names[..5].join(", "), n - 5),
        _ => names.join(", "),
    }
}

fn pending_notices(log: &Log) -> Vec<Notice> {
    let r = log.recovery_report();
    let mut out = Vec::new();
    if let Some(t) = &r.truncated_tail {
        // The read-only open stopped at the tail: the log's next offset is where the torn write began, so what
        // the cut drops is named by offset as well as by byte.
        let next = log.next_offset();
        let kept =
            if next == 0 { "no record precedes it".to_owned() } else { format!("offsets up to {} stay", next - 1) };
        out.push(notice(
            &t.segment,
            format!(
                "torn tail of {} at byte {} ({}), left by an unsynced write; no valid record follows it and the next \
                 open cuts it: it drops offsets {next} and on, a write that never finished (no record in it can be \
                 read), and {kept}",
                crate::human::bytes(t.bytes),
                t.position,
                t.kind
            ),
        ));
    }
    if r.swaps_completed > 0 {
        out.push(notice(
            &files_ending(log, &[".swap"]),
            format!(
                "an interrupted cleaning swap is committed; the next open completes it ({} segments)",
                r.swaps_completed
            ),
        ));
    }
    for e in &r.pending_swaps {
        out.push(notice(
            &e.file,
            format!(
                "completing this swap removes {} records, at offsets {}: each one a cleaning pass may drop (a later \
                 record of its key is left, or it is unkeyed, aborted, or past its delete horizon)",
                e.removed.records,
                e.removed.describe()
            ),
        ));
    }
    if r.cleaned_files_discarded > 0 {
        out.push(notice(
            &files_ending(log, &[".cleaned", ".swap"]),
            format!(
                "an interrupted cleaning swap did not reach its commit point; the next open discards its {} files",
                r.cleaned_files_discarded
            ),
        ));
    }
    if r.empty_segments_removed > 0 {
        out.push(notice(
            crate::error::DIRECTORY,
            format!("{} empty closed segments; the next open removes them", r.empty_segments_removed),
        ));
    }
    if r.stray_files_removed > 0 {
        out.push(notice(
            &files_ending(log, &[".deleted", ".cleaned", ".swap"]),
            format!("{} leftover files of earlier passes; the next open removes them", r.stray_files_removed),
        ));
    }
    for (file, at) in &r.zero_filled_segments {
        out.push(notice(file, format!("zero fill from byte {at} (a preallocated segment's unused space): not data")));
    }
    for file in &r.ignored_files {
        out.push(notice(file, "not a file of the partition: ignored".to_owned()));
    }
    if let Some(c) = r.checkpoint_reset {
        out.push(notice(
            crate::names::CHECKPOINT_FILE,
            format!("checkpoint {} is past the end of the log; cleaning restarts from offset {}", c.found, c.reset_to),
        ));
    }
    out
}
