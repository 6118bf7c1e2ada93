//! Kafka's passes against a simple reference: random partitions (codecs, offset gaps, overridden last offset
//! deltas, unkeyed records, tombstones with and without delete horizons, idempotent producers, transactions of
//! three producers committed, aborted, empty or left open, spanning segments, a cleaner checkpoint) compacted
//! until clean with every map and buffers from a few keys up, compared record by record with what the
//! reference says a full compaction keeps: nothing at or past the last stable offset is touched, aborted
//! batches go whatever their keys and never shadow a committed key, committed transactional records are
//! deduplicated like any others, and markers stay.

use std::collections::BTreeMap;
use std::sync::Arc;

use cleaner::map::MapKind;
use cleaner::{Cleaner, CleanerConfig, Grouping, ManualClock, PassOptions};
use log_core::kafka::files::{SegmentFile, Stage, name};
use log_core::kafka::txn::AbortedTxn;
use log_core::kafka::{BatchHeader, Compression, RecordToWrite, new_header, write_batch};
use log_core::{CheckpointFile, Log, LogConfig, SegmentScan, SegmentStore};
use proptest::prelude::*;
use storage_mem::MemStore;

const NOW: i64 = 1_800_000_000_000;
const RETENTION: i64 = 86_400_000;

#[derive(Debug, Clone)]
struct RecordSpec {
    key: Option<u8>,
    tombstone: bool,
    gap: bool,
}

#[derive(Debug, Clone)]
struct BatchSpec {
    codec: Compression,
    producer: bool,
    transactional: bool,
    control: bool,
    /// Which of three transactional producers writes a transactional batch or a marker.
    txn_producer: u8,
    /// A marker's type: ABORT (else COMMIT).
    abort: bool,
    /// A delete horizon already set: in the past (`true`) or the future.
    horizon: Option<bool>,
    extra_delta: u8,
    records: Vec<RecordSpec>,
}

fn record() -> impl Strategy<Value = RecordSpec> {
    (prop::option::weighted(0.95, 0u8..8), prop::bool::weighted(0.15), prop::bool::weighted(0.1))
        .prop_map(|(key, tombstone, gap)| RecordSpec { key, tombstone, gap })
}

fn batch() -> impl Strategy<Value = BatchSpec> {
    (
        prop::sample::select(Compression::ALL.to_vec()),
        any::<bool>(),
        prop::bool::weighted(0.25),
        prop::bool::weighted(0.15),
        (0u8..3, any::<bool>()),
        prop::option::weighted(0.15, any::<bool>()),
        prop::sample::select(vec![0u8, 0, 0, 3]),
        prop::collection::vec(record(), 1..6),
    )
        .prop_map(
            |(codec, producer, transactional, control, (txn_producer, abort), horizon, extra_delta, records)| {
                BatchSpec {
                    codec,
                    producer,
                    transactional,
                    control,
                    txn_producer,
                    abort,
                    horizon,
                    extra_delta,
                    records,
                }
            },
        )
}

/// One written record, as the reference sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rec {
    offset: i64,
    timestamp: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
}

