//! `dump --format kafka` and `check --format kafka`: a Kafka partition directory read through the log
//! (read-only: no lock, nothing written, nothing mapped).

use std::io::Write;
use std::path::Path;

use log_core::{Format, SegmentScan};

use crate::failure::Failure;
use crate::out::QuietPipe;
use crate::records::quoted;

fn failed(e: std::io::Error) -> Failure {
    Failure::Runtime(format!("cannot write output: {e}"))
}

/// How `dump --format kafka` prints, and what.
#[derive(Debug, Clone, Default)]
pub struct DumpOptions {
    /// One JSON document (`--json`).
    pub json: bool,
    /// A JSON object a batch, one a line (`--json-lines`).
    pub json_lines: bool,
    /// Only batches reaching this offset or later, and their records from it.
    pub from_offset: Option<u64>,
    /// Only batches starting at this offset or earlier, and their records up to it.
    pub to_offset: Option<u64>,
    /// Only records with this key (and the batches holding one).
    pub key: Option<Vec<u8>>,
    /// Decode `__consumer_offsets` keys and values (`--offsets-decoder`).
    pub offsets_decoder: bool,
}

impl DumpOptions {
    fn batch_in_range(&self, base: u64, last: u64) -> bool {
        self.from_offset.is_none_or(|f| last >= f) && self.to_offset.is_none_or(|t| base <= t)
    }

    fn record_wanted(&self, offset: u64, key: Option<&[u8]>) -> bool {
        self.from_offset.is_none_or(|f| offset >= f)
            && self.to_offset.is_none_or(|t| offset <= t)
            && self.key.as_deref().is_none_or(|k| key == Some(k))
    }
}

