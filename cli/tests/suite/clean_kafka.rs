//! `logcompact clean --format kafka` and `status --format kafka` on a stopped broker's log directory, as an
//! operator runs them: only the topics a settings section names (and Kafka's internal topics) are compacted,
//! in place, with the broker's cleaner-offset-checkpoint; settings are saved for later runs and `status` says
//! where each came from; a held directory is refused; a run that died is told from one that runs.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common;
use common::{contents, kafka_partition, kafka_records, logcompact, path, stderr, stdout};

fn ok(out: &std::process::Output) -> String {
    assert!(out.status.success(), "exit {:?}: {}", out.status.code(), stderr(out));
    stdout(out)
}

/// Partitions written by [`kafka_partition`] with these numbers: 10 keys, 4 segments of 3 batches of 20.
const KEYS: u64 = 10;
const ACTIVE_BASE: i64 = 3 * 3 * 20;

fn partition(dir: &Path) {
    kafka_partition(dir, KEYS, 4, 3, 20);
}

/// What one full pass keeps of such a partition: the latest record of each key below the active segment, and
/// the active segment as it is.
fn compacted(all: &[(i64, String, Option<String>)]) -> Vec<(i64, String, Option<String>)> {
    let mut latest = BTreeMap::new();
    for (offset, key, _) in all.iter().filter(|r| r.0 < ACTIVE_BASE) {
        latest.insert(key.clone(), *offset);
    }
    all.iter().filter(|r| r.0 >= ACTIVE_BASE || latest[&r.1] == r.0).cloned().collect()
}

#[test]
fn clean_compacts_named_and_internal_topics_in_place_and_leaves_the_others_alone() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("kafka-logs");
    for name in ["orders-0", "orders-1", "payments-0", "__consumer_offsets-3"] {
        partition(&root.join(name));
    }
    // A partition Kafka has scheduled for deletion is no partition to clean.
    let deleted = root.join("orders-2.0123456789abcdef-delete");
    partition(&deleted);
    let written = kafka_records(&root.join("orders-0"));
    let (payments, deleted_before) = (contents(&root.join("payments-0")), contents(&deleted));
    let settings = tmp.path().join("topics.conf");
    std::fs::write(&settings, "min.cleanable.dirty.ratio = 0.2\n[orders]\ndelete.retention.ms = 1000\n")
        .expect("settings");

    let out = logcompact(
        &["clean", "--format", "kafka", "--data-dir", path(&root), "--until-clean", "--config", path(&settings)],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("left alone: payments-0"), "{err}");
    assert!(err.contains("ignoring orders-2.0123456789abcdef-delete"), "{err}");
    assert_eq!(contents(&root.join("payments-0")), payments, "a topic nobody named is not touched");
    assert_eq!(contents(&deleted), deleted_before);
    for name in ["orders-0", "orders-1", "__consumer_offsets-3"] {
        assert_eq!(kafka_records(&root.join(name)), compacted(&written), "{name}");
        ok(&logcompact(&["check", "--format", "kafka", "--dir", path(&root.join(name))], ""));
    }
    let checkpoint = std::fs::read_to_string(root.join("cleaner-offset-checkpoint")).expect("the broker's file");
    let mut lines: Vec<&str> = checkpoint.lines().skip(2).collect();
    lines.sort_unstable();
    assert_eq!(lines, ["__consumer_offsets 3 180", "orders 0 180", "orders 1 180"], "{checkpoint}");
    assert!(checkpoint.starts_with("0\n3\n"), "version 0, three entries: {checkpoint}");

    // status reads only, and says where each setting came from: the run saved its settings file.
    let before = contents(&root);
    let report: serde_json::Value = serde_json::from_str(&ok(&logcompact(
        &["status", "--format", "kafka", "--data-dir", path(&root), "--json"],
        "",
    )))
    .expect("JSON");
    assert_eq!(contents(&root), before, "status changes nothing");
    let sources = &report["sources"];
    let from = |log: &str, setting: &str| sources[log][setting].as_str().unwrap_or_default().to_owned();
    assert_eq!(from("orders-0", "delete.retention.ms"), format!("saved: {} line 3", settings.display()));
    assert_eq!(from("orders-1", "min.cleanable.dirty.ratio"), format!("saved: {} line 1", settings.display()));
    assert_eq!(from("__consumer_offsets-3", "segment.bytes"), "Kafka's default for __consumer_offsets");
    assert_eq!(from("__consumer_offsets-3", "cleanup.policy"), "Kafka's default for __consumer_offsets");
    assert_eq!(from("orders-0", "max.compaction.lag.ms"), "default");
    let left: Vec<&str> =
        report["left_alone"].as_array().expect("left alone").iter().filter_map(|l| l[0].as_str()).collect();
    assert_eq!(left, ["payments-0"]);
    let logs = report["status"]["logs"].as_array().expect("logs");
    let orders = logs.iter().find(|l| l["name"] == "orders-0").expect("orders-0");
    assert_eq!((orders["dirty_bytes"].as_u64(), orders["passes"].as_u64()), (Some(0), Some(1)), "{orders}");
    assert_eq!(orders["settings"]["delete_retention_ms"], 1000);
    // A flag goes over the saved file for this run and is saved in turn.
    let text =
        ok(&logcompact(&["status", "--format", "kafka", "--data-dir", path(&root), "--delete-retention-ms", "5"], ""));
    assert!(text.contains("delete.retention.ms = 5 (--delete-retention-ms)"), "{text}");
    assert!(text.contains("payments-0: left alone"), "{text}");

    // A later run without --config keeps the saved settings: payments is still left alone, orders is clean.
    let again = logcompact(&["clean", "--format", "kafka", "--data-dir", path(&root), "--until-clean"], "");
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert!(stderr(&again).contains("left alone: payments-0"), "{}", stderr(&again));
    assert_eq!(contents(&root.join("payments-0")), payments);
}

