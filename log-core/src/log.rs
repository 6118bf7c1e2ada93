//! [`Log`]: the segmented, keyed, append-only log.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::checkpoint::CheckpointFile;
use crate::config::{LogConfig, SyncPolicy};
use crate::error::{Error, Result};
use crate::format::Format;
use crate::format::side_indexes::{SideIndexes, write_side_indexes};
use crate::names::{SegmentFile, Stage};
use crate::reader::LogSnapshot;
pub use crate::record::AppendRecord;
use crate::record::Record;
use crate::scan::SegmentSource;
use crate::segment::{SealedSegment, Stamp, SummaryBuilder};
use crate::storage::{Segment, SegmentStore};
use crate::tail::TornTail;

/// What [`Log::open`] repaired, or, for a log opened with [`Log::open`] read-only, what the next writable
/// open will repair (nothing was changed then).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RecoveryReport {
    /// A torn tail of the active segment (a bad region with no valid record after it): cut, or to be cut.
    pub truncated_tail: Option<TornTail>,
    /// `.swap` files of an interrupted cleaning swap that were (or will be) completed.
    pub swaps_completed: usize,
    /// Files of an interrupted swap rolled back (some output was still `.cleaned`): removed, or to be.
    pub cleaned_files_discarded: usize,
    /// Empty closed segments removed (or to be).
    pub empty_segments_removed: usize,
    /// Closed segments whose `.lcindex` hint was missing, stale or damaged, so they were scanned and
    /// validated (and the hint rewritten, by a writable open).
    pub indexes_rebuilt: usize,
    /// Leftovers removed (or to be): `.deleted` segments, an interrupted checkpoint write, stray hints,
    /// Kafka indexes without their segment (a broker deletes those on load too).
    pub stray_files_removed: usize,
    /// Where a closed Kafka segment's data ends in zero fill (a preallocated segment): `(file, position)`. Left
    /// as it is (no batch is there); a broker trims it the same way.
    pub zero_filled_segments: Vec<(String, u64)>,
    /// Files that are neither part of the log nor anything it knows (a `server.log` in a partition
    /// directory, say): left alone.
    pub ignored_files: Vec<String>,
    /// A checkpoint past the end of the log, reset to the log's start (as Kafka does).
    pub checkpoint_reset: Option<CheckpointReset>,
    /// Each pending swap (completed, or to be) and the offsets completing it removes, proven to be records a
    /// cleaning pass may drop ([`crate::swap_proof`]).
    pub pending_swaps: Vec<crate::swap_proof::SwapEffect>,
}

impl RecoveryReport {
    /// True when there was nothing to repair.
    pub fn is_empty(&self) -> bool {
        *self == RecoveryReport::default()
    }
}

/// A cleaner checkpoint that pointed past the end of the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct CheckpointReset {
    /// The offset the checkpoint file held.
    pub found: u64,
    /// The offset cleaning starts from instead: the log's start.
    pub reset_to: u64,
}

/// The segment being appended to.
#[derive(Debug)]
pub(crate) struct Active {
    pub(crate) base: u64,
    pub(crate) name: String,
    pub(crate) file: Arc<dyn Segment>,
    pub(crate) summary: SummaryBuilder,
    /// For a log opened read-only: the bytes of the file that belong to the view (a torn tail and whatever
    /// a writer appends later are left out). `None` for a writable log, which reads up to the file's length.
    pub(crate) frozen_len: Option<u64>,
}

impl Active {
    /// Bytes of the active segment that readers see.
    pub(crate) fn readable_len(&self) -> u64 {
        self.frozen_len.unwrap_or_else(|| self.file.len())
    }
}

#[derive(Debug)]
pub(crate) struct Inner {
    /// Closed segments, oldest first. Replaced as a whole (copy on write) so that a snapshot taken by a reader
    /// stays consistent while the cleaner swaps segments.
    pub(crate) closed: Arc<Vec<Arc<SealedSegment>>>,
    pub(crate) active: Active,
    pub(crate) next_offset: u64,
    /// First dirty offset: everything below it has been through a cleaning pass.
    pub(crate) checkpoint: u64,
    pub(crate) unsynced_bytes: u64,
    pub(crate) last_sync: Instant,
    pub(crate) scratch: Vec<u8>,
}

