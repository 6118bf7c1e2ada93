//! Opening a log. The writable open finishes or undoes an interrupted cleaning swap, loads and validates the
//! segments and cuts a torn tail off the active segment. The read-only open does the same in memory only:
//! it writes, creates and removes nothing, takes no lock, and returns what the next writable open would
//! repair as its [`RecoveryReport`].

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, RwLock};

use crate::batch::Format;
use crate::checkpoint::CheckpointFile;
use crate::config::LogConfig;
use crate::error::{CorruptKind, Error, Result};
use crate::layout::{Layout, PendingSwap, SwapContent, load_swap, marker_ranges, prove_swaps, swap_range};
use crate::log::{Active, CheckpointReset, Inner, Log, RecoveryReport};
use crate::names::{CHECKPOINT_TMP_FILE, FileKind, file_name};
use crate::segment::SealedSegment;
use crate::storage::{Segment, SegmentStore};
use crate::tail;

pub(crate) fn delete_if_exists(store: &dyn SegmentStore, name: &str) -> Result<()> {
    match store.delete(name) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io("delete", name)(e)),
    }
}

pub(crate) fn sync_dir(store: &dyn SegmentStore) -> Result<()> {
    store.sync_dir().map_err(Error::io("sync directory", crate::error::DIRECTORY))
}

/// Completes or rolls back a cleaning swap that a crash interrupted (the rules of [`PendingSwap`]).
///
/// Every `.swap` to be completed is validated first ([`load_swap`]), so a damaged or foreign `.swap` never
/// replaces a good segment: the open fails naming it and nothing is changed. `.deleted` files are always
/// garbage.
pub(crate) fn recover_swap(
    store: &dyn SegmentStore,
    layout: &Layout,
    config: &LogConfig,
    report: &mut RecoveryReport,
) -> Result<()> {
    let mut changed = false;
    let mut gone: Vec<String> = Vec::new();
    match layout.pending_swap() {
        PendingSwap::None => {}
        PendingSwap::RollBack => {
            // The `.swap` files go first, durably, so that a crash half-way through the rollback can never
            // leave `.swap` files without the `.cleaned` ones that mark the swap uncommitted.
            for names in [&layout.swaps, &layout.cleaned] {
                for name in names.values() {
                    delete_if_exists(store, name)?;
                    report.cleaned_files_discarded += 1;
                }
                sync_dir(store)?;
            }
        }
        PendingSwap::Complete => {
            let markers = marker_ranges(store, layout);
            let mut validated = BTreeMap::new();
            for (&base, name) in &layout.swaps {
                let content = load_swap(store, layout, &markers, base, name, config.index_interval_bytes)?;
                validated.insert(base, (name.clone(), content));
            }
            for effect in prove_swaps(store, layout, &markers, &validated) {
                report.pending_swaps.push(effect?);
            }
            let ranges: Vec<(u64, u64)> =
                validated.iter().map(|(&b, (_, c))| swap_range(layout, &markers, b, c)).collect();
            // The segments the swap replaces are renamed `.deleted` (as the pass itself does) and the swap's
            // segments take their names; its markers go only once that is durable, and the `.deleted` files
            // last: a crash at any step leaves every replaced segment for the next open's proof.
            for (&b, log) in &layout.logs {
                if ranges.iter().any(|&(from, to)| (from..to).contains(&b)) {
                    let deleted = file_name(b, FileKind::Deleted);
                    store.rename(log, &deleted).map_err(Error::io("rename", log))?;
                    delete_if_exists(store, &file_name(b, FileKind::Index))?;
                    gone.push(deleted);
                }
            }
            for (&base, (name, content)) in &validated {
                if let SwapContent::Segment(_) = content {
                    store.rename(name, &file_name(base, FileKind::Log)).map_err(Error::io("rename", name))?;
                    delete_if_exists(store, &file_name(base, FileKind::Index))?;
                }
                report.swaps_completed += 1;
            }
            sync_dir(store)?;
            for (name, content) in validated.values() {
                if let SwapContent::Removed { .. } = content {
                    delete_if_exists(store, name)?;
                }
            }
            changed = true;
        }
    }
    if changed {
        sync_dir(store)?;
    }
    for name in layout.deleted.values() {
        delete_if_exists(store, name)?;
        report.stray_files_removed += 1;
        changed = true;
    }
    for name in &gone {
        delete_if_exists(store, name)?;
    }
    if layout.checkpoint_tmp {
        delete_if_exists(store, CHECKPOINT_TMP_FILE)?;
        report.stray_files_removed += 1;
        changed = true;
    }
    if changed {
        sync_dir(store)?;
    }
    Ok(())
}

