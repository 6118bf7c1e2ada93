//! Where Kafka's cleaner starts and ends its passes and its rounds: partitions cleaned by Kafka 4.4's own
//! cleaner and by ours from the same files, whose files must be Kafka's, byte for byte. A transactional
//! changelog whose passes start and end inside segments, and a round that ends in a batch the pass empties.
//!
//! Two of Kafka's ways matter there (docs/kafka.md, "Several passes"):
//!
//! - **Where a pass starts.** `buildOffsetMap` collects every aborted transaction of the segment holding the
//!   first dirty offset (`collectAbortedTransactions` searches its `.txnindex` from the log start, not from
//!   that offset) and reads from the offset index's entry below it, so an aborted transaction whose marker
//!   lies before that entry is opened by the first batch read and never closed until the producer's next
//!   ABORT marker: the producer's committed batches up to there are not mapped, and the older records of
//!   their keys stay.
//! - **Where a pass ends, and past it.** The end offset is the offset after the last batch read whole, and
//!   the segment holding it is rewritten whole: past it aborted batches go, markers are judged, and a batch
//!   keeping a tombstone gets its delete horizon.
//!
//! The first test starts one pass inside a segment, with every map and the external pass (the map holds the
//! whole dirty section, so every one ends where Kafka's does). The second runs passes until clean with a
//! buffer that holds a few thousand keys, with Kafka's own map design (skimpy: the same keys a pass as
//! Kafka's `SkimpyOffsetMap`, so the same passes). The third ends a round in a batch the pass empties,
//! which Kafka keeps as a bare header (`upperBoundOffsetOfCleaningRound`), with every map.

use std::path::Path;
use std::sync::Arc;

use bench::vs_kafka::{Settings, copy, kafka_configs, partition_dir, segment_files};
use cleaner::{Cleaner, CleanerConfig, ManualClock, MapKind, PassOptions};
use log_core::SegmentStore;
use log_core::kafka::files::{SegmentFile, Stage};
use log_core::kafka::{Compression, RecordToWrite, new_header, write_batch};
use storage_mem::MemStore;

const NOW: i64 = 1_800_000_000_000;
const SEGMENT: u64 = 4 << 20;
/// Inside the first segment (about 27,000 offsets), past the first aborted transaction's marker (15,350)
/// by more than an index interval, before the next ABORT marker (30,400, in the second segment).
const CHECKPOINT: u64 = 20_000;

/// A 60,000-record exactly-once changelog over 6,000 keys (one transaction in 50 aborted), written as a Kafka
/// partition directory under `root/source`; its directory name.
fn changelog(root: &Path) -> std::path::PathBuf {
    let keys = bench::Keys::new(6_000, 16, 1);
    let generated: Arc<dyn SegmentStore> = Arc::new(MemStore::new());
    bench::kafka::write_transactional_partition(&*generated, &keys, 60_000, SEGMENT, 1).expect("write");
    let source = partition_dir(&root.join("source"), "pass-start");
    let files = storage_file::FileStore::open(&source).expect("open");
    bench::store::copy_store(&*generated, &files).expect("copy");
    source
}

/// A partition written once, Kafka's copy of it cleaned, and a way to clean fresh copies with ours.
struct HeadToHead {
    root: tempfile::TempDir,
    source: std::path::PathBuf,
    kafka_side: std::path::PathBuf,
    settings: Settings,
}

impl HeadToHead {
    /// Writes a partition with `write` (given a root, it returns the partition's directory under it) and runs
    /// Kafka 4.4's cleaner over a copy with `buffer_bytes` and `args`. Returns the fixture and Kafka's report
    /// of its passes; `None` only where `LOGCOMPACT_SKIP_KAFKA` is set outside CI (`Kafka::get` fails the
    /// test where Java or Kafka's jars are missing, and CI refuses the skip).
    fn kafka_cleans(
        write: fn(&Path) -> std::path::PathBuf,
        buffer_bytes: u64,
        args: &[&str],
    ) -> Option<(HeadToHead, serde_json::Value)> {
        let kafka = kafka_interop::Kafka::get()?;
        let root = tempfile::tempdir().expect("tempdir");
        let source = write(root.path());
        let kafka_side = root.path().join("kafka").join(source.file_name().expect("name"));
        copy(&source, &kafka_side).expect("copy");
        let settings = Settings { buffer_bytes, segment_bytes: SEGMENT, load_factor: 0.9, now_ms: NOW, threads: 1 };
        let out = kafka
            .offline_clean(&[], &kafka_side, NOW, settings.buffer_bytes, &kafka_configs(SEGMENT), args)
            .expect("Kafka's cleaner");
        Some((HeadToHead { root, source, kafka_side, settings }, out))
    }

    /// A fresh copy of the source partition, opened as a Kafka partition; `run` cleans it with ours and `map`.
    /// Returns what `run` returned, and the first difference from Kafka's files (empty when none).
    fn ours<T>(&self, map: MapKind, run: impl FnOnce(&log_core::Log, Cleaner) -> T) -> (T, String) {
        let ours_side = self.root.path().join(map.name()).join(self.source.file_name().expect("name"));
        copy(&self.source, &ours_side).expect("copy");
        let store = Arc::new(storage_file::FileStore::open(&ours_side).expect("open"));
        let log = bench::kafka::open(store, SEGMENT).expect("open");
        let result = run(&log, cleaner(map, &self.settings));
        drop(log);
        let kafka_files = segment_files(&self.kafka_side).expect("kafka's");
        let ours = segment_files(&ours_side).expect("ours");
        (result, bench::vs_kafka::first_difference(&kafka_files, &ours))
    }
}

