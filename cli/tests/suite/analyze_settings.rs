//! `analyze --dir` runs its dry run with the topic's own settings, resolved as `compact` and `clean` resolve
//! them, says which it used and where each came from, and predicts a record Kafka's cleaner would fail on.

use crate::common;
use common::{logcompact, path, stderr, stdout};

#[test]
fn analyze_takes_the_topics_settings_says_where_from_and_predicts_the_record_bound() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let log_dir = tmp.path().join("kafka-logs");
    let part = log_dir.join("orders-0");
    let spec = common::PartitionSpec::mixed(20, 3, 10, 5, 0);
    common::write_kafka_partition(&part, &spec);
    let conf = tmp.path().join("topics.conf");
    std::fs::write(
        &conf,
        "[orders]\ncleanup.policy = compact\ndelete.retention.ms = 3600000\nmax.decompressed.message.bytes = 10\n",
    )
    .expect("settings");
    let before = common::contents(&part);
    let out = logcompact(&["analyze", "--format", "kafka", "--dir", path(&part), "--config", path(&conf)], "");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    let settings = text.lines().find(|l| l.starts_with("settings: ")).expect("a settings line");
    assert!(settings.contains("delete.retention.ms = 3600000 ("), "{settings}");
    assert!(settings.contains("cleanup.policy = compact ("), "{settings}");
    assert!(
        text.contains("over the topic's max.decompressed.message.bytes (10 bytes): Kafka's cleaner fails"),
        "{text}"
    );
    assert!(text.contains("a full compaction now keeps"), "the dry run still ran: {text}");
    // JSON: each setting with its value and source, the largest record of a compressed batch.
    let out =
        logcompact(&["analyze", "--format", "kafka", "--dir", path(&part), "--config", path(&conf), "--json"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["settings"]["delete.retention.ms"]["value"], "3600000", "{v}");
    assert!(v["settings"]["delete.retention.ms"]["source"].as_str().is_some_and(|s| s != "default"), "{v}");
    assert!(v["largest_compressed_record"]["bytes"].as_u64() > Some(10), "{v}");
    // Without the settings: nothing says the topic is compacted, and the analysis says so.
    let out = logcompact(&["analyze", "--format", "kafka", "--dir", path(&part)], "");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains("nothing here gives this topic's cleanup.policy"), "{text}");
    assert!(!text.contains("max.decompressed.message.bytes ("), "the default bound holds every record: {text}");
    assert_eq!(common::contents(&part), before, "analyze changed nothing");
}

#[test]
fn advise_sizes_the_section_a_pass_would_take_under_the_topics_lag() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let part = tmp.path().join("kafka-logs").join("orders-0");
    common::kafka_partition(&part, 50, 4, 3, 20);
    let dirty_records = |extra: &[&str]| {
        let mut args = vec!["advise", "--format", "kafka", "--dir", path(&part), "--json"];
        args.extend_from_slice(extra);
        let out = logcompact(&args, "");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let rows: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        rows[0]["dirty_records"].as_u64().expect("dirty_records")
    };
    // Three closed segments of 60 records each, all dirty.
    assert_eq!(dirty_records(&[]), 180);
    // A lag longer than the records' age holds every segment back: a pass would take nothing, and the advice
    // sizes nothing.
    let conf = tmp.path().join("topics.conf");
    std::fs::write(&conf, "[orders]\nmin.compaction.lag.ms = 9000000000000000\n").expect("settings");
    assert_eq!(dirty_records(&["--config", path(&conf)]), 0);
    let out = logcompact(&["advise", "--format", "kafka", "--dir", path(&part), "--config", path(&conf)], "");
    let text = stdout(&out);
    assert!(text.starts_with("settings: ") && text.contains("min.compaction.lag.ms = 9000000000000000 ("), "{text}");
    // Settings name a partition: with counts they are refused, never ignored.
    let out = logcompact(&["advise", "--keys", "1000", "--metadata-dir", path(tmp.path())], "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn a_large_record_no_pass_decodes_yet_fails_nothing() {
    // Every compressed batch in the active segment: no pass reads it until it is sealed.
    let tmp = tempfile::tempdir().expect("tempdir");
    let part = tmp.path().join("kafka-logs").join("orders-0");
    let spec = common::PartitionSpec::mixed(20, 1, 10, 5, 0);
    common::write_kafka_partition(&part, &spec);
    let conf = tmp.path().join("topics.conf");
    std::fs::write(&conf, "[orders]\ncleanup.policy = compact\nmax.decompressed.message.bytes = 10\n")
        .expect("settings");
    let args = ["analyze", "--format", "kafka", "--dir", path(&part), "--config", path(&conf)];
    let out = logcompact(&args, "");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(!text.contains("max.decompressed.message.bytes ("), "{text}");
    let out = logcompact(&[&args[..], &["--json"]].concat(), "");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(v["largest_compressed_record"].is_null(), "{v}");
}