#[test]
fn a_held_data_directory_is_refused_with_exit_3_and_nothing_changes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // A Kafka log directory under its broker's lock (the fcntl lock a broker holds on .lock; this test
    // process holds it, so the command, another process, finds it taken).
    let root = tmp.path().join("kafka-logs");
    partition(&root.join("__consumer_offsets-0"));
    let lock = storage_file::lock_log_dir(&root).expect("lock");
    let before = contents(&root.join("__consumer_offsets-0"));
    let out = logcompact(&["clean", "--format", "kafka", "--data-dir", path(&root), "--until-clean"], "");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("in use") && stderr(&out).contains(".lock"), "{}", stderr(&out));
    assert!(stderr(&out).contains("stop the broker"), "the way out is said: {}", stderr(&out));
    assert_eq!(contents(&root.join("__consumer_offsets-0")), before);
    drop(lock);

    // A native data directory another `clean` holds (its flock on the directory).
    let data = tmp.path().join("data");
    ok(&logcompact(
        &["run", "--backend", "file", "--dir", path(&data.join("a")), "-"],
        "PUT k 1\nPUT k 2\nROLL\nPUT j 3\n",
    ));
    let held = std::fs::File::open(&data).expect("open");
    held.try_lock().expect("flock");
    let before = contents(&data);
    let out = logcompact(&["clean", "--data-dir", path(&data), "--until-clean"], "");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("another `logcompact clean`"), "{}", stderr(&out));
    assert!(stderr(&out).contains("let the other logcompact process"), "the way out is said: {}", stderr(&out));
    assert_eq!(contents(&data), before);
    drop(held);
    ok(&logcompact(&["clean", "--data-dir", path(&data), "--until-clean"], ""));
}

#[test]
fn status_tells_a_run_that_died_from_one_that_runs() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("kafka-logs");
    partition(&root.join("__transaction_state-0"));
    ok(&logcompact(&["clean", "--format", "kafka", "--data-dir", path(&root), "--until-clean"], ""));
    let file = root.join("cleaner-status.json");
    let mut recorded: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("status file")).expect("JSON");
    assert_eq!(recorded["running"], false);
    let show = |recorded: &serde_json::Value| {
        std::fs::write(&file, recorded.to_string()).expect("write");
        ok(&logcompact(&["status", "--format", "kafka", "--data-dir", path(&root)], ""))
    };
    assert!(show(&recorded).contains("until-clean mode, ended"));
    // A run that says it goes on, written by a process that has ended (killed before it could say so).
    let mut child = std::process::Command::new("true").spawn().expect("spawn");
    let dead = child.id();
    child.wait().expect("wait");
    recorded["running"] = true.into();
    recorded["pid"] = dead.into();
    recorded["pid_start"] = serde_json::Value::Null;
    let text = show(&recorded);
    assert!(text.contains("died (its process is gone)"), "{text}");
    // One written by a live process (this test's) runs.
    recorded["pid"] = std::process::id().into();
    assert!(show(&recorded).contains("until-clean mode, running"));
}

#[test]
fn a_kafka_log_directory_given_without_format_kafka_is_refused_with_the_hint() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("kafka-logs");
    partition(&root.join("orders-0"));
    let before = contents(&root);
    for args in [vec!["status", "--data-dir", path(&root)], vec!["clean", "--data-dir", path(&root), "--until-clean"]] {
        let out = logcompact(&args, "");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        // Said once, before anything else (no line per partition skipped first), with the command that fits.
        assert!(stderr(&out).contains("is a Kafka broker's log directory"), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("`logcompact {} --format kafka --data-dir ", args[0])),
            "{args:?}: {}",
            stderr(&out)
        );
        assert_eq!(stderr(&out).lines().count(), 1, "{args:?}: {}", stderr(&out));
    }
    assert_eq!(contents(&root), before, "nothing written");
}

/// Issue 42, finding 7: a command given `--format kafka` never answers by asking for `--format kafka` (a Kafka
/// partition under a name that is no `<topic>-<partition>` is ignored, and the run says there is no log,
/// nothing more).
#[test]
fn format_kafka_given_is_never_asked_for() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("kafka-logs");
    partition(&root.join("not-a-partition-name"));
    let before = contents(&root);
    for args in [
        vec!["analyze", "--format", "kafka", "--data-dir", path(&root)],
        vec!["clean", "--format", "kafka", "--data-dir", path(&root), "--until-clean"],
    ] {
        let out = logcompact(&args, "");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("holds no log to"), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("with --format kafka"), "{args:?}: {}", stderr(&out));
    }
    let mut after = contents(&root);
    after.remove(".lock"); // clean takes the directory's lock, Kafka's own `.lock`
    assert_eq!(after, before, "nothing written");
}
