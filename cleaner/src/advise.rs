//! Sizing the dedupe buffer before it bites: for each map, the buffer one pass needs, the passes a given
//! buffer takes, bytes per key and the collision probability (`logcompact advise`).
//!
//! Two sources:
//! - **counts** ([`from_counts`]): distinct keys (and optionally records) of a dirty section. Without a record
//!   count the passes are a lower bound, `ceil(keys / capacity)`, reached when each key's records lie
//!   together; with one, keys are taken as spread uniformly over the records: a pass that can map `C` of
//!   `K` keys covers about `K · ln(K / (K − C))` records before the `C+1`-th distinct key refuses it.
//! - **a log** ([`from_log`]): one read of the dirty section (without changing anything) counts its distinct
//!   keys (exactly, while they fit in [`EXACT_KEYS`] 128-bit hashes; beyond, by HyperLogLog with its error
//!   stated) and replays pass 1 with every map in the given budget: each time the map refuses a key, a pass
//!   ends there and the next starts from that key, exactly as successive cleaning passes would (records at or
//!   after a pass's end offset are never changed by it). So the passes predicted for a log are the passes the
//!   cleaner takes on it.
//!
//! Kafka splits `log.cleaner.dedupe.buffer.size` evenly across `log.cleaner.threads`; the budget a map gets
//! is the total divided by the threads.

use hashbrown::HashSet;
use log_core::Log;
use log_core::progress::{Meter, Tally};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::hll::HyperLogLog;
use crate::map::hash::xxh3_128;
use crate::map::{BATCH, MapKind, OffsetMap};

/// Distinct keys are counted exactly up to this many (16 bytes of hash each), then estimated.
pub const EXACT_KEYS: usize = 16 << 20;

/// What a buffer means for one map.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MapAdvice {
    /// The map.
    pub map: MapKind,
    /// Distinct keys of the dirty section (an estimate when [`KeyCount::exact`] is false).
    pub keys: u64,
    /// Bytes per key (the mean key length, for `fullkey`).
    pub key_bytes: usize,
    /// The smallest buffer per cleaner thread that maps every key in one pass.
    pub buffer_bytes_for_one_pass: u64,
    /// The same for all threads together (`log.cleaner.dedupe.buffer.size`).
    pub total_buffer_bytes_for_one_pass: u64,
    /// The buffer each thread gets.
    pub buffer_bytes: u64,
    /// Keys that buffer holds in one pass (`u64::MAX` for the external pass, which holds any number).
    pub capacity: u64,
    /// Passes the buffer takes over the dirty section (`None` when it holds no key at all).
    pub passes: Option<u64>,
    /// How `passes` was found: `"lower bound"`, `"uniform keys"` or `"replayed on the log"`.
    pub passes_basis: &'static str,
    /// Bytes of buffer per key held.
    pub bytes_per_key: f64,
    /// Probability that two of the keys look alike to the map in one pass.
    pub collision_probability: f64,
    /// Seconds the passes would take, estimated from what a pass costs a record on this project's reference
    /// machine ([`reference_ns_per_record`]); `None` without a record count, or when the buffer holds no key.
    #[serde(default)]
    pub estimated_seconds: Option<f64>,
    /// For Kafka's own map (`skimpy`), as Kafka runs it: the most keys a pass can hold whatever the buffer,
    /// since Kafka caps a cleaner thread's buffer at [`KAFKA_MAX_THREAD_BUFFER`] (and a log is cleaned by one
    /// thread); `buffer_bytes` and the passes already count the cap. `None` for the other maps.
    pub kafka_thread_cap: Option<u64>,
}

/// A count of distinct keys.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct KeyCount {
    /// The count (rounded estimate when not exact).
    pub keys: u64,
    /// True when every key was counted.
    pub exact: bool,
    /// Relative standard error of the estimate (0 when exact).
    pub relative_error: f64,
}

