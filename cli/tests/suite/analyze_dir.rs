//! `analyze --data-dir` on a broker's log directory of mixed partitions: a row each, most reclaimable first,
//! with the figures and whether Kafka's cleaner would pick it now and why not; nothing is written.

use std::path::Path;

use crate::common;
use common::{contents, kafka_partition, logcompact, path, stderr, stdout};

fn tree(root: &Path) -> Vec<(String, Option<Vec<u8>>)> {
    let mut all = Vec::new();
    for e in std::fs::read_dir(root).expect("list") {
        let e = e.expect("entry");
        let name = e.file_name().into_string().expect("utf-8");
        if e.file_type().expect("type").is_dir() {
            all.extend(contents(&e.path()).into_iter().map(|(n, b)| (format!("{name}/{n}"), b)));
        } else {
            all.push((name, Some(std::fs::read(e.path()).expect("read"))));
        }
    }
    all.sort();
    all
}

#[test]
fn a_log_directory_at_a_glance_sorted_by_what_compaction_reclaims() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("kafka-logs");
    // orders-0: 400 records over 50 keys, much to reclaim; orders-1 a little; orders-2 already compacted;
    // payments-0 is of a topic no section names (Kafka's default policy, delete).
    kafka_partition(&root.join("orders-0"), 50, 4, 5, 20);
    kafka_partition(&root.join("orders-1"), 180, 4, 5, 10);
    kafka_partition(&root.join("orders-2"), 50, 4, 5, 20);
    kafka_partition(&root.join("payments-0"), 50, 4, 5, 20);
    let settings = tmp.path().join("topics.conf");
    std::fs::write(&settings, "[orders]\nmin.cleanable.dirty.ratio = 0.5\n").expect("settings");
    let orders2 = logcompact(
        &["compact", "--format", "kafka", "--cleanup-policy", "compact", "--dir", path(&root.join("orders-2"))],
        "",
    );
    assert!(orders2.status.success(), "{}", stderr(&orders2));
    let before = tree(&root);

    let out = logcompact(
        &["analyze", "--format", "kafka", "--data-dir", path(&root), "--config", path(&settings), "--json"],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(tree(&root), before, "analyze wrote nothing");
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let rows = rows.as_array().expect("an array");
    let names: Vec<&str> = rows.iter().map(|r| r["log"].as_str().expect("log")).collect();
    assert_eq!(names.len(), 4, "{names:?}");
    assert_eq!(names[0], "orders-0", "most reclaimable first: {names:?}");
    // The logs the cleaner takes, most reclaimable first; the delete topic after them, whatever it would reclaim.
    assert_eq!(names[3], "payments-0", "{names:?}");
    assert_eq!(rows[3]["compacted"], false);
    let reclaimable: Vec<u64> = rows[..3].iter().map(|r| r["reclaimable_bytes"].as_u64().expect("bytes")).collect();
    assert!(reclaimable.windows(2).all(|w| w[0] >= w[1]), "{reclaimable:?}");
    let row = |name: &str| rows.iter().find(|r| r["log"] == name).expect("row");
    for key in ["bytes", "dirty_ratio", "reclaimable_bytes", "distinct_keys", "cleanable_now", "reason"] {
        assert!(!row("orders-0")[key].is_null(), "{key}");
    }
    assert_eq!(row("orders-0")["distinct_keys"].as_u64(), Some(50));
    assert!(row("orders-0")["buffer_bytes_for_one_pass"]["compact"].as_u64() > Some(0));
    assert_eq!(row("orders-0")["cleanable_now"], true, "{}", row("orders-0")["reason"]);
    assert!(row("orders-0")["reason"].as_str().expect("reason").contains("reaches min.cleanable.dirty.ratio 50%"));
    assert_eq!(row("orders-2")["cleanable_now"], false);
    assert!(row("orders-2")["reason"].as_str().expect("reason").contains("nothing dirty"), "{}", row("orders-2"));
    assert_eq!(row("payments-0")["cleanable_now"], false);
    assert!(row("payments-0")["reason"].as_str().expect("reason").contains("cleanup.policy"));

    let text = stdout(&logcompact(
        &["analyze", "--format", "kafka", "--data-dir", path(&root), "--config", path(&settings)],
        "",
    ));
    let first = text.lines().nth(1).expect("a first row");
    assert!(first.starts_with("orders-0") && first.contains("yes: dirty ratio"), "{text}");
    let total = text.lines().last().expect("a total");
    assert!(total.starts_with("total: 4 logs"), "{text}");
    // The total counts what the cleaner would take: the delete topic's bytes are said apart.
    assert!(
        total.contains("reclaimable by the cleaner") && total.contains("not counted: 1 log the cleaner leaves alone"),
        "{total}"
    );
    // Its share is of the compacted logs' bytes, not of the delete topic's too.
    let compacted: u64 = rows.iter().filter(|r| r["compacted"] == true).map(|r| r["bytes"].as_u64().unwrap_or(0)).sum();
    let reclaimable: u64 =
        rows.iter().filter(|r| r["compacted"] == true).map(|r| r["reclaimable_bytes"].as_u64().unwrap_or(0)).sum();
    let share = format!("({:.1}% of the ", reclaimable as f64 * 100.0 / compacted as f64);
    assert!(total.contains(&share), "{share} in {total}");
    // --checkpoint names one log's offset: it cannot apply to a directory of them.
    let refused = logcompact(&["analyze", "--data-dir", path(&root), "--checkpoint", "3"], "");
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
}
