//! Kafka's batch rules, one test each, on partitions built batch by batch: a producer's last batch stays,
//! emptied, when a pass drops its every record (its producer id, epoch and sequence are the producer's state);
//! any other emptied batch goes. Transactions: an aborted transaction's batches go whatever their keys and
//! never shadow a committed key; committed transactional records are deduplicated like others; an open
//! transaction holds the cleaner at its first offset (the last stable offset).

use std::sync::Arc;

use cleaner::{Cleaner, CleanerConfig, ManualClock, MapKind, PassOptions};
use log_core::kafka::files::{SegmentFile, Stage, name};
use log_core::kafka::txn::AbortedTxn;
use log_core::kafka::{Compression, RecordToWrite, new_header, write_batch};
use log_core::{CheckpointFile, Format, Log, LogConfig, SegmentStore};
use storage_mem::MemStore;

/// One batch: its base offset, producer (id, epoch, base sequence) if any, and its records' keys.
struct Spec {
    base: i64,
    producer: Option<(i64, i16, i32)>,
    keys: &'static [&'static str],
    kind: Kind,
}

/// A plain data batch, a transactional one, or a transaction marker (keys then ignored: one control record).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Plain,
    Txn,
    Commit,
    Abort,
}
use Kind::{Abort, Commit, Plain, Txn};

/// Writes `closed` as one closed segment and an empty active segment after it.
fn partition(closed: &[Spec]) -> Arc<dyn SegmentStore> {
    partition_of_segments(&[closed])
}

/// Writes each of `segments` as a closed segment (the first based at 0, each next at the offset after the
/// last record of the one before) and an empty active segment after them.
fn partition_of_segments(segments: &[&[Spec]]) -> Arc<dyn SegmentStore> {
    let store: Arc<dyn SegmentStore> = Arc::new(MemStore::new());
    let mut next = 0;
    for closed in segments {
        next = write_closed_segment(&store, next, closed);
    }
    store.create(&name(next as u64, SegmentFile::Log, Stage::Live)).expect("active");
    store
}

/// Writes `closed` as a sealed segment based at `base`; returns the offset after its last record.
fn write_closed_segment(store: &Arc<dyn SegmentStore>, base: i64, closed: &[Spec]) -> i64 {
    let file = store.create(&name(base as u64, SegmentFile::Log, Stage::Live)).expect("create");
    let mut next = base;
    for b in closed {
        let marker = [0, 0, 0, u8::from(b.kind == Commit)];
        let keys: Vec<&[u8]> = match b.kind {
            Commit | Abort => vec![&marker[..]],
            Plain | Txn => b.keys.iter().map(|k| k.as_bytes()).collect(),
        };
        let values: Vec<Vec<u8>> = match b.kind {
            Commit | Abort => vec![vec![0, 0, 0, 0, 0, 5]],
            Plain | Txn => (0..keys.len()).map(|i| format!("v{}", b.base + i as i64).into_bytes()).collect(),
        };
        let records: Vec<RecordToWrite<'_>> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| RecordToWrite {
                offset: b.base + i as i64,
                timestamp: 1_000 + b.base + i as i64,
                key: Some(k),
                value: Some(&values[i]),
                header_count: 0,
                header_bytes: &[],
            })
            .collect();
        let mut h = new_header(b.base, keys.len() as i32 - 1);
        if let Some((id, epoch, seq)) = b.producer {
            (h.producer_id, h.producer_epoch, h.base_sequence) = (id, epoch, seq);
        }
        h.attributes |= match b.kind {
            Plain => 0,
            Txn => 0x10,
            Commit | Abort => 0x30,
        };
        let mut bytes = Vec::new();
        write_batch(&h, Compression::None, None, &records, &mut bytes, &mut Vec::new()).expect("batch");
        file.append(&bytes).expect("append");
        next = b.base + keys.len() as i64;
    }
    file.sync().expect("sync");
    file.seal().expect("seal");
    next
}

/// Writes the closed segment's `.txnindex` holding `entry`.
fn write_txn_index(store: &Arc<dyn SegmentStore>, entry: AbortedTxn) {
    let mut bytes = Vec::new();
    entry.encode(&mut bytes);
    let f = store.create(&name(0, SegmentFile::TxnIndex, Stage::Live)).expect("create");
    f.append(&bytes).expect("append");
    f.sync().expect("sync");
}