/// What a log's dirty section needs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LogAdvice {
    /// First dirty offset (the cleaner checkpoint).
    pub first_dirty_offset: u64,
    /// Records of the dirty section.
    pub dirty_records: u64,
    /// Keyed records among them.
    pub keyed_records: u64,
    /// Bytes of the dirty section's frames.
    pub dirty_bytes: u64,
    /// Distinct keys.
    pub distinct: KeyCount,
    /// Per map.
    pub maps: Vec<MapAdvice>,
}

/// Settings shared by both sources.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    /// `log.cleaner.dedupe.buffer.size`, for all threads.
    pub total_bytes: u64,
    /// `log.cleaner.threads`.
    pub threads: u32,
    /// `log.cleaner.io.buffer.load.factor`.
    pub load_factor: f64,
}

impl Budget {
    /// Bytes each thread's map gets.
    pub fn per_thread(&self) -> u64 {
        self.total_bytes / u64::from(self.threads.max(1))
    }
}

/// The most a Kafka cleaner thread's dedupe buffer holds: Kafka gives each thread
/// `min(log.cleaner.dedupe.buffer.size / log.cleaner.threads, Int.MaxValue)` bytes.
pub const KAFKA_MAX_THREAD_BUFFER: u64 = i32::MAX as u64;

/// The buffer a thread of `map` gets from `budget`: Kafka's own map is capped as Kafka caps it.
fn thread_bytes(map: MapKind, budget: Budget) -> u64 {
    match map {
        MapKind::Skimpy => budget.per_thread().min(KAFKA_MAX_THREAD_BUFFER),
        _ => budget.per_thread(),
    }
}

/// What one pass costs a record, pass 1 and pass 2 in ns, on this project's reference machine (2 shared cores;
/// the quick report of 2026-12-06 at `b2272cb`: 4 million records over a million keys, memory backend, the
/// buffer each map needs for one pass; the external pass in the same buffer). A map's pass 2 asks a bit for
/// each record pass 1 put, so it costs what the external pass's does. An estimate for ranking choices, not a
/// promise: measure with `pass-bench` on your own machine.
pub fn reference_ns_per_record(map: MapKind) -> (f64, f64) {
    match map {
        MapKind::Skimpy => (116.0, 50.0),
        MapKind::FullKey => (96.0, 283.0),
        MapKind::Compact => (49.0, 50.0),
        MapKind::External => (93.0, 51.0),
    }
}

/// Estimated seconds to clean `records` records in `passes` passes with `map`: pass 1 maps each record once
/// over the passes; pass 2 of pass `i` of `P` re-copies the log up to where that pass ended, so pass 2 reads
/// the records `(P + 1) / 2` times on average. The external pass is one pass that also reads the clean
/// records (as pass 2 does).
pub fn estimated_seconds(map: MapKind, records: u64, passes: u64) -> f64 {
    let (p1, p2) = reference_ns_per_record(map);
    let p = passes.max(1) as f64;
    records as f64 * (p1 + p2 * (p + 1.0) / 2.0) / 1e9
}

fn advice(map: MapKind, keys: u64, key_bytes: usize, budget: Budget) -> MapAdvice {
    let per_thread = thread_bytes(map, budget);
    let one = map.bytes_for(usize::try_from(keys).unwrap_or(usize::MAX), budget.load_factor, key_bytes) as u64;
    let capacity =
        map.keys_for(usize::try_from(per_thread).unwrap_or(usize::MAX), budget.load_factor, key_bytes) as u64;
    MapAdvice {
        map,
        keys,
        key_bytes,
        buffer_bytes_for_one_pass: one,
        total_buffer_bytes_for_one_pass: one.saturating_mul(u64::from(budget.threads.max(1))),
        buffer_bytes: per_thread,
        capacity,
        passes: match (keys, capacity) {
            (0, _) => Some(0),
            (_, 0) => None,
            (k, c) => Some(k.div_ceil(c)),
        },
        passes_basis: "lower bound",
        bytes_per_key: if capacity == 0 || map == MapKind::External {
            0.0
        } else {
            per_thread as f64 / capacity as f64
        },
        collision_probability: map.collision_probability(keys, budget.load_factor),
        estimated_seconds: None,
        kafka_thread_cap: (map == MapKind::Skimpy).then(|| {
            map.keys_for(usize::try_from(KAFKA_MAX_THREAD_BUFFER).unwrap_or(usize::MAX), budget.load_factor, key_bytes)
                as u64
        }),
    }
}