/// A segmented, keyed, append-only log over any [`SegmentStore`].
///
/// Invariants: offsets strictly increase across the log and never change; the last segment is the active one
/// and the only one appended to; closed segments are sealed, never empty, and are replaced only by
/// a cleaning commit ([`crate::Cleaning::commit`]), atomically for readers and for crashes.
///
/// All methods take `&self`: appends, rolls and the cleaner's commit take a write lock; reads snapshot the
/// segment list under a read lock and then read without it.
#[derive(Debug)]
pub struct Log {
    pub(crate) format: Format,
    pub(crate) store: Arc<dyn SegmentStore>,
    /// Where the cleaner checkpoint is kept.
    pub(crate) checkpoint_file: CheckpointFile,
    pub(crate) config: LogConfig,
    /// Kafka: the high watermark from the broker's `replication-offset-checkpoint`, when it names the
    /// partition; no cleaning reaches it.
    pub(crate) high_watermark: Option<u64>,
    pub(crate) inner: RwLock<Inner>,
    pub(crate) poisoned: AtomicBool,
    /// Opened with [`Log::open`] read-only: every write fails with [`Error::ReadOnly`].
    pub(crate) read_only: bool,
    pub(crate) recovery: RecoveryReport,
    /// The one cleaning slot: serialises cleaning passes (see [`Log::begin_cleaning`]).
    pub(crate) cleaning: std::sync::Mutex<()>,
    /// What loading the producer state reads besides the batches, found when the log was opened.
    pub(crate) producer_files: crate::producers::ProducerFiles,
    /// The producer state as first loaded, and the log end it was brought up to ([`Log::active_producers`]).
    pub(crate) producers: std::sync::Mutex<Option<(u64, Arc<crate::producers::ActiveProducers>)>>,
}

/// Milliseconds since the Unix epoch by the system clock.
pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

impl Log {
    /// The producers a broker holds as active on this log at the log end of `snapshot` (empty for a format
    /// without producers): loaded once, on the first call, as a broker starting on the files at `now_ms` with
    /// `producer.id.expiration.ms` of `expiration_ms` loads them (Kafka: `kafka::producer_state`), then
    /// brought up to date with what was appended since, as a running broker's is. Cleaning passes never change
    /// it (they keep every batch holding a producer's last write), so every pass of one open log sees the state
    /// the first one saw, as every pass of a broker's cleaner does.
    ///
    /// # Errors
    /// [`crate::Error::Io`] reading a snapshot or a segment; [`crate::Error::Corrupt`] for a batch header that
    /// does not parse.
    pub fn active_producers(
        &self,
        snapshot: &crate::LogSnapshot,
        now_ms: i64,
        expiration_ms: i64,
    ) -> Result<Arc<crate::producers::ActiveProducers>> {
        let mut cached = self.producers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let end = snapshot.next_offset();
        let state = match cached.take() {
            Some((at, state)) if at == end => state,
            Some((at, state)) if at < end => {
                let mut state = Arc::unwrap_or_clone(state);
                self.format.replay_producers(&mut state, snapshot, at)?;
                Arc::new(state)
            }
            _ => {
                let load = crate::producers::ProducerLoad { now_ms, expiration_ms };
                Arc::new(self.format.load_active_producers(&*self.store, snapshot, &self.producer_files, &load)?)
            }
        };
        *cached = Some((end, Arc::clone(&state)));
        Ok(state)
    }

    pub(crate) fn read_inner(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn write_inner(&self) -> Result<RwLockWriteGuard<'_, Inner>> {
        self.writable()?;
        Ok(self.inner.write().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// `Ok` when the log may be written: not opened read-only, not poisoned.
    pub(crate) fn writable(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        if self.poisoned.load(Ordering::Acquire) {
            return Err(Error::Poisoned);
        }
        Ok(())
    }

    /// True for a log opened with [`Log::open`] read-only.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Marks the log poisoned when `r` failed in storage: after a failed write, sync, rename, create or
    /// delete the durable state is unknown, so the log refuses writes until reopened. Other errors (an offset
    /// out of order in a cleaned copy, say) change nothing stored and do not poison.
    pub(crate) fn check<T>(&self, r: Result<T>) -> Result<T> {
        if let Err(Error::Io { .. }) = &r {
            self.poisoned.store(true, Ordering::Release);
        }
        r
    }

    /// The segment format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Where the cleaner checkpoint is kept.
    pub fn checkpoint_file(&self) -> &CheckpointFile {
        &self.checkpoint_file
    }

    /// The storage backend.
    pub fn store(&self) -> &Arc<dyn SegmentStore> {
        &self.store
    }

    /// The configuration the log was opened with.
    pub fn config(&self) -> &LogConfig {
        &self.config
    }

    /// What opening the log repaired (for a read-only log: what the next writable open will repair).
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.recovery
    }

    /// True after a failed write, sync or rename.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::Acquire)
    }

