//! Audit benchmark (issue 43): `logcompact audit` over a broker's log directory beside our pass 1 over the same
//! bytes, and `audit --compare` of three brokers' files of one large partition, with the peak memory of each.
//!
//! `cargo run --release -p bench --bin audit-bench -- [--records 4M] [--keys 1M] [--compare-keys 10M]`
//! Prints one JSON object. Timings are of one run on a shared machine: compare ratios, not absolutes.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use log_core::SegmentStore;
use log_core::kafka::Compression;
use logcompact::MapKind;
use logcompact::audit::digest::Entry;
use logcompact::audit::file::{AuditWriter, BrokerHeader, PartitionHeader};
use logcompact::audit::{AuditRequest, audit_broker, compare};

/// The benchmark's arguments.
#[derive(Debug, Parser)]
#[command(name = "audit-bench", about = "logcompact audit against pass 1, and audit --compare of three brokers")]
struct Args {
    /// Records of the partition audited (100 a batch, 16-byte keys, 100-byte values, uncompressed).
    #[arg(long, default_value = "4M", value_parser = bench::args::count)]
    records: u64,
    /// Distinct keys in it.
    #[arg(long, default_value = "1M", value_parser = bench::args::count)]
    keys: u64,
    /// Keys of the partition whose three audit files are compared.
    #[arg(long, default_value = "10M", value_parser = bench::args::count)]
    compare_keys: u64,
}

#[derive(Debug, serde::Serialize)]
struct Report {
    records: u64,
    keys: u64,
    partition_bytes: u64,
    audit_seconds: f64,
    /// CPU seconds of the audit (user and system, every thread: it reads on one and places on another).
    audit_cpu_seconds: f64,
    audit_peak_anon_bytes: u64,
    audit_file_bytes: u64,
    audit_file_bytes_per_key: f64,
    /// The same broker's summary (`audit --summary`: key-range hashes, no keys).
    summary_file_bytes: u64,
    summary_file_bytes_per_key: f64,
    pass1_seconds: f64,
    pass1_bytes_read: u64,
    audit_over_pass1: f64,
    compare_keys: u64,
    compare_files_bytes: u64,
    compare_seconds: f64,
    compare_peak_anon_bytes: u64,
}

fn main() {
    let a: Args = bench::args::parse_or_exit();
    match run(&a) {
        Ok(r) => println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default()),
        Err(e) => {
            eprintln!("audit-bench: {e}");
            std::process::exit(1);
        }
    }
}

