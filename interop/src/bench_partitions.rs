//! Partitions for benchmarks written by a real broker from its Java clients (`BenchPartitions`): a compacted
//! topic a codec, an exactly-once changelog and `__consumer_offsets`, each holding the same records (the
//! consumer offsets aside), produced once for a given size and cached under `target/kafka-interop/` (by the
//! programs' sources and the size), so that a benchmark copies them instead of producing.
//!
//! ```no_run
//! let kafka = kafka_interop::Kafka::get().expect("Kafka's jars");
//! let spec = kafka_interop::bench_partitions::Spec { records: 200_000, keys: 20_000, segment_bytes: 16 << 20 };
//! let written = kafka_interop::bench_partitions::get(kafka, &spec).expect("partitions");
//! for p in &written.partitions {
//!     println!("{} ({}, {}): {}", p.name, p.shape, p.codec, p.dir.display());
//! }
//! ```

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::{Error, Kafka, Node, NodeSpec, Result, path_str};

/// Changes when what the partitions hold changes (besides the Java sources, which are hashed).
const VERSION: u32 = 1;

/// What to produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    /// Records of every topic (16-byte keys, 100-byte values, 1% tombstones).
    pub records: u64,
    /// Distinct keys (and a two-hundredth as many consumer groups, each committing 20 partitions).
    pub keys: u64,
    /// The topics' segment size: their `segment.bytes`, or below Kafka's 1 MiB minimum for it, their
    /// `internal.segment.bytes` (the setting Kafka's own tests use for small segments).
    pub segment_bytes: u64,
}

/// One partition the broker wrote.
#[derive(Debug, Clone)]
pub struct Partition {
    /// `<topic>-<partition>`.
    pub name: String,
    /// `plain`, `transactions` or `consumer_offsets`.
    pub shape: String,
    /// The producer's codec (`none` for the transactional changelog and `__consumer_offsets`).
    pub codec: String,
    /// Records written (offset commits for `__consumer_offsets`).
    pub records: u64,
    /// Distinct keys.
    pub keys: u64,
    /// The log end offset the broker gave after the last write (markers included).
    pub end_offset: u64,
    /// The partition's directory in the cached node: read-only; benchmarks copy it.
    pub dir: PathBuf,
}

/// The partitions of a cached node, and when they were produced.
#[derive(Debug, Clone)]
pub struct Written {
    /// Every partition, in the order produced.
    pub partitions: Vec<Partition>,
    /// When they were produced (Unix ms): every record is older.
    pub produced_ms: i64,
    /// The seed of the producer's random choices ([`crate::fixture::seed`]).
    pub seed: u64,
}

/// The partitions for `spec`, produced unless a finished node is cached.
///
/// # Errors
/// When the node cannot be formatted, started or stopped, or the Java program fails.
pub fn get(kafka: &'static Kafka, spec: &Spec) -> Result<Written> {
    let seed = crate::fixture::seed(DEFAULT_SEED);
    let key = format!(
        "bench-{VERSION}-{:016x}-{}-{}-{}-s{seed}",
        kafka.sources_hash, spec.records, spec.keys, spec.segment_bytes
    );
    let dir = crate::fixture::cached(kafka, &key, "bench", |building| produce(kafka, building, spec, seed))?;
    eprintln!("Kafka benchmark partitions: seed {seed} (KAFKA_FIXTURE_SEED=N builds others), {}", dir.display());
    let mut written = load(&dir)?;
    written.seed = seed;
    Ok(written)
}

/// The benchmark partitions' seed when `KAFKA_FIXTURE_SEED` is not given.
pub const DEFAULT_SEED: u64 = 1;

fn produce(kafka: &'static Kafka, dir: &Path, spec: &Spec, seed: u64) -> Result<()> {
    let node_spec = NodeSpec { log_dirs: 1, ..NodeSpec::default() };
    let mut node = Node::format(kafka, &dir.join("node"), &node_spec)?;
    node.start()?;
    let boot = node.bootstrap();
    let (records, keys, segment) = (spec.records.to_string(), spec.keys.to_string(), spec.segment_bytes.to_string());
    let seed = seed.to_string();
    let config = if spec.segment_bytes < 1 << 20 { "internal.segment.bytes" } else { "segment.bytes" };
    let args = [
        "--bootstrap",
        &boot,
        "--records",
        &records,
        "--keys",
        &keys,
        "--segment-bytes",
        &segment,
        "--segment-config",
        config,
        "--seed",
        &seed,
    ];
    let summary = kafka.run_json("logcompact.interop.BenchPartitions", &args);
    let stopped = node.stop();
    let summary = summary?;
    stopped?;
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        fs::write(&path, text).map_err(|source| Error::Io { what: "write", path, source })
    };
    write("summary.json", summary.to_string())?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    write("produced-ms", now.to_string())
}

fn load(dir: &Path) -> Result<Written> {
    let bad = |detail: String| Error::Output { what: dir.display().to_string(), detail };
    let read = |name: &str| {
        let path = dir.join(name);
        fs::read_to_string(&path).map_err(|source| Error::Io { what: "read", path, source })
    };
    let produced_ms = read("produced-ms")?.trim().parse().map_err(|e| bad(format!("produced-ms: {e}")))?;
    let summary: Value = serde_json::from_str(&read("summary.json")?).map_err(|e| bad(format!("summary: {e}")))?;
    // The node's log directories (`data-0`, ...), read without starting it.
    let node: Vec<PathBuf> = (0..4).map(|i| dir.join("node").join(format!("data-{i}"))).collect();
    let listed = summary["partitions"].as_array().filter(|a| !a.is_empty());
    let listed = listed.ok_or_else(|| bad("summary.json lists no partitions".into()))?;
    let mut partitions = Vec::new();
    for p in listed {
        let field = |k: &str| p[k].as_str().map(str::to_owned).ok_or_else(|| bad(format!("a partition without {k}")));
        let number = |k: &str| p[k].as_u64().ok_or_else(|| bad(format!("a partition without {k}")));
        let name = field("partition")?;
        let dir = node
            .iter()
            .map(|d| d.join(&name))
            .find(|d| d.is_dir())
            .ok_or_else(|| bad(format!("no directory for {name} in {}", path_str(&dir.join("node")))))?;
        partitions.push(Partition {
            name,
            shape: field("shape")?,
            codec: field("codec")?,
            records: number("records")?,
            keys: number("keys")?,
            end_offset: number("end_offset")?,
            dir,
        });
    }
    Ok(Written { partitions, produced_ms, seed: DEFAULT_SEED })
}
