//! `logcompact clean`, `status`, `roll`, the record dump and the "nothing cleanable" notes, run as an operator
//! runs them: a data directory of several logs, a settings file, a damaged log, a watch ended by SIGINT.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::{contents, logcompact, path, stderr, stdout};

fn ok(out: &std::process::Output) -> String {
    assert!(out.status.success(), "exit {:?}: {}", out.status.code(), stderr(out));
    stdout(out)
}

/// `gen` a log of `records` records over `keys` keys into `dir`, with small segments so that passes have work.
fn gen_log(dir: &Path, records: u32, keys: u32, seed: u32) {
    let (records, keys, seed) = (records.to_string(), keys.to_string(), seed.to_string());
    ok(&logcompact(
        &[
            "gen",
            "--dir",
            path(dir),
            "--records",
            &records,
            "--keys",
            &keys,
            "--value-bytes",
            "40",
            "--segment-bytes",
            "16KiB",
            "--tombstones",
            "0.05",
            "--seed",
            &seed,
        ],
        "",
    ));
}

/// Every record of a log from `dump --json` (an array of segments): offset -> (key, value).
fn records(dir: &Path) -> BTreeMap<u64, (serde_json::Value, serde_json::Value)> {
    let dump: serde_json::Value =
        serde_json::from_str(&ok(&logcompact(&["dump", "--dir", path(dir), "--json"], ""))).expect("dump --json");
    dump.as_array()
        .expect("segments")
        .iter()
        .flat_map(|s| s["records"].as_array().expect("records").clone())
        .map(|r| (r["offset"].as_u64().expect("offset"), (r["key"].clone(), r["value"].clone())))
        .collect()
}

/// The latest record of every key: key -> (offset, value).
fn latest(records: &BTreeMap<u64, (serde_json::Value, serde_json::Value)>) -> BTreeMap<String, (u64, String)> {
    records.iter().map(|(o, (k, v))| (k.to_string(), (*o, v.to_string()))).collect()
}

fn flip_byte(file: &Path, at: usize) {
    let mut bytes = std::fs::read(file).expect("read");
    bytes[at] ^= 0x10;
    std::fs::write(file, &bytes).expect("write");
}

