//! Settings from the right metadata only, and stray directories left alone (issue 42, findings 1 and 2), on a
//! copy of a real Kafka 4.4 node changed by the broker itself:
//!
//! - a stale copy of the node's metadata log (`backup/`, in which a `delete` topic was once compacted) beside the
//!   real one: both register the data directory, so the run stops and names them both and `--metadata-dir`,
//!   where it used to take the first alphabetically and compact the `delete` topic; a broker setting naming a
//!   metadata log that is not there is an error, not a silent fall back to another;
//! - a topic deleted and created again (compacted) while a copy of its old partition directory was away: that
//!   directory's `partition.metadata` names the old topic id, so it is stray: `clean` leaves it alone and names
//!   it, `compact` refuses it, `analyze` lists it; the broker, started on the node, renames it `-stray` and keeps
//!   every record.
//!
//! Needs Java 17 and Maven (`LOGCOMPACT_SKIP_KAFKA=1` skips; refused under CI).

use std::path::{Path, PathBuf};

use kafka_interop::{Kafka, Node, fixture};

use crate::common;
use common::{contents, logcompact, path, stderr, stdout};

fn started(node: &mut Node) {
    node.start().unwrap_or_else(|e| panic!("the broker did not start: {e}"));
}

fn stopped(node: &mut Node) {
    node.stop().unwrap_or_else(|e| panic!("the broker did not stop: {e}"));
}

/// Runs a Kafka tool against the running broker; it must succeed.
fn tool(node: &Node, class: &str, args: &[&str]) {
    let out = node.tool(class, args).unwrap_or_else(|e| panic!("{class}: {e}"));
    assert!(out.status.success(), "{class} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn alter_policy(node: &Node, topic: &str, policy: &str) {
    tool(
        node,
        "org.apache.kafka.tools.ConfigCommand",
        &[
            "--bootstrap-server",
            "{bootstrap}",
            "--entity-type",
            "topics",
            "--entity-name",
            topic,
            "--alter",
            "--add-config",
            &format!("cleanup.policy={policy}"),
        ],
    );
}

/// The data directory holding `partition`.
fn data_dir_of(node: &Node, partition: &str) -> PathBuf {
    node.partition(partition).and_then(|p| p.parent().map(Path::to_path_buf)).expect("the partition's data dir")
}

/// The data directory holding the node's metadata log, and the metadata log's own directory.
fn metadata_log_of(node: &Node) -> (PathBuf, PathBuf) {
    let home = data_dir_of(node, "__cluster_metadata-0");
    let meta = home.join("__cluster_metadata-0");
    (home, meta)
}

#[test]
fn a_stale_copy_of_the_metadata_beside_the_real_one_is_never_believed() {
    let Some(kafka) = Kafka::get() else { return };
    let f = fixture::main(kafka);
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut node = f.copy_to(tmp.path());
    let meta_home = data_dir_of(&node, "__cluster_metadata-0");
    // A topic of the data directory without the metadata log (the broker places partitions as it likes).
    let (name, part) = node
        .partitions()
        .into_iter()
        .find(|(n, p)| !n.starts_with("__") && p.parent() != Some(meta_home.as_path()))
        .expect("a partition in the data directory without the metadata log");
    let topic = log_core::kafka::topic_partition(&name).map(|(t, _)| t.to_owned()).expect("a topic");
    let topic = topic.as_str();
    let data = part.parent().expect("its data directory").to_path_buf();
    // The topic was compacted when a copy of the metadata directory was taken (`backup/`, a sibling of the data
    // directories that sorts before them); then it was set to delete.
    started(&mut node);
    alter_policy(&node, topic, "compact");
    stopped(&mut node);
    let backup = node.dir.join("backup");
    kafka_interop::copy_tree(&meta_home, &backup).expect("copy");
    started(&mut node);
    alter_policy(&node, topic, "delete");
    stopped(&mut node);
    let before = contents(&part);
    // Both metadata logs register the data directory: which is the broker's is not known, so nothing runs.
    for args in [
        vec!["clean", "--format", "kafka", "--data-dir", path(&data), "--until-clean"],
        vec!["compact", "--format", "kafka", "--dir", path(&part), "--until-clean"],
        vec!["analyze", "--format", "kafka", "--data-dir", path(&data)],
    ] {
        let out = logcompact(&args, "");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("backup") && err.contains(path(&meta_home)) && err.contains("--metadata-dir"),
            "{args:?}: {err}"
        );
        assert_eq!(contents(&part), before, "{args:?} changed nothing");
    }
    // Given the broker's, the topic is delete and left alone; the run says which metadata log it read and how
    // old its last record is. (The copy that said compact would have compacted it.)
    let meta = meta_home.join("__cluster_metadata-0");
    let out = logcompact(
        &["clean", "--format", "kafka", "--data-dir", path(&data), "--until-clean", "--metadata-dir", path(&meta)],
        "",
    );
    let err = stderr(&out);
    assert!(err.contains("given as the metadata directory") && err.contains("old"), "{err}");
    assert!(err.contains(&name) && err.contains("cleanup.policy is delete"), "{err}\n{}", stdout(&out));
    assert_eq!(contents(&part), before);
    // A broker setting naming a metadata log that is not there is an error, not a fall back to another.
    let props = tmp.path().join("server.properties");
    std::fs::write(&props, format!("metadata.log.dir={}\n", tmp.path().join("gone").display())).expect("write");
    let out = logcompact(
        &["clean", "--format", "kafka", "--data-dir", path(&data), "--until-clean", "--broker-config", path(&props)],
        "",
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("gone") && stderr(&out).contains("holds no metadata log"), "{}", stderr(&out));
    assert_eq!(contents(&part), before);
    // The broker, started on the node, loads the partition as it was.
    std::fs::remove_dir_all(&backup).expect("remove the backup");
    started(&mut node);
    let findings = node.load_findings();
    assert!(findings.failures.is_empty(), "{:?}", findings.failures);
    stopped(&mut node);
    assert!(node.partition(&name).is_some());
}

