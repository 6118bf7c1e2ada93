//! One cleaning pass: Kafka's two passes over the closed segments of a log, inside one cleaning transaction
//! of the log ([`log_core::Cleaning`]).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use log_core::codec;
use log_core::{Cleaning, Log, RecordRef, Replacement, SealedSegment, Stamp};

use crate::clock::Clock;
use crate::config::CleanerConfig;
use crate::error::{Error, Result};
use crate::map::{BATCH, OffsetMap, Probes};
use crate::settings::DEFAULT_DELETE_RETENTION_MS;
use crate::shards::{Shards, shard_of};
use crate::stats::CleanStats;
use crate::throttle::Throttler;

/// What one pass takes of its log's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassOptions {
    /// Purge: a pass with the clock past every delete horizon stamped by an earlier pass, so every tombstone
    /// an earlier pass kept goes. A tombstone this pass sees for the first time is still kept and stamped: it
    /// must survive one pass so that consumers can see the delete.
    pub purge: bool,
    /// The log's `delete.retention.ms`: the horizon this pass stamps on tombstones it keeps for the first
    /// time is now plus this.
    pub delete_retention_ms: i64,
    /// The log's `min.compaction.lag.ms`: closed segments holding a record younger than this stay dirty.
    pub min_compaction_lag_ms: i64,
}

impl Default for PassOptions {
    fn default() -> Self {
        PassOptions { purge: false, delete_retention_ms: DEFAULT_DELETE_RETENTION_MS, min_compaction_lag_ms: 0 }
    }
}

impl PassOptions {
    /// The default options with `purge` set.
    pub fn purge() -> Self {
        PassOptions { purge: true, ..PassOptions::default() }
    }
}

/// What pass 2 does with one record.
pub(crate) enum Verdict {
    Keep,
    /// Keep, re-encoded with this delete horizon (a tombstone kept for the first time).
    Stamp(i64),
    Drop,
}

/// Which of the two passes a [`Progress`] report is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Building the offset map.
    Map,
    /// Re-copying segments.
    Copy,
}

/// A progress report, sent after each segment of pass 1 and each group of pass 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// The pass.
    pub phase: Phase,
    /// Segment bytes done in this phase (never more than `bytes_total`).
    pub bytes_done: u64,
    /// Segment bytes this phase may read at most.
    pub bytes_total: u64,
}

/// A progress callback.
pub type ProgressFn = Box<dyn FnMut(Progress) + Send>;

/// What pass 2 needs to judge a record, fixed for the whole pass.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Judge {
    /// Records at or past this offset were not mapped: kept as they are.
    pub(crate) end_offset: u64,
    /// The pass's clock.
    pub(crate) now: i64,
    /// The delete horizon a tombstone kept for the first time gets.
    pub(crate) horizon: i64,
    /// Drop every tombstone whose horizon is set, passed or not.
    pub(crate) purge: bool,
}

/// What pass 2's rule looks at in a record, whatever its segment format.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Facts {
    pub(crate) offset: u64,
    pub(crate) keyed: bool,
    pub(crate) tombstone: bool,
    pub(crate) delete_horizon: Option<i64>,
}

impl Facts {
    fn of(rec: &RecordRef<'_>) -> Facts {
        Facts {
            offset: rec.offset,
            keyed: rec.key.is_some(),
            tombstone: rec.is_tombstone(),
            delete_horizon: rec.delete_horizon,
        }
    }
}

/// What pass 2 counted (per thread, then summed).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CopyCounts {
    pub(crate) segments_read: u64,
    pub(crate) records_read: u64,
    pub(crate) bytes_read: u64,
    pub(crate) records_kept: u64,
    pub(crate) bytes_kept: u64,
    pub(crate) tombstones_kept: u64,
    pub(crate) tombstones_stamped: u64,
    pub(crate) tombstones_dropped: u64,
    pub(crate) stale_dropped: u64,
    pub(crate) invalid_records: u64,
    pub(crate) probes: Probes,
}

