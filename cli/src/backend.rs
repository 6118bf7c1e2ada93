//! Choosing and opening the storage backend and the log on it.

use std::path::Path;
use std::sync::Arc;

use log_core::layout::Layout;
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
    match e {
        storage_file::Error::NotFound(_) | storage_file::Error::NotADirectory(_) => Failure::Usage(e.to_string()),
        _ => Failure::Runtime(e.to_string()),
    }
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

/// Opens the existing directory `dir` for writing, refusing one that holds no log: commands that change a
/// log (`compact`, `repair`) never create one.
///
/// # Errors
/// [`Failure::Usage`] when `dir` is missing or holds no log; [`Failure::Runtime`] when it cannot be opened or
/// another writer holds it.
pub fn open_existing_store(dir: &Path) -> Result<Arc<dyn SegmentStore>, Failure> {
    let store: Arc<dyn SegmentStore> = Arc::new(storage_file::FileStore::open_existing(dir).map_err(store_failure)?);
    refuse_empty(dir, &*store)?;
    Ok(store)
}

/// Opens `dir` read-only: no lock, nothing created or changed.
///
/// # Errors
/// [`Failure::Usage`] when `dir` is missing; [`Failure::Runtime`] when it cannot be read.
pub fn open_read_only_store(dir: &Path) -> Result<Arc<dyn SegmentStore>, Failure> {
    Ok(Arc::new(storage_file::FileStore::open_read_only(dir).map_err(store_failure)?))
}

/// Refuses a store that holds no log, or a log of another format.
///
/// # Errors
/// [`Failure::Usage`] saying what the directory holds instead.
pub fn refuse_empty(dir: &Path, store: &dyn SegmentStore) -> Result<(), Failure> {
    let layout = Layout::scan(store).map_err(|e| Failure::from_log("cannot list the directory", &e))?;
    if let Some(found) = layout.foreign_format(store) {
        return Err(Failure::Usage(format!(
            "{} is not a logcompact log: it holds {found}{}",
            dir.display(),
            if found.contains("of magic 0") || found.contains("of magic 1") {
                String::new()
            } else {
                format!(" ({})", crate::failure::KAFKA_HINT)
            }
        )));
    }
    if layout.has_no_segments() {
        return Err(Failure::Usage(format!("{} holds no log: {}", dir.display(), layout.describe())));
    }
    Ok(())
}

pub use logcompact::describe_recovery;

/// Opens a log on `store` for writing, reporting on standard error what recovery repaired.
///
/// # Errors
/// [`Failure::Corruption`] when stored data is damaged (nothing is changed then); [`Failure::Runtime`] when
/// the log cannot be opened.
pub fn open_log(store: Arc<dyn SegmentStore>, config: LogConfig) -> Result<Log, Failure> {
    let log = Log::open(store, config).map_err(|e| Failure::from_log("cannot open the log", &e))?;
    for line in describe_recovery(log.recovery_report(), true) {
        eprintln!("{line}");
    }
    Ok(log)
}

/// Opens a log on `store` for reading only.
///
/// # Errors
/// As [`open_log`]; [`Failure::Usage`] when the store holds no log of this format.
pub fn open_log_read_only(store: Arc<dyn SegmentStore>) -> Result<Log, Failure> {
    Log::open_read_only(store, LogConfig::default()).map_err(|e| Failure::from_log("cannot read the log", &e))
}
