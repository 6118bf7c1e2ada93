//! A Kafka broker's own files: its lock on the log directory (`.lock`, an fcntl record lock as Java's
//! FileChannel.tryLock takes it) keeps every writing command out while it is held, and a segment a broker
//! truncates under a reader gives the reader an error, never SIGBUS.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::common;
use common::{contents, logcompact, path, stderr};

/// Holds an fcntl write lock on `<dir>/.lock` in another process (Python's `fcntl.lockf`, the call Java's
/// `FileChannel.tryLock` makes on Linux) until its standard input closes.
struct BrokerLock(std::process::Child);

impl BrokerLock {
    fn hold(dir: &Path) -> BrokerLock {
        let script = "import fcntl, sys\nf = open(sys.argv[1], 'a+')\nfcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\nprint('locked', flush=True)\nsys.stdin.read()\n";
        let mut child = Command::new("python3")
            .args(["-c", script, path(&dir.join(".lock"))])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.as_mut().expect("stdout")), &mut line)
            .expect("read");
        assert_eq!(line.trim(), "locked", "the lock is held");
        BrokerLock(child)
    }
}

impl Drop for BrokerLock {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let _ = self.0.wait();
    }
}

#[test]
fn a_held_broker_lock_keeps_every_writing_command_out_and_nothing_changes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let log_dir = tmp.path().join("kafka-logs");
    let part = log_dir.join("orders-0");
    common::kafka_partition(&part, 50, 4, 3, 20);
    let lock = BrokerLock::hold(&log_dir);
    let before = (contents(&part), contents(&log_dir));
    for args in [
        vec!["compact", "--format", "kafka", "--cleanup-policy", "compact", "--dir", path(&part)],
        vec!["compact", "--format", "kafka", "--cleanup-policy", "compact", "--dir", path(&part), "--until-clean"],
        vec!["roll", "--format", "kafka", "--dir", path(&part)],
    ] {
        let out = logcompact(&args, "");
        assert_eq!(out.status.code(), Some(3), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(".lock") && stderr(&out).contains("locked"), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("stop the broker"), "the way out is said: {args:?}: {}", stderr(&out));
        assert_eq!((contents(&part), contents(&log_dir)), before, "{args:?} changed nothing");
    }
    // Reading takes no lock: it works beside the broker.
    for cmd in ["dump", "check", "analyze"] {
        let out = logcompact(&[cmd, "--format", "kafka", "--dir", path(&part)], "");
        assert_eq!(out.status.code(), Some(0), "{cmd}: {}", stderr(&out));
    }
    drop(lock);
    let out = logcompact(
        &["compact", "--format", "kafka", "--cleanup-policy", "compact", "--dir", path(&part), "--until-clean"],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "once the broker is gone: {}", stderr(&out));
    assert!(log_dir.join(".lock").exists(), "the lock file stays, as a crashed broker leaves it");
    let text = std::fs::read_to_string(log_dir.join("cleaner-offset-checkpoint")).expect("checkpoint");
    assert!(text.starts_with("0\n1\norders 0 "), "Kafka's format: {text:?}");
}

#[test]
fn a_partition_linked_out_of_a_held_log_directory_is_refused_naming_both() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (log_dir, other) = (tmp.path().join("kafka-logs"), tmp.path().join("other"));
    std::fs::create_dir_all(&log_dir).expect("mkdir");
    let real = other.join("orders-0");
    common::kafka_partition(&real, 50, 4, 3, 20);
    let link = log_dir.join("orders-0");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    let lock = BrokerLock::hold(&log_dir);
    let before = (contents(&real), contents(&other), contents(&log_dir));
    for args in [
        vec!["compact", "--format", "kafka", "--cleanup-policy", "compact", "--dir", path(&link), "--until-clean"],
        vec!["roll", "--format", "kafka", "--dir", path(&link)],
        vec!["repair", "--format", "kafka", "--dir", path(&link), "--apply"],
    ] {
        let out = logcompact(&args, "");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("outside the log directory") && err.contains("other"), "{args:?}: {err}");
        assert_eq!((contents(&real), contents(&other), contents(&log_dir)), before, "{args:?} changed nothing");
        assert!(!other.join(".lock").exists(), "{args:?}: the other directory's lock was taken");
    }
    drop(lock);
    // A data directory's linked entry is listed, not cleaned.
    let out = logcompact(
        &["clean", "--format", "kafka", "--data-dir", path(&log_dir), "--until-clean", "--cleanup-policy", "compact"],
        "",
    );
    assert!(stderr(&out).contains("ignoring orders-0: a symbolic link"), "{}", stderr(&out));
    assert_eq!((contents(&real), contents(&other)), (before.0, before.1));
}

