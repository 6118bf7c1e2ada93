//! `analyze`: what a log holds and what compaction would do to it, read without changing anything, in either
//! format: counts of segments, batches (per codec, transactional, control, with a delete horizon), records
//! (keyed, unkeyed, tombstones), the clean, dirty and active bytes and Kafka's dirty ratio, the buffer one pass
//! needs per map and the passes a buffer takes (replayed on the log, [`crate::advise`]), and a dry run of a full
//! compaction (both passes with an exact map, nothing written) for the records and bytes it would keep.

use std::collections::BTreeMap;
use std::sync::Arc;

use log_core::{Format, Log, SegmentScan};
use serde::Serialize;

use crate::advise::{Budget, LogAdvice};
use crate::clock::Clock;
use crate::error::Result;
use crate::{Cleaner, CleanerConfig, MapKind, PassOptions};

/// What `analyze` reports on a log.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis {
    /// The segment format.
    pub format: Format,
    /// Segment files (the active one included).
    pub segments: u64,
    /// Batches (records, in the native format).
    pub batches: u64,
    /// Kafka batches per codec name.
    pub batches_by_codec: BTreeMap<&'static str, u64>,
    /// Kafka transactional data batches.
    pub transactional_batches: u64,
    /// Kafka control batches (transaction markers).
    pub control_batches: u64,
    /// Batches with a delete horizon set.
    pub batches_with_delete_horizon: u64,
    /// Records.
    pub records: u64,
    /// Records with a key.
    pub keyed_records: u64,
    /// Records without a key.
    pub unkeyed_records: u64,
    /// Tombstones (keyed, null value, not a control record).
    pub tombstones: u64,
    /// The first offset of the first batch.
    pub first_offset: Option<u64>,
    /// The last offset a batch stands for.
    pub last_offset: Option<u64>,
    /// Bytes of all segments.
    pub bytes: u64,
    /// Bytes of the active segment (never cleaned).
    pub active_bytes: u64,
    /// Bytes of closed segments already through the cleaner.
    pub clean_bytes: u64,
    /// Bytes of closed segments a pass may take.
    pub dirty_bytes: u64,
    /// `dirty / (clean + dirty)`, Kafka's cleanable ratio.
    pub dirty_ratio: f64,
    /// The first dirty offset (the cleaner checkpoint).
    pub first_dirty_offset: u64,
    /// Where the checkpoint was read from.
    pub checkpoint_source: String,
    /// Records a full compaction now would keep.
    pub records_after_compaction: u64,
    /// Bytes it would leave.
    pub bytes_after_compaction: u64,
    /// Bytes it would reclaim.
    pub bytes_reclaimed: u64,
    /// Bytes of a torn tail at the end of the active segment.
    pub torn_tail_bytes: u64,
    /// Distinct keys, records and per-map buffer figures of the dirty section.
    pub dirty: LogAdvice,
    /// What a pass leaves alone, and why.
    pub notes: Vec<String>,
}

/// The most memory the dry run's exact map takes.
pub const DRY_RUN_BYTES: usize = 1 << 30;

