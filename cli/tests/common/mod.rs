//! Running the `logcompact` binary from tests.
#![allow(dead_code)]

pub mod kill;
pub mod transactions;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// The binary under test: this build's, or the one named by `LOGCOMPACT_BIN` (to run the same tests against
/// an older build and watch them fail).
pub fn bin() -> String {
    std::env::var("LOGCOMPACT_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_logcompact").to_owned())
}

/// Runs `logcompact ARGS` with `stdin` as its standard input.
pub fn logcompact(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn logcompact");
    // The command may exit (on a bad option) before reading its input: a broken pipe is fine then.
    match child.stdin.take().expect("stdin").write_all(stdin.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => panic!("write stdin: {e}"),
        _ => {}
    }
    child.wait_with_output().expect("wait")
}

/// Every entry of a directory with its bytes (`None` for what is not a regular file), to show that a
/// command changed nothing.
pub fn contents(dir: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    std::fs::read_dir(dir)
        .expect("list")
        .map(|e| {
            let e = e.expect("entry");
            let name = e.file_name().into_string().expect("utf-8 name");
            let meta = std::fs::symlink_metadata(e.path()).expect("stat");
            (name, meta.is_file().then(|| std::fs::read(e.path()).expect("read")))
        })
        .collect()
}

/// Standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Standard output as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A path as `&str`.
pub fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Writes a Kafka partition directory `dir` (created) of `segments` segments, each of `batches` uncompressed
/// batches of `per_batch` records: keys `k0..k{keys}` in turn, values naming the offset, timestamps from 1.
/// Returns the next offset. For tests that need a partition without the Python clients.
pub fn kafka_partition(dir: &Path, keys: u64, segments: u64, batches: u64, per_batch: u64) -> u64 {
    write_kafka_partition(
        dir,
        &PartitionSpec { keys, segments, batches, per_batch, tombstone_every: 0, mixed_codecs: false },
    )
}

/// The shape of a partition [`write_kafka_partition`] writes.
#[derive(Debug, Clone, Copy)]
pub struct PartitionSpec {
    /// Distinct keys, written in a scrambled order.
    pub keys: u64,
    /// Segments (the last one the active segment).
    pub segments: u64,
    /// Batches per segment.
    pub batches: u64,
    /// Records per batch.
    pub per_batch: u64,
    /// Every n-th record is a tombstone (0: none).
    pub tombstone_every: u64,
    /// Batches compressed in turn with none, gzip, snappy, lz4 and zstd; else all uncompressed.
    pub mixed_codecs: bool,
}

impl PartitionSpec {
    /// `segments` segments of `batches` batches of `per_batch` records over `keys` keys, every
    /// `tombstone_every`-th a tombstone (0: none), the batches compressed with every codec in turn.
    pub fn mixed(keys: u64, segments: u64, batches: u64, per_batch: u64, tombstone_every: u64) -> PartitionSpec {
        PartitionSpec { keys, segments, batches, per_batch, tombstone_every, mixed_codecs: true }
    }
}

/// Writes a Kafka partition directory `dir` (created) as `spec` says: values name the offset, timestamps from
/// 1. Returns the next offset.
pub fn write_kafka_partition(dir: &Path, spec: &PartitionSpec) -> u64 {
    write_kafka_partition_at(dir, spec, 1)
}

