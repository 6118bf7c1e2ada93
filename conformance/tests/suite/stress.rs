//! Appenders, readers and cleaner threads on several logs at once, for a bounded time (`STRESS_SECS`, 3 by
//! default), on the memory and the file backend, with a dedupe buffer too small for one pass:
//!
//! - every scan a reader makes sees strictly increasing offsets, and every record it sees is the one appended
//!   at its offset (the values name their key and offset);
//! - a key's latest record, as its appender last acknowledged it, is always readable at its offset, unless a
//!   newer record of the key was appended since;
//! - once the appenders stop and a final pass cleans everything, each log is exactly the model's: one record
//!   per key, its latest, at the offset it was appended at.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cleaner::manager::{CleanerManager, ManagerConfig, Mode};
use cleaner::{Cleaner, CleanerConfig, LogSettings, MapKind, PassOptions, SystemClock};
use conformance::{Files, Harness, Mem};
use log_core::{Log, LogConfig};

const KEYS: u64 = 300;
/// Appends per log at most, so that the logs (and the final pass) stay small whatever the machine's speed.
const MAX_APPENDS: u64 = 150_000;

/// What the appender of one log acknowledged: key → (offset, value) of its latest record.
type Latest = Mutex<BTreeMap<String, (u64, Option<String>)>>;

struct Subject {
    log: Arc<Log>,
    latest: Latest,
}

fn value_for(key: &str, offset: u64) -> String {
    format!("{key}#{offset}")
}

/// A small deterministic generator (no dependency, the same run each time for a seed).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn append_until(subject: &Subject, stop: &AtomicBool, seed: u64, appended: &AtomicU64) {
    let mut rng = Rng(seed | 1);
    for _ in 0..MAX_APPENDS {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let key = format!("key-{}", rng.next() % KEYS);
        // The latest map is updated under the same lock as the append, so a reader that finds a record gone
        // and looks again sees the newer record that replaced it.
        let mut latest = subject.latest.lock().expect("latest");
        let offset = subject.log.next_offset();
        let value = (!rng.next().is_multiple_of(20)).then(|| value_for(&key, offset));
        let got = match &value {
            Some(v) => subject.log.put(key.as_bytes(), v.as_bytes()),
            None => subject.log.delete(key.as_bytes()),
        }
        .expect("append");
        assert_eq!(got, offset);
        latest.insert(key, (offset, value));
        drop(latest);
        appended.fetch_add(1, Ordering::Relaxed);
    }
}

