//! `gen`, `compact`, `roll`, `dump`, `check` and `repair`: the commands that work on a log directory.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use cleaner::{Cleaner, CleanerConfig, Phase};
use log_core::LogConfig;
use log_core::repair::RepairAction;
use log_core::workload::Workload;
use serde::Serialize;

use crate::backend::{self, describe_recovery};
use crate::failure::Failure;
use crate::out::QuietPipe;
use crate::{format, json, progress};

fn write_failed(e: impl std::fmt::Display) -> Failure {
    Failure::Runtime(format!("cannot write output: {e}"))
}

/// Prints `value` as one JSON line on standard output (quietly nothing once the reader has gone).
pub fn print_json(value: &impl Serialize) -> Result<(), Failure> {
    let text = serde_json::to_string(value).map_err(write_failed)?;
    let mut out = QuietPipe::new(std::io::stdout().lock());
    writeln!(out, "{text}").and_then(|()| out.flush()).map_err(write_failed)
}

fn config_segment_bytes(log: &log_core::Log) -> String {
    let b = log.config().segment_bytes;
    if b.is_multiple_of(1 << 30) {
        format!("{} GiB", b >> 30)
    } else if b.is_multiple_of(1 << 20) {
        format!("{} MiB", b >> 20)
    } else {
        format!("{b} bytes")
    }
}

/// What `gen` did.
#[derive(Debug, Serialize)]
struct GenSummary {
    records: u64,
    tombstones: u64,
    next_offset: u64,
    segments: usize,
    seconds: f64,
    records_per_second: f64,
    workload: Workload,
}

/// Appends a synthetic workload to the log in `dir` and prints a JSON summary.
///
/// # Errors
/// [`Failure::Usage`] for a workload that cannot be written (checked before anything is allocated or
/// written); otherwise as the log fails.
pub fn generate(dir: &Path, workload: Workload, config: LogConfig) -> Result<(), Failure> {
    if workload.keys == 0 {
        return Err(Failure::Usage("--keys must be at least 1".into()));
    }
    // The largest value a record of the workload's 16-byte keys can carry, before a byte is allocated.
    let limit = log_core::codec::MAX_RECORD_BYTES - 64;
    if workload.value_bytes > limit {
        return Err(Failure::Usage(format!(
            "--value-bytes {} is larger than a record can be ({limit} bytes of value at most)",
            workload.value_bytes
        )));
    }
    config.validate().map_err(|e| Failure::Usage(e.to_string()))?;
    let log = backend::open_log(backend::open_store(backend::Backend::File, Some(dir))?, config)?;
    let bar = progress::bar(workload.records, "gen", false);
    let started = Instant::now();
    let tombstones = workload
        // Timestamps 1 ms apart ending now, never in the future (where min.compaction.lag.ms would hold them).
        .append_to(&log, log_core::now_ms().saturating_sub(i64::try_from(workload.records).unwrap_or(i64::MAX)), |n| {
            bar.set_position(n)
        })
        .map_err(|e| Failure::from_log("cannot append", &e))?;
    log.sync().map_err(|e| Failure::from_log("cannot sync the log", &e))?;
    let seconds = started.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let section = log.dirty_section(log_core::now_ms(), 0);
    if section.closed_segments == 0 {
        crate::out::diag!(
            "note: all {} records are in the active segment (segment.bytes {} is larger than the log), and no pass \
             takes the active segment: `logcompact roll --dir {}` seals it, or write with a smaller --segment-bytes",
            section.active_records,
            config_segment_bytes(&log),
            dir.display()
        );
    }
    let summary = GenSummary {
        records: workload.records,
        tombstones,
        next_offset: log.next_offset(),
        segments: log.snapshot().closed().len() + 1,
        seconds,
        records_per_second: workload.records as f64 / seconds.max(1e-9),
        workload,
    };
    print_json(&summary)
}

