//! Choosing and opening the storage backend.

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

/// Opens the store for `backend`; the file backend needs `dir`.
///
/// # Errors
/// [`Failure::Usage`] when `--dir` is missing or given to the memory backend; [`Failure::Runtime`] when the
/// directory cannot be opened or is locked.
pub fn open_store(backend: Backend, dir: Option<&Path>) -> Result<Arc<dyn SegmentStore>, Failure> {
    match (backend, dir) {
        (Backend::Mem, None) => Ok(Arc::new(storage_mem::MemStore::new())),
        (Backend::Mem, Some(_)) => Err(Failure::Usage("--dir needs --backend file".into())),
        (Backend::File, Some(dir)) => {
            let store = storage_file::FileStore::open(dir).map_err(|e| Failure::Runtime(e.to_string()))?;
            Ok(Arc::new(store))
        }
        (Backend::File, None) => Err(Failure::Usage("--backend file needs --dir DIR".into())),
    }
}

/// Opens the log in directory `dir`, reporting on standard error what recovery repaired.
///
/// # Errors
/// As [`open_store`]; [`Failure::Runtime`] when the log cannot be opened (corruption names file and position).
pub fn open_dir_log(dir: &Path, config: LogConfig) -> Result<Log, Failure> {
    open_log(open_store(Backend::File, Some(dir))?, config)
}

/// Opens a log on `store`, reporting on standard error what recovery repaired.
///
/// # Errors
/// [`Failure::Runtime`] when the log cannot be opened.
pub fn open_log(store: Arc<dyn SegmentStore>, config: LogConfig) -> Result<Log, Failure> {
    let log = Log::open(store, config).map_err(|e| Failure::Runtime(format!("cannot open the log: {e}")))?;
    let r = log.recovery_report();
    if let Some((name, at, dropped, kind)) = &r.truncated_tail {
        eprintln!("recovery: cut {dropped} bytes off {name} at byte {at} ({kind})");
    }
    if r.swaps_completed > 0 {
        eprintln!("recovery: completed an interrupted cleaning swap ({} segments)", r.swaps_completed);
    }
    if r.cleaned_files_discarded > 0 {
        eprintln!("recovery: rolled back an interrupted cleaning swap ({} files)", r.cleaned_files_discarded);
    }
    Ok(log)
}
