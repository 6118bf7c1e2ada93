//! The report's Kafka rows: generated partitions of three shapes compacted until clean by every map (and the
//! external pass) in the buffer `skimpy` needs for one pass and in a quarter of it, each beside its floor (the
//! bare two-pass walk of the same batches with a bare table, [`crate::bare::bare_kafka_walk`]), repeated, with
//! the median and the spread. The shapes:
//! - `plain`: uniform keys in batches of 100, uncompressed and lz4;
//! - `transactions`: an exactly-once Streams changelog (transactions of three batches, each ended by a COMMIT
//!   marker, one in 50 aborted), so the aborted records and the markers' rules are timed too;
//! - `consumer_offsets`: `__consumer_offsets` (committed offsets of groups over partitions, committed over and
//!   over, group metadata, deleted offsets), few keys and many updates.
//!
//! Every row of one shape must leave the same records (digest), whatever the codec, map or buffer.

use std::sync::Arc;

use cleaner::map::MapKind;
use log_core::SegmentStore;
use log_core::kafka::Compression;
use serde::{Deserialize, Serialize};
use storage_mem::MemStore;

use super::{Config, Progress, ReportError, Spread};
use crate::bare::{Floor, Out, Recompress};

/// One Kafka row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KafkaCell {
    /// The partition's shape: `plain`, `transactions` or `consumer_offsets`.
    #[serde(default = "plain")]
    pub shape: String,
    /// The map.
    pub map: String,
    /// The batches' codec.
    pub codec: String,
    /// Distinct keys the partition was written over.
    pub keys: u64,
    /// Records of the partition.
    pub records: u64,
    /// Bytes of its batches.
    pub bytes: u64,
    /// The dedupe buffer.
    pub buffer_bytes: u64,
    /// The buffer as a share of what `skimpy` needs for one pass.
    pub buffer_share: f64,
    /// Passes until clean.
    pub passes_to_clean: u64,
    /// Pass 1 time of all passes, per record (the median run's).
    pub pass1_ns_per_record: f64,
    /// Pass 2 time of all passes, per record (the median run's).
    pub pass2_ns_per_record: f64,
    /// Records per second of compaction (the median run's).
    pub records_per_s: f64,
    /// Bytes of batches per second of compaction.
    pub bytes_per_s: f64,
    /// Records kept.
    pub records_kept: u64,
    /// Bytes of segments the passes wrote (groups a pass left unchanged cost none).
    #[serde(default)]
    pub bytes_written: u64,
    /// Seconds of compaction, and the runs' spread.
    #[serde(default)]
    pub seconds: Spread,
    /// Seconds of the floor (what a pass must do with its own parsing: both walks, CRCs checked, kept batches
    /// written with Kafka's indexes, a rebuilt batch left uncompressed; [`crate::bare::kafka_floor`]), measured
    /// beside each run.
    #[serde(default)]
    pub floor_seconds: Spread,
    /// Compaction time over its floor's, per run.
    #[serde(default)]
    pub over_floor: Spread,
    /// The fastest run's time over the fastest floor's: what a comparison with a baseline judges.
    #[serde(default)]
    pub best_over_floor: f64,
    /// Pass 1's time over the floor's walk 1, per run.
    #[serde(default)]
    pub pass1_over_floor: Spread,
    /// Pass 2's time over the floor's walk 2, per run.
    #[serde(default)]
    pub pass2_over_floor: Spread,
    /// Seconds of the codec floor (the floor with a rebuilt batch compressed again with its codec at Kafka's
    /// level, as a pass must; the floor itself for uncompressed batches).
    #[serde(default)]
    pub codec_floor_seconds: Spread,
    /// Compaction time over the codec floor's, per run.
    #[serde(default)]
    pub over_codec_floor: Spread,
    /// The fastest run's time over the fastest codec floor's.
    #[serde(default)]
    pub best_over_codec_floor: f64,
    /// Pass 2's time over the codec floor's walk 2, per run.
    #[serde(default)]
    pub pass2_over_codec_floor: Spread,
    /// Peak anonymous resident memory of a run's compaction, above what the partition held.
    #[serde(default)]
    pub peak_rss_anon_bytes: u64,
    /// Peak file-backed resident memory of a run's compaction.
    #[serde(default)]
    pub peak_rss_file_bytes: u64,
    /// xxh3 of the surviving records' offsets, keys and values.
    pub result_digest: String,
    /// Kafka 4.4's own cleaner on the same partition in Kafka's layout, beside this map on it (`None` where it
    /// did not run: [`super::Report::kafka_cleaner`] says why).
    #[serde(default)]
    pub vs_kafka: Option<VsKafka>,
}

