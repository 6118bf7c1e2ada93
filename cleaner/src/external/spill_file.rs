//! The external pass's spill file: runs appended once, in order, then read back by range; held in memory while
//! they are small, and written and read past the page cache (`O_DIRECT`) where the file system allows it.
//!
//! Why memory first: a spill of a few MiB (a small budget's, or a pass that only just outgrew its buffer)
//! would cost a file, a direct write and many small reads from the disk at the end, more than the little
//! memory it takes; the quick report's external cell of 40,000 records, spilling 599 KB, took 0.025 s through
//! the disk against 0.013 s in the page cache. The first [`MEMORY_BYTES`] appended stay in memory; the append
//! that would pass them moves them to the file and frees them, so a spill holds at most that much besides the
//! file's buffers.
//!
//! Why past the page cache: the spill is written once and read once, so the page cache gains nothing from
//! holding it, and a buffered write costs a copy into page-cache pages the kernel must first find; on this
//! project's machines (virtual machines that hand freed memory back to their host) a newly touched page costs
//! a host fault, and writing the 680 MB spill of the 4 GiB backlog took 1.6 s of its pass's 8 (`perf`,
//! 2026-12-06). How: appends fill an aligned buffer written whole at aligned positions;
//! [`SpillFile::end_writing`] writes the last one padded with zeros to the alignment (so the file is a
//! multiple of it and every read of a range within the appended bytes can be widened to aligned bounds inside
//! the file); a read widens its range to the alignment into an aligned buffer and hands back the bytes asked
//! for. A file system that refuses `O_DIRECT` (at the open, or `EINVAL` at the first write) gets an ordinary
//! unlinked temporary file, written and read as asked.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use log_core::aligned::{ALIGN, AlignedBuf, BackgroundWrites, align_down, align_up};

/// Bytes written at a time (and the write buffer's size).
pub(super) const WRITE_BYTES: usize = 1 << 20;

/// Write buffers at most (4 MiB): most of a partition's run (2-3 MiB) is handed on at once, where with two
/// buffers the judging thread waited on the disk for each MiB of a burst (the spill's 0.34-0.42 s of the 4 GiB
/// backlog's pass on two threads, while the reading thread, its chunks not taken, slept too). Eight took no less
/// time with two judging threads (two alternating pairs) and 8 MiB more memory.
const WRITE_BUFFERS: usize = 4;

/// Bytes of runs held in memory before the first goes to the file: 2 MiB (a thirty-second of what a pass may
/// take beyond its buffer; two judging threads have a spill each).
pub(super) const MEMORY_BYTES: usize = 2 << 20;

/// Runs appended, in memory or in an unlinked temporary file.
pub(super) struct SpillFile {
    /// Where the file is made (the system's temporary directory when `None`).
    dir: Option<PathBuf>,
    /// Bytes held in memory before the first goes to the file ([`MEMORY_BYTES`] but in tests).
    memory_bytes: usize,
    /// Every byte appended while they fit in `memory_bytes`; empty once there is a file.
    memory: Vec<u8>,
    /// The file, from the append that would have passed `memory_bytes`.
    disk: Option<Disk>,
    /// Bytes appended in all.
    len: u64,
    /// [`SpillFile::end_writing`] was called: no more appends.
    ended: bool,
    /// The file may be opened with `O_DIRECT` (always, but in a test of the ordinary file).
    allow_direct: bool,
}

/// The spill's file and its writing.
struct Disk {
    /// Where the file was made (and an ordinary one would be, after a refusal).
    dir: Option<PathBuf>,
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
    /// The last partial buffer was written: no more appends.
    ended: bool,
}

fn no_memory() -> io::Error {
    io::Error::new(io::ErrorKind::OutOfMemory, "cannot allocate the spill file's buffer")
}

impl SpillFile {
    /// A spill of nothing yet, held in memory up to `memory_bytes` ([`MEMORY_BYTES`] but in tests), whose file
    /// (if it comes to one) is made in `dir`.
    pub(super) fn new(dir: Option<&Path>, memory_bytes: usize) -> SpillFile {
        let dir = dir.map(Path::to_path_buf);
        SpillFile { dir, memory_bytes, memory: Vec::new(), disk: None, len: 0, ended: false, allow_direct: true }
    }

    /// Bytes appended.
    pub(super) fn len(&self) -> u64 {
        self.len
    }

