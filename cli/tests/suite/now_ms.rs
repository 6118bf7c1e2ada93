//! A fixed clock (`--now-ms`): the same input, settings and clock give the same bytes on every run, in every
//! codec, because the delete horizons stamped into kept tombstones' batches come from that clock, as Kafka's
//! tests inject their `Time`.

use std::collections::BTreeSet;
use std::path::Path;

use crate::common;
use common::{
    PartitionSpec, contents, logcompact, path, stderr, stdout, write_kafka_partition, write_kafka_partition_at,
};

const NOW: i64 = 1_700_000_000_000;

fn partition(dir: &Path) {
    let spec =
        PartitionSpec { keys: 40, segments: 5, batches: 4, per_batch: 25, tombstone_every: 7, mixed_codecs: true };
    write_kafka_partition(dir, &spec);
}

fn compact(dir: &Path, now: Option<i64>) {
    let now_text = now.map(|n| n.to_string());
    let mut args = crate::common::compact_kafka(path(dir), &["--until-clean", "--delete-retention-ms", "1000"]);
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

/// The number of tombstones left in the partition in `dir`.
fn tombstones(dir: &Path) -> usize {
    let out = logcompact(&["dump", "--format", "kafka", "--json", "--dir", path(dir)], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    v["batches"]
        .as_array()
        .expect("batches")
        .iter()
        .flat_map(|b| b["records"].as_array().into_iter().flatten())
        .filter(|r| r["value"].is_null())
        .count()
}

/// Issue 42, finding 3: a clock given by hand could stamp delete horizons in the past of the records (1970, or
/// `--now-ms 0`), so the next ordinary pass dropped every tombstone of a topic keeping them an hour; or lie
/// years ahead and drop them at once. Now `compact` and `clean` refuse a clock more than an hour before the
/// newest record or more than a day after the system clock, unless `--i-know-the-clock`.
#[test]
fn a_clock_that_would_purge_tombstones_early_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let spec =
        PartitionSpec { keys: 20, segments: 3, batches: 3, per_batch: 10, tombstone_every: 4, mixed_codecs: false };
    let now = log_core::now_ms();
    let dir = tmp.path().join("events-0");
    write_kafka_partition_at(&dir, &spec, now - 60_000);
    let before = contents(&dir);
    let base = ["--format", "kafka", "--cleanup-policy", "compact", "--delete-retention-ms", "3600000"];
    let ahead = (now + 10 * 365 * 86_400_000).to_string();
    for clock in ["0", "-5", "1000", &ahead] {
        let mut args = vec!["compact", "--dir", path(&dir), "--until-clean", "--now-ms", clock];
        args.extend(base);
        let out = logcompact(&args, "");
        assert_eq!(out.status.code(), Some(2), "--now-ms {clock}: {}", stderr(&out));
        assert!(stderr(&out).contains("--i-know-the-clock") || clock == "-5", "{}", stderr(&out));
        assert_eq!(contents(&dir), before, "--now-ms {clock} changed nothing");
    }
    // clean checks the clock the same way, for each partition.
    let conf = tmp.path().join("topics.conf");
    std::fs::write(&conf, "[events]\ncleanup.policy = compact\ndelete.retention.ms = 3600000\n").expect("write");
    for (clock, why) in [("-5", "before 1970"), ("0", "before the newest record")] {
        let out = logcompact(
            &[
                "clean",
                "--format",
                "kafka",
                "--data-dir",
                path(tmp.path()),
                "--config",
                path(&conf),
                "--until-clean",
                "--now-ms",
                clock,
            ],
            "",
        );
        assert_eq!(out.status.code(), Some(2), "clean --now-ms {clock}: {}", stderr(&out));
        assert!(stderr(&out).contains(why), "clean --now-ms {clock}: {}", stderr(&out));
        assert_eq!(contents(&dir), before, "clean --now-ms {clock} changed nothing");
    }
    // The tombstones survive an ordinary pass at the real time, as they did not when a 1970 clock had stamped
    // them first.
    let kept = tombstones(&dir);
    assert!(kept > 0);
    let mut args = vec!["compact", "--dir", path(&dir), "--until-clean"];
    args.extend(base);
    let out = logcompact(&args, "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(tombstones(&dir) > 0, "a pass at the real time keeps the tombstones it stamps");
    // Given knowingly, a clock before the records is taken.
    let mut args = vec!["compact", "--dir", path(&dir), "--now-ms", "1000", "--i-know-the-clock"];
    args.extend(base);
    let out = logcompact(&args, "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
