//! `logcompact check`: verifies every checksum and invariant of the log in a directory without changing
//! anything.

use std::path::{Path, PathBuf};

use clap::Args;
use logcompact::check::CheckError;

use crate::args::FormatArg;
use crate::failure::Failure;
use crate::hints::format_flag;
use crate::out::print_json;

/// `check`'s arguments.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The log's directory.
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// The directory's format.
    #[arg(long, value_enum, default_value_t = FormatArg::Native)]
    format: FormatArg,
}

/// Runs `check` on the directory, as its format checks.
///
/// # Errors
/// As [`check`] and [`check_kafka`].
pub fn run(a: &CheckArgs) -> Result<(), Failure> {
    match a.format {
        FormatArg::Kafka => check_kafka(&a.dir),
        FormatArg::Native => check(&a.dir),
    }
}

/// Verifies the log in `dir` without changing it; prints a JSON report (exit 0 when every record is intact,
/// whatever a crash left for the next open to repair), or the first problem (exit 1).
///
/// # Errors
/// [`Failure::Corruption`] naming the file and position of the first problem; [`Failure::Usage`] for a
/// directory that holds no log of this format.
fn check(dir: &Path) -> Result<(), Failure> {
    match logcompact::check::check(dir, log_core::Format::Native) {
        Ok(report) => {
            for n in &report.notices {
                crate::out::diag!("notice: {}: {}", shown(dir, &n.file), n.what);
            }
            print_json(&report)
        }
        Err(CheckError::Store { source, .. }) => Err(Failure::from_store(&source, source.to_string())),
        Err(CheckError::Problem { problem, .. }) => Err(check_failure(dir, log_core::Format::Native, &problem)),
        Err(e) => Err(Failure::Runtime(e.to_string())),
    }
}

/// `check --format kafka`: every batch's CRC, its records and the order of offsets, and a pending swap.
///
/// # Errors
/// As opening the partition; [`Failure::Corruption`] naming the file and byte of the first damaged batch.
fn check_kafka(dir: &Path) -> Result<(), Failure> {
    match logcompact::check::check(dir, log_core::Format::Kafka) {
        Ok(report) => {
            for n in &report.notices {
                crate::out::diag!("notice: {}: {}", shown(dir, &n.file), n.what);
            }
            let mut value = serde_json::to_value(&report).map_err(|e| Failure::Runtime(e.to_string()))?;
            value["format"] = "kafka".into();
            print_json(&value)
        }
        Err(e @ CheckError::Store { .. }) => {
            let CheckError::Store { source, .. } = &e else { return Err(Failure::Runtime(e.to_string())) };
            Err(Failure::from_store(source, e.to_string()))
        }
        Err(CheckError::Problem { problem, .. }) if problem.class == log_core::check::ProblemClass::NotALog => {
            Err(Failure::Usage(format!("{} is not a Kafka partition: {}", dir.display(), problem.what)))
        }
        Err(CheckError::Problem { problem, .. }) => Err(check_failure(dir, log_core::Format::Kafka, &problem)),
        Err(e) => Err(Failure::Runtime(e.to_string())),
    }
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