/// `(base offset, last offset, records, producer id)` of every batch after one full pass.
fn after_a_pass(store: Arc<dyn SegmentStore>) -> Vec<(i64, i64, i32, i64)> {
    let log =
        Log::open(store, log_core::OpenOptions::kafka(LogConfig::default(), CheckpointFile::Memory)).expect("open");
    let config = CleanerConfig { map: MapKind::FullKey, dedupe_buffer_bytes: 1 << 20, ..CleanerConfig::default() };
    let mut cleaner = Cleaner::new(config, Arc::new(ManualClock::new(5_000))).expect("cleaner");
    cleaner.clean(&log, PassOptions::default()).expect("pass");
    let mut out = Vec::new();
    for s in log.snapshot().closed() {
        s.for_each_batch(|p| {
            let h = p.batch.kafka_header().expect("kafka");
            out.push((h.base_offset, h.last_offset(), h.records_count, h.producer_id));
            Ok(())
        })
        .expect("batches");
    }
    out
}

#[test]
fn a_producers_emptied_last_batch_stays_and_its_other_emptied_batches_go() {
    let store = partition(&[
        // Producer 7's only batch: its record is superseded below.
        Spec { base: 0, producer: Some((7, 1, 0)), keys: &["x"], kind: Plain },
        // Producer 8: two batches, both emptied; only the second is its last.
        Spec { base: 1, producer: Some((8, 2, 0)), keys: &["y"], kind: Plain },
        Spec { base: 2, producer: Some((8, 2, 1)), keys: &["z"], kind: Plain },
        // A plain batch, emptied too: it goes.
        Spec { base: 3, producer: None, keys: &["w"], kind: Plain },
        Spec { base: 4, producer: None, keys: &["x", "y", "z", "w"], kind: Plain },
    ]);
    assert_eq!(
        after_a_pass(store),
        vec![(0, 0, 0, 7), (2, 2, 0, 8), (4, 7, 4, -1)],
        "producer 7's and 8's last batches stay, empty, with their offsets; the rest of the emptied batches go"
    );
}

#[test]
fn a_producers_last_batch_later_in_the_log_lets_its_earlier_emptied_batch_go() {
    let store = partition(&[
        Spec { base: 0, producer: Some((7, 1, 0)), keys: &["x"], kind: Plain },
        Spec { base: 1, producer: None, keys: &["x"], kind: Plain },
        // Producer 7 wrote again: this is its last batch, and it keeps its record.
        Spec { base: 2, producer: Some((7, 1, 1)), keys: &["q"], kind: Plain },
    ]);
    assert_eq!(after_a_pass(store), vec![(1, 1, 1, -1), (2, 2, 1, 7)]);
}

#[test]
fn an_aborted_transaction_goes_whatever_its_keys_and_never_shadows_a_committed_key() {
    let store = partition(&[
        Spec { base: 0, producer: None, keys: &["a"], kind: Plain },
        // Producer 50's transaction writes `a` and is aborted: `a` at offset 0 is still the latest committed.
        Spec { base: 1, producer: Some((50, 0, 0)), keys: &["a", "n"], kind: Txn },
        Spec { base: 3, producer: Some((50, 0, 2)), keys: &[], kind: Abort },
        // Producer 51 commits `b` twice: the first is superseded like any record.
        Spec { base: 4, producer: Some((51, 0, 0)), keys: &["b"], kind: Txn },
        Spec { base: 5, producer: Some((51, 0, 1)), keys: &[], kind: Commit },
        Spec { base: 6, producer: Some((51, 0, 2)), keys: &["b"], kind: Txn },
        Spec { base: 7, producer: Some((51, 0, 3)), keys: &[], kind: Commit },
    ]);
    assert_eq!(
        after_a_pass(store),
        vec![
            (0, 0, 1, -1),
            // Producer 50's aborted batch is its last data batch: kept empty for its state, as Kafka keeps it.
            (1, 2, 0, 50),
            (3, 3, 1, 50),
            (5, 5, 1, 51),
            (6, 6, 1, 51),
            (7, 7, 1, 51),
        ],
        "the aborted records and the superseded committed one go; every marker stays"
    );
}