#[test]
fn a_segment_truncated_under_a_reader_is_an_error_not_a_signal() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let part = tmp.path().join("orders-0");
    common::kafka_partition(&part, 50, 4, 3, 20);
    let opened = logcompact::open_read_only(&part, log_core::Format::Kafka).expect("open");
    let snapshot = opened.log.snapshot();
    // The broker truncates the first segment (recovery, a follower's divergence) while the reader holds it.
    let first = part.join(snapshot.closed()[0].name());
    std::fs::OpenOptions::new().write(true).open(&first).expect("open").set_len(10).expect("truncate");
    let read: Result<Vec<_>, _> = snapshot.reader(0).collect();
    let err = read.expect_err("reading the cut segment fails");
    assert!(matches!(err, log_core::Error::Io { .. }), "{err}");
}

#[test]
fn a_copy_is_never_made_inside_a_brokers_log_directory() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let log_dir = tmp.path().join("kafka-logs");
    let part = log_dir.join("orders-1");
    common::kafka_partition(&part, 50, 4, 3, 20);
    std::fs::write(log_dir.join("meta.properties"), "version=1\nnode.id=1\n").expect("meta.properties");
    let before = contents(&log_dir);
    for name in ["orders-7", "orders-1-copy"] {
        let out = logcompact(&crate::common::compact_kafka(path(&part), &["--out", path(&log_dir.join(name))]), "");
        assert_eq!(out.status.code(), Some(2), "{name}: {}", stderr(&out));
        assert!(stderr(&out).contains("inside the broker's log directory"), "{}", stderr(&out));
        assert_eq!(contents(&log_dir), before, "{name}: nothing written into the broker's directory");
    }
    // Beside it, the copy is made.
    let out =
        logcompact(&crate::common::compact_kafka(path(&part), &["--out", path(&tmp.path().join("orders-1"))]), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// Flips one byte inside the first batch of the partition's first segment: its CRC no longer matches.
fn damage_first_batch(partition: &Path) {
    let mut logs: Vec<_> = std::fs::read_dir(partition)
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    let mut bytes = std::fs::read(&logs[0]).expect("read");
    bytes[100] ^= 0x5a;
    std::fs::write(&logs[0], bytes).expect("write");
}

/// Every file under `dir` with its bytes, and its modification time (a check writes nothing and touches
/// nothing, the times it compares included).
fn tree(dir: &Path) -> Vec<(std::path::PathBuf, u64, std::time::SystemTime)> {
    let mut files = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).expect("list") {
            let p = entry.expect("entry").path();
            let modified = p.metadata().expect("stat").modified().expect("mtime");
            if p.is_dir() {
                files.push((p.clone(), 0, modified));
                todo.push(p);
            } else {
                let mut hasher = std::hash::DefaultHasher::new();
                std::hash::Hash::hash(&std::fs::read(&p).expect("read"), &mut hasher);
                let digest = std::hash::Hasher::finish(&hasher);
                files.push((p.clone(), digest, modified));
            }
        }
    }
    files.sort();
    files
}

/// Sets a file's or directory's modification time `age` into the past.
fn age(p: &Path, age: std::time::Duration) {
    let when = std::time::SystemTime::now() - age;
    std::fs::File::open(p).expect("open").set_modified(when).expect("set mtime");
}

