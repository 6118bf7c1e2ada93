//! `analyze`: what a log holds and what compaction would do to it, read without changing anything, in either
//! format: counts of segments, batches (per codec, transactional, control, with a delete horizon), records
//! (keyed, unkeyed, tombstones), the clean, dirty and active bytes and Kafka's dirty ratio, the buffer one pass
//! needs per map and the passes a buffer takes (replayed on the log, [`crate::advise`]), and a dry run of a full
//! compaction (both passes with an exact map, nothing written) for the records and bytes it would keep.

use std::collections::BTreeMap;
use std::sync::Arc;

use log_core::progress::{Meter, Tally};
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
    /// Kafka: the partition's transactions (the last stable offset, open transactions, aborted data).
    #[serde(flatten)]
    pub transactions: Transactions,
    /// The largest record of a compressed batch by its decoded size, which Kafka bounds by the topic's
    /// `max.decompressed.message.bytes` (its cleaner fails a partition holding a larger one), among the records
    /// a pass would decode now (below the first uncleanable offset); `None` when none of them is compressed.
    pub largest_compressed_record: Option<log_core::check::RecordSize>,
    /// What a pass leaves alone, and why.
    pub notes: Vec<String>,
}

/// A Kafka partition's transactions, as `analyze` reports them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Transactions {
    /// The last stable offset: the first offset of the earliest open transaction, else the log end (`None` for
    /// the native format). Nothing at or past it is cleaned, and `read_committed` consumers stop there.
    pub last_stable_offset: Option<u64>,
    /// Transactions without a marker, oldest first.
    pub open_transactions: Vec<OpenTransaction>,
    /// Aborted transactions (`.txnindex` entries, derived from the markers).
    pub aborted_transactions: u64,
    /// Records of their data batches still in the partition (a compaction removes those in the segments before
    /// the one holding the LSO).
    pub aborted_records: u64,
    /// Bytes of those batches.
    pub aborted_bytes: u64,
    /// Transaction markers (control batches).
    pub markers: u64,
    /// Their bytes (before the segment holding the LSO, each goes once its transaction's data is gone and a
    /// delete horizon passed).
    pub marker_bytes: u64,
}

/// A transaction without a marker: it holds the last stable offset back while it stays open.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpenTransaction {
    /// Its producer.
    pub producer_id: i64,
    /// The producer's epoch.
    pub producer_epoch: i16,
    /// Its first offset.
    pub first_offset: u64,
    /// The first timestamp of its first batch.
    pub first_timestamp: i64,
    /// How old that is now.
    pub age_ms: i64,
    /// Bytes of the closed segments from the one holding its first offset on, which no pass can clean while
    /// it is open (for the earliest open transaction).
    pub bytes_blocked: u64,
    /// The coordinator epoch of the producer's last marker, if it wrote one.
    pub coordinator_epoch: Option<i32>,
    /// The `kafka-transactions.sh` command that aborts it on the broker (filled in by
    /// [`Transactions::name_partition`]: it needs the topic and partition).
    pub abort_command: Option<String>,
}

impl Transactions {
    /// Fills in the coordinator epoch of each open transaction that has none from a broker's producer state:
    /// `(producer id, epoch, coordinator epoch)` entries (a producer snapshot's), taken when the producer and
    /// its epoch match and the epoch is known (not -1).
    pub fn take_coordinator_epochs(&mut self, producers: &[(i64, i16, i32)]) {
        for t in self.open_transactions.iter_mut().filter(|t| t.coordinator_epoch.is_none()) {
            t.coordinator_epoch = producers
                .iter()
                .find(|&&(p, e, c)| p == t.producer_id && e == t.producer_epoch && c >= 0)
                .map(|&(_, _, c)| c);
        }
    }

