//! Opening a log: finishing or undoing an interrupted cleaning swap, loading and validating the segments,
//! and cutting a torn tail off the active segment.

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, RwLock};

use crate::checkpoint;
use crate::config::LogConfig;
use crate::error::{CorruptKind, Error, Result};
use crate::log::{Active, Inner, Log, RecoveryReport};
use crate::names::{CHECKPOINT_TMP_FILE, FileKind, file_name, parse_file_name};
use crate::segment::{ChunkReader, SealedSegment, SegmentSummary};
use crate::storage::SegmentStore;

fn delete_if_exists(store: &dyn SegmentStore, name: &str) -> Result<()> {
    match store.delete(name) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io("delete", name)(e)),
    }
}

/// Completes or rolls back a cleaning swap that a crash interrupted (the rules of Kafka's `LogLoader`).
///
/// The commit point of a swap is "every output file is `.swap` and the directory is synced". So: any
/// `.cleaned` file left means the commit point was not reached: all `.cleaned` and `.swap` files go and the old
/// segments stay. Otherwise each `.swap` replaces the `.log` of its base (an empty `.swap` means the segment was
/// cleaned away). `.deleted` files are always garbage.
pub(crate) fn recover_swap(store: &dyn SegmentStore, report: &mut RecoveryReport) -> Result<()> {
    let names = store.list().map_err(Error::io("list", "<store>"))?;
    let parsed: Vec<(u64, FileKind, &String)> =
        names.iter().filter_map(|n| parse_file_name(n).map(|(b, k)| (b, k, n))).collect();
    let any_cleaned = parsed.iter().any(|&(_, k, _)| k == FileKind::Cleaned);
    let mut changed = false;
    if any_cleaned {
        // Roll back: the `.swap` files go first, durably, so that a crash half-way through the rollback can
        // never leave `.swap` files without the `.cleaned` ones that mark the swap uncommitted.
        for kind in [FileKind::Swap, FileKind::Cleaned] {
            for &(_, _, name) in parsed.iter().filter(|&&(_, k, _)| k == kind) {
                delete_if_exists(store, name)?;
                report.cleaned_files_discarded += 1;
            }
            store.sync_dir().map_err(Error::io("sync directory", "<store>"))?;
        }
    }
    for &(base, kind, name) in &parsed {
        match kind {
            FileKind::Cleaned | FileKind::Swap if any_cleaned => {}
            FileKind::Swap => {
                let file = store.open(name).map_err(Error::io("open", name))?;
                let target = file_name(base, FileKind::Log);
                if file.is_empty() {
                    // The segment goes before its marker, durably: a crash in between must not bring it back.
                    delete_if_exists(store, &target)?;
                    store.sync_dir().map_err(Error::io("sync directory", "<store>"))?;
                    delete_if_exists(store, name)?;
                } else {
                    store.rename(name, &target).map_err(Error::io("rename", name))?;
                }
                delete_if_exists(store, &file_name(base, FileKind::Index))?;
                report.swaps_completed += 1;
                changed = true;
            }
            FileKind::Deleted => {
                delete_if_exists(store, name)?;
                changed = true;
            }
            FileKind::Log | FileKind::Index | FileKind::Cleaned => {}
        }
    }
    if names.iter().any(|n| n == CHECKPOINT_TMP_FILE) {
        delete_if_exists(store, CHECKPOINT_TMP_FILE)?;
        changed = true;
    }
    if changed {
        store.sync_dir().map_err(Error::io("sync directory", "<store>"))?;
    }
    Ok(())
}

/// Scans the active segment, cutting a torn or corrupt tail. Returns its summary.
fn recover_active(
    active_base: u64,
    name: &str,
    file: &Arc<dyn crate::storage::Segment>,
    floor: Option<u64>,
    config: &LogConfig,
    report: &mut RecoveryReport,
) -> Result<SegmentSummary> {
    let mut summary = SegmentSummary::new(config.index_interval_bytes);
    let len = file.len();
    let mut reader = ChunkReader::new(Arc::clone(file), 0, len);
    let mut bad: Option<(u64, CorruptKind)> = None;
    loop {
        let position = reader.position();
        match reader.next_frame().map_err(Error::io("read", name))? {
            None => break,
            Some(Err(CorruptKind::UnknownVersion(v))) => {
                // Not a torn write but a record from a newer format: refuse rather than cut it away.
                let kind = CorruptKind::UnknownVersion(v);
                return Err(Error::Corrupt { segment: name.to_owned(), position, kind });
            }
            Some(Err(kind)) => {
                bad = Some((position, kind));
                break;
            }
            Some(Ok((pos, rec, frame_len))) => {
                if let Some(previous) = floor.filter(|&f| rec.offset <= f) {
                    bad = Some((pos, CorruptKind::OffsetNotIncreasing { previous, found: rec.offset }));
                    break;
                }
                if let Err(kind) = summary.note(active_base, rec.offset, rec.delete_horizon, pos, frame_len as u64) {
                    bad = Some((pos, kind));
                    break;
                }
            }
        }
    }
    if let Some((position, kind)) = bad {
        file.truncate(position).map_err(Error::io("truncate", name))?;
        file.sync().map_err(Error::io("sync", name))?;
        report.truncated_tail = Some((name.to_owned(), position, len - position, kind));
    }
    Ok(summary)
}

