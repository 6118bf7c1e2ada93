//! One cleaning pass: Kafka's two passes over the closed segments of a log, inside one cleaning transaction
//! of the log ([`log_core::Cleaning`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use log_core::progress::{Meter, Tally};
use log_core::txn::TxnState;
use log_core::{Cleaning, Log, LogSnapshot, Replacement, SealedSegment};

use crate::clock::Clock;
use crate::config::CleanerConfig;
use crate::error::{Error, Result};
use crate::external::{External, StaleSet};
use crate::finisher::copy_and_finish;
use crate::keep::Pass1Txns;
use crate::keep::{CopyCounts, Judge};
use crate::map::{BATCH, MapKind, OffsetMap, Probes};
use crate::options::{Grouping, PassOptions};
use crate::pace::{Pace, panic_message};
use crate::pass1::map_dirty;
use crate::pass2::{Buffers, CopyContext, DryOutput, Lookup, copy_segments};
use crate::stats::{CleanStats, FellBack};
use crate::superseded::Superseded;
use crate::throttle::Throttler;

/// The stage a pass's [`Meter`] shows while pass 1 maps the dirty section.
pub const STAGE_MAP: &str = "pass 1 (offset map)";
/// The stage a pass's [`Meter`] shows while pass 2 copies.
pub const STAGE_COPY: &str = "pass 2 (copy)";

/// How pass 1 maps keys: an offset map in memory, or the external pass's sorted runs.
enum Strategy {
    Map(Box<dyn OffsetMap>),
    External(External),
}

impl Strategy {
    fn kind(&self) -> MapKind {
        match self {
            Strategy::Map(m) => m.kind(),
            Strategy::External(_) => MapKind::External,
        }
    }

    fn capacity(&self) -> usize {
        match self {
            Strategy::Map(m) => m.capacity(),
            Strategy::External(_) => usize::MAX,
        }
    }

    fn stats(&self) -> crate::map::MapStats {
        match self {
            Strategy::Map(m) => m.stats(),
            Strategy::External(e) => e.stats(),
        }
    }
}

/// Runs cleaning passes with one offset map (or the external pass), reused between passes (its memory is
/// taken once).
pub struct Cleaner {
    strategy: Strategy,
    /// The external pass a map falls back to when it fills ([`CleanerConfig::one_pass`]), made the first time.
    fallback: Option<External>,
    config: CleanerConfig,
    clock: Arc<dyn Clock>,
    meter: Option<Arc<Meter>>,
    abort: Option<Arc<AtomicBool>>,
    throttle: Option<Arc<Throttler>>,
}