/// Builds the partition in a store; returns per batch (its header template, whether it is in the active
/// segment, its records).
fn build(segments: &[Vec<BatchSpec>], store: &dyn SegmentStore) -> Vec<(BatchHeader, bool, Vec<Rec>)> {
    let mut offset = 0i64;
    let mut ts = 1_700_000_000_000i64;
    let mut out = Vec::new();
    // As a broker writes them: the first offset of each producer's ongoing transaction, and for each segment
    // the .txnindex entries of the ABORT markers it holds.
    let mut ongoing: BTreeMap<i64, i64> = BTreeMap::new();
    for (si, batches) in segments.iter().enumerate() {
        let segment_base = offset;
        let mut txn_index = Vec::new();
        let file = store.create(&file_name(offset)).expect("create");
        for (bi, b) in batches.iter().enumerate() {
            let base = offset;
            let mut recs = Vec::new();
            if b.control {
                // A transaction marker: one control record (key: version 0 and the type; value: version 0 and
                // the coordinator's epoch), never compressed; a horizon says an earlier pass stamped it.
                ts += 7;
                recs.push(Rec {
                    offset,
                    timestamp: ts,
                    key: Some(vec![0, 0, 0, u8::from(!b.abort)]),
                    value: Some(vec![0, 0, 0, 0, 0, 5]),
                });
                offset += 1;
            }
            for (ri, r) in b.records.iter().enumerate().filter(|_| !b.control) {
                if r.gap && ri > 0 {
                    offset += 1;
                }
                ts += 7;
                recs.push(Rec {
                    offset,
                    timestamp: ts,
                    key: r.key.map(|k| vec![b'k', k]),
                    value: (!r.tombstone).then(|| format!("v{offset}").into_bytes()),
                });
                offset += 1;
            }
            let extra_delta = if b.control { 0 } else { b.extra_delta };
            let last_delta = (offset - 1 - base) as i32 + i32::from(extra_delta);
            offset = base + i64::from(last_delta) + 1;
            let mut h = new_header(base, last_delta);
            if b.control || b.transactional {
                h.producer_id = 100 + i64::from(b.txn_producer);
                h.producer_epoch = 2;
                h.base_sequence = bi as i32;
                h.attributes |= if b.control { 0x30 } else { 0x10 };
            } else if b.producer {
                h.producer_id = 7 + si as i64;
                h.producer_epoch = 1;
                h.base_sequence = bi as i32;
            }
            let horizon = b.horizon.map(|past| if past { NOW - 1 } else { NOW + 1 });
            let codec = if b.control { Compression::None } else { b.codec };
            let writes: Vec<RecordToWrite<'_>> = recs
                .iter()
                .map(|r| RecordToWrite {
                    offset: r.offset,
                    timestamp: r.timestamp,
                    key: r.key.as_deref(),
                    value: r.value.as_deref(),
                    header_count: 0,
                    header_bytes: &[],
                })
                .collect();
            let mut bytes = Vec::new();
            write_batch(&h, codec, horizon, &writes, &mut bytes, &mut Vec::new()).expect("write");
            file.append(&bytes).expect("append");
            if b.control {
                let first = ongoing.remove(&h.producer_id).unwrap_or(base);
                if b.abort {
                    let lso = ongoing.values().min().copied().unwrap_or(base + 1);
                    let entry = AbortedTxn {
                        producer_id: h.producer_id,
                        first_offset: first as u64,
                        last_offset: base as u64,
                        last_stable_offset: lso as u64,
                    };
                    entry.encode(&mut txn_index);
                }
            } else if b.transactional {
                ongoing.entry(h.producer_id).or_insert(base);
            }
            let mut template = h;
            if let Some(hz) = horizon {
                template.attributes |= 0x40;
                template.base_timestamp = hz;
            }
            out.push((template, si + 1 == segments.len(), recs));
        }
        if !txn_index.is_empty() {
            let f = store.create(&name(segment_base as u64, SegmentFile::TxnIndex, Stage::Live)).expect("create");
            f.append(&txn_index).expect("append");
            f.sync().expect("sync");
            f.seal().expect("seal");
        }
        file.sync().expect("sync");
        if si + 1 < segments.len() {
            file.seal().expect("seal");
        }
    }
    out
}

fn file_name(base: i64) -> String {
    name(base as u64, SegmentFile::Log, Stage::Live)
}

