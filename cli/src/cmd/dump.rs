//! `logcompact dump`: prints a log, a record a line or as JSON; a Kafka partition also as JSON lines, filtered,
//! or exactly as Kafka's `kafka-dump-log.sh` prints it.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use crate::args::FormatArg;
use crate::failure::Failure;
use crate::out::{QuietPipe, write_failed};

/// How `dump` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum DumpStyle {
    /// This tool's own: a line a record (native), or a line a batch and a line a record (Kafka).
    #[default]
    Logcompact,
    /// Exactly what Kafka 4.4's `kafka-dump-log.sh --deep-iteration --print-data-log` prints, with its
    /// summaries on standard error (Kafka's shallow mode, batch lines only, is not offered).
    KafkaDumpLog,
}

#[derive(Debug, Args)]
pub struct DumpArgs {
    /// The log's directory.
    #[arg(long, value_name = "DIR", required_unless_present = "files", conflicts_with = "files")]
    dir: Option<PathBuf>,
    /// The directory's format: a native log, or a Kafka partition (`kafka-dump-log.sh --print-data-log`).
    #[arg(long, value_enum, default_value_t = FormatArg::Native)]
    format: FormatArg,
    /// Print JSON: a list of segments with base, state and records.
    #[arg(long)]
    json: bool,
    /// Print one line per segment as the script language's DUMP does, instead of one line per record.
    #[arg(long, conflicts_with = "json")]
    segments: bool,
    /// Kafka: print one JSON object a batch, one a line (streamed; memory bounded by one batch).
    #[arg(long, conflicts_with_all = ["json", "segments"])]
    json_lines: bool,
    /// Kafka: only batches reaching this offset or later, and their records from it.
    #[arg(long, value_name = "OFFSET", value_parser = logcompact::parse_count, allow_hyphen_values = true)]
    from_offset: Option<u64>,
    /// Kafka: only batches starting at this offset or earlier, and their records up to it.
    #[arg(long, value_name = "OFFSET", value_parser = logcompact::parse_count, allow_hyphen_values = true)]
    to_offset: Option<u64>,
    /// Kafka: only records with this key (its UTF-8 bytes), and the batches holding one.
    #[arg(long, value_name = "KEY")]
    key: Option<String>,
    /// Kafka: decode `__consumer_offsets` records (committed offsets: group, topic, partition, offset; group
    /// metadata; the new consumer protocol's records; tombstones). With the kafka-dump-log style, as
    /// `kafka-dump-log.sh --offsets-decoder` prints them.
    #[arg(long)]
    offsets_decoder: bool,
    /// Kafka: the output's style. kafka-dump-log prints what Kafka 4.4's `kafka-dump-log.sh --deep-iteration
    /// --print-data-log --files` prints for the partition's segments (or for --files), line for line.
    #[arg(long, value_enum, default_value_t = DumpStyle::Logcompact)]
    style: DumpStyle,
    /// Kafka files to dump as `kafka-dump-log.sh --files` takes them (comma separated: .log, .checkpoint,
    /// .index, .timeindex, .txnindex, .snapshot), instead of --dir; implies --style kafka-dump-log.
    #[arg(long, value_name = "F1,F2,...")]
    files: Option<String>,
    #[command(flatten)]
    kafka_dump_log: KafkaDumpLogArgs,
}

/// The flags of `kafka-dump-log.sh` that the kafka-dump-log style takes, and those it names to refuse them.
#[derive(Debug, Args)]
struct KafkaDumpLogArgs {
    /// With the kafka-dump-log style: check every .index and .timeindex entry against its segment and print
    /// only the problems (on standard error), as `kafka-dump-log.sh --verify-index-only` does.
    #[arg(long)]
    verify_index_only: bool,
    /// kafka-dump-log style: only check each index as a broker checks it on opening (`--index-sanity-check`).
    #[arg(long)]
    index_sanity_check: bool,
    /// kafka-dump-log style: accepted as Kafka's flag; the style always iterates records.
    ///
    /// Alone (without --print-data-log or a decoder) it is refused: Kafka would then print records without their
    /// contents.
    #[arg(long)]
    deep_iteration: bool,
    /// kafka-dump-log style: accepted as Kafka's flag; the style always prints record contents.
    #[arg(long)]
    print_data_log: bool,
    /// kafka-dump-log style: decode `__transaction_state` records as `--transaction-log-decoder` does.
    #[arg(long)]
    transaction_log_decoder: bool,
    /// kafka-dump-log style: decode KRaft metadata records as `--cluster-metadata-decoder` does.
    #[arg(long)]
    cluster_metadata_decoder: bool,
    /// kafka-dump-log style: decode `__share_group_state` records as `--share-group-state-decoder` does.
    #[arg(long)]
    share_group_state_decoder: bool,
    /// kafka-dump-log style: record lines without their metadata (`| key: K payload: V`).
    #[arg(long)]
    skip_record_metadata: bool,
    /// kafka-dump-log style: read only the batches wholly within the first N bytes of each segment.
    #[arg(long, value_name = "N")]
    max_bytes: Option<i32>,
    /// kafka-dump-log style: how far after an index entry's position its batch is looked for (default 5242880).
    #[arg(long, value_name = "N")]
    max_message_size: Option<i32>,
    /// Refused: Kafka's remote log metadata decoder is not reproduced.
    #[arg(long, hide = true)]
    remote_log_metadata_decoder: bool,
    /// Refused: Java decoder classes cannot be loaded.
    #[arg(long, hide = true, value_name = "CLASS", num_args = 0..=1, default_missing_value = "")]
    key_decoder_class: Option<String>,
    /// Refused: Java decoder classes cannot be loaded.
    #[arg(long, hide = true, value_name = "CLASS", num_args = 0..=1, default_missing_value = "")]
    value_decoder_class: Option<String>,
}