fn read_until(subject: &Subject, stop: &AtomicBool, seed: u64, checks: &AtomicU64) {
    let mut rng = Rng(seed | 1);
    while !stop.load(Ordering::Relaxed) {
        // A full scan: increasing offsets, every record the one appended at its offset.
        let mut previous = None;
        for r in subject.log.snapshot().reader(0) {
            let r = r.expect("readable");
            assert!(previous < Some(r.offset), "offsets went back: {previous:?} then {}", r.offset);
            previous = Some(r.offset);
            let key = String::from_utf8(r.key.clone().expect("key")).expect("utf8");
            if let Some(v) = &r.value {
                assert_eq!(v, value_for(&key, r.offset).as_bytes(), "offset {} holds another record", r.offset);
            }
        }
        // Latest values stay readable.
        for _ in 0..50 {
            let key = format!("key-{}", rng.next() % KEYS);
            let Some((offset, value)) = subject.latest.lock().expect("latest").get(&key).cloned() else { continue };
            let found = subject.log.read(offset).expect("read");
            if found.as_ref().is_some_and(|r| r.offset == offset) {
                let r = found.expect("found");
                assert_eq!(r.key.as_deref(), Some(key.as_bytes()));
                assert_eq!(r.value.map(|v| String::from_utf8(v).expect("utf8")), value);
            } else {
                let now = subject.latest.lock().expect("latest").get(&key).map(|l| l.0);
                assert!(now > Some(offset), "the latest record of {key} at {offset} went while it was the latest");
            }
            checks.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn stress(harness: &dyn Harness, logs: usize, seconds: f64) {
    let mut fixtures = Vec::new();
    let mut subjects = Vec::new();
    for _ in 0..logs {
        let mut fixture = harness.fixture();
        let log = Log::open(
            fixture.open_store(),
            log_core::OpenOptions::new(LogConfig { segment_bytes: 16 << 10, ..LogConfig::default() }),
        )
        .expect("open");
        subjects.push(Arc::new(Subject { log: Arc::new(log), latest: Mutex::new(BTreeMap::new()) }));
        fixtures.push(fixture);
    }
    // Two threads, each with a buffer for about a third of the keys: most passes are partial.
    let buffer = 2 * MapKind::Compact.bytes_for(KEYS as usize / 3, 0.9, 16);
    let config = ManagerConfig {
        threads: 2,
        dedupe_buffer_bytes: buffer,
        map: MapKind::Compact,
        backoff_ms: 2,
        ..ManagerConfig::default()
    };
    let manager = Arc::new(CleanerManager::new(config, Arc::new(SystemClock)).expect("manager"));
    let settings = LogSettings { min_cleanable_dirty_ratio: 0.2, segment_bytes: 16 << 10, ..LogSettings::default() };
    for (i, s) in subjects.iter().enumerate() {
        manager.add_log(&format!("log-{i}"), Arc::clone(&s.log), settings.clone(), None).expect("add");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let (appended, checks) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut threads = Vec::new();
    for (i, s) in subjects.iter().enumerate() {
        let (s, stop, appended) = (Arc::clone(s), Arc::clone(&stop), Arc::clone(&appended));
        threads.push(std::thread::spawn(move || append_until(&s, &stop, 17 + i as u64, &appended)));
    }
    for (i, s) in subjects.iter().enumerate() {
        let (s, stop, checks) = (Arc::clone(s), Arc::clone(&stop), Arc::clone(&checks));
        threads.push(std::thread::spawn(move || read_until(&s, &stop, 91 + i as u64, &checks)));
    }
    let watcher = {
        let m = Arc::clone(&manager);
        std::thread::spawn(move || m.run(Mode::Watch))
    };
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs_f64(seconds) {
        std::thread::sleep(Duration::from_millis(20));
        // A reader that failed ends early.
        if threads[logs..].iter().any(std::thread::JoinHandle::is_finished) {
            break;
        }
    }
    stop.store(true, Ordering::SeqCst);
    for t in threads {
        t.join().expect("an appender or reader failed");
    }
    manager.stop(false);
    let status = watcher.join().expect("the manager's threads end");
    assert_eq!(status.gauges.uncleanable_partitions_count, 0, "{:?}", status.logs);
    assert_eq!(status.gauges.dead_thread_count, 0);
    assert!(status.passes > 0, "the cleaner ran no pass");
    // The final pass, then the model: the latest record of every key, at its offset.
    let mut full = Cleaner::new(
        CleanerConfig { map: MapKind::Compact, dedupe_buffer_bytes: 1 << 20, ..CleanerConfig::default() },
        Arc::new(SystemClock),
    )
    .expect("cleaner");
    for s in &subjects {
        s.log.roll().expect("roll");
        full.clean_until_clean(&s.log, PassOptions::default(), |_| Ok(())).expect("final passes");
        let got: Vec<(u64, String, Option<String>)> = s
            .log
            .snapshot()
            .reader(0)
            .map(|r| {
                let r = r.expect("read");
                let text = |b: Vec<u8>| String::from_utf8(b).expect("utf8");
                (r.offset, text(r.key.expect("key")), r.value.map(text))
            })
            .collect();
        let mut want: Vec<(u64, String, Option<String>)> =
            s.latest.lock().expect("latest").iter().map(|(k, (o, v))| (*o, k.clone(), v.clone())).collect();
        want.sort();
        assert_eq!(got, want, "the log after the final pass is not the model's");
    }
    eprintln!(
        "{}: {logs} logs, {:.1} s: {} appends, {} latest-value checks, {} passes by 2 cleaner threads",
        harness.name(),
        started.elapsed().as_secs_f64(),
        appended.load(Ordering::Relaxed),
        checks.load(Ordering::Relaxed),
        status.passes
    );
    drop(fixtures);
}

fn seconds() -> f64 {
    std::env::var("STRESS_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(3.0)
}

#[test]
fn appenders_readers_and_cleaner_threads_on_memory_logs() {
    stress(&Mem, 3, seconds());
}

#[test]
fn appenders_readers_and_cleaner_threads_on_file_logs() {
    stress(&Files, 3, seconds());
}