/// What `compact` was asked to do.
#[derive(Debug)]
pub struct CompactRequest<'a> {
    /// The cleaner's settings.
    pub config: &'a CleanerConfig,
    /// The passes' clock (the system's, or fixed by `--now-ms`).
    pub clock: Arc<dyn cleaner::Clock>,
    /// The library's request.
    pub request: logcompact::CompactRequest,
}

/// Runs one pass (or passes until nothing is dirty) on the log in a directory (or on a copy of it made in
/// `--out`), printing each pass's statistics as one JSON line; says on standard error when there is nothing
/// to clean, and why.
///
/// # Errors
/// [`Failure::Usage`] for a bad configuration or a directory without a log; [`Failure::Corruption`] when
/// stored data is damaged; [`Failure::Runtime`] when the pass fails otherwise (a busy directory included).
pub fn compact(req: &CompactRequest<'_>) -> Result<(), Failure> {
    let dir = req.request.out.as_deref().unwrap_or(&req.request.dir).to_path_buf();
    let mut cleaner = Cleaner::new(req.config.clone(), Arc::clone(&req.clock))
        .map_err(|e| Failure::from_cleaner("cannot build the offset map", &e))?;
    let bar = progress::bar(0, "map", true);
    let shown = bar.clone();
    cleaner.on_progress(move |p| {
        shown.set_message(if p.phase == Phase::Map { "map" } else { "copy" });
        shown.set_length(p.bytes_total);
        shown.set_position(p.bytes_done);
    });
    let mut warned = false;
    // A failure to print stops the passes; it is what the command reports.
    let mut output_failed = None;
    let each = |stats: &cleaner::CleanStats| -> Result<(), cleaner::Error> {
        if let Err(f) = bar.suspend(|| print_json(stats)) {
            output_failed = Some(f);
            return Err(cleaner::Error::Aborted);
        }
        if let Some(passes) = stats.passes_needed().filter(|_| !warned) {
            warned = true;
            bar.suspend(|| {
                crate::out::diag!("{}", many_passes_warning(stats, passes, Some((&dir, req.request.format))))
            });
        }
        Ok(())
    };
    let opened = |r: &log_core::RecoveryReport| {
        for line in describe_recovery(r, true) {
            bar.suspend(|| crate::out::diag!("{line}"));
        }
    };
    let result = logcompact::compact_observed(&req.request, &mut cleaner, opened, each);
    bar.finish_and_clear();
    if let Some(f) = output_failed {
        return Err(f);
    }
    let done = result.map_err(|e| Failure::from_compact(&e))?;
    if let logcompact::CompactOutcome::NothingDone(why) = &done.outcome {
        crate::out::diag!("{}: {why}", dir.display());
    }
    if !done.checkpoint_saved {
        crate::out::diag!("note: {}: the cleaner checkpoint is {}", dir.display(), done.checkpoint_source);
    }
    Ok(())
}

/// Seals the active segment of the log in `dir`.
///
/// # Errors
/// As opening the log; [`Failure::Runtime`] when the roll fails.
pub fn roll(dir: &Path, format: log_core::Format) -> Result<(), Failure> {
    let opened = logcompact::open_writable(dir, format, LogConfig::default()).map_err(|e| Failure::from_open(&e))?;
    let log = opened.log;
    for line in describe_recovery(log.recovery_report(), true) {
        crate::out::diag!("{line}");
    }
    let base = log.active_base();
    let records = log.dirty_section(0, 0).active_records;
    if log.roll().map_err(|e| Failure::from_log("cannot roll the active segment", &e))? {
        crate::out::diag!(
            "sealed segment {base} ({records} records); the active segment now starts at offset {}",
            log.active_base()
        );
    } else {
        crate::out::diag!("nothing to roll: the active segment (at offset {base}) is empty");
    }
    Ok(())
}

