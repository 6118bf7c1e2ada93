//! `check`: a read-only verification of every checksum and invariant of a log directory of either format
//! ([`log_core::check`]): no lock taken, nothing created, written or mapped that a writer may change, so it works
//! beside a running writer and on a read-only mount.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use log_core::Format;
use log_core::check::{CheckReport, Problem};

/// Why a check could not pass.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
    /// The directory cannot be opened as a store (missing, not a directory, unreadable).
    #[error("{}: {source}", dir.display())]
    Store {
        /// The directory.
        dir: PathBuf,
        /// What the backend said.
        #[source]
        source: storage_file::Error,
    },
    /// The first problem found (its class says whether it is damage, no log at all, or unreadable).
    #[error("{}: {problem}", dir.display())]
    Problem {
        /// The directory.
        dir: PathBuf,
        /// The problem.
        problem: Problem,
    },
}

/// Verifies the log in `dir` of `format` without changing anything: every batch's checksum, its records, the
/// order of offsets, the indexes, a pending swap and the checkpoint. A report is returned when every record
/// is intact, with notices for what a crash left for the next writable open to repair.
///
/// # Errors
/// [`CheckError`]: the directory cannot be opened, or the first problem found.
pub fn check(dir: &Path, format: Format) -> Result<CheckReport, CheckError> {
    let store_error = |source| CheckError::Store { dir: dir.to_path_buf(), source };
    let problem = |problem| CheckError::Problem { dir: dir.to_path_buf(), problem };
    match format {
        Format::Native => {
            let store = storage_file::FileStore::open_read_only(dir).map_err(store_error)?;
            log_core::check::check_store(Arc::new(store)).map_err(problem)
        }
        Format::Kafka => {
            let stores = storage_file::kafka::open_read_only(dir).map_err(store_error)?;
            log_core::check::check_kafka(stores.partition, stores.checkpoint).map_err(problem)
        }
    }
}
