//! `<data-dir>/cleaner-status.json`: what `logcompact clean` last knew (Kafka's gauges and every log's figures
//! and settings), rewritten as it runs (a `.tmp` file renamed over, so a reader never sees half a file), with
//! the writing process's id and start time, so that `status` tells a live run from one that died.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cleaner::manager::ManagerStatus;
use serde::{Deserialize, Serialize};

/// The file's name in the data directory.
pub const STATUS_FILE: &str = "cleaner-status.json";
/// The version of its layout.
pub const VERSION: u32 = 2;

/// The status file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StatusFile {
    /// [`VERSION`].
    pub version: u32,
    /// The process that writes it.
    pub pid: u32,
    /// That process's start time (clock ticks after boot, `/proc/<pid>/stat`), to tell it from a later process
    /// given the same id.
    #[serde(default)]
    pub pid_start: Option<u64>,
    /// `until-clean` or `watch`.
    pub mode: String,
    /// The data directory's format.
    #[serde(default)]
    pub format: log_core::Format,
    /// When the run began (ms since the epoch).
    pub started_ms: i64,
    /// True while the run goes on; false once it ended.
    pub running: bool,
    /// The manager's status when written.
    pub status: ManagerStatus,
    /// Per log, where each of its settings came from.
    #[serde(default)]
    pub sources: BTreeMap<String, BTreeMap<String, String>>,
    /// Per log, the passes made on it before this run: by earlier `clean` runs and by `compact` (which records
    /// its passes here, [`record_compaction`]). `status` counts these and this run's together.
    #[serde(default)]
    pub passes_before: BTreeMap<String, u64>,
    /// Per log, the last pass `compact` made on it.
    #[serde(default)]
    pub last_compactions: BTreeMap<String, LastPass>,
}

/// When a pass ended and how long it took.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LastPass {
    /// When it ended (ms since the epoch).
    pub ended_ms: i64,
    /// Seconds it took.
    pub secs: f64,
}

impl StatusFile {
    /// True when the file says a run goes on and its process is still the one that wrote it.
    pub fn writer_alive(&self) -> bool {
        self.running && start_time(self.pid).is_some_and(|t| self.pid_start.is_none_or(|s| s == t))
    }
}

/// The start time of process `pid` (clock ticks after boot), if it runs.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: the fields after it follow the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// The path of the status file of `data_dir`.
pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(STATUS_FILE)
}

/// Writes `file` into `data_dir` (a temporary file renamed over the old one).
///
/// # Errors
/// The I/O error, for a warning: the status is a report, and failing to write it stops no cleaning.
pub fn write(data_dir: &Path, file: &StatusFile) -> std::io::Result<()> {
    // A log's last clean outlives the run that did it: a later run that has not cleaned it yet keeps the
    // time (and duration) of the last clean the file recorded.
    let mut file = file.clone();
    // An unreadable file is left as it is (its counts are not ours to drop): the caller warns.
    if let Some(previous) = read(data_dir).map_err(std::io::Error::other)? {
        for log in file.status.logs.iter_mut().filter(|l| l.last_clean_ms.is_none()) {
            if let Some(old) = previous.status.logs.iter().find(|o| o.name == log.name) {
                log.last_clean_ms = old.last_clean_ms;
                log.last_clean_secs = old.last_clean_secs;
            }
        }
        // Passes outlive their run too: a file of this same run carries the count it began with; one of an
        // earlier run (or of `compact`) adds its own passes to it.
        file.passes_before = previous.passes_before.clone();
        file.last_compactions = previous.last_compactions.clone();
        if (previous.pid, previous.pid_start, previous.started_ms) != (file.pid, file.pid_start, file.started_ms) {
            for log in &previous.status.logs {
                *file.passes_before.entry(log.name.clone()).or_default() += log.passes;
            }
        }
    }
    store(data_dir, &file)
}

/// Writes `file` as it is (a temporary file renamed over the old one).
fn store(data_dir: &Path, file: &StatusFile) -> std::io::Result<()> {
    let text = serde_json::to_vec_pretty(&file).map_err(std::io::Error::other)?;
    let tmp = data_dir.join(format!("{STATUS_FILE}.tmp"));
    let written = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path(data_dir)));
    if written.is_err() {
        // A full disk leaves a part-written temporary: it is ours alone, and the old status still stands.
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// What [`record_compaction`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// The passes are in the status file.
    Recorded,
    /// A live `clean` run keeps the file: it is left to that run (which rewrites it as it goes).
    LeftToLiveRun,
    /// The directory is not a data directory this project keeps a status in (no status file yet, and not a
    /// broker's log directory): nothing written there.
    NotADataDirectory,
}

