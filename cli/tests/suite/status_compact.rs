//! `status` counts the passes `compact` made as well as `clean`'s (issue 26 item 6): `compact` in place records
//! them in the data directory's status file, where one is kept; a log compacted outside any data directory
//! leaves no file beside it.

use crate::common;
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

/// Each log's `passes` in `status --json` of the native data directory `dir`.
fn passes_of(dir: &std::path::Path) -> std::collections::BTreeMap<String, u64> {
    let out = logcompact(&["status", "--data-dir", path(dir), "--json"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    let logs = json["status"]["logs"].as_array().expect("logs");
    logs.iter().map(|l| (l["name"].as_str().expect("name").to_owned(), l["passes"].as_u64().expect("passes"))).collect()
}

#[test]
fn compacts_running_side_by_side_in_one_data_directory_lose_none_of_each_others_passes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    let names: Vec<String> = (0..6).map(|i| format!("log{i}")).collect();
    let append = |name: &str, seed: u32| {
        let seed = seed.to_string();
        let log = dir.join(name);
        let args = ["gen", "--dir", path(&log), "--records", "2000", "--keys", "40", "--segment-bytes", "16KiB"];
        let out = logcompact(&[&args[..], &["--seed", &seed]].concat(), "");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    };
    for name in &names {
        append(name, 1);
    }
    let out = logcompact(&["clean", "--data-dir", path(&dir), "--until-clean"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let before = passes_of(&dir);
    let rounds = 3;
    for round in 0..rounds {
        for name in &names {
            append(name, 2 + round);
        }
        // One pass each, all at once: every one reads, changes and renames the same status file.
        let children: Vec<_> = names
            .iter()
            .map(|name| {
                std::process::Command::new(common::bin())
                    .args(["compact", "--dir", path(&dir.join(name))])
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .expect("spawn")
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().expect("wait");
            assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
            assert!(out.stderr.is_empty(), "no warning: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    let after = passes_of(&dir);
    for name in &names {
        assert_eq!(after[name], before[name] + u64::from(rounds), "{name}: {before:?} -> {after:?}");
    }
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .expect("read_dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
