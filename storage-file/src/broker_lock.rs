//! The lock a Kafka broker holds on each of its log directories: the file `.lock` at the directory's root,
//! locked with Java's `FileChannel.tryLock`, which on Linux is a POSIX `fcntl` record lock on the whole file
//! (an `flock` neither sees it nor blocks it). A process that rewrites a broker's partitions takes the same
//! lock, so that it runs only while no broker does, and no broker can start while it runs (the broker fails
//! to lock and stops).
//!
//! `fcntl` locks belong to the process, not to a file handle, and every close of any handle on the file
//! releases them: so this process opens each `.lock` once, and every partition of one log directory shares
//! that one handle ([`lock_log_dir`] hands out the same [`LogDirLock`] while it lives). Like a broker that
//! crashed, the file is left in place when the lock is released (deleting it could let two processes lock
//! two different files of one name).

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use rustix::fs::FlockOperation;

use crate::error::{Error, Result};

/// Name of the lock file at the root of a broker's log directory.
pub const BROKER_LOCK_FILE: &str = ".lock";

/// A held lock on a log directory; released when the last clone is dropped.
#[derive(Debug)]
pub struct LogDirLock {
    path: PathBuf,
    _file: File,
}

impl LogDirLock {
    /// The `.lock` file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A log directory by its device and inode.
type DirKey = (u64, u64);

/// The locks this process holds, by log directory.
static HELD: Mutex<Option<HashMap<DirKey, Weak<LogDirLock>>>> = Mutex::new(None);

/// Takes the broker's lock on the log directory `dir` (creating `.lock` as a broker does when it is missing),
/// or returns the lock this process already holds on it.
///
/// # Errors
/// [`Error::BrokerLocked`] when another process holds it; [`Error::NotFound`]; [`Error::Io`].
pub fn lock_log_dir(dir: &Path) -> Result<Arc<LogDirLock>> {
    let meta = std::fs::metadata(dir).map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => Error::NotFound(dir.to_path_buf()),
        _ => Error::Io { op: "stat", path: dir.to_path_buf(), source },
    })?;
    if !meta.is_dir() {
        return Err(Error::NotADirectory(dir.to_path_buf()));
    }
    let key = (meta.dev(), meta.ino());
    let mut held = HELD.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let map = held.get_or_insert_with(HashMap::new);
    map.retain(|_, w| w.strong_count() > 0);
    if let Some(lock) = map.get(&key).and_then(Weak::upgrade) {
        return Ok(lock);
    }
    let path = dir.join(BROKER_LOCK_FILE);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|source| Error::Io { op: "open", path: path.clone(), source })?;
    match rustix::fs::fcntl_lock(&file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(e) if e == rustix::io::Errno::AGAIN || e == rustix::io::Errno::ACCESS => {
            return Err(Error::BrokerLocked { lock_file: path });
        }
        Err(e) => return Err(Error::Io { op: "lock", path, source: e.into() }),
    }
    let lock = Arc::new(LogDirLock { path, _file: file });
    map.insert(key, Arc::downgrade(&lock));
    Ok(lock)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_process_shares_one_lock_per_directory() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let a = lock_log_dir(tmp.path()).expect("lock");
        let b = lock_log_dir(tmp.path()).expect("again");
        assert!(Arc::ptr_eq(&a, &b), "one handle per directory, or a close would release the process's lock");
        assert!(tmp.path().join(BROKER_LOCK_FILE).is_file());
        drop((a, b));
        assert!(tmp.path().join(BROKER_LOCK_FILE).is_file(), "the file stays, as a crashed broker leaves it");
        let c = lock_log_dir(tmp.path()).expect("taken anew");
        drop(c);
    }
}