/// Kafka 4.4's own cleaner and this row's map on the same partition files (the shape written in Kafka's layout,
/// `<topic>-0`), each on fresh copies, with the same buffer, load factor, topic settings and fixed clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VsKafka {
    /// Kafka's seconds (around `doClean`, in its JVM, all passes): median and range of its runs.
    pub kafka_seconds: Spread,
    /// Kafka's passes until clean.
    pub kafka_passes: u64,
    /// Kafka's peak resident memory: the JVM's `VmHWM` (the largest of its runs).
    pub kafka_peak_rss_bytes: u64,
    /// Bytes of Kafka's closed segments' `.log` files after.
    pub kafka_bytes_after: u64,
    /// Bytes a key Kafka's `SkimpyOffsetMap` holds in the buffer.
    pub kafka_bytes_per_key: f64,
    /// Our seconds on the partition files (the passes' own time): median and range of the runs.
    pub seconds: Spread,
    /// Kafka's fastest run over our fastest: how many times faster ours is.
    pub speedup: f64,
    /// Our peak resident memory (the largest of the runs): the whole process's (the `VmHWM` of a child running
    /// only the compaction) when `rss_of_process`, else the run's anonymous and file-backed growth in this one.
    pub peak_rss_bytes: u64,
    /// How `peak_rss_bytes` was measured (see there).
    pub rss_of_process: bool,
    /// Our passes until clean.
    pub passes: u64,
    /// Bytes a key our map holds in the buffer (its fullest pass's figure).
    pub bytes_per_key: f64,
    /// Bytes of our closed segments' `.log` files after.
    pub bytes_after: u64,
    /// `bytes_after / kafka_bytes_after`.
    pub output_over_kafka: f64,
    /// Every closed segment's `.log`, `.index`, `.timeindex` and `.txnindex` byte for byte Kafka's.
    pub identical: bool,
    /// The first file that differs, said in a line (empty when identical).
    pub difference: String,
    /// The records Kafka's output holds (every offset, key and value, read back through our reader with the
    /// `.txnindex` Kafka wrote) are this row's: required (the report fails otherwise) but where either cleaner
    /// took several passes over a transactional partition, recorded there (see docs/kafka.md, "Several
    /// passes").
    #[serde(default = "yes")]
    pub same_records: bool,
    /// Kafka's runs of this row (fewer below the full buffer, where Kafka's cleaner takes dozens of passes).
    #[serde(default)]
    pub kafka_runs: usize,
}

fn yes() -> bool {
    true
}

/// True for a shape with transactions (the generated changelog, the broker's): where a cleaner takes several
/// passes there, the records it keeps depend on where each pass started (Kafka's cleaner leaves a producer's
/// committed batches unmapped after a stale aborted transaction of the segment a pass starts in; ours does
/// as Kafka's: docs/kafka.md, "Several passes"). A map that holds another number of keys a pass than Kafka's
/// `SkimpyOffsetMap` starts its passes elsewhere, so its rows need not leave Kafka's records, nor each other's;
/// the skimpy map's passes are Kafka's, and so must its records be.
fn several_passes_may_differ(shape: &str) -> bool {
    shape.ends_with("transactions")
}

fn plain() -> String {
    "plain".to_owned()
}

fn failed(e: String) -> ReportError {
    ReportError::Failed(e)
}

