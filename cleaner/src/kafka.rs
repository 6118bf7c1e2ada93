//! Kafka's two passes over a Kafka partition directory, writing the compacted partition to another directory
//! (the source is never written), and `analyze`'s dry run.
//!
//! Pass 1 maps key → latest offset over the dirty section (the `cleaner-offset-checkpoint` to the active
//! segment) with any [`MapKind`], stopping where the map is full. Pass 2 copies every segment: a batch whose
//! records all stay is copied as bytes; one that loses records is re-encoded under its own header (base offset,
//! producer id, epoch and sequence, last offset delta: the batch still ends where it ended) and re-compressed
//! with its codec; one that loses every record goes, except the last batch of a producer, kept empty as
//! Kafka keeps it for the producer's state. Which record stays is decided by the one rule both formats share
//! (`pass::verdict`): the latest record of its key, and tombstones until the delete horizon that the first
//! pass keeping them sets on their batch (KIP-534).
//!
//! Transactional and control batches are copied whole and their keys are not mapped: removing aborted
//! records and old markers needs the producer state and transaction index Kafka keeps, which this tool does
//! not rebuild. So no record of a transaction ever removes another record. The active segment is copied as
//! it is (Kafka never cleans it).

use std::time::Instant;

use hashbrown::HashMap;
use log_core::SegmentStore;
use log_core::kafka::{
    Batch, BatchHeader, KafkaRecord, Partition, PartitionError, RecordToWrite, SegmentOut, write_batch,
};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::map::{BATCH, OffsetMap, Probes};
use crate::pass::{CopyCounts, Facts, Judge, Verdict, verdict};

/// Settings of one pass.
#[derive(Debug, Clone, Copy)]
pub struct KafkaPassOptions {
    /// The first dirty offset (Kafka's cleaner checkpoint for the partition; 0 when it has none).
    pub first_dirty_offset: i64,
    /// The pass's clock, ms since the epoch.
    pub now_ms: i64,
    /// `delete.retention.ms`.
    pub delete_retention_ms: i64,
    /// `segment.bytes`: adjacent closed segments whose sizes add up to at most this are merged into one output
    /// segment, named after the first (Kafka's `groupSegmentsBySize`); the active segment is never merged.
    pub segment_bytes: u64,
    /// `min.compaction.lag.ms`: a closed segment holding a batch younger than this (by its max timestamp), and
    /// every segment after it, is copied as it is, as the active segment is.
    pub min_compaction_lag_ms: i64,
}

/// The first offset a pass may not clean: the base of the first closed segment holding a batch whose max
/// timestamp is within `min.compaction.lag.ms` of now, else the active segment's base (Kafka's first
/// uncleanable offset).
///
/// # Errors
/// [`Error::Kafka`] for a damaged batch.
pub fn first_uncleanable(partition: &Partition, options: &KafkaPassOptions) -> Result<i64> {
    let active = partition.active_base();
    if options.min_compaction_lag_ms <= 0 {
        return Ok(active);
    }
    let young = options.now_ms.saturating_sub(options.min_compaction_lag_ms);
    for seg in partition.segments.iter().take(partition.segments.len().saturating_sub(1)) {
        for item in seg.batches() {
            let (_, batch) = item.map_err(Error::Kafka)?;
            if batch.header.max_timestamp > young {
                return Ok(seg.base);
            }
        }
    }
    Ok(active)
}

