//! Replicas that disagree: what each broker's replica of a partition holds, as the state a `read_committed`
//! consumer rebuilds from it, written to a file a broker ([`audit_broker`]), and the files of every broker
//! compared one partition at a time ([`compare`]).
//!
//! Kafka's cleaners work alone on each broker: a tombstone or a transaction marker goes once
//! `delete.retention.ms` has passed, whatever the other replicas hold. A replica down or lagging for longer
//! never receives what was removed meanwhile, and keeps a different log for good (a deleted key back on it,
//! an aborted transaction read as committed, or the reverse, or a last stable offset that never moves).
//!
//! An audit reads only: every partition is opened read-only (no lock, nothing mapped, nothing written), so it
//! runs beside a running broker, as `check --data-dir` does.
//!
//! # Example
//! ```no_run
//! use logcompact::audit::{AuditRequest, audit_broker};
//! let req = AuditRequest::new(vec!["/var/lib/kafka/data".into()], "broker-1.audit".into());
//! let summary = audit_broker(&req, &mut |_| {})?;
//! println!("{} partitions, {} keys", summary.partitions, summary.keys);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod compare;
#[cfg(test)]
mod compare_tests;
pub mod digest;
pub mod file;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use log_core::Format;
use log_core::SegmentScan;

use digest::{DigestBuilder, Entry};
use file::{AuditFileError, AuditWriter, BrokerHeader, PartitionHeader};

/// What [`audit_broker`] is asked to do.
#[derive(Debug, Clone)]
pub struct AuditRequest {
    /// The broker's log directories (`log.dirs`); the first with a metadata log gives replicas and leaders.
    pub log_dirs: Vec<PathBuf>,
    /// The audit file to write.
    pub out: PathBuf,
    /// Slots of a partition's table of keys in memory (24 bytes each, rounded down to a power of two); once
    /// three quarters hold keys, they go to `tmp_dir` as a sorted run.
    pub memory_entries: usize,
    /// Where sorted runs go (never a log directory).
    pub tmp_dir: PathBuf,
    /// Write each partition's key-range hashes instead of its entries: a file of a few kilobytes a partition
    /// that `compare` checks range by range, naming the partitions to audit in full (the others agree).
    pub summary: bool,
    /// Audit only these partitions (`<topic>-<partition>`); every one when empty.
    pub partitions: Vec<String>,
}

impl AuditRequest {
    /// A request with a table of at most 4M slots (96 MiB) in memory and runs in the system's temporary
    /// directory.
    pub fn new(log_dirs: Vec<PathBuf>, out: PathBuf) -> AuditRequest {
        AuditRequest {
            log_dirs,
            out,
            memory_entries: 4 << 20,
            tmp_dir: std::env::temp_dir(),
            summary: false,
            partitions: Vec::new(),
        }
    }
}

/// What an audit wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditSummary {
    /// Partition replicas audited.
    pub partitions: u64,
    /// Of those, replicas that could not be read (named in the file).
    pub unreadable: Vec<(String, String)>,
    /// Keys written (entries).
    pub keys: u64,
    /// Records read.
    pub records: u64,
    /// Bytes of the file.
    pub file_bytes: u64,
}

/// Why an audit failed.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// A log directory cannot be listed.
    #[error("{}: {source}", dir.display())]
    LogDir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        #[source]
        source: Box<crate::datadir::DataDirError>,
    },
    /// The output would land in a log directory a broker owns.
    #[error("{} lies in the log directory {}: an audit never writes where a broker keeps its data", out.display(), log_dir.display())]
    OutInLogDir {
        /// The output file.
        out: PathBuf,
        /// The log directory.
        log_dir: PathBuf,
    },
    /// A partition asked for is in none of the log directories.
    #[error("no partition {name} in the log directories given")]
    NoSuchPartition {
        /// `<topic>-<partition>`.
        name: String,
    },
    /// The file could not be written.
    #[error(transparent)]
    File(#[from] AuditFileError),
}

/// `path` with its symbolic links resolved as far as it exists (a file not created yet: its directory).
fn resolved(path: &Path) -> PathBuf {
    if let Ok(p) = path.canonicalize() {
        return p;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => {
            let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
            parent.canonicalize().map_or_else(|_| path.to_path_buf(), |p| p.join(name))
        }
        _ => path.to_path_buf(),
    }
}

