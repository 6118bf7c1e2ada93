//! [`FileSegment`]: one file, appended through a buffer while active and memory-mapped once sealed.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use log_core::storage::{not_sealed_error, read_only_error, sealed_error};
use log_core::{Segment, SegmentBytes};
use memmap2::Mmap;

use crate::direct::{DirectWriter, Written};
use crate::writeback::STEP_BYTES as WRITEBACK_BYTES;

/// Bytes buffered before an append reaches the file (a write system call per record would dominate small
/// appends).
const WRITE_BUFFER_BYTES: usize = 64 << 10;

/// A segment file.
#[derive(Debug)]
pub struct FileSegment {
    path: PathBuf,
    /// The inode number: the file's identity (see `SegmentStore::file_id`).
    id: u64,
    /// Opened read-only: every change is refused.
    read_only: bool,
    state: RwLock<State>,
}

#[derive(Debug)]
struct State {
    file: File,
    /// Bytes written to the file.
    flushed: u64,
    /// Appended bytes not yet written to the file (they follow `flushed`), unless `direct` holds them.
    buffer: Vec<u8>,
    /// A copy written past the page cache, until its first flush: appends fill its buffer instead of
    /// `buffer`, and `flushed` is a multiple of its buffer's size.
    direct: Option<DirectWriter>,
    /// Where the file's bytes not yet handed to writeback start (see [`WRITEBACK_BYTES`]).
    writeback_from: u64,
    /// Sealed: no more appends.
    sealed: bool,
    /// The mapping, once sealed (a writable store's file only).
    map: Option<SegmentBytes>,
}

impl State {
    /// The appended bytes not yet in the file.
    fn pending(&self) -> &[u8] {
        match &self.direct {
            Some(d) => d.pending(),
            None => &self.buffer,
        }
    }

    /// Writes every appended byte to the file; a direct copy's last partial buffer the ordinary way, which ends
    /// its direct writing.
    fn flush(&mut self) -> io::Result<()> {
        if let Some(mut d) = self.direct.take() {
            d.drain()?;
            let pending = d.pending();
            self.file.write_all_at(pending, self.flushed)?;
            self.flushed += pending.len() as u64;
            return Ok(());
        }
        if !self.buffer.is_empty() {
            self.file.write_all_at(&self.buffer, self.flushed)?;
            self.flushed += self.buffer.len() as u64;
            self.buffer.clear();
            self.start_writeback();
        }
        Ok(())
    }

    /// Asks the kernel to start writing the bytes written since the last call to the disk once they reach
    /// [`WRITEBACK_BYTES`], without waiting: the disk works while the caller computes, and a later sync waits
    /// only for what is left. A hint: its failure is not an error (a sync reports any write that fails).
    fn start_writeback(&mut self) {
        let from = self.writeback_from.min(self.flushed);
        if self.flushed - from < WRITEBACK_BYTES {
            return;
        }
        // Refused or not, the range is not asked again: the final sync writes it either way.
        let _ = crate::writeback::start(&self.file, from, self.flushed - from);
        self.writeback_from = self.flushed;
    }
}

impl FileSegment {
    pub(crate) fn new(file: File, path: PathBuf, len: u64, id: u64, read_only: bool) -> Self {
        let state = State {
            file,
            flushed: len,
            buffer: Vec::new(),
            direct: None,
            writeback_from: len,
            sealed: false,
            map: None,
        };
        FileSegment { path, id, read_only, state: RwLock::new(state) }
    }

    /// A new, empty file's segment whose appends are written past the page cache where the file system allows
    /// it (see [`crate::direct`]), else as [`FileSegment::new`]'s.
    pub(crate) fn new_copy(file: File, path: PathBuf, id: u64) -> Self {
        let direct = DirectWriter::open(&path, &file);
        let segment = FileSegment::new(file, path, 0, id, false);
        segment.write().direct = direct;
        segment
    }