    /// Offset the next append will get.
    pub fn next_offset(&self) -> u64 {
        self.read_inner().next_offset
    }

    /// Base offset of the active segment: the first offset the cleaner may not touch.
    pub fn active_base(&self) -> u64 {
        self.read_inner().active.base
    }

    /// The cleaner checkpoint: the first dirty offset.
    pub fn cleaner_checkpoint(&self) -> u64 {
        self.read_inner().checkpoint
    }

    /// Sets the cleaner checkpoint (the first dirty offset) the next pass starts from, in memory only (capped at
    /// the active segment's base); the pass's commit writes its own. Any value is safe: records below it are
    /// still judged by pass 2, only not mapped, so a checkpoint set too high leaves them uncleaned until a pass
    /// starts below them, and one set too low costs only work. For `--checkpoint`, and for a copy whose
    /// checkpoint lives nowhere on disk.
    pub fn set_cleaner_checkpoint(&self, offset: u64) {
        let mut inner = self.inner.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        inner.checkpoint = offset.min(inner.active.base);
    }

    /// A consistent view of the segments for reading.
    pub fn snapshot(&self) -> LogSnapshot {
        self.snapshot_locked(&self.read_inner())
    }

    pub(crate) fn snapshot_locked(&self, inner: &Inner) -> LogSnapshot {
        LogSnapshot::new(self.format, Arc::clone(&inner.closed), &inner.active, inner.next_offset)
            .with_high_watermark(self.high_watermark)
            .with_log_start(self.producer_files.recorded_log_start)
    }

    /// The first record with an offset `>= offset`, or `None` past the end. A consumer asking for an offset
    /// that cleaning removed gets the next record that exists.
    ///
    /// # Errors
    /// [`Error::Corrupt`] or [`Error::Io`] from the segment read.
    pub fn read(&self, offset: u64) -> Result<Option<Record>> {
        let (snapshot, active_pos) = {
            let inner = self.read_inner();
            let snapshot = self.snapshot_locked(&inner);
            (snapshot, inner.active.summary.summary.index.seek(offset))
        };
        snapshot.read_from_hint(offset, active_pos)
    }

    /// Appends a record and returns its offset. Rolls first when the record would take the active segment past
    /// `segment_bytes`.
    ///
    /// # Errors
    /// [`Error::RecordTooLarge`] and [`Error::OffsetSpaceExhausted`] (nothing is written then);
    /// [`Error::Poisoned`]; [`Error::ReadOnly`]; [`Error::Io`] (which poisons the log).
    pub fn append(&self, rec: &AppendRecord<'_>) -> Result<u64> {
        let mut guard = self.write_inner()?;
        let inner = &mut *guard;
        let offset = inner.next_offset;
        if offset >= crate::names::MAX_OFFSET - 1 {
            // The last offset stays free: a roll after it would need a segment named at 2^63 - 1, which no
            // open accepts.
            return Err(Error::OffsetSpaceExhausted { next: offset, max: crate::names::MAX_OFFSET - 1 });
        }
        inner.scratch.clear();
        let len = self.format.encode_append(offset, rec, &mut inner.scratch)?;
        let size = inner.active.file.len();
        if size > 0 && size + len as u64 > self.config.segment_bytes {
            self.roll_locked(inner)?;
        }
        let active = &mut inner.active;
        let pos = self.check(active.file.append(&inner.scratch).map_err(Error::io("append", &active.name)))?;
        let stamp = Stamp {
            base_offset: offset,
            last_offset: offset,
            records: 1,
            max_timestamp: rec.timestamp,
            delete_horizon: None,
        };
        active.summary.note(active.base, stamp, pos, len as u64).map_err(|kind| Error::Corrupt {
            segment: active.name.clone(),
            position: pos,
            kind,
        })?;
        inner.next_offset = offset + 1;
        inner.unsynced_bytes += len as u64;
        let due = match self.config.sync {
            SyncPolicy::EveryAppend => true,
            SyncPolicy::EveryBytes(n) => inner.unsynced_bytes >= n,
            SyncPolicy::EveryMillis(ms) => inner.last_sync.elapsed().as_millis() >= u128::from(ms),
            SyncPolicy::OnRoll => false,
        };
        if due {
            self.check(active.file.sync().map_err(Error::io("sync", &active.name)))?;
            inner.unsynced_bytes = 0;
            inner.last_sync = Instant::now();
        }
        Ok(offset)
    }