impl CopyCounts {
    fn add(&mut self, o: &CopyCounts) {
        self.segments_read += o.segments_read;
        self.records_read += o.records_read;
        self.bytes_read += o.bytes_read;
        self.records_kept += o.records_kept;
        self.bytes_kept += o.bytes_kept;
        self.tombstones_kept += o.tombstones_kept;
        self.tombstones_stamped += o.tombstones_stamped;
        self.tombstones_dropped += o.tombstones_dropped;
        self.stale_dropped += o.stale_dropped;
        self.invalid_records += o.invalid_records;
        self.probes.lookups += o.probes.lookups;
        self.probes.probes += o.probes.probes;
    }

    fn into_stats(self, stats: &mut CleanStats) {
        stats.pass2.segments_read = self.segments_read;
        stats.pass2.records_read = self.records_read;
        stats.pass2.bytes_read = self.bytes_read;
        stats.pass2.records_kept = self.records_kept;
        stats.pass2.bytes_kept = self.bytes_kept;
        stats.tombstones_kept = self.tombstones_kept;
        stats.tombstones_stamped = self.tombstones_stamped;
        stats.tombstones_dropped = self.tombstones_dropped;
        stats.stale_dropped = self.stale_dropped;
        stats.invalid_records = self.invalid_records;
    }
}

/// Bytes a thread reads between two looks at the stop flag and two charges to the I/O throttle.
const PACE_BYTES: u64 = 256 << 10;

/// A thread's stop flag and throttle, consulted every [`PACE_BYTES`].
struct Pace<'a> {
    abort: Option<&'a AtomicBool>,
    throttle: Option<&'a Throttler>,
    pending: u64,
}

impl Pace<'_> {
    #[inline]
    fn step(&mut self, bytes: u64) -> Result<()> {
        self.pending += bytes;
        if self.pending < PACE_BYTES {
            return Ok(());
        }
        self.flush()
    }

    fn flush(&mut self) -> Result<()> {
        if let Some(t) = self.throttle {
            t.charge(self.pending);
        }
        self.pending = 0;
        if self.abort.is_some_and(|a| a.load(Ordering::Relaxed)) {
            return Err(Error::Aborted);
        }
        Ok(())
    }
}

/// Runs cleaning passes with one offset map (or one per thread of a parallel pass), reused between passes
/// (its memory is taken once).
pub struct Cleaner {
    shards: Shards,
    config: CleanerConfig,
    clock: Arc<dyn Clock>,
    progress: Option<Mutex<ProgressFn>>,
    abort: Option<Arc<AtomicBool>>,
    throttle: Option<Arc<Throttler>>,
}

