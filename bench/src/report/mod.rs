//! The comparison report: a seeded matrix of workloads (key cardinalities) × dedupe buffers × offset maps ×
//! backends, each cell cleaned until nothing is dirty, with the figures a reader needs to pick a map and size
//! a buffer, written as JSON ([`Report`]), Markdown ([`markdown`]) and SVG ([`svg`]).
//!
//! Every cell checks correctness: the cells of one workload must leave the same log whatever the map, buffer
//! or backend (their `result_digest`s are compared), and the deterministic memory figures must hold (24 bytes
//! a slot for `skimpy`, at most 12 for `compact`). [`run`] fails naming the cell otherwise.
//!
//! Every cell runs [`Config::repeats`] times on a fresh copy of its log, each run beside its floor (what a pass
//! must do on the same copy and nothing more, with its own parsing: read, keys in a bare table, CRCs checked,
//! kept frames and their index written to new files and synced, [`crate::bare::native_floor`]), and reports the median and the spread of its time and of
//! its time over the floor: a comparison with a baseline ([`baseline`]) judges that ratio, which moves far less
//! than wall time on a shared machine. Each cell also records the peak resident memory of its cleaning,
//! anonymous and file-backed ([`crate::rss`]). Workloads too large for memory ([`Config::file_only`]) run on
//! the file backend only, so that the report itself stays under 2 GiB.

pub mod backlog;
pub mod baseline;
pub mod conclusion;
pub mod kafka;
pub mod machine;
pub mod markdown;
pub mod svg;

use std::sync::Arc;
use std::time::Instant;

use cleaner::{Cleaner, CleanerConfig, MapKind, PassOptions, SystemClock};
use log_core::workload::Workload;
use log_core::{Log, LogConfig, SegmentStore};
use serde::{Deserialize, Serialize};

pub use machine::Machine;

/// Version of the JSON layout of [`Report`] (2: repeats with floors and spreads, peak memory, the external pass,
/// Kafka shapes; 3: floors that write (a report of an earlier version had read-only floors: its ratios are not
/// comparable), ratios per phase, Kafka's own cleaner beside the Kafka rows).
pub const SCHEMA_VERSION: u32 = 3;

/// The median of repeated measurements and their range.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// The median (of an even count, the mean of the middle two).
    pub median: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
}

