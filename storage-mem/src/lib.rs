//! `storage-mem`: the in-memory backend of logcompact.
//!
//! [`MemStore`] keeps every file as a `Vec<u8>` in a map of names. Sealing a segment moves its bytes into a
//! shared buffer, so the view handed to the cleaner and to readers is zero-copy. Syncs are no-ops: nothing
//! survives the process. Tests and the `logcompact run` default use it; the crash-simulating store of the
//! file backend's tests builds on it.
//!
//! With the `crash-sim` feature, the `crash` module adds `CrashStore`, a backend that models a page cache
//! over a disk (live and durable images of files and names) and crashes at a chosen sync point, and the
//! `fault` module adds `FaultStore`, a wrapper over any store that fails one chosen operation.
//!
//! # Example
//! ```
//! use log_core::{SegmentStore, Segment};
//! let store = storage_mem::MemStore::new();
//! let seg = store.create("00000000000000000000.log")?;
//! seg.append(b"hello")?;
//! seg.seal()?;
//! assert_eq!(&*seg.view()?, b"hello");
//! # Ok::<(), std::io::Error>(())
//! ```
#![deny(missing_docs)]

use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use log_core::storage::{not_sealed_error, sealed_error};
use log_core::{Segment, SegmentBytes, SegmentStore};

#[cfg(feature = "crash-sim")]
pub mod crash;
#[cfg(feature = "crash-sim")]
pub mod fault;

/// Fills `out` from `bytes` at `pos`, the bounds rule of [`Segment::read_at`] for every in-memory file.
pub(crate) fn copy_out(bytes: &[u8], pos: u64, out: &mut [u8]) -> io::Result<()> {
    let start = usize::try_from(pos).map_err(|_| io::ErrorKind::UnexpectedEof)?;
    let src = start.checked_add(out.len()).and_then(|end| bytes.get(start..end)).ok_or(io::ErrorKind::UnexpectedEof)?;
    out.copy_from_slice(src);
    Ok(())
}

/// An in-memory [`SegmentStore`].
#[derive(Debug, Default)]
pub struct MemStore {
    files: Mutex<BTreeMap<String, Arc<MemSegment>>>,
}

impl MemStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn files(&self) -> MutexGuard<'_, BTreeMap<String, Arc<MemSegment>>> {
        self.files.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn not_found(name: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("no file named {name:?}"))
}

impl SegmentStore for MemStore {
    fn create(&self, name: &str) -> io::Result<Arc<dyn Segment>> {
        let mut files = self.files();
        if files.contains_key(name) {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("{name:?} exists")));
        }
        let seg = Arc::new(MemSegment::default());
        files.insert(name.to_owned(), Arc::clone(&seg));
        Ok(seg)
    }

    fn open(&self, name: &str) -> io::Result<Arc<dyn Segment>> {
        let files = self.files();
        let seg = files.get(name).ok_or_else(|| not_found(name))?;
        Ok(Arc::clone(seg) as Arc<dyn Segment>)
    }

    fn list(&self) -> io::Result<Vec<String>> {
        Ok(self.files().keys().cloned().collect())
    }

    fn file_id(&self, name: &str) -> io::Result<u64> {
        self.files().get(name).map(|f| Arc::as_ptr(f) as usize as u64).ok_or_else(|| not_found(name))
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let mut files = self.files();
        let seg = files.remove(from).ok_or_else(|| not_found(from))?;
        files.insert(to.to_owned(), seg);
        Ok(())
    }

    fn delete(&self, name: &str) -> io::Result<()> {
        self.files().remove(name).map(drop).ok_or_else(|| not_found(name))
    }

    fn sync_dir(&self) -> io::Result<()> {
        Ok(())
    }
}

/// A file of a [`MemStore`].
#[derive(Debug, Default)]
pub struct MemSegment {
    state: RwLock<MemState>,
}

#[derive(Debug, Default)]
struct MemState {
    /// Bytes while open for appends.
    data: Vec<u8>,
    /// Bytes once sealed (`data` is then empty).
    sealed: Option<SegmentBytes>,
}

impl MemState {
    fn bytes(&self) -> &[u8] {
        self.sealed.as_deref().unwrap_or(&self.data)
    }
}

impl MemSegment {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, MemState> {
        self.state.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, MemState> {
        self.state.write().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A copy of all bytes, sealed or not (for tests and the crash simulator).
    pub fn contents(&self) -> Vec<u8> {
        self.read().bytes().to_vec()
    }
}

impl Segment for MemSegment {
    fn len(&self) -> u64 {
        self.read().bytes().len() as u64
    }

    fn append(&self, data: &[u8]) -> io::Result<u64> {
        let mut state = self.write();
        if state.sealed.is_some() {
            return Err(sealed_error());
        }
        let pos = state.data.len() as u64;
        state.data.extend_from_slice(data);
        Ok(pos)
    }

    fn read_at(&self, pos: u64, out: &mut [u8]) -> io::Result<()> {
        copy_out(self.read().bytes(), pos, out)
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        let mut state = self.write();
        if state.sealed.is_some() {
            return Err(sealed_error());
        }
        let len = usize::try_from(len).map_err(|_| io::ErrorKind::InvalidInput)?;
        if len > state.data.len() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "truncate beyond the end"));
        }
        state.data.truncate(len);
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        Ok(())
    }

    fn seal(&self) -> io::Result<()> {
        let mut state = self.write();
        if state.sealed.is_none() {
            let data = std::mem::take(&mut state.data);
            state.sealed = Some(SegmentBytes::new(data));
        }
        Ok(())
    }

    fn is_sealed(&self) -> bool {
        self.read().sealed.is_some()
    }

    fn view(&self) -> io::Result<SegmentBytes> {
        self.read().sealed.clone().ok_or_else(not_sealed_error)
    }

    fn file_id(&self) -> u64 {
        self as *const MemSegment as usize as u64
    }
}
