//! `dump --format kafka` for scripts: `--json-lines` streams one object a batch; `--from-offset`,
//! `--to-offset` and `--key` filter batches and records; on a native log those flags are refused.

use crate::common;
use common::{kafka_partition, logcompact, path, stderr, stdout};

fn lines(args: &[&str]) -> Vec<serde_json::Value> {
    let out = logcompact(args, "");
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out).lines().map(|l| serde_json::from_str(l).expect("a JSON object a line")).collect()
}

fn offsets(batches: &[serde_json::Value]) -> Vec<u64> {
    batches
        .iter()
        .flat_map(|b| b["records"].as_array().expect("records").iter().map(|r| r["offset"].as_u64().expect("offset")))
        .collect()
}

#[test]
fn json_lines_and_filters_for_scripts() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("orders-0");
    // 3 segments of 4 batches of 5 records, keys k0..k6 in turn.
    let next = kafka_partition(&dir, 7, 3, 4, 5);
    let d = path(&dir);
    let all = lines(&["dump", "--format", "kafka", "--dir", d, "--json-lines"]);
    assert_eq!(all.len(), 12, "a line a batch");
    assert_eq!(offsets(&all), (0..next).collect::<Vec<_>>());

    let some =
        lines(&["dump", "--format", "kafka", "--dir", d, "--json-lines", "--from-offset", "7", "--to-offset", "21"]);
    assert_eq!(some.len(), 4, "the batches reaching 7..=21: 5-9, 10-14, 15-19, 20-24");
    assert_eq!(offsets(&some), (7..=21).collect::<Vec<_>>());

    let k3 = lines(&["dump", "--format", "kafka", "--dir", d, "--json-lines", "--key", "k3"]);
    let want: Vec<u64> = (0..next).filter(|o| o % 7 == 3).collect();
    assert_eq!(offsets(&k3), want);
    assert!(k3.iter().all(|b| !b["records"].as_array().expect("records").is_empty()), "only batches holding k3");

    let text = stdout(&logcompact(&["dump", "--format", "kafka", "--dir", d, "--key", "k3", "--to-offset", "10"], ""));
    let records: Vec<&str> = text.lines().filter(|l| l.starts_with("  offset=")).collect();
    assert_eq!(records.len(), 2, "offsets 3 and 10: {text}");

    // The whole-document form still parses, filtered the same way.
    let out = logcompact(&["dump", "--format", "kafka", "--dir", d, "--json", "--from-offset", "55"], "");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(offsets(v["batches"].as_array().expect("batches")), (55..next).collect::<Vec<_>>());

    // A range with nothing in it is a mistake, not an empty dump.
    let reversed =
        logcompact(&["dump", "--format", "kafka", "--dir", d, "--from-offset", "10", "--to-offset", "5"], "");
    assert_eq!(reversed.status.code(), Some(2), "{}", stderr(&reversed));
    assert!(stderr(&reversed).contains("--from-offset 10 is past --to-offset 5"), "{}", stderr(&reversed));

    let native = tmp.path().join("native");
    let made = logcompact(&["run", "--backend", "file", "--dir", path(&native), "-"], "PUT a 1\n");
    assert!(made.status.success(), "{}", stderr(&made));
    let refused = logcompact(&["dump", "--dir", path(&native), "--key", "a"], "");
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("--format kafka"), "{}", stderr(&refused));
}