impl Log {
    /// Opens the log kept in `store`, creating it when the store is empty.
    ///
    /// Recovery: an interrupted cleaning swap is completed or rolled back; a closed segment whose `.index`
    /// hint checks out is trusted without a scan (its checksums are verified on every read and cleaning
    /// pass), any other is scanned and validated (a bad frame there is an error naming the file and
    /// position: nothing is skipped); a torn or corrupt tail of the active segment is cut back to the last
    /// whole record and reported in [`Log::recovery_report`], except a record of an unknown format version,
    /// which is refused. Empty closed segments are removed.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`]; [`Error::Corrupt`] for a bad closed segment or a record of an unknown format
    /// version in the active one; [`Error::BadCheckpoint`]; [`Error::Io`].
    pub fn open(store: Arc<dyn SegmentStore>, config: LogConfig) -> Result<Log> {
        config.validate()?;
        let mut report = RecoveryReport::default();
        recover_swap(&*store, &mut report)?;
        let names = store.list().map_err(Error::io("list", "<store>"))?;
        let mut logs: BTreeMap<u64, String> = BTreeMap::new();
        let mut indexes = Vec::new();
        for name in names {
            match parse_file_name(&name) {
                Some((base, FileKind::Log)) => {
                    logs.insert(base, name);
                }
                Some((base, FileKind::Index)) => indexes.push((base, name)),
                _ => {}
            }
        }
        // An index without its segment, or one for the active segment (which has none), is left over.
        let active_base = logs.last_key_value().map(|(&b, _)| b);
        for (base, name) in indexes {
            if !logs.contains_key(&base) || Some(base) == active_base {
                delete_if_exists(&*store, &name)?;
            }
        }
        let (active_base, active_name) = match logs.pop_last() {
            Some(last) => last,
            None => {
                let name = file_name(0, FileKind::Log);
                store.create(&name).map_err(Error::io("create", &name))?;
                store.sync_dir().map_err(Error::io("sync directory", &name))?;
                (0, name)
            }
        };
        let mut closed = Vec::with_capacity(logs.len());
        let mut previous: Option<u64> = None;
        for (base, name) in logs {
            let file = store.open(&name).map_err(Error::io("open", &name))?;
            if file.is_empty() {
                store.delete(&name).map_err(Error::io("delete", &name))?;
                delete_if_exists(&*store, &file_name(base, FileKind::Index))?;
                report.empty_segments_removed += 1;
                continue;
            }
            let (segment, rebuilt) =
                SealedSegment::open_with_hint(&*store, base, name.clone(), file, config.index_interval_bytes)?;
            report.indexes_rebuilt += usize::from(rebuilt);
            if let (Some(prev), Some(first)) = (previous, segment.summary().first_offset)
                && first <= prev
            {
                let kind = CorruptKind::OffsetNotIncreasing { previous: prev, found: first };
                return Err(Error::Corrupt { segment: name, position: 0, kind });
            }
            previous = segment.last_offset().or(previous);
            closed.push(Arc::new(segment));
        }
        if let Some(prev) = previous.filter(|&p| p >= active_base) {
            let kind = CorruptKind::OffsetBelowBase { base: active_base, found: prev };
            return Err(Error::Corrupt { segment: active_name, position: 0, kind });
        }
        if report.empty_segments_removed > 0 {
            store.sync_dir().map_err(Error::io("sync directory", "<store>"))?;
        }
        let mut file = store.open(&active_name).map_err(Error::io("open", &active_name))?;
        let (mut active_base, mut active_name) = (active_base, active_name);
        if file.is_sealed() {
            // A store that outlives the process (storage-mem reused in one process) can hand back the last
            // segment sealed by a roll that failed half-way. A sealed file is never appended to again: it
            // becomes a closed segment (or goes, if empty) and a new active segment starts after it.
            if file.is_empty() {
                // Recreated under the same base: offsets below it may have been handed out and cleaned away.
                store.delete(&active_name).map_err(Error::io("delete", &active_name))?;
            } else {
                let (segment, rebuilt) = SealedSegment::open_with_hint(
                    &*store,
                    active_base,
                    active_name.clone(),
                    file,
                    config.index_interval_bytes,
                )?;
                report.indexes_rebuilt += usize::from(rebuilt);
                // A segment that was active has never been cleaned: its last record is the last offset given.
                active_base = segment.last_offset().map_or(active_base, |l| l + 1);
                previous = segment.last_offset().or(previous);
                closed.push(Arc::new(segment));
            }
            active_name = file_name(active_base, FileKind::Log);
            file = store.create(&active_name).map_err(Error::io("create", &active_name))?;
            store.sync_dir().map_err(Error::io("sync directory", &active_name))?;
        }
        let summary = recover_active(active_base, &active_name, &file, previous, &config, &mut report)?;
        let next_offset = summary.last_offset.map_or(active_base, |l| l + 1);
        let checkpoint = checkpoint::read(&*store)?.unwrap_or(0).min(active_base);
        let inner = Inner {
            closed: Arc::new(closed),
            active: Active { base: active_base, name: active_name, file, summary },
            next_offset,
            checkpoint,
            unsynced_bytes: 0,
            last_sync: std::time::Instant::now(),
            scratch: Vec::new(),
        };
        Ok(Log {
            store,
            config,
            inner: RwLock::new(inner),
            poisoned: AtomicBool::new(false),
            recovery: report,
            cleaning: std::sync::Mutex::new(()),
        })
    }
}
