//! Mistakes answered once, with the fix (issue 26 item 5): a broker's log directory given where one partition
//! is wanted, a partition given where a directory of partitions is wanted, a broker's log directory without
//! `--format kafka`, and a mistyped path. Each is one line on standard error, the first and only one, naming
//! the command that fits; nothing is changed.

use crate::common;

use std::path::Path;

use common::{contents, logcompact, path, stderr, stdout};

/// A stopped broker's log directory with two partitions of topic `orders`.
fn broker(root: &Path) -> std::path::PathBuf {
    let logs = root.join("kafka-logs");
    common::kafka_partition(&logs.join("orders-0"), 50, 4, 3, 20);
    common::kafka_partition(&logs.join("orders-1"), 50, 4, 3, 20);
    std::fs::write(logs.join("meta.properties"), "version=1\nnode.id=1\ncluster.id=test\n").expect("meta.properties");
    logs
}

/// Runs `args`, expecting exit 2 and exactly one line on standard error, which it returns; nothing on
/// standard output.
fn refused(args: &[&str]) -> String {
    let out = logcompact(args, "");
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    assert_eq!(stdout(&out), "", "{args:?}");
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{args:?}: one line, the answer: {err}");
    err.trim_end().to_owned()
}

#[test]
fn a_log_directory_given_for_a_partition_and_a_partition_for_a_log_directory_name_the_form_that_fits() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let logs = broker(tmp.path());
    let (l, part) = (path(&logs), logs.join("orders-0"));
    let before = (contents(&logs), contents(&part));

    let err = refused(&["compact", "--format", "kafka", "--dir", l]);
    assert_eq!(
        err,
        format!(
            "error: --dir {l} is a Kafka broker's log directory (it holds orders-0, orders-1), not one partition: \
             `logcompact compact --format kafka --dir {l}/orders-0` takes one, `logcompact clean --format kafka \
             --data-dir {l}` all of them (with --until-clean)"
        )
    );
    // Without --format kafka too: the directory says what it is.
    assert!(refused(&["compact", "--dir", l]).contains("is a Kafka broker's log directory"));
    let err = refused(&["analyze", "--format", "kafka", "--dir", l]);
    assert!(err.ends_with(&format!("`logcompact analyze --format kafka --data-dir {l}` all of them")), "{err}");
    let err = refused(&["check", "--format", "kafka", "--dir", l]);
    assert!(err.ends_with(&format!("`logcompact check --format kafka --data-dir {l}` all of them")), "{err}");
    for cmd in ["dump", "advise", "repair", "roll"] {
        let err = refused(&[cmd, "--format", "kafka", "--dir", l]);
        assert!(err.ends_with(&format!("`logcompact {cmd} --format kafka --dir {l}/orders-0` takes one")), "{err}");
    }

    // And the other way round: one partition where a directory of them is wanted.
    let p = path(&part);
    for (cmd, fits) in [("clean", "compact"), ("status", "analyze"), ("analyze", "analyze"), ("check", "check")] {
        let mut args = vec![cmd, "--format", "kafka", "--data-dir", p];
        if cmd == "clean" {
            args.push("--until-clean");
        }
        let err = refused(&args);
        assert_eq!(
            err,
            format!(
                "error: --data-dir {p} is one log (it holds segment files), not a directory of logs: `logcompact \
                 {fits} --format kafka --dir {p}` takes it"
            )
        );
    }
    assert_eq!((contents(&logs), contents(&part)), before, "nothing was changed");
}

#[test]
fn a_broker_log_directory_without_format_kafka_is_told_so_before_anything_else() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let logs = broker(tmp.path());
    let l = path(&logs);
    let before = contents(&logs);
    // No "skipping" line per partition, no note about the metadata log: the answer alone, right for the command.
    let err = refused(&["clean", "--data-dir", l, "--until-clean"]);
    assert_eq!(
        err,
        format!(
            "error: --data-dir {l} is a Kafka broker's log directory (partitions orders-0, orders-1): give --format \
             kafka, as in `logcompact clean --format kafka --data-dir {l} --until-clean`"
        )
    );
    let err = refused(&["status", "--data-dir", l]);
    assert!(err.ends_with(&format!("as in `logcompact status --format kafka --data-dir {l}`")), "{err}");
    assert_eq!(contents(&logs), before, "nothing was changed");
}

