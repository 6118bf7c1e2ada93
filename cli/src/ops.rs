//! `gen`, `compact`, `dump` and `check`: the commands that work on a log directory.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use cleaner::{Cleaner, CleanerConfig, PassOptions, Phase, SystemClock};
use log_core::workload::Workload;
use log_core::{LogConfig, SegmentStore};
use serde::Serialize;

use crate::backend::{Backend, open_dir_log, open_store};
use crate::failure::Failure;
use crate::{format, json, progress};

fn runtime(e: impl std::fmt::Display) -> Failure {
    Failure::Runtime(e.to_string())
}

/// Commands that read a log refuse to create one.
fn existing(dir: &Path) -> Result<(), Failure> {
    if dir.is_dir() { Ok(()) } else { Err(Failure::Usage(format!("{} is not a log directory", dir.display()))) }
}

fn print_json(value: &impl Serialize) -> Result<(), Failure> {
    let text = serde_json::to_string(value).map_err(runtime)?;
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}") {
        // A reader that stopped early (`| head`) is not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.map_err(runtime),
    }
}

/// What `gen` did.
#[derive(Debug, Serialize)]
struct GenSummary {
    records: u64,
    tombstones: u64,
    next_offset: u64,
    segments: usize,
    seconds: f64,
    records_per_second: f64,
    workload: Workload,
}

/// Appends a synthetic workload to the log in `dir` and prints a JSON summary.
///
/// # Errors
/// [`Failure::Runtime`] when the log fails.
pub fn generate(dir: &Path, workload: Workload, config: LogConfig) -> Result<(), Failure> {
    if workload.keys == 0 {
        return Err(Failure::Usage("--keys must be at least 1".into()));
    }
    if !(0.0..=1.0).contains(&workload.tombstone_fraction) {
        return Err(Failure::Usage(format!("--tombstones {} is not in [0, 1]", workload.tombstone_fraction)));
    }
    let log = open_dir_log(dir, config)?;
    let bar = progress::bar(workload.records, "gen", false);
    let started = Instant::now();
    let tombstones = workload.append_to(&log, log_core::now_ms(), |n| bar.set_position(n)).map_err(runtime)?;
    log.sync().map_err(runtime)?;
    let seconds = started.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let summary = GenSummary {
        records: workload.records,
        tombstones,
        next_offset: log.next_offset(),
        segments: log.snapshot().closed().len() + 1,
        seconds,
        records_per_second: workload.records as f64 / seconds.max(1e-9),
        workload,
    };
    print_json(&summary)
}

/// Runs one pass (or passes until nothing is dirty) on the log in `dir`, printing each pass's statistics as
/// one JSON line.
///
/// # Errors
/// [`Failure::Usage`] for a bad configuration; [`Failure::Runtime`] when the log or the pass fails.
pub fn compact(dir: &Path, config: &CleanerConfig, purge: bool, until_clean: bool) -> Result<(), Failure> {
    existing(dir)?;
    let log = open_dir_log(dir, LogConfig::default())?;
    let map = config.skimpy_map().map_err(|e| Failure::Usage(e.to_string()))?;
    let mut cleaner = Cleaner::new(map, config.clone(), Arc::new(SystemClock));
    let bar = progress::bar(0, "map", true);
    let shown = bar.clone();
    cleaner.on_progress(move |p| {
        shown.set_message(if p.phase == Phase::Map { "map" } else { "copy" });
        shown.set_length(p.bytes_total);
        shown.set_position(p.bytes_done);
    });
    let mut options = PassOptions { purge };
    loop {
        let stats = cleaner.clean(&log, options).map_err(runtime)?;
        bar.suspend(|| print_json(&stats))?;
        if !until_clean || !stats.map_full {
            break;
        }
        // The first pass handled every tombstone an earlier pass had kept (they all lie below its end
        // offset); the rest only continue through the dirty section.
        options = PassOptions { purge: false };
    }
    bar.finish_and_clear();
    Ok(())
}

/// Prints the log in `dir` as `DUMP` does, or as JSON.
///
/// # Errors
/// [`Failure::Runtime`] when the log cannot be read.
pub fn dump(dir: &Path, as_json: bool) -> Result<(), Failure> {
    existing(dir)?;
    let log = open_dir_log(dir, LogConfig::default())?;
    let snapshot = log.snapshot();
    if as_json {
        return print_json(&json::segments(&snapshot).map_err(runtime)?);
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for line in format::dump(&snapshot).map_err(runtime)? {
        writeln!(out, "{line}").map_err(runtime)?;
    }
    out.flush().map_err(runtime)
}

/// Verifies the log in `dir` without changing it; prints a JSON report, or the first problem (exit code 1).
///
/// # Errors
/// [`Failure::Runtime`] naming the file and position of the first problem.
pub fn check(dir: &Path) -> Result<(), Failure> {
    existing(dir)?;
    let store: Arc<dyn SegmentStore> = open_store(Backend::File, Some(dir))?;
    match log_core::check::check_store(&*store) {
        Ok(report) => print_json(&report),
        Err(problem) => Err(Failure::Runtime(format!("check failed: {problem}"))),
    }
}