/// The warning `compact` and `run` give when a buffer will take several passes.
pub fn many_passes_warning(stats: &cleaner::CleanStats, passes: u64, dir: Option<(&Path, log_core::Format)>) -> String {
    let how = match dir {
        Some((d, f)) => format!("`logcompact advise --dir {}{}`", d.display(), format_flag(f)),
        None => "`logcompact advise`".to_owned(),
    };
    format!(
        "warning: the dedupe buffer held {} keys and mapped offsets {}..{} of a dirty section reaching {}: about {passes} \
         passes to clean it, each re-reading the cleaned log; {how} tells the buffer one pass needs",
        stats.offset_map.entries, stats.first_dirty_offset, stats.end_offset, stats.active_base
    )
}

/// Prints the log in `dir`: one record per line, as `DUMP` does (`segments`), or as JSON. Reads only:
/// nothing is written, created or locked.
///
/// # Errors
/// [`Failure::Usage`] for a directory that holds no log; [`Failure::Corruption`] when stored data is damaged.
pub fn dump(dir: &Path, as_json: bool, segments: bool) -> Result<(), Failure> {
    let log = logcompact::open_read_only(dir, log_core::Format::Native).map_err(|e| Failure::from_open(&e))?.log;
    let snapshot = log.snapshot();
    if as_json {
        let mut out = QuietPipe::new(std::io::BufWriter::new(std::io::stdout().lock()));
        json::write_segments(&snapshot, &mut out)?;
        return out.flush().map_err(write_failed);
    }
    let mut out = QuietPipe::new(std::io::BufWriter::new(std::io::stdout().lock()));
    if segments {
        format::dump(&snapshot, &mut out)?;
    } else {
        crate::records::dump(&snapshot, &mut out)?;
    }
    out.flush().map_err(write_failed)
}

/// Verifies the log in `dir` without changing it; prints a JSON report (exit 0 when every record is intact,
/// whatever a crash left for the next open to repair), or the first problem (exit 1).
///
/// # Errors
/// [`Failure::Corruption`] naming the file and position of the first problem; [`Failure::Usage`] for a
/// directory that holds no log of this format.
pub fn check(dir: &Path) -> Result<(), Failure> {
    let store = backend::open_read_only_store(dir)?;
    match log_core::check::check_store(store) {
        Ok(report) => {
            for n in &report.notices {
                crate::out::diag!("notice: {}: {}", shown(dir, &n.file), n.what);
            }
            print_json(&report)
        }
        Err(problem) => Err(check_failure(dir, log_core::Format::Native, &problem)),
    }
}

/// ` --format kafka` for a Kafka command line, nothing for the native format (its default).
pub fn format_flag(format: log_core::Format) -> &'static str {
    match format {
        log_core::Format::Native => "",
        log_core::Format::Kafka => " --format kafka",
    }
}

/// A file a report names, the directory itself (`.`) as `dir`.
pub fn shown(dir: &Path, file: &str) -> String {
    if file == log_core::DIRECTORY { dir.display().to_string() } else { file.to_owned() }
}

/// The failure for a problem `check` found in `dir`.
pub fn check_failure(dir: &Path, format: log_core::Format, problem: &log_core::check::Problem) -> Failure {
    let problem = &log_core::check::Problem { file: shown(dir, &problem.file), ..problem.clone() };
    match problem.class {
        log_core::check::ProblemClass::UnusableName => {
            Failure::Corruption(format!("check failed: {problem}\n{}", crate::failure::UNUSABLE_NAME_HINT))
        }
        log_core::check::ProblemClass::Corruption
            if format == log_core::Format::Kafka && problem.file.ends_with("-checkpoint") =>
        {
            Failure::Corruption(format!("check failed: {problem}\n{}", crate::failure::BROKER_CHECKPOINT_HINT))
        }
        log_core::check::ProblemClass::Corruption => Failure::Corruption(format!(
            "check failed: {problem}\n(`logcompact repair --dir {}{}` shows what a repair would drop)",
            dir.display(),
            format_flag(format)
        )),
        log_core::check::ProblemClass::NotALog
            if format == log_core::Format::Native && problem.what.contains("a Kafka partition directory") =>
        {
            Failure::Usage(format!("{}: {} ({})", dir.display(), problem.what, crate::failure::KAFKA_HINT))
        }
        log_core::check::ProblemClass::NotALog => Failure::Usage(format!("{}: {}", dir.display(), problem.what)),
        log_core::check::ProblemClass::OtherFormat => Failure::Usage(format!("{}: {problem}", dir.display())),
        log_core::check::ProblemClass::Unreadable => Failure::Runtime(format!("check failed: {problem}")),
    }
}