/// One segment to load: its base and its file.
pub(crate) struct Source {
    pub(crate) base: u64,
    pub(crate) name: String,
    pub(crate) file: Arc<dyn Segment>,
    /// Already loaded (a validated `.swap` seen by a read-only open).
    pub(crate) loaded: Option<SealedSegment>,
}

/// Loads the closed segments in base order and checks that their offsets increase across them. Empty native
/// ones are skipped and counted (the writable open deletes them); an empty Kafka segment stays, as a broker
/// keeps it (it may hold the log start offset). Returns the segments and the last offset.
pub(crate) fn load_closed(
    format: Format,
    store: &dyn SegmentStore,
    sources: Vec<Source>,
    config: &LogConfig,
    writable: bool,
    report: &mut RecoveryReport,
) -> Result<(Vec<Arc<SealedSegment>>, Option<u64>)> {
    let mut closed = Vec::with_capacity(sources.len());
    let mut previous: Option<u64> = None;
    for Source { base, name, file, loaded } in sources {
        if file.is_empty() && format == Format::Native {
            if writable {
                store.delete(&name).map_err(Error::io("delete", &name))?;
                delete_if_exists(store, &file_name(base, FileKind::Index))?;
            }
            report.empty_segments_removed += 1;
            continue;
        }
        let segment = match loaded {
            Some(s) => s,
            None => {
                let (segment, rebuilt, loaded) = SealedSegment::open_with_hint(
                    format,
                    store,
                    base,
                    name.clone(),
                    file,
                    config.index_interval_bytes,
                    writable,
                )?;
                report.indexes_rebuilt += usize::from(rebuilt);
                if let Some(at) = loaded.zero_fill {
                    report.zero_filled_segments.push((name.clone(), at));
                }
                segment
            }
        };
        if let (Some(prev), Some(first)) = (previous, segment.summary().first_offset)
            && first <= prev
        {
            let kind = CorruptKind::OffsetNotIncreasing { previous: prev, found: first };
            return Err(Error::Corrupt { segment: name, position: 0, kind });
        }
        previous = segment.last_offset().or(previous);
        closed.push(Arc::new(segment));
    }
    if writable && report.empty_segments_removed > 0 {
        sync_dir(store)?;
    }
    Ok((closed, previous))
}

/// Reads the checkpoint and keeps it within the log: one past the log's end is reset to the log's start, as
/// Kafka resets an invalid cleaner checkpoint; one inside the active segment is capped at its base.
pub(crate) fn checkpoint_within(
    place: &CheckpointFile,
    store: &dyn SegmentStore,
    log_start: u64,
    active_base: u64,
    next_offset: u64,
    report: &mut RecoveryReport,
) -> Result<u64> {
    let found = place.read(store)?.unwrap_or(log_start);
    if found > next_offset {
        report.checkpoint_reset = Some(CheckpointReset { found, reset_to: log_start });
        return Ok(log_start);
    }
    Ok(found.min(active_base))
}

pub(crate) fn build(
    format: Format,
    checkpoint_file: CheckpointFile,
    store: Arc<dyn SegmentStore>,
    config: LogConfig,
    parts: Parts,
    read_only: bool,
) -> Log {
    let Parts { closed, active, next_offset, checkpoint, report } = parts;
    let inner = Inner {
        closed: Arc::new(closed),
        active,
        next_offset,
        checkpoint,
        unsynced_bytes: 0,
        last_sync: std::time::Instant::now(),
        scratch: Vec::new(),
    };
    Log {
        format,
        store,
        checkpoint_file,
        config,
        high_watermark: None,
        inner: RwLock::new(inner),
        poisoned: AtomicBool::new(false),
        read_only,
        recovery: report,
        cleaning: std::sync::Mutex::new(()),
    }
}

