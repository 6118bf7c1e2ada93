//! Exit codes follow the documented table for failures that are not damage: a busy log left uncleanable by
//! `clean` is exit 3 (try again), not 1 (corruption); standard output closed or full never panics: a closed pipe
//! ends quietly (exit 0), a full device is exit 3, and a compaction stopped by it leaves no pass files.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::common;
use common::{bin, contents, kafka_partition, logcompact, path, stderr};

fn log(dir: &Path) {
    let script: String = (0..300).map(|i| format!("PUT k{} v{i}\n", i % 7)).collect::<String>() + "ROLL\n";
    let out = logcompact(&["run", "--backend", "file", "--dir", path(dir), "--segment-bytes", "2KiB", "-"], &script);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_busy_log_left_uncleanable_is_exit_3_and_the_others_are_cleaned() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    log(&data.join("busy"));
    log(&data.join("free"));
    // Another writer holds `busy` (its flock on the log's directory) for the whole run.
    let held = std::fs::File::open(data.join("busy")).expect("open");
    held.try_lock().expect("flock");
    let before = contents(&data.join("busy"));
    let out = logcompact(&["clean", "--data-dir", path(&data), "--until-clean", "--max-retries", "0"], "");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("left uncleanable: busy"), "{}", stderr(&out));
    assert_eq!(contents(&data.join("busy")), before);
    let free = logcompact(&["dump", "--dir", path(&data.join("free"))], "");
    assert_eq!(String::from_utf8_lossy(&free.stdout).lines().count(), 7, "the free log was cleaned: one record a key");
}

/// Runs `args` with standard output on `/dev/full`.
fn to_full(args: &[&str]) -> std::process::Output {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
    Command::new(bin()).args(args).stdout(Stdio::from(full)).stderr(Stdio::piped()).output().expect("run")
}

/// Runs `args` with standard output a pipe closed before anything is written.
fn to_closed_pipe(args: &[&str]) -> std::process::Output {
    let mut child = Command::new(bin()).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("run");
    drop(child.stdout.take());
    child.wait_with_output().expect("wait")
}

#[test]
fn a_full_or_closed_standard_output_never_panics_and_a_stopped_compaction_leaves_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let native = tmp.path().join("native");
    log(&native);
    let kafka = tmp.path().join("kafka-logs").join("orders-0");
    kafka_partition(&kafka, 7, 4, 3, 20);
    for (format, dir) in [("native", &native), ("kafka", &kafka)] {
        let d = path(dir);
        for args in [
            crate::common::compact_as(format, d, &["--dedupe-buffer", "200", "--until-clean"]),
            vec!["check", "--format", format, "--dir", d],
            vec!["dump", "--format", format, "--dir", d],
        ] {
            let before = contents(dir);
            let out = to_full(&args);
            assert_eq!(out.status.code(), Some(3), "{args:?} to /dev/full: {}", stderr(&out));
            assert!(stderr(&out).contains("cannot write output"), "{args:?}: {}", stderr(&out));
            assert!(!stderr(&out).contains("panicked"), "{args:?}: {}", stderr(&out));
            if args[0] == "compact" {
                // The first pass's line could not be printed: the passes stop, and every file is a log's file.
                let names: Vec<String> = contents(dir).into_keys().collect();
                assert!(names.iter().all(|n| !n.contains("pass") && !n.ends_with(".cleaned")), "{names:?}");
            } else {
                assert_eq!(contents(dir), before, "{args:?} only reads");
            }
            let out = to_closed_pipe(&args);
            assert!(!stderr(&out).contains("panicked"), "{args:?}: {}", stderr(&out));
            assert_eq!(out.status.code(), Some(0), "{args:?} into a closed pipe: {}", stderr(&out));
        }
    }
}

/// Runs `args` with standard error on `/dev/full` (every write to it fails with ENOSPC).
fn stderr_to_full(args: &[&str]) -> std::process::Output {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
    Command::new(bin()).args(args).stdout(Stdio::piped()).stderr(Stdio::from(full)).output().expect("run")
}

#[test]
fn a_full_standard_error_never_panics_and_the_run_finishes() {
    // `eprintln!` panics when standard error cannot be written: `compact`, `clean` and every error path exited
    // 101 (`... 2>/dev/full`), abandoning the run. Their diagnostics now go or are dropped, and the run ends as
    // it would have.
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let native = data.join("native");
    log(&native);
    let kafka = tmp.path().join("kafka-logs").join("orders-0");
    kafka_partition(&kafka, 7, 4, 3, 20);
    for (format, dir) in [("native", &native), ("kafka", &kafka)] {
        // A buffer of a few keys: several passes, and a warning saying so.
        let out =
            stderr_to_full(&crate::common::compact_as(format, path(dir), &["--until-clean", "--dedupe-buffer", "200"]));
        assert_eq!(out.status.code(), Some(0), "compact --format {format}");
        let dump = logcompact(&["dump", "--format", format, "--dir", path(dir)], "");
        let records = String::from_utf8_lossy(&dump.stdout).lines().filter(|l| l.contains("k")).count();
        assert!(records < 100, "compact --format {format} did its passes: {records} records left");
        // Again: nothing is dirty now, and it says so.
        let out = stderr_to_full(&crate::common::compact_as(format, path(dir), &[]));
        assert_eq!(out.status.code(), Some(0), "compact --format {format} with nothing to do");
        let out = stderr_to_full(&["check", "--format", format, "--dir", path(dir)]);
        assert_eq!(out.status.code(), Some(0), "check --format {format}");
    }
    let out =
        stderr_to_full(&["clean", "--data-dir", path(&data), "--until-clean", "--min-cleanable-dirty-ratio", "0"]);
    assert_eq!(out.status.code(), Some(0), "clean");
    for (args, code) in [
        (vec!["check", "--dir", path(&tmp.path().join("nowhere"))], 2),
        (vec!["check", "--format", "kafka", "--dir", path(&native)], 2),
        (vec!["compact", "--dir", path(&native), "--dedupe-buffer", "-1"], 2),
        (vec!["dump", "--dir", path(&native), "--no-such-flag"], 2),
    ] {
        let out = stderr_to_full(&args);
        assert_eq!(out.status.code(), Some(code), "{args:?}");
    }
}