#[test]
fn a_deleted_topics_old_directory_is_stray_and_left_alone() {
    let Some(kafka) = Kafka::get() else { return };
    let f = fixture::main(kafka);
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut node = f.copy_to(tmp.path());
    let topic = "unkeyed-delete";
    let data = data_dir_of(&node, "unkeyed-delete-0");
    let part = data.join("unkeyed-delete-0");
    // The old partition directory is away while the topic is deleted and created again, compacted.
    let away = tmp.path().join("away");
    kafka_interop::copy_tree(&part, &away).expect("copy");
    std::fs::remove_dir_all(&part).expect("remove");
    started(&mut node);
    let topics = "org.apache.kafka.tools.TopicCommand";
    tool(&node, topics, &["--bootstrap-server", "{bootstrap}", "--delete", "--topic", topic]);
    std::thread::sleep(std::time::Duration::from_secs(2));
    tool(
        &node,
        topics,
        &[
            "--bootstrap-server",
            "{bootstrap}",
            "--create",
            "--topic",
            topic,
            "--partitions",
            "1",
            "--replication-factor",
            "1",
            "--config",
            "cleanup.policy=compact",
        ],
    );
    stopped(&mut node);
    // The new topic's directory, wherever the broker put it, makes way for the old one coming back.
    for d in node.log_dirs() {
        let new = d.join("unkeyed-delete-0");
        if new.is_dir() {
            std::fs::remove_dir_all(&new).expect("remove the new topic's directory");
        }
    }
    kafka_interop::copy_tree(&away, &part).expect("put back");
    let before = contents(&part);
    // clean leaves it alone and names it.
    let out = logcompact(&["clean", "--format", "kafka", "--data-dir", path(&data), "--until-clean", "--json"], "");
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(text.contains("unkeyed-delete-0") && text.contains("stray"), "{text}");
    assert_eq!(contents(&part), before, "the stray directory is left alone");
    // compact refuses it, analyze lists it.
    let out =
        logcompact(&["compact", "--format", "kafka", "--dir", path(&part), "--until-clean", "--drop-invalid"], "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("stray"), "{}", stderr(&out));
    assert_eq!(contents(&part), before);
    let out = logcompact(&["analyze", "--format", "kafka", "--data-dir", path(&data)], "");
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(text.contains("unkeyed-delete-0") && text.contains("stray"), "{text}");
    // The broker renames it -stray as it starts and keeps every record; nothing else in its log is amiss.
    started(&mut node);
    let findings = node.load_findings();
    stopped(&mut node);
    // Kafka may also warn that it could not write the stray partition's leader-epoch checkpoint as it renamed
    // it ("This is ok if the topic/partition is being deleted", or "Failed atomic move of
    // .../unkeyed-delete-0/leader-epoch-checkpoint.tmp ... retrying with a non-atomic move"): a race of its
    // own over the directory it renames, seen on a busy machine.
    let of_the_stray = |l: &str| {
        l.contains("stray")
            || (l.contains("unkeyed-delete-0")
                && (l.contains("being deleted") || l.contains("leader-epoch-checkpoint")))
    };
    let ours: Vec<&String> = findings.unexpected.iter().filter(|l| !of_the_stray(l)).collect();
    assert!(ours.is_empty(), "{ours:#?}");
    let renamed: Vec<PathBuf> = std::fs::read_dir(&data)
        .expect("list")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().is_some_and(|n| {
                n.to_string_lossy().starts_with("unkeyed-delete-0.") && n.to_string_lossy().ends_with("-stray")
            })
        })
        .collect();
    assert_eq!(renamed.len(), 1, "the broker renamed the directory -stray: {renamed:?}");
    let logs = |c: &std::collections::BTreeMap<String, Option<Vec<u8>>>| -> Vec<(String, Option<Vec<u8>>)> {
        c.iter().filter(|(n, _)| n.ends_with(".log")).map(|(n, b)| (n.clone(), b.clone())).collect()
    };
    assert_eq!(logs(&contents(&renamed[0])), logs(&before), "every record is still there");
}

