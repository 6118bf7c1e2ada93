//! Memory aligned for direct I/O (Linux's `O_DIRECT`), which a file store's bulk copies and the external
//! pass's spill file write and read past the page cache: the memory, the file position and the length of every
//! such transfer must be multiples of the disk's logical block size, which [`ALIGN`] covers.
//!
//! # Example
//! ```
//! let mut buf = log_core::aligned::AlignedBuf::new(8192).unwrap();
//! assert_eq!(buf.as_mut().as_ptr() as usize % log_core::aligned::ALIGN, 0);
//! assert_eq!(buf.as_mut().len(), 8192);
//! assert_eq!(log_core::aligned::align_up(1), 4096);
//! ```

/// The alignment of a direct transfer's memory, position and length: the largest logical block size of the
/// disks Linux drives (4 KiB; most take 512).
pub const ALIGN: usize = 4096;

/// `n` rounded down to a multiple of [`ALIGN`].
pub const fn align_down(n: u64) -> u64 {
    n & !(ALIGN as u64 - 1)
}

/// `n` rounded up to a multiple of [`ALIGN`] (saturating at the largest multiple).
pub const fn align_up(n: u64) -> u64 {
    align_down(n.saturating_add(ALIGN as u64 - 1))
}

/// A zeroed buffer of a fixed length whose first byte is aligned to [`ALIGN`]: a vector of [`ALIGN`] bytes
/// more, used from its first aligned byte, so no unsafe allocation is needed.
pub struct AlignedBuf {
    memory: Vec<u8>,
    start: usize,
    len: usize,
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedBuf").field("len", &self.len).finish_non_exhaustive()
    }
}

impl AlignedBuf {
    /// A buffer of `len` bytes: `None` when the memory cannot be had (never an abort).
    pub fn new(len: usize) -> Option<AlignedBuf> {
        let total = len.checked_add(ALIGN)?;
        let mut memory = Vec::new();
        memory.try_reserve_exact(total).ok()?;
        memory.resize(total, 0);
        let start = memory.as_ptr().align_offset(ALIGN);
        (start < ALIGN).then_some(AlignedBuf { memory, start, len })
    }

    /// The buffer's length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a buffer of no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl AsRef<[u8]> for AlignedBuf {
    fn as_ref(&self) -> &[u8] {
        &self.memory[self.start..self.start + self.len]
    }
}

impl AsMut<[u8]> for AlignedBuf {
    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.memory[self.start..self.start + self.len]
    }
}

impl AlignedBuf {
    /// A buffer of no bytes that holds no memory: a stand-in while a buffer is away.
    pub fn empty() -> AlignedBuf {
        AlignedBuf { memory: Vec::new(), start: 0, len: 0 }
    }
}

/// A file's writes of aligned buffers done on a thread of their own, in order, while the caller fills the
/// next buffer: a direct write blocks until the disk has the bytes (no page cache takes them), which a single
/// thread would otherwise spend waiting, 0.4 ms a MiB here (1.0 s of the 4 GiB backlog's pass).
///
/// At most `buffers` buffers in all (at least two): the one the caller fills and those handed on. A caller
/// that writes in bursts (the external pass spills a partition's run of a few MiB at once) hands on a burst
/// without waiting when it has buffers enough; the ones past the second are taken only when a burst needs
/// them. Errors come back with their buffer and are returned by the next call; a write after an error is
/// refused with it.
pub struct BackgroundWrites {
    jobs: Option<std::sync::mpsc::SyncSender<(AlignedBuf, usize, u64)>>,
    /// In a mutex only so that the writer is `Sync` (a segment's state is shared); reached through `&mut`.
    done: std::sync::Mutex<std::sync::mpsc::Receiver<(AlignedBuf, std::io::Result<()>)>>,
    worker: Option<std::thread::JoinHandle<()>>,
    /// Buffers of the writer's size not in use.
    spares: Vec<AlignedBuf>,
    /// Bytes of each buffer.
    len: usize,
    /// Buffers made so far, the caller's first one included.
    made: usize,
    /// The most buffers there may be.
    most: usize,
    /// Writes handed on and not yet given back.
    in_flight: usize,
    failed: Option<std::io::ErrorKind>,
}

impl std::fmt::Debug for BackgroundWrites {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackgroundWrites").field("in_flight", &self.in_flight).finish_non_exhaustive()
    }
}

