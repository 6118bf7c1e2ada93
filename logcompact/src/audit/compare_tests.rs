//! `compare` on audit files written by hand: replicas cleaned at different moments agree, a key back on one
//! replica is found with its offset, recent keys are counted, not flagged, and bad files are errors.

use std::path::{Path, PathBuf};

use super::compare::{CompareError, Outcome, View, compare};
use super::digest::{Entry, RangeHashes};
use super::file::{AuditWriter, BrokerHeader, PartitionHeader};
use kafka_records::kraft::image::PartitionState;

/// A replica: (key, offset, value or deleted) records as its latest per key.
type Latest<'a> = &'a [(&'a str, u64, Option<&'a str>)];

fn write(dir: &Path, node: i32, cluster: &str, end: u64, latest: Latest<'_>, topic_id: &str) -> PathBuf {
    write_with(dir, node, cluster, end, latest, topic_id, |_| {})
}

fn write_with(
    dir: &Path,
    node: i32,
    cluster: &str,
    end: u64,
    latest: Latest<'_>,
    topic_id: &str,
    tweak: impl Fn(&mut PartitionHeader),
) -> PathBuf {
    let path = dir.join(format!("broker-{node}.audit"));
    let mut metadata = std::collections::BTreeMap::new();
    metadata.insert(
        "t-0".to_owned(),
        PartitionState { replicas: vec![1, 2, 3], isr: vec![1, 2, 3], leader: 1, leader_epoch: 4 },
    );
    let broker =
        BrokerHeader { node_id: Some(node), cluster_id: Some(cluster.into()), metadata, ..BrokerHeader::default() };
    let mut w = AuditWriter::create(&path, &broker).expect("create");
    let mut entries: Vec<Entry> =
        latest.iter().map(|(k, o, v)| Entry::of(k.as_bytes(), v.map(str::as_bytes), *o, false)).collect();
    entries.sort_by_key(|e| e.key_hash);
    let mut header = PartitionHeader {
        name: "t-0".into(),
        topic: "t".into(),
        topic_id: Some(topic_id.into()),
        log_end: end,
        high_watermark: Some(end),
        last_stable_offset: end,
        keys: entries.len() as u64,
        ..PartitionHeader::default()
    };
    tweak(&mut header);
    w.partition(&header, &mut |sink| {
        for e in &entries {
            sink(*e)?;
        }
        Ok(entries.len() as u64)
    })
    .expect("partition");
    w.finish().expect("finish");
    path
}

#[test]
fn cleaners_at_different_moments_agree_and_a_key_back_is_found_at_its_offset() {
    let tmp = tempfile::tempdir().expect("tmp");
    // Broker 1 cleaned everything (tombstone of a gone); broker 2 still holds the tombstone; broker 3 never
    // received it and holds a's old value at offset 0.
    let one = write(tmp.path(), 1, "c", 100, &[("b", 5, Some("2"))], "T");
    let two = write(tmp.path(), 2, "c", 100, &[("a", 7, None), ("b", 5, Some("2"))], "T");
    let three = write(tmp.path(), 3, "c", 100, &[("a", 0, Some("1")), ("b", 5, Some("2"))], "T");
    let agree = compare(&[one.clone(), two.clone()]).expect("compare");
    assert!(!agree.disagrees(), "{agree:?}");
    assert_eq!(agree.partitions[0].keys_compared, 2);
    let report = compare(&[one, two, three]).expect("compare");
    let p = &report.partitions[0];
    assert_eq!(p.keys_disagreeing, 1);
    assert_eq!(p.outcomes.get(&Outcome::DeletedKeyBack), Some(&1));
    let d = &p.disagreements[0];
    assert_eq!(d.odd, vec![3]);
    assert!(matches!(d.views[&3], View::Live { offset: 0, .. }), "{d:?}");
    assert_eq!(d.views[&2], View::Deleted { offset: 7 });
}

