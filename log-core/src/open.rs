//! Opening a log: one skeleton for every format ([`open`]). It validates the settings, refuses a writable
//! open of a read-only store, and asks the format (through [`Format`]'s methods) only for what differs: its
//! recovery of the files a crash can leave ([`Recovered`]; the native one in [`crate::protocol::native::open`],
//! Kafka's in [`crate::protocol::kafka::recovery`]) or, read-only, one attempt at listing the segments as that
//! recovery would leave them ([`ReadOnlyFront`]). The back halves here load and validate the segments, cut a
//! torn tail off the active segment and place the checkpoint. A read-only open does the same in memory only:
//! it writes, creates and removes nothing, takes no lock, and returns what the next writable open would repair
//! as its [`RecoveryReport`]; it is retried until the directory held still.

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, RwLock};

use crate::checkpoint::CheckpointFile;
use crate::config::LogConfig;
use crate::error::{CorruptKind, Error, Result};
use crate::format::Format;
use crate::log::{Active, CheckpointReset, Inner, Log, RecoveryReport};
use crate::names::{SegmentFile, Stage, name};
use crate::producers::ProducerFiles;
use crate::segment::SealedSegment;
use crate::storage::{Segment, SegmentStore};
use crate::tail;

/// What a format's recovery of a writable store hands the skeleton: the live segment files (base -> name) once
/// an interrupted swap is finished or undone and strays removed, what it repaired so far, and the files beside
/// the segments that loading the producer state reads.
pub(crate) struct Recovered {
    pub(crate) logs: BTreeMap<u64, String>,
    pub(crate) report: RecoveryReport,
    pub(crate) producer_files: ProducerFiles,
}

/// Opens the log of `format` in `store`: writable, by the format's recovery and the shared back half; or
/// read-only, by attempts of the format's listing and the shared read-only back half until the log held still
/// (see [`Log::open`]).
///
/// # Errors
/// [`Error::InvalidConfig`]; [`Error::ReadOnly`] for a writable open of a read-only store; the format's
/// recovery's errors; as [`open_back_half`] and [`read_only_back_half`]; [`Error::Changing`].
pub(crate) fn open(
    format: Format,
    store: Arc<dyn SegmentStore>,
    config: LogConfig,
    checkpoint: CheckpointFile,
    read_only: bool,
) -> Result<Log> {
    config.validate_for(format)?;
    if read_only {
        let high_watermark = checkpoint.broker_offsets()?.1;
        let parts = retry_read_only(|| format.load_read_only(&store, &config, &checkpoint))?;
        let mut log = build(format, checkpoint, store, config, parts, true);
        log.high_watermark = high_watermark;
        return Ok(log);
    }
    if store.is_read_only() {
        return Err(Error::ReadOnly);
    }
    let Recovered { logs, report, producer_files } = format.recover(&*store, &config, &checkpoint)?;
    open_back_half(format, checkpoint, store, config, logs, report, producer_files)
}

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
        if file.is_empty() && format.empty_file_is_leftover() {
            if writable {
                store.delete(&name).map_err(Error::io("delete", &name))?;
                if let Some(hint) = format.hint_name(base) {
                    delete_if_exists(store, &hint)?;
                }
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
    let Parts { closed, active, next_offset, checkpoint, report, producer_files } = parts;
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
        producer_files,
        producers: std::sync::Mutex::new(None),
    }
}

pub(crate) struct Parts {
    pub(crate) closed: Vec<Arc<SealedSegment>>,
    pub(crate) active: Active,
    pub(crate) next_offset: u64,
    pub(crate) checkpoint: u64,
    pub(crate) report: RecoveryReport,
    pub(crate) producer_files: ProducerFiles,
}

/// Attempts of a read-only open before it gives up on a log that keeps changing.
const READ_ONLY_ATTEMPTS: u32 = 50;