/// As [`write_kafka_partition`], timestamps from `first_timestamp`.
pub fn write_kafka_partition_at(dir: &Path, spec: &PartitionSpec, first_timestamp: i64) -> u64 {
    use log_core::kafka::{Compression, RecordToWrite, new_header, write_batch};
    const CODECS: [Compression; 5] =
        [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd];
    std::fs::create_dir_all(dir).expect("mkdir");
    let mut offset = 0u64;
    let (mut out, mut scratch) = (Vec::new(), Vec::new());
    let key_of =
        |o: u64| if spec.tombstone_every == 0 { o % spec.keys } else { o.wrapping_mul(0x9E37_79B9) % spec.keys };
    for s in 0..spec.segments {
        let base = offset;
        let mut bytes = Vec::new();
        for b in 0..spec.batches {
            let names: Vec<(Vec<u8>, Option<Vec<u8>>)> = (0..spec.per_batch)
                .map(|i| {
                    let o = offset + i;
                    let tombstone = spec.tombstone_every > 0 && o % spec.tombstone_every == spec.tombstone_every - 1;
                    (format!("k{}", key_of(o)).into_bytes(), (!tombstone).then(|| format!("v{o}").into_bytes()))
                })
                .collect();
            let records: Vec<RecordToWrite<'_>> = names
                .iter()
                .enumerate()
                .map(|(i, (k, v))| RecordToWrite {
                    offset: (offset + i as u64) as i64,
                    timestamp: first_timestamp + (offset + i as u64) as i64,
                    key: Some(k),
                    value: v.as_deref(),
                    header_count: 0,
                    header_bytes: &[],
                })
                .collect();
            out.clear();
            let header = new_header(offset as i64, (spec.per_batch - 1) as i32);
            let codec =
                if spec.mixed_codecs { CODECS[((s * spec.batches + b) % 5) as usize] } else { Compression::None };
            write_batch(&header, codec, None, &records, &mut out, &mut scratch).expect("batch");
            bytes.extend_from_slice(&out);
            offset += spec.per_batch;
        }
        std::fs::write(dir.join(format!("{base:020}.log")), &bytes).expect("write segment");
    }
    offset
}

/// A Python with the Kafka clients of `tests/kafka/requirements.txt`: `LOGCOMPACT_PYTHON`, else `python3` if it
/// has them, else a virtual environment this function makes once under Cargo's target directory (`python3 -m
/// venv`, then `pip install -r requirements.txt`), so that `cargo test --workspace` on a fresh machine runs the
/// Kafka interop tests instead of skipping them. Where none can be had the test fails, naming what is missing,
/// unless `LOGCOMPACT_SKIP_PYTHON=1` asks to skip them (refused under CI, which must run them).
pub fn kafka_python() -> Option<String> {
    static FOUND: std::sync::OnceLock<Result<Option<String>, String>> = std::sync::OnceLock::new();
    match FOUND.get_or_init(find_or_make_kafka_python) {
        Ok(py) => py.clone(),
        Err(why) => panic!("{why}"),
    }
}

const KAFKA_IMPORTS: &str = "import kafka, lz4, snappy, zstandard, confluent_kafka, prometheus_client";

fn has_kafka_clients(py: &str) -> bool {
    Command::new(py).args(["-c", KAFKA_IMPORTS]).output().is_ok_and(|o| o.status.success())
}

fn find_or_make_kafka_python() -> Result<Option<String>, String> {
    if let Ok(py) = std::env::var("LOGCOMPACT_PYTHON") {
        return if has_kafka_clients(&py) {
            Ok(Some(py))
        } else {
            Err(format!("LOGCOMPACT_PYTHON={py} cannot import the Kafka clients ({KAFKA_IMPORTS})"))
        };
    }
    if has_kafka_clients("python3") {
        return Ok(Some("python3".to_owned()));
    }
    if std::env::var_os("LOGCOMPACT_SKIP_PYTHON").is_some() {
        if std::env::var_os("CI").is_some() {
            return Err("CI must run the Kafka interop tests: LOGCOMPACT_SKIP_PYTHON is refused".into());
        }
        // Written past the test harness's capture (it captures only the print macros), so the skip shows in
        // the run's output even for passing tests.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"note: the Kafka interop checks of this test binary are skipped: LOGCOMPACT_SKIP_PYTHON is set\n",
        );
        return Ok(None);
    }
    make_kafka_venv().map(Some).map_err(|why| {
        format!(
            "the Kafka interop tests need Python 3 with the clients of cli/tests/kafka/requirements.txt, and \
             making a virtual environment for them failed: {why}. Set LOGCOMPACT_PYTHON to a Python that has \
             them, or LOGCOMPACT_SKIP_PYTHON=1 to skip these tests"
        )
    })
}

