//! The benchmarks touch only what they write under a --dir. `kafka-bench --dir D`: a directory that holds other files (a broker's
//! log directory given by mistake, an earlier partition) keeps them, a run that would write over one of its
//! own directories left there is refused, and a finished run leaves nothing of its own but a partition asked
//! for with `--generate-only`.

use std::path::Path;
use std::process::Command;

fn kafka_bench(dir: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_kafka-bench"))
        .args(["--bytes", "256KiB", "--keys", "1e3", "--segment-bytes", "64KiB", "--dir"])
        .arg(dir)
        // --generate-only compacts nothing: a map given with it would be ignored, so it is refused.
        .args(if extra.contains(&"--generate-only") { &[][..] } else { &["--maps", "compact"][..] })
        .args(extra)
        .output()
        .expect("run kafka-bench")
}

/// Every path under `dir`, sorted, with each file's bytes.
fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("list") {
            let p = entry.expect("entry").path();
            let name = p.strip_prefix(dir).expect("under dir").display().to_string();
            if p.is_dir() {
                out.push((name, Vec::new()));
                stack.push(p);
            } else {
                out.push((name, std::fs::read(&p).expect("read")));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn kafka_bench_leaves_what_it_did_not_write_and_refuses_to_write_over_its_own() {
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join("data");
    std::fs::create_dir_all(dir.join("orders-0")).expect("mkdir");
    std::fs::write(dir.join("orders-0/00000000000000000000.log"), b"not ours").expect("write");
    std::fs::write(dir.join("meta.properties"), b"broker.id=1\n").expect("write");
    let theirs = contents(&dir);

    // A full run writes its partition and copies beside the others and removes only those.
    let out = kafka_bench(&dir, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"job\":\"compact\""));
    assert_eq!(contents(&dir), theirs, "a full run leaves the directory as it found it");

    // --generate-only keeps the partition it was asked for.
    let out = kafka_bench(&dir, &["--generate-only"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(dir.join("bench-none-0").is_dir());
    let with_partition = contents(&dir);
    assert!(with_partition.len() > theirs.len());

    // A second run would write over that partition: refused, nothing touched.
    let out = kafka_bench(&dir, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("exists already"));
    assert_eq!(contents(&dir), with_partition);

    // Another codec writes its own partition beside it and leaves the first.
    let out = kafka_bench(&dir, &["--codec", "lz4"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(contents(&dir), with_partition);

    // A directory the run made is removed once empty.
    let fresh = root.path().join("fresh");
    let out = kafka_bench(&fresh, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!fresh.exists());
}

#[test]
fn storage_bench_refuses_a_dir_holding_a_log_where_it_would_write_its_own() {
    let root = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(root.path().join("append")).expect("mkdir");
    std::fs::write(root.path().join("append/00000000000000000000.log"), b"not ours").expect("write");
    let before = contents(root.path());
    let out = Command::new(env!("CARGO_BIN_EXE_storage-bench"))
        .args(["--bytes", "64KiB", "--keys", "100", "--dir"])
        .arg(root.path())
        .output()
        .expect("run storage-bench");
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(contents(root.path()), before);
}

#[test]
fn kafka_bench_compacts_with_map_auto_in_one_pass_where_its_map_fills() {
    // A buffer of about 300 keys for 1,000: skimpy takes several passes, auto one, keeping the same records.
    let root = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_kafka-bench"))
        .args(["--bytes", "256KiB", "--keys", "1e3", "--segment-bytes", "64KiB", "--dedupe-buffer", "8000"])
        .args(["--maps", "skimpy,auto", "--dir"])
        .arg(root.path().join("d"))
        .output()
        .expect("run kafka-bench");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|v: &serde_json::Value| v["job"] == "compact")
        .collect();
    let by = |map: &str| lines.iter().find(|v| v["map"] == map).unwrap_or_else(|| panic!("{map}: {lines:?}")).clone();
    let (skimpy, auto) = (by("skimpy"), by("auto"));
    assert!(skimpy["passes"].as_u64() > Some(1), "{skimpy}");
    assert_eq!(auto["passes"], 1, "{auto}");
    assert_eq!(auto["records_kept"], skimpy["records_kept"]);
}