/// Advice for a dirty section of `keys` distinct keys of `key_bytes` bytes, over `records` records when given
/// (keys then taken as uniformly spread).
///
/// # Errors
/// [`Error::InvalidConfig`] for no threads, a load factor outside its range, or fewer records than keys.
pub fn from_counts(keys: u64, key_bytes: usize, records: Option<u64>, budget: Budget) -> Result<Vec<MapAdvice>> {
    check(budget)?;
    if let Some(r) = records.filter(|&r| r < keys) {
        return Err(Error::invalid("--records", r, "at least the number of distinct keys (--keys)"));
    }
    Ok(MapKind::WITH_EXTERNAL
        .iter()
        .map(|&map| {
            let mut a = advice(map, keys, key_bytes, budget);
            if let Some(records) = records.filter(|&r| r >= keys && keys > 0)
                && a.capacity > 0
            {
                a.passes = Some(uniform_passes(keys, records, a.capacity));
                a.passes_basis = "uniform keys";
                a.estimated_seconds = a.passes.map(|p| estimated_seconds(map, records, p));
            }
            a
        })
        .collect())
}

/// Passes for `keys` keys spread uniformly over `records` records with `capacity` keys a pass.
fn uniform_passes(keys: u64, records: u64, capacity: u64) -> u64 {
    if capacity >= keys {
        return 1;
    }
    let (k, c) = (keys as f64, capacity as f64);
    let per_pass = k * (k / (k - c)).ln();
    (records as f64 / per_pass).ceil().max(1.0) as u64
}

fn check(budget: Budget) -> Result<()> {
    if budget.threads == 0 {
        return Err(Error::invalid("log.cleaner.threads", budget.threads, "at least 1"));
    }
    if !(crate::MIN_LOAD_FACTOR..=1.0).contains(&budget.load_factor) {
        return Err(Error::invalid(
            "log.cleaner.io.buffer.load.factor",
            budget.load_factor,
            "a load factor in [0.01, 1]",
        ));
    }
    Ok(())
}

/// One map replaying pass 1 over the dirty section.
struct Replay {
    map: Box<dyn OffsetMap>,
    passes: u64,
    budget: Budget,
    /// The offset the dirty section ends at: a pass from offset `o` puts at most `end - o` keys, so its map
    /// is sized for those (as the cleaner's own pass sizes it), never for the whole budget.
    end: u64,
}

impl Replay {
    /// Puts a run of keys, ending a pass (and starting the next at the refused key) as often as it takes.
    fn put(&mut self, mut run: &[(&[u8], u64)]) -> Result<()> {
        while !run.is_empty() {
            let put = self.map.put_batch(run);
            if put == run.len() {
                return Ok(());
            }
            // The map is full: this pass ends at the refused key; the next maps from there.
            let refused = run[put];
            self.passes += 1;
            self.map.begin_bounded(refused.1, self.end.saturating_sub(refused.1).max(1));
            if self.map.put_batch(&[refused]) == 0 {
                // Not even alone does the key fit (a `fullkey` budget smaller than one long key).
                let kind = self.map.kind();
                return Err(Error::BufferTooSmall {
                    bytes: usize::try_from(self.budget.per_thread()).unwrap_or(usize::MAX),
                    load_factor: self.budget.load_factor,
                    map: kind.name(),
                    min_bytes: kind.min_bytes(self.budget.load_factor, refused.0.len()),
                });
            }
            run = &run[put + 1..];
        }
        Ok(())
    }
}

