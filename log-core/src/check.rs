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
use crate::segment::{RecordIter, SealedSegment};
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
}

/// Something the next writable open repairs by itself.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Notice {
    /// The file concerned (or `<store>`).
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
    /// The store could not be read (an I/O error) or kept changing.
    Unreadable,
}

/// The first problem found.
#[derive(Debug, Clone, PartialEq, Eq)]
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
            Error::Corrupt { segment, position, kind } => corruption(&segment, Some(position), kind.to_string()),
            Error::CorruptNotTorn { segment, position, .. } => corruption(&segment, Some(position), what),
            Error::UnusableName { name, .. } => corruption(&name, None, what),
            Error::BadCheckpoint { name, reason } => corruption(&name, None, reason),
            Error::NotALog { .. } => {
                Problem { class: ProblemClass::NotALog, file: "<store>".into(), position: None, what }
            }
            Error::Io { name, .. } => Problem { class: ProblemClass::Unreadable, file: name, position: None, what },
            _ => Problem { class: ProblemClass::Unreadable, file: "<store>".into(), position: None, what },
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
    let snapshot = log.snapshot();
    let mut report = CheckReport {
        checkpoint: crate::checkpoint::read(&*store)?,
        other_files: layout.foreign.clone(),
        notices: pending_notices(&log),
        ..CheckReport::default()
    };
    for segment in snapshot.closed() {
        scan_closed(segment)?;
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
        report.segments += 1;
        report.records += segment.summary().records;
        report.bytes += segment.size();
    }
    // The active segment was scanned frame by frame by the open (a bad frame with valid ones after it fails
    // it); its records are the snapshot's.
    report.segments += 1;
    report.records += log.read_inner().active.summary.records;
    report.bytes += snapshot.active_len();
    Ok(report)
}

/// Notices for what the next writable open will repair, from the read-only open's report.
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
            "<store>",
            format!(
                "an interrupted cleaning swap is committed; the next open completes it ({} segments)",
                r.swaps_completed
            ),
        ));
    }
    if r.cleaned_files_discarded > 0 {
        out.push(notice(
            "<store>",
            format!(
                "an interrupted cleaning swap did not reach its commit point; the next open discards its {} files",
                r.cleaned_files_discarded
            ),
        ));
    }
    if r.empty_segments_removed > 0 {
        out.push(notice(
            "<store>",
            format!("{} empty closed segments; the next open removes them", r.empty_segments_removed),
        ));
    }
    if r.stray_files_removed > 0 {
        out.push(notice(
            "<store>",
            format!("{} leftover files of earlier passes; the next open removes them", r.stray_files_removed),
        ));
    }
    if let Some(c) = r.checkpoint_reset {
        out.push(notice(
            crate::names::CHECKPOINT_FILE,
            format!("checkpoint {} is past the end of the log; cleaning restarts from offset {}", c.found, c.reset_to),
        ));
    }
    out
}

fn scan_closed(segment: &SealedSegment) -> Result<(), Problem> {
    let mut previous = None;
    for item in segment.records() {
        let (pos, rec, _) = item?;
        if previous.is_some_and(|p| rec.offset <= p) || rec.offset < segment.base() {
            let what =
                format!("offset {} does not follow {previous:?} in a segment based at {}", rec.offset, segment.base());
            return Err(corruption(segment.name(), Some(pos), what));
        }
        previous = Some(rec.offset);
    }
    Ok(())
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
    for item in RecordIter::new(segment.bytes(), 0, segment.name()) {
        let (pos, rec, _) = item.map_err(|e| e.to_string())?;
        records += 1;
        first.get_or_insert(rec.offset);
        last = Some(rec.offset);
        while let Some(&&(offset, position)) = entries.peek() {
            if position > pos {
                break;
            }
            if position < pos || offset != rec.offset {
                return Err(format!(
                    "index entry ({offset}, byte {position}) points at no such record; reads ignore it and \
                     `logcompact repair` deletes the hint (the next open rebuilds it)"
                ));
            }
            entries.next();
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