/// What a pass did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct KafkaPassStats {
    /// The first dirty offset.
    pub first_dirty_offset: i64,
    /// Records at or past this offset were not mapped by this pass (the map was full there, or the active
    /// segment starts there).
    pub end_offset: i64,
    /// True when the map filled before the active segment: another pass is needed.
    pub map_full: bool,
    /// Keys mapped.
    pub keys_mapped: u64,
    /// Batches read in pass 2.
    pub batches_read: u64,
    /// Batches copied as bytes.
    pub batches_copied: u64,
    /// Batches re-encoded.
    pub batches_rewritten: u64,
    /// Batches that lost every record and went.
    pub batches_removed: u64,
    /// Emptied batches kept for their producer's state.
    pub empty_batches_kept: u64,
    /// Transactional or control batches copied whole.
    pub transactional_batches_kept: u64,
    /// Records read in pass 2.
    pub records_read: u64,
    /// Records kept.
    pub records_kept: u64,
    /// Bytes read in pass 2.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Records dropped because a later record has their key.
    pub stale_dropped: u64,
    /// Tombstones kept.
    pub tombstones_kept: u64,
    /// Tombstones whose batch got a delete horizon in this pass.
    pub tombstones_stamped: u64,
    /// Tombstones dropped (their horizon passed).
    pub tombstones_dropped: u64,
    /// Unkeyed records dropped from the dirty section (a compacted topic refuses them; Kafka drops them too).
    pub unkeyed_dropped: u64,
    /// Segments written.
    pub segments_written: u64,
    /// Segments left empty and not written.
    pub segments_removed: u64,
    /// Source segments merged into the output segment of the one before them.
    pub segments_merged: u64,
    /// Seconds of pass 1.
    pub pass1_seconds: f64,
    /// Seconds of pass 2.
    pub pass2_seconds: f64,
    /// Bytes of a torn tail at the end of the active segment that were not copied.
    pub torn_tail_bytes: u64,
}

fn to_u64(offset: i64, file: &str) -> Result<u64> {
    u64::try_from(offset)
        .map_err(|_| Error::Kafka(PartitionError::NotKafka { what: format!("{file}: a negative offset {offset}") }))
}

/// Pass 1: maps the keys of the dirty section of `partition` into `map`. Returns the end offset (the first
/// offset not mapped) and whether the map filled, and the last batch of every producer (for pass 2).
fn map_dirty(
    partition: &Partition,
    map: &mut dyn OffsetMap,
    first_dirty: i64,
    active: i64,
) -> Result<(i64, bool, HashMap<i64, i64>)> {
    map.begin(to_u64(first_dirty, "checkpoint")?);
    let mut last_of_producer = HashMap::new();
    let mut end = active;
    let mut full = false;
    let mut scratch = Vec::new();
    let mut run_buf: Vec<(&'static [u8], u64)> = Vec::with_capacity(BATCH);
    // Pass 2 reads, and checksums, every batch this pass reads before anything is written: one CRC a batch.
    for placed in partition.scan_unverified() {
        let placed = placed.map_err(Error::Kafka)?;
        let h = placed.batch.header;
        if h.producer_id >= 0 {
            last_of_producer.insert(h.producer_id, h.base_offset);
        }
        if full || h.base_offset >= active || h.last_offset() < first_dirty || h.is_transactional() || h.is_control() {
            continue;
        }
        let file = &partition.segments[placed.segment].name;
        let mut run: Vec<(&[u8], u64)> = recycle(std::mem::take(&mut run_buf));
        for rec in placed.batch.records(&mut scratch).map_err(|problem| batch_error(file, placed.position, problem))? {
            let rec = rec.map_err(|problem| batch_error(file, placed.position, problem))?;
            let Some(key) = rec.key else { continue };
            if rec.offset < first_dirty {
                continue;
            }
            run.push((key, to_u64(rec.offset, file)?));
        }
        // Keys borrow from this batch's scratch: hand them over before the next batch.
        let mut at = 0;
        while at < run.len() {
            let put = map.put_batch(&run[at..]);
            at += put;
            if at < run.len() {
                full = true;
                end = i64::try_from(run[at].1).unwrap_or(i64::MAX);
                break;
            }
        }
        run_buf = recycle(run);
    }
    Ok((end, full, last_of_producer))
}

/// An empty vector of another element type on the same allocation (the standard library collects in place
/// when the layouts match), so per-batch vectors of borrowed records cost no allocation.
pub(crate) fn recycle<T, U>(mut v: Vec<T>) -> Vec<U> {
    v.clear();
    v.into_iter().map(|_| unreachable_empty()).collect()
}

fn unreachable_empty<U>() -> U {
    unreachable!("the vector is empty")
}

fn batch_error(file: &str, position: u64, problem: log_core::kafka::BatchProblem) -> Error {
    Error::Kafka(PartitionError::Batch { file: file.to_owned(), position, problem })
}

/// Where pass 2's batches go: a directory, or only counted (a dry run).
pub trait BatchSink {
    /// A segment based at `base` begins.
    ///
    /// # Errors
    /// The store's error.
    fn begin_segment(&mut self, base: i64) -> Result<()>;
    /// One batch of the current segment.
    ///
    /// # Errors
    /// The store's error.
    fn batch(&mut self, header: &BatchHeader, bytes: &[u8]) -> Result<()>;
    /// The current segment ends; `kept` is false when it received no batch (it is then not written).
    ///
    /// # Errors
    /// The store's error.
    fn end_segment(&mut self, kept: bool) -> Result<()>;
}

/// Writes segments with Kafka's indexes into a store.
pub struct StoreSink<'s> {
    store: &'s dyn SegmentStore,
    current: Option<(i64, SegmentOut)>,
}

