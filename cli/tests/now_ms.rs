//! A fixed clock (`--now-ms`): the same input, settings and clock give the same bytes on every run, in every
//! codec, because the delete horizons stamped into kept tombstones' batches come from that clock, as Kafka's
//! tests inject their `Time`.

use std::collections::BTreeSet;
use std::path::Path;

mod common;
use common::{PartitionSpec, contents, logcompact, path, stderr, stdout, write_kafka_partition};

const NOW: i64 = 1_700_000_000_000;

fn partition(dir: &Path) {
    let spec =
        PartitionSpec { keys: 40, segments: 5, batches: 4, per_batch: 25, tombstone_every: 7, mixed_codecs: true };
    write_kafka_partition(dir, &spec);
}

fn compact(dir: &Path, now: Option<i64>) {
    let now_text = now.map(|n| n.to_string());
    let mut args = vec![
        "compact",
        "--format",
        "kafka",
        "--cleanup-policy",
        "compact",
        "--dir",
        path(dir),
        "--until-clean",
        "--delete-retention-ms",
        "1000",
    ];
    if let Some(n) = &now_text {
        args.extend(["--now-ms", n]);
    }
    let out = logcompact(&args, "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// The delete horizons stamped in the partition's batches.
fn horizons(dir: &Path) -> BTreeSet<i64> {
    let out = logcompact(&["dump", "--format", "kafka", "--json", "--dir", path(dir)], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    v["batches"].as_array().expect("batches").iter().filter_map(|b| b["delete_horizon"].as_i64()).collect()
}

#[test]
fn the_same_clock_gives_the_same_bytes_and_stamps_its_horizon() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (a, b, c) = (tmp.path().join("a-0"), tmp.path().join("b-0"), tmp.path().join("c-0"));
    for d in [&a, &b, &c] {
        partition(d);
    }
    compact(&a, Some(NOW));
    std::thread::sleep(std::time::Duration::from_millis(20));
    compact(&b, Some(NOW));
    assert_eq!(contents(&a), contents(&b), "two runs with one clock wrote the same files");
    assert_eq!(horizons(&a), BTreeSet::from([NOW + 1000]), "every kept tombstone's horizon is now + retention");
    // The system clock stamps something else: the clock given is what was used.
    compact(&c, None);
    assert!(!horizons(&c).contains(&(NOW + 1000)), "{:?}", horizons(&c));
}

#[test]
fn a_fixed_clock_is_refused_where_time_must_pass() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = logcompact(&["clean", "--data-dir", path(tmp.path()), "--watch", "--now-ms", "5"], "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--until-clean"), "{}", stderr(&out));
    let out = logcompact(&["compact", "--dir", path(tmp.path()), "--now-ms", "-5"], "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}
