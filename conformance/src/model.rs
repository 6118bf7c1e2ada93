//! Model-based property test: random sequences of appends, deletes, rolls, compactions, purges, reads,
//! restarts and crashes are applied to a real log and cleaner on any backend and to a small reference model
//! of the semantics, and the two are compared after every step.
//!
//! The real cleaner runs with each offset map and dedupe buffers from one key upwards (sized per map by
//! [`MapKind::bytes_for`], so every map holds the same number of keys), so most of its passes are partial; it
//! repeats passes until the dirty section is done. The reference follows every pass: where the real map
//! filled (its end offset) is checked against the reference's count of distinct keys (the map's capacity
//! exactly, and the record there carries a new key), and the reference then cleans up to that offset by the
//! rules (latest record of each mapped key, tombstone horizons, segment groups merged by size and named after
//! their first segment that keeps a record), taking segment sizes from the real log. After every pass the
//! log must be exactly the reference's, segment for segment, and show every key's latest value. The log syncs every append, so a crash between two operations (on the
//! crash-simulating backend; a clean restart elsewhere) must lose nothing. Unkeyed records (dropped by any
//! pass that reaches them) and a clock that moves past delete horizons are part of the sequences.

use std::collections::BTreeMap;
use std::sync::Arc;

use cleaner::{Cleaner, CleanerConfig, ManualClock, MapKind, PassOptions};
use log_core::{AppendRecord, Header, Log, LogConfig, Record, SyncPolicy};
use proptest::prelude::*;

use crate::harness::Harness;

const NOW: i64 = 1_000_000_000;
const HOUR: i64 = 3_600_000;
const RETENTION: i64 = cleaner::DEFAULT_DELETE_RETENTION_MS;

/// One step of a test sequence.
#[derive(Debug, Clone)]
pub enum Op {
    /// `PUT key value`.
    Put(u8, u8),
    /// `DEL key`.
    Del(u8),
    /// A record without a key (value given).
    PutUnkeyed(u8),
    /// Move the cleaner's clock forward by this many ms.
    Advance(i64),
    /// `ROLL`.
    Roll,
    /// Passes with a dedupe buffer that holds `keys` keys until the dirty section is clean.
    Compact {
        /// A purge pass first.
        purge: bool,
        /// Keys the dedupe buffer holds.
        keys: usize,
    },
    /// `READ offset`.
    Read(u64),
    /// Drop the log and open it again.
    Reopen,
    /// Crash (torn tail from this seed) and open again.
    Crash(u64),
}

/// Random operations, weighted towards appends.
pub fn op() -> impl Strategy<Value = Op> {
    let keys = prop_oneof![Just(1usize), Just(2), Just(3), Just(9), Just(2730)];
    prop_oneof![
        6 => (0u8..6, any::<u8>()).prop_map(|(k, v)| Op::Put(k, v)),
        2 => (0u8..6).prop_map(Op::Del),
        1 => any::<u8>().prop_map(Op::PutUnkeyed),
        1 => prop_oneof![Just(HOUR), Just(12 * HOUR), Just(RETENTION), Just(2 * RETENTION)].prop_map(Op::Advance),
        3 => Just(Op::Roll),
        2 => (any::<bool>(), keys).prop_map(|(purge, keys)| Op::Compact { purge, keys }),
        1 => (0u64..40).prop_map(Op::Read),
        1 => Just(Op::Reopen),
        1 => any::<u64>().prop_map(Op::Crash),
    ]
}

/// One record of the model: what a consumer can see, plus the delete horizon a pass stamped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MRec {
    offset: u64,
    key: Option<u8>,
    value: Option<u8>,
    horizon: Option<i64>,
}

#[derive(Debug)]
struct Model {
    /// Kafka's format keeps a cleaned group's head (named after its first segment, even when empty); the
    /// native format names it after the first segment that keeps a record and drops a group left empty.
    kafka: bool,
    closed: Vec<(u64, Vec<MRec>)>,
    active_base: u64,
    active: Vec<MRec>,
    next: u64,
    now: i64,
    checkpoint: u64,
}

