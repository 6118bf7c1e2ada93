//! `dump --style kafka-dump-log` replayed against what Kafka 4.4's own `kafka-dump-log.sh`
//! (`org.apache.kafka.tools.DumpLogSegments`) printed: the 75 cases of interop/kafka/notes/dump-vectors (real
//! broker segments before and after Kafka's cleaner, `__consumer_offsets`, `__transaction_state`, the KRaft
//! metadata log and its snapshots, crafted damage, records written with Kafka's own classes: every group,
//! transaction and share coordinator record, a record of every metadata type and version, compressed legacy
//! message sets; every flag).
//! Each case runs with Kafka's arguments in Kafka's working directory; standard output must be the same bytes,
//! standard error the same bytes less the JVM's stack frames (lines starting with a tab), the exit status the
//! same. No Java is needed.
//!
//! Kafka's summaries name files by absolute path and order several files by the hash of those paths, so the
//! vectors only hold where they were made: `/tmp/logcompact-dump-vectors`. The test copies them there afresh
//! under an exclusive lock on `/tmp/logcompact-dump-vectors.lock`, held for the whole replay, so that runs from
//! several work trees at once take turns and always replay this tree's vectors.
//!
//! Three cases are Kafka flags the style refuses by design, and are pinned as refusals: Kafka's shallow mode
//! (no `--deep-iteration`, no `--print-data-log`: the style always iterates and prints; Kafka's batch lines are
//! ours without the record lines), `--deep-iteration` alone, and `--remote-log-metadata-decoder`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

/// Where Kafka's runs were made (the vectors print paths under it).
const AT: &str = "/tmp/logcompact-dump-vectors";

/// Cases whose flags the style refuses: the case, and what the refusal names.
const REFUSED: &[(&str, &str)] =
    [("flag-deep-only", "--deep-iteration"), ("flag-remote-log-metadata-decoder", "--remote-log-metadata-decoder")]
        .as_slice();

/// Kafka's shallow mode, which the style cannot be asked for.
const SHALLOW: &str = "flag-shallow";

fn source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../interop/kafka/notes/dump-vectors")
}

/// Copies `from` to `to`, recursively.
fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("create");
    for e in fs::read_dir(from).expect("list") {
        let e = e.expect("entry");
        let target = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            fs::copy(e.path(), &target).expect("copy");
        }
    }
}

/// One case: its working directory and arguments, and what Kafka printed.
struct Case {
    name: String,
    cwd: PathBuf,
    args: Vec<String>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    exit: i32,
}

fn case(dir: &Path) -> Case {
    let read = |f: &str| fs::read(dir.join(f)).expect("case file");
    let text = |f: &str| String::from_utf8(read(f)).expect("utf-8");
    Case {
        name: dir.file_name().expect("name").to_string_lossy().into_owned(),
        cwd: Path::new(AT).join(text("cwd").trim()),
        args: text("args").lines().map(str::to_owned).collect(),
        stdout: read("stdout"),
        stderr: read("stderr"),
        exit: text("exit").trim().parse().expect("exit status"),
    }
}

/// Kafka's standard error without the JVM's stack frames.
fn without_frames(stderr: &[u8]) -> Vec<u8> {
    stderr.split_inclusive(|&b| b == b'\n').filter(|l| !l.starts_with(b"\t")).flatten().copied().collect()
}

/// The first line where `ours` and `theirs` differ, for the failure message.
fn first_difference(ours: &[u8], theirs: &[u8]) -> String {
    let (a, b): (Vec<&[u8]>, Vec<&[u8]>) =
        (ours.split(|&x| x == b'\n').collect(), theirs.split(|&x| x == b'\n').collect());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        if x != y {
            return format!(
                "line {}:\n  ours:  {}\n  Kafka: {}",
                i + 1,
                String::from_utf8_lossy(x),
                String::from_utf8_lossy(y)
            );
        }
    }
    format!("{} lines, Kafka {}", a.len(), b.len())
}

