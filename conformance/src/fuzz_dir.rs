//! Opening fuzzed directories (shared by the `open_dir` fuzz target and a proptest in `cargo test`): files
//! named from the log's name space (segments, hints, swap files, the checkpoint, unusable and foreign names)
//! with fuzzed contents, many built from valid frames. Opening read-only, `check` and the repair plan never
//! panic and change no byte; a writable open never panics, and a store `check` found intact loses no record
//! to it.

use std::collections::BTreeMap;
use std::sync::Arc;

use log_core::codec::{EncodeFields, encode};
use log_core::{Log, LogConfig, SegmentStore};
use storage_mem::MemStore;

const NAMES: [&str; 14] = [
    "00000000000000000000.log",
    "00000000000000000004.log",
    "00000000000000000009.log",
    "00000000000000000000.lcindex",
    "00000000000000000004.lcindex",
    "00000000000000000000.log.cleaned",
    "00000000000000000004.log.swap",
    "00000000000000000000.log.swap",
    "00000000000000000004.log.deleted",
    "cleaner-offset-checkpoint",
    "cleaner-offset-checkpoint.tmp",
    "99999999999999999999.log",
    "00000000000000000000.index",
    "leader-epoch-checkpoint",
];

fn contents(store: &MemStore) -> BTreeMap<String, Vec<u8>> {
    let mut all = BTreeMap::new();
    for name in store.list().unwrap_or_default() {
        if let Ok(f) = store.open(&name) {
            let mut bytes = vec![0; f.len() as usize];
            if f.read_at(0, &mut bytes).is_ok() {
                all.insert(name, bytes);
            }
        }
    }
    all
}

/// Builds a store from fuzzed bytes and checks the properties above; panics when one fails.
///
/// Each chunk of `data`: a name selector, a mode byte, a length, then bytes (written raw, or turned into
/// frames at offsets taken from them, possibly with one byte flipped).
pub fn open_fuzzed_dir(data: &[u8]) {
    let store = Arc::new(MemStore::new());
    // Each chunk: a name selector, a mode byte, a length, then bytes (raw or turned into frames).
    let mut rest = data;
    while let [sel, mode, len, tail @ ..] = rest {
        let n = usize::from(*len).min(tail.len());
        let (bytes, next) = tail.split_at(n);
        rest = next;
        let name = NAMES[usize::from(*sel) % NAMES.len()];
        let mut file = Vec::new();
        if mode & 1 == 1 {
            // Frames at offsets taken from the bytes, so that segments are often (nearly) valid.
            for (i, b) in bytes.iter().enumerate() {
                let offset = u64::from(mode >> 1) + i as u64 * u64::from(1 + (b & 3));
                let fields = EncodeFields {
                    offset,
                    timestamp: i64::from(*b),
                    key: Some(&bytes[i..=i]),
                    value: (b & 4 == 0).then_some(&bytes[..i]),
                    delete_horizon: (b & 8 != 0).then_some(i64::from(*b)),
                };
                let _ = encode(&fields, std::iter::empty(), &mut file);
            }
            if mode & 2 == 2 && !file.is_empty() {
                let at = usize::from(bytes.first().copied().unwrap_or(0)) % file.len();
                file[at] ^= 0x20;
            }
        } else {
            file.extend_from_slice(bytes);
        }
        let _ = store.delete(name);
        if let Ok(f) = store.create(name) {
            let _ = f.append(&file);
        }
    }
    let before = contents(&store);
    let dyn_store: Arc<dyn SegmentStore> = Arc::clone(&store) as Arc<dyn SegmentStore>;
    if let Ok(log) = Log::open(Arc::clone(&dyn_store), log_core::OpenOptions::new(LogConfig::default()).read_only(true))
    {
        for r in log.snapshot().reader(0) {
            if r.is_err() {
                break;
            }
        }
    }
    let checked = log_core::check::check_store(Arc::clone(&dyn_store));
    let _ = log_core::repair::plan(&*store);
    assert_eq!(contents(&store), before, "a command that reads changed the store");
    if let Ok(log) = Log::open(Arc::clone(&dyn_store), log_core::OpenOptions::new(LogConfig::default())) {
        let mut read = 0;
        for r in log.snapshot().reader(0) {
            if r.is_err() {
                break;
            }
            read += 1;
        }
        drop(log);
        // A store that checked out loses no record to a writable open.
        if let Ok(report) = checked
            && let Ok(after) = log_core::check::check_store(Arc::clone(&dyn_store))
        {
            assert_eq!(after.records, report.records, "the open lost records that check had found intact");
            let _ = read;
        }
    }
}
