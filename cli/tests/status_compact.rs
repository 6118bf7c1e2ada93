//! `status` counts the passes `compact` made as well as `clean`'s (issue 26 item 6): `compact` in place records
//! them in the data directory's status file, where one is kept; a log compacted outside any data directory
//! leaves no file beside it.

mod common;
use common::{logcompact, path, stderr, stdout};

/// The `passes` and `last clean` columns of `log`'s row in `status`'s table.
fn row(text: &str, log: &str) -> (u64, String) {
    let line = text.lines().find(|l| l.starts_with(log) && l.contains('%')).unwrap_or_else(|| panic!("{log}: {text}"));
    let cells: Vec<&str> = line.split_whitespace().collect();
    // log state... passes date time last-error: the date and time are two cells when present, one "-" otherwise.
    let error_at = cells.len() - 1;
    let (passes_at, last) = if cells[error_at - 1] == "-" {
        (error_at - 2, "-".to_owned())
    } else {
        (error_at - 3, format!("{} {}", cells[error_at - 2], cells[error_at - 1]))
    };
    (cells[passes_at].parse().unwrap_or_else(|_| panic!("passes in {line}")), last)
}

#[test]
fn status_counts_compacts_passes_beside_cleans() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let logs = tmp.path().join("kafka-logs");
    let part = logs.join("orders-0");
    common::kafka_partition(&part, 50, 4, 3, 20);
    common::kafka_partition(&logs.join("orders-1"), 50, 4, 3, 20);
    std::fs::write(logs.join("meta.properties"), "version=1\nnode.id=1\n").expect("meta.properties");
    let conf = tmp.path().join("topics.conf");
    std::fs::write(&conf, "[orders]\ncleanup.policy = compact\n").expect("settings");
    let status = || {
        let out = logcompact(&["status", "--format", "kafka", "--data-dir", path(&logs), "--config", path(&conf)], "");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stdout(&out)
    };
    let text = status();
    assert_eq!(row(&text, "orders-0"), (0, "-".to_owned()), "{text}");
    // compact in place: its passes are counted, with the time of the last.
    let out = logcompact(
        &[
            "compact",
            "--format",
            "kafka",
            "--config",
            path(&conf),
            "--dir",
            path(&part),
            "--dedupe-buffer",
            "600",
            "--until-clean",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = status();
    let (passes, last) = row(&text, "orders-0");
    assert!(passes >= 2, "a small buffer takes several passes: {text}");
    assert_ne!(last, "-", "{text}");
    assert!(text.contains("no `logcompact clean` has run here"), "{text}");
    assert_eq!(row(&text, "orders-1").0, 0, "{text}");
    // clean then adds its own: orders-1's first pass, orders-0's count kept.
    let out = logcompact(
        &["clean", "--format", "kafka", "--data-dir", path(&logs), "--config", path(&conf), "--until-clean"],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = status();
    assert!(row(&text, "orders-0").0 >= passes, "{text}");
    assert!(row(&text, "orders-1").0 >= 1, "{text}");
}

#[test]
fn a_log_compacted_outside_a_data_directory_leaves_no_status_file_beside_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let part = tmp.path().join("orders-0");
    common::kafka_partition(&part, 50, 4, 3, 20);
    let out = logcompact(&["compact", "--format", "kafka", "--cleanup-policy", "compact", "--dir", path(&part)], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!tmp.path().join("cleaner-status.json").exists(), "nothing written beside the partition");
}