#[test]
fn check_of_a_log_directory_names_every_damaged_partition_beside_a_running_broker() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let log_dir = tmp.path().join("kafka-logs");
    for name in ["orders-0", "orders-1", "payments-0", "payments-1"] {
        common::kafka_partition(&log_dir.join(name), 50, 3, 20, 10);
    }
    std::fs::write(log_dir.join("meta.properties"), "version=1\nnode.id=1\n").expect("meta.properties");
    damage_first_batch(&log_dir.join("orders-1"));
    damage_first_batch(&log_dir.join("payments-1"));
    // A broker holds its lock: check takes none, and reads.
    let _broker = BrokerLock::hold(&log_dir);
    let before = tree(&log_dir);

    let out = logcompact(&["check", "--format", "kafka", "--data-dir", path(&log_dir)], "");
    let text = common::stdout(&out);
    assert_eq!(out.status.code(), Some(1), "damage is exit 1: {text}{}", stderr(&out));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "one line a partition: {text}");
    for (line, (verdict, name)) in lines.iter().zip([
        ("intact", "orders-0"),
        ("DAMAGED", "orders-1"),
        ("intact", "payments-0"),
        ("DAMAGED", "payments-1"),
    ]) {
        let mut words = line.split_whitespace();
        assert_eq!((words.next(), words.next()), (Some(verdict), Some(name)), "{line}");
    }
    assert!(lines[1].contains("00000000000000000000.log"), "the damaged line names the file: {}", lines[1]);
    let err = stderr(&out);
    assert!(err.contains("2 of 4 logs damaged: orders-1, payments-1"), "the verdict names every damaged one: {err}");
    assert!(err.contains("repair --dir"), "and the next step: {err}");

    // As JSON, the same verdicts.
    let out = logcompact(&["check", "--format", "kafka", "--data-dir", path(&log_dir), "--json"], "");
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_str(&common::stdout(&out)).expect("json");
    let verdicts: Vec<_> =
        v["logs"].as_array().expect("logs").iter().map(|l| l["verdict"].as_str().unwrap_or("")).collect();
    assert_eq!(verdicts, ["intact", "damaged", "intact", "damaged"]);
    assert_eq!(tree(&log_dir), before, "a check changes nothing, not even a file's time");

    // Only what changed in the last hour: the damaged partitions made an hour ago are not read.
    for name in ["orders-1", "payments-1"] {
        let dir = log_dir.join(name);
        for entry in std::fs::read_dir(&dir).expect("list") {
            age(&entry.expect("entry").path(), std::time::Duration::from_secs(7200));
        }
        age(&dir, std::time::Duration::from_secs(7200));
    }
    let before = tree(&log_dir);
    let out = logcompact(&["check", "--format", "kafka", "--data-dir", path(&log_dir), "--modified-since", "1h"], "");
    let text = common::stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains("unchanged orders-1"), "{text}");
    assert!(text.lines().last().is_some_and(|l| l == "2 logs intact (2 unchanged, not read)"), "{text}");
    assert_eq!(tree(&log_dir), before, "a check changes nothing");
}

#[test]
fn a_checks_reads_keep_to_the_rate_asked_for() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let log_dir = tmp.path().join("kafka-logs");
    common::kafka_partition(&log_dir.join("orders-0"), 50, 2, 40, 20);
    let bytes: u64 = std::fs::read_dir(log_dir.join("orders-0"))
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .map(|p| p.metadata().expect("stat").len())
        .sum();
    // At a quarter of the partition's bytes a second, its reads take at least three seconds (a lower bound:
    // sleeping never ends early); without the limit, a few milliseconds.
    let rate = (bytes / 4).to_string();
    let started = std::time::Instant::now();
    let out = logcompact(
        &["check", "--format", "kafka", "--data-dir", path(&log_dir), "--io-max-bytes-per-second", &rate],
        "",
    );
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(took >= std::time::Duration::from_secs(3), "{bytes} bytes at {rate} B/s took {took:?}");
    assert!(common::stdout(&out).contains("1 log intact"), "{}", common::stdout(&out));
}