/// One shape of partition, written once and compacted by every row.
struct Shape {
    name: &'static str,
    codec: Compression,
    keys: u64,
    source: Arc<dyn SegmentStore>,
    written: crate::kafka::Written,
    /// The buffer shares its rows run at.
    shares: &'static [f64],
    /// The clock both cleaners are given: after every record's timestamp.
    now_ms: i64,
    /// The partition's segment size (its topic's `segment.bytes`), which both cleaners group segments by.
    segment_bytes: u64,
    /// Runs of each of its rows (each on a fresh copy, beside its floors).
    repeats: usize,
}

fn shapes(config: &Config) -> Result<Vec<Shape>, ReportError> {
    let keys = crate::Keys::new(config.kafka_keys as usize, config.key_bytes, config.seed);
    let (records, segment_bytes, seed) = (config.kafka_records, config.segment_bytes, config.seed);
    // Each shape written into a store of its own, run at the sweep's shares on `config`'s clock and sizes.
    let shape = |name, codec, keys, write: &dyn Fn(&dyn SegmentStore) -> Result<crate::kafka::Written, String>| {
        let source: Arc<dyn SegmentStore> = Arc::new(MemStore::new());
        let written = write(&*source).map_err(failed)?;
        Ok::<_, ReportError>(Shape {
            name,
            codec,
            keys,
            source,
            written,
            shares: SWEEP,
            now_ms: NOW_MS,
            segment_bytes,
            repeats: config.repeats,
        })
    };
    let mut out = Vec::new();
    for codec in [Compression::None, Compression::Lz4] {
        out.push(shape("plain", codec, config.kafka_keys, &|store| {
            crate::kafka::write_partition(store, &keys, records, u64::MAX, codec, segment_bytes, seed)
        })?);
    }
    out.push(shape("transactions", Compression::None, config.kafka_keys, &|store| {
        crate::kafka::write_transactional_partition(store, &keys, records, segment_bytes, seed)
    })?);
    // A group commits 20 partitions: groups for about a tenth of the plain shape's keys.
    let groups = (config.kafka_keys / 200).max(1);
    out.push(shape("consumer_offsets", Compression::None, groups * 21, &|store| {
        crate::kafka::write_offsets_partition(store, groups, records, u64::MAX, segment_bytes, seed)
    })?);
    Ok(out)
}

/// The broker's partitions' segment size: eight bytes a record, so that a compressed partition too has several
/// closed segments (the quick matrix's 30k records, kafka-interop's test's size: 240 KB, below Kafka's 1 MiB
/// minimum `segment.bytes`, through `internal.segment.bytes`), at most the generated shapes' size (the full
/// matrix's 2M records: 16 MiB).
fn broker_segment_bytes(config: &Config) -> u64 {
    config.broker_records.saturating_mul(8).clamp(64 << 10, config.segment_bytes.max(64 << 10))
}

/// The buffer shares of the generated shapes' rows (of what the skimpy map needs for their keys).
const SWEEP: &[f64] = &[1.0, 0.25];

/// The partitions a real Kafka 4.4 broker wrote from its Java clients for `config`'s size (each codec, an
/// exactly-once changelog, `__consumer_offsets`; produced once and cached, see
/// `kafka_interop::bench_partitions`), and their segment size.
fn broker_partitions(
    config: &Config,
    kafka: &'static kafka_interop::Kafka,
) -> Result<(kafka_interop::bench_partitions::Written, u64), ReportError> {
    let spec = kafka_interop::bench_partitions::Spec {
        records: config.broker_records,
        keys: config.broker_keys,
        segment_bytes: broker_segment_bytes(config),
    };
    let written = kafka_interop::bench_partitions::get(kafka, &spec)
        .map_err(|e| failed(format!("the broker's partitions: {e}")))?;
    Ok((written, spec.segment_bytes))
}

