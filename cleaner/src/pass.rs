//! One cleaning pass: Kafka's two passes over the closed segments of a log.

use std::sync::Arc;
use std::time::Instant;

use log_core::codec;
use log_core::{CleaningGuard, Log, RecordRef, Replacement, SealedSegment};

use crate::clock::Clock;
use crate::config::CleanerConfig;
use crate::error::Result;
use crate::map::{BATCH, OffsetMap, Probes};
use crate::stats::CleanStats;

/// How a pass treats tombstones.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PassOptions {
    /// Purge: a pass with the clock past every delete horizon stamped by an earlier pass, so every tombstone
    /// an earlier pass kept goes. A tombstone this pass sees for the first time is still kept and stamped: it
    /// must survive one pass so that consumers can see the delete.
    pub purge: bool,
}

/// What pass 2 does with one record.
enum Verdict {
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

/// A progress report, sent after each segment of each pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// The pass.
    pub phase: Phase,
    /// Segment bytes done in this phase.
    pub bytes_done: u64,
    /// Segment bytes this phase may read at most.
    pub bytes_total: u64,
}

/// A progress callback.
pub type ProgressFn = Box<dyn FnMut(Progress) + Send>;

/// What pass 2 needs to judge a record, fixed for the whole pass.
#[derive(Debug, Clone, Copy)]
struct Judge {
    end_offset: u64,
    now: i64,
    horizon: i64,
    purge: bool,
}

/// Runs cleaning passes over a [`Log`] with one offset map, reused between passes (its memory is taken once).
pub struct Cleaner {
    map: Box<dyn OffsetMap>,
    config: CleanerConfig,
    clock: Arc<dyn Clock>,
    scratch: Vec<u8>,
    progress: Option<ProgressFn>,
}

impl std::fmt::Debug for Cleaner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cleaner").field("map", &self.map.kind()).field("config", &self.config).finish_non_exhaustive()
    }
}

impl Cleaner {
    /// A cleaner with the map `config` asks for (its kind, budget and load factor), `config`'s delete
    /// retention, and `clock` for "now".
    ///
    /// # Errors
    /// As [`CleanerConfig::build_map`].
    pub fn new(config: CleanerConfig, clock: Arc<dyn Clock>) -> Result<Self> {
        let map = config.build_map()?;
        Ok(Cleaner::with_map(map, config, clock))
    }

    /// A cleaner over a map built elsewhere (a test's, say).
    pub fn with_map(map: Box<dyn OffsetMap>, config: CleanerConfig, clock: Arc<dyn Clock>) -> Self {
        Cleaner { map, config, clock, scratch: Vec::new(), progress: None }
    }

    /// Calls `f` after each segment of each pass (for progress bars).
    pub fn on_progress(&mut self, f: impl FnMut(Progress) + Send + 'static) {
        self.progress = Some(Box::new(f));
    }

    fn report(&mut self, phase: Phase, bytes_done: u64, bytes_total: u64) {
        if let Some(f) = self.progress.as_mut() {
            f(Progress { phase, bytes_done, bytes_total });
        }
    }

    /// The offset map (as left by the last pass: the dirty section's key → latest offset).
    pub fn map(&self) -> &dyn OffsetMap {
        &*self.map
    }

    /// The configuration.
    pub fn config(&self) -> &CleanerConfig {
        &self.config
    }

