//! Kafka partitions written by real clients, kafka-python's record-batch builder (every codec, raw snappy as
//! librdkafka writes it) and librdkafka's producer (confluent-kafka, every codec, idempotent batches, sent to a
//! minimal in-process broker that stores them as Kafka does), read by `dump`, `check`, `analyze` and `advise --format kafka` and compared with what
//! the client wrote; `compact --format kafka` output read back by kafka-python's own batch reader (CRCs checked)
//! and compared with the latest record of every key.
//!
//! The Python side needs kafka-python, lz4, python-snappy, zstandard and confluent-kafka
//! (`tests/kafka/requirements.txt`): a Python named by `LOGCOMPACT_PYTHON`, or `python3` if it has them, or a
//! virtual environment the tests make once under Cargo's target directory (see `common::kafka_python`). Where
//! none can be had these tests fail, naming what is missing; `LOGCOMPACT_SKIP_PYTHON=1` skips them
//! (refused under CI, which must run them).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common;
use common::{contents, logcompact, path, run_python, stderr, stdout};

fn python() -> Option<String> {
    common::kafka_python()
}

fn script(name: &str) -> PathBuf {
    common::kafka_script(name)
}

fn ok(out: &std::process::Output) -> String {
    assert!(out.status.success(), "exit {:?}: {}", out.status.code(), stderr(out));
    stdout(out)
}

/// kafka-python's reading of the partition in `dir` (`read_partition.py`).
fn read_partition(py: &str, dir: &Path) -> Value {
    run_python(py, &[script("read_partition.py").to_str().expect("utf-8"), path(dir)])
}

/// Every record of every batch of a partition as `read_partition.py` reads it.
fn every_record(read: &Value) -> Vec<Value> {
    let batches = read["batches"].as_array().expect("batches");
    batches.iter().flat_map(|b| b["records"].as_array().expect("records").clone()).collect()
}

/// (offset, timestamp, key, value, headers) of every record, from kafka-python's or logcompact's JSON.
fn records_of(records: &[Value]) -> Vec<(i64, i64, Value, Value, Value)> {
    records
        .iter()
        .map(|r| {
            (
                r["offset"].as_i64().expect("offset"),
                r["timestamp"].as_i64().expect("timestamp"),
                r["key"].clone(),
                r["value"].clone(),
                r["headers"].clone(),
            )
        })
        .collect()
}

/// What a full compaction keeps: in closed segments the latest record of each key among closed segments
/// from the first dirty offset on (records before it are judged by the same map), tombstones included (a
/// first pass keeps them); the active segment as it is.
fn expected_after_compaction(
    written: &[(i64, i64, Value, Value, Value)],
    active_base: i64,
) -> Vec<(i64, i64, Value, Value, Value)> {
    let mut latest: BTreeMap<String, i64> = BTreeMap::new();
    for r in written.iter().filter(|r| r.0 < active_base) {
        latest.insert(r.2.to_string(), r.0);
    }
    written.iter().filter(|r| r.0 >= active_base || latest[&r.2.to_string()] == r.0).cloned().collect()
}

/// The base offset of a partition's last (active) segment.
fn active_base(part: &Value) -> i64 {
    part["segments"].as_array().and_then(|s| s.last()).and_then(Value::as_i64).expect("segments")
}

struct Partitions {
    _tmp: tempfile::TempDir,
    py: String,
    list: Vec<Value>,
}

fn partitions() -> Option<Partitions> {
    let py = python()?;
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("kafka-logs");
    let mut list = run_python(&py, &[script("make_partitions.py").to_str().expect("utf-8"), path(&root)])
        .as_array()
        .expect("partitions")
        .clone();
    let rdkafka = run_python(&py, &[script("librdkafka_partitions.py").to_str().expect("utf-8"), path(&root)]);
    let rdkafka = rdkafka.as_array().expect("partitions");
    assert_eq!(rdkafka.len(), 5, "librdkafka wrote a partition per codec");
    list.extend(rdkafka.iter().cloned());
    Some(Partitions { _tmp: tmp, py, list })
}

