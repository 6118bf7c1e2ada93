//! The cleaner manager: dirtiest first above the minimum ratio, a log past its maximum lag whatever its
//! ratio (its active segment rolled), failures isolated and retried with backoff and reopening, then only on
//! request, a busy log waiting without a failure, a failure keeping its error, several threads, the I/O throttle, a stop that abandons passes cleanly, and Kafka's gauges.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cleaner::manager::{CleanerManager, Event, LogState, ManagerConfig, Mode, OldestDirtyFirst};
use cleaner::{Clock, LogSettings, ManualClock, MapKind};
use log_core::hooked::{HookedStore, StoreHooks, StoreOp};
use log_core::{AppendRecord, Log, LogConfig, SegmentStore};
use storage_mem::MemStore;
use storage_mem::fault::{Op, fault_store};

const NOW: i64 = 1_000_000_000;

fn config(threads: usize) -> ManagerConfig {
    ManagerConfig {
        threads,
        dedupe_buffer_bytes: 4 << 20,
        map: MapKind::Compact,
        backoff_ms: 5,
        retry_backoff_ms: 1000,
        ..ManagerConfig::default()
    }
}

fn log_config() -> LogConfig {
    LogConfig { index_interval_bytes: 64, ..LogConfig::default() }
}

/// `copies` rounds over `keys` keys stamped `ts`, each round a closed segment.
fn fill(log: &Log, keys: u32, copies: u32, ts: i64) {
    for round in 0..copies {
        for k in 0..keys {
            let (key, value) = (format!("k{k}"), format!("round {round} of a value"));
            let rec =
                AppendRecord { key: Some(key.as_bytes()), value: Some(value.as_bytes()), timestamp: ts, headers: &[] };
            log.append(&rec).expect("append");
        }
        log.roll().expect("roll");
    }
}

fn new_log(keys: u32, copies: u32, ts: i64) -> Arc<Log> {
    let log = Log::open(Arc::new(MemStore::new()), log_core::OpenOptions::new(log_config())).expect("open");
    fill(&log, keys, copies, ts);
    Arc::new(log)
}

/// The logs cleaned, in order, and the events.
fn record_events(manager: &CleanerManager) -> Arc<Mutex<Vec<Event>>> {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    manager.on_event(move |e| sink.lock().expect("events").push(e.clone()));
    events
}

