//! `dump --style kafka-dump-log`: what Kafka 4.4's `kafka-dump-log.sh --deep-iteration --print-data-log
//! --files F1,F2,...` (`org.apache.kafka.tools.DumpLogSegments`) prints, byte for byte on both streams, for
//! scripts and runbooks that parse it: segments (`.log`) and raft snapshots (`.checkpoint`), offset and time
//! indexes (`.index`, `.timeindex`, with `--verify-index-only` or `--index-sanity-check`), transaction
//! indexes (`.txnindex`) and producer snapshots (`.snapshot`), with the summaries it writes to standard error
//! at the end (index mismatches, time index errors, non-consecutive offsets), its decoders
//! (`--offsets-decoder`, `--transaction-log-decoder`, `--cluster-metadata-decoder`,
//! `--share-group-state-decoder`), `--skip-record-metadata`, `--max-bytes` and `--max-message-size`. Written
//! from the facts of Kafka's tool (interop/kafka/notes/dump-log-segments.md), not its code.
//!
//! Files are read with plain reads (never mapped: a broker may still change them), a batch at a time, so
//! memory is bounded by the largest batch whatever the file's size. Where Kafka's tool dies with an exception
//! this one stops with [`DumpLogError::Died`] naming the same exception, having printed what Kafka's would
//! have printed before it (a line being printed is left without its newline, as Kafka leaves it). Legacy
//! (magic 0 and 1) message sets are printed too, a compressed wrapper's inner messages decompressed; one whose
//! value does not decompress stops the dump with [`DumpLogError::Unsupported`].
//!
//! # Example
//! ```no_run
//! let mut out = std::io::stdout().lock();
//! let mut err = std::io::stderr().lock();
//! let files = ["/var/lib/kafka/data/orders-0/00000000000000000000.log".to_owned()];
//! kafka_records::dump_log::dump_files(&files, &kafka_records::dump_log::DumpLogOptions::default(), &mut out, &mut err)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod indexes;
mod java_map;
mod legacy;
mod segment;

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::Path;

pub use java_map::{JavaHashMap, java_string_hash};

use crate::coordinator_records::Coordinator;

/// How record contents are printed: Kafka's `StringDecoder`, or one of its decoders.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Decoder {
    /// Keys and values as UTF-8 text (Kafka's default `StringDecoder`).
    #[default]
    Text,
    /// `--offsets-decoder`: `__consumer_offsets` records.
    Offsets,
    /// `--transaction-log-decoder`: `__transaction_state` records.
    TransactionLog,
    /// `--cluster-metadata-decoder`: KRaft metadata records.
    ClusterMetadata,
    /// `--share-group-state-decoder`: `__share_group_state` records.
    ShareGroupState,
}

impl Decoder {
    fn coordinator(self) -> Option<Coordinator> {
        match self {
            Decoder::Offsets => Some(Coordinator::Groups),
            Decoder::TransactionLog => Some(Coordinator::Transactions),
            Decoder::ShareGroupState => Some(Coordinator::ShareGroupState),
            Decoder::Text | Decoder::ClusterMetadata => None,
        }
    }
}

/// What `kafka-dump-log.sh` takes besides `--deep-iteration --print-data-log`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DumpLogOptions {
    /// `--verify-index-only`: index files are checked against their segment and only the problems are printed
    /// (in the summaries), not the entries.
    pub verify_index_only: bool,
    /// `--index-sanity-check`: each index is only checked as a broker checks it when it opens the log.
    pub index_sanity_check: bool,
    /// `--skip-record-metadata`: record lines without their `offset: ... headerKeys: [...]` part.
    pub skip_record_metadata: bool,
    /// `--max-bytes`: only the batches wholly within this many bytes of each segment (Kafka's default
    /// `Integer.MAX_VALUE` also prints trailing bytes).
    pub max_bytes: i32,
    /// `--max-message-size`: how far after an offset index entry's position its batch is looked for.
    pub max_message_size: i32,
    /// How keys and payloads are printed.
    pub decoder: Decoder,
}

impl Default for DumpLogOptions {
    fn default() -> Self {
        DumpLogOptions {
            verify_index_only: false,
            index_sanity_check: false,
            skip_record_metadata: false,
            max_bytes: i32::MAX,
            max_message_size: 5 * 1024 * 1024,
            decoder: Decoder::Text,
        }
    }
}