/// One partition the broker wrote, read into memory as a shape whose rows run at the full buffer (one at a
/// time: the full matrix's seven partitions hold about a gigabyte).
fn broker_shape(
    config: &Config,
    p: &kafka_interop::bench_partitions::Partition,
    produced_ms: i64,
    segment_bytes: u64,
    scratch: &std::path::Path,
) -> Result<Shape, ReportError> {
    let name = match p.shape.as_str() {
        "plain" => "broker plain",
        "transactions" => "broker transactions",
        "consumer_offsets" => "broker consumer_offsets",
        other => return Err(failed(format!("{}: an unknown shape '{other}'", p.name))),
    };
    let codec = [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd]
        .into_iter()
        .find(|c| c.name() == p.codec)
        .ok_or_else(|| failed(format!("{}: an unknown codec '{}'", p.name, p.codec)))?;
    // A copy: the cached node stays as the broker left it.
    let copy = scratch.join("broker-copy").join(&p.name);
    crate::vs_kafka::copy(&p.dir, &copy).map_err(failed)?;
    let source = in_memory(&copy)?;
    let _ = std::fs::remove_dir_all(&copy);
    let mut bytes = 0;
    for n in source.list().map_err(|e| failed(e.to_string()))?.iter().filter(|n| n.ends_with(".log")) {
        bytes += source.open(n).map_err(|e| failed(format!("{}/{n}: {e}", p.name)))?.len();
    }
    Ok(Shape {
        name,
        codec,
        keys: p.keys,
        source,
        written: crate::kafka::Written { records: p.records, bytes },
        shares: &[1.0],
        now_ms: NOW_MS.max(produced_ms.saturating_add(86_400_000)),
        segment_bytes,
        // As many as Kafka's cleaner runs: the broker's partitions are the report's largest Kafka rows.
        repeats: config.kafka_cleaner_repeats.max(1),
    })
}

