//! The Kafka reader refuses what Kafka would refuse and resets what Kafka resets: segment names a broker
//! cannot use (`0.log`, a base beyond 2^63 - 1) make every open, `check` and the repair plan say so instead of
//! skipping the file; a record whose offset lies outside its batch is damage, never read; a cleaner checkpoint
//! past the end of the partition is reset to its start, with a notice, and the read-only view writes nothing.

use std::sync::Arc;

use log_core::kafka::{Compression, RecordToWrite, new_header, write_batch};
use log_core::{CheckpointFile, Error, Format, Log, LogConfig, SegmentStore};
use storage_mem::MemStore;

fn write(store: &dyn SegmentStore, name: &str, bytes: &[u8]) {
    let f = store.create(name).expect("create");
    f.append(bytes).expect("append");
    f.sync().expect("sync");
}

/// A batch of `n` records from `base`, the header saying its last offset is `base + last_delta`.
fn batch(base: i64, n: usize, last_delta: i32) -> Vec<u8> {
    batch_at(base, &(0..n as i64).map(|i| base + i).collect::<Vec<_>>(), last_delta)
}

/// A batch holding records at `offsets` under a header based at `base` ending at `base + last_delta`.
fn batch_at(base: i64, offsets: &[i64], last_delta: i32) -> Vec<u8> {
    let n = offsets.len();
    let keys: Vec<Vec<u8>> = (0..n).map(|i| format!("k{i}").into_bytes()).collect();
    let records: Vec<RecordToWrite<'_>> = (0..n)
        .map(|i| RecordToWrite {
            offset: offsets[i],
            timestamp: 5,
            key: Some(&keys[i]),
            value: Some(b"v"),
            header_count: 0,
            header_bytes: &[],
        })
        .collect();
    let (mut out, mut scratch) = (Vec::new(), Vec::new());
    write_batch(&new_header(base, last_delta), Compression::None, None, &records, &mut out, &mut scratch)
        .expect("batch");
    out
}

/// Two segments of 10 records, the second the active one.
fn partition() -> Arc<MemStore> {
    let store = Arc::new(MemStore::new());
    write(&*store, "00000000000000000000.log", &batch(0, 10, 9));
    write(&*store, "00000000000000000010.log", &batch(10, 10, 9));
    store
}

fn open_ro(store: &Arc<MemStore>, checkpoint: CheckpointFile) -> log_core::Result<Log> {
    Log::open(
        Arc::clone(store) as Arc<dyn SegmentStore>,
        log_core::OpenOptions::kafka(LogConfig::default(), checkpoint).read_only(true),
    )
}

#[test]
fn segment_names_a_broker_cannot_use_are_refused_not_skipped() {
    for bad in ["0.log", "99999999999999999999.log", "09223372036854775807.log"] {
        let store = partition();
        write(&*store, bad, &batch(100, 2, 1));
        let e = open_ro(&store, CheckpointFile::Memory).expect_err(bad);
        assert!(matches!(&e, Error::UnusableName { name, .. } if name == bad), "{bad}: {e}");
        let dyn_store = Arc::clone(&store) as Arc<dyn SegmentStore>;
        let problem = log_core::check::check(dyn_store, Format::Kafka, CheckpointFile::Memory, None).expect_err(bad);
        assert!(problem.to_string().contains(bad), "{bad}: {problem}");
        let plan = log_core::repair::plan_for(Format::Kafka, &*store, &LogConfig::default()).expect("plan");
        assert!(plan.cannot_fix.iter().any(|c| c.contains(bad)), "{bad}: {plan:?}");
        let w = Log::open(
            Arc::clone(&store) as Arc<dyn SegmentStore>,
            log_core::OpenOptions::kafka(LogConfig::default(), CheckpointFile::Memory),
        );
        assert!(matches!(w, Err(Error::UnusableName { .. })), "{bad}: a writable open refuses it too");
    }
}

