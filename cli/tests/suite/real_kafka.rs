//! Against a real Apache Kafka 4.4 broker (`kafka-interop`: jars from Maven Central, one KRaft node on
//! loopback, topics of every codec written by the Java producer, transactions aborted and one left open, 20
//! consumer groups, a `delete` topic, the metadata log with sealed segments and raft snapshots):
//!
//! - the KRaft metadata log goes through every writing command untouched, and the broker starts after;
//! - `dump --style kafka-dump-log` prints what Kafka 4.4's own `DumpLogSegments` prints for every partition of
//!   the node (compacted ones after this tool compacted them), with each decoder on its internal topic, and for
//!   every segment of the log directory at once;
//! - `clean --format kafka` in place, then the broker restarted: no warning about any log, every partition
//!   loaded to the offset it had, `read_committed` sees every key's latest committed record and nothing that
//!   was not there at the same offset, `read_uncommitted` a subset of before, the `delete` topic untouched; a
//!   forced recovery of the cleaned node (no clean-shutdown marker, no recovery points) truncates nothing and
//!   gives the same view.
//!
//! Needs Java 17 and Maven (the first run resolves the jars into `target/`); `LOGCOMPACT_SKIP_KAFKA=1` skips
//! (refused under CI).

use std::collections::BTreeMap;
use std::path::Path;

use kafka_interop::{Kafka, Node, fixture};
use serde_json::Value;

use crate::common;
use crate::differential;
use common::{logcompact, path, stderr};

/// Every file under `root` with its bytes (directories as `None`), recursively.
fn tree(root: &Path) -> Vec<(String, Option<Vec<u8>>)> {
    let mut all = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(root).expect("list").flatten().map(|e| e.path()).collect();
    names.sort();
    for p in names {
        let name = p.file_name().expect("name").to_string_lossy().into_owned();
        if p.is_dir() {
            all.push((name.clone(), None));
            all.extend(tree(&p).into_iter().map(|(n, b)| (format!("{name}/{n}"), b)));
        } else {
            all.push((name, Some(std::fs::read(&p).expect("read"))));
        }
    }
    all
}

fn started(node: &mut Node) {
    node.start().unwrap_or_else(|e| panic!("the broker did not start: {e}"));
}

/// Records of a `Consume` run, by (isolation, topic, partition), each by offset.
type Views = BTreeMap<(String, String, u64), BTreeMap<i64, Value>>;

fn views<'a>(records: impl IntoIterator<Item = &'a Value>) -> Views {
    let mut all: Views = BTreeMap::new();
    for r in records {
        let key = (
            r["isolation"].as_str().unwrap_or_default().to_owned(),
            r["topic"].as_str().unwrap_or_default().to_owned(),
            r["partition"].as_u64().unwrap_or(0),
        );
        // What a record is, whatever batch it came in: its offset, timestamp, key, value and headers.
        let mut r = r.clone();
        if let Some(o) = r.as_object_mut() {
            o.remove("leader_epoch");
        }
        all.entry(key).or_default().insert(r["offset"].as_i64().unwrap_or(-1), r);
    }
    all
}

