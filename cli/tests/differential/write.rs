#![expect(clippy::big_endian_bytes, reason = "Kafka's control records are big-endian")]

//! Lays a [`Case`] out as a stopped broker's log directory holding the partition `t-0`: its segments with the
//! `.index` and `.timeindex` a broker writes (an entry every `index.interval.bytes`, the last time entry on
//! close), the `.txnindex` of each segment's aborted transactions, producer snapshots as the case asks (their
//! entries from a replay of the batches that follows Kafka's `ProducerStateEntry` one batch at a time, written
//! here apart from the product's own), `meta.properties`, the broker's checkpoint files and, after a clean stop,
//! `.kafka_cleanshutdown`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use log_core::kafka::index::KafkaIndexes;
use log_core::kafka::producer_snapshot::{ProducerEntry, encode_snapshot};
use log_core::kafka::txn::AbortedTxn;
use log_core::kafka::{BatchHeader, Compression, RecordToWrite, new_header, write_batch};
use log_core::{Format, Stamp};

use super::case::{BatchSpec, Case, Writer};

/// Where the case's offsets fell.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The partition directory.
    pub partition: PathBuf,
    /// The log directory.
    pub log_dir: PathBuf,
    /// Each batch's base offset, in order.
    pub bases: Vec<u64>,
    /// The log end offset.
    pub log_end: u64,
    pub checkpoint: Option<u64>,
    pub log_start: Option<u64>,
    pub high_watermark: Option<u64>,
}

/// A producer's state as a broker keeps it (Kafka's `ProducerStateEntry`), replayed batch by batch.
#[derive(Debug, Clone, Copy)]
struct Entry {
    epoch: i16,
    last_sequence: i32,
    last_offset: i64,
    offset_delta: i32,
    timestamp: i64,
    coordinator_epoch: i32,
    txn_first: i64,
}

impl Entry {
    const NEW: Entry = Entry {
        epoch: -1,
        last_sequence: -1,
        last_offset: -1,
        offset_delta: 0,
        timestamp: -1,
        coordinator_epoch: -1,
        txn_first: -1,
    };

    fn epoch(&mut self, epoch: i16) {
        if epoch != self.epoch {
            // A new epoch forgets the batches of the old one.
            self.last_sequence = -1;
            self.last_offset = -1;
            self.offset_delta = 0;
            self.epoch = epoch;
        }
    }
}

fn snapshot_of(producers: &BTreeMap<i64, Entry>) -> Vec<u8> {
    let entries: Vec<ProducerEntry> = producers
        .iter()
        .map(|(&producer_id, e)| ProducerEntry {
            producer_id,
            producer_epoch: e.epoch,
            last_sequence: e.last_sequence,
            last_offset: e.last_offset,
            offset_delta: e.offset_delta,
            timestamp: e.timestamp,
            coordinator_epoch: e.coordinator_epoch,
            current_txn_first_offset: e.txn_first,
        })
        .collect();
    encode_snapshot(&entries)
}

fn checkpoint_file(dir: &Path, name: &str, offset: u64) {
    fs::write(dir.join(name), format!("0\n1\nt 0 {offset}\n")).expect("write a checkpoint");
}

/// The value of a record's `value` length.
fn value_bytes(len: u16, offset: u64) -> Vec<u8> {
    let text = format!("v{offset}-");
    text.bytes().cycle().take(usize::from(len)).collect()
}