#[test]
fn an_aborted_batch_that_is_not_its_producers_last_goes_entirely() {
    let store = partition(&[
        Spec { base: 0, producer: Some((50, 0, 0)), keys: &["a"], kind: Txn },
        Spec { base: 1, producer: Some((50, 0, 1)), keys: &[], kind: Abort },
        Spec { base: 2, producer: Some((50, 0, 2)), keys: &["c"], kind: Txn },
        Spec { base: 3, producer: Some((50, 0, 3)), keys: &[], kind: Commit },
    ]);
    assert_eq!(after_a_pass(store), vec![(1, 1, 1, 50), (2, 2, 1, 50), (3, 3, 1, 50)]);
}

#[test]
fn an_open_transaction_holds_the_cleaner_at_its_first_offset() {
    let store = partition(&[
        Spec { base: 0, producer: None, keys: &["a"], kind: Plain },
        Spec { base: 1, producer: None, keys: &["a"], kind: Plain },
        // Producer 60's transaction is still open: the last stable offset is 2.
        Spec { base: 2, producer: Some((60, 0, 0)), keys: &["a"], kind: Txn },
        Spec { base: 3, producer: None, keys: &["a"], kind: Plain },
        Spec { base: 4, producer: None, keys: &["a"], kind: Plain },
    ]);
    let log = Log::open(Arc::clone(&store), log_core::OpenOptions::kafka(LogConfig::default(), CheckpointFile::Memory))
        .expect("open");
    let section = log.dirty_section(5_000, 0);
    // As Kafka's cleaner (`LogToClean`): the first uncleanable offset is the base of the segment holding the
    // LSO, so that segment (here the only closed one) is neither mapped nor rewritten.
    assert_eq!((section.last_stable_offset, section.first_uncleanable_offset), (Some(2), 0));
    drop(log);
    assert_eq!(
        after_a_pass(store),
        vec![(0, 0, 1, -1), (1, 1, 1, -1), (2, 2, 1, 60), (3, 3, 1, -1), (4, 4, 1, -1)],
        "nothing goes: the segment holding the LSO is left as it is, offset 0 with it"
    );
}

#[test]
fn a_closed_segment_holding_the_last_stable_offset_is_neither_mapped_nor_rewritten() {
    // The shape a broker writes when a transaction begins just before a roll: the LSO (4) lies inside the last
    // closed segment (3-5), records before it included.
    let store = partition_of_segments(&[
        &[
            Spec { base: 0, producer: None, keys: &["a"], kind: Plain },
            Spec { base: 1, producer: None, keys: &["a"], kind: Plain },
            Spec { base: 2, producer: None, keys: &["b"], kind: Plain },
        ],
        &[
            Spec { base: 3, producer: None, keys: &["a"], kind: Plain },
            Spec { base: 4, producer: Some((60, 0, 0)), keys: &["b"], kind: Txn },
            Spec { base: 5, producer: None, keys: &["a"], kind: Plain },
        ],
    ]);
    let log = Log::open(Arc::clone(&store), log_core::OpenOptions::kafka(LogConfig::default(), CheckpointFile::Memory))
        .expect("open");
    let section = log.dirty_section(5_000, 0);
    assert_eq!(
        (section.last_stable_offset, section.first_uncleanable_offset, section.first_uncleanable_base),
        (Some(4), 3, 3),
        "Kafka's LogToClean rounds the first uncleanable offset down to the base of the segment holding it"
    );
    assert!(section.held_by_last_stable_offset);
    drop(log);
    // Only offsets 0-2 are mapped: offset 0 goes; offset 1 stays, though offset 3 (before the LSO, in the held
    // segment) supersedes it; the held segment is as it was.
    assert_eq!(
        after_a_pass(store),
        vec![(1, 1, 1, -1), (2, 2, 1, -1), (3, 3, 1, -1), (4, 4, 1, 60), (5, 5, 1, -1)],
        "the segment holding the LSO is neither mapped nor rewritten"
    );
}

/// `(base offset, records, delete horizon)` of every batch and the `.txnindex` entries `(producer, first,
/// last)` of the closed segments after each of a pass run at each of `clocks`.
type Seen = (Vec<(i64, i32, Option<i64>)>, Vec<(i64, i64, i64)>);

