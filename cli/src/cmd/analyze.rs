//! `analyze --dir`: prints what `cleaner::analyze` finds on a log of either format, as text or JSON.

use clap::Args;
use cleaner::advise::Budget;
use log_core::Format;
use logcompact::datadir::settings::Resolved;
use logcompact::progress::Meter;
use logcompact::{AnalyzeError, AnalyzeRequest};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::args::{BrokerArgs, BufferArgs, FormatArg, ThreadsArgs, tell_broker_notice, tell_broker_warning};
use crate::failure::Failure;
use crate::out::QuietPipe;
use crate::progress::Reporter;
use log_core::human::{bytes, count};

/// `analyze`'s arguments.
#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// The directory: a Kafka partition (`<topic>-<partition>`) or, with --format native, a native log.
    #[arg(long, value_name = "DIR", required_unless_present = "data_dir", conflicts_with = "data_dir")]
    dir: Option<PathBuf>,
    /// A whole data directory instead (a stopped broker's log directory, or, with --format native, a directory
    /// of logs): a row a log, most reclaimable bytes first, with whether Kafka's cleaner would pick it now.
    #[arg(long, value_name = "DIR", conflicts_with = "checkpoint")]
    data_dir: Option<PathBuf>,
    /// A settings file (Kafka's names, a [section] per topic or log), over the broker's metadata and the
    /// settings an earlier `clean` saved: the delete horizon, compaction lag and record bound the dry run takes.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    broker: BrokerArgs,
    /// The directory's format.
    #[arg(long, value_enum, default_value_t = FormatArg::Kafka)]
    format: FormatArg,
    /// The first dirty offset
    ///
    /// Default: the cleaner checkpoint (a Kafka partition's in its log directory's cleaner-offset-checkpoint), else
    /// the log's start.
    #[arg(long, value_name = "OFFSET", value_parser = logcompact::parse_count, allow_hyphen_values = true)]
    checkpoint: Option<u64>,
    #[command(flatten)]
    threads: ThreadsArgs,
    #[command(flatten)]
    buffer: BufferArgs,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `analyze` on one log, or on every log of a data directory.
///
/// # Errors
/// As [`analyze`] and [`analyze_data_dir`].
pub fn run(a: &AnalyzeArgs) -> Result<(), Failure> {
    let budget = a.buffer.budget(&a.threads);
    match (&a.dir, &a.data_dir) {
        (Some(dir), _) => {
            crate::mistakes::one_log(dir, a.format.into(), "analyze", Some("analyze"))?;
            // The topic's settings as `compact` and `clean` resolve them: the dry run is the pass they would run.
            let source = a.broker.source(a.format.into())?;
            let (resolved, layers) =
                logcompact::datadir::settings_of(dir, a.format.into(), a.config.as_deref(), &[], &source)
                    .map_err(|e| Failure::from_data_dir(&e))?;
            let req = AnalyzeRequest {
                dir: dir.clone(),
                format: a.format.into(),
                checkpoint: a.checkpoint,
                budget,
                options: resolved.settings.pass_options(false),
                meter: Some(Arc::new(Meter::staged())),
            };
            analyze(&req, &resolved, &layers, a.json)
        }
        (None, Some(data_dir)) => {
            crate::mistakes::data_dir(data_dir, a.format.into(), "analyze", "analyze")?;
            let source = a.broker.source(a.format.into())?;
            let layers = logcompact::datadir::layers(data_dir, a.format.into(), a.config.as_deref(), &[], &source)
                .map_err(|e| Failure::from_data_dir(&e))?;
            analyze_data_dir(data_dir, a.format.into(), &layers, budget, a.json)
        }
        (None, None) => Err(Failure::Usage("give --dir DIR or --data-dir DIR".into())),
    }
}

