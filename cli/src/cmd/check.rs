//! `logcompact check`: verifies every checksum and invariant of the log in a directory without changing
//! anything.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use clap::Args;
use logcompact::ReadRate;
use logcompact::{CheckError, DirCheckOptions, LogCheck, LogVerdict};

use crate::args::{BrokerArgs, FormatArg};
use crate::failure::Failure;
use crate::hints::format_flag;
use crate::out::{QuietPipe, print_json, print_line, write_failed};
use crate::progress::{self, Reporter};

/// `check`'s arguments.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["dir", "data_dir"])))]
pub struct CheckArgs {
    /// The log's directory.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// A data directory (a broker's log directory with --format kafka)
    ///
    /// Every log in it, one line a log, the KRaft metadata log included (read, never written); exit 1 naming every
    /// damaged one.
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// The directory's format.
    #[arg(long, value_enum, default_value_t = FormatArg::Native)]
    format: FormatArg,
    /// With --data-dir: only the logs with a file changed at or after TIME (an age such as 90m, 24h or 7d; a
    /// UTC date and time such as 2026-12-01T08:30:00Z; or milliseconds since the epoch); the others are
    /// listed as unchanged, not read.
    #[arg(long, value_name = "TIME", requires = "data_dir", value_parser = crate::when::parse_time)]
    modified_since: Option<SystemTime>,
    /// Read at most this many bytes a second (e.g. 50MiB), as log.cleaner.io.max.bytes.per.second bounds
    /// Kafka's cleaner: for a check beside a running broker.
    #[arg(long, value_name = "BYTES", value_parser = logcompact::parse_bytes)]
    io_max_bytes_per_second: Option<u64>,
    /// With --format kafka: where the broker's settings of its topics are read, to judge records by each
    /// topic's max.decompressed.message.bytes (a larger record fails Kafka's cleaner on that partition).
    #[command(flatten)]
    broker: BrokerArgs,
    /// With --format kafka: a settings file (as clean's --config) whose topic sections override the broker's.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// JSON instead of text
    ///
    /// With --dir the report instead of a summary and a verdict line; with --data-dir one object (every log's verdict
    /// and report) instead of a line a log.
    #[arg(long)]
    json: bool,
}

/// Runs `check` on the directory, as its format checks.
///
/// # Errors
/// As [`check`].
pub fn run(a: &CheckArgs) -> Result<(), Failure> {
    if a.format == FormatArg::Native
        && (a.config.is_some() || a.broker.metadata_dir.is_some() || a.broker.broker_config.is_some())
    {
        return Err(Failure::Usage(
            "--config, --metadata-dir and --broker-config judge Kafka partitions: give --format kafka".into(),
        ));
    }
    if a.io_max_bytes_per_second == Some(0) {
        return Err(Failure::Usage("--io-max-bytes-per-second must be at least 1".into()));
    }
    let rate = a.io_max_bytes_per_second.map(|r| Arc::new(ReadRate::new(r)));
    match (&a.dir, &a.data_dir) {
        (_, Some(data_dir)) => check_data_dir(data_dir, a, rate),
        (Some(dir), None) => {
            crate::mistakes::one_log(dir, a.format.into(), "check", Some("check"))?;
            check(dir, a.format.into(), rate.as_ref(), a)
        }
        (None, None) => Err(Failure::Usage("give --dir or --data-dir".into())),
    }
}