impl Model {
    fn append(&mut self, key: Option<u8>, value: Option<u8>) {
        self.active.push(MRec { offset: self.next, key, value, horizon: None });
        self.next += 1;
    }

    fn roll(&mut self) {
        if !self.active.is_empty() {
            self.closed.push((self.active_base, std::mem::take(&mut self.active)));
            self.active_base = self.next;
        }
    }

    /// The distinct keys of the dirty records below `end` (what pass 1 maps).
    fn mapped(&self, end: u64) -> BTreeMap<u8, u64> {
        let mut latest = BTreeMap::new();
        for r in self.closed.iter().flat_map(|(_, s)| s) {
            if let Some(k) = r.key.filter(|_| r.offset >= self.checkpoint && r.offset < end) {
                latest.insert(k, r.offset);
            }
        }
        latest
    }

    /// A pass whose map took the dirty records below `end`: every closed segment below `end` is re-copied,
    /// keeping a record at or beyond `end`, or one whose key has no newer mapped offset (unkeyed records go;
    /// a tombstone kept for the first time is stamped with now + retention, one stamped before goes once its
    /// horizon has passed, or on a purge whatever its horizon). Adjacent segments merge while their sizes
    /// (`sizes`, by base, as the real log had them before the pass) stay within `segment_bytes`; a group
    /// becomes one segment named after its first segment that keeps a record, or disappears (native), or one
    /// named after its first segment, empty or not (Kafka).
    fn pass(&mut self, end: u64, purge: bool, sizes: &BTreeMap<u64, u64>, segment_bytes: u64) {
        let latest = self.mapped(end);
        let now = self.now;
        let mut groups: Vec<Vec<(u64, Vec<MRec>)>> = Vec::new();
        let mut rest = Vec::new();
        let mut group_bytes = 0;
        for (base, seg) in std::mem::take(&mut self.closed) {
            if base >= end {
                rest.push((base, seg));
                continue;
            }
            let size = sizes[&base];
            match groups.last_mut() {
                Some(g) if group_bytes + size <= segment_bytes => {
                    g.push((base, seg));
                    group_bytes += size;
                }
                _ => {
                    groups.push(vec![(base, seg)]);
                    group_bytes = size;
                }
            }
        }
        for group in groups {
            let mut name = if self.kafka { group.first().map(|(b, _)| *b) } else { None };
            let mut kept = Vec::new();
            for (base, seg) in group {
                for mut r in seg {
                    let keep = r.offset >= end || {
                        let expired = r.value.is_none() && r.horizon.is_some_and(|h| purge || now >= h);
                        r.key.is_some_and(|k| latest.get(&k).is_none_or(|&l| l <= r.offset)) && !expired
                    };
                    if !keep {
                        continue;
                    }
                    // Kafka's cleaner rewrites the segment holding the end offset whole, stamping a kept
                    // tombstone's batch past the end offset too.
                    if (r.offset < end || self.kafka) && r.value.is_none() && r.horizon.is_none() {
                        r.horizon = Some(now + RETENTION);
                    }
                    name.get_or_insert(base);
                    kept.push(r);
                }
            }
            if let Some(base) = name {
                self.closed.push((base, kept));
            }
        }
        self.closed.extend(rest);
        self.checkpoint = end;
    }

    fn read_from(&self, offset: u64) -> Vec<MRec> {
        self.closed.iter().flat_map(|(_, s)| s).chain(&self.active).filter(|r| r.offset >= offset).cloned().collect()
    }

    fn segments(&self) -> Vec<(u64, Vec<MRec>)> {
        let mut all = self.closed.clone();
        all.push((self.active_base, self.active.clone()));
        all
    }
}