/// The rows of one shape, map and buffer: every run's copy, floor and compaction.
fn run_row(config: &Config, shape: &Shape, map: MapKind, buffer: usize, share: f64) -> Result<KafkaCell, ReportError> {
    let mut runs = Vec::with_capacity(shape.repeats);
    for _ in 0..shape.repeats.max(1) {
        let store: Arc<dyn SegmentStore> = Arc::new(MemStore::new());
        crate::store::copy_store(&*shape.source, &*store).map_err(failed)?;
        // The floors: what a pass must do with its own parsing, writing into memory as the pass does here;
        // the codec floor recompresses what it rebuilds (the same as the other for uncompressed batches).
        let floor = {
            let log = crate::kafka::open(Arc::clone(&store), shape.segment_bytes).map_err(failed)?;
            let interval = log.config().index_interval_bytes;
            let floor =
                |r| crate::bare::kafka_floor(&log, shape.keys as usize, Out::Memory, shape.segment_bytes, interval, r);
            let write = floor(Recompress::No);
            let codec = if shape.codec == Compression::None { write } else { floor(Recompress::Yes) };
            (write, codec)
        };
        let started = std::time::Instant::now();
        let (outcome, peak) = crate::rss::peak_during(|| {
            crate::kafka::compact_until_clean(store, map, buffer, config.load_factor, shape.segment_bytes, shape.now_ms)
        });
        let (log, passes) = outcome.map_err(failed)?;
        let seconds = started.elapsed().as_secs_f64();
        let (digest, kept) = crate::digest::records(&log).map_err(failed)?;
        runs.push((seconds, floor, peak, passes, digest, kept));
    }
    let seconds = Spread::of(runs.iter().map(|r| r.0));
    let floor_seconds = Spread::of(runs.iter().map(|r| r.1.0.seconds()));
    let over_floor = Spread::of(runs.iter().map(|r| r.0 / r.1.0.seconds().max(1e-9)));
    let best_over_floor = seconds.min / floor_seconds.min.max(1e-9);
    let codec_floor_seconds = Spread::of(runs.iter().map(|r| r.1.1.seconds()));
    let over_codec_floor = Spread::of(runs.iter().map(|r| r.0 / r.1.1.seconds().max(1e-9)));
    let phase = |r: &(f64, (Floor, Floor), crate::rss::Resident, Vec<cleaner::CleanStats>, String, u64),
                 f: fn(&cleaner::CleanStats) -> f64,
                 floor: f64| { r.3.iter().map(f).sum::<f64>() / floor.max(1e-9) };
    let pass1_over_floor = Spread::of(runs.iter().map(|r| phase(r, |s| s.pass1.seconds, r.1.0.pass1_seconds)));
    let pass2_over_floor = Spread::of(runs.iter().map(|r| phase(r, |s| s.pass2.seconds, r.1.0.pass2_seconds)));
    let pass2_over_codec_floor = Spread::of(runs.iter().map(|r| phase(r, |s| s.pass2.seconds, r.1.1.pass2_seconds)));
    let median = runs
        .iter()
        .min_by(|a, b| (a.0 - seconds.median).abs().total_cmp(&(b.0 - seconds.median).abs()))
        .ok_or_else(|| failed("no run".into()))?;
    if let Some(other) = runs.iter().find(|r| r.4 != median.4) {
        return Err(ReportError::Mismatch(format!(
            "kafka {}/{}/{}: two runs left different records ({} and {})",
            shape.name, map, buffer, median.4, other.4
        )));
    }
    let (secs, _, _, passes, digest, kept) = median;
    let records = shape.written.records;
    let per = |f: fn(&cleaner::CleanStats) -> f64| passes.iter().map(f).sum::<f64>() * 1e9 / records.max(1) as f64;
    Ok(KafkaCell {
        shape: shape.name.to_owned(),
        map: map.name().to_owned(),
        codec: shape.codec.name().to_owned(),
        keys: shape.keys,
        records,
        bytes: shape.written.bytes,
        buffer_bytes: buffer as u64,
        buffer_share: share,
        passes_to_clean: passes.len() as u64,
        pass1_ns_per_record: per(|s| s.pass1.seconds),
        pass2_ns_per_record: per(|s| s.pass2.seconds),
        records_per_s: records as f64 / secs,
        bytes_per_s: shape.written.bytes as f64 / secs,
        records_kept: *kept,
        bytes_written: passes.iter().map(|s| s.bytes_written).sum(),
        seconds,
        floor_seconds,
        over_floor,
        best_over_floor,
        pass1_over_floor,
        pass2_over_floor,
        codec_floor_seconds,
        over_codec_floor,
        best_over_codec_floor: seconds.min / codec_floor_seconds.min.max(1e-9),
        pass2_over_codec_floor,
        peak_rss_anon_bytes: runs.iter().map(|r| r.2.anon).max().unwrap_or(0),
        peak_rss_file_bytes: runs.iter().map(|r| r.2.file).max().unwrap_or(0),
        result_digest: digest.clone(),
        vs_kafka: None,
    })
}

/// Rows [`run`] makes for `config`, with Kafka's own cleaner (and so the broker's partitions) where
/// `kafka_runs`.
pub fn rows(config: &Config, kafka_runs: bool) -> usize {
    if config.kafka_records == 0 {
        return 0;
    }
    // The generated shapes at two buffers; the broker's five codecs, changelog and offsets at one.
    let broker = if kafka_runs && config.broker_partitions && config.broker_records > 0 { 7 } else { 0 };
    (4 * 2 + broker) * MapKind::WITH_EXTERNAL.len()
}

/// The clock both cleaners are given (after every record's timestamp).
const NOW_MS: i64 = 1_800_000_000_000;

/// Kafka's own cleaner for the rows of `config`, or why it does not run (a line for the report). Under CI
/// (the `CI` variable set) it must run: its absence is an error there.
///
/// # Errors
/// [`ReportError::Failed`] under CI when the reference cannot be had.
pub fn reference(config: &Config) -> Result<(Option<&'static kafka_interop::Kafka>, String), ReportError> {
    if config.kafka_records == 0 || config.kafka_cleaner_repeats == 0 {
        return Ok((None, "not run: not asked for (no Kafka rows, or kafka_cleaner_repeats 0)".to_owned()));
    }
    match kafka_interop::Kafka::try_get() {
        Ok(Some(k)) => Ok((Some(k), String::new())),
        Ok(None) => Ok((None, "not run: LOGCOMPACT_SKIP_KAFKA is set".to_owned())),
        Err(why) if std::env::var_os("CI").is_some() => {
            Err(ReportError::Failed(format!("Kafka's own cleaner must run under CI: {why}")))
        }
        Err(why) => Ok((None, format!("not run: {why}"))),
    }
}