impl Spread {
    /// The spread of `values` (zeros for none).
    pub fn of(values: impl IntoIterator<Item = f64>) -> Spread {
        let mut v: Vec<f64> = values.into_iter().collect();
        if v.is_empty() {
            return Spread::default();
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
        Spread { median, min: v[0], max: v[n - 1] }
    }

    /// `(max - min) / median`: how far the runs spread, relative to their median.
    pub fn relative(&self) -> f64 {
        if self.median == 0.0 { 0.0 } else { (self.max - self.min) / self.median }
    }
}

/// What [`run`] reports as it goes.
#[derive(Debug, Clone, Copy)]
pub enum Progress<'a> {
    /// A cell of the matrix is done.
    Cell(&'a Cell),
    /// A Kafka row is done.
    Kafka(&'a kafka::KafkaCell),
    /// The backlog's table is done.
    Backlog(&'a crate::head_to_head::Table),
}

/// What the matrix covers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// `--quick`: the small matrix.
    pub quick: bool,
    /// Distinct keys of each workload.
    pub cardinalities: Vec<u64>,
    /// Workloads run only with the buffer `skimpy` needs for one pass (large ones, where the smaller buffers'
    /// many passes would take long).
    pub one_pass_only: Vec<u64>,
    /// Records per key (keys drawn uniformly, so each key has about this many records).
    pub records_per_key: u64,
    /// Bytes per key (the workload's keys are 16 bytes).
    pub key_bytes: usize,
    /// Bytes per value.
    pub value_bytes: usize,
    /// Share of appends that are tombstones.
    pub tombstone_fraction: f64,
    /// Dedupe buffers, as shares of what `skimpy` (Kafka's map) needs to map the workload in one pass; the
    /// same bytes for every map of a row.
    pub buffer_shares: Vec<f64>,
    /// The load factor of every map.
    pub load_factor: f64,
    /// The workloads' generator seed.
    pub seed: u64,
    /// Segment size of the logs.
    pub segment_bytes: u64,
    /// Cells also run on the file backend: `(keys, buffer share)`.
    pub file_cells: Vec<(u64, f64)>,
    /// Workloads run on the file backend only (a log too large to hold in memory twice, as each cell's copy
    /// would be).
    #[serde(default)]
    pub file_only: Vec<u64>,
    /// Runs of every cell (each on a fresh copy, beside its floor): the median and the spread are reported.
    #[serde(default = "one")]
    pub repeats: usize,
    /// Records of the generated Kafka partitions (0: no Kafka rows).
    #[serde(default)]
    pub kafka_records: u64,
    /// Distinct keys of the Kafka partitions.
    #[serde(default)]
    pub kafka_keys: u64,
    /// Runs of Kafka 4.4's own cleaner (and of ours beside it on the same files) for each Kafka shape and
    /// buffer (0: none).
    #[serde(default)]
    pub kafka_cleaner_repeats: usize,
    /// The buffer shares the comparison with Kafka's cleaner runs at (of the Kafka rows' 1 and 0.25).
    #[serde(default)]
    pub kafka_cleaner_shares: Vec<f64>,
    /// Runs of Kafka's own cleaner (and of ours beside it) at the shares below 1, where Kafka's cleaner takes
    /// dozens of passes.
    #[serde(default)]
    pub kafka_sweep_repeats: usize,
    /// Kafka rows also on partitions a real Kafka 4.4 broker wrote from its Java clients (each codec, an
    /// exactly-once changelog, `__consumer_offsets`), where Kafka's own cleaner runs.
    #[serde(default)]
    pub broker_partitions: bool,
    /// Records of each partition the broker writes (the quick matrix's are the size kafka-interop's own test
    /// writes, so that CI produces them once).
    #[serde(default)]
    pub broker_records: u64,
    /// Distinct keys of those partitions.
    #[serde(default)]
    pub broker_keys: u64,
    /// Bytes of the backlog partition (the full matrix: 4 GiB; 0: no backlog rows), cleaned by Kafka's cleaner
    /// and ours in the default 128 MiB buffer ([`backlog`]).
    #[serde(default)]
    pub backlog_bytes: u64,
    /// Distinct keys of the backlog partition (16M: about three buffers of Kafka's map).
    #[serde(default)]
    pub backlog_keys: u64,
    /// The dedupe buffer both cleaners clean the backlog in (Kafka's default, 128 MiB).
    #[serde(default)]
    pub backlog_buffer_bytes: u64,
    /// The binary that runs our side of the comparison with Kafka's cleaner in a child process (so that its
    /// peak resident memory is a whole process's, as the JVM's is): one that calls
    /// [`crate::vs_kafka::child_main`] when given [`crate::vs_kafka::CHILD_FLAG`]. `None`: measured in this
    /// process.
    #[serde(skip)]
    pub child_exe: Option<std::path::PathBuf>,
}

impl Config {
    /// The matrix of `report` (`quick`: under two minutes on 2 cores; full: under fifteen).
    pub fn new(quick: bool) -> Config {
        let (cardinalities, one_pass_only, buffer_shares, file_cells) = if quick {
            (vec![10_000, 100_000, 1_000_000], vec![1_000_000], vec![1.0, 0.25], vec![(100_000, 1.0)])
        } else {
            (
                vec![10_000, 100_000, 1_000_000, 4_000_000],
                vec![4_000_000],
                vec![1.0, 0.5, 0.25],
                vec![(1_000_000, 1.0), (1_000_000, 0.25)],
            )
        };
        Config {
            quick,
            cardinalities,
            one_pass_only,
            records_per_key: 4,
            key_bytes: 16,
            value_bytes: 100,
            tombstone_fraction: 0.01,
            buffer_shares,
            load_factor: 0.9,
            seed: 1,
            segment_bytes: 16 << 20,
            file_cells,
            kafka_records: if quick { 200_000 } else { 2_000_000 },
            kafka_keys: if quick { 20_000 } else { 200_000 },
            file_only: if quick { vec![] } else { vec![4_000_000] },
            repeats: if quick { 3 } else { 5 },
            kafka_cleaner_repeats: if quick { 2 } else { 3 },
            // The quarter buffer takes Kafka's cleaner 35-332 passes (each over the whole log: 9 s on the quick
            // consumer_offsets shape, minutes on the full matrix's ten times the records): one run there.
            kafka_cleaner_shares: vec![1.0, 0.25],
            kafka_sweep_repeats: 1,
            broker_partitions: true,
            broker_records: if quick { 30_000 } else { 2_000_000 },
            broker_keys: if quick { 3_000 } else { 200_000 },
            backlog_bytes: if quick { 0 } else { 4 << 30 },
            backlog_keys: 16_000_000,
            backlog_buffer_bytes: 128 << 20,
            child_exe: None,
        }
    }

    /// Runs of the cells of a workload of `keys` keys: one for a file-only workload (each run copies gigabytes),
    /// [`Config::repeats`] otherwise.
    pub fn repeats_for(&self, keys: u64) -> usize {
        if self.file_only.contains(&keys) { 1 } else { self.repeats.max(1) }
    }

    /// The `(backend, buffer share)` cells of a workload of `keys` keys.
    pub fn cells_for(&self, keys: u64) -> Vec<(&'static str, f64)> {
        let backend = if self.file_only.contains(&keys) { "file" } else { "mem" };
        let mut cells: Vec<(&str, f64)> = self.shares_for(keys).into_iter().map(|s| (backend, s)).collect();
        cells.extend(self.file_cells.iter().filter(|&&(k, _)| k == keys).map(|&(_, s)| ("file", s)));
        cells
    }

    /// The buffer shares run for a workload of `keys` keys.
    pub fn shares_for(&self, keys: u64) -> Vec<f64> {
        if self.one_pass_only.contains(&keys) { vec![1.0] } else { self.buffer_shares.clone() }
    }

    /// How many cells the matrix has.
    pub fn cells(&self) -> usize {
        self.cardinalities.iter().map(|&k| self.cells_for(k).len()).sum::<usize>() * MapKind::WITH_EXTERNAL.len()
    }
}

fn one() -> usize {
    1
}

/// One cell: a workload cleaned until nothing is dirty by one map in one buffer on one backend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// `skimpy`, `fullkey` or `compact`.
    pub map: String,
    /// `mem` or `file`.
    pub backend: String,
    /// Distinct keys of the workload.
    pub keys: u64,
    /// Records of the log.
    pub records: u64,
    /// Bytes per key.
    pub key_bytes: usize,
    /// Bytes per value.
    pub value_bytes: usize,
    /// The workload's seed.
    pub seed: u64,
    /// The dedupe buffer.
    pub buffer_bytes: u64,
    /// The buffer as a share of what `skimpy` needs for one pass.
    pub buffer_share: f64,
    /// Keys the map holds in that buffer.
    pub capacity: u64,
    /// Bytes of a slot (`fullkey`: of a table entry with its control byte).
    pub bytes_per_slot: f64,
    /// Bytes of buffer per key held (`fullkey`: memory held per key mapped, measured).
    pub bytes_per_key: f64,
    /// Passes until nothing was dirty.
    pub passes_to_clean: u64,
    /// Pass 1 time of all passes, per record of the log.
    pub pass1_ns_per_record: f64,
    /// Pass 2 time of all passes, per record of the log.
    pub pass2_ns_per_record: f64,
    /// Records of the log per second of cleaning (all passes).
    pub records_per_s: f64,
    /// Bytes of the log per second of cleaning.
    pub bytes_per_s: f64,
    /// Slots inspected per map lookup, over all passes.
    pub probes_per_lookup: f64,
    /// Highest `entries / slots` of a pass.
    pub utilization: f64,
    /// Most bytes of the map any pass touched.
    pub peak_map_bytes: u64,
    /// Seconds of cleaning, all passes (the median run's).
    pub seconds: f64,
    /// Seconds of cleaning over the runs: median and range.
    #[serde(default)]
    pub seconds_spread: Spread,
    /// Seconds of the floor (what a pass must do on the same log and nothing more, with its own parsing,
    /// writing; [`crate::bare::native_floor`]), measured beside each run.
    #[serde(default)]
    pub floor_seconds: Spread,
    /// Cleaning time over the floor's, per run.
    #[serde(default)]
    pub over_floor: Spread,
    /// Pass 1's time over the floor's walk 1, per run.
    #[serde(default)]
    pub pass1_over_floor: Spread,
    /// Pass 2's time over the floor's walk 2 (with its writes and syncs), per run.
    #[serde(default)]
    pub pass2_over_floor: Spread,
    /// The fastest run's time over the fastest floor's: what a comparison with a baseline judges. Noise on a
    /// shared machine only adds time, so the fastest of a few runs is the steadiest estimate of each.
    #[serde(default)]
    pub best_over_floor: f64,
    /// Runs of the cell.
    #[serde(default = "one")]
    pub repeats: usize,
    /// Peak anonymous resident memory of a run's cleaning (the map, buffers, a memory backend's new
    /// segments), above what the copied log held.
    #[serde(default)]
    pub peak_rss_anon_bytes: u64,
    /// Peak file-backed resident memory of a run's cleaning (mapped segments).
    #[serde(default)]
    pub peak_rss_file_bytes: u64,
    /// Bytes the map sized for the pass (its table at its largest; the external pass: buffer and bit set).
    #[serde(default)]
    pub map_allocated_bytes: u64,
    /// The external pass: bytes of runs it spilled.
    #[serde(default)]
    pub spilled_bytes: u64,
    /// xxh3 of the surviving records' offsets, keys and values: the same for every cell of a workload.
    pub result_digest: String,
}

/// The report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `git rev-parse --short HEAD` of the build's checkout (`+dirty` with uncommitted changes), or `unknown`.
    pub git_revision: String,
    /// When the report was made, ms since the Unix epoch.
    pub created_ms: i64,
    /// The machine.
    pub machine: Machine,
    /// The matrix.
    pub config: Config,
    /// One result per cell.
    pub results: Vec<Cell>,
    /// The Kafka rows.
    #[serde(default)]
    pub kafka: Vec<kafka::KafkaCell>,
    /// Kafka 4.4's own cleaner beside the Kafka rows: empty when it ran, else why not (`not run: ...`).
    #[serde(default)]
    pub kafka_cleaner: String,
    /// The backlog (the full matrix only): Kafka's cleaner, ours and the disk's floor on a 4 GiB partition.
    #[serde(default)]
    pub backlog: Vec<crate::head_to_head::Table>,
    /// The report process's own peak resident memory (`VmHWM`), filled in by the `report` binary.
    #[serde(default)]
    pub peak_rss_bytes: u64,
}

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Cells of one workload left different logs.
    #[error("correctness: {0}")]
    Mismatch(String),
    /// A deterministic memory figure is above its documented value.
    #[error("memory: {0}")]
    Memory(String),
    /// Building or cleaning a log failed.
    #[error("{0}")]
    Failed(String),
}