#[test]
fn check_warns_of_a_record_over_the_topics_max_decompressed_message_bytes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let log_dir = tmp.path().join("kafka-logs");
    let spec = common::PartitionSpec::mixed(20, 2, 10, 5, 0);
    common::write_kafka_partition(&log_dir.join("orders-0"), &spec);
    common::kafka_partition(&log_dir.join("plain-0"), 20, 2, 10, 5);
    let conf = tmp.path().join("topics.conf");
    std::fs::write(&conf, "[orders]\ncleanup.policy = compact\nmax.decompressed.message.bytes = 10\n\n[plain]\nmax.decompressed.message.bytes = 10\n")
        .expect("settings");
    let out = logcompact(&["check", "--format", "kafka", "--data-dir", path(&log_dir), "--config", path(&conf)], "");
    let text = common::stdout(&out);
    assert_eq!(out.status.code(), Some(0), "intact data: {text}{}", stderr(&out));
    let orders = text.lines().find(|l| l.contains("orders-0")).expect("orders line");
    assert!(orders.contains("bytes decoded, over the topic's max.decompressed.message.bytes 10 ("), "{orders}");
    // Uncompressed batches are not bounded, as in Kafka.
    let plain = text.lines().find(|l| l.contains("plain-0")).expect("plain line");
    assert!(!plain.contains("warning"), "{plain}");
    // One partition, as a broker's directory holds it.
    let out = logcompact(
        &["check", "--format", "kafka", "--dir", path(&log_dir.join("orders-0")), "--config", path(&conf)],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("warning: 0000"), "{}", stderr(&out));
}

#[test]
fn a_topic_whose_policy_nothing_gives_is_not_compacted_on_a_guess() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let log_dir = tmp.path().join("kafka-logs");
    let part = log_dir.join("orders-0");
    common::kafka_partition(&part, 50, 4, 3, 20);
    let before = contents(&part);
    // No metadata log, no settings: Kafka's default for a topic is delete, and compacting one loses its history.
    let out = logcompact(&["compact", "--format", "kafka", "--dir", path(&part), "--until-clean"], "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("nothing here says whether topic orders is compacted"), "{}", stderr(&out));
    assert!(stderr(&out).contains("--cleanup-policy compact"), "{}", stderr(&out));
    assert_eq!(contents(&part), before, "nothing changed");
    // Asked for a policy that does not compact: refused too.
    let out = logcompact(&["compact", "--format", "kafka", "--cleanup-policy", "delete", "--dir", path(&part)], "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(contents(&part), before, "nothing changed");
    // The topic's settings in a file say compact: compacted, no flag needed.
    let conf = tmp.path().join("topics.conf");
    std::fs::write(&conf, "[orders]\ncleanup.policy = compact\n").expect("settings");
    let out = logcompact(&["compact", "--format", "kafka", "--config", path(&conf), "--dir", path(&part)], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_ne!(contents(&part), before, "compacted");
    // Asked by the flag: compacted, and stderr says on what authority.
    let other = log_dir.join("orders-1");
    common::kafka_partition(&other, 50, 4, 3, 20);
    let out = logcompact(&["compact", "--format", "kafka", "--cleanup-policy", "compact", "--dir", path(&other)], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("as --cleanup-policy says"), "{}", stderr(&out));
}

#[test]
fn a_cleanup_policy_an_earlier_clean_saved_is_an_instruction_not_the_topics_own_setting() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let log_dir = tmp.path().join("kafka-logs");
    common::kafka_partition(&log_dir.join("orders-0"), 50, 4, 3, 20);
    let out = logcompact(
        &["clean", "--format", "kafka", "--data-dir", path(&log_dir), "--until-clean", "--cleanup-policy", "compact"],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // A partition the saved flag covers: compacted as that flag asked, said so, and records without a key would be
    // kept (the topic's own policy is still unknown: only the broker's metadata or a settings file gives it).
    let later = log_dir.join("orders-1");
    common::kafka_partition(&later, 50, 4, 3, 20);
    let out = logcompact(&["compact", "--format", "kafka", "--dir", path(&later), "--until-clean"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("as the saved --cleanup-policy says"), "{}", stderr(&out));
    assert!(stderr(&out).contains("nothing here gives its cleanup.policy"), "{}", stderr(&out));
}