    /// Fills in each open transaction's `abort_command` for partition `partition` of `topic`: Kafka's
    /// `kafka-transactions.sh abort` with the producer id, epoch and coordinator epoch when a marker gave the
    /// coordinator epoch, else with the transaction's start offset (the tool then looks the producer up).
    pub fn name_partition(&mut self, topic: &str, partition: u32) {
        for t in &mut self.open_transactions {
            let target = format!("--topic {topic} --partition {partition}");
            t.abort_command = Some(match t.coordinator_epoch {
                Some(c) => format!(
                    "kafka-transactions.sh --bootstrap-server <broker:9092> abort {target} --producer-id {} \
                     --producer-epoch {} --coordinator-epoch {c}",
                    t.producer_id, t.producer_epoch
                ),
                None => {
                    format!(
                        "kafka-transactions.sh --bootstrap-server <broker:9092> abort {target} --start-offset {}",
                        t.first_offset
                    )
                }
            });
        }
    }
}

/// The transactions of `snapshot` at `now_ms`.
fn transactions(snapshot: &log_core::LogSnapshot, now_ms: i64) -> Result<Transactions> {
    if snapshot.format() != Format::Kafka {
        return Ok(Transactions::default());
    }
    let txns = snapshot.transactions()?;
    let blocked = |first: u64| -> u64 {
        snapshot.closed().iter().filter(|s| s.last_offset().is_some_and(|l| l >= first)).map(|s| s.size()).sum()
    };
    Ok(Transactions {
        last_stable_offset: Some(txns.last_stable_offset),
        open_transactions: txns
            .open
            .iter()
            .map(|o| OpenTransaction {
                producer_id: o.producer_id,
                producer_epoch: o.producer_epoch,
                first_offset: o.first_offset,
                first_timestamp: o.first_timestamp,
                age_ms: now_ms.saturating_sub(o.first_timestamp).max(0),
                bytes_blocked: blocked(o.first_offset),
                coordinator_epoch: o.coordinator_epoch,
                abort_command: None,
            })
            .collect(),
        aborted_transactions: txns.aborted.len() as u64,
        aborted_records: txns.aborted_records,
        aborted_bytes: txns.aborted_bytes,
        markers: txns.markers,
        marker_bytes: txns.marker_bytes,
    })
}

/// The stage a [`Meter`] shows while [`analyze`] counts every batch.
pub const STAGE_COUNT: &str = "counting";

/// The most memory the dry run's exact map takes.
pub const DRY_RUN_BYTES: usize = 1 << 30;

/// About the bytes [`analyze`] reads of `log` with `options` at `now_ms`, for a meter's total where several
/// logs share one: the count scan reads the whole log; where anything is dirty, the key replay and the dry
/// run's first pass read the dirty section and its second pass the closed segments up to it. An upper bound
/// where the dry run's map fills (its pass then stops early).
#[must_use]
pub fn bytes_to_read(log: &Log, options: &PassOptions, now_ms: i64) -> u64 {
    let snapshot = log.snapshot();
    let all = snapshot.closed().iter().map(|s| s.size()).sum::<u64>() + snapshot.active_len();
    let section =
        log_core::DirtySection::of(&snapshot, log.cleaner_checkpoint(), now_ms, options.min_compaction_lag_ms);
    if section.dirty_bytes == 0 {
        return all;
    }
    all + section.clean_bytes + 3 * section.dirty_bytes
}