fn cleaned(events: &Mutex<Vec<Event>>) -> Vec<String> {
    events
        .lock()
        .expect("events")
        .iter()
        .filter_map(|e| match e {
            Event::Cleaned { log, .. } => Some(log.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn the_dirtiest_log_goes_first_and_a_log_below_its_ratio_waits() {
    let clock = Arc::new(ManualClock::new(NOW));
    let manager = CleanerManager::new(config(1), clock.clone()).expect("manager");
    let events = record_events(&manager);
    // Each log is cleaned once, then gets a fresh round of writes: its dirty ratio is then about one
    // round over what the pass kept (one round): 1/2 for one round, 3/4 for three, 5/6 for five.
    let logs: Vec<(&str, Arc<Log>, u32)> =
        vec![("a", new_log(200, 2, NOW), 1), ("b", new_log(200, 2, NOW), 5), ("c", new_log(200, 2, NOW), 3)];
    for (name, log, _) in &logs {
        manager.add_log(name, Arc::clone(log), LogSettings::default(), None).expect("add");
    }
    manager.run(Mode::UntilClean);
    events.lock().expect("events").clear();
    for (_, log, rounds) in &logs {
        fill(log, 200, *rounds, NOW);
    }
    manager.run(Mode::UntilClean);
    assert_eq!(cleaned(&events)[..3], ["b", "c", "a"], "dirtiest first");
    // A log that was cleaned and got a few more records stays below 0.5 and is left alone.
    let quiet = new_log(200, 3, NOW);
    manager.add_log("quiet", Arc::clone(&quiet), LogSettings::default(), None).expect("add");
    manager.run(Mode::UntilClean);
    fill(&quiet, 20, 1, NOW);
    events.lock().expect("events").clear();
    let status = manager.run(Mode::UntilClean);
    assert!(cleaned(&events).is_empty(), "{:?}", cleaned(&events));
    let q = status.logs.iter().find(|l| l.name == "quiet").expect("quiet");
    assert!(q.dirty_ratio > 0.0 && q.dirty_ratio < 0.5, "{}", q.dirty_ratio);
}

#[test]
fn a_log_past_its_maximum_lag_is_cleaned_whatever_its_ratio_and_its_active_segment_is_rolled() {
    let clock = Arc::new(ManualClock::new(NOW));
    let manager = CleanerManager::new(config(1), clock.clone()).expect("manager");
    let events = record_events(&manager);
    let log = new_log(100, 3, NOW);
    let settings = LogSettings { max_compaction_lag_ms: 60_000, ..LogSettings::default() };
    manager.add_log("late", Arc::clone(&log), settings, None).expect("add");
    manager.run(Mode::UntilClean);
    // A few records, well below the ratio, some of them in the active segment.
    fill(&log, 5, 1, NOW);
    let rec = AppendRecord { key: Some(b"k1"), value: Some(b"in the active segment"), timestamp: NOW, headers: &[] };
    log.append(&rec).expect("append");
    events.lock().expect("events").clear();
    manager.run(Mode::UntilClean);
    assert!(cleaned(&events).is_empty(), "below its ratio and not overdue yet");
    clock.advance(120_000);
    manager.run(Mode::UntilClean);
    let events = events.lock().expect("events").clone();
    assert!(matches!(events.first(), Some(Event::Rolled { log }) if log == "late"), "{events:?}");
    assert!(events.iter().any(|e| matches!(e, Event::Cleaned { log, .. } if log == "late")));
    let latest = log.snapshot().reader(0).filter_map(Result::ok).filter(|r| r.key.as_deref() == Some(b"k1")).count();
    assert_eq!(latest, 1, "the record from the active segment was cleaned with the rest");
    let status = manager.status();
    assert!(status.gauges.max_compaction_delay_secs >= 59.0, "{:?}", status.gauges);
}

#[test]
fn a_failing_log_is_isolated_retried_after_reopening_and_then_waits_for_a_request() {
    let clock = Arc::new(ManualClock::new(NOW));
    let manager = CleanerManager::new(config(2), clock.clone()).expect("manager");
    let events = record_events(&manager);
    // A log whose store fails the pass's first rename (the commit): the failure poisons it.
    let mem: Arc<dyn SegmentStore> = Arc::new(MemStore::new());
    let faults = Arc::new(fault_store(Arc::clone(&mem)));
    let flaky = Log::open(Arc::clone(&faults) as Arc<dyn SegmentStore>, log_core::OpenOptions::new(log_config()))
        .expect("open");
    fill(&flaky, 100, 3, NOW);
    faults.hooks().fail(Op::Rename, faults.hooks().count(Op::Rename));
    let reopen_store = Arc::clone(&mem);
    let opener: cleaner::manager::Opener =
        Box::new(move || Ok(Log::open(Arc::clone(&reopen_store), log_core::OpenOptions::new(log_config()))?));
    manager.add_log("flaky", Arc::new(flaky), LogSettings::default(), Some(opener)).expect("add");
    for name in ["ok-1", "ok-2", "ok-3"] {
        manager.add_log(name, new_log(100, 3, NOW), LogSettings::default(), None).expect("add");
    }
    let status = manager.run(Mode::UntilClean);
    let by = |name: &str| status.logs.iter().find(|l| l.name == name).expect("log").clone();
    let flaky_status = by("flaky");
    assert_eq!(flaky_status.state, LogState::Uncleanable);
    assert!(flaky_status.last_error.as_deref().is_some_and(|e| e.contains("rename")), "{flaky_status:?}");
    assert_eq!((flaky_status.failures, flaky_status.retry_at_ms), (1, Some(NOW + 1000)));
    assert_eq!(status.gauges.uncleanable_partitions_count, 1);
    assert!(status.gauges.uncleanable_bytes > 0);
    for name in ["ok-1", "ok-2", "ok-3"] {
        assert_eq!((by(name).state, by(name).dirty_bytes), (LogState::Idle, 0), "{name} was cleaned");
    }
    // Not due yet: nothing happens. Then due: the log is reopened (it was poisoned) and cleaned.
    manager.run(Mode::UntilClean);
    assert_eq!(manager.status().logs[0].state, LogState::Uncleanable);
    clock.advance(1000);
    let status = manager.run(Mode::UntilClean);
    let flaky_status = status.logs.iter().find(|l| l.name == "flaky").expect("flaky");
    assert_eq!((flaky_status.state, flaky_status.dirty_bytes, flaky_status.total_failures), (LogState::Idle, 0, 1));
    assert!(cleaned(&events).contains(&"flaky".to_owned()));
}

#[test]
fn retries_are_bounded_then_wait_for_a_request() {
    let clock = Arc::new(ManualClock::new(NOW));
    let manager = CleanerManager::new(config(1), clock.clone()).expect("manager");
    // A frame in the middle of a closed segment is damaged: its hint is trusted at open, and every pass
    // finds the damage when it verifies the frame.
    let store: Arc<dyn SegmentStore> = Arc::new(MemStore::new());
    {
        let log = Log::open(Arc::clone(&store), log_core::OpenOptions::new(log_config())).expect("open");
        fill(&log, 100, 2, NOW);
    }
    let name = log_core::format::native::names::file_name(0, log_core::format::native::names::FileKind::Log);
    let file = store.open(&name).expect("open");
    let mut bytes = vec![0; file.len() as usize];
    file.read_at(0, &mut bytes).expect("read");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    store.delete(&name).expect("delete");
    let file = store.create(&name).expect("create");
    file.append(&bytes).expect("write");
    file.sync().expect("sync");
    let log = Log::open(Arc::clone(&store), log_core::OpenOptions::new(log_config())).expect("the hint is trusted");
    manager.add_log("damaged", Arc::new(log), LogSettings::default(), None).expect("add");
    let mut waits = Vec::new();
    for _ in 0..5 {
        manager.run(Mode::UntilClean);
        let l = manager.status().logs[0].clone();
        waits.push(l.retry_at_ms.map(|at| at - clock.now_ms()));
        clock.advance(100_000);
    }
    assert_eq!(waits, vec![Some(1000), Some(2000), Some(4000), None, None], "three retries, backing off, then none");
    let l = manager.status().logs[0].clone();
    assert_eq!((l.failures, l.total_failures), (4, 4));
    assert!(manager.any_corruption());
    assert_eq!(manager.retry_uncleanable(Some("damaged")), 1);
    manager.run(Mode::UntilClean);
    assert_eq!(manager.status().logs[0].total_failures, 5, "retried on request");
}

#[test]
fn several_threads_clean_many_logs_and_fill_the_gauges() {
    let manager = CleanerManager::with_policy(config(2), Arc::new(ManualClock::new(NOW)), Box::new(OldestDirtyFirst))
        .expect("manager");
    let logs: Vec<Arc<Log>> = (0..8).map(|i| new_log(300, 2 + i % 3, NOW - i64::from(i))).collect();
    for (i, log) in logs.iter().enumerate() {
        manager.add_log(&format!("log-{i}"), Arc::clone(log), LogSettings::default(), None).expect("add");
    }
    let status = manager.run(Mode::UntilClean);
    assert_eq!(status.policy, "oldest-dirty-first");
    assert_eq!(status.passes, 8);
    assert!(status.logs.iter().all(|l| l.dirty_bytes == 0 && l.passes == 1), "{:?}", status.logs);
    for log in &logs {
        assert_eq!(log.snapshot().reader(0).count(), 300, "one record a key");
    }
    let g = &status.gauges;
    assert!(g.max_buffer_utilization_percent > 0.0 && g.max_buffer_utilization_percent <= 100.0, "{g:?}");
    assert!(g.cleaner_recopy_percent > 0.0 && g.cleaner_recopy_percent < 100.0, "{g:?}");
    assert_eq!((g.dead_thread_count, g.uncleanable_partitions_count), (0, 0));
}

#[test]
fn the_throttle_holds_the_threads_to_the_rate() {
    let rate = 4_000_000.0;
    let manager = CleanerManager::new(
        ManagerConfig { io_max_bytes_per_second: rate, ..config(2) },
        Arc::new(ManualClock::new(NOW)),
    )
    .expect("manager");
    let logs: Vec<Arc<Log>> = (0..2).map(|_| new_log(2000, 4, NOW)).collect();
    for (i, log) in logs.iter().enumerate() {
        manager.add_log(&format!("log-{i}"), Arc::clone(log), LogSettings::default(), None).expect("add");
    }
    let bytes: u64 = logs.iter().map(|l| l.snapshot().closed().iter().map(|s| s.size()).sum::<u64>()).sum();
    let started = Instant::now();
    manager.run(Mode::UntilClean);
    // Both passes read every closed byte twice (pass 1 and pass 2); less a burst, that takes at least this.
    let least = Duration::from_secs_f64((2 * bytes) as f64 / rate) - Duration::from_millis(100);
    assert!(started.elapsed() >= least, "{:?} for {bytes} bytes at {rate} B/s", started.elapsed());
}

/// A hook that holds the first pass output's creation until the test lets it go: a pass is then certainly
/// running, past its map and into its copy, when the test stops it.
#[derive(Debug)]
struct Gate {
    entered: Mutex<Option<std::sync::mpsc::Sender<()>>>,
    go: Mutex<Option<std::sync::mpsc::Receiver<()>>>,
}

impl StoreHooks for Gate {
    fn before(&self, op: StoreOp<'_>) -> std::io::Result<()> {
        if let StoreOp::Create(name) = op
            && name.ends_with(".cleaned")
            && let Some(entered) = self.entered.lock().expect("gate").take()
        {
            let _ = entered.send(());
            if let Some(go) = self.go.lock().expect("gate").take() {
                let _ = go.recv();
            }
        }
        Ok(())
    }
}

#[test]
fn a_stopped_watch_abandons_its_pass_and_changes_nothing() {
    // The pass is held while it creates its first output, the watch is stopped, then the pass goes on: it
    // must see the stop before its commit. Nothing here depends on timing: without the stop the pass would
    // commit (the second half shows it does).
    let (entered_tx, entered_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel();
    let inner = Arc::new(MemStore::new());
    let gate = Gate { entered: Mutex::new(Some(entered_tx)), go: Mutex::new(Some(go_rx)) };
    let store = Arc::new(HookedStore::new(Arc::clone(&inner) as Arc<dyn SegmentStore>, Arc::new(gate)));
    let log = Arc::new(
        Log::open(Arc::clone(&store) as Arc<dyn SegmentStore>, log_core::OpenOptions::new(log_config())).expect("open"),
    );
    fill(&log, 300, 3, NOW);
    let before: Vec<u64> = log.snapshot().reader(0).map(|r| r.expect("read").offset).collect();
    let manager = Arc::new(CleanerManager::new(config(1), Arc::new(ManualClock::new(NOW))).expect("manager"));
    manager.add_log("big", Arc::clone(&log), LogSettings::default(), None).expect("add");
    let watcher = {
        let m = Arc::clone(&manager);
        std::thread::spawn(move || m.run(Mode::Watch))
    };
    entered_rx.recv().expect("a pass starts copying");
    manager.stop(true);
    go_tx.send(()).expect("let the pass go on");
    let status = watcher.join().expect("the watch ends");
    assert_eq!(status.gauges.uncleanable_partitions_count, 0, "an abandoned pass is no failure");
    let after: Vec<u64> = log.snapshot().reader(0).map(|r| r.expect("read").offset).collect();
    assert_eq!(after, before, "the abandoned pass committed nothing");
    assert!(
        inner.list().expect("list").iter().all(|n| !n.ends_with(".cleaned") && !n.ends_with(".swap")),
        "its outputs are gone"
    );
    // And the manager can run again: this time the pass commits.
    let status = manager.run(Mode::UntilClean);
    assert_eq!(status.logs[0].dirty_bytes, 0);
    assert_eq!(log.snapshot().reader(0).count(), 300, "one record per key is left");
}

#[test]
fn a_busy_detached_log_waits_without_failing_and_a_failed_open_keeps_its_error() {
    let clock = Arc::new(ManualClock::new(NOW));
    let manager = CleanerManager::new(config(1), clock.clone()).expect("manager");
    let store: Arc<dyn SegmentStore> = Arc::new(MemStore::new());
    fill(&Log::open(Arc::clone(&store), log_core::OpenOptions::new(log_config())).expect("open"), 100, 3, NOW);
    let busy = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let (open_store, gate) = (Arc::clone(&store), Arc::clone(&busy));
    let open: cleaner::manager::Opener = Box::new(move || {
        if gate.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(cleaner::Error::Busy { holder: "another writer".into() });
        }
        Ok(Log::open(Arc::clone(&open_store), log_core::OpenOptions::new(log_config()))?)
    });
    let peek_store = Arc::clone(&store);
    let peek: cleaner::manager::Opener = Box::new(move || {
        Ok(Log::open(Arc::clone(&peek_store), log_core::OpenOptions::new(log_config()).read_only(true))?)
    });
    manager.add_detached("shared", LogSettings::default(), open, peek).expect("add");
    let status = manager.run(Mode::UntilClean);
    let shared = &status.logs[0];
    assert_eq!((shared.state, shared.failures, shared.passes), (LogState::Idle, 0, 0), "{shared:?}");
    busy.store(false, std::sync::atomic::Ordering::SeqCst);
    clock.advance(60_000);
    let status = manager.run(Mode::UntilClean);
    assert_eq!((status.logs[0].passes, status.logs[0].failures), (1, 0), "{:?}", status.logs[0]);

    let damaged = cleaner::Error::Log(log_core::Error::BadCheckpoint { name: "x".into(), reason: "bad" });
    let never: cleaner::manager::Opener = Box::new(|| Err(cleaner::Error::Busy { holder: "nobody".into() }));
    manager.add_unopened("damaged", LogSettings::default(), never, damaged).expect("add");
    let status = manager.status();
    let damaged = status.logs.iter().find(|l| l.name == "damaged").expect("log");
    assert_eq!((damaged.state, damaged.failures), (LogState::Uncleanable, 1));
    assert!(damaged.last_error_is_corruption, "{damaged:?}");
    assert!(damaged.last_error.as_deref().is_some_and(|e| e.starts_with("cannot open the log: ")), "{damaged:?}");
}