#[test]
fn until_clean_cleans_every_log_with_its_settings_and_isolates_a_damaged_one() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    for (i, name) in ["orders", "users", "events", "damaged"].into_iter().enumerate() {
        gen_log(&data.join(name), 3000, 100, i as u32 + 1);
    }
    // A record in the middle of a sealed segment of `damaged` is corrupt: every pass on it fails.
    flip_byte(&data.join("damaged").join("00000000000000000000.log"), 5000);
    let before: BTreeMap<&str, _> = ["orders", "users", "events"].map(|n| (n, records(&data.join(n)))).into();
    let damaged_before = contents(&data.join("damaged"));
    let config = tmp.path().join("cleaner.conf");
    std::fs::write(
        &config,
        "# every log\nmin.cleanable.dirty.ratio = 0.2\n\n[events]\ncleanup.policy = delete\n\n[orders]\nsegment.bytes = 2KiB\n",
    )
    .expect("config");

    let out = logcompact(
        &[
            "clean",
            "--data-dir",
            path(&data),
            "--until-clean",
            "--config",
            path(&config),
            "--threads",
            "2",
            "--max-retries",
            "1",
            "--retry-backoff-ms",
            "50",
            "--json",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1), "a log left uncleanable: exit 1 after the others: {}", stderr(&out));
    assert!(stderr(&out).contains("damaged"), "{}", stderr(&out));
    let events: Vec<serde_json::Value> =
        stdout(&out).lines().map(|l| serde_json::from_str(l).expect("one JSON event a line")).collect();
    let failed: Vec<_> = events.iter().filter(|e| e["event"] == "failed").collect();
    assert_eq!(failed.len(), 2, "the first failure and one retry: {events:?}");
    assert!(failed.iter().all(|e| e["log"] == "damaged" && e["corruption"] == true));
    let cleaned: Vec<_> = events.iter().filter(|e| e["event"] == "cleaned").map(|e| e["log"].clone()).collect();
    assert!(cleaned.contains(&"orders".into()) && cleaned.contains(&"users".into()), "{cleaned:?}");
    assert!(!cleaned.contains(&"events".into()), "cleanup.policy=delete: the cleaner leaves it alone");

    // Cleaned logs keep every key's latest record at its offset; the others are untouched.
    for name in ["orders", "users"] {
        let after = records(&data.join(name));
        assert!(after.len() < before[name].len() / 2, "{name} was compacted");
        assert_eq!(latest(&after), latest(&before[name]), "{name}");
        ok(&logcompact(&["check", "--dir", path(&data.join(name))], ""));
    }
    assert_eq!(records(&data.join("events")), before["events"]);
    assert_eq!(contents(&data.join("damaged")), damaged_before, "a failed pass changes nothing");
    // Cleaned segments are merged up to the log's segment.bytes: users' (1 GiB) takes them all in one, orders'
    // (2 KiB) keeps several.
    let users = ok(&logcompact(&["dump", "--dir", path(&data.join("users")), "--segments"], ""));
    assert_eq!(users.lines().filter(|l| l.ends_with("(closed)")).count(), 1, "{users}");
    let orders = ok(&logcompact(&["dump", "--dir", path(&data.join("orders")), "--segments"], ""));
    assert!(orders.lines().filter(|l| l.ends_with("(closed)")).count() > 1, "{orders}");

    // status reads the status file and the logs, with Kafka's gauge names, and changes nothing.
    let data_before = contents(&data);
    let status: serde_json::Value =
        serde_json::from_str(&ok(&logcompact(&["status", "--data-dir", path(&data), "--json"], ""))).expect("JSON");
    assert_eq!(contents(&data), data_before, "status only reads");
    let gauges = &status["status"]["gauges"];
    for gauge in [
        "max-buffer-utilization-percent",
        "cleaner-recopy-percent",
        "max-clean-time-secs",
        "max-compaction-delay-secs",
        "uncleanable-partitions-count",
        "uncleanable-bytes",
        "DeadThreadCount",
    ] {
        assert!(gauges.get(gauge).is_some(), "{gauge} in {gauges}");
    }
    assert_eq!(gauges["uncleanable-partitions-count"], 1);
    assert_eq!(gauges["DeadThreadCount"], 0);
    let logs = status["status"]["logs"].as_array().expect("logs");
    let by = |name: &str| logs.iter().find(|l| l["name"] == name).unwrap_or_else(|| panic!("{name} in {logs:?}"));
    assert_eq!(by("damaged")["state"], "uncleanable");
    assert!(by("damaged")["last_error"].as_str().is_some_and(|e| e.contains("checksum")), "{}", by("damaged"));
    assert_eq!(by("events")["state"], "not_compacted");
    assert_eq!((by("orders")["state"].clone(), by("orders")["dirty_ratio"].clone()), ("idle".into(), 0.0.into()));
    assert!(by("orders")["last_clean_ms"].is_i64());
    let text = ok(&logcompact(&["status", "--data-dir", path(&data)], ""));
    assert!(text.contains("uncleanable-partitions-count") && text.contains("UNCLEANABLE"), "{text}");

    // A later run with nothing to clean keeps the last clean time of every log.
    let last_clean = by("orders")["last_clean_ms"].clone();
    std::fs::remove_dir_all(data.join("damaged")).expect("remove");
    ok(&logcompact(&["clean", "--data-dir", path(&data), "--until-clean", "--config", path(&config)], ""));
    let status: serde_json::Value =
        serde_json::from_str(&ok(&logcompact(&["status", "--data-dir", path(&data), "--json"], ""))).expect("JSON");
    let logs = status["status"]["logs"].as_array().expect("logs");
    let orders = logs.iter().find(|l| l["name"] == "orders").expect("orders");
    assert_eq!(orders["last_clean_ms"], last_clean, "{orders}");
}

