//! `logcompact roll`: seals the active segment of the log in a directory.

use std::path::PathBuf;

use clap::Args;
use log_core::LogConfig;

use crate::args::FormatArg;
use crate::backend::describe_recovery;
use crate::failure::Failure;

/// `roll`'s arguments.
#[derive(Debug, Args)]
pub struct RollArgs {
    /// The log's directory.
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// The directory's format.
    #[arg(long, value_enum, default_value_t = FormatArg::Native)]
    format: FormatArg,
}

/// Seals the active segment of the log in the directory.
///
/// # Errors
/// As opening the log; [`Failure::Runtime`] when the roll fails.
pub fn run(a: &RollArgs) -> Result<(), Failure> {
    let opened =
        logcompact::open_writable(&a.dir, a.format.into(), LogConfig::default()).map_err(|e| Failure::from_open(&e))?;
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
