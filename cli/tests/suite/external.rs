//! `compact --map external`: one pass over any number of keys with a small buffer, leaving the log the
//! in-memory maps leave (for a native log and a Kafka partition), its runs written to `--spill-dir` and
//! removed, a spill directory it cannot write refused with the log unchanged.

use std::path::Path;

use crate::common;
use common::{contents, logcompact, path, stderr, stdout};

fn ok(out: &std::process::Output) -> String {
    assert!(out.status.success(), "exit {:?}: {}", out.status.code(), stderr(out));
    stdout(out)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("list") {
        let e = e.expect("entry");
        std::fs::copy(e.path(), to.join(e.file_name())).expect("copy");
    }
}

/// The passes' JSON lines.
fn passes(out: &str) -> Vec<serde_json::Value> {
    out.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect()
}

#[test]
fn one_external_pass_leaves_what_many_map_passes_leave() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let source = tmp.path().join("source");
    ok(&logcompact(
        &[
            "gen",
            "--dir",
            path(&source),
            "--records",
            "120000",
            "--keys",
            "30000",
            "--value-bytes",
            "30",
            "--tombstones",
            "0.05",
            "--segment-bytes",
            "512KiB",
        ],
        "",
    ));
    let (a, b, spill) = (tmp.path().join("external"), tmp.path().join("compact"), tmp.path().join("spill"));
    copy_dir(&source, &a);
    copy_dir(&source, &b);
    std::fs::create_dir(&spill).expect("spill dir");
    // 40 KiB: 2,560 entries a run, for 30,000 keys; the compact map in as much takes several passes.
    let external = passes(&ok(&logcompact(
        &[
            "compact",
            "--dir",
            path(&a),
            "--map",
            "external",
            "--dedupe-buffer",
            "40KiB",
            "--until-clean",
            "--spill-dir",
            path(&spill),
            "--json",
        ],
        "",
    )));
    let compact = passes(&ok(&logcompact(
        &["compact", "--dir", path(&b), "--map", "compact", "--dedupe-buffer", "40KiB", "--until-clean", "--json"],
        "",
    )));
    assert_eq!(external.len(), 1, "one pass: {external:?}");
    assert!(compact.len() > 3, "the map takes several passes in the same buffer: {}", compact.len());
    let runs = external[0]["offset_map"]["spilled_runs"].as_u64().expect("runs");
    assert!(runs >= 30, "the buffer spilled runs: {runs}");
    // The same records (delete horizons aside: each pass stamps its own clock's).
    let records = |dir: &Path| -> Vec<String> {
        ok(&logcompact(&["dump", "--dir", path(dir)], ""))
            .lines()
            .map(|l| l.split(" delete_horizon=").next().unwrap_or_default().to_owned())
            .collect()
    };
    let (ra, rb) = (records(&a), records(&b));
    assert_eq!(ra.len(), rb.len(), "as many records");
    for (x, y) in ra.iter().zip(&rb) {
        assert_eq!(x, y);
    }
    ok(&logcompact(&["check", "--dir", path(&a)], ""));
    assert!(std::fs::read_dir(&spill).expect("list").next().is_none(), "the spill files are gone");
}

#[test]
fn a_kafka_partition_compacts_externally_as_with_a_map() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let source = tmp.path().join("t-0");
    common::write_kafka_partition(&source, &common::PartitionSpec::mixed(900, 4, 20, 30, 11));
    let (a, b) = (tmp.path().join("a").join("t-0"), tmp.path().join("b").join("t-0"));
    copy_dir(&source, &a);
    copy_dir(&source, &b);
    let external = passes(&ok(&logcompact(
        &crate::common::compact_kafka(
            path(&a),
            &["--map", "external", "--dedupe-buffer", "4KiB", "--until-clean", "--json"],
        ),
        "",
    )));
    ok(&logcompact(&crate::common::compact_kafka(path(&b), &["--map", "fullkey", "--until-clean"]), ""));
    assert_eq!(external.len(), 1);
    assert_eq!(common::kafka_records(&a), common::kafka_records(&b));
    ok(&logcompact(&["check", "--format", "kafka", "--dir", path(&a)], ""));
}