/// Reads of a replica before it is named unreadable (its files changed underneath each time).
const READ_ATTEMPTS: u64 = 5;

/// `<topic>-<partition>` -> the metadata's replicas and leader, from the first log directory whose metadata log
/// can be read; with where it came from.
fn metadata_of(log_dirs: &[PathBuf]) -> (BTreeMap<String, kafka_records::kraft::image::PartitionState>, String) {
    use kafka_records::kraft::{BrokerSettings, Location, locate};
    let mut why = String::from("no log directory given");
    for d in log_dirs {
        let dir = match locate(d, None) {
            Ok(Location::Found { dir, .. }) => dir,
            Ok(Location::NotFound { why: w }) => {
                why = w;
                continue;
            }
            Err(e) => {
                why = e.to_string();
                continue;
            }
        };
        let node = kafka_records::kraft::meta_property(d, "node.id");
        match BrokerSettings::load(&dir, node, None) {
            Ok(settings) => {
                let image = &settings.image;
                let mut out = BTreeMap::new();
                for ((topic_id, partition), state) in &image.partitions {
                    let name = image
                        .topics
                        .iter()
                        .find(|(id, _)| kafka_records::wire::uuid_string(id) == *topic_id)
                        .map(|(_, n)| n.clone());
                    if let Some(n) = name {
                        out.insert(format!("{n}-{partition}"), state.clone());
                    }
                }
                return (out, format!("the metadata log in {}", dir.display()));
            }
            Err(e) => why = e.to_string(),
        }
    }
    (BTreeMap::new(), format!("none read: {why}"))
}

/// `leader-epoch-checkpoint` of the partition in `dir`: (epoch, start offset) pairs (none when absent).
fn leader_epochs(dir: &Path) -> Vec<(i32, u64)> {
    let Ok(text) = kafka_records::files::read_bounded(&dir.join("leader-epoch-checkpoint"), 1 << 20) else {
        return Vec::new();
    };
    text.lines()
        .skip(2)
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
        })
        .collect()
}

