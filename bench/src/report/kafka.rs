//! The report's Kafka rows: a generated partition per codec (uncompressed and lz4), compacted until clean
//! by every map in the buffer `skimpy` needs for one pass and in a quarter of it. Every row of the matrix must
//! leave the same records (digest), whatever the codec, map or buffer.

use std::sync::Arc;

use cleaner::map::MapKind;
use log_core::SegmentStore;
use log_core::kafka::Compression;
use serde::{Deserialize, Serialize};
use storage_mem::MemStore;

use super::{Config, ReportError};

/// One Kafka row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KafkaCell {
    /// The map.
    pub map: String,
    /// The batches' codec.
    pub codec: String,
    /// Distinct keys.
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
    /// Pass 1 time of all passes, per record.
    pub pass1_ns_per_record: f64,
    /// Pass 2 time of all passes, per record.
    pub pass2_ns_per_record: f64,
    /// Records per second of compaction.
    pub records_per_s: f64,
    /// Bytes of batches per second of compaction.
    pub bytes_per_s: f64,
    /// Records kept.
    pub records_kept: u64,
    /// Bytes of segments the passes wrote (groups a pass left unchanged cost none).
    #[serde(default)]
    pub bytes_written: u64,
    /// xxh3 of the surviving records' offsets, keys and values.
    pub result_digest: String,
}

fn failed(e: String) -> ReportError {
    ReportError::Failed(e)
}

/// Runs the Kafka rows of `config`.
///
/// # Errors
/// [`ReportError::Mismatch`] when rows leave different records; [`ReportError::Failed`] otherwise.
pub fn run(config: &Config, mut progress: impl FnMut(&KafkaCell)) -> Result<Vec<KafkaCell>, ReportError> {
    let mut rows: Vec<KafkaCell> = Vec::new();
    if config.kafka_records == 0 {
        return Ok(rows);
    }
    let keys = crate::Keys::new(config.kafka_keys as usize, config.key_bytes, config.seed);
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
        let need = MapKind::Skimpy.bytes_for(config.kafka_keys as usize, config.load_factor, config.key_bytes);
        for share in [1.0, 0.25] {
            let buffer = ((need as f64 * share).round() as usize).max(1 << 12);
            for map in MapKind::ALL {
                let store: Arc<dyn SegmentStore> = Arc::new(MemStore::new());
                crate::kafka::copy_store(&*source, &*store).map_err(failed)?;
                let started = std::time::Instant::now();
                let (log, passes) = crate::kafka::compact_until_clean(
                    store,
                    map,
                    buffer,
                    config.load_factor,
                    config.segment_bytes,
                    1_800_000_000_000,
                )
                .map_err(failed)?;
                let seconds = started.elapsed().as_secs_f64();
                let per = |f: fn(&cleaner::CleanStats) -> f64| {
                    passes.iter().map(f).sum::<f64>() * 1e9 / written.records as f64
                };
                let (result_digest, records_kept) = crate::kafka::digest(&log).map_err(failed)?;
                let row = KafkaCell {
                    map: map.name().to_owned(),
                    codec: codec.name().to_owned(),
                    keys: config.kafka_keys,
                    records: written.records,
                    bytes: written.bytes,
                    buffer_bytes: buffer as u64,
                    buffer_share: share,
                    passes_to_clean: passes.len() as u64,
                    pass1_ns_per_record: per(|s| s.pass1.seconds),
                    pass2_ns_per_record: per(|s| s.pass2.seconds),
                    records_per_s: written.records as f64 / seconds,
                    bytes_per_s: written.bytes as f64 / seconds,
                    records_kept,
                    bytes_written: passes.iter().map(|s| s.bytes_written).sum(),
                    result_digest,
                };
                if let Some(first) = rows.first().filter(|f| f.result_digest != row.result_digest) {
                    return Err(ReportError::Mismatch(format!(
                        "kafka {}/{}/buffer {} left different records ({}) than {}/{}/buffer {} ({})",
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
                progress(&row);
                rows.push(row);
            }
        }
    }
    Ok(rows)
}