    /// Appends `bytes` at [`SpillFile::len`].
    ///
    /// # Errors
    /// The file cannot be made or written; appending after [`SpillFile::end_writing`].
    pub(super) fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.ended {
            return Err(io::Error::other("appending to a spill file after its end"));
        }
        if self.disk.is_none() && self.memory.len() + bytes.len() <= self.memory_bytes {
            self.memory.try_reserve(bytes.len()).map_err(|_| no_memory())?;
            self.memory.extend_from_slice(bytes);
            self.len += bytes.len() as u64;
            return Ok(());
        }
        let disk = match self.disk {
            Some(ref mut disk) => disk,
            None => {
                let mut disk = Disk::create(self.dir.clone(), self.allow_direct)?;
                disk.append(&self.memory)?;
                self.memory = Vec::new();
                self.disk.insert(disk)
            }
        };
        disk.append(bytes)?;
        self.len += bytes.len() as u64;
        Ok(())
    }

    /// Ends the appends: the file's last partial buffer is written.
    ///
    /// # Errors
    /// The write's error.
    pub(super) fn end_writing(&mut self) -> io::Result<()> {
        self.ended = true;
        match self.disk.as_mut() {
            Some(disk) => disk.end_writing(),
            None => Ok(()),
        }
    }

    /// The `len` bytes at `pos` (within the appended bytes, after [`SpillFile::end_writing`]): from memory, or
    /// read from the file through `buf`.
    ///
    /// # Errors
    /// The read's error; a range past the appended bytes, or a read before the end of writing.
    pub(super) fn read<'b>(&'b self, pos: u64, len: usize, buf: &'b mut ReadBuf) -> io::Result<&'b [u8]> {
        let end = pos.checked_add(len as u64).filter(|&e| e <= self.len && self.ended);
        let Some(end) = end else {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "a spill read past what was written"));
        };
        match &self.disk {
            // Within `len`, which fits in memory when there is no file.
            None => Ok(&self.memory[pos as usize..end as usize]),
            Some(disk) => disk.read(pos, end, buf),
        }
    }
}

impl Disk {
    /// A new unlinked temporary file in `dir` (the system's temporary directory when `None`), opened with
    /// `O_DIRECT` where that is allowed and can be had.
    fn create(dir: Option<PathBuf>, allow_direct: bool) -> io::Result<Disk> {
        let buffer = AlignedBuf::new(WRITE_BYTES).ok_or_else(no_memory)?;
        let (file, direct) = match open_direct(dir.as_deref()).filter(|_| allow_direct) {
            Some(file) => (file, true),
            None => (ordinary(dir.as_deref())?, false),
        };
        Ok(Disk { dir, file, direct, writes: None, buffer, filled: 0, written: 0, ended: false })
    }

    fn append(&mut self, mut bytes: &[u8]) -> io::Result<()> {
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
                self.file = ordinary(self.dir.as_deref())?;
                self.direct = false;
                self.file.write_all_at(&self.buffer.as_ref()[..self.filled], 0)?;
                self.written = self.filled as u64;
            }
            result => {
                result?;
                self.written += n as u64;
                if self.direct && !self.ended {
                    // Direct writes are taken: the next ones go on while the next buffer fills.
                    self.writes =
                        self.file.try_clone().ok().and_then(|f| BackgroundWrites::start(f, WRITE_BYTES, WRITE_BUFFERS));
                }
            }
        }
        self.filled = 0;
        Ok(())
    }

    /// Writes the last partial buffer (padded with zeros to the alignment when direct).
    fn end_writing(&mut self) -> io::Result<()> {
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

    /// The bytes from `pos` to `end` (within the file's written bytes).
    fn read<'b>(&self, pos: u64, end: u64, buf: &'b mut ReadBuf) -> io::Result<&'b [u8]> {
        let (from, to) = if self.direct { (align_down(pos), align_up(end)) } else { (pos, end) };
        let span = usize::try_from(to - from).map_err(|_| no_memory())?;
        let memory = buf.at_least(span)?;
        self.file.read_exact_at(&mut memory[..span], from)?;
        let skip = (pos - from) as usize;
        Ok(&memory[skip..skip + (end - pos) as usize])
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

    /// Appends of every size read back the same by any range, from memory, a direct file or an ordinary one
    /// (moved there from memory by the append that passes [`MEMORY_BYTES`]), and nothing is read before the end
    /// of writing or past the appended bytes.
    #[test]
    fn ranges_read_back_what_was_appended() {
        let dir = tempfile::tempdir().expect("tempdir");
        let small = [24usize, 4096, 5000, 70_001, 1];
        let large = [24usize, 4096, 5000, WRITE_BYTES, 3 * WRITE_BYTES + 7, 1, WRITE_BYTES + 1];
        for (sizes, direct) in [(&small[..], None), (&large[..], Some(true)), (&large[..], Some(false))] {
            let mut f = SpillFile::new(Some(dir.path()), MEMORY_BYTES);
            f.allow_direct = direct != Some(false);
            let mut rng = log_core::workload::SplitMix64::new(3);
            let mut expected = Vec::new();
            for &n in sizes {
                let piece: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
                f.append(&piece).expect("append");
                expected.extend_from_slice(&piece);
            }
            assert_eq!(f.disk.as_ref().map(|d| d.direct), direct, "O_DIRECT on {}", dir.path().display());
            assert_eq!(f.memory.capacity() == 0, direct.is_some(), "memory freed once there is a file");
            let mut buf = ReadBuf::default();
            assert!(f.read(0, 1, &mut buf).is_err(), "a read before the end of writing");
            f.end_writing().expect("end");
            assert!(f.append(b"x").is_err(), "an append after it");
            assert_eq!(f.len(), expected.len() as u64);
            for _ in 0..200 {
                let pos = rng.next_u64() % expected.len() as u64;
                let len = (rng.next_u64() % 70_000).min(expected.len() as u64 - pos) as usize;
                let got = f.read(pos, len, &mut buf).expect("read");
                assert!(got == &expected[pos as usize..pos as usize + len], "{pos}+{len}, direct {direct:?}");
            }
            let all = f.read(0, expected.len(), &mut buf).expect("read all");
            assert!(all == expected.as_slice());
            assert!(f.read(1, expected.len(), &mut buf).is_err(), "past the end");
        }
    }
}
