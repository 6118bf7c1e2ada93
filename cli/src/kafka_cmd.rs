//! The commands on a Kafka partition directory (`--format kafka`): `dump`, `check`, `analyze`, `advise` and
//! `compact --out`. All but `compact` only read; `compact` writes a new directory and never the source.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use cleaner::advise::Budget;
use cleaner::kafka::{KafkaAnalysis, KafkaPassOptions, StoreSink, analyze_partition, clean_partition};
use cleaner::map::MapKind;
use log_core::SegmentStore;
use log_core::kafka::{Partition, PartitionError, checkpoint_offset, topic_partition};

use crate::advise::human_bytes;
use crate::failure::Failure;
use crate::out::QuietPipe;
use crate::records::quoted;

fn partition_failure(dir: &Path, e: &PartitionError) -> Failure {
    let msg = format!("{}: {e}", dir.display());
    match e {
        // A message set older than magic 2 is intact data of a format this tool does not read: usage, not damage.
        PartitionError::Batch { problem: log_core::kafka::BatchProblem::OldMagic { .. }, .. } => Failure::Usage(msg),
        PartitionError::Batch { .. } | PartitionError::OutOfOrder { .. } => Failure::Corruption(msg),
        PartitionError::NotKafka { .. } | PartitionError::SwapInProgress { .. } => Failure::Usage(msg),
        PartitionError::Io { .. } => Failure::Runtime(msg),
    }
}

fn cleaner_failure(dir: &Path, e: &cleaner::Error) -> Failure {
    match e {
        cleaner::Error::Kafka(k) => partition_failure(dir, k),
        other => Failure::from_cleaner(&dir.display().to_string(), other),
    }
}

/// Opens the partition in `dir` read-only (no lock, nothing created).
///
/// # Errors
/// [`Failure::Usage`] for a directory that is not a Kafka partition; [`Failure::Runtime`] for I/O.
pub fn open(dir: &Path) -> Result<Partition, Failure> {
    let store = crate::backend::open_read_only_store(dir)?;
    Partition::open(&*store).map_err(|e| partition_failure(dir, &e))
}

fn failed(e: std::io::Error) -> Failure {
    Failure::Runtime(format!("cannot write output: {e}"))
}

/// `dump --format kafka`: every batch (offsets, attributes) and record, as `kafka-dump-log.sh
/// --print-data-log` shows them, escaped as the native dump is; or JSON.
///
/// # Errors
/// As [`open`]; [`Failure::Corruption`] for a damaged batch (after printing what came before it).
pub fn dump(dir: &Path, json: bool) -> Result<(), Failure> {
    let partition = open(dir)?;
    let mut out = QuietPipe::new(std::io::stdout().lock());
    let mut scratch = Vec::new();
    let mut segment = usize::MAX;
    let mut scan = partition.scan();
    let mut batches_json = Vec::new();
    for placed in scan.by_ref() {
        let placed = placed.map_err(|e| partition_failure(dir, &e))?;
        let h = placed.batch.header;
        let file = &partition.segments[placed.segment].name;
        let bad = |p| {
            partition_failure(dir, &PartitionError::Batch { file: file.clone(), position: placed.position, problem: p })
        };
        let codec = h.compression().map_or("unknown", log_core::kafka::Compression::name);
        let mut records = Vec::new();
        if !json && placed.segment != segment {
            writeln!(out, "segment {file}").map_err(failed)?;
            segment = placed.segment;
        }
        if !json {
            writeln!(
                out,
                "batch base_offset={} last_offset={} count={} position={} size={} codec={codec} crc={:#010x} \
                 producer_id={} producer_epoch={} base_sequence={} leader_epoch={} transactional={} control={} \
                 timestamp_type={} max_timestamp={}{}",
                h.base_offset,
                h.last_offset(),
                h.records_count,
                placed.position,
                placed.batch.bytes.len(),
                h.crc,
                h.producer_id,
                h.producer_epoch,
                h.base_sequence,
                h.partition_leader_epoch,
                h.is_transactional(),
                h.is_control(),
                if h.is_log_append_time() { "LogAppendTime" } else { "CreateTime" },
                h.max_timestamp,
                h.delete_horizon().map_or_else(String::new, |d| format!(" delete_horizon={d}")),
            )
            .map_err(failed)?;
        }
        for r in placed.batch.records(&mut scratch).map_err(bad)? {
            let r = r.map_err(bad)?;
            if json {
                // Bytes as `dump --json` shows them for native logs: UTF-8 as is, other bytes `\xNN`.
                let esc = crate::json::escape;
                records.push(serde_json::json!({
                    "offset": r.offset,
                    "timestamp": r.timestamp,
                    "key": r.key.map(esc),
                    "value": r.value.map(esc),
                    "headers": r.headers().map(|(n, v)| serde_json::json!([esc(n), v.map(esc)])).collect::<Vec<_>>(),
                }));
                continue;
            }
            let key = r.key.map_or_else(|| "NULL".to_owned(), quoted);
            let value = r.value.map_or_else(|| "TOMBSTONE".to_owned(), quoted);
            let mut line = format!("  offset={} timestamp={} key={key} value={value}", r.offset, r.timestamp);
            for (n, v) in r.headers() {
                line.push_str(&format!(" header {}={}", quoted(n), v.map_or_else(|| "NULL".to_owned(), quoted)));
            }
            writeln!(out, "{line}").map_err(failed)?;
        }
        if json {
            batches_json.push(serde_json::json!({
                "segment": file,
                "position": placed.position,
                "size": placed.batch.bytes.len(),
                "header": h,
                "codec": codec,
                "transactional": h.is_transactional(),
                "control": h.is_control(),
                "delete_horizon": h.delete_horizon(),
                "records": records,
            }));
        }
    }
    if json {
        let text = serde_json::to_string(&serde_json::json!({ "batches": batches_json, "torn_tail": scan.torn_tail.as_ref().map(|t| serde_json::json!({"file": t.file, "position": t.position, "bytes": t.bytes})) }))
            .map_err(|e| Failure::Runtime(e.to_string()))?;
        writeln!(out, "{text}").map_err(failed)?;
    } else if let Some(t) = &scan.torn_tail {
        writeln!(
            out,
            "torn tail: {} bytes at byte {} of {} (a broker's recovery cuts them)",
            t.bytes, t.position, t.file
        )
        .map_err(failed)?;
    }
    Ok(())
}

