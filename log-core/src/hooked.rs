//! One forwarding wrapper for every store decorator: [`HookedStore`] passes each operation of a
//! [`SegmentStore`] and of its files to the store it wraps, and asks its [`StoreHooks`] before each one. A
//! decorator (a read meter, a read-rate limit, a fault injector) is then only what it changes: a hook.
//!
//! Invariant: an operation a hook lets through is exactly the inner store's, and a hook that fails an
//! operation (its `before` returns an error) keeps the inner store from seeing it at all.
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use log_core::hooked::{HookedStore, StoreHooks, StoreOp};
//! use log_core::SegmentStore;
//!
//! /// Counts the bytes read.
//! #[derive(Debug, Default)]
//! struct ReadBytes(AtomicU64);
//!
//! impl StoreHooks for ReadBytes {
//!     fn after_read(&self, bytes: u64) {
//!         self.0.fetch_add(bytes, Ordering::Relaxed);
//!     }
//! }
//!
//! # fn demo(inner: Arc<dyn SegmentStore>) -> std::io::Result<()> {
//! let hooks = Arc::new(ReadBytes::default());
//! let store = HookedStore::new(inner, Arc::clone(&hooks));
//! let file = store.create("a")?;
//! file.append(b"hello")?;
//! file.read_at(0, &mut [0u8; 5])?;
//! assert_eq!(hooks.0.load(Ordering::Relaxed), 5);
//! # Ok(())
//! # }
//! ```

use std::fmt::{self, Debug};
use std::io;
use std::sync::Arc;

use crate::storage::{Segment, SegmentBytes, SegmentStore};

/// An operation of a store or of one of its files, as a hook sees it before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreOp<'a> {
    /// [`SegmentStore::create`] of the file `name`.
    Create(&'a str),
    /// [`SegmentStore::open`] of the file `name`.
    Open(&'a str),
    /// [`SegmentStore::list`].
    List,
    /// [`SegmentStore::rename`] of `from` to `to`.
    Rename {
        /// The name before.
        from: &'a str,
        /// The name after.
        to: &'a str,
    },
    /// [`SegmentStore::delete`] of the file `name`.
    Delete(&'a str),
    /// [`SegmentStore::sync_dir`].
    SyncDir,
    /// [`Segment::append`] of this many bytes.
    Append(u64),
    /// [`Segment::read_at`] of this many bytes.
    Read(u64),
    /// [`Segment::truncate`] to this length.
    Truncate(u64),
    /// [`Segment::sync`].
    Sync,
    /// [`Segment::seal`].
    Seal,
}

/// What a decorator does around the operations of the store it wraps. Every method does nothing by default,
/// so a decorator names only what it changes.
pub trait StoreHooks: Debug + Send + Sync + 'static {
    /// Runs before `op`; an error fails the operation, which the inner store then never sees.
    ///
    /// # Errors
    /// The error the operation fails with.
    fn before(&self, op: StoreOp<'_>) -> io::Result<()> {
        let _ = op;
        Ok(())
    }

    /// Runs after a read of `bytes` bytes of a file succeeded.
    fn after_read(&self, bytes: u64) {
        let _ = bytes;
    }

    /// Whether a file may be read through a view of its bytes (a memory map). A hook that must see every byte
    /// read says no: readers then fall back to [`Segment::read_at`].
    fn allows_views(&self) -> bool {
        true
    }
}

/// A store whose operations, and its files', pass through `H` on their way to the inner store.
pub struct HookedStore<H: StoreHooks> {
    inner: Arc<dyn SegmentStore>,
    hooks: Arc<H>,
}

impl<H: StoreHooks> HookedStore<H> {
    /// `inner`, its operations passing through `hooks`.
    #[must_use]
    pub fn new(inner: Arc<dyn SegmentStore>, hooks: Arc<H>) -> HookedStore<H> {
        HookedStore { inner, hooks }
    }

    /// The store wrapped.
    #[must_use]
    pub fn inner(&self) -> &Arc<dyn SegmentStore> {
        &self.inner
    }

    /// The hooks.
    #[must_use]
    pub fn hooks(&self) -> &Arc<H> {
        &self.hooks
    }

    fn wrap(&self, inner: Arc<dyn Segment>) -> Arc<dyn Segment> {
        Arc::new(HookedSegment { inner, hooks: Arc::clone(&self.hooks) })
    }
}

impl<H: StoreHooks> Clone for HookedStore<H> {
    fn clone(&self) -> Self {
        HookedStore { inner: Arc::clone(&self.inner), hooks: Arc::clone(&self.hooks) }
    }
}

impl<H: StoreHooks> Debug for HookedStore<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookedStore").field("inner", &self.inner).field("hooks", &self.hooks).finish()
    }
}

