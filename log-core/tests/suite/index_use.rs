//! The sparse index is used, and a hint cannot mislead it: reads seek through the index (in closed segments
//! and in the active one), and a crafted `.lcindex` with a valid checksum never makes a read skip records.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use log_core::format::native::names::{FileKind, file_name};
use log_core::{Log, LogConfig, Segment, SegmentBytes, SegmentStore};
use storage_mem::MemStore;

fn config() -> LogConfig {
    LogConfig { index_interval_bytes: 256, ..LogConfig::default() }
}

fn filled(store: &Arc<MemStore>, records: u32, roll: bool) -> Log {
    let log =
        Log::open(Arc::clone(store) as Arc<dyn SegmentStore>, log_core::OpenOptions::new(config())).expect("open");
    for i in 0..records {
        log.put(format!("k{i}").as_bytes(), format!("value-{i:06}").as_bytes()).expect("put");
    }
    if roll {
        log.roll().expect("roll");
    }
    log
}

#[test]
fn a_read_in_a_closed_segment_starts_at_its_index_entry() {
    // Damage a record near the start of a sealed segment (by rewriting the file with the hint intact): a read
    // of a later offset seeks past it through the index; a read from the start meets it.
    let store = Arc::new(MemStore::new());
    let bytes = {
        let log = filled(&store, 200, true);
        log.snapshot().closed()[0].bytes().expect("mapped").to_vec()
    };
    let name = file_name(0, FileKind::Log);
    let mut damaged = bytes.clone();
    damaged[60] ^= 0xff; // inside the second record
    store.delete(&name).expect("delete");
    store.create(&name).expect("create").append(&damaged).expect("write");
    let log = Log::open(Arc::clone(&store) as Arc<dyn SegmentStore>, log_core::OpenOptions::new(config()))
        .expect("the hint's cheap checks pass");
    assert!(log.read(1).is_err(), "the damaged record is found by a read that reaches it");
    assert_eq!(log.read(150).expect("seeks past the damage").map(|r| r.offset), Some(150));
    assert_eq!(log.snapshot().reader(190).count(), 10);
}

#[test]
fn a_crafted_hint_with_a_valid_checksum_never_makes_a_read_skip_records() {
    let store = Arc::new(MemStore::new());
    drop(filled(&store, 200, true));
    let hint = file_name(0, FileKind::Index);
    let file = store.open(&hint).expect("hint");
    let mut bytes = vec![0; file.len() as usize];
    file.read_at(0, &mut bytes).expect("read");
    // Entry 10 claims the offset just after entry 9's (entries stay sorted) while it points at a record
    // several offsets later: a seek trusting it would land late and skip the records in between. Fix up the
    // checksum so that only the entry is wrong.
    // The entries start at byte 104 of a version 3 hint (docs/format.md, section 4).
    const ENTRIES: usize = 104;
    let offset_at =
        |i: usize| u64::from_le_bytes(bytes[ENTRIES + i * 16..ENTRIES + 8 + i * 16].try_into().expect("8 bytes"));
    let (previous, actual) = (offset_at(9), offset_at(10));
    assert!(actual > previous + 2, "entries {previous} and {actual} are apart");
    let entry = ENTRIES + 10 * 16;
    bytes[entry..entry + 8].copy_from_slice(&(previous + 1).to_le_bytes());
    let body = bytes.len() - 4;
    let crc = crc32c::crc32c(&bytes[..body]);
    bytes[body..].copy_from_slice(&crc.to_le_bytes());
    store.delete(&hint).expect("delete");
    store.create(&hint).expect("create").append(&bytes).expect("write");
    let log =
        Log::open(Arc::clone(&store) as Arc<dyn SegmentStore>, log_core::OpenOptions::new(config())).expect("open");
    for target in previous + 1..actual {
        assert_eq!(log.read(target).expect("read").map(|r| r.offset), Some(target), "READ {target}");
    }
    let report = log_core::check::check(
        Arc::clone(&store) as Arc<dyn SegmentStore>,
        log_core::Format::Native,
        log_core::CheckpointFile::Own,
        None,
    )
    .expect("intact");
    assert!(report.notices.iter().any(|n| n.file == hint && n.what.contains("points at no such record")), "{report:?}");
}

/// A store whose files count the bytes read through `read_at`.
#[derive(Debug, Default)]
struct Counting {
    inner: MemStore,
    read: Arc<AtomicU64>,
}