/// Runs `analyze` on one log and prints it.
///
/// # Errors
/// As opening the log; [`Failure::Corruption`] for damage.
fn analyze(
    req: &AnalyzeRequest,
    resolved: &Resolved,
    layers: &logcompact::datadir::settings::Layers,
    json: bool,
) -> Result<(), Failure> {
    let dir = &req.dir;
    let progress = req.meter.as_ref().map(|m| Reporter::start("analyze", Arc::clone(m)));
    let found = logcompact::analyze(req);
    drop(progress);
    // A note on the topics' settings comes with the answer, not before an error that answers alone; a warning
    // (the settings could not be read) may explain the error, so it comes either way.
    if found.is_err() {
        tell_broker_warning(layers);
    }
    let found = found.map_err(|e| analyze_failure(dir, e))?;
    tell_broker_notice(layers);
    let a = &found.analysis;
    let groups = &found.consumer_groups;
    let mut out = QuietPipe::new(std::io::stdout().lock());
    let failed = |e: std::io::Error| Failure::Runtime(format!("cannot write output: {e}"));
    if json {
        let mut value = serde_json::to_value(&found).map_err(|e| Failure::Runtime(e.to_string()))?;
        let settings: serde_json::Map<String, serde_json::Value> = resolved
            .sources
            .iter()
            .map(|(name, source)| {
                (name.clone(), serde_json::json!({"value": resolved.settings.get(name), "source": source}))
            })
            .collect();
        value["settings"] = serde_json::Value::Object(settings);
        let text = serde_json::to_string_pretty(&value).map_err(|e| Failure::Runtime(e.to_string()))?;
        return writeln!(out, "{text}").map_err(failed);
    }
    let codecs: Vec<String> = a.batches_by_codec.iter().map(|(c, n)| format!("{c} {n}")).collect();
    let keys = if a.dirty.distinct.exact {
        format!("{} distinct keys", a.dirty.distinct.keys)
    } else {
        format!(
            "about {} distinct keys (HyperLogLog, ±{:.1}%)",
            a.dirty.distinct.keys,
            a.dirty.distinct.relative_error * 100.0
        )
    };
    let what = if req.format == Format::Kafka { "partition" } else { "log" };
    let budget = req.budget;
    let codecs = if codecs.is_empty() { String::new() } else { format!(" ({})", codecs.join(", ")) };
    let lines = [
        format!(
            "{what} {}: {}, {}{codecs}, {}",
            dir.display(),
            count(a.segments, "segment", "segments"),
            count(a.batches, "batch", "batches"),
            bytes(a.bytes)
        ),
        match (a.first_offset, a.last_offset) {
            (Some(first), Some(last)) => format!(
                "offsets {}; {}: {} keyed, {} unkeyed, {} tombstones; {} transactional and {} control batches",
                log_core::human::offsets(first, last),
                count(a.records, "record", "records"),
                a.keyed_records,
                a.unkeyed_records,
                a.tombstones,
                a.transactional_batches,
                a.control_batches
            ),
            // Every record gone (cleaned away, or none written): said in words, never as half a range.
            _ => "no records: an empty or emptied log".to_owned(),
        },
        format!(
            "first dirty offset {} from {}; clean {}, dirty {}, active segment {}: dirty ratio {:.1}%",
            a.first_dirty_offset,
            a.checkpoint_source,
            bytes(a.clean_bytes),
            bytes(a.dirty_bytes),
            bytes(a.active_bytes),
            a.dirty_ratio * 100.0
        ),
        format!("dirty section: {} records, {} keyed, {keys}", a.dirty.dirty_records, a.dirty.keyed_records),
        format!("settings: {}", resolved.given()),
        format!(
            "a full compaction now keeps {} records in {} and reclaims {} ({:.1}%)",
            a.records_after_compaction,
            bytes(a.bytes_after_compaction),
            bytes(a.bytes_reclaimed),
            if a.bytes == 0 { 0.0 } else { a.bytes_reclaimed as f64 * 100.0 / a.bytes as f64 }
        ),
    ];
    let policy = (!resolved.settings.cleanup_policy.compacts()).then(|| {
        let from = resolved.sources.get("cleanup.policy").map_or("default", String::as_str);
        if ["default", "Kafka's default for a topic"].contains(&from) {
            "nothing here gives this topic's cleanup.policy (Kafka's default is delete, which is never compacted; \
             --metadata-dir or --config give the topic's own): the figures are what a compaction would do"
                .to_owned()
        } else {
            format!(
                "cleanup.policy is {} ({from}): Kafka's cleaner never compacts this topic; the figures are what a \
                 compaction would do",
                resolved.settings.cleanup_policy.name()
            )
        }
    });
    // Kafka removes tombstones and markers on a clock, one replica at a time.
    let replicas = (req.format == Format::Kafka && (a.tombstones > 0 || a.control_batches > 0)).then(|| {
        format!(
            "tombstones and markers go {} ms (delete.retention.ms) after the pass that first keeps them: timed, not \
             coordinated with the other replicas, so a replica down longer keeps for good what they shadow \
             (`logcompact audit --compare` finds it; compact and clean --replica-audits wait for every replica)",
            resolved.settings.delete_retention_ms
        )
    });
    for l in lines.iter().chain(&a.notes).chain(&policy).chain(&replicas) {
        writeln!(out, "{l}").map_err(failed)?;
    }
    for t in &a.transactions.open_transactions {
        let command = t.abort_command.as_deref().unwrap_or("(name the partition's directory <topic>-<partition>)");
        writeln!(
            out,
            "open transaction: producer {} epoch {} from offset {} ({} old); to abort it: {command}",
            t.producer_id,
            t.producer_epoch,
            t.first_offset,
            log_core::human::duration_ms(u64::try_from(t.age_ms).unwrap_or(0))
        )
        .map_err(failed)?;
    }
    if a.torn_tail_bytes > 0 {
        writeln!(out, "torn tail: {} at the end of the active segment", log_core::human::bytes(a.torn_tail_bytes))
            .map_err(failed)?;
    }
    if let Some(g) = &groups {
        print_groups(&mut out, g).map_err(failed)?;
    }
    writeln!(out).map_err(failed)?;
    drop(out);
    crate::cmd::advise::print(&a.dirty.maps, a.dirty.distinct, Some(&a.dirty), budget, false)
}

