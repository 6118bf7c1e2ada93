//! The cleaning transaction: one pass at a time, outputs of an abandoned pass removed through the log (and
//! left alone on a poisoned log), results of another log refused, the dirty section a scheduler weighs, and
//! Kafka's grouping of adjacent segments by size.

use std::sync::Arc;

use log_core::{AppendRecord, Cleaning, Error, Log, LogConfig, Replacement, ReplacementProblem, SegmentStore, Stamp};
use storage_mem::MemStore;
use storage_mem::fault::{Op, fault_store};

fn log_on(store: Arc<dyn SegmentStore>, segment_bytes: u64) -> Log {
    Log::open(store, log_core::OpenOptions::new(LogConfig { segment_bytes, ..LogConfig::default() })).expect("open")
}

/// Appends `n` records of key `k{i % keys}` stamped `ts(i)`, rolling after every `per_segment` but the last.
fn fill(log: &Log, n: u64, keys: u64, per_segment: u64, ts: impl Fn(u64) -> i64) {
    for i in 0..n {
        let (key, value) = (format!("k{}", i % keys), format!("v{i}"));
        let rec =
            AppendRecord { key: Some(key.as_bytes()), value: Some(value.as_bytes()), timestamp: ts(i), headers: &[] };
        log.append(&rec).expect("append");
        if i % per_segment == per_segment - 1 && i + 1 < n {
            log.roll().expect("roll");
        }
    }
}

/// Copies every group of the transaction keeping only records with an odd offset.
fn copy_odd(cleaning: &Cleaning<'_>, end: u64) -> Vec<Replacement> {
    let mut out = Vec::new();
    for group in cleaning.groups(end) {
        let mut copy = cleaning.copy(&group);
        for (i, segment) in group.iter().enumerate() {
            if i > 0 {
                copy.next_segment().expect("next");
            }
            segment
                .for_each_batch(|placed| {
                    if placed.batch.base_offset % 2 == 1 {
                        copy.keep(placed.position, placed.batch.bytes(), Stamp::of(&placed.batch))
                    } else {
                        copy.drop_batch()
                    }
                })
                .expect("copy");
        }
        out.extend(copy.finish().expect("finish"));
    }
    out
}

fn cleaned_files(store: &dyn SegmentStore) -> Vec<String> {
    store.list().expect("list").into_iter().filter(|n| n.ends_with(".cleaned")).collect()
}

#[test]
fn one_pass_at_a_time_and_a_commit_swaps_groups_in() {
    let store: Arc<dyn SegmentStore> = Arc::new(MemStore::new());
    let log = log_on(Arc::clone(&store), 1 << 20);
    fill(&log, 50, 50, 10, |_| 0);
    let cleaning = log.try_begin_cleaning().expect("writable").expect("free");
    assert!(log.try_begin_cleaning().expect("writable").is_none(), "a second pass must not start");
    let end = cleaning.snapshot().active_base();
    let replacements = copy_odd(&cleaning, end);
    assert_eq!(replacements.len(), 1, "four small segments are one group");
    assert_eq!(replacements[0].old().len(), 4);
    cleaning.commit(replacements, end).expect("commit");
    let closed = log.snapshot().closed().to_vec();
    assert_eq!(closed.len(), 1);
    assert_eq!(closed[0].base(), 0, "named after its first segment, which kept offset 1");
    let offsets: Vec<u64> = log.snapshot().reader(0).map(|r| r.expect("read").offset).collect();
    assert_eq!(offsets, (1..40).step_by(2).chain(40..50).collect::<Vec<_>>());
    assert_eq!(log.cleaner_checkpoint(), 40);
    assert!(log.try_begin_cleaning().expect("writable").is_some(), "the slot is free again");
    assert!(cleaned_files(&*store).is_empty());
}

#[test]
fn dropping_a_transaction_removes_its_output_unless_the_log_is_poisoned() {
    let mem: Arc<dyn SegmentStore> = Arc::new(MemStore::new());
    let faults = Arc::new(fault_store(Arc::clone(&mem)));
    let log = log_on(Arc::clone(&faults) as Arc<dyn SegmentStore>, 1 << 20);
    fill(&log, 30, 30, 10, |_| 0);
    {
        let cleaning = log.begin_cleaning().expect("begin");
        let replacements = copy_odd(&cleaning, 20);
        // The output at 0 and the marker of segment 10, merged into it.
        assert_eq!(cleaned_files(&*mem).len(), 2, "the outputs exist while the pass runs");
        drop(replacements);
    }
    assert!(cleaned_files(&*mem).is_empty(), "the abandoned output is gone");
    // Now a write fails while the copy is written: the log is poisoned and its files are left alone.
    let cleaning = log.begin_cleaning().expect("begin");
    faults.hooks().fail(Op::Sync, faults.hooks().count(Op::Sync));
    let group = cleaning.groups(20).remove(0);
    let mut copy = cleaning.copy(&group);
    copy.drop_batch().expect("drop");
    let segment = &group[0];
    let mut seen = 0;
    segment
        .for_each_batch(|placed| {
            seen += 1;
            if seen == 2 { copy.keep(placed.position, placed.batch.bytes(), Stamp::of(&placed.batch)) } else { Ok(()) }
        })
        .expect("keep");
    assert!(copy.finish().is_err(), "the sync fails");
    drop(cleaning);
    assert!(log.is_poisoned());
    assert_eq!(cleaned_files(&*mem).len(), 1, "a poisoned log's files are the next open's to sort out");
    drop(log);
    let log = log_on(Arc::clone(&mem), 1 << 20);
    assert!(cleaned_files(&*mem).is_empty(), "the open rolled the output back");
    assert_eq!(log.snapshot().reader(0).count(), 30);
}

