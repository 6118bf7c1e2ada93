//! Opening fuzzed Kafka partition directories (shared by the `open_kafka_dir` fuzz target and a proptest in
//! `cargo test`): files named from a partition's name space (segments and their indexes under every stage, a
//! broker's own files, foreign and unusable names) with fuzzed contents, many built from valid record batches
//! of every codec, and a fuzzed `cleaner-offset-checkpoint` in the log directory. Opening read-only, reading
//! every record, `check`, the repair plan and a dry-run analysis never panic and change no byte of the
//! partition or of the log directory; a writable open never panics, and a partition `check` found intact loses
//! no record to it.

use std::collections::BTreeMap;
use std::sync::Arc;

use log_core::kafka::{Compression, RecordToWrite, new_header, write_batch};
use log_core::{CheckpointFile, Log, LogConfig, SegmentStore};
use storage_mem::MemStore;

const NAMES: [&str; 18] = [
    "00000000000000000000.log",
    "00000000000000000010.log",
    "00000000000000000030.log",
    "00000000000000000000.index",
    "00000000000000000010.timeindex",
    "00000000000000000000.txnindex",
    "00000000000000000010.log.cleaned",
    "00000000000000000010.log.swap",
    "00000000000000000000.log.swap",
    "00000000000000000000.log.deleted",
    "00000000000000000010.index.swap",
    "00000000000000000030.snapshot",
    "leader-epoch-checkpoint",
    "partition.metadata",
    "server.log",
    "0.log",
    "99999999999999999999.log",
    "00000000000000000000.lcindex",
];

const CODECS: [Compression; 5] =
    [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd];

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

/// Record batches built from `bytes`: base offsets from `first` on, a batch of up to 4 records per 4 bytes.
fn batches(first: i64, mode: u8, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    let mut offset = first;
    for chunk in bytes.chunks(4) {
        let n = chunk.len();
        let keys: Vec<[u8; 1]> = chunk.iter().map(|b| [b % 5]).collect();
        let records: Vec<RecordToWrite<'_>> = (0..n)
            .map(|i| RecordToWrite {
                offset: offset + i as i64,
                timestamp: i64::from(chunk[i]),
                key: (chunk[i] & 16 == 0).then_some(&keys[i][..]),
                value: (chunk[i] & 4 == 0).then_some(&chunk[..i]),
                header_count: 0,
                header_bytes: &[],
            })
            .collect();
        let mut header = new_header(offset, (n as i32 - 1).max(0));
        if mode & 8 != 0 {
            header.producer_id = i64::from(chunk[0] % 3);
        }
        let codec = CODECS[usize::from(chunk[0]) % CODECS.len()];
        let horizon = (chunk[0] & 32 != 0).then_some(i64::from(chunk[0]));
        let _ = write_batch(&header, codec, horizon, &records, &mut out, &mut scratch);
        offset += n as i64 + i64::from(chunk[0] & 1);
    }
    out
}

/// Builds a partition and its log directory from fuzzed bytes and checks the properties above; panics when
/// one fails.
///
/// Each chunk of `data`: a name selector, a mode byte, a length, then bytes (written raw, or turned into
/// batches at offsets taken from them, possibly with one byte flipped). A selector past the names writes the
/// log directory's `cleaner-offset-checkpoint`.
pub fn open_fuzzed_kafka_dir(data: &[u8]) {
    let store = Arc::new(MemStore::new());
    let log_dir = Arc::new(MemStore::new());
    let mut rest = data;
    while let [sel, mode, len, tail @ ..] = rest {
        let n = usize::from(*len).min(tail.len());
        let (bytes, next) = tail.split_at(n);
        rest = next;
        let (target, name) = match NAMES.get(usize::from(*sel) % (NAMES.len() + 1)) {
            Some(name) => (&store, *name),
            None => (&log_dir, log_core::kafka::checkpoints::CLEANER_OFFSET_CHECKPOINT),
        };
        let mut file = Vec::new();
        if mode & 1 == 1 && name.contains(".log") {
            let first = name.get(..20).and_then(|d| d.parse::<i64>().ok()).unwrap_or(0) + i64::from(mode >> 5);
            file = batches(first, *mode, bytes);
            if mode & 2 == 2 && !file.is_empty() {
                let at = usize::from(bytes.first().copied().unwrap_or(0)) * 7 % file.len();
                file[at] ^= 0x20;
            }
            if mode & 4 == 4 {
                file.resize(file.len() + usize::from(mode >> 4) * 8, 0);
            }
        } else if mode & 1 == 1 {
            file = format!("0\n1\nt {} {}\n", mode >> 4, bytes.first().copied().unwrap_or(0)).into_bytes();
        } else {
            file.extend_from_slice(bytes);
        }
        let _ = target.delete(name);
        if let Ok(f) = target.create(name) {
            let _ = f.append(&file);
        }
    }
    let before = (contents(&store), contents(&log_dir));
    let dyn_store: Arc<dyn SegmentStore> = Arc::clone(&store) as Arc<dyn SegmentStore>;
    let checkpoint = || CheckpointFile::LogDir {
        dir: Arc::clone(&log_dir) as Arc<dyn SegmentStore>,
        topic: "t".into(),
        partition: 0,
    };
    if let Ok(log) = Log::open(
        Arc::clone(&dyn_store),
        log_core::OpenOptions::kafka(LogConfig::default(), checkpoint()).read_only(true),
    ) {
        for r in log.snapshot().reader(0) {
            if r.is_err() {
                break;
            }
        }
        let budget = cleaner::advise::Budget { total_bytes: 1 << 16, threads: 1, load_factor: 0.9 };
        let clock = Arc::new(cleaner::ManualClock::new(1_000));
        let _ = cleaner::analyze::analyze(&log, "fuzz".into(), budget, cleaner::PassOptions::default(), clock, None);
    }
    let checked = log_core::check::check_kafka(Arc::clone(&dyn_store), checkpoint());
    let _ = log_core::repair::plan_kafka(&*store);
    assert_eq!((contents(&store), contents(&log_dir)), before, "a command that reads changed the partition");
    if let Ok(log) = Log::open(Arc::clone(&dyn_store), log_core::OpenOptions::kafka(LogConfig::default(), checkpoint()))
    {
        drop(log);
        // A partition that checked out loses no record to a writable open.
        if let Ok(report) = checked
            && let Ok(after) = log_core::check::check_kafka(Arc::clone(&dyn_store), checkpoint())
        {
            assert_eq!(after.records, report.records, "the open lost records that check had found intact");
        }
    }
}
