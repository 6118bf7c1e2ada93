//! `logcompact run` end to end: the seed's trace, standard input, errors and exit codes, statistics.

use std::process::Output;

use crate::common;
use common::logcompact;

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("utf-8")
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).expect("utf-8")
}

#[test]
fn the_seed_trace_prints_the_seeds_before_and_after_states() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/seed-trace.txt");
    let out = logcompact(&["run", script], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let want = "\
segment 0: 0 p=1 1 q=1 (closed)
segment 2: 2 p=2 3 q=TOMBSTONE (closed)
segment 4: 4 r=1 (active)
segment 2: 2 p=2 3 q=TOMBSTONE (closed)
segment 4: 4 r=1 (active)
segment 2: 2 p=2 (closed)
segment 4: 4 r=1 (active)
2 p=2
END
";
    assert_eq!(stdout(&out), want);
    assert_eq!(stderr(&out), "");
}

#[test]
fn reads_standard_input_and_skips_comments_and_blank_lines() {
    let out = logcompact(&["run", "-"], "# a comment\n\nPUT a 1\n   \nPUT a 2\nDUMP\nREAD 1\n");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "segment 0: 0 a=1 1 a=2 (active)\n1 a=2\n");
}

#[test]
fn an_empty_active_segment_is_printed_alone() {
    let out = logcompact(&["run", "-"], "DUMP\nPUT a 1\nROLL\nROLL\nDUMP\n");
    assert_eq!(stdout(&out), "segment 0: (active)\nsegment 0: 0 a=1 (closed)\nsegment 1: (active)\n");
}

#[test]
fn a_bad_line_stops_the_run_naming_the_line_with_exit_code_2() {
    let out = logcompact(&["run", "-"], "PUT a 1\nDUMP\nFROB x\nDUMP\n");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stdout(&out), "segment 0: 0 a=1 (active)\n", "output before the bad line stays");
    let err = stderr(&out);
    assert!(err.contains("line 3") && err.contains("FROB"), "{err}");
    let out = logcompact(&["run", "-"], "READ minus-one\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("line 1"));
}

#[test]
fn a_dedupe_buffer_that_holds_no_key_is_a_clear_error() {
    let out = logcompact(&["run", "--dedupe-buffer", "47", "-"], "DUMP\n");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("47 bytes") && err.contains("48"), "{err}");
    let out = logcompact(&["run", "--load-factor", "1.5", "-"], "DUMP\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("load factor"));
}

#[test]
fn a_missing_script_file_is_an_error() {
    let out = logcompact(&["run", "/nonexistent/script.txt"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("/nonexistent/script.txt"));
}

#[test]
fn a_tiny_buffer_gives_partial_passes_that_converge() {
    let script = "PUT a 1\nPUT b 1\nPUT c 1\nPUT a 2\nPUT b 2\nPUT c 2\nROLL\nCOMPACT\nDUMP\n".to_owned()
        + &"COMPACT\n".repeat(5)
        + "DUMP\n";
    // A one-key map maps one key per pass: six keyed records need six passes.
    let out = logcompact(&["run", "--dedupe-buffer", "48", "--stats", "-"], &script);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<String> = stdout(&out).lines().map(str::to_owned).collect();
    assert_eq!(lines[0], "segment 0: 0 a=1 1 b=1 2 c=1 3 a=2 4 b=2 5 c=2 (closed)", "first pass maps only a");
    assert_eq!(lines[2], "segment 0: 3 a=2 4 b=2 5 c=2 (closed)");
    let err = stderr(&out);
    let stats: Vec<serde_json::Value> =
        err.lines().filter(|l| l.starts_with('{')).map(|l| serde_json::from_str(l).expect("JSON")).collect();
    assert_eq!(stats.len(), 6);
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 1, "one warning that the buffer takes several passes: {err}");
    assert!(warnings[0].contains("about 6 passes") && warnings[0].contains("advise"), "{}", warnings[0]);
    assert_eq!(stats[0]["map_full"], true);
    assert_eq!(stats[0]["end_offset"], 1);
    assert_eq!(stats[0]["offset_map"]["capacity"], 1);
    assert_eq!(stats[5]["map_full"], false);
    assert_eq!(stats[5]["end_offset"], 6);
}

#[test]
fn segment_bytes_rolls_automatically() {
    let out = logcompact(&["run", "--segment-bytes", "80", "-"], "PUT a 1\nPUT b 2\nPUT c 3\nDUMP\n");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.lines().count() >= 2, "{text}");
    assert!(text.contains("(closed)") && text.ends_with("(active)\n"), "{text}");
}

#[test]
fn help_explains_the_language() {
    let out = logcompact(&["run", "--help"], "");
    let text = stdout(&out);
    for word in ["PUT key value", "COMPACT PURGE", "--dedupe-buffer", "--stats", "--segment-bytes", "Exit codes"] {
        assert!(text.contains(word), "help lacks {word}: {text}");
    }
}

#[test]
fn every_command_documents_the_same_exit_codes() {
    for cmd in ["run", "gen", "compact", "dump", "check", "repair"] {
        let text = stdout(&logcompact(&[cmd, "--help"], ""));
        for line in ["0  success", "1  corruption or loss", "2  usage", "3  the command could not be carried out"] {
            assert!(text.contains(line), "{cmd} --help lacks {line:?}");
        }
    }
}

#[test]
fn every_map_prints_the_seed_trace_and_names_itself_in_the_statistics() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/seed-trace.txt");
    let reference = stdout(&logcompact(&["run", script], ""));
    for map in ["skimpy", "fullkey", "compact"] {
        let out = logcompact(&["run", "--map", map, "--stats", script], "");
        assert!(out.status.success(), "{map}: {}", stderr(&out));
        assert_eq!(stdout(&out), reference, "{map}");
        let first: serde_json::Value =
            serde_json::from_str(stderr(&out).lines().next().expect("a stats line")).expect("json");
        assert_eq!(first["map"], map);
    }
    let out = logcompact(&["run", "--map", "md5", "-"], "");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn compact_follows_the_lesson_by_default_and_kafkas_grouping_with_a_flag() {
    let script = "PUT a 1\nPUT b 1\nROLL\nPUT a 2\nROLL\nPUT c 1\nROLL\nCOMPACT\nDUMP\n";
    let lesson = logcompact(&["run", "-"], script);
    assert_eq!(
        stdout(&lesson),
        "segment 0: 1 b=1 (closed)\nsegment 2: 2 a=2 (closed)\nsegment 3: 3 c=1 (closed)\nsegment 4: (active)\n",
        "{}",
        stderr(&lesson)
    );
    let grouped = logcompact(&["run", "--group-segments", "-"], script);
    assert_eq!(
        stdout(&grouped),
        "segment 0: 1 b=1 2 a=2 3 c=1 (closed)\nsegment 4: (active)\n",
        "{}",
        stderr(&grouped)
    );
}
