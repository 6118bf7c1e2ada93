//! The cleaning transaction: what a pass holds from its snapshot to its commit, and the dirty section a
//! scheduler weighs before it starts one.
//!
//! A pass begins with [`Log::begin_cleaning`] (waits) or [`Log::try_begin_cleaning`] (does not), which takes
//! the log's one cleaning slot and a snapshot. It reads the snapshot, writes cleaned copies through
//! [`Cleaning::copy`] (one output for each group of adjacent segments, [`Cleaning::groups`]), and ends with
//! [`Cleaning::commit`], which swaps the outputs in atomically and moves the checkpoint. Dropped without a
//! commit, the transaction removes its own output files through the log: a poisoned log is left alone (its
//! durable state is unknown, and the next open sorts the files out) and a failed removal poisons it, as every
//! failed change of storage does. The cleaner never names a file.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::group_copy::GroupCopy;
use crate::log::Log;
use crate::reader::LogSnapshot;
use crate::segment::{SealedSegment, SegmentWriter};

/// Kafka's `segment.index.bytes` default (10 MiB) in entries of this format's hints (16 bytes each): a
/// grouped output's index stays within what one segment's index may hold.
pub const MAX_GROUP_INDEX_ENTRIES: usize = (10 << 20) / 16;

/// What a scheduler needs to know about a log's dirty section, from one snapshot.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct DirtySection {
    /// The cleaner checkpoint: the first offset no pass has been through.
    pub first_dirty_offset: u64,
    /// The first offset a pass may not take: the active segment's base, the base of the first dirty closed
    /// segment holding a record younger than `min.compaction.lag.ms`, or (Kafka) the base of the closed segment
    /// holding the last stable offset, whichever is lowest, never below the checkpoint. As Kafka's `LogToClean`
    /// does, an offset inside a segment is rounded down to that segment's base: a pass never maps or rewrites
    /// part of a segment.
    pub first_uncleanable_offset: u64,
    /// The base of the first segment no pass may rewrite: the active segment, or that too young segment or the
    /// segment holding the last stable offset (which may lie below the checkpoint, when the segment holding the
    /// checkpoint is the one held).
    pub first_uncleanable_base: u64,
    /// Kafka: true when open transactions, not the active segment or `min.compaction.lag.ms`, end the section
    /// (the last stable offset lies in a closed segment at or below every too young one).
    pub held_by_last_stable_offset: bool,
    /// Bytes of the closed segments wholly below the checkpoint.
    pub clean_bytes: u64,
    /// Bytes of the closed segments a pass may take: from the one holding the checkpoint to the first
    /// uncleanable offset.
    pub dirty_bytes: u64,
    /// Records of those segments.
    pub dirty_records: u64,
    /// Bytes of closed segments that are dirty but too young to clean (`min.compaction.lag.ms`).
    pub too_young_bytes: u64,
    /// Bytes of the active segment, which no pass takes.
    pub active_bytes: u64,
    /// Records of the active segment.
    pub active_records: u64,
    /// Closed segments.
    pub closed_segments: usize,
    /// The earliest first-record timestamp among the dirty closed segments: the age of the oldest dirty
    /// record as `max.compaction.lag.ms` measures it (Kafka's first batch timestamp).
    pub oldest_dirty_timestamp: Option<i64>,
    /// The first record timestamp of the active segment (a scheduler rolls an active segment older than the
    /// maximum lag, as Kafka does, so that its records can be cleaned at all).
    pub active_first_timestamp: Option<i64>,
    /// Kafka: the last stable offset (the first offset of the earliest open transaction, else the log end),
    /// which bounds the first uncleanable offset; `None` for the native format, or when the transaction state
    /// could not be read (the pass that needs it then fails naming why).
    pub last_stable_offset: Option<u64>,
    /// Kafka: open transactions (each holds the LSO back while it stays open).
    pub open_transactions: usize,
}