fn after_passes(store: &Arc<dyn SegmentStore>, clocks: &[i64]) -> Vec<Seen> {
    let log = Log::open(Arc::clone(store), log_core::OpenOptions::kafka(LogConfig::default(), CheckpointFile::Memory))
        .expect("open");
    let mut out = Vec::new();
    for &now in clocks {
        let config = CleanerConfig { map: MapKind::FullKey, dedupe_buffer_bytes: 1 << 20, ..CleanerConfig::default() };
        let mut cleaner = Cleaner::new(config, Arc::new(ManualClock::new(now))).expect("cleaner");
        let options = PassOptions { delete_retention_ms: 1_000, ..PassOptions::default() };
        cleaner.clean(&log, options).expect("pass");
        let mut batches = Vec::new();
        for s in log.snapshot().closed() {
            s.for_each_batch(|p| {
                let h = p.batch.kafka_header().expect("kafka");
                batches.push((h.base_offset, h.records_count, h.delete_horizon()));
                Ok(())
            })
            .expect("batches");
        }
        let mut entries = Vec::new();
        for name in store.list().expect("list").into_iter().filter(|n| n.ends_with(".txnindex")) {
            let f = store.open(&name).expect("open");
            let mut bytes = vec![0; f.len() as usize];
            f.read_at(0, &mut bytes).expect("read");
            for e in AbortedTxn::decode_all(&bytes).expect("whole entries") {
                entries.push((e.producer_id, e.first_offset as i64, e.last_offset as i64));
            }
        }
        out.push((batches, entries));
    }
    out
}

#[test]
fn an_abort_marker_outlives_its_data_by_a_pass_then_waits_out_its_horizon() {
    let store = partition(&[
        Spec { base: 0, producer: Some((50, 0, 0)), keys: &["a"], kind: Txn },
        Spec { base: 1, producer: Some((50, 0, 1)), keys: &[], kind: Abort },
        // Producer 50 wrote again: the aborted batch is not its last, so nothing of it stays.
        Spec { base: 2, producer: Some((50, 1, 0)), keys: &["b"], kind: Plain },
    ]);
    let runs = after_passes(&store, &[5_000, 5_500, 6_499, 6_500]);
    // Pass 1 removes the aborted data and keeps the marker as it was, with the transaction's entry (a
    // .txnindex derived from the marker: the source had none).
    assert_eq!(runs[0], (vec![(1, 1, None), (2, 1, None)], vec![(50, 0, 1)]));
    // Pass 2 reads no data of it: the marker is stamped with now + delete.retention.ms, and its entry goes.
    assert_eq!(runs[1], (vec![(1, 1, Some(6_500)), (2, 1, None)], vec![]));
    // It stays until the horizon has passed, then goes.
    assert_eq!(runs[2].0, runs[1].0);
    assert_eq!(runs[3], (vec![(2, 1, None)], vec![]));
}

#[test]
fn an_abort_marker_stays_while_its_emptied_batch_is_its_producers_last() {
    let store = partition(&[
        Spec { base: 0, producer: Some((50, 0, 0)), keys: &["a"], kind: Txn },
        Spec { base: 1, producer: Some((50, 0, 1)), keys: &[], kind: Abort },
    ]);
    // The emptied batch is read every pass (Kafka keeps it for the producer's state), so the marker and its
    // entry stay with it.
    for run in after_passes(&store, &[5_000, 5_500, 9_000]) {
        assert_eq!(run, (vec![(0, 0, None), (1, 1, None)], vec![(50, 0, 1)]));
    }
}

#[test]
fn a_commit_marker_stays_while_a_batch_of_its_transaction_is_read() {
    let store = partition(&[
        Spec { base: 0, producer: Some((60, 0, 0)), keys: &["a"], kind: Txn },
        Spec { base: 1, producer: Some((60, 0, 1)), keys: &[], kind: Commit },
        Spec { base: 2, producer: Some((61, 0, 0)), keys: &["b"], kind: Txn },
        Spec { base: 3, producer: Some((61, 0, 1)), keys: &[], kind: Commit },
        // Producer 61's committed `b` is superseded by its own next batch: its batch goes in the first pass.
        Spec { base: 4, producer: Some((61, 1, 0)), keys: &["b"], kind: Plain },
    ]);
    let runs = after_passes(&store, &[5_000, 5_000, 7_000]);
    // Producer 61's batch is read (and goes) in pass 1, so its marker stays; pass 2 reads no batch of it and
    // stamps it; pass 3 removes it. Producer 60's batch stays, so its marker is read after it every pass.
    assert_eq!(runs[0].0, vec![(0, 1, None), (1, 1, None), (3, 1, None), (4, 1, None)]);
    assert_eq!(runs[1].0, vec![(0, 1, None), (1, 1, None), (3, 1, Some(6_000)), (4, 1, None)]);
    assert_eq!(runs[2].0, vec![(0, 1, None), (1, 1, None), (4, 1, None)]);
}