fn to_mrec(r: &Record) -> MRec {
    assert_eq!(r.timestamp, r.offset as i64 * 7, "timestamp of offset {} changed", r.offset);
    assert_eq!(r.headers, vec![Header::new("h", r.offset.to_le_bytes())], "headers of offset {} changed", r.offset);
    MRec {
        offset: r.offset,
        key: r.key.as_deref().map(|k| k[0]),
        value: r.value.as_deref().map(|v| v[0]),
        horizon: r.delete_horizon,
    }
}

fn system_segments(log: &Log) -> Vec<(u64, Vec<MRec>)> {
    let snap = log.snapshot();
    let mut all: Vec<(u64, Vec<MRec>)> = snap
        .closed()
        .iter()
        .map(|s| {
            let recs = s.read_records().expect("valid records").iter().map(to_mrec).collect();
            (s.base(), recs)
        })
        .collect();
    let active = snap.active_records().expect("active readable");
    all.push((snap.active_base(), active.iter().map(to_mrec).collect()));
    all
}

/// The size of every closed segment of `log`, by base.
fn segment_sizes(log: &Log) -> BTreeMap<u64, u64> {
    log.snapshot().closed().iter().map(|s| (s.base(), s.size())).collect()
}

/// What a consumer that reads the whole log ends up believing: key → value of its latest record, deleted
/// keys absent.
fn value_view(segments: &[(u64, Vec<MRec>)]) -> BTreeMap<u8, u8> {
    let mut view = BTreeMap::new();
    for r in segments.iter().flat_map(|(_, s)| s) {
        let Some(key) = r.key else { continue };
        match r.value {
            Some(v) => view.insert(key, v),
            None => view.remove(&key),
        };
    }
    view
}

fn check_partial_pass(before: &[(u64, Vec<MRec>)], after: &[(u64, Vec<MRec>)]) {
    assert_eq!(value_view(before), value_view(after), "a pass changed what a consumer sees");
    let old: BTreeMap<u64, &MRec> = before.iter().flat_map(|(_, s)| s).map(|r| (r.offset, r)).collect();
    let mut previous = None;
    for r in after.iter().flat_map(|(_, s)| s) {
        let o = old.get(&r.offset).unwrap_or_else(|| panic!("offset {} appeared from nowhere", r.offset));
        assert_eq!((o.key, o.value), (r.key, r.value), "record at offset {} changed", r.offset);
        assert!(previous < Some(r.offset), "offsets out of order");
        previous = Some(r.offset);
    }
    assert_eq!(before.last(), after.last(), "the active segment was touched");
}

/// Appends to both; the log may roll by size first, and the model follows.
fn append(log: &Log, model: &mut Model, key: Option<u8>, value: Option<u8>) {
    let o = log.next_offset();
    let before = log.active_base();
    let headers = [Header::new("h", o.to_le_bytes())];
    let value = value.map(|v| [v]);
    let key_bytes = key.map(|k| [k]);
    let rec = AppendRecord {
        key: key_bytes.as_ref().map(|k| &k[..]),
        value: value.as_ref().map(|v| &v[..]),
        timestamp: o as i64 * 7,
        headers: &headers,
    };
    assert_eq!(log.append(&rec).expect("append"), o);
    if log.active_base() != before {
        model.roll();
    }
    model.append(key, value.map(|v| v[0]));
}

/// A cleaner with `map` in the smallest budget that holds `keys` keys of the model's one-byte keys.
pub fn cleaner_for(map: MapKind, keys: usize, clock: &Arc<ManualClock>) -> Cleaner {
    cleaner_on_threads(map, keys, clock, 1)
}

/// [`cleaner_for`] with `threads` copy threads (each group's segments judged on all of them).
pub fn cleaner_on_threads(map: MapKind, keys: usize, clock: &Arc<ManualClock>, threads: usize) -> Cleaner {
    // The external pass holds any number of keys: its buffer is as many entries as the others hold keys (16
    // at least), so that small ones spill a run every few records.
    let bytes = match map {
        MapKind::External => keys.max(16) * cleaner::external::ENTRY_BYTES,
        _ => map.bytes_for(keys, 0.9, 1),
    };
    let config = CleanerConfig { map, dedupe_buffer_bytes: bytes, threads, ..CleanerConfig::default() };
    Cleaner::new(config, Arc::clone(clock) as Arc<dyn cleaner::Clock>).expect("the budget holds the keys")
}

