//! Nodes with every kind of partition, produced once by the real broker and its Java clients and cached under
//! `target/kafka-interop/` (by the programs' sources and this module's version), so that every test copies
//! instead of producing: compacted topics of every codec written by plain, idempotent and transactional
//! producers (aborted transactions, one left open), headers, tombstones, 20 consumer groups in
//! `__consumer_offsets`, `__transaction_state`, a `delete` topic of unkeyed records, 64 KiB segments, and the
//! KRaft metadata log with sealed segments and raft snapshots in the first log directory.
//!
//! With each node come what the programs printed while producing it: the `Fixture` summary (topics, their
//! settings, counts and digests), the open transaction's producer, `Topics` (each topic's settings as the
//! broker resolves them), the latest committed record of every key (`expect`), and every compacted
//! partition read back under both isolation levels (`before`).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{Error, Kafka, Node, NodeSpec, Result, path_str};

/// Changes when what a fixture holds changes (besides the Java sources, which are hashed).
const VERSION: u32 = 1;

/// A produced node, read-only: tests work on copies ([`Fixture::copy_to`]).
#[derive(Debug)]
pub struct Fixture {
    kafka: &'static Kafka,
    /// The node as the broker left it after a clean stop.
    pub node_dir: PathBuf,
    /// What `Fixture --profile main` printed.
    pub summary: Value,
    /// What `Fixture --profile hang` printed (the open transaction).
    pub hang: Value,
    /// What `Topics --internal --groups` printed.
    pub topics: Value,
    /// The latest committed record of every key of every compacted partition (`--expect-out`).
    pub expect: Vec<Value>,
    /// Every record of every compacted partition read under both isolation levels, before any cleaning.
    pub before: Vec<Value>,
    /// "Now" when it was produced: a clock for passes that every fixture's records are older than.
    pub produced_ms: i64,
}

/// The main fixture: a node formatted with 4.4's default `transaction.version` (2).
///
/// # Panics
/// When it cannot be produced (the message says why).
pub fn main(kafka: &'static Kafka) -> &'static Fixture {
    static MAIN: std::sync::OnceLock<Fixture> = std::sync::OnceLock::new();
    MAIN.get_or_init(|| {
        get(kafka, "main", &NodeSpec::default(), &[]).unwrap_or_else(|e| panic!("the main Kafka fixture: {e}"))
    })
}

/// A smaller node formatted with `transaction.version=1` (the markers before KIP-890: one producer epoch for
/// every transaction).
///
/// # Panics
/// When it cannot be produced.
pub fn transaction_version_1(kafka: &'static Kafka) -> &'static Fixture {
    static V1: std::sync::OnceLock<Fixture> = std::sync::OnceLock::new();
    V1.get_or_init(|| {
        let spec = NodeSpec { transaction_version: Some(1), ..NodeSpec::default() };
        get(kafka, "txv1", &spec, &["--scale", "0.4"])
            .unwrap_or_else(|e| panic!("the transaction.version=1 fixture: {e}"))
    })
}

/// The seed of the random choices a fixture's programs make (`KAFKA_FIXTURE_SEED`, else `default`): part of the
/// fixture's cache key, printed by every test that uses it, and named by every difference found on it, so that
/// a fixture is never a different one from run to run without saying so.
pub fn seed(default: u64) -> u64 {
    std::env::var("KAFKA_FIXTURE_SEED").ok().and_then(|s| s.trim().parse().ok()).unwrap_or(default)
}

/// The main fixture's seed when `KAFKA_FIXTURE_SEED` is not given.
pub const DEFAULT_SEED: u64 = 20_240_601;

/// The fixture `name`, produced unless a finished one is cached.
fn get(kafka: &'static Kafka, name: &str, spec: &NodeSpec, fixture_args: &[&str]) -> Result<Fixture> {
    let seed = seed(DEFAULT_SEED).to_string();
    let args: Vec<&str> = fixture_args.iter().copied().chain(["--seed", seed.as_str()]).collect();
    let key = format!("{name}-{VERSION}-{:016x}-{}", kafka.sources_hash, args.join("_"));
    let dir = cached(kafka, &key, name, |building| produce(kafka, building, spec, &args))?;
    eprintln!("Kafka fixture {name}: seed {seed} (KAFKA_FIXTURE_SEED=N builds another), {}", dir.display());
    load(kafka, &dir)
}

/// The directory `fixture-<key>` under Kafka's work directory, made by `build` (into a `.building` directory
/// renamed when done, `ready` written last) unless a finished one is there; `lock_name`'s lock held meanwhile, so
/// that test processes build it once. The node's files name their directory: written anew by every copy's open.
pub(crate) fn cached(
    kafka: &Kafka,
    key: &str,
    lock_name: &str,
    build: impl FnOnce(&Path) -> Result<()>,
) -> Result<PathBuf> {
    let dir = kafka.work.join(format!("fixture-{key}"));
    let lock_path = kafka.work.join(format!("fixture-{lock_name}.lock"));
    let lock =
        fs::File::create(&lock_path).map_err(|source| Error::Io { what: "create", path: lock_path.clone(), source })?;
    if lock.try_lock().is_err() {
        crate::say(&format!("Kafka fixture {lock_name}: waiting for another test process that builds it"));
        lock.lock().map_err(|source| Error::Io { what: "lock", path: lock_path.clone(), source })?;
    }
    if !dir.join("ready").exists() {
        let building = kafka.work.join(format!("fixture-{key}.building"));
        let _ = fs::remove_dir_all(&building);
        crate::say(&format!(
            "Kafka fixture {lock_name}: a real Kafka 4.4 broker writes it once into {} (a minute or two; cached)",
            dir.display()
        ));
        build(&building)?;
        fs::write(building.join("ready"), b"").map_err(|source| Error::Io {
            what: "write",
            path: building.clone(),
            source,
        })?;
        let _ = fs::remove_dir_all(&dir);
        fs::rename(&building, &dir).map_err(|source| Error::Io { what: "rename", path: building.clone(), source })?;
    }
    Ok(dir)
}

fn read_json(path: &Path) -> Result<Value> {
    let text =
        fs::read_to_string(path).map_err(|source| Error::Io { what: "read", path: path.to_path_buf(), source })?;
    serde_json::from_str(&text).map_err(|e| Error::Output { what: path.display().to_string(), detail: e.to_string() })
}

fn read_json_lines(path: &Path) -> Result<Vec<Value>> {
    let text =
        fs::read_to_string(path).map_err(|source| Error::Io { what: "read", path: path.to_path_buf(), source })?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l)
                .map_err(|e| Error::Output { what: path.display().to_string(), detail: e.to_string() })
        })
        .collect()
}