/// One plain batch of one record: its offset, key, value (`None`: a tombstone) and delete horizon.
type OneRecord = (i64, &'static str, Option<&'static str>, Option<i64>);

/// A partition of two closed segments ending in batches that a pass empties: a tombstone whose delete
/// horizon (written by an earlier pass) has passed. The first such batch lies inside the round and goes;
/// the second is the last batch of the round (its next offset is the active segment's base), which Kafka
/// keeps as a bare header (`BatchRetention.RETAIN_EMPTY`: "so that last offset information is not lost").
/// Written as a Kafka partition directory under `root/source`; its directory name.
fn round_ending_in_an_emptied_batch(root: &Path) -> std::path::PathBuf {
    const PAST: Option<i64> = Some(1_000);
    let segments: [&[OneRecord]; 2] = [
        &[(0, "a", Some("v0"), None), (1, "a", None, PAST), (2, "b", Some("v2"), None)],
        &[(3, "c", Some("v3"), None), (4, "b", None, PAST)],
    ];
    let dir = partition_dir(&root.join("source"), "round-end");
    let store = storage_file::FileStore::open(&dir).expect("open");
    let name = |base: i64| log_core::kafka::files::name(base as u64, SegmentFile::Log, Stage::Live);
    for segment in segments {
        let file = store.create(&name(segment[0].0)).expect("create");
        for &(offset, key, value, horizon) in segment {
            let record = RecordToWrite {
                offset,
                timestamp: 1_000 + offset,
                key: Some(key.as_bytes()),
                value: value.map(str::as_bytes),
                header_count: 0,
                header_bytes: &[],
            };
            let mut bytes = Vec::new();
            write_batch(&new_header(offset, 0), Compression::None, horizon, &[record], &mut bytes, &mut Vec::new())
                .expect("batch");
            file.append(&bytes).expect("append");
        }
        file.sync().expect("sync");
        file.seal().expect("seal");
    }
    let next = segments.iter().flat_map(|s| s.iter()).map(|r| r.0 + 1).max().unwrap_or(0);
    store.create(&name(next)).expect("active");
    dir
}

fn cleaner(map: MapKind, settings: &Settings) -> Cleaner {
    let config = CleanerConfig {
        map,
        dedupe_buffer_bytes: settings.buffer_bytes as usize,
        load_factor: settings.load_factor,
        ..CleanerConfig::default()
    };
    Cleaner::new(config, Arc::new(ManualClock::new(NOW))).expect("cleaner")
}

#[test]
fn a_pass_from_inside_a_segment_maps_what_kafkas_cleaner_maps_byte_for_byte() {
    let checkpoint = CHECKPOINT.to_string();
    let Some((fixture, out)) = HeadToHead::kafka_cleans(changelog, 16 << 20, &["--checkpoint", &checkpoint]) else {
        return;
    };
    assert_eq!(out["passes"].as_array().map(Vec::len), Some(1), "{out}");
    for map in MapKind::WITH_EXTERNAL {
        let (stats, difference) = fixture.ours(map, |log, mut cleaner| {
            log.set_cleaner_checkpoint(CHECKPOINT);
            cleaner.clean(log, PassOptions::default()).expect("pass")
        });
        assert_eq!(stats.first_dirty_offset, CHECKPOINT);
        assert!(difference.is_empty(), "{map}: ours differs from Kafka's cleaner: {difference}");
    }
}

#[test]
fn passes_that_end_inside_segments_leave_kafkas_files_byte_for_byte() {
    // About 2,450 keys a pass, of 6,000: a pass ends every 3,000 records or so, mostly inside a segment.
    let Some((fixture, out)) =
        HeadToHead::kafka_cleans(changelog, 64 << 10, &["--until-clean", "--load-factor", "0.9"])
    else {
        return;
    };
    let kafka_ends: Vec<u64> =
        out["passes"].as_array().expect("passes").iter().filter_map(|p| p["next_dirty"].as_u64()).collect();
    assert!(kafka_ends.len() >= 10, "the buffer should take many passes: {out}");
    let (passes, difference) = fixture.ours(MapKind::Skimpy, |log, mut cleaner| {
        cleaner.clean_until_clean(log, PassOptions::default(), |_| Ok(())).expect("passes")
    });
    let ours_ends: Vec<u64> = passes.iter().map(|p| p.end_offset).collect();
    assert_eq!(ours_ends, kafka_ends, "each pass's end offset, ours then Kafka's");
    assert!(difference.is_empty(), "ours differs from Kafka's cleaner after {} passes: {difference}", passes.len());
}

#[test]
fn the_batch_that_ends_the_round_stays_as_a_bare_header_when_emptied_as_kafkas_cleaner_keeps_it() {
    let Some((fixture, out)) = HeadToHead::kafka_cleans(round_ending_in_an_emptied_batch, 16 << 20, &[]) else {
        return;
    };
    assert_eq!(out["passes"].as_array().map(Vec::len), Some(1), "{out}");
    for map in MapKind::WITH_EXTERNAL {
        let (batches, difference) = fixture.ours(map, |log, mut cleaner| {
            cleaner.clean(log, PassOptions::default()).expect("pass");
            let mut batches = Vec::new();
            for s in log.snapshot().closed() {
                s.for_each_batch(|p| {
                    let h = p.batch.kafka_header().expect("kafka");
                    batches.push((h.base_offset, h.last_offset(), h.records_count));
                    Ok(())
                })
                .expect("batches");
            }
            batches
        });
        // `c` stays; the emptied batch at 1 goes; the one at 4 ends the round and stays, with no record.
        assert_eq!(batches, vec![(3, 3, 1), (4, 4, 0)], "{map}");
        assert!(difference.is_empty(), "{map}: ours differs from Kafka's cleaner: {difference}");
    }
}