#[test]
fn a_settings_file_with_a_bad_line_is_refused_naming_the_line() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    gen_log(&data.join("a"), 500, 10, 1);
    let before = contents(&data.join("a"));
    let config = tmp.path().join("cleaner.conf");
    for (text, needle) in [
        ("[a]\nmin.cleanable.dirty.ratio = 2\n", "a: min.cleanable.dirty.ratio = 2 (CONFIG line 2): in [0, 1]"),
        ("min.cleanable.dirty.ratio = 1.7\n", "every log: min.cleanable.dirty.ratio = 1.7 (CONFIG line 1): in [0, 1]"),
        ("[a]\nsegment.bytes = 12XB\n", "line 2"),
        ("segment.bytez = 1MiB\n", "segment.bytez"),
        ("cleanup.policy = shred\n", "cleanup.policy"),
    ] {
        std::fs::write(&config, text).expect("config");
        let out = logcompact(&["clean", "--data-dir", path(&data), "--until-clean", "--config", path(&config)], "");
        assert_eq!(out.status.code(), Some(2), "{text}: {}", stderr(&out));
        let needle = needle.replace("CONFIG", path(&config));
        assert!(stderr(&out).contains(&needle), "{text}: {}", stderr(&out));
        assert_eq!(stdout(&out), "", "{text}: refused before anything runs");
    }
    // A flag's value is checked the same way, before anything runs.
    let out =
        logcompact(&["clean", "--data-dir", path(&data), "--until-clean", "--min-cleanable-dirty-ratio", "abc"], "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("min.cleanable.dirty.ratio = abc (--min-cleanable-dirty-ratio)"), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert_eq!(contents(&data.join("a")), before);
    assert!(!data.join("logcompact-settings.json").exists(), "nothing refused is saved for the next run");
    // A bad value an earlier version saved: named log by log, shown by status, and mended by a flag.
    std::fs::write(
        data.join("logcompact-settings.json"),
        r#"{"file": {"defaults": [["min.cleanable.dirty.ratio", "1.7", "old.conf line 1"]], "logs": {}}, "flags": {}}"#,
    )
    .expect("saved settings");
    let out = logcompact(&["clean", "--data-dir", path(&data), "--until-clean"], "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "1 log(s) skipped, their settings not fitting (any others were cleaned): a: min.cleanable.dirty.ratio = \
             1.7 (saved: old.conf line 1): in [0, 1]"
        ),
        "{}",
        stderr(&out)
    );
    let out = logcompact(&["status", "--data-dir", path(&data)], "");
    assert_eq!(out.status.code(), Some(0), "status shows a directory whatever it saved: {}", stderr(&out));
    let out =
        logcompact(&["clean", "--data-dir", path(&data), "--until-clean", "--min-cleanable-dirty-ratio", "0.4"], "");
    assert_eq!(out.status.code(), Some(0), "a flag replaces the saved value: {}", stderr(&out));
}

