//! Replicas that disagree for good, on a real three-broker Kafka 4.4 cluster (issue 43): a follower stopped
//! while keys are deleted, the leader's cleaner removing the old values and then the tombstones, the follower
//! restarted. Kafka serves the deleted keys again once that follower leads; `audit --compare` names the keys
//! (by the offsets of the records that came back) and the replica; `refetch` on it makes the replicas agree
//! again. Then our own cleaner, run offline on a broker while another is down: without the other replicas'
//! audits it causes the same divergence (its removal is timed as Kafka's), with them (`--replica-audits`) it
//! does not.
//!
//! Needs Java 17 and Maven, as every real-broker test (`LOGCOMPACT_SKIP_KAFKA=1` skips, refused under CI).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kafka_interop::{Cluster, Kafka, NodeSpec};
use serde_json::Value;

use crate::common::{kafka_records, logcompact, path, stderr, stdout};

/// Broker settings that let a cleaner remove a tombstone within seconds.
fn fast_cleaner() -> NodeSpec {
    NodeSpec {
        log_dirs: 1,
        transaction_version: None,
        extra: [
            "log.cleaner.enable=true",
            "log.cleaner.backoff.ms=200",
            "log.cleaner.dedupe.buffer.size=8388608",
            "log.segment.delete.delay.ms=0",
            "replica.high.watermark.checkpoint.interval.ms=200",
            "replica.lag.time.max.ms=10000",
            // A marker holding its producer's last write stays until the producer expires (Kafka keeps each
            // active producer's last batch): producers expire within seconds here.
            "producer.id.expiration.ms=2000",
            "producer.id.expiration.check.interval.ms=500",
        ]
        .map(str::to_owned)
        .to_vec(),
    }
}

const TOPIC_CONFIGS: [&str; 10] = [
    "--config",
    "cleanup.policy=compact",
    "--config",
    "delete.retention.ms=1000",
    "--config",
    "segment.ms=300",
    "--config",
    "min.cleanable.dirty.ratio=0.01",
    "--config",
    "min.compaction.lag.ms=0",
];

fn step(cluster: &Cluster, name: &str, args: &[&str]) -> String {
    cluster.step(name, args).unwrap_or_else(|e| panic!("{name} {args:?}: {e}"))
}

/// The log directory of node `id`.
fn log_dir(cluster: &mut Cluster, id: u32) -> PathBuf {
    cluster.node(id).log_dirs().into_iter().next().expect("a log dir")
}

/// Audits node `id` (running) into `out`.
fn audit(cluster: &mut Cluster, id: u32, out: &Path) {
    let dir = log_dir(cluster, id);
    let o = logcompact(&["audit", "--data-dir", path(&dir), "--out", path(out)], "");
    assert!(o.status.success(), "audit of broker {id}: {}", stderr(&o));
}

/// `audit --compare` of the files, as JSON, with its exit code.
fn compare(files: &[&Path]) -> (Value, Option<i32>, String) {
    let mut args = vec!["audit", "--json", "--compare"];
    args.extend(files.iter().map(|f| path(f)));
    let o = logcompact(&args, "");
    let mut human_args = vec!["audit", "--compare"];
    human_args.extend(files.iter().map(|f| path(f)));
    let human = logcompact(&human_args, "");
    (serde_json::from_str(&stdout(&o)).expect("compare prints JSON"), o.status.code(), stdout(&human))
}

/// The records of partition `t-0` on node `id`, read from its files (read-only, beside the broker).
fn records_on(cluster: &mut Cluster, id: u32) -> Vec<(i64, String, Option<String>)> {
    records_on_topic(cluster, id, "t-0")
}

/// The records of `partition` on node `id`, read from its files (read-only, beside the broker).
fn records_on_topic(cluster: &mut Cluster, id: u32, partition: &str) -> Vec<(i64, String, Option<String>)> {
    kafka_records(&log_dir(cluster, id).join(partition))
}

/// The report of partition `name` in `compare`'s JSON.
fn partition_report<'r>(report: &'r Value, name: &str) -> &'r Value {
    report["partitions"].as_array().expect("partitions").iter().find(|p| p["name"] == name).expect("the partition")
}