#[test]
fn a_txnindex_that_disagrees_with_the_markers_is_damage_and_nothing_is_cleaned() {
    let store = partition(&[
        Spec { base: 0, producer: Some((50, 0, 0)), keys: &["a"], kind: Txn },
        Spec { base: 1, producer: Some((50, 0, 1)), keys: &[], kind: Abort },
        Spec { base: 2, producer: None, keys: &["a"], kind: Plain },
    ]);
    // An entry for a transaction of producer 51, which wrote no marker.
    write_txn_index(&store, AbortedTxn { producer_id: 51, first_offset: 0, last_offset: 1, last_stable_offset: 2 });
    let before: Vec<String> = store.list().expect("list");
    let log = Log::open(Arc::clone(&store), log_core::OpenOptions::kafka(LogConfig::default(), CheckpointFile::Memory))
        .expect("open");
    let config = CleanerConfig { map: MapKind::FullKey, dedupe_buffer_bytes: 1 << 20, ..CleanerConfig::default() };
    let mut cleaner = Cleaner::new(config, Arc::new(ManualClock::new(5_000))).expect("cleaner");
    let e = cleaner.clean(&log, PassOptions::default()).expect_err("refused");
    assert!(e.to_string().contains("00000000000000000000.txnindex") && e.to_string().contains("entry 0"), "{e}");
    assert_eq!(store.list().expect("list"), before, "nothing changed");
    let problem = log_core::check::check(Arc::clone(&store), Format::Kafka, CheckpointFile::Memory, None)
        .expect_err("check finds it");
    assert!(problem.to_string().contains("producer 51"), "{problem}");
    // Without the file, check says the aborted data's segment lacks one, and a pass writes it.
    store.delete(&name(0, SegmentFile::TxnIndex, Stage::Live)).expect("delete");
    let report =
        log_core::check::check(Arc::clone(&store), Format::Kafka, CheckpointFile::Memory, None).expect("intact");
    assert!(report.notices.iter().any(|n| n.file.ends_with(".txnindex") && n.what.contains("missing")), "{report:?}");
    cleaner.clean(&log, PassOptions::default()).expect("pass");
    assert!(store.open(&name(0, SegmentFile::TxnIndex, Stage::Live)).is_ok(), "the pass wrote the segment's index");
    let report =
        log_core::check::check(Arc::clone(&store), Format::Kafka, CheckpointFile::Memory, None).expect("intact");
    assert!(report.notices.is_empty(), "{report:?}");
}

#[test]
fn a_txnindex_entry_that_starts_later_narrows_the_aborted_transaction() {
    // As a broker's cleaner can leave a partition: producer 70 committed `a` at offset 0, and its COMMIT marker
    // is gone; its next transaction (offsets 2 to 3) was aborted, and the broker's index says so.
    let store = partition(&[
        Spec { base: 0, producer: Some((70, 0, 0)), keys: &["a"], kind: Txn },
        Spec { base: 1, producer: None, keys: &["b"], kind: Plain },
        Spec { base: 2, producer: Some((70, 0, 1)), keys: &["a"], kind: Txn },
        Spec { base: 3, producer: Some((70, 0, 2)), keys: &[], kind: Abort },
        Spec { base: 4, producer: Some((70, 1, 0)), keys: &["c"], kind: Plain },
    ]);
    write_txn_index(&store, AbortedTxn { producer_id: 70, first_offset: 2, last_offset: 3, last_stable_offset: 4 });
    assert_eq!(
        after_a_pass(Arc::clone(&store)),
        vec![(0, 0, 1, 70), (1, 1, 1, -1), (3, 3, 1, 70), (4, 4, 1, 70)],
        "the committed `a` stays; only the aborted batch goes"
    );
    let report = log_core::check::check(store, Format::Kafka, CheckpointFile::Memory, None).expect("intact");
    assert!(report.notices.is_empty(), "{report:?}");
}