#[test]
fn a_mistyped_path_is_named_once_with_the_nearest_sibling() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let logs = broker(tmp.path());
    let typo = logs.join("ordres-0");
    let err = refused(&["check", "--format", "kafka", "--dir", path(&typo)]);
    assert_eq!(
        err,
        format!("error: --dir {} does not exist; did you mean {}?", typo.display(), logs.join("orders-0").display())
    );
    assert_eq!(err.matches(path(&typo)).count(), 1, "named once: {err}");
    // compact says it before any note about the topic's settings.
    let err = refused(&["compact", "--format", "kafka", "--dir", path(&typo)]);
    assert!(err.contains("did you mean "), "{err}");
    // A data directory one letter off, and a path whose parent is missing too.
    let err = refused(&["clean", "--format", "kafka", "--data-dir", &format!("{}s", path(&logs)), "--until-clean"]);
    assert!(err.ends_with(&format!("does not exist; did you mean {}?", logs.display())), "{err}");
    let deep = tmp.path().join("nowhere").join("orders-0");
    let err = refused(&["dump", "--format", "kafka", "--dir", path(&deep)]);
    assert_eq!(
        err,
        format!(
            "error: --dir {} does not exist: the nearest existing directory is {}",
            deep.display(),
            tmp.path().display()
        )
    );
}

#[test]
fn a_file_or_an_empty_directory_where_logs_go_is_named_for_what_it_is() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let logs = broker(tmp.path());
    let part = logs.join("orders-0");
    let before = contents(&logs);
    let segment = std::fs::read_dir(&part)
        .expect("the partition")
        .map(|e| e.expect("an entry").path())
        .find(|p| p.extension().is_some_and(|x| x == "log"))
        .expect("a segment file");
    let (f, p) = (path(&segment), path(&part));
    for cmd in ["check", "dump", "analyze", "compact"] {
        let err = refused(&[cmd, "--format", "kafka", "--dir", f]);
        assert_eq!(
            err,
            format!(
                "error: --dir {f} is a file, not a directory: --dir takes the directory that holds a log's files \
                 (this file is in {p})"
            )
        );
    }
    for cmd in ["check", "analyze", "status"] {
        let err = refused(&[cmd, "--format", "kafka", "--data-dir", f]);
        assert!(err.starts_with(&format!("error: --data-dir {f} is a file, not a directory")), "{cmd}: {err}");
    }
    // A thread count out of range names its flag.
    let err =
        refused(&["compact", "--format", "kafka", "--dir", p, "--cleanup-policy", "compact", "--copy-threads", "0"]);
    assert_eq!(err, "error: --copy-threads 0: invalid setting threads = 0: from 1 to 256");
    // An empty directory holds no log to check, as it holds none to analyze: a usage error, not "intact".
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    for cmd in ["check", "analyze"] {
        let err = refused(&[cmd, "--data-dir", path(&empty)]);
        assert_eq!(err, format!("error: {} holds no log to {cmd}", empty.display()), "{cmd}");
    }
    // But a broker's log directory with no partition yet (a new broker, a disk not used so far) is intact.
    let new_broker = tmp.path().join("new-broker");
    std::fs::create_dir(&new_broker).expect("mkdir");
    std::fs::write(new_broker.join("meta.properties"), "version=1\nnode.id=2\ncluster.id=test\n").expect("write");
    let out = logcompact(&["check", "--format", "kafka", "--data-dir", path(&new_broker)], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim_end(), format!("no logs in {}", new_broker.display()));
    assert_eq!(contents(&logs), before, "nothing was changed");
}

#[test]
fn gen_and_run_refuse_to_write_a_log_beside_the_logs_of_a_data_directory() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    for log in ["orders", "users"] {
        let out = logcompact(&["gen", "--dir", path(&data.join(log)), "--records", "20", "--keys", "5"], "");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let before = contents(&data);
    let d = path(&data);
    let err = refused(&["gen", "--dir", d, "--records", "20", "--keys", "5"]);
    assert_eq!(
        err,
        format!(
            "error: --dir {d} is a data directory (it holds orders, users), not one log: `logcompact gen --dir \
             {d}/orders` takes one"
        )
    );
    let out = logcompact(&["run", "--backend", "file", "--dir", d, "-"], "PUT a 1\n");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("is a data directory"), "{}", stderr(&out));
    assert_eq!(contents(&data), before, "no segment written beside the logs");
    // A path not there yet is still the command's to create.
    let out = logcompact(&["gen", "--dir", path(&data.join("events")), "--records", "20", "--keys", "5"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