/// Issue 42, findings 4 and 8: the broker starts on what each writing command leaves (a partition rolled, a
/// whole node cleaned, a partition repaired) with no ERROR or WARN line about any log. `roll --format kafka` used
/// to leave the new segment without `.index` and `.timeindex`, and the broker logged "Could not find offset index
/// file" and rebuilt them.
#[test]
fn the_broker_starts_without_a_warning_on_what_every_writing_command_leaves() {
    let Some(kafka) = Kafka::get() else { return };
    let f = fixture::main(kafka);
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut node = f.copy_to(tmp.path());
    let now = (f.produced_ms + 3_600_000).to_string();
    // Rolled.
    let rolled = node.partition("codec-none-0").expect("a partition");
    let out = logcompact(&["roll", "--format", "kafka", "--dir", path(&rolled)], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let logs: Vec<String> = contents(&rolled).into_keys().filter(|n| n.ends_with(".log")).collect();
    let active = logs.last().expect("a segment").trim_end_matches(".log").to_owned();
    for ext in ["index", "timeindex"] {
        assert!(rolled.join(format!("{active}.{ext}")).is_file(), "the new segment has its .{ext}");
    }
    // Repaired: a torn tail on another partition's active segment, cut by repair.
    let torn = node.partition("codec-lz4-0").expect("a partition");
    let last = contents(&torn).into_keys().rfind(|n| n.ends_with(".log")).expect("a segment");
    let mut bytes = std::fs::read(torn.join(&last)).expect("read");
    bytes.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 77, 1, 2, 3]);
    std::fs::write(torn.join(&last), bytes).expect("write");
    let out = logcompact(&["repair", "--format", "kafka", "--dir", path(&torn), "--apply"], "");
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    let out = logcompact(&["check", "--format", "kafka", "--dir", path(&torn)], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Cleaned: every data directory of the node.
    for d in node.log_dirs() {
        let out = logcompact(
            &[
                "clean",
                "--format",
                "kafka",
                "--data-dir",
                path(&d),
                "--until-clean",
                "--now-ms",
                &now,
                "--i-know-the-clock",
            ],
            "",
        );
        assert_eq!(out.status.code(), Some(0), "{}: {}", d.display(), stderr(&out));
    }
    started(&mut node);
    let findings = node.load_findings();
    stopped(&mut node);
    assert!(findings.failures.is_empty(), "{:#?}", findings.failures);
    assert!(findings.unexpected.is_empty(), "{:#?}", findings.unexpected);
    assert!(findings.loads.contains_key("codec-none-0") && findings.loads.contains_key("codec-lz4-0"));
}