#[test]
fn keys_past_the_lowest_last_stable_offset_are_counted_not_flagged() {
    let tmp = tempfile::tempdir().expect("tmp");
    // Broker 2 has not fetched offset 50 yet.
    let one = write(tmp.path(), 1, "c", 60, &[("a", 50, Some("new"))], "T");
    let two = write(tmp.path(), 2, "c", 40, &[("a", 3, Some("old"))], "T");
    let report = compare(&[one, two]).expect("compare");
    let p = &report.partitions[0];
    assert!(!report.disagrees(), "{p:?}");
    assert_eq!((p.keys_recent, p.keys_compared), (1, 0));
    assert_eq!(p.missing, vec![3], "the metadata names broker 3, whose file is missing");
}

#[test]
fn bad_files_are_errors_never_an_agreement() {
    let tmp = tempfile::tempdir().expect("tmp");
    let one = write(tmp.path(), 1, "c", 10, &[("a", 1, Some("x"))], "T");
    let other = write(&tmp.path().join("x").tap_mkdir(), 2, "elsewhere", 10, &[("a", 1, Some("x"))], "T");
    assert!(matches!(compare(&[one.clone(), other]), Err(CompareError::OtherCluster { .. })));
    let two = write(tmp.path(), 2, "c", 10, &[("a", 1, Some("x"))], "T");
    // Cut short, anywhere: an error naming the file.
    let bytes = std::fs::read(&two).expect("read");
    for cut in [4, 20, bytes.len() - 30, bytes.len() - 1] {
        let cut_path = tmp.path().join("cut.audit");
        std::fs::write(&cut_path, &bytes[..cut]).expect("write");
        let e = compare(&[one.clone(), cut_path]).expect_err("a cut file is an error");
        assert!(e.to_string().contains("cut.audit"), "{e}");
    }
    // A flipped byte in the entries: the checksum says so.
    let mut flipped = bytes.clone();
    let at = flipped.len() - 30;
    flipped[at] ^= 1;
    let flipped_path = tmp.path().join("flipped.audit");
    std::fs::write(&flipped_path, &flipped).expect("write");
    assert!(compare(&[one.clone(), flipped_path]).is_err());
    // Another version.
    let mut v2 = bytes;
    v2[8] = 2;
    let v2_path = tmp.path().join("v2.audit");
    std::fs::write(&v2_path, &v2).expect("write");
    assert!(compare(&[one.clone(), v2_path]).expect_err("version").to_string().contains("version 2"));
    // Another topic under the same name: not compared, never "agree".
    let renamed = write(&tmp.path().join("y").tap_mkdir(), 3, "c", 10, &[("a", 1, Some("x"))], "OTHER");
    let report = compare(&[one, renamed]).expect("compare");
    assert!(report.partitions[0].not_compared.as_deref().is_some_and(|w| w.contains("different topics")));
}

#[test]
fn a_transaction_open_on_a_replica_that_fetched_past_its_marker_is_stuck_and_one_behind_is_not() {
    let tmp = tempfile::tempdir().expect("tmp");
    let leader = write(tmp.path(), 1, "c", 100, &[("a", 5, Some("x"))], "T");
    let open_at_40 = |end: u64| {
        move |h: &mut PartitionHeader| {
            h.open_transactions = vec![(7, 40)];
            h.last_stable_offset = 40;
            h.log_end = end;
        }
    };
    let behind = write_with(&tmp.path().join("b").tap_mkdir(), 2, "c", 60, &[("a", 5, Some("x"))], "T", open_at_40(60));
    let report = compare(&[leader.clone(), behind]).expect("compare");
    assert!(report.partitions[0].stuck_transactions.is_empty(), "a replica behind the marker is not flagged");
    let past = write_with(&tmp.path().join("p").tap_mkdir(), 2, "c", 100, &[("a", 5, Some("x"))], "T", open_at_40(100));
    let report = compare(&[leader, past]).expect("compare");
    assert_eq!(report.partitions[0].stuck_transactions, vec![(2, 7, 40)]);
    assert!(report.disagrees());
}

trait MkDir {
    fn tap_mkdir(self) -> Self;
}

impl MkDir for PathBuf {
    fn tap_mkdir(self) -> Self {
        std::fs::create_dir_all(&self).expect("mkdir");
        self
    }
}

