//! Kafka transactions end to end, as an operator meets them: a partition holding committed, aborted and a
//! hanging (never ended) transaction. `analyze` finds the hanging one, its last stable offset and the
//! `kafka-transactions.sh` command that aborts it; `compact` removes the aborted records of the segments before
//! the one holding the LSO and keeps that segment and every later one as they were (Kafka's cleaner rounds its
//! first uncleanable offset down to the base of the segment holding it), and writes `.txnindex` files a
//! `read_committed` reader (kafka-python's batch reader with the broker's filtering) finds the same committed view
//! in; `check` passes on the result. Run with and without the broker's `.txnindex` files in the source (without
//! them, the held segments, which no pass writes, read as they did).

use std::collections::BTreeMap;
use std::path::Path;

use crate::common;
use common::transactions::{HANGING, SnapshotEntry, write_partition, write_producer_snapshot};
use common::{logcompact, path, run_python, stderr, stdout};

/// A read_committed reader's view (offset, key, value) below `lso`, and every offset a data batch holds.
type View = (Vec<(u64, String, String)>, Vec<u64>);

fn read_committed(py: &str, dir: &Path, lso: u64) -> View {
    let script = common::kafka_script("read_committed.py");
    let v = run_python(py, &[script.to_str().expect("utf-8"), path(dir), &lso.to_string()]);
    let triple = |r: &serde_json::Value| {
        (
            r[0].as_u64().expect("offset"),
            r[1].as_str().expect("key").to_owned(),
            r[2].as_str().expect("value").to_owned(),
        )
    };
    let committed = v["committed"].as_array().expect("committed").iter().map(triple).collect();
    let data = v["data"].as_array().expect("data").iter().map(|r| r[0].as_u64().expect("offset")).collect();
    (committed, data)
}

/// Key → (offset, value) of the latest record of each key in a view.
fn latest(view: &[(u64, String, String)]) -> BTreeMap<String, (u64, String)> {
    view.iter().map(|(o, k, v)| (k.clone(), (*o, v.clone()))).collect()
}