/// Reads every compacted partition of the fixture back from `node` under both isolation levels.
fn consume(node: &Node, f: &fixture::Fixture) -> Views {
    let mut args = vec!["--bootstrap".to_owned(), "{bootstrap}".into(), "--isolation".into(), "both".into()];
    for (topic, p) in fixture::compacted_partitions(&f.summary) {
        args.extend(["--tp".to_owned(), format!("{topic}:{p}")]);
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = node.tool("logcompact.interop.Consume", &refs).expect("java");
    let out = kafka_interop::succeeded("Consume", out).unwrap_or_else(|e| panic!("{e}"));
    let records: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    views(&records)
}

#[test]
fn the_metadata_log_of_a_real_node_is_never_written_and_the_broker_starts_after() {
    let Some(kafka) = Kafka::get() else { return };
    let f = fixture::main(kafka);
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut node = f.copy_to(tmp.path());
    let meta = node.partition("__cluster_metadata-0").expect("the metadata log lies in the first log dir");
    let names: Vec<String> = std::fs::read_dir(&meta)
        .expect("list")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().filter(|n| n.ends_with(".log")).count() >= 3, "sealed segments: {names:?}");
    assert!(names.iter().any(|n| n.ends_with(".checkpoint")), "raft snapshots: {names:?}");
    let before = tree(&meta);
    let data_dir = meta.parent().expect("log dir").to_path_buf();
    // The hint that once led here: a section naming it, cleanup.policy = compact.
    let conf = tmp.path().join("meta.conf");
    std::fs::write(&conf, "[__cluster_metadata]\ncleanup.policy = compact\n").expect("settings");
    let m = path(&meta);
    let out_dir = tmp.path().join("copy");
    let asks: Vec<Vec<&str>> = vec![
        vec!["clean", "--format", "kafka", "--data-dir", path(&data_dir), "--until-clean", "--config", path(&conf)],
        vec!["compact", "--format", "kafka", "--dir", m, "--until-clean"],
        vec!["compact", "--format", "kafka", "--dir", m, "--until-clean", "--map", "compact", "--purge"],
        vec!["compact", "--format", "kafka", "--dir", m, "--out", path(&out_dir)],
        vec!["repair", "--format", "kafka", "--dir", m, "--apply"],
        vec!["roll", "--format", "kafka", "--dir", m],
        vec!["compact", "--dir", m],
    ];
    for args in &asks {
        let out = logcompact(args, "");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{}: {err}", args.join(" "));
        assert!(err.contains("KRaft metadata log"), "{}: {err}", args.join(" "));
        assert_eq!(tree(&meta), before, "{}: the metadata log changed", args.join(" "));
    }
    // Every topic compacted: the metadata log is listed as never cleaned, the rest is cleaned.
    std::fs::write(&conf, "cleanup.policy = compact\n[unkeyed-delete]\ncleanup.policy = delete\n").expect("settings");
    let out = logcompact(
        &["clean", "--format", "kafka", "--data-dir", path(&data_dir), "--until-clean", "--config", path(&conf)],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("__cluster_metadata-0: the cluster's metadata log: never cleaned"),
        "{}",
        stderr(&out)
    );
    assert_eq!(tree(&meta), before, "the metadata log changed");
    started(&mut node);
    let found = node.load_findings();
    assert!(found.failures.is_empty() && found.unexpected.is_empty(), "{found:#?}");
    let topics = node.tool("logcompact.interop.Topics", &["--bootstrap", "{bootstrap}"]).expect("java");
    let topics: Value =
        serde_json::from_slice(&kafka_interop::succeeded("Topics", topics).expect("Topics").stdout).expect("json");
    let names: Vec<&str> =
        topics["topics"].as_array().expect("topics").iter().filter_map(|t| t["name"].as_str()).collect();
    for t in f.topic_configs().keys() {
        assert!(names.contains(&t.as_str()), "topic {t} is there after the restart: {names:?}");
    }
    node.stop().expect("stop");
}

#[test]
fn a_cleaned_node_restarts_clean_and_its_consumers_see_what_kafka_guarantees() {
    let Some(kafka) = Kafka::get() else { return };
    round_trip(kafka, fixture::main(kafka));
}

#[test]
fn a_node_of_transaction_version_1_round_trips_and_cleans_as_kafka() {
    let Some(kafka) = Kafka::get() else { return };
    let f = fixture::transaction_version_1(kafka);
    round_trip(kafka, f);
    same_as_kafkas_cleaner(kafka, f);
}

