//! `logcompact compact`: cleans the log in one directory (in place, or a copy made in `--out`) with the
//! settings of its topic, one pass or passes until nothing is dirty.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use cleaner::{Cleaner, CleanerConfig, PassOptions};

use crate::args::{BrokerArgs, BufferArgs, ClockArgs, FormatArg, MapArgs, cleaner_config};
use crate::backend::describe_recovery;
use crate::failure::Failure;
use crate::hints::many_passes_warning;
use crate::progress::Reporter;

/// `compact`'s arguments.
#[derive(Debug, Args)]
pub struct CompactArgs {
    /// The log's directory.
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    #[command(flatten)]
    map: MapArgs,
    #[command(flatten)]
    buffer: BufferArgs,
    /// How long a tombstone lives after the first pass that keeps it (delete.retention.ms).
    ///
    /// Default: the topic's (as the broker's metadata, saved settings or --config give it), else one day.
    #[arg(long, value_name = "MS", allow_hyphen_values = true)]
    delete_retention_ms: Option<i64>,
    /// Purge: tombstones kept by an earlier pass go now, whatever their delete horizon, in this run's passes
    /// (a pass runs only over a dirty section: on a log with nothing dirty, roll or append first).
    #[arg(long)]
    purge: bool,
    /// Repeat passes until the whole dirty section has been cleaned.
    #[arg(long)]
    until_clean: bool,
    /// The log's segment.bytes
    ///
    /// The most a group of cleaned segments is merged into. Default: the topic's (a Kafka topic's
    /// internal.segment.bytes when set), else 1GiB.
    #[arg(long, value_name = "BYTES", value_parser = logcompact::parse_bytes, allow_hyphen_values = true)]
    segment_bytes: Option<u64>,
    /// Leave closed segments holding a record younger than this dirty (min.compaction.lag.ms).
    ///
    /// Default: the topic's, else 0.
    #[arg(long, value_name = "MS", allow_hyphen_values = true)]
    min_compaction_lag_ms: Option<i64>,
    /// cleanup.policy: compact a Kafka partition whose topic the broker's metadata or the settings say is not
    /// compacted (delete), or one whose policy nothing here gives (then also --drop-invalid to drop its
    /// records without a key).
    #[arg(long, value_name = "POLICY")]
    cleanup_policy: Option<String>,
    /// Drop records without a key, as Kafka's cleaner drops them in a compacted topic.
    ///
    /// Without it, a pass that would drop one changes nothing and fails (exit 2), unless the topic is known to be
    /// compacted.
    #[arg(long)]
    drop_invalid: bool,
    /// A settings file as `clean` takes it (Kafka's names, a [section] per topic or log), over the settings a
    /// `clean` saved in the log's parent directory and the broker's metadata.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    broker: BrokerArgs,
    /// Do nothing unless at least this share of the closed bytes is dirty (min.cleanable.dirty.ratio; 0 for
    /// this command, which cleans when asked, 0.5 for `clean`).
    #[arg(long, value_name = "R", default_value_t = 0.0, allow_hyphen_values = true)]
    min_cleanable_dirty_ratio: f64,
    /// Threads within one pass
    ///
    /// Pass 1 reads the dirty section once into one map of the whole buffer (the external pass reads on one thread
    /// and sorts and spills each half of the keys on two others), pass 2 copies groups of segments on this many
    /// threads, or judges a single group's segments on all of them (Kafka gives a log to one thread). Every count
    /// writes the same bytes.
    #[arg(long, value_name = "T", default_value_t = 1, allow_hyphen_values = true)]
    copy_threads: u32,
    /// Not taken: `compact` cleans one log; see --copy-threads.
    #[arg(long, value_name = "T", hide = true, allow_hyphen_values = true)]
    threads: Option<String>,
    /// The directory's format
    ///
    /// A native log, or a Kafka partition directory of a stopped broker (cleaned in place under the broker's lock on
    /// its log directory, with Kafka's own swap protocol).
    #[arg(long, value_enum, default_value_t = FormatArg::Native)]
    format: FormatArg,
    /// Compact a copy made in this directory (which must not exist, or be empty) instead
    ///
    /// --dir is then only read, never written. Never inside a broker's log directory (one holding meta.properties): a
    /// broker would take it for a partition it does not own, or refuse to start. The copy's cleaner checkpoint lives
    /// for this run only (the passes start from the source's checkpoint).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Start from this first dirty offset instead of the cleaner checkpoint (the pass then writes its own).
    #[arg(long, value_name = "OFFSET", value_parser = logcompact::parse_count, allow_hyphen_values = true)]
    checkpoint: Option<u64>,
    #[command(flatten)]
    clock: ClockArgs,
    /// With --format kafka: the other replicas' audit files (`logcompact audit`). A tombstone or transaction
    /// marker then goes only once its delete horizon passed and every other replica's cleaner has cleaned past
    /// it, so that no replica down or lagging keeps for good what it shadows; a replica without a file keeps
    /// every one. Without it, removal is timed by the horizon alone, as Kafka's cleaner does.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    replica_audits: Vec<PathBuf>,
    /// Print each pass's statistics as one JSON line instead of the summary for people.
    #[arg(long)]
    json: bool,
}