pub(crate) struct Parts {
    pub(crate) closed: Vec<Arc<SealedSegment>>,
    pub(crate) active: Active,
    pub(crate) next_offset: u64,
    pub(crate) checkpoint: u64,
    pub(crate) report: RecoveryReport,
}

/// Refuses a store whose names the log cannot use, or that holds another format.
fn usable(store: &dyn SegmentStore, layout: &Layout) -> Result<()> {
    layout.check_usable()?;
    match layout.foreign_format(store) {
        Some(found) => Err(Error::NotALog { found }),
        None => Ok(()),
    }
}

/// Attempts of a read-only open before it gives up on a log that keeps changing.
const READ_ONLY_ATTEMPTS: u32 = 50;

impl Log {
    /// Opens the log kept in `store` for reading and writing, creating it when the store holds no segment.
    ///
    /// Recovery: an interrupted cleaning swap is completed (after validating every `.swap`) or rolled back; a
    /// closed segment whose `.lcindex` hint checks out is trusted without a full scan (its checksums are
    /// verified on every read and cleaning pass), any other is scanned and validated (a bad frame there is an
    /// error naming the file and position: nothing is skipped); a torn tail of the active segment (a bad
    /// region with no valid record after it, all a torn write can leave) is cut back to the last whole record
    /// and reported in [`Log::recovery_report`]; a bad frame with valid records after it is corruption and
    /// nothing is cut. Empty closed segments are removed. A checkpoint past the end of the log is reset to
    /// its start.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`]; [`Error::UnusableName`] for a segment-like name the log cannot use;
    /// [`Error::NotALog`] for a store holding another format (a Kafka partition); [`Error::Corrupt`] or
    /// [`Error::CorruptNotTorn`] naming file and position; [`Error::BadCheckpoint`]; [`Error::Io`].
    pub fn open(store: Arc<dyn SegmentStore>, config: LogConfig) -> Result<Log> {
        config.validate()?;
        if store.is_read_only() {
            return Err(Error::ReadOnly);
        }
        let mut report = RecoveryReport::default();
        let layout = Layout::scan(&*store)?;
        usable(&*store, &layout)?;
        recover_swap(&*store, &layout, &config, &mut report)?;
        let layout = Layout::scan(&*store)?;
        // A hint without its segment, or one for the active segment (which has none), is left over.
        let active_base = layout.logs.last_key_value().map(|(&b, _)| b);
        for (&base, name) in &layout.hints {
            if !layout.logs.contains_key(&base) || Some(base) == active_base {
                delete_if_exists(&*store, name)?;
                report.stray_files_removed += 1;
            }
        }
        let mut logs = layout.logs;
        let (active_base, active_name) = match logs.pop_last() {
            Some(last) => last,
            None => {
                let name = file_name(0, FileKind::Log);
                store.create(&name).map_err(Error::io("create", &name))?;
                sync_dir(&*store)?;
                (0, name)
            }
        };
        let mut sources = Vec::with_capacity(logs.len());
        for (base, name) in logs {
            let file = store.open(&name).map_err(Error::io("open", &name))?;
            sources.push(Source { base, name, file, loaded: None });
        }
        let (mut closed, mut previous) = load_closed(Format::Native, &*store, sources, &config, true, &mut report)?;
        if let Some(prev) = previous.filter(|&p| p >= active_base) {
            let kind = CorruptKind::OffsetBelowBase { base: active_base, found: prev };
            return Err(Error::Corrupt { segment: active_name, position: 0, kind });
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
                let (segment, rebuilt, _) = SealedSegment::open_with_hint(
                    Format::Native,
                    &*store,
                    active_base,
                    active_name.clone(),
                    file,
                    config.index_interval_bytes,
                    true,
                )?;
                report.indexes_rebuilt += usize::from(rebuilt);
                // A segment that was active has never been cleaned: its last record is the last offset given.
                active_base = segment.last_offset().map_or(active_base, |l| l + 1);
                previous = segment.last_offset().or(previous);
                closed.push(Arc::new(segment));
            }
            active_name = file_name(active_base, FileKind::Log);
            file = store.create(&active_name).map_err(Error::io("create", &active_name))?;
            sync_dir(&*store)?;
        }
        let (summary, torn) =
            tail::scan_active(Format::Native, active_base, &active_name, &file, previous, config.index_interval_bytes)?;
        if let Some(torn) = &torn {
            file.truncate(torn.position).map_err(Error::io("truncate", &active_name))?;
            file.sync().map_err(Error::io("sync", &active_name))?;
        }
        report.truncated_tail = torn;
        let next_offset = summary.summary.last_offset.map_or(active_base, |l| l + 1);
        let log_start = closed.first().map_or(active_base, |s| s.base());
        let checkpoint =
            checkpoint_within(&CheckpointFile::Own, &*store, log_start, active_base, next_offset, &mut report)?;
        let active = Active { base: active_base, name: active_name, file, summary, frozen_len: None };
        let parts = Parts { closed, active, next_offset, checkpoint, report };
        Ok(build(Format::Native, CheckpointFile::Own, store, config, parts, false))
    }

    /// Opens the log kept in `store` for reading only: nothing is written, created, cut or removed and no lock
    /// is taken, so this works on a read-only store and beside a running writer or cleaning pass.
    ///
    /// It sees the log as the next writable open would leave it, without doing the work: an interrupted
    /// swap is resolved in memory (a `.swap` to complete is validated and read in place of its segment), a
    /// torn tail is left out of the view, hints that do not check out are not rewritten (the segment is
    /// scanned instead). [`Log::recovery_report`] tells what that open would repair. Every write fails with
    /// [`Error::ReadOnly`].
    ///
    /// Consistency without a lock: after loading, the names are listed again and every segment's file
    /// identity compared with the file loaded; if a cleaning swap or a roll changed anything in between, the
    /// load is retried, so the view is the log as it was at one instant.
    ///
    /// # Errors
    /// [`Error::NotALog`] when the store holds no segment or another format; otherwise as [`Log::open`], and
    /// [`Error::Changing`] if the log never held still.
    pub fn open_read_only(store: Arc<dyn SegmentStore>, config: LogConfig) -> Result<Log> {
        config.validate()?;
        retry_read_only(|| load_read_only(&store, &config))
            .map(|parts| build(Format::Native, CheckpointFile::Own, Arc::clone(&store), config.clone(), parts, true))
    }
}