/// A prepared workload: its log, built once and copied for each run of a cell (in memory, or for a file-only
/// workload in a directory of its own).
struct Prepared {
    store: Arc<dyn SegmentStore>,
    /// The prepared log's directory, for a file-only workload.
    _dir: Option<tempfile::TempDir>,
    records: u64,
    bytes: u64,
}

fn prepare(config: &Config, keys: u64) -> Result<Prepared, ReportError> {
    let failed = |e: log_core::Error| ReportError::Failed(format!("building the {keys}-key workload: {e}"));
    let (store, dir): (Arc<dyn SegmentStore>, _) = if config.file_only.contains(&keys) {
        let dir = tempfile::tempdir().map_err(|e| ReportError::Failed(format!("a temporary directory: {e}")))?;
        let store = storage_file::FileStore::open(dir.path())
            .map_err(|e| ReportError::Failed(format!("building the {keys}-key workload: {e}")))?;
        (Arc::new(store), Some(dir))
    } else {
        (Arc::new(storage_mem::MemStore::new()), None)
    };
    let log = Log::open(
        Arc::clone(&store),
        log_core::OpenOptions::new(LogConfig { segment_bytes: config.segment_bytes, ..LogConfig::default() }),
    )
    .map_err(failed)?;
    let records = keys * config.records_per_key;
    let workload = Workload {
        records,
        keys,
        value_bytes: config.value_bytes,
        tombstone_fraction: config.tombstone_fraction,
        seed: config.seed,
    };
    workload.append_to(&log, 1_000, |_| {}).map_err(failed)?;
    log.roll().map_err(failed)?;
    log.sync().map_err(failed)?;
    let bytes = log.snapshot().closed().iter().map(|s| s.size()).sum();
    drop(log);
    Ok(Prepared { store, _dir: dir, records, bytes })
}

