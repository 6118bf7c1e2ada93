//! Opening fuzzed log directories of either format (shared by the `open_dir` and `open_kafka_dir` fuzz targets
//! and proptests in `cargo test`): files named from the format's name space (segments and their indexes under
//! every stage, the checkpoint, a broker's own files, foreign and unusable names) with fuzzed contents, many
//! built from valid segments of the format (for Kafka, record batches of every codec), and for a Kafka
//! partition a fuzzed `cleaner-offset-checkpoint` in its log directory.
//!
//! The properties, written once for both formats: opening read-only, reading every record, `check`, the repair
//! plan and a dry-run analysis never panic and change no byte of the store or the log directory; a writable
//! open never panics, and a store `check` found intact loses no record to it.

use std::collections::BTreeMap;
use std::sync::Arc;

use log_core::codec::{EncodeFields, encode};
use log_core::kafka::{Compression, RecordToWrite, new_header, write_batch};
use log_core::{CheckpointFile, Format, Log, LogConfig, OpenOptions, SegmentStore};
use storage_mem::MemStore;

/// A format's name space and how its files are made valid.
struct NameSpace {
    /// Names a fuzzed file may take.
    names: &'static [&'static str],
    /// Whether the cleaner checkpoint lives in the log directory (one selector past `names` writes it).
    checkpoint_in_log_dir: bool,
    /// Segment bytes built from fuzzed bytes, the first offset at `first`.
    segment: fn(first: u64, mode: u8, bytes: &[u8]) -> Vec<u8>,
    /// A checkpoint file in the format's syntax holding a fuzzed offset.
    checkpoint: fn(mode: u8, first: u8) -> String,
}

const NATIVE: NameSpace = NameSpace {
    names: &[
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
    ],
    checkpoint_in_log_dir: false,
    segment: native_frames,
    checkpoint: |mode, first| format!("logcompact-checkpoint 1\n{}\n", u32::from(mode >> 4) * 3 + u32::from(first % 9)),
};

const KAFKA: NameSpace = NameSpace {
    names: &[
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
    ],
    checkpoint_in_log_dir: true,
    segment: kafka_batches,
    checkpoint: |mode, first| format!("0\n1\nt {} {first}\n", mode >> 4),
};

fn name_space(format: Format) -> &'static NameSpace {
    match format {
        Format::Native => &NATIVE,
        Format::Kafka => &KAFKA,
    }
}

const CODECS: [Compression; 5] =
    [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd];

/// Native frames at offsets taken from the bytes (from `first` on), so that segments are often (nearly)
/// valid.
fn native_frames(first: u64, _mode: u8, bytes: &[u8]) -> Vec<u8> {
    let mut file = Vec::new();
    for (i, b) in bytes.iter().enumerate() {
        let offset = first + i as u64 * u64::from(1 + (b & 3));
        let fields = EncodeFields {
            offset,
            timestamp: i64::from(*b),
            key: Some(&bytes[i..=i]),
            value: (b & 4 == 0).then_some(&bytes[..i]),
            delete_horizon: (b & 8 != 0).then_some(i64::from(*b)),
        };
        let _ = encode(&fields, std::iter::empty(), &mut file);
    }
    file
}

/// Kafka record batches built from `bytes`: base offsets from `first` on, a batch of up to 4 records per 4
/// bytes, every codec, some with a producer id or a delete horizon.
fn kafka_batches(first: u64, mode: u8, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    let mut offset = i64::try_from(first).unwrap_or(0);
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

/// Builds a log directory of `format` from fuzzed bytes and checks the properties above; panics when one
/// fails.
///
/// Each chunk of `data`: a name selector, a mode byte, a length, then bytes: written raw, or (mode bit 0) made
/// into segment bytes at offsets taken from the name and the mode, possibly with one byte flipped (bit 1) and
/// zeros appended (bit 2), or into a checkpoint. For a Kafka partition a selector past the names writes the
/// log directory's `cleaner-offset-checkpoint`.
pub fn open_fuzzed_dir(format: Format, data: &[u8]) {
    let space = name_space(format);
    let store = Arc::new(MemStore::new());
    let log_dir = Arc::new(MemStore::new());
    let mut rest = data;
    while let [sel, mode, len, tail @ ..] = rest {
        let n = usize::from(*len).min(tail.len());
        let (bytes, next) = tail.split_at(n);
        rest = next;
        let choices = space.names.len() + usize::from(space.checkpoint_in_log_dir);
        let (target, name) = match space.names.get(usize::from(*sel) % choices) {
            Some(name) => (&store, *name),
            None => (&log_dir, log_core::kafka::checkpoints::CLEANER_OFFSET_CHECKPOINT),
        };
        let first = bytes.first().copied().unwrap_or(0);
        let mut file = Vec::new();
        if mode & 1 == 1 && name.contains("checkpoint") {
            file = (space.checkpoint)(*mode, first).into_bytes();
        } else if mode & 1 == 1 {
            let base = name.get(..20).and_then(|d| d.parse::<u64>().ok()).unwrap_or(0);
            file = (space.segment)(base + u64::from(mode >> 5), *mode, bytes);
            if mode & 2 == 2 && !file.is_empty() {
                let at = usize::from(first) * 7 % file.len();
                file[at] ^= 0x20;
            }
            if mode & 4 == 4 {
                file.resize(file.len() + usize::from(mode >> 4) * 8, 0);
            }
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
    let checkpoint = || {
        if space.checkpoint_in_log_dir {
            CheckpointFile::LogDir {
                dir: Arc::clone(&log_dir) as Arc<dyn SegmentStore>,
                topic: "t".into(),
                partition: 0,
            }
        } else {
            CheckpointFile::Own
        }
    };
    let options = || OpenOptions { format, checkpoint: checkpoint(), ..OpenOptions::new(LogConfig::default()) };
    if let Ok(log) = Log::open(Arc::clone(&dyn_store), options().read_only(true)) {
        for r in log.snapshot().reader(0) {
            if r.is_err() {
                break;
            }
        }
        let budget = cleaner::advise::Budget { total_bytes: 1 << 16, threads: 1, load_factor: 0.9 };
        let clock = Arc::new(cleaner::ManualClock::new(1_000));
        let _ = cleaner::analyze::analyze(&log, "fuzz".into(), budget, cleaner::PassOptions::default(), clock, None);
    }
    let check = || log_core::check::check(Arc::clone(&dyn_store), format, checkpoint(), None);
    let checked = check();
    let _ = log_core::repair::plan_for(format, &*store, &LogConfig::default());
    assert_eq!((contents(&store), contents(&log_dir)), before, "a command that reads changed the store");
    if let Ok(log) = Log::open(Arc::clone(&dyn_store), options()) {
        for r in log.snapshot().reader(0) {
            if r.is_err() {
                break;
            }
        }
        drop(log);
        // A store that checked out loses no record to a writable open.
        if let Ok(report) = checked
            && let Ok(after) = check()
        {
            assert_eq!(after.records, report.records, "the open lost records that check had found intact");
        }
    }
}
