//! Running the `logcompact` binary from tests.
#![allow(dead_code)]

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
    use log_core::kafka::{Compression, RecordToWrite, new_header, write_batch};
    std::fs::create_dir_all(dir).expect("mkdir");
    let mut offset = 0u64;
    let (mut out, mut scratch) = (Vec::new(), Vec::new());
    for _ in 0..segments {
        let base = offset;
        let mut bytes = Vec::new();
        for _ in 0..batches {
            let names: Vec<(Vec<u8>, Vec<u8>)> = (0..per_batch)
                .map(|i| (format!("k{}", (offset + i) % keys).into_bytes(), format!("v{}", offset + i).into_bytes()))
                .collect();
            let records: Vec<RecordToWrite<'_>> = names
                .iter()
                .enumerate()
                .map(|(i, (k, v))| RecordToWrite {
                    offset: (offset + i as u64) as i64,
                    timestamp: 1 + (offset + i as u64) as i64,
                    key: Some(k),
                    value: Some(v),
                    header_count: 0,
                    header_bytes: &[],
                })
                .collect();
            out.clear();
            let header = new_header(offset as i64, (per_batch - 1) as i32);
            write_batch(&header, Compression::None, None, &records, &mut out, &mut scratch).expect("batch");
            bytes.extend_from_slice(&out);
            offset += per_batch;
        }
        std::fs::write(dir.join(format!("{base:020}.log")), &bytes).expect("write segment");
    }
    offset
}

/// (offset, key, value) of every record of a Kafka partition, as `dump --format kafka --json` reads it.
pub fn kafka_records(dir: &Path) -> Vec<(i64, String, Option<String>)> {
    let out = logcompact(&["dump", "--format", "kafka", "--json", "--dir", path(dir)], "");
    assert!(out.status.success(), "dump: {}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let mut all = Vec::new();
    for b in v["batches"].as_array().expect("batches") {
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