/// `dump --format kafka`: every batch (offsets, attributes) and record, escaped as the native dump is; or
/// JSON (one document, or a line a batch), written as it is read (memory bounded by one batch); filtered by
/// offsets and key when asked.
///
/// # Errors
/// As opening the partition; [`Failure::Corruption`] for a damaged batch (after printing what came before it).
pub fn dump(dir: &Path, opts: &DumpOptions) -> Result<(), Failure> {
    let json = opts.json || opts.json_lines;
    // The records only: a checkpoint file of the log directory that does not read is no reason not to show them.
    let opened = logcompact::open_records_only(dir, Format::Kafka).map_err(|e| Failure::from_open(&e))?;
    let log = &opened.log;
    let snapshot = log.snapshot();
    let mut out = QuietPipe::new(std::io::BufWriter::new(std::io::stdout().lock()));
    let mut scratch = Vec::new();
    let mut first_batch = true;
    if opts.json {
        write!(out, "{{\"batches\":[").map_err(failed)?;
    }
    let segments: Vec<(&str, SegmentScan<'_>)> = snapshot
        .closed()
        .iter()
        .map(|s| (s.name(), s.scan()))
        .chain(std::iter::once((
            snapshot.active_name(),
            SegmentScan::new(
                Format::Kafka,
                snapshot.active_name(),
                snapshot.active_source(),
                0,
                snapshot.active_len(),
                true,
            ),
        )))
        .collect();
    for (file, mut scan) in segments {
        if !json {
            writeln!(out, "segment {file}").map_err(failed)?;
        }
        while let Some(window) = scan.next_window().map_err(|e| Failure::from_log(&dir.display().to_string(), &e))? {
            for item in window.batches() {
                let placed = item.map_err(|e| Failure::from_log(&dir.display().to_string(), &e))?;
                let b = placed.batch;
                let Some(h) = b.kafka_header() else { continue };
                let bad = |kind| {
                    let e = log_core::Error::Corrupt { segment: file.to_owned(), position: placed.position, kind };
                    Failure::from_log(&dir.display().to_string(), &e)
                };
                if !opts.batch_in_range(b.base_offset, b.last_offset) {
                    continue;
                }
                if opts.key.is_some() {
                    let mut any = false;
                    for r in b.records(&mut scratch).map_err(bad)? {
                        let r = r.map_err(bad)?;
                        any |= opts.record_wanted(r.offset, r.key);
                    }
                    if !any {
                        continue;
                    }
                }
                let codec = h.compression().map_or("unknown", log_core::kafka::Compression::name);
                if json {
                    // A batch's fields as one JSON object, its records written one at a time as they are decoded
                    // (never collected: a batch may hold millions), keys in the order serde_json sorts them.
                    if opts.json && !first_batch {
                        out.write_all(b",").map_err(failed)?;
                    }
                    first_batch = false;
                    let field = |v: serde_json::Value| v.to_string();
                    write!(
                        out,
                        "{{\"codec\":{},\"control\":{},\"delete_horizon\":{},\"header\":{},\"position\":{},\"records\":[",
                        field(codec.into()),
                        h.is_control(),
                        field(h.delete_horizon().into()),
                        field(serde_json::to_value(h).map_err(|e| failed(e.into()))?),
                        placed.position,
                    )
                    .map_err(failed)?;
                    let mut first_record = true;
                    for r in b.records(&mut scratch).map_err(bad)? {
                        let r = r.map_err(bad)?;
                        if !opts.record_wanted(r.offset, r.key) {
                            continue;
                        }
                        if !first_record {
                            out.write_all(b",").map_err(failed)?;
                        }
                        first_record = false;
                        write_json_record(&mut out, &r, h, opts.offsets_decoder).map_err(failed)?;
                    }
                    write!(
                        out,
                        "],\"segment\":{},\"size\":{},\"transactional\":{}}}",
                        field(file.into()),
                        b.len(),
                        h.is_transactional()
                    )
                    .map_err(failed)?;
                    if opts.json_lines {
                        out.write_all(b"\n").map_err(failed)?;
                    }
                    continue;
                }
                writeln!(
                    out,
                    "batch base_offset={} last_offset={} count={} position={} size={} codec={codec} crc={:#010x} \
                     producer_id={} producer_epoch={} base_sequence={} leader_epoch={} transactional={} control={} \
                     timestamp_type={} max_timestamp={}{}",
                    h.base_offset,
                    h.last_offset(),
                    h.records_count,
                    placed.position,
                    b.len(),
                    h.crc,
                    h.producer_id,
                    h.producer_epoch,
                    h.base_sequence,
                    h.partition_leader_epoch,
                    h.is_transactional(),
                    h.is_control(),
                    if h.is_log_append_time() { "LogAppendTime" } else { "CreateTime" },
                    h.max_timestamp,
                    h.delete_horizon().map_or_else(String::new, |d| format!(" delete_horizon={d}")),
                )
                .map_err(failed)?;
                for r in b.records(&mut scratch).map_err(bad)? {
                    let r = r.map_err(bad)?;
                    if !opts.record_wanted(r.offset, r.key) {
                        continue;
                    }
                    if h.is_control()
                        && let Some(kind) = log_core::kafka::txn::marker_type(r.key)
                    {
                        // As kafka-dump-log.sh prints a marker.
                        let epoch = log_core::kafka::txn::coordinator_epoch(r.value)
                            .map_or_else(|| "?".to_owned(), |e| e.to_string());
                        writeln!(
                            out,
                            "  offset={} timestamp={} endTxnMarker: {kind} coordinatorEpoch: {epoch}",
                            r.offset, r.timestamp
                        )
                        .map_err(failed)?;
                        continue;
                    }
                    if opts.offsets_decoder
                        && let Some(k) = r.key
                    {
                        let key = logcompact::consumer_offsets::decode_key(k);
                        let value = logcompact::consumer_offsets::decode_value(&key, r.value);
                        let line = logcompact::consumer_offsets::describe(&key, &value);
                        writeln!(out, "  offset={} timestamp={} {line}", r.offset, r.timestamp).map_err(failed)?;
                        continue;
                    }
                    let key = r.key.map_or_else(|| "NULL".to_owned(), quoted);
                    let value = r.value.map_or_else(|| "TOMBSTONE".to_owned(), quoted);
                    let mut line = format!("  offset={} timestamp={} key={key} value={value}", r.offset, r.timestamp);
                    for (n, v) in r.headers() {
                        line.push_str(&format!(
                            " header {}={}",
                            quoted(n),
                            v.map_or_else(|| "NULL".to_owned(), quoted)
                        ));
                    }
                    writeln!(out, "{line}").map_err(failed)?;
                }
            }
        }
    }
    let torn = log.recovery_report().truncated_tail.as_ref();
    if opts.json_lines {
        if let Some(t) = torn {
            let t = serde_json::json!({"torn_tail": {"file": t.segment, "position": t.position, "bytes": t.bytes}});
            writeln!(out, "{t}").map_err(failed)?;
        }
    } else if json {
        let torn = torn.map(|t| serde_json::json!({"file": t.segment, "position": t.position, "bytes": t.bytes}));
        writeln!(out, "],\"torn_tail\":{}}}", serde_json::Value::from(torn)).map_err(failed)?;
    } else if let Some(t) = torn {
        writeln!(
            out,
            "torn tail: {} bytes at byte {} of {} (a broker's recovery cuts them)",
            t.bytes, t.position, t.segment
        )
        .map_err(failed)?;
    }
    out.flush().map_err(failed)
}

/// One record of `dump --format kafka --json`: bytes as `dump --json` shows them for native logs (UTF-8 as
/// is, other bytes `\xNN`), a marker's type and coordinator epoch, `__consumer_offsets` decoded when asked; keys
/// in the order serde_json sorts them.
fn write_json_record(
    out: &mut impl Write,
    r: &log_core::RecordRef<'_>,
    h: &log_core::kafka::BatchHeader,
    offsets_decoder: bool,
) -> std::io::Result<()> {
    let esc = crate::json::escape;
    let mut record = serde_json::json!({
        "offset": r.offset,
        "timestamp": r.timestamp,
        "key": r.key.map(esc),
        "value": r.value.map(esc),
        "headers": r.headers().map(|(n, v)| serde_json::json!([esc(n), v.map(esc)])).collect::<Vec<_>>(),
    });
    if offsets_decoder
        && !h.is_control()
        && let Some(k) = r.key
    {
        let key = logcompact::consumer_offsets::decode_key(k);
        let value = logcompact::consumer_offsets::decode_value(&key, r.value);
        record["decoded"] = serde_json::json!({"key": key, "value": value});
    }
    if h.is_control()
        && let Some(kind) = log_core::kafka::txn::marker_type(r.key)
    {
        record["marker"] = serde_json::json!({
            "type": kind.to_string(),
            "coordinator_epoch": log_core::kafka::txn::coordinator_epoch(r.value),
        });
    }
    serde_json::to_writer(out, &record).map_err(std::io::Error::from)
}

/// `dump --style kafka-dump-log`: what Kafka 4.4's `kafka-dump-log.sh --deep-iteration --print-data-log
/// --files` prints for `files`, its summaries on standard error.
///
/// # Errors
/// [`Failure::AsKafka`] (exit 1, Kafka's exception line) where Kafka's tool dies, after the same output;
/// [`Failure::Corruption`] where this tool stops printing what Kafka's would go on to print.
pub fn dump_log(files: &[String], opts: logcompact::dump_log::DumpLogOptions) -> Result<(), Failure> {
    use logcompact::dump_log::DumpLogError;
    let mut out = QuietPipe::new(std::io::BufWriter::new(std::io::stdout().lock()));
    let mut err = std::io::BufWriter::new(std::io::stderr().lock());
    let result = logcompact::dump_log::dump_files(files, &opts, &mut out, &mut err);
    out.flush().map_err(failed)?;
    let _ = err.flush();
    match result {
        Ok(()) => Ok(()),
        Err(e @ DumpLogError::Died { .. }) => Err(Failure::AsKafka(format!("Exception in thread \"main\" {e}"))),
        Err(e @ DumpLogError::Unsupported { .. }) => {
            Err(Failure::Corruption(format!("stopped where kafka-dump-log.sh goes on: {e}")))
        }
        Err(DumpLogError::Output(e)) => Err(failed(e)),
    }
}

/// `check --format kafka`: every batch's CRC, its records and the order of offsets, and a pending swap.
///
/// # Errors
/// As opening the partition; [`Failure::Corruption`] naming the file and byte of the first damaged batch.
pub fn check(dir: &Path) -> Result<(), Failure> {
    let stores = storage_file::kafka::open_read_only(dir)
        .map_err(|e| Failure::from_open(&logcompact::OpenError::Store { dir: dir.to_path_buf(), source: e }))?;
    match log_core::check::check_kafka(stores.partition, stores.checkpoint) {
        Ok(report) => {
            for n in &report.notices {
                crate::out::diag!("notice: {}: {}", crate::ops::shown(dir, &n.file), n.what);
            }
            let mut value = serde_json::to_value(&report).map_err(|e| Failure::Runtime(e.to_string()))?;
            value["format"] = "kafka".into();
            crate::ops::print_json(&value)
        }
        Err(problem) if problem.class == log_core::check::ProblemClass::NotALog => {
            Err(Failure::Usage(format!("{} is not a Kafka partition: {}", dir.display(), problem.what)))
        }
        Err(problem) => Err(crate::ops::check_failure(dir, log_core::Format::Kafka, &problem)),
    }
}
