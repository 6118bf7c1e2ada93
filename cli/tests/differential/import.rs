//! A real partition as a [`Case`]: every batch of a partition directory (a real broker's, say) described as the
//! generator describes its own, its records' exact bytes kept, so that a difference found on broker-written data
//! can be shrunk as the fuzzer shrinks its own cases and committed as a regression case of a few batches.

use std::path::Path;

use log_core::kafka::Compression;
use log_core::kafka::txn::{coordinator_epoch, marker_type};

use super::case::{BatchSpec, Case, RawRecord, RecSpec, Snapshots, Writer};
use super::write::hex;

/// What the partition is cleaned with.
#[derive(Debug, Clone)]
pub struct Settings {
    pub now_ms: i64,
    pub buffer_bytes: u64,
    pub segment_bytes: u64,
    pub delete_retention_ms: i64,
    pub min_compaction_lag_ms: i64,
}

/// The partition in `dir` as a case (the active segment last), or why it cannot be one.
pub fn from_partition(dir: &Path, settings: &Settings) -> Result<Case, String> {
    let mut logs: Vec<(u64, std::path::PathBuf)> = std::fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let base = name.strip_suffix(".log")?.parse().ok()?;
            Some((base, e.path()))
        })
        .collect();
    logs.sort();
    let snapshot_offsets: Vec<u64> = std::fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().strip_suffix(".snapshot")?.parse().ok())
        .collect();
    let mut segments = Vec::new();
    // The writer lays segments end to end from offset 0: a batch's offsets are kept by its gap from the end of
    // the one before it (a segment then starts where the one before ended, not at its own base).
    let mut next = 0;
    let mut bases = Vec::new();
    let mut batch_bases = Vec::new();
    let mut scratch = Vec::new();
    for (base, path) in &logs {
        if *base < next {
            return Err(format!("segment {base} overlaps the one before it"));
        }
        bases.push(*base);
        let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
        let mut batches = Vec::new();
        let mut pos = 0;
        while pos + log_core::kafka::HEADER_BYTES <= bytes.len() {
            let Ok(batch) = log_core::Format::Kafka.parse(&bytes[pos..], true) else { break };
            pos += batch.len();
            let h = *batch.kafka_header().ok_or("not a Kafka batch")?;
            let batch_base = h.base_offset as u64;
            batch_bases.push(batch_base);
            let records: Vec<log_core::RecordRef<'_>> = batch
                .records(&mut scratch)
                .map_err(|e| format!("{e:?}"))?
                .collect::<Result<_, _>>()
                .map_err(|e| format!("{e:?}"))?;
            let writer = if h.is_control() {
                let first = records.first();
                Writer::Marker {
                    producer_id: h.producer_id,
                    commit: first.and_then(|r| marker_type(r.key)) == Some(log_core::kafka::txn::MarkerType::Commit),
                    coordinator_epoch: first.and_then(|r| coordinator_epoch(r.value)).unwrap_or(0),
                }
            } else if h.producer_id < 0 {
                Writer::Plain
            } else if h.is_transactional() {
                Writer::Txn { producer_id: h.producer_id }
            } else {
                Writer::Idempotent { producer_id: h.producer_id }
            };
            let first_ts = records.first().map_or(h.max_timestamp, |r| r.timestamp);
            let mut prev = batch_base;
            let mut specs = Vec::new();
            for (i, r) in records.iter().enumerate() {
                let skipped = if i == 0 { r.offset - batch_base } else { r.offset - prev - 1 };
                prev = r.offset;
                let mut headers = Vec::new();
                let mut count = 0u8;
                for (name, value) in r.headers() {
                    count = count.saturating_add(1);
                    log_core::kafka::varint::write_varint(&mut headers, name.len() as i32);
                    headers.extend_from_slice(name);
                    match value {
                        None => log_core::kafka::varint::write_varint(&mut headers, -1),
                        Some(v) => {
                            log_core::kafka::varint::write_varint(&mut headers, v.len() as i32);
                            headers.extend_from_slice(v);
                        }
                    }
                }
                if i == 0 && skipped > 0 {
                    return Err(format!("batch {batch_base}: its first record is not at its base offset"));
                }
                specs.push(RecSpec {
                    key: r.key.map(|_| 0),
                    value: r.value.map(|v| v.len().min(u16::MAX as usize) as u16),
                    gap: skipped > 0,
                    skip: skipped.saturating_sub(1) as u32,
                    ts_delta: r.timestamp - first_ts,
                    headers: count,
                    raw: (!h.is_control()).then(|| RawRecord {
                        key: r.key.map(hex),
                        value: r.value.map(hex),
                        headers: hex(&headers),
                    }),
                });
            }
            let last_record = records.last().map_or(batch_base, |r| r.offset);
            batches.push(BatchSpec {
                writer,
                epoch: h.producer_epoch,
                sequence: h.base_sequence,
                codec: h.compression().unwrap_or(Compression::None),
                records: specs,
                gap_before: u32::try_from(batch_base - next).map_err(|_| "a gap of more than 2^32 offsets")?,
                extra_delta: u32::try_from(h.last_offset() as u64 - last_record).unwrap_or(0),
                timestamp: first_ts,
                horizon: h.delete_horizon(),
            });
            next = h.last_offset() as u64 + 1;
        }
        segments.push(batches);
    }
    let log_end = next;
    let stray = snapshot_offsets.iter().find(|o| !bases.contains(o) && **o != log_end);
    Ok(Case {
        seed: 0,
        segments,
        now_ms: settings.now_ms,
        buffer_bytes: settings.buffer_bytes,
        segment_bytes: settings.segment_bytes,
        index_interval_bytes: 4096,
        delete_retention_ms: settings.delete_retention_ms,
        min_compaction_lag_ms: settings.min_compaction_lag_ms,
        checkpoint_at: None,
        log_start_at: None,
        high_watermark_at: None,
        clean_shutdown: true,
        snapshots: Snapshots {
            at_base: bases.iter().map(|b| snapshot_offsets.contains(b)).collect(),
            at_end: snapshot_offsets.contains(&log_end),
            stray_at: stray.and_then(|o| batch_bases.iter().position(|b| b == o)),
        },
    })
}