/// The failure for a log that could not be analysed.
fn analyze_failure(dir: &Path, e: AnalyzeError) -> Failure {
    match e {
        AnalyzeError::Open(o) => Failure::from_open(&o),
        AnalyzeError::Checkpoint(c) => Failure::from_checkpoint(&c),
        AnalyzeError::Cleaner { source, .. } => Failure::from_cleaner(&dir.display().to_string(), &source),
        AnalyzeError::Log { source, .. } => Failure::from_log(&dir.display().to_string(), &source),
        other => Failure::Runtime(other.to_string()),
    }
}

/// The consumer groups of a `__consumer_offsets` partition: a row a group, most live keys first (the first 50).
fn print_groups(out: &mut dyn Write, g: &logcompact::kafka::consumer_offsets::GroupSummary) -> std::io::Result<()> {
    const SHOWN: usize = 50;
    writeln!(
        out,
        "\nconsumer groups ({}): keys as a full compaction leaves them (live ones stay; tombstones go \
         delete.retention.ms after the pass that first keeps them)",
        g.groups.len()
    )?;
    writeln!(
        out,
        "{:<40} {:>10} {:>13} {:>18} {:>9}",
        "group", "records", "live offsets", "tombstoned offsets", "metadata"
    )?;
    for c in g.groups.iter().take(SHOWN) {
        let metadata = match (c.live_metadata, c.tombstoned_metadata) {
            (1, _) => "live",
            (_, 1) => "deleted",
            _ => "-",
        };
        writeln!(
            out,
            "{:<40} {:>10} {:>13} {:>18} {:>9}",
            c.group, c.records, c.live_offsets, c.tombstoned_offsets, metadata
        )?;
    }
    if g.groups.len() > SHOWN {
        writeln!(out, "... and {} more groups (--json lists all)", g.groups.len() - SHOWN)?;
    }
    if g.other_records > 0 {
        writeln!(out, "{} records of other key kinds (the new consumer protocol's, or undecodable)", g.other_records)?;
    }
    if g.truncated {
        writeln!(
            out,
            "the partition holds more than {} distinct keys: the counts cover the keys first seen up to that limit",
            logcompact::kafka::consumer_offsets::MAX_GROUP_KEYS
        )?;
    }
    Ok(())
}