impl DirtySection {
    /// The dirty section of `snapshot` with the cleaner checkpoint at `checkpoint`, at `now_ms`, keeping
    /// segments with a record younger than `min_compaction_lag_ms` out (0: none is too young).
    pub fn of(snapshot: &LogSnapshot, checkpoint: u64, now_ms: i64, min_compaction_lag_ms: i64) -> Self {
        let active_base = snapshot.active_base();
        let mut section = DirtySection {
            first_dirty_offset: checkpoint,
            first_uncleanable_offset: active_base,
            first_uncleanable_base: active_base,
            active_bytes: snapshot.active_len(),
            active_records: snapshot.active_records_count(),
            closed_segments: snapshot.closed().len(),
            active_first_timestamp: snapshot.active_first_timestamp(),
            ..DirtySection::default()
        };
        if snapshot.format().has_transactions()
            && let Ok(txns) = snapshot.transactions()
        {
            // Kafka never cleans at or past the last stable offset: an open transaction's records may still be
            // aborted.
            section.last_stable_offset = Some(txns.last_stable_offset);
            section.open_transactions = txns.open.len();
            if txns.last_stable_offset < active_base {
                // As Kafka's cleaner does (`LogToClean`'s first uncleanable segment), the section ends at the
                // base of the segment holding the LSO: that segment is neither mapped nor rewritten, though
                // records before the LSO lie in it.
                let holding = snapshot
                    .closed()
                    .iter()
                    .rev()
                    .find(|s| s.base() <= txns.last_stable_offset)
                    .map_or(txns.last_stable_offset, |s| s.base());
                section.first_uncleanable_offset = holding.max(checkpoint);
                section.first_uncleanable_base = holding;
                section.held_by_last_stable_offset = true;
            }
        }
        let young_after = now_ms.saturating_sub(min_compaction_lag_ms.max(0));
        for segment in snapshot.closed() {
            let summary = segment.summary();
            if segment.last_offset().is_none_or(|l| l < checkpoint) {
                section.clean_bytes += segment.size();
                continue;
            }
            if let Some(t) = summary.first_timestamp {
                section.oldest_dirty_timestamp = Some(section.oldest_dirty_timestamp.map_or(t, |o| o.min(t)));
            }
            let too_young = min_compaction_lag_ms > 0 && summary.max_timestamp.is_some_and(|t| t > young_after);
            if too_young && segment.base() < section.first_uncleanable_base {
                section.first_uncleanable_offset = section.first_uncleanable_offset.min(segment.base().max(checkpoint));
                section.first_uncleanable_base = segment.base();
                section.held_by_last_stable_offset = false;
            }
            if segment.base() < section.first_uncleanable_offset && section.first_uncleanable_offset > checkpoint {
                section.dirty_bytes += segment.size();
                section.dirty_records += summary.records;
            } else {
                section.too_young_bytes += segment.size();
            }
        }
        section
    }

    /// Kafka's cleanable ratio: dirty bytes over clean plus dirty bytes (0 for a log with neither).
    pub fn dirty_ratio(&self) -> f64 {
        let total = self.clean_bytes + self.dirty_bytes;
        if total == 0 { 0.0 } else { self.dirty_bytes as f64 / total as f64 }
    }

    /// True when a pass would find something to clean.
    pub fn is_cleanable(&self) -> bool {
        self.dirty_bytes > 0 && self.first_uncleanable_offset > self.first_dirty_offset
    }

    /// How long past `max.compaction.lag.ms` the oldest dirty record is at `now_ms` (0 when it is not).
    pub fn compaction_delay_ms(&self, now_ms: i64, max_compaction_lag_ms: i64) -> i64 {
        let until = now_ms.saturating_sub(max_compaction_lag_ms.max(0));
        self.oldest_dirty_timestamp.map_or(0, |t| until.saturating_sub(t).max(0))
    }
}

/// One cleaning pass's hold on a log: its slot (one pass at a time per log), its snapshot, and the files it
/// has written and not committed. See the module docs.
#[derive(Debug)]
pub struct Cleaning<'a> {
    log: &'a Log,
    _slot: MutexGuard<'a, ()>,
    snapshot: LogSnapshot,
    checkpoint: u64,
    /// Output files written and not committed, removed if the transaction is dropped.
    outputs: Mutex<Vec<String>>,
    /// The snapshot's transaction state, derived on first use.
    txns: std::sync::OnceLock<crate::txn::TxnState>,
}