/// The back half of every writable open, for both formats, once the front half (the format's own) has
/// finished or rolled back an interrupted swap and listed the live segments `logs` (base -> name): creates the
/// first segment of an empty log; loads the closed segments (all but the last, which is the active one); makes
/// a sealed active segment a closed one (a store that outlives the process can hand back the last segment
/// sealed by a roll that failed half-way; a sealed file is never appended to again) and starts a new active
/// segment after it, or recreates an empty one under its base; cuts a torn tail of the active segment; places
/// the checkpoint within the log (and, for a broker's partition, at or above its recorded log start) and reads
/// the partition's high watermark.
///
/// # Errors
/// [`Error::Corrupt`] for offsets below the active segment's base, or damage; [`Error::BadCheckpoint`];
/// [`Error::Io`].
pub(crate) fn open_back_half(
    format: Format,
    checkpoint: CheckpointFile,
    store: Arc<dyn SegmentStore>,
    config: LogConfig,
    mut logs: BTreeMap<u64, String>,
    mut report: RecoveryReport,
    producer_files: ProducerFiles,
) -> Result<Log> {
    let (active_base, active_name) = match logs.pop_last() {
        Some(last) => last,
        None => {
            let name = name(0, SegmentFile::Log, Stage::Live);
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
    let (mut closed, mut previous) = load_closed(format, &*store, sources, &config, true, &mut report)?;
    if let Some(prev) = previous.filter(|&p| p >= active_base) {
        let kind = CorruptKind::OffsetBelowBase { base: active_base, found: prev };
        return Err(Error::Corrupt { segment: active_name, position: 0, kind });
    }
    let mut file = store.open(&active_name).map_err(Error::io("open", &active_name))?;
    let (mut active_base, mut active_name) = (active_base, active_name);
    if file.is_sealed() {
        if file.is_empty() {
            // Recreated under the same base: offsets below it may have been handed out and cleaned away.
            store.delete(&active_name).map_err(Error::io("delete", &active_name))?;
        } else {
            let (segment, rebuilt, _) = SealedSegment::open_with_hint(
                format,
                &*store,
                active_base,
                active_name.clone(),
                file,
                config.index_interval_bytes,
                true,
            )?;
            report.indexes_rebuilt += usize::from(rebuilt);
            // A segment that was active has never been cleaned: its last record is the last offset given.
            active_base = segment.next_offset();
            previous = segment.last_offset().or(previous);
            closed.push(Arc::new(segment));
        }
        active_name = name(active_base, SegmentFile::Log, Stage::Live);
        file = store.create(&active_name).map_err(Error::io("create", &active_name))?;
        sync_dir(&*store)?;
    }
    let (summary, torn) =
        tail::scan_active(format, active_base, &active_name, &file, previous, config.index_interval_bytes)?;
    if let Some(torn) = &torn {
        file.truncate(torn.position).map_err(Error::io("truncate", &active_name))?;
        file.sync().map_err(Error::io("sync", &active_name))?;
    }
    report.truncated_tail = torn;
    let next_offset = summary.summary.last_offset.map_or(active_base, |l| l + 1);
    let (recorded_log_start, high_watermark) = checkpoint.broker_offsets()?;
    let log_start = closed.first().map_or(active_base, |s| s.base());
    let checkpoint_at = checkpoint_within(&checkpoint, &*store, log_start, active_base, next_offset, &mut report)?;
    let checkpoint_at = above_log_start(checkpoint_at, recorded_log_start, active_base);
    let active = Active { base: active_base, name: active_name, file, summary, frozen_len: None };
    let parts = Parts { closed, active, next_offset, checkpoint: checkpoint_at, report, producer_files };
    let mut log = build(format, checkpoint, store, config, parts, false);
    log.high_watermark = high_watermark;
    Ok(log)
}

/// What the front half of a read-only load hands the back half: the segments as the next writable open would
/// leave them (base -> name, with the segment already loaded where the front half had to, a swap read in
/// place of what it covers), what that open would repair so far, where the checkpoint lives, and the files
/// beside the segments that loading the producer state reads.
pub(crate) struct ReadOnlyFront {
    pub(crate) names: BTreeMap<u64, (String, Option<SealedSegment>)>,
    pub(crate) report: RecoveryReport,
    pub(crate) checkpoint: CheckpointFile,
    pub(crate) producer_files: ProducerFiles,
}

/// The back half of every read-only load, for both formats: loads the closed segments (all but the last) and
/// the active one without changing anything, leaves a torn tail out of the view, places the checkpoint within
/// the log (and, for a broker's partition, at or above its recorded log start), then checks that the log held
/// still: every file loaded is still the one under its name, and `unchanged` (the format's listing compared up
/// to the active segment's base) says the names are the same. `Ok(None)` when anything changed (the caller
/// tries again); `not_a_log` is the error for a store without a segment.
///
/// # Errors
/// `not_a_log`; [`Error::Corrupt`] for offsets below the active segment's base, or damage;
/// [`Error::BadCheckpoint`]; [`Error::Io`].
pub(crate) fn read_only_back_half(
    format: Format,
    store: &Arc<dyn SegmentStore>,
    config: &LogConfig,
    front: ReadOnlyFront,
    not_a_log: impl FnOnce() -> Error,
    unchanged: impl FnOnce(u64) -> Result<bool>,
) -> Result<Option<Parts>> {
    let ReadOnlyFront { mut names, mut report, checkpoint, producer_files } = front;
    let store_ref: &dyn SegmentStore = &**store;
    let Some((active_base, (active_name, active_loaded))) = names.pop_last() else {
        return Err(not_a_log());
    };
    let mut sources = Vec::with_capacity(names.len());
    for (base, (name, loaded)) in names {
        let file = match &loaded {
            Some(s) => Arc::clone(s.file()),
            None => store.open(&name).map_err(Error::io("open", &name))?,
        };
        sources.push(Source { base, name, file, loaded });
    }
    let (closed, previous) = load_closed(format, store_ref, sources, config, false, &mut report)?;
    if let Some(prev) = previous.filter(|&p| p >= active_base) {
        let kind = CorruptKind::OffsetBelowBase { base: active_base, found: prev };
        return Err(Error::Corrupt { segment: active_name, position: 0, kind });
    }
    let file: Arc<dyn Segment> = match &active_loaded {
        Some(s) => Arc::clone(s.file()),
        None => store.open(&active_name).map_err(Error::io("open", &active_name))?,
    };
    let (summary, torn) =
        tail::scan_active(format, active_base, &active_name, &file, previous, config.index_interval_bytes)?;
    let frozen_len = torn.as_ref().map_or(file.len(), |t| t.position);
    report.truncated_tail = torn;
    let next_offset = summary.summary.last_offset.map_or(active_base, |l| l + 1);
    let log_start = closed.first().map_or(active_base, |s| s.base());
    let checkpoint_at = checkpoint_within(&checkpoint, store_ref, log_start, active_base, next_offset, &mut report)?;
    let checkpoint_at = above_log_start(checkpoint_at, checkpoint.broker_offsets()?.0, active_base);
    // Did anything change while we loaded? Every file we hold must still be the one under its name, and the
    // names must resolve to the same segments.
    let same_files = closed
        .iter()
        .map(|s| (s.name(), s.file()))
        .chain(std::iter::once((active_name.as_str(), &file)))
        .all(|(name, f)| store.file_id(name).is_ok_and(|id| id == f.file_id()));
    if !unchanged(active_base)? || !same_files {
        return Ok(None);
    }
    let active = Active { base: active_base, name: active_name, file, summary, frozen_len: Some(frozen_len) };
    Ok(Some(Parts { closed, active, next_offset, checkpoint: checkpoint_at, report, producer_files }))
}

/// The cleaner checkpoint raised to the log start the broker recorded (`log-start-offset-checkpoint`), as
/// Kafka's cleaner starts there when its checkpoint is below it: nothing below the log start is live. Never
/// past the active segment.
pub(crate) fn above_log_start(checkpoint: u64, recorded_log_start: Option<u64>, active_base: u64) -> u64 {
    recorded_log_start.map_or(checkpoint, |r| checkpoint.max(r.min(active_base)))
}

/// Runs `attempt` (a read-only load, `Ok(None)` when the log changed meanwhile) until it holds still, as
/// [`Log::open`] read-only describes.
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
