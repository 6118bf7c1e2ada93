//! `check`: a read-only verification of every file of a log, for operators (`logcompact check`).
//!
//! It opens the log with [`Log::open_read_only`] (so it changes nothing, takes no lock and works beside a
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

use crate::config::LogConfig;
use crate::error::Error;
use crate::index_file::{self, IndexProblem};
use crate::layout::Layout;
use crate::log::Log;
use crate::names::{FileKind, file_name};
use crate::segment::SealedSegment;
use crate::storage::SegmentStore;

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

fn corruption(file: &str, position: Option<u64>, what: impl Into<String>) -> Problem {
    Problem { class: ProblemClass::Corruption, file: file.to_owned(), position, what: what.into() }
}

fn notice(file: &str, what: impl Into<String>) -> Notice {
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
            Error::NotALog { .. } => {
                Problem { class: ProblemClass::NotALog, file: crate::error::DIRECTORY.into(), position: None, what }
            }
            Error::Io { name, .. } => Problem { class: ProblemClass::Unreadable, file: name, position: None, what },
            _ => {
                Problem { class: ProblemClass::Unreadable, file: crate::error::DIRECTORY.into(), position: None, what }
            }
        }
    }
}

/// Verifies every checksum and invariant of the log in `store` without changing anything: frames decode and
/// their CRCs match; offsets strictly increase within and across segments and never fall below the base in
/// the file name; every hint matches its segment; a pending swap would complete with valid segments; the
/// checkpoint parses.
///
/// # Errors
/// The first [`Problem`] found.
pub fn check_store(store: Arc<dyn SegmentStore>) -> Result<CheckReport, Problem> {
    let log = Log::open_read_only(Arc::clone(&store), LogConfig::default())?;
    let layout = Layout::scan(&*store)?;
    let mut report = CheckReport {
        checkpoint: crate::checkpoint::read_own(&*store)?,
        other_files: layout.foreign.clone(),
        ..CheckReport::default()
    };
    let snapshot = log.snapshot();
    for segment in snapshot.closed() {
        let hint = file_name(segment.base(), FileKind::Index);
        if layout.hints.contains_key(&segment.base()) {
            match verify_hint(&*store, &hint, segment) {
                Ok(()) => report.indexes_verified += 1,
                Err(what) => {
                    report.indexes_missing += 1;
                    report.notices.push(notice(&hint, what));
                }
            }
        } else {
            report.indexes_missing += 1;
        }
    }
    check_log(&log, report)
}

/// As [`check_store`] for the Kafka partition in `store` (its cleaner checkpoint in `checkpoint`): every
/// batch's CRC, every record, the order of offsets, a pending swap, each `.txnindex` against the markers.
/// Each closed segment's `.index` and `.timeindex` are checked as a broker's sanity check reads them (entries
/// in order, inside their segment): one that fails is a notice, not a problem, since a broker rebuilds a
/// damaged index when it loads it.
///
/// # Errors
/// The first [`Problem`] found.
pub fn check_kafka(store: Arc<dyn SegmentStore>, checkpoint: crate::CheckpointFile) -> Result<CheckReport, Problem> {
    let log = Log::open_kafka_read_only(Arc::clone(&store), LogConfig::default(), checkpoint.clone())?;
    let report = CheckReport { checkpoint: checkpoint.read(&*store)?, ..CheckReport::default() };
    let mut report = check_log(&log, report)?;
    check_txn_indexes(&log, &*store, &mut report)?;
    check_kafka_indexes(&log, &*store, &mut report);
    Ok(report)
}

