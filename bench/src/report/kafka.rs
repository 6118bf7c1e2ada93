//! The report's Kafka rows: generated partitions of three shapes compacted until clean by every map (and the
//! external pass) in the buffer `skimpy` needs for one pass and in a quarter of it, each beside its floor (the
//! bare two-pass walk of the same batches with a bare table, [`crate::bare::bare_kafka_walk`]), repeated, with
//! the median and the spread. The shapes:
//! - `plain`: uniform keys in batches of 100, uncompressed and lz4;
//! - `transactions`: an exactly-once Streams changelog (transactions of three batches, each ended by a COMMIT
//!   marker, one in 50 aborted), so the aborted records and the markers' rules are timed too;
//! - `consumer_offsets`: `__consumer_offsets` (committed offsets of groups over partitions, committed over and
//!   over, group metadata, deleted offsets), few keys and many updates.
//!
//! Every row of one shape must leave the same records (digest), whatever the codec, map or buffer.

use std::sync::Arc;

use cleaner::map::MapKind;
use log_core::SegmentStore;
use log_core::kafka::Compression;
use serde::{Deserialize, Serialize};
use storage_mem::MemStore;

use super::{Config, Progress, ReportError, Spread};

/// One Kafka row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KafkaCell {
    /// The partition's shape: `plain`, `transactions` or `consumer_offsets`.
    #[serde(default = "plain")]
    pub shape: String,
    /// The map.
    pub map: String,
    /// The batches' codec.
    pub codec: String,
    /// Distinct keys the partition was written over.
    pub keys: u64,
    /// Records of the partition.
    pub records: u64,
    /// Bytes of its batches.
    pub bytes: u64,
    /// The dedupe buffer.
    pub buffer_bytes: u64,
    /// The buffer as a share of what `skimpy` needs for one pass.
    pub buffer_share: f64,
    /// Passes until clean.
    pub passes_to_clean: u64,
    /// Pass 1 time of all passes, per record (the median run's).
    pub pass1_ns_per_record: f64,
    /// Pass 2 time of all passes, per record (the median run's).
    pub pass2_ns_per_record: f64,
    /// Records per second of compaction (the median run's).
    pub records_per_s: f64,
    /// Bytes of batches per second of compaction.
    pub bytes_per_s: f64,
    /// Records kept.
    pub records_kept: u64,
    /// Bytes of segments the passes wrote (groups a pass left unchanged cost none).
    #[serde(default)]
    pub bytes_written: u64,
    /// Seconds of compaction, and the runs' spread.
    #[serde(default)]
    pub seconds: Spread,
    /// Seconds of the floor (the bare two-pass walk), measured beside each run.
    #[serde(default)]
    pub floor_seconds: Spread,
    /// Compaction time over its floor's, per run.
    #[serde(default)]
    pub over_floor: Spread,
    /// The fastest run's time over the fastest floor's: what a comparison with a baseline judges.
    #[serde(default)]
    pub best_over_floor: f64,
    /// Peak anonymous resident memory of a run's compaction, above what the partition held.
    #[serde(default)]
    pub peak_rss_anon_bytes: u64,
    /// Peak file-backed resident memory of a run's compaction.
    #[serde(default)]
    pub peak_rss_file_bytes: u64,
    /// xxh3 of the surviving records' offsets, keys and values.
    pub result_digest: String,
}

fn plain() -> String {
    "plain".to_owned()
}

fn failed(e: String) -> ReportError {
    ReportError::Failed(e)
}

/// One shape of partition, written once and compacted by every row.
struct Shape {
    name: &'static str,
    codec: Compression,
    keys: u64,
    source: Arc<dyn SegmentStore>,
    written: crate::kafka::Written,
}

fn shapes(config: &Config) -> Result<Vec<Shape>, ReportError> {
    let keys = crate::Keys::new(config.kafka_keys as usize, config.key_bytes, config.seed);
    let mut out = Vec::new();
    for codec in [Compression::None, Compression::Lz4] {
        let source: Arc<dyn SegmentStore> = Arc::new(MemStore::new());
        let written = crate::kafka::write_partition(
            &*source,
            &keys,
            config.kafka_records,
            u64::MAX,
            codec,
            config.segment_bytes,
            config.seed,
        )
        .map_err(failed)?;
        out.push(Shape { name: "plain", codec, keys: config.kafka_keys, source, written });
    }
    let source: Arc<dyn SegmentStore> = Arc::new(MemStore::new());
    let written = crate::kafka::write_transactional_partition(
        &*source,
        &keys,
        config.kafka_records,
        config.segment_bytes,
        config.seed,
    )
    .map_err(failed)?;
    out.push(Shape { name: "transactions", codec: Compression::None, keys: config.kafka_keys, source, written });
    // A group commits 20 partitions: groups for about a tenth of the plain shape's keys.
    let groups = (config.kafka_keys / 200).max(1);
    let source: Arc<dyn SegmentStore> = Arc::new(MemStore::new());
    let written = crate::kafka::write_offsets_partition(
        &*source,
        groups,
        config.kafka_records,
        config.segment_bytes,
        config.seed,
    )
    .map_err(failed)?;
    out.push(Shape { name: "consumer_offsets", codec: Compression::None, keys: groups * 21, source, written });
    Ok(out)
}