/// A shape written in Kafka's layout for both cleaners, with Kafka's runs in one buffer.
struct OnFiles {
    /// The partition directory the copies are made from.
    source: std::path::PathBuf,
    /// Where the copies go.
    scratch: std::path::PathBuf,
    settings: crate::vs_kafka::Settings,
    runs: Vec<crate::vs_kafka::Run>,
    /// The first run's closed segment files.
    files: Vec<(String, Vec<u8>)>,
    /// The first run's records (see [`crate::digest::records`]).
    digest: String,
}

/// Writes `shape` into `<scratch>/source/<topic>-0`.
fn write_files(shape: &Shape, scratch: &std::path::Path) -> Result<std::path::PathBuf, ReportError> {
    let topic = format!("{}-{}", shape.name.replace(['_', ' '], "-"), shape.codec.name());
    let dir = crate::vs_kafka::partition_dir(&scratch.join("source"), &topic);
    let store = storage_file::FileStore::open(&dir).map_err(|e| failed(format!("{}: {e}", dir.display())))?;
    crate::store::copy_store(&*shape.source, &store).map_err(failed)?;
    Ok(dir)
}

/// Kafka's cleaner `repeats` times on fresh copies of `source`.
fn kafka_runs(
    kafka: &kafka_interop::Kafka,
    source: &std::path::Path,
    scratch: &std::path::Path,
    settings: crate::vs_kafka::Settings,
    repeats: usize,
) -> Result<OnFiles, ReportError> {
    let mut runs = Vec::new();
    let mut files = Vec::new();
    let mut digest = String::new();
    let name = source.file_name().unwrap_or_default();
    for i in 0..repeats.max(1) {
        let copy = scratch.join(format!("kafka-{i}")).join(name);
        crate::vs_kafka::copy(source, &copy).map_err(failed)?;
        runs.push(
            crate::vs_kafka::kafka_clean(kafka, &copy, &settings)
                .map_err(|e| failed(format!("Kafka's cleaner: {e}")))?,
        );
        if i == 0 {
            files = crate::vs_kafka::segment_files(&copy).map_err(failed)?;
            digest = records_on_files(&copy, settings.segment_bytes)?;
        }
        let _ = std::fs::remove_dir_all(copy.parent().unwrap_or(&copy));
    }
    Ok(OnFiles { source: source.to_path_buf(), scratch: scratch.to_path_buf(), settings, runs, files, digest })
}

/// The partition directory `dir`'s files, copied into memory (opening a log there leaves `dir` as it is).
fn in_memory(dir: &std::path::Path) -> Result<Arc<dyn SegmentStore>, ReportError> {
    let files = storage_file::FileStore::open(dir).map_err(|e| failed(format!("{}: {e}", dir.display())))?;
    let store: Arc<dyn SegmentStore> = Arc::new(MemStore::new());
    crate::store::copy_store(&files, &*store).map_err(failed)?;
    Ok(store)
}

/// The records of the partition in `dir` (Kafka's output, read from a copy in memory).
fn records_on_files(dir: &std::path::Path, segment_bytes: u64) -> Result<String, ReportError> {
    let log = crate::kafka::open(in_memory(dir)?, segment_bytes).map_err(failed)?;
    let (digest, _) =
        crate::digest::records(&log).map_err(|e| failed(format!("Kafka's output in {}: {e}", dir.display())))?;
    Ok(digest)
}