    /// Appends through the direct writer: full buffers go to the file directly; a refusal writes the pending
    /// bytes the ordinary way and ends direct writing, and what is left of `data` is appended as usual.
    fn append_direct<'d>(&self, s: &mut State, mut data: &'d [u8]) -> io::Result<&'d [u8]> {
        while let Some(d) = s.direct.as_mut() {
            let n = d.fill(data);
            data = &data[n..];
            if !d.is_full() {
                break;
            }
            match d.write_full(s.flushed).map_err(|e| self.with_path(e))? {
                Written::Done => s.flushed += crate::direct::BUFFER_BYTES as u64,
                Written::Refused => s.flush().map_err(|e| self.with_path(e))?,
            }
        }
        Ok(data)
    }

    fn writable(&self) -> io::Result<()> {
        if self.read_only { Err(read_only_error()) } else { Ok(()) }
    }

    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn with_path(&self, e: io::Error) -> io::Error {
        io::Error::new(e.kind(), format!("{}: {e}", self.path.display()))
    }
}

impl Drop for FileSegment {
    /// Writes buffered appends to the file (not synced): a clean shutdown loses nothing to the buffer.
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner);
        let _ = state.flush();
    }
}

impl Segment for FileSegment {
    fn len(&self) -> u64 {
        let s = self.read();
        s.flushed + s.pending().len() as u64
    }

    fn append(&self, data: &[u8]) -> io::Result<u64> {
        self.writable()?;
        let mut s = self.write();
        if s.sealed {
            return Err(sealed_error());
        }
        let pos = s.flushed + s.pending().len() as u64;
        let data = self.append_direct(&mut s, data)?;
        if data.is_empty() {
            return Ok(pos);
        }
        if s.buffer.len() + data.len() > WRITE_BUFFER_BYTES {
            s.flush().map_err(|e| self.with_path(e))?;
        }
        if data.len() >= WRITE_BUFFER_BYTES {
            let at = s.flushed;
            s.file.write_all_at(data, at).map_err(|e| self.with_path(e))?;
            s.flushed += data.len() as u64;
            s.start_writeback();
        } else {
            s.buffer.extend_from_slice(data);
        }
        Ok(pos)
    }

    fn read_at(&self, pos: u64, out: &mut [u8]) -> io::Result<()> {
        // Bytes a direct copy handed on may not be in the file yet: they are waited for, under the write lock.
        if self.read().direct.as_ref().is_some_and(DirectWriter::in_flight) {
            let mut s = self.write();
            if let Some(d) = s.direct.as_mut() {
                d.drain().map_err(|e| self.with_path(e))?;
            }
        }
        let s = self.read();
        let end = pos.checked_add(out.len() as u64).ok_or(io::ErrorKind::UnexpectedEof)?;
        if end > s.flushed + s.pending().len() as u64 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "read past the end of the segment"));
        }
        if let Some(map) = &s.map {
            let src = map.get(pos as usize..end as usize).ok_or(io::ErrorKind::UnexpectedEof)?;
            out.copy_from_slice(src);
            return Ok(());
        }
        let from_file = s.flushed.saturating_sub(pos).min(out.len() as u64) as usize;
        let (head, tail) = out.split_at_mut(from_file);
        if !head.is_empty() {
            s.file.read_exact_at(head, pos).map_err(|e| self.with_path(e))?;
        }
        if !tail.is_empty() {
            let start = (pos + from_file as u64 - s.flushed) as usize;
            let src = s.pending().get(start..start + tail.len()).ok_or(io::ErrorKind::UnexpectedEof)?;
            tail.copy_from_slice(src);
        }
        Ok(())
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        self.writable()?;
        let mut s = self.write();
        if s.sealed {
            return Err(sealed_error());
        }
        if len > s.flushed + s.pending().len() as u64 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "truncate beyond the end"));
        }
        s.flush().map_err(|e| self.with_path(e))?;
        s.file.set_len(len).map_err(|e| self.with_path(e))?;
        s.flushed = len;
        s.writeback_from = s.writeback_from.min(len);
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        self.writable()?;
        let mut s = self.write();
        s.flush().map_err(|e| self.with_path(e))?;
        s.file.sync_data().map_err(|e| self.with_path(e))
    }

    fn seal(&self) -> io::Result<()> {
        let mut s = self.write();
        if s.sealed {
            return Ok(());
        }
        s.flush().map_err(|e| self.with_path(e))?;
        s.sealed = true;
        if self.read_only {
            // A file opened by a reader may belong to another process that can still change it (a broker
            // truncating a segment): it is read through `read_at` only, never mapped, so a cut underneath is an
            // error, not SIGBUS.
            return Ok(());
        }
        let bytes = if s.flushed == 0 {
            SegmentBytes::new(Vec::new())
        } else {
            // SAFETY: the mapped file is not modified while the mapping lives. Only sealed segments of a writable
            // store are mapped, and the log never writes a sealed segment again: it only renames or deletes it,
            // which does not affect the mapping. This handle refuses appends and truncation once sealed;
            // `FileStore` hands out one handle per file, so no other handle of this process can write it; a
            // writable store holds an exclusive lock on its directory, which keeps every other logcompact writer
            // out, and a Kafka partition is opened for writing only under its broker's lock on the log
            // directory, so no broker runs on it. Read-only stores never map (above).
            #[expect(unsafe_code, reason = "memory-mapping a sealed segment; see SAFETY")]
            let map = unsafe { Mmap::map(&s.file) }.map_err(|e| self.with_path(e))?;
            SegmentBytes::releasable(SealedMap(map))
        };
        s.map = Some(bytes);
        Ok(())
    }

    fn is_sealed(&self) -> bool {
        self.read().sealed
    }

    fn view(&self) -> io::Result<SegmentBytes> {
        let s = self.read();
        match (&s.map, s.sealed) {
            (Some(map), _) => Ok(map.clone()),
            (None, true) => Err(io::Error::new(io::ErrorKind::Unsupported, "read-only segments are read, not mapped")),
            (None, false) => Err(not_sealed_error()),
        }
    }

    fn file_id(&self) -> u64 {
        self.id
    }
}