/// By Kafka's rules: the data records a compaction until clean keeps (markers are checked on their own), the
/// base offsets of the batches it copies whole, and the first offset of what no pass touches (the base of the
/// first uncleanable segment: too young, or holding the last stable offset; else the active segment's).
fn reference(
    batches: &[(BatchHeader, bool, Vec<Rec>)],
    seg_of: &[usize],
    first_dirty: i64,
    lag: i64,
) -> (Vec<Rec>, std::collections::BTreeSet<i64>, i64) {
    // The first dirty closed segment (one reaching the first dirty offset) holding a batch younger than the
    // lag, and every segment after it, is not cleaned (Kafka's first uncleanable offset is that segment's base).
    let young_segment = young_segment(batches, seg_of, first_dirty, lag);
    // Transactions: a producer's transactional batches open one at the first of them, its marker ends it. The
    // LSO is the first offset of the earliest one still open; nothing at or past it is cleaned (nor anything in
    // the segment holding it: below).
    let mut open: BTreeMap<i64, i64> = BTreeMap::new();
    let mut aborted: Vec<(i64, i64, i64)> = Vec::new();
    for (h, _, _) in batches {
        if h.is_control() {
            let first = open.remove(&h.producer_id).unwrap_or(h.base_offset);
            let abort = batches
                .iter()
                .find(|(b, _, _)| b.base_offset == h.base_offset)
                .is_some_and(|(_, _, r)| r.first().and_then(|r| r.key.as_ref()).is_some_and(|k| k[3] == 0));
            if abort {
                aborted.push((h.producer_id, first, h.base_offset));
            }
        } else if h.is_transactional() {
            open.entry(h.producer_id).or_insert(h.base_offset);
        }
    }
    // The first uncleanable offset is never below the checkpoint: an LSO below it leaves the dirty section
    // empty (a pass then recopies the clean section with an empty map), and still no batch at or past the LSO
    // is touched.
    let lso = open.values().min().copied().unwrap_or(i64::MAX);
    debug_assert_eq!(lso, last_stable_offset(batches));
    // Kafka rounds the first uncleanable offset down to the base of the closed segment holding it: an LSO
    // inside a closed segment leaves that segment, and every one after it, uncleaned.
    let active_base = batches.iter().find(|(_, active, _)| *active).map_or(i64::MAX, |(h, _, _)| h.base_offset);
    let lso_segment = (lso < active_base)
        .then(|| batches.iter().zip(seg_of).filter(|((h, _, _), _)| h.base_offset <= lso).map(|(_, &s)| s).max())
        .flatten();
    let first_uncleanable = [young_segment, lso_segment].into_iter().flatten().min();
    let uncleanable: Vec<bool> = seg_of.iter().map(|&s| first_uncleanable.is_some_and(|y| s >= y)).collect();
    let base_of = |y: usize| batches.iter().zip(seg_of).find(|(_, s)| **s == y).map(|((h, _, _), _)| h.base_offset);
    let lso_base = lso_segment.and_then(base_of);
    let held_from = first_uncleanable.and_then(base_of).unwrap_or(active_base);
    let limit = lso_base.unwrap_or(lso).max(first_dirty);
    let is_aborted = |h: &BatchHeader| {
        h.is_transactional()
            && !h.is_control()
            && aborted.iter().any(|&(p, first, last)| p == h.producer_id && (first..=last).contains(&h.base_offset))
    };
    let whole =
        |i: usize, h: &BatchHeader, active: bool| active || uncleanable[i] || h.base_offset >= lso || h.is_control();
    let mut latest: BTreeMap<Vec<u8>, i64> = BTreeMap::new();
    for (i, (h, active, recs)) in batches.iter().enumerate() {
        if whole(i, h, *active) || is_aborted(h) {
            continue;
        }
        for r in recs.iter().filter(|r| r.offset >= first_dirty && r.offset < limit) {
            if let Some(k) = &r.key {
                latest.insert(k.clone(), r.offset);
            }
        }
    }
    let mut kept = Vec::new();
    for (i, (h, active, recs)) in batches.iter().enumerate().filter(|(_, (h, _, _))| !h.is_control()) {
        for r in recs {
            let keep = whole(i, h, *active)
                || !is_aborted(h) && r.offset >= limit
                || !is_aborted(h)
                    && r.key.as_ref().is_some_and(|k| {
                        latest.get(k).is_none_or(|&l| r.offset >= l)
                            && !(r.value.is_none() && h.delete_horizon().is_some_and(|hz| NOW >= hz))
                    });
            if keep {
                kept.push(r.clone());
            }
        }
    }
    let whole_bases = batches
        .iter()
        .enumerate()
        .filter(|(i, (h, active, _))| whole(*i, h, *active))
        .map(|(_, (h, _, _))| h.base_offset)
        .collect();
    (kept, whole_bases, held_from)
}

