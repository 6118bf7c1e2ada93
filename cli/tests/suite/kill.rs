//! The binary killed with SIGKILL at moments spread over its run, on the real file backend, in both segment
//! formats: `compact --until-clean` in place on a native log and on a Kafka partition, `clean --format kafka
//! --data-dir` over a stopped broker's log directory with two cleaner threads, `compact --out` in both formats,
//! and `gen`. The moments follow the child's progress, not the clock (the machines are shared and noisy): it
//! is killed after its n-th output line plus a jittered share of a line's time (`gen`: once it has written a
//! given share of the log's bytes).
//!
//! After every kill of a compaction, before anything writes: `check` exits 0 on every log (a kill leaves at
//! most what the next open, or a broker's recovery, completes or rolls back), and every key still has the
//! latest value and offset it had. Then (except before a kill that is to land on the leftovers of this one)
//! the same command runs again to the end, and every log holds exactly what a run never killed leaves, with no
//! `.cleaned`, `.swap` or `.deleted` file left; a Kafka partition is read back by kafka-python's record-batch
//! reader (by our own reader where no Python with the clients is installed; CI always has one) and must hold
//! the latest record of each key of its closed segments and its active segment unchanged. After a killed
//! `gen` the log holds exactly a prefix of the workload's records.
//!
//! `cargo test` runs a quick sweep; `cargo test -p cli --test suite kill:: -- --ignored` runs at least 100 kills of
//! each.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use log_core::Format;

use crate::common;
use common::kill::{Records, check_exits_0, copy_tree, jitter, kill_after_lines, latest, leftovers, records};
use common::{PartitionSpec, bin, kafka_python, kafka_python_records, path, write_kafka_partition};

const SPEC: PartitionSpec =
    PartitionSpec { keys: 3000, segments: 10, batches: 8, per_batch: 60, tombstone_every: 17, mixed_codecs: true };
/// The base offset of the Kafka partitions' last (active) segment.
const ACTIVE_BASE: i64 = ((SPEC.segments - 1) * SPEC.batches * SPEC.per_batch) as i64;
/// The partitions of the `clean` sweep's log directory, and the topics its settings name.
const PARTITIONS: [&str; 3] = ["orders-0", "orders-1", "__consumer_offsets-7"];
/// A buffer that holds about a quarter of the Kafka partitions' keys (skimpy: 24 bytes a slot): four passes or
/// more.
const BUFFER: &str = "24KiB";

