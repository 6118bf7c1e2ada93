//! A read-rate limit for commands that read a broker's disks beside it (`check --io-max-bytes-per-second`),
//! as Kafka's `log.cleaner.io.max.bytes.per.second` bounds its cleaner's I/O: a [`ThrottledStore`] wraps a
//! store so that every read of its files waits its turn on one shared [`ReadRate`].
//!
//! The limit is a schedule, not a sampling: the `n`-th byte may be read no earlier than `n / rate` seconds
//! after the first read, so over any run the average stays at or under the rate, and a pause (a slow disk,
//! a stopped process) is never made up by a burst larger than one read.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use log_core::SegmentStore;
use log_core::hooked::{HookedStore, StoreHooks, StoreOp};

/// Bytes a second shared by every file of a [`ThrottledStore`] (and by every store given the same `Arc`).
#[derive(Debug)]
pub struct ReadRate {
    bytes_per_second: u64,
    /// When the schedule started, and the bytes granted since.
    schedule: Mutex<Option<(Instant, u64)>>,
}

impl ReadRate {
    /// A limit of `bytes_per_second` (at least 1).
    #[must_use]
    pub fn new(bytes_per_second: u64) -> ReadRate {
        ReadRate { bytes_per_second: bytes_per_second.max(1), schedule: Mutex::new(None) }
    }

    /// The limit, in bytes a second.
    #[must_use]
    pub fn bytes_per_second(&self) -> u64 {
        self.bytes_per_second
    }

    /// Waits until `bytes` more may be read. A schedule that has fallen behind (nothing read for a while)
    /// restarts at now, so idle time is not saved up.
    pub fn take(&self, bytes: u64) {
        let wait = {
            // A poisoned lock only means another reader panicked while holding it: the schedule is still a
            // pair of numbers, so go on with it.
            let mut schedule = self.schedule.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let now = Instant::now();
            let (start, granted) = match *schedule {
                Some((start, granted)) if start + self.due(granted) >= now => (start, granted),
                _ => (now, 0),
            };
            let granted = granted.saturating_add(bytes);
            *schedule = Some((start, granted));
            // This read may end when the bytes before it, and its own, are due.
            (start + self.due(granted)).saturating_duration_since(now)
        };
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
    }

    /// How long after the schedule's start `bytes` are due.
    fn due(&self, bytes: u64) -> Duration {
        let per_second = self.bytes_per_second;
        let whole = bytes / per_second;
        let nanos = u128::from(bytes % per_second) * 1_000_000_000 / u128::from(per_second);
        // `nanos` < 1e9 since the remainder is below the rate.
        Duration::from_secs(whole) + Duration::from_nanos(u64::try_from(nanos).unwrap_or(999_999_999))
    }
}

/// A store whose files' reads wait on a [`ReadRate`]; everything else is the inner store's ([`HookedStore`]).
pub type ThrottledStore = HookedStore<ReadRateHook>;

/// The hook of a [`ThrottledStore`]: each read waits its turn on the shared rate.
#[derive(Debug)]
pub struct ReadRateHook(Arc<ReadRate>);

impl StoreHooks for ReadRateHook {
    fn before(&self, op: StoreOp<'_>) -> io::Result<()> {
        if let StoreOp::Read(bytes) = op {
            self.0.take(bytes);
        }
        Ok(())
    }

    /// Never a view: a view's bytes would be read around the limit, so every read goes through
    /// [`log_core::Segment::read_at`] (readers fall back to reads on `Unsupported`, as for a file another
    /// process may change).
    fn allows_views(&self) -> bool {
        false
    }
}

/// `inner`, its reads limited by `rate`.
#[must_use]
pub fn throttled(inner: Arc<dyn SegmentStore>, rate: Arc<ReadRate>) -> ThrottledStore {
    HookedStore::new(inner, Arc::new(ReadRateHook(rate)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_spaces_reads_by_their_bytes() {
        let rate = ReadRate::new(1_000_000);
        assert_eq!(rate.due(1_500_000), Duration::from_millis(1500));
        assert_eq!(rate.due(0), Duration::ZERO);
        let started = Instant::now();
        // The first 100 kB are due at 0.1 s, the next at 0.2 s: the second take waits at least 0.1 s.
        rate.take(100_000);
        rate.take(100_000);
        assert!(started.elapsed() >= Duration::from_millis(200), "{:?}", started.elapsed());
    }
}
