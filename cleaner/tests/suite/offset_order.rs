//! Records out of offset order, where opening the log did not read them: pass 1 fails on them, naming them,
//! and changes nothing. A pass names records by offset (the external pass's entries, the offsets a map's puts
//! supersede), so one out of order would name another key's record, which pass 2 could drop as stale with no
//! error (the writer sees only the records kept): what happened before pass 1 checked the order.

use std::sync::Arc;

use cleaner::{Cleaner, CleanerConfig, ManualClock, MapKind, PassOptions};
use log_core::{CorruptKind, SegmentStore};
use storage_mem::MemStore;

use crate::written::{NOW, config, files, written_with};

/// Sets the offset of the frame in the middle of the native segment `victim` to `offset(its offset before)`,
/// re-encoded by the format's codec with its checksum right (what a segment changed after it was indexed
/// holds). Returns the frame's position, its offset before and after.
fn reoffset_middle_frame(store: &MemStore, victim: &str, offset: impl FnOnce(u64) -> u64) -> (u64, u64, u64) {
    let mut bytes = files(store).remove(victim).expect("the segment");
    let mut at = 0;
    while at < bytes.len() / 2 {
        at += log_core::codec::frame_header(&bytes[at..]).expect("a frame").0;
    }
    let (mut rec, len) = log_core::codec::decode(&bytes[at..]).expect("a frame");
    let before = rec.offset;
    rec.offset = offset(before);
    let after = rec.offset;
    let mut frame = Vec::new();
    log_core::codec::encode_ref_with_horizon(&rec, rec.delete_horizon, &mut frame).expect("re-encoded");
    assert_eq!(frame.len(), len, "only the offset changes");
    bytes[at..at + len].copy_from_slice(&frame);
    store.delete(victim).expect("delete");
    store.create(victim).expect("create").append(&bytes).expect("write");
    (at as u64, before, after)
}

/// Where a record out of offset order is put.
#[derive(Debug, Clone, Copy, PartialEq)]
enum OutOfOrder {
    /// Below the pass's first offset, in the first segment (the log's first two gone, as retention removes them).
    BelowFirst,
    /// In the sixth segment, at an offset of the second.
    BelowBase,
    /// The offset of the record before it.
    NotIncreasing,
    /// The seventh segment's base, in the sixth.
    BeyondNext,
}

fn cleaner(map: MapKind, threads: usize) -> Cleaner {
    // 256 KiB: the external pass spills runs over these 3,000 records' entries.
    let config = CleanerConfig { map, dedupe_buffer_bytes: 256 << 10, threads, ..CleanerConfig::default() };
    Cleaner::new(config, Arc::new(ManualClock::new(NOW))).expect("cleaner")
}

/// With the external pass on one thread and on two, and with a map (whose puts' superseded offsets pass 2 asks
/// by offset): each kind of disorder, in the middle of a segment whose hint let the log open without reading
/// it, its frame's checksum right.
#[test]
fn a_record_out_of_order_fails_pass_1_naming_it_and_changes_nothing() {
    let passes = [(MapKind::External, 1), (MapKind::External, 2), (MapKind::Compact, 1), (MapKind::Skimpy, 2)];
    let damages = [OutOfOrder::BelowFirst, OutOfOrder::BelowBase, OutOfOrder::NotIncreasing, OutOfOrder::BeyondNext];
    for ((map, threads), damage) in passes.into_iter().flat_map(|p| damages.map(|d| (p, d))) {
        let case = format!("{map:?} on {threads} threads, {damage:?}");
        // A dense index: the hint's last entry lies past the damage, so opening the log does not read it.
        let config = log_core::LogConfig { index_interval_bytes: 64, ..config() };
        let (store, log) = written_with(config.clone(), 200, 3_000);
        let closed: Vec<(u64, String)> =
            log.snapshot().closed().iter().map(|s| (s.base(), s.name().to_owned())).collect();
        drop(log);
        let index = if damage == OutOfOrder::BelowFirst { 2 } else { 5 };
        let ((base, victim), next_base) = (closed[index].clone(), closed[index + 1].0);
        if damage == OutOfOrder::BelowFirst {
            let prefix = |name: &str| name.split('.').next().map(str::to_owned);
            for file in files(&store).into_keys() {
                if closed[..2].iter().any(|(_, n)| prefix(n) == prefix(&file)) {
                    store.delete(&file).expect("delete");
                }
            }
        }
        let (at, before, found) = reoffset_middle_frame(&store, &victim, |before| match damage {
            OutOfOrder::BelowFirst => base - 1,
            OutOfOrder::BelowBase => closed[1].0 + 3,
            // The log's offsets run 0, 1, 2, ...: the record before holds one less.
            OutOfOrder::NotIncreasing => before - 1,
            OutOfOrder::BeyondNext => next_base,
        });
        let expected = match damage {
            OutOfOrder::BelowFirst | OutOfOrder::BelowBase => CorruptKind::OffsetBelowBase { base, found },
            OutOfOrder::NotIncreasing => CorruptKind::OffsetNotIncreasing { previous: before - 1, found },
            OutOfOrder::BeyondNext => CorruptKind::OffsetBeyondNextSegment { next_base, found },
        };
        let unchanged = files(&store);
        let log = log_core::Log::open(Arc::clone(&store) as Arc<dyn SegmentStore>, log_core::OpenOptions::new(config))
            .expect("open: the damage is not read");
        match cleaner(map, threads).clean(&log, PassOptions::default()) {
            Err(cleaner::Error::Log(log_core::Error::Corrupt { ref segment, position, ref kind })) => {
                assert_eq!((segment, position, kind), (&victim, at, &expected), "{case}");
            }
            other => panic!("{case}: {other:?}"),
        }
        drop(log);
        assert_eq!(files(&store), unchanged, "{case}: nothing changed");
    }
}