/// The native workload: 60,000 records over 4,000 keys in 256 KiB segments.
const GEN: [&str; 10] = [
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

fn generate(dir: &Path) -> Command {
    let mut c = Command::new(bin());
    c.args(["gen", "--dir", path(dir)]).args(GEN).stdout(Stdio::null()).stderr(Stdio::null());
    c
}

/// What a complete compaction of a Kafka partition written as [`SPEC`] keeps: the latest record of each key
/// below the active segment (tombstones included: they are within their retention), and the active segment
/// as it is.
fn compacted(all: &Records) -> Records {
    let mut last = BTreeMap::new();
    for (offset, key, _) in all.iter().filter(|r| r.0 < ACTIVE_BASE) {
        last.insert(key.clone(), *offset);
    }
    all.iter().filter(|r| r.0 >= ACTIVE_BASE || last[&r.1] == r.0).cloned().collect()
}

/// The command under test, run from `root` (a log directory) on its partitions.
#[derive(Debug, Clone, Copy)]
enum Job {
    /// `compact [--format kafka --cleanup-policy compact] --dir root/orders-0 --until-clean`.
    Compact(Format),
    /// `clean --format kafka --data-dir root --until-clean --threads 2`.
    Clean,
}

impl Job {
    fn format(self) -> Format {
        match self {
            Job::Compact(format) => format,
            Job::Clean => Format::Kafka,
        }
    }

    fn partitions(self) -> &'static [&'static str] {
        match self {
            Job::Compact(_) => &PARTITIONS[..1],
            Job::Clean => &PARTITIONS,
        }
    }

    fn command(self, root: &Path) -> Command {
        let mut c = Command::new(bin());
        match self {
            Job::Compact(Format::Native) => {
                c.args(["compact", "--dir", path(&root.join(PARTITIONS[0])), "--dedupe-buffer", "16KiB"]);
                c.args(["--until-clean", "--json"]);
            }
            Job::Compact(Format::Kafka) => {
                c.args(["compact", "--format", "kafka", "--cleanup-policy", "compact"]);
                c.args([
                    "--dir",
                    path(&root.join(PARTITIONS[0])),
                    "--dedupe-buffer",
                    BUFFER,
                    "--until-clean",
                    "--json",
                ]);
            }
            Job::Clean => {
                c.args(["clean", "--format", "kafka", "--data-dir", path(root), "--until-clean", "--json"]);
                c.args(["--threads", "2", "--dedupe-buffer", "48KiB", "--min-cleanable-dirty-ratio", "0"]);
                c.args(["--config", path(&root.with_extension("conf"))]);
            }
        }
        c.stdout(Stdio::piped()).stderr(Stdio::null());
        c
    }

    /// Writes the job's log directory at `root` (and its settings beside it).
    fn write_root(self, root: &Path) {
        for name in self.partitions() {
            let dir = root.join(name);
            match self.format() {
                Format::Native => assert!(generate(&dir).status().expect("gen").success()),
                Format::Kafka => {
                    write_kafka_partition(&dir, &SPEC);
                }
            }
        }
        std::fs::write(root.with_extension("conf"), "[orders]\n").expect("settings");
    }
}

fn sweep(job: Job, kills: u32) {
    let format = job.format();
    let tmp = tempfile::tempdir().expect("tempdir");
    let pristine = tmp.path().join("pristine");
    job.write_root(&pristine);
    let before = latest(&records(&pristine.join(PARTITIONS[0]), format));
    let py = if format == Format::Kafka { kafka_python() } else { None };
    let read_back = |dir: &Path| py.as_deref().map_or_else(|| records(dir, format), |py| kafka_python_records(py, dir));

    // A whole run, timed: what it leaves, how many lines it prints and how long a line takes.
    let full = tmp.path().join("full");
    copy_tree(&pristine, &full);
    std::fs::copy(pristine.with_extension("conf"), full.with_extension("conf")).expect("settings");
    let started = Instant::now();
    let out = job.command(&full).output().expect("run");
    assert!(out.status.success(), "{job:?}: a whole run");
    let lines = out.stdout.iter().filter(|&&b| b == b'\n').count();
    let per_line = started.elapsed() / lines.max(1) as u32;
    assert!(lines > 3 * job.partitions().len(), "{job:?}: {lines} lines: several passes a partition");
    let want: BTreeMap<&str, Records> =
        job.partitions().iter().map(|&name| (name, read_back(&full.join(name)))).collect();
    if format == Format::Kafka {
        let written = records(&pristine.join(PARTITIONS[0]), format);
        assert!(written.iter().any(|r| r.2.is_none()) && want[PARTITIONS[0]].len() < written.len() / 2);
        for name in job.partitions() {
            assert_eq!(want[name], compacted(&written), "{job:?}: {name} after a whole run");
        }
    }

    let root: PathBuf = tmp.path().join("kafka-logs");
    std::fs::copy(pristine.with_extension("conf"), root.with_extension("conf")).expect("settings");
    let (mut killed, mut reruns) = (0, 0);
    for i in 1..=kills {
        // Most kills hit a run from the uncleaned directory; every fifth hits a run that starts from the
        // leftovers of the kill before it.
        if i % 5 != 0 {
            let _ = std::fs::remove_dir_all(&root);
            copy_tree(&pristine, &root);
        }
        let at = i as usize * lines / (kills as usize + 1);
        killed += u32::from(kill_after_lines(job.command(&root), at, per_line.mul_f64(jitter(i))));
        for name in job.partitions() {
            let dir = root.join(name);
            check_exits_0(&dir, format, &format!("{job:?}, kill {i}, {name}"));
            let now = records(&dir, format);
            assert_eq!(latest(&now), before, "{job:?}, kill {i}, {name}: a key lost its latest record or moved");
            assert!(now.windows(2).all(|w| w[0].0 < w[1].0), "{job:?}, kill {i}: offsets out of order");
        }
        if (i + 1) % 5 == 0 {
            continue; // the next kill lands on what this one left
        }
        let out = job.command(&root).stdout(Stdio::null()).status().expect("rerun");
        assert!(out.success(), "{job:?}, kill {i}: the rerun finishes");
        reruns += 1;
        for name in job.partitions() {
            let dir = root.join(name);
            assert_eq!(read_back(&dir), want[name], "{job:?}, kill {i}, {name}: after the rerun");
            assert_eq!(leftovers(&dir), Vec::<String>::new(), "{job:?}, kill {i}, {name}");
            check_exits_0(&dir, format, &format!("{job:?}, kill {i}, {name}, after the rerun"));
        }
    }
    let reader = if py.is_some() { "kafka-python" } else { "our reader" };
    eprintln!(
        "{job:?}: {killed} of {kills} runs killed mid-way, {reruns} reruns read back by {reader} ({lines} lines of \
         about {per_line:?})"
    );
    assert!(killed > kills / 2, "{job:?}: only {killed} of {kills} runs were killed mid-way");
}

