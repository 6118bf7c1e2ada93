//! `logcompact compact` killed with SIGKILL at arbitrary moments: the reopened log shows the same latest
//! value for every key, offsets unchanged, and `check` passes after the log has been reopened.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

use log_core::{Log, LogConfig, Record};

fn records(dir: &Path) -> Vec<Record> {
    let store = Arc::new(storage_file::FileStore::open(dir).expect("open directory"));
    let log = Log::open(store, LogConfig::default()).expect("reopen after the kill");
    log.snapshot().reader(0).collect::<Result<_, _>>().expect("readable")
}

fn latest(records: &[Record]) -> BTreeMap<Vec<u8>, (u64, Option<Vec<u8>>)> {
    records.iter().map(|r| (r.key.clone().expect("keyed"), (r.offset, r.value.clone()))).collect()
}

#[test]
fn compact_killed_at_any_moment_loses_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("log");
    let d = dir.to_str().expect("utf-8");
    let bin = env!("CARGO_BIN_EXE_logcompact");
    let gen_args = [
        "gen",
        "--dir",
        d,
        "--records",
        "60000",
        "--keys",
        "4000",
        "--value-bytes",
        "64",
        "--tombstones",
        "0.05",
        "--segment-bytes",
        "256KiB",
    ];
    assert!(Command::new(bin).args(gen_args).stdout(Stdio::null()).status().expect("gen").success());
    let original = latest(&records(&dir));
    // Time one uninterrupted run on a copy, then kill runs at spread-out moments within that time.
    let copy = tmp.path().join("copy");
    std::fs::create_dir(&copy).expect("mkdir");
    for entry in std::fs::read_dir(&dir).expect("list") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), copy.join(entry.file_name())).expect("copy");
    }
    let compact = |d: &str| {
        Command::new(bin)
            .args(["compact", "--dir", d, "--dedupe-buffer", "16KiB", "--until-clean"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn compact")
    };
    let started = Instant::now();
    let status = compact(copy.to_str().expect("utf-8")).wait().expect("wait");
    assert!(status.success());
    let full = started.elapsed();
    let mut killed = 0;
    for i in 1..=8u32 {
        let mut child = compact(d);
        std::thread::sleep(full * i / 9);
        if child.try_wait().expect("poll").is_none() {
            killed += 1;
        }
        let _ = child.kill();
        let _ = child.wait();
        let now = records(&dir);
        assert_eq!(latest(&now), original, "kill {i}: a key lost its latest value or moved");
        assert!(now.windows(2).all(|w| w[0].offset < w[1].offset));
        let check = Command::new(bin).args(["check", "--dir", d]).output().expect("check");
        assert!(check.status.success(), "kill {i}: {}", String::from_utf8_lossy(&check.stderr));
    }
    assert!(killed > 0, "no run was killed mid-way (each took {full:?})");
}