/// Each closed segment's `.index` and `.timeindex`: counted as verified when every entry lies inside the
/// segment (offsets from its base to its last, positions within its bytes) in increasing order (timestamps
/// never decreasing), as missing when absent, and a notice naming the first bad entry otherwise. Zero entries
/// after the first are a preallocated index's unused space, as Kafka reads them. `dump --format kafka --files
/// ... --verify-index-only` compares every entry with the batch it points at.
fn check_kafka_indexes(log: &Log, store: &dyn SegmentStore, report: &mut CheckReport) {
    use crate::kafka::files::{SegmentFile, Stage, name};
    use crate::kafka::index::{read_offset_index, read_time_index};
    let snapshot = log.snapshot();
    for segment in snapshot.closed() {
        let (base, size) = (segment.base(), segment.size());
        let last = segment.next_offset().saturating_sub(1);
        for kind in [SegmentFile::OffsetIndex, SegmentFile::TimeIndex] {
            let file = name(base, kind, Stage::Live);
            let Ok(f) = store.open(&file) else {
                report.indexes_missing += 1;
                continue;
            };
            // One entry a batch at the most, and a batch is at least 61 bytes: anything larger is not this
            // segment's index (and is not read whole).
            let Some(len) = usize::try_from(f.len()).ok().filter(|&l| l as u64 <= size / 61 * 12 + 4096) else {
                report.notices.push(notice(&file, "larger than any index of its segment; a broker rebuilds it"));
                continue;
            };
            let mut bytes = vec![0; len];
            if let Err(e) = f.read_at(0, &mut bytes) {
                report.notices.push(notice(&file, format!("cannot be read: {e}")));
                continue;
            }
            let bad = match kind {
                SegmentFile::OffsetIndex => first_bad_offset_entry(&read_offset_index(&bytes, base), base, last, size),
                _ => first_bad_time_entry(&read_time_index(&bytes, base), base, last),
            };
            match bad {
                None => report.indexes_verified += 1,
                Some(what) => report.notices.push(notice(
                    &file,
                    format!("{what}; a broker rebuilds a damaged index when it loads it (dump --format kafka --files {file} --verify-index-only lists every entry that disagrees)"),
                )),
            }
        }
    }
}

/// The first `.index` entry `(offset, position)` outside its segment or out of order, described.
fn first_bad_offset_entry(entries: &[(u64, u32)], base: u64, last: u64, size: u64) -> Option<String> {
    let mut previous: Option<(u64, u32)> = None;
    for (i, &(offset, position)) in entries.iter().enumerate() {
        if i > 0 && (offset, position) == (base, 0) {
            break;
        }
        let why = if offset < base || offset > last {
            Some(format!("offset outside {base}..={last}"))
        } else if u64::from(position) >= size {
            Some(format!("position past the segment's {size} bytes"))
        } else if previous.is_some_and(|(o, p)| offset <= o || position <= p) {
            Some("not after the entry before it".to_owned())
        } else {
            None
        };
        if let Some(why) = why {
            return Some(format!("entry {i} (offset {offset}, position {position}): {why}"));
        }
        previous = Some((offset, position));
    }
    None
}

/// The first `.timeindex` entry `(timestamp, offset)` outside its segment or out of order, described.
fn first_bad_time_entry(entries: &[(i64, u64)], base: u64, last: u64) -> Option<String> {
    let mut previous: Option<(i64, u64)> = None;
    for (i, &(timestamp, offset)) in entries.iter().enumerate() {
        if i > 0 && (timestamp, offset) == (0, base) {
            break;
        }
        let why = if offset < base || offset > last {
            Some(format!("offset outside {base}..={last}"))
        } else if previous.is_some_and(|(t, o)| timestamp < t || offset < o) {
            Some("before the entry before it".to_owned())
        } else {
            None
        };
        if let Some(why) = why {
            return Some(format!("entry {i} (timestamp {timestamp}, offset {offset}): {why}"));
        }
        previous = Some((timestamp, offset));
    }
    None
}