/// Produces filler records (keys `k001000`...) to `topic` until `done` holds, 90 s at most (then fails saying
/// `what` did not happen).
fn produce_until(cluster: &mut Cluster, topic: &str, what: &str, mut done: impl FnMut(&mut Cluster) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut next = 1000;
    while !done(cluster) {
        assert!(Instant::now() < deadline, "in 90 s the leader's cleaner did not remove {what}");
        step(cluster, "produce", &["--topic", topic, "--from", &next.to_string(), "--count", "10", "--sleep-ms", "60"]);
        next += 10;
    }
}

/// A cluster of three brokers as `spec` says, started, with the one-partition topic `topic` on every broker
/// (in the order `replicas`) under [`TOPIC_CONFIGS`].
fn cluster_with(kafka: &'static Kafka, dir: &Path, spec: &NodeSpec, topic: &str, replicas: &str) -> Cluster {
    let mut cluster = Cluster::format(kafka, &dir.join("cluster"), 3, spec).expect("format");
    cluster.start().expect("the cluster starts");
    let mut args = vec!["--topic", topic, "--replicas", replicas];
    args.extend(TOPIC_CONFIGS);
    step(&cluster, "create", &args);
    cluster
}

/// Audits every broker (running or not) into `files` (one a broker, in node order) and compares them.
fn audit_all(cluster: &mut Cluster, files: &[PathBuf]) -> (Value, Option<i32>, String) {
    for (i, f) in files.iter().enumerate() {
        audit(cluster, i as u32 + 1, f);
    }
    let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    compare(&refs)
}

/// Every broker's summary (`audit --summary`: key-range hashes, no keys) into `<stem>-<node>.summary` in
/// `dir`, compared; with the files' total bytes.
fn summaries(cluster: &mut Cluster, dir: &Path, stem: &str) -> (Value, Option<i32>, String, u64) {
    let files: Vec<PathBuf> = (1..=3).map(|i| dir.join(format!("{stem}-{i}.summary"))).collect();
    for (i, f) in files.iter().enumerate() {
        let data = log_dir(cluster, i as u32 + 1);
        let o = logcompact(&["audit", "--summary", "--data-dir", path(&data), "--out", path(f)], "");
        assert!(o.status.success(), "summary of broker {}: {}", i + 1, stderr(&o));
    }
    let bytes = files.iter().map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0)).sum();
    let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let (report, code, human) = compare(&refs);
    (report, code, human, bytes)
}

/// The audit files of the three brokers in `dir`, named `<stem>-<node>.audit`.
fn audit_files(dir: &Path, stem: &str) -> Vec<PathBuf> {
    (1..=3).map(|i| dir.join(format!("{stem}-{i}.audit"))).collect()
}

/// Broker 3 back in sync with `topic`'s other replicas, and their high watermarks written down.
fn rejoined(cluster: &mut Cluster, topic: &str) {
    cluster.node(3).start().expect("broker 3 restarts");
    step(cluster, "wait-isr", &["--topic", topic, "--size", "3", "--timeout-ms", "120000"]);
    std::thread::sleep(Duration::from_millis(1500));
}

/// The fix on broker 3: stopped, `partition` moved out with `refetch`, restarted and back in sync; then every
/// replica agrees.
fn refetch_on_3_and_agree(cluster: &mut Cluster, tmp: &Path, topic: &str, files: &[PathBuf]) {
    let aside = tmp.join("aside");
    std::fs::create_dir_all(&aside).expect("aside");
    cluster.node(3).stop().expect("broker 3 stops");
    let dir3 = log_dir(cluster, 3);
    let partition = format!("{topic}-0");
    let o = logcompact(&["refetch", "--data-dir", path(&dir3), "--partition", &partition, "--to", path(&aside)], "");
    assert!(o.status.success(), "refetch: {}", stderr(&o));
    rejoined(cluster, topic);
    let (_, code, human) = audit_all(cluster, files);
    assert_eq!(code, Some(0), "after the fix every replica agrees:\n{human}");
}

/// The first offset of the records of `partition` on broker 1 whose value starts with `prefix`.
fn first_with(cluster: &mut Cluster, partition: &str, prefix: &str) -> i64 {
    records_on_topic(cluster, 1, partition)
        .iter()
        .filter(|(_, _, v)| v.as_deref().is_some_and(|v| v.starts_with(prefix)))
        .map(|(o, _, _)| *o)
        .min()
        .expect("the transaction's records")
}

fn is_deleted_key(k: &str) -> bool {
    k.strip_prefix('k').and_then(|n| n.parse::<u32>().ok()).is_some_and(|n| n < 100)
}

