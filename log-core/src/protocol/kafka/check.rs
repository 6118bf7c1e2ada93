//! `check` of a Kafka partition: the core's scan of every batch and record ([`crate::check`]), then each
//! `.txnindex` against the markers and each `.index` and `.timeindex` as a broker's sanity check reads them.

use std::sync::Arc;

use crate::check::{CheckReport, Problem, check_log, notice};
use crate::config::LogConfig;
use crate::log::Log;
use crate::progress::Meter;
use crate::storage::SegmentStore;

/// [`crate::check::check`] of the Kafka partition in `store` (its cleaner checkpoint in `checkpoint`): every
/// batch's CRC, every record, the order of offsets, a pending swap, each `.txnindex` against the markers.
/// Each closed segment's `.index` and `.timeindex` are checked as a broker's sanity check reads them (entries
/// in order, inside their segment): one that fails is a notice, not a problem, since a broker rebuilds a
/// damaged index when it loads it. Counts the bytes and records read on `meter` (one stage,
/// [`crate::check::STAGE`]).
///
/// # Errors
/// The first [`Problem`] found.
pub(crate) fn check_kafka_counted(
    store: Arc<dyn SegmentStore>,
    checkpoint: crate::CheckpointFile,
    meter: Option<&Meter>,
) -> Result<CheckReport, Problem> {
    let log = Log::open(
        Arc::clone(&store),
        crate::OpenOptions::kafka(LogConfig::default(), checkpoint.clone()).read_only(true),
    )?;
    let report = CheckReport { checkpoint: checkpoint.read(&*store)?, ..CheckReport::default() };
    let mut report = check_log(&log, report, meter)?;
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
    use crate::format::kafka::files::{SegmentFile, Stage, name};
    use crate::format::kafka::index::{read_offset_index, read_time_index};
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
    for file in super::txn_index::verify_index_files(store, &snapshot, &mut txns)? {
        report.notices.push(notice(
            &file,
            "missing: the segment holds the marker of an aborted transaction whose data is still there, which a \
             broker would show to read_committed readers; a compaction writes it",
        ));
    }
    Ok(())
}