/// Writes `case` under `root` (`root/logs/t-0`).
pub fn write(case: &Case, root: &Path) -> Layout {
    let log_dir = root.join("logs");
    let partition = log_dir.join("t-0");
    fs::create_dir_all(&partition).expect("mkdir");
    fs::write(
        log_dir.join("meta.properties"),
        "node.id=1\ndirectory.id=8q8Ob4xuQ3iH3pUOwfLU3A\nversion=1\ncluster.id=y2k3PkyMT3aBzoCktkSS7A\n",
    )
    .expect("meta.properties");
    let mut next: u64 = 0;
    let mut bases = Vec::new();
    let mut producers: BTreeMap<i64, Entry> = BTreeMap::new();
    // Producer -> first offset of its ongoing transaction.
    let mut ongoing: BTreeMap<i64, u64> = BTreeMap::new();
    let mut snapshots: Vec<(u64, Vec<u8>)> = Vec::new();
    let stray_batch = case.snapshots.stray_at;
    let mut batch_index = 0usize;
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    for (si, segment) in case.segments.iter().enumerate() {
        let segment_base = next;
        if si > 0 && case.snapshots.at_base.get(si).copied().unwrap_or(false) {
            snapshots.push((segment_base, snapshot_of(&producers)));
        }
        let mut log = Vec::new();
        let mut indexes = KafkaIndexes::new(segment_base, case.index_interval_bytes);
        let mut txn_index = Vec::new();
        for b in segment {
            let base = next + u64::from(b.gap_before);
            if stray_batch == Some(batch_index) {
                snapshots.push((base, snapshot_of(&producers)));
            }
            batch_index += 1;
            bases.push(base);
            let bytes = encode(b, base, &mut out, &mut scratch);
            let batch = Format::Kafka.parse(bytes, true).expect("a batch just written parses");
            let stamp = Stamp::of(&batch);
            indexes.on_batch(&stamp, log.len() as u64, bytes.len() as u64);
            let header = *batch.kafka_header().expect("a Kafka batch");
            log.extend_from_slice(bytes);
            next = stamp.last_offset + 1;
            replay(b, &header, base, stamp.last_offset, &mut producers, &mut ongoing, &mut txn_index);
        }
        let files = indexes.finish();
        let stem = partition.join(format!("{segment_base:020}"));
        fs::write(stem.with_extension("log"), &log).expect("write .log");
        fs::write(stem.with_extension("index"), &files.offset_index).expect("write .index");
        fs::write(stem.with_extension("timeindex"), &files.time_index).expect("write .timeindex");
        if !txn_index.is_empty() {
            fs::write(stem.with_extension("txnindex"), &txn_index).expect("write .txnindex");
        }
    }
    // A broker's clean stop always writes one at the log end.
    if case.snapshots.at_end || case.clean_shutdown {
        snapshots.push((next, snapshot_of(&producers)));
    }
    for (offset, bytes) in snapshots {
        fs::write(partition.join(format!("{offset:020}.snapshot")), bytes).expect("write a snapshot");
    }
    let at = |i: Option<usize>| i.map(|i| bases.get(i).copied().unwrap_or(next));
    // The log start lies inside the first segment (a broker deletes segments wholly below it soon after).
    let first = case.segments.first().map_or(0, Vec::len);
    let log_start = at(case.log_start_at.map(|i| i.min(first.saturating_sub(1))));
    let (checkpoint, high_watermark) = (at(case.checkpoint_at), at(case.high_watermark_at));
    if let Some(c) = checkpoint {
        checkpoint_file(&log_dir, "cleaner-offset-checkpoint", c);
    }
    if let Some(l) = log_start {
        checkpoint_file(&log_dir, "log-start-offset-checkpoint", l);
    }
    if let Some(h) = high_watermark {
        checkpoint_file(&log_dir, "replication-offset-checkpoint", h);
    }
    if case.clean_shutdown {
        fs::write(log_dir.join(".kafka_cleanshutdown"), "").expect("marker");
    }
    Layout { partition, log_dir, bases, log_end: next, checkpoint, log_start, high_watermark }
}

/// The bytes of a hex string.
pub fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2).filter_map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()).collect()
}