/// `check --format kafka`: every batch's CRC, its records and the order of offsets.
///
/// # Errors
/// As [`open`]; [`Failure::Corruption`] naming the file and byte of the first damaged batch.
pub fn check(dir: &Path) -> Result<(), Failure> {
    let partition = open(dir)?;
    let mut scratch = Vec::new();
    let (mut batches, mut records) = (0u64, 0u64);
    let mut scan = partition.scan();
    for placed in scan.by_ref() {
        let placed = placed.map_err(|e| partition_failure(dir, &e))?;
        let file = &partition.segments[placed.segment].name;
        let bad = |p| {
            partition_failure(dir, &PartitionError::Batch { file: file.clone(), position: placed.position, problem: p })
        };
        for r in placed.batch.records(&mut scratch).map_err(bad)? {
            r.map_err(bad)?;
            records += 1;
        }
        batches += 1;
    }
    if let Some(t) = &scan.torn_tail {
        eprintln!(
            "notice: a torn tail of {} bytes at byte {} of {} (what a crash leaves; a broker cuts it)",
            t.bytes, t.position, t.file
        );
    }
    let text = serde_json::json!({ "format": "kafka", "segments": partition.segments.len(), "batches": batches, "records": records, "torn_tail_bytes": scan.torn_tail.map_or(0, |t| t.bytes) });
    println!("{text}");
    Ok(())
}

/// The first dirty offset: `--checkpoint`, else Kafka's `cleaner-offset-checkpoint` in the parent directory
/// for this topic-partition, else 0.
///
/// # Errors
/// [`Failure::Usage`] for a checkpoint file that does not parse.
pub fn first_dirty(dir: &Path, given: Option<i64>) -> Result<(i64, String), Failure> {
    if let Some(o) = given {
        return Ok((o, "--checkpoint".into()));
    }
    let name = dir.canonicalize().ok().and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()));
    let file = dir.join("..").join("cleaner-offset-checkpoint");
    if let (Some(name), Ok(text)) = (name, std::fs::read_to_string(&file))
        && let Some((topic, p)) = topic_partition(&name)
    {
        let found =
            checkpoint_offset(&text, topic, p).map_err(|e| Failure::Usage(format!("{}: {e}", file.display())))?;
        if let Some(o) = found {
            return Ok((o, format!("{} ({topic} {p})", file.display())));
        }
        return Ok((0, format!("none: {} has no entry for {topic} {p} (the whole log is dirty)", file.display())));
    }
    Ok((0, "none (no cleaner-offset-checkpoint beside the partition: the whole log is dirty)".into()))
}