impl<H: StoreHooks> SegmentStore for HookedStore<H> {
    fn create(&self, name: &str) -> io::Result<Arc<dyn Segment>> {
        self.hooks.before(StoreOp::Create(name))?;
        Ok(self.wrap(self.inner.create(name)?))
    }

    fn create_copy(&self, name: &str) -> io::Result<Arc<dyn Segment>> {
        self.hooks.before(StoreOp::Create(name))?;
        Ok(self.wrap(self.inner.create_copy(name)?))
    }

    fn open(&self, name: &str) -> io::Result<Arc<dyn Segment>> {
        self.hooks.before(StoreOp::Open(name))?;
        Ok(self.wrap(self.inner.open(name)?))
    }

    fn list(&self) -> io::Result<Vec<String>> {
        self.hooks.before(StoreOp::List)?;
        self.inner.list()
    }

    fn file_id(&self, name: &str) -> io::Result<u64> {
        self.inner.file_id(name)
    }

    fn is_read_only(&self) -> bool {
        self.inner.is_read_only()
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        self.hooks.before(StoreOp::Rename { from, to })?;
        self.inner.rename(from, to)
    }

    fn delete(&self, name: &str) -> io::Result<()> {
        self.hooks.before(StoreOp::Delete(name))?;
        self.inner.delete(name)
    }

    fn sync_dir(&self) -> io::Result<()> {
        self.hooks.before(StoreOp::SyncDir)?;
        self.inner.sync_dir()
    }
}

/// A file of a [`HookedStore`].
#[derive(Debug)]
struct HookedSegment<H: StoreHooks> {
    inner: Arc<dyn Segment>,
    hooks: Arc<H>,
}

impl<H: StoreHooks> Segment for HookedSegment<H> {
    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn append(&self, data: &[u8]) -> io::Result<u64> {
        self.hooks.before(StoreOp::Append(data.len() as u64))?;
        self.inner.append(data)
    }

    fn read_at(&self, pos: u64, out: &mut [u8]) -> io::Result<()> {
        let bytes = out.len() as u64;
        self.hooks.before(StoreOp::Read(bytes))?;
        self.inner.read_at(pos, out)?;
        self.hooks.after_read(bytes);
        Ok(())
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        self.hooks.before(StoreOp::Truncate(len))?;
        self.inner.truncate(len)
    }

    fn sync(&self) -> io::Result<()> {
        self.hooks.before(StoreOp::Sync)?;
        self.inner.sync()
    }

    fn seal(&self) -> io::Result<()> {
        self.hooks.before(StoreOp::Seal)?;
        self.inner.seal()
    }

    fn is_sealed(&self) -> bool {
        self.inner.is_sealed()
    }

    fn view(&self) -> io::Result<SegmentBytes> {
        if self.hooks.allows_views() {
            self.inner.view()
        } else {
            Err(io::Error::new(io::ErrorKind::Unsupported, "this store's hooks see every read: no views"))
        }
    }

    fn file_id(&self) -> u64 {
        self.inner.file_id()
    }
}
