//! Writing a file past the page cache (Linux's `O_DIRECT`), for a segment written once from its start in long
//! appends and read little before it is sealed: a cleaned copy ([`log_core::SegmentStore::create_copy`]).
//!
//! Why: a buffered write copies every byte into a page-cache page the kernel must first find and fill, and the
//! final sync then writes those pages out. On this project's machines (virtual machines that hand freed memory
//! back to their host) a newly touched page costs a host fault, and 1.8 GB written buffered and synced took
//! 4.7 s where the same bytes written with `O_DIRECT` from one reused 1 MiB buffer took 0.74 s (`dd`, 2026-12-06).
//! On any machine the copy does not fill the page cache with gigabytes nobody reads soon, which a broker's hot
//! segments would otherwise make room for.
//!
//! How: appends fill an aligned buffer; each full buffer is written at an aligned position through a second
//! descriptor of the same file opened with `O_DIRECT`. What is left when the segment is flushed (its last
//! partial buffer) goes through the ordinary descriptor, and direct writing ends for the file: a sync, a seal
//! or a truncation all flush, and the cleaner does each once, at the end. A file system that refuses `O_DIRECT`
//! (at the open, or with `EINVAL` at the first write) is written the ordinary way; nothing else changes.
//! Durability is the ordinary one: a direct write is not durable until the file is synced either.

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

use log_core::aligned::{ALIGN, AlignedBuf, BackgroundWrites};

/// Bytes a direct write carries (and the buffer holds): large enough that a write's fixed cost is nothing
/// beside its bytes, small enough to cost nothing per open copy.
pub(crate) const BUFFER_BYTES: usize = 1 << 20;

/// A file's direct writer: the `O_DIRECT` descriptor and the aligned buffer of bytes not yet written.
///
/// The first full buffer is written on the caller's thread (so a refusal is seen while its bytes are still
/// here); the later ones on a thread of their own ([`BackgroundWrites`]) while the caller fills the next, so
/// bytes handed on may not be in the file yet: [`DirectWriter::drain`] waits for them.
pub(crate) struct DirectWriter {
    file: File,
    writes: Option<BackgroundWrites>,
    buffer: AlignedBuf,
    /// Bytes of the buffer filled.
    filled: usize,
    /// A test's stand-in for a file system that takes `O_DIRECT` at the open and refuses its writes.
    #[cfg(test)]
    pub(crate) refuse: bool,
}

impl std::fmt::Debug for DirectWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectWriter").field("filled", &self.filled).finish_non_exhaustive()
    }
}

/// What a full buffer's write did.
pub(crate) enum Written {
    /// The buffer's bytes are in the file; the buffer is empty again.
    Done,
    /// The file system refused the direct write (`EINVAL`): nothing was written, the bytes are still pending
    /// and the caller writes them the ordinary way.
    Refused,
}

impl DirectWriter {
    /// A direct writer for the file at `path`, which `file` (empty, just created) must be: `None` where direct
    /// writes cannot be had (not Linux, a file system that refuses them, another file put under the name in
    /// between, no memory for the buffer), so the file is written the ordinary way.
    pub(crate) fn open(path: &Path, file: &File) -> Option<DirectWriter> {
        let direct = open_direct(path)?;
        let (ours, theirs) = (file.metadata().ok()?, direct.metadata().ok()?);
        if ours.ino() != theirs.ino() || ours.dev() != theirs.dev() || ours.len() != 0 {
            return None;
        }
        Some(DirectWriter {
            file: direct,
            writes: None,
            buffer: AlignedBuf::new(BUFFER_BYTES)?,
            filled: 0,
            #[cfg(test)]
            refuse: false,
        })
    }

    /// The bytes appended and not yet written.
    pub(crate) fn pending(&self) -> &[u8] {
        &self.buffer.as_ref()[..self.filled]
    }

    /// Copies as much of `data` as the buffer has room for; returns how much.
    pub(crate) fn fill(&mut self, data: &[u8]) -> usize {
        // The buffer's own length: none after a write that failed, which the next write reports.
        let n = data.len().min(self.buffer.len() - self.filled);
        let at = self.filled;
        self.buffer.as_mut()[at..at + n].copy_from_slice(&data[..n]);
        self.filled += n;
        n
    }

    pub(crate) fn is_full(&self) -> bool {
        self.filled == self.buffer.len()
    }

    /// Waits until every byte handed on is in the file.
    ///
    /// # Errors
    /// A write that failed.
    pub(crate) fn drain(&mut self) -> io::Result<()> {
        self.writes.as_mut().map_or(Ok(()), BackgroundWrites::drain)
    }

    /// True while bytes handed on may not be in the file yet.
    pub(crate) fn in_flight(&self) -> bool {
        self.writes.as_ref().is_some_and(BackgroundWrites::in_flight)
    }

    /// Writes the full buffer at `position` (a multiple of [`BUFFER_BYTES`]: the file's length, every earlier
    /// byte written by this writer), or hands it on to be written.
    ///
    /// # Errors
    /// The write's error other than a refusal, or an earlier one's; the file then holds an unknown part of the
    /// bytes, as after any failed write, and the caller fails (a sync would report it too).
    pub(crate) fn write_full(&mut self, position: u64) -> io::Result<Written> {
        debug_assert!(self.is_full() && position.is_multiple_of(ALIGN as u64));
        #[cfg(test)]
        if self.refuse {
            return Ok(Written::Refused);
        }
        if let Some(writes) = &mut self.writes {
            let full = std::mem::replace(&mut self.buffer, AlignedBuf::empty());
            self.filled = 0;
            self.buffer = writes.write(full, BUFFER_BYTES, position)?;
            return Ok(Written::Done);
        }
        match self.file.write_all_at(self.buffer.as_ref(), position) {
            Ok(()) => {
                self.filled = 0;
                // Direct writes are taken: the next ones go on while the caller fills the buffer again (or on
                // this thread, where no second thread or buffer can be had).
                self.writes = self.file.try_clone().ok().and_then(|f| BackgroundWrites::start(f, BUFFER_BYTES, 2));
                Ok(Written::Done)
            }
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(Written::Refused),
            Err(e) => Err(e),
        }
    }
}

#[cfg(target_os = "linux")]
fn open_direct(path: &Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    File::options().write(true).custom_flags(libc::O_DIRECT).open(path).ok()
}

#[cfg(not(target_os = "linux"))]
fn open_direct(_path: &Path) -> Option<File> {
    None
}