/// The stage a [`Meter`] shows while [`from_log`] reads the dirty section.
pub const STAGE_ADVISE: &str = "dirty keys";

/// Advice for the dirty section of `log` (from the cleaner checkpoint to the active segment), read once
/// without changing anything, counted on `meter` (a stage of the dirty segments' bytes) when given.
///
/// # Errors
/// As [`from_counts`]; [`Error::OutOfMemory`] when a map's budget cannot be mapped; [`Error::Log`] when the
/// log cannot be read (corruption names the file and position).
pub fn from_log(log: &Log, budget: Budget, meter: Option<&Meter>) -> Result<LogAdvice> {
    from_log_until(log, budget, log.active_base(), meter)
}

/// As [`from_log`] for the dirty section a pass would take: the records below `end` (a pass's first
/// uncleanable offset, which `min.compaction.lag.ms` and open transactions may hold below the active
/// segment: [`log_core::DirtySection::first_uncleanable_offset`]).
///
/// # Errors
/// As [`from_log`].
pub fn from_log_until(log: &Log, budget: Budget, end: u64, meter: Option<&Meter>) -> Result<LogAdvice> {
    let checkpoint = log.cleaner_checkpoint();
    // The dirty section ends at the active segment at most: its offsets bound the keys a replay maps.
    let end = end.min(log.active_base());
    let mut tally = DirtyKeys::bounded(budget, checkpoint, end)?;
    let snapshot = log.snapshot();
    // Kafka: aborted batches are never mapped, and nothing at or past the last stable offset is cleanable.
    let txns = snapshot.transactions()?;
    let mut scratch = Vec::new();
    let mut buf: Vec<(Option<&'static [u8]>, u64, u64)> = Vec::new();
    let stop = end.min(txns.last_stable_offset);
    let dirty =
        || snapshot.closed().iter().filter(|s| s.base() < stop && s.last_offset().is_some_and(|l| l >= checkpoint));
    if let Some(m) = meter {
        m.begin(STAGE_ADVISE, Some(dirty().map(|s| s.size()).sum()));
    }
    let mut read = Tally::of(meter);
    for segment in dirty() {
        let mut scan = segment.scan_from(checkpoint, true);
        while let Some(window) = scan.next_window()? {
            let mut run: Vec<(Option<&[u8]>, u64, u64)> = crate::pass1::recycle(std::mem::take(&mut buf));
            for item in window.batches() {
                let placed = item?;
                let batch = placed.batch;
                read.add(batch.len() as u64, batch.record_count);
                if batch.last_offset < checkpoint
                    || batch.base_offset >= stop
                    || !crate::keep::mapped_by_pass1(&batch, &txns)
                {
                    continue;
                }
                let corrupt = |kind| log_core::Error::Corrupt {
                    segment: segment.name().to_owned(),
                    position: placed.position,
                    kind,
                };
                // A record's stored bytes: its frame (native), or its share of its batch (Kafka).
                let per = batch.len() as u64 / batch.record_count.max(1);
                if let Some(records) = batch.records_in_place() {
                    for rec in records.map_err(corrupt)? {
                        let rec = rec.map_err(corrupt)?;
                        if (checkpoint..stop).contains(&rec.offset) {
                            run.push((rec.key, rec.offset, per));
                        }
                    }
                } else {
                    // A compressed batch's records borrow the scratch buffer: the run so far goes first, then
                    // this batch's records in runs of their own (never all of them at once).
                    tally.add_all(run.drain(..))?;
                    let mut own = Vec::with_capacity(crate::map::BATCH);
                    for rec in batch.records(&mut scratch).map_err(corrupt)? {
                        let rec = rec.map_err(corrupt)?;
                        if (checkpoint..stop).contains(&rec.offset) {
                            own.push((rec.key, rec.offset, per));
                            if own.len() == crate::map::BATCH {
                                tally.add_all(own.drain(..))?;
                            }
                        }
                    }
                    tally.add_all(own.drain(..))?;
                }
            }
            tally.add_all(run.drain(..))?;
            buf = crate::pass1::recycle(run);
        }
    }
    Ok(tally.finish())
}

/// One read of a dirty section, whatever its format: counts records and distinct keys and replays pass 1 with
/// every map, fed a run of records at a time (keys may borrow from a buffer reused after each run).
pub struct DirtyKeys {
    budget: Budget,
    first_dirty_offset: u64,
    replays: Vec<Option<Replay>>,
    exact: Option<HashSet<u128>>,
    sketch: HyperLogLog,
    records: u64,
    keyed: u64,
    bytes: u64,
    key_bytes: u64,
    run: Vec<(&'static [u8], u64)>,
}

impl DirtyKeys {
    /// Starts a tally of a dirty section beginning at `first_dirty_offset`.
    ///
    /// # Errors
    /// As [`from_counts`]; [`Error::OutOfMemory`] when a map's budget cannot be mapped.
    pub fn new(budget: Budget, first_dirty_offset: u64) -> Result<Self> {
        Self::bounded(budget, first_dirty_offset, u64::MAX)
    }

    /// As [`DirtyKeys::new`] for a dirty section whose offsets end before `end_offset`: each replayed map is
    /// sized for the keys those offsets can hold, within the budget, as a pass sizes its map
    /// ([`OffsetMap::begin_bounded`]), so a large budget on a small section costs what the section needs (the
    /// passes found are the same: a map sized for every offset never fills before the budget's would).
    ///
    /// # Errors
    /// As [`DirtyKeys::new`].
    pub fn bounded(budget: Budget, first_dirty_offset: u64, end_offset: u64) -> Result<Self> {
        check(budget)?;
        let per_thread = usize::try_from(budget.per_thread()).unwrap_or(usize::MAX);
        // A map whose budget holds no key is not replayed: its advice says so (no number of passes).
        let mut replays: Vec<Option<Replay>> = Vec::with_capacity(MapKind::ALL.len());
        for map in MapKind::ALL {
            let per_thread = usize::try_from(thread_bytes(map, budget)).unwrap_or(per_thread);
            let built = match map.build(per_thread, budget.load_factor) {
                Ok(m) => Some(m),
                Err(crate::map::BuildError::TooSmall { .. } | crate::map::BuildError::NotAMap) => None,
                Err(crate::map::BuildError::OutOfMemory(source)) => {
                    return Err(Error::OutOfMemory { bytes: per_thread, source });
                }
            };
            replays.push(built.map(|mut m| {
                m.begin_bounded(first_dirty_offset, end_offset.saturating_sub(first_dirty_offset).max(1));
                Replay { map: m, passes: 1, budget, end: end_offset }
            }));
        }
        Ok(DirtyKeys {
            budget,
            first_dirty_offset,
            replays,
            exact: Some(HashSet::new()),
            sketch: HyperLogLog::default(),
            records: 0,
            keyed: 0,
            bytes: 0,
            key_bytes: 0,
            run: Vec::with_capacity(BATCH),
        })
    }

    /// Counts a run of records, each `(key, offset, stored bytes)`, handing their keys to the maps in
    /// batches.
    ///
    /// # Errors
    /// [`Error::BufferTooSmall`] when a key does not fit a map even alone.
    pub fn add_all<'a>(&mut self, records: impl IntoIterator<Item = (Option<&'a [u8]>, u64, u64)>) -> Result<()> {
        let mut run: Vec<(&'a [u8], u64)> = crate::pass1::recycle(std::mem::take(&mut self.run));
        let mut result = Ok(());
        for (key, offset, bytes) in records {
            self.records += 1;
            self.bytes += bytes;
            let Some(key) = key else { continue };
            self.keyed += 1;
            self.key_bytes += key.len() as u64;
            let h = xxh3_128(key);
            self.sketch.add_hash(h as u64);
            if let Some(set) = self.exact.as_mut() {
                set.insert(h);
                if set.len() > EXACT_KEYS {
                    self.exact = None;
                }
            }
            run.push((key, offset));
            if run.len() == BATCH {
                result = self.put_run(&mut run);
                if result.is_err() {
                    break;
                }
            }
        }
        if result.is_ok() {
            result = self.put_run(&mut run);
        }
        self.run = crate::pass1::recycle(run);
        result
    }

    fn put_run(&mut self, run: &mut Vec<(&[u8], u64)>) -> Result<()> {
        for r in self.replays.iter_mut().flatten() {
            r.put(run)?;
        }
        run.clear();
        Ok(())
    }

    /// Distinct keys so far.
    pub fn distinct(&self) -> KeyCount {
        match &self.exact {
            Some(set) => KeyCount { keys: set.len() as u64, exact: true, relative_error: 0.0 },
            None => KeyCount {
                keys: self.sketch.estimate().round() as u64,
                exact: false,
                relative_error: HyperLogLog::RELATIVE_ERROR,
            },
        }
    }

    /// The advice.
    pub fn finish(self) -> LogAdvice {
        let distinct = self.distinct();
        let mean = self.key_bytes.checked_div(self.keyed).map_or(16, |m| m.max(1) as usize);
        let keyed = self.keyed;
        let records = self.records;
        let mut maps: Vec<MapAdvice> = MapKind::ALL
            .iter()
            .zip(&self.replays)
            .map(|(&map, replay)| {
                let mut a = advice(map, distinct.keys, mean, self.budget);
                a.passes = replay.as_ref().map(|r| if keyed == 0 { 0 } else { r.passes });
                a.passes_basis = "replayed on the log";
                a.estimated_seconds = a.passes.map(|p| estimated_seconds(map, records, p));
                a
            })
            .collect();
        // The external pass takes one pass in any buffer that holds its smallest run.
        let mut external = advice(MapKind::External, distinct.keys, mean, self.budget);
        external.passes = (external.capacity > 0).then_some(u64::from(keyed > 0));
        external.passes_basis = "replayed on the log";
        external.estimated_seconds = external.passes.map(|p| estimated_seconds(MapKind::External, records, p));
        maps.push(external);
        LogAdvice {
            first_dirty_offset: self.first_dirty_offset,
            dirty_records: self.records,
            keyed_records: self.keyed,
            dirty_bytes: self.bytes,
            distinct,
            maps,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_external_pass_is_one_pass_in_any_buffer_and_estimated_below_many_passes() {
        let budget = Budget { total_bytes: 16 << 20, threads: 1, load_factor: 0.9 };
        let rows = from_counts(10_000_000, 16, Some(40_000_000), budget).expect("advice");
        let by = |m: MapKind| rows.iter().find(|a| a.map == m).expect("a row");
        let (compact, external) = (by(MapKind::Compact), by(MapKind::External));
        assert_eq!(external.passes, Some(1));
        assert!(compact.passes.is_some_and(|p| p >= 20), "{compact:?}");
        let (e, c) = (external.estimated_seconds.expect("time"), compact.estimated_seconds.expect("time"));
        assert!(e < c / 3.0, "{e} s against {c} s");
        // One pass of the external pass costs what one pass of its own does, the maps' many passes re-read.
        assert!((estimated_seconds(MapKind::Compact, 1_000_000, 1) - 0.099).abs() < 0.01);
        assert!(
            estimated_seconds(MapKind::Compact, 1_000_000, 3)
                > 2.0 * estimated_seconds(MapKind::Compact, 1_000_000, 1) * 0.7
        );
        // Without records there is no estimate.
        let rows = from_counts(10_000_000, 16, None, budget).expect("advice");
        assert!(rows.iter().all(|a| a.estimated_seconds.is_none()));
    }
}
