//! Kafka 4.4's own cleaner as the oracle of a differential fuzzer (issue 41): random partitions as a broker
//! could have written them (producers idempotent and transactional under both transaction versions, commits,
//! aborts, open and empty transactions, markers in later segments, tombstones with and without delete horizons,
//! records without keys, what earlier cleanings leave, every codec, small segments and indexes, offset gaps,
//! a cleaner checkpoint, a log start offset, a high watermark, producer snapshots, clean and unclean stops, and
//! dedupe buffers from one key up) cleaned until clean by Kafka's cleaner and by `compact --format kafka`:
//! with `skimpy` every segment file byte for byte, with the other maps the records read under each isolation
//! level. A difference is shrunk and printed as a case to commit under `tests/differential/regressions/`.
//!
//! `KAFKA_DIFF_CASES` sets the budget (2,000 by default), `KAFKA_DIFF_SEED` the first seed. The long run:
//! `KAFKA_DIFF_CASES=100000 cargo test --release -p cli --test kafka_differential -- --ignored --nocapture`.

mod common;
mod differential;

use differential::run::{Judge, Verdict};

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

fn report(t: &differential::Tally, base: u64) -> String {
    let mut s = format!(
        "{} cases from seed {base:#x}: {} the same, {} refused by both, {} different",
        t.cases,
        t.same,
        t.both_failed,
        t.failures.len()
    );
    for (kind, n) in &t.kafka_threw {
        s.push_str(&format!("\n  {n} where Kafka's cleaner threw and ours changed nothing: {kind}"));
    }
    for (seed, map, json, found) in &t.failures {
        s.push_str(&format!(
            "\n\nseed {seed:#x} (map {map}) differs; shrunk to the case below (commit it under \
             cli/tests/differential/regressions/):\n  {}\n{json}",
            found.join("\n  ")
        ));
    }
    s
}

#[test]
fn every_committed_regression_case_cleans_as_kafkas_cleaner_cleans_it() {
    let Some(kafka) = kafka_interop::Kafka::get() else { return };
    let mut judge = Judge::new(kafka, common::bin());
    let mut bad = Vec::new();
    for (name, case, map) in differential::regressions() {
        if let Verdict::Differ(d) = judge.judge(&case, &map) {
            bad.push(format!("{name} ({}):\n  {}", case.describe(), d.join("\n  ")));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn random_partitions_clean_as_kafkas_cleaner_cleans_them() {
    let Some(kafka) = kafka_interop::Kafka::get() else { return };
    let count = env_u64("KAFKA_DIFF_CASES").unwrap_or(2_000);
    let base = env_u64("KAFKA_DIFF_SEED").unwrap_or(0x4b41_464b_4100_0000);
    let mut judge = Judge::new(kafka, common::bin());
    let started = std::time::Instant::now();
    let t = differential::run_cases(&mut judge, base, count, 3, |_| {});
    eprintln!("{} in {:.1} s", report(&t, base), started.elapsed().as_secs_f64());
    assert!(t.failures.is_empty(), "{}", report(&t, base));
}

#[test]
#[ignore = "the long run: KAFKA_DIFF_CASES (100,000 by default) random cases from a fresh seed"]
fn a_long_run_of_random_partitions_cleans_as_kafkas_cleaner_cleans_them() {
    let Some(kafka) = kafka_interop::Kafka::get() else { return };
    let count = env_u64("KAFKA_DIFF_CASES").unwrap_or(100_000);
    let base = env_u64("KAFKA_DIFF_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64) << 20
    });
    let mut judge = Judge::new(kafka, common::bin());
    let started = std::time::Instant::now();
    let t = differential::run_cases(&mut judge, base, count, 20, |t| {
        if t.cases.is_multiple_of(1_000) {
            eprintln!("{} cases, {} different, {:.0} s", t.cases, t.failures.len(), started.elapsed().as_secs_f64());
        }
    });
    eprintln!("{} in {:.1} s", report(&t, base), started.elapsed().as_secs_f64());
    assert!(t.failures.is_empty(), "{}", report(&t, base));
}

#[test]
#[ignore = "one case: KAFKA_DIFF_CASE=FILE.json (as the runs print it), its directories kept (KAFKA_DIFF_KEEP)"]
fn one_case_from_a_file() {
    let Some(kafka) = kafka_interop::Kafka::get() else { return };
    let path = std::env::var("KAFKA_DIFF_CASE").expect("KAFKA_DIFF_CASE=FILE.json");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("JSON");
    let case: differential::case::Case = serde_json::from_value(v["case"].clone()).expect("a case");
    let map = v["map"].as_str().unwrap_or("skimpy");
    let mut judge = Judge::new(kafka, common::bin());
    let verdict = judge.judge(&case, map);
    eprintln!("{}: {verdict:?}", case.describe());
    // KAFKA_DIFF_SHRINK shrinks it further while it differs.
    if std::env::var_os("KAFKA_DIFF_SHRINK").is_some() && matches!(verdict, Verdict::Differ(_)) {
        let failing = |v: &Verdict| matches!(v, Verdict::Differ(_));
        let small = differential::run::shrink(&mut judge, &case, map, failing);
        eprintln!("{:?}", judge.judge(&small, map));
        println!("{}", serde_json::json!({ "map": map, "case": small }));
    }
}

#[test]
#[ignore = "a real partition as a case, shrunk while it differs: KAFKA_DIFF_IMPORT=DIR, KAFKA_DIFF_NOW_MS=T \
            [KAFKA_DIFF_BUFFER, KAFKA_DIFF_SEGMENT_BYTES, KAFKA_DIFF_RETENTION_MS]"]
fn a_partition_from_a_directory_shrunk() {
    let Some(kafka) = kafka_interop::Kafka::get() else { return };
    let dir = std::env::var("KAFKA_DIFF_IMPORT").expect("KAFKA_DIFF_IMPORT=DIR");
    let settings = differential::import::Settings {
        now_ms: env_u64("KAFKA_DIFF_NOW_MS").expect("KAFKA_DIFF_NOW_MS") as i64,
        buffer_bytes: env_u64("KAFKA_DIFF_BUFFER").unwrap_or(16 << 20),
        segment_bytes: env_u64("KAFKA_DIFF_SEGMENT_BYTES").unwrap_or(1 << 30),
        delete_retention_ms: env_u64("KAFKA_DIFF_RETENTION_MS").unwrap_or(86_400_000) as i64,
        min_compaction_lag_ms: 0,
    };
    let case = differential::import::from_partition(std::path::Path::new(&dir), &settings).expect("a case");
    let mut judge = Judge::new(kafka, common::bin());
    let failing = |v: &Verdict| matches!(v, Verdict::Differ(_));
    let verdict = judge.judge(&case, "skimpy");
    eprintln!("{}: {verdict:?}", case.describe());
    if failing(&verdict) {
        let small = differential::run::shrink(&mut judge, &case, "skimpy", failing);
        eprintln!("{:?}", judge.judge(&small, "skimpy"));
        println!("{}", serde_json::json!({ "map": "skimpy", "case": small }));
    }
}
