//! [`FileStore`]: a directory of segment files.

use std::collections::HashMap;
use std::fs::{self, File, TryLockError};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use log_core::storage::read_only_error;
use log_core::{Segment, SegmentStore};

use crate::error::{Error, Result};
use crate::segment::FileSegment;

/// Name of the lock file that earlier versions kept in a store's directory. The lock is now taken on the
/// directory itself (a file can be deleted under a running writer, the directory cannot), so the file is no
/// longer created; one left by an earlier version is not listed.
pub const LOCK_FILE: &str = "logcompact.lock";

/// How a [`FileStore`] opens its directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Changes allowed; the directory is locked exclusively (one writer at a time).
    ReadWrite,
    /// No change of any kind, no lock: works on a read-only mount, as a user who may only read, and beside a
    /// running writer. Readers that want a consistent view compare [`SegmentStore::file_id`]s (log-core's
    /// read-only open does).
    ReadOnly,
}

/// A [`SegmentStore`] over one directory.
///
/// Assumptions about the file system (see `docs/format.md`): `rename` within a directory is atomic and
/// replaces its target; `fsync` of a file makes its data durable and `fsync` of the directory makes creates,
/// renames and deletes durable; nobody else writes or truncates the files while the store is open (the
/// directory lock keeps other logcompact writers out; a mapped file truncated by someone else would fault).
///
/// The store hands out one handle per file: opening a name that is already open returns the same handle, so
/// a file that is sealed (memory-mapped) can never be written through a second handle of this process, and
/// the directory lock keeps every other writer (and every other writable store) out.
#[derive(Debug)]
pub struct FileStore {
    dir: PathBuf,
    access: Access,
    /// For a writable store, the directory held open with an exclusive `flock`: the lock lasts as long as
    /// the store and cannot be removed by deleting a file.
    _lock: Option<File>,
    /// For a store inside a Kafka broker's log directory opened for writing, the broker's lock on it.
    _broker: Option<Arc<crate::broker_lock::LogDirLock>>,
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
    /// Opens `dir` for reading and writing, creating it (and its parents) if missing, and locks it.
    ///
    /// # Errors
    /// [`Error::Locked`] when another writer holds the directory; [`Error::NotADirectory`]; [`Error::Io`].
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
        Self::open_existing(dir)
    }

    /// Opens the existing directory `dir` for reading and writing and locks it; nothing is created.
    ///
    /// # Errors
    /// [`Error::NotFound`] when `dir` does not exist; otherwise as [`FileStore::open`].
    pub fn open_existing(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = Self::existing_dir(dir.as_ref())?;
        refuse_metadata_log(&dir)?;
        Self::lock_existing(dir)
    }

    /// Locks the existing directory `dir` (already refused if it is the metadata log) for reading and writing.
    fn lock_existing(dir: PathBuf) -> Result<Self> {
        let lock = File::open(&dir).map_err(io_err("open directory", &dir))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Err(Error::Locked { dir }),
            Err(TryLockError::Error(e)) => return Err(io_err("lock", &dir)(e)),
        }
        Ok(FileStore {
            dir,
            access: Access::ReadWrite,
            _lock: Some(lock),
            _broker: None,
            handles: Mutex::new(HashMap::new()),
        })
    }

    /// Opens the existing partition directory `dir` of a Kafka broker's log directory (its parent) for
    /// writing: the broker's lock on the log directory is taken first ([`crate::lock_log_dir`]), then this
    /// store's own lock on `dir`. Both last as long as the store.
    ///
    /// # Errors
    /// [`Error::BrokerLocked`] while a broker (or another process) holds the log directory;
    /// [`Error::Locked`]; as [`FileStore::open_existing`].
    pub fn open_kafka_partition(dir: impl AsRef<Path>) -> Result<Self> {
        Self::open_kafka_partition_listed(dir.as_ref(), &list_names(dir.as_ref()))
    }

    /// As [`FileStore::open_kafka_partition`], with the names in `dir` its caller listed already (before
    /// anything was locked), so that the directory is not listed again to refuse the metadata log. `names` must
    /// be `dir`'s own listing (`logcompact::dir::Listing` is only ever read from its directory); the
    /// directory's name, links resolved, is checked whatever they hold.
    ///
    /// # Errors
    /// As [`FileStore::open_kafka_partition`].
    pub fn open_kafka_partition_listed(dir: &Path, names: &[String]) -> Result<Self> {
        let dir = Self::existing_dir(dir)?;
        if let Some(sign) = metadata_log_sign_in(&dir, names) {
            return Err(Error::MetadataLog { dir, sign });
        }
        let parent = log_dir_of(&dir)?;
        let given = given_log_dir(&dir)?;
        if given != parent {
            return Err(Error::OutsideLogDir { dir, given_log_dir: given, real_log_dir: parent });
        }
        let broker = crate::broker_lock::lock_log_dir(&parent)?;
        // Refused above as the metadata log or not: its listing is not read again.
        let mut store = Self::lock_existing(dir)?;
        store._broker = Some(broker);
        Ok(store)
    }

    /// Opens a broker's log directory `dir` for writing its checkpoint files, under the broker's lock `lock`
    /// (taken by [`crate::lock_log_dir`]); no lock of this store's own (partitions of the directory are locked
    /// each by their own store).
    ///
    /// # Errors
    /// As [`FileStore::open_existing`].
    pub fn open_log_dir(dir: impl AsRef<Path>, lock: Arc<crate::broker_lock::LogDirLock>) -> Result<Self> {
        let dir = Self::existing_dir(dir.as_ref())?;
        Ok(FileStore {
            dir,
            access: Access::ReadWrite,
            _lock: None,
            _broker: Some(lock),
            handles: Mutex::new(HashMap::new()),
        })
    }

    /// The broker's lock this store holds, if it was opened inside a broker's log directory.
    pub fn broker_lock(&self) -> Option<&Arc<crate::broker_lock::LogDirLock>> {
        self._broker.as_ref()
    }

    /// Opens the existing directory `dir` read-only: no lock is taken and nothing is ever created, changed or
    /// removed; every change fails with [`io::ErrorKind::PermissionDenied`].
    ///
    /// # Errors
    /// [`Error::NotFound`] or [`Error::NotADirectory`]; [`Error::Io`] when it cannot be read.
    pub fn open_read_only(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = Self::existing_dir(dir.as_ref())?;
        // Opened, not listed: a directory that cannot be read fails here, and its names are read when the log
        // asks for them.
        File::open(&dir).map_err(io_err("read directory", &dir))?;
        Ok(FileStore { dir, access: Access::ReadOnly, _lock: None, _broker: None, handles: Mutex::new(HashMap::new()) })
    }

    fn existing_dir(dir: &Path) -> Result<PathBuf> {
        match fs::metadata(dir) {
            Ok(m) if m.is_dir() => Ok(dir.to_path_buf()),
            Ok(_) => Err(Error::NotADirectory(dir.to_path_buf())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(Error::NotFound(dir.to_path_buf())),
            Err(e) => Err(io_err("stat", dir)(e)),
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// How the directory was opened.
    pub fn access(&self) -> Access {
        self.access
    }

    fn path(&self, name: &str) -> io::Result<PathBuf> {
        Ok(self.dir.join(checked(name)?))
    }

    fn writable(&self) -> io::Result<()> {
        match self.access {
            Access::ReadWrite => Ok(()),
            Access::ReadOnly => Err(read_only_error()),
        }
    }

    fn handles(&self) -> MutexGuard<'_, HashMap<String, Weak<FileSegment>>> {
        self.handles.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Refuses the KRaft metadata log: every writable store is opened through here, so no command of this
/// project (whatever its settings, flags or map) locks, writes, swaps or deletes anything in one. The
/// directory is recognised by its name (links resolved) and by the raft layer's files in it
/// ([`log_core::kafka::metadata_log::sign_of`]); an unlistable directory is left to the open that follows.
///
/// # Errors
/// [`Error::MetadataLog`] naming the directory and what shows it to be one.
pub fn refuse_metadata_log(dir: &Path) -> Result<()> {
    match metadata_log_sign(dir) {
        Some(sign) => Err(Error::MetadataLog { dir: dir.to_path_buf(), sign }),
        None => Ok(()),
    }
}

/// What shows `dir` to be a KRaft metadata log, if anything does (reads its listing only).
pub fn metadata_log_sign(dir: &Path) -> Option<log_core::kafka::metadata_log::MetadataLogSign> {
    metadata_log_sign_in(dir, &list_names(dir))
}

/// As [`metadata_log_sign`], from the listing `names` of `dir` already read.
pub fn metadata_log_sign_in(dir: &Path, names: &[String]) -> Option<log_core::kafka::metadata_log::MetadataLogSign> {
    let resolved = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let dir_name = resolved.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    log_core::kafka::metadata_log::sign_of(&dir_name, names.iter().map(String::as_str))
}

/// The names in `dir` (none when it cannot be listed).
pub fn list_names(dir: &Path) -> Vec<String> {
    match fs::read_dir(dir) {
        Ok(entries) => entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect(),
        Err(_) => Vec::new(),
    }
}

/// The log directory holding the partition directory `dir`: its parent, links resolved.
///
/// # Errors
/// [`Error::Io`] when `dir` cannot be resolved; [`Error::NotFound`] for a directory with no parent.
pub fn log_dir_of(dir: &Path) -> Result<PathBuf> {
    let full = dir.canonicalize().map_err(io_err("resolve", dir))?;
    full.parent().map(Path::to_path_buf).ok_or_else(|| Error::NotFound(full.join("..")))
}

/// The log directory `dir` was given in: the parent of its path as written (made absolute, `.` removed),
/// links resolved; unlike [`log_dir_of`], a symbolic link in `dir`'s last component is not followed.
fn given_log_dir(dir: &Path) -> Result<PathBuf> {
    let absolute = std::path::absolute(dir).map_err(io_err("resolve", dir))?;
    let parent = absolute.parent().ok_or_else(|| Error::NotFound(absolute.join("..")))?;
    parent.canonicalize().map_err(io_err("resolve", parent))
}

/// Refuses anything but a regular file: a symbolic link or a directory under a segment's name is never
/// followed or read as a segment.
fn regular_file(path: &Path) -> io::Result<fs::Metadata> {
    let meta = fs::symlink_metadata(path)?;
    if meta.file_type().is_file() {
        Ok(meta)
    } else {
        let what = if meta.file_type().is_symlink() { "a symbolic link" } else { "not a regular file" };
        Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{} is {what}", path.display())))
    }
}

impl FileStore {
    /// Creates `name` (failing if it exists) and hands out its one handle: a bulk copy's (`copy`) or not.
    fn create_as(&self, name: &str, copy: bool) -> io::Result<Arc<dyn Segment>> {
        self.writable()?;
        let path = self.path(name)?;
        let mut handles = self.handles();
        let file = File::options().read(true).write(true).create_new(true).open(&path)?;
        let id = file.metadata()?.ino();
        let segment = Arc::new(if copy {
            FileSegment::new_copy(file, path, id)
        } else {
            FileSegment::new(file, path, 0, id, false)
        });
        handles.insert(name.to_owned(), Arc::downgrade(&segment));
        Ok(segment)
    }
}

impl SegmentStore for FileStore {
    fn create(&self, name: &str) -> io::Result<Arc<dyn Segment>> {
        self.create_as(name, false)
    }

    /// As [`FileStore::create`], the file written past the page cache where the file system allows it (see
    /// `direct.rs`).
    fn create_copy(&self, name: &str) -> io::Result<Arc<dyn Segment>> {
        self.create_as(name, true)
    }

    fn open(&self, name: &str) -> io::Result<Arc<dyn Segment>> {
        let path = self.path(name)?;
        let mut handles = self.handles();
        // A live handle is the file only while the name still refers to it: a reader's store can see a writer
        // in another process rename a new file over the name.
        if let Some(live) = handles.get(name).and_then(Weak::upgrade)
            && regular_file(&path).is_ok_and(|m| m.ino() == live.file_id())
        {
            return Ok(live);
        }
        let read_only = self.access == Access::ReadOnly;
        // `open` follows symbolic links, so the name is checked before and the file after: when both are the
        // same regular file, that is what was opened. A file renamed over the name in between (a writer's
        // checkpoint, say) makes them differ; trying again then opens the new one.
        for _ in 0..8 {
            let before = regular_file(&path)?;
            let file = File::options().read(true).write(!read_only).open(&path)?;
            let meta = file.metadata()?;
            if meta.ino() == before.ino() && meta.dev() == before.dev() {
                let segment = Arc::new(FileSegment::new(file, path, meta.len(), meta.ino(), read_only));
                handles.retain(|_, h| h.strong_count() > 0);
                handles.insert(name.to_owned(), Arc::downgrade(&segment));
                return Ok(segment);
            }
        }
        Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{} keeps changing while opening", path.display())))
    }

    fn list(&self) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(&self.dir)? {
            let entry = entry?;
            // Names that are not UTF-8 cannot be any of the log's names.
            if let Ok(name) = entry.file_name().into_string()
                && name != LOCK_FILE
            {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    fn file_id(&self, name: &str) -> io::Result<u64> {
        Ok(regular_file(&self.path(name)?)?.ino())
    }

    fn is_read_only(&self) -> bool {
        self.access == Access::ReadOnly
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        self.writable()?;
        let mut handles = self.handles();
        fs::rename(self.path(from)?, self.path(to)?)?;
        match handles.remove(from) {
            Some(h) => handles.insert(to.to_owned(), h),
            None => handles.remove(to),
        };
        Ok(())
    }

    fn delete(&self, name: &str) -> io::Result<()> {
        self.writable()?;
        let mut handles = self.handles();
        fs::remove_file(self.path(name)?)?;
        handles.remove(name);
        Ok(())
    }

    fn sync_dir(&self) -> io::Result<()> {
        self.writable()?;
        File::open(&self.dir)?.sync_all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_is_locked_out_even_without_a_lock_file() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let first = FileStore::open(tmp.path()).expect("first writer");
        assert!(matches!(FileStore::open_existing(tmp.path()), Err(Error::Locked { .. })));
        // Nothing in the directory to delete to get around the lock.
        assert_eq!(first.list().expect("list"), Vec::<String>::new());
        assert!(FileStore::open_read_only(tmp.path()).is_ok(), "readers take no lock");
        drop(first);
        assert!(FileStore::open_existing(tmp.path()).is_ok(), "the lock goes with the store");
    }

    #[test]
    fn a_read_only_store_changes_nothing() {
        let tmp = tempfile::tempdir().expect("tempdir");
        {
            let w = FileStore::open(tmp.path()).expect("writer");
            w.create("a").expect("create").append(b"abc").expect("append");
        }
        let r = FileStore::open_read_only(tmp.path()).expect("reader");
        assert!(r.is_read_only());
        let denied = |e: io::Error| e.kind() == io::ErrorKind::PermissionDenied;
        assert!(r.create("b").err().is_some_and(denied));
        assert!(r.rename("a", "b").err().is_some_and(denied));
        assert!(r.delete("a").err().is_some_and(denied));
        assert!(r.sync_dir().err().is_some_and(denied));
        let a = r.open("a").expect("open");
        assert!(a.append(b"x").err().is_some_and(denied));
        assert!(a.truncate(0).err().is_some_and(denied));
        assert!(a.sync().err().is_some_and(denied));
        let mut out = [0u8; 3];
        a.read_at(0, &mut out).expect("read");
        assert_eq!(&out, b"abc");
        assert_eq!(r.list().expect("list"), vec!["a".to_owned()]);
        assert!(matches!(FileStore::open_read_only(tmp.path().join("missing")), Err(Error::NotFound(_))));
    }

    #[test]
    fn symbolic_links_are_listed_but_never_opened() {
        let tmp = tempfile::tempdir().expect("tempdir");
        std::fs::write(tmp.path().join("target"), b"x").expect("write");
        std::os::unix::fs::symlink(tmp.path().join("target"), tmp.path().join("00000000000000000000.log"))
            .expect("symlink");
        let s = FileStore::open(tmp.path()).expect("open");
        assert!(s.list().expect("list").contains(&"00000000000000000000.log".to_owned()));
        assert_eq!(s.open("00000000000000000000.log").err().map(|e| e.kind()), Some(io::ErrorKind::InvalidInput));
        assert!(s.file_id("00000000000000000000.log").is_err());
    }

    #[test]
    fn file_ids_follow_renames_and_differ_for_a_new_file() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let s = FileStore::open(tmp.path()).expect("open");
        let a = s.create("a").expect("create");
        let id = s.file_id("a").expect("id");
        assert_eq!(a.file_id(), id);
        s.rename("a", "b").expect("rename");
        assert_eq!(s.file_id("b").expect("id"), id);
        let _c = s.create("a").expect("create again");
        assert_ne!(s.file_id("a").expect("id"), id);
    }
}