#[test]
fn gen_and_compact_say_why_nothing_is_cleanable_and_roll_seals_the_active_segment() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("log");
    // The default segment.bytes (1 GiB): every record stays in the active segment.
    let out = logcompact(&["gen", "--dir", path(&dir), "--records", "1000", "--keys", "10"], "");
    ok(&out);
    assert!(stderr(&out).contains("active segment"), "{}", stderr(&out));
    let out = logcompact(&["compact", "--dir", path(&dir)], "");
    ok(&out);
    assert!(stderr(&out).contains("all 1000 records are in the active segment"), "{}", stderr(&out));
    assert_eq!(records(&dir).len(), 1000, "nothing was cleaned");

    ok(&logcompact(&["roll", "--dir", path(&dir)], ""));
    let segments = ok(&logcompact(&["dump", "--dir", path(&dir), "--segments"], ""));
    assert_eq!(segments.lines().count(), 2, "a sealed segment and a new, empty active one: {segments}");
    assert!(segments.lines().last().is_some_and(|l| l.starts_with("segment 1000:") && l.ends_with("(active)")));
    let out = ok(&logcompact(&["compact", "--dir", path(&dir)], ""));
    assert!(out.contains(&format!("compacted {} in 1 pass (", dir.display())), "one pass ran: {out}");
    assert_eq!(records(&dir).len(), 10, "one record a key is left");
    // Everything is clean now: compact says so and why.
    let out = logcompact(&["compact", "--dir", path(&dir)], "");
    ok(&out);
    assert!(stderr(&out).contains("nothing dirty"), "{}", stderr(&out));
    // --purge acts in a pass: with none to run, compact says it did not act.
    let out = logcompact(&["compact", "--dir", path(&dir), "--purge"], "");
    ok(&out);
    assert!(stderr(&out).contains("--purge acts only in a pass, so no tombstone went"), "{}", stderr(&out));
    // Records within min.compaction.lag.ms are not cleaned, and compact says so.
    ok(&logcompact(&["gen", "--dir", path(&dir), "--records", "100", "--keys", "10", "--seed", "2"], ""));
    ok(&logcompact(&["roll", "--dir", path(&dir)], ""));
    let out = logcompact(&["compact", "--dir", path(&dir), "--min-compaction-lag-ms", "3600000"], "");
    ok(&out);
    assert!(stderr(&out).contains("min.compaction.lag.ms"), "{}", stderr(&out));
    assert_eq!(records(&dir).len(), 110);
    // Below the dirty ratio asked for: not cleaned.
    let out = logcompact(&["compact", "--dir", path(&dir), "--min-cleanable-dirty-ratio", "0.99"], "");
    ok(&out);
    assert!(stderr(&out).contains("dirty ratio"), "{}", stderr(&out));
    assert_eq!(records(&dir).len(), 110);
}

#[test]
fn dump_prints_one_escaped_record_a_line_that_no_value_can_forge() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("log");
    {
        let store = std::sync::Arc::new(storage_file::FileStore::open(&dir).expect("store"));
        let log = log_core::Log::open(store, log_core::OpenOptions::new(log_core::LogConfig::default())).expect("open");
        log.put(b"plain", b"value").expect("put");
        // A value that would read as a second record and a tombstone if it were printed raw.
        log.put(b"k\"1", b"x\noffset=9 timestamp=0 key=\"k\" value=TOMBSTONE").expect("put");
        log.put(b"k2", b"TOMBSTONE").expect("put");
        log.delete(b"k2").expect("tombstone");
        log.put(b"bin", &[0xff, 0x00, b'\\', b'\t']).expect("put");
        log.sync().expect("sync");
    }
    let text = ok(&logcompact(&["dump", "--dir", path(&dir)], ""));
    let fields: Vec<String> =
        text.lines().map(|l| l.split_once(" key=").map(|(_, rest)| format!("key={rest}")).expect("key")).collect();
    assert_eq!(
        fields,
        [
            r#"key="plain" value="value""#,
            r#"key="k\"1" value="x\noffset=9 timestamp=0 key=\"k\" value=TOMBSTONE""#,
            r#"key="k2" value="TOMBSTONE""#,
            r#"key="k2" value=TOMBSTONE"#,
            r#"key="bin" value="\xff\x00\\\t""#,
        ]
    );
    let offsets: Vec<&str> = text.lines().map(|l| l.split(' ').next().expect("offset")).collect();
    assert_eq!(offsets, ["offset=0", "offset=1", "offset=2", "offset=3", "offset=4"]);
}

/// A child process killed when a failed test unwinds, so that no watcher outlives its test.
struct KillOnDrop(Option<std::process::Child>);