fn load(kafka: &'static Kafka, dir: &Path) -> Result<Fixture> {
    let produced_ms = fs::read_to_string(dir.join("produced-ms"))
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .ok_or_else(|| Error::Output { what: dir.display().to_string(), detail: "no produced-ms".into() })?;
    Ok(Fixture {
        kafka,
        node_dir: dir.join("node"),
        summary: read_json(&dir.join("summary.json"))?,
        hang: read_json(&dir.join("hang.json"))?,
        topics: read_json(&dir.join("topics.json"))?,
        expect: read_json_lines(&dir.join("expect.jsonl"))?,
        before: read_json_lines(&dir.join("before.jsonl"))?,
        produced_ms,
    })
}

/// Formats a node in `dir/node`, starts it, produces, records what the programs print, reads every compacted
/// partition back, and stops it.
fn produce(kafka: &'static Kafka, dir: &Path, spec: &NodeSpec, fixture_args: &[&str]) -> Result<()> {
    let mut node = Node::format(kafka, &dir.join("node"), spec)?;
    node.start()?;
    let boot = node.bootstrap();
    let expect = dir.join("expect.jsonl");
    let mut args = vec!["--bootstrap", &boot, "--profile", "main", "--expect-out", path_str(&expect)];
    args.extend(fixture_args);
    let summary = kafka.run_json("logcompact.interop.Fixture", &args)?;
    write(&dir.join("summary.json"), &summary.to_string())?;
    let hang = kafka.run_json("logcompact.interop.Fixture", &["--bootstrap", &boot, "--profile", "hang"])?;
    write(&dir.join("hang.json"), &hang.to_string())?;
    let topics = kafka.run_json("logcompact.interop.Topics", &["--bootstrap", &boot, "--internal", "--groups"])?;
    write(&dir.join("topics.json"), &topics.to_string())?;
    wait_for_metadata_snapshots(&node)?;
    let compacted = compacted_partitions(&summary);
    let mut consume = vec!["--bootstrap".to_owned(), boot.clone(), "--isolation".into(), "both".into()];
    for (topic, p) in &compacted {
        consume.extend(["--tp".to_owned(), format!("{topic}:{p}")]);
    }
    let refs: Vec<&str> = consume.iter().map(String::as_str).collect();
    let out = crate::succeeded("Consume", kafka.run("logcompact.interop.Consume", &refs)?)?;
    write(&dir.join("before.jsonl"), &String::from_utf8_lossy(&out.stdout))?;
    write(&dir.join("produced-ms"), &now_ms().to_string())?;
    node.stop()
}