/// The rows of one shape, map and buffer: every run's copy, floor and compaction.
fn run_row(config: &Config, shape: &Shape, map: MapKind, buffer: usize, share: f64) -> Result<KafkaCell, ReportError> {
    let mut runs = Vec::with_capacity(config.repeats);
    for _ in 0..config.repeats.max(1) {
        let store: Arc<dyn SegmentStore> = Arc::new(MemStore::new());
        crate::kafka::copy_store(&*shape.source, &*store).map_err(failed)?;
        let floor = {
            let log = crate::kafka::open(Arc::clone(&store), config.segment_bytes).map_err(failed)?;
            let w = crate::bare::bare_kafka_walk(&log, shape.keys as usize);
            w.walk1_seconds + w.walk2_seconds
        };
        let started = std::time::Instant::now();
        let (outcome, peak) = crate::rss::peak_during(|| {
            crate::kafka::compact_until_clean(
                store,
                map,
                buffer,
                config.load_factor,
                config.segment_bytes,
                1_800_000_000_000,
            )
        });
        let (log, passes) = outcome.map_err(failed)?;
        let seconds = started.elapsed().as_secs_f64();
        let (digest, kept) = crate::kafka::digest(&log).map_err(failed)?;
        runs.push((seconds, floor, peak, passes, digest, kept));
    }
    let seconds = Spread::of(runs.iter().map(|r| r.0));
    let floor_seconds = Spread::of(runs.iter().map(|r| r.1));
    let over_floor = Spread::of(runs.iter().map(|r| r.0 / r.1.max(1e-9)));
    let best_over_floor = seconds.min / floor_seconds.min.max(1e-9);
    let median = runs
        .iter()
        .min_by(|a, b| (a.0 - seconds.median).abs().total_cmp(&(b.0 - seconds.median).abs()))
        .ok_or_else(|| failed("no run".into()))?;
    if let Some(other) = runs.iter().find(|r| r.4 != median.4) {
        return Err(ReportError::Mismatch(format!(
            "kafka {}/{}/{}: two runs left different records ({} and {})",
            shape.name, map, buffer, median.4, other.4
        )));
    }
    let (secs, _, _, passes, digest, kept) = median;
    let records = shape.written.records;
    let per = |f: fn(&cleaner::CleanStats) -> f64| passes.iter().map(f).sum::<f64>() * 1e9 / records.max(1) as f64;
    Ok(KafkaCell {
        shape: shape.name.to_owned(),
        map: map.name().to_owned(),
        codec: shape.codec.name().to_owned(),
        keys: shape.keys,
        records,
        bytes: shape.written.bytes,
        buffer_bytes: buffer as u64,
        buffer_share: share,
        passes_to_clean: passes.len() as u64,
        pass1_ns_per_record: per(|s| s.pass1.seconds),
        pass2_ns_per_record: per(|s| s.pass2.seconds),
        records_per_s: records as f64 / secs,
        bytes_per_s: shape.written.bytes as f64 / secs,
        records_kept: *kept,
        bytes_written: passes.iter().map(|s| s.bytes_written).sum(),
        seconds,
        floor_seconds,
        over_floor,
        best_over_floor,
        peak_rss_anon_bytes: runs.iter().map(|r| r.2.anon).max().unwrap_or(0),
        peak_rss_file_bytes: runs.iter().map(|r| r.2.file).max().unwrap_or(0),
        result_digest: digest.clone(),
    })
}

/// Rows [`run`] makes for `config`.
pub fn rows(config: &Config) -> usize {
    if config.kafka_records == 0 { 0 } else { 4 * 2 * MapKind::WITH_EXTERNAL.len() }
}

/// Runs the Kafka rows of `config`, calling `progress` after each.
///
/// # Errors
/// [`ReportError::Mismatch`] when rows of one shape leave different records; [`ReportError::Failed`]
/// otherwise.
pub fn run(config: &Config, progress: &mut dyn FnMut(Progress<'_>)) -> Result<Vec<KafkaCell>, ReportError> {
    let mut out: Vec<KafkaCell> = Vec::new();
    if config.kafka_records == 0 {
        return Ok(out);
    }
    for shape in shapes(config)? {
        let need = MapKind::Skimpy.bytes_for(shape.keys as usize, config.load_factor, config.key_bytes);
        for share in [1.0, 0.25] {
            let buffer = ((need as f64 * share).round() as usize).max(1 << 12);
            for map in MapKind::WITH_EXTERNAL {
                let row = run_row(config, &shape, map, buffer, share)?;
                // Rows of one shape clean the same partition: the same records whatever the codec.
                if let Some(first) = out.iter().find(|f| f.shape == row.shape && f.result_digest != row.result_digest) {
                    return Err(ReportError::Mismatch(format!(
                        "kafka {}/{}/{}/buffer {} left different records ({}) than {}/{}/buffer {} ({})",
                        row.shape,
                        row.codec,
                        row.map,
                        row.buffer_bytes,
                        row.result_digest,
                        first.codec,
                        first.map,
                        first.buffer_bytes,
                        first.result_digest
                    )));
                }
                out.push(row);
                let last = out.last().expect("just pushed");
                progress(Progress::Kafka(last));
            }
        }
    }
    Ok(out)
}
