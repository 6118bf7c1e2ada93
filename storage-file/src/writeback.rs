//! Starting the kernel's writeback of a file's range without waiting for it (Linux's `sync_file_range` with
//! `SYNC_FILE_RANGE_WRITE`), so a long write reaches the disk as it goes instead of all at its final sync.

use std::fs::File;

/// Bytes written past the last writeback start after which the kernel is asked to start writing them to the
/// disk (not waited for). Without it nothing is written back until the dirty pages pass the kernel's
/// background threshold (a tenth of memory) or the file is synced: a sync at the end of a cleaned segment
/// then waits for all of it, while the disk sat idle as the pass computed. 8 MiB: large enough that the
/// requests cost nothing (a system call each), small enough that little is left for the sync.
pub const STEP_BYTES: u64 = 8 << 20;

/// Starts writing `len` bytes of `file` from `offset` to the disk, and returns at once: true when the kernel
/// took the request. A hint only: it promises nothing about durability (a later `sync_data` does), and a
/// refusal (a file system that does not support it, a range past a 63-bit offset) changes nothing, so callers
/// go on without it.
#[cfg(target_os = "linux")]
pub fn start(file: &File, offset: u64, len: u64) -> bool {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else { return false };
    // SAFETY: `sync_file_range` reads only its integer arguments; the descriptor is `file`'s, open for as long
    // as the borrow lives. With SYNC_FILE_RANGE_WRITE alone it neither waits for nor changes any data, so no
    // memory of this process is touched and the file's contents are unaffected.
    #[expect(unsafe_code, reason = "a system call on a borrowed descriptor; see SAFETY")]
    let done = unsafe { libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE) };
    done == 0
}

/// Elsewhere the kernel writes back on its own schedule; the final sync waits for everything.
#[cfg(not(target_os = "linux"))]
pub fn start(_file: &File, _offset: u64, _len: u64) -> bool {
    false
}
