//! `logcompact repair`: what a repair of a damaged log would drop, or with `--apply` the repair.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use log_core::repair::RepairAction;

use crate::args::FormatArg;
use crate::failure::Failure;
use crate::hints::format_flag;
use crate::out::{QuietPipe, print_json, write_failed};

/// `repair`'s arguments.
#[derive(Debug, Args)]
pub struct RepairArgs {
    /// The log's directory.
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// The directory's format
    ///
    /// A native log, or a Kafka partition directory of a stopped broker (repaired under the broker's lock; cut
    /// segments get their .index and .timeindex rewritten).
    #[arg(long, value_enum, default_value_t = FormatArg::Native)]
    format: FormatArg,
    /// Carry the repair out (without it, only show what it would drop).
    #[arg(long)]
    apply: bool,
    /// Print the plan as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `repair`.
///
/// # Errors
/// As [`repair`].
pub fn run(a: &RepairArgs) -> Result<(), Failure> {
    crate::mistakes::one_log(&a.dir, a.format.into(), "repair", None)?;
    repair(&a.dir, a.format.into(), a.apply, a.json)
}

fn describe(action: &RepairAction) -> String {
    match action {
        RepairAction::CutRanges { segment, ranges, offsets, bytes, records_kept, active } => {
            // Each range with what it drops by offset: what the operator loses, not only where.
            let list: Vec<String> = ranges
                .iter()
                .enumerate()
                .map(|(i, (s, e))| {
                    let held = offsets.get(i).map_or_else(|| "offsets unknown".to_owned(), |o| o.describe());
                    format!("bytes {s}..{e}: {held}")
                })
                .collect();
            let which = if *active { "active segment" } else { "segment" };
            format!(
                "cut {} of damage from {which} {segment}, keeping its {records_kept} valid records; it drops {}",
                log_core::human::bytes(*bytes),
                list.join("; ")
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
fn repair(dir: &Path, format: log_core::Format, apply: bool, as_json: bool) -> Result<(), Failure> {
    let meter = std::sync::Arc::new(logcompact::progress::Meter::staged());
    let progress = crate::progress::Reporter::start("repair", std::sync::Arc::clone(&meter));
    let done = logcompact::repair_metered(dir, format, apply, Some(&meter));
    progress.finish();
    let done = done.map_err(|e| match e {
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
