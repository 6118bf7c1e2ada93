//! `logcompact` on a directory: `run --backend file` continued across runs, `gen`, `compact`, `dump`, `check`.

use std::path::Path;
use std::process::Output;

use crate::common;
use common::logcompact;

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "exit {:?}: {}", o.status, String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).expect("utf-8")
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

#[test]
fn a_script_continued_by_a_second_run_prints_what_one_run_prints() {
    let script = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/seed-trace.txt"))
        .expect("example script");
    let lines: Vec<&str> = script.lines().collect();
    let (first, second) = lines.split_at(lines.len() / 2);
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("log");
    let args = ["run", "--backend", "file", "--dir", path(&dir), "-"];
    let mut split = ok(&logcompact(&args, &(first.join("\n") + "\n")));
    split += &ok(&logcompact(&args, &(second.join("\n") + "\n")));
    let whole = ok(&logcompact(&["run", "-"], &script));
    assert_eq!(split, whole);
    assert!(whole.contains("segment 2: 2 p=2 (closed)"));
}

#[test]
fn run_needs_a_dir_for_the_file_backend() {
    let out = logcompact(&["run", "--backend", "file", "-"], "DUMP\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--dir"));
}

#[test]
fn gen_compact_dump_and_check_on_a_directory() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    let gen_args = |d: &Path| {
        [
            "gen",
            "--dir",
            path(d),
            "--records",
            "5000",
            "--keys",
            "300",
            "--value-bytes",
            "40",
            "--tombstones",
            "0.1",
            "--segment-bytes",
            "32KiB",
            "--seed",
            "9",
            "--json",
        ]
        .map(str::to_owned)
    };
    let summary: serde_json::Value =
        serde_json::from_str(&ok(&logcompact(&gen_args(&a).iter().map(String::as_str).collect::<Vec<_>>(), "")))
            .expect("gen prints JSON");
    assert_eq!(summary["records"], 5000);
    assert!(summary["tombstones"].as_u64().is_some_and(|t| t > 300 && t < 700), "{summary}");
    ok(&logcompact(&gen_args(&b).iter().map(String::as_str).collect::<Vec<_>>(), ""));
    // The same seed gives the same records (timestamps aside).
    let strip = |d: &Path| {
        let v: serde_json::Value =
            serde_json::from_str(&ok(&logcompact(&["dump", "--dir", path(d), "--json"], ""))).expect("dump --json");
        v.as_array()
            .expect("segments")
            .iter()
            .flat_map(|s| s["records"].as_array().expect("records").clone())
            .map(|r| (r["offset"].clone(), r["key"].clone(), r["value"].clone()))
            .collect::<Vec<_>>()
    };
    let before = strip(&a);
    assert_eq!(before, strip(&b));
    assert_eq!(before.len(), 5000);

    let report: serde_json::Value =
        serde_json::from_str(&ok(&logcompact(&["check", "--dir", path(&a), "--json"], ""))).expect("check prints JSON");
    assert_eq!(report["records"], 5000);

    // A small buffer: several passes, one JSON line each.
    let out =
        ok(&logcompact(&["compact", "--dir", path(&a), "--dedupe-buffer", "4KiB", "--until-clean", "--json"], ""));
    let passes: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect();
    assert!(passes.len() > 1, "{out}");
    assert_eq!(passes.last().expect("a pass")["map_full"], false);
    assert!(passes.iter().all(|p| p["map"] == "skimpy"), "Kafka's map is the default");
    ok(&logcompact(&["check", "--dir", path(&a)], ""));

    // Every key still has its latest value, at its original offset.
    let latest = |records: &[(serde_json::Value, serde_json::Value, serde_json::Value)]| {
        let mut m = std::collections::BTreeMap::new();
        for (o, k, v) in records {
            m.insert(k.to_string(), (o.clone(), v.clone()));
        }
        m
    };
    let after = strip(&a);
    assert!(after.len() < before.len() / 2);
    assert_eq!(latest(&after), latest(&before));

    // Text dump: one line per record, in offset order; `--segments` gives one line per segment, the active one last.
    let text = ok(&logcompact(&["dump", "--dir", path(&a)], ""));
    assert_eq!(text.lines().count(), after.len());
    assert!(text.lines().all(|l| l.starts_with("offset=")), "{text}");
    let segments = ok(&logcompact(&["dump", "--dir", path(&a), "--segments"], ""));
    assert!(segments.lines().all(|l| l.starts_with("segment ")));
    assert!(segments.trim_end().ends_with("(active)"));
}

