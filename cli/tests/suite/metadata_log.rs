//! The KRaft metadata log is never written: every writing command, every way of asking (in place, `--out`, each
//! map, `--apply`, a settings section naming it, a settings file that compacts every topic, the native format),
//! leaves `__cluster_metadata-0` byte for byte as it was and refuses with exit 2 naming it, before anything is
//! written; `clean`, `status` and `analyze` list it as never cleaned; reading commands still read it. It is
//! recognised by its name and, under any name, by the raft layer's `quorum-state` or a raft snapshot.
//!
//! The directories here are fixtures with a metadata log's files; the real broker's own metadata log goes
//! through the same commands in `real_kafka.rs`.

use std::path::{Path, PathBuf};

use crate::common;
use common::{contents, kafka_partition, logcompact, path, stderr, stdout};

/// A broker's log directory: `meta.properties`, a compacted-looking partition `orders-0` and the metadata log
/// `__cluster_metadata-0` (four segments, three of them sealed, a raft snapshot, `quorum-state`, the broker's
/// own partition files).
fn broker_dir(root: &Path) -> PathBuf {
    std::fs::create_dir_all(root).expect("mkdir");
    std::fs::write(root.join("meta.properties"), "version=1\nnode.id=1\n").expect("meta.properties");
    kafka_partition(&root.join("orders-0"), 10, 4, 3, 20);
    let meta = root.join("__cluster_metadata-0");
    kafka_partition(&meta, 10, 4, 3, 20);
    metadata_files(&meta, true, true);
    meta
}