/// The mapping of a sealed segment, whose pages a scan lets go behind it.
struct SealedMap(Mmap);

impl AsRef<[u8]> for SealedMap {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl log_core::ReleasableBytes for SealedMap {
    fn release(&self, start: usize, len: usize) {
        if start.checked_add(len).is_none_or(|end| end > self.0.len()) {
            return;
        }
        // SAFETY: the mapping is a shared, read-only mapping of a file that is never written while it is mapped
        // (see where it is made). MADV_DONTNEED on such a mapping only drops this process's page table entries
        // for the range: the next read faults the same bytes back in from the file's pages, so no byte seen
        // through any reference into the mapping changes. (The advice is unsafe in general because on a private
        // mapping it discards the process's own changes; this mapping has none.)
        #[expect(unsafe_code, reason = "MADV_DONTNEED on a read-only shared file mapping; see SAFETY")]
        let _ = unsafe { self.0.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(dir: &std::path::Path) -> FileSegment {
        let path = dir.join("0.log");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .expect("segment file");
        FileSegment::new(file, path, 0, 0, false)
    }

    /// Writeback is asked for each [`WRITEBACK_BYTES`] written, from where the last request ended, whether the
    /// bytes came through the buffer or in one large append; a truncation below the mark moves it back.
    #[test]
    fn writeback_is_started_every_writeback_bytes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let seg = segment(dir.path());
        let mark = |s: &FileSegment| s.read().writeback_from;
        let piece = vec![7u8; 60 << 10];
        let mut written = 0u64;
        while written + piece.len() as u64 <= WRITEBACK_BYTES {
            seg.append(&piece).expect("append");
            written += piece.len() as u64;
        }
        assert_eq!(mark(&seg), 0, "not yet {WRITEBACK_BYTES} bytes in the file");
        seg.append(&piece).expect("append");
        seg.append(&piece).expect("append");
        let first = mark(&seg);
        assert!(first >= WRITEBACK_BYTES && first <= seg.len(), "asked up to {first} of {}", seg.len());
        seg.append(&vec![1u8; WRITEBACK_BYTES as usize]).expect("append");
        assert_eq!(mark(&seg), seg.len(), "a large append is handed on whole");
        seg.truncate(1000).expect("truncate");
        assert_eq!(mark(&seg), 1000);
        seg.sync().expect("sync");
        assert_eq!(std::fs::metadata(dir.path().join("0.log")).expect("metadata").len(), 1000);
    }

    /// A copy's bytes, appended in pieces of every size across several direct buffers, read the same before
    /// the flush (from the file and the pending buffer), after the seal (mapped) and from the file once
    /// synced; the same when the file system refuses the direct writes, and after a truncation.
    #[test]
    fn a_copy_written_past_the_page_cache_reads_what_was_appended() {
        let dir = tempfile::tempdir().expect("tempdir");
        for refuse in [false, true] {
            let path = dir.path().join(format!("copy-{refuse}.log"));
            let file = File::options().read(true).write(true).create_new(true).open(&path).expect("create");
            let seg = FileSegment::new_copy(file, path.clone(), 1);
            let direct = seg.write().direct.is_some();
            if let Some(d) = seg.write().direct.as_mut() {
                d.refuse = refuse;
            }
            let mut expected = Vec::new();
            let mut rng = log_core::workload::SplitMix64::new(7);
            let sizes =
                [1usize, 4095, 4096, 4097, 70_000, crate::direct::BUFFER_BYTES, crate::direct::BUFFER_BYTES + 3];
            for round in 0..12 {
                let n = sizes[round % sizes.len()];
                let piece: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
                assert_eq!(seg.append(&piece).expect("append"), expected.len() as u64);
                expected.extend_from_slice(&piece);
                assert_eq!(seg.len(), expected.len() as u64);
                // Across the line between the file and the pending bytes.
                let at = expected.len() / 3;
                let mut out = vec![0u8; expected.len() - at];
                seg.read_at(at as u64, &mut out).expect("read");
                assert!(out == expected[at..], "round {round}, refused {refuse}: read back differs");
            }
            assert!(!refuse || seg.read().direct.is_none(), "a refusal ends direct writing");
            assert_eq!(seg.read().direct.is_some(), direct && !refuse, "direct until the first flush");
            seg.sync().expect("sync");
            assert!(std::fs::read(&path).expect("read file") == expected, "the file holds the appends");
            seg.seal().expect("seal");
            assert!(&seg.view().expect("view")[..] == expected.as_slice());
        }
        // A truncation flushes and cuts, as for any segment.
        let path = dir.path().join("cut.log");
        let file = File::options().read(true).write(true).create_new(true).open(&path).expect("create");
        let seg = FileSegment::new_copy(file, path.clone(), 2);
        seg.append(&vec![5u8; crate::direct::BUFFER_BYTES + 10]).expect("append");
        seg.truncate(4000).expect("truncate");
        seg.append(b"tail").expect("append");
        seg.sync().expect("sync");
        let mut want = vec![5u8; 4000];
        want.extend_from_slice(b"tail");
        assert!(std::fs::read(&path).expect("read file") == want);
    }

    /// Direct writing is had on this machine's temporary directory (so the test above tests it), and not on
    /// a file other than the one created under the name.
    #[test]
    #[cfg(target_os = "linux")]
    fn direct_writing_is_had_for_the_created_file_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.log");
        let file = File::options().read(true).write(true).create_new(true).open(&path).expect("create");
        assert!(DirectWriter::open(&path, &file).is_some(), "O_DIRECT on {}", dir.path().display());
        std::fs::rename(&path, dir.path().join("b.log")).expect("rename");
        std::fs::write(&path, b"").expect("another file");
        assert!(DirectWriter::open(&path, &file).is_none(), "another file under the name");
    }

    /// The kernel takes the request on a regular file (on Linux), and refuses an offset no file reaches.
    #[test]
    #[cfg(target_os = "linux")]
    fn the_kernel_takes_the_hint() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = std::fs::File::create(dir.path().join("f")).expect("create");
        std::io::Write::write_all(&mut &file, &[0u8; 8192]).expect("write");
        assert!(crate::writeback::start(&file, 0, 8192));
        assert!(!crate::writeback::start(&file, u64::MAX, 1));
    }
}