/// Ours with `map` beside Kafka's runs: as many runs on fresh copies, measured in a child process
/// (`config.child_exe`) or in this one.
fn vs_kafka(config: &Config, on: &OnFiles, map: MapKind, digest: &str) -> Result<VsKafka, ReportError> {
    let name = on.source.file_name().unwrap_or_default();
    let mut runs = Vec::new();
    let (mut identical, mut difference) = (true, String::new());
    for i in 0..on.runs.len() {
        let copy = on.scratch.join(format!("{}-{i}", map.name())).join(name);
        crate::vs_kafka::copy(&on.source, &copy).map_err(failed)?;
        let run = match &config.child_exe {
            Some(exe) => crate::vs_kafka::ours_in_child(exe, &copy, map.into(), &on.settings).map_err(failed)?,
            None => {
                let (run, peak) =
                    crate::rss::peak_during(|| crate::vs_kafka::ours_clean(&copy, map.into(), &on.settings));
                crate::vs_kafka::Run { peak_rss_bytes: peak.anon + peak.file, ..run.map_err(failed)? }
            }
        };
        if i == 0 {
            let files = crate::vs_kafka::segment_files(&copy).map_err(failed)?;
            let source = crate::vs_kafka::segment_files(&on.source).map_err(failed)?;
            let kafka_files = crate::vs_kafka::without_load_indexes(&on.files, &files, &source);
            if files != kafka_files {
                identical = false;
                difference = crate::vs_kafka::first_difference(&kafka_files, &files);
            }
        }
        let _ = std::fs::remove_dir_all(copy.parent().unwrap_or(&copy));
        runs.push(run);
    }
    let k = &on.runs[0];
    let ours = runs.first().ok_or_else(|| failed("no run".into()))?.clone();
    let kafka_seconds = Spread::of(on.runs.iter().map(|r| r.seconds));
    let seconds = Spread::of(runs.iter().map(|r| r.seconds));
    Ok(VsKafka {
        kafka_seconds,
        kafka_passes: k.passes,
        kafka_peak_rss_bytes: on.runs.iter().map(|r| r.peak_rss_bytes).max().unwrap_or(0),
        kafka_bytes_after: k.bytes_after,
        kafka_bytes_per_key: k.bytes_per_key,
        seconds,
        speedup: kafka_seconds.min / seconds.min.max(1e-9),
        peak_rss_bytes: runs.iter().map(|r| r.peak_rss_bytes).max().unwrap_or(0),
        rss_of_process: config.child_exe.is_some(),
        passes: ours.passes,
        bytes_per_key: ours.bytes_per_key,
        bytes_after: ours.bytes_after,
        output_over_kafka: ours.bytes_after as f64 / k.bytes_after.max(1) as f64,
        identical,
        difference,
        same_records: on.digest == digest,
        kafka_runs: on.runs.len(),
    })
}