#[test]
fn a_follower_down_while_tombstones_go_keeps_the_deleted_keys_and_the_audit_names_them() {
    let Some(kafka) = Kafka::get() else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut cluster = cluster_with(kafka, tmp.path(), &fast_cleaner(), "t", "1,2,3");
    step(&cluster, "produce", &["--topic", "t", "--from", "0", "--count", "1000"]);
    step(&cluster, "wait-isr", &["--topic", "t", "--size", "3"]);

    // Broker 3 goes down; keys 0-99 are deleted; the leader's cleaner removes their values, then the tombstones.
    cluster.node(3).stop().expect("broker 3 stops");
    step(&cluster, "produce", &["--topic", "t", "--from", "0", "--count", "100", "--tombstones"]);
    let deleted = is_deleted_key;
    produce_until(&mut cluster, "t", "the tombstones", |c| {
        let on_leader = records_on(c, 1);
        !on_leader.iter().any(|(_, k, _)| deleted(k))
    });

    // Broker 3 comes back and catches up to the same end offset.
    rejoined(&mut cluster, "t");
    let back: BTreeMap<String, i64> = records_on(&mut cluster, 3)
        .into_iter()
        .filter(|(_, k, v)| deleted(k) && v.is_some())
        .map(|(o, k, _)| (k, o))
        .collect();
    assert_eq!(back.len(), 100, "broker 3 still holds a value of each deleted key");

    // The audit of each broker, compared: broker 3 disagrees on exactly those keys, at exactly those offsets.
    let files = audit_files(tmp.path(), "broker");
    let (report, code, human) = audit_all(&mut cluster, &files);
    assert_eq!(code, Some(1), "disagreeing replicas exit 1:\n{human}");
    let t0 = report["partitions"].as_array().expect("partitions").iter().find(|p| p["name"] == "t-0").expect("t-0");
    assert_eq!(t0["keys_disagreeing"], 100, "{human}");
    assert_eq!(t0["outcomes"]["deleted_key_back"], 100, "{human}");
    let odd: Vec<i64> = t0["disagreements"]
        .as_array()
        .expect("listed")
        .iter()
        .flat_map(|d| d["odd"].as_array().cloned().unwrap_or_default())
        .filter_map(|n| n.as_i64())
        .collect();
    assert!(!odd.is_empty() && odd.iter().all(|&n| n == 3), "broker 3 is the odd one: {odd:?}");
    let mut offsets: Vec<i64> = t0["disagreements"]
        .as_array()
        .expect("listed")
        .iter()
        .map(|d| d["views"]["3"]["offset"].as_i64().expect("broker 3 shows a record"))
        .collect();
    offsets.sort_unstable();
    let mut expected: Vec<i64> = back.values().copied().collect();
    expected.sort_unstable();
    assert_eq!(offsets, expected, "the audit names the offsets of the records that came back");
    assert!(human.contains("DISAGREE") && human.contains("logcompact refetch"), "{human}");
    // Summaries (key-range hashes) find the partition too, in files a fraction of the size, and ask for the
    // full audit of it alone.
    let (report, code, human, bytes) = summaries(&mut cluster, tmp.path(), "broker");
    assert_eq!(code, Some(1), "{human}");
    let ranges = &partition_report(&report, "t-0")["ranges"];
    let differing = ranges["ranges_differing"].as_u64().expect("compared by ranges");
    assert!((1..=100).contains(&differing), "the 100 keys back fall in 1-100 ranges: {human}");
    assert!(human.contains("AUDIT IN FULL") && human.contains("--partition t-0"), "{human}");
    let full: u64 = files.iter().map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0)).sum();
    assert!(bytes * 2 < full, "summaries of {bytes} bytes against full audits of {full}");

    // The wrong view Kafka itself serves once broker 3 leads: the deleted keys read again, under both isolation
    // levels.
    step(&cluster, "lead", &["--topic", "t", "--leader", "3"]);
    for isolation in ["read_uncommitted", "read_committed"] {
        let read = cluster.consume("t", isolation).expect("consume");
        let resurrected = read.iter().filter(|(_, k, v)| k.as_deref().is_some_and(deleted) && v.is_some()).count();
        assert_eq!(resurrected, 100, "{isolation}: Kafka serves the 100 deleted keys from broker 3");
    }

    // The fix: broker 3 stopped, its partition moved out, restarted: it fetches everything again.
    refetch_on_3_and_agree(&mut cluster, tmp.path(), "t", &files);
    let (report, code, human, _) = summaries(&mut cluster, tmp.path(), "fixed");
    assert_eq!(code, Some(0), "once fixed the summaries agree too: {human}");
    assert_eq!(partition_report(&report, "t-0")["ranges"]["ranges_differing"], 0, "{human}");
    let findings = cluster.node(3).load_findings();
    assert!(findings.failures.is_empty(), "broker 3 judged nothing bad: {:?}", findings.failures);
}

