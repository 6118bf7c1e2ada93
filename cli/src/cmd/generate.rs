//! `logcompact gen`: appends a deterministic synthetic workload to the log in a directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use log_core::LogConfig;
use log_core::human::{bytes, count, duration};
use log_core::workload::Workload;
use logcompact::GenerateError;
use logcompact::OpenError;
use logcompact::progress::Meter;

use crate::failure::Failure;
use crate::progress::Reporter;

/// `gen`'s arguments.
#[derive(Debug, Args)]
pub struct GenArgs {
    /// The log's directory (created if missing; appends continue an existing log).
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// Records to append.
    #[arg(long, value_name = "N", value_parser = logcompact::parse_count, allow_hyphen_values = true)]
    records: u64,
    /// Distinct keys, drawn uniformly.
    #[arg(long, value_name = "K", value_parser = logcompact::parse_count, allow_hyphen_values = true)]
    keys: u64,
    /// Bytes per value (at most 64 MiB).
    #[arg(long, value_name = "B", default_value = "100", value_parser = logcompact::parse_bytes, allow_hyphen_values = true)]
    value_bytes: u64,
    /// Share of appends that are tombstones, in [0, 1].
    #[arg(long, value_name = "FRACTION", default_value = "0", value_parser = logcompact::parse_fraction, allow_hyphen_values = true)]
    tombstones: f64,
    /// Roll segments at this size (segment.bytes).
    #[arg(long, value_name = "S", default_value = "1GiB", value_parser = logcompact::parse_bytes, allow_hyphen_values = true)]
    segment_bytes: u64,
    /// Generator seed: the same seed appends the same records.
    #[arg(long, value_name = "X", default_value_t = 1)]
    seed: u64,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `gen`.
///
/// # Errors
/// As [`generate`].
pub fn run(a: &GenArgs) -> Result<(), Failure> {
    crate::mistakes::one_log_or_new(&a.dir, log_core::Format::Native, "gen")?;
    let value_bytes = usize::try_from(a.value_bytes)
        .map_err(|_| Failure::Usage(format!("--value-bytes {} is too large", a.value_bytes)))?;
    let workload =
        Workload { records: a.records, keys: a.keys, value_bytes, tombstone_fraction: a.tombstones, seed: a.seed };
    let config = LogConfig { segment_bytes: a.segment_bytes, ..LogConfig::default() };
    generate(&a.dir, workload, config, a.json)
}

/// Appends a synthetic workload to the log in `dir` and prints what it appended (as JSON with `json`).
///
/// # Errors
/// [`Failure::Usage`] for a workload that cannot be written (checked before anything is allocated or
/// written); otherwise as the log fails.
fn generate(dir: &Path, workload: Workload, config: LogConfig, json: bool) -> Result<(), Failure> {
    let segment_bytes = config.segment_bytes;
    let meter = Arc::new(Meter::staged());
    meter.expect_records(workload.records);
    let progress = Reporter::start_writing("gen", Arc::clone(&meter));
    let (mut records, mut bytes_so_far) = (0, 0);
    let done = logcompact::generate(dir, workload, config, |n, b| {
        meter.add(b.saturating_sub(bytes_so_far), n.saturating_sub(records));
        (records, bytes_so_far) = (n.max(records), b.max(bytes_so_far));
    });
    progress.finish();
    let done = done.map_err(|e| match e {
        GenerateError::NoKeys => Failure::Usage("--keys must be at least 1".into()),
        GenerateError::ValueTooLarge { given, limit } => Failure::Usage(format!(
            "--value-bytes {given} is larger than a record can be ({limit} bytes of value at most)"
        )),
        GenerateError::Config(c) => Failure::Usage(c.to_string()),
        GenerateError::Open(OpenError::Store { source, .. }) => Failure::from_store(&source, source.to_string()),
        GenerateError::Open(OpenError::NotALog { found, other_format, .. }) => {
            Failure::from_log("cannot open the log", &log_core::Error::NotALog { found, other_format })
        }
        GenerateError::Open(OpenError::Log { source, .. }) => Failure::from_log("cannot open the log", &source),
        GenerateError::Log { what, source, .. } => Failure::from_log(what, &source),
        other => Failure::Runtime(other.to_string()),
    })?;
    for line in &done.recovery {
        crate::out::diag!("{line}");
    }
    if done.segments == 1 {
        crate::out::diag!(
            "note: all {} records are in the active segment (segment.bytes {} is larger than the log), and no pass \
             takes the active segment: `logcompact roll --dir {}` seals it, or write with a smaller --segment-bytes",
            done.active_records,
            bytes(segment_bytes),
            dir.display()
        );
    }
    if json {
        return crate::out::print_json(&done);
    }
    let w = &done.workload;
    crate::out::print_line(&format!(
        "appended {} ({}; {}, {}-byte values) to {} in {}: the log holds {} in {}, its next offset {}",
        count(done.records, "record", "records"),
        count(done.tombstones, "tombstone", "tombstones"),
        count(w.keys, "key", "keys"),
        w.value_bytes,
        dir.display(),
        duration(done.seconds),
        bytes(done.bytes),
        count(done.segments as u64, "segment", "segments"),
        done.next_offset
    ))
}