/// A request to analyze a partition.
#[derive(Debug, Clone, Copy)]
pub struct AnalyzeRequest<'a> {
    /// The partition directory.
    pub dir: &'a Path,
    /// `--checkpoint`.
    pub checkpoint: Option<i64>,
    /// The buffer.
    pub budget: Budget,
    /// `delete.retention.ms`.
    pub delete_retention_ms: i64,
}

/// Runs the analysis.
///
/// # Errors
/// As [`open`].
pub fn analysis(req: AnalyzeRequest<'_>) -> Result<KafkaAnalysis, Failure> {
    let partition = open(req.dir)?;
    let (first, source) = first_dirty(req.dir, req.checkpoint)?;
    let options = KafkaPassOptions {
        first_dirty_offset: first,
        now_ms: log_core::now_ms(),
        delete_retention_ms: req.delete_retention_ms,
        segment_bytes: log_core::DEFAULT_SEGMENT_BYTES,
        min_compaction_lag_ms: 0,
    };
    analyze_partition(&partition, first, source, req.budget, options).map_err(|e| cleaner_failure(req.dir, &e))
}

/// `analyze --format kafka`.
///
/// # Errors
/// As [`analysis`].
pub fn analyze(req: AnalyzeRequest<'_>, json: bool) -> Result<(), Failure> {
    let a = analysis(req)?;
    let mut out = QuietPipe::new(std::io::stdout().lock());
    if json {
        let text = serde_json::to_string_pretty(&a).map_err(|e| Failure::Runtime(e.to_string()))?;
        return writeln!(out, "{text}").map_err(failed);
    }
    let codecs: Vec<String> = a.batches_by_codec.iter().map(|(c, n)| format!("{c} {n}")).collect();
    let keys = if a.dirty.distinct.exact {
        format!("{} distinct keys", a.dirty.distinct.keys)
    } else {
        format!(
            "about {} distinct keys (HyperLogLog, ±{:.1}%)",
            a.dirty.distinct.keys,
            a.dirty.distinct.relative_error * 100.0
        )
    };
    let lines = [
        format!(
            "partition {}: {} segments, {} batches ({}), {}",
            req.dir.display(),
            a.segments,
            a.batches,
            codecs.join(", "),
            human_bytes(a.bytes)
        ),
        format!(
            "offsets {}..={}; {} records: {} keyed, {} unkeyed, {} tombstones; {} transactional and {} control batches",
            a.first_offset.unwrap_or(0),
            a.last_offset.unwrap_or(-1),
            a.records,
            a.keyed_records,
            a.unkeyed_records,
            a.tombstones,
            a.transactional_batches,
            a.control_batches
        ),
        format!(
            "first dirty offset {} from {}; clean {}, dirty {}, active segment {}: dirty ratio {:.1}%",
            a.first_dirty_offset,
            a.checkpoint_source,
            human_bytes(a.clean_bytes),
            human_bytes(a.dirty_bytes),
            human_bytes(a.active_bytes),
            a.dirty_ratio * 100.0
        ),
        format!("dirty section: {} records, {} keyed, {keys}", a.dirty.dirty_records, a.dirty.keyed_records),
        format!(
            "a full compaction now keeps {} records in {} and reclaims {} ({:.1}%)",
            a.records_after_compaction,
            human_bytes(a.bytes_after_compaction),
            human_bytes(a.bytes_reclaimed),
            if a.bytes == 0 { 0.0 } else { a.bytes_reclaimed as f64 * 100.0 / a.bytes as f64 }
        ),
    ];
    for l in lines.iter().chain(&a.notes) {
        writeln!(out, "{l}").map_err(failed)?;
    }
    if a.torn_tail_bytes > 0 {
        writeln!(out, "torn tail: {} bytes at the end of the active segment", a.torn_tail_bytes).map_err(failed)?;
    }
    writeln!(out).map_err(failed)?;
    drop(out);
    crate::advise::print(&a.dirty.maps, a.dirty.distinct, Some(&a.dirty), req.budget, false)
}