#[test]
#[expect(clippy::big_endian_bytes, reason = "Kafka's records are big-endian")]
fn consumer_offsets_records_are_decoded() {
    use log_core::kafka::{Compression, RecordToWrite, new_header, write_batch};
    let string = |s: &str, out: &mut Vec<u8>| {
        out.extend_from_slice(&(s.len() as i16).to_be_bytes());
        out.extend_from_slice(s.as_bytes());
    };
    // A committed offset (key version 1, value version 3), then the group's metadata (key 2, value 2), then
    // the offset deleted (a tombstone).
    let mut commit_key = 1i16.to_be_bytes().to_vec();
    string("payments", &mut commit_key);
    string("orders", &mut commit_key);
    commit_key.extend_from_slice(&7i32.to_be_bytes());
    let mut commit = 3i16.to_be_bytes().to_vec();
    commit.extend_from_slice(&1234i64.to_be_bytes());
    commit.extend_from_slice(&5i32.to_be_bytes());
    string("", &mut commit);
    commit.extend_from_slice(&1_700_000_000_000i64.to_be_bytes());
    let mut group_key = 2i16.to_be_bytes().to_vec();
    string("payments", &mut group_key);
    let mut group = 2i16.to_be_bytes().to_vec();
    string("consumer", &mut group);
    group.extend_from_slice(&9i32.to_be_bytes());
    string("range", &mut group);
    string("member-1", &mut group);
    group.extend_from_slice(&1_700_000_000_000i64.to_be_bytes());
    group.extend_from_slice(&1i32.to_be_bytes());
    // Another group's committed offset, left alive.
    let mut billing_key = 1i16.to_be_bytes().to_vec();
    string("billing", &mut billing_key);
    string("orders", &mut billing_key);
    billing_key.extend_from_slice(&0i32.to_be_bytes());
    let kv: [(&[u8], Option<&[u8]>); 5] = [
        (&commit_key, Some(&commit)),
        (&group_key, Some(&group)),
        (&billing_key, Some(&commit)),
        (&commit_key, None),
        (&billing_key, Some(&commit)),
    ];
    let records: Vec<RecordToWrite<'_>> = kv
        .iter()
        .enumerate()
        .map(|(i, (k, v))| RecordToWrite {
            offset: i as i64,
            timestamp: 1_700_000_000_000,
            key: Some(k),
            value: *v,
            header_count: 0,
            header_bytes: &[],
        })
        .collect();
    let (mut bytes, mut scratch) = (Vec::new(), Vec::new());
    write_batch(&new_header(0, 4), Compression::None, None, &records, &mut bytes, &mut scratch).expect("batch");
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("__consumer_offsets-0");
    std::fs::create_dir(&dir).expect("mkdir");
    std::fs::write(dir.join(format!("{:020}.log", 0)), &bytes).expect("segment");

    let text = stdout(&logcompact(&["dump", "--format", "kafka", "--dir", path(&dir), "--offsets-decoder"], ""));
    assert!(
        text.contains("offset_commit group=payments topic=orders partition=7: offset=1234 leader_epoch=5"),
        "{text}"
    );
    assert!(text.contains("group_metadata group=payments: protocol_type=consumer generation=9 protocol=range"));
    assert!(text.contains("partition=7: TOMBSTONE (deleted)"), "{text}");
    let batches = lines(&["dump", "--format", "kafka", "--dir", path(&dir), "--json-lines", "--offsets-decoder"]);
    let decoded: Vec<&str> = batches[0]["records"]
        .as_array()
        .expect("records")
        .iter()
        .map(|r| r["decoded"]["value"]["type"].as_str().expect("type"))
        .collect();
    assert_eq!(decoded, ["offset_commit", "group_metadata", "offset_commit", "tombstone", "offset_commit"]);

    // analyze counts each group's keys as a compaction leaves them.
    let analysis: serde_json::Value = serde_json::from_slice(
        &logcompact(&["analyze", "--format", "kafka", "--dir", path(&dir), "--json"], "").stdout,
    )
    .expect("analyze --json");
    let groups = &analysis["consumer_groups"]["groups"];
    assert_eq!(
        groups,
        &serde_json::json!([
            {"group": "billing", "records": 2, "live_offsets": 1, "tombstoned_offsets": 0, "live_metadata": 0,
             "tombstoned_metadata": 0},
            {"group": "payments", "records": 3, "live_offsets": 0, "tombstoned_offsets": 1, "live_metadata": 1,
             "tombstoned_metadata": 0},
        ]),
        "{analysis}"
    );
    let text = stdout(&logcompact(&["analyze", "--format", "kafka", "--dir", path(&dir)], ""));
    assert!(text.contains("consumer groups (2)"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("payments") && l.ends_with("live")), "{text}");
}
