//! What a person reads (issue 26 item 4): every command's default output is a short summary in words, sizes
//! in binary units that show a change (KiB below a MiB), durations, offset ranges that are never half empty;
//! `--json` gives the machine its figures instead.

use crate::common;

use std::path::Path;

use common::{logcompact, path, stderr, stdout};

fn ok(args: &[&str]) -> String {
    let out = logcompact(args, "");
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

fn generate(dir: &Path) -> String {
    ok(&["gen", "--dir", path(dir), "--records", "6000", "--keys", "200", "--segment-bytes", "64KiB"])
}

#[test]
fn gen_compact_and_check_speak_to_a_person_and_json_to_a_program() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("orders");
    let made = generate(&dir);
    assert!(made.starts_with("appended 6000 records (0 tombstones; 200 keys, 100-byte values) to "), "{made}");
    assert!(made.contains("the log holds 890.6 KiB in 14 segments, its next offset 6000"), "{made}");

    let text = ok(&["compact", "--dir", path(&dir), "--until-clean"]);
    assert!(!text.contains('{'), "no JSON for a person: {text}");
    let lines: Vec<&str> = text.lines().collect();
    // The pass's summary as `clean` prints it, then the whole run and the next step.
    assert!(lines[0].starts_with("cleaner: cleaned log ") && lines[0].contains("(dirty section: offsets 0-"), "{text}");
    assert!(text.contains("start size ") && text.contains("(200 records)"), "{text}");
    let done = lines.iter().find(|l| l.starts_with("compacted ")).expect("a line for the run");
    assert!(done.contains(" in 1 pass ("), "{done}");
    // 200 records of about 150 bytes: kibibytes, never "0.0 MiB".
    assert!(done.contains(" KiB (") && !done.contains("0.0 MiB"), "{done}");
    assert!(done.contains(" records removed (0 tombstones among them)"), "{done}");
    // The settings the passes ran with, and where each came from (only defaults here).
    assert!(lines.contains(&"settings: all defaults"), "{text}");
    let next = lines.last().expect("a next step");
    assert!(next.starts_with("next: the active segment's ") && next.contains("`logcompact roll --dir "), "{next}");

    // --json: one line a pass, the statistics only.
    let more = tmp.path().join("more");
    generate(&more);
    let json = ok(&["compact", "--dir", path(&more), "--until-clean", "--json"]);
    let pass: serde_json::Value = serde_json::from_str(json.trim()).expect("one JSON line");
    assert_eq!(pass["pass2"]["records_kept"], 200);

    // check: the log's figures, then one verdict line.
    let text = ok(&["check", "--dir", path(&dir)]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].contains(" segments, ") && lines[0].contains(" KiB; "), "{text}");
    assert_eq!(lines[1], format!("check passed: every record of {} is intact", dir.display()));
    let json: serde_json::Value = serde_json::from_str(&ok(&["check", "--dir", path(&dir), "--json"])).expect("JSON");
    assert!(json["records"].as_u64().is_some_and(|r| r >= 200), "{json}");
}

#[test]
fn an_empty_log_says_so_instead_of_half_a_range() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("empty");
    let out = logcompact(&["run", "--backend", "file", "--dir", path(&dir), "-"], "ROLL\n");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = ok(&["analyze", "--format", "native", "--dir", path(&dir)]);
    assert!(!text.contains("..=-") && !text.contains("0..="), "{text}");
    assert!(text.starts_with(&format!("log {}: 1 segment, 0 batches, 0 B\n", dir.display())), "{text}");
    assert!(text.lines().any(|l| l == "no records: an empty or emptied log"), "{text}");
}