impl<'s> StoreSink<'s> {
    /// Writes into `store` (an empty directory).
    pub fn new(store: &'s dyn SegmentStore) -> Self {
        StoreSink { store, current: None }
    }
}

impl BatchSink for StoreSink<'_> {
    fn begin_segment(&mut self, base: i64) -> Result<()> {
        self.current = Some((base, SegmentOut::create(self.store, base).map_err(Error::Kafka)?));
        Ok(())
    }

    fn batch(&mut self, header: &BatchHeader, bytes: &[u8]) -> Result<()> {
        match self.current.as_mut() {
            Some((_, out)) => out.append(header, bytes).map_err(Error::Kafka),
            None => Ok(()),
        }
    }

    fn end_segment(&mut self, kept: bool) -> Result<()> {
        let Some((base, out)) = self.current.take() else { return Ok(()) };
        if kept {
            out.finish(self.store).map_err(Error::Kafka)
        } else {
            drop(out);
            let name = log_core::kafka::file_name(base, ".log.cleaned");
            self.store.delete(&name).map_err(|source| Error::Kafka(PartitionError::Io { op: "delete", name, source }))
        }
    }
}

/// Counts what would be written.
#[derive(Debug, Default)]
pub struct CountingSink {
    /// Bytes.
    pub bytes: u64,
    /// Batches.
    pub batches: u64,
}

impl BatchSink for CountingSink {
    fn begin_segment(&mut self, _base: i64) -> Result<()> {
        Ok(())
    }
    fn batch(&mut self, _header: &BatchHeader, bytes: &[u8]) -> Result<()> {
        self.bytes += bytes.len() as u64;
        self.batches += 1;
        Ok(())
    }
    fn end_segment(&mut self, _kept: bool) -> Result<()> {
        Ok(())
    }
}