#[test]
fn every_case_prints_what_kafka_4_4_printed_on_both_streams_with_its_exit_status() {
    let lock = fs::File::create(format!("{AT}.lock")).expect("lock file");
    lock.lock().expect("lock");
    let at = Path::new(AT);
    if at.exists() {
        fs::remove_dir_all(at).expect("remove the previous copy");
    }
    copy_tree(&source(), at);
    let mut cases: Vec<Case> =
        fs::read_dir(at.join("cases")).expect("cases").map(|e| case(&e.expect("case").path())).collect();
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(cases.len(), 75, "the vectors' cases");
    let (mut matched, mut failures) = (0, Vec::new());
    for c in &cases {
        let out = Command::new(common::bin())
            .args(["dump", "--format", "kafka", "--style", "kafka-dump-log"])
            .args(&c.args)
            .current_dir(&c.cwd)
            .output()
            .expect("run logcompact");
        let code = out.status.code().unwrap_or(-1);
        if let Some((_, flag)) = REFUSED.iter().find(|(name, _)| *name == c.name) {
            let stderr = String::from_utf8_lossy(&out.stderr);
            if code != 2 || !stderr.starts_with("error: ") || !stderr.contains(flag) || !out.stdout.is_empty() {
                failures.push(format!("{}: not refused naming {flag} (exit {code}): {stderr}", c.name));
            }
            continue;
        }
        if c.name == SHALLOW {
            // Kafka's batch lines are ours without the record lines.
            let batches: Vec<u8> = out
                .stdout
                .split_inclusive(|&b| b == b'\n')
                .filter(|l| !l.starts_with(b"| "))
                .flatten()
                .copied()
                .collect();
            if code != 0 || batches != c.stdout || !c.stderr.is_empty() {
                failures.push(format!("{}: the deep dump is not Kafka's shallow one with records", c.name));
            }
            continue;
        }
        let mut problems = Vec::new();
        if code != c.exit {
            problems.push(format!("exit {code}, Kafka {}", c.exit));
        }
        if out.stdout != c.stdout {
            problems.push(format!("standard output, {}", first_difference(&out.stdout, &c.stdout)));
        }
        let theirs = without_frames(&c.stderr);
        if out.stderr != theirs {
            problems.push(format!("standard error, {}", first_difference(&out.stderr, &theirs)));
        }
        if problems.is_empty() {
            matched += 1;
        } else {
            failures.push(format!("{} ({}): {}", c.name, c.args.join(" "), problems.join("; ")));
        }
    }
    drop(lock);
    assert!(failures.is_empty(), "{matched} cases match; these do not:\n{}", failures.join("\n"));
    assert_eq!(matched, cases.len() - REFUSED.len() - 1);
}

/// Bytes from an `xxd -p` dump with `#` comment lines.
fn from_hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .flat_map(|l| l.trim().bytes())
        .map(|b| match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            other => panic!("not hex: {}", char::from(other)),
        })
        .collect();
    digits.chunks_exact(2).map(|p| p[0] << 4 | p[1]).collect()
}

/// The metadata logs of two real 4.4 nodes (interop/kafka/notes/vectors: kraft.version 0 with every
/// settings-related record, topic deletion and config removals; kraft.version 1 with KRaftVersion and Voters
/// records), their latest and bootstrap snapshots: `--cluster-metadata-decoder` prints what Kafka printed.
#[test]
fn metadata_logs_and_snapshots_of_two_real_nodes_decode_as_kafka_decoded_them() {
    let vectors = Path::new(env!("CARGO_MANIFEST_DIR")).join("../interop/kafka/notes/vectors");
    let tmp = tempfile::tempdir().expect("tempdir");
    let cases = [
        ("a", "00000000000000000000.log", "a-dump-log-decoded.txt"),
        ("a", "00000000000000000101-0000000001.checkpoint", "a-dump-snapshot-decoded.txt"),
        ("a", "00000000000000000000-0000000000.checkpoint", "a-dump-bootstrap-snapshot-decoded.txt"),
        ("b", "00000000000000000000.log", "b-dump-log-decoded.txt"),
        ("b", "00000000000000000036-0000000001.checkpoint", "b-dump-snapshot-decoded.txt"),
        ("b", "00000000000000000000-0000000000.checkpoint", "b-dump-bootstrap-snapshot-decoded.txt"),
    ];
    for (node, file, expected) in cases {
        let dir = tmp.path().join(node).join("__cluster_metadata-0");
        fs::create_dir_all(&dir).expect("mkdir");
        let hex = fs::read_to_string(vectors.join(format!("{node}-{file}.hex.txt"))).expect("hex");
        fs::write(dir.join(file), from_hex(&hex)).expect("write");
        let out = Command::new(common::bin())
            .args(["dump", "--format", "kafka", "--style", "kafka-dump-log", "--cluster-metadata-decoder", "--files"])
            .arg(format!("__cluster_metadata-0/{file}"))
            .current_dir(tmp.path().join(node))
            .output()
            .expect("run logcompact");
        let theirs = fs::read(vectors.join(expected)).expect("expected");
        assert_eq!(out.status.code(), Some(0), "{node} {file}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stdout == theirs, "{node} {file}: {}", first_difference(&out.stdout, &theirs));
    }
}