/// Why a dump stopped.
#[derive(Debug, thiserror::Error)]
pub enum DumpLogError {
    /// Kafka's tool dies here with this exception (`Exception in thread "main" CLASS: MESSAGE`); this one
    /// stops after the same output.
    #[error("{class}{}", message.as_ref().map_or_else(String::new, |m| format!(": {m}")))]
    Died {
        /// The exception's class, fully qualified.
        class: &'static str,
        /// Its message, if it has one.
        message: Option<String>,
    },
    /// Something Kafka's tool goes on to print that this one cannot (a legacy value that does not decompress
    /// here).
    #[error("{file}: {what}")]
    Unsupported {
        /// The file.
        file: String,
        /// What is not printed.
        what: String,
    },
    /// Standard output or standard error could not be written.
    #[error("cannot write output: {0}")]
    Output(#[from] io::Error),
}

pub(crate) fn died(class: &'static str, message: impl Into<String>) -> DumpLogError {
    DumpLogError::Died { class, message: Some(message.into()) }
}

/// The exception Java throws opening `shown` for reading after `e`.
pub(crate) fn open_failed(shown: &str, e: &io::Error) -> DumpLogError {
    match e.kind() {
        io::ErrorKind::NotFound => died("java.nio.file.NoSuchFileException", shown),
        io::ErrorKind::PermissionDenied => died("java.nio.file.AccessDeniedException", shown),
        _ => died("java.io.IOException", e.to_string()),
    }
}

/// The exception Java throws for a failed read.
pub(crate) fn read_failed(e: &io::Error) -> DumpLogError {
    died("java.io.IOException", e.to_string())
}

/// Dumps `files` (as given on `kafka-dump-log.sh`'s `--files`, split at commas) in order to `out`, then writes
/// the summaries to `err`, as Kafka's tool does.
///
/// # Errors
/// [`DumpLogError`]: the summaries gathered so far are not printed then (Kafka's tool dies with its exception).
pub fn dump_files(
    files: &[String],
    opts: &DumpLogOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), DumpLogError> {
    let mut summaries = Summaries::default();
    for given in files {
        let shown = java_file_string(given);
        writeln!(out, "Dumping {shown}")?;
        let name = shown.rsplit('/').next().unwrap_or_default();
        let Some(dot) = name.rfind('.') else {
            writeln!(err, "Ignoring unknown file {shown}")?;
            continue;
        };
        match &name[dot..] {
            ".log" | ".checkpoint" => segment::dump(&shown, name, opts, out, &mut summaries)?,
            ".index" => indexes::dump_offset_index(&shown, name, opts, out, &mut summaries)?,
            ".timeindex" => indexes::dump_time_index(&shown, name, opts, out, &mut summaries)?,
            ".snapshot" => indexes::dump_producer_snapshot(&shown, out, err)?,
            ".txnindex" => indexes::dump_txn_index(&shown, out)?,
            _ => writeln!(err, "Ignoring unknown file {shown}")?,
        }
    }
    summaries.print(err)?;
    Ok(())
}

/// `java.io.File.toString` of a path on Unix: repeated slashes collapsed, a trailing one dropped.
pub fn java_file_string(path: &str) -> String {
    let mut s = String::with_capacity(path.len());
    for c in path.chars() {
        if c == '/' && s.ends_with('/') {
            continue;
        }
        s.push(c);
    }
    if s.len() > 1 && s.ends_with('/') {
        s.pop();
    }
    s
}

/// `java.io.File.getAbsolutePath` of such a path: the working directory prefixed to a relative one, `.` and
/// `..` left as they are.
pub(crate) fn absolute(shown: &str) -> String {
    if shown.starts_with('/') {
        return shown.to_owned();
    }
    let cwd = std::env::current_dir().map(|p| p.display().to_string()).unwrap_or_default();
    if shown.is_empty() {
        return cwd;
    }
    java_file_string(&format!("{cwd}/{shown}"))
}

/// `Long.parseLong` of a file name's part, or Kafka's `NumberFormatException`.
pub(crate) fn parse_long(s: &str) -> Result<i64, DumpLogError> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    match s.parse::<i64>() {
        Ok(v) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => Ok(v),
        _ => Err(died("java.lang.NumberFormatException", format!("For input string: \"{s}\""))),
    }
}