fn run(a: &Args) -> Result<Report, String> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let log_dir = tmp.path().join("data");
    let part = log_dir.join("t-0");
    std::fs::create_dir_all(&part).map_err(|e| e.to_string())?;
    let keys = bench::Keys::new(usize::try_from(a.keys).map_err(|e| e.to_string())?, 16, 1);
    let written = {
        let store = storage_file::FileStore::open(&part).map_err(|e| e.to_string())?;
        bench::kafka::write_partition(&store, &keys, a.records, u64::MAX, Compression::None, 256 << 20, 1)?
    };
    drop(keys);
    let partition_bytes = dir_bytes(&part);

    // The audit, read-only, as beside a running broker (cold page cache is not asked for: both read warm).
    let out = tmp.path().join("broker.audit");
    let req = AuditRequest::new(vec![log_dir.clone()], out.clone());
    let started = Instant::now();
    let cpu_before = cpu_seconds();
    let (summary, audit_peak) = bench::rss::peak_during(|| audit_broker(&req, &mut |_| {}));
    let audit_cpu_seconds = cpu_seconds() - cpu_before;
    let summary = summary.map_err(|e| e.to_string())?;
    let audit_seconds = started.elapsed().as_secs_f64();

    let mut summary_req = AuditRequest::new(vec![log_dir.clone()], tmp.path().join("broker.summary"));
    summary_req.summary = true;
    let summary_file_bytes = audit_broker(&summary_req, &mut |_| {}).map_err(|e| e.to_string())?.file_bytes;

    // Pass 1 over the same bytes: one pass of the default map on a copy, its pass-1 time.
    let copy = tmp.path().join("copy");
    std::fs::create_dir_all(&copy).map_err(|e| e.to_string())?;
    let store: Arc<dyn SegmentStore> = Arc::new(storage_file::FileStore::open(&copy).map_err(|e| e.to_string())?);
    {
        let source = storage_file::FileStore::open_read_only(&part).map_err(|e| e.to_string())?;
        bench::store::copy_store(&source, &*store)?;
    }
    let (_, passes) =
        bench::kafka::compact_until_clean(store, MapKind::Skimpy, 256 << 20, 0.9, 256 << 20, 1_800_000_000_000)?;
    let first = passes.first().ok_or("no pass ran")?;

    // Three brokers' files of one partition of `compare_keys` keys, one replica a key off.
    let files: Vec<_> = (1..=3).map(|n| tmp.path().join(format!("big-{n}.audit"))).collect();
    for (i, f) in files.iter().enumerate() {
        synthetic_audit(f, i as i32 + 1, a.compare_keys)?;
    }
    let compare_files_bytes = files.iter().map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0)).sum();
    bench::rss::release_freed_heap();
    let started = Instant::now();
    let (report, compare_peak) = bench::rss::peak_during(|| compare::compare(&files));
    let report = report.map_err(|e| e.to_string())?;
    let compare_seconds = started.elapsed().as_secs_f64();
    if report.partitions.first().map(|p| p.keys_disagreeing) != Some(1) {
        return Err("the comparison did not find the one key planted".into());
    }
    Ok(Report {
        records: written.records,
        keys: summary.keys,
        partition_bytes,
        audit_seconds,
        audit_cpu_seconds,
        audit_peak_anon_bytes: audit_peak.anon,
        audit_file_bytes: summary.file_bytes,
        audit_file_bytes_per_key: summary.file_bytes as f64 / summary.keys.max(1) as f64,
        summary_file_bytes,
        summary_file_bytes_per_key: summary_file_bytes as f64 / summary.keys.max(1) as f64,
        pass1_seconds: first.pass1.seconds,
        pass1_bytes_read: first.pass1.bytes_read,
        audit_over_pass1: audit_seconds / first.pass1.seconds.max(1e-9),
        compare_keys: a.compare_keys,
        compare_files_bytes,
        compare_seconds,
        compare_peak_anon_bytes: compare_peak.anon,
    })
}

/// The process's user and system CPU seconds so far, every thread's (`/proc/self/stat`, in Linux's 100 Hz
/// ticks; 0 where it cannot be read).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command's closing parenthesis: utime and stime are the 12th and 13th of them.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: u64 = after.split_whitespace().skip(11).take(2).filter_map(|t| t.parse::<u64>().ok()).sum();
    ticks as f64 / 100.0
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map(|es| es.flatten().filter_map(|e| e.metadata().ok()).map(|m| m.len()).sum()).unwrap_or(0)
}

/// An audit file of broker `node` holding one partition of `keys` keys, the same on every broker but one key
/// of broker 3.
fn synthetic_audit(path: &Path, node: i32, keys: u64) -> Result<(), String> {
    let broker = BrokerHeader { node_id: Some(node), cluster_id: Some("bench".into()), ..BrokerHeader::default() };
    let mut w = AuditWriter::create(path, &broker).map_err(|e| e.to_string())?;
    let header = PartitionHeader {
        name: "t-0".into(),
        topic: "t".into(),
        topic_id: Some("bench".into()),
        log_end: keys * 2,
        high_watermark: Some(keys * 2),
        last_stable_offset: keys * 2,
        keys,
        ..PartitionHeader::default()
    };
    w.partition(&header, &mut |sink| {
        // Key hashes spread over the whole range, in order.
        let step = u64::MAX / keys.max(1);
        for i in 0..keys {
            let value = if node == 3 && i == keys / 2 { 1 } else { 0 };
            sink(Entry { key_hash: i * step, offset_and_flags: i * 2, value_hash: value })?;
        }
        Ok(keys)
    })
    .map_err(|e| e.to_string())?;
    w.finish().map_err(|e| e.to_string())
}