/// Applies `ops` to a log on `harness` cleaned with `map` and to the model, comparing after every step;
/// returns the log's segments after every step (so that maps can be compared with each other).
///
/// # Panics
/// When the log and the model disagree.
pub fn run(harness: &dyn Harness, map: MapKind, ops: &[Op], segment_bytes: u64) -> Vec<Vec<(u64, Vec<MRec>)>> {
    run_on_threads(harness, map, ops, segment_bytes, 1)
}

/// [`run`] with a cleaner of `threads` copy threads.
///
/// # Panics
/// When the log and the model disagree.
pub fn run_on_threads(
    harness: &dyn Harness,
    map: MapKind,
    ops: &[Op],
    segment_bytes: u64,
    threads: usize,
) -> Vec<Vec<(u64, Vec<MRec>)>> {
    let config = LogConfig { segment_bytes, index_interval_bytes: 64, sync: SyncPolicy::EveryAppend };
    let mut fixture = harness.fixture();
    let mut log = fixture.open_log(config.clone()).expect("open");
    let clock = Arc::new(ManualClock::new(NOW));
    let kafka = fixture.format() == log_core::Format::Kafka;
    let mut model =
        Model { kafka, closed: Vec::new(), active_base: 0, active: Vec::new(), next: 0, now: NOW, checkpoint: 0 };
    let mut states = Vec::with_capacity(ops.len());
    for op in ops {
        match *op {
            Op::Put(k, v) => append(&log, &mut model, Some(k), Some(v)),
            Op::Del(k) => append(&log, &mut model, Some(k), None),
            Op::PutUnkeyed(v) => append(&log, &mut model, None, Some(v)),
            Op::Advance(ms) => {
                clock.advance(ms);
                model.now += ms;
            }
            Op::Roll => {
                log.roll().expect("roll");
                model.roll();
            }
            Op::Compact { purge, keys } => {
                let mut cleaner = cleaner_on_threads(map, keys, &clock, threads);
                let capacity = cleaner.capacity();
                let mut before = system_segments(&log);
                let mut sizes = segment_sizes(&log);
                let mut passes = 0;
                let options = PassOptions { purge, ..PassOptions::default() };
                cleaner
                    .clean_until_clean(&log, options, |stats| {
                        passes += 1;
                        assert!(passes < 10_000, "passes do not converge");
                        let after = system_segments(&log);
                        check_partial_pass(&before, &after);
                        assert_eq!(log.cleaner_checkpoint(), stats.end_offset);
                        let mapped = model.mapped(stats.end_offset);
                        if stats.map_full {
                            assert!(stats.end_offset > stats.first_dirty_offset, "a partial pass made no progress");
                            assert_eq!(
                                mapped.len(),
                                capacity,
                                "the map filled at {} holding other than its capacity",
                                stats.end_offset
                            );
                            let refused = model.read_from(stats.end_offset);
                            let key = refused.first().and_then(|r| r.key).expect("a keyed record was refused");
                            // A full skimpy map refuses every key, one it holds included, as Kafka's does.
                            assert!(
                                map == MapKind::Skimpy || !mapped.contains_key(&key),
                                "the map refused key {key}, which it held"
                            );
                        } else {
                            assert_eq!(stats.end_offset, stats.active_base);
                        }
                        model.pass(stats.end_offset, purge && passes == 1, &sizes, segment_bytes);
                        assert_eq!(
                            after,
                            model.segments(),
                            "after pass {passes} of {op:?} on {} with {map}",
                            harness.name()
                        );
                        before = after;
                        sizes = segment_sizes(&log);
                        Ok(())
                    })
                    .expect("passes");
            }
            Op::Reopen => {
                drop(log);
                log = fixture.open_log(config.clone()).expect("reopen");
            }
            Op::Crash(seed) => {
                drop(log);
                fixture.crash(seed);
                log = fixture.open_log(config.clone()).expect("open after a crash");
            }
            Op::Read(o) => {
                let first = log.read(o).expect("read").map(|r| to_mrec(&r));
                let all: Vec<MRec> =
                    log.snapshot().reader(o).map(|r| r.map(|r| to_mrec(&r))).collect::<Result<_, _>>().expect("read");
                let want = model.read_from(o);
                assert_eq!(first.as_ref(), want.first(), "READ {o}");
                assert_eq!(all, want, "reading everything from {o}");
            }
        }
        let now = system_segments(&log);
        assert_eq!(now, model.segments(), "after {op:?} on {} with {map}", harness.name());
        assert_eq!(log.next_offset(), model.next);
        assert_eq!(log.cleaner_checkpoint(), model.checkpoint, "checkpoint after {op:?}");
        states.push(now);
    }
    states
}