impl Log {
    /// The transaction state of `snapshot` (of this log) as a pass judges it: checked against the
    /// partition's `.txnindex` files and narrowed by them ([`crate::Format::verify_txn_indexes`]), aborted
    /// transactions below the log start forgotten. What [`Cleaning::transactions`] holds, for a pass that
    /// opens no transaction (a dry run).
    ///
    /// # Errors
    /// As [`Cleaning::transactions`].
    pub fn verified_transactions(&self, snapshot: &LogSnapshot) -> Result<crate::txn::TxnState> {
        let mut t = snapshot.transactions()?;
        self.format.verify_txn_indexes(&**self.store(), snapshot, &mut t)?;
        if let Some(start) = snapshot.log_start() {
            t.forget_aborted_before(start);
        }
        Ok(t)
    }

    /// Waits until no other pass is cleaning this log, then starts a cleaning transaction.
    ///
    /// # Errors
    /// [`Error::ReadOnly`]; [`Error::Poisoned`].
    pub fn begin_cleaning(&self) -> Result<Cleaning<'_>> {
        self.writable()?;
        let slot = self.cleaning.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(self.start_cleaning(slot))
    }

    /// Starts a cleaning transaction unless another pass holds the log (`Ok(None)` then, at once).
    ///
    /// # Errors
    /// [`Error::ReadOnly`]; [`Error::Poisoned`].
    pub fn try_begin_cleaning(&self) -> Result<Option<Cleaning<'_>>> {
        self.writable()?;
        let slot = match self.cleaning.try_lock() {
            Ok(slot) => slot,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return Ok(None),
        };
        Ok(Some(self.start_cleaning(slot)))
    }

    fn start_cleaning<'a>(&'a self, slot: MutexGuard<'a, ()>) -> Cleaning<'a> {
        let (snapshot, checkpoint) = {
            let inner = self.read_inner();
            (self.snapshot_locked(&inner), inner.checkpoint)
        };
        Cleaning {
            log: self,
            _slot: slot,
            snapshot,
            checkpoint,
            outputs: Mutex::new(Vec::new()),
            txns: std::sync::OnceLock::new(),
        }
    }

    /// The dirty section as it stands (see [`DirtySection::of`]); takes no cleaning slot.
    pub fn dirty_section(&self, now_ms: i64, min_compaction_lag_ms: i64) -> DirtySection {
        let (snapshot, checkpoint) = {
            let inner = self.read_inner();
            (self.snapshot_locked(&inner), inner.checkpoint)
        };
        DirtySection::of(&snapshot, checkpoint, now_ms, min_compaction_lag_ms)
    }

    /// Removes an output file of an abandoned transaction, unless the log is poisoned or read-only (a
    /// failed removal poisons it).
    fn discard_output(&self, name: &str) {
        if self.writable().is_err() {
            return;
        }
        match self.store.delete(name) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                let _ = self.check::<()>(Err(Error::io("delete", name)(e)));
            }
        }
    }
}