/// Runs `attempt` (a read-only load, `Ok(None)` when the log changed meanwhile) until it holds still, as
/// [`Log::open_read_only`] describes.
///
/// # Errors
/// The attempt's error; [`Error::Changing`] if the log never held still.
pub(crate) fn retry_read_only(mut attempt: impl FnMut() -> Result<Option<Parts>>) -> Result<Parts> {
    for n in 1..=READ_ONLY_ATTEMPTS {
        match attempt() {
            Ok(Some(parts)) => return Ok(parts),
            Ok(None) => {}
            // A file renamed or removed between the listing and its open: the log changed.
            Err(Error::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        std::thread::sleep(std::time::Duration::from_millis(u64::from(n.min(20))));
    }
    Err(Error::Changing { attempts: READ_ONLY_ATTEMPTS })
}

/// One attempt of a read-only open: `Ok(None)` when the log changed while it was being loaded.
fn load_read_only(store: &Arc<dyn SegmentStore>, config: &LogConfig) -> Result<Option<Parts>> {
    let store_ref: &dyn SegmentStore = &**store;
    let layout = Layout::scan(store_ref)?;
    usable(store_ref, &layout)?;
    let mut report = RecoveryReport::default();
    let mut names: BTreeMap<u64, (String, Option<SealedSegment>)> =
        layout.logs.iter().map(|(&b, n)| (b, (n.clone(), None))).collect();
    match layout.pending_swap() {
        PendingSwap::None => {}
        PendingSwap::RollBack => report.cleaned_files_discarded = layout.cleaned.len() + layout.swaps.len(),
        PendingSwap::Complete => {
            let markers = marker_ranges(store_ref, &layout);
            let mut validated = BTreeMap::new();
            for (&base, name) in &layout.swaps {
                let content = load_swap(store_ref, &layout, &markers, base, name, config.index_interval_bytes)?;
                validated.insert(base, (name.clone(), content));
            }
            for effect in prove_swaps(store_ref, &layout, &markers, &validated) {
                report.pending_swaps.push(effect?);
            }
            for (base, (name, content)) in validated {
                match content {
                    SwapContent::Removed { end } => names.retain(|&b, _| !(base..end).contains(&b)),
                    SwapContent::Segment(s) => {
                        names.insert(base, (name, Some(*s)));
                    }
                }
                report.swaps_completed += 1;
            }
        }
    }
    let last_log = layout.logs.last_key_value().map(|(&b, _)| b);
    let stray_hints = layout.hints.keys().filter(|&&b| !layout.logs.contains_key(&b) || Some(b) == last_log).count();
    report.stray_files_removed = layout.deleted.len() + usize::from(layout.checkpoint_tmp) + stray_hints;
    let Some((active_base, (active_name, active_loaded))) = names.pop_last() else {
        return Err(Error::NotALog { found: layout.describe() });
    };
    let mut sources = Vec::with_capacity(names.len());
    for (base, (name, loaded)) in names {
        let file = match &loaded {
            Some(s) => Arc::clone(s.file()),
            None => store.open(&name).map_err(Error::io("open", &name))?,
        };
        sources.push(Source { base, name, file, loaded });
    }
    let (closed, previous) = load_closed(Format::Native, store_ref, sources, config, false, &mut report)?;
    if let Some(prev) = previous.filter(|&p| p >= active_base) {
        let kind = CorruptKind::OffsetBelowBase { base: active_base, found: prev };
        return Err(Error::Corrupt { segment: active_name, position: 0, kind });
    }
    let file = match &active_loaded {
        Some(s) => Arc::clone(s.file()),
        None => store.open(&active_name).map_err(Error::io("open", &active_name))?,
    };
    let (summary, torn) =
        tail::scan_active(Format::Native, active_base, &active_name, &file, previous, config.index_interval_bytes)?;
    let frozen_len = torn.as_ref().map_or(file.len(), |t| t.position);
    report.truncated_tail = torn;
    let next_offset = summary.summary.last_offset.map_or(active_base, |l| l + 1);
    let log_start = closed.first().map_or(active_base, |s| s.base());
    let checkpoint =
        checkpoint_within(&CheckpointFile::Own, store_ref, log_start, active_base, next_offset, &mut report)?;
    // Did anything change while we loaded? Every file we hold must still be the one under its name, and the
    // names must resolve to the same segments.
    let again = Layout::scan(store_ref)?;
    let same_files = closed
        .iter()
        .map(|s| (s.name(), s.file()))
        .chain(std::iter::once((active_name.as_str(), &file)))
        .all(|(name, f)| store.file_id(name).is_ok_and(|id| id == f.file_id()));
    if !same_files || !same_up_to(&again, &layout, active_base) {
        return Ok(None);
    }
    let active = Active { base: active_base, name: active_name, file, summary, frozen_len: Some(frozen_len) };
    Ok(Some(Parts { closed, active, next_offset, checkpoint, report }))
}

/// True when two listings agree on everything up to the segment based at `active_base`: a roll after the
/// first listing (a new active segment, the old one's hint) leaves the loaded view a consistent prefix.
fn same_up_to(now: &Layout, then: &Layout, active_base: u64) -> bool {
    let upto =
        |m: &BTreeMap<u64, String>, limit: u64| m.range(..limit).map(|(&b, n)| (b, n.clone())).collect::<Vec<_>>();
    upto(&now.logs, active_base + 1) == upto(&then.logs, active_base + 1)
        && upto(&now.hints, active_base) == upto(&then.hints, active_base)
        && now.cleaned == then.cleaned
        && now.swaps == then.swaps
        && now.unusable == then.unusable
}
