//! Choosing and opening the storage backend and the log on it.

use std::path::Path;
use std::sync::Arc;

use log_core::{Log, LogConfig, SegmentStore};

use crate::failure::Failure;

/// Which backend holds the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// In memory: gone when the command ends.
    Mem,
    /// Files in the directory given by --dir, memory-mapped once sealed.
    File,
}

fn store_failure(e: storage_file::Error) -> Failure {
    Failure::from_store(&e, e.to_string())
}

/// Opens the store for `backend`; the file backend needs `dir`, which is created if missing (for commands
/// whose job is to write a log: `run`, `gen`).
///
/// # Errors
/// [`Failure::Usage`] when `--dir` is missing or given to the memory backend; [`Failure::Runtime`] when the
/// directory cannot be opened or another writer holds it.
pub fn open_store(backend: Backend, dir: Option<&Path>) -> Result<Arc<dyn SegmentStore>, Failure> {
    match (backend, dir) {
        (Backend::Mem, None) => Ok(Arc::new(storage_mem::MemStore::new())),
        (Backend::Mem, Some(_)) => Err(Failure::Usage("--dir needs --backend file".into())),
        (Backend::File, Some(dir)) => Ok(Arc::new(storage_file::FileStore::open(dir).map_err(store_failure)?)),
        (Backend::File, None) => Err(Failure::Usage("--backend file needs --dir DIR".into())),
    }
}

pub use logcompact::describe_recovery;

/// Opens a log on `store` for writing, reporting on standard error what recovery repaired.
///
/// # Errors
/// [`Failure::Corruption`] when stored data is damaged (nothing is changed then); [`Failure::Runtime`] when
/// the log cannot be opened.
pub fn open_log(store: Arc<dyn SegmentStore>, config: LogConfig) -> Result<Log, Failure> {
    let log = Log::open(store, log_core::OpenOptions::new(config))
        .map_err(|e| Failure::from_log("cannot open the log", &e))?;
    for line in describe_recovery(log.recovery_report(), true) {
        crate::out::diag!("{line}");
    }
    Ok(log)
}