/// One run of a cell: its figures and the log it left.
struct Run {
    seconds: f64,
    floor: f64,
    floor_pass1: f64,
    floor_pass2: f64,
    peak: crate::rss::Resident,
    passes: u64,
    pass1: f64,
    pass2: f64,
    lookups: u64,
    probes: u64,
    utilization: f64,
    peak_map_bytes: u64,
    allocated: u64,
    spilled: u64,
    fullest: cleaner::MapStats,
    digest: String,
}

/// The buffer of a cell: `share` of what `skimpy` needs for the workload, at least what every map needs for a
/// key.
fn buffer_for(config: &Config, keys: u64, share: f64) -> usize {
    let need = MapKind::Skimpy.bytes_for(keys as usize, config.load_factor, config.key_bytes);
    ((need as f64 * share).round() as usize)
        .max(MapKind::WITH_EXTERNAL.iter().map(|k| k.min_bytes(config.load_factor, 64)).max().unwrap_or(64))
}

/// Cleans a fresh copy of `prepared` with `map` in `buffer` bytes on `backend` until nothing is dirty, beside
/// its floor on the same copy.
fn run_once(
    config: &Config,
    prepared: &Prepared,
    keys: u64,
    buffer: usize,
    map: MapKind,
    backend: &str,
) -> Result<Run, ReportError> {
    let failed = |what: &str, e: &dyn std::fmt::Display| {
        ReportError::Failed(format!("{map}/{backend}/{keys} keys: {what}: {e}"))
    };
    let tmp = tempfile::tempdir().map_err(|e| failed("temporary directory", &e))?;
    let store: Arc<dyn SegmentStore> = match backend {
        "mem" => Arc::new(storage_mem::MemStore::new()),
        _ => Arc::new(storage_file::FileStore::open(tmp.path()).map_err(|e| failed("directory", &e))?),
    };
    crate::store::copy_store(&*prepared.store, &*store).map_err(ReportError::Failed)?;
    let log = Log::open(
        store,
        log_core::OpenOptions::new(LogConfig { segment_bytes: config.segment_bytes, ..LogConfig::default() }),
    )
    .map_err(|e| failed("open", &e))?;
    // The floor writes where the pass writes: new files on the file backend (a directory of their own on the
    // same file system, removed before the pass), memory on the memory one.
    let floor = {
        let dir = tempfile::tempdir().map_err(|e| failed("temporary directory", &e))?;
        let out = if backend == "mem" { crate::bare::Out::Memory } else { crate::bare::Out::Dir(dir.path()) };
        crate::bare::native_floor(
            &log,
            keys as usize,
            out,
            config.segment_bytes,
            LogConfig::default().index_interval_bytes,
        )
    };
    let cc =
        CleanerConfig { map, dedupe_buffer_bytes: buffer, load_factor: config.load_factor, ..CleanerConfig::default() };
    let mut cleaner = Cleaner::new(cc, Arc::new(SystemClock)).map_err(|e| failed("map", &e))?;
    let mut run = Run {
        seconds: 0.0,
        floor: floor.seconds(),
        floor_pass1: floor.pass1_seconds,
        floor_pass2: floor.pass2_seconds,
        peak: crate::rss::Resident::default(),
        passes: 0,
        pass1: 0.0,
        pass2: 0.0,
        lookups: 0,
        probes: 0,
        utilization: 0.0,
        peak_map_bytes: 0,
        allocated: 0,
        spilled: 0,
        fullest: cleaner::MapStats::default(),
        digest: String::new(),
    };
    let (outcome, peak) = crate::rss::peak_during(|| -> Result<(), ReportError> {
        loop {
            // The segments a pass replaces are freed when their last snapshot goes: held until the pass's timing
            // ends, as freeing them on files is an unlink.
            let before = log.snapshot();
            let started = Instant::now();
            let s = cleaner.clean(&log, PassOptions::default()).map_err(|e| failed("pass", &e))?;
            run.seconds += started.elapsed().as_secs_f64();
            drop(before);
            run.passes += 1;
            run.pass1 += s.pass1.seconds;
            run.pass2 += s.pass2.seconds;
            run.lookups += s.offset_map.lookups;
            run.probes += s.offset_map.probes;
            run.utilization = run.utilization.max(s.offset_map.utilization);
            run.peak_map_bytes = run.peak_map_bytes.max(s.offset_map.touched_bytes);
            run.allocated = run.allocated.max(s.offset_map.allocated_bytes);
            run.spilled += s.offset_map.spilled_bytes;
            // Capacity and bytes per key from the fullest pass (a later, emptier pass keeps `fullkey`'s memory).
            if s.offset_map.entries > run.fullest.entries || run.passes == 1 {
                run.fullest = s.offset_map.clone();
            }
            if !s.map_full {
                return Ok(());
            }
            if run.passes > 10_000 {
                return Err(failed("passes", &"more than 10,000 passes"));
            }
        }
    });
    outcome?;
    run.peak = peak;
    run.digest =
        crate::digest::records(&log).map_err(|e| ReportError::Failed(format!("reading a cleaned log: {e}")))?.0;
    Ok(run)
}

