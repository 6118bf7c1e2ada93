//! A differential case: a Kafka partition as a broker could have written it, described batch by batch, with the
//! settings, clock and buffer both cleaners run with. [`Case::generate`] draws one from a seed; the writer
//! ([`super::write`]) lays it out as a broker's log directory.
//!
//! The producers are simulated as a broker sees them: plain writers, idempotent producers, and transactional
//! producers under transaction version 1 (one epoch for every transaction) or 2 (every marker bumps the epoch),
//! with commits, aborts, empty transactions and transactions left open, their markers in later segments than
//! their data. Besides what producers write, a case holds what earlier cleanings leave: batches stamped with a
//! delete horizon (past or future), batches emptied to a bare header, records gone from inside batches (offset
//! gaps, a last offset delta past the last record), markers stamped or emptied.

use log_core::kafka::Compression;
use log_core::workload::SplitMix64;

/// Who wrote a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Writer {
    /// A producer without an id (`enable.idempotence=false`).
    Plain,
    /// An idempotent producer.
    Idempotent { producer_id: i64 },
    /// A transactional producer's data batch.
    Txn { producer_id: i64 },
    /// A transaction marker (`commit`: COMMIT, else ABORT).
    Marker { producer_id: i64, commit: bool, coordinator_epoch: i32 },
}

/// One record.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RecSpec {
    /// Its key's number (`None`: no key).
    pub key: Option<u16>,
    /// Its value's length (`None`: a tombstone).
    pub value: Option<u16>,
    /// An offset skipped before it (a record an earlier cleaning removed).
    pub gap: bool,
    /// More offsets skipped before it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub skip: u32,
    /// Its timestamp after the batch's.
    pub ts_delta: i64,
    /// Headers.
    pub headers: u8,
    /// Its exact bytes (a record read from a real partition): then `key`, `value` and `headers` only say whether
    /// it has a key, whether it is a tombstone and how many headers it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<RawRecord>,
}

/// A record's exact key, value and header bytes, in hex.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RawRecord {
    pub key: Option<String>,
    pub value: Option<String>,
    pub headers: String,
}

impl BatchSpec {
    /// A batch of `records` by `writer` at `timestamp`, no gap before it and no extra offset delta.
    fn data(
        writer: Writer,
        epoch: i16,
        sequence: i32,
        codec: Compression,
        records: Vec<RecSpec>,
        timestamp: i64,
    ) -> BatchSpec {
        BatchSpec { writer, epoch, sequence, codec, records, gap_before: 0, extra_delta: 0, timestamp, horizon: None }
    }

    /// A control batch of `marker` (a `Writer::Marker`) at `timestamp`: one record, no key, no value.
    fn marker(marker: Writer, epoch: i16, timestamp: i64) -> BatchSpec {
        let record = RecSpec { key: None, value: None, gap: false, skip: 0, ts_delta: 0, headers: 0, raw: None };
        BatchSpec::data(marker, epoch, -1, Compression::None, vec![record], timestamp)
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// One batch.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BatchSpec {
    pub writer: Writer,
    /// Its producer epoch (ignored for a plain batch).
    pub epoch: i16,
    /// Its first sequence number (producers only).
    pub sequence: i32,
    pub codec: Compression,
    /// Its records; none for a bare header an earlier cleaning left (a marker then has no record either).
    pub records: Vec<RecSpec>,
    /// Offsets skipped before it.
    pub gap_before: u32,
    /// Its last offset delta past its last record's.
    pub extra_delta: u32,
    /// Its first timestamp.
    pub timestamp: i64,
    /// A delete horizon an earlier cleaning stamped.
    pub horizon: Option<i64>,
}

/// Which producer snapshots the partition holds.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Snapshots {
    /// One at the base of segment `i` (for `i >= 1`), where `at_base[i]`.
    pub at_base: Vec<bool>,
    /// One at the log end (a broker's clean stop writes it).
    pub at_end: bool,
    /// One at the base offset of this batch (by index in the partition), which is not a segment's base.
    pub stray_at: Option<usize>,
}

