//! `dump --format kafka`: a Kafka partition directory read through the log (read-only: no lock, nothing
//! written, nothing mapped), and `dump --style kafka-dump-log`.

use std::io::Write;
use std::path::Path;

use logcompact::{DumpError, DumpFilter, DumpStep as Step, DumpedBatch, walk_kafka};

use crate::failure::Failure;
use crate::out::QuietPipe;
use crate::records::write_quoted;

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
    /// Which batches and records.
    pub filter: DumpFilter,
    /// Decode `__consumer_offsets` keys and values (`--offsets-decoder`).
    pub offsets_decoder: bool,
}

/// `dump --format kafka`: every batch (offsets, attributes) and record, escaped as the native dump is; or
/// JSON (one document, or a line a batch), written as it is read (memory bounded by one batch); filtered by
/// offsets and key when asked.
///
/// # Errors
/// As opening the partition; [`Failure::Corruption`] for a damaged batch (after printing what came before it).
pub fn dump(dir: &Path, opts: &DumpOptions) -> Result<(), Failure> {
    let json = opts.json || opts.json_lines;
    let mut out = QuietPipe::new(std::io::BufWriter::new(std::io::stdout().lock()));
    let mut scratch = Vec::new();
    let mut first_batch = true;
    let mut opened = false;
    let walked = walk_kafka(dir, &opts.filter, |step| {
        // The document opens once the partition has: a directory that is none prints nothing.
        if opts.json && !opened {
            write!(out, "{{\"batches\":[")?;
        }
        opened = true;
        match step {
            Step::Segment(file) if !json => writeln!(out, "segment {file}")?,
            Step::Segment(_) => {}
            Step::Batch(b) if json => {
                if opts.json && !first_batch {
                    out.write_all(b",")?;
                }
                first_batch = false;
                write_json_batch(&mut out, b, &mut scratch, opts)?;
                if opts.json_lines {
                    out.write_all(b"\n")?;
                }
            }
            Step::Batch(b) => write_text_batch(&mut out, b, &mut scratch, opts.offsets_decoder)?,
        }
        Ok(())
    });
    let torn = match walked {
        Ok(torn) => torn,
        Err(e) => {
            // What came before the damage is shown; then the failure.
            let _ = out.flush();
            return Err(dump_failure(dir, e));
        }
    };
    if opts.json_lines {
        if let Some(t) = &torn {
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

/// The failure for a dump that stopped.
fn dump_failure(dir: &Path, e: DumpError) -> Failure {
    match e {
        DumpError::Open(o) => Failure::from_open(&o),
        DumpError::Log { source, .. } => Failure::from_log(&dir.display().to_string(), &source),
        DumpError::Output(e) => failed(e),
        other => Failure::Runtime(other.to_string()),
    }
}

/// A batch as one JSON object, its records written one at a time as they are decoded (never collected: a batch
/// may hold millions), keys in the order serde_json sorts them.
fn write_json_batch(
    out: &mut impl Write,
    b: &DumpedBatch<'_>,
    scratch: &mut Vec<u8>,
    opts: &DumpOptions,
) -> Result<(), DumpError> {
    let h = &b.header;
    let codec = h.compression().map_or("unknown", log_core::kafka::Compression::name);
    let field = |v: serde_json::Value| v.to_string();
    write!(
        out,
        "{{\"codec\":{},\"control\":{},\"delete_horizon\":{},\"header\":{},\"position\":{},\"records\":[",
        field(codec.into()),
        h.is_control(),
        field(h.delete_horizon().into()),
        field(serde_json::to_value(h).map_err(std::io::Error::from)?),
        b.position,
    )?;
    let mut first_record = true;
    b.for_each_record(scratch, |r| {
        if !first_record {
            out.write_all(b",")?;
        }
        first_record = false;
        write_json_record(out, r, h, opts.offsets_decoder)?;
        Ok(())
    })?;
    write!(
        out,
        "],\"segment\":{},\"size\":{},\"transactional\":{}}}",
        field(b.segment.into()),
        b.size,
        h.is_transactional()
    )?;
    Ok(())
}

/// A batch's line and a line a record, as `kafka-dump-log.sh --print-data-log` shows them (markers as it
/// prints them, `__consumer_offsets` decoded when asked), bytes quoted and escaped.
fn write_text_batch(
    out: &mut impl Write,
    b: &DumpedBatch<'_>,
    scratch: &mut Vec<u8>,
    offsets_decoder: bool,
) -> Result<(), DumpError> {
    let h = &b.header;
    let codec = h.compression().map_or("unknown", log_core::kafka::Compression::name);
    writeln!(
        out,
        "batch base_offset={} last_offset={} count={} position={} size={} codec={codec} crc={:#010x} \
         producer_id={} producer_epoch={} base_sequence={} leader_epoch={} transactional={} control={} \
         timestamp_type={} max_timestamp={}{}",
        h.base_offset,
        h.last_offset(),
        h.records_count,
        b.position,
        b.size,
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
    )?;
    b.for_each_record(scratch, |r| {
        if h.is_control()
            && let Some(kind) = log_core::kafka::txn::marker_type(r.key)
        {
            // As kafka-dump-log.sh prints a marker.
            let epoch =
                log_core::kafka::txn::coordinator_epoch(r.value).map_or_else(|| "?".to_owned(), |e| e.to_string());
            writeln!(
                out,
                "  offset={} timestamp={} endTxnMarker: {kind} coordinatorEpoch: {epoch}",
                r.offset, r.timestamp
            )?;
            return Ok(());
        }
        if offsets_decoder && let Some(k) = r.key {
            let key = logcompact::kafka::consumer_offsets::decode_key(k);
            let value = logcompact::kafka::consumer_offsets::decode_value(&key, r.value);
            let line = logcompact::kafka::consumer_offsets::describe(&key, &value);
            writeln!(out, "  offset={} timestamp={} {line}", r.offset, r.timestamp)?;
            return Ok(());
        }
        write!(out, "  offset={} timestamp={} key=", r.offset, r.timestamp)?;
        match r.key {
            Some(k) => write_quoted(out, k)?,
            None => out.write_all(b"NULL")?,
        }
        out.write_all(b" value=")?;
        match r.value {
            Some(v) => write_quoted(out, v)?,
            None => out.write_all(b"TOMBSTONE")?,
        }
        for (n, v) in r.headers() {
            out.write_all(b" header ")?;
            write_quoted(out, n)?;
            out.write_all(b"=")?;
            match v {
                Some(v) => write_quoted(out, v)?,
                None => out.write_all(b"NULL")?,
            }
        }
        out.write_all(b"\n")?;
        Ok(())
    })
}

/// One record of `dump --format kafka --json`: bytes as `dump --json` shows them for native logs (UTF-8 as
/// is, other bytes `\xNN`), a marker's type and coordinator epoch, `__consumer_offsets` decoded when asked; keys
/// in the order serde_json sorts them. Keys, values and headers are escaped on the way out, never copied whole
/// (a legal record may be hundreds of MB).
fn write_json_record(
    out: &mut impl Write,
    r: &log_core::RecordRef<'_>,
    h: &log_core::kafka::BatchHeader,
    offsets_decoder: bool,
) -> std::io::Result<()> {
    let bytes = |out: &mut dyn Write, b: Option<&[u8]>| match b {
        Some(b) => crate::json::write_escaped(out, b),
        None => out.write_all(b"null"),
    };
    out.write_all(b"{")?;
    if offsets_decoder
        && !h.is_control()
        && let Some(k) = r.key
    {
        let key = logcompact::kafka::consumer_offsets::decode_key(k);
        let value = logcompact::kafka::consumer_offsets::decode_value(&key, r.value);
        out.write_all(b"\"decoded\":")?;
        serde_json::to_writer(&mut *out, &serde_json::json!({"key": key, "value": value}))?;
        out.write_all(b",")?;
    }
    out.write_all(b"\"headers\":[")?;
    for (i, (name, value)) in r.headers().enumerate() {
        out.write_all(if i == 0 { b"[" } else { b",[" })?;
        crate::json::write_escaped(out, name)?;
        out.write_all(b",")?;
        bytes(out, value)?;
        out.write_all(b"]")?;
    }
    out.write_all(b"],\"key\":")?;
    bytes(out, r.key)?;
    if h.is_control()
        && let Some(kind) = log_core::kafka::txn::marker_type(r.key)
    {
        out.write_all(b",\"marker\":")?;
        serde_json::to_writer(
            &mut *out,
            &serde_json::json!({
                "type": kind.to_string(),
                "coordinator_epoch": log_core::kafka::txn::coordinator_epoch(r.value),
            }),
        )?;
    }
    write!(out, ",\"offset\":{},\"timestamp\":{},\"value\":", r.offset, r.timestamp)?;
    bytes(out, r.value)?;
    out.write_all(b"}")
}

/// `dump --style kafka-dump-log`: what Kafka 4.4's `kafka-dump-log.sh --deep-iteration --print-data-log
/// --files` prints for `files`, its summaries on standard error.
///
/// # Errors
/// [`Failure::AsKafka`] (exit 1, Kafka's exception line) where Kafka's tool dies, after the same output;
/// [`Failure::Corruption`] where this tool stops printing what Kafka's would go on to print.
pub fn dump_log(files: &[String], opts: logcompact::kafka::dump_log::DumpLogOptions) -> Result<(), Failure> {
    use logcompact::kafka::dump_log::DumpLogError;
    let mut out = QuietPipe::new(std::io::BufWriter::new(std::io::stdout().lock()));
    let mut err = std::io::BufWriter::new(std::io::stderr().lock());
    let result = logcompact::kafka::dump_log::dump_files(files, &opts, &mut out, &mut err);
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