/// One pass over `partition` with `map`, its output into `sink`.
///
/// # Errors
/// [`Error::Kafka`] for a damaged partition (file and byte named) or a failed write.
pub fn clean_partition(
    partition: &Partition,
    map: &mut dyn OffsetMap,
    options: KafkaPassOptions,
    sink: &mut dyn BatchSink,
) -> Result<KafkaPassStats> {
    let started = Instant::now();
    let active = first_uncleanable(partition, &options)?;
    let (end, full, last_of_producer) = map_dirty(partition, map, options.first_dirty_offset, active)?;
    let mut stats = KafkaPassStats {
        first_dirty_offset: options.first_dirty_offset,
        end_offset: end,
        map_full: full,
        keys_mapped: map.len() as u64,
        pass1_seconds: started.elapsed().as_secs_f64(),
        ..KafkaPassStats::default()
    };
    let started = Instant::now();
    let judge = Judge {
        end_offset: u64::try_from(end).unwrap_or(0),
        now: options.now_ms,
        horizon: options.now_ms.saturating_add(options.delete_retention_ms),
        purge: false,
    };
    let mut counts = CopyCounts::default();
    let mut scratch = Vec::new();
    let mut encode_scratch = Vec::new();
    let mut out = Vec::new();
    let mut records_buf: Vec<KafkaRecord<'static>> = Vec::new();
    let mut keys_buf: Vec<&'static [u8]> = Vec::new();
    let mut latest: Vec<Option<u64>> = Vec::new();
    let mut kept_buf: Vec<RecordToWrite<'static>> = Vec::new();
    let mut probes = Probes::default();
    let mut current_segment = None;
    let mut wrote = false;
    let last = partition.segments.len().saturating_sub(1);
    let (mut group_base, mut group_bytes) = (0i64, 0u64);
    let mut scan = partition.scan();
    for placed in scan.by_ref() {
        let placed = placed.map_err(Error::Kafka)?;
        if current_segment != Some(placed.segment) {
            let seg = &partition.segments[placed.segment];
            let size = seg.bytes.len() as u64;
            // The offsets of a group must stay within an index entry's i32 relative offset.
            let group_end = partition.segments.get(placed.segment + 1).map_or(i64::MAX, |n| n.base);
            let merge = current_segment.is_some()
                && placed.segment != last
                && seg.base < active
                && group_bytes.saturating_add(size) <= options.segment_bytes
                && group_end.saturating_sub(group_base) <= i64::from(i32::MAX);
            if merge {
                group_bytes += size;
                stats.segments_merged += 1;
            } else {
                if current_segment.is_some() {
                    end_segment(sink, wrote, &mut stats)?;
                }
                sink.begin_segment(seg.base)?;
                (group_base, group_bytes) = (seg.base, size);
                wrote = false;
            }
            current_segment = Some(placed.segment);
        }
        let (h, batch) = (placed.batch.header, placed.batch);
        stats.batches_read += 1;
        stats.bytes_read += batch.bytes.len() as u64;
        stats.records_read += h.records_count.max(0) as u64;
        // Kept as they are: the active segment, batches the map did not reach, transactions and markers.
        let whole = h.base_offset >= active || h.base_offset >= end || h.is_transactional() || h.is_control();
        if whole {
            if h.is_transactional() || h.is_control() {
                stats.transactional_batches_kept += 1;
            }
            copy_batch(sink, &batch, &mut stats)?;
            wrote = true;
            stats.records_kept += h.records_count.max(0) as u64;
            continue;
        }
        let file = &partition.segments[placed.segment].name;
        let mut records: Vec<KafkaRecord<'_>> = recycle(std::mem::take(&mut records_buf));
        let mut keys: Vec<&[u8]> = recycle(std::mem::take(&mut keys_buf));
        let mut kept: Vec<RecordToWrite<'_>> = recycle(std::mem::take(&mut kept_buf));
        let outcome = filter_batch(
            &batch,
            &mut scratch,
            BatchWork { records: &mut records, keys: &mut keys, latest: &mut latest, kept: &mut kept },
            FilterContext { map: &*map, judge, end, file, position: placed.position },
            &mut counts,
            &mut probes,
        );
        let decision = match outcome {
            Ok((all_kept, stamp)) => {
                stats.records_kept += kept.len() as u64;
                let producer_last = h.producer_id >= 0 && last_of_producer.get(&h.producer_id) == Some(&h.base_offset);
                if all_kept && !stamp {
                    Ok(Decision::Copy)
                } else if kept.is_empty() && !producer_last {
                    Ok(Decision::Remove)
                } else {
                    let horizon = h.delete_horizon().or(stamp.then_some(judge.horizon));
                    let codec = h.compression().unwrap_or(log_core::kafka::Compression::None);
                    out.clear();
                    write_batch(&h, codec, horizon, &kept, &mut out, &mut encode_scratch)
                        .map(|()| Decision::Rewrite { empty: kept.is_empty() })
                        .map_err(|e| {
                            Error::Kafka(PartitionError::NotKafka {
                                what: format!("{file} at byte {}: {e}", placed.position),
                            })
                        })
                }
            }
            Err(e) => Err(e),
        };
        records_buf = recycle(records);
        keys_buf = recycle(keys);
        kept_buf = recycle(kept);
        match decision? {
            Decision::Copy => copy_batch(sink, &batch, &mut stats)?,
            Decision::Remove => {
                stats.batches_removed += 1;
                continue;
            }
            Decision::Rewrite { empty } => {
                stats.empty_batches_kept += u64::from(empty);
                // The header just written; its CRC was computed over these very bytes.
                let header = BatchHeader::parse(&out).map_err(|p| batch_error(file, placed.position, p))?;
                sink.batch(&header, &out)?;
                stats.batches_rewritten += 1;
                stats.bytes_written += out.len() as u64;
            }
        }
        wrote = true;
    }
    // The active segment is always written, empty or not: it holds the partition's next offset in its name.
    if current_segment != Some(last) {
        if current_segment.is_some() {
            end_segment(sink, wrote, &mut stats)?;
        }
        sink.begin_segment(partition.active_base())?;
    }
    end_segment(sink, true, &mut stats)?;
    stats.torn_tail_bytes = scan.torn_tail.as_ref().map_or(0, |t| t.bytes);
    stats.stale_dropped = counts.stale_dropped;
    stats.tombstones_kept = counts.tombstones_kept;
    stats.tombstones_stamped = counts.tombstones_stamped;
    stats.tombstones_dropped = counts.tombstones_dropped;
    stats.unkeyed_dropped = counts.invalid_records;
    stats.pass2_seconds = started.elapsed().as_secs_f64();
    Ok(stats)
}