/// `clean` of every log dir of a copy of `f`'s node in place, with no settings given (each topic's own come
/// from the broker's metadata log); the broker restarted over it; then a forced recovery of a copy of the
/// cleaned node.
fn round_trip(kafka: &'static Kafka, f: &fixture::Fixture) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut node = f.copy_to(tmp.path());
    let untouched = node.partition("unkeyed-delete-0").expect("the delete topic");
    let delete_before = tree(&untouched);
    let mut cleaned = Vec::new();
    for d in node.log_dirs() {
        let out = logcompact(&["clean", "--format", "kafka", "--data-dir", path(&d), "--until-clean", "--json"], "");
        assert_eq!(out.status.code(), Some(0), "{}: {}", d.display(), stderr(&out));
        assert!(stderr(&out).contains("topic settings from the broker's metadata log"), "{}", stderr(&out));
        for line in common::stdout(&out).lines() {
            let event: Value = serde_json::from_str(line).expect("a JSON line");
            if let Some(log) = event["log"].as_str() {
                cleaned.push(log.to_owned());
            }
        }
    }
    assert_eq!(tree(&untouched), delete_before, "the delete topic is untouched");
    for (topic, p) in fixture::compacted_partitions(&f.summary) {
        let name = format!("{topic}-{p}");
        let dir = f.node_dir.join(node.partition(&name).expect("partition").strip_prefix(&node.dir).expect("inside"));
        let segments = std::fs::read_dir(&dir)
            .expect("list")
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
            .count();
        // Every partition with a closed segment and no compaction lag (codec-snappy's is 10 minutes, which a
        // fixture produced a minute ago has not passed) was cleanable.
        let lag = f.topic_configs().get(&topic).and_then(|c| c.get("min.compaction.lag.ms").cloned());
        if segments > 1 && lag.is_none_or(|l| l == "0") {
            assert!(cleaned.contains(&name), "{name} was cleaned with its own settings: {cleaned:?}");
        }
    }
    started(&mut node);
    let found = node.load_findings();
    assert!(found.failures.is_empty(), "{:#?}", found.failures);
    assert!(found.unexpected.is_empty(), "{:#?}", found.unexpected);
    let after = consume(&node, f);
    check_views(f, &after);
    let ends = f.log_end_offsets();
    assert!(ends.len() >= 12, "{ends:?}");
    for (name, end) in &ends {
        let load = found.loads.get(name).unwrap_or_else(|| panic!("{name} was not loaded: {:?}", found.loads));
        assert_eq!(load.log_end, *end, "{name}: {load:?}");
    }
    node.stop().expect("stop");

    // Forced recovery of the cleaned node: every batch judged again, nothing truncated, the same view.
    let copy = tempfile::tempdir().expect("tempdir");
    kafka_interop::copy_tree(&node.dir, &copy.path().join("node")).expect("copy");
    let mut recovered = Node::open(kafka, &copy.path().join("node")).expect("open");
    recovered.force_recovery().expect("no markers");
    started(&mut recovered);
    let again = recovered.load_findings();
    assert!(again.failures.is_empty(), "{:#?}", again.failures);
    for (name, load) in &found.loads {
        assert_eq!(again.loads.get(name).map(|l| l.log_end), Some(load.log_end), "{name}");
    }
    assert_eq!(consume(&recovered, f), after, "the same view after a forced recovery");
    recovered.stop().expect("stop");
}