#[expect(clippy::big_endian_bytes, reason = "Kafka's batches are big-endian")]
/// A batch of `n` records from `base` (keys `odd-<offset>`, values `v<offset>`), its records compressed by
/// `compress` (given the uncompressed records section), as a producer's batch would be but for that.
fn odd_batch(base: u64, n: usize, codec: log_core::kafka::Compression, compress: impl Fn(&[u8]) -> Vec<u8>) -> Vec<u8> {
    use log_core::kafka::{Compression, RecordToWrite, new_header, write_batch};
    let keys: Vec<Vec<u8>> = (0..n).map(|i| format!("odd-{}", base + i as u64).into_bytes()).collect();
    let values: Vec<Vec<u8>> = (0..n).map(|i| format!("v{}", base + i as u64).repeat(20).into_bytes()).collect();
    let records: Vec<RecordToWrite<'_>> = (0..n)
        .map(|i| RecordToWrite {
            offset: (base + i as u64) as i64,
            timestamp: log_core::now_ms(),
            key: Some(&keys[i]),
            value: Some(&values[i]),
            header_count: 0,
            header_bytes: &[],
        })
        .collect();
    let mut plain = Vec::new();
    write_batch(&new_header(base as i64, n as i32 - 1), Compression::None, None, &records, &mut plain, &mut Vec::new())
        .expect("batch");
    // The records section of an uncompressed batch starts after its 61-byte header.
    let body = compress(&plain[61..]);
    let mut batch = plain[..61].to_vec();
    batch.extend_from_slice(&body);
    let len = (batch.len() - 12) as i32;
    batch[8..12].copy_from_slice(&len.to_be_bytes());
    let attributes = i16::from_be_bytes([batch[21], batch[22]]) | i16::from(codec.bits());
    batch[21..23].copy_from_slice(&attributes.to_be_bytes());
    let crc = crc32c::crc32c(&batch[21..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
    batch
}

/// Issue 42, finding 5: batches Kafka's Java decoders read (a gzip batch of two members, one with bytes after
/// its member, a zstd batch of two frames, one opening with a skippable frame) were called damage: `check`
/// exited 1 and sent the operator to `repair`, which found nothing, and `compact` failed. Appended to a stopped
/// node's partition, the broker serves them to its Java consumer; then `check`, `dump`, `repair` and `compact`
/// agree with what it served.
#[test]
fn batches_javas_decoders_read_are_read_so_by_every_command() {
    use log_core::kafka::Compression;
    let Some(kafka) = Kafka::get() else { return };
    let f = fixture::main(kafka);
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut node = f.copy_to(tmp.path());
    let part = node.partition("codec-none-1").expect("a partition");
    let last = contents(&part).into_keys().rfind(|n| n.ends_with(".log")).expect("a segment");
    let log_path = part.join(&last);
    let out = logcompact(&["dump", "--format", "kafka", "--json", "--dir", path(&part)], "");
    let dumped: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    let mut next = dumped["batches"]
        .as_array()
        .expect("batches")
        .iter()
        .map(|b| {
            b["header"]["base_offset"].as_u64().unwrap_or(0)
                + b["header"]["last_offset_delta"].as_u64().unwrap_or(0)
                + 1
        })
        .max()
        .expect("a batch");
    let gzip = |d: &[u8]| {
        let mut o = Vec::new();
        log_core::kafka::compression::compress(Compression::Gzip, d, &mut o);
        o
    };
    let zstd = |d: &[u8]| zstd::bulk::compress(d, 3).expect("zstd");
    type Section<'a> = Box<dyn Fn(&[u8]) -> Vec<u8> + 'a>;
    let cases: Vec<(&str, Compression, Section<'_>)> = vec![
        (
            "gzip, two members",
            Compression::Gzip,
            Box::new(|d: &[u8]| [gzip(&d[..d.len() / 2]), gzip(&d[d.len() / 2..])].concat()),
        ),
        (
            "gzip, bytes after the member",
            Compression::Gzip,
            Box::new(|d: &[u8]| [gzip(d), vec![9, 8, 7, 6, 5, 4, 3, 2, 1, 0]].concat()),
        ),
        (
            "zstd, two frames",
            Compression::Zstd,
            Box::new(|d: &[u8]| [zstd(&d[..d.len() / 3]), zstd(&d[d.len() / 3..])].concat()),
        ),
        (
            "zstd, a skippable frame first",
            Compression::Zstd,
            Box::new(|d: &[u8]| [vec![0x51, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 1, 2, 3], zstd(d)].concat()),
        ),
    ];
    let mut appended = Vec::new();
    let mut expected = std::collections::BTreeMap::new();
    for (what, codec, compress) in &cases {
        let batch = odd_batch(next, 4, *codec, compress);
        for i in 0..4 {
            expected.insert(next + i, (*what).to_owned());
        }
        appended.extend_from_slice(&batch);
        next += 4;
    }
    let mut bytes = std::fs::read(&log_path).expect("read");
    bytes.extend_from_slice(&appended);
    std::fs::write(&log_path, bytes).expect("append");
    // The broker serves every record of them to its Java consumer.
    started(&mut node);
    let out =
        node.tool("logcompact.interop.Consume", &["--bootstrap", "{bootstrap}", "--tp", "codec-none:1"]).expect("java");
    stopped(&mut node);
    let out = kafka_interop::succeeded("Consume", out).unwrap_or_else(|e| panic!("{e}"));
    let served: std::collections::BTreeSet<u64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|r| r["offset"].as_u64())
        .collect();
    for (offset, what) in &expected {
        assert!(served.contains(offset), "the broker served offset {offset} ({what})");
    }
    // check, dump, repair and compact agree.
    let out = logcompact(&["check", "--format", "kafka", "--dir", path(&part)], "");
    assert_eq!(out.status.code(), Some(0), "check: {}{}", stdout(&out), stderr(&out));
    let out = logcompact(&["dump", "--format", "kafka", "--json", "--dir", path(&part)], "");
    assert_eq!(out.status.code(), Some(0), "dump: {}", stderr(&out));
    let dumped = stdout(&out);
    for offset in expected.keys() {
        assert!(dumped.contains(&format!("odd-{offset}")), "dump shows offset {offset}");
    }
    let out = logcompact(&["repair", "--format", "kafka", "--dir", path(&part)], "");
    assert_eq!(out.status.code(), Some(0), "repair: {}{}", stdout(&out), stderr(&out));
    let now = (log_core::now_ms()).to_string();
    let out = logcompact(&["roll", "--format", "kafka", "--dir", path(&part)], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out =
        logcompact(&["compact", "--format", "kafka", "--dir", path(&part), "--until-clean", "--now-ms", &now], "");
    assert_eq!(out.status.code(), Some(0), "compact: {}", stderr(&out));
    let out = logcompact(&["dump", "--format", "kafka", "--json", "--dir", path(&part)], "");
    for offset in expected.keys() {
        assert!(stdout(&out).contains(&format!("odd-{offset}")), "compact kept offset {offset} (each key is its own)");
    }
}

/// Appends to the metadata log in `meta` (a `__cluster_metadata-0` directory) one batch holding a topic
/// `ConfigRecord` (api key 4, version 0) setting `name` to `value` for `topic`, as a controller would.
fn append_topic_config(meta: &Path, topic: &str, name: &str, value: &str) {
    use log_core::kafka::{Compression, RecordToWrite, new_header, write_batch};
    let string = |s: &str, out: &mut Vec<u8>| {
        out.push(u8::try_from(s.len() + 1).expect("short"));
        out.extend_from_slice(s.as_bytes());
    };
    // Frame version 1, api key 4, version 0, then the body and no tagged fields.
    let mut record = vec![1, 4, 0, 2];
    string(topic, &mut record);
    string(name, &mut record);
    string(value, &mut record);
    record.push(0);
    let last = contents(meta).into_keys().rfind(|n| n.ends_with(".log")).expect("a segment");
    let bytes = std::fs::read(meta.join(&last)).expect("read");
    // The next offset and the leader epoch of the last batch.
    let (mut pos, mut next, mut epoch) = (0usize, 0i64, 0i32);
    while pos + 61 <= bytes.len() {
        let Ok(b) = log_core::Format::Kafka.parse(&bytes[pos..], false) else { break };
        let h = *b.kafka_header().expect("kafka");
        next = h.last_offset() + 1;
        epoch = h.partition_leader_epoch;
        pos += b.len();
    }
    let mut header = new_header(next, 0);
    header.partition_leader_epoch = epoch;
    let write = [RecordToWrite {
        offset: next,
        timestamp: log_core::now_ms(),
        key: None,
        value: Some(&record),
        header_count: 0,
        header_bytes: &[],
    }];
    let mut batch = Vec::new();
    write_batch(&header, Compression::None, None, &write, &mut batch, &mut Vec::new()).expect("batch");
    let mut all = bytes[..pos].to_vec();
    all.extend_from_slice(&batch);
    std::fs::write(meta.join(&last), all).expect("append");
}

/// Issue 42, finding 6: one topic config Kafka would refuse (`cleanup.policy=Compact` in the metadata) made
/// `analyze` and `clean` exit 2 for the whole directory; now that topic's partitions are left alone, named with
/// the setting and the value, every other partition is cleaned, and the exit code (2) says some were skipped. A
/// `server.properties` value Kafka would refuse (`log.segment.bytes=0`) stops the run before anything is
/// written, even when no topic takes it.
#[test]
fn one_bad_topic_config_skips_one_topic_and_a_bad_broker_setting_stops_the_run() {
    let Some(kafka) = Kafka::get() else { return };
    let f = fixture::main(kafka);
    let tmp = tempfile::tempdir().expect("tempdir");
    let node = f.copy_to(tmp.path());
    let (meta_home, meta) = metadata_log_of(&node);
    // Two compacted topics in one data directory: one gets a policy Kafka refuses.
    let in_dir: Vec<(String, PathBuf)> = node
        .partitions()
        .into_iter()
        .filter(|(n, p)| {
            n.starts_with("codec-") && !n.starts_with("codec-snappy") && p.parent() == Some(meta_home.as_path())
        })
        .collect();
    assert!(in_dir.len() >= 2, "two compacted partitions beside the metadata log: {in_dir:?}");
    let (bad_name, bad_part) = in_dir[0].clone();
    let bad_topic = log_core::kafka::topic_partition(&bad_name).map(|(t, _)| t.to_owned()).expect("topic");
    let others: Vec<PathBuf> =
        in_dir.iter().filter(|(n, _)| !n.starts_with(&format!("{bad_topic}-"))).map(|(_, p)| p.clone()).collect();
    assert!(!others.is_empty());
    append_topic_config(&meta, &bad_topic, "cleanup.policy", "Compact");
    let before_bad = contents(&bad_part);
    let before_others: Vec<_> = others.iter().map(|p| contents(p)).collect();
    // A server.properties value Kafka refuses stops the run first.
    let props = tmp.path().join("server.properties");
    std::fs::write(&props, "log.segment.bytes=0\n").expect("write");
    let out = logcompact(
        &[
            "clean",
            "--format",
            "kafka",
            "--data-dir",
            path(&meta_home),
            "--until-clean",
            "--broker-config",
            path(&props),
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("log.segment.bytes=0"), "{}", stderr(&out));
    assert_eq!(contents(&bad_part), before_bad);
    for (p, b) in others.iter().zip(&before_others) {
        assert_eq!(&contents(p), b, "nothing written before the refusal");
    }
    // The bad topic is skipped and named; the others are cleaned.
    let out = logcompact(&["clean", "--format", "kafka", "--data-dir", path(&meta_home), "--until-clean"], "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(&bad_name) && err.contains("cleanup.policy") && err.contains("Compact"), "{err}");
    assert_eq!(contents(&bad_part), before_bad, "the skipped topic is left alone");
    assert!(others.iter().zip(&before_others).any(|(p, b)| &contents(p) != b), "the other topics were cleaned: {err}");
    // analyze names it and goes on.
    let out = logcompact(&["analyze", "--format", "kafka", "--data-dir", path(&meta_home)], "");
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(text.contains(&bad_name) && text.contains("Compact"), "{text}");
}

/// Issue 42, finding 7: `check --data-dir` said a metadata log whose snapshot has a CRC error was intact (exit
/// 0) while `clean` and `analyze` called it unreadable; now it is damage to `check` too. A metadata log holding
/// only snapshots, or nothing yet, is no error (it was exit 3).
#[test]
fn check_judges_the_metadata_log_as_clean_reads_it() {
    let Some(kafka) = Kafka::get() else { return };
    let f = fixture::main(kafka);
    let tmp = tempfile::tempdir().expect("tempdir");
    let node = f.copy_to(tmp.path());
    let (meta_home, meta) = metadata_log_of(&node);
    let check = || logcompact(&["check", "--format", "kafka", "--data-dir", path(&meta_home)], "");
    let out = check();
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    // A snapshot whose CRC fails: damage.
    let snapshot = contents(&meta).into_keys().filter(|n| n.ends_with(".checkpoint")).max().expect("a raft snapshot");
    let mut bytes = std::fs::read(meta.join(&snapshot)).expect("read");
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    std::fs::write(meta.join(&snapshot), &bytes).expect("write");
    let out = check();
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(text.contains("__cluster_metadata-0") && text.contains("delete"), "{text}");
    bytes[at] ^= 0x40;
    std::fs::write(meta.join(&snapshot), &bytes).expect("restore");
    // Only snapshots, then nothing: no error.
    for n in contents(&meta).into_keys().filter(|n| !n.ends_with(".checkpoint")) {
        let p = meta.join(&n);
        if p.is_file() {
            std::fs::remove_file(p).expect("remove");
        }
    }
    let out = check();
    assert_eq!(out.status.code(), Some(0), "only snapshots: {}{}", stdout(&out), stderr(&out));
    for n in contents(&meta).into_keys() {
        std::fs::remove_file(meta.join(&n)).expect("remove");
    }
    let out = check();
    assert_eq!(out.status.code(), Some(0), "empty: {}{}", stdout(&out), stderr(&out));
}