/// Audits every partition replica of the broker whose log directories `req` names into `req.out`, telling
/// `progress` each partition's name as it starts. Reads only; a replica that cannot be read is named in the
/// file (and the summary) with why, and the others go on.
///
/// # Errors
/// [`AuditError`]: a log directory that cannot be listed, an output inside one, a file that cannot be written.
pub fn audit_broker(req: &AuditRequest, progress: &mut dyn FnMut(&str)) -> Result<AuditSummary, AuditError> {
    let out = resolved(&req.out);
    for d in &req.log_dirs {
        let log_dir = resolved(d);
        if out.starts_with(&log_dir) || resolved(&req.tmp_dir).starts_with(&log_dir) {
            return Err(AuditError::OutInLogDir { out: req.out.clone(), log_dir: d.clone() });
        }
    }
    let mut partitions = Vec::new();
    for d in &req.log_dirs {
        let found = crate::datadir::discover(d, Format::Kafka)
            .map_err(|source| AuditError::LogDir { dir: d.clone(), source: Box::new(source) })?;
        partitions.extend(found.logs);
    }
    partitions.sort_by(|a, b| a.name.cmp(&b.name));
    if !req.partitions.is_empty() {
        partitions.retain(|p| req.partitions.contains(&p.name));
        if let Some(name) = req.partitions.iter().find(|n| !partitions.iter().any(|p| p.name == **n)) {
            return Err(AuditError::NoSuchPartition { name: name.clone() });
        }
    }
    let (metadata, metadata_source) = metadata_of(&req.log_dirs);
    let first = req.log_dirs.first().map(PathBuf::as_path).unwrap_or(Path::new("."));
    let broker = BrokerHeader {
        node_id: kafka_records::kraft::meta_property(first, "node.id").and_then(|v| v.trim().parse().ok()),
        cluster_id: kafka_records::kraft::meta_property(first, "cluster.id").map(|v| v.trim().to_owned()),
        log_dirs: req.log_dirs.clone(),
        written_ms: log_core::now_ms(),
        tool: format!("logcompact {}", env!("CARGO_PKG_VERSION")),
        metadata,
        metadata_source,
    };
    let tmp_out = out.with_extension("audit-partial");
    let mut writer = AuditWriter::create(&tmp_out, &broker)?;
    let mut summary = AuditSummary::default();
    for p in &partitions {
        progress(&p.name);
        let mut builder = DigestBuilder::new(req.memory_entries, &req.tmp_dir);
        let mut header = PartitionHeader {
            name: p.name.clone(),
            dir: p.dir.clone(),
            topic_id: kafka_records::kraft::partition_topic_id(&p.dir),
            leader_epochs: leader_epochs(&p.dir),
            ..PartitionHeader::default()
        };
        if let Some((topic, partition)) = log_core::kafka::topic_partition(&p.name) {
            header.topic = topic.to_owned();
            header.partition = i32::try_from(partition).unwrap_or(-1);
        }
        // A running broker replaces files as the audit reads them (a checkpoint rewritten, a segment swapped in
        // by its cleaner): a replica whose read fails is read again from the start, a few times, before it is
        // named unreadable.
        let blank = header.clone();
        let mut attempt = 0;
        while let Err(e) = read_replica_into(&p.dir, &mut header, &mut builder) {
            header = blank.clone();
            builder = DigestBuilder::new(req.memory_entries, &req.tmp_dir);
            attempt += 1;
            if attempt == READ_ATTEMPTS {
                header.error = Some(e);
                summary.unreadable.push((p.name.clone(), header.error.clone().unwrap_or_default()));
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100 * attempt));
        }
        let tmp_io = |source| AuditFileError::Io { path: req.tmp_dir.clone(), source };
        builder.seal().map_err(tmp_io)?;
        // The header, written first, counts the keys: a first merge counts them (over the runs, when the
        // partition did not fit in memory), the second writes them.
        let mut ranges = digest::RangeHashes::new();
        header.keys = builder
            .merge(&mut |e| {
                if req.summary {
                    ranges.add(&e);
                }
                Ok(())
            })
            .map_err(tmp_io)?;
        if req.summary && header.error.is_none() {
            header.ranges = Some(ranges.sized());
            writer.partition(&header, &mut |_| Ok(0))?;
        } else {
            writer.partition(&header, &mut |sink| builder.merge(sink))?;
        }
        summary.partitions += 1;
        summary.keys += header.keys;
        summary.records += header.records;
    }
    writer.finish()?;
    std::fs::rename(&tmp_out, &out).map_err(|source| AuditFileError::Io { path: out.clone(), source })?;
    summary.file_bytes = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
    Ok(summary)
}

/// Entries handed from the reading thread to the placing thread at a time.
const CHUNK_ENTRIES: usize = 16 << 10;

/// [`read_replica`] into `builder`, on two threads when the machine has two: this one reads, checks and hashes
/// the records, another places their entries in the builder's table meanwhile (the two halves of an audit's
/// work are about two to one, so the audit takes about the reading's time). Chunks of [`CHUNK_ENTRIES`] go
/// over a channel of two and come back empty to be filled again, so memory stays a few chunks.
fn read_replica_into(dir: &Path, header: &mut PartitionHeader, builder: &mut DigestBuilder<'_>) -> Result<(), String> {
    if std::thread::available_parallelism().map_or(1, usize::from) < 2 {
        return read_replica(dir, header, &mut |e| builder.push(e).map_err(|e| e.to_string()));
    }
    std::thread::scope(|scope| {
        let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<Vec<Entry>>(2);
        let (empty_tx, empty_rx) = std::sync::mpsc::sync_channel::<Vec<Entry>>(4);
        let placer = scope.spawn(move || -> std::io::Result<()> {
            for mut chunk in full_rx {
                for e in chunk.drain(..) {
                    builder.push(e)?;
                }
                // The reader may be gone, or have chunks enough: a chunk not taken back is freed.
                let _ = empty_tx.try_send(chunk);
            }
            Ok(())
        });
        let mut chunk: Vec<Entry> = Vec::with_capacity(CHUNK_ENTRIES);
        let stopped = || String::from("the thread placing the entries stopped");
        let mut push = |e: Entry| -> Result<(), String> {
            chunk.push(e);
            if chunk.len() == CHUNK_ENTRIES {
                let next = empty_rx.try_recv().unwrap_or_else(|_| Vec::with_capacity(CHUNK_ENTRIES));
                full_tx.send(std::mem::replace(&mut chunk, next)).map_err(|_| stopped())?;
            }
            Ok(())
        };
        let read = read_replica(dir, header, &mut push);
        if read.is_ok() && !chunk.is_empty() {
            full_tx.send(std::mem::take(&mut chunk)).map_err(|_| stopped())?;
        }
        drop(full_tx);
        let placed = placer.join().map_err(|_| String::from("the thread placing the entries panicked"))?;
        // A failure to place (a run that cannot be written) is the cause of a read that stopped for it.
        placed.map_err(|e| e.to_string())?;
        read
    })
}

