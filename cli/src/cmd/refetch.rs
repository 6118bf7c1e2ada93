//! `logcompact refetch`: Kafka's remedy for a replica that disagrees with the others (`audit --compare` names
//! it): with the broker stopped, its partition directory moves out of the log directory, so that the broker
//! fetches the partition again from the leader at its next start.

use std::path::PathBuf;

use clap::Args;
use logcompact::{RefetchError, RefetchRequest, refetch};

use crate::failure::{BROKER_LOCK_HINT, Failure};
use crate::out::print_line;

/// `refetch`'s arguments.
#[derive(Debug, Args)]
pub struct RefetchArgs {
    /// The stopped broker's log directory holding the partition.
    #[arg(long, value_name = "DIR")]
    data_dir: PathBuf,
    /// The partition (`<topic>-<partition>`).
    #[arg(long, value_name = "NAME")]
    partition: String,
    /// Where its directory goes: outside every log directory of the broker, on the same file system. Nothing is
    /// deleted; the moved directory keeps every byte.
    #[arg(long, value_name = "DIR")]
    to: PathBuf,
}

/// Runs `refetch`.
///
/// # Errors
/// [`Failure`]: usage for a request refused, runtime for a broker holding the directory or an I/O error.
pub fn run(a: &RefetchArgs) -> Result<(), Failure> {
    let req = RefetchRequest { log_dir: a.data_dir.clone(), partition: a.partition.clone(), to: a.to.clone() };
    let done = refetch(&req).map_err(|e| match e {
        RefetchError::Busy { .. } => Failure::Runtime(format!("{e} {BROKER_LOCK_HINT}")),
        RefetchError::Io { .. } | RefetchError::Checkpoint { .. } => Failure::Runtime(e.to_string()),
        e => Failure::Usage(e.to_string()),
    })?;
    let edited = if done.checkpoints.is_empty() { "none".to_owned() } else { done.checkpoints.join(", ") };
    print_line(&format!(
        "refetch: moved {} to {} (its lines left: {edited}). Start the broker: it fetches {} again from the leader; \
         audit again once it is back in sync.",
        a.data_dir.join(&a.partition).display(),
        done.moved_to.display(),
        a.partition
    ))
}