impl<'a> Cleaning<'a> {
    /// The log being cleaned.
    pub fn log(&self) -> &'a Log {
        self.log
    }

    /// The segments as they were when the transaction began.
    pub fn snapshot(&self) -> &LogSnapshot {
        &self.snapshot
    }

    /// The transaction state of the snapshot ([`LogSnapshot::transactions`]), checked against the
    /// partition's `.txnindex` files and narrowed by them ([`crate::Format::verify_txn_indexes`]), derived
    /// once a transaction.
    ///
    /// # Errors
    /// As [`LogSnapshot::transactions`]; [`crate::Error::Corrupt`] for a `.txnindex` that disagrees with the
    /// markers (nothing is cleaned on a guess).
    pub fn transactions(&self) -> Result<&crate::txn::TxnState> {
        if let Some(t) = self.txns.get() {
            return Ok(t);
        }
        let t = self.log.verified_transactions(&self.snapshot)?;
        Ok(self.txns.get_or_init(|| t))
    }

    /// The cleaner checkpoint when the transaction began: the first dirty offset.
    pub fn checkpoint(&self) -> u64 {
        self.checkpoint
    }

    /// The dirty section of the transaction's snapshot.
    pub fn dirty_section(&self, now_ms: i64, min_compaction_lag_ms: i64) -> DirtySection {
        DirtySection::of(&self.snapshot, self.checkpoint, now_ms, min_compaction_lag_ms)
    }

    /// The closed segments below `end_offset` (those pass 2 re-copies, from the log's start) in groups of
    /// adjacent segments, each to be copied into one output: Kafka's `groupSegmentsBySize`. A group grows
    /// while the sum of its segments' sizes stays within the log's `segment_bytes` and the sum of their index
    /// entries within [`MAX_GROUP_INDEX_ENTRIES`]; the output is never larger than its inputs, so a cleaned log
    /// is not left as many small files.
    pub fn groups(&self, end_offset: u64) -> Vec<Vec<Arc<SealedSegment>>> {
        self.groups_of(end_offset, self.log.config.segment_bytes)
    }

    /// As [`Cleaning::groups`], each segment a group of its own (the lesson's cleaning, which keeps every
    /// segment's base and removes only the segments left empty).
    pub fn single_groups(&self, end_offset: u64) -> Vec<Vec<Arc<SealedSegment>>> {
        self.groups_of(end_offset, 0)
    }

    fn groups_of(&self, end_offset: u64, max_bytes: u64) -> Vec<Vec<Arc<SealedSegment>>> {
        plan_groups(self.log.format, self.snapshot.closed(), end_offset, max_bytes)
    }

    /// Starts the cleaned copy of `group`: adjacent closed segments of the snapshot, oldest first, that
    /// become one segment (or disappear). Copies of different groups may be written at the same time.
    pub fn copy<'c>(&'c self, group: &'c [Arc<SealedSegment>]) -> GroupCopy<'c> {
        GroupCopy::new(self, group)
    }

    /// Creates the empty output `<base>.log.cleaned` (replacing one an abandoned pass left), owned by this
    /// transaction until it commits.
    pub(crate) fn create_output(&self, base: u64) -> Result<SegmentWriter> {
        let log = self.log;
        let name = log.format.cleaned_name(base);
        // The one file of a pass written in bulk: past the store's cache where it can (`create_copy`).
        let file = self.claim(&name, true)?;
        Ok(SegmentWriter::new(log.format, base, name, file, log.config.index_interval_bytes))
    }

    /// Creates the empty file `name` (replacing one an abandoned pass left), owned by this transaction until it
    /// commits (an output's Kafka indexes).
    pub(crate) fn create_file(&self, name: &str) -> Result<Arc<dyn crate::Segment>> {
        self.claim(name, false)
    }

    /// Creates `name` for this transaction: as a bulk copy ([`crate::SegmentStore::create_copy`]) or not.
    fn claim(&self, name: &str, copy: bool) -> Result<Arc<dyn crate::Segment>> {
        let log = self.log;
        log.writable()?;
        self.outputs.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(name.to_owned());
        log.check(
            match log.store.delete(name) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io("delete", name)(e)),
                _ => Ok(()),
            }
            .and_then(|()| {
                let created = if copy { log.store.create_copy(name) } else { log.store.create(name) };
                created.map_err(Error::io("create", name))
            }),
        )
    }

    /// True when `name` is an output of this transaction.
    pub(crate) fn owns(&self, name: &str) -> bool {
        self.outputs.lock().unwrap_or_else(std::sync::PoisonError::into_inner).iter().any(|n| n == name)
    }

    /// Swaps the replacements in and moves the checkpoint to `checkpoint` (the skeleton: `swap.rs`; the
    /// protocols: `protocol/*/commit.rs`). After a successful commit nothing is abandoned; after a failed one, outputs that
    /// were not swapped in are removed as the transaction drops (unless the log is poisoned).
    ///
    /// # Errors
    /// [`Error::BadReplacement`] when a replacement does not fit the log (nothing is changed then);
    /// [`Error::Poisoned`]; [`Error::Io`] (which poisons the log).
    pub fn commit(self, replacements: Vec<Replacement>, checkpoint: u64) -> Result<()> {
        for r in &replacements {
            for output in r.outputs() {
                if !self.owns(output.name()) {
                    return Err(Error::BadReplacement {
                        base: output.base(),
                        problem: crate::error::ReplacementProblem::WrongOutput,
                    });
                }
            }
        }
        let owned = self.outputs.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        self.log.commit_swap(replacements, checkpoint, &owned)?;
        self.outputs.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clear();
        Ok(())
    }
}