/// Runs `analyze --data-dir` and prints a row a log (most reclaimable first) and a total, or the JSON.
///
/// # Errors
/// [`Failure::Usage`] for a directory without logs or bad settings; as writing the output.
fn analyze_data_dir(
    data_dir: &Path,
    format: Format,
    layers: &logcompact::datadir::settings::Layers,
    budget: Budget,
    json: bool,
) -> Result<(), Failure> {
    use logcompact::datadir;
    let meter = Arc::new(Meter::running_total());
    let progress = Reporter::start("analyze", Arc::clone(&meter));
    let found = datadir::analyze::analyze_dir(data_dir, format, layers, budget, Some(&meter));
    progress.finish();
    if found.is_err() {
        tell_broker_warning(layers);
    }
    let found = found.map_err(|e| Failure::from_data_dir(&e))?;
    tell_broker_notice(layers);
    for (name, why) in &found.unreadable {
        crate::out::diag!("cannot read {name}: {why}");
    }
    for (name, why) in &found.ignored {
        crate::out::diag!("{name}: {why}");
    }
    let mut out = QuietPipe::new(std::io::stdout().lock());
    let failed = |e: std::io::Error| Failure::Runtime(format!("cannot write output: {e}"));
    if json {
        let text = serde_json::to_string_pretty(&found.logs).map_err(|e| Failure::Runtime(e.to_string()))?;
        return writeln!(out, "{text}").map_err(failed);
    }
    writeln!(
        out,
        "{:<32} {:>10} {:>7} {:>12} {:>12} {:>12} {:>12}  cleanable now",
        "log", "bytes", "dirty", "reclaimable", "keys", "skimpy 1x", "compact 1x"
    )
    .map_err(failed)?;
    for r in &found.logs {
        let buffer = |m: &str| r.buffer_bytes_for_one_pass.get(m).map_or_else(|| "-".to_owned(), |b| bytes(*b));
        writeln!(
            out,
            "{:<32} {:>10} {:>6.1}% {:>12} {:>12} {:>12} {:>12}  {}: {}",
            r.log,
            bytes(r.bytes),
            r.dirty_ratio * 100.0,
            bytes(r.reclaimable_bytes),
            if r.distinct_keys_exact { r.distinct_keys.to_string() } else { format!("~{}", r.distinct_keys) },
            buffer("skimpy"),
            buffer("compact"),
            if r.cleanable_now { "yes" } else { "no" },
            r.reason
        )
        .map_err(failed)?;
    }
    let left_alone = found.logs.iter().filter(|r| !r.compacted).count();
    let apart = if left_alone == 0 {
        String::new()
    } else {
        format!(
            "; not counted: {} the cleaner leaves alone (not compacted), where a compaction would reclaim {}",
            count(left_alone as u64, "log", "logs"),
            bytes(found.not_compacted_reclaimable_bytes)
        )
    };
    // The share is of the logs the cleaner takes: those it leaves alone reclaim nothing.
    let compacted_bytes: u64 = found.logs.iter().filter(|r| r.compacted).map(|r| r.bytes).sum();
    let share =
        if compacted_bytes == 0 { 0.0 } else { found.total_reclaimable_bytes as f64 * 100.0 / compacted_bytes as f64 };
    let of = if left_alone == 0 { String::new() } else { format!(" of the {} compacted", bytes(compacted_bytes)) };
    writeln!(
        out,
        "total: {}, {}, {} reclaimable by the cleaner ({share:.1}%{of}){apart}",
        count(found.logs.len() as u64, "log", "logs"),
        bytes(found.total_bytes),
        bytes(found.total_reclaimable_bytes),
    )
    .map_err(failed)
}