/// What pass 2 does with a batch.
enum Decision {
    Copy,
    Remove,
    Rewrite { empty: bool },
}

/// The per-batch vectors pass 2 reuses.
struct BatchWork<'v, 'r> {
    records: &'v mut Vec<KafkaRecord<'r>>,
    keys: &'v mut Vec<&'r [u8]>,
    latest: &'v mut Vec<Option<u64>>,
    kept: &'v mut Vec<RecordToWrite<'r>>,
}

/// What pass 2 judges a batch with.
struct FilterContext<'a> {
    map: &'a dyn OffsetMap,
    judge: Judge,
    end: i64,
    file: &'a str,
    position: u64,
}

/// Decodes a batch's records and keeps those the rule keeps (in `work.kept`). Returns whether every record
/// was kept and whether a tombstone needs the batch to get a delete horizon.
fn filter_batch<'r>(
    batch: &Batch<'r>,
    scratch: &'r mut Vec<u8>,
    work: BatchWork<'_, 'r>,
    cx: FilterContext<'_>,
    counts: &mut CopyCounts,
    probes: &mut Probes,
) -> Result<(bool, bool)> {
    let h = batch.header;
    let BatchWork { records, keys, latest, kept } = work;
    // The records borrow `scratch` (or the segment, when the batch is not compressed) for `'r`.
    let mut scan = batch.records(scratch).map_err(|p| batch_error(cx.file, cx.position, p))?;
    for rec in scan.by_ref() {
        records.push(rec.map_err(|p| batch_error(cx.file, cx.position, p))?);
    }
    keys.extend(records.iter().filter(|r| r.offset < cx.end).filter_map(|r| r.key));
    latest.clear();
    latest.resize(keys.len(), None);
    for (k, l) in keys.chunks(BATCH).zip(latest.chunks_mut(BATCH)) {
        cx.map.get_batch(k, l, probes);
    }
    let mut looked_up = latest.iter();
    let mut stamp = false;
    for r in records.iter() {
        let mapped = if r.offset < cx.end && r.key.is_some() { looked_up.next().copied().flatten() } else { None };
        let facts = Facts {
            offset: to_u64(r.offset, cx.file)?,
            keyed: r.key.is_some(),
            tombstone: r.value.is_none(),
            delete_horizon: h.delete_horizon(),
        };
        match verdict(facts, mapped, cx.judge, counts) {
            Verdict::Drop => {}
            Verdict::Keep => kept.push(r.into()),
            Verdict::Stamp(_) => {
                stamp = true;
                kept.push(r.into());
            }
        }
    }
    Ok((kept.len() == records.len(), stamp))
}

fn copy_batch(sink: &mut dyn BatchSink, batch: &Batch<'_>, stats: &mut KafkaPassStats) -> Result<()> {
    sink.batch(&batch.header, batch.bytes)?;
    stats.batches_copied += 1;
    stats.bytes_written += batch.bytes.len() as u64;
    Ok(())
}