    /// One pass over `log`.
    ///
    /// Pass 1 maps key → offset over the dirty section (checkpoint up to the active segment's base), oldest
    /// first, and stops at the first key the map refuses, which fixes `end_offset`. Pass 2 re-copies every
    /// closed segment whose base is below `end_offset`, keeping a record iff it lies at or beyond
    /// `end_offset`, or it has a key and no newer offset is mapped for that key (and, for a tombstone, its
    /// delete horizon has not passed). Kept records keep offset, timestamp and headers. A segment that needs
    /// no change is left alone; one left empty disappears. The log then swaps the new segments in and moves
    /// the checkpoint to `end_offset`. The active segment never takes part. Both passes hand the map runs of
    /// up to [`BATCH`] keys, so that a map can hide memory latency.
    ///
    /// # Errors
    /// [`crate::Error::Log`] for I/O or corruption; the log is unchanged then (stray `.cleaned` files are
    /// removed by the next pass or the next open).
    pub fn clean(&mut self, log: &Log, options: PassOptions) -> Result<CleanStats> {
        if self.map.capacity() == 0 {
            // A map that takes no key would leave every pass stuck at the checkpoint.
            return Err(crate::Error::BufferTooSmall {
                bytes: self.config.dedupe_buffer_bytes,
                load_factor: self.config.load_factor,
                map: self.map.kind().name(),
                min_bytes: self.map.kind().min_bytes(self.config.load_factor, 1),
            });
        }
        let started = Instant::now();
        let exclusive = log.begin_cleaning();
        let snapshot = log.snapshot();
        let checkpoint = log.cleaner_checkpoint();
        let now = self.clock.now_ms();
        let mut stats = CleanStats {
            map: self.map.kind().name().to_owned(),
            purge: options.purge,
            now_ms: now,
            first_dirty_offset: checkpoint,
            active_base: snapshot.active_base(),
            ..CleanStats::default()
        };
        let closed = snapshot.closed();
        let end_offset = self.build_map(closed, checkpoint, snapshot.active_base(), &mut stats)?;
        stats.end_offset = end_offset;

        let pass2 = Instant::now();
        let judge = Judge {
            end_offset,
            now,
            horizon: now.saturating_add(self.config.delete_retention_ms),
            purge: options.purge,
        };
        let mut probes = Probes::default();
        let mut replacements = Vec::new();
        let copy_total: u64 = closed.iter().take_while(|s| s.base() < end_offset).map(|s| s.size()).sum();
        let mut copy_done = 0;
        for segment in closed.iter().take_while(|s| s.base() < end_offset) {
            let result = self.recopy(log, &exclusive, segment, judge, &mut probes, &mut stats);
            copy_done += segment.size();
            self.report(Phase::Copy, copy_done, copy_total);
            match result {
                Ok(Some(new)) => replacements.push(Replacement { old: Arc::clone(segment), new }),
                Ok(None) => stats.segments_unchanged += 1,
                Err(e) => {
                    discard(log, replacements.iter().map(|r| r.new.name()));
                    discard(
                        log,
                        [log_core::names::file_name(segment.base(), log_core::names::FileKind::Cleaned).as_str()],
                    );
                    return Err(e);
                }
            }
        }
        stats.pass2.seconds = pass2.elapsed().as_secs_f64();
        self.record_map_stats(&mut stats, probes);
        for r in &replacements {
            if r.new.is_removal() {
                stats.segments_removed += 1;
            } else {
                stats.segments_rewritten += 1;
            }
        }
        let swap = Instant::now();
        let names: Vec<String> = replacements.iter().map(|r| r.new.name().to_owned()).collect();
        if let Err(e) = log.commit_cleaning(&exclusive, replacements, end_offset) {
            if !log.is_poisoned() {
                discard(log, names.iter().map(String::as_str));
            }
            return Err(e.into());
        }
        stats.swap_seconds = swap.elapsed().as_secs_f64();
        stats.total_seconds = started.elapsed().as_secs_f64();
        Ok(stats)
    }