/// `clean --format kafka` of the fixture node's second log dir, two threads and a small buffer (many passes,
/// so that kills land inside the run's swaps), with its settings from the broker's metadata log.
fn clean_command(data: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(common::bin());
    c.args(["clean", "--format", "kafka", "--data-dir", path(data), "--until-clean", "--json", "--threads", "2"])
        .args(["--dedupe-buffer", "24KiB"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    c
}

#[test]
fn a_clean_killed_mid_run_leaves_what_the_broker_loads_without_a_warning() {
    let Some(kafka) = Kafka::get() else { return };
    let f = fixture::main(kafka);
    // How many event lines a whole run prints (which partitions a run takes depends on the fixture's age: a
    // topic's compaction lag may not have passed yet): the kills follow them.
    let whole = {
        let tmp = tempfile::tempdir().expect("tempdir");
        let node = f.copy_to(tmp.path());
        let out = clean_command(&node.log_dirs()[1]).output().expect("run");
        assert!(out.status.success());
        common::stdout(&out).lines().count()
    };
    assert!(whole >= 4, "a run of {whole} lines leaves no room for kills inside it");
    let mut landed = 0;
    for (moment, lines) in [(0, 1usize), (1, whole / 2), (2, whole - 2)] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut node = f.copy_to(tmp.path());
        let data = node.log_dirs()[1].clone();
        let extra = std::time::Duration::from_millis(3 * moment);
        landed += usize::from(common::kill::kill_after_lines(clean_command(&data), lines, extra));
        started(&mut node);
        let found = node.load_findings();
        assert!(found.failures.is_empty(), "moment {moment}: {:#?}", found.failures);
        assert!(found.unexpected.is_empty(), "moment {moment}: {:#?}", found.unexpected);
        check_views(f, &consume(&node, f));
        node.stop().expect("stop");
    }
    assert!(landed >= 2, "only {landed} of 3 kills landed while the clean ran");
}

#[test]
fn the_abort_command_analyze_prints_ends_the_open_transaction() {
    let Some(kafka) = Kafka::get() else { return };
    let f = fixture::main(kafka);
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut node = f.copy_to(tmp.path());
    let dir = node.partition("txn-0").expect("txn-0");
    let out = logcompact(&["analyze", "--format", "kafka", "--dir", path(&dir)], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = common::stdout(&out) + &stderr(&out);
    let command = text
        .lines()
        .find_map(|l| l.split_once("kafka-transactions.sh ").map(|(_, c)| c.to_owned()))
        .unwrap_or_else(|| panic!("no abort command in {text}"));
    let hang = &f.hang["partitions"][0];
    let start = hang["current_txn_start_offset"].as_i64().expect("start");
    assert!(command.contains(&format!("{start}")) || command.contains(&hang["producer_id"].to_string()), "{command}");
    started(&mut node);
    let lso = |node: &Node| {
        let out = node
            .tool(
                "logcompact.interop.Consume",
                &["--bootstrap", "{bootstrap}", "--tp", "txn:0", "--isolation", "read_committed"],
            )
            .expect("java");
        let out = kafka_interop::succeeded("Consume", out).expect("consume");
        let summary: Value =
            serde_json::from_str(String::from_utf8_lossy(&out.stderr).lines().last().expect("summary")).expect("json");
        summary["end_offset"].as_i64().expect("end offset")
    };
    assert_eq!(lso(&node), start, "the open transaction holds the last stable offset");
    let args: Vec<String> = command.split_whitespace().map(|a| a.replace("<broker:9092>", "{bootstrap}")).collect();
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = node.tool("org.apache.kafka.tools.TransactionsCommand", &refs).expect("java");
    kafka_interop::succeeded(&format!("kafka-transactions.sh {command}"), out).unwrap_or_else(|e| panic!("{e}"));
    assert!(lso(&node) > start, "the abort moved the last stable offset past the transaction");
    node.stop().expect("stop");
}

/// What Kafka guarantees a compacted partition's consumers: under read_committed every key's latest committed
/// record (at its offset, with its value and headers) and only records that were there at the same offset;
/// under read_uncommitted a subset of before.
fn check_views(f: &fixture::Fixture, after: &Views) {
    let before = views(&f.before);
    for ((isolation, topic, p), records) in after {
        let was = &before[&(isolation.clone(), topic.clone(), *p)];
        for (offset, r) in records {
            assert_eq!(was.get(offset), Some(r), "{isolation} {topic}-{p}: offset {offset} was not there as it is now");
        }
    }
    for e in &f.expect {
        let (topic, p, offset) = (
            e["topic"].as_str().expect("topic"),
            e["partition"].as_u64().expect("p"),
            e["offset"].as_i64().expect("o"),
        );
        let got = after.get(&("read_committed".to_owned(), topic.to_owned(), p)).and_then(|v| v.get(&offset));
        let got =
            got.unwrap_or_else(|| panic!("{topic}-{p}: the latest committed record of its key, at {offset}, is gone"));
        assert_eq!((&got["key"], &got["value"]), (&e["key"], &e["value"]), "{topic}-{p} at {offset}");
    }
}

/// The settings of every topic as the broker holds them (`Topics`' overrides), by topic.
fn overrides(f: &fixture::Fixture) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut all = BTreeMap::new();
    for t in f.topics["topics"].as_array().expect("topics") {
        let o: BTreeMap<String, String> = t["overrides"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
            .collect();
        all.insert(t["name"].as_str().expect("name").to_owned(), o);
    }
    all
}

/// Files a cleaning pass writes (segments and their indexes), with their bytes, by name.
fn segment_files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .expect("list")
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let ours = [".log", ".index", ".timeindex", ".txnindex"].iter().any(|s| name.ends_with(s));
            ours.then(|| (name, std::fs::read(e.path()).expect("read")))
        })
        .collect()
}