#[test]
fn compact_in_place_killed_at_any_moment_loses_nothing() {
    sweep(Job::Compact(Format::Native), 12);
}

#[test]
fn kafka_compact_in_place_killed_at_any_moment_loses_nothing() {
    sweep(Job::Compact(Format::Kafka), 8);
}

#[test]
fn kafka_clean_of_a_log_directory_killed_at_any_moment_loses_nothing() {
    sweep(Job::Clean, 6);
}

#[test]
#[ignore = "long: 120 kills of compact (about 4 minutes)"]
fn compact_in_place_killed_120_times_loses_nothing() {
    sweep(Job::Compact(Format::Native), 120);
}

#[test]
#[ignore = "long: 100 kills of compact --format kafka"]
fn kafka_compact_in_place_killed_100_times_loses_nothing() {
    sweep(Job::Compact(Format::Kafka), 100);
}

#[test]
#[ignore = "long: 100 kills of clean --format kafka"]
fn kafka_clean_of_a_log_directory_killed_100_times_loses_nothing() {
    sweep(Job::Clean, 100);
}

#[test]
fn a_compaction_to_out_killed_at_any_moment_leaves_no_target_and_a_rerun_starts_over() {
    // `compact --out D` once renamed its copy to D and then compacted D in place: a kill left D half
    // compacted (check passed on it) and a rerun to D exited 2. Now D appears only when every pass is done.
    let tmp = tempfile::tempdir().expect("tempdir");
    for format in [Format::Kafka, Format::Native] {
        let src = tmp.path().join(format.name()).join("orders-0");
        match format {
            Format::Kafka => {
                write_kafka_partition(&src, &SPEC);
            }
            Format::Native => {
                let out = Command::new(bin())
                    .args(["gen", "--dir", path(&src), "--records", "20000", "--keys", "3000"])
                    .args(["--segment-bytes", "64KiB"])
                    .output()
                    .expect("gen");
                assert!(out.status.success(), "gen: {}", String::from_utf8_lossy(&out.stderr));
            }
        }
        let compact = |target: &Path| {
            let mut c = Command::new(bin());
            c.args(["compact", "--format", format.name(), "--cleanup-policy", "compact", "--dir", path(&src)]);
            c.args(["--out", path(target), "--dedupe-buffer", BUFFER, "--until-clean", "--json"]);
            c
        };
        // A whole run: what it keeps, how many lines it prints, how long a line takes.
        let full = tmp.path().join(format.name()).join("full").join("orders-0");
        std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
        let started = Instant::now();
        let out = compact(&full).output().expect("run");
        assert!(out.status.success(), "{format:?}: a whole run: {}", String::from_utf8_lossy(&out.stderr));
        let lines = out.stdout.iter().filter(|&&b| b == b'\n').count();
        assert!(lines > 3, "{format:?}: {lines} passes");
        let per_line = started.elapsed() / lines as u32;
        let want = records(&full, format);

        let parent = tmp.path().join(format.name()).join("copies");
        std::fs::create_dir_all(&parent).expect("mkdir");
        let target = parent.join("orders-0");
        let (kills, mut killed) = (8u32, 0);
        for i in 1..=kills {
            let at = i as usize * lines / (kills as usize + 1);
            let running = kill_after_lines(compact(&target), at, per_line.mul_f64(jitter(i)));
            killed += u32::from(running);
            // A kill leaves no target, or (when it struck between the rename into place and the exit) the
            // whole result: never a half-compacted one.
            if target.exists() {
                assert_eq!(records(&target, format), want, "{format:?}, kill {i} (running: {running}): the target");
                check_exits_0(&target, format, &format!("{format:?}, kill {i}: the target"));
                std::fs::remove_dir_all(&target).expect("remove");
            }
            let out = compact(&target).stdout(Stdio::null()).output().expect("rerun");
            assert!(
                out.status.success(),
                "{format:?}, kill {i}: the rerun starts over: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(records(&target, format), want, "{format:?}, kill {i}: the rerun's copy");
            let left: Vec<String> = std::fs::read_dir(&parent)
                .expect("list")
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect();
            assert_eq!(left, vec!["orders-0".to_owned()], "{format:?}, kill {i}: the killed run's copy is gone");
            std::fs::remove_dir_all(&target).expect("remove");
        }
        assert!(killed > kills / 2, "{format:?}: only {killed} of {kills} runs were killed mid-way");
    }
}

/// Bytes of the files in `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |d| d.filter_map(|e| e.ok()?.metadata().ok()).map(|m| m.len()).sum())
}