/// A hex string of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of batch `b` based at `base`, in `out`.
fn encode<'o>(b: &BatchSpec, base: u64, out: &'o mut Vec<u8>, scratch: &mut Vec<u8>) -> &'o [u8] {
    let mut offset = base;
    let mut keys: Vec<Vec<u8>> = Vec::new();
    let mut values: Vec<Option<Vec<u8>>> = Vec::new();
    let mut headers: Vec<Vec<u8>> = Vec::new();
    let mut offsets = Vec::new();
    let mut times = Vec::new();
    for (i, r) in b.records.iter().enumerate() {
        if r.gap && i > 0 {
            offset += 1;
        }
        offset += u64::from(r.skip);
        offsets.push(offset);
        times.push(b.timestamp + r.ts_delta);
        match b.writer {
            Writer::Marker { commit, coordinator_epoch, .. } => {
                keys.push(vec![0, 0, 0, u8::from(commit)]);
                let mut v = vec![0, 0];
                v.extend_from_slice(&coordinator_epoch.to_be_bytes());
                values.push(Some(v));
            }
            _ => match &r.raw {
                Some(raw) => {
                    keys.push(raw.key.as_deref().map(unhex).unwrap_or_default());
                    values.push(raw.value.as_deref().map(unhex));
                }
                None => {
                    keys.push(r.key.map_or_else(Vec::new, |k| format!("key-{k}").into_bytes()));
                    values.push(r.value.map(|len| value_bytes(len, offset)));
                }
            },
        }
        let mut h = Vec::new();
        if let Some(raw) = &r.raw {
            h = unhex(&raw.headers);
        }
        for j in 0..r.headers.min(if r.raw.is_some() { 0 } else { u8::MAX }) {
            // name "h<j>" and a value "x"
            log_core::kafka::varint::write_varint(&mut h, 2);
            h.extend_from_slice(format!("h{j}").as_bytes());
            log_core::kafka::varint::write_varint(&mut h, 1);
            h.push(b'x');
        }
        headers.push(h);
        offset += 1;
    }
    let records: Vec<RecordToWrite<'_>> = b
        .records
        .iter()
        .enumerate()
        .map(|(i, r)| RecordToWrite {
            offset: offsets[i] as i64,
            timestamp: times[i],
            key: match b.writer {
                Writer::Marker { .. } => Some(&keys[i][..]),
                _ if r.raw.as_ref().is_some_and(|raw| raw.key.is_none()) => None,
                _ if r.raw.is_some() => Some(&keys[i][..]),
                _ => r.key.map(|_| &keys[i][..]),
            },
            value: values[i].as_deref(),
            header_count: usize::from(r.headers),
            header_bytes: &headers[i],
        })
        .collect();
    let last = offsets.last().map_or(base, |&o| o) + u64::from(b.extra_delta);
    let mut h: BatchHeader = new_header(base as i64, (last - base) as i32);
    h.max_timestamp = b.timestamp;
    h.base_timestamp = b.timestamp;
    match b.writer {
        Writer::Plain => {}
        Writer::Idempotent { producer_id } => {
            (h.producer_id, h.producer_epoch, h.base_sequence) = (producer_id, b.epoch, b.sequence);
        }
        Writer::Txn { producer_id } => {
            (h.producer_id, h.producer_epoch, h.base_sequence) = (producer_id, b.epoch, b.sequence);
            h.attributes |= 0x10;
        }
        Writer::Marker { producer_id, .. } => {
            (h.producer_id, h.producer_epoch, h.base_sequence) = (producer_id, b.epoch, -1);
            h.attributes |= 0x30;
        }
    }
    let codec = if matches!(b.writer, Writer::Marker { .. }) { Compression::None } else { b.codec };
    out.clear();
    write_batch(&h, codec, b.horizon, &records, out, scratch).expect("a batch of the case");
    out
}

/// Moves the broker's producer state and open transactions over batch `b` (header `h`, offsets `base..=last`),
/// adding the `.txnindex` entry of an ABORT that ends a transaction with data.
fn replay(
    b: &BatchSpec,
    h: &BatchHeader,
    base: u64,
    last: u64,
    producers: &mut BTreeMap<i64, Entry>,
    ongoing: &mut BTreeMap<i64, u64>,
    txn_index: &mut Vec<u8>,
) {
    match b.writer {
        Writer::Plain => {}
        Writer::Idempotent { producer_id } | Writer::Txn { producer_id } => {
            let e = producers.entry(producer_id).or_insert(Entry::NEW);
            e.epoch(b.epoch);
            e.last_sequence = if b.sequence < 0 { -1 } else { b.sequence + (last - base) as i32 };
            e.last_offset = last as i64;
            e.offset_delta = (last - base) as i32;
            e.timestamp = h.max_timestamp;
            if matches!(b.writer, Writer::Txn { .. }) && e.txn_first < 0 {
                e.txn_first = base as i64;
                ongoing.insert(producer_id, base);
            }
        }
        Writer::Marker { producer_id, commit, coordinator_epoch } => {
            if b.records.is_empty() {
                // An emptied marker is no marker.
                return;
            }
            let e = producers.entry(producer_id).or_insert(Entry::NEW);
            e.epoch(b.epoch);
            e.coordinator_epoch = coordinator_epoch;
            e.timestamp = b.timestamp;
            e.txn_first = -1;
            let first = ongoing.remove(&producer_id);
            if let (false, Some(first)) = (commit, first) {
                let lso = ongoing.values().min().copied().unwrap_or(base + 1);
                AbortedTxn { producer_id, first_offset: first, last_offset: base, last_stable_offset: lso }
                    .encode(txn_index);
            }
        }
    }
}
