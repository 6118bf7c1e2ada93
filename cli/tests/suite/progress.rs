//! Progress (issue 26 item 7): a command that reads a whole log shows how far it has got. Off a terminal (as
//! here: standard error is a pipe) it prints a plain line every `LOGCOMPACT_PROGRESS_INTERVAL_MS`, and
//! nothing for a run shorter than that; standard output is never touched. The lines are read as a person
//! reads them: what is being done, bytes of what total, records, a rate, the time left.

use crate::common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::{bin, path, stderr, stdout};

/// Runs `logcompact ARGS` with the progress interval set to `interval` (`None`: not set).
fn run(args: &[&str], interval: Option<&str>) -> Output {
    let mut c = Command::new(bin());
    c.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    match interval {
        Some(ms) => c.env("LOGCOMPACT_PROGRESS_INTERVAL_MS", ms),
        None => c.env_remove("LOGCOMPACT_PROGRESS_INTERVAL_MS"),
    };
    let out = c.output().expect("run logcompact");
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    out
}

/// A log of about 22 MiB in 4 MiB segments: long enough to read that a 2 ms interval shows several lines (a pass
/// over it takes some 20 to 60 ms on the project's machine; at 20 ms an interval, a fast run showed one line).
fn big_log(dir: &Path) {
    run(&["gen", "--dir", path(dir), "--records", "150000", "--keys", "3000", "--segment-bytes", "4MiB"], Some("off"));
}

/// A progress line as a person reads it.
#[derive(Debug)]
struct Line {
    stage: String,
    done: f64,
    total: Option<f64>,
    records: u64,
    left: Option<String>,
}

/// `12.3 MiB` in bytes.
fn size(text: &str) -> f64 {
    let (n, unit) = text.split_once(' ').unwrap_or_else(|| panic!("a size: {text}"));
    let n: f64 = n.parse().unwrap_or_else(|_| panic!("a number: {text}"));
    let scale = match unit {
        "B" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => panic!("a unit: {text}"),
    };
    n * scale
}

/// The progress lines of `command` in `err` (`command: [stage: ]X of Y read, N records, R/s[, about T left]`),
/// read apart, those saying it is starting left out; any other line of `command:` fails the test.
fn progress_lines(err: &str, command: &str, verb: &str) -> Vec<Line> {
    let prefix = format!("{command}: ");
    err.lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        // Before anything is read (the log being opened): `check: starting`, `check: 0 of 3 logs, starting`.
        .filter(|rest| !rest.ends_with("starting"))
        .map(|rest| {
            let (head, figures) = match rest.split_once(": ") {
                Some((stage, figures)) if !stage.contains(',') => (stage.to_owned(), figures),
                _ => (String::new(), rest),
            };
            let parts: Vec<&str> = figures.split(", ").collect();
            assert!(parts.len() >= 3, "a progress line: {rest}");
            let read = parts[0].strip_suffix(&format!(" {verb}")).unwrap_or_else(|| panic!("bytes {verb}: {rest}"));
            let (done, total) = match read.split_once(" of ") {
                Some((d, t)) => (size(d), Some(size(t))),
                None => (size(read), None),
            };
            let records = parts[1].split(' ').next().and_then(|n| n.parse().ok()).expect("records");
            assert!(parts[1].ends_with("records") || parts[1].ends_with("record"), "records: {rest}");
            assert!(parts[2].ends_with("/s") || parts[2] == "-", "a rate: {rest}");
            let left = parts.get(3).map(|p| {
                assert!(p.starts_with("about ") && p.ends_with(" left"), "time left: {rest}");
                (*p).to_owned()
            });
            Line { stage: head, done, total, records, left }
        })
        .collect()
}

/// Within a stage, the bytes and records never go back and never pass the total.
fn assert_moves_forward(lines: &[Line]) {
    for pair in lines.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if a.stage == b.stage {
            assert!(b.done >= a.done && b.records >= a.records, "went back: {a:?} then {b:?}");
        }
    }
    for l in lines {
        assert!(l.total.is_none_or(|t| l.done <= t), "past its total: {l:?}");
    }
}

#[test]
fn compact_shows_each_pass_going_forward_and_leaves_stdout_to_the_program() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    big_log(&a);
    big_log(&b);
    let shown = run(&["compact", "--dir", path(&a), "--json"], Some("2"));
    let quiet = run(&["compact", "--dir", path(&b), "--json"], Some("off"));

    let lines = progress_lines(&stderr(&shown), "compact", "read");
    assert!(lines.len() >= 2, "a line every 2 ms of a pass over 22 MiB: {}", stderr(&shown));
    let stages: Vec<&str> = lines.iter().map(|l| l.stage.as_str()).collect();
    let first_copy = stages.iter().position(|s| *s == "pass 2 (copy)").unwrap_or(stages.len());
    assert!(stages[..first_copy].iter().all(|s| *s == "pass 1 (offset map)"), "pass 1 first: {stages:?}");
    assert!(stages[first_copy..].iter().all(|s| *s == "pass 2 (copy)"), "then pass 2: {stages:?}");
    assert_moves_forward(&lines);
    let total = lines[0].total.expect("a pass knows its bytes");
    assert!(total > 15.0 * 1024.0 * 1024.0, "the dirty section's bytes: {lines:?}");
    assert!(lines.iter().any(|l| l.records > 0 && l.done > 0.0 && l.left.is_some()), "{lines:?}");

    // Standard output is the program's: the same JSON lines with progress as without (figures of time apart).
    let keys = |o: &Output| -> Vec<Vec<String>> {
        stdout(o)
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("JSON: {e}: {l}"));
                v.as_object().expect("an object").keys().cloned().collect()
            })
            .collect()
    };
    assert_eq!(keys(&shown), keys(&quiet));
    assert!(!stdout(&shown).contains(" read, "), "{}", stdout(&shown));
    // Without progress, standard error holds no progress line.
    assert!(progress_lines(&stderr(&quiet), "compact", "read").is_empty(), "{}", stderr(&quiet));
}

