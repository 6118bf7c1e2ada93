//! Killing the binary with SIGKILL at moments that follow its progress (its n-th output line plus a jittered
//! share of a line's time), and what every kill sweep checks afterwards, for either segment format.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::{bin, path};

/// A log's records as `(offset, key, value)`, keys and values as text.
pub type Records = Vec<(i64, String, Option<String>)>;

/// A jitter in `[0, 1)` that differs from kill to kill.
pub fn jitter(i: u32) -> f64 {
    (u64::from(i).wrapping_mul(0x9E37_79B9) % 1000) as f64 / 1000.0
}

/// Runs `command`, waits for `lines` lines on its standard output and then `extra`, and kills it; true if it
/// was still running.
pub fn kill_after_lines(mut command: Command, lines: usize, extra: Duration) -> bool {
    use std::io::BufRead;
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("spawn");
    let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    for _ in 0..lines {
        line.clear();
        if out.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
    }
    std::thread::sleep(extra);
    let running = child.try_wait().expect("poll").is_none();
    let _ = child.kill();
    let _ = child.wait();
    running
}

/// Copies the tree at `from` to `to`.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("list") {
        let entry = entry.expect("entry");
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), &to.join(entry.file_name()));
        } else {
            std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
        }
    }
}

/// `check` of the log of `format` in `dir` exits 0: a kill leaves at most what the next open (or a broker's
/// recovery) completes or rolls back.
pub fn check_exits_0(dir: &Path, format: log_core::Format, what: &str) {
    let check =
        Command::new(bin()).args(["check", "--format", format.name(), "--dir", path(dir)]).output().expect("check");
    assert!(check.status.success(), "{what}: check after the kill: {}", String::from_utf8_lossy(&check.stderr));
}

/// The records of the log of `format` in `dir`, read without changing anything.
pub fn records(dir: &Path, format: log_core::Format) -> Records {
    let opened = logcompact::open_read_only(dir, format).expect("readable after the kill");
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    opened
        .log
        .snapshot()
        .reader(0)
        .map(|r| {
            let r = r.expect("readable");
            (r.offset as i64, text(r.key.expect("keyed")), r.value.map(text))
        })
        .collect()
}

/// The latest offset and value of each key.
pub fn latest(records: &Records) -> BTreeMap<String, (i64, Option<String>)> {
    records.iter().map(|(o, k, v)| (k.clone(), (*o, v.clone()))).collect()
}

/// Files of a cleaning swap in progress left in `dir` (both formats name them `<base>.log.cleaned`, `.swap`
/// and `.deleted`).
pub fn leftovers(dir: &Path) -> Vec<String> {
    let names = std::fs::read_dir(dir).expect("list").filter_map(|e| e.ok()?.file_name().into_string().ok());
    names.filter(|n| n.ends_with(".cleaned") || n.ends_with(".swap") || n.ends_with(".deleted")).collect()
}