/// A case. Positions given by batch index are turned into offsets by the writer: a batch's base offset, or the
/// log end when the index is past the last batch.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Case {
    pub seed: u64,
    /// The segments, in order; the last is the active one (possibly empty).
    pub segments: Vec<Vec<BatchSpec>>,
    pub now_ms: i64,
    pub buffer_bytes: u64,
    pub segment_bytes: u64,
    pub index_interval_bytes: u64,
    pub delete_retention_ms: i64,
    pub min_compaction_lag_ms: i64,
    /// The cleaner checkpoint, at this batch's base.
    pub checkpoint_at: Option<usize>,
    /// The log start offset, at this batch's base.
    pub log_start_at: Option<usize>,
    /// The high watermark, at this batch's base.
    pub high_watermark_at: Option<usize>,
    /// The broker stopped cleanly (`.kafka_cleanshutdown`).
    pub clean_shutdown: bool,
    pub snapshots: Snapshots,
}

impl Case {
    /// Every batch, in order.
    pub fn batches(&self) -> impl Iterator<Item = &BatchSpec> {
        self.segments.iter().flatten()
    }

    /// Batches in all.
    pub fn batch_count(&self) -> usize {
        self.segments.iter().map(Vec::len).sum()
    }

    /// True when a batch is compressed with snappy (whose bytes only records can be compared by: the `snap`
    /// crate and snappy-java pick other matches).
    pub fn has_snappy(&self) -> bool {
        self.batches().any(|b| b.codec == Compression::Snappy && !b.records.is_empty())
    }

    /// A one-line summary.
    pub fn describe(&self) -> String {
        let txn = self.batches().filter(|b| matches!(b.writer, Writer::Txn { .. } | Writer::Marker { .. })).count();
        format!(
            "seed {:#x}: {} segments, {} batches ({} transactional), buffer {} B, segment.bytes {}, now {}, \
             checkpoint {:?}, log start {:?}, high watermark {:?}, clean stop {}, snapshots {:?}",
            self.seed,
            self.segments.len(),
            self.batch_count(),
            txn,
            self.buffer_bytes,
            self.segment_bytes,
            self.now_ms,
            self.checkpoint_at,
            self.log_start_at,
            self.high_watermark_at,
            self.clean_shutdown,
            self.snapshots
        )
    }
}

/// A transactional producer as the generator drives it.
struct TxnProducer {
    id: i64,
    epoch: i16,
    sequence: i32,
    open: bool,
}

struct Draw(SplitMix64);