    /// Appends `key = value` stamped with the system clock.
    ///
    /// # Errors
    /// As [`Log::append`].
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<u64> {
        self.append(&AppendRecord { key: Some(key), value: Some(value), timestamp: now_ms(), headers: &[] })
    }

    /// Appends a tombstone for `key` stamped with the system clock.
    ///
    /// # Errors
    /// As [`Log::append`].
    pub fn delete(&self, key: &[u8]) -> Result<u64> {
        self.append(&AppendRecord { key: Some(key), value: None, timestamp: now_ms(), headers: &[] })
    }

    /// Seals the active segment and starts a new one at the next offset. A no-op (returning `false`) when the
    /// active segment is empty, so a log never has an empty closed segment.
    ///
    /// # Errors
    /// [`Error::OffsetSpaceExhausted`] when the last record took offset 2^63 - 2, so the new segment would need
    /// the base 2^63 - 1 no open accepts (nothing changes); [`Error::Poisoned`]; [`Error::Io`] (which poisons
    /// the log).
    pub fn roll(&self) -> Result<bool> {
        let mut guard = self.write_inner()?;
        self.roll_locked(&mut guard)
    }

    fn roll_locked(&self, inner: &mut Inner) -> Result<bool> {
        if inner.active.summary.summary.batches == 0 {
            return Ok(false);
        }
        if inner.next_offset >= crate::names::MAX_OFFSET {
            // The new active segment would be named 2^63 - 1, a base no open accepts (nor a broker): the last
            // record took the last offset a segment can start after, so the active segment stays as it is.
            return Err(Error::OffsetSpaceExhausted { next: inner.next_offset, max: crate::names::MAX_OFFSET - 1 });
        }
        let name = inner.active.name.clone();
        let file = Arc::clone(&inner.active.file);
        self.check(file.seal().map_err(Error::io("seal", &name)))?;
        // A sealed segment is always synced: recovery cuts torn tails only off the active segment.
        self.check(file.sync().map_err(Error::io("sync", &name)))?;
        inner.unsynced_bytes = 0;
        inner.last_sync = Instant::now();
        let source = self.check(SegmentSource::of(&file).map_err(Error::io("map", &name)))?;
        let new_base = inner.next_offset;
        let new_name = crate::names::name(new_base, SegmentFile::Log, Stage::Live);
        let builder = std::mem::replace(
            &mut inner.active.summary,
            SummaryBuilder::new(self.format, new_base, self.config.index_interval_bytes),
        );
        let SummaryBuilder { summary, side } = builder;
        let sealed = SealedSegment::from_parts(self.format, inner.active.base, name, file, source, summary);
        self.check(sealed.write_hint(&*self.store))?;
        if let Some(indexes) = side {
            let files = indexes.finish();
            self.check(write_side_indexes(&*self.store, sealed.base(), &files, Stage::Live))?;
        }
        let new_file = self.check(self.store.create(&new_name).map_err(Error::io("create", &new_name)))?;
        // The new active segment's side indexes, empty, as a broker leaves them trimmed after a clean stop (a
        // broker finding them missing rebuilds them, with an error in its log).
        if let Some(empty) = SideIndexes::new(self.format, new_base, self.config.index_interval_bytes) {
            self.check(write_side_indexes(&*self.store, new_base, &empty.finish(), Stage::Live))?;
        }
        self.check(self.store.sync_dir().map_err(Error::io("sync directory", &new_name)))?;
        inner.active = Active {
            base: new_base,
            name: new_name,
            file: new_file,
            summary: builder_for(self, new_base),
            frozen_len: None,
        };
        let mut closed = Vec::with_capacity(inner.closed.len() + 1);
        closed.extend(inner.closed.iter().cloned());
        closed.push(Arc::new(sealed));
        inner.closed = Arc::new(closed);
        Ok(true)
    }

    /// Syncs the active segment's appends.
    ///
    /// # Errors
    /// [`Error::Poisoned`]; [`Error::Io`] (which poisons the log).
    pub fn sync(&self) -> Result<()> {
        let mut inner = self.write_inner()?;
        let active = &inner.active;
        self.check(active.file.sync().map_err(Error::io("sync", &active.name)))?;
        inner.unsynced_bytes = 0;
        inner.last_sync = Instant::now();
        Ok(())
    }
}

/// A fresh summary for an active segment of `log` based at `base`.
fn builder_for(log: &Log, base: u64) -> SummaryBuilder {
    SummaryBuilder::new(log.format, base, log.config.index_interval_bytes)
}