/// Runs `gen` into `dir` and kills it once the directory holds `bytes` bytes; true if it was still running.
fn kill_gen_at(dir: &Path, bytes: u64) -> bool {
    let mut child = generate(dir).spawn().expect("spawn gen");
    let started = Instant::now();
    while dir_bytes(dir) < bytes
        && child.try_wait().expect("poll").is_none()
        && started.elapsed() < Duration::from_secs(60)
    {
        std::thread::sleep(Duration::from_micros(200));
    }
    let running = child.try_wait().expect("poll").is_none();
    let _ = child.kill();
    let _ = child.wait();
    running
}

fn sweep_gen(kills: u32) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let reference = tmp.path().join("reference");
    assert!(generate(&reference).status().expect("gen").success());
    let total = dir_bytes(&reference);
    let all = records(&reference, Format::Native);
    let mut killed = 0;
    for i in 1..=kills {
        let dir = tmp.path().join(format!("gen-{i}"));
        let at = (total as f64 * 0.95 * (f64::from(i - 1) + jitter(i)) / f64::from(kills)) as u64;
        killed += u32::from(kill_gen_at(&dir, at));
        if !dir.join("00000000000000000000.log").exists() {
            continue; // killed before the log existed
        }
        check_exits_0(&dir, Format::Native, &format!("gen kill {i}"));
        let got = records(&dir, Format::Native);
        assert_eq!(got, all[..got.len()], "gen kill {i}: not a prefix of the workload");
        std::fs::remove_dir_all(&dir).expect("rm");
    }
    eprintln!("gen: {killed} of {kills} runs killed mid-way ({total} bytes in a whole run)");
    assert!(killed > kills / 2, "only {killed} of {kills} runs were killed mid-way");
}

#[test]
fn gen_killed_at_any_moment_leaves_a_prefix() {
    sweep_gen(8);
}

#[test]
#[ignore = "long: 100 kills of gen (about 2 minutes)"]
fn gen_killed_100_times_leaves_a_prefix() {
    sweep_gen(100);
}