/// Every `.txnindex` entry of the store: (segment base, producer, first offset, last offset).
fn txn_index_entries(store: &dyn SegmentStore) -> Vec<(i64, i64, i64, i64)> {
    let mut out = Vec::new();
    for name in store.list().expect("list") {
        let Some(stem) = name.strip_suffix(".txnindex") else { continue };
        let seg: i64 = stem.parse().expect("a segment base");
        let f = store.open(&name).expect("open");
        let mut bytes = vec![0; f.len() as usize];
        f.read_at(0, &mut bytes).expect("read");
        for e in AbortedTxn::decode_all(&bytes).expect("whole entries") {
            out.push((seg, e.producer_id, e.first_offset as i64, e.last_offset as i64));
        }
    }
    out
}

/// The first offset of the earliest transaction without a marker (`i64::MAX` when none is open).
fn last_stable_offset(batches: &[(BatchHeader, bool, Vec<Rec>)]) -> i64 {
    let mut open: BTreeMap<i64, i64> = BTreeMap::new();
    for (h, _, _) in batches {
        if h.is_control() {
            open.remove(&h.producer_id);
        } else if h.is_transactional() {
            open.entry(h.producer_id).or_insert(h.base_offset);
        }
    }
    open.values().min().copied().unwrap_or(i64::MAX)
}

/// The first dirty closed segment holding a batch younger than the lag.
fn young_segment(
    batches: &[(BatchHeader, bool, Vec<Rec>)],
    seg_of: &[usize],
    first_dirty: i64,
    lag: i64,
) -> Option<usize> {
    let last_of_segment =
        |s: usize| batches.iter().zip(seg_of).filter(|(_, t)| **t == s).map(|((h, _, _), _)| h.last_offset()).max();
    batches
        .iter()
        .zip(seg_of)
        .find(|((_, active, recs), s)| {
            !active
                && lag > 0
                && last_of_segment(**s).is_some_and(|l| l >= first_dirty)
                && recs.iter().map(|r| r.timestamp).max().is_some_and(|m| m > NOW - lag)
        })
        .map(|(_, &s)| s)
}

/// An output batch: (base offset, last offset, delete horizon, holds a tombstone, record count).
type OutBatch = (i64, i64, Option<i64>, bool, i32);

/// An output marker: (base offset, producer, delete horizon).
type OutMarker = (i64, i64, Option<i64>);

/// Every record of the data batches of a partition, its data batches, and its markers apart.
fn read_all(log: &Log) -> (Vec<Rec>, Vec<OutBatch>, Vec<OutMarker>) {
    let snapshot = log.snapshot();
    let mut recs = Vec::new();
    let mut batches = Vec::new();
    let mut markers = Vec::new();
    let mut scratch = Vec::new();
    let scans: Vec<SegmentScan<'_>> = snapshot
        .closed()
        .iter()
        .map(|s| s.scan())
        .chain(std::iter::once(SegmentScan::new(
            log.format(),
            snapshot.active_name(),
            snapshot.active_source(),
            0,
            snapshot.active_len(),
            true,
        )))
        .collect();
    for mut scan in scans {
        while let Some(window) = scan.next_window().expect("window") {
            for placed in window.batches() {
                let placed = placed.expect("batch");
                let h = *placed.batch.kafka_header().expect("a Kafka batch");
                if h.is_control() {
                    markers.push((h.base_offset, h.producer_id, h.delete_horizon()));
                    continue;
                }
                let mut tombstone = false;
                for r in placed.batch.records(&mut scratch).expect("records") {
                    let r = r.expect("record");
                    tombstone |= r.value.is_none();
                    recs.push(Rec {
                        offset: r.offset as i64,
                        timestamp: r.timestamp,
                        key: r.key.map(<[u8]>::to_vec),
                        value: r.value.map(<[u8]>::to_vec),
                    });
                }
                batches.push((h.base_offset, h.last_offset(), h.delete_horizon(), tombstone, h.records_count));
            }
        }
    }
    (recs, batches, markers)
}