fn describe(action: &RepairAction) -> String {
    match action {
        RepairAction::CutRanges { segment, ranges, bytes, records_kept, active } => {
            let list: Vec<String> = ranges.iter().map(|(s, e)| format!("{s}..{e}")).collect();
            let which = if *active { "active segment" } else { "segment" };
            format!(
                "cut {bytes} damaged bytes from {which} {segment} (byte ranges {}), keeping its {records_kept} valid records",
                list.join(", ")
            )
        }
        RepairAction::DiscardSwap { file, reason, segment } => {
            format!("set aside {file}, which is not a valid cleaned segment ({reason}); {segment}")
        }
        RepairAction::ResetCheckpoint { reason } => {
            format!("set aside the cleaner checkpoint ({reason}); cleaning restarts from the log's start")
        }
        RepairAction::DropHint { file, reason } => format!("delete the index hint {file} ({reason})"),
        RepairAction::RebuildIndexes { segment, reason } => {
            format!("rebuild the .index and .timeindex of {segment} from its batches ({reason})")
        }
        RepairAction::RebuildTxnIndex { file, reason } => {
            format!("rebuild {file} from the partition's batches, as a broker's recovery would ({reason})")
        }
    }
}

/// Shows what a repair of the log in `dir` would drop, or with `apply` does it (keeping a copy of every cut
/// byte), then opens the log once so that recovery finishes what it repairs on its own.
///
/// # Errors
/// [`Failure::Corruption`] when something cannot be repaired; [`Failure::Runtime`] when the repair fails.
pub fn repair(dir: &Path, format: log_core::Format, apply: bool, as_json: bool) -> Result<(), Failure> {
    let done = logcompact::repair(dir, format, apply).map_err(|e| match e {
        logcompact::RepairError::Open(o) => Failure::from_open(&o),
        logcompact::RepairError::Log { source, .. } => {
            Failure::from_log(&format!("{}: repair failed", dir.display()), &source)
        }
        other => Failure::Runtime(other.to_string()),
    })?;
    for name in done.outcome.iter().flat_map(|o| &o.backups) {
        crate::out::diag!("kept a copy of what was cut in {}", dir.join(name).display());
    }
    for line in &done.recovery {
        crate::out::diag!("{line}");
    }
    let plan = done.plan;
    if as_json {
        print_json(&plan)?;
    } else {
        let mut out = QuietPipe::new(std::io::stdout().lock());
        let verb = if apply { "repaired" } else { "a repair would" };
        if plan.actions.is_empty() && plan.cannot_fix.is_empty() {
            writeln!(out, "nothing to repair by hand in {}", dir.display()).map_err(write_failed)?;
        }
        for action in &plan.actions {
            writeln!(out, "{verb}: {}", describe(action)).map_err(write_failed)?;
        }
        if !apply && !plan.actions.is_empty() {
            writeln!(
                out,
                "run `logcompact repair --dir {}{} --apply` to do it; a copy of every cut byte is kept in repair-<time>.*.bytes files",
                dir.display(),
                format_flag(format)
            )
            .map_err(write_failed)?;
        }
    }
    match plan.cannot_fix.first() {
        Some(_) => Err(Failure::Corruption(format!("cannot repair: {}", plan.cannot_fix.join("; ")))),
        None => Ok(()),
    }
}
