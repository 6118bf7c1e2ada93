//! The external pass's spill file: runs appended once, in order, then read back by range; written and read past
//! the page cache (`O_DIRECT`) where the file system allows it.
//!
//! Why: the spill is written once and read once, so the page cache gains nothing from holding it, and a
//! buffered write costs a copy into page-cache pages the kernel must first find; on this project's machines
//! (virtual machines that hand freed memory back to their host) a newly touched page costs a host fault, and
//! writing the 680 MB spill of the 4 GiB backlog took 1.6 s of its pass's 8 (`perf`, 2026-12-06). How: appends
//! fill an aligned buffer written whole at aligned positions; [`SpillFile::end_writing`] writes the last one
//! padded with zeros to the alignment (so the file is a multiple of it and every read of a range within the
//! appended bytes can be widened to aligned bounds inside the file); a read widens its range to the alignment
//! into an aligned buffer and hands back the bytes asked for. A file system that refuses `O_DIRECT` (at the
//! open, or `EINVAL` at the first write) gets an ordinary unlinked temporary file, written and read as asked.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use log_core::aligned::{ALIGN, AlignedBuf, BackgroundWrites, align_down, align_up};

/// Bytes written at a time (and the write buffer's size).
pub(super) const WRITE_BYTES: usize = 1 << 20;

/// An unlinked temporary file of runs.
pub(super) struct SpillFile {
    file: File,
    /// The file was opened with `O_DIRECT`: every transfer is aligned.
    direct: bool,
    /// Direct writes after the first, done on a thread of their own while the next buffer fills.
    writes: Option<BackgroundWrites>,
    /// Appended bytes not yet written: `buffer[..filled]`.
    buffer: AlignedBuf,
    filled: usize,
    /// Bytes in the file.
    written: u64,
    /// Bytes appended in all.
    len: u64,
    /// [`SpillFile::end_writing`] was called: no more appends.
    ended: bool,
}

fn no_memory() -> io::Error {
    io::Error::new(io::ErrorKind::OutOfMemory, "cannot allocate the spill file's buffer")
}

impl SpillFile {
    /// A new unlinked temporary file in `dir` (the system's temporary directory when `None`).
    ///
    /// # Errors
    /// The file cannot be made, or its buffer's memory cannot be had.
    pub(super) fn create(dir: Option<&Path>) -> io::Result<SpillFile> {
        let buffer = AlignedBuf::new(WRITE_BYTES).ok_or_else(no_memory)?;
        let (file, direct) = match open_direct(dir) {
            Some(file) => (file, true),
            None => (ordinary(dir)?, false),
        };
        Ok(SpillFile { file, direct, writes: None, buffer, filled: 0, written: 0, len: 0, ended: false })
    }

    /// Bytes appended.
    pub(super) fn len(&self) -> u64 {
        self.len
    }

    /// Appends `bytes` at [`SpillFile::len`].
    ///
    /// # Errors
    /// The write's error; appending after [`SpillFile::end_writing`].
    pub(super) fn append(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        if self.ended {
            return Err(io::Error::other("appending to a spill file after its end"));
        }
        self.len += bytes.len() as u64;
        if !self.direct {
            self.file.write_all_at(bytes, self.written)?;
            self.written += bytes.len() as u64;
            return Ok(());
        }
        while !bytes.is_empty() {
            // The buffer's own length: none after a write that failed, which the next write reports.
            let n = bytes.len().min(self.buffer.len() - self.filled);
            self.buffer.as_mut()[self.filled..self.filled + n].copy_from_slice(&bytes[..n]);
            self.filled += n;
            bytes = &bytes[n..];
            if self.filled == self.buffer.len() {
                self.write_buffer(WRITE_BYTES)?;
            }
        }
        Ok(())
    }