/// Where the two directories' segment files differ: a name on one side only, or other bytes.
fn differences(kafka: &BTreeMap<String, Vec<u8>>, ours: &BTreeMap<String, Vec<u8>>) -> Vec<String> {
    let mut found = Vec::new();
    for (name, k) in kafka {
        match ours.get(name) {
            None => found.push(format!("{name}: only Kafka's cleaner wrote it ({} bytes)", k.len())),
            Some(o) if o != k => {
                let at = k.iter().zip(o).position(|(a, b)| a != b).unwrap_or(k.len().min(o.len()));
                found.push(format!(
                    "{name}: {} bytes against Kafka's {}, first difference at byte {at}",
                    o.len(),
                    k.len()
                ));
            }
            Some(_) => {}
        }
    }
    for (name, o) in ours {
        if !kafka.contains_key(name) {
            found.push(format!("{name}: only ours wrote it ({} bytes)", o.len()));
        }
    }
    found
}

#[test]
fn every_partition_cleaned_as_kafkas_own_cleaner_cleans_it_byte_for_byte() {
    let Some(kafka) = Kafka::get() else { return };
    same_as_kafkas_cleaner(kafka, fixture::main(kafka));
}

/// Kafka's own cleaner offline and `compact` on copies of every compacted partition of `f`, with the same
/// settings and clock: the same segment files, byte for byte (snappy: the same batches and records).
fn same_as_kafkas_cleaner(kafka: &'static Kafka, f: &fixture::Fixture) {
    let copy = tempfile::tempdir().expect("tempdir");
    let node = f.copy_to(copy.path());
    let settings = overrides(f);
    let metadata = node.partition("__cluster_metadata-0").expect("the metadata log");
    let now = f.produced_ms + 3_600_000;
    let now_text = now.to_string();
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut report = Vec::new();
    for (name, dir) in node.partitions() {
        let Some((topic, _)) = log_core::kafka::topic_partition(&name) else { continue };
        let Some(configs) = settings.get(topic) else { continue };
        if configs.get("cleanup.policy").is_none_or(|p| !p.contains("compact")) {
            continue;
        }
        let (kafka_side, ours) = (tmp.path().join("kafka").join(&name), tmp.path().join("ours").join(&name));
        for side in [&kafka_side, &ours] {
            std::fs::create_dir_all(side.parent().expect("parent")).expect("mkdir");
            kafka_interop::copy_tree(&dir, side).expect("copy");
        }
        let pairs: Vec<String> = configs.iter().map(|(k, v)| format!("{k}={v}")).collect();
        kafka
            .offline_clean(&[], &kafka_side, now, 16 << 20, &pairs, &["--until-clean"])
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        // No settings given: each from the broker's metadata log, as the topic's own.
        let out = logcompact(
            &[
                "compact",
                "--format",
                "kafka",
                "--dir",
                path(&ours),
                "--until-clean",
                "--now-ms",
                &now_text,
                "--dedupe-buffer",
                "16MiB",
                "--metadata-dir",
                path(&metadata),
            ],
            "",
        );
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        let mut found = if codec_of(f, topic) == "snappy" {
            // snappy-java's C++ snappy 1.1.10 picks other matches than `snap` in some blocks (no crate builds
            // that version): the same files, batches and records, other compressed bytes (docs/kafka.md).
            let names = |d: &Path| segment_files(d).into_keys().collect::<Vec<_>>();
            let mut found = Vec::new();
            if names(&kafka_side) != names(&ours) {
                found.push(format!("other files: {:?} against Kafka's {:?}", names(&ours), names(&kafka_side)));
            }
            if records_of(&kafka_side) != records_of(&ours) {
                found.push("other batches or records".into());
            }
            found
        } else {
            differences(&segment_files(&kafka_side), &segment_files(&ours))
        };
        if !found.is_empty() {
            found.push(smallest_case(kafka, &dir, configs, now));
        }
        report.push((name, found));
    }
    let bad: Vec<String> =
        report.iter().filter(|(_, d)| !d.is_empty()).map(|(n, d)| format!("{n}:\n  {}", d.join("\n  "))).collect();
    assert!(report.len() >= 11, "{report:?}");
    assert!(
        bad.is_empty(),
        "cleaned segments differ from Kafka's own cleaner's on the fixture of seed {} ({}):\n{}",
        f.summary["seed"],
        f.node_dir.display(),
        bad.join("\n")
    );
}