fn end_segment(sink: &mut dyn BatchSink, wrote: bool, stats: &mut KafkaPassStats) -> Result<()> {
    sink.end_segment(wrote)?;
    if wrote {
        stats.segments_written += 1;
    } else {
        stats.segments_removed += 1;
    }
    Ok(())
}

/// What `analyze` reports on a partition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KafkaAnalysis {
    /// Segment files.
    pub segments: u64,
    /// Batches.
    pub batches: u64,
    /// Batches per codec name.
    pub batches_by_codec: std::collections::BTreeMap<&'static str, u64>,
    /// Transactional data batches.
    pub transactional_batches: u64,
    /// Control batches (transaction markers).
    pub control_batches: u64,
    /// Batches with a delete horizon already set.
    pub batches_with_delete_horizon: u64,
    /// Records.
    pub records: u64,
    /// Records with a key.
    pub keyed_records: u64,
    /// Records without a key.
    pub unkeyed_records: u64,
    /// Tombstones (keyed, null value).
    pub tombstones: u64,
    /// The first and last offsets, and the next offset (the last batch's last offset + 1).
    pub first_offset: Option<i64>,
    /// The largest offset a batch stands for.
    pub last_offset: Option<i64>,
    /// Bytes of all segments.
    pub bytes: u64,
    /// Bytes of the active segment (never cleaned).
    pub active_bytes: u64,
    /// Bytes before the first dirty offset (already through the cleaner).
    pub clean_bytes: u64,
    /// Bytes from the first dirty offset to the active segment.
    pub dirty_bytes: u64,
    /// `dirty / (clean + dirty)`, Kafka's cleanable ratio.
    pub dirty_ratio: f64,
    /// The first dirty offset used, and where it came from.
    pub first_dirty_offset: i64,
    /// `"cleaner-offset-checkpoint"`, `"--checkpoint"` or `"none (whole log dirty)"`.
    pub checkpoint_source: String,
    /// Records a full compaction now would keep (every pass until clean, exact keys).
    pub records_after_compaction: u64,
    /// Bytes it would write.
    pub bytes_after_compaction: u64,
    /// Bytes it would reclaim.
    pub bytes_reclaimed: u64,
    /// Bytes of a torn tail at the end of the active segment.
    pub torn_tail_bytes: u64,
    /// Distinct keys, records and per-map buffer figures of the dirty section.
    pub dirty: crate::advise::LogAdvice,
    /// What a pass leaves alone and why.
    pub notes: Vec<String>,
}