    /// Pass 1. Returns `end_offset`: the offset of the first keyed record the map refused, or the active
    /// segment's base when the whole dirty section was mapped.
    fn build_map(
        &mut self,
        closed: &[Arc<SealedSegment>],
        checkpoint: u64,
        active_base: u64,
        stats: &mut CleanStats,
    ) -> Result<u64> {
        let started = Instant::now();
        self.map.begin(checkpoint);
        let dirty = || closed.iter().filter(|s| s.last_offset().is_some_and(|l| l >= checkpoint));
        let total: u64 = dirty().map(|s| s.size()).sum();
        let mut done = 0;
        let mut run: Vec<(&[u8], u64)> = Vec::with_capacity(BATCH);
        let mut end = None;
        'segments: for segment in dirty() {
            done += segment.size();
            self.report(Phase::Map, done, total);
            // Checksums are not computed here: pass 2 reads every frame this pass reads (they all lie below
            // the end offset) and verifies it before anything is committed, so a damaged frame still fails
            // the pass, having changed nothing. Each frame is checksummed once per pass instead of twice.
            for item in segment.records_from_unverified(checkpoint) {
                let (_, rec, len) = item?;
                stats.pass1.records_read += 1;
                stats.pass1.bytes_read += len as u64;
                let Some(key) = rec.key else { continue };
                run.push((key, rec.offset));
                if run.len() == BATCH
                    && let Some(refused) = self.put_run(&mut run)
                {
                    end = Some(refused);
                    break 'segments;
                }
            }
        }
        if end.is_none() {
            end = self.put_run(&mut run);
        }
        stats.map_full = end.is_some();
        stats.pass1.seconds = started.elapsed().as_secs_f64();
        Ok(end.unwrap_or(active_base))
    }

    /// Hands a run of keys to the map; the offset of the first one refused, if any.
    fn put_run(&mut self, run: &mut Vec<(&[u8], u64)>) -> Option<u64> {
        let put = self.map.put_batch(run);
        let refused = run.get(put).map(|&(_, offset)| offset);
        run.clear();
        refused
    }

    /// Pass 2 over one segment. `Ok(None)` when every record is kept as it is (no new file is written).
    fn recopy(
        &mut self,
        log: &Log,
        exclusive: &CleaningGuard<'_>,
        segment: &SealedSegment,
        judge: Judge,
        probes: &mut Probes,
        stats: &mut CleanStats,
    ) -> Result<Option<SealedSegment>> {
        stats.pass2.segments_read += 1;
        let bytes = segment.bytes();
        let mut copy = log.cleaned_copy(exclusive, segment);
        let mut run: Vec<(u64, RecordRef<'_>, usize)> = Vec::with_capacity(BATCH);
        let mut keys: Vec<&[u8]> = Vec::with_capacity(BATCH);
        let mut latest = [None; BATCH];
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
            self.map.get_batch(&keys, &mut latest, probes);
            let mut looked_up = latest.iter();
            for &(pos, rec, len) in &run {
                stats.pass2.records_read += 1;
                stats.pass2.bytes_read += len as u64;
                let mapped = if rec.offset < judge.end_offset && rec.key.is_some() {
                    looked_up.next().copied().flatten()
                } else {
                    None
                };
                let frame = &bytes[pos as usize..pos as usize + len];
                match verdict(&rec, mapped, judge, stats) {
                    Verdict::Drop => copy.drop_record()?,
                    Verdict::Keep => {
                        stats.pass2.records_kept += 1;
                        stats.pass2.bytes_kept += len as u64;
                        copy.keep(pos, frame, rec.offset, rec.delete_horizon)?;
                    }
                    Verdict::Stamp(h) => {
                        self.scratch.clear();
                        let n = codec::encode_ref_with_horizon(&rec, Some(h), &mut self.scratch).map_err(|size| {
                            log_core::Error::RecordTooLarge {
                                size: size.saturating_sub(codec::FRAME_HEADER_BYTES),
                                max: codec::MAX_RECORD_BYTES,
                            }
                        })?;
                        stats.pass2.records_kept += 1;
                        stats.pass2.bytes_kept += n as u64;
                        copy.keep_changed(&self.scratch, rec.offset, Some(h))?;
                    }
                }
            }
        }
        Ok(copy.finish()?)
    }

    fn record_map_stats(&self, stats: &mut CleanStats, gets: Probes) {
        let mut m = self.map.stats();
        m.lookups += gets.lookups;
        m.probes += gets.probes;
        m.probes_per_lookup = if m.lookups == 0 { 0.0 } else { m.probes as f64 / m.lookups as f64 };
        stats.offset_map = m;
    }
}

/// Pass 2's rule for one record, given the offset the map holds for its key (`None` when the record is at or
/// beyond the end offset, has no key, or its key was not mapped).
fn verdict(rec: &RecordRef<'_>, mapped: Option<u64>, judge: Judge, stats: &mut CleanStats) -> Verdict {
    if rec.offset >= judge.end_offset {
        return Verdict::Keep;
    }
    if rec.key.is_none() {
        stats.invalid_records += 1;
        return Verdict::Drop;
    }
    if mapped.is_some_and(|latest| rec.offset < latest) {
        stats.stale_dropped += 1;
        return Verdict::Drop;
    }
    if !rec.is_tombstone() {
        return Verdict::Keep;
    }
    match rec.delete_horizon {
        Some(h) if judge.purge || judge.now >= h => {
            stats.tombstones_dropped += 1;
            Verdict::Drop
        }
        Some(_) => {
            stats.tombstones_kept += 1;
            Verdict::Keep
        }
        None => {
            stats.tombstones_kept += 1;
            stats.tombstones_stamped += 1;
            Verdict::Stamp(judge.horizon)
        }
    }
}

/// Best-effort removal of output files of a failed pass (the next pass or open removes any left).
fn discard<'a>(log: &Log, names: impl IntoIterator<Item = &'a str>) {
    for name in names {
        let _ = log.store().delete(name);
    }
}