impl std::fmt::Debug for Cleaner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cleaner")
            .field("map", &self.strategy.kind())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Cleaner {
    /// A cleaner with the map `config` asks for (its kind, budget, load factor and threads), and `clock` for
    /// "now".
    ///
    /// # Errors
    /// As [`CleanerConfig::build_map`].
    pub fn new(config: CleanerConfig, clock: Arc<dyn Clock>) -> Result<Self> {
        let strategy = if config.map == MapKind::External {
            config.validate()?;
            Strategy::External(External::new(config.dedupe_buffer_bytes, config.spill_dir.clone(), config.threads))
        } else {
            Strategy::Map(config.build_map()?)
        };
        Ok(Cleaner { strategy, fallback: None, config, clock, meter: None, abort: None, throttle: None })
    }

    /// "Now" by this cleaner's clock, in ms since the Unix epoch: what a pass stamps delete horizons from and
    /// judges lags by.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// A one-thread cleaner over a map built elsewhere (a test's, say).
    pub fn with_map(map: Box<dyn OffsetMap>, config: CleanerConfig, clock: Arc<dyn Clock>) -> Self {
        let config = CleanerConfig { threads: 1, ..config };
        Cleaner {
            strategy: Strategy::Map(map),
            fallback: None,
            config,
            clock,
            meter: None,
            abort: None,
            throttle: None,
        }
    }

    /// Counts the bytes and records every pass reads on `meter` (shared with a reporter, or other cleaners),
    /// each half of a pass a stage ([`STAGE_MAP`], [`STAGE_COPY`]) of the bytes it may read.
    pub fn report_to(&mut self, meter: Arc<Meter>) {
        self.meter = Some(meter);
    }

    /// The meter the passes count on, if any: what a caller doing work of its own before them (a copy) counts on too.
    #[must_use]
    pub fn meter(&self) -> Option<&Arc<Meter>> {
        self.meter.as_ref()
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

    /// The offset map (as left by the last pass: the dirty section's key → latest offset); `None` for the
    /// external pass, which keeps no map.
    pub fn map(&self) -> Option<&dyn OffsetMap> {
        match &self.strategy {
            Strategy::Map(m) => Some(&**m),
            Strategy::External(_) => None,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &CleanerConfig {
        &self.config
    }

    /// Keys the map's budget holds at most (any number for the external pass).
    pub fn capacity(&self) -> usize {
        self.strategy.capacity()
    }

    fn pace(&self) -> Pace<'_> {
        let tally = Tally::of(self.meter.as_deref());
        Pace::new(self.abort.as_deref(), self.throttle.as_deref(), tally)
    }

    /// Starts the stage `name` of `bytes` on the meter, if any.
    fn begin(&self, name: &str, bytes: u64) {
        if let Some(m) = &self.meter {
            m.begin(name, Some(bytes));
        }
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
    /// With several threads ([`CleanerConfig::threads`]), pass 2 copies groups in parallel; pass 1 reads the
    /// dirty section once, into the one map. Each copying thread hands a group it has copied to a helper that
    /// finishes it (syncs it, writes its index files) while the thread copies the next
    /// (`finisher.rs`): the helper mostly waits for the disk.
    ///
    /// # Errors
    /// [`crate::Error::Log`] for I/O or corruption; [`Error::Aborted`] when stopped. The log is unchanged
    /// then: the transaction's output files are removed as it drops (by the next pass or open, if the log
    /// is poisoned).
    pub fn clean_in(&mut self, cleaning: Cleaning<'_>, options: PassOptions) -> Result<CleanStats> {
        if self.strategy.capacity() == 0 {
            // A map that takes no key would leave every pass stuck at the checkpoint.
            return Err(Error::BufferTooSmall {
                bytes: self.config.dedupe_buffer_bytes,
                load_factor: self.config.load_factor,
                map: self.strategy.kind().name(),
                min_bytes: self.strategy.kind().min_bytes(self.config.load_factor, 1),
            });
        }
        let started = Instant::now();
        // Checked against the .txnindex files: one that disagrees with the markers is damage, and nothing is
        // cleaned on a guess.
        let txns = cleaning.transactions()?.clone();
        let plan =
            self.plan(cleaning.log(), cleaning.snapshot(), cleaning.checkpoint(), txns, &options, self.config.threads)?;
        let Plan { mut stats, txns, answers, judge, groups, producers } = plan;
        let pass2 = Instant::now();
        let cx = CopyContext { judge, lookup: self.lookup(&answers), txns: &txns, producers: &producers };
        let (replacements, counts) = self.copy_groups(&cleaning, &groups, &cx)?;
        counts.into_stats(&mut stats);
        stats.segments_unchanged = (groups.len() - replacements.len()) as u64;
        stats.pass2.seconds = pass2.elapsed().as_secs_f64();
        self.record_map_stats(&mut stats, counts.probes);
        for r in &replacements {
            stats.bytes_written += r.new_segment().map_or(0, |s| s.size());
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
        if !options.drop_invalid && stats.invalid_records > 0 {
            // Nothing committed: the outputs go as the transaction drops.
            return Err(Error::UnkeyedRecords { count: stats.invalid_records });
        }
        // The last look at the stop flag: from here the pass commits, and a commit is never left half-done.
        if self.abort.as_ref().is_some_and(|a| a.load(Ordering::Relaxed)) {
            return Err(Error::Aborted);
        }
        let swap = Instant::now();
        cleaning.commit(replacements, stats.end_offset)?;
        stats.swap_seconds = swap.elapsed().as_secs_f64();
        stats.total_seconds = started.elapsed().as_secs_f64();
        Ok(stats)
    }

    /// A dry run of one pass over `log` (which may be open read-only): both passes run as a pass would, but
    /// pass 2 only counts what it would write and nothing is changed or committed. Returns the pass's
    /// statistics and the bytes and batches its outputs would hold (groups left unchanged counted whole).
    ///
    /// # Errors
    /// As [`Cleaner::clean_in`], but never an error of a write.
    pub fn dry_run(&mut self, log: &Log, options: PassOptions) -> Result<(CleanStats, DryRun)> {
        let snapshot = log.snapshot();
        let txns = log.verified_transactions(&snapshot)?;
        let plan = self.plan(log, &snapshot, log.cleaner_checkpoint(), txns, &options, 1)?;
        let Plan { mut stats, txns, answers, judge, groups, producers } = plan;
        let cx = CopyContext { judge, lookup: self.lookup(&answers), txns: &txns, producers: &producers };
        self.begin(STAGE_COPY, groups.iter().flatten().map(|s| s.size()).sum());
        let mut counts = CopyCounts::default();
        let mut bufs = Buffers::default();
        let mut pace = self.pace();
        let mut out = DryOutput::default();
        for group in &groups {
            copy_segments(group, &cx, &mut bufs, &mut counts, &mut pace, &mut out)?;
        }
        counts.into_stats(&mut stats);
        self.record_map_stats(&mut stats, counts.probes);
        Ok((stats, DryRun { bytes_written: out.bytes, batches_written: out.batches }))
    }

    /// What a pass settles before pass 2 copies anything, the same for a pass that writes ([`Cleaner::clean_in`])
    /// and a dry run ([`Cleaner::dry_run`]), from `snapshot` of `log` cleaned from `checkpoint` with the
    /// transactions `txns` (checked against the `.txnindex` files): the dirty section at this moment, pass 1
    /// over it, the judge of pass 2, the groups it re-copies and the producers it keeps a write of.
    fn plan(
        &mut self,
        log: &Log,
        snapshot: &LogSnapshot,
        checkpoint: u64,
        txns: TxnState,
        options: &PassOptions,
        threads: usize,
    ) -> Result<Plan> {
        let now = self.clock.now_ms();
        let section = log_core::DirtySection::of(snapshot, checkpoint, now, options.min_compaction_lag_ms);
        let mut stats = CleanStats {
            map: self.strategy.kind().name().to_owned(),
            threads,
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
        // Pass 1 maps only segments before the first one no pass may rewrite, and nothing past the LSO.
        let bounds = Bounds {
            checkpoint,
            limit: section.first_uncleanable_offset,
            first_uncleanable_base: section.first_uncleanable_base,
        };
        let read_as_aborted = read_as_aborted_at(&**log.store(), closed, checkpoint, log.config(), &txns)?;
        let (end_offset, answers) = self.pass_one(closed, bounds, &txns, read_as_aborted, &mut stats)?;
        stats.end_offset = end_offset;
        let format = log.format();
        let judge = Judge {
            end_offset,
            judge_past_end: format.judges_past_end(),
            round_end: format.ends_rounds_at_high_watermark().then(|| round_end(snapshot)),
            last_stable_offset: txns.last_stable_offset,
            now,
            horizon: now.saturating_add(options.delete_retention_ms.max(0)),
            purge: options.purge,
            removal_floor: options.removal_floor.unwrap_or(u64::MAX),
            max_record_bytes: options.max_decompressed_message_bytes,
        };
        // Segments from the first one no pass may rewrite (a too young one, the active one) are left alone.
        let recopy = end_offset.min(section.first_uncleanable_base);
        let max_bytes = match options.grouping {
            Grouping::BySize => log.config().segment_bytes,
            Grouping::None => 0,
        };
        let groups = log_core::cleaning::plan_groups(format, closed, recopy, max_bytes);
        stats.groups = groups.len() as u64;
        let producers = log.active_producers(snapshot, now, options.producer_id_expiration_ms)?;
        Ok(Plan { stats, txns, answers, judge, groups, producers })
    }

    /// Pass 1: `(end_offset, what pass 2 asks)`. With a map, `end_offset` is the offset of the first keyed
    /// record the map refused, or the limit when the whole dirty section was mapped, and pass 2 asks the
    /// offsets its puts superseded where their set fits ([`Superseded`]), the map otherwise; the external pass
    /// maps all of it and returns the stale offsets of every closed segment below the dirty section's end.
    fn pass_one(
        &mut self,
        closed: &[Arc<SealedSegment>],
        bounds: Bounds,
        txns: &TxnState,
        read_as_aborted: Vec<i64>,
        stats: &mut CleanStats,
    ) -> Result<(u64, Answers)> {
        let Bounds { checkpoint, limit, first_uncleanable_base } = bounds;
        let end = first_uncleanable_base.min(limit);
        let mut pass1_txns = Pass1Txns::new(txns, checkpoint, read_as_aborted.clone());
        let started = Instant::now();
        let Cleaner { strategy, fallback, config, abort, throttle, meter, .. } = self;
        let meter = meter.as_deref();
        let tally = Tally::of(meter);
        let mut pace = Pace::new(abort.as_deref(), throttle.as_deref(), tally);
        let below = || -> Vec<Arc<SealedSegment>> { closed.iter().filter(|s| s.base() < end).cloned().collect() };
        if config.one_pass || matches!(strategy, Strategy::External(_)) {
            crate::external::check_spill_dir(config.spill_dir.as_deref())?;
        }
        let (end_offset, answers) = match strategy {
            Strategy::Map(map) if config.one_pass && auto_goes_external(&**map, closed, checkpoint, end, limit) => {
                // `auto` over a section larger than the log before it, with more offsets than the map holds
                // keys: the external pass at once, where the map would read the section only to find it full.
                // Where the map would have held it, this pass keeps what the map's would, in the same files.
                map.release();
                let (capacity, kind) = (map.capacity(), map.kind().name().to_owned());
                let external = fallback.get_or_insert_with(|| {
                    External::new(config.dedupe_buffer_bytes, config.spill_dir.clone(), config.threads)
                });
                let below = below();
                if let Some(m) = meter {
                    m.begin(STAGE_MAP, Some(below.iter().map(|s| s.size()).sum()));
                }
                let mut watch = crate::external::FillWatch::new(capacity);
                let mapped = external.map(&below, checkpoint, limit, &mut pass1_txns, &mut pace, Some(&mut watch))?;
                stats.pass1.records_read = mapped.scanned.records;
                stats.pass1.bytes_read = mapped.scanned.bytes;
                stats.map = MapKind::External.name().to_owned();
                if mapped.mapped_keys >= capacity as u64 {
                    // The map would have filled (a section of exactly its capacity's keys counts as filling:
                    // Kafka's fills there only if a keyed record follows the last new key). Where, the sketch
                    // says, about; where it fell short of the capacity, near the section's end.
                    let refused_at = watch.refused_at().unwrap_or(limit);
                    stats.end_offset = refused_at;
                    stats.map_full = true;
                    let passes = stats.passes_needed().unwrap_or(2);
                    stats.map_full = false;
                    stats.fell_back = Some(FellBack {
                        map: kind,
                        refused_at,
                        passes,
                        records_read: 0,
                        bytes_read: 0,
                        estimated: true,
                    });
                }
                (limit, Answers::Stale(mapped.stale))
            }
            Strategy::Map(map) => {
                let dirty = dirty_segments(closed, checkpoint, end);
                if let Some(m) = meter {
                    m.begin(STAGE_MAP, Some(dirty.iter().map(|s| s.size()).sum()));
                }
                // The superseded offsets pass 2 asks instead of the map: a bit an offset pass 1 may map.
                let superseded = Superseded::new(checkpoint, end, config.dedupe_buffer_bytes);
                let (end_offset, superseded) =
                    build_map(&mut **map, &dirty, checkpoint, limit, &mut pass1_txns, &mut pace, stats, superseded)?;
                let spanned = crate::external::spans(crate::external::first_offset(closed, limit), limit);
                if stats.map_full && config.one_pass && spanned {
                    // The map filled: the section takes more than one pass of it. Map it again, all of it, with
                    // the external pass in the same buffer, rather than leave the rest to further passes.
                    stats.end_offset = end_offset;
                    let passes = stats.passes_needed().unwrap_or(2);
                    let (records_read, bytes_read) = (stats.pass1.records_read, stats.pass1.bytes_read);
                    let filled = map.kind().name().to_owned();
                    stats.fell_back = Some(FellBack {
                        map: filled,
                        refused_at: end_offset,
                        passes,
                        records_read,
                        bytes_read,
                        estimated: false,
                    });
                    stats.map_full = false;
                    stats.map = MapKind::External.name().to_owned();
                    // Its keys are of no use to pass 2 now (the stale set answers): its pages go first, and so does
                    // the set of what its puts superseded.
                    map.release();
                    drop(superseded);
                    let external = fallback.get_or_insert_with(|| {
                        External::new(config.dedupe_buffer_bytes, config.spill_dir.clone(), config.threads)
                    });
                    let below = below();
                    if let Some(m) = meter {
                        m.begin(STAGE_MAP, Some(below.iter().map(|s| s.size()).sum()));
                    }
                    let mut pass1_txns = Pass1Txns::new(txns, checkpoint, read_as_aborted);
                    let mapped = external.map(&below, checkpoint, limit, &mut pass1_txns, &mut pace, None)?;
                    stats.pass1.records_read += mapped.scanned.records;
                    stats.pass1.bytes_read += mapped.scanned.bytes;
                    (limit, Answers::Stale(mapped.stale))
                } else {
                    (end_offset, superseded.map_or(Answers::Map, Answers::Superseded))
                }
            }
            Strategy::External(external) => {
                let below = below();
                if let Some(m) = meter {
                    m.begin(STAGE_MAP, Some(below.iter().map(|s| s.size()).sum()));
                }
                let mapped = external.map(&below, checkpoint, limit, &mut pass1_txns, &mut pace, None)?;
                stats.pass1.records_read = mapped.scanned.records;
                stats.pass1.bytes_read = mapped.scanned.bytes;
                (limit, Answers::Stale(mapped.stale))
            }
        };
        pace.flush()?;
        stats.pass1.seconds = started.elapsed().as_secs_f64();
        Ok((end_offset, answers))
    }

    /// Where pass 2 asks whether a record was superseded.
    fn lookup<'a>(&'a self, answers: &'a Answers) -> Lookup<'a> {
        match (&self.strategy, answers) {
            // An external pass (the strategy's, or a full map's fallback) leaves its stale set.
            (_, Answers::Stale(s)) => Lookup::Stale(s),
            (Strategy::Map(m), Answers::Superseded(s)) => Lookup::Superseded(&**m, s),
            (Strategy::Map(m), Answers::Map) => Lookup::Map(&**m),
            // An external pass always leaves its stale set; without one nothing is stale.
            (Strategy::External(_), Answers::Map | Answers::Superseded(_)) => Lookup::Nothing,
        }
    }

    /// Pass 2 over every group, in parallel when the cleaner has several threads. Returns the replacements in
    /// base order.
    fn copy_groups(
        &self,
        cleaning: &Cleaning<'_>,
        groups: &[Vec<Arc<SealedSegment>>],
        cx: &CopyContext<'_>,
    ) -> Result<(Vec<Replacement>, CopyCounts)> {
        self.begin(STAGE_COPY, groups.iter().flatten().map(|s| s.size()).sum());
        if self.config.threads > 1 && groups.len() == 1 {
            // One group (a partition's first clean, its segments merged into one output): its segments are
            // judged on every thread. Several groups go to the threads whole, as before: splitting them one
            // after another would leave a group of one segment on one thread.
            return self.copy_groups_split(cleaning, groups, cx);
        }
        let threads = self.config.threads.min(groups.len()).max(1);
        let next = AtomicUsize::new(0);
        let work = || -> Result<ThreadCopies> {
            let mut counts = CopyCounts::default();
            let mut bufs = Buffers::default();
            let mut pace = self.pace();
            let take = || Some(next.fetch_add(1, Ordering::Relaxed)).filter(|&i| i < groups.len());
            let out = copy_and_finish(cleaning, groups, take, cx, &mut bufs, &mut counts, &mut pace)?;
            pace.settle();
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

    /// Pass 2 over every group in turn (one, where it is called), each on all the cleaner's threads
    /// ([`crate::pass2_split::copy_group_split`]). Returns the replacements in base order.
    fn copy_groups_split(
        &self,
        cleaning: &Cleaning<'_>,
        groups: &[Vec<Arc<SealedSegment>>],
        cx: &CopyContext<'_>,
    ) -> Result<(Vec<Replacement>, CopyCounts)> {
        let mut all = Vec::new();
        let mut counts = CopyCounts::default();
        let mut bufs = Buffers::default();
        let pace = || self.pace();
        for group in groups {
            let threads = self.config.threads;
            let copied =
                crate::pass2_split::copy_group_split(cleaning, group, threads, cx, &mut bufs, &mut counts, &pace)?;
            all.extend(copied);
        }
        Ok((all, counts))
    }

    fn record_map_stats(&self, stats: &mut CleanStats, gets: Probes) {
        // A map's pass that took the external pass (it filled, or `auto` took it at once) has its figures.
        let mut m = match &self.fallback {
            Some(external) if stats.map == MapKind::External.name() && self.strategy.kind() != MapKind::External => {
                external.stats()
            }
            _ => self.strategy.stats(),
        };
        m.lookups += gets.lookups;
        m.probes += gets.probes;
        m.probes_per_lookup = if m.lookups == 0 { 0.0 } else { m.probes as f64 / m.lookups as f64 };
        stats.offset_map = m;
    }
}

/// The offsets that bound a pass.
#[derive(Debug, Clone, Copy)]
struct Bounds {
    /// The cleaner checkpoint: the first dirty offset.
    checkpoint: u64,
    /// The first offset no pass may map (the active segment's base, the LSO, the lag bound).
    limit: u64,
    /// The base of the first segment no pass may rewrite.
    first_uncleanable_base: u64,
}

/// Pass 1 with a map over the dirty segments. Returns `end_offset` (the offset of the first keyed record the
/// map refused, or `limit` when the whole dirty section was mapped) and `superseded` with every offset the
/// puts superseded noted in it (none when the set could not be had, or pass 1 left too many batches unmapped
/// for pass 2 to judge by key).
#[allow(clippy::too_many_arguments, reason = "the pass's state, split from the cleaner to borrow it apart")]
fn build_map(
    map: &mut dyn OffsetMap,
    dirty: &[Arc<SealedSegment>],
    checkpoint: u64,
    limit: u64,
    txns: &mut Pass1Txns<'_>,
    pace: &mut Pace<'_>,
    stats: &mut CleanStats,
    mut superseded: Option<Superseded>,
) -> Result<(u64, Option<Superseded>)> {
    // The dirty section's offsets bound the keys it can map: a map sized for them, not for its budget.
    map.begin_bounded(checkpoint, limit.saturating_sub(checkpoint));
    let mut noted: Vec<u64> = Vec::with_capacity(BATCH);
    let mut put = |run: &[(&[u8], u64)]| match &mut superseded {
        Some(s) => {
            let put = map.put_batch_superseding(run, &mut noted);
            s.note(&noted);
            noted.clear();
            put
        }
        None => map.put_batch(run),
    };
    let (end, scanned) = map_dirty(dirty, checkpoint, limit, txns, pace, &mut put)?;
    stats.pass1.records_read = scanned.records;
    stats.pass1.bytes_read = scanned.bytes;
    stats.map_full = end.is_some_and(|e| e < limit);
    let superseded = match (superseded, txns.take_unmapped()) {
        (Some(mut s), Some(unmapped)) => {
            s.ask_the_map_for(unmapped);
            Some(s)
        }
        _ => None,
    };
    Ok((end.unwrap_or(limit).min(limit), superseded))
}

impl CopyCounts {
    fn into_stats(self, stats: &mut CleanStats) {
        stats.pass2.segments_read = self.segments_read;
        stats.pass2.batches_read = self.batches_read;
        stats.pass2.records_read = self.records_read;
        stats.pass2.bytes_read = self.bytes_read;
        stats.pass2.records_kept = self.records_kept;
        stats.pass2.bytes_kept = self.bytes_kept;
        stats.pass2.batches_copied = self.batches_copied;
        stats.pass2.batches_rewritten = self.batches_rewritten;
        stats.pass2.batches_removed = self.batches_removed;
        stats.pass2.empty_batches_kept = self.empty_batches_kept;
        stats.pass2.control_batches_kept = self.control_batches_kept;
        stats.pass2.markers_stamped = self.markers_stamped;
        stats.pass2.markers_removed = self.markers_removed;
        stats.pass2.aborted_batches_removed = self.aborted_batches_removed;
        stats.pass2.aborted_records_removed = self.aborted_records_removed;
        stats.tombstones_kept = self.tombstones_kept;
        stats.tombstones_stamped = self.tombstones_stamped;
        stats.tombstones_dropped = self.tombstones_dropped;
        stats.stale_dropped = self.stale_dropped;
        stats.invalid_records = self.invalid_records;
    }
}

/// What a dry run's outputs would hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct DryRun {
    /// Bytes of the batches the pass would keep (copied or rewritten) in the segments it re-copies.
    pub bytes_written: u64,
    /// Those batches.
    pub batches_written: u64,
}

/// What [`Cleaner::plan`] settles for pass 2.
struct Plan {
    /// The pass's statistics so far (pass 1's among them).
    stats: CleanStats,
    txns: TxnState,
    /// What pass 2 asks whether a record was superseded.
    answers: Answers,
    judge: Judge,
    /// The groups of closed segments pass 2 re-copies, each into one output.
    groups: Vec<Vec<Arc<SealedSegment>>>,
    producers: Arc<log_core::producers::ActiveProducers>,
}

/// What pass 1 leaves pass 2 to ask whether a record was superseded.
enum Answers {
    /// The map, by key.
    Map,
    /// The offsets the map's puts superseded (the map for the records pass 1 did not put).
    Superseded(Superseded),
    /// The external pass's stale offsets.
    Stale(StaleSet),
}

/// What one pass-2 thread copied: replacements by group index, and its counts.
type ThreadCopies = (Vec<(usize, Replacement)>, CopyCounts);

/// The producers Kafka's cleaner reads as aborted from a pass's first dirty offset `checkpoint` (see
/// [`log_core::Format::producers_read_as_aborted`]): from the closed segment holding it.
fn read_as_aborted_at(
    store: &dyn log_core::SegmentStore,
    closed: &[Arc<SealedSegment>],
    checkpoint: u64,
    config: &log_core::LogConfig,
    txns: &TxnState,
) -> Result<Vec<i64>> {
    let Some(segment) = closed.iter().rev().find(|s| s.base() <= checkpoint) else { return Ok(Vec::new()) };
    Ok(segment.format().producers_read_as_aborted(store, segment, checkpoint, config.index_interval_bytes, txns)?)
}

/// The offset whose batch ends a cleaning round for Kafka 4.4's cleaner: a batch whose next offset is the log's
/// high watermark is kept, emptied if need be (`Cleaner.cleanInto` passes `log.highWatermark()`; a broker's
/// high watermark is the log end once its followers have caught up). The broker's recorded high watermark when
/// it is known, else the log end, as a broker starting on the directory with no followers sets it.
fn round_end(snapshot: &log_core::LogSnapshot) -> u64 {
    snapshot.high_watermark().unwrap_or_else(|| snapshot.next_offset())
}

/// Whether `auto` ([`CleanerConfig::one_pass`]) takes the external pass without running `map` first: when the
/// dirty section `checkpoint..end` has more offsets than the map holds keys (else the map surely holds it),
/// and its segments are at least as large as the closed ones before it, which the external pass reads too
/// (pass 1 of the external pass reads them at about half the map's cost a byte: xxh3 and a sequential
/// append against MD5 and a random probe, so with the clean part at most the size of the dirty one, it
/// costs no more than the map's, and it saves the map's read of the section where the map fills).
///
/// Only for the maps whose capacity is exact (the slot maps; `fullkey`'s is an estimate): whether the map
/// would have filled is then told exactly from the keys the external pass mapped, and the files are the
/// map's wherever it would have held the section (one pass keeps the same records either way). And only
/// where the external pass spans the log up to `limit` ([`crate::external::spans`]); where it does not, a
/// full map does not fall back to it either, and the map's passes are warned of as with any map.
fn auto_goes_external(
    map: &dyn OffsetMap,
    closed: &[Arc<SealedSegment>],
    checkpoint: u64,
    end: u64,
    limit: u64,
) -> bool {
    let first = crate::external::first_offset(closed, limit);
    // The section's offsets from the log's first (a checkpoint below it counts none before it).
    if map.kind() == MapKind::FullKey
        || end.saturating_sub(checkpoint.max(first)) <= map.capacity() as u64
        || !crate::external::spans(first, limit)
    {
        return false;
    }
    let dirty: u64 = dirty_segments(closed, checkpoint, end).iter().map(|s| s.size()).sum();
    let below: u64 = closed.iter().filter(|s| s.base() < end).map(|s| s.size()).sum();
    dirty > 0 && below - dirty <= dirty
}

/// The closed segments pass 1 reads: those holding offsets at or above the checkpoint, based below `limit`.
fn dirty_segments(closed: &[Arc<SealedSegment>], checkpoint: u64, limit: u64) -> Vec<Arc<SealedSegment>> {
    closed.iter().filter(|s| s.last_offset().is_some_and(|l| l >= checkpoint) && s.base() < limit).cloned().collect()
}