#[test]
fn a_spill_directory_that_cannot_be_written_is_refused_and_changes_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let log = tmp.path().join("log");
    ok(&logcompact(
        &["gen", "--dir", path(&log), "--records", "5000", "--keys", "500", "--segment-bytes", "64KiB"],
        "",
    ));
    let before = contents(&log);
    let missing = tmp.path().join("no-such-dir");
    let out = logcompact(
        &[
            "compact",
            "--dir",
            path(&log),
            "--map",
            "external",
            "--dedupe-buffer",
            "4KiB",
            "--spill-dir",
            path(&missing),
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("no-such-dir"), "the error names the directory: {}", stderr(&out));
    let mut after = contents(&log);
    after.retain(|name, _| !name.ends_with(".lock"));
    let mut before = before;
    before.retain(|name, _| !name.ends_with(".lock"));
    assert_eq!(after, before, "the log is unchanged");
    // --spill-dir belongs to the external pass.
    let refused = logcompact(&["compact", "--dir", path(&log), "--spill-dir", path(tmp.path())], "");
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
}

#[test]
fn a_buffer_larger_than_the_machine_gives_is_sized_by_the_work_not_an_abort() {
    // The buffer was reserved in full at the first key: --dedupe-buffer 1TiB aborted (SIGABRT) and 2^64 - 1
    // bytes panicked with "capacity overflow", in compact and clean. It now grows with the keys it holds.
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let native = data.join("native");
    ok(&logcompact(
        &["gen", "--dir", path(&native), "--records", "3000", "--keys", "300", "--segment-bytes", "64KiB"],
        "",
    ));
    let kafka = tmp.path().join("kafka-logs").join("orders-0");
    common::kafka_partition(&kafka, 300, 4, 5, 60);
    for budget in ["1TiB", "18446744073709551615"] {
        for (format, dir) in [("native", &native), ("kafka", &kafka)] {
            let work = tmp.path().join(format!("{format}-{}", budget.len()));
            copy_dir(dir, &work);
            let more = ["--map", "external", "--dedupe-buffer", budget, "--json"];
            let out = logcompact(&crate::common::compact_as(format, path(&work), &more), "");
            let stats = passes(&ok(&out));
            let map = &stats[0]["offset_map"];
            assert!(map["allocated_bytes"].as_u64().is_some_and(|b| b < 64 << 20), "{format} {budget}: {map}");
            let records = stdout(&logcompact(&["dump", "--format", format, "--dir", path(&work)], ""));
            assert!(records.lines().count() < 1000, "{format} {budget}: compacted");
        }
        let data_copy = tmp.path().join(format!("data-{}", budget.len()));
        copy_dir(&native, &data_copy.join("native"));
        let out = logcompact(
            &["clean", "--data-dir", path(&data_copy), "--until-clean", "--map", "external", "--dedupe-buffer", budget],
            "",
        );
        assert_eq!(out.status.code(), Some(0), "clean {budget}: {}", stderr(&out));
    }
}

#[test]
fn map_auto_takes_kafkas_map_where_it_holds_the_keys_and_one_external_pass_where_it_fills() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let src = tmp.path().join("orders-0");
    common::kafka_partition(&src, 3000, 6, 10, 100);
    let run = |name: &str, more: &[&str]| {
        let out = tmp.path().join(name).join("orders-0");
        std::fs::create_dir(tmp.path().join(name)).expect("mkdir");
        let mut args = vec!["--out", path(&out), "--until-clean", "--json"];
        args.extend_from_slice(more);
        let done = logcompact(&common::compact_kafka(path(&src), &args), "");
        assert_eq!(done.status.code(), Some(0), "{more:?}: {}", stderr(&done));
        (out, stdout(&done).lines().count(), stderr(&done))
    };
    // A buffer that holds every key: auto is Kafka's map, byte for byte, and says nothing more.
    let (kafka_way, _, _) = run("skimpy", &[]);
    let (auto, passes, said) = run("auto", &["--map", "auto"]);
    assert_eq!(passes, 1, "{said}");
    assert!(!said.contains("external pass"), "{said}");
    assert_eq!(contents(&auto), contents(&kafka_way), "the same files as Kafka's map");
    // A buffer of about 300 keys: the map takes several passes; auto takes one, says why, and keeps the same
    // records.
    let (many, passes_of_the_map, warned) = run("skimpy-small", &["--dedupe-buffer", "8000"]);
    assert!(passes_of_the_map > 2, "{passes_of_the_map} passes");
    assert!(warned.contains("--map auto takes one"), "{warned}");
    let (one, passes, said) = run("auto-small", &["--map", "auto", "--dedupe-buffer", "8000"]);
    assert_eq!(passes, 1, "{said}");
    // All of it dirty: the external pass at once, the map's passes told from a sketch.
    assert!(said.contains("would fill at about offset") && said.contains("took the external pass at once"), "{said}");
    assert_eq!(common::kafka_records(&one), common::kafka_records(&many));
    assert_eq!(common::kafka_records(&one), common::kafka_records(&kafka_way));
}
