//! Synthetic Kafka partitions for the benchmarks: magic 2 batches of 100 records (16-byte keys drawn
//! uniformly, 100-byte values of random letters that compress about 2x, 1% tombstones) written with
//! `log-core`'s batch writer into any store, and compaction of a partition until clean through the log.

use std::sync::Arc;

use cleaner::{CleanStats, Cleaner, CleanerConfig, ManualClock, MapKind, PassOptions};
use log_core::kafka::files::{SegmentFile, Stage, name};
use log_core::kafka::{Compression, RecordToWrite, new_header, write_batch};
use log_core::workload::SplitMix64;
use log_core::{CheckpointFile, Log, LogConfig, SegmentStore};

/// What [`write_partition`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// Records.
    pub records: u64,
    /// Bytes of batches.
    pub bytes: u64,
}

/// Records a batch.
pub const RECORDS_PER_BATCH: usize = 100;

/// Writes batches into `store` until `records` records or `bytes` bytes (whichever comes first), segments of
/// `segment_bytes`, then an empty active segment so that every record is in a closed one.
///
/// # Errors
/// The store's error, as text.
pub fn write_partition(
    store: &dyn SegmentStore,
    keys: &crate::Keys,
    records: u64,
    bytes: u64,
    codec: Compression,
    segment_bytes: u64,
    seed: u64,
) -> Result<Written, String> {
    let mut rng = SplitMix64::new(seed);
    let text: Vec<u8> = (0..1 << 16).map(|_| b'a' + (rng.next_u64() % 16) as u8).collect();
    let (mut offset, mut written) = (0i64, Written { records: 0, bytes: 0 });
    let (mut out, mut scratch) = (Vec::new(), Vec::new());
    let mut seg: Option<(Arc<dyn log_core::Segment>, u64)> = None;
    let mut picks = Vec::with_capacity(RECORDS_PER_BATCH);
    let log_name = |offset: i64| name(offset as u64, SegmentFile::Log, Stage::Live);
    while written.records < records && written.bytes < bytes {
        picks.clear();
        for _ in 0..RECORDS_PER_BATCH {
            let k = (rng.next_u64() % keys.len() as u64) as usize;
            let start = (rng.next_u64() % ((1 << 16) - 100)) as usize;
            picks.push((k, start, rng.next_u64().is_multiple_of(100)));
        }
        let batch: Vec<RecordToWrite<'_>> = picks
            .iter()
            .enumerate()
            .map(|(i, &(k, start, tombstone))| RecordToWrite {
                offset: offset + i as i64,
                timestamp: 1_700_000_000_000 + offset + i as i64,
                key: Some(keys.get(k)),
                value: (!tombstone).then(|| &text[start..start + 100]),
                header_count: 0,
                header_bytes: &[],
            })
            .collect();
        out.clear();
        write_batch(&new_header(offset, RECORDS_PER_BATCH as i32 - 1), codec, None, &batch, &mut out, &mut scratch)
            .map_err(|e| e.to_string())?;
        if seg.as_ref().is_none_or(|(_, len)| *len + out.len() as u64 > segment_bytes) {
            if let Some((f, _)) = seg.take() {
                f.sync().and_then(|()| f.seal()).map_err(|e| e.to_string())?;
            }
            seg = Some((store.create(&log_name(offset)).map_err(|e| e.to_string())?, 0));
        }
        if let Some((f, len)) = seg.as_mut() {
            f.append(&out).map_err(|e| e.to_string())?;
            *len += out.len() as u64;
        }
        written.bytes += out.len() as u64;
        written.records += RECORDS_PER_BATCH as u64;
        offset += RECORDS_PER_BATCH as i64;
    }
    if let Some((f, _)) = seg.take() {
        f.sync().and_then(|()| f.seal()).map_err(|e| e.to_string())?;
    }
    store.create(&log_name(offset)).map_err(|e| e.to_string())?;
    Ok(written)
}

/// Copies every file of `from` into `to` (a fresh store).
///
/// # Errors
/// The store's error, as text.
pub fn copy_store(from: &dyn SegmentStore, to: &dyn SegmentStore) -> Result<(), String> {
    for n in from.list().map_err(|e| e.to_string())? {
        let f = from.open(&n).map_err(|e| e.to_string())?;
        let mut bytes = vec![0u8; usize::try_from(f.len()).map_err(|e| e.to_string())?];
        f.read_at(0, &mut bytes).map_err(|e| e.to_string())?;
        let g = to.create(&n).map_err(|e| e.to_string())?;
        g.append(&bytes).map_err(|e| e.to_string())?;
        g.sync().map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Opens the Kafka partition in `store` (its checkpoint kept in memory).
///
/// # Errors
/// The log's error, as text.
pub fn open(store: Arc<dyn SegmentStore>, segment_bytes: u64) -> Result<Log, String> {
    let config = LogConfig { segment_bytes, ..LogConfig::default() };
    Log::open_kafka(store, config, CheckpointFile::Memory).map_err(|e| e.to_string())
}

/// Compacts the partition in `store` in place until clean with `map` in a buffer of `buffer` bytes, the clock
/// at `now_ms`; returns every pass's statistics.
///
/// # Errors
/// A pass's error, as text.
pub fn compact_until_clean(
    store: Arc<dyn SegmentStore>,
    map: MapKind,
    buffer: usize,
    load_factor: f64,
    segment_bytes: u64,
    now_ms: i64,
) -> Result<(Log, Vec<CleanStats>), String> {
    let log = open(store, segment_bytes)?;
    let config = CleanerConfig { map, dedupe_buffer_bytes: buffer, load_factor, ..CleanerConfig::default() };
    let clock = Arc::new(ManualClock::new(now_ms));
    let mut cleaner = Cleaner::new(config, clock).map_err(|e| e.to_string())?;
    let passes = cleaner.clean_until_clean(&log, PassOptions::default(), |_| Ok(())).map_err(|e| e.to_string())?;
    Ok((log, passes))
}

/// xxh3 of every record's offset, key and value, in order, and the number of records.
///
/// # Errors
/// A damaged partition, as text.
pub fn digest(log: &Log) -> Result<(String, u64), String> {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut n = 0;
    for r in log.snapshot().reader(0) {
        let r = r.map_err(|e| e.to_string())?;
        n += 1;
        h.update(&r.offset.to_le_bytes());
        h.update(r.key.as_deref().unwrap_or_default());
        h.update(&[u8::from(r.value.is_some())]);
        h.update(r.value.as_deref().unwrap_or_default());
    }
    Ok((format!("{:016x}", h.digest()), n))
}