/// What Kafka's tool prints on standard error after every file, each kind a `HashMap` by absolute path.
#[derive(Debug, Default)]
pub(crate) struct Summaries {
    /// Offset index entries whose batch ends elsewhere: index offset to the batch's last offset, printed
    /// descending (`TreeMap(reverseOrder)`, the last put for an offset kept).
    pub index_mismatches: JavaHashMap<BTreeMap<i64, i64>>,
    /// Time index entries whose timestamp is not their batch's largest: (index, log) in entry order.
    pub time_mismatches: JavaHashMap<Vec<(i64, i64)>>,
    /// Time index entries not after the previous one: (timestamp, previous) in entry order.
    pub time_out_of_order: JavaHashMap<Vec<(i64, i64)>>,
    /// Time index entries whose offset ends no batch: (offset, the batch's last offset or -1).
    pub time_not_found: JavaHashMap<Vec<(i64, i64)>>,
    /// Gaps between consecutive records: previous offset (-1 before the first) to the next, ascending
    /// (`TreeMap`, the last put for a previous offset kept).
    pub non_consecutive: JavaHashMap<BTreeMap<i64, i64>>,
}

impl Summaries {
    fn print(&self, err: &mut dyn Write) -> io::Result<()> {
        for (file, pairs) in self.index_mismatches.in_order() {
            writeln!(err, "Mismatches in :{file}")?;
            for (index, log) in pairs.iter().rev() {
                writeln!(err, "  Index offset: {index}, log offset: {log}")?;
            }
        }
        for (file, pairs) in self.time_mismatches.in_order() {
            writeln!(err, "Found timestamp mismatch in :{file}")?;
            for (index, log) in pairs {
                writeln!(err, "  Index timestamp: {index}, log timestamp: {log}")?;
            }
        }
        for (file, pairs) in self.time_out_of_order.in_order() {
            writeln!(err, "Found out of order timestamp in :{file}")?;
            for (index, previous) in pairs {
                writeln!(err, "  Index timestamp: {index}, Previously indexed timestamp: {previous}")?;
            }
        }
        for (file, pairs) in self.time_not_found.in_order() {
            writeln!(err, "The following indexed offsets are not found in :{file}")?;
            for (index, log) in pairs {
                writeln!(err, "Indexed offset: {index}, found log offset: {log}")?;
            }
        }
        for (file, pairs) in self.non_consecutive.in_order() {
            writeln!(err, "Non-consecutive offsets in {file}")?;
            for (first, second) in pairs {
                writeln!(err, "  {first} is followed by {second}")?;
            }
        }
        Ok(())
    }
}

/// The `.log` files of a partition directory in base order, as paths under `dir` as given (what
/// `kafka-dump-log.sh --files` would be given to dump a whole partition).
///
/// # Errors
/// The directory cannot be listed.
pub fn segment_files(dir: &Path) -> io::Result<Vec<String>> {
    let mut bases: Vec<(u64, String)> = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let name = e?.file_name().to_string_lossy().into_owned();
        if let log_core::kafka::files::KafkaName::Segment {
            base,
            file: log_core::kafka::files::SegmentFile::Log,
            stage: log_core::kafka::files::Stage::Live,
        } = log_core::kafka::files::classify(&name)
        {
            bases.push((base, name));
        }
    }
    bases.sort();
    let dir = dir.display().to_string();
    Ok(bases.into_iter().map(|(_, name)| format!("{dir}/{name}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_print_as_java_files_do() {
        assert_eq!(java_file_string("a//b/"), "a/b");
        assert_eq!(java_file_string("/"), "/");
        assert_eq!(java_file_string("./x.log"), "./x.log");
    }

    #[test]
    fn file_name_numbers_parse_as_java_parses_them() {
        assert_eq!(parse_long("00042").ok(), Some(42));
        assert_eq!(parse_long("+7").ok(), Some(7));
        assert!(matches!(parse_long(""), Err(DumpLogError::Died { class: "java.lang.NumberFormatException", .. })));
        assert!(parse_long("1_0").is_err());
    }
}