/// Reads `partition` once for its counts and the dirty section's keys (per map: the buffer one pass needs,
/// the passes `budget` takes), then dry-runs a full compaction with an exact map into a counting sink.
///
/// # Errors
/// [`Error::Kafka`] for a damaged partition; as [`crate::advise::from_counts`] for a bad budget.
pub fn analyze_partition(
    partition: &Partition,
    first_dirty_offset: i64,
    checkpoint_source: String,
    budget: crate::advise::Budget,
    options: KafkaPassOptions,
) -> Result<KafkaAnalysis> {
    let active = partition.active_base();
    let mut a = KafkaAnalysis {
        segments: partition.segments.len() as u64,
        batches: 0,
        batches_by_codec: Default::default(),
        transactional_batches: 0,
        control_batches: 0,
        batches_with_delete_horizon: 0,
        records: 0,
        keyed_records: 0,
        unkeyed_records: 0,
        tombstones: 0,
        first_offset: None,
        last_offset: None,
        bytes: partition.segments.iter().map(|s| s.bytes.len() as u64).sum(),
        active_bytes: partition.segments.last().map_or(0, |s| s.bytes.len() as u64),
        clean_bytes: 0,
        dirty_bytes: 0,
        dirty_ratio: 0.0,
        first_dirty_offset,
        checkpoint_source,
        records_after_compaction: 0,
        bytes_after_compaction: 0,
        bytes_reclaimed: 0,
        torn_tail_bytes: 0,
        dirty: crate::advise::LogAdvice {
            first_dirty_offset: 0,
            dirty_records: 0,
            keyed_records: 0,
            dirty_bytes: 0,
            distinct: crate::advise::KeyCount { keys: 0, exact: true, relative_error: 0.0 },
            maps: Vec::new(),
        },
        notes: Vec::new(),
    };
    let mut tally = crate::advise::DirtyKeys::new(budget, to_u64(first_dirty_offset.max(0), "checkpoint")?)?;
    let mut scratch = Vec::new();
    let mut run_buf: Vec<(Option<&'static [u8]>, u64, u64)> = Vec::new();
    let mut scan = partition.scan();
    for placed in scan.by_ref() {
        let placed = placed.map_err(Error::Kafka)?;
        let h = placed.batch.header;
        let file = &partition.segments[placed.segment].name;
        a.batches += 1;
        let codec = h.compression().map_or("unknown", log_core::kafka::Compression::name);
        *a.batches_by_codec.entry(codec).or_default() += 1;
        a.transactional_batches += u64::from(h.is_transactional() && !h.is_control());
        a.control_batches += u64::from(h.is_control());
        a.batches_with_delete_horizon += u64::from(h.delete_horizon().is_some());
        a.first_offset.get_or_insert(h.base_offset);
        a.last_offset = Some(h.last_offset());
        let size = placed.batch.bytes.len() as u64;
        let in_active = h.base_offset >= active;
        let dirty = !in_active && h.last_offset() >= first_dirty_offset;
        if !in_active {
            if dirty {
                a.dirty_bytes += size;
            } else {
                a.clean_bytes += size;
            }
        }
        let mapped = dirty && !h.is_transactional() && !h.is_control();
        let mut run: Vec<(Option<&[u8]>, u64, u64)> = recycle(std::mem::take(&mut run_buf));
        for rec in placed.batch.records(&mut scratch).map_err(|p| batch_error(file, placed.position, p))? {
            let rec = rec.map_err(|p| batch_error(file, placed.position, p))?;
            a.records += 1;
            match rec.key {
                Some(_) => a.keyed_records += 1,
                None => a.unkeyed_records += 1,
            }
            a.tombstones += u64::from(rec.key.is_some() && rec.value.is_none() && !h.is_control());
            if mapped && rec.offset >= first_dirty_offset {
                run.push((rec.key, to_u64(rec.offset, file)?, rec.body.len() as u64));
            }
        }
        tally.add_all(run.drain(..))?;
        run_buf = recycle(run);
    }
    a.torn_tail_bytes = scan.torn_tail.as_ref().map_or(0, |t| t.bytes);
    a.dirty = tally.finish();
    a.dirty_ratio = if a.clean_bytes + a.dirty_bytes == 0 {
        0.0
    } else {
        a.dirty_bytes as f64 / (a.clean_bytes + a.dirty_bytes) as f64
    };
    // The dry run: an exact map that grows as it needs (nothing is allocated for keys that are not there).
    let mut map = crate::map::MapKind::FullKey
        .build(1 << 40, 0.9)
        .map_err(|e| Error::invalid("dry-run map", format!("{e:?}"), "an exact map"))?;
    let mut first = first_dirty_offset;
    let sink = loop {
        let mut sink = CountingSink::default();
        let stats = clean_partition(
            partition,
            &mut *map,
            KafkaPassOptions { first_dirty_offset: first, ..options },
            &mut sink,
        )?;
        a.records_after_compaction = stats.records_kept;
        if !stats.map_full {
            break sink;
        }
        first = stats.end_offset;
    };
    a.bytes_after_compaction = sink.bytes;
    a.bytes_reclaimed = a.bytes.saturating_sub(a.torn_tail_bytes).saturating_sub(sink.bytes);
    if a.transactional_batches + a.control_batches > 0 {
        a.notes.push(format!(
            "{} transactional and {} control batches are kept whole: removing aborted records and old markers needs \
             Kafka's producer state and transaction index, which this tool does not rebuild",
            a.transactional_batches, a.control_batches
        ));
    }
    if a.unkeyed_records > 0 {
        a.notes.push(format!(
            "{} records have no key: a compacted topic refuses them, and a pass drops those in the dirty section",
            a.unkeyed_records
        ));
    }
    a.notes.push(format!("the active segment ({} bytes) is never cleaned", a.active_bytes));
    Ok(a)
}
