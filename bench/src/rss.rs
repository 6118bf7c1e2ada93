//! Peak resident memory of a stretch of work, split as Linux splits it: anonymous (heaps, offset maps, a
//! memory backend's segments) and file-backed (mapped segments). A sampler thread reads `/proc/self/status`
//! every millisecond while the work runs; the peaks are reported above what the process held when it began,
//! so that what was resident before (a prepared log, say) does not count.
//!
//! Sampling can miss a spike shorter than a millisecond; the figures are a floor of the true peak, close to it
//! for passes that hold their memory for their whole length.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Resident memory figures, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Resident {
    /// Anonymous memory.
    pub anon: u64,
    /// File-backed memory (mapped files).
    pub file: u64,
}

/// The process's resident memory now (zeros where `/proc` cannot be read).
pub fn now() -> Resident {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = |field: &str| -> u64 {
        status
            .lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0)
            * 1024
    };
    Resident { anon: kib("RssAnon:"), file: kib("RssFile:") }
}

/// Gives the memory the allocator keeps after frees back to the system, so that an earlier stretch of work's
/// freed heap neither counts in the starting figure nor hides the next one's growth (glibc keeps freed blocks
/// of up to 32 MiB resident for reuse: without this, a map built where an earlier one was freed measured 0).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[expect(unsafe_code, reason = "malloc_trim has no safe wrapper")]
pub fn release_freed_heap() {
    // SAFETY: malloc_trim takes a plain integer, touches only the allocator's own free lists (under its locks),
    // and is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Elsewhere the allocator's retained memory is left as it is.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn release_freed_heap() {}

/// Runs `f` and returns its result with the peaks of anonymous and file-backed memory above what the process
/// held when it began (after [`release_freed_heap`]).
pub fn peak_during<T>(f: impl FnOnce() -> T) -> (T, Resident) {
    release_freed_heap();
    let before = now();
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut peak = Resident::default();
            loop {
                let r = now();
                peak.anon = peak.anon.max(r.anon);
                peak.file = peak.file.max(r.file);
                if done.load(Ordering::Relaxed) {
                    return peak;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let out = f();
    done.store(true, Ordering::Relaxed);
    let peak = sampler.join().unwrap_or_default();
    (out, Resident { anon: peak.anon.saturating_sub(before.anon), file: peak.file.saturating_sub(before.file) })
}