/// How long [`record_compaction`] waits for another process's hold on the data directory (another `compact`
/// recording its passes takes milliseconds) before it gives up with a warning.
const RECORD_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Records `passes` made by `compact` on the log `name` of `data_dir`, the last ending at `ended_ms` after
/// `secs` seconds, so that `status` counts them beside `clean`'s. Written where a status file already is or
/// in a broker's log directory (one holding `meta.properties`), never elsewhere: a log compacted outside any
/// data directory leaves no file beside it.
///
/// The read, the change and the rename happen under an exclusive `flock` on `data_dir` itself (the lock a
/// native `clean` holds for its whole run), so two `compact` runs on logs of one data directory never lose
/// each other's counts; a live `clean` keeps the file ([`Recorded::LeftToLiveRun`]).
///
/// # Errors
/// The I/O error, a data directory held past `RECORD_WAIT` (5 s), or an unreadable status file (left as it is),
/// for a warning: the status is a report.
pub fn record_compaction(
    data_dir: &Path,
    name: &str,
    format: log_core::Format,
    passes: u64,
    ended_ms: i64,
    secs: f64,
) -> std::io::Result<Recorded> {
    // Nothing is locked where nothing would be written.
    if !path(data_dir).exists() && !data_dir.join("meta.properties").is_file() {
        return Ok(Recorded::NotADataDirectory);
    }
    let held = std::fs::File::open(data_dir)?;
    let deadline = std::time::Instant::now() + RECORD_WAIT;
    loop {
        match held.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) => {
                if matches!(read(data_dir), Ok(Some(f)) if f.writer_alive()) {
                    return Ok(Recorded::LeftToLiveRun);
                }
                if std::time::Instant::now() >= deadline {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::WouldBlock,
                        format!("another process has held {} for {} s", data_dir.display(), RECORD_WAIT.as_secs()),
                    ));
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
    }
    let previous = read(data_dir).map_err(std::io::Error::other)?;
    let mut file = match previous {
        Some(f) if f.writer_alive() => return Ok(Recorded::LeftToLiveRun),
        Some(f) => f,
        None if data_dir.join("meta.properties").is_file() => StatusFile {
            version: VERSION,
            pid: std::process::id(),
            pid_start: start_time(std::process::id()),
            mode: "compact".into(),
            format,
            started_ms: ended_ms,
            running: false,
            status: ManagerStatus { at_ms: ended_ms, policy: "-".into(), ..ManagerStatus::default() },
            sources: BTreeMap::new(),
            passes_before: BTreeMap::new(),
            last_compactions: BTreeMap::new(),
        },
        None => return Ok(Recorded::NotADataDirectory),
    };
    *file.passes_before.entry(name.to_owned()).or_default() += passes;
    file.last_compactions.insert(name.to_owned(), LastPass { ended_ms, secs });
    store(data_dir, &file)?;
    Ok(Recorded::Recorded)
}

/// Reads the status file of `data_dir`: `Ok(None)` when there is none.
///
/// # Errors
/// A message when it exists but cannot be read or parsed.
pub fn read(data_dir: &Path) -> Result<Option<StatusFile>, String> {
    let p = path(data_dir);
    if !p.exists() {
        return Ok(None);
    }
    let text = kafka_records::files::read_bounded(&p, 64 << 20).map_err(|e| format!("{}: {e}", p.display()))?;
    serde_json::from_str(&text).map(Some).map_err(|e| format!("{}: {e}", p.display()))
}

/// `ms` since the epoch as `YYYY-MM-DD HH:MM:SSZ`.
pub fn utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days to a civil date (the proleptic Gregorian calendar), after Howard Hinnant's algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}Z", rest / 3600, rest % 3600 / 60, rest % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00Z");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00Z");
        assert_eq!(utc(1_796_083_200_000 + 3_723_000), "2026-12-01 01:02:03Z");
    }

    #[test]
    fn a_live_process_is_told_from_a_dead_one() {
        let me = std::process::id();
        let mine = start_time(me).expect("this process runs");
        let file = |pid, pid_start| StatusFile {
            version: VERSION,
            pid,
            pid_start,
            mode: "watch".into(),
            format: log_core::Format::Native,
            started_ms: 0,
            running: true,
            status: ManagerStatus::default(),
            sources: BTreeMap::new(),
            passes_before: BTreeMap::new(),
            last_compactions: BTreeMap::new(),
        };
        assert!(file(me, Some(mine)).writer_alive());
        assert!(!file(me, Some(mine + 1)).writer_alive(), "another process under a reused id");
        // A child that has ended leaves its id free.
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let pid = child.id();
        child.wait().expect("wait");
        assert!(!file(pid, None).writer_alive());
    }

    #[test]
    fn an_unreadable_status_file_is_left_as_it_is_never_written_over() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(path(dir.path()), b"{ not json").expect("write");
        let file = StatusFile {
            version: VERSION,
            pid: std::process::id(),
            pid_start: None,
            mode: "once".into(),
            format: log_core::Format::Native,
            started_ms: 0,
            running: false,
            status: ManagerStatus::default(),
            sources: BTreeMap::new(),
            passes_before: BTreeMap::new(),
            last_compactions: BTreeMap::new(),
        };
        assert!(write(dir.path(), &file).is_err(), "the caller warns");
        let recorded = record_compaction(dir.path(), "log", log_core::Format::Native, 1, 0, 0.1);
        assert!(recorded.is_err(), "the caller warns");
        assert_eq!(std::fs::read(path(dir.path())).expect("read"), b"{ not json", "its counts are kept");
    }
}