/// Waits (20 s at most) until the metadata log has three segments and a raft snapshot besides the bootstrap
/// one, so that tests find sealed metadata segments and snapshots.
fn wait_for_metadata_snapshots(node: &Node) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let meta = node.partition("__cluster_metadata-0");
        let names: Vec<String> = meta
            .iter()
            .flat_map(|m| fs::read_dir(m).into_iter().flatten().flatten())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        let segments = names.iter().filter(|n| n.ends_with(".log")).count();
        let snapshots =
            names.iter().filter(|n| n.ends_with(".checkpoint") && !n.starts_with("00000000000000000000-")).count();
        if segments >= 3 && snapshots >= 1 {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(Error::Timeout {
                what: "sealed metadata segments and a raft snapshot".into(),
                seconds: 20,
                detail: format!("{segments} segments, {snapshots} snapshots"),
            });
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn write(path: &Path, text: &str) -> Result<()> {
    fs::write(path, text).map_err(|source| Error::Io { what: "write", path: path.to_path_buf(), source })
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// `(topic, partition)` of every partition of a compacted topic the summary lists.
pub fn compacted_partitions(summary: &Value) -> Vec<(String, u64)> {
    let mut all = Vec::new();
    for t in summary["topics"].as_array().into_iter().flatten() {
        let policy = t["configs"]["cleanup.policy"].as_str().unwrap_or("delete");
        if !policy.contains("compact") {
            continue;
        }
        let name = t["name"].as_str().unwrap_or_default();
        for p in t["partition_stats"].as_array().into_iter().flatten() {
            all.push((name.to_owned(), p["partition"].as_u64().unwrap_or(0)));
        }
    }
    all
}

impl Fixture {
    /// A copy of the node in `dir/node` (`dir` is created), ready to start on ports of its own.
    ///
    /// # Panics
    /// When the copy cannot be made.
    pub fn copy_to(&self, dir: &Path) -> Node {
        fs::create_dir_all(dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        let to = dir.join("node");
        crate::copy_tree(&self.node_dir, &to).unwrap_or_else(|e| panic!("{e}"));
        Node::open(self.kafka, &to).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Each topic's settings as the `Fixture` set them (`configs`), by topic.
    pub fn topic_configs(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        let mut all = BTreeMap::new();
        for t in self.summary["topics"].as_array().into_iter().flatten() {
            let configs: BTreeMap<String, String> = t["configs"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
                .collect();
            all.insert(t["name"].as_str().unwrap_or_default().to_owned(), configs);
        }
        all
    }

    /// Each partition's log end offset as the broker left it (its recovery point after the clean stop), by
    /// `<topic>-<partition>`.
    pub fn log_end_offsets(&self) -> BTreeMap<String, i64> {
        let mut all = BTreeMap::new();
        for d in ["data-0", "data-1", "data-2"] {
            let Ok(text) = fs::read_to_string(self.node_dir.join(d).join("recovery-point-offset-checkpoint")) else {
                continue;
            };
            for line in text.lines().skip(2) {
                let parts: Vec<&str> = line.split(' ').collect();
                if let [topic, p, offset] = parts[..]
                    && let Ok(o) = offset.parse()
                {
                    all.insert(format!("{topic}-{p}"), o);
                }
            }
        }
        all
    }

    /// The records of `topic`-`partition` read under `isolation` before any cleaning.
    pub fn before(&self, topic: &str, partition: u64, isolation: &str) -> Vec<&Value> {
        self.before
            .iter()
            .filter(|r| r["topic"] == topic && r["partition"] == partition && r["isolation"] == isolation)
            .collect()
    }
}