/// The partition in `dir` (a broker wrote it) as a differential case, shrunk to the smallest that still differs
/// from Kafka's cleaner, as a line to commit under `tests/differential/regressions/`; or why it could not be.
fn smallest_case(kafka: &'static Kafka, dir: &Path, configs: &BTreeMap<String, String>, now: i64) -> String {
    let number = |k: &str, default: i64| configs.get(k).and_then(|v| v.parse().ok()).unwrap_or(default);
    let settings = differential::import::Settings {
        now_ms: now,
        buffer_bytes: 16 << 20,
        segment_bytes: number("internal.segment.bytes", number("segment.bytes", 1 << 30)) as u64,
        delete_retention_ms: number("delete.retention.ms", 86_400_000),
        min_compaction_lag_ms: number("min.compaction.lag.ms", 0),
    };
    let case = match differential::import::from_partition(dir, &settings) {
        Ok(c) => c,
        Err(e) => return format!("(the partition could not be read as a differential case: {e})"),
    };
    let mut judge = differential::run::Judge::new(kafka, common::bin());
    let failing = |v: &differential::run::Verdict| matches!(v, differential::run::Verdict::Differ(_));
    if !failing(&judge.judge(&case, "skimpy")) {
        return "(as a differential case, rewritten by this project's writer, it no longer differs)".into();
    }
    let small = differential::run::shrink(&mut judge, &case, "skimpy", failing);
    format!("smallest case that differs: {}", serde_json::json!({ "map": "skimpy", "case": small }))
}

/// The codec a topic's producer wrote with (`none` for the internal topics).
fn codec_of<'a>(f: &'a fixture::Fixture, topic: &str) -> &'a str {
    f.summary["topics"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["name"] == topic)
        .and_then(|t| t["compression"].as_str())
        .unwrap_or("none")
}