#[derive(Debug)]
struct CountingSegment(Arc<dyn Segment>, Arc<AtomicU64>);

impl Segment for CountingSegment {
    fn len(&self) -> u64 {
        self.0.len()
    }
    fn append(&self, data: &[u8]) -> io::Result<u64> {
        self.0.append(data)
    }
    fn read_at(&self, pos: u64, out: &mut [u8]) -> io::Result<()> {
        self.1.fetch_add(out.len() as u64, Ordering::SeqCst);
        self.0.read_at(pos, out)
    }
    fn truncate(&self, len: u64) -> io::Result<()> {
        self.0.truncate(len)
    }
    fn sync(&self) -> io::Result<()> {
        self.0.sync()
    }
    fn seal(&self) -> io::Result<()> {
        self.0.seal()
    }
    fn is_sealed(&self) -> bool {
        self.0.is_sealed()
    }
    fn view(&self) -> io::Result<SegmentBytes> {
        self.0.view()
    }
    fn file_id(&self) -> u64 {
        self.0.file_id()
    }
}

impl SegmentStore for Counting {
    fn create(&self, name: &str) -> io::Result<Arc<dyn Segment>> {
        Ok(Arc::new(CountingSegment(self.inner.create(name)?, Arc::clone(&self.read))))
    }
    fn open(&self, name: &str) -> io::Result<Arc<dyn Segment>> {
        Ok(Arc::new(CountingSegment(self.inner.open(name)?, Arc::clone(&self.read))))
    }
    fn list(&self) -> io::Result<Vec<String>> {
        self.inner.list()
    }
    fn file_id(&self, name: &str) -> io::Result<u64> {
        self.inner.file_id(name)
    }
    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn delete(&self, name: &str) -> io::Result<()> {
        self.inner.delete(name)
    }
    fn sync_dir(&self) -> io::Result<()> {
        self.inner.sync_dir()
    }
}

#[test]
fn a_read_in_the_active_segment_starts_at_its_index_entry() {
    let store = Arc::new(Counting::default());
    let log =
        Log::open(Arc::clone(&store) as Arc<dyn SegmentStore>, log_core::OpenOptions::new(config())).expect("open");
    for i in 0..2000u32 {
        log.put(format!("k{i}").as_bytes(), format!("value-{i:06}").as_bytes()).expect("put");
    }
    let size = log.snapshot().active_len();
    store.read.store(0, Ordering::SeqCst);
    assert_eq!(log.read(1990).expect("read").map(|r| r.offset), Some(1990));
    let read = store.read.load(Ordering::SeqCst);
    // One chunk from the entry before offset 1990, not the whole segment.
    assert!(read < size / 4, "read {read} of {size} bytes to find one record near the end");
}

/// A segment whose full index passes 4,096 entries (an entry a record here) keeps every second, then every
/// fourth, of them: every offset still reads, the summary still counts the full index's entries (the cleaner's
/// grouping reads them, as Kafka's reads its `.index`), and a reopen that takes the hint sees the same.
#[test]
fn a_long_segment_keeps_a_thinned_index_that_reads_every_offset() {
    let store = Arc::new(MemStore::new());
    let config = LogConfig { index_interval_bytes: 1, ..LogConfig::default() };
    let records = 10_000u64;
    {
        let log = Log::open(Arc::clone(&store) as Arc<dyn SegmentStore>, log_core::OpenOptions::new(config.clone()))
            .expect("open");
        for i in 0..records {
            log.put(format!("k{i}").as_bytes(), format!("value-{i:06}").as_bytes()).expect("put");
        }
        log.roll().expect("roll");
    }
    assert!(store.list().expect("list").contains(&file_name(0, FileKind::Index)), "the hint is written");
    let log =
        Log::open(Arc::clone(&store) as Arc<dyn SegmentStore>, log_core::OpenOptions::new(config)).expect("reopen");
    let snapshot = log.snapshot();
    let index = &snapshot.closed()[0].summary().index;
    assert_eq!(index.len(), records as usize, "the full index: an entry a record");
    assert_eq!(index.entries().len(), 2_500, "every fourth kept");
    for target in (0..records).step_by(7).chain([records - 1]) {
        assert_eq!(log.read(target).expect("read").map(|r| r.offset), Some(target), "offset {target}");
    }
}