/// Each segment's `.txnindex` against the aborted transactions its markers say: a disagreement is a problem
/// naming the file and entry; a missing one a segment needs is a notice.
fn check_txn_indexes(log: &Log, store: &dyn SegmentStore, report: &mut CheckReport) -> Result<(), Problem> {
    let snapshot = log.snapshot();
    let mut txns = snapshot.transactions()?;
    for file in crate::kafka::txn::verify_index_files(store, &snapshot, &mut txns)? {
        report.notices.push(notice(
            &file,
            "missing: the segment holds the marker of an aborted transaction whose data is still there, which a \
             broker would show to read_committed readers; a compaction writes it",
        ));
    }
    Ok(())
}

/// Scans every batch and record of every segment of `log` (opened read-only), checksums included.
fn check_log(log: &Log, mut report: CheckReport) -> Result<CheckReport, Problem> {
    report.notices.extend(pending_notices(log));
    report.other_files.extend(log.recovery_report().ignored_files.iter().cloned());
    let snapshot = log.snapshot();
    let mut scratch = Vec::new();
    for segment in snapshot.closed() {
        scan_segment(segment.scan(), segment.name(), segment.base(), &mut scratch, &mut report)?;
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
    scan_segment(active, snapshot.active_name(), snapshot.active_base(), &mut scratch, &mut report)?;
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
) -> Result<(), Problem> {
    let mut previous: Option<u64> = None;
    while let Some(window) = scan.next_window()? {
        for item in window.batches() {
            let placed = item?;
            let b = placed.batch;
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
        out.push(notice(
            &t.segment,
            format!(
                "torn tail of {} bytes at byte {} ({}), left by an unsynced write; no valid record follows it and \
                 the next open cuts it",
                t.bytes, t.position, t.kind
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

/// Why the hint `name` does not describe `segment` (which was fully scanned), if it does not.
pub(crate) fn verify_hint(store: &dyn SegmentStore, name: &str, segment: &SealedSegment) -> Result<(), String> {
    let file = store.open(name).map_err(|e| format!("cannot open: {e}"))?;
    let size = usize::try_from(file.len()).map_err(|_| "too large".to_owned())?;
    if size as u64 > 128 + segment.size().saturating_mul(2) {
        return Err("index hint is larger than any index of its segment; the next open rebuilds it".into());
    }
    let mut bytes = vec![0; size];
    file.read_at(0, &mut bytes).map_err(|e| format!("cannot read: {e}"))?;
    let hint = index_file::decode(&bytes, segment.base(), segment.size()).map_err(|p| match p {
        IndexProblem::Unreadable => "index hint is damaged (bad magic, version or checksum); the next open rebuilds it",
        IndexProblem::Stale => "index hint describes another version of its segment; the next open rebuilds it",
    })?;
    let mut records = 0;
    let mut last = None;
    let mut first = None;
    let mut entries = hint.index.entries().iter().peekable();
    let mut scan = segment.scan();
    while let Some(window) = scan.next_window().map_err(|e| e.to_string())? {
        for item in window.batches() {
            let placed = item.map_err(|e| e.to_string())?;
            let (pos, offset_here) = (placed.position, placed.batch.base_offset);
            records += placed.batch.record_count;
            first.get_or_insert(offset_here);
            last = Some(placed.batch.last_offset);
            while let Some(&&(offset, position)) = entries.peek() {
                if position > pos {
                    break;
                }
                if position < pos || offset != offset_here {
                    return Err(format!(
                        "index entry ({offset}, byte {position}) points at no such record; reads ignore it and \
                         `logcompact repair` deletes the hint (the next open rebuilds it)"
                    ));
                }
                entries.next();
            }
        }
    }
    if let Some(&(offset, position)) = entries.next() {
        return Err(format!(
            "index entry ({offset}, byte {position}) points past the last record; reads ignore it and \
             `logcompact repair` deletes the hint (the next open rebuilds it)"
        ));
    }
    if (hint.first_offset, hint.last_offset, hint.records) != (first, last, records) {
        return Err(
            "index hint's offsets or record count disagree with its segment; `logcompact repair` deletes it (the next open rebuilds it)".into()
        );
    }
    Ok(())
}