#[test]
fn batches_of_one_producer_that_share_a_sequence_number_are_told_apart_by_offset() {
    // As the group coordinator writes transactional offset commits to __consumer_offsets (KAFKA-8335, where a
    // cleaner that judged a producer's last batch by sequence kept every emptied batch and the topic grew
    // without bound): producer 9's batches all carry base sequence -1, in three committed transactions whose
    // records are all superseded.
    let store = partition(&[
        Spec { base: 0, producer: Some((9, 0, -1)), keys: &["g1"], kind: Txn },
        Spec { base: 1, producer: Some((9, 0, -1)), keys: &[], kind: Commit },
        Spec { base: 2, producer: Some((9, 0, -1)), keys: &["g2"], kind: Txn },
        Spec { base: 3, producer: Some((9, 0, -1)), keys: &[], kind: Commit },
        Spec { base: 4, producer: Some((9, 0, -1)), keys: &["g3"], kind: Txn },
        Spec { base: 5, producer: Some((9, 0, -1)), keys: &[], kind: Commit },
        Spec { base: 6, producer: None, keys: &["g1", "g2", "g3"], kind: Plain },
    ]);
    let runs = after_passes(&store, &[5_000, 5_000, 7_000]);
    // Pass 1: only the producer's last data batch (offset 4) stays, emptied; the markers were read after
    // their batches, so they stay. Pass 2 reads no batch of the first two transactions: their markers are
    // stamped, and pass 3 removes them. The last transaction's marker stays with its emptied batch.
    assert_eq!(runs[0].0, vec![(1, 1, None), (3, 1, None), (4, 0, None), (5, 1, None), (6, 3, None)]);
    assert_eq!(runs[1].0, vec![(1, 1, Some(6_000)), (3, 1, Some(6_000)), (4, 0, None), (5, 1, None), (6, 3, None)]);
    assert_eq!(runs[2].0, vec![(4, 0, None), (5, 1, None), (6, 3, None)]);
}

#[test]
fn a_pass_stopped_by_a_full_map_before_an_aborted_transaction_never_drops_its_marker_early() {
    // KAFKA-13727's shape: the map fills before the aborted transaction of producer 5, so the pass's dirty
    // end falls before it, while its ABORT marker lies further on in the same segment. A cleaner that learned
    // the aborted transactions only up to the dirty end would take the marker for one whose data is gone and
    // drop it, leaving the aborted record visible. Every map, passes until clean with a map of three keys.
    for map in [MapKind::Skimpy, MapKind::FullKey, MapKind::Compact] {
        let store = partition(&[
            Spec { base: 0, producer: None, keys: &["a", "b", "c", "d"], kind: Plain },
            Spec { base: 4, producer: Some((5, 0, 0)), keys: &["x"], kind: Txn },
            Spec { base: 5, producer: None, keys: &["e", "f"], kind: Plain },
            Spec { base: 7, producer: Some((5, 0, 1)), keys: &[], kind: Abort },
            Spec { base: 8, producer: None, keys: &["a", "b", "c", "d", "e", "f"], kind: Plain },
            // Producer 5 wrote again: its aborted batch is not its last, so none of it need stay.
            Spec { base: 14, producer: Some((5, 1, 0)), keys: &["z"], kind: Plain },
        ]);
        let log =
            Log::open(Arc::clone(&store), log_core::OpenOptions::kafka(LogConfig::default(), CheckpointFile::Memory))
                .expect("open");
        let budget = map.bytes_for(3, 0.9, 1);
        let mut partial = false;
        let mut aborted_left = true;
        for pass in 0..40i64 {
            let config = CleanerConfig { map, dedupe_buffer_bytes: budget, ..CleanerConfig::default() };
            let mut cleaner = Cleaner::new(config, Arc::new(ManualClock::new(5_000 + pass * 600))).expect("cleaner");
            let options = PassOptions { delete_retention_ms: 1_000, ..PassOptions::default() };
            let stats = cleaner.clean(&log, options).expect("pass");
            partial |= stats.map_full;
            let (mut aborted_batch, mut marker) = (false, None);
            for s in log.snapshot().closed() {
                s.for_each_batch(|p| {
                    let h = p.batch.kafka_header().expect("kafka");
                    aborted_batch |= h.base_offset == 4 && h.records_count > 0;
                    if h.base_offset == 7 {
                        marker = Some(h.delete_horizon());
                    }
                    Ok(())
                })
                .expect("batches");
            }
            assert!(
                marker.is_some() || !aborted_batch,
                "{map}, pass {pass}: the ABORT marker went while its data stayed"
            );
            // Kafka's rule: a pass that read data of the transaction keeps its marker as it was; only a later
            // pass that reads none may stamp it.
            if aborted_left {
                assert_eq!(
                    marker,
                    Some(None),
                    "{map}, pass {pass}: the marker of data this pass read was stamped or removed"
                );
            }
            aborted_left = aborted_batch;
        }
        assert!(partial, "{map}: a map of three keys must fill in the first pass");
        assert!(!aborted_left, "{map}: the aborted record is gone after the passes");
    }
}

