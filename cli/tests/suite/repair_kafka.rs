//! `repair --format kafka` as an operator runs it on a damaged partition of a stopped broker: `check` names
//! the damage, `repair` without `--apply` changes nothing, with it the damaged batch is cut (a copy kept), the
//! indexes are rewritten, `check` passes, kafka-python reads every other record, and a held broker lock keeps
//! it out.
#![expect(clippy::big_endian_bytes, reason = "Kafka's format is big-endian")]

use crate::common;
use common::{contents, kafka_partition, kafka_python, kafka_python_records, kafka_records, logcompact, path, stderr};

/// The byte range of the `nth` batch of a Kafka segment's bytes.
fn batch_range(bytes: &[u8], nth: usize) -> (usize, usize) {
    let mut pos = 0;
    for _ in 0..nth {
        pos += 12 + i32::from_be_bytes(bytes[pos + 8..pos + 12].try_into().expect("4")) as usize;
    }
    (pos, pos + 12 + i32::from_be_bytes(bytes[pos + 8..pos + 12].try_into().expect("4")) as usize)
}

#[test]
fn repair_cuts_a_damaged_batch_of_a_kafka_partition_and_keeps_every_other_record() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let part = tmp.path().join("kafka-logs").join("orders-0");
    // Four segments of three batches of 20 records; the second segment's middle batch gets a flipped byte.
    kafka_partition(&part, 1000, 4, 3, 20);
    let written = kafka_records(&part);
    let seg = part.join(format!("{:020}.log", 60));
    let mut bytes = std::fs::read(&seg).expect("read");
    let (start, end) = batch_range(&bytes, 1);
    bytes[end - 2] ^= 0x40;
    std::fs::write(&seg, &bytes).expect("write");

    let check = logcompact(&["check", "--format", "kafka", "--dir", path(&part)], "");
    assert_eq!(check.status.code(), Some(1), "{}", stderr(&check));
    assert!(stderr(&check).contains("00000000000000000060.log"), "{}", stderr(&check));

    let before = contents(&part);
    let dry = logcompact(&["repair", "--format", "kafka", "--dir", path(&part)], "");
    assert_eq!(dry.status.code(), Some(0), "{}", stderr(&dry));
    let text = String::from_utf8_lossy(&dry.stdout).into_owned();
    // The plan says what the repair costs by offset, as a person reads it: the damaged batch's 20 records.
    assert!(
        text.contains(&format!("it drops bytes {start}..{end}: offsets 80-99 (up to 20 records)"))
            && text.contains("--format kafka --apply"),
        "{text}"
    );
    let plan = logcompact(&["repair", "--format", "kafka", "--dir", path(&part), "--json"], "");
    let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).expect("JSON");
    assert_eq!(
        plan["actions"][0]["offsets"],
        serde_json::json!([{"first": 80, "last": 99, "records_at_most": 20}]),
        "{plan}"
    );
    assert_eq!(contents(&part), before, "without --apply nothing changes");

    let applied = logcompact(&["repair", "--format", "kafka", "--dir", path(&part), "--apply", "--json"], "");
    assert_eq!(applied.status.code(), Some(0), "{}", stderr(&applied));
    let copies: Vec<_> = std::fs::read_dir(&part)
        .expect("list")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("repair-") && n.ends_with(&format!(".00000000000000000060.log.{start}-{end}.bytes")))
        .collect();
    assert_eq!(copies.len(), 1, "a copy of the cut batch is kept");
    assert_eq!(std::fs::read(part.join(&copies[0])).expect("copy"), bytes[start..end].to_vec());
    let check = logcompact(&["check", "--format", "kafka", "--dir", path(&part)], "");
    assert_eq!(check.status.code(), Some(0), "{}", stderr(&check));
    // --apply dropped exactly the offsets the plan listed.
    let want: Vec<_> = written.iter().filter(|r| !(80..100).contains(&r.0)).cloned().collect();
    assert_eq!(kafka_records(&part), want, "every record but the damaged batch's");
    if let Some(py) = kafka_python() {
        assert_eq!(kafka_python_records(&py, &part), want, "kafka-python reads the repaired partition");
    }
    assert!(part.join("00000000000000000060.index").exists() && part.join("00000000000000000060.timeindex").exists());

    // Under a held broker lock (this process holds it) a repair is refused and changes nothing.
    let after = contents(&part);
    let lock = storage_file::lock_log_dir(part.parent().expect("log dir")).expect("lock");
    let refused = logcompact(&["repair", "--format", "kafka", "--dir", path(&part), "--apply"], "");
    assert_eq!(refused.status.code(), Some(3), "{}", stderr(&refused));
    assert_eq!(contents(&part), after);
    drop(lock);
}

#[test]
fn repair_rebuilds_a_damaged_txnindex_from_the_batches_as_a_broker_would() {
    // check, compact and analyze refused a damaged .txnindex and sent the operator to repair, which said there
    // was nothing to repair.
    let tmp = tempfile::tempdir().expect("tempdir");
    let template = tmp.path().join("template").join("orders-0");
    common::transactions::write_partition(&template, true);
    let (index, good) = std::fs::read_dir(&template)
        .expect("list")
        .filter_map(|e| e.ok())
        .find(|e| e.file_name().to_string_lossy().ends_with(".txnindex"))
        .map(|e| (e.file_name().into_string().expect("utf-8"), std::fs::read(e.path()).expect("read")))
        .expect("a .txnindex");
    assert!(good.len() >= 2 * 34, "two aborted transactions");
    let mut wrong_producer = good.clone();
    wrong_producer[2 + 7] ^= 1; // the first entry's producer id
    let damages: Vec<(&str, Vec<u8>)> = vec![
        ("cut short", good[..good.len() - 5].to_vec()),
        ("an entry of another producer", wrong_producer),
        ("an entry missing", good[34..].to_vec()),
    ];
    for (what, bytes) in damages {
        let part = tmp.path().join(what.replace(' ', "-")).join("orders-0");
        common::transactions::write_partition(&part, true);
        std::fs::write(part.join(&index), &bytes).expect("write");
        let check = logcompact(&["check", "--format", "kafka", "--dir", path(&part)], "");
        assert_eq!(check.status.code(), Some(1), "{what}: {}", stderr(&check));
        assert!(stderr(&check).contains(&index), "{what}: {}", stderr(&check));
        let before = contents(&part);
        let dry = logcompact(&["repair", "--format", "kafka", "--dir", path(&part)], "");
        assert_eq!(dry.status.code(), Some(0), "{what}: {}", stderr(&dry));
        let text = String::from_utf8_lossy(&dry.stdout).into_owned();
        assert!(text.contains(&format!("rebuild {index}")), "{what}: {text}");
        assert_eq!(contents(&part), before, "{what}: the plan changed nothing");
        let out = logcompact(&["repair", "--format", "kafka", "--dir", path(&part), "--apply"], "");
        assert_eq!(out.status.code(), Some(0), "{what}: {}", stderr(&out));
        assert_eq!(std::fs::read(part.join(&index)).expect("read"), good, "{what}: the broker's own entries");
        let check = logcompact(&["check", "--format", "kafka", "--dir", path(&part)], "");
        assert_eq!(check.status.code(), Some(0), "{what}: {}", stderr(&check));
        let kept: Vec<String> = contents(&part).into_keys().filter(|n| n.starts_with("repair-")).collect();
        assert_eq!(kept.len(), 1, "{what}: a copy of the damaged index: {kept:?}");
    }
}