/// The raft layer's files in `dir`.
fn metadata_files(dir: &Path, quorum_state: bool, snapshot: bool) {
    if quorum_state {
        std::fs::write(dir.join("quorum-state"), br#"{"leaderId":1,"leaderEpoch":1,"votedId":-1,"data_version":1}"#)
            .expect("quorum-state");
    }
    if snapshot {
        std::fs::write(dir.join("00000000000000000120-0000000001.checkpoint"), b"snapshot").expect("snapshot");
    }
    std::fs::write(dir.join("leader-epoch-checkpoint"), b"0\n1\n1 0\n").expect("leader-epoch-checkpoint");
    std::fs::write(dir.join("partition.metadata"), b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n")
        .expect("partition.metadata");
}

/// Every file under `root`, recursively, with its bytes (`None` for directories).
fn tree(root: &Path) -> Vec<(String, Option<Vec<u8>>)> {
    let mut all = Vec::new();
    for (name, bytes) in contents(root) {
        let p = root.join(&name);
        if p.is_dir() {
            all.push((name.clone(), None));
            all.extend(tree(&p).into_iter().map(|(n, b)| (format!("{name}/{n}"), b)));
        } else {
            all.push((name, bytes));
        }
    }
    all
}

fn refused(out: &std::process::Output, what: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{what}: {err}");
    assert!(err.contains("KRaft metadata log"), "{what}: {err}");
    assert!(err.contains("raft layer owns it"), "{what}: {err}");
}

#[test]
fn every_writing_command_refuses_the_metadata_log_and_changes_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("kafka-logs");
    let meta = broker_dir(&root);
    let m = path(&meta);
    let before = tree(&meta);
    let out_dir = tmp.path().join("copy");
    let o = path(&out_dir);
    let spill = tmp.path().join("spill");
    let s = path(&spill);
    let mut asks: Vec<Vec<&str>> = vec![
        vec!["compact", "--format", "kafka", "--dir", m],
        vec!["compact", "--format", "kafka", "--dir", m, "--until-clean"],
        vec!["compact", "--format", "kafka", "--dir", m, "--until-clean", "--purge"],
        vec!["compact", "--format", "kafka", "--dir", m, "--out", o],
        vec!["compact", "--format", "kafka", "--dir", m, "--out", o, "--until-clean"],
        vec!["compact", "--dir", m],
        vec!["repair", "--format", "kafka", "--dir", m],
        vec!["repair", "--format", "kafka", "--dir", m, "--apply"],
        vec!["repair", "--dir", m, "--apply"],
        vec!["roll", "--format", "kafka", "--dir", m],
        vec!["roll", "--dir", m],
        vec!["gen", "--dir", m, "--records", "10", "--keys", "2"],
        vec!["run", "--backend", "file", "--dir", m, "-"],
    ];
    for map in ["skimpy", "fullkey", "compact"] {
        asks.push(vec!["compact", "--format", "kafka", "--dir", m, "--until-clean", "--map", map]);
    }
    asks.push(vec!["compact", "--format", "kafka", "--dir", m, "--map", "external", "--spill-dir", s]);
    for args in &asks {
        let out = logcompact(args, "PUT a 1\nROLL\nCOMPACT\n");
        refused(&out, &args.join(" "));
        assert_eq!(tree(&meta), before, "{}: the metadata log changed", args.join(" "));
        assert!(!out_dir.exists(), "{}: a copy was made", args.join(" "));
        assert!(!spill.exists(), "{}: a spill directory was made", args.join(" "));
    }
}

#[test]
fn it_is_recognised_by_the_raft_layers_files_under_any_name() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for (name, quorum_state, snapshot) in [("metadata-copy-0", true, false), ("renamed", false, true)] {
        let dir = tmp.path().join(name);
        kafka_partition(&dir, 10, 3, 2, 10);
        metadata_files(&dir, quorum_state, snapshot);
        let before = tree(&dir);
        for args in [
            vec!["compact", "--format", "kafka", "--dir", path(&dir), "--until-clean"],
            vec!["repair", "--format", "kafka", "--dir", path(&dir), "--apply"],
        ] {
            let out = logcompact(&args, "");
            refused(&out, &args.join(" "));
            let why = if quorum_state { "quorum-state" } else { "raft snapshot" };
            assert!(stderr(&out).contains(why), "{}", stderr(&out));
            assert_eq!(tree(&dir), before, "{name}");
        }
    }
    // A partition's own leader-epoch-checkpoint is no raft snapshot: an ordinary partition still compacts.
    let plain = tmp.path().join("orders-0");
    kafka_partition(&plain, 10, 3, 2, 10);
    metadata_files(&plain, false, false);
    let out = logcompact(&["compact", "--format", "kafka", "--cleanup-policy", "compact", "--dir", path(&plain)], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn a_settings_section_naming_it_is_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("kafka-logs");
    broker_dir(&root);
    let before = tree(&root);
    for section in ["[__cluster_metadata]", "[__cluster_metadata-0]"] {
        let settings = tmp.path().join("topics.conf");
        std::fs::write(&settings, format!("[orders]\ncleanup.policy = compact\n{section}\ncleanup.policy = compact\n"))
            .expect("settings");
        for command in ["clean", "status", "analyze"] {
            let mut args = vec![command, "--format", "kafka", "--data-dir", path(&root), "--config", path(&settings)];
            if command == "clean" {
                args.push("--until-clean");
            }
            let out = logcompact(&args, "");
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{command} {section}: {err}");
            assert!(err.contains("KRaft metadata log") && err.contains(section), "{command}: {err}");
            assert_eq!(tree(&root), before, "{command} {section}: something was written");
        }
    }
}

#[test]
fn clean_status_and_analyze_list_it_as_never_cleaned_and_clean_the_rest() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("kafka-logs");
    let meta = broker_dir(&root);
    let before = tree(&meta);
    let orders = contents(&root.join("orders-0"));
    let settings = tmp.path().join("topics.conf");
    // Every topic compacted: the metadata log is still not among them.
    std::fs::write(&settings, "cleanup.policy = compact\n").expect("settings");
    let never = "the cluster's metadata log: never cleaned";
    for native in [false, true] {
        let mut args = vec!["clean", "--data-dir", path(&root), "--until-clean", "--config", path(&settings)];
        if !native {
            args.extend(["--format", "kafka"]);
        }
        let out = logcompact(&args, "");
        let err = stderr(&out);
        if native {
            // Without --format kafka the broker's directory is refused before any log is looked at, with the fix.
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert!(err.starts_with("error: --data-dir ") && err.contains("give --format kafka"), "{err}");
        } else {
            assert!(err.contains(&format!("ignoring __cluster_metadata-0: {never}")), "{err}");
            assert_eq!(out.status.code(), Some(0), "{err}");
        }
        assert_eq!(tree(&meta), before, "native {native}: the metadata log changed");
    }
    assert_ne!(contents(&root.join("orders-0")), orders, "the partition beside it was cleaned");
    let status = logcompact(&["status", "--format", "kafka", "--data-dir", path(&root)], "");
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));
    assert!(stdout(&status).contains(&format!("__cluster_metadata-0: {never}")), "{}", stdout(&status));
    let analyze = logcompact(&["analyze", "--format", "kafka", "--data-dir", path(&root)], "");
    assert_eq!(analyze.status.code(), Some(0), "{}", stderr(&analyze));
    assert!(stderr(&analyze).contains(&format!("__cluster_metadata-0: {never}")), "{}", stderr(&analyze));
    assert!(!stdout(&analyze).contains("__cluster_metadata"), "not a row to clean: {}", stdout(&analyze));
    assert_eq!(tree(&meta), before);
}

#[test]
fn reading_commands_still_read_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let meta = broker_dir(&tmp.path().join("kafka-logs"));
    let before = tree(&meta);
    for args in [
        vec!["dump", "--format", "kafka", "--dir", path(&meta)],
        vec!["check", "--format", "kafka", "--dir", path(&meta)],
        vec!["analyze", "--format", "kafka", "--dir", path(&meta)],
    ] {
        let out = logcompact(&args, "");
        assert_eq!(out.status.code(), Some(0), "{}: {}", args.join(" "), stderr(&out));
    }
    assert_eq!(tree(&meta), before);
}