/// Pass 1 reads a Kafka record's offset and key only; a record whose headers are damaged under a valid CRC
/// (a writer's bug, not the disk's) is found by pass 2, which reads every record whole before anything is
/// written: the pass fails naming the segment, with every map and the external pass, and nothing changes.
#[test]
#[expect(clippy::big_endian_bytes, reason = "Kafka's format is big-endian")]
fn a_record_damaged_past_its_key_under_a_valid_crc_fails_the_pass_and_changes_nothing() {
    let store = partition(&[
        Spec { base: 0, producer: None, keys: &["a", "b"], kind: Plain },
        Spec { base: 2, producer: None, keys: &["a"], kind: Plain },
        Spec { base: 3, producer: None, keys: &["c"], kind: Plain },
    ]);
    let segment = name(0, SegmentFile::Log, Stage::Live);
    let mut bytes = contents(&store, &segment);
    // The second batch (base offset 2): its one record's header count is its last byte, 0 headers. Made 1
    // (zig-zag 2) with no header after it, and the batch's CRC-32C (over byte 21 on) written again.
    let first_len = u32::from_be_bytes(bytes[8..12].try_into().expect("length")) as usize;
    let at = 12 + first_len;
    let end = at + 12 + u32::from_be_bytes(bytes[at + 8..at + 12].try_into().expect("length")) as usize;
    assert_eq!(bytes[end - 1], 0, "no header");
    bytes[end - 1] = 2;
    let crc = log_core::checksum::crc32c(&bytes[at + 21..end]);
    bytes[at + 17..at + 21].copy_from_slice(&crc.to_be_bytes());
    store.delete(&segment).expect("delete");
    let file = store.create(&segment).expect("create");
    file.append(&bytes).expect("append");
    file.sync().expect("sync");
    file.seal().expect("seal");
    for map in MapKind::WITH_EXTERNAL {
        let before: Vec<(String, Vec<u8>)> =
            store.list().expect("list").into_iter().map(|n| (n.clone(), contents(&store, &n))).collect();
        let log =
            Log::open(Arc::clone(&store), log_core::OpenOptions::kafka(LogConfig::default(), CheckpointFile::Memory))
                .expect("open");
        let config = CleanerConfig { map, dedupe_buffer_bytes: 1 << 20, ..CleanerConfig::default() };
        let mut cleaner = Cleaner::new(config, Arc::new(ManualClock::new(5_000))).expect("cleaner");
        match cleaner.clean(&log, PassOptions::default()) {
            Err(cleaner::Error::Log(log_core::Error::Corrupt { segment: s, kind, .. })) => {
                assert_eq!(s, segment, "{map}");
                let bad_record = log_core::CorruptKind::Kafka(log_core::kafka::BatchProblem::BadRecord {
                    index: 0,
                    what: "a length varint is cut off or too long",
                });
                assert_eq!(kind, bad_record, "{map}: the header read past the record");
            }
            other => panic!("{map}: {other:?}"),
        }
        drop(log);
        let after: Vec<(String, Vec<u8>)> =
            store.list().expect("list").into_iter().map(|n| (n.clone(), contents(&store, &n))).collect();
        assert_eq!(after, before, "{map}: nothing changed");
    }
}

/// The bytes of the file `name` of `store`.
fn contents(store: &Arc<dyn SegmentStore>, name: &str) -> Vec<u8> {
    let file = store.open(name).expect("open");
    let mut bytes = vec![0; usize::try_from(file.len()).expect("size")];
    file.read_at(0, &mut bytes).expect("read");
    bytes
}
