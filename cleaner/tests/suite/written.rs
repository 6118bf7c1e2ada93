//! Logs written for the tests of whole passes, and what to compare of them: every file's bytes, every record.

use std::collections::BTreeMap;
use std::sync::Arc;

use log_core::{AppendRecord, Log, LogConfig, SegmentStore};
use storage_mem::MemStore;

/// The clock's "now" of these tests, ms.
pub const NOW: i64 = 1_000_000_000;

/// The log's settings: segments of 4 KiB.
pub fn config() -> LogConfig {
    LogConfig { segment_bytes: 4096, ..LogConfig::default() }
}

/// A log of `records` records over `keys` keys (every seventh a tombstone), in segments of 4 KiB, rolled.
pub fn written(keys: u64, records: u64) -> (Arc<MemStore>, Log) {
    written_with(config(), keys, records)
}

/// [`written`] with the settings `config`.
pub fn written_with(config: LogConfig, keys: u64, records: u64) -> (Arc<MemStore>, Log) {
    let store = Arc::new(MemStore::new());
    let log = Log::open(Arc::clone(&store) as Arc<dyn SegmentStore>, log_core::OpenOptions::new(config)).expect("open");
    for i in 0..records {
        let key = format!("key-{}", (i * 7919) % keys);
        let value = format!("value-{i}");
        let value = (i % 7 != 6).then_some(value.as_bytes());
        let rec = AppendRecord { key: Some(key.as_bytes()), value, timestamp: NOW - 10_000, headers: &[] };
        log.append(&rec).expect("append");
    }
    log.roll().expect("roll");
    (store, log)
}

/// Every file of the store and its bytes.
pub fn files(store: &MemStore) -> BTreeMap<String, Vec<u8>> {
    store
        .list()
        .expect("list")
        .into_iter()
        .map(|name| {
            let file = store.open(&name).expect("open");
            let mut bytes = vec![0u8; usize::try_from(file.len()).expect("size")];
            file.read_at(0, &mut bytes).expect("read");
            (name, bytes)
        })
        .collect()
}

/// Every record as `(offset, key, value)`.
pub fn records(log: &Log) -> Vec<(u64, Vec<u8>, Option<Vec<u8>>)> {
    log.snapshot()
        .reader(0)
        .map(|r| {
            let r = r.expect("read");
            (r.offset, r.key.expect("key"), r.value)
        })
        .collect()
}