/// `compact`: the log's settings resolved as `clean` resolves them (the broker's metadata, saved settings,
/// --config, then these flags), a topic known not to be compacted refused, then the passes.
///
/// # Errors
/// [`Failure::Usage`] for bad settings, a directory without a log or a topic that is not compacted;
/// [`Failure::Corruption`] for damage; [`Failure::Runtime`] when a pass fails otherwise.
pub fn run(a: &CompactArgs) -> Result<(), Failure> {
    let listing = crate::mistakes::one_log(&a.dir, a.format.into(), "compact", Some("clean"))?;
    if a.threads.is_some() {
        return Err(Failure::Usage(
            "compact cleans one log: --threads is log.cleaner.threads (clean's, the buffer split between threads \
             that each clean a log); --copy-threads T copies this pass's groups of segments on T threads"
                .into(),
        ));
    }
    let c = cleaner_config(&a.map, &a.buffer, a.copy_threads)?;
    // The metadata log is refused for what it is before its topic's settings are asked about (from the
    // listing read above).
    listing.refuse_metadata_log().map_err(|e| Failure::from_open(&e))?;
    if let Some(ms) = a.delete_retention_ms.filter(|ms| *ms < 0) {
        return Err(Failure::Usage(format!("--delete-retention-ms {ms} is negative")));
    }
    let format: log_core::Format = a.format.into();
    let given: Vec<(&str, Option<String>, &str)> = vec![
        ("segment.bytes", a.segment_bytes.map(|v| v.to_string()), "--segment-bytes"),
        ("min.compaction.lag.ms", a.min_compaction_lag_ms.map(|v| v.to_string()), "--min-compaction-lag-ms"),
        ("delete.retention.ms", a.delete_retention_ms.map(|v| v.to_string()), "--delete-retention-ms"),
        ("cleanup.policy", a.cleanup_policy.clone(), "--cleanup-policy"),
    ];
    let flags: Vec<(&str, String, &str)> = given.into_iter().filter_map(|(s, v, f)| v.map(|v| (s, v, f))).collect();
    let (resolved, layers) =
        logcompact::datadir::settings_of(&a.dir, format, a.config.as_deref(), &flags, &a.broker.source(format)?)
            .map_err(|e| Failure::from_data_dir(&e))?;
    let s = &resolved.settings;
    let options = PassOptions {
        purge: a.purge,
        min_compaction_lag_ms: s.min_compaction_lag_ms,
        delete_retention_ms: s.delete_retention_ms,
        drop_invalid: a.drop_invalid,
        max_decompressed_message_bytes: s.max_decompressed_message_bytes,
        removal_floor: replica_floor(a, format)?,
        ..PassOptions::default()
    };
    let request = logcompact::CompactRequest {
        dir: a.dir.clone(),
        format,
        options,
        until_clean: a.until_clean,
        segment_bytes: s.segment_bytes,
        index_interval_bytes: s.index_interval_bytes,
        min_cleanable_dirty_ratio: a.min_cleanable_dirty_ratio,
        checkpoint: a.checkpoint,
        out: a.out.clone(),
        clock_trust: a.clock.trust(),
        settings: layers,
        listing: a.out.is_none().then_some(listing),
    };
    // The library decides whether the topic is compacted; a compaction on the operator's word is said first.
    let verdict = logcompact::topic_policy(&request).map_err(|e| Failure::from_compact(&e))?;
    if let Some(asserted) = verdict.asserted {
        let theirs = match &asserted.own {
            Some((policy, from)) => format!("its own cleanup.policy is {policy} ({from})"),
            None => "nothing here gives its cleanup.policy".into(),
        };
        crate::out::diag!(
            "note: compacting topic {} as {} says ({theirs}); Kafka's defaults for what no flag gives; records \
             without a key are kept unless --drop-invalid",
            asserted.topic,
            asserted.by
        );
    }
    compact(&c, a.clock.clock()?, &request, &resolved.given(), a.json)
}

/// The replica-safe removal floor `--replica-audits` gives, said on standard error; `None` without the option.
fn replica_floor(a: &CompactArgs, format: log_core::Format) -> Result<Option<u64>, Failure> {
    if a.replica_audits.is_empty() {
        return Ok(None);
    }
    if format != log_core::Format::Kafka {
        return Err(Failure::Usage("--replica-audits is for a Kafka partition (--format kafka)".into()));
    }
    let name = a.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let own = a
        .dir
        .parent()
        .and_then(|d| logcompact::kafka::kraft::meta_property(d, "node.id"))
        .and_then(|n| n.trim().parse().ok());
    let f = logcompact::audit::ReplicaFloors::read(&a.replica_audits, own)
        .map_err(|e| Failure::Usage(e.to_string()))?
        .of(&name);
    let replicas: Vec<String> = f.replicas.iter().map(|(n, c)| format!("broker {n} cleaned to {c}")).collect();
    let missing = if f.missing.is_empty() {
        String::new()
    } else {
        format!("; no audit of broker(s) {:?}, so every tombstone and marker stays", f.missing)
    };
    crate::out::diag!(
        "note: replica-safe removal: tombstones and markers at or past offset {} stay ({}{missing})",
        f.floor,
        if replicas.is_empty() {
            "no other replica's audit holds this partition".to_owned()
        } else {
            replicas.join(", ")
        }
    );
    Ok(Some(f.floor))
}