/// Reads the replica in `dir` into `header` and `push`: every keyed record a `read_committed` consumer reads
/// once the high watermark reaches it (below the first open transaction), markers and aborted transactions left
/// out.
fn read_replica(
    dir: &Path,
    header: &mut PartitionHeader,
    push: &mut dyn FnMut(Entry) -> Result<(), String>,
) -> Result<(), String> {
    let opened = crate::open_read_only(dir, Format::Kafka).map_err(|e| e.to_string())?;
    let log = &opened.log;
    let snap = log.snapshot();
    let txns = snap.transactions().map_err(|e| e.to_string())?;
    header.log_start =
        snap.log_start().unwrap_or_else(|| snap.closed().first().map_or(snap.active_base(), |s| s.base()));
    header.log_end = snap.next_offset();
    header.high_watermark = snap.high_watermark();
    header.last_stable_offset = txns.last_stable_offset;
    header.open_transactions = txns.open.iter().map(|t| (t.producer_id, t.first_offset)).collect();
    header.cleaner_checkpoint = log.cleaner_checkpoint();
    // The digest goes up to the first open transaction (or the log end), past the high watermark the broker
    // last wrote down: that checkpoint lags the log by seconds, and a record the replica holds past it (a
    // tombstone, say) must show, so that the comparison counts the key as recent rather than flag the older
    // value under it. The comparison itself stops at the lowest last stable offset (the header's, capped by the
    // high watermark).
    let lso = txns.open.iter().map(|t| t.first_offset).min().unwrap_or(header.log_end).max(header.log_start);
    let mut scratch = Vec::new();
    let mut each_scan = |scan: &mut SegmentScan<'_>| -> Result<bool, String> {
        while let Some(window) = scan.next_window().map_err(|e| e.to_string())? {
            for placed in window.batches() {
                let batch = placed.map_err(|e| e.to_string())?.batch;
                if batch.base_offset >= lso {
                    return Ok(false);
                }
                if batch.is_control() {
                    continue;
                }
                let transactional = batch.is_transactional();
                if transactional && batch.producer_id().is_some_and(|pid| txns.is_aborted(pid, batch.base_offset)) {
                    header.aborted_records += batch.record_count;
                    continue;
                }
                for rec in batch.records(&mut scratch).map_err(|k| format!("{k:?}"))? {
                    let rec = rec.map_err(|k| format!("{k:?}"))?;
                    if rec.offset >= lso {
                        return Ok(false);
                    }
                    header.records += 1;
                    let Some(key) = rec.key else {
                        header.keyless += 1;
                        continue;
                    };
                    push(Entry::of(key, rec.value, rec.offset, transactional))?;
                }
            }
        }
        Ok(true)
    };
    for s in snap.closed() {
        if !each_scan(&mut s.scan_from(0, true))? {
            return Ok(());
        }
    }
    let mut active =
        SegmentScan::new(Format::Kafka, snap.active_name(), snap.active_source(), 0, snap.active_len(), true);
    each_scan(&mut active)?;
    Ok(())
}