/// Analyzes `log` (open read-only, or not): one scan for the counts, one read of the dirty section for the
/// keys (each map replayed in `budget`), and a dry run of a full compaction with an exact map of at most
/// [`DRY_RUN_BYTES`] (beyond, a first pass's figures, said in the notes); each read a stage of `meter` when
/// given ([`crate::advise::STAGE_ADVISE`], [`STAGE_COUNT`], then the dry run's two passes).
///
/// # Errors
/// [`crate::Error::Log`] for damage (file and byte named); as [`crate::advise::from_counts`] for a bad budget.
pub fn analyze(
    log: &Log,
    checkpoint_source: String,
    budget: Budget,
    options: PassOptions,
    clock: Arc<dyn Clock>,
    meter: Option<&Arc<Meter>>,
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
        // The keys of the section a pass would take (min.compaction.lag.ms and open transactions may hold
        // part of the closed segments back).
        dirty: crate::advise::from_log_until(log, budget, section.first_uncleanable_offset, meter.map(|m| &**m))?,
        transactions: transactions(&snapshot, clock.now_ms())?,
        largest_compressed_record: None,
        notes: Vec::new(),
    };
    let mut scratch = Vec::new();
    if let Some(m) = meter {
        m.begin(STAGE_COUNT, Some(a.bytes));
    }
    let mut read = Tally::of(meter.map(|m| &**m));
    let mut count = |mut scan: SegmentScan<'_>, name: &str| -> Result<()> {
        while let Some(window) = scan.next_window()? {
            for item in window.batches() {
                let placed = item?;
                let b = placed.batch;
                read.add(b.len() as u64, b.record_count);
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
                let compressed = b.is_compressed();
                for rec in b.records(&mut scratch).map_err(corrupt)? {
                    let rec = rec.map_err(corrupt)?;
                    a.records += 1;
                    let bytes = rec.body_bytes as u64;
                    // Only what a pass now decodes: a record at or past the first uncleanable offset (the active
                    // segment's, one held back) fails no pass yet.
                    let cleanable = rec.offset < section.first_uncleanable_offset;
                    if compressed && cleanable && a.largest_compressed_record.as_ref().is_none_or(|l| bytes > l.bytes) {
                        let largest = log_core::check::RecordSize { file: name.to_owned(), offset: rec.offset, bytes };
                        a.largest_compressed_record = Some(largest);
                    }
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
    drop(read);
    // The dry run: an exact map, mapped lazily (nothing is touched for keys that are not there), bounded so
    // that the analysis' memory does not grow with the partition.
    let config =
        CleanerConfig { map: MapKind::FullKey, dedupe_buffer_bytes: DRY_RUN_BYTES, ..CleanerConfig::default() };
    let mut cleaner = Cleaner::new(config, clock)?;
    // A record over the topic's bound fails Kafka's cleaner (and ours): said, and the dry run shows what a pass
    // would do were the bound raised.
    let limit = options.max_decompressed_message_bytes;
    let mut options = options;
    if let Some(largest) = a.largest_compressed_record.as_ref().filter(|l| l.bytes > limit) {
        a.notes.push(format!(
            "the largest record of a compressed batch, at offset {} in {}, is {} decoded, over the topic's \
             max.decompressed.message.bytes ({} bytes): Kafka's cleaner fails this partition and marks it \
             uncleanable, and compact refuses it; the figures below are those of a pass with the bound raised",
            largest.offset,
            largest.file,
            log_core::human::bytes(largest.bytes),
            limit
        ));
        options.max_decompressed_message_bytes = largest.bytes;
    }
    if let Some(m) = meter {
        cleaner.report_to(Arc::clone(m));
    }
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
    if let Some(oldest) = a.transactions.open_transactions.first() {
        a.notes.push(format!(
            "{} open transaction(s) hold the last stable offset at {}: no segment from the one holding it on is \
             cleaned, and read_committed consumers stop there; the oldest (producer {}, epoch {}) began {} ago, holding back {} \
             of closed segments",
            a.transactions.open_transactions.len(),
            oldest.first_offset,
            oldest.producer_id,
            oldest.producer_epoch,
            log_core::human::duration_ms(u64::try_from(oldest.age_ms).unwrap_or(0)),
            log_core::human::bytes(oldest.bytes_blocked)
        ));
    }
    if a.transactions.aborted_records > 0 {
        a.notes.push(format!(
            "{} records ({}) of {} aborted transaction(s) are still here: a compaction removes those below the \
             last stable offset whatever their keys",
            a.transactions.aborted_records,
            log_core::human::bytes(a.transactions.aborted_bytes),
            a.transactions.aborted_transactions
        ));
    }
    if a.transactions.markers > 0 {
        a.notes.push(format!(
            "{} transaction markers ({}): each goes once its transaction's data is gone, one pass and \
             delete.retention.ms later",
            a.transactions.markers,
            log_core::human::bytes(a.transactions.marker_bytes)
        ));
    }
    if a.unkeyed_records > 0 {
        a.notes.push(format!(
            "{} records have no key: a compacted topic refuses them, and a pass drops those in the dirty section",
            a.unkeyed_records
        ));
    }
    a.notes.push(format!("the active segment ({}) is never cleaned", log_core::human::bytes(a.active_bytes)));
    Ok(a)
}
