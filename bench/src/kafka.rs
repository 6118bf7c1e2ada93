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

/// Appends batches to a partition's segments, rolling at `segment_bytes`; `finish` seals the last one and adds
/// an empty active segment, so that every record is in a closed one.
struct SegmentWriter<'a> {
    store: &'a dyn SegmentStore,
    segment_bytes: u64,
    seg: Option<(Arc<dyn log_core::Segment>, u64)>,
    written: Written,
}

impl<'a> SegmentWriter<'a> {
    fn new(store: &'a dyn SegmentStore, segment_bytes: u64) -> Self {
        SegmentWriter { store, segment_bytes, seg: None, written: Written { records: 0, bytes: 0 } }
    }

    fn log_name(offset: i64) -> String {
        name(offset as u64, SegmentFile::Log, Stage::Live)
    }

    /// Appends one batch (`records` records from `offset`).
    fn append(&mut self, offset: i64, batch: &[u8], records: u64) -> Result<(), String> {
        if self.seg.as_ref().is_none_or(|(_, len)| *len + batch.len() as u64 > self.segment_bytes) {
            if let Some((f, _)) = self.seg.take() {
                f.sync().and_then(|()| f.seal()).map_err(|e| e.to_string())?;
            }
            self.seg = Some((self.store.create(&Self::log_name(offset)).map_err(|e| e.to_string())?, 0));
        }
        if let Some((f, len)) = self.seg.as_mut() {
            f.append(batch).map_err(|e| e.to_string())?;
            *len += batch.len() as u64;
        }
        self.written.bytes += batch.len() as u64;
        self.written.records += records;
        Ok(())
    }

    fn finish(mut self, next_offset: i64) -> Result<Written, String> {
        if let Some((f, _)) = self.seg.take() {
            f.sync().and_then(|()| f.seal()).map_err(|e| e.to_string())?;
        }
        self.store.create(&Self::log_name(next_offset)).map_err(|e| e.to_string())?;
        Ok(self.written)
    }
}

/// One batch's draws of the uniform workload, a record each: the key's index, where its 100-byte value starts
/// in the value text, and whether it is a tombstone (1 in 100).
fn draw_uniform(rng: &mut SplitMix64, keys: &crate::Keys, picks: &mut Vec<(usize, usize, bool)>) {
    picks.clear();
    for _ in 0..RECORDS_PER_BATCH {
        let k = (rng.next_u64() % keys.len() as u64) as usize;
        let start = (rng.next_u64() % ((1 << 16) - 100)) as usize;
        picks.push((k, start, rng.next_u64().is_multiple_of(100)));
    }
}

/// The records of [`draw_uniform`]'s draws, from `offset` on, timestamps following offsets.
fn uniform_records<'a>(
    picks: &[(usize, usize, bool)],
    keys: &'a crate::Keys,
    text: &'a [u8],
    offset: i64,
) -> Vec<RecordToWrite<'a>> {
    picks
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
        .collect()
}

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
    let mut offset = 0i64;
    let mut w = SegmentWriter::new(store, segment_bytes);
    let (mut out, mut scratch) = (Vec::new(), Vec::new());
    let mut picks = Vec::with_capacity(RECORDS_PER_BATCH);
    while w.written.records < records && w.written.bytes < bytes {
        draw_uniform(&mut rng, keys, &mut picks);
        let batch = uniform_records(&picks, keys, &text, offset);
        out.clear();
        write_batch(&new_header(offset, RECORDS_PER_BATCH as i32 - 1), codec, None, &batch, &mut out, &mut scratch)
            .map_err(|e| e.to_string())?;
        w.append(offset, &out, RECORDS_PER_BATCH as u64)?;
        offset += RECORDS_PER_BATCH as i64;
    }
    w.finish(offset)
}

/// The producer of [`write_transactional_partition`].
pub const TRANSACTIONAL_PRODUCER: i64 = 4000;

/// Writes a partition as an exactly-once Kafka Streams changelog looks: one transactional producer whose
/// transactions (one each commit interval) hold 3 batches of [`RECORDS_PER_BATCH`] records over `keys` (drawn
/// uniformly, 1% tombstones), each ended by a COMMIT marker, and one transaction in 50 aborted (an ABORT
/// marker: its records must go, whatever their keys). Uncompressed, as Streams' changelogs usually are. Stops
/// at `records` records of data.
///
/// # Errors
/// The store's error, as text.
pub fn write_transactional_partition(
    store: &dyn SegmentStore,
    keys: &crate::Keys,
    records: u64,
    segment_bytes: u64,
    seed: u64,
) -> Result<Written, String> {
    let mut rng = SplitMix64::new(seed);
    let text: Vec<u8> = (0..1 << 16).map(|_| b'a' + (rng.next_u64() % 16) as u8).collect();
    let (mut offset, mut sequence, mut data) = (0i64, 0i32, 0u64);
    let mut w = SegmentWriter::new(store, segment_bytes);
    let (mut out, mut scratch) = (Vec::new(), Vec::new());
    let mut transaction = 0u64;
    let mut picks = Vec::with_capacity(RECORDS_PER_BATCH);
    while data < records {
        for _ in 0..3 {
            draw_uniform(&mut rng, keys, &mut picks);
            let batch = uniform_records(&picks, keys, &text, offset);
            let mut h = new_header(offset, RECORDS_PER_BATCH as i32 - 1);
            h.attributes |= 0x10;
            (h.producer_id, h.producer_epoch, h.base_sequence) = (TRANSACTIONAL_PRODUCER, 1, sequence);
            out.clear();
            write_batch(&h, Compression::None, None, &batch, &mut out, &mut scratch).map_err(|e| e.to_string())?;
            w.append(offset, &out, RECORDS_PER_BATCH as u64)?;
            offset += RECORDS_PER_BATCH as i64;
            sequence = sequence.wrapping_add(RECORDS_PER_BATCH as i32);
            data += RECORDS_PER_BATCH as u64;
        }
        let commit = !transaction.is_multiple_of(50) || transaction == 0;
        let marker = [RecordToWrite {
            offset,
            timestamp: 1_700_000_000_000 + offset,
            key: Some(&[0, 0, 0, u8::from(commit)]),
            value: Some(&[0, 0, 0, 0, 0, 3]),
            header_count: 0,
            header_bytes: &[],
        }];
        let mut h = new_header(offset, 0);
        h.attributes |= 0x30;
        (h.producer_id, h.producer_epoch, h.base_sequence) = (TRANSACTIONAL_PRODUCER, 1, -1);
        out.clear();
        write_batch(&h, Compression::None, None, &marker, &mut out, &mut scratch).map_err(|e| e.to_string())?;
        w.append(offset, &out, 1)?;
        offset += 1;
        transaction += 1;
    }
    w.finish(offset)
}