impl Drop for Cleaning<'_> {
    fn drop(&mut self) {
        let outputs = std::mem::take(self.outputs.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner));
        for name in outputs {
            self.log.discard_output(&name);
        }
    }
}

/// The closed segments of a log of `format` below `end_offset`, grouped as [`Cleaning::groups`] describes
/// (`max_bytes` 0: each segment alone), for a pass or a dry run of one.
pub fn plan_groups(
    format: crate::Format,
    closed: &[Arc<SealedSegment>],
    end_offset: u64,
    max_bytes: u64,
) -> Vec<Vec<Arc<SealedSegment>>> {
    let taken: Vec<&Arc<SealedSegment>> = closed.iter().take_while(|s| s.base() < end_offset).collect();
    let span = format.max_offset_span();
    group_by_size(&taken, max_bytes, MAX_GROUP_INDEX_ENTRIES, span)
        .into_iter()
        .map(|range| taken[range].iter().map(|&s| Arc::clone(s)).collect())
        .collect()
}

/// Adjacent segments grouped as [`Cleaning::groups`] describes: index ranges into `segments`.
pub fn group_by_size(
    segments: &[&Arc<SealedSegment>],
    max_bytes: u64,
    max_entries: usize,
    max_offset_span: Option<u64>,
) -> Vec<std::ops::Range<usize>> {
    let mut groups = Vec::new();
    let mut start = 0;
    while start < segments.len() {
        let mut bytes = segments[start].size();
        let mut entries = segments[start].summary().index.len();
        let mut end = start + 1;
        while let Some(next) = segments.get(end) {
            let (b, e) = (bytes + next.size(), entries + next.summary().index.len());
            let span = next.last_offset().unwrap_or(next.base()).saturating_sub(segments[start].base());
            if b > max_bytes || e > max_entries || max_offset_span.is_some_and(|m| span > m) {
                break;
            }
            (bytes, entries) = (b, e);
            end += 1;
        }
        groups.push(start..end);
        start = end;
    }
    groups
}

/// The cleaned copy of a group of adjacent closed segments, ready to be swapped in by
/// [`Cleaning::commit`]: built only by [`GroupCopy::finish`].
///
/// Invariant: the outputs cover the group exactly, in order: `head` (a removal marker from the group's first
/// base up to `new`'s base), `new` (the cleaned segment, named after the first segment that kept a record),
/// `tail` (a removal marker from the segment after `new` to the group's end). When nothing survived, `head`
/// alone covers the whole group.
#[derive(Debug)]
pub struct Replacement {
    pub(crate) old: Vec<Arc<SealedSegment>>,
    pub(crate) head: Option<SealedSegment>,
    pub(crate) new: Option<SealedSegment>,
    pub(crate) tail: Option<SealedSegment>,
}

impl Replacement {
    /// The segments replaced, oldest first.
    pub fn old(&self) -> &[Arc<SealedSegment>] {
        &self.old
    }

    /// The new segment; `None` when nothing of the group survived (the segments disappear).
    pub fn new_segment(&self) -> Option<&SealedSegment> {
        self.new.as_ref()
    }

    /// True when nothing of the group survived.
    pub fn is_removal(&self) -> bool {
        self.new.is_none()
    }

    /// The output files in base order: markers and the new segment.
    pub(crate) fn outputs(&self) -> impl Iterator<Item = &SealedSegment> {
        self.head.iter().chain(self.new.as_ref()).chain(self.tail.as_ref())
    }
}