/// Makes (once: a `ready` file marks a finished one) the virtual environment under Cargo's target directory,
/// under a lock so that concurrent test runs make it once.
fn make_kafka_venv() -> Result<String, String> {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kafka-venv");
    let py = root.join("bin").join("python");
    let ready = root.join("ready");
    std::fs::create_dir_all(Path::new(env!("CARGO_TARGET_TMPDIR"))).map_err(|e| e.to_string())?;
    let lock_path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kafka-venv.lock");
    let lock = std::fs::File::create(&lock_path).map_err(|e| format!("{}: {e}", lock_path.display()))?;
    lock.lock().map_err(|e| format!("lock {}: {e}", lock_path.display()))?;
    let py_text = py.to_str().ok_or("the target directory's path is not UTF-8")?.to_owned();
    if ready.exists() && has_kafka_clients(&py_text) {
        return Ok(py_text);
    }
    let _ = std::fs::remove_dir_all(&root);
    eprintln!("making a Python virtual environment for the Kafka interop tests in {}", root.display());
    let run = |cmd: &mut Command, what: &str| -> Result<(), String> {
        let out = cmd.output().map_err(|e| format!("{what}: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!("{what}: {}", String::from_utf8_lossy(&out.stderr).trim()))
        }
    };
    run(Command::new("python3").args(["-m", "venv"]).arg(&root), "python3 -m venv")?;
    let requirements = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("kafka").join("requirements.txt");
    run(Command::new(&py).args(["-m", "pip", "install", "-q", "-r"]).arg(&requirements), "pip install")?;
    if !has_kafka_clients(&py_text) {
        return Err(format!("{py_text} still cannot import the Kafka clients"));
    }
    std::fs::write(&ready, b"").map_err(|e| e.to_string())?;
    Ok(py_text)
}

/// A script of `tests/kafka/`.
pub fn kafka_script(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("kafka").join(name)
}

/// Runs a Python script and parses the JSON it prints.
pub fn run_python(py: &str, args: &[&str]) -> serde_json::Value {
    let out = Command::new(py).args(args).output().expect("run python");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON from python")
}

/// (offset, key, value) of every record of a Kafka partition as kafka-python's record-batch reader reads it,
/// every CRC checked.
pub fn kafka_python_records(py: &str, dir: &Path) -> Vec<(i64, String, Option<String>)> {
    let read = run_python(py, &[kafka_script("read_partition.py").to_str().expect("utf-8"), path(dir)]);
    records_of_batches(&read)
}

/// (offset, key, value) of every record of the batches of a JSON read of a partition (`dump --json`'s shape).
fn records_of_batches(read: &serde_json::Value) -> Vec<(i64, String, Option<String>)> {
    let mut all = Vec::new();
    for b in read["batches"].as_array().expect("batches") {
        for r in b["records"].as_array().expect("records") {
            all.push((
                r["offset"].as_i64().expect("offset"),
                r["key"].as_str().expect("key").to_owned(),
                r["value"].as_str().map(str::to_owned),
            ));
        }
    }
    all
}

/// (offset, key, value) of every record of a Kafka partition, as `dump --format kafka --json` reads it.
pub fn kafka_records(dir: &Path) -> Vec<(i64, String, Option<String>)> {
    let out = logcompact(&["dump", "--format", "kafka", "--json", "--dir", path(dir)], "");
    assert!(out.status.success(), "dump: {}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    records_of_batches(&v)
}

/// The arguments of `compact --format kafka --cleanup-policy compact --dir DIR` followed by `more`: a Kafka
/// partition compacted as a topic whose policy is `compact`, how most of these tests start a Kafka run.
pub fn compact_kafka<'a>(dir: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    compact_as("kafka", dir, more)
}

/// As [`compact_kafka`] for a log of `format` (`native` or `kafka`).
pub fn compact_as<'a>(format: &'a str, dir: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["compact", "--format", format, "--cleanup-policy", "compact", "--dir", dir];
    args.extend_from_slice(more);
    args
}