#[test]
fn a_record_whose_offset_lies_outside_its_batch_is_damage() {
    let store = Arc::new(MemStore::new());
    write(&*store, "00000000000000000000.log", &batch(0, 10, 9));
    // Five records under a header that says the batch holds offsets 10..=14, the last one at offset 19 (the
    // checksum is valid: the batch was written so).
    write(&*store, "00000000000000000010.log", &batch_at(10, &[10, 11, 12, 13, 19], 4));
    write(&*store, "00000000000000000020.log", &batch(20, 1, 0));
    let log = open_ro(&store, CheckpointFile::Memory).expect("the headers are well-formed");
    let read: Result<Vec<_>, _> = log.snapshot().reader(0).collect();
    let e = read.expect_err("the record at offset 19 is never read");
    assert!(e.is_corruption() && e.to_string().contains("outside its batch"), "{e}");
    let problem = log_core::check::check(
        Arc::clone(&store) as Arc<dyn SegmentStore>,
        Format::Kafka,
        CheckpointFile::Memory,
        None,
    )
    .expect_err("check finds it");
    assert!(problem.to_string().contains("00000000000000000010.log"), "{problem}");
}

#[test]
fn a_cleaner_checkpoint_past_the_end_is_reset_to_the_start_and_nothing_is_written() {
    let store = partition();
    let log_dir = Arc::new(MemStore::new());
    write(&*log_dir, "cleaner-offset-checkpoint", b"0\n1\nt 0 999\n");
    let checkpoint = || CheckpointFile::LogDir {
        dir: Arc::clone(&log_dir) as Arc<dyn SegmentStore>,
        topic: "t".into(),
        partition: 0,
    };
    let log = open_ro(&store, checkpoint()).expect("opens");
    let reset = log.recovery_report().checkpoint_reset.expect("reported");
    assert_eq!((reset.found, reset.reset_to), (999, 0));
    assert_eq!(log.cleaner_checkpoint(), 0, "cleaning starts from the partition's start, as Kafka resets it");
    let f = log_dir.open("cleaner-offset-checkpoint").expect("still there");
    let mut text = vec![0; f.len() as usize];
    f.read_at(0, &mut text).expect("read");
    assert_eq!(text, b"0\n1\nt 0 999\n", "the read-only view wrote nothing");
    let report = log_core::check::check(Arc::clone(&store) as Arc<dyn SegmentStore>, Format::Kafka, checkpoint(), None)
        .expect("intact");
    assert!(report.notices.iter().any(|n| n.what.contains("past the end")), "{:?}", report.notices);
}

#[test]
fn the_brokers_log_start_and_high_watermark_bound_the_cleanable_range() {
    let store = partition();
    let log_dir = Arc::new(MemStore::new());
    write(&*log_dir, "log-start-offset-checkpoint", b"0\n2\nt 0 3\nu 1 9\n");
    write(&*log_dir, "replication-offset-checkpoint", b"0\n1\nt 0 5\n");
    let checkpoint = || CheckpointFile::LogDir {
        dir: Arc::clone(&log_dir) as Arc<dyn SegmentStore>,
        topic: "t".into(),
        partition: 0,
    };
    for writable in [false, true] {
        let log = if writable {
            Log::open(
                Arc::clone(&store) as Arc<dyn SegmentStore>,
                log_core::OpenOptions::kafka(LogConfig::default(), checkpoint()),
            )
        } else {
            open_ro(&store, checkpoint())
        }
        .expect("opens");
        assert_eq!(log.cleaner_checkpoint(), 3, "nothing below the log start is dirty");
        assert_eq!(log.snapshot().high_watermark(), Some(5));
        // The high watermark (5) bounds the last stable offset; as Kafka's LogToClean, the first uncleanable
        // offset is the base of the segment holding it (0), never below the first dirty offset (3): nothing is
        // cleanable until the high watermark leaves that segment.
        let section = log.dirty_section(0, 0);
        assert_eq!(
            (section.first_dirty_offset, section.first_uncleanable_offset, section.first_uncleanable_base),
            (3, 3, 0),
            "{section:?}"
        );
        assert!(!section.is_cleanable(), "{section:?}");
        assert_eq!(log.snapshot().transactions().expect("state").last_stable_offset, 5, "the LSO stops at the HW");
    }
    // Without the files (or the partition's lines), the segments bound it.
    let log = open_ro(&store, CheckpointFile::Memory).expect("opens");
    assert_eq!((log.cleaner_checkpoint(), log.dirty_section(0, 0).first_uncleanable_offset), (0, 10));
}
