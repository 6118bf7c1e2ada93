//! A Kafka broker's own files: its lock on the log directory (`.lock`, an fcntl record lock as Java's
//! FileChannel.tryLock takes it) keeps every writing command out while it is held, and a segment a broker
//! truncates under a reader gives the reader an error, never SIGBUS.

use std::path::Path;
use std::process::{Command, Stdio};

mod common;
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
        vec!["compact", "--format", "kafka", "--dir", path(&part)],
        vec!["compact", "--format", "kafka", "--dir", path(&part), "--until-clean"],
        vec!["roll", "--format", "kafka", "--dir", path(&part)],
    ] {
        let out = logcompact(&args, "");
        assert_eq!(out.status.code(), Some(3), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(".lock") && stderr(&out).contains("locked"), "{args:?}: {}", stderr(&out));
        assert_eq!((contents(&part), contents(&log_dir)), before, "{args:?} changed nothing");
    }
    // Reading takes no lock: it works beside the broker.
    for cmd in ["dump", "check", "analyze"] {
        let out = logcompact(&[cmd, "--format", "kafka", "--dir", path(&part)], "");
        assert_eq!(out.status.code(), Some(0), "{cmd}: {}", stderr(&out));
    }
    drop(lock);
    let out = logcompact(&["compact", "--format", "kafka", "--dir", path(&part), "--until-clean"], "");
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
        vec!["compact", "--format", "kafka", "--dir", path(&link), "--until-clean"],
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
        let out =
            logcompact(&["compact", "--format", "kafka", "--dir", path(&part), "--out", path(&log_dir.join(name))], "");
        assert_eq!(out.status.code(), Some(2), "{name}: {}", stderr(&out));
        assert!(stderr(&out).contains("inside the broker's log directory"), "{}", stderr(&out));
        assert_eq!(contents(&log_dir), before, "{name}: nothing written into the broker's directory");
    }
    // Beside it, the copy is made.
    let out = logcompact(
        &["compact", "--format", "kafka", "--dir", path(&part), "--out", path(&tmp.path().join("orders-1"))],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