/// Runs a cell [`Config::repeats_for`] times and reports the median run with the spreads.
fn run_cell(
    config: &Config,
    prepared: &Prepared,
    keys: u64,
    share: f64,
    map: MapKind,
    backend: &str,
) -> Result<Cell, ReportError> {
    let buffer = buffer_for(config, keys, share);
    let mut runs = Vec::new();
    for _ in 0..config.repeats_for(keys) {
        runs.push(run_once(config, prepared, keys, buffer, map, backend)?);
    }
    let seconds_spread = Spread::of(runs.iter().map(|r| r.seconds));
    let floor_seconds = Spread::of(runs.iter().map(|r| r.floor));
    let over_floor = Spread::of(runs.iter().map(|r| r.seconds / r.floor.max(1e-9)));
    let pass1_over_floor = Spread::of(runs.iter().map(|r| r.pass1 / r.floor_pass1.max(1e-9)));
    let pass2_over_floor = Spread::of(runs.iter().map(|r| r.pass2 / r.floor_pass2.max(1e-9)));
    let best_over_floor = seconds_spread.min / floor_seconds.min.max(1e-9);
    let median = runs
        .iter()
        .min_by(|a, b| (a.seconds - seconds_spread.median).abs().total_cmp(&(b.seconds - seconds_spread.median).abs()))
        .ok_or_else(|| ReportError::Failed(format!("{map}/{backend}/{keys} keys: no run")))?;
    if let Some(other) = runs.iter().find(|r| r.digest != median.digest) {
        return Err(ReportError::Mismatch(format!(
            "{map}/{backend}/{keys} keys/buffer {buffer}: two runs left different logs ({} and {})",
            median.digest, other.digest
        )));
    }
    let m = &median.fullest;
    let per_record = |secs: f64| secs * 1e9 / prepared.records.max(1) as f64;
    Ok(Cell {
        map: map.name().to_owned(),
        backend: backend.to_owned(),
        keys,
        records: prepared.records,
        key_bytes: config.key_bytes,
        value_bytes: config.value_bytes,
        seed: config.seed,
        buffer_bytes: buffer as u64,
        buffer_share: share,
        capacity: m.capacity,
        bytes_per_slot: m.bytes_per_slot,
        bytes_per_key: m.bytes_per_key,
        passes_to_clean: median.passes,
        pass1_ns_per_record: per_record(median.pass1),
        pass2_ns_per_record: per_record(median.pass2),
        records_per_s: prepared.records as f64 / median.seconds.max(1e-9),
        bytes_per_s: prepared.bytes as f64 / median.seconds.max(1e-9),
        probes_per_lookup: if median.lookups == 0 { 0.0 } else { median.probes as f64 / median.lookups as f64 },
        utilization: median.utilization,
        peak_map_bytes: median.peak_map_bytes,
        seconds: median.seconds,
        seconds_spread,
        floor_seconds,
        over_floor,
        pass1_over_floor,
        pass2_over_floor,
        best_over_floor,
        repeats: runs.len(),
        peak_rss_anon_bytes: runs.iter().map(|r| r.peak.anon).max().unwrap_or(0),
        peak_rss_file_bytes: runs.iter().map(|r| r.peak.file).max().unwrap_or(0),
        map_allocated_bytes: median.allocated,
        spilled_bytes: median.spilled,
        result_digest: median.digest.clone(),
    })
}