#[test]
fn a_run_shorter_than_the_interval_prints_nothing_more() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // Each run on a log of its own, the same each time (a compaction changes its log).
    let small = |name: &str| {
        let dir = tmp.path().join(name);
        let args = ["gen", "--dir", path(&dir), "--records", "2000", "--keys", "100", "--segment-bytes", "64KiB"];
        run(&args, Some("off"));
        dir
    };
    for command in ["check", "compact"] {
        let stderr_with = |interval: Option<&str>| {
            let dir = small(&format!("{command}-{}", interval.unwrap_or("unset")));
            // Standard error names the directory: the same name in every run.
            let same = tmp.path().join("log");
            std::fs::rename(&dir, &same).expect("rename");
            let err = stderr(&run(&[command, "--dir", path(&same), "--json"], interval));
            std::fs::remove_dir_all(&same).expect("remove");
            err
        };
        let off = stderr_with(Some("off"));
        assert_eq!(stderr_with(None), off, "{command}: the default interval is seconds, this run is not");
        assert_eq!(stderr_with(Some("60000")), off, "{command}");
    }
}

#[test]
fn check_gen_repair_and_clean_show_progress_too() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let dir = data.join("orders");
    let made = run(
        &["gen", "--dir", path(&dir), "--records", "150000", "--keys", "3000", "--segment-bytes", "4MiB"],
        Some("5"),
    );
    let gen_lines = progress_lines(&stderr(&made), "gen", "written");
    assert!(!gen_lines.is_empty(), "{}", stderr(&made));
    assert!(stderr(&made).contains(" of 150000 records"), "gen knows its records: {}", stderr(&made));

    let checked = run(&["check", "--dir", path(&dir)], Some("5"));
    let lines = progress_lines(&stderr(&checked), "check", "read");
    assert!(!lines.is_empty(), "{}", stderr(&checked));
    assert_moves_forward(&lines);
    assert!(lines.iter().all(|l| l.stage.is_empty() && l.total.is_some()), "{lines:?}");
    assert!(stdout(&checked).contains("check passed"), "{}", stdout(&checked));

    // A data directory: its logs counted, bytes added up over them.
    let checked = run(&["check", "--data-dir", path(&data)], Some("5"));
    let err = stderr(&checked);
    // The logs' bytes are known ahead: how much is read of them, and the time left by bytes.
    let of_bytes =
        |l: &str| l.split_once(" logs, ").is_some_and(|(_, rest)| rest.contains(" of ") && rest.contains(" read, "));
    assert!(err.lines().any(|l| l.starts_with("check: 0 of 1 logs, ") && of_bytes(l) && l.contains(" left")), "{err}");

    // analyze reads a data directory's logs several times (counts, keys, a dry run): its total is what it
    // reads, so the line is not stuck at the total while most of the work is still to do.
    let analyzed = run(&["analyze", "--format", "native", "--data-dir", path(&data)], Some("5"));
    let err = stderr(&analyzed);
    let read: Vec<(f64, f64)> = err
        .lines()
        .filter_map(|l| l.strip_prefix("analyze: ")?.split(", ").find(|p| p.ends_with(" read")))
        .filter_map(|p| p.strip_suffix(" read")?.split_once(" of ").map(|(d, t)| (size(d), size(t))))
        .collect();
    assert!(read.len() >= 3, "{err}");
    let at_total = read.iter().filter(|(done, total)| done >= total).count();
    assert!(at_total <= 1, "{at_total} of {} lines at their total: {err}", read.len());

    // repair's plan reads every segment: its bytes counted against the log's.
    let planned = run(&["repair", "--dir", path(&dir)], Some("5"));
    let lines = progress_lines(&stderr(&planned), "repair", "read");
    assert!(!lines.is_empty(), "{}", stderr(&planned));
    assert_moves_forward(&lines);
    assert!(lines.iter().all(|l| l.stage == "plan" && l.total.is_some()), "{lines:?}");
    assert!(stdout(&planned).contains("nothing to repair"), "{}", stdout(&planned));

    // compact --out: the copy it makes first is counted too, then the passes on the copy.
    let copy = tmp.path().join("copy");
    let copied = run(&["compact", "--dir", path(&dir), "--out", path(&copy)], Some("5"));
    let lines = progress_lines(&stderr(&copied), "compact", "read");
    assert!(lines.iter().any(|l| l.stage == logcompact::STAGE_COPY && l.total.is_some()), "{lines:?}");

    let cleaned = run(&["clean", "--data-dir", path(&data), "--until-clean"], Some("5"));
    let err = stderr(&cleaned);
    assert!(err.lines().any(|l| l.starts_with("clean: 0 of 1 passes, ") && l.contains(" records, ")), "{err}");
}

#[test]
fn an_interval_that_is_not_one_is_said_not_ignored() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("small");
    run(&["gen", "--dir", path(&dir), "--records", "100", "--keys", "10"], Some("off"));
    let out = run(&["check", "--dir", path(&dir)], Some("5s"));
    assert!(
        stderr(&out).contains("note: LOGCOMPACT_PROGRESS_INTERVAL_MS=\"5s\" is neither milliseconds nor off"),
        "{}",
        stderr(&out)
    );
}
