//! `Log::open`: one open for both formats, writable or read-only, as `OpenOptions` say; a
//! native log refuses a checkpoint kept anywhere but its own store.

use std::sync::Arc;

use log_core::{CheckpointFile, Error, Format, Log, LogConfig, OpenOptions, SegmentStore};

fn fill(log: &Log) {
    log.put(b"a", b"1").expect("put");
    log.roll().expect("roll");
    log.put(b"b", b"2").expect("put");
    log.delete(b"a").expect("delete");
}

/// A record as the test compares it: offset, key, value.
type Kept = (u64, Option<Vec<u8>>, Option<Vec<u8>>);

fn contents(log: &Log) -> Vec<Kept> {
    (0..log.next_offset())
        .filter_map(|o| log.read(o).expect("reads").filter(|r| r.offset == o))
        .map(|r| (r.offset, r.key, r.value))
        .collect()
}

#[test]
fn both_formats_open_writable_then_read_only() {
    for (format, checkpoint) in [(Format::Native, CheckpointFile::Own), (Format::Kafka, CheckpointFile::Memory)] {
        let store: Arc<dyn SegmentStore> = Arc::new(storage_mem::MemStore::new());
        let options = OpenOptions { format, checkpoint, ..OpenOptions::new(LogConfig::default()) };
        let log = Log::open(Arc::clone(&store), options.clone()).expect("opens");
        assert_eq!(log.format(), format);
        fill(&log);
        let written = contents(&log);
        drop(log);
        let reader = Log::open(Arc::clone(&store), options.clone().read_only(true)).expect("opens read-only");
        assert_eq!(reader.format(), format);
        assert_eq!(contents(&reader), written, "{format:?}: the read-only open sees what was written");
        assert!(matches!(reader.put(b"c", b"3"), Err(Error::ReadOnly)), "{format:?}");
        drop(reader);
        let again = Log::open(store, options).expect("reopens");
        assert_eq!((contents(&again), again.next_offset()), (written, 3), "{format:?}");
    }
}

#[test]
fn a_native_log_keeps_its_own_checkpoint() {
    let store: Arc<dyn SegmentStore> = Arc::new(storage_mem::MemStore::new());
    let options = OpenOptions { checkpoint: CheckpointFile::Memory, ..OpenOptions::new(LogConfig::default()) };
    assert!(matches!(Log::open(store, options), Err(Error::InvalidConfig(_))));
}