impl KillOnDrop {
    fn get(&mut self) -> &mut std::process::Child {
        self.0.as_mut().expect("child")
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn watch_cleans_logs_as_they_get_dirty_and_sigint_ends_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    gen_log(&data.join("a"), 2000, 50, 1);
    let mut child = KillOnDrop(Some(
        Command::new(common::bin())
            .args(["clean", "--data-dir", path(&data), "--watch", "--backoff-ms", "50", "--json"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn"),
    ));
    let status_of = |name: &str| -> Option<serde_json::Value> {
        let out = logcompact(&["status", "--data-dir", path(&data), "--json"], "");
        let status: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        status["status_file"]["status"]["logs"].as_array()?.iter().find(|l| l["name"] == name).cloned()
    };
    let wait_for = |what: &str, done: &dyn Fn() -> bool| {
        let start = Instant::now();
        while !done() {
            assert!(start.elapsed() < Duration::from_secs(60), "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_for("the first pass on a", &|| status_of("a").is_some_and(|l| l["passes"] == 1));
    // Between passes the log is closed: a writer appends to it, and a new log appears; both get cleaned.
    gen_log(&data.join("a"), 2000, 50, 2);
    gen_log(&data.join("b"), 2000, 50, 3);
    wait_for("a second pass on a", &|| status_of("a").is_some_and(|l| l["passes"] == 2));
    wait_for("a pass on the new log b", &|| status_of("b").is_some_and(|l| l["passes"] == 1));

    let kill = Command::new("kill").args(["-INT", &child.get().id().to_string()]).status().expect("kill");
    assert!(kill.success());
    let start = Instant::now();
    let code = loop {
        if let Some(code) = child.get().try_wait().expect("wait") {
            break code;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "SIGINT did not end the watch");
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.0.take().expect("child").wait_with_output().expect("output");
    assert_eq!(code.code(), Some(0), "{}", stderr(&out));
    let events: Vec<serde_json::Value> =
        stdout(&out).lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect();
    assert_eq!(events.iter().filter(|e| e["event"] == "cleaned").count(), 3, "{events:?}");
    assert_eq!(events.last().expect("the final status")["event"], "finished");
    for name in ["a", "b"] {
        ok(&logcompact(&["check", "--dir", path(&data.join(name))], ""));
        assert!(records(&data.join(name)).len() < 2000, "{name} was compacted");
    }
    let status: serde_json::Value =
        serde_json::from_str(&ok(&logcompact(&["status", "--data-dir", path(&data), "--json"], ""))).expect("JSON");
    assert_eq!(status["status_file"]["running"], false, "the status file says the run ended");
}

/// The `logs` of a JSON status: each log's name with its passes and whether it has a last clean.
fn passes_of(status: &serde_json::Value) -> BTreeMap<String, (u64, bool)> {
    let logs = status["logs"].as_array().expect("logs");
    logs.iter()
        .map(|l| {
            let name = l["name"].as_str().expect("name").to_owned();
            (name, (l["passes"].as_u64().expect("passes"), !l["last_clean_ms"].is_null()))
        })
        .collect()
}

#[test]
fn a_run_with_nothing_to_do_says_what_status_says_and_a_run_ends_with_its_totals() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    gen_log(&data.join("orders"), 2000, 50, 1);
    let clean = ["clean", "--data-dir", path(&data), "--until-clean", "--min-cleanable-dirty-ratio", "0"];
    // A run that cleans: a line a pass, then the run's totals and its verdict.
    let text = ok(&logcompact(&clean, ""));
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.iter().any(|l| l.starts_with("cleaner 0: orders pass 1: ")), "one line a pass: {text}");
    assert!(lines.iter().any(|l| l.starts_with("clean: 1 pass over 1 log: ")), "the totals: {text}");
    assert_eq!(lines.last(), Some(&"every compacted log is clean"), "{text}");
    // Nothing to do now: the run's final status, and `status` a moment later, count the same passes and
    // both know the last clean.
    let mut json = clean.to_vec();
    json.push("--json");
    let out = ok(&logcompact(&json, ""));
    let finished: serde_json::Value =
        serde_json::from_str(out.lines().last().expect("a finished event")).expect("json");
    let status: serde_json::Value =
        serde_json::from_str(&ok(&logcompact(&["status", "--data-dir", path(&data), "--json"], ""))).expect("json");
    let from_run = passes_of(&finished["status"]);
    assert_eq!(from_run, passes_of(&status["status"]), "{out}");
    assert_eq!(from_run.get("orders"), Some(&(1, true)), "{out}");
    let text = ok(&logcompact(&clean, ""));
    assert!(text.contains("clean: no pass ran"), "{text}");
}
