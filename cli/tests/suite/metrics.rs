//! `clean --watch --metrics-addr`: the cleaner's Prometheus endpoint, scraped while it runs and parsed by the
//! official Python client's text-format parser (`prometheus_client.parser`), as a Prometheus server would
//! read it: Kafka's gauges under the JMX exporter's names, per-log series, a damaged log counted uncleanable.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::{logcompact, path, stderr};

/// A child process killed when a failed test unwinds, so that no watcher outlives its test.
struct KillOnDrop(Option<std::process::Child>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn gen_log(dir: &Path, seed: &str) {
    let out = logcompact(
        &[
            "gen",
            "--dir",
            path(dir),
            "--records",
            "3000",
            "--keys",
            "60",
            "--value-bytes",
            "40",
            "--segment-bytes",
            "16KiB",
            "--seed",
            seed,
        ],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
}

/// The body of `GET path` from `addr`, over a plain socket (the Python parser reads it separately).
fn http_get(addr: &str, path: &str) -> (String, String) {
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").expect("request");
    let mut all = String::new();
    s.read_to_string(&mut all).expect("response");
    let (head, body) = all.split_once("\r\n\r\n").expect("a header and a body");
    (head.to_owned(), body.to_owned())
}

/// The value of the series `name` whose labels include `label=value` (or its first series), from the text format.
fn value(body: &str, name: &str, label: Option<(&str, &str)>) -> Option<f64> {
    body.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        let (series, v) = l.rsplit_once(' ')?;
        let matches = match label {
            None => series == name || series.starts_with(&format!("{name}{{")),
            Some((k, val)) => series.starts_with(&format!("{name}{{")) && series.contains(&format!("{k}=\"{val}\"")),
        };
        matches.then(|| v.parse().ok()).flatten()
    })
}

#[test]
fn a_watching_cleaner_serves_kafkas_gauges_and_per_log_series_that_prometheus_parses() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    gen_log(&data.join("good"), "1");
    gen_log(&data.join("damaged"), "2");
    // A record in the middle of a sealed segment of `damaged`: every pass on it fails.
    let file = data.join("damaged").join("00000000000000000000.log");
    let mut bytes = std::fs::read(&file).expect("read");
    bytes[5000] ^= 0x10;
    std::fs::write(&file, &bytes).expect("write");

    let mut child = KillOnDrop(Some(
        Command::new(common::bin())
            .args([
                "clean",
                "--data-dir",
                path(&data),
                "--watch",
                "--backoff-ms",
                "50",
                "--max-retries",
                "0",
                "--metrics-addr",
                "127.0.0.1:0",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn"),
    ));
    let mut lines = BufReader::new(child.0.as_mut().expect("child").stderr.take().expect("stderr")).lines();
    let addr = loop {
        let line = lines.next().expect("a line naming the address").expect("stderr");
        if let Some(rest) = line.strip_prefix("serving Prometheus metrics at http://") {
            break rest.trim_end_matches("/metrics").to_owned();
        }
    };
    // Drain standard error so that the cleaner never blocks on it.
    std::thread::spawn(move || for _ in lines {});

    let start = Instant::now();
    let body = loop {
        let (head, body) = http_get(&addr, "/metrics");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        let passes = value(&body, "logcompact_log_passes", Some(("log", "good")));
        let uncleanable = value(&body, "kafka_log_logcleanermanager_uncleanable_partitions_count", None);
        if passes.is_some_and(|p| p >= 1.0) && uncleanable.is_some_and(|u| u >= 1.0) {
            break body;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no pass showed in the metrics:\n{body}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(value(&body, "logcompact_log_uncleanable", Some(("log", "damaged"))), Some(1.0), "{body}");
    assert_eq!(value(&body, "logcompact_log_uncleanable", Some(("log", "good"))), Some(0.0), "{body}");
    assert!(value(&body, "kafka_log_logcleaner_max_clean_time_secs", None).is_some_and(|s| s > 0.0), "{body}");
    assert!(
        value(&body, "logcompact_log_last_clean_timestamp_seconds", Some(("log", "good"))).is_some_and(|t| t > 1.6e9),
        "{body}"
    );
    let (head, _) = http_get(&addr, "/nothing");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");

    // The same endpoint through Prometheus's own Python parser.
    if let Some(py) = common::kafka_python() {
        let url = format!("http://{addr}/metrics");
        let parsed =
            common::run_python(&py, &[common::kafka_script("scrape_metrics.py").to_str().expect("utf-8"), &url]);
        assert!(parsed["content_type"].as_str().is_some_and(|c| c.starts_with("text/plain; version=0.0.4")));
        let families = parsed["families"].as_object().expect("families");
        for name in [
            "kafka_log_logcleaner_max_buffer_utilization_percent",
            "kafka_log_logcleaner_cleaner_recopy_percent",
            "kafka_log_logcleaner_max_clean_time_secs",
            "kafka_log_logcleaner_max_compaction_delay_secs",
            "kafka_log_logcleaner_deadthreadcount",
            "kafka_log_logcleanermanager_uncleanable_partitions_count",
            "kafka_log_logcleanermanager_uncleanable_bytes",
            "kafka_log_logcleanermanager_time_since_last_run_ms",
            "kafka_log_logcleanermanager_max_dirty_percent",
            "logcompact_log_dirty_bytes",
            "logcompact_log_clean_bytes",
            "logcompact_log_dirty_ratio",
            "logcompact_log_passes",
            "logcompact_log_last_clean_timestamp_seconds",
            "logcompact_log_uncleanable",
        ] {
            let family = families.get(name).unwrap_or_else(|| panic!("{name} missing from {families:?}"));
            assert_eq!(family["type"], "gauge", "{name}");
            assert!(family["help"].as_str().is_some_and(|h| !h.is_empty()), "{name} has help text");
        }
        let uncleanable = &families["kafka_log_logcleanermanager_uncleanable_partitions_count"]["samples"][0];
        assert_eq!(uncleanable["labels"]["logDirectory"], path(&data));
        assert!(uncleanable["value"].as_f64().is_some_and(|v| v >= 1.0));
        let logs: Vec<&str> = families["logcompact_log_passes"]["samples"]
            .as_array()
            .expect("samples")
            .iter()
            .map(|s| s["labels"]["log"].as_str().expect("log label"))
            .collect();
        assert!(logs.contains(&"good") && logs.contains(&"damaged"), "{logs:?}");
    }
    let mut child = child.0.take().expect("child");
    let kill = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill");
    assert!(kill.success());
    assert!(child.wait().expect("wait").code().is_some(), "SIGTERM ends the watch");
}

#[test]
fn an_address_that_cannot_be_listened_on_is_refused_before_anything_is_cleaned() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    gen_log(&data.join("a"), "1");
    let before = common::contents(&data.join("a"));
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    let out = logcompact(&["clean", "--data-dir", path(&data), "--until-clean", "--metrics-addr", &addr], "");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("cannot serve metrics on {addr}")), "{}", stderr(&out));
    assert_eq!(common::contents(&data.join("a")), before, "nothing was cleaned");
}