/// `advise --format kafka --dir`.
///
/// # Errors
/// As [`analysis`].
pub fn advise(req: AnalyzeRequest<'_>, json: bool) -> Result<(), Failure> {
    let a = analysis(req)?;
    crate::advise::print(&a.dirty.maps, a.dirty.distinct, Some(&a.dirty), req.budget, json)
}

/// A request to compact a partition into another directory.
#[derive(Debug, Clone, Copy)]
pub struct CompactRequest<'a> {
    /// The source partition.
    pub dir: &'a Path,
    /// Where the compacted copy goes (must not exist, or be empty).
    pub out: &'a Path,
    /// The map.
    pub map: MapKind,
    /// Its budget.
    pub buffer_bytes: u64,
    /// Its load factor.
    pub load_factor: f64,
    /// `delete.retention.ms`.
    pub delete_retention_ms: i64,
    /// `--checkpoint`.
    pub checkpoint: Option<i64>,
    /// `segment.bytes`: adjacent cleaned segments are merged up to this.
    pub segment_bytes: u64,
    /// `min.compaction.lag.ms`.
    pub min_compaction_lag_ms: i64,
}

/// `compact --format kafka --out`: passes until clean, each one's statistics as a JSON line. A pass that
/// filled its map is followed by another over its output (in `<out>.pass-N`, removed after).
///
/// # Errors
/// As [`open`]; [`Failure::Usage`] for an `--out` that is not empty; [`Failure::Runtime`] for I/O.
pub fn compact(req: CompactRequest<'_>) -> Result<(), Failure> {
    let not_empty = |out: &Path| std::fs::read_dir(out).map(|mut d| d.next().is_some()).unwrap_or(true);
    if req.out.exists() && not_empty(req.out) {
        return Err(Failure::Usage(format!("--out {} exists and is not empty", req.out.display())));
    }
    if inside(req.out, req.dir) {
        return Err(Failure::Usage(format!(
            "--out {} is inside the source partition {}, which is never written",
            req.out.display(),
            req.dir.display()
        )));
    }
    let (mut first, _) = first_dirty(req.dir, req.checkpoint)?;
    let mut map =
        req.map.build(usize::try_from(req.buffer_bytes).unwrap_or(usize::MAX), req.load_factor).map_err(|e| {
            Failure::Usage(format!("cannot build the {} map of {} bytes: {e:?}", req.map.name(), req.buffer_bytes))
        })?;
    let (Some(parent), Some(name)) = (req.out.parent(), req.out.file_name()) else {
        return Err(Failure::Usage(format!("--out {} names no directory", req.out.display())));
    };
    let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
    if !parent.is_dir() {
        return Err(Failure::Usage(format!("--out {}: its parent directory does not exist", req.out.display())));
    }
    // The target is created empty and locked for the whole run, so a second run on it is refused (busy);
    // once locked it must still be empty (a run that finished meanwhile filled it).
    let created = match std::fs::create_dir(req.out) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
        Err(e) => return Err(Failure::Runtime(format!("cannot create {}: {e}", req.out.display()))),
    };
    // A failed run leaves no target it created (only while it is still empty: never another run's output).
    let give_up = |f: Failure| {
        if created {
            let _ = std::fs::remove_dir(req.out);
        }
        f
    };
    let _target = storage_file::FileStore::open_existing(req.out)
        .map_err(|e| give_up(Failure::Runtime(format!("--out {}: {e}", req.out.display()))))?;
    if not_empty(req.out) {
        return Err(Failure::Usage(format!("--out {} exists and is not empty", req.out.display())));
    }
    // Each pass writes a directory beside the target named after it (`.<name>.pass-N`), so runs on different
    // targets never share one and the target's lock keeps every other run off this one's.
    let pass_dir = |pass: u64| parent.join(format!(".{}.pass-{pass}", name.to_string_lossy()));
    let mut current: Option<std::path::PathBuf> = None;
    let result = passes(req, &mut *map, &mut first, &mut current, &pass_dir);
    match result {
        Ok(passes) => {
            let Some(done) = current.take() else {
                return Err(Failure::Runtime("no pass ran".into()));
            };
            if passes > 1 {
                eprintln!(
                    "note: the {} buffer took {passes} passes (each re-reads the partition); `logcompact advise \
                     --format kafka --dir {}` gives the buffer one pass needs",
                    crate::advise::human_bytes(req.buffer_bytes),
                    req.dir.display()
                );
            }
            // Renaming over the empty, locked target replaces it at once.
            std::fs::rename(&done, req.out).map_err(|e| {
                let _ = std::fs::remove_dir_all(&done);
                Failure::Runtime(format!("cannot move the result to {}: {e}", req.out.display()))
            })
        }
        Err(f) => {
            if let Some(dir) = current {
                let _ = std::fs::remove_dir_all(dir);
            }
            Err(give_up(f))
        }
    }
}