/// The names and bytes of the segment files based at `first_segment_after` or later.
fn tail_from(dir: &Path, first_segment_after: u64) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
        .filter(|n| n.ends_with(".log") && n[..20].parse::<u64>().expect("base") >= first_segment_after)
        .map(|n| {
            let bytes = std::fs::read(dir.join(&n)).expect("read");
            (n, bytes)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn a_hanging_transaction_is_found_and_aborted_data_goes_below_the_lso() {
    let py = common::kafka_python();
    // The committed view of the source, as a broker serves it from its .txnindex files (the same partition
    // without them would show the aborted records: that is what a compaction's derived index repairs).
    let (mut expected, mut indexed_after) = (None, Vec::new());
    for with_txn_index in [true, false] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("orders-3");
        let lso = write_partition(&dir, with_txn_index);

        let out = logcompact(&["analyze", "--format", "kafka", "--dir", path(&dir), "--json"], "");
        assert!(out.status.success(), "{}", stderr(&out));
        let a: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(a["last_stable_offset"].as_u64(), Some(lso));
        let open = a["open_transactions"].as_array().expect("open transactions");
        assert_eq!(open.len(), 1, "{open:?}");
        assert_eq!((open[0]["producer_id"].as_i64(), open[0]["first_offset"].as_u64()), (Some(HANGING), Some(lso)));
        let command = open[0]["abort_command"].as_str().expect("a command");
        assert!(
            command.starts_with("kafka-transactions.sh")
                && command.contains("abort --topic orders --partition 3 --start-offset 15"),
            "{command}"
        );
        assert_eq!((a["aborted_transactions"].as_u64(), a["aborted_records"].as_u64()), (Some(2), Some(3)));
        let text = stdout(&logcompact(&["analyze", "--format", "kafka", "--dir", path(&dir)], ""));
        assert!(text.contains("open transaction: producer 3000 epoch 4 from offset 15"), "{text}");
        // dump decodes the markers as kafka-dump-log.sh prints them, and in JSON.
        let dump = stdout(&logcompact(&["dump", "--format", "kafka", "--dir", path(&dir)], ""));
        assert!(dump.contains("offset=9 timestamp=1700000000009 endTxnMarker: COMMIT coordinatorEpoch: 7"), "{dump}");
        assert!(dump.contains("offset=10 timestamp=1700000000010 endTxnMarker: ABORT coordinatorEpoch: 7"), "{dump}");
        let json = logcompact(&["dump", "--format", "kafka", "--dir", path(&dir), "--json"], "");
        let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
        let markers: Vec<String> = v["batches"]
            .as_array()
            .expect("batches")
            .iter()
            .flat_map(|b| b["records"].as_array().expect("records").iter())
            .filter_map(|r| r["marker"]["type"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(markers, ["COMMIT", "ABORT", "ABORT"]);

        // What a read_committed reader sees before, and the bytes from the LSO's segment (based at 9) on.
        let before = py.as_deref().map(|py| read_committed(py, &dir, lso).0).unwrap_or_default();
        if with_txn_index {
            expected = py.as_deref().map(|_| latest(&before));
        }
        let untouched = tail_from(&dir, 9);
        let out = logcompact(
            &["compact", "--format", "kafka", "--cleanup-policy", "compact", "--dir", path(&dir), "--until-clean"],
            "",
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let check = logcompact(&["check", "--format", "kafka", "--dir", path(&dir)], "");
        assert_eq!(check.status.code(), Some(0), "{}", stderr(&check));
        assert_eq!(tail_from(&dir, 9), untouched, "the LSO's segment and every later one are as they were");

        let Some(py) = py.as_deref() else { continue };
        let (after, data) = read_committed(py, &dir, lso);
        if with_txn_index {
            assert_eq!(Some(latest(&after)), expected, "the committed view of every key is the source's");
            indexed_after.clone_from(&after);
        } else {
            // The first segment's aborted records went with the pass, which wrote its .txnindex: it reads as
            // in the indexed run. The held segment (no .txnindex in this source) reads as it did, its aborted
            // record 13 included, as Kafka's cleaner leaves it.
            let part = |v: &[(u64, String, String)], held: bool| -> Vec<(u64, String, String)> {
                v.iter().filter(|r| (r.0 >= 9) == held).cloned().collect()
            };
            assert_eq!(part(&after, false), part(&indexed_after, false), "the cleaned segment");
            assert_eq!(part(&after, true), part(&before, true), "the held segment");
        }
        // The aborted records of the first segment (offsets 6 and 7) are gone; the one in the LSO's segment (13)
        // stays, as Kafka's cleaner leaves that segment; so does the hanging transaction's record (15).
        for aborted in [6, 7] {
            assert!(!data.contains(&aborted), "aborted offset {aborted} is gone: {data:?}");
        }
        assert!(data.contains(&13), "the aborted record in the LSO's segment stays: {data:?}");
        assert!(data.contains(&lso), "the open transaction's record stays");
        // Every .txnindex has its .log.
        for e in std::fs::read_dir(&dir).expect("list") {
            let n = e.expect("entry").file_name().into_string().expect("utf-8");
            if let Some(stem) = n.strip_suffix(".txnindex") {
                assert!(dir.join(format!("{stem}.log")).exists(), "{n} has its segment");
            }
        }
    }
}

#[test]
fn the_broker_s_producer_snapshot_gives_a_hanging_transaction_s_coordinator_epoch() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("orders-3");
    let lso = write_partition(&dir, true);
    // The hanging producer wrote no marker: only the broker's producer state knows its coordinator epoch. An
    // entry of its earlier epoch is passed over.
    let entry = |epoch, coordinator_epoch| SnapshotEntry {
        producer_id: HANGING,
        epoch,
        last_sequence: 0,
        last_offset: lso as i64,
        offset_delta: 0,
        timestamp: 1_700_000_000_000,
        coordinator_epoch,
        current_txn_first_offset: lso as i64,
    };
    write_producer_snapshot(&dir.join("00000000000000000012.snapshot"), &[entry(3, 2)]);
    write_producer_snapshot(&dir.join("00000000000000000017.snapshot"), &[entry(3, 5), entry(4, 11)]);
    let out = logcompact(&["analyze", "--format", "kafka", "--dir", path(&dir), "--json"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let a: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let command = a["open_transactions"][0]["abort_command"].as_str().expect("a command");
    assert!(
        command.contains(
            "abort --topic orders --partition 3 --producer-id 3000 --producer-epoch 4 --coordinator-epoch 11"
        ),
        "{command}"
    );
}

/// (offset, key, value) of a record, a tombstone's value `None`.
type Triple = (u64, String, Option<String>);

/// Key → (offset, value) of the latest record of each key among `records` below `end`.
fn latest_below(records: &[Triple], end: u64) -> BTreeMap<String, (u64, Option<String>)> {
    records.iter().filter(|(o, ..)| *o < end).map(|(o, k, v)| (k.clone(), (*o, v.clone()))).collect()
}

fn triple(r: &serde_json::Value) -> Triple {
    (r[0].as_u64().expect("offset"), r[1].as_str().expect("key").to_owned(), r[2].as_str().map(str::to_owned))
}

/// A transactional partition written by librdkafka's transactional producer through the tests' broker, which
/// acts as its transaction coordinator (markers and `.txnindex` entries as a Kafka broker writes them): what
/// the generator says each record's transaction became is the expectation, independent of this tool.
struct Written {
    dir: std::path::PathBuf,
    lso: u64,
    producer_id: i64,
    /// (offset, key, value) of the committed records below the LSO, in offset order.
    committed: Vec<Triple>,
    aborted_offsets: Vec<u64>,
    aborted_transactions: u64,
    open_offsets: Vec<u64>,
}

fn librdkafka_transactional_partitions(py: &str, root: &Path, with_txn_index: bool) -> Vec<Written> {
    let script = common::kafka_script("librdkafka_transactions.py");
    let mut args = vec![script.to_str().expect("utf-8"), path(root)];
    if !with_txn_index {
        args.push("--no-txnindex");
    }
    let v = run_python(py, &args);
    v.as_array()
        .expect("partitions")
        .iter()
        .map(|p| {
            let records = p["records"].as_array().expect("records");
            let offsets_of = |outcome: &str| -> Vec<u64> {
                records
                    .iter()
                    .filter(|r| r["outcome"] == outcome)
                    .map(|r| r["offset"].as_u64().expect("offset"))
                    .collect()
            };
            let committed = p["committed_view"].as_array().expect("committed view").iter().map(triple).collect();
            let aborted_transactions =
                p["transactions"].as_array().expect("transactions").iter().filter(|t| t["outcome"] == "abort").count();
            Written {
                dir: std::path::PathBuf::from(p["dir"].as_str().expect("dir")),
                lso: p["last_stable_offset"].as_u64().expect("lso"),
                producer_id: p["producer_ids"][0].as_i64().expect("producer id"),
                committed,
                aborted_offsets: offsets_of("abort"),
                aborted_transactions: aborted_transactions as u64,
                open_offsets: offsets_of("open"),
            }
        })
        .collect()
}

/// A read_committed reader's records below `lso`, and every offset a data batch holds.
fn committed_view(py: &str, dir: &Path, lso: u64) -> (Vec<Triple>, Vec<u64>) {
    let script = common::kafka_script("read_committed.py");
    let v = run_python(py, &[script.to_str().expect("utf-8"), path(dir), &lso.to_string()]);
    let committed = v["committed"].as_array().expect("committed").iter().map(triple).collect();
    let data = v["data"].as_array().expect("data").iter().map(|r| r[0].as_u64().expect("offset")).collect();
    (committed, data)
}

#[test]
fn librdkafka_s_transactional_partitions_are_compacted_by_kafka_s_rules() {
    let Some(py) = common::kafka_python() else { return };
    for with_txn_index in [true, false] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let written = librdkafka_transactional_partitions(&py, tmp.path(), with_txn_index);
        assert_eq!(written.len(), 3, "one partition a codec");
        for w in &written {
            let dir = &w.dir;
            let check = logcompact(&["check", "--format", "kafka", "--dir", path(dir)], "");
            assert_eq!(check.status.code(), Some(0), "{}", stderr(&check));
            // analyze finds the hanging transaction the producer left, with the coordinator epoch of its
            // producer's markers, and the aborted ones (the fenced one included).
            let out = logcompact(&["analyze", "--format", "kafka", "--dir", path(dir), "--json"], "");
            assert!(out.status.success(), "{}", stderr(&out));
            let a: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
            assert_eq!(a["last_stable_offset"].as_u64(), Some(w.lso), "{}", dir.display());
            let open = a["open_transactions"].as_array().expect("open transactions");
            assert_eq!(open.len(), 1, "{open:?}");
            assert_eq!(
                (open[0]["producer_id"].as_i64(), open[0]["first_offset"].as_u64()),
                (Some(w.producer_id), Some(w.lso))
            );
            let command = open[0]["abort_command"].as_str().expect("a command");
            assert!(
                command.contains(&format!("--producer-id {}", w.producer_id))
                    && command.contains("--coordinator-epoch 7"),
                "{command}"
            );
            assert_eq!(a["aborted_transactions"].as_u64(), Some(w.aborted_transactions), "{a}");
            assert_eq!(a["aborted_records"].as_u64(), Some(w.aborted_offsets.len() as u64), "{a}");

            let lso_segment = std::fs::read_dir(dir)
                .expect("list")
                .filter_map(|e| e.expect("entry").file_name().into_string().ok())
                .filter_map(|n| n.strip_suffix(".log").and_then(|b| b.parse::<u64>().ok()))
                .filter(|base| *base <= w.lso)
                .max()
                .expect("a segment holds the LSO");
            let untouched = tail_from(dir, lso_segment);
            let out = logcompact(
                &["compact", "--format", "kafka", "--cleanup-policy", "compact", "--dir", path(dir), "--until-clean"],
                "",
            );
            assert!(out.status.success(), "{}", stderr(&out));
            let check = logcompact(&["check", "--format", "kafka", "--dir", path(dir)], "");
            assert_eq!(check.status.code(), Some(0), "{}", stderr(&check));
            assert_eq!(tail_from(dir, lso_segment), untouched, "the segments from the LSO's on are as they were");

            // A read_committed reader of the result (filtering by the .txnindex files the pass wrote or kept)
            // sees the latest committed record of every key the producer committed, and no aborted record.
            // Without the broker's .txnindex files, the segments from the LSO's on (which no pass may rewrite)
            // still have none, so a reader sees their aborted records: the view is compared below them.
            let (after, data) = committed_view(&py, dir, w.lso);
            let end = if with_txn_index { w.lso } else { lso_segment };
            assert_eq!(
                latest_below(&after, end),
                latest_below(&w.committed, end),
                "{}: the committed view of every key below {end}",
                dir.display()
            );
            // Aborted records in the segments a pass may take (those before the LSO's segment) are gone.
            let left: Vec<&u64> = w.aborted_offsets.iter().filter(|o| **o < lso_segment && data.contains(o)).collect();
            assert!(left.is_empty(), "{}: aborted offsets left below the LSO's segment: {left:?}", dir.display());
            assert!(w.open_offsets.iter().all(|o| data.contains(o)), "the open transaction's records stay");
            for e in std::fs::read_dir(dir).expect("list") {
                let n = e.expect("entry").file_name().into_string().expect("utf-8");
                if let Some(stem) = n.strip_suffix(".txnindex") {
                    assert!(dir.join(format!("{stem}.log")).exists(), "{n} has its segment");
                }
            }
        }
    }
}