/// As [`write`], a summary (`audit --summary`): the key-range hashes in the header, no entries.
fn write_summary(dir: &Path, node: i32, end: u64, latest: Latest<'_>) -> PathBuf {
    let mut entries: Vec<Entry> =
        latest.iter().map(|(k, o, v)| Entry::of(k.as_bytes(), v.map(str::as_bytes), *o, false)).collect();
    entries.sort_by_key(|e| e.key_hash);
    let mut ranges = super::digest::RangeHashes::new();
    for e in &entries {
        ranges.add(e);
    }
    let path = dir.join(format!("broker-{node}.summary"));
    let broker = BrokerHeader { node_id: Some(node), cluster_id: Some("c".into()), ..BrokerHeader::default() };
    let mut w = AuditWriter::create(&path, &broker).expect("create");
    let header = PartitionHeader {
        name: "t-0".into(),
        topic: "t".into(),
        topic_id: Some("T".into()),
        log_end: end,
        high_watermark: Some(end),
        last_stable_offset: end,
        keys: entries.len() as u64,
        ranges: Some(ranges.sized()),
        ..PartitionHeader::default()
    };
    w.partition(&header, &mut |_| Ok(0)).expect("partition");
    w.finish().expect("finish");
    path
}

#[test]
fn summaries_agree_range_by_range_and_a_differing_range_asks_for_a_full_audit() {
    let tmp = tempfile::tempdir().expect("tmp");
    let keys: Vec<String> = (0..5_000).map(|k| format!("key-{k}")).collect();
    let base: Vec<(&str, u64, Option<&str>)> =
        keys.iter().enumerate().map(|(i, k)| (k.as_str(), i as u64, Some("v"))).collect();
    // Broker 2 still holds a tombstone broker 1 removed: they read the same.
    let mut with_tombstone = base.clone();
    with_tombstone.push(("gone", 6_000, None));
    let one = write_summary(tmp.path(), 1, 7_000, &base);
    let two = write_summary(tmp.path(), 2, 7_000, &with_tombstone);
    let report = compare(&[one.clone(), two]).expect("compare");
    let p = &report.partitions[0];
    let r = p.ranges.as_ref().expect("compared by ranges");
    assert_eq!((r.ranges_differing, p.needs_attention()), (0, false), "{p:?}");
    assert_eq!(r.ranges, 256, "5,000 keys in 256 ranges of about 20 keys: {r:?}");
    // Broker 3 holds one key back (its tombstone removed before it fetched it): one range differs.
    let mut back = base.clone();
    back.push(("gone", 10, Some("old")));
    let three = write_summary(tmp.path(), 3, 7_000, &back);
    let report = compare(&[one.clone(), three]).expect("compare");
    let p = &report.partitions[0];
    assert_eq!(p.ranges.as_ref().map(|r| r.ranges_differing), Some(1), "{p:?}");
    assert!(p.needs_attention() && report.disagrees());
    // A summary beside a full audit: the full file's ranges are folded from its entries.
    let full = write(tmp.path(), 4, "c", 7_000, &base, "T");
    let report = compare(&[one, full.clone()]).expect("compare");
    assert_eq!(report.partitions[0].ranges.as_ref().map(|r| r.ranges_differing), Some(0), "{report:?}");
    let full_back = write(tmp.path(), 5, "c", 7_000, &back, "T");
    let report = compare(&[full, full_back]).expect("compare");
    assert!(report.partitions[0].ranges.is_none(), "two full files are compared key by key");
    assert_eq!(report.partitions[0].keys_disagreeing, 1);
}

#[test]
fn a_summary_file_announcing_entries_is_damage() {
    let tmp = tempfile::tempdir().expect("tmp");
    let path = tmp.path().join("bad.summary");
    let broker = BrokerHeader { node_id: Some(1), cluster_id: Some("c".into()), ..BrokerHeader::default() };
    let mut w = AuditWriter::create(&path, &broker).expect("create");
    let header =
        PartitionHeader { name: "t-0".into(), keys: 1, ranges: Some(RangeHashes::new()), ..PartitionHeader::default() };
    let e = Entry::of(b"k", Some(b"v"), 1, false);
    let wrote = w.partition(&header, &mut |sink| {
        sink(e)?;
        Ok(1)
    });
    assert!(wrote.is_err(), "a summary holds no entries");
}
