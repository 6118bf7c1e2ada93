//! `check --format kafka` reads each closed segment's `.index` and `.timeindex` as a broker's sanity check
//! does: the ones a compaction wrote are verified; a damaged entry is a notice naming the file and entry (a
//! broker rebuilds a damaged index, so the partition is not corrupt: exit 0); nothing is written.

use crate::common;
use common::{contents, logcompact, path, stderr, stdout};

#[test]
fn check_verifies_kafka_indexes_and_names_a_damaged_one() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("orders-0");
    common::kafka_partition(&dir, 5000, 3, 100, 50);
    let out = logcompact(&["compact", "--format", "kafka", "--cleanup-policy", "compact", "--dir", path(&dir)], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let index = dir.join("00000000000000000000.index");
    assert!(index.exists(), "the compaction wrote Kafka's indexes");

    let out = logcompact(&["check", "--format", "kafka", "--dir", path(&dir), "--json"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    let verified = report["indexes_verified"].as_u64().expect("indexes_verified");
    assert!(verified >= 2, "every closed segment's .index and .timeindex verified: {report}");
    assert!(!stderr(&out).contains("notice"), "{}", stderr(&out));

    // An entry pointing past its segment, as a torn or overwritten index holds.
    let mut bytes = std::fs::read(&index).expect("read");
    assert!(bytes.len() >= 8, "the index has an entry");
    bytes[..4].copy_from_slice(&[0x7f; 4]);
    std::fs::write(&index, &bytes).expect("write");
    let before = contents(tmp.path());
    let out = logcompact(&["check", "--format", "kafka", "--dir", path(&dir), "--json"], "");
    assert!(out.status.success(), "a damaged index is not a damaged partition: {}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("notice: 00000000000000000000.index: entry 0 (offset 2139062143") && err.contains("outside 0..="),
        "{err}"
    );
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(report["indexes_verified"].as_u64(), Some(verified - 1), "{report}");
    assert_eq!(contents(tmp.path()), before, "check writes nothing");
}
