//! A full disk loses nothing and says so with exit 3: `compact` (native and Kafka, in place, the Kafka one also
//! with `--copy-threads 2`) and `clean --format kafka` (one thread on one partition, and `--threads 2` on three
//! partitions) are run on a small tmpfs with the free space swept from none to more than the log's size; each
//! run either finishes (exit 0) or stops with exit 3 naming the lack of space, `check` then finds the log intact
//! with every key's latest record at its offset, and once space is freed a rerun finishes the job with nothing
//! of the stopped run left behind.
//!
//! Needs root (it mounts a tmpfs); elsewhere it says so and passes without running.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::Command;

use crate::common;
use common::{kafka_partition, kafka_records, logcompact, path, stderr};

/// (key -> (offset, value)) of the latest record of each key.
type Latest = BTreeMap<String, (i64, Option<String>)>;

fn latest(records: &[(i64, String, Option<String>)]) -> Latest {
    records.iter().map(|(o, k, v)| (k.clone(), (*o, v.clone()))).collect()
}

/// The records of a native log as `dump --json` prints them.
fn native_records(dir: &Path) -> Vec<(i64, String, Option<String>)> {
    let out = logcompact(&["dump", "--json", "--dir", path(dir)], "");
    assert!(out.status.success(), "dump: {}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let segments = v.as_array().expect("segments");
    let records = segments.iter().flat_map(|s| s["records"].as_array().expect("records").iter());
    records
        .map(|r| {
            (
                r["offset"].as_i64().expect("offset"),
                r["key"].as_str().expect("key").to_owned(),
                r["value"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

/// Mounts a tmpfs of `bytes` at `at`; false where mounting is not permitted.
fn mount_tmpfs(at: &Path, bytes: u64) -> bool {
    let as_root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    as_root
        && Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs", path(at)])
            .status()
            .is_ok_and(|s| s.success())
}

/// Fills the file system holding `dir` with a ballast file, then gives back `free` bytes of it.
fn leave_free(dir: &Path, free: u64) {
    let ballast = dir.join("ballast");
    let mut f = std::fs::File::create(&ballast).expect("ballast");
    let chunk = vec![0xa5u8; 64 << 10];
    let mut len = 0u64;
    loop {
        match f.write(&chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => len += n as u64,
        }
    }
    f.set_len(len.saturating_sub(free)).expect("give back");
}

struct Unmount<'a>(&'a Path);
impl Drop for Unmount<'_> {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0).status();
    }
}

#[derive(Clone, Copy, Debug)]
enum Job {
    NativeCompact,
    KafkaCompact,
    KafkaCompactCopyThreads,
    KafkaClean,
    KafkaCleanThreads,
}

impl Job {
    /// Writes the job's logs under `root`, returning their directories (the one a `compact` takes first).
    fn make(self, root: &Path) -> Vec<std::path::PathBuf> {
        match self {
            Job::NativeCompact => {
                let dir = root.join("log");
                let script: String =
                    (0..3000).map(|i| format!("PUT k{} {i:0>40}\n", i % 300)).collect::<String>() + "ROLL\n";
                let out = logcompact(
                    &["run", "--backend", "file", "--dir", path(&dir), "--segment-bytes", "16KiB", "-"],
                    &script,
                );
                assert!(out.status.success(), "{}", stderr(&out));
                vec![dir]
            }
            Job::KafkaCompact | Job::KafkaCompactCopyThreads | Job::KafkaClean => {
                let dir = root.join("__consumer_offsets-0");
                kafka_partition(&dir, 300, 6, 10, 50);
                vec![dir]
            }
            Job::KafkaCleanThreads => (0..3)
                .map(|p| {
                    let dir = root.join(format!("__consumer_offsets-{p}"));
                    kafka_partition(&dir, 300, 4, 10, 50);
                    dir
                })
                .collect(),
        }
    }

    fn records(self, dir: &Path) -> Vec<(i64, String, Option<String>)> {
        match self {
            Job::NativeCompact => native_records(dir),
            _ => kafka_records(dir),
        }
    }

    fn run(self, root: &Path, dir: &Path) -> std::process::Output {
        let buffer = ["--dedupe-buffer", "4000"]; // about 150 keys: several passes
        match self {
            Job::NativeCompact => {
                logcompact(&[&["compact", "--dir", path(dir), "--until-clean"][..], &buffer].concat(), "")
            }
            Job::KafkaCompact => logcompact(
                &[&["compact", "--format", "kafka", "--dir", path(dir), "--until-clean"][..], &buffer].concat(),
                "",
            ),
            Job::KafkaCompactCopyThreads => logcompact(
                &[
                    &["compact", "--format", "kafka", "--dir", path(dir), "--until-clean", "--copy-threads", "2"][..],
                    &buffer,
                ]
                .concat(),
                "",
            ),
            Job::KafkaClean | Job::KafkaCleanThreads => {
                let threads = if matches!(self, Job::KafkaCleanThreads) { "2" } else { "1" };
                logcompact(
                    &[
                        &[
                            "clean",
                            "--format",
                            "kafka",
                            "--data-dir",
                            path(root),
                            "--until-clean",
                            "--max-retries",
                            "0",
                            "--threads",
                            threads,
                        ][..],
                        &buffer,
                    ]
                    .concat(),
                    "",
                )
            }
        }
    }

    fn check(self, dir: &Path) -> std::process::Output {
        match self {
            Job::NativeCompact => logcompact(&["check", "--dir", path(dir)], ""),
            _ => logcompact(&["check", "--format", "kafka", "--dir", path(dir)], ""),
        }
    }
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
        .filter(|n| [".cleaned", ".swap", ".deleted", ".pass", ".tmp"].iter().any(|s| n.contains(s)))
        .collect()
}

#[test]
fn a_full_disk_stops_a_compaction_with_exit_3_and_loses_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).expect("mkdir");
    if !mount_tmpfs(&mnt, 4 << 20) {
        eprintln!("not root or mount not permitted: the disk-full sweep did not run");
        return;
    }
    let _unmount = Unmount(&mnt);
    let mut stopped = BTreeMap::<String, usize>::new();
    let jobs =
        [Job::NativeCompact, Job::KafkaCompact, Job::KafkaCompactCopyThreads, Job::KafkaClean, Job::KafkaCleanThreads];
    for job in jobs {
        let root = mnt.join("root");
        let dirs = job.make(&root);
        let before: Vec<_> = dirs.iter().map(|d| job.records(d)).collect();
        let want: Vec<Latest> = before.iter().map(|b| latest(b)).collect();
        let size: u64 = dirs
            .iter()
            .flat_map(|d| std::fs::read_dir(d).expect("list"))
            .map(|e| e.expect("entry").metadata().expect("stat").len())
            .sum();
        let pristine = tmp.path().join("pristine");
        let copy = |from: &Path, to: &Path| {
            assert!(Command::new("cp").args(["-a", path(from), path(to)]).status().expect("cp").success())
        };
        copy(&root, &pristine);
        // Free space from none to 1.5 times the logs, in 4 KiB pages.
        let steps = 24u64;
        for step in 0..=steps {
            let free = (size * 3 / 2) * step / steps / 4096 * 4096;
            std::fs::remove_dir_all(&root).expect("reset");
            copy(&pristine, &root);
            leave_free(&mnt, free);
            let out = job.run(&root, &dirs[0]);
            let code = out.status.code();
            assert!(matches!(code, Some(0 | 3)), "{job:?} with {free} bytes free: {code:?} {}", stderr(&out));
            if code == Some(3) {
                let err = stderr(&out);
                assert!(err.contains("No space left") || err.contains("space"), "{job:?}: {err}");
                *stopped.entry(format!("{job:?}")).or_default() += 1;
            }
            assert_eq!(
                leftovers(&root),
                Vec::<String>::new(),
                "{job:?} with {free} bytes free: the status file's temporary"
            );
            for (dir, want) in dirs.iter().zip(&want) {
                let check = job.check(dir);
                assert_eq!(check.status.code(), Some(0), "{job:?} with {free} bytes free: {}", stderr(&check));
                let after = job.records(dir);
                assert_eq!(&latest(&after), want, "{job:?} with {free} bytes free: every key keeps its latest record");
            }
            std::fs::remove_file(mnt.join("ballast")).expect("free the space");
            let rerun = job.run(&root, &dirs[0]);
            assert_eq!(rerun.status.code(), Some(0), "{job:?} rerun: {}", stderr(&rerun));
            for ((dir, want), before) in dirs.iter().zip(&want).zip(&before) {
                assert_eq!(&latest(&job.records(dir)), want);
                assert_eq!(job.records(dir).len(), compacted_len(job, before), "{job:?}: fully compacted");
                let left = [leftovers(dir), leftovers(&root)].concat();
                assert_eq!(left, Vec::<String>::new(), "{job:?} with {free} bytes free");
            }
        }
        std::fs::remove_dir_all(&root).expect("clean up");
        std::fs::remove_dir_all(&pristine).expect("clean up");
    }
    eprintln!("runs stopped by the full disk: {stopped:?}");
    for job in jobs.map(|j| format!("{j:?}")) {
        assert!(
            stopped.get(&job).copied().unwrap_or(0) >= 3,
            "the sweep must reach the disk's end for {job}: {stopped:?}"
        );
    }
}

/// How many records a full compaction keeps: the latest of each key among the closed segments (the map never
/// looks into the active segment), then the active segment whole (Kafka: its last 10 batches of 50; native: empty
/// after the roll).
fn compacted_len(job: Job, before: &[(i64, String, Option<String>)]) -> usize {
    let active = match job {
        Job::NativeCompact => 0,
        _ => 500,
    };
    latest(&before[..before.len() - active]).len() + active
}