/// Runs the Kafka rows of `config`, calling `progress` after each; with Kafka's own cleaner beside each row
/// where it can run. Returns the rows and what became of Kafka's cleaner (empty when it ran).
///
/// # Errors
/// [`ReportError::Mismatch`] when rows of one shape leave different records; [`ReportError::Failed`]
/// otherwise.
pub fn run(config: &Config, progress: &mut dyn FnMut(Progress<'_>)) -> Result<(Vec<KafkaCell>, String), ReportError> {
    let mut out: Vec<KafkaCell> = Vec::new();
    let (kafka, status) = reference(config)?;
    if config.kafka_records == 0 {
        return Ok((out, status));
    }
    let scratch = tempfile::tempdir().map_err(|e| failed(format!("a temporary directory: {e}")))?;
    // The generated shapes (written up front), then the broker's partitions, each read when its turn comes.
    type Make<'a> = Box<dyn FnOnce() -> Result<Shape, ReportError> + 'a>;
    let mut all: Vec<Make<'_>> = Vec::new();
    for shape in shapes(config)? {
        all.push(Box::new(move || Ok(shape)));
    }
    if let Some(k) = kafka.filter(|_| config.broker_partitions && config.broker_records > 0) {
        let (written, segment_bytes) = broker_partitions(config, k)?;
        let produced_ms = written.produced_ms;
        let at = scratch.path();
        for p in written.partitions {
            all.push(Box::new(move || broker_shape(config, &p, produced_ms, segment_bytes, at)));
        }
    }
    for make in all {
        let shape = make()?;
        // The broker's shapes get 2% headroom: a buffer that holds the keys exactly ends Kafka's pass at the
        // first keyed record after the last new key, a second pass where ours takes one (the files then differ).
        let keys = if shape.name.starts_with("broker") { shape.keys + shape.keys / 50 + 1 } else { shape.keys };
        let need = MapKind::Skimpy.bytes_for(keys as usize, config.load_factor, config.key_bytes);
        let source = match kafka {
            Some(_) => Some(write_files(&shape, scratch.path())?),
            None => None,
        };
        for &share in shape.shares {
            let buffer = ((need as f64 * share).round() as usize).max(1 << 12);
            let on_files = match (kafka, &source) {
                (Some(k), Some(src)) if config.kafka_cleaner_shares.contains(&share) => {
                    // Below the full buffer Kafka's cleaner takes dozens of passes (each over the whole log):
                    // fewer runs there.
                    let repeats =
                        if share >= 1.0 { config.kafka_cleaner_repeats } else { config.kafka_sweep_repeats.max(1) };
                    let settings = crate::vs_kafka::Settings {
                        buffer_bytes: buffer as u64,
                        segment_bytes: shape.segment_bytes,
                        load_factor: config.load_factor,
                        now_ms: shape.now_ms,
                        threads: 1,
                    };
                    Some(kafka_runs(k, src, scratch.path(), settings, repeats)?)
                }
                _ => None,
            };
            for map in MapKind::WITH_EXTERNAL {
                let mut row = run_row(config, &shape, map, buffer, share)?;
                if let Some(on) = &on_files {
                    let v = vs_kafka(config, on, map, &row.result_digest)?;
                    // The records must be Kafka's, but for a map other than Kafka's own design on a
                    // transactional partition that either cleaner took several passes over (passes that start
                    // elsewhere than Kafka's keep other stale records); the row says so.
                    let may_differ = several_passes_may_differ(&row.shape)
                        && map != MapKind::Skimpy
                        && (v.passes > 1 || v.kafka_passes > 1);
                    if !v.same_records && !may_differ {
                        return Err(ReportError::Mismatch(format!(
                            "kafka {}/{}/{}/buffer {}: Kafka's own cleaner left different records ({}) than ours ({})",
                            row.shape, row.codec, row.map, row.buffer_bytes, on.digest, row.result_digest
                        )));
                    }
                    row.vs_kafka = Some(v);
                }
                // Rows of one generated shape clean the same partition: the same records whatever the codec. A
                // broker wrote each codec's partition with its own batches and segments: rows of one codec.
                // On a transactional shape, rows that took several passes keep records that depend on
                // where their passes started: they are held to Kafka's records above, not to each other.
                let several = |c: &KafkaCell| several_passes_may_differ(&c.shape) && c.passes_to_clean > 1;
                let same_partition = |f: &KafkaCell| {
                    f.shape == row.shape
                        && (f.codec == row.codec || !row.shape.starts_with("broker"))
                        && !(several(f) || several(&row))
                };
                if let Some(first) = out.iter().find(|f| same_partition(f) && f.result_digest != row.result_digest) {
                    return Err(ReportError::Mismatch(format!(
                        "kafka {}/{}/{}/buffer {} left different records ({}) than {}/{}/buffer {} ({})",
                        row.shape,
                        row.codec,
                        row.map,
                        row.buffer_bytes,
                        row.result_digest,
                        first.codec,
                        first.map,
                        first.buffer_bytes,
                        first.result_digest
                    )));
                }
                out.push(row);
                let last = out.last().expect("just pushed");
                progress(Progress::Kafka(last));
            }
        }
        if let Some(src) = source {
            let _ = std::fs::remove_dir_all(src);
        }
    }
    Ok((out, status))
}
