//! `check` of a native log: the core's scan of every frame ([`crate::check`]), then every `.lcindex` hint
//! against its segment.

use std::sync::Arc;

use super::hint::{self as index_file, IndexProblem};
use super::layout::Layout;
use crate::check::{CheckReport, Problem, check_log, notice};
use crate::config::LogConfig;
use crate::format::native::names::{FileKind, file_name};
use crate::log::Log;
use crate::progress::Meter;
use crate::segment::SealedSegment;
use crate::storage::SegmentStore;

/// Verifies every checksum and invariant of the log in `store` without changing anything: frames decode and
/// their CRCs match; offsets strictly increase within and across segments and never fall below the base in
/// the file name; every hint matches its segment; a pending swap would complete with valid segments; the
/// checkpoint parses. Counts the bytes and records read on `meter` (one stage, [`crate::check::STAGE`]).
///
/// # Errors
/// The first [`Problem`] found.
pub(crate) fn check_store_counted(store: Arc<dyn SegmentStore>, meter: Option<&Meter>) -> Result<CheckReport, Problem> {
    let log = Log::open(Arc::clone(&store), crate::OpenOptions::new(LogConfig::default()).read_only(true))?;
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
    check_log(&log, report, meter)
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