/// Analyzes `log` (open read-only, or not): one scan for the counts, one read of the dirty section for the
/// keys (each map replayed in `budget`), and a dry run of a full compaction with an exact map of at most
/// [`DRY_RUN_BYTES`] (beyond, a first pass's figures, said in the notes).
///
/// # Errors
/// [`crate::Error::Log`] for damage (file and byte named); as [`crate::advise::from_counts`] for a bad budget.
pub fn analyze(
    log: &Log,
    checkpoint_source: String,
    budget: Budget,
    options: PassOptions,
    clock: Arc<dyn Clock>,
) -> Result<Analysis> {
    let snapshot = log.snapshot();
    let checkpoint = log.cleaner_checkpoint();
    let section = log_core::DirtySection::of(&snapshot, checkpoint, clock.now_ms(), options.min_compaction_lag_ms);
    let mut a = Analysis {
        format: log.format(),
        segments: snapshot.closed().len() as u64 + 1,
        batches: 0,
        batches_by_codec: BTreeMap::new(),
        transactional_batches: 0,
        control_batches: 0,
        batches_with_delete_horizon: 0,
        records: 0,
        keyed_records: 0,
        unkeyed_records: 0,
        tombstones: 0,
        first_offset: None,
        last_offset: None,
        bytes: snapshot.closed().iter().map(|s| s.size()).sum::<u64>() + snapshot.active_len(),
        active_bytes: snapshot.active_len(),
        clean_bytes: section.clean_bytes,
        dirty_bytes: section.dirty_bytes,
        dirty_ratio: section.dirty_ratio(),
        first_dirty_offset: checkpoint,
        checkpoint_source,
        records_after_compaction: 0,
        bytes_after_compaction: 0,
        bytes_reclaimed: 0,
        torn_tail_bytes: log.recovery_report().truncated_tail.as_ref().map_or(0, |t| t.bytes),
        dirty: crate::advise::from_log(log, budget)?,
        notes: Vec::new(),
    };
    let mut scratch = Vec::new();
    let mut count = |mut scan: SegmentScan<'_>, name: &str| -> Result<()> {
        while let Some(window) = scan.next_window()? {
            for item in window.batches() {
                let placed = item?;
                let b = placed.batch;
                a.batches += 1;
                if let Some(h) = b.kafka_header() {
                    let codec = h.compression().map_or("unknown", log_core::kafka::Compression::name);
                    *a.batches_by_codec.entry(codec).or_default() += 1;
                }
                a.transactional_batches += u64::from(b.is_transactional() && !b.is_control());
                a.control_batches += u64::from(b.is_control());
                a.batches_with_delete_horizon += u64::from(b.delete_horizon.is_some());
                a.first_offset.get_or_insert(b.base_offset);
                a.last_offset = Some(b.last_offset);
                let corrupt =
                    |kind| log_core::Error::Corrupt { segment: name.to_owned(), position: placed.position, kind };
                for rec in b.records(&mut scratch).map_err(corrupt)? {
                    let rec = rec.map_err(corrupt)?;
                    a.records += 1;
                    match rec.key {
                        Some(_) => a.keyed_records += 1,
                        None => a.unkeyed_records += 1,
                    }
                    a.tombstones += u64::from(rec.key.is_some() && rec.value.is_none() && !b.is_control());
                }
            }
        }
        Ok(())
    };
    for segment in snapshot.closed() {
        count(segment.scan(), segment.name())?;
    }
    let active = SegmentScan::new(
        log.format(),
        snapshot.active_name(),
        snapshot.active_source(),
        0,
        snapshot.active_len(),
        true,
    );
    count(active, snapshot.active_name())?;
    // The counts' decompression buffer goes before the dry run takes its own.
    drop(scratch);
    // The dry run: an exact map, mapped lazily (nothing is touched for keys that are not there), bounded so
    // that the analysis' memory does not grow with the partition.
    let config =
        CleanerConfig { map: MapKind::FullKey, dedupe_buffer_bytes: DRY_RUN_BYTES, ..CleanerConfig::default() };
    let mut cleaner = Cleaner::new(config, clock)?;
    let (stats, dry) = cleaner.dry_run(log, options)?;
    let regrouped: u64 = snapshot.closed().iter().filter(|s| s.base() < stats.end_offset).map(|s| s.size()).sum();
    a.records_after_compaction = a.records - (stats.pass2.records_read - stats.pass2.records_kept);
    a.bytes_after_compaction = a.bytes - regrouped + dry.bytes_written;
    a.bytes_reclaimed = a.bytes.saturating_sub(a.bytes_after_compaction);
    if stats.map_full {
        a.notes.push(format!(
            "the dry run's exact map filled its {} MiB at {} keys: its figures are those of a first pass, up to offset \
             {}; further passes would reclaim more",
            DRY_RUN_BYTES >> 20,
            stats.offset_map.entries,
            stats.end_offset
        ));
    }
    if a.transactional_batches + a.control_batches > 0 {
        a.notes.push(format!(
            "{} transactional and {} control batches are kept whole: their records neither remove others nor are \
             removed",
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
