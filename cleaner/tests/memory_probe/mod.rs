//! Reading this process's memory figures from `/proc/self/status`, for the memory tests.
#![allow(dead_code)]

use std::sync::Arc;

/// A figure of `/proc/self/status` in KiB (Linux).
pub fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with(field)).expect(field);
    line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("a number")
}

/// The highest value a figure of `/proc/self/status` reaches while `f` runs (sampled every millisecond).
pub fn peak_kib_during<T>(field: &'static str, f: impl FnOnce() -> T) -> (T, u64) {
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut peak = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(status_kib(field));
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            peak.max(status_kib(field))
        })
    };
    let out = f();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    (out, sampler.join().expect("sampler"))
}
