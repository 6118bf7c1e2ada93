//! [`FileStore`]: a directory of segment files.

use std::collections::HashMap;
use std::fs::{self, File, TryLockError};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use log_core::{Segment, SegmentStore};

use crate::error::{Error, Result};
use crate::segment::FileSegment;

/// Name of the lock file in a store's directory.
pub const LOCK_FILE: &str = "logcompact.lock";

/// A [`SegmentStore`] over one directory.
///
/// Assumptions about the file system (see `docs/format.md`): `rename` within a directory is atomic and
/// replaces its target; `fsync` of a file makes its data durable and `fsync` of the directory makes creates,
/// renames and deletes durable; nobody else writes or truncates the files while the store is open (the lock
/// file keeps other logcompact processes out; a mapped file truncated by someone else would fault).
///
/// The store hands out one handle per file: opening a name that is already open returns the same handle, so
/// a file that is sealed (memory-mapped) can never be written through a second handle of this process, and
/// the directory lock keeps every other process (and every other store) out.
#[derive(Debug)]
pub struct FileStore {
    dir: PathBuf,
    /// Held open for the lifetime of the store: its exclusive lock is the directory lock.
    _lock: File,
    /// Live handles by file name.
    handles: Mutex<HashMap<String, Weak<FileSegment>>>,
}

fn io_err<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> Error + 'a {
    move |source| Error::Io { op, path: path.to_owned(), source }
}

/// Refuses names that would leave the directory.
fn checked(name: &str) -> io::Result<&str> {
    let bad = name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']);
    if bad {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("invalid file name {name:?}")));
    }
    Ok(name)
}

impl FileStore {
    /// Opens `dir` as a store, creating it (and its parents) if missing, and locks it.
    ///
    /// # Errors
    /// [`Error::Locked`] when another store holds the directory; [`Error::NotADirectory`]; [`Error::Io`].
    pub fn open(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        if dir.exists() && !dir.is_dir() {
            return Err(Error::NotADirectory(dir));
        }
        let existed = dir.exists();
        fs::create_dir_all(&dir).map_err(io_err("create directory", &dir))?;
        if !existed && let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            // Make the new directory's own name durable.
            File::open(parent).and_then(|f| f.sync_all()).map_err(io_err("sync directory", parent))?;
        }
        let lock_path = dir.join(LOCK_FILE);
        let lock = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(io_err("open lock file", &lock_path))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Err(Error::Locked { dir, lock: lock_path }),
            Err(TryLockError::Error(e)) => return Err(io_err("lock", &lock_path)(e)),
        }
        Ok(FileStore { dir, _lock: lock, handles: Mutex::new(HashMap::new()) })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, name: &str) -> io::Result<PathBuf> {
        Ok(self.dir.join(checked(name)?))
    }

    fn handles(&self) -> MutexGuard<'_, HashMap<String, Weak<FileSegment>>> {
        self.handles.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl SegmentStore for FileStore {
    fn create(&self, name: &str) -> io::Result<Arc<dyn Segment>> {
        let path = self.path(name)?;
        let mut handles = self.handles();
        let file = File::options().read(true).write(true).create_new(true).open(&path)?;
        let segment = Arc::new(FileSegment::new(file, path, 0));
        handles.insert(name.to_owned(), Arc::downgrade(&segment));
        Ok(segment)
    }

    fn open(&self, name: &str) -> io::Result<Arc<dyn Segment>> {
        let path = self.path(name)?;
        let mut handles = self.handles();
        if let Some(live) = handles.get(name).and_then(Weak::upgrade) {
            return Ok(live);
        }
        let file = File::options().read(true).write(true).open(&path)?;
        let len = file.metadata()?.len();
        let segment = Arc::new(FileSegment::new(file, path, len));
        handles.retain(|_, h| h.strong_count() > 0);
        handles.insert(name.to_owned(), Arc::downgrade(&segment));
        Ok(segment)
    }

    fn list(&self) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(&self.dir)? {
            let entry = entry?;
            if entry.file_type()?.is_file()
                && let Ok(name) = entry.file_name().into_string()
                && name != LOCK_FILE
            {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let mut handles = self.handles();
        fs::rename(self.path(from)?, self.path(to)?)?;
        match handles.remove(from) {
            Some(h) => handles.insert(to.to_owned(), h),
            None => handles.remove(to),
        };
        Ok(())
    }

    fn delete(&self, name: &str) -> io::Result<()> {
        let mut handles = self.handles();
        fs::remove_file(self.path(name)?)?;
        handles.remove(name);
        Ok(())
    }

    fn sync_dir(&self) -> io::Result<()> {
        File::open(&self.dir)?.sync_all()
    }
}
