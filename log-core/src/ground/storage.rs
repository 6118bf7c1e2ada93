//! The storage traits every backend implements.
//!
//! A backend stores named byte files in one namespace (a directory, for the file backend) and knows nothing
//! of records: the log layer frames records, checks checksums and reports corruption. Every method takes
//! `&self` so that a store can be shared between the log, its readers and the cleaner; backends use interior
//! mutability.
//!
//! Who calls what: [`crate::Log`] creates the active segment, appends to it, seals it on roll and syncs it
//! per its sync policy; the cleaner creates `.cleaned` segments, appends to them, seals and syncs them, and
//! asks the log to swap them in with [`SegmentStore::rename`] and [`SegmentStore::sync_dir`]. Readers only
//! use [`Segment::read_at`] and [`Segment::view`].

use std::fmt::Debug;
use std::io;
use std::ops::Deref;
use std::sync::Arc;

/// A namespace of segment files.
pub trait SegmentStore: Debug + Send + Sync + 'static {
    /// Creates an empty, writable file. Fails with [`io::ErrorKind::AlreadyExists`] if `name` exists.
    /// The new name is durable only after [`SegmentStore::sync_dir`].
    fn create(&self, name: &str) -> io::Result<Arc<dyn Segment>>;

    /// As [`SegmentStore::create`], for a file written once from its start in long appends and read little
    /// before it is sealed (a cleaned copy): a backend may write it past its cache (a file store with
    /// `O_DIRECT`), which changes no byte, no error and no durability promise. By default, [`SegmentStore::create`].
    fn create_copy(&self, name: &str) -> io::Result<Arc<dyn Segment>> {
        self.create(name)
    }

    /// Opens an existing file, positioned for appends at its end. Fails with [`io::ErrorKind::NotFound`]
    /// if `name` does not exist.
    fn open(&self, name: &str) -> io::Result<Arc<dyn Segment>>;

    /// All entry names, sorted ascending (segment names sort by base offset since they are zero-padded).
    /// Entries that are not regular files (directories, symbolic links) are listed too, so that the log can
    /// refuse a segment-like name it cannot use instead of silently skipping it; [`SegmentStore::open`]
    /// refuses them.
    fn list(&self) -> io::Result<Vec<String>>;

    /// The identity of the file currently under `name` (an inode number, say): it stays the same while the
    /// name is only renamed and differs for a new file put under the same name while the old one is still
    /// open. Readers that take no lock compare identities before and after loading a snapshot to know that
    /// no cleaning swap replaced a segment meanwhile. Fails with [`io::ErrorKind::NotFound`] if there is no
    /// such name.
    fn file_id(&self, name: &str) -> io::Result<u64>;

    /// True when the store refuses every change (opened read-only).
    fn is_read_only(&self) -> bool {
        false
    }

    /// Renames `from` to `to`, atomically replacing `to` if it exists. Handles already open on `from` stay
    /// valid and keep seeing the same bytes. Durable only after [`SegmentStore::sync_dir`].
    fn rename(&self, from: &str, to: &str) -> io::Result<()>;

    /// Removes a name. Handles already open stay valid. Durable only after [`SegmentStore::sync_dir`].
    /// Fails with [`io::ErrorKind::NotFound`] if `name` does not exist.
    fn delete(&self, name: &str) -> io::Result<()>;

    /// Makes every earlier create, rename and delete durable.
    fn sync_dir(&self) -> io::Result<()>;
}

/// One file of a [`SegmentStore`]: appended to while active, then sealed and read through a byte view.
pub trait Segment: Debug + Send + Sync {
    /// Current length in bytes, counting appends not yet synced.
    fn len(&self) -> u64;

    /// True when the file holds no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends `data` at the end; returns the position it was written at. Fails once the segment is sealed.
    /// The bytes are visible to [`Segment::read_at`] at once and durable after [`Segment::sync`].
    fn append(&self, data: &[u8]) -> io::Result<u64>;

    /// Fills `out` with the bytes at `pos`. Fails with [`io::ErrorKind::UnexpectedEof`] if
    /// `pos + out.len()` exceeds [`Segment::len`].
    fn read_at(&self, pos: u64, out: &mut [u8]) -> io::Result<()>;

    /// Cuts the file to `len` bytes (recovery of a torn tail). Fails once sealed or if `len` exceeds the
    /// current length.
    fn truncate(&self, len: u64) -> io::Result<()>;

    /// Makes every appended byte (and a truncation) durable. An error means the durable state is unknown:
    /// the caller must not retry but poison itself.
    fn sync(&self) -> io::Result<()>;

    /// Ends appends: flushes buffered bytes to the backend and makes [`Segment::view`] available (on a backend
    /// that maps files, only where no other process may change the file: a sealed file is never written
    /// again by this process). Idempotent. Does not sync.
    fn seal(&self) -> io::Result<()>;

    /// True once [`Segment::seal`] has been called.
    fn is_sealed(&self) -> bool;

    /// A zero-copy view of all bytes of a sealed segment (a `Vec` in memory, a memory map on files).
    /// Fails with [`io::ErrorKind::InvalidInput`] on a segment that is not sealed, and with
    /// [`io::ErrorKind::Unsupported`] on one that is only ever read through [`Segment::read_at`]: a file another
    /// process may still change (truncate) is never mapped, since a mapping of a file cut underneath faults.
    /// Callers read such a segment through reads ([`crate::SegmentSource::Reads`]).
    fn view(&self) -> io::Result<SegmentBytes>;