#[test]
fn a_result_of_another_log_is_refused() {
    let (a, b) = (log_on(Arc::new(MemStore::new()), 1 << 20), log_on(Arc::new(MemStore::new()), 1 << 20));
    fill(&a, 30, 30, 10, |_| 0);
    fill(&b, 30, 30, 10, |_| 0);
    let ca = a.begin_cleaning().expect("begin");
    let from_a = copy_odd(&ca, 20);
    let cb = b.begin_cleaning().expect("begin");
    match cb.commit(from_a, 20) {
        Err(Error::BadReplacement { problem: ReplacementProblem::WrongOutput, .. }) => {}
        other => panic!("expected WrongOutput, got {other:?}"),
    }
    assert_eq!(b.snapshot().reader(0).count(), 30, "nothing changed");
}

#[test]
fn groups_stay_within_segment_bytes() {
    let log = log_on(Arc::new(MemStore::new()), 1 << 20);
    fill(&log, 70, 70, 10, |_| 0);
    let size = log.snapshot().closed()[0].size();
    drop(log);
    // Reopened so that two segments and a half fit in segment.bytes: groups of two.
    let store: Arc<dyn SegmentStore> = Arc::new(MemStore::new());
    let log = log_on(Arc::clone(&store), 1 << 20);
    fill(&log, 70, 70, 10, |_| 0);
    drop(log);
    let log = log_on(store, size * 5 / 2);
    let cleaning = log.begin_cleaning().expect("begin");
    let groups: Vec<Vec<u64>> = cleaning.groups(60).iter().map(|g| g.iter().map(|s| s.base()).collect()).collect();
    assert_eq!(groups, vec![vec![0, 10], vec![20, 30], vec![40, 50]]);
    let groups: Vec<usize> = cleaning.groups(35).iter().map(Vec::len).collect();
    assert_eq!(groups, vec![2, 2], "only segments below the end offset");
}

#[test]
fn the_dirty_section_follows_the_checkpoint_and_the_minimum_lag() {
    let log = log_on(Arc::new(MemStore::new()), 1 << 20);
    // Four closed segments stamped 1000, 2000, 3000, 4000 and an active one stamped 5000.
    fill(&log, 50, 5, 10, |i| 1000 * (i as i64 / 10 + 1));
    let d = log.dirty_section(10_000, 0);
    assert_eq!((d.first_dirty_offset, d.first_uncleanable_offset, d.clean_bytes), (0, 40, 0));
    assert_eq!(d.dirty_ratio(), 1.0);
    assert_eq!(d.active_records, 10);
    assert_eq!(d.oldest_dirty_timestamp, Some(1000));
    assert_eq!(d.active_first_timestamp, Some(5000));
    assert_eq!(d.compaction_delay_ms(10_000, 4000), 5000, "the oldest dirty record is 9 s old, 5 s past the lag");
    // Records younger than 7.5 s at 10 s: the segments stamped 3000 and 4000 are too young.
    let d = log.dirty_section(10_000, 7500);
    assert_eq!(d.first_uncleanable_offset, 20);
    let sizes: Vec<u64> = log.snapshot().closed().iter().map(|s| s.size()).collect();
    let (older, younger) = (sizes[0] + sizes[1], sizes[2] + sizes[3]);
    assert_eq!((d.dirty_bytes, d.too_young_bytes), (older, younger));
    log.begin_cleaning().expect("begin").commit(Vec::new(), 20).expect("move the checkpoint");
    let d = log.dirty_section(10_000, 0);
    assert_eq!((d.first_dirty_offset, d.clean_bytes, d.dirty_bytes), (20, older, younger));
    assert_eq!(d.dirty_ratio(), younger as f64 / (older + younger) as f64);
    assert_eq!(d.oldest_dirty_timestamp, Some(3000));
    assert!(d.is_cleanable());
    let d = log.dirty_section(10_000, 1_000_000);
    assert!(!d.is_cleanable(), "everything dirty is too young");
    assert_eq!(d.first_uncleanable_offset, 20, "never below the checkpoint");
}
