//! `dump --style kafka-dump-log` (and `--files`), checked line by line, standard output and standard error,
//! against an independent reference of what Kafka 4.4's `kafka-dump-log.sh --deep-iteration --print-data-log
//! --files` prints (tests/kafka/dump_log_reference.py, written from Kafka's documented format and sources, not
//! from this project's code; Kafka's own outputs are replayed by dump_log_vectors.rs), on partitions written by
//! both client libraries (kafka-python's batch builder and
//! librdkafka's producer), a partition of transactions with its markers and `.txnindex`, the same partitions
//! after this tool compacted them (its `.index`, `.timeindex` and `.txnindex` files), and crafted problems:
//! index entries that point at the wrong batch, a time index out of order, trailing garbage, producer
//! snapshots (valid and damaged), files of other kinds.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;
use common::{kafka_python, kafka_script, logcompact, path, stderr};

/// What a dump printed.
#[derive(Debug)]
struct Printed {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn ours(files: &[String], verify: bool, cwd: &Path) -> Printed {
    let joined = files.join(",");
    let mut args = vec!["dump", "--format", "kafka", "--files", &joined];
    if verify {
        args.push("--verify-index-only");
    }
    let out = Command::new(common::bin()).args(&args).current_dir(cwd).output().expect("run logcompact");
    Printed {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn reference(py: &str, files: &[String], verify: bool, cwd: &Path) -> Printed {
    let mut cmd = Command::new(py);
    cmd.arg(kafka_script("dump_log_reference.py"));
    if verify {
        cmd.arg("--verify-index-only");
    }
    let out = cmd.args(files).current_dir(cwd).output().expect("run the reference");
    Printed {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Both dumps of `files` (run from `cwd`) agree line for line; returns ours.
fn same(py: &str, files: &[String], verify: bool, cwd: &Path) -> Printed {
    let ours = ours(files, verify, cwd);
    let theirs = reference(py, files, verify, cwd);
    assert_eq!(theirs.code, Some(0), "the reference failed on {files:?}: {}", theirs.stderr);
    assert_eq!(ours.code, Some(0), "logcompact failed on {files:?}: {}", ours.stderr);
    for (what, a, b) in
        [("standard output", &ours.stdout, &theirs.stdout), ("standard error", &ours.stderr, &theirs.stderr)]
    {
        let (a_lines, b_lines): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
        for (i, (x, y)) in a_lines.iter().zip(&b_lines).enumerate() {
            assert_eq!(x, y, "{what} line {} of {files:?} differs", i + 1);
        }
        assert_eq!(a_lines.len(), b_lines.len(), "{what} of {files:?}: {a}\n---- the reference:\n{b}");
        assert_eq!(a, b, "{what} of {files:?}: byte for byte");
    }
    ours
}

/// Every file of `dir` with one of `suffixes`, in name order, as paths under `dir`.
fn files_of(dir: &Path, suffixes: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
        .filter(|n| suffixes.iter().any(|s| n.ends_with(s)))
        .collect();
    names.sort();
    names.into_iter().map(|n| format!("{}/{n}", path(dir))).collect()
}

/// The partitions `script` writes under `root`.
fn partitions(py: &str, script: &str, root: &Path) -> Vec<PathBuf> {
    let out = Command::new(py).arg(kafka_script(script)).arg(root).output().expect("run the writer");
    assert!(out.status.success(), "{script}: {}", String::from_utf8_lossy(&out.stderr));
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir() && p.join("00000000000000000000.log").exists())
        .collect();
    dirs.sort();
    dirs
}

fn compact(dir: &Path) {
    let out =
        logcompact(&crate::common::compact_kafka(path(dir), &["--until-clean", "--delete-retention-ms", "0"]), "");
    assert!(out.status.success(), "compact {}: {}", dir.display(), stderr(&out));
}

#[test]
fn the_dump_is_kafka_dump_logs_on_both_writers_partitions_before_and_after_compaction() {
    let Some(py) = kafka_python() else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut dirs = partitions(&py, "make_partitions.py", &tmp.path().join("kafka-python"));
    dirs.extend(partitions(&py, "librdkafka_partitions.py", &tmp.path().join("librdkafka")));
    let txn = tmp.path().join("transactions").join("t-0");
    common::transactions::write_partition(&txn, true);
    dirs.push(txn);
    assert!(dirs.len() >= 10, "{dirs:?}");
    let mut gaps = 0;
    for dir in &dirs {
        // A whole partition at once, as `--files` of all its segments (several files: the summaries' order),
        // and `--dir` in the same style prints the same.
        let logs = files_of(dir, &[".log"]);
        let printed = same(&py, &logs, false, tmp.path());
        let by_dir = logcompact(&["dump", "--format", "kafka", "--style", "kafka-dump-log", "--dir", path(dir)], "");
        assert_eq!(String::from_utf8_lossy(&by_dir.stdout), printed.stdout, "--dir {}", dir.display());
        // Compacted: the tool's own segments, indexes and transaction indexes.
        compact(dir);
        let all = files_of(dir, &[".log", ".index", ".timeindex", ".txnindex"]);
        let printed = same(&py, &all, false, tmp.path());
        gaps += printed.stderr.matches("Non-consecutive offsets in").count();
        same(&py, &all, true, tmp.path());
    }
    assert!(gaps >= dirs.len(), "compaction leaves gaps that both dumps report ({gaps})");
    // Relative paths print as Java prints them (`./` kept, made absolute in the summaries from the working
    // directory).
    let relative: Vec<String> = files_of(&dirs[0], &[".log", ".index"])
        .iter()
        .map(|f| format!("./{}", f.rsplit('/').next().expect("name")))
        .collect();
    same(&py, &relative, false, &dirs[0]);
}

/// Writes `bytes` over `file` at `at`.
fn patch(file: &Path, at: usize, bytes: &[u8]) {
    let mut all = std::fs::read(file).expect("read");
    all[at..at + bytes.len()].copy_from_slice(bytes);
    std::fs::write(file, all).expect("write");
}

#[test]
#[expect(clippy::big_endian_bytes, reason = "Kafka's files are big-endian")]
fn index_problems_trailing_bytes_snapshots_and_other_files_are_reported_as_kafka_reports_them() {
    let Some(py) = kafka_python() else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    // A partition with enough batches for index entries (one per 4 KiB of batches), compacted so that the tool
    // writes its indexes.
    let dir = tmp.path().join("t-0");
    common::write_kafka_partition(&dir, &common::PartitionSpec::mixed(5000, 4, 100, 50, 7));
    compact(&dir);
    let index = files_of(&dir, &[".index"]).into_iter().find(|f| std::fs::metadata(f).expect("stat").len() >= 24);
    let index = PathBuf::from(index.expect("an index with entries"));
    // Entry 1 points at the position entry 0 names, and entry 2's offset is one too many: mismatches.
    let bytes = std::fs::read(&index).expect("read");
    patch(&index, 12, &bytes[4..8]);
    let off2 = i32::from_be_bytes([bytes[16], bytes[17], bytes[18], bytes[19]]);
    patch(&index, 16, &(off2 + 1).to_be_bytes());
    // The time index: the second entry's timestamp off by one, the third earlier than the second.
    let time = index.with_extension("timeindex");
    let t = std::fs::read(&time).expect("read");
    if t.len() >= 36 {
        let ts = |at: usize| i64::from_be_bytes(t[at..at + 8].try_into().expect("8 bytes"));
        patch(&time, 12, &(ts(12) + 1).to_be_bytes());
        patch(&time, 24, &(ts(0) - 5).to_be_bytes());
    }
    // Trailing garbage after the last batch of a segment.
    let log = index.with_extension("log");
    let mut all = std::fs::read(&log).expect("read");
    all.extend_from_slice(&[7u8; 9]);
    std::fs::write(&log, &all).expect("write");
    // A producer snapshot (version 1, CRC-32C over what follows the CRC): two producers, one in a
    // transaction; and a copy with a flipped byte.
    let snapshot = dir.join("00000000000000000100.snapshot");
    let entry = |producer_id, epoch, last_sequence, last_offset, coordinator_epoch, current_txn_first_offset| {
        common::transactions::SnapshotEntry {
            producer_id,
            epoch,
            last_sequence,
            last_offset,
            offset_delta: 4,
            timestamp: 1_700_000_000_000,
            coordinator_epoch,
            current_txn_first_offset,
        }
    };
    let mut s = common::transactions::write_producer_snapshot(
        &snapshot,
        &[entry(1000, 3, 41, 99, 7, -1), entry(2000, 0, 5, -1, -1, 88)],
    );
    let damaged = dir.join("00000000000000000200.snapshot");
    s[20] ^= 1;
    std::fs::write(&damaged, &s).expect("snapshot");
    let mut files = vec![index.display().to_string(), time.display().to_string(), log.display().to_string()];
    files.extend([snapshot, damaged, dir.join("partition.metadata")].iter().map(|p| p.display().to_string()));
    std::fs::write(dir.join("partition.metadata"), "version: 0\n").expect("metadata");
    let printed = same(&py, &files, false, tmp.path());
    assert!(printed.stderr.contains("Mismatches in :"), "{}", printed.stderr);
    assert!(printed.stdout.contains("Found 9 invalid bytes at the end of"), "{}", printed.stdout);
    assert!(printed.stdout.contains("producerId: 1000 producerEpoch: 3 coordinatorEpoch: 7"), "{}", printed.stdout);
    assert!(printed.stderr.contains("Snapshot is corrupt (CRC is no longer valid)"), "{}", printed.stderr);
    assert!(printed.stderr.contains("Ignoring unknown file"), "{}", printed.stderr);
    let verified = same(&py, &files[..2], true, tmp.path());
    assert!(!verified.stdout.contains("offset: "), "--verify-index-only prints no entries: {}", verified.stdout);
}

#[test]
fn the_style_refuses_what_it_cannot_print_and_reads_only() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("t-0");
    common::kafka_partition(&dir, 10, 2, 3, 4);
    let before = common::contents(&dir);
    for extra in [
        &["--json"][..],
        &["--key", "k1"],
        &["--json-lines"],
        &["--from-offset", "3"],
        &["--deep-iteration"],
        &["--offsets-decoder", "--cluster-metadata-decoder"],
        &["--remote-log-metadata-decoder"],
        &["--key-decoder-class", "x.Y"],
        &["--max-bytes", "-1"],
    ] {
        let mut args = vec!["dump", "--format", "kafka", "--style", "kafka-dump-log", "--dir", path(&dir)];
        args.extend_from_slice(extra);
        let out = logcompact(&args, "");
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", stderr(&out));
    }
    let native = logcompact(&["dump", "--files", &format!("{}/00000000000000000000.log", path(&dir))], "");
    assert_eq!(native.status.code(), Some(2), "--files needs --format kafka: {}", stderr(&native));
    for flag in ["--verify-index-only", "--skip-record-metadata", "--transaction-log-decoder", "--deep-iteration"] {
        let other_style = logcompact(&["dump", "--format", "kafka", "--dir", path(&dir), flag], "");
        assert_eq!(other_style.status.code(), Some(2), "{flag} needs the style: {}", stderr(&other_style));
        assert!(stderr(&other_style).contains(flag), "{}", stderr(&other_style));
    }
    // A zero-filled tail (a preallocated segment) kills Kafka's tool with an exception: this one stops too,
    // after the same lines, with exit 1 and Kafka's exception line.
    let log = dir.join("00000000000000000012.log");
    let mut bytes = std::fs::read(&log).expect("read");
    bytes.extend_from_slice(&[0u8; 100]);
    std::fs::write(&log, &bytes).expect("write");
    let out = logcompact(&["dump", "--format", "kafka", "--files", path(&log)], "");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with(
            "Exception in thread \"main\" org.apache.kafka.common.errors.CorruptRecordException: Found record size 0 \
             smaller than minimum record overhead (14)"
        ),
        "{}",
        stderr(&out)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("baseOffset: 12"), "the batches before it were printed");
    let mut after = common::contents(&dir);
    after.insert("00000000000000000012.log".into(), before["00000000000000000012.log"].clone());
    assert_eq!(after, before, "nothing was written");
}
