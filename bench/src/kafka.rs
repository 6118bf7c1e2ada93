//! Synthetic Kafka partitions for the benchmarks: magic 2 batches of 100 records (16-byte keys drawn
//! uniformly, 100-byte values of random letters that compress about 2x, 1% tombstones) written with
//! `log-core`'s batch writer into any store, and compaction of a partition until clean.

use log_core::SegmentStore;
use log_core::kafka::{Compression, Partition, RecordToWrite, file_name, new_header, write_batch};
use log_core::workload::SplitMix64;

use cleaner::kafka::{KafkaPassOptions, KafkaPassStats, StoreSink, clean_partition};
use cleaner::map::OffsetMap;

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
    let mut seg: Option<(std::sync::Arc<dyn log_core::Segment>, u64)> = None;
    let mut picks = Vec::with_capacity(RECORDS_PER_BATCH);
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
            seg = Some((store.create(&file_name(offset, ".log")).map_err(|e| e.to_string())?, 0));
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
    let active = store.create(&file_name(offset, ".log")).map_err(|e| e.to_string())?;
    active.seal().map_err(|e| e.to_string())?;
    Ok(written)
}

/// Compacts the partition in `source` until clean with `map`, each pass into a new store made by `new_store`;
/// returns the final store and every pass's statistics.
///
/// # Errors
/// A pass's error, as text.
pub fn compact_until_clean(
    source: std::sync::Arc<dyn SegmentStore>,
    map: &mut dyn OffsetMap,
    options: KafkaPassOptions,
    mut new_store: impl FnMut() -> Result<std::sync::Arc<dyn SegmentStore>, String>,
) -> Result<(std::sync::Arc<dyn SegmentStore>, Vec<KafkaPassStats>), String> {
    let mut input = source;
    let mut first = options.first_dirty_offset;
    let mut passes = Vec::new();
    loop {
        let partition = Partition::open(&*input).map_err(|e| e.to_string())?;
        let out = new_store()?;
        let stats = clean_partition(
            &partition,
            map,
            KafkaPassOptions { first_dirty_offset: first, ..options },
            &mut StoreSink::new(&*out),
        )
        .map_err(|e| e.to_string())?;
        input = out;
        let full = stats.map_full;
        first = stats.end_offset;
        passes.push(stats);
        if !full {
            return Ok((input, passes));
        }
    }
}

/// xxh3 of every record's offset, key and value, in order.
///
/// # Errors
/// A damaged partition, as text.
pub fn digest(store: &dyn SegmentStore) -> Result<String, String> {
    let partition = Partition::open(store).map_err(|e| e.to_string())?;
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut scratch = Vec::new();
    for placed in partition.scan() {
        let placed = placed.map_err(|e| e.to_string())?;
        for r in placed.batch.records(&mut scratch).map_err(|e| e.to_string())? {
            let r = r.map_err(|e| e.to_string())?;
            h.update(&r.offset.to_le_bytes());
            h.update(r.key.unwrap_or_default());
            h.update(&[u8::from(r.value.is_some())]);
            h.update(r.value.unwrap_or_default());
        }
    }
    Ok(format!("{:016x}", h.digest()))
}