/// A batch written: `(position in its segment, base offset, last offset)`.
type Placed = (u64, u64, u64);

/// A Kafka partition on the file backend: 3 sealed segments of 20 batches of 10 records (50 keys), written
/// with `codec`, and an empty active one. Returns each sealed segment's name and its batches.
fn kafka_partition(dir: &std::path::Path, codec: log_core::kafka::Compression) -> Vec<(String, Vec<Placed>)> {
    use log_core::kafka::{RecordToWrite, new_header, write_batch};
    let keys: Vec<Vec<u8>> = (0..50u32).map(|k| format!("key-{k:03}").into_bytes()).collect();
    let value = vec![b'v'; 40];
    let (mut offset, mut segments, mut out, mut scratch) = (0u64, Vec::new(), Vec::new(), Vec::new());
    for _ in 0..3 {
        let (base, mut bytes, mut batches) = (offset, Vec::new(), Vec::new());
        for _ in 0..20 {
            let records: Vec<RecordToWrite<'_>> = (0..10)
                .map(|i| RecordToWrite {
                    offset: (offset + i) as i64,
                    timestamp: NOW - 10_000,
                    key: Some(&keys[((offset + i) * 7 % 50) as usize]),
                    value: Some(&value),
                    header_count: 0,
                    header_bytes: &[],
                })
                .collect();
            out.clear();
            write_batch(&new_header(offset as i64, 9), codec, None, &records, &mut out, &mut scratch).expect("batch");
            batches.push((bytes.len() as u64, offset, offset + 9));
            bytes.extend_from_slice(&out);
            offset += 10;
        }
        let name = format!("{base:020}.log");
        std::fs::write(dir.join(&name), &bytes).expect("write");
        segments.push((name, batches));
    }
    std::fs::write(dir.join(format!("{offset:020}.log")), b"").expect("active");
    segments
}

/// Every file of `dir` and its bytes.
fn dir_files(dir: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .expect("list")
        .map(|e| {
            let e = e.expect("entry");
            (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).expect("read"))
        })
        .collect()
}

/// A Kafka segment changed after the log was opened (opening reads every batch): a batch's base offset, which
/// Kafka's CRC does not cover, set to the batch before it's, so its records repeat that batch's offsets. Pass 1
/// fails on its first record, naming the segment, the batch and both offsets, uncompressed (records read in
/// place) and lz4 (records decompressed), with a map and with the external pass, and nothing changes.
#[test]
fn a_kafka_batch_out_of_order_after_open_fails_pass_1_naming_it() {
    use std::os::unix::fs::FileExt;
    let codecs = [log_core::kafka::Compression::None, log_core::kafka::Compression::Lz4];
    let passes = [(MapKind::Compact, 1), (MapKind::External, 1), (MapKind::External, 2)];
    for (codec, (map, threads)) in codecs.into_iter().flat_map(|c| passes.map(|p| (c, p))) {
        let case = format!("{codec:?}, {map:?} on {threads} threads");
        let dir = tempfile::tempdir().expect("tempdir");
        let segments = kafka_partition(dir.path(), codec);
        let store = Arc::new(storage_file::FileStore::open(dir.path()).expect("store"));
        let options = log_core::OpenOptions::kafka(log_core::LogConfig::default(), log_core::CheckpointFile::Memory);
        let log = log_core::Log::open(store as Arc<dyn SegmentStore>, options).expect("open");
        let (victim, batches) = &segments[1];
        let (at, _, _) = batches[10];
        let (_, before_base, before_last) = batches[9];
        let file = std::fs::OpenOptions::new().write(true).open(dir.path().join(victim)).expect("open to write");
        #[expect(clippy::big_endian_bytes, reason = "a Kafka batch's base offset is big-endian")]
        let base_offset = before_base.to_be_bytes();
        file.write_at(&base_offset, at).expect("write");
        drop(file);
        let unchanged = dir_files(dir.path());
        let expected = CorruptKind::OffsetNotIncreasing { previous: before_last, found: before_base };
        match cleaner(map, threads).clean(&log, PassOptions::default()) {
            Err(cleaner::Error::Log(log_core::Error::Corrupt { ref segment, position, ref kind })) => {
                assert_eq!((segment, position, kind), (victim, at, &expected), "{case}");
            }
            other => panic!("{case}: {other:?}"),
        }
        drop(log);
        assert_eq!(dir_files(dir.path()), unchanged, "{case}: nothing changed");
    }
}
