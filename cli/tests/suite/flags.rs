//! No flag is ever silently ignored: each of these was once accepted and did nothing (or something else than
//! its help says); now it is used, or refused with exit 2 naming it, and nothing is changed.

use crate::common;
use common::{contents, kafka_partition, logcompact, path, stderr, stdout};

#[test]
fn flags_that_cannot_apply_are_refused_naming_them_and_change_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let native = tmp.path().join("native");
    let script = "PUT a 1\nPUT a 2\nPUT b 1\nROLL\nPUT c 1\n";
    assert!(logcompact(&["run", "--backend", "file", "--dir", path(&native), "-"], script).status.success());
    let part = tmp.path().join("kafka-logs").join("orders-0");
    kafka_partition(&part, 10, 3, 2, 10);
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).expect("mkdir");
    assert!(std::fs::rename(&native, data.join("a")).is_ok());
    let native = data.join("a");
    let before = (contents(&native), contents(&part));
    let (n, k) = (path(&native), path(&part));
    for (args, needle) in [
        (vec!["advise", "--keys", "10", "--format", "kafka"], "--format"),
        // Fewer records than distinct keys cannot be: refused, not ignored.
        (vec!["advise", "--records", "10", "--keys", "50000000"], "--records"),
        (vec!["advise", "--keys", "10", "--checkpoint", "5"], "--checkpoint"),
        (vec!["advise", "--dir", n, "--key-bytes", "1000"], "--key-bytes"),
        (vec!["advise", "--dir", n, "--checkpoint", "99999"], "--checkpoint 99999 is past the end"),
        (
            vec!["analyze", "--format", "native", "--dir", n, "--checkpoint", "99999"],
            "--checkpoint 99999 is past the end",
        ),
        (vec!["analyze", "--dir", k, "--delete-retention-ms", "5"], "--delete-retention-ms"),
        (vec!["compact", "--dir", n, "--checkpoint", "99999"], "--checkpoint 99999 is past the end"),
        (
            vec!["compact", "--format", "kafka", "--cleanup-policy", "compact", "--dir", k, "--checkpoint", "99999"],
            "past the end",
        ),
        (
            vec!["compact", "--dir", n, "--min-compaction-lag-ms", "-5"],
            "min.compaction.lag.ms = -5 (--min-compaction-lag-ms)",
        ),
        (crate::common::compact_kafka(k, &["--min-compaction-lag-ms", "-5"]), "at least 0"),
        (vec!["clean", "--data-dir", path(&data), "--until-clean", "--backoff-ms", "5000"], "--backoff-ms"),
        // A broker's settings with the native format: there is no broker to read.
        (vec!["compact", "--dir", n, "--metadata-dir", k], "--metadata-dir reads a Kafka broker's settings"),
        (vec!["advise", "--dir", n, "--broker-config", k], "--broker-config reads a Kafka broker's settings"),
        (vec!["analyze", "--format", "native", "--dir", n, "--metadata-dir", k], "--metadata-dir reads"),
        (vec!["analyze", "--format", "native", "--data-dir", path(&data), "--metadata-dir", k], "--metadata-dir reads"),
        (vec!["status", "--data-dir", path(&data), "--metadata-dir", k], "--metadata-dir reads"),
        (vec!["clean", "--data-dir", path(&data), "--until-clean", "--broker-config", k], "--broker-config reads"),
        // Kafka's segment.bytes is an int: a 3 GiB segment would get negative index positions.
        (
            vec!["compact", "--format", "kafka", "--cleanup-policy", "compact", "--dir", k, "--segment-bytes", "3GiB"],
            "segment.bytes",
        ),
    ] {
        let out = logcompact(&args, "");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
        assert_eq!((contents(&native), contents(&part)), before, "{args:?} changed nothing");
    }
}

#[test]
fn hints_for_a_kafka_partition_name_the_format() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let part = tmp.path().join("kafka-logs").join("orders-0");
    kafka_partition(&part, 10, 3, 2, 10);
    let seg = part.join(format!("{:020}.log", 0));
    let mut bytes = std::fs::read(&seg).expect("read");
    let at = bytes.len() / 4;
    bytes[at] ^= 0x10;
    std::fs::write(&seg, &bytes).expect("write");
    let out = logcompact(&["check", "--format", "kafka", "--dir", path(&part)], "");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let hint = format!("`logcompact repair --dir {} --format kafka`", part.display());
    assert!(stderr(&out).contains(&hint), "{}", stderr(&out));
}