/// Writes a partition as `__consumer_offsets` looks: committed offsets of `groups` consumer groups over 20
/// partitions each of one topic (key version 1: group, topic, partition; value version 3: offset, leader
/// epoch, metadata, commit time), each group committing all its partitions over and over in batches of
/// [`RECORDS_PER_BATCH`], a group metadata record (key version 2) now and then, and an offset deleted (a
/// tombstone) one commit in 200. Uncompressed, as the group coordinator writes it by default. Stops at
/// `records` records or `bytes` bytes of batches, whichever comes first.
///
/// # Errors
/// The store's error, as text.
#[expect(clippy::big_endian_bytes, reason = "Kafka's records are big-endian")]
pub fn write_offsets_partition(
    store: &dyn SegmentStore,
    groups: u64,
    records: u64,
    bytes: u64,
    segment_bytes: u64,
    seed: u64,
) -> Result<Written, String> {
    let string = |s: &str, out: &mut Vec<u8>| {
        out.extend_from_slice(&(s.len() as i16).to_be_bytes());
        out.extend_from_slice(s.as_bytes());
    };
    let mut rng = SplitMix64::new(seed);
    let mut offset = 0i64;
    let mut w = SegmentWriter::new(store, segment_bytes);
    let (mut out, mut scratch) = (Vec::new(), Vec::new());
    let groups = groups.max(1);
    while w.written.records < records && w.written.bytes < bytes {
        let mut kv: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::with_capacity(RECORDS_PER_BATCH);
        for i in 0..RECORDS_PER_BATCH as i64 {
            let group = format!("group-{:05}", rng.next_u64() % groups);
            if rng.next_u64().is_multiple_of(50) {
                let mut key = 2i16.to_be_bytes().to_vec();
                string(&group, &mut key);
                let mut value = 2i16.to_be_bytes().to_vec();
                string("consumer", &mut value);
                value.extend_from_slice(&((offset + i) as i32).to_be_bytes());
                string("range", &mut value);
                string("member-1", &mut value);
                value.extend_from_slice(&(1_700_000_000_000 + offset + i).to_be_bytes());
                value.extend_from_slice(&0i32.to_be_bytes());
                kv.push((key, Some(value)));
                continue;
            }
            let mut key = 1i16.to_be_bytes().to_vec();
            string(&group, &mut key);
            string("orders", &mut key);
            key.extend_from_slice(&((rng.next_u64() % 20) as i32).to_be_bytes());
            let value = (!rng.next_u64().is_multiple_of(200)).then(|| {
                let mut v = 3i16.to_be_bytes().to_vec();
                v.extend_from_slice(&(offset + i).to_be_bytes());
                v.extend_from_slice(&7i32.to_be_bytes());
                string("", &mut v);
                v.extend_from_slice(&(1_700_000_000_000 + offset + i).to_be_bytes());
                v
            });
            kv.push((key, value));
        }
        let batch: Vec<RecordToWrite<'_>> = kv
            .iter()
            .enumerate()
            .map(|(i, (k, v))| RecordToWrite {
                offset: offset + i as i64,
                timestamp: 1_700_000_000_000 + offset + i as i64,
                key: Some(k),
                value: v.as_deref(),
                header_count: 0,
                header_bytes: &[],
            })
            .collect();
        out.clear();
        write_batch(
            &new_header(offset, RECORDS_PER_BATCH as i32 - 1),
            Compression::None,
            None,
            &batch,
            &mut out,
            &mut scratch,
        )
        .map_err(|e| e.to_string())?;
        w.append(offset, &out, RECORDS_PER_BATCH as u64)?;
        offset += RECORDS_PER_BATCH as i64;
    }
    w.finish(offset)
}

/// Opens the Kafka partition in `store` (its checkpoint kept in memory).
///
/// # Errors
/// The log's error, as text.
pub fn open(store: Arc<dyn SegmentStore>, segment_bytes: u64) -> Result<Log, String> {
    let config = LogConfig { segment_bytes, ..LogConfig::default() };
    Log::open(store, log_core::OpenOptions::kafka(config, CheckpointFile::Memory)).map_err(|e| e.to_string())
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