#[test]
fn dump_check_and_analyze_read_what_kafka_python_wrote_with_every_codec() {
    let Some(p) = partitions() else { return };
    for part in &p.list {
        let dir = PathBuf::from(part["dir"].as_str().expect("dir"));
        let codec = part["codec"].as_str().expect("codec");
        let before = contents(&dir);
        let written = records_of(part["records"].as_array().expect("records"));

        let dump: Value =
            serde_json::from_str(&ok(&logcompact(&["dump", "--format", "kafka", "--json", "--dir", path(&dir)], "")))
                .expect("dump JSON");
        let batches = dump["batches"].as_array().expect("batches");
        let want_codec = if codec == "snappy-raw" { "snappy" } else { codec };
        // kafka-python stores a batch uncompressed when compressing would not make it smaller.
        assert!(batches.iter().all(|b| b["codec"] == want_codec || b["codec"] == "none"), "{codec}");
        assert!(batches.iter().filter(|b| b["codec"] == want_codec).count() > batches.len() / 2, "{codec}");
        assert!(batches.iter().any(|b| b["header"]["producer_id"].as_i64() >= Some(0)), "idempotent batches: {codec}");
        let read: Vec<Value> = batches.iter().flat_map(|b| b["records"].as_array().expect("records").clone()).collect();
        assert_eq!(records_of(&read), written, "{codec}: every record as the client wrote it");

        let text = ok(&logcompact(&["dump", "--format", "kafka", "--dir", path(&dir)], ""));
        assert_eq!(text.lines().filter(|l| l.starts_with("  offset=")).count(), written.len());
        assert!(text.contains("value=TOMBSTONE") && text.contains(r#" header ""#), "{text}");

        let check: Value =
            serde_json::from_str(&ok(&logcompact(&["check", "--format", "kafka", "--dir", path(&dir), "--json"], "")))
                .expect("JSON");
        assert_eq!(check["records"], written.len());

        let analysis: Value = serde_json::from_str(&ok(&logcompact(
            &["analyze", "--dir", path(&dir), "--json", "--checkpoint", "0"],
            "",
        )))
        .expect("analyze JSON");
        assert_eq!(analysis["records"], written.len());
        let tombstones = written.iter().filter(|r| r.3.is_null()).count();
        assert_eq!(analysis["tombstones"], tombstones, "{codec}");
        let active_base = active_base(part);
        let closed: Vec<_> = written.iter().filter(|r| r.0 < active_base).collect();
        let distinct: std::collections::BTreeSet<String> = closed.iter().map(|r| r.2.to_string()).collect();
        assert_eq!(analysis["dirty"]["distinct"]["keys"], distinct.len(), "{codec}");
        assert_eq!(analysis["dirty"]["distinct"]["exact"], true);
        assert_eq!(analysis["dirty"]["dirty_records"], closed.len());
        let kept = expected_after_compaction(&written, active_base);
        assert_eq!(analysis["records_after_compaction"], kept.len(), "{codec}");
        assert!(analysis["dirty"]["maps"].as_array().expect("maps").iter().all(|m| m["passes"] == 1));

        let advice: Value = serde_json::from_str(&ok(&logcompact(
            &[
                "advise",
                "--format",
                "kafka",
                "--dir",
                path(&dir),
                "--checkpoint",
                "0",
                "--dedupe-buffer",
                "1KiB",
                "--json",
            ],
            "",
        )))
        .expect("advise JSON");
        for m in advice.as_array().expect("maps") {
            assert_eq!(m["keys"], distinct.len());
            // The maps take several passes in 1 KiB; the external pass takes one in any buffer.
            let passes = m["passes"].as_u64();
            if m["map"] == "external" {
                assert_eq!(passes, Some(1), "{m}");
            } else {
                assert!(passes.is_some_and(|n| n > 1), "1 KiB takes several passes: {m}");
            }
        }
        assert_eq!(contents(&dir), before, "{codec}: reading commands changed nothing");
    }
    // The checkpoint in the parent directory is found for t-none-0.
    let none = PathBuf::from(p.list[0]["dir"].as_str().expect("dir"));
    let analysis: Value =
        serde_json::from_str(&ok(&logcompact(&["analyze", "--dir", path(&none), "--json"], ""))).expect("JSON");
    assert_eq!(analysis["first_dirty_offset"], p.list[0]["segments"][1]);
    assert!(analysis["checkpoint_source"].as_str().is_some_and(|s| s.contains("cleaner-offset-checkpoint")));
    assert!(analysis["dirty_ratio"].as_f64().is_some_and(|r| r > 0.0 && r < 1.0));
}

#[test]
fn compact_writes_a_partition_kafka_python_reads_with_the_latest_record_of_every_key() {
    let Some(p) = partitions() else { return };
    let out_root = tempfile::tempdir().expect("tempdir");
    for part in &p.list {
        let dir = PathBuf::from(part["dir"].as_str().expect("dir"));
        let codec = part["codec"].as_str().expect("codec");
        let name = dir.file_name().expect("name").to_string_lossy().into_owned();
        let written = records_of(part["records"].as_array().expect("records"));
        let active_base = active_base(part);
        let want = expected_after_compaction(&written, active_base);
        let before = contents(&dir);
        let source = read_partition(&p.py, &dir);
        let source_last: BTreeMap<i64, i64> = source["batches"]
            .as_array()
            .expect("batches")
            .iter()
            .map(|b| (b["base_offset"].as_i64().expect("base"), b["last_offset"].as_i64().expect("last")))
            .collect();
        let mut results = Vec::new();
        for (map, buffer) in [("skimpy", "128MiB"), ("fullkey", "128MiB"), ("compact", "128MiB"), ("compact", "600")] {
            let out = out_root.path().join(format!("{name}-{map}-{buffer}"));
            let stats = ok(&logcompact(
                &crate::common::compact_kafka(
                    path(&dir),
                    &[
                        "--out",
                        path(&out),
                        "--checkpoint",
                        "0",
                        "--map",
                        map,
                        "--dedupe-buffer",
                        buffer,
                        "--until-clean",
                        "--json",
                    ],
                ),
                "",
            ));
            let passes = stats.lines().count();
            if buffer == "600" {
                assert!(passes > 1, "a small buffer takes several passes: {stats}");
            }
            let read = read_partition(&p.py, &out);
            let batches = read["batches"].as_array().expect("batches");
            let records: Vec<Value> =
                batches.iter().flat_map(|b| b["records"].as_array().expect("records").clone()).collect();
            assert_eq!(records_of(&records), want, "{codec} {map} {buffer}: offsets, timestamps, keys, values kept");
            // Batches holding a tombstone got a delete horizon (attribute bit 6) of about now + one day.
            for b in batches {
                let has_tombstone = b["records"].as_array().expect("records").iter().any(|r| r["value"].is_null());
                if has_tombstone && b["base_offset"].as_i64().expect("base") < active_base {
                    assert_ne!(b["attributes"].as_i64().expect("attributes") & 0x40, 0, "{codec}: {b}");
                    let horizon = b["base_timestamp"].as_i64().expect("horizon");
                    assert!(horizon > log_core::now_ms() + 86_000_000, "{codec}: {b}");
                }
            }
            // Every batch keeps its base offset and its last offset (Kafka's cleaner keeps lastOffsetDelta).
            for b in batches {
                let base = b["base_offset"].as_i64().expect("base");
                assert_eq!(Some(&b["last_offset"].as_i64().expect("last")), source_last.get(&base), "{codec}: {b}");
            }
            // The partition still ends where it ended: the last batch's last offset is the source's.
            let last = batches.last().expect("a batch")["last_offset"].as_i64().expect("last");
            assert_eq!(last, written.last().expect("written").0, "{codec}");
            assert!(read["indexes"].as_object().expect("indexes").keys().any(|k| k.ends_with(".timeindex")));
            for (name, size) in read["indexes"].as_object().expect("indexes") {
                let entry = if name.ends_with(".timeindex") { 12 } else { 8 };
                assert_eq!(size.as_u64().expect("size") % entry, 0, "{name}");
            }
            assert!(out.join("leader-epoch-checkpoint").exists() && out.join("partition.metadata").exists());
            ok(&logcompact(&["check", "--format", "kafka", "--dir", path(&out)], ""));
            results.push(records_of(&records));
        }
        assert_eq!(contents(&dir), before, "{codec}: the source partition was not written");
        // A second compaction of the output changes no record (tombstones are within their horizon).
        let again = out_root.path().join(format!("{name}-again"));
        let first = out_root.path().join(format!("{name}-skimpy-128MiB"));
        ok(&logcompact(&crate::common::compact_kafka(path(&first), &["--out", path(&again), "--checkpoint", "0"]), ""));
        let records = every_record(&read_partition(&p.py, &again));
        assert_eq!(records_of(&records), want, "{codec}: compacting again keeps the same records");
    }
}

/// What a pass over `[checkpoint, active_base)` keeps: a record of the dirty section if it is its key's latest
/// there; a record before the checkpoint unless the dirty section has its key at a later offset; the active
/// segment as it is.
fn expected_after_clean(
    written: &[(i64, i64, Value, Value, Value)],
    checkpoint: i64,
    active_base: i64,
) -> Vec<(i64, i64, Value, Value, Value)> {
    let mut latest: BTreeMap<String, i64> = BTreeMap::new();
    for r in written.iter().filter(|r| r.0 >= checkpoint && r.0 < active_base) {
        latest.insert(r.2.to_string(), r.0);
    }
    written
        .iter()
        .filter(|r| r.0 >= active_base || latest.get(&r.2.to_string()).is_none_or(|&l| r.0 >= l))
        .cloned()
        .collect()
}

#[test]
fn clean_compacts_a_whole_kafka_log_directory_in_place_and_kafka_python_reads_every_partition() {
    let Some(p) = partitions() else { return };
    let root = PathBuf::from(p.list[0]["dir"].as_str().expect("dir")).parent().expect("root").to_path_buf();
    // The broker's checkpoint: t-none-0 was cleaned up to its second segment before, the others never.
    let checkpoints = std::fs::read_to_string(root.join("cleaner-offset-checkpoint")).expect("checkpoint file");
    let checkpoint_of = |topic: &str| -> i64 {
        checkpoints
            .lines()
            .skip(2)
            .find_map(|l| l.strip_prefix(&format!("{topic} 0 ")).map(|o| o.parse().expect("offset")))
            .unwrap_or(0)
    };
    let mut config = String::new();
    let mut want = BTreeMap::new();
    for part in &p.list {
        let dir = PathBuf::from(part["dir"].as_str().expect("dir"));
        let name = dir.file_name().expect("name").to_string_lossy().into_owned();
        let topic = name.strip_suffix("-0").expect("partition 0").to_owned();
        config.push_str(&format!("[{topic}]\n"));
        let written = records_of(part["records"].as_array().expect("records"));
        want.insert(name, (dir, expected_after_clean(&written, checkpoint_of(&topic), active_base(part))));
    }
    let settings = root.parent().expect("parent").join("topics.conf");
    std::fs::write(&settings, config).expect("settings");
    let out = logcompact(
        &["clean", "--format", "kafka", "--data-dir", path(&root), "--until-clean", "--config", path(&settings)],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for (name, (dir, want)) in &want {
        let records = every_record(&read_partition(&p.py, dir));
        assert_eq!(&records_of(&records), want, "{name}: kafka-python reads what the cleaner keeps");
        ok(&logcompact(&["check", "--format", "kafka", "--dir", path(dir)], ""));
    }
    // The broker's checkpoint file now has every partition at its active segment's base.
    let after = std::fs::read_to_string(root.join("cleaner-offset-checkpoint")).expect("checkpoint file");
    for part in &p.list {
        let name =
            PathBuf::from(part["dir"].as_str().expect("dir")).file_name().expect("name").to_string_lossy().into_owned();
        let line = format!("{} 0 {}", name.strip_suffix("-0").expect("partition 0"), active_base(part));
        assert!(after.lines().any(|l| l == line), "{line:?} in {after}");
    }
}

#[test]
fn formats_are_never_mistaken_for_each_other_and_damage_is_named() {
    let Some(p) = partitions() else { return };
    let kafka_dir = PathBuf::from(p.list[0]["dir"].as_str().expect("dir"));
    // A Kafka partition read as a native log is refused, with the hint.
    for cmd in ["dump", "check"] {
        let out = logcompact(&[cmd, "--dir", path(&kafka_dir)], "");
        assert_eq!(out.status.code(), Some(2), "{cmd}");
        assert!(stderr(&out).contains("--format kafka"), "{cmd}: {}", stderr(&out));
    }
    // A native log read as Kafka is refused.
    let tmp = tempfile::tempdir().expect("tempdir");
    let native = tmp.path().join("native");
    ok(&logcompact(&["run", "--backend", "file", "--dir", path(&native), "-"], "PUT a 1\nROLL\nPUT b 2\n"));
    for cmd in ["dump", "check"] {
        let out = logcompact(&[cmd, "--format", "kafka", "--dir", path(&native)], "");
        assert_eq!(out.status.code(), Some(2), "{cmd}: {}", stderr(&out));
        assert!(stderr(&out).contains("not a Kafka partition"), "{}", stderr(&out));
    }
    // A flipped byte in a batch is a CRC error naming the file and the batch's byte.
    let damaged = tmp.path().join("t-damaged-0");
    std::fs::create_dir(&damaged).expect("mkdir");
    for e in std::fs::read_dir(&kafka_dir).expect("list") {
        let e = e.expect("entry");
        std::fs::copy(e.path(), damaged.join(e.file_name())).expect("copy");
    }
    let seg = damaged.join("00000000000000000000.log");
    let mut bytes = std::fs::read(&seg).expect("read");
    bytes[100] ^= 0x01;
    std::fs::write(&seg, &bytes).expect("write");
    let before = contents(&damaged);
    for args in [vec!["check"], vec!["dump"], vec!["analyze"]] {
        let mut full = args.clone();
        full.extend(["--format", "kafka", "--dir", path(&damaged)]);
        let out = logcompact(&full, "");
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("00000000000000000000.log")
                && stderr(&out).contains("at byte")
                && stderr(&out).contains("CRC"),
            "{}",
            stderr(&out)
        );
    }
    let out = logcompact(&crate::common::compact_kafka(path(&damaged), &["--out", path(&tmp.path().join("out"))]), "");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(contents(&damaged), before, "nothing was changed");
    assert!(!tmp.path().join("out").exists() && !tmp.path().join("out.pass-1").exists(), "a failed run leaves nothing");

    // --out anywhere inside the source is refused before anything is written; so is an --out whose parent is
    // missing.
    let source = contents(&kafka_dir);
    for out in [kafka_dir.join("sub"), kafka_dir.join("sub").join("deeper"), kafka_dir.join("x").join("..").join("y")] {
        let run = logcompact(&crate::common::compact_kafka(path(&kafka_dir), &["--out", path(&out)]), "");
        assert_eq!(run.status.code(), Some(2), "{}: {}", out.display(), stderr(&run));
        assert!(stderr(&run).contains("inside the source partition"), "{}", stderr(&run));
    }
    let run = logcompact(
        &crate::common::compact_kafka(path(&kafka_dir), &["--out", path(&tmp.path().join("no").join("out"))]),
        "",
    );
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    assert_eq!(contents(&kafka_dir), source, "the source partition was not written");

    // A stray subdirectory in a partition is not copied, and does not stop a compaction.
    let stray = tmp.path().join("t-stray-0");
    std::fs::create_dir(&stray).expect("mkdir");
    for e in std::fs::read_dir(&kafka_dir).expect("list") {
        let e = e.expect("entry");
        std::fs::copy(e.path(), stray.join(e.file_name())).expect("copy");
    }
    std::fs::create_dir(stray.join("lost+found")).expect("mkdir");
    let out = tmp.path().join("stray-out");
    let run = logcompact(
        &["compact", "--format", "kafka", "--cleanup-policy", "compact", "--dir", path(&stray), "--out", path(&out)],
        "",
    );
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert!(!out.join("lost+found").exists());

    // A message set older than magic 2 is a format this tool does not read: exit 2, not corruption.
    let old = tmp.path().join("old-0");
    std::fs::create_dir(&old).expect("mkdir");
    let mut v1 = vec![0u8; 40];
    v1[11] = 28; // message size
    v1[16] = 1; // magic 1
    std::fs::write(old.join("00000000000000000000.log"), &v1).expect("write");
    for cmd in ["dump", "check", "analyze"] {
        let run = logcompact(&[cmd, "--format", "kafka", "--dir", path(&old)], "");
        assert_eq!(run.status.code(), Some(2), "{cmd}: {}", stderr(&run));
        assert!(stderr(&run).contains("magic 1"), "{}", stderr(&run));
    }
}