impl std::fmt::Debug for Cleaner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cleaner")
            .field("map", &self.shards.kind())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Cleaner {
    /// A cleaner with the map `config` asks for (its kind, budget, load factor and threads), and `clock` for
    /// "now".
    ///
    /// # Errors
    /// As [`CleanerConfig::build_shards`].
    pub fn new(config: CleanerConfig, clock: Arc<dyn Clock>) -> Result<Self> {
        let maps = config.build_shards()?;
        Ok(Cleaner { shards: Shards { maps }, config, clock, progress: None, abort: None, throttle: None })
    }

    /// A one-thread cleaner over a map built elsewhere (a test's, say).
    pub fn with_map(map: Box<dyn OffsetMap>, config: CleanerConfig, clock: Arc<dyn Clock>) -> Self {
        let config = CleanerConfig { threads: 1, ..config };
        Cleaner { shards: Shards { maps: vec![map] }, config, clock, progress: None, abort: None, throttle: None }
    }

    /// Calls `f` after each segment of pass 1 and each group of pass 2 (for progress bars).
    pub fn on_progress(&mut self, f: impl FnMut(Progress) + Send + 'static) {
        self.progress = Some(Mutex::new(Box::new(f)));
    }

    /// Stops a running pass (before its commit, leaving the log unchanged, with [`Error::Aborted`]) once
    /// `flag` is set.
    pub fn stop_when(&mut self, flag: Arc<AtomicBool>) {
        self.abort = Some(flag);
    }

    /// Charges the bytes every pass reads to `throttle` (shared with other cleaners).
    pub fn throttle(&mut self, throttle: Arc<Throttler>) {
        self.throttle = Some(throttle);
    }

    /// The offset map of a one-thread cleaner (as left by the last pass: the dirty section's key → latest
    /// offset); for a parallel cleaner, its first shard.
    pub fn map(&self) -> &dyn OffsetMap {
        &*self.shards.maps[0]
    }

    /// The configuration.
    pub fn config(&self) -> &CleanerConfig {
        &self.config
    }

    /// Keys the map (all its shards) holds at most.
    pub fn capacity(&self) -> usize {
        self.shards.capacity()
    }

    fn pace(&self) -> Pace<'_> {
        Pace { abort: self.abort.as_deref(), throttle: self.throttle.as_deref(), pending: 0 }
    }

    fn report(&self, phase: Phase, bytes_done: u64, bytes_total: u64) {
        send(&self.progress, phase, bytes_done, bytes_total);
    }

    /// One pass over `log`, waiting for any other pass on it to finish first. See [`Cleaner::clean_in`].
    ///
    /// # Errors
    /// As [`Cleaner::clean_in`].
    pub fn clean(&mut self, log: &Log, options: PassOptions) -> Result<CleanStats> {
        let cleaning = log.begin_cleaning()?;
        self.clean_in(cleaning, options)
    }

    /// Passes until the dirty section is done: the first with `options`, the rest without purging (the
    /// first pass re-copies every segment an earlier pass kept a tombstone in, since they all lie below its
    /// end offset, so the purge is done once). `each` sees every pass's statistics as it ends. Returns the
    /// passes' statistics.
    ///
    /// # Errors
    /// As [`Cleaner::clean_in`], or what `each` returns; passes already committed stay.
    pub fn clean_until_clean(
        &mut self,
        log: &Log,
        options: PassOptions,
        mut each: impl FnMut(&CleanStats) -> Result<()>,
    ) -> Result<Vec<CleanStats>> {
        let mut all = Vec::new();
        let mut options = options;
        loop {
            let stats = self.clean(log, options)?;
            each(&stats)?;
            let more = stats.map_full;
            all.push(stats);
            if !more {
                return Ok(all);
            }
            options.purge = false;
        }
    }

    /// One pass over the log of `cleaning`.
    ///
    /// Pass 1 maps key → offset over the dirty section (the checkpoint up to the first uncleanable offset:
    /// the active segment's base, or an earlier segment holding records younger than the minimum lag),
    /// oldest first, and stops at the first key the map refuses, which fixes `end_offset`. Pass 2 re-copies
    /// every closed segment whose base is below `end_offset`, grouped as [`Cleaning::groups`] says, keeping a
    /// record iff it lies at or beyond `end_offset`, or it has a key and no newer offset is mapped for that
    /// key (and, for a tombstone, its delete horizon has not passed). Kept records keep offset, timestamp and
    /// headers. A group of one segment that needs no change is left alone; one left empty disappears. The
    /// log then swaps the new segments in and moves the checkpoint to `end_offset`. The active segment never
    /// takes part. Both passes hand the map runs of up to [`BATCH`] keys, so that a map can hide memory
    /// latency.
    ///
    /// With several threads ([`CleanerConfig::threads`]), each thread builds its own shard of the map from
    /// the whole dirty section, and pass 2 copies groups in parallel. A shard that fills stops the pass at
    /// its first refused offset; keys other shards mapped beyond it point at records at or beyond the end
    /// offset, which are all kept, so what they drop is still superseded by a record that stays.
    ///
    /// # Errors
    /// [`crate::Error::Log`] for I/O or corruption; [`Error::Aborted`] when stopped. The log is unchanged
    /// then: the transaction's output files are removed as it drops (by the next pass or open, if the log
    /// is poisoned).
    pub fn clean_in(&mut self, cleaning: Cleaning<'_>, options: PassOptions) -> Result<CleanStats> {
        if self.shards.capacity() == 0 {
            // A map that takes no key would leave every pass stuck at the checkpoint.
            return Err(Error::BufferTooSmall {
                bytes: self.config.dedupe_buffer_bytes,
                load_factor: self.config.load_factor,
                map: self.shards.kind().name(),
                min_bytes: self.shards.kind().min_bytes(self.config.load_factor, 1),
            });
        }
        let started = Instant::now();
        let now = self.clock.now_ms();
        let checkpoint = cleaning.checkpoint();
        let section = cleaning.dirty_section(now, options.min_compaction_lag_ms);
        let snapshot = cleaning.snapshot().clone();
        let mut stats = CleanStats {
            map: self.shards.kind().name().to_owned(),
            threads: self.shards.count(),
            purge: options.purge,
            now_ms: now,
            first_dirty_offset: checkpoint,
            first_uncleanable_offset: section.first_uncleanable_offset,
            active_base: snapshot.active_base(),
            dirty_bytes: section.dirty_bytes,
            clean_bytes: section.clean_bytes,
            ..CleanStats::default()
        };
        let closed = snapshot.closed();
        let limit = section.first_uncleanable_offset;
        let end_offset = if self.shards.count() == 1 {
            self.build_map(closed, checkpoint, limit, &mut stats)?
        } else {
            self.build_shards(closed, checkpoint, limit, &mut stats)?
        };
        stats.end_offset = end_offset;

        let pass2 = Instant::now();
        let judge = Judge {
            end_offset,
            now,
            horizon: now.saturating_add(options.delete_retention_ms.max(0)),
            purge: options.purge,
        };
        let groups = cleaning.groups(end_offset);
        stats.groups = groups.len() as u64;
        let (replacements, counts) = self.copy_groups(&cleaning, &groups, judge)?;
        counts.into_stats(&mut stats);
        stats.segments_unchanged = (groups.len() - replacements.len()) as u64;
        stats.pass2.seconds = pass2.elapsed().as_secs_f64();
        self.record_map_stats(&mut stats, counts.probes);
        for r in &replacements {
            let len = r.old().len() as u64;
            match r.new_segment() {
                None => stats.segments_removed += len,
                Some(new) => {
                    // The segments before the one the output is named after lost every record.
                    let named = r.old().iter().position(|s| s.base() == new.base()).unwrap_or(0) as u64;
                    stats.segments_rewritten += 1;
                    stats.segments_removed += named;
                    stats.segments_merged += len - 1 - named;
                }
            }
        }
        if self.abort.as_ref().is_some_and(|a| a.load(Ordering::Relaxed)) {
            return Err(Error::Aborted);
        }
        let swap = Instant::now();
        cleaning.commit(replacements, end_offset)?;
        stats.swap_seconds = swap.elapsed().as_secs_f64();
        stats.total_seconds = started.elapsed().as_secs_f64();
        Ok(stats)
    }

    /// Pass 1 with one map. Returns `end_offset`: the offset of the first keyed record the map refused, or
    /// `limit` when the whole dirty section was mapped.
    fn build_map(
        &mut self,
        closed: &[Arc<SealedSegment>],
        checkpoint: u64,
        limit: u64,
        stats: &mut CleanStats,
    ) -> Result<u64> {
        let started = Instant::now();
        let dirty = dirty_segments(closed, checkpoint, limit);
        let total: u64 = dirty.iter().map(|s| s.size()).sum();
        let mut pace = Pace { abort: self.abort.as_deref(), throttle: self.throttle.as_deref(), pending: 0 };
        let map = &mut *self.shards.maps[0];
        map.begin(checkpoint);
        let progress = &self.progress;
        let mut done = 0;
        let mut run: Vec<(&[u8], u64)> = Vec::with_capacity(BATCH);
        let mut end = None;
        'segments: for segment in &dirty {
            // Checksums are not computed here: pass 2 reads every frame this pass reads (they all lie below
            // the end offset) and verifies it before anything is committed, so a damaged frame still fails
            // the pass, having changed nothing. Each frame is checksummed once per pass instead of twice.
            for item in segment.records_from_unverified(checkpoint) {
                let (_, rec, len) = item?;
                stats.pass1.records_read += 1;
                stats.pass1.bytes_read += len as u64;
                pace.step(len as u64)?;
                let Some(key) = rec.key else { continue };
                run.push((key, rec.offset));
                if run.len() == BATCH
                    && let Some(refused) = put_run(map, &mut run)
                {
                    end = Some(refused);
                    break 'segments;
                }
            }
            done += segment.size();
            send(progress, Phase::Map, done, total);
        }
        if end.is_none() {
            end = put_run(map, &mut run);
        }
        pace.flush()?;
        stats.map_full = end.is_some();
        stats.pass1.seconds = started.elapsed().as_secs_f64();
        Ok(end.unwrap_or(limit))
    }

    /// Pass 1 with one shard per thread: every thread scans the dirty section and maps the keys of its shard.
    fn build_shards(
        &mut self,
        closed: &[Arc<SealedSegment>],
        checkpoint: u64,
        limit: u64,
        stats: &mut CleanStats,
    ) -> Result<u64> {
        let started = Instant::now();
        let dirty = dirty_segments(closed, checkpoint, limit);
        let n = self.shards.count();
        // The lowest offset any shard refused: the others stop once they reach it.
        let refused = AtomicU64::new(u64::MAX);
        let abort = self.abort.as_deref();
        let throttle = self.throttle.as_deref();
        let results: Vec<Result<(u64, u64)>> = std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .shards
                .maps
                .iter_mut()
                .enumerate()
                .map(|(shard, map)| {
                    let (dirty, refused) = (&dirty, &refused);
                    scope.spawn(move || -> Result<(u64, u64)> {
                        map.begin(checkpoint);
                        // Only the first thread charges the throttle: the others read the same bytes.
                        let mut pace = Pace { abort, throttle: throttle.filter(|_| shard == 0), pending: 0 };
                        let (mut records, mut bytes) = (0u64, 0u64);
                        let mut run: Vec<(&[u8], u64)> = Vec::with_capacity(BATCH);
                        for segment in dirty {
                            for item in segment.records_from_unverified(checkpoint) {
                                let (_, rec, len) = item?;
                                records += 1;
                                bytes += len as u64;
                                pace.step(len as u64)?;
                                let Some(key) = rec.key else { continue };
                                if shard_of(key, n) != shard {
                                    continue;
                                }
                                run.push((key, rec.offset));
                                if run.len() == BATCH {
                                    if run[0].1 >= refused.load(Ordering::Relaxed) {
                                        return Ok((records, bytes));
                                    }
                                    if let Some(r) = put_run(&mut **map, &mut run) {
                                        refused.fetch_min(r, Ordering::Relaxed);
                                        return Ok((records, bytes));
                                    }
                                }
                            }
                        }
                        if let Some(r) = put_run(&mut **map, &mut run) {
                            refused.fetch_min(r, Ordering::Relaxed);
                        }
                        pace.flush()?;
                        Ok((records, bytes))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| Err(Error::Panicked { message: panic_message(&*p) })))
                .collect()
        });
        let mut first = None;
        for r in results {
            let (records, bytes) = r?;
            first.get_or_insert((records, bytes));
        }
        // Every thread scanned the same records; the first one's count is the pass's (the others stop early
        // at most).
        let (records, bytes) = first.unwrap_or((0, 0));
        stats.pass1.records_read = records;
        stats.pass1.bytes_read = bytes;
        let total: u64 = dirty.iter().map(|s| s.size()).sum();
        self.report(Phase::Map, total, total);
        let refused = refused.into_inner();
        stats.map_full = refused != u64::MAX && refused < limit;
        stats.pass1.seconds = started.elapsed().as_secs_f64();
        Ok(refused.min(limit))
    }

    /// Pass 2 over every group, in parallel when the cleaner has several threads. Returns the replacements in
    /// base order.
    fn copy_groups(
        &self,
        cleaning: &Cleaning<'_>,
        groups: &[Vec<Arc<SealedSegment>>],
        judge: Judge,
    ) -> Result<(Vec<Replacement>, CopyCounts)> {
        let total: u64 = groups.iter().flatten().map(|s| s.size()).sum();
        let threads = self.shards.count().min(groups.len()).max(1);
        let next = AtomicUsize::new(0);
        let done = AtomicU64::new(0);
        let work = || -> Result<ThreadCopies> {
            let mut out = Vec::new();
            let mut counts = CopyCounts::default();
            let mut scratch = Vec::new();
            let mut pace = self.pace();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(group) = groups.get(i) else { break };
                let copied = copy_group(cleaning, group, judge, &self.shards, &mut scratch, &mut counts, &mut pace)?;
                if let Some(r) = copied {
                    out.push((i, r));
                }
                let bytes: u64 = group.iter().map(|s| s.size()).sum();
                self.report(Phase::Copy, done.fetch_add(bytes, Ordering::Relaxed) + bytes, total);
            }
            pace.flush()?;
            Ok((out, counts))
        };
        let results: Vec<Result<ThreadCopies>> = if threads == 1 {
            vec![work()]
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = (0..threads).map(|_| scope.spawn(work)).collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap_or_else(|p| Err(Error::Panicked { message: panic_message(&*p) })))
                    .collect()
            })
        };
        let mut all = Vec::new();
        let mut counts = CopyCounts::default();
        for r in results {
            let (out, c) = r?;
            all.extend(out);
            counts.add(&c);
        }
        all.sort_by_key(|(i, _)| *i);
        Ok((all.into_iter().map(|(_, r)| r).collect(), counts))
    }

    fn record_map_stats(&self, stats: &mut CleanStats, gets: Probes) {
        let mut m = self.shards.stats();
        m.lookups += gets.lookups;
        m.probes += gets.probes;
        m.probes_per_lookup = if m.lookups == 0 { 0.0 } else { m.probes as f64 / m.lookups as f64 };
        stats.offset_map = m;
    }
}