impl KafkaDumpLogArgs {
    /// The flags given that only the kafka-dump-log style takes.
    fn given(&self) -> Vec<&'static str> {
        [
            (self.verify_index_only, "--verify-index-only"),
            (self.index_sanity_check, "--index-sanity-check"),
            (self.deep_iteration, "--deep-iteration"),
            (self.print_data_log, "--print-data-log"),
            (self.transaction_log_decoder, "--transaction-log-decoder"),
            (self.cluster_metadata_decoder, "--cluster-metadata-decoder"),
            (self.share_group_state_decoder, "--share-group-state-decoder"),
            (self.skip_record_metadata, "--skip-record-metadata"),
            (self.max_bytes.is_some(), "--max-bytes"),
            (self.max_message_size.is_some(), "--max-message-size"),
            (self.remote_log_metadata_decoder, "--remote-log-metadata-decoder"),
            (self.key_decoder_class.is_some(), "--key-decoder-class"),
            (self.value_decoder_class.is_some(), "--value-decoder-class"),
        ]
        .into_iter()
        .filter_map(|(given, flag)| given.then_some(flag))
        .collect()
    }

    /// The options of the style, or why they cannot be honoured.
    fn options(&self, offsets_decoder: bool) -> Result<logcompact::kafka::dump_log::DumpLogOptions, Failure> {
        use logcompact::kafka::dump_log::{Decoder, DumpLogOptions};
        let unsupported: Vec<&str> = [
            (self.remote_log_metadata_decoder, "--remote-log-metadata-decoder (Kafka's remote storage metadata)"),
            (self.key_decoder_class.is_some(), "--key-decoder-class (a Java class)"),
            (self.value_decoder_class.is_some(), "--value-decoder-class (a Java class)"),
        ]
        .into_iter()
        .filter_map(|(given, flag)| given.then_some(flag))
        .collect();
        if !unsupported.is_empty() {
            return Err(Failure::Usage(format!(
                "{} cannot be reproduced by this tool; run kafka-dump-log.sh for it",
                unsupported.join(", ")
            )));
        }
        let decoders: Vec<(Decoder, &str)> = [
            (offsets_decoder, Decoder::Offsets, "--offsets-decoder"),
            (self.transaction_log_decoder, Decoder::TransactionLog, "--transaction-log-decoder"),
            (self.cluster_metadata_decoder, Decoder::ClusterMetadata, "--cluster-metadata-decoder"),
            (self.share_group_state_decoder, Decoder::ShareGroupState, "--share-group-state-decoder"),
        ]
        .into_iter()
        .filter_map(|(given, d, flag)| given.then_some((d, flag)))
        .collect();
        if decoders.len() > 1 {
            let flags: Vec<&str> = decoders.iter().map(|(_, f)| *f).collect();
            return Err(Failure::Usage(format!(
                "{}: one decoder at a time (kafka-dump-log.sh would silently use the first)",
                flags.join(", ")
            )));
        }
        if self.deep_iteration && !self.print_data_log && decoders.is_empty() {
            return Err(Failure::Usage(
                "--deep-iteration without --print-data-log or a decoder makes kafka-dump-log.sh print records \
                 without their keys and payloads; this style always prints them: add --print-data-log"
                    .into(),
            ));
        }
        for (value, flag) in [(self.max_bytes, "--max-bytes"), (self.max_message_size, "--max-message-size")] {
            if value.is_some_and(|v| v < 0) {
                return Err(Failure::Usage(format!("{flag} {} is negative", value.unwrap_or_default())));
            }
        }
        let defaults = DumpLogOptions::default();
        Ok(DumpLogOptions {
            verify_index_only: self.verify_index_only,
            index_sanity_check: self.index_sanity_check,
            skip_record_metadata: self.skip_record_metadata,
            max_bytes: self.max_bytes.unwrap_or(defaults.max_bytes),
            max_message_size: self.max_message_size.unwrap_or(defaults.max_message_size),
            decoder: decoders.first().map_or(Decoder::Text, |(d, _)| *d),
        })
    }
}