impl Draw {
    fn below(&mut self, n: u64) -> u64 {
        self.0.below(n.max(1))
    }
    fn chance(&mut self, p: f64) -> bool {
        self.0.unit() < p
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

const DAY_MS: i64 = 86_400_000;

impl Case {
    /// A random case from `seed`.
    pub fn generate(seed: u64) -> Case {
        let mut d = Draw(SplitMix64::new(seed));
        let tv2 = d.chance(0.5);
        let keys = d.pick(&[1u64, 2, 3, 5, 8, 13, 30, 100]);
        let batches_wanted = d.pick(&[1u64, 3, 8, 15, 25, 40, 60]) + d.below(5);
        let roll = d.pick(&[0.05, 0.15, 0.3, 0.5]);
        let artifacts = d.pick(&[0.0, 0.0, 0.1, 0.3]);
        let tombstones = d.pick(&[0.0, 0.1, 0.3, 0.6]);
        let unkeyed = d.pick(&[0.0, 0.0, 0.0, 0.05]);
        let compressed = d.pick(&[0.0, 0.3, 0.7]);
        let mut ts = 1_700_000_000_000 + d.below(1 << 30) as i64;
        let idempotent: Vec<i64> = (0..d.below(4)).map(|i| 1000 + i as i64).collect();
        let mut idempotent_seq = vec![0i32; idempotent.len()];
        let idempotent_epoch: Vec<i16> = idempotent.iter().map(|_| d.below(3) as i16).collect();
        let mut txn: Vec<TxnProducer> = (0..d.below(5))
            .map(|i| TxnProducer { id: 2000 + i as i64, epoch: d.below(50) as i16, sequence: 0, open: false })
            .collect();
        let mut coordinator_epoch = d.below(3) as i32;
        let mut segments: Vec<Vec<BatchSpec>> = vec![Vec::new()];
        for _ in 0..batches_wanted {
            ts += d.pick(&[1i64, 5, 100, 2_000, 60_000]);
            if d.chance(0.03) {
                ts += d.pick(&[DAY_MS / 24, DAY_MS / 2, DAY_MS, 3 * DAY_MS]);
            }
            let codec = if d.chance(compressed) {
                d.pick(&[
                    Compression::Gzip,
                    Compression::Lz4,
                    Compression::Zstd,
                    Compression::Zstd,
                    Compression::Lz4,
                    Compression::Snappy,
                ])
            } else {
                Compression::None
            };
            let records = |d: &mut Draw, allow_unkeyed: bool| -> Vec<RecSpec> {
                let n = d.pick(&[1u64, 1, 2, 3, 5, 8]);
                (0..n)
                    .map(|_| RecSpec {
                        key: if allow_unkeyed && d.chance(unkeyed) { None } else { Some(d.below(keys) as u16) },
                        value: if d.chance(tombstones) { None } else { Some(d.below(40) as u16) },
                        gap: false,
                        skip: 0,
                        ts_delta: d.below(3) as i64,
                        headers: if d.chance(0.1) { 1 + d.below(2) as u8 } else { 0 },
                        raw: None,
                    })
                    .collect()
            };
            let ends: Vec<usize> = (0..txn.len()).filter(|&i| txn[i].open).collect();
            let action = d.below(100);
            // Whether a marker made now ends a transaction with data (a cleaner empties only one that does not).
            let mut ends_data = false;
            let mut batch = if action < 8 && !ends.is_empty() || action < 3 && !txn.is_empty() {
                // A marker: ends an open transaction (or, rarely, an empty one).
                let i = if ends.is_empty() { d.below(txn.len() as u64) as usize } else { d.pick(&ends) };
                let p = &mut txn[i];
                ends_data = p.open;
                let commit = d.chance(0.6);
                let epoch = if tv2 { p.epoch.saturating_add(1) } else { p.epoch };
                p.epoch = epoch;
                p.open = false;
                p.sequence = if tv2 { 0 } else { p.sequence };
                if d.chance(0.05) {
                    coordinator_epoch += 1;
                }
                BatchSpec::marker(Writer::Marker { producer_id: p.id, commit, coordinator_epoch }, epoch, ts)
            } else if action < 40 && !txn.is_empty() {
                let i = d.below(txn.len() as u64) as usize;
                let recs = records(&mut d, false);
                let p = &mut txn[i];
                if !p.open && d.chance(0.02) {
                    // The producer restarted: a new epoch (its open transaction was ended by a marker above).
                    p.epoch = p.epoch.saturating_add(1);
                    p.sequence = 0;
                }
                p.open = true;
                let sequence = p.sequence;
                p.sequence += recs.len() as i32;
                BatchSpec::data(Writer::Txn { producer_id: p.id }, p.epoch, sequence, codec, recs, ts)
            } else if action < 65 && !idempotent.is_empty() {
                let i = d.below(idempotent.len() as u64) as usize;
                let recs = records(&mut d, false);
                let sequence = idempotent_seq[i];
                idempotent_seq[i] += recs.len() as i32;
                BatchSpec::data(
                    Writer::Idempotent { producer_id: idempotent[i] },
                    idempotent_epoch[i],
                    sequence,
                    codec,
                    recs,
                    ts,
                )
            } else {
                BatchSpec::data(Writer::Plain, -1, -1, codec, records(&mut d, true), ts)
            };
            // What an earlier cleaning leaves.
            if d.chance(artifacts) {
                match d.below(5) {
                    0 => batch.gap_before = 1 + d.below(3) as u32,
                    1 if !matches!(batch.writer, Writer::Marker { .. }) => batch.extra_delta = 1 + d.below(3) as u32,
                    2 if batch.records.len() > 1 => batch.records[1].gap = true,
                    3 if matches!(batch.writer, Writer::Marker { .. })
                        || batch.records.iter().any(|r| r.value.is_none()) =>
                    {
                        // Stamped: its horizon passed, or not yet.
                        batch.horizon = Some(if d.chance(0.5) { ts - d.below(1_000) as i64 } else { ts + DAY_MS });
                    }
                    // A cleaner empties a marker only once its transaction has no data left.
                    _ if matches!(batch.writer, Writer::Marker { .. }) && ends_data => {}
                    _ if !matches!(batch.writer, Writer::Plain) => {
                        // Emptied: a producer's batch (or a marker) an earlier cleaning kept as a bare header.
                        batch.records.clear();
                        if !matches!(batch.writer, Writer::Marker { .. }) {
                            batch.extra_delta = d.below(3) as u32;
                        }
                    }
                    _ => {}
                }
            }
            if let Some(seg) = segments.last_mut() {
                seg.push(batch);
            }
            if d.chance(roll) {
                segments.push(Vec::new());
            }
        }
        // Transactions left open mostly end, as a broker's coordinator ends them, unless one is left hanging.
        for p in txn.iter_mut().filter(|p| p.open) {
            if d.chance(0.7) {
                ts += 3;
                let epoch = if tv2 { p.epoch.saturating_add(1) } else { p.epoch };
                p.epoch = epoch;
                p.open = false;
                let marker = Writer::Marker { producer_id: p.id, commit: d.chance(0.6), coordinator_epoch };
                let b = BatchSpec::marker(marker, epoch, ts);
                if let Some(seg) = segments.last_mut() {
                    seg.push(b);
                }
                if d.chance(roll) {
                    segments.push(Vec::new());
                }
            }
        }
        // An empty closed segment cannot be (a broker never rolls an empty one): merge it into the next.
        let mut merged: Vec<Vec<BatchSpec>> = Vec::new();
        let last = segments.len() - 1;
        for (i, s) in segments.into_iter().enumerate() {
            if s.is_empty() && i < last {
                continue;
            }
            merged.push(s);
        }
        if merged.is_empty() {
            merged.push(Vec::new());
        }
        let count: usize = merged.iter().map(Vec::len).sum();
        let last_ts = ts;
        let now_ms =
            last_ts + d.pick(&[1i64, 1_000, 60_000, DAY_MS / 2, DAY_MS - 1, DAY_MS + 1, 2 * DAY_MS, 30 * DAY_MS]);
        let delete_retention_ms = d.pick(&[0i64, 1_000, 3_600_000, DAY_MS]);
        let min_compaction_lag_ms = if d.chance(0.15) { d.pick(&[1_000i64, 3_600_000, DAY_MS]) } else { 0 };
        let segment_bytes = d.pick(&[300u64, 1_000, 4_000, 1 << 20, 1 << 30]);
        let index_interval_bytes = d.pick(&[0u64, 1, 100, 300, 4096, 4096]);
        // From room for one key up to room for every key (skimpy's 24-byte slots at load factor 0.9).
        let slots_for = |k: u64| (k as f64 / 0.9).ceil() as u64 + 1;
        let buffer_bytes = 24
            * d.pick(&[
                slots_for(1),
                slots_for(2),
                slots_for(3),
                slots_for(keys / 2 + 1),
                slots_for(keys),
                slots_for(keys * 3),
                50_000,
            ]);
        let at = |d: &mut Draw, p: f64| d.chance(p).then(|| d.below(count as u64 + 1) as usize);
        let checkpoint_at = at(&mut d, 0.3);
        // Inside the first segment: a broker deletes segments wholly below the log start soon after it moves
        // (its retention check), and DeleteRecords moves it inside one.
        let first_len = merged.first().map_or(0, Vec::len) as u64;
        let log_start_at = d.chance(0.1).then(|| d.below(first_len.max(1)) as usize);
        let high_watermark_at = at(&mut d, 0.1);
        let clean_shutdown = d.chance(0.7);
        let segs = merged.len();
        let snapshots = match d.below(4) {
            0 => Snapshots::default(),
            1 => Snapshots { at_base: vec![true; segs], at_end: clean_shutdown, stray_at: None },
            2 => {
                Snapshots { at_base: (0..segs).map(|_| d.chance(0.5)).collect(), at_end: d.chance(0.5), stray_at: None }
            }
            _ => Snapshots {
                at_base: (0..segs).map(|_| d.chance(0.7)).collect(),
                at_end: d.chance(0.5),
                stray_at: (count > 0).then(|| d.below(count as u64) as usize),
            },
        };
        // A broker's clean stop always writes a snapshot at the log end (its load after one reads no batch, so the
        // open transactions come from that snapshot alone).
        let mut snapshots = snapshots;
        snapshots.at_end |= clean_shutdown;
        Case {
            seed,
            segments: merged,
            now_ms,
            buffer_bytes,
            segment_bytes,
            index_interval_bytes,
            delete_retention_ms,
            min_compaction_lag_ms,
            checkpoint_at,
            log_start_at,
            high_watermark_at,
            clean_shutdown,
            snapshots,
        }
    }
}