/// `check --data-dir`: a line a log as it is checked, then one verdict line.
///
/// # Errors
/// [`Failure::Corruption`] naming every damaged log; [`Failure::Runtime`] naming those that could not be
/// read; as listing the directory.
fn check_data_dir(data_dir: &Path, a: &CheckArgs, rate: Option<Arc<ReadRate>>) -> Result<(), Failure> {
    let format: log_core::Format = a.format.into();
    crate::mistakes::data_dir(data_dir, format, "check", "check")?;
    let meter = Arc::new(logcompact::progress::Meter::running_total());
    let options = DirCheckOptions {
        modified_since: a.modified_since,
        rate,
        broker: a.broker.source(format)?,
        config: a.config.clone(),
        meter: Some(Arc::clone(&meter)),
    };
    let progress = Reporter::start("check", meter);
    let mut out = QuietPipe::new(std::io::stdout().lock());
    let mut failed_write = None;
    let mut each = |line: &LogCheck| {
        if a.json {
            return;
        }
        let written = progress.suspend(|| writeln!(out, "{}", log_line(line)).and_then(|()| out.flush()));
        if let Err(e) = written {
            failed_write.get_or_insert(e);
        }
    };
    let checked = logcompact::check_data_dir(data_dir, format, &options, &mut each);
    progress.finish();
    let checked = checked.map_err(|e| Failure::from_data_dir(&e))?;
    if let Some(e) = failed_write {
        return Err(write_failed(e));
    }
    if a.json {
        print_json(&checked)?;
    } else {
        for (name, why) in &checked.ignored {
            crate::out::diag!("passed over {name}: {why}");
        }
        if let Some(note) = &checked.settings_note {
            crate::out::diag!("note: {note}");
        }
    }
    let (damaged, unchecked) = (checked.damaged(), checked.unchecked());
    let unchanged = checked.logs.iter().filter(|l| matches!(l.verdict, LogVerdict::Unchanged)).count();
    let read = checked.logs.len() - unchanged;
    let unchanged_note = if unchanged > 0 { format!(" ({unchanged} unchanged, not read)") } else { String::new() };
    if !damaged.is_empty() {
        let first = data_dir.join(damaged[0]);
        return Err(Failure::Corruption(format!(
            "check failed: {} of {} damaged: {}{unchanged_note}\n(`logcompact repair --dir {}{}` shows what a \
             repair would drop)",
            damaged.len(),
            logs(read),
            damaged.join(", "),
            first.display(),
            format_flag(format)
        )));
    }
    if !unchecked.is_empty() {
        return Err(Failure::Runtime(format!(
            "check could not read {} of {}: {}{unchanged_note}",
            unchecked.len(),
            logs(read),
            unchecked.join(", ")
        )));
    }
    if !a.json {
        let verdict = match read {
            // A broker's log directory with no partition yet, or whose folders were all passed over (said above).
            0 if unchanged == 0 => format!("no logs in {}", data_dir.display()),
            _ => format!("{} intact{unchanged_note}", logs(read)),
        };
        writeln!(out, "{verdict}").and_then(|()| out.flush()).map_err(write_failed)?;
    }
    Ok(())
}

/// `1 log`, `2 logs`.
fn logs(n: usize) -> String {
    if n == 1 { "1 log".to_owned() } else { format!("{n} logs") }
}

/// A log's line: its verdict, its name, and what was found.
fn log_line(line: &LogCheck) -> String {
    let (verdict, what) = match &line.verdict {
        LogVerdict::Intact { report } => {
            use log_core::human::count;
            let records =
                if report.records == 0 { "no records".to_owned() } else { count(report.records, "record", "records") };
            // Each notice names its files (those with the same notice together): what a crash left there,
            // which the next writable open repairs, or a file the check ignored.
            let mut grouped: Vec<(&str, Vec<&str>)> = Vec::new();
            for n in &report.notices {
                match grouped.iter_mut().find(|(what, _)| *what == n.what) {
                    Some((_, files)) => files.push(&n.file),
                    None => grouped.push((&n.what, vec![&n.file])),
                }
            }
            let notices: String =
                grouped.iter().map(|(what, files)| format!("; notice: {}: {what}", files.join(", "))).collect();
            let warning =
                report.warnings.first().map_or_else(String::new, |w| format!("; warning: {}: {}", w.file, w.what));
            (
                "intact",
                format!(
                    "{}, {}, {records}{notices}{warning}",
                    count(report.segments, "segment", "segments"),
                    log_core::human::bytes(report.bytes)
                ),
            )
        }
        LogVerdict::Damaged { problem } => ("DAMAGED", problem.to_string()),
        LogVerdict::Unchanged => ("unchanged", "not modified since the time given; not read".to_owned()),
        LogVerdict::Unchecked { reason } => ("UNREAD", reason.clone()),
    };
    format!("{verdict:<9} {:<30} {what}", line.name)
}

