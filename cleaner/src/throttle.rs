//! Kafka's `log.cleaner.io.max.bytes.per.second`: one I/O budget shared by every cleaner thread.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How far ahead of the rate the threads may run before they wait: short bursts are not worth a sleep.
const BURST: Duration = Duration::from_millis(50);

/// A rate limit on the bytes the cleaner reads and writes, shared by its threads.
///
/// Each charge of `n` bytes books `n / rate` seconds on one shared schedule; a thread whose booking ends more
/// than a short burst past now sleeps until it is due. So the bytes of all threads together, over any stretch
/// longer than the burst, stay at or under the rate.
#[derive(Debug)]
pub struct Throttler {
    bytes_per_second: f64,
    /// When the bytes booked so far are paid for.
    booked_until: Mutex<Option<Instant>>,
}

impl Throttler {
    /// A limit of `bytes_per_second` (positive; `f64::INFINITY` never waits).
    pub fn new(bytes_per_second: f64) -> Self {
        Throttler { bytes_per_second: bytes_per_second.max(1.0), booked_until: Mutex::new(None) }
    }

    /// The limit.
    pub fn bytes_per_second(&self) -> f64 {
        self.bytes_per_second
    }

    /// Books `bytes` at `now` and returns how long the caller must wait.
    pub fn book(&self, bytes: u64, now: Instant) -> Duration {
        if self.bytes_per_second.is_infinite() || bytes == 0 {
            return Duration::ZERO;
        }
        let cost = Duration::from_secs_f64(bytes as f64 / self.bytes_per_second);
        let mut booked = self.booked_until.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let start = booked.filter(|&b| b > now).unwrap_or(now);
        let until = start + cost;
        *booked = Some(until);
        until.saturating_duration_since(now + BURST)
    }

    /// Books `bytes` now and sleeps as long as the limit asks.
    pub fn charge(&self, bytes: u64) {
        let wait = self.book(bytes, Instant::now());
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bookings_past_the_burst_wait_for_the_rate() {
        let t = Throttler::new(1_000_000.0);
        let now = Instant::now();
        // 10 KB is 10 ms at 1 MB/s: within the burst.
        assert_eq!(t.book(10_000, now), Duration::ZERO);
        // Another 90 KB books up to 100 ms from now: 50 ms past the burst.
        let wait = t.book(90_000, now);
        assert!(wait.abs_diff(Duration::from_millis(50)) < Duration::from_millis(1), "{wait:?}");
        // Time has passed the bookings: no wait.
        assert_eq!(t.book(10_000, now + Duration::from_secs(1)), Duration::ZERO);
    }

    #[test]
    fn threads_share_one_schedule() {
        let t = Throttler::new(1_000_000.0);
        let now = Instant::now();
        let waits: Vec<Duration> = (0..4).map(|_| t.book(100_000, now)).collect();
        // 400 KB at 1 MB/s ends 400 ms after now; the last booker waits 350 ms.
        assert!(waits[3].abs_diff(Duration::from_millis(350)) < Duration::from_millis(1), "{waits:?}");
        assert!(waits.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(Throttler::new(f64::INFINITY).book(u64::MAX, now), Duration::ZERO);
    }
}