impl BackgroundWrites {
    /// Writes to `file` on a new thread, with up to `buffers` buffers (at least two, the caller's own one
    /// included) of `len` bytes. `None` when no thread or no second buffer can be had (the caller then writes
    /// itself).
    pub fn start(file: std::fs::File, len: usize, buffers: usize) -> Option<BackgroundWrites> {
        use std::os::unix::fs::FileExt;
        let most = buffers.max(2);
        let spare = AlignedBuf::new(len)?;
        let (jobs, inbox) = std::sync::mpsc::sync_channel::<(AlignedBuf, usize, u64)>(most);
        let (outbox, done) = std::sync::mpsc::channel();
        let worker = std::thread::Builder::new()
            .name("direct-writes".into())
            .spawn(move || {
                for (buf, n, position) in inbox {
                    let result = file.write_all_at(&buf.as_ref()[..n], position);
                    if outbox.send((buf, result)).is_err() {
                        return;
                    }
                }
            })
            .ok()?;
        Some(BackgroundWrites {
            jobs: Some(jobs),
            done: std::sync::Mutex::new(done),
            worker: Some(worker),
            spares: vec![spare],
            len,
            made: 2,
            most,
            in_flight: 0,
            failed: None,
        })
    }

    /// Hands `buf[..n]` on to be written at `position` and returns an empty buffer to fill next: a spare, a
    /// new one while fewer than the most were made, or else the oldest one handed on, once its write is done.
    ///
    /// # Errors
    /// The error of a write before (the bytes handed on now are then not written), or of this one's hand-off.
    pub fn write(&mut self, buf: AlignedBuf, n: usize, position: u64) -> std::io::Result<AlignedBuf> {
        let next = match self.spares.pop() {
            Some(spare) => spare,
            None => match (self.made < self.most).then(|| AlignedBuf::new(self.len)).flatten() {
                Some(made) => {
                    self.made += 1;
                    made
                }
                None => self.wait()?.unwrap_or_else(AlignedBuf::empty),
            },
        };
        if let Some(kind) = self.failed {
            return Err(std::io::Error::new(kind, "an earlier direct write failed"));
        }
        let Some(jobs) = &self.jobs else { return Err(std::io::Error::other("the direct writes ended")) };
        jobs.send((buf, n, position)).map_err(|_| std::io::Error::other("the direct writer's thread is gone"))?;
        self.in_flight += 1;
        Ok(next)
    }

    /// Waits for the oldest write in flight, if any: its buffer back.
    fn wait(&mut self) -> std::io::Result<Option<AlignedBuf>> {
        if self.in_flight == 0 {
            return Ok(None);
        }
        self.in_flight -= 1;
        let done = self.done.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (buf, result) = done.recv().map_err(|_| std::io::Error::other("the direct writer's thread is gone"))?;
        if let Err(e) = result {
            self.failed = Some(e.kind());
            return Err(e);
        }
        Ok(Some(buf))
    }

    /// Waits until every byte handed on is written.
    ///
    /// # Errors
    /// A write that failed.
    pub fn drain(&mut self) -> std::io::Result<()> {
        while self.in_flight > 0 {
            if let Some(buf) = self.wait()? {
                self.spares.push(buf);
            }
        }
        match self.failed {
            Some(kind) => Err(std::io::Error::new(kind, "an earlier direct write failed")),
            None => Ok(()),
        }
    }

    /// True while a write is under way.
    pub fn in_flight(&self) -> bool {
        self.in_flight > 0
    }
}

impl Drop for BackgroundWrites {
    /// Ends the thread once its last write is done (callers drain first to learn its result).
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Buffers handed on land at their positions, each buffer given back is the writer's size, and a write
    /// that fails (a descriptor not open for writing) is reported by the next call and by the drain.
    #[test]
    fn writes_land_where_asked_and_a_failure_is_reported() {
        let path = std::env::temp_dir().join(format!("aligned-writes-{}", std::process::id()));
        let file = std::fs::File::create(&path).expect("create");
        let mut writes = BackgroundWrites::start(file, 8192, 3).expect("start");
        let mut buf = AlignedBuf::new(8192).expect("buffer");
        for i in 0..5u8 {
            buf.as_mut().fill(i);
            buf = writes.write(buf, if i == 4 { 100 } else { 8192 }, u64::from(i) * 8192).expect("write");
            assert_eq!(buf.len(), 8192);
        }
        writes.drain().expect("drain");
        assert!(!writes.in_flight());
        let bytes = std::fs::read(&path).expect("read");
        assert_eq!(bytes.len(), 4 * 8192 + 100);
        assert!(bytes.chunks(8192).enumerate().all(|(i, c)| c.iter().all(|&b| usize::from(b) == i)));
        drop(writes);

        let read_only = std::fs::File::open(&path).expect("open");
        let mut writes = BackgroundWrites::start(read_only, 4096, 2).expect("start");
        let buf = writes.write(AlignedBuf::new(4096).expect("buffer"), 4096, 0).expect("handed on");
        assert!(writes.write(buf, 4096, 4096).is_err(), "the failure before is the next call's");
        assert!(writes.drain().is_err(), "and the drain's");
        let _ = std::fs::remove_file(&path);
    }
}