proptest! {
    // 400 cases a run; PROPTEST_CASES asks for more (a long run before a release).
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(400)
    ))]

    #[test]
    fn compaction_until_clean_keeps_what_the_reference_keeps(
        segments in prop::collection::vec(prop::collection::vec(batch(), 1..5), 1..5),
        map in prop::sample::select(MapKind::WITH_EXTERNAL.to_vec()),
        small_buffer in any::<bool>(),
        checkpoint_share in 0u8..3,
        merge_segments in any::<bool>(),
        young_from in prop::option::weighted(0.3, 0i64..3000),
        threads in 1usize..4,
    ) {
        // min.compaction.lag.ms such that batches written after `young_from` ms are too young to clean.
        let lag = young_from.map_or(0, |y| NOW - (1_700_000_000_000 + y));
        let source: Arc<dyn SegmentStore> = Arc::new(MemStore::new());
        let batches = build(&segments, &*source);
        let end = batches.last().map_or(0, |(h, _, _)| h.last_offset());
        let first_dirty = end * i64::from(checkpoint_share) / 4;
        let seg_of: Vec<usize> = segments.iter().enumerate().flat_map(|(i, b)| std::iter::repeat_n(i, b.len())).collect();
        let (want, whole_bases, held_from) = reference(&batches, &seg_of, first_dirty, lag);
        let buffer = if small_buffer { map.bytes_for(3, 0.9, 2) } else { 1 << 20 };
        let config = LogConfig { segment_bytes: 1 << 30, ..LogConfig::default() };
        let log = Log::open(Arc::clone(&source), log_core::OpenOptions::kafka(config, CheckpointFile::Memory)).expect("open");
        // A segment's transactions, gathered as its load walked its batches, are what a walk of its headers
        // alone reads.
        for s in log.snapshot().closed() {
            let walked = log_core::kafka::txn::SegmentTxns::scan(s.source(), s.name(), s.size()).expect("walk");
            prop_assert_eq!(&*s.transactions().expect("loaded"), &walked, "{}", s.name());
        }
        log.set_cleaner_checkpoint(first_dirty as u64);
        // Several threads: a group's segments are judged on all of them and written in order by one.
        let cleaner_config = CleanerConfig { map, dedupe_buffer_bytes: buffer, threads, ..CleanerConfig::default() };
        let mut cleaner = Cleaner::new(cleaner_config, Arc::new(ManualClock::new(NOW))).expect("map");
        let options = PassOptions {
            delete_retention_ms: RETENTION,
            min_compaction_lag_ms: lag,
            grouping: if merge_segments { Grouping::BySize } else { Grouping::None },
            ..PassOptions::default()
        };
        let mut passes = 0;
        let mut first = first_dirty as u64;
        cleaner
            .clean_until_clean(&log, options, |stats| {
                passes += 1;
                assert!(passes < 200, "no progress");
                if stats.map_full {
                    assert!(stats.end_offset > first, "a pass moves on");
                }
                first = stats.end_offset;
                Ok(())
            })
            .expect("passes");
        // The segments the passes wrote give the transactions their writers folded as they wrote (none read
        // back): what a walk of their headers reads.
        for s in log.snapshot().closed() {
            let walked = log_core::kafka::txn::SegmentTxns::scan(s.source(), s.name(), s.size()).expect("walk");
            prop_assert_eq!(&*s.transactions().expect("written"), &walked, "{}", s.name());
        }
        let input = Arc::clone(log.store());
        let (got, out_batches, out_markers) = read_all(&log);
        // Kafka 4.4 keeps the batch whose next offset is the high watermark (the log end here), emptied if
        // need be: the active segment's last.
        let round_end = end + 1;
        prop_assert_eq!(&got, &want);
        // Markers: each kept as it was, or stamped with this run's horizon (its transaction's data gone), or
        // removed because its horizon had passed; one in a segment no pass touches (from the one holding the
        // LSO, or too young, on) is never removed.
        for (h, _, _) in batches.iter().filter(|(h, _, _)| h.is_control()) {
            let out = out_markers.iter().find(|m| m.0 == h.base_offset);
            match out {
                Some(&(_, _, horizon)) => prop_assert!(
                    horizon == h.delete_horizon()
                        || (h.delete_horizon().is_none() && horizon == Some(NOW + RETENTION))
                        || (horizon.is_none() && h.last_offset() + 1 == round_end),
                    "marker {} horizon {:?} from {:?}", h.base_offset, horizon, h.delete_horizon()
                ),
                None => prop_assert!(
                    h.delete_horizon().is_some_and(|hz| NOW >= hz) && h.base_offset < held_from,
                    "marker {} removed before its horizon", h.base_offset
                ),
            }
        }
        // Every aborted batch left holding records is covered by a .txnindex entry in the segment holding its
        // marker, so a read_committed reader skips it.
        let index = txn_index_entries(&*input);
        for &(base, _, _, _, count) in &out_batches {
            let Some((h, _, _)) = batches.iter().find(|(h, _, _)| h.base_offset == base) else { continue };
            if count == 0 || !h.is_transactional() {
                continue;
            }
            let marker = batches.iter().find(|(m, _, _)| m.is_control() && m.producer_id == h.producer_id && m.base_offset > base);
            let aborted = marker.is_some_and(|(_, _, r)| r[0].key.as_ref().is_some_and(|k| k[3] == 0));
            if aborted {
                let m = marker.map(|(m, _, _)| m.base_offset).expect("marker");
                prop_assert!(out_markers.iter().any(|o| o.0 == m), "the marker of aborted batch {} stays", base);
                prop_assert!(
                    index.iter().any(|&(seg, p, first, last)| p == h.producer_id && first <= base && last == m && seg <= m),
                    "aborted batch {} is in no .txnindex: {:?}", base, index
                );
            }
        }
        // No .txnindex outlives its segment.
        for name in input.list().expect("list") {
            if let Some(stem) = name.strip_suffix(".txnindex") {
                prop_assert!(input.open(&format!("{stem}.log")).is_ok(), "{} has no .log", name);
            }
        }
        let source_ends: BTreeMap<i64, i64> = batches.iter().map(|(h, _, _)| (h.base_offset, h.last_offset())).collect();
        for &(base, last, horizon, tombstone, count) in &out_batches {
            // Every batch keeps its original offset range.
            prop_assert_eq!(source_ends.get(&base), Some(&last));
            // A kept tombstone's batch has a delete horizon (new ones: now + delete.retention.ms), unless the
            // batch was copied whole (active or too young segment, transaction, marker).
            let was = batches.iter().find(|(h, _, _)| h.base_offset == base).and_then(|(h, _, _)| h.delete_horizon());
            if tombstone && !whole_bases.contains(&base) {
                prop_assert_eq!(horizon, was.or(Some(NOW + RETENTION)));
            }
            if count == 0 {
                prop_assert!(
                    last + 1 == round_end || batches.iter().any(|(h, _, _)| h.base_offset == base && h.producer_id >= 0),
                    "only a producer's batch, or the round's last, is kept empty"
                );
            }
        }
        // The batch ending the round is never removed (Kafka's RETAIN_EMPTY: "so that last offset
        // information is not lost"), emptied or not.
        if let Some((h, _, _)) = batches.iter().find(|(h, _, _)| h.last_offset() + 1 == round_end) {
            let kept = out_batches.iter().any(|b| b.0 == h.base_offset) || out_markers.iter().any(|m| m.0 == h.base_offset);
            prop_assert!(kept, "the batch ending the round at {} was removed", round_end);
        }
        // The partition ends where it ended.
        let out_end = out_batches.iter().map(|b| b.1).chain(out_markers.iter().map(|m| m.0)).max();
        prop_assert_eq!(out_end, Some(end));
        // Closed segments are merged into one when segment.bytes allows, never with the active one.
        let names: Vec<String> = input.list().expect("list").into_iter().filter(|n| n.ends_with(".log")).collect();
        let active_base = batches.iter().find(|(_, a, _)| *a).map(|(h, _, _)| h.base_offset).expect("active");
        prop_assert!(names.contains(&file_name(active_base)), "{:?}", names);
        // Too young segments are copied as they are, each in its own file.
        let young_segment = young_segment(&batches, &seg_of, first_dirty, lag);
        let young = young_segment.map_or(0, |y| segments.len() - 1 - y);
        if merge_segments {
            // Segments from the one holding the last stable offset on are not cleaned either.
            let lso = last_stable_offset(&batches);
            let closed_bases: std::collections::BTreeSet<i64> =
                batches.iter().zip(&seg_of).filter(|((_, a, _), _)| !a).map(|((h, _, _), s)| (*s, h)).fold(
                    BTreeMap::new(),
                    |mut m: BTreeMap<usize, i64>, (s, h)| {
                        m.entry(s).or_insert(h.base_offset);
                        m
                    },
                ).into_values().collect();
            // From the one holding the LSO (Kafka rounds the first uncleanable offset down to its base).
            let from = if lso < active_base { closed_bases.range(..=lso).next_back().copied().unwrap_or(lso) } else { lso };
            let held = closed_bases.iter().filter(|&&b| b >= from).count();
            prop_assert!(names.len() <= 2 + young + held, "{:?}", names);
        } else {
            let closed_with_records = segments.len() - 1;
            prop_assert!(names.len() <= closed_with_records + 1, "{:?}", names);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(200)
    ))]

    /// `auto` (`one_pass`) in a buffer of Kafka's map of a few keys takes the external pass at once wherever the
    /// dirty section has more offsets than the map holds keys and is at least the size of the log before it,
    /// and the map otherwise. Either way it says the map filled exactly when the map's own pass fills (but for
    /// a section of exactly the map's keys, which the external route counts as filling), and where the map
    /// holds the section, its one pass leaves the map's files, byte for byte.
    #[test]
    fn auto_tells_a_full_map_and_leaves_the_maps_own_files_where_it_holds(
        segments in prop::collection::vec(prop::collection::vec(batch(), 1..5), 1..5),
        checkpoint_share in 0u8..3,
        merge_segments in any::<bool>(),
        threads in 1usize..4,
        buffer_keys in 1usize..10,
    ) {
        let run = |one_pass: bool, buffer: usize| {
            let store = Arc::new(MemStore::new());
            let batches = build(&segments, &*store);
            let end = batches.last().map_or(0, |(h, _, _)| h.last_offset());
            let config = LogConfig { segment_bytes: 1 << 30, ..LogConfig::default() };
            let source = Arc::clone(&store) as Arc<dyn SegmentStore>;
            let log = Log::open(source, log_core::OpenOptions::kafka(config, CheckpointFile::Memory)).expect("open");
            log.set_cleaner_checkpoint((end * i64::from(checkpoint_share) / 4) as u64);
            let cleaner_config =
                CleanerConfig { map: MapKind::Skimpy, dedupe_buffer_bytes: buffer, threads, one_pass, ..CleanerConfig::default() };
            let mut cleaner = Cleaner::new(cleaner_config, Arc::new(ManualClock::new(NOW))).expect("map");
            let options = PassOptions {
                delete_retention_ms: RETENTION,
                grouping: if merge_segments { Grouping::BySize } else { Grouping::None },
                ..PassOptions::default()
            };
            let stats = cleaner.clean(&log, options).expect("pass");
            (stats, crate::written::files(&store))
        };
        let small = MapKind::Skimpy.bytes_for(buffer_keys, 0.9, 1);
        let (map, map_files) = run(false, small);
        let (auto, auto_files) = run(true, small);
        let edge = !map.map_full && map.offset_map.entries == map.offset_map.capacity;
        prop_assert!(
            auto.fell_back.is_some() == map.map_full || (edge && auto.map == "external"),
            "auto (map {}) says {:?}; the map filled: {}", auto.map, auto.fell_back, map.map_full
        );
        if !map.map_full {
            prop_assert_eq!(auto.end_offset, map.end_offset);
            prop_assert_eq!(auto.pass2.records_kept, map.pass2.records_kept);
            prop_assert!(auto_files == map_files, "auto (map {}) wrote other files than the map", auto.map);
        }
    }
}
