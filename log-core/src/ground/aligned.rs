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