#[test]
fn a_kafka_copy_outside_a_log_directory_says_its_checkpoint_is_not_kept() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let part = tmp.path().join("kafka-logs").join("orders-0");
    kafka_partition(&part, 10, 3, 2, 10);
    let out_dir = tmp.path().join("copies").join("orders-0");
    std::fs::create_dir(tmp.path().join("copies")).expect("mkdir");
    let out = logcompact(
        &["compact", "--format", "kafka", "--cleanup-policy", "compact", "--dir", path(&part), "--out", path(&out_dir)],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("the cleaner checkpoint is kept in memory for this run only"), "{}", stderr(&out));
    assert!(!tmp.path().join("copies").join("cleaner-offset-checkpoint").exists());
    // In place, inside its log directory, it is kept there, and no note says otherwise.
    let out = logcompact(&["compact", "--format", "kafka", "--cleanup-policy", "compact", "--dir", path(&part)], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("the cleaner checkpoint is"), "{}", stderr(&out));
    assert!(tmp.path().join("kafka-logs").join("cleaner-offset-checkpoint").exists());
}

#[test]
fn every_kafka_topic_compacts_under_a_top_level_policy_and_a_partition_section_is_told_apart() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("kafka-logs");
    kafka_partition(&root.join("payments-0"), 10, 3, 2, 10);
    let settings = tmp.path().join("topics.conf");
    std::fs::write(&settings, "cleanup.policy = compact\n[payments-0]\n").expect("settings");
    let before = contents(&root.join("payments-0"));
    let out = logcompact(
        &["clean", "--format", "kafka", "--data-dir", path(&root), "--until-clean", "--config", path(&settings)],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("sections name topics: [payments] applies to every payments-N"), "{}", stderr(&out));
    assert_ne!(contents(&root.join("payments-0")), before, "compacted: every topic is");
}

#[test]
fn advice_for_kafkas_own_map_counts_kafkas_two_gib_cap_on_a_threads_buffer() {
    let out = logcompact(&["advise", "--keys", "500M", "--dedupe-buffer", "16GiB", "--json"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let row = |map: &str| rows.as_array().expect("rows").iter().find(|r| r["map"] == map).cloned().expect("row");
    let (skimpy, compact) = (row("skimpy"), row("compact"));
    let cap = skimpy["kafka_thread_cap"].as_u64().expect("a cap for skimpy");
    assert_eq!(skimpy["capacity"].as_u64(), Some(cap), "a 16 GiB buffer holds what 2 GiB holds, in Kafka");
    assert_eq!(skimpy["buffer_bytes"].as_u64(), Some(i32::MAX as u64));
    assert!(compact["kafka_thread_cap"].is_null() && compact["capacity"].as_u64() > Some(cap * 4));
    let text = stdout(&logcompact(&["advise", "--keys", "500M", "--dedupe-buffer", "16GiB"], ""));
    assert!(text.contains("* skimpy as Kafka runs it") && text.contains(&format!("holds {cap} keys")), "{text}");
}

#[test]
fn advise_recommends_the_external_pass_when_every_map_takes_several_passes() {
    let out = common::logcompact(&["advise", "--keys", "10M", "--records", "40M", "--dedupe-buffer", "16MiB"], "");
    let text = common::stdout(&out);
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert!(text.lines().any(|l| l.starts_with("external") && l.contains(" 1 ")), "{text}");
    assert!(text.contains("--map external cleans it in one pass (about"), "{text}");
    // A buffer that holds the keys: no such line.
    let out = common::logcompact(&["advise", "--keys", "10M", "--records", "40M", "--dedupe-buffer", "1GiB"], "");
    assert!(!common::stdout(&out).contains("--map external cleans it"), "{}", common::stdout(&out));
}

#[test]
fn audit_compare_refuses_the_flags_of_an_audit_of_a_broker() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (a, b) = (tmp.path().join("a.audit"), tmp.path().join("b.audit"));
    for extra in [["--tmp-dir", "/tmp"], ["--memory-keys", "5"], ["--summary", "--json"], ["--partition", "t-0"]] {
        let mut args = vec!["audit", "--compare", path(&a), path(&b)];
        args.extend(extra);
        let out = logcompact(&args, "");
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(extra[0]), "{extra:?} is named: {}", stderr(&out));
    }
}