/// Cleans `partition` of broker `id` (stopped) with our cleaner until clean, twice, a delete horizon apart (the
/// first run stamps the tombstones; the second, from offset 0 so that it has a dirty section to pass over, may
/// remove them), with `extra` arguments.
fn compact_twice(cluster: &mut Cluster, id: u32, partition: &str, extra: &[&str]) {
    let dir = log_dir(cluster, id).join(partition);
    for round in 0..2 {
        if round == 1 {
            std::thread::sleep(Duration::from_millis(1300));
        }
        let mut args = vec!["compact", "--format", "kafka", "--until-clean", "--dir", path(&dir)];
        if round == 1 {
            args.extend(["--checkpoint", "0"]);
        }
        args.extend_from_slice(extra);
        let o = logcompact(&args, "");
        assert!(o.status.success(), "compact {partition} on broker {id}: {}", stderr(&o));
    }
}

fn tombstones(cluster: &mut Cluster, id: u32, partition: &str) -> usize {
    kafka_records(&log_dir(cluster, id).join(partition))
        .iter()
        .filter(|(_, k, v)| is_deleted_key(k) && v.is_none())
        .count()
}

/// `logcompact clean --until-clean --json` over node `id`'s log directory (the broker stopped) with `extra`;
/// the partitions a pass cleaned.
fn clean_broker(cluster: &mut Cluster, id: u32, extra: &[&str]) -> Vec<String> {
    let dir = log_dir(cluster, id);
    let mut args = vec!["clean", "--format", "kafka", "--until-clean", "--json", "--data-dir", path(&dir)];
    args.extend_from_slice(extra);
    let o = logcompact(&args, "");
    assert!(o.status.success(), "clean on broker {id}: {}", stderr(&o));
    stdout(&o)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == "cleaned")
        .filter_map(|v| v["log"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn our_cleaner_keeps_tombstones_a_down_replica_needs_with_replica_audits_and_not_without() {
    let Some(kafka) = Kafka::get() else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let spec = NodeSpec {
        log_dirs: 1,
        transaction_version: None,
        extra: vec!["replica.high.watermark.checkpoint.interval.ms=200".into()],
    };
    let mut cluster = Cluster::format(kafka, &tmp.path().join("cluster"), 3, &spec).expect("format");
    cluster.start().expect("the cluster starts");
    // Kafka's cleaner is off: only ours cleans. Broker 2 is each partition's preferred leader. `plain` is
    // compacted without the other replicas' audits, `safe` with them, and `managed` by `clean` (Kafka's
    // cleaner manager over the whole log directory) with them.
    const TOPICS: [&str; 3] = ["plain", "safe", "managed"];
    for topic in TOPICS {
        let mut args = vec!["--topic", topic, "--replicas", "2,1,3"];
        args.extend(TOPIC_CONFIGS);
        step(&cluster, "create", &args);
        step(&cluster, "produce", &["--topic", topic, "--from", "0", "--count", "1000"]);
        step(&cluster, "wait-isr", &["--topic", topic, "--size", "3"]);
    }
    cluster.node(3).stop().expect("broker 3 stops");
    for topic in TOPICS {
        step(&cluster, "produce", &["--topic", topic, "--from", "0", "--count", "100", "--tombstones"]);
        std::thread::sleep(Duration::from_millis(400));
        step(&cluster, "produce", &["--topic", topic, "--from", "1000", "--count", "10", "--sleep-ms", "60"]);
    }
    cluster.node(2).stop().expect("broker 2 stops");
    // The other replicas' audits, for the replica-safe rule: broker 1 running, broker 3 stopped.
    let a1 = tmp.path().join("broker-1.audit");
    let a3 = tmp.path().join("broker-3.audit");
    audit(&mut cluster, 1, &a1);
    audit(&mut cluster, 3, &a3);
    let audits = ["--replica-audits", path(&a1), path(&a3)];
    compact_twice(&mut cluster, 2, "plain-0", &[]);
    assert_eq!(tombstones(&mut cluster, 2, "plain-0"), 0, "without the audits the horizon alone decides: gone");
    compact_twice(&mut cluster, 2, "safe-0", &audits);
    assert_eq!(tombstones(&mut cluster, 2, "safe-0"), 100, "with them: kept, broker 3 has not cleaned past them");
    // `clean`: a first pass keeps the tombstones (their horizon starts); a second pass, once the horizon has
    // passed and new records made the log dirty again, would remove them without the audits.
    assert!(clean_broker(&mut cluster, 2, &audits).iter().any(|l| l.ends_with("managed-0")), "a first pass");
    cluster.node(2).start().expect("broker 2 restarts");
    step(&cluster, "wait-isr", &["--topic", "managed", "--size", "2", "--timeout-ms", "120000"]);
    step(&cluster, "produce", &["--topic", "managed", "--from", "1010", "--count", "20", "--sleep-ms", "60"]);
    step(&cluster, "wait-isr", &["--topic", "managed", "--size", "2", "--timeout-ms", "120000"]);
    cluster.node(2).stop().expect("broker 2 stops again");
    std::thread::sleep(Duration::from_millis(1300));
    assert!(clean_broker(&mut cluster, 2, &audits).iter().any(|l| l.ends_with("managed-0")), "a second pass");
    assert_eq!(tombstones(&mut cluster, 2, "managed-0"), 100, "clean with the audits keeps them too");

    // Broker 2 leads again; broker 3 comes back and fetches from it.
    cluster.node(2).start().expect("broker 2 restarts");
    for topic in TOPICS {
        step(&cluster, "wait-isr", &["--topic", topic, "--size", "2", "--timeout-ms", "120000"]);
        step(&cluster, "lead", &["--topic", topic, "--leader", "2"]);
    }
    cluster.node(3).start().expect("broker 3 restarts");
    for topic in TOPICS {
        step(&cluster, "wait-isr", &["--topic", topic, "--size", "3", "--timeout-ms", "120000"]);
    }
    std::thread::sleep(Duration::from_millis(1500));
    let files = audit_files(tmp.path(), "after");
    let (report, code, human) = audit_all(&mut cluster, &files);
    assert_eq!(code, Some(1), "{human}");
    let plain = partition_report(&report, "plain-0");
    assert_eq!(plain["outcomes"]["deleted_key_back"], 100, "without the audits the deleted keys come back:\n{human}");
    for partition in ["safe-0", "managed-0"] {
        let safe = partition_report(&report, partition);
        assert_eq!(safe["keys_disagreeing"], 0, "{partition}: with them every replica agrees:\n{human}");
        assert!(safe["keys_compared"].as_u64().is_some_and(|n| n >= 1000), "{partition}: {human}");
    }
}

/// Control batches (transaction markers) of partition `partition` on node `id`.
fn markers(cluster: &mut Cluster, id: u32, partition: &str) -> usize {
    let dir = log_dir(cluster, id).join(partition);
    let o = logcompact(&["dump", "--format", "kafka", "--json", "--dir", path(&dir)], "");
    assert!(o.status.success(), "dump: {}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("json");
    v["batches"].as_array().expect("batches").iter().filter(|b| b["control"] == true).count()
}

#[test]
fn a_follower_down_while_an_abort_goes_holds_the_transaction_open_then_reads_it_committed() {
    let Some(kafka) = Kafka::get() else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut cluster = cluster_with(kafka, tmp.path(), &fast_cleaner(), "tx", "1,2,3");
    step(&cluster, "produce", &["--topic", "tx", "--from", "0", "--count", "100"]);
    // A transaction over keys 0-9 reaches every replica (acks=all), and its producer dies with it open.
    step(&cluster, "txn", &["--topic", "tx", "--id", "A", "--from", "0", "--count", "10", "--value", "t1", "--open"]);
    step(&cluster, "wait-isr", &["--topic", "tx", "--size", "3"]);
    let txn1_first = first_with(&mut cluster, "tx-0", "t1-");
    // Broker 3 goes down; the producer's successor aborts the transaction; the leader's cleaner removes the
    // aborted records, then the ABORT.
    cluster.node(3).stop().expect("broker 3 stops");
    step(&cluster, "txn", &["--topic", "tx", "--id", "A", "--init-only"]);
    produce_until(&mut cluster, "tx", "the aborted records", |c| {
        !records_on_topic(c, 1, "tx-0").iter().any(|(_, _, v)| v.as_deref().is_some_and(|v| v.starts_with("t1-")))
    });
    produce_until(&mut cluster, "tx", "the ABORT marker", |c| markers(c, 1, "tx-0") == 0);
    rejoined(&mut cluster, "tx");

    // Broker 3 holds the transaction open for good: led by it, read_committed stops at its first offset.
    let files = audit_files(tmp.path(), "broker");
    let (report, code, human) = audit_all(&mut cluster, &files);
    assert_eq!(code, Some(1), "{human}");
    let stuck = partition_report(&report, "tx-0")["stuck_transactions"].clone();
    let stuck: Vec<(i64, i64, i64)> = serde_json::from_value(stuck).expect("stuck transactions");
    assert!(
        stuck.len() == 1 && stuck[0].0 == 3 && stuck[0].2 == txn1_first,
        "broker 3 holds the transaction open from offset {txn1_first}: {stuck:?}\n{human}"
    );
    step(&cluster, "lead", &["--topic", "tx", "--leader", "3"]);
    let committed = cluster.consume("tx", "read_committed").expect("consume");
    assert!(
        committed.iter().all(|(o, _, _)| *o < txn1_first),
        "read_committed from broker 3 stops at offset {txn1_first}"
    );

    // The producer commits a new transaction: broker 3 closes both as committed, and the aborted records read
    // as committed there.
    step(
        &cluster,
        "txn",
        &["--topic", "tx", "--id", "A", "--from", "500", "--count", "5", "--value", "t2", "--commit"],
    );
    std::thread::sleep(Duration::from_millis(1500));
    let read = cluster.consume("tx", "read_committed").expect("consume");
    let aborted_read = read.iter().filter(|(_, _, v)| v.as_deref().is_some_and(|v| v.starts_with("t1-"))).count();
    assert_eq!(aborted_read, 10, "Kafka serves the aborted transaction's 10 records as committed from broker 3");
    let (report, code, human) = audit_all(&mut cluster, &files);
    assert_eq!(code, Some(1), "{human}");
    let tx = partition_report(&report, "tx-0");
    assert_eq!(tx["outcomes"]["aborted_read_as_committed"], 10, "{human}");

    // The fix makes every replica agree again.
    refetch_on_3_and_agree(&mut cluster, tmp.path(), "tx", &files);
}

#[test]
fn healthy_replicas_agree_whenever_each_cleaner_ran_and_after_our_cleaner_ran_on_one() {
    let Some(kafka) = Kafka::get() else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut cluster = cluster_with(kafka, tmp.path(), &fast_cleaner(), "h", "1,2,3");
    step(&cluster, "produce", &["--topic", "h", "--from", "0", "--count", "500"]);
    let files = audit_files(tmp.path(), "broker");
    let mut compared = 0;
    // Rounds of updates, deletes, a committed and an aborted transaction, each audited while every broker's
    // cleaner runs at its own moments (and the producers keep writing between the audits).
    for round in 0..4u32 {
        let from = (round * 100).to_string();
        step(&cluster, "produce", &["--topic", "h", "--from", &from, "--count", "50", "--tombstones"]);
        step(
            &cluster,
            "produce",
            &["--topic", "h", "--from", &from, "--count", "100", "--value", "u", "--sleep-ms", "5"],
        );
        step(
            &cluster,
            "txn",
            &["--topic", "h", "--id", "H", "--from", &from, "--count", "10", "--value", "c", "--commit"],
        );
        step(
            &cluster,
            "txn",
            &["--topic", "h", "--id", "H", "--from", &from, "--count", "10", "--value", "a", "--abort"],
        );
        step(&cluster, "produce", &["--topic", "h", "--from", "1000", "--count", "20", "--sleep-ms", "60"]);
        let (report, code, human) = audit_all(&mut cluster, &files);
        assert_eq!(code, Some(0), "round {round}: healthy replicas agree:\n{human}");
        compared += partition_report(&report, "h-0")["keys_compared"].as_u64().unwrap_or(0);
    }
    assert!(compared > 1000, "the rounds compared keys ({compared})");
    // Broker 2 cleaned offline by us (tombstones stamped, then gone), restarted: still every replica agrees.
    cluster.node(2).stop().expect("broker 2 stops");
    compact_twice(&mut cluster, 2, "h-0", &[]);
    cluster.node(2).start().expect("broker 2 restarts");
    step(&cluster, "wait-isr", &["--topic", "h", "--size", "3", "--timeout-ms", "120000"]);
    std::thread::sleep(Duration::from_millis(1500));
    let (_, code, human) = audit_all(&mut cluster, &files);
    assert_eq!(code, Some(0), "after our cleaner ran on broker 2:\n{human}");
}

#[test]
fn a_follower_down_while_a_commit_goes_reads_the_committed_records_late_but_never_differently() {
    let Some(kafka) = Kafka::get() else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut cluster = cluster_with(kafka, tmp.path(), &fast_cleaner(), "tc", "1,2,3");
    step(&cluster, "produce", &["--topic", "tc", "--from", "0", "--count", "100"]);
    // A transaction over keys 0-9 reaches every replica; its producer waits, alive, while broker 3 stops, then
    // commits.
    let (ready, go) = (tmp.path().join("ready"), tmp.path().join("go"));
    let producer = cluster.step_in_background(
        "txn",
        &["--topic", "tc", "--id", "C", "--from", "0", "--count", "10", "--value", "t1", "--commit"]
            .into_iter()
            .chain(["--ready-file", path(&ready), "--go-file", path(&go)])
            .collect::<Vec<_>>(),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready.exists() {
        assert!(Instant::now() < deadline, "the transaction's records were not flushed in 60 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    step(&cluster, "wait-isr", &["--topic", "tc", "--size", "3"]);
    let txn1_first = first_with(&mut cluster, "tc-0", "t1-");
    cluster.node(3).stop().expect("broker 3 stops");
    std::fs::write(&go, b"").expect("go");
    producer.join().expect("the producer's thread").expect("the COMMIT");
    // The committed records superseded (a COMMIT goes only once its transaction holds no record), then the
    // leader's cleaner removes them and the COMMIT.
    step(&cluster, "produce", &["--topic", "tc", "--from", "0", "--count", "10", "--value", "v2"]);
    produce_until(&mut cluster, "tc", "the committed records", |c| {
        !records_on_topic(c, 1, "tc-0").iter().any(|(_, _, v)| v.as_deref().is_some_and(|v| v.starts_with("t1-")))
    });
    produce_until(&mut cluster, "tc", "the COMMIT marker", |c| markers(c, 1, "tc-0") == 0);
    rejoined(&mut cluster, "tc");
    let files = audit_files(tmp.path(), "broker");
    // What Kafka 4.4 does: broker 3 holds the transaction open (the committed records after it, v2 among them,
    // are hidden from read_committed there)...
    let (report, code, human) = audit_all(&mut cluster, &files);
    assert_eq!(code, Some(1), "{human}");
    let stuck: Vec<(i64, i64, i64)> =
        serde_json::from_value(partition_report(&report, "tc-0")["stuck_transactions"].clone()).expect("stuck");
    assert!(stuck.len() == 1 && stuck[0].0 == 3 && stuck[0].2 == txn1_first, "{stuck:?}\n{human}");
    step(&cluster, "lead", &["--topic", "tc", "--leader", "3"]);
    let read = cluster.consume("tc", "read_committed").expect("consume");
    assert!(
        read.iter().all(|(o, _, v)| *o < txn1_first && v.as_deref().is_none_or(|v| !v.starts_with("v2-"))),
        "led by broker 3, read_committed hides every committed record from offset {txn1_first} on"
    );
    // ...until the producer's next marker, an ABORT, closes both there: the records it then reads as aborted
    // are ones every replica has superseded, so no consumer's state differs.
    step(&cluster, "txn", &["--topic", "tc", "--id", "C", "--from", "600", "--count", "2", "--value", "t2", "--abort"]);
    std::thread::sleep(Duration::from_millis(1500));
    let (report, code, human) = audit_all(&mut cluster, &files);
    assert_eq!(code, Some(0), "no lasting difference:\n{human}");
    assert!(partition_report(&report, "tc-0")["keys_compared"].as_u64().is_some_and(|n| n >= 100), "{human}");
}