/// Runs `ops` with every map (the first also with two copy threads), each checked against the model, and
/// checks that the maps but skimpy leave the same log after every step, partial passes included (they hold the
/// same number of keys, and the model's keys cannot collide in any of them); then
/// with the external pass, which the model follows pass by pass as it follows the maps (its passes are never
/// partial, so its log may differ from theirs between passes that theirs split).
///
/// # Panics
/// When a map disagrees with the model or with another map.
pub fn run_every_map(harness: &dyn Harness, ops: &[Op], segment_bytes: u64) {
    run(harness, MapKind::External, ops, segment_bytes);
    let runs: Vec<_> = MapKind::ALL.iter().map(|&m| (m, run(harness, m, ops, segment_bytes))).collect();
    // A full skimpy map refuses even a key it holds (as Kafka's does), so its partial passes end elsewhere
    // than the others': it is held to the model alone, the others to each other too.
    let others: Vec<_> = runs.iter().filter(|(m, _)| *m != MapKind::Skimpy).collect();
    for (map, states) in &others[1..] {
        for (i, (a, b)) in others[0].1.iter().zip(states).enumerate() {
            assert_eq!(a, b, "{} and {map} differ after step {i} ({:?})", others[0].0, ops[i]);
        }
    }
    // Two copy threads: a group's segments judged on both, written in order by one; the same log.
    let split = run_on_threads(harness, runs[0].0, ops, segment_bytes, 2);
    for (i, (a, b)) in runs[0].1.iter().zip(&split).enumerate() {
        assert_eq!(a, b, "{} on two threads differs after step {i} ({:?})", runs[0].0, ops[i]);
    }
}

/// Operations decoded from arbitrary bytes, three per operation (the `ops_model` fuzz target's input), and
/// the segment size to run them with.
pub fn ops_from_bytes(data: &[u8]) -> (Vec<Op>, u64) {
    let buffers = [1usize, 2, 3, 9, 2730];
    let advances = [HOUR, 12 * HOUR, RETENTION, 2 * RETENTION];
    let ops = data
        .chunks_exact(3)
        .take(120)
        .map(|b| match b[0] % 16 {
            0..=5 => Op::Put(b[1] % 6, b[2]),
            6 | 7 => Op::Del(b[1] % 6),
            8 => Op::PutUnkeyed(b[2]),
            9 => Op::Advance(advances[usize::from(b[1] % 4)]),
            10 | 11 => Op::Roll,
            12 | 13 => Op::Compact { purge: b[1] & 1 == 1, keys: buffers[usize::from(b[2]) % buffers.len()] },
            14 => Op::Read(u64::from(b[1] % 40)),
            _ if b[1] & 1 == 0 => Op::Reopen,
            _ => Op::Crash(u64::from(b[2])),
        })
        .collect();
    (ops, if data.len().is_multiple_of(2) { 1 << 30 } else { 120 })
}