/// How far a cleaner may remove tombstones and markers of one partition without a replica keeping, for good,
/// what they shadow (`ReplicaFloors::removal_floor`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaFloor {
    /// Tombstones and markers at or past this offset stay ([`cleaner::PassOptions::removal_floor`]).
    pub floor: u64,
    /// Each other replica's cleaner checkpoint, by node id, as its audit file says.
    pub replicas: Vec<(i32, u64)>,
    /// Replicas the metadata names with no audit file of this partition: they hold the floor at 0.
    pub missing: Vec<i32>,
}

/// Why the other replicas' audit files give no floor.
#[derive(Debug, thiserror::Error)]
pub enum FloorError {
    /// A file is unreadable or damaged.
    #[error(transparent)]
    File(#[from] AuditFileError),
    /// Files of different clusters.
    #[error("{}: an audit of cluster {theirs}, not {ours}", file.display())]
    OtherCluster {
        /// The file.
        file: PathBuf,
        /// Its cluster.
        theirs: String,
        /// The first file's.
        ours: String,
    },
}

/// The other replicas' audit files, read once: each partition's replicas as the newest metadata names them
/// and each replica's cleaner checkpoint ([`ReplicaFloors::of`]).
#[derive(Debug, Clone, Default)]
pub struct ReplicaFloors {
    own_node: Option<i32>,
    checkpoints: BTreeMap<String, BTreeMap<i32, u64>>,
    metadata: BTreeMap<String, kafka_records::kraft::image::PartitionState>,
}

impl ReplicaFloors {
    /// Reads the audit files `files` of the other replicas of the broker `own_node` (a file of that broker
    /// itself is passed over).
    ///
    /// # Errors
    /// [`FloorError`]: unreadable or damaged files, files of different clusters.
    pub fn read(files: &[PathBuf], own_node: Option<i32>) -> Result<ReplicaFloors, FloorError> {
        let mut floors = ReplicaFloors { own_node, ..ReplicaFloors::default() };
        let mut cluster: Option<String> = None;
        for f in files {
            let mut r = file::AuditReader::open(f)?;
            let theirs = r.broker.cluster_id.clone().unwrap_or_default();
            match &cluster {
                Some(ours) if *ours != theirs => {
                    return Err(FloorError::OtherCluster { file: f.clone(), theirs, ours: ours.clone() });
                }
                _ => cluster = Some(theirs),
            }
            for (name, m) in &r.broker.metadata {
                if floors.metadata.get(name).is_none_or(|n| m.leader_epoch > n.leader_epoch) {
                    floors.metadata.insert(name.clone(), m.clone());
                }
            }
            let node = r.broker.node_id.filter(|n| Some(*n) != own_node);
            while let Some(mut p) = r.next_partition()? {
                if let Some(n) = node
                    && p.header.error.is_none()
                {
                    floors.checkpoints.entry(p.header.name.clone()).or_default().insert(n, p.header.cleaner_checkpoint);
                }
                while r.next_entry(&mut p)?.is_some() {}
            }
        }
        Ok(floors)
    }

    /// The replica-safe removal floor of the partition `name` (Redpanda's rule, applied offline): a tombstone
    /// or marker may go only once every other replica's cleaner has cleaned past it, so that none can still
    /// hold an older value or a transaction's data it would keep for good once the leader dropped what shadows
    /// it. A replica the newest metadata names with no file holding the partition keeps the floor at 0 (every
    /// tombstone and marker stays), and so does a partition no file holds.
    pub fn of(&self, name: &str) -> ReplicaFloor {
        let held = self.checkpoints.get(name).cloned().unwrap_or_default();
        let named: Vec<i32> = self.metadata.get(name).map(|m| m.replicas.clone()).unwrap_or_default();
        let missing: Vec<i32> =
            named.iter().copied().filter(|n| Some(*n) != self.own_node && !held.contains_key(n)).collect();
        let floor = if missing.is_empty() { held.values().copied().min().unwrap_or(0) } else { 0 };
        ReplicaFloor { floor, replicas: held.into_iter().collect(), missing }
    }

    /// The floor of every partition the files name, by name (what `clean` takes: a partition not named keeps
    /// every tombstone and marker).
    pub fn all(&self) -> BTreeMap<String, u64> {
        self.checkpoints.keys().chain(self.metadata.keys()).map(|n| (n.clone(), self.of(n).floor)).collect()
    }
}