#[test]
fn check_names_the_file_and_position_of_a_flipped_byte() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("log");
    ok(&logcompact(
        &["run", "--backend", "file", "--dir", path(&dir), "-"],
        "PUT a 1\nPUT b 2\nPUT c 3\nROLL\nPUT d 4\n",
    ));
    let seg = dir.join("00000000000000000000.log");
    let mut bytes = std::fs::read(&seg).expect("segment");
    let second = 8 + u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")) as usize;
    bytes[second + 25] ^= 0x01;
    std::fs::write(&seg, &bytes).expect("write");
    let out = logcompact(&["check", "--dir", path(&dir)], "");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("00000000000000000000.log") && err.contains(&format!("byte {second}")), "{err}");
    assert!(err.contains("checksum"), "{err}");
    // With --json the problem is on standard output too, as a script reads it; the exit code stays 1.
    let out = logcompact(&["check", "--dir", path(&dir), "--json"], "");
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("check --json prints JSON on damage");
    assert_eq!(json["problem"]["file"], "00000000000000000000.log", "{json}");
    assert_eq!(json["problem"]["position"].as_u64(), Some(second as u64), "{json}");
    assert_eq!(json["problem"]["class"], "Corruption", "{json}");
}

#[test]
fn readers_work_beside_a_writer_and_a_second_writer_is_locked_out() {
    let out = logcompact(&["check", "--dir", "/nonexistent/logcompact"], "");
    assert_eq!(out.status.code(), Some(2));
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("log");
    let store = std::sync::Arc::new(storage_file::FileStore::open(&dir).expect("lock the directory"));
    let log = log_core::Log::open(store, log_core::OpenOptions::new(log_core::LogConfig::default())).expect("open");
    log.put(b"a", b"1").expect("put");
    log.roll().expect("roll");
    log.put(b"b", b"2").expect("put");
    log.sync().expect("sync");
    // Readers take no lock: they see the log while its writer holds it.
    assert_eq!(
        ok(&logcompact(&["dump", "--dir", path(&dir), "--segments"], "")),
        "segment 0: 0 a=1 (closed)\nsegment 1: 1 b=2 (active)\n"
    );
    ok(&logcompact(&["check", "--dir", path(&dir)], ""));
    // A second writer is refused: exit 3, the directory is in use.
    let out = logcompact(&["compact", "--dir", path(&dir)], "");
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("in use"));
}

#[test]
fn compact_with_each_map_leaves_the_same_log() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut dumps = Vec::new();
    for map in ["skimpy", "fullkey", "compact"] {
        let dir = tmp.path().join(map);
        let gen_args = [
            "gen",
            "--dir",
            path(&dir),
            "--records",
            "3000",
            "--keys",
            "200",
            "--tombstones",
            "0.1",
            "--segment-bytes",
            "16KiB",
        ];
        ok(&logcompact(&gen_args, ""));
        let out = ok(&logcompact(
            &["compact", "--dir", path(&dir), "--map", map, "--dedupe-buffer", "2KiB", "--until-clean", "--json"],
            "",
        ));
        assert!(out.lines().count() > 1, "{map}: a small buffer takes several passes");
        let stats: serde_json::Value = serde_json::from_str(out.lines().next().expect("a pass")).expect("json");
        assert_eq!(stats["map"], map);
        let dump = ok(&logcompact(&["dump", "--dir", path(&dir), "--json"], ""));
        let v: serde_json::Value = serde_json::from_str(&dump).expect("json");
        let records: Vec<_> = v
            .as_array()
            .expect("segments")
            .iter()
            .flat_map(|s| s["records"].as_array().expect("records").clone())
            .map(|r| (r["offset"].clone(), r["key"].clone(), r["value"].clone()))
            .collect();
        dumps.push(records);
    }
    assert_eq!(dumps[0], dumps[1], "skimpy and fullkey");
    assert_eq!(dumps[0], dumps[2], "skimpy and compact");
}

#[test]
fn advise_answers_from_counts_and_from_a_directory_it_leaves_untouched() {
    let counts = logcompact(&["advise", "--keys", "1000000", "--json"], "");
    let rows: serde_json::Value = serde_json::from_str(&ok(&counts)).expect("json");
    let rows = rows.as_array().expect("an array");
    // The three maps and the external pass.
    assert_eq!(rows.len(), 4);
    for row in rows {
        for field in [
            "map",
            "keys",
            "buffer_bytes_for_one_pass",
            "passes",
            "bytes_per_key",
            "collision_probability",
            "estimated_seconds",
        ] {
            assert!(row.get(field).is_some(), "{field} missing in {row}");
        }
    }
    let skimpy = rows.iter().find(|r| r["map"] == "skimpy").expect("skimpy");
    assert_eq!((skimpy["passes"].as_u64(), skimpy["capacity"].as_u64()), (Some(1), Some(5_033_164)));
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("log");
    ok(&logcompact(
        &["gen", "--dir", path(&dir), "--records", "4000", "--keys", "500", "--segment-bytes", "16KiB"],
        "",
    ));
    let before = common::contents(&dir);
    let table = ok(&logcompact(&["advise", "--dir", path(&dir), "--dedupe-buffer", "4KiB"], ""));
    assert!(table.contains("500 distinct keys") && table.contains("replayed on the log"), "{table}");
    for map in ["skimpy", "fullkey", "compact", "external"] {
        assert!(table.lines().any(|l| l.starts_with(map)), "{table}");
    }
    assert_eq!(common::contents(&dir), before, "advise only reads");
    let both = logcompact(&["advise", "--keys", "5", "--dir", path(&dir)], "");
    assert_eq!(both.status.code(), Some(2));
}
