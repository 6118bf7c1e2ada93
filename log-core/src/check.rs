//! `check`: a read-only verification of every file of a log, for operators (`logcompact check`).
//!
//! Unlike [`crate::Log::open`], which repairs what a crash leaves (torn tails, interrupted swaps), this
//! changes nothing and reports the first problem with its file and byte position.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::checkpoint;
use crate::error::CorruptKind;
use crate::index_file::{self, IndexProblem};
use crate::names::{CHECKPOINT_TMP_FILE, FileKind, parse_file_name};
use crate::segment::{ChunkReader, SegmentSummary};
use crate::storage::{Segment, SegmentStore};

/// What a clean check saw.
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
    /// Closed segments without an index hint (allowed: it is rebuilt on open).
    pub indexes_missing: u64,
    /// The cleaner checkpoint, if one was written.
    pub checkpoint: Option<u64>,
}

/// The first problem found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
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

fn problem(file: &str, position: Option<u64>, what: impl Into<String>) -> Problem {
    Problem { file: file.to_owned(), position, what: what.into() }
}

/// Verifies every checksum and invariant of the log in `store`: frames decode and their CRCs match; offsets
/// strictly increase within and across segments and never fall below the base offset in the file name; no
/// closed segment is empty; every index hint matches its segment; no interrupted swap is pending; the
/// checkpoint parses.
///
/// # Errors
/// The first [`Problem`] found.
pub fn check_store(store: &dyn SegmentStore) -> Result<CheckReport, Problem> {
    let names = store.list().map_err(|e| problem("<store>", None, format!("cannot list: {e}")))?;
    let mut logs = BTreeMap::new();
    let mut indexes = BTreeMap::new();
    for name in &names {
        match parse_file_name(name) {
            Some((base, FileKind::Log)) => {
                logs.insert(base, name.clone());
            }
            Some((base, FileKind::Index)) => {
                indexes.insert(base, name.clone());
            }
            Some((_, FileKind::Cleaned | FileKind::Swap | FileKind::Deleted)) => {
                return Err(problem(name, None, "left by an interrupted cleaning swap; opening the log recovers it"));
            }
            None if name == CHECKPOINT_TMP_FILE => {
                return Err(problem(name, None, "left by an interrupted checkpoint write; opening the log removes it"));
            }
            None => {}
        }
    }
    let mut report = CheckReport {
        checkpoint: checkpoint::read(store).map_err(|e| problem(crate::names::CHECKPOINT_FILE, None, e.to_string()))?,
        ..CheckReport::default()
    };
    let active_base = logs.last_key_value().map(|(&b, _)| b);
    if let Some((&base, name)) = indexes.iter().find(|(b, _)| !logs.contains_key(b) || Some(**b) == active_base) {
        let what =
            if Some(base) == active_base { "index hint for the active segment" } else { "index without a segment" };
        return Err(problem(name, None, what));
    }
    let mut previous: Option<u64> = None;
    for (&base, name) in &logs {
        let file = store.open(name).map_err(|e| problem(name, None, format!("cannot open: {e}")))?;
        let summary = scan(name, base, &file, previous)?;
        let is_active = Some(base) == active_base;
        if summary.records == 0 && !is_active {
            return Err(problem(name, None, "closed segment is empty"));
        }
        if !is_active {
            match indexes.get(&base) {
                None => report.indexes_missing += 1,
                Some(index_name) => {
                    verify_index(store, index_name, base, &file, &summary)?;
                    report.indexes_verified += 1;
                }
            }
        }
        if is_active && let Some(prev) = previous.filter(|&p| p >= base) {
            let kind = CorruptKind::OffsetBelowBase { base, found: prev };
            return Err(problem(
                name,
                None,
                format!("the active segment's base is not above the closed segments: {kind}"),
            ));
        }
        previous = summary.last_offset.or(previous);
        report.segments += 1;
        report.records += summary.records;
        report.bytes += file.len();
    }
    Ok(report)
}

fn scan(name: &str, base: u64, file: &Arc<dyn Segment>, floor: Option<u64>) -> Result<SegmentSummary, Problem> {
    let mut summary = SegmentSummary::new(crate::config::DEFAULT_INDEX_INTERVAL_BYTES);
    let mut reader = ChunkReader::new(Arc::clone(file), 0, file.len());
    loop {
        let position = reader.position();
        let frame = reader.next_frame().map_err(|e| problem(name, Some(position), format!("cannot read: {e}")))?;
        match frame {
            None => return Ok(summary),
            Some(Err(kind)) => return Err(problem(name, Some(position), kind.to_string())),
            Some(Ok((pos, rec, len))) => {
                if let Some(previous) = floor.filter(|&f| rec.offset <= f) {
                    let kind = CorruptKind::OffsetNotIncreasing { previous, found: rec.offset };
                    return Err(problem(name, Some(pos), kind.to_string()));
                }
                summary
                    .note(base, rec.offset, rec.delete_horizon, pos, len as u64)
                    .map_err(|kind| problem(name, Some(pos), kind.to_string()))?;
            }
        }
    }
}

fn verify_index(
    store: &dyn SegmentStore,
    name: &str,
    base: u64,
    segment: &Arc<dyn Segment>,
    scanned: &SegmentSummary,
) -> Result<(), Problem> {
    let len = segment.len();
    let file = store.open(name).map_err(|e| problem(name, None, format!("cannot open: {e}")))?;
    let size = usize::try_from(file.len()).map_err(|_| problem(name, None, "too large"))?;
    if size as u64 > 128 + len.saturating_mul(2) {
        return Err(problem(name, None, "index hint is larger than any index of its segment"));
    }
    let mut bytes = vec![0; size];
    file.read_at(0, &mut bytes).map_err(|e| problem(name, None, format!("cannot read: {e}")))?;
    let hint = index_file::decode(&bytes, base, len).map_err(|p| match p {
        IndexProblem::Unreadable => {
            problem(name, None, "index hint is damaged (bad magic, version or checksum); opening the log rebuilds it")
        }
        IndexProblem::Stale => {
            problem(name, None, "index hint describes another version of its segment; opening the log rebuilds it")
        }
    })?;
    if (hint.first_offset, hint.last_offset, hint.records)
        != (scanned.first_offset, scanned.last_offset, scanned.records)
    {
        return Err(problem(name, None, "index hint's offsets or record count disagree with its segment"));
    }
    // Every entry must point at the start of the record with that offset.
    let mut frame = Vec::new();
    for &(offset, position) in hint.index.entries() {
        let wrong = || problem(name, None, format!("index entry ({offset}, byte {position}) points at no such record"));
        let mut head = [0u8; crate::codec::FRAME_HEADER_BYTES];
        segment.read_at(position, &mut head).map_err(|_| wrong())?;
        let (frame_len, _) = crate::codec::frame_header(&head).map_err(|_| wrong())?;
        frame.resize(frame_len, 0);
        segment.read_at(position, &mut frame).map_err(|_| wrong())?;
        match crate::codec::decode(&frame) {
            Ok((rec, _)) if rec.offset == offset => {}
            _ => return Err(wrong()),
        }
    }
    Ok(())
}