/// What one pass-2 thread copied: replacements by group index, and its counts.
type ThreadCopies = (Vec<(usize, Replacement)>, CopyCounts);

/// Sends a progress report (never more done than the total).
fn send(progress: &Option<Mutex<ProgressFn>>, phase: Phase, bytes_done: u64, bytes_total: u64) {
    if let Some(f) = progress {
        let mut f = f.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f(Progress { phase, bytes_done: bytes_done.min(bytes_total), bytes_total });
    }
}

/// The closed segments pass 1 reads: those holding offsets at or above the checkpoint, below `limit`.
fn dirty_segments(closed: &[Arc<SealedSegment>], checkpoint: u64, limit: u64) -> Vec<Arc<SealedSegment>> {
    closed.iter().filter(|s| s.last_offset().is_some_and(|l| l >= checkpoint) && s.base() < limit).cloned().collect()
}

/// Hands a run of keys to the map; the offset of the first one refused, if any.
fn put_run(map: &mut dyn OffsetMap, run: &mut Vec<(&[u8], u64)>) -> Option<u64> {
    let put = map.put_batch(run);
    let refused = run.get(put).map(|&(_, offset)| offset);
    run.clear();
    refused
}

/// Pass 2 over one group. `Ok(None)` when the group is one segment whose records are all kept as they are
/// (no new file is written).
fn copy_group(
    cleaning: &Cleaning<'_>,
    group: &[Arc<SealedSegment>],
    judge: Judge,
    shards: &Shards,
    scratch: &mut Vec<u8>,
    counts: &mut CopyCounts,
    pace: &mut Pace<'_>,
) -> Result<Option<Replacement>> {
    let mut copy = cleaning.copy(group);
    let mut run: Vec<(u64, RecordRef<'_>, usize)> = Vec::with_capacity(BATCH);
    let mut keys: Vec<&[u8]> = Vec::with_capacity(BATCH);
    let mut latest = [None; BATCH];
    for (i, segment) in group.iter().enumerate() {
        if i > 0 {
            copy.next_segment()?;
        }
        counts.segments_read += 1;
        let bytes = segment.bytes();
        let mut records = segment.records();
        loop {
            // Read a run of records, then look up the keys of those the map may know, in one batch.
            run.clear();
            for item in records.by_ref() {
                run.push(item?);
                if run.len() == BATCH {
                    break;
                }
            }
            if run.is_empty() {
                break;
            }
            keys.clear();
            keys.extend(run.iter().filter(|(_, r, _)| r.offset < judge.end_offset).filter_map(|(_, r, _)| r.key));
            shards.get_batch(&keys, &mut latest, &mut counts.probes);
            let mut looked_up = latest.iter();
            for &(pos, rec, len) in &run {
                counts.records_read += 1;
                counts.bytes_read += len as u64;
                pace.step(len as u64)?;
                let mapped = if rec.offset < judge.end_offset && rec.key.is_some() {
                    looked_up.next().copied().flatten()
                } else {
                    None
                };
                let frame = &bytes[pos as usize..pos as usize + len];
                match verdict(Facts::of(&rec), mapped, judge, counts) {
                    Verdict::Drop => copy.drop_record()?,
                    Verdict::Keep => {
                        counts.records_kept += 1;
                        counts.bytes_kept += len as u64;
                        copy.keep(pos, frame, Stamp::of(&rec))?;
                    }
                    Verdict::Stamp(h) => {
                        scratch.clear();
                        let n = codec::encode_ref_with_horizon(&rec, Some(h), scratch).map_err(|size| {
                            log_core::Error::RecordTooLarge {
                                size: size.saturating_sub(codec::FRAME_HEADER_BYTES),
                                max: codec::MAX_RECORD_BYTES,
                            }
                        })?;
                        counts.records_kept += 1;
                        counts.bytes_kept += n as u64;
                        copy.keep_changed(scratch, Stamp { delete_horizon: Some(h), ..Stamp::of(&rec) })?;
                    }
                }
            }
        }
    }
    Ok(copy.finish()?)
}

/// Pass 2's rule for one record, given the offset the map holds for its key (`None` when the record is at or
/// beyond the end offset, has no key, or its key was not mapped). The one place this rule lives: both segment
/// formats (this project's frames and Kafka's batches) are judged by it.
pub(crate) fn verdict(rec: Facts, mapped: Option<u64>, judge: Judge, counts: &mut CopyCounts) -> Verdict {
    if rec.offset >= judge.end_offset {
        return Verdict::Keep;
    }
    if !rec.keyed {
        counts.invalid_records += 1;
        return Verdict::Drop;
    }
    if mapped.is_some_and(|latest| rec.offset < latest) {
        counts.stale_dropped += 1;
        return Verdict::Drop;
    }
    if !rec.tombstone {
        return Verdict::Keep;
    }
    match rec.delete_horizon {
        Some(h) if judge.purge || judge.now >= h => {
            counts.tombstones_dropped += 1;
            Verdict::Drop
        }
        Some(_) => {
            counts.tombstones_kept += 1;
            Verdict::Keep
        }
        None => {
            counts.tombstones_kept += 1;
            counts.tombstones_stamped += 1;
            Verdict::Stamp(judge.horizon)
        }
    }
}

/// The message of a caught panic.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}