/// Runs the matrix, then the Kafka rows, calling `progress` after each cell and row.
///
/// # Errors
/// [`ReportError::Mismatch`] when cells of one workload leave different logs (naming them);
/// [`ReportError::Memory`] when a slot is larger than documented; [`ReportError::Failed`] otherwise.
pub fn run(config: &Config, mut progress: impl FnMut(Progress<'_>)) -> Result<Report, ReportError> {
    let mut results = Vec::with_capacity(config.cells());
    for &keys in &config.cardinalities {
        let prepared = prepare(config, keys)?;
        for (backend, share) in config.cells_for(keys) {
            for map in MapKind::WITH_EXTERNAL {
                let cell = run_cell(config, &prepared, keys, share, map, backend)?;
                check_memory(&cell, config.load_factor)?;
                results.push(cell);
                progress(Progress::Cell(results.last().expect("just pushed")));
            }
        }
        check_digests(results.iter().filter(|c| c.keys == keys))?;
    }
    let (kafka, kafka_cleaner) = kafka::run(config, &mut progress)?;
    let backlog = backlog::run(config, &mut progress)?;
    Ok(Report {
        schema_version: SCHEMA_VERSION,
        git_revision: machine::git_revision(),
        created_ms: log_core::now_ms(),
        machine: Machine::this(),
        config: config.clone(),
        results,
        kafka,
        kafka_cleaner,
        backlog,
        peak_rss_bytes: 0,
    })
}

/// The documented slot sizes: 24 bytes for `skimpy`, at most 12 for `compact`.
fn check_memory(cell: &Cell, load_factor: f64) -> Result<(), ReportError> {
    let limit = match cell.map.as_str() {
        "skimpy" => Some(24.0),
        "compact" => Some(12.0),
        _ => None,
    };
    if let Some(l) = limit.filter(|&l| cell.bytes_per_slot > l) {
        return Err(ReportError::Memory(format!(
            "{} uses {} bytes a slot, more than the documented {l} ({} keys, {} buffer)",
            cell.map, cell.bytes_per_slot, cell.keys, cell.buffer_bytes
        )));
    }
    // A slot map's bytes per key is its buffer over the keys it can hold (26.7 and 13.3 bytes at load 0.9 for
    // large buffers), never a figure per key mapped, which would overstate it on a log with fewer keys.
    let held = cell.buffer_bytes as f64 / cell.capacity.max(1) as f64;
    if limit.is_some() && (cell.bytes_per_key - held).abs() > held * 0.01 {
        return Err(ReportError::Memory(format!(
            "{} reports {:.2} bytes a key, but its buffer holds a key in {held:.2} ({} keys, {} buffer, load {load_factor})",
            cell.map, cell.bytes_per_key, cell.keys, cell.buffer_bytes
        )));
    }
    Ok(())
}

/// Every cell of one workload must leave the same log.
fn check_digests<'a>(cells: impl Iterator<Item = &'a Cell>) -> Result<(), ReportError> {
    let cells: Vec<&Cell> = cells.collect();
    let Some(first) = cells.first() else { return Ok(()) };
    for c in &cells[1..] {
        if c.result_digest != first.result_digest {
            return Err(ReportError::Mismatch(format!(
                "{}/{}/{} keys/buffer {} left a different log ({}) than {}/{}/buffer {} ({})",
                c.map,
                c.backend,
                c.keys,
                c.buffer_bytes,
                c.result_digest,
                first.map,
                first.backend,
                first.buffer_bytes,
                first.result_digest
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(map: &str, digest: &str, slot: f64) -> Cell {
        Cell {
            map: map.into(),
            backend: "mem".into(),
            keys: 10,
            records: 40,
            key_bytes: 16,
            value_bytes: 100,
            seed: 1,
            buffer_bytes: 1000,
            buffer_share: 1.0,
            capacity: 10,
            bytes_per_slot: slot,
            bytes_per_key: 13.3,
            passes_to_clean: 1,
            pass1_ns_per_record: 1.0,
            pass2_ns_per_record: 1.0,
            records_per_s: 1.0,
            bytes_per_s: 1.0,
            probes_per_lookup: 1.0,
            utilization: 0.5,
            peak_map_bytes: 100,
            seconds: 1.0,
            seconds_spread: Spread::default(),
            floor_seconds: Spread::default(),
            over_floor: Spread::default(),
            pass1_over_floor: Spread::default(),
            pass2_over_floor: Spread::default(),
            best_over_floor: 0.0,
            repeats: 1,
            peak_rss_anon_bytes: 0,
            peak_rss_file_bytes: 0,
            map_allocated_bytes: 0,
            spilled_bytes: 0,
            result_digest: digest.into(),
        }
    }

    #[test]
    fn a_different_result_or_a_larger_slot_or_key_fails_the_report_naming_the_cell() {
        let cells = [cell("skimpy", "a", 24.0), cell("compact", "b", 12.0)];
        let err = check_digests(cells.iter()).expect_err("mismatch");
        assert!(err.to_string().contains("compact/mem/10 keys"), "{err}");
        assert!(check_digests([cell("skimpy", "a", 24.0), cell("fullkey", "a", 17.0)].iter()).is_ok());
        assert!(check_memory(&cell("compact", "a", 12.5), 0.9).is_err());
        assert!(check_memory(&cell("skimpy", "a", 25.0), 0.9).is_err());
        assert!(check_memory(&cell("fullkey", "a", 40.0), 0.9).is_ok());
        // A slot map's bytes per key: its buffer over the keys it holds (1000 bytes, 10 keys here).
        let mut held = cell("compact", "a", 12.0);
        held.bytes_per_key = 100.0;
        assert!(check_memory(&held, 0.9).is_ok());
        let mut per_entry = cell("compact", "a", 12.0);
        per_entry.bytes_per_key = 200.0;
        assert!(check_memory(&per_entry, 0.9).is_err(), "bytes per key counted per entry, not per key held");
    }

    #[test]
    fn a_tiny_matrix_runs_and_every_map_leaves_the_same_log() {
        let config = Config {
            cardinalities: vec![300],
            one_pass_only: vec![],
            buffer_shares: vec![1.0, 0.25],
            file_cells: vec![(300, 0.25)],
            segment_bytes: 8 << 10,
            kafka_records: 3_000,
            kafka_keys: 300,
            repeats: 2,
            kafka_cleaner_repeats: 1,
            kafka_cleaner_shares: vec![1.0],
            kafka_sweep_repeats: 1,
            broker_partitions: false,
            ..Config::new(true)
        };
        let mut seen = 0;
        let report = run(&config, |_| seen += 1).expect("report");
        assert_eq!(seen, config.cells() + kafka::rows(&config, false), "progress after every cell and row");
        // Kafka rows: four shapes (two codecs of the plain one) x two buffers x four maps, the rows of one shape
        // keeping the same records.
        assert_eq!(report.kafka.len(), kafka::rows(&config, false));
        for shape in ["plain", "transactions", "consumer_offsets"] {
            let rows: Vec<_> = report.kafka.iter().filter(|k| k.shape == shape).collect();
            assert!(!rows.is_empty() && rows.iter().all(|k| k.result_digest == rows[0].result_digest), "{shape}");
        }
        let aborted = report.kafka.iter().find(|k| k.shape == "transactions").expect("transactions");
        assert!(aborted.records_kept < aborted.records, "the transactions partition was compacted");
        assert!(
            report
                .kafka
                .iter()
                .filter(|k| k.shape == "plain" && k.buffer_share == 0.25 && k.map != "external")
                .all(|k| k.passes_to_clean > 1)
        );
        assert!(report.kafka.iter().all(|k| k.over_floor.median > 0.0 && k.seconds.min <= k.seconds.max));
        assert!(report.kafka.iter().all(|k| k.over_codec_floor.median > 0.0 && k.pass2_over_floor.median > 0.0));
        // Kafka's own cleaner beside every row of the full buffer, where Java and Maven are (always under CI);
        // else the report says why not.
        if report.kafka_cleaner.is_empty() {
            for k in &report.kafka {
                let v = k.vs_kafka.as_ref();
                assert_eq!(v.is_some(), k.buffer_share == 1.0, "{} {}", k.shape, k.map);
                let Some(v) = v else { continue };
                assert!(v.kafka_seconds.min > 0.0 && v.speedup > 0.0 && v.kafka_peak_rss_bytes > 0 && v.passes > 0);
                // Where both cleaners took one pass, the same files (Kafka's pass ends at the first keyed record
                // after its map holds its most keys, even one already mapped: a buffer that holds the keys exactly
                // takes it several passes, and the files then differ).
                if v.passes == 1 && v.kafka_passes == 1 {
                    assert!(v.identical, "{} {} {}: {}", k.shape, k.codec, k.map, v.difference);
                }
            }
            assert!(
                report.kafka.iter().any(|k| k.vs_kafka.as_ref().is_some_and(|v| v.identical)),
                "some row byte for byte Kafka's: {:?}",
                report
                    .kafka
                    .iter()
                    .map(|k| (&k.shape, &k.map, k.vs_kafka.as_ref().map(|v| (v.passes, v.kafka_passes))))
                    .collect::<Vec<_>>()
            );
        } else {
            assert!(report.kafka_cleaner.starts_with("not run: "), "{}", report.kafka_cleaner);
            assert!(report.kafka.iter().all(|k| k.vs_kafka.is_none()));
        }
        assert_eq!(report.results.len(), config.cells());
        assert!(report.results.iter().all(|c| c.repeats == 2 && c.over_floor.median > 0.0));
        assert!(
            report
                .results
                .iter()
                .all(|c| c.over_floor.min <= c.over_floor.median && c.over_floor.median <= c.over_floor.max)
        );
        let quarter: Vec<&Cell> = report.results.iter().filter(|c| c.buffer_share == 0.25).collect();
        assert!(
            quarter.iter().filter(|c| c.map != "external").all(|c| c.passes_to_clean > 1),
            "a quarter buffer takes the maps several passes"
        );
        let external = quarter.iter().find(|c| c.map == "external").expect("external");
        assert_eq!(external.passes_to_clean, 1, "and the external pass one");
        let compact = quarter.iter().find(|c| c.map == "compact").expect("compact");
        let skimpy = quarter.iter().find(|c| c.map == "skimpy").expect("skimpy");
        assert!(compact.passes_to_clean < skimpy.passes_to_clean, "compact holds more keys per byte");
        assert!(report.results.iter().all(|c| c.result_digest == report.results[0].result_digest));
    }

    #[test]
    fn spreads_are_medians_and_ranges() {
        let s = Spread::of([3.0, 1.0, 2.0]);
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        assert_eq!(Spread::of([4.0, 1.0]).median, 2.5);
        assert_eq!(Spread::of(std::iter::empty()), Spread::default());
        assert!((Spread::of([1.0, 2.0, 3.0]).relative() - 1.0).abs() < 1e-9);
    }
}
