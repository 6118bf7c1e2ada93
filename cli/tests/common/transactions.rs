//! A Kafka partition of transactions for tests: committed, aborted and a hanging transaction, written as a
//! transactional producer and its coordinator's markers leave them, with or without the broker's `.txnindex`.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

use log_core::kafka::txn::AbortedTxn;
use log_core::kafka::{Compression, RecordToWrite, new_header, write_batch};

/// A batch of the test partition.
pub enum B {
    /// Data from producer `pid` (transactional or not): `(key, value)` records.
    Data { pid: i64, txn: bool, records: &'static [(&'static str, &'static str)] },
    /// A transaction marker of `pid`.
    Marker { pid: i64, commit: bool },
}

/// The producer whose transaction never ends.
pub const HANGING: i64 = 3000;

/// A record's key and value.
type KeyValue = (Vec<u8>, Vec<u8>);

/// The partition: returns the last stable offset (the hanging transaction's first offset).
pub fn write_partition(dir: &Path, with_txn_index: bool) -> u64 {
    use B::{Data, Marker};
    let segments: [&[B]; 4] = [
        &[
            Data { pid: -1, txn: false, records: &[("k0", "a0"), ("k1", "a1"), ("k2", "a2"), ("k3", "a3")] },
            Data { pid: 1000, txn: true, records: &[("k0", "c0"), ("k1", "c1")] },
            Data { pid: 2000, txn: true, records: &[("k2", "x2"), ("k3", "x3")] },
            Data { pid: -1, txn: false, records: &[("k4", "a4")] },
        ],
        &[
            Marker { pid: 1000, commit: true },
            Marker { pid: 2000, commit: false },
            Data { pid: -1, txn: false, records: &[("k5", "b5"), ("k4", "b4")] },
            Data { pid: 2000, txn: true, records: &[("k5", "x5")] },
            Marker { pid: 2000, commit: false },
            Data { pid: HANGING, txn: true, records: &[("k0", "h0")] },
            Data { pid: -1, txn: false, records: &[("k1", "b1")] },
        ],
        &[Data { pid: -1, txn: false, records: &[("k2", "b2"), ("k1", "b1'")] }],
        &[Data { pid: -1, txn: false, records: &[("k8", "active")] }],
    ];
    std::fs::create_dir_all(dir).expect("mkdir");
    let mut offset = 0i64;
    let mut ongoing: BTreeMap<i64, i64> = BTreeMap::new();
    let mut lso = None;
    let (mut out, mut scratch) = (Vec::new(), Vec::new());
    for batches in segments {
        let base = offset;
        let (mut bytes, mut txn_index) = (Vec::new(), Vec::new());
        for b in batches {
            let (pid, attributes, keys_values): (i64, i16, Vec<KeyValue>) = match b {
                Data { pid, txn, records } => {
                    if *txn {
                        ongoing.entry(*pid).or_insert(offset);
                    }
                    let kv = records.iter().map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec())).collect();
                    (*pid, if *txn { 0x10 } else { 0 }, kv)
                }
                Marker { pid, commit } => {
                    let first = ongoing.remove(pid).unwrap_or(offset);
                    if !commit {
                        let lso = ongoing.values().min().copied().unwrap_or(offset + 1);
                        let e = AbortedTxn {
                            producer_id: *pid,
                            first_offset: first as u64,
                            last_offset: offset as u64,
                            last_stable_offset: lso as u64,
                        };
                        e.encode(&mut txn_index);
                    }
                    (*pid, 0x30, vec![(vec![0, 0, 0, u8::from(*commit)], vec![0, 0, 0, 0, 0, 7])])
                }
            };
            if pid == HANGING {
                lso.get_or_insert(offset as u64);
            }
            let records: Vec<RecordToWrite<'_>> = keys_values
                .iter()
                .enumerate()
                .map(|(i, (k, v))| RecordToWrite {
                    offset: offset + i as i64,
                    timestamp: 1_700_000_000_000 + offset + i as i64,
                    key: Some(k),
                    value: Some(v),
                    header_count: 0,
                    header_bytes: &[],
                })
                .collect();
            let mut h = new_header(offset, records.len() as i32 - 1);
            h.attributes |= attributes;
            if pid >= 0 {
                (h.producer_id, h.producer_epoch, h.base_sequence) = (pid, 4, 0);
            }
            out.clear();
            write_batch(&h, Compression::None, None, &records, &mut out, &mut scratch).expect("batch");
            bytes.extend_from_slice(&out);
            offset += records.len() as i64;
        }
        std::fs::write(dir.join(format!("{base:020}.log")), &bytes).expect("segment");
        if with_txn_index && !txn_index.is_empty() {
            std::fs::write(dir.join(format!("{base:020}.txnindex")), &txn_index).expect("txnindex");
        }
    }
    lso.expect("the hanging transaction")
}

/// A producer's entry in a broker's producer snapshot.
#[derive(Debug, Clone, Copy)]
pub struct SnapshotEntry {
    pub producer_id: i64,
    pub epoch: i16,
    pub last_sequence: i32,
    pub last_offset: i64,
    pub offset_delta: i32,
    pub timestamp: i64,
    pub coordinator_epoch: i32,
    pub current_txn_first_offset: i64,
}

/// Writes a producer snapshot as a broker does (version 1, CRC-32C over what follows the CRC, 46-byte entries);
/// returns its bytes.
#[expect(clippy::big_endian_bytes, reason = "Kafka's files are big-endian")]
pub fn write_producer_snapshot(file: &Path, entries: &[SnapshotEntry]) -> Vec<u8> {
    let mut s = vec![0u8, 1, 0, 0, 0, 0];
    s.extend_from_slice(&(entries.len() as i32).to_be_bytes());
    for e in entries {
        s.extend_from_slice(&e.producer_id.to_be_bytes());
        s.extend_from_slice(&e.epoch.to_be_bytes());
        s.extend_from_slice(&e.last_sequence.to_be_bytes());
        s.extend_from_slice(&e.last_offset.to_be_bytes());
        s.extend_from_slice(&e.offset_delta.to_be_bytes());
        s.extend_from_slice(&e.timestamp.to_be_bytes());
        s.extend_from_slice(&e.coordinator_epoch.to_be_bytes());
        s.extend_from_slice(&e.current_txn_first_offset.to_be_bytes());
    }
    let crc = crc32c::crc32c(&s[6..]);
    s[2..6].copy_from_slice(&crc.to_be_bytes());
    std::fs::write(file, &s).expect("snapshot");
    s
}