/// Runs one pass (or passes until nothing is dirty) on the log in a directory (or on a copy of it made in
/// `--out`), printing each pass's summary (or its statistics as one JSON line with `json`) and, for people,
/// what the passes did in all and what comes next; says on standard error when there is nothing to clean, and
/// why.
fn compact(
    config: &CleanerConfig,
    clock: Arc<dyn cleaner::Clock>,
    request: &logcompact::CompactRequest,
    settings: &str,
    json: bool,
) -> Result<(), Failure> {
    let dir = request.out.as_deref().unwrap_or(&request.dir).to_path_buf();
    let mut cleaner =
        Cleaner::new(config.clone(), clock).map_err(|e| Failure::from_cleaner("cannot build the offset map", &e))?;
    let meter = Arc::new(log_core::progress::Meter::staged());
    cleaner.report_to(Arc::clone(&meter));
    let progress = Reporter::start("compact", meter);
    let mut warned = false;
    let mut pass = 0;
    let name = dir.display().to_string();
    // A failure to print stops the passes; it is what the command reports.
    let mut output_failed = None;
    // The passes made so far, so that those before a failing one are still counted in the status.
    let mut made: Vec<cleaner::CleanStats> = Vec::new();
    let each = |stats: &cleaner::CleanStats| -> Result<(), cleaner::Error> {
        pass += 1;
        made.push(stats.clone());
        let printed = progress.suspend(|| {
            if json {
                crate::out::print_json(stats)
            } else {
                crate::out::print_line(&cleaner::summary::summary(None, &name, stats, pass))
            }
        });
        if let Err(f) = printed {
            output_failed = Some(f);
            return Err(cleaner::Error::Aborted);
        }
        if let Some(fell) = &stats.fell_back {
            progress.suspend(|| crate::out::diag!("{}", crate::hints::fell_back_note(stats, fell)));
        }
        if let Some(passes) = stats.passes_needed().filter(|_| !warned) {
            warned = true;
            progress
                .suspend(|| crate::out::diag!("{}", many_passes_warning(stats, passes, Some((&dir, request.format)))));
        }
        Ok(())
    };
    let opened = |r: &log_core::RecoveryReport| {
        for line in describe_recovery(r, true) {
            progress.suspend(|| crate::out::diag!("{line}"));
        }
    };
    let result = logcompact::compact_observed(request, &mut cleaner, opened, each);
    progress.finish();
    if result.is_err() && request.out.is_none() {
        record_passes(&dir, request.format, &made);
    }
    if let Some(f) = output_failed {
        return Err(f);
    }
    let done = result.map_err(|e| Failure::from_compact(&e))?;
    match &done.outcome {
        logcompact::CompactOutcome::NothingDone(why) => {
            let purge = if request.options.purge { "; --purge acts only in a pass, so no tombstone went" } else { "" };
            crate::out::diag!("{}: {why}{purge} (settings: {settings})", dir.display());
        }
        logcompact::CompactOutcome::Cleaned(passes) if !json => {
            let text = crate::compact_summary::summary(&done, passes, request.format);
            crate::out::print_line(&format!("settings: {settings}"))?;
            crate::out::print_line(&text)?;
        }
        logcompact::CompactOutcome::Cleaned(_) => {}
    }
    if !done.checkpoint_saved {
        crate::out::diag!("note: {}: the cleaner checkpoint is {}", dir.display(), done.checkpoint_source);
    }
    if let (None, logcompact::CompactOutcome::Cleaned(passes)) = (&request.out, &done.outcome) {
        record_passes(&dir, request.format, passes);
    }
    Ok(())
}

/// Records in-place passes in the data directory's status file, so that `status` counts them beside `clean`'s
/// (a warning when it cannot: the status is a report, the passes are done).
fn record_passes(dir: &Path, format: log_core::Format, passes: &[cleaner::CleanStats]) {
    let Some(last) = passes.last() else { return };
    let full = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let (Some(data_dir), Some(name)) = (full.parent(), full.file_name()) else { return };
    let ended_ms = log_core::now_ms();
    let recorded = logcompact::datadir::status_file::record_compaction(
        data_dir,
        &name.to_string_lossy(),
        format,
        passes.len() as u64,
        ended_ms,
        last.total_seconds,
    );
    if let Ok(logcompact::datadir::status_file::Recorded::LeftToLiveRun) = recorded {
        crate::out::diag!(
            "note: a running `logcompact clean` keeps {}: these {} pass(es) are not counted there",
            logcompact::datadir::status_file::path(data_dir).display(),
            passes.len()
        );
    }
    if let Err(e) = recorded {
        crate::out::diag!(
            "warning: the passes are done, but {} could not record them: {e}",
            logcompact::datadir::status_file::path(data_dir).display()
        );
    }
}