/// Runs passes until clean; `current` names the pass directory holding the latest output. Returns the passes.
fn passes(
    req: CompactRequest<'_>,
    map: &mut dyn cleaner::map::OffsetMap,
    first: &mut i64,
    current: &mut Option<std::path::PathBuf>,
    pass_dir: &dyn Fn(u64) -> std::path::PathBuf,
) -> Result<u64, Failure> {
    let now_ms = log_core::now_ms();
    let mut pass = 0u64;
    loop {
        pass += 1;
        let source = current.clone().unwrap_or_else(|| req.dir.to_path_buf());
        let partition = open(&source)?;
        let target = pass_dir(pass);
        let _ = std::fs::remove_dir_all(&target);
        let store: Arc<dyn SegmentStore> = Arc::new(
            storage_file::FileStore::open(&target)
                .map_err(|e| Failure::Runtime(format!("cannot create {}: {e}", target.display())))?,
        );
        // From here the new directory is ours to remove on failure; the previous pass's output is no longer
        // needed once this one is written.
        let previous = current.replace(target.clone());
        let options = KafkaPassOptions {
            first_dirty_offset: *first,
            now_ms,
            delete_retention_ms: req.delete_retention_ms,
            segment_bytes: req.segment_bytes,
            min_compaction_lag_ms: req.min_compaction_lag_ms,
        };
        let outcome = clean_partition(&partition, map, options, &mut StoreSink::new(&*store))
            .map_err(|e| cleaner_failure(&source, &e))
            .and_then(|stats| copy_other_files(&source, &target, &partition.other_files).map(|()| stats));
        drop(store);
        drop(partition);
        if let Some(p) = previous {
            let _ = std::fs::remove_dir_all(p);
        }
        let stats = outcome?;
        let _ = std::fs::remove_file(target.join("logcompact.lock"));
        let mut line = serde_json::to_value(&stats).map_err(|e| Failure::Runtime(e.to_string()))?;
        line["pass"] = pass.into();
        line["map"] = req.map.name().into();
        println!("{line}");
        if !stats.map_full {
            return Ok(pass);
        }
        *first = stats.end_offset;
    }
}

/// True when `path` (which may not exist yet) lies in `dir`: its deepest existing ancestor is resolved (links,
/// `..`) and the rest of it appended.
fn inside(path: &Path, dir: &Path) -> bool {
    let Ok(dir) = dir.canonicalize() else { return false };
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map(|c| c.join(path)).unwrap_or_else(|_| path.to_path_buf())
    };
    let parts: Vec<std::path::Component<'_>> = absolute.components().collect();
    let Some(known) = (0..=parts.len()).rev().find(|&i| parts[..i].iter().collect::<std::path::PathBuf>().exists())
    else {
        return false;
    };
    let Ok(mut resolved) = parts[..known].iter().collect::<std::path::PathBuf>().canonicalize() else { return false };
    for part in &parts[known..] {
        match part {
            std::path::Component::ParentDir => {
                resolved.pop();
            }
            std::path::Component::Normal(name) => resolved.push(name),
            _ => {}
        }
    }
    resolved.starts_with(&dir)
}

/// Copies the partition's other files (epoch checkpoint, metadata, producer snapshots, transaction indexes)
/// as they are; Kafka's `.index` and `.timeindex` are written anew with the segments.
fn copy_other_files(from: &Path, to: &Path, names: &[String]) -> Result<(), Failure> {
    for name in names.iter().filter(|n| {
        !n.ends_with(".index") && !n.ends_with(".timeindex") && !n.ends_with(".deleted") && !n.ends_with(".cleaned")
    }) {
        if !from.join(name).is_file() {
            eprintln!("note: {name} in {} is not a file: not copied", from.display());
            continue;
        }
        std::fs::copy(from.join(name), to.join(name))
            .map_err(|e| Failure::Runtime(format!("cannot copy {name} to {}: {e}", to.display())))?;
    }
    Ok(())
}