/// `check` on one log: every record's checksum, the order of offsets, the indexes and a pending swap, as
/// its format checks them. It exits 0 when every record is intact, whatever a crash left for the next open to
/// repair, or names the first problem (exit 1). A Kafka partition also gets what its topic's settings predict
/// for the broker's cleaner.
///
/// # Errors
/// [`Failure::Corruption`] naming the file and position of the first problem; [`Failure::Usage`] for a
/// directory that holds no log of this format; as opening the partition.
fn check(dir: &Path, format: log_core::Format, rate: Option<&Arc<ReadRate>>, a: &CheckArgs) -> Result<(), Failure> {
    let checked = progress::during("check", true, |m| logcompact::check_limited(dir, format, rate, Some(m)));
    let mut report = match checked {
        Ok(report) => report,
        Err(e @ CheckError::Store { .. }) => {
            let CheckError::Store { source, .. } = &e else { return Err(Failure::Runtime(e.to_string())) };
            return Err(Failure::from_store(source, e.to_string()));
        }
        Err(CheckError::Problem { problem, .. }) => {
            if a.json
                && matches!(
                    problem.class,
                    log_core::check::ProblemClass::Corruption | log_core::check::ProblemClass::UnusableName
                )
            {
                // Damage, as `--data-dir --json` gives a damaged log's line: on standard output too. A failed
                // write does not change what the command reports, the damage.
                let _ = print_json(&serde_json::json!({ "problem": problem }));
            }
            return Err(check_failure(dir, format, &problem));
        }
        Err(e) => return Err(Failure::Runtime(e.to_string())),
    };
    if format == log_core::Format::Kafka {
        let source = a.broker.source(format)?;
        if let Some(note) = logcompact::predict_for_partition(dir, &mut report, a.config.as_deref(), &source) {
            crate::out::diag!("note: {note}");
        }
    }
    for n in &report.notices {
        crate::out::diag!("notice: {}: {}", shown(dir, &n.file), n.what);
    }
    for w in &report.warnings {
        crate::out::diag!("warning: {}: {}", shown(dir, &w.file), w.what);
    }
    if !a.json {
        return print_line(&verdict(dir, &report));
    }
    if format == log_core::Format::Native {
        return print_json(&report);
    }
    let mut value = serde_json::to_value(&report).map_err(|e| Failure::Runtime(e.to_string()))?;
    value["format"] = "kafka".into();
    print_json(&value)
}

/// What `check` found, for a person: the log's figures, then one verdict line.
///
/// ```text
/// /data/orders: 2 segments, 1536 records, 228.0 KiB; 1 index verified; cleaner checkpoint at offset 18964
/// check passed: every record of /data/orders is intact
/// ```
fn verdict(dir: &Path, r: &log_core::check::CheckReport) -> String {
    use log_core::human::{bytes, count};
    let mut figures =
        [count(r.segments, "segment", "segments"), count(r.records, "record", "records"), bytes(r.bytes)].join(", ");
    if r.indexes_verified > 0 || r.indexes_missing > 0 {
        figures.push_str(&format!("; {} verified", count(r.indexes_verified, "index", "indexes")));
        if r.indexes_missing > 0 {
            figures.push_str(&format!(" ({} missing, rebuilt on open)", r.indexes_missing));
        }
    }
    figures.push_str(&match r.checkpoint {
        Some(c) => format!("; cleaner checkpoint at offset {c}"),
        None => "; no cleaner checkpoint (never cleaned)".to_owned(),
    });
    if !r.other_files.is_empty() {
        figures.push_str(&format!(
            "; {} not part of the log, ignored",
            count(r.other_files.len() as u64, "file", "files")
        ));
    }
    let warned = if r.warnings.is_empty() {
        String::new()
    } else {
        format!(
            "; {} on standard error say what would stop Kafka's cleaner",
            count(r.warnings.len() as u64, "warning", "warnings")
        )
    };
    let last = if r.notices.is_empty() {
        format!("check passed: every record of {} is intact", dir.display())
    } else {
        format!(
            "check passed: every record of {} is intact; {} on standard error {} what a crash left, which the \
             next writable open repairs on its own",
            dir.display(),
            count(r.notices.len() as u64, "notice", "notices"),
            if r.notices.len() == 1 { "says" } else { "say" },
        )
    };
    format!("{}: {figures}\n{last}{warned}", dir.display())
}

/// A file a report names, the directory itself (`.`) as `dir`.
fn shown(dir: &Path, file: &str) -> String {
    if file == log_core::DIRECTORY { dir.display().to_string() } else { file.to_owned() }
}

/// The failure for a problem `check` found in `dir`.
fn check_failure(dir: &Path, format: log_core::Format, problem: &log_core::check::Problem) -> Failure {
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
        log_core::check::ProblemClass::AnotherFormat if format == log_core::Format::Native => {
            Failure::Usage(format!("{}: {} ({})", dir.display(), problem.what, crate::failure::KAFKA_HINT))
        }
        log_core::check::ProblemClass::AnotherFormat => Failure::Usage(format!(
            "{} is not a Kafka partition: {} (a log of this project's own format is checked without --format kafka)",
            dir.display(),
            problem.what
        )),
        log_core::check::ProblemClass::NotALog if format == log_core::Format::Kafka => {
            Failure::Usage(format!("{} is not a Kafka partition: {}", dir.display(), problem.what))
        }
        log_core::check::ProblemClass::NotALog => Failure::Usage(format!("{}: {}", dir.display(), problem.what)),
        log_core::check::ProblemClass::OtherFormat => Failure::Usage(format!("{}: {problem}", dir.display())),
        log_core::check::ProblemClass::Unreadable => Failure::Runtime(format!("check failed: {problem}")),
    }
}