    /// Writes the buffer's first `n` bytes (a multiple of the alignment) at the file's end, or hands them on to
    /// be written. A first direct write the file system refuses moves to an ordinary file and writes there.
    fn write_buffer(&mut self, n: usize) -> io::Result<()> {
        if let Some(writes) = &mut self.writes {
            let full = std::mem::replace(&mut self.buffer, AlignedBuf::empty());
            self.filled = 0;
            self.buffer = writes.write(full, n, self.written)?;
            self.written += n as u64;
            return Ok(());
        }
        match self.file.write_all_at(&self.buffer.as_ref()[..n], self.written) {
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) && self.written == 0 => {
                self.file = ordinary(None)?;
                self.direct = false;
                self.file.write_all_at(&self.buffer.as_ref()[..self.filled], 0)?;
                self.written = self.filled as u64;
            }
            result => {
                result?;
                self.written += n as u64;
                if self.direct && !self.ended {
                    // Direct writes are taken: the next ones go on while the next buffer fills.
                    self.writes = self.file.try_clone().ok().and_then(|f| BackgroundWrites::start(f, WRITE_BYTES));
                }
            }
        }
        self.filled = 0;
        Ok(())
    }

    /// Ends the appends: the last partial buffer is written (padded with zeros to the alignment when direct).
    ///
    /// # Errors
    /// The write's error.
    pub(super) fn end_writing(&mut self) -> io::Result<()> {
        if self.ended {
            return Ok(());
        }
        self.ended = true;
        if let Some(mut writes) = self.writes.take() {
            writes.drain()?;
        }
        if self.filled > 0 {
            let padded = align_up(self.filled as u64) as usize;
            self.buffer.as_mut()[self.filled..padded].fill(0);
            self.write_buffer(padded)?;
        }
        Ok(())
    }

    /// The `len` bytes at `pos` (within the appended bytes, after [`SpillFile::end_writing`]), read through
    /// `buf`.
    ///
    /// # Errors
    /// The read's error; a range past the appended bytes, or a read before the end of writing.
    pub(super) fn read<'b>(&self, pos: u64, len: usize, buf: &'b mut ReadBuf) -> io::Result<&'b [u8]> {
        let end = pos.checked_add(len as u64).filter(|&e| e <= self.len && self.ended);
        let Some(end) = end else {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "a spill read past what was written"));
        };
        let (from, to) = if self.direct { (align_down(pos), align_up(end)) } else { (pos, end) };
        let span = usize::try_from(to - from).map_err(|_| no_memory())?;
        let memory = buf.at_least(span)?;
        self.file.read_exact_at(&mut memory[..span], from)?;
        let skip = (pos - from) as usize;
        Ok(&memory[skip..skip + len])
    }
}

/// A reader's aligned buffer, grown to the largest read it is given.
#[derive(Default)]
pub(super) struct ReadBuf(Option<AlignedBuf>);

impl ReadBuf {
    fn at_least(&mut self, n: usize) -> io::Result<&mut [u8]> {
        if self.0.as_ref().is_none_or(|b| b.len() < n) {
            self.0 = None;
            self.0 = Some(AlignedBuf::new(n.max(ALIGN)).ok_or_else(no_memory)?);
        }
        match self.0.as_mut() {
            Some(b) => Ok(b.as_mut()),
            None => Err(no_memory()),
        }
    }

    /// Bytes the buffer holds.
    pub(super) fn memory_bytes(&self) -> usize {
        self.0.as_ref().map_or(0, AlignedBuf::len)
    }
}

fn ordinary(dir: Option<&Path>) -> io::Result<File> {
    match dir {
        Some(d) => tempfile::tempfile_in(d),
        None => tempfile::tempfile(),
    }
}

/// An unlinked file in `dir` (the system's temporary directory) opened with `O_DIRECT`, where it can be had.
#[cfg(target_os = "linux")]
fn open_direct(dir: Option<&Path>) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = dir.map_or_else(std::env::temp_dir, Path::to_path_buf);
    File::options().read(true).write(true).mode(0o600).custom_flags(libc::O_TMPFILE | libc::O_DIRECT).open(dir).ok()
}

#[cfg(not(target_os = "linux"))]
fn open_direct(_dir: Option<&Path>) -> Option<File> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Appends of every size read back the same by any range, direct or not, and nothing is read before the
    /// end of writing or past the appended bytes.
    #[test]
    fn ranges_read_back_what_was_appended() {
        let dir = tempfile::tempdir().expect("tempdir");
        for direct in [true, false] {
            let mut f = SpillFile::create(Some(dir.path())).expect("create");
            if !direct {
                f.file = ordinary(Some(dir.path())).expect("ordinary");
                f.direct = false;
            }
            assert_eq!(f.direct, direct, "O_DIRECT on {}", dir.path().display());
            let mut rng = log_core::workload::SplitMix64::new(3);
            let mut expected = Vec::new();
            for n in [24usize, 4096, 5000, WRITE_BYTES, 3 * WRITE_BYTES + 7, 1] {
                let piece: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
                f.append(&piece).expect("append");
                expected.extend_from_slice(&piece);
            }
            let mut buf = ReadBuf::default();
            assert!(f.read(0, 1, &mut buf).is_err(), "a read before the end of writing");
            f.end_writing().expect("end");
            assert!(f.append(b"x").is_err(), "an append after it");
            assert_eq!(f.len(), expected.len() as u64);
            for _ in 0..200 {
                let pos = rng.next_u64() % expected.len() as u64;
                let len = (rng.next_u64() % 70_000).min(expected.len() as u64 - pos) as usize;
                let got = f.read(pos, len, &mut buf).expect("read");
                assert!(got == &expected[pos as usize..pos as usize + len], "{pos}+{len}, direct {direct}");
            }
            let all = f.read(0, expected.len(), &mut buf).expect("read all");
            assert!(all == expected.as_slice());
            assert!(f.read(1, expected.len(), &mut buf).is_err(), "past the end");
        }
    }
}