/// Every batch of a partition as `dump --json` reads it, without what depends on the compressed bytes (the
/// batch's length and CRC, its size and position in the segment).
fn records_of(dir: &Path) -> Vec<Value> {
    let out = logcompact(&["dump", "--format", "kafka", "--json", "--dir", path(dir)], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let batches = v["batches"].as_array_mut().expect("batches");
    for b in batches.iter_mut() {
        let o = b.as_object_mut().expect("batch");
        o.remove("size");
        o.remove("position");
        if let Some(h) = o.get_mut("header").and_then(Value::as_object_mut) {
            h.remove("batch_length");
            h.remove("crc");
        }
    }
    batches.clone()
}

#[test]
fn a_delete_topic_is_never_compacted_and_its_unkeyed_records_are_never_dropped_unasked() {
    let Some(kafka) = Kafka::get() else { return };
    let f = fixture::main(kafka);
    let tmp = tempfile::tempdir().expect("tempdir");
    let node = f.copy_to(tmp.path());
    let part = node.partition("unkeyed-delete-0").expect("the delete topic");
    let before = tree(&part);
    // In place: the broker's metadata says delete.
    let out = logcompact(&["compact", "--format", "kafka", "--dir", path(&part), "--until-clean"], "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("cleanup.policy is delete (broker: topic config"), "{}", stderr(&out));
    assert_eq!(tree(&part), before);
    // A copy where no metadata is found: nothing says the topic is compacted, so nothing is compacted on a
    // guess; --cleanup-policy compact asks for it, and its records without a key are then kept unless
    // --drop-invalid says otherwise.
    let copy = tmp.path().join("elsewhere").join("unkeyed-delete-0");
    std::fs::create_dir_all(copy.parent().expect("parent")).expect("mkdir");
    kafka_interop::copy_tree(&part, &copy).expect("copy");
    let copied = tree(&copy);
    let out = logcompact(&["compact", "--format", "kafka", "--dir", path(&copy), "--until-clean"], "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("nothing here says whether topic unkeyed-delete is compacted"), "{}", stderr(&out));
    assert_eq!(tree(&copy), copied, "nothing was changed");
    let asked = ["compact", "--format", "kafka", "--cleanup-policy", "compact", "--dir", path(&copy), "--until-clean"];
    let out = logcompact(&asked, "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("without a key") && stderr(&out).contains("--drop-invalid"), "{}", stderr(&out));
    assert_eq!(tree(&copy), copied, "nothing was changed");
    let out = logcompact(&[&asked[..], &["--drop-invalid"]].concat(), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// Kafka 4.4's `DumpLogSegments` and `dump --style kafka-dump-log` with the same arguments in the same
/// working directory: standard output byte for byte, standard error but for the JVM's stack frames, the same
/// exit status. Returns a description of the difference, if any.
fn dump_difference(kafka: &'static Kafka, cwd: &Path, args: &[&str]) -> Option<String> {
    let theirs = kafka
        .java("org.apache.kafka.tools.DumpLogSegments")
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run DumpLogSegments");
    let ours = std::process::Command::new(common::bin())
        .args(["dump", "--format", "kafka", "--style", "kafka-dump-log"])
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run logcompact");
    let frames = |b: &[u8]| -> Vec<u8> {
        b.split_inclusive(|&c| c == b'\n').filter(|l| !l.starts_with(b"\t")).flatten().copied().collect()
    };
    let first = |a: &[u8], b: &[u8]| {
        let (a, b): (Vec<&[u8]>, Vec<&[u8]>) = (a.split(|&c| c == b'\n').collect(), b.split(|&c| c == b'\n').collect());
        a.iter().zip(&b).position(|(x, y)| x != y).map_or_else(
            || format!("{} lines, Kafka {}", a.len(), b.len()),
            |i| {
                format!(
                    "line {}:\n  ours:  {}\n  Kafka: {}",
                    i + 1,
                    String::from_utf8_lossy(a[i]),
                    String::from_utf8_lossy(b[i])
                )
            },
        )
    };
    let mut problems = Vec::new();
    if ours.status.code() != theirs.status.code() {
        problems.push(format!("exit {:?}, Kafka {:?}", ours.status.code(), theirs.status.code()));
    }
    if ours.stdout != theirs.stdout {
        problems.push(format!("standard output, {}", first(&ours.stdout, &theirs.stdout)));
    }
    if ours.stderr != frames(&theirs.stderr) {
        problems.push(format!("standard error, {}", first(&ours.stderr, &frames(&theirs.stderr))));
    }
    (!problems.is_empty()).then(|| format!("{} in {}: {}", args.join(" "), cwd.display(), problems.join("; ")))
}

/// The names of the files of `dir` with one of `suffixes`, in name order.
fn names_of(dir: &Path, suffixes: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| suffixes.iter().any(|s| n.ends_with(s)))
        .collect();
    names.sort();
    names
}

#[test]
fn kafka_dump_log_style_prints_what_kafkas_own_dump_log_segments_prints_on_a_real_node() {
    let Some(kafka) = Kafka::get() else { return };
    let f = fixture::main(kafka);
    let copy = tempfile::tempdir().expect("tempdir");
    let node = f.copy_to(copy.path());
    let settings = overrides(f);
    let mut differences = Vec::new();
    let mut all_logs: Vec<String> = Vec::new();
    let log_dir = node.log_dirs().into_iter().next().expect("a log dir");
    for (name, dir) in node.partitions() {
        // Compacted partitions after this tool compacted them: gaps between offsets, its own indexes.
        let compacted = log_core::kafka::topic_partition(&name)
            .and_then(|(topic, _)| settings.get(topic))
            .is_some_and(|c| c.get("cleanup.policy").is_some_and(|p| p.contains("compact")));
        if compacted {
            let out = logcompact(
                &["compact", "--format", "kafka", "--dir", path(&dir), "--until-clean", "--delete-retention-ms", "0"],
                "",
            );
            assert!(out.status.success(), "compact {name}: {}", stderr(&out));
        }
        let files = names_of(&dir, &[".log", ".index", ".timeindex", ".txnindex", ".snapshot", ".checkpoint"]);
        let joined = files.join(",");
        let mut runs: Vec<Vec<&str>> = vec![vec!["--deep-iteration", "--print-data-log", "--files", &joined]];
        let logs = names_of(&dir, &[".log", ".checkpoint"]).join(",");
        let decoder = match name.as_str() {
            n if n.starts_with("__consumer_offsets-") => Some("--offsets-decoder"),
            n if n.starts_with("__transaction_state-") => Some("--transaction-log-decoder"),
            n if n.starts_with("__cluster_metadata-") => Some("--cluster-metadata-decoder"),
            _ => None,
        };
        if let Some(d) = decoder {
            runs.push(vec![d, "--files", &logs]);
        }
        for args in &runs {
            differences.extend(dump_difference(kafka, &dir, args));
        }
        if dir.parent() == Some(log_dir.as_path()) {
            all_logs.extend(names_of(&dir, &[".log"]).into_iter().map(|l| format!("{name}/{l}")));
        }
    }
    // Every segment of the log directory at once: many files in the summaries, in Kafka's HashMap order.
    let joined = all_logs.join(",");
    differences.extend(dump_difference(kafka, &log_dir, &["--deep-iteration", "--print-data-log", "--files", &joined]));
    assert!(all_logs.len() > 16, "enough files to grow Kafka's map: {}", all_logs.len());
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

#[test]
fn max_decompressed_message_bytes_fails_a_pass_where_kafkas_cleaner_fails() {
    let Some(kafka) = Kafka::get() else { return };
    let f = fixture::main(kafka);
    let tmp = tempfile::tempdir().expect("tempdir");
    let source = f.node_dir.join(
        f.copy_to(tmp.path())
            .partition("codec-gzip-0")
            .expect("gzip")
            .strip_prefix(tmp.path().join("node"))
            .expect("inside"),
    );
    let (kafka_side, ours) = (tmp.path().join("k").join("codec-gzip-0"), tmp.path().join("o").join("codec-gzip-0"));
    for side in [&kafka_side, &ours] {
        std::fs::create_dir_all(side.parent().expect("parent")).expect("mkdir");
        kafka_interop::copy_tree(&source, side).expect("copy");
    }
    let configs = [
        "cleanup.policy=compact".to_owned(),
        "internal.segment.bytes=65536".into(),
        "max.decompressed.message.bytes=300".into(),
    ];
    let kafka_says =
        kafka.offline_clean(&[], &kafka_side, f.produced_ms + 3_600_000, 16 << 20, &configs, &["--until-clean"]);
    let kafka_says = kafka_says.expect_err("Kafka's cleaner fails on a record over the limit").to_string();
    let size = kafka_says
        .split("Invalid record size: ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .expect("its size")
        .to_owned();
    let conf = tmp.path().join("topics.conf");
    std::fs::write(&conf, "[codec-gzip]\ncleanup.policy = compact\nmax.decompressed.message.bytes = 300\n")
        .expect("settings");
    let before = tree(&ours);
    // check predicts it (the data intact: exit 0, with a warning naming a record at least that large).
    let out = logcompact(&["check", "--format", "kafka", "--dir", path(&ours), "--config", path(&conf)], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let warned: u64 = stderr(&out)
        .split("warning: ")
        .nth(1)
        .and_then(|w| w.split(" bytes decoded, over the topic's max.decompressed.message.bytes 300").next())
        .and_then(|w| w.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("check warns of the record Kafka's cleaner fails on: {}", stderr(&out)));
    assert!(warned >= size.parse::<u64>().expect("Kafka's size"), "{warned} against Kafka's {size}");
    let out = logcompact(
        &["compact", "--format", "kafka", "--dir", path(&ours), "--until-clean", "--config", path(&conf)],
        "",
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("is {size} bytes, over max.decompressed.message.bytes (300)")),
        "Kafka: {kafka_says}\nours: {}",
        stderr(&out)
    );
    assert_eq!(tree(&ours), before, "nothing changed");
    // Within the limit both clean.
    std::fs::write(&conf, "[codec-gzip]\ncleanup.policy = compact\nmax.decompressed.message.bytes = 100000\n")
        .expect("settings");
    let out = logcompact(
        &["compact", "--format", "kafka", "--dir", path(&ours), "--until-clean", "--config", path(&conf)],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