    /// The identity of this file, as [`SegmentStore::file_id`] reports it for its current name.
    fn file_id(&self) -> u64;
}

/// Shared, immutable bytes of a sealed segment.
///
/// Cloning is cheap (an `Arc`); the bytes live as long as any clone, even after the segment's file has been
/// renamed or deleted, which is what lets readers finish on old segments while the cleaner swaps in new ones.
#[derive(Clone)]
pub struct SegmentBytes(Arc<dyn ReleasableBytes>);

/// An owner of a sealed segment's bytes that can give the memory of a range back while keeping its bytes
/// readable: a file mapping drops its pages from the process (they come back from the page cache on the next
/// read), so that a scan over a large log holds only a window of it.
pub trait ReleasableBytes: AsRef<[u8]> + Send + Sync {
    /// Lets the memory behind `start..start + len` go; the bytes read the same afterwards. A hint: owners for
    /// which it means nothing (memory) do nothing.
    fn release(&self, start: usize, len: usize) {
        let _ = (start, len);
    }
}

/// Bytes with nothing to release.
struct Plain<T>(T);

impl<T: AsRef<[u8]>> AsRef<[u8]> for Plain<T> {
    fn as_ref(&self) -> &[u8] {
        self.0.as_ref()
    }
}

impl<T: AsRef<[u8]> + Send + Sync> ReleasableBytes for Plain<T> {}

impl SegmentBytes {
    /// Wraps any owner of bytes (`Vec<u8>`, `Box<[u8]>`): their memory stays until they are dropped.
    pub fn new(owner: impl AsRef<[u8]> + Send + Sync + 'static) -> Self {
        SegmentBytes(Arc::new(Plain(owner)))
    }

    /// Wraps an owner that can release ranges (a file mapping).
    pub fn releasable(owner: impl ReleasableBytes + 'static) -> Self {
        SegmentBytes(Arc::new(owner))
    }

    /// Lets the memory behind the bytes `start..end` go, for a forward scan that is past `end`: the pages from
    /// the one holding `start` up to the one holding `end` (not included, unless `end` is the end); they read
    /// the same afterwards.
    pub fn release(&self, start: usize, end: usize) {
        const PAGE: usize = 4096;
        let end = end.min(self.len());
        let first = start / PAGE * PAGE;
        let last = if end == self.len() { end } else { end / PAGE * PAGE };
        if last > first {
            self.0.release(first, last - first);
        }
    }
}

impl Deref for SegmentBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        (*self.0).as_ref()
    }
}

impl AsRef<[u8]> for SegmentBytes {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl Debug for SegmentBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SegmentBytes({} bytes)", self.len())
    }
}

/// Error for an append or truncate on a sealed segment; backends share it so callers can match on it.
pub fn sealed_error() -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, "segment is sealed")
}

/// Error for any change asked of a store opened read-only; backends share it so callers can match on it.
pub fn read_only_error() -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, "the store is open read-only")
}

/// Error for [`Segment::view`] on a segment that is still open for appends.
pub fn not_sealed_error() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "segment is not sealed")
}

/// Bytes of a mapped segment an iterator over its batches or frames passes before it lets their memory go: so
/// that however large the log and its segments, a scan holds about this much of a mapping in memory (the
/// bytes read the same afterwards; the pages come back from the page cache if read again).
pub const RELEASE_STEP_BYTES: usize = 8 << 20;

/// Where a segment's bytes come from.
#[derive(Debug, Clone)]
pub enum SegmentSource {
    /// A zero-copy view (a memory map, or memory).
    Mapped(SegmentBytes),
    /// Reads through [`Segment::read_at`]: a file that may still change (the active segment, or a file of a
    /// broker that may truncate it) is never mapped, so a file cut underneath gives an error, not a signal.
    Reads(Arc<dyn Segment>),
}

impl SegmentSource {
    /// The source for `file`: its view when it has one, else reads.
    ///
    /// # Errors
    /// The view's error, unless it is [`std::io::ErrorKind::Unsupported`] (a segment read only through reads).
    pub fn of(file: &Arc<dyn Segment>) -> std::io::Result<SegmentSource> {
        match file.view() {
            Ok(bytes) => Ok(SegmentSource::Mapped(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::Unsupported => Ok(SegmentSource::Reads(Arc::clone(file))),
            Err(e) => Err(e),
        }
    }

    /// The mapped bytes, when the source is a view.
    pub fn mapped(&self) -> Option<&[u8]> {
        match self {
            SegmentSource::Mapped(b) => Some(b),
            SegmentSource::Reads(_) => None,
        }
    }

    /// Fills `out` with the bytes at `pos`.
    ///
    /// # Errors
    /// [`std::io::ErrorKind::UnexpectedEof`] past the end; the file's error.
    pub fn read_at(&self, pos: u64, out: &mut [u8]) -> std::io::Result<()> {
        match self {
            SegmentSource::Mapped(b) => {
                let start = usize::try_from(pos).map_err(|_| std::io::ErrorKind::UnexpectedEof)?;
                let src = b.get(start..start + out.len()).ok_or(std::io::ErrorKind::UnexpectedEof)?;
                out.copy_from_slice(src);
                Ok(())
            }
            SegmentSource::Reads(f) => f.read_at(pos, out),
        }
    }
}