/// `dump`: the native or Kafka dump, or the kafka-dump-log style, each refusing the flags it cannot honour.
///
/// # Errors
/// [`Failure::Usage`] for flags that do not go together; as the dump.
pub fn run(a: &DumpArgs) -> Result<(), Failure> {
    if let Some(dir) = &a.dir {
        crate::mistakes::one_log(dir, a.format.into(), "dump", None)?;
    }
    if let (Some(from), Some(to)) = (a.from_offset, a.to_offset)
        && from > to
    {
        return Err(Failure::Usage(format!("--from-offset {from} is past --to-offset {to}: no record lies between")));
    }
    let dump_log = a.style == DumpStyle::KafkaDumpLog || a.files.is_some();
    let kafka_only: Vec<&str> = [
        (a.json_lines, "--json-lines"),
        (a.from_offset.is_some(), "--from-offset"),
        (a.to_offset.is_some(), "--to-offset"),
        (a.key.is_some(), "--key"),
    ]
    .into_iter()
    .filter_map(|(given, flag)| given.then_some(flag))
    .collect();
    if dump_log {
        if a.format != FormatArg::Kafka {
            return Err(Failure::Usage(
                "--style kafka-dump-log and --files read Kafka files: add --format kafka".into(),
            ));
        }
        if a.style == DumpStyle::Logcompact && a.files.is_some() && std::env::args().any(|x| x.starts_with("--style")) {
            return Err(Failure::Usage("--files dumps in the kafka-dump-log style only".into()));
        }
        let refused: Vec<&str> = kafka_only
            .iter()
            .copied()
            .chain(a.json.then_some("--json"))
            .chain(a.segments.then_some("--segments"))
            .collect();
        if !refused.is_empty() {
            return Err(Failure::Usage(format!(
                "{} cannot be used with --style kafka-dump-log, which prints exactly what kafka-dump-log.sh prints",
                refused.join(", ")
            )));
        }
        let files = match (&a.files, &a.dir) {
            (Some(list), _) => kafka_files_argument(list),
            (None, Some(dir)) => logcompact::kafka::dump_log::segment_files(dir)
                .map_err(|e| Failure::Usage(format!("cannot list {}: {e}", dir.display())))?,
            (None, None) => return Err(Failure::Usage("give --dir DIR or --files F1,F2,...".into())),
        };
        let opts = a.kafka_dump_log.options(a.offsets_decoder)?;
        return crate::dump_kafka::dump_log(&files, opts);
    }
    let style_only = a.kafka_dump_log.given();
    if !style_only.is_empty() {
        return Err(Failure::Usage(format!(
            "{} need --style kafka-dump-log (they are kafka-dump-log.sh's flags)",
            style_only.join(", ")
        )));
    }
    let Some(dir) = &a.dir else { return Err(Failure::Usage("give --dir DIR".into())) };
    if a.format == FormatArg::Kafka {
        if a.segments {
            return Err(Failure::Usage(
                "--segments is the native format's lesson view; a Kafka dump already shows batches and segments".into(),
            ));
        }
        let opts = crate::dump_kafka::DumpOptions {
            json: a.json,
            json_lines: a.json_lines,
            filter: logcompact::DumpFilter {
                from_offset: a.from_offset,
                to_offset: a.to_offset,
                key: a.key.as_ref().map(|k| k.as_bytes().to_vec()),
            },
            offsets_decoder: a.offsets_decoder,
        };
        return crate::dump_kafka::dump(dir, &opts);
    }
    let kafka_only: Vec<&str> =
        kafka_only.into_iter().chain(a.offsets_decoder.then_some("--offsets-decoder")).collect();
    if !kafka_only.is_empty() {
        return Err(Failure::Usage(format!(
            "{} are for --format kafka; a native log's dump is one record a line already",
            kafka_only.join(", ")
        )));
    }
    dump(dir, a.json, a.segments)
}

/// `--files` as `kafka-dump-log.sh` splits it (Java's `String.split(",")`): at commas, trailing empty items
/// dropped, nothing trimmed; an empty item in the middle is kept (Kafka prints `Dumping ` and ignores it).
fn kafka_files_argument(list: &str) -> Vec<String> {
    // Java keeps an empty string as its one item; a list of only commas is no item at all.
    if list.is_empty() {
        return vec![String::new()];
    }
    let mut files: Vec<String> = list.split(',').map(str::to_owned).collect();
    while files.last().is_some_and(String::is_empty) {
        files.pop();
    }
    files
}

/// Prints the log in `dir`: one record per line, as `DUMP` does (`segments`), or as JSON. Reads only:
/// nothing is written, created or locked.
///
/// # Errors
/// [`Failure::Usage`] for a directory that holds no log; [`Failure::Corruption`] when stored data is damaged.
fn dump(dir: &Path, as_json: bool, segments: bool) -> Result<(), Failure> {
    let log = logcompact::open_read_only(dir, log_core::Format::Native).map_err(|e| Failure::from_open(&e))?.log;
    let snapshot = log.snapshot();
    if as_json {
        let mut out = QuietPipe::new(std::io::BufWriter::new(std::io::stdout().lock()));
        crate::json::write_segments(&snapshot, &mut out)?;
        return out.flush().map_err(write_failed);
    }
    let mut out = QuietPipe::new(std::io::BufWriter::new(std::io::stdout().lock()));
    if segments {
        crate::format::dump(&snapshot, &mut out)?;
    } else {
        crate::records::dump(&snapshot, &mut out)?;
    }
    out.flush().map_err(write_failed)
}
