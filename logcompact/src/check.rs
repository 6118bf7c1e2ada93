//! `check`: a read-only verification of every checksum and invariant of a log directory of either format
//! ([`log_core::check`]): no lock taken, nothing created, written or mapped that a writer may change, so it works
//! beside a running writer and on a read-only mount.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use log_core::check::{CheckReport, Problem, ProblemClass};
use log_core::progress::Meter;
use log_core::{CheckpointFile, Format, SegmentStore};
use serde::Serialize;

use crate::datadir::settings::Resolved;
use crate::datadir::{BrokerSource, DataDirError};
use crate::throttle::ReadRate;

/// Why a check could not pass.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
    /// The directory cannot be opened as a store (missing, not a directory, unreadable).
    #[error("{}: {source}", dir.display())]
    Store {
        /// The directory.
        dir: PathBuf,
        /// What the backend said.
        #[source]
        source: storage_file::Error,
    },
    /// The first problem found (its class says whether it is damage, no log at all, or unreadable).
    #[error("{}: {problem}", dir.display())]
    Problem {
        /// The directory.
        dir: PathBuf,
        /// The problem.
        problem: Problem,
    },
}

/// Verifies the log in `dir` of `format` without changing anything: every batch's checksum, its records, the
/// order of offsets, the indexes, a pending swap and the checkpoint. A report is returned when every record
/// is intact, with notices for what a crash left for the next writable open to repair.
///
/// # Errors
/// [`CheckError`]: the directory cannot be opened, or the first problem found.
pub fn check(dir: &Path, format: Format) -> Result<CheckReport, CheckError> {
    check_limited(dir, format, None, None)
}

/// [`check`] with every read of the directory's files waiting on `rate` when one is given, and counted on
/// `meter` when one is given. A check that fails while the directory's names change (a running broker's
/// cleaner renaming the files of a swap) is made again, a few times ([`crate::steady_read::check_while_still`]):
/// a swap caught half-renamed is not damage.
///
/// # Errors
/// As [`check`].
pub fn check_limited(
    dir: &Path,
    format: Format,
    rate: Option<&Arc<ReadRate>>,
    meter: Option<&Meter>,
) -> Result<CheckReport, CheckError> {
    crate::steady_read::check_while_still(dir, || check_once(dir, format, rate, meter))
}

/// [`check_limited`], once, whatever the directory does meanwhile.
fn check_once(
    dir: &Path,
    format: Format,
    rate: Option<&Arc<ReadRate>>,
    meter: Option<&Meter>,
) -> Result<CheckReport, CheckError> {
    let store_error = |source| CheckError::Store { dir: dir.to_path_buf(), source };
    let problem = |problem| CheckError::Problem { dir: dir.to_path_buf(), problem };
    let limited = |store: Arc<dyn SegmentStore>| -> Arc<dyn SegmentStore> {
        match rate {
            Some(rate) => Arc::new(crate::throttle::throttled(store, Arc::clone(rate))),
            None => store,
        }
    };
    let (store, checkpoint): (Arc<dyn SegmentStore>, _) = match format {
        Format::Native => {
            (Arc::new(storage_file::FileStore::open_read_only(dir).map_err(store_error)?), CheckpointFile::Own)
        }
        Format::Kafka => {
            let stores = storage_file::kafka::open_read_only(dir).map_err(store_error)?;
            (stores.partition, stores.checkpoint)
        }
    };
    log_core::check::check(limited(store), format, checkpoint, meter).map_err(problem)
}

/// Adds to `report` a warning when its largest record of a compressed batch is over the topic's
/// `max.decompressed.message.bytes` (`resolved`): Kafka's cleaner then fails the partition ("Invalid record size")
/// and marks it uncleanable, and a pass of ours refuses it ([`cleaner::Error::RecordTooLarge`]).
pub fn predict_record_limit(report: &mut CheckReport, resolved: &Resolved) {
    let limit = resolved.settings.max_decompressed_message_bytes;
    let Some(largest) = report.largest_compressed_record.as_ref().filter(|l| l.bytes > limit) else { return };
    let source = resolved.sources.get(MAX_RECORD_SETTING).map_or("default", String::as_str);
    let what = format!(
        "the largest record of a compressed batch, at offset {}, is {} bytes decoded, over the topic's {MAX_RECORD_SETTING} {limit} ({source}): \
         Kafka's cleaner fails this partition and marks it uncleanable, and compact refuses it",
        largest.offset, largest.bytes
    );
    report.warnings.push(log_core::check::Notice { file: largest.file.clone(), what });
}

/// The topic setting bounding a compressed batch's records.
const MAX_RECORD_SETTING: &str = "max.decompressed.message.bytes";

/// [`predict_record_limit`] for the Kafka partition in `dir` with its settings as `clean` would resolve them
/// (the broker's metadata log as `broker` says, the saved settings, the settings file `config`). Returns a note when they cannot be read.
pub fn predict_for_partition(
    dir: &Path,
    report: &mut CheckReport,
    config: Option<&Path>,
    broker: &BrokerSource,
) -> Option<String> {
    report.largest_compressed_record.as_ref()?;
    match crate::datadir::settings_of(dir, Format::Kafka, config, &[], broker) {
        Ok((resolved, _)) => {
            predict_record_limit(report, &resolved);
            None
        }
        Err(e) => Some(format!("the topic's {MAX_RECORD_SETTING} cannot be read ({e}): records not judged by it")),
    }
}

/// What [`check_data_dir`] is asked to do.
#[derive(Debug, Clone, Default)]
pub struct DirCheckOptions {
    /// Only the logs with a file (or the directory itself) modified at or after this time; the others are
    /// listed as unchanged, not read.
    pub modified_since: Option<SystemTime>,
    /// The read rate every log's reads share.
    pub rate: Option<Arc<ReadRate>>,
    /// Where a Kafka broker's settings of its topics are read, to judge records by each topic's
    /// `max.decompressed.message.bytes` ([`predict_record_limit`]).
    pub broker: BrokerSource,
    /// A settings file whose sections override the broker's (as `clean --config`).
    pub config: Option<PathBuf>,
    /// Where the logs done and the bytes and records read are counted (a [`Meter::running_total`]).
    pub meter: Option<Arc<Meter>>,
}

/// One log's line of a data directory's check.
#[derive(Debug, Serialize)]
pub struct LogCheck {
    /// The log's directory name.
    pub name: String,
    /// What was found.
    #[serde(flatten)]
    pub verdict: LogVerdict,
}

/// What the check of one log of a data directory found.
#[derive(Debug, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum LogVerdict {
    /// Every record intact (the report's notices say what a crash left for the next open to repair).
    Intact {
        /// The log's report.
        report: CheckReport,
    },
    /// Damaged: the first problem, naming its file and byte.
    Damaged {
        /// The problem.
        problem: Problem,
    },
    /// Not read: nothing in it changed since [`DirCheckOptions::modified_since`].
    Unchanged,
    /// It could not be checked (unreadable, or no log of this format), with why.
    Unchecked {
        /// Why.
        reason: String,
    },
}

/// A data directory's check: a line a log, and the directories passed over.
#[derive(Debug, Default, Serialize)]
pub struct DirCheck {
    /// The logs, by name, the KRaft metadata log among them (it is read, never written).
    pub logs: Vec<LogCheck>,
    /// Directories that hold no log of this format, with why.
    pub ignored: Vec<(String, String)>,
    /// Where the topics' settings came from, or why they could not be read (Kafka).
    pub settings_note: Option<String>,
}

impl DirCheck {
    /// The names of the damaged logs.
    #[must_use]
    pub fn damaged(&self) -> Vec<&str> {
        self.logs.iter().filter(|l| matches!(l.verdict, LogVerdict::Damaged { .. })).map(|l| l.name.as_str()).collect()
    }

    /// The names of the logs that could not be checked.
    #[must_use]
    pub fn unchecked(&self) -> Vec<&str> {
        self.logs
            .iter()
            .filter(|l| matches!(l.verdict, LogVerdict::Unchecked { .. }))
            .map(|l| l.name.as_str())
            .collect()
    }
}

/// Checks every log of the data directory `data_dir` ([`crate::datadir::discover`], plus a KRaft metadata log,
/// which reading commands still read) as [`check`] checks one, without a lock or a write, calling `each` with
/// each log's line as it is found (so a long check shows its progress).
///
/// # Errors
/// [`DataDirError::Unreadable`] when `data_dir` cannot be listed, [`DataDirError::NoLogs`] when it holds nothing
/// of a log (no log of `format`, no folder passed over, and no broker's `meta.properties`); a log's own failures
/// are its line.
pub fn check_data_dir(
    data_dir: &Path,
    format: Format,
    options: &DirCheckOptions,
    each: &mut dyn FnMut(&LogCheck),
) -> Result<DirCheck, DataDirError> {
    let found = crate::datadir::discover(data_dir, format)?;
    let mut dirs: Vec<(String, PathBuf)> = found.logs.into_iter().map(|f| (f.name, f.dir)).collect();
    let mut ignored = Vec::new();
    for (name, why) in found.ignored {
        let dir = data_dir.join(&name);
        if format == Format::Kafka && storage_file::metadata_log_sign(&dir).is_some() {
            dirs.push((name, dir));
        } else {
            ignored.push((name, why));
        }
    }
    dirs.sort();
    // A broker's log directory with no partition yet (a new broker, a disk unused so far) is intact, and one
    // whose folders were all passed over says why; only a directory with nothing of a log at all is refused.
    let broker = data_dir.join(storage_file::kafka::META_PROPERTIES).is_file();
    if dirs.is_empty() && ignored.is_empty() && !broker {
        return Err(DataDirError::NoLogs { dir: data_dir.to_path_buf(), what: "check", left_alone: 0, format });
    }
    let (layers, settings_note) = match format {
        Format::Native => (None, None),
        Format::Kafka => {
            match crate::datadir::layers(data_dir, format, options.config.as_deref(), &[], &options.broker) {
                Ok(layers) => {
                    let note = layers.broker_notice.clone();
                    (Some(layers), note)
                }
                Err(e) => {
                    (None, Some(format!("the topics' settings cannot be read ({e}): records not judged by them")))
                }
            }
        }
    };
    let mut checked = DirCheck { logs: Vec::with_capacity(dirs.len()), ignored, settings_note };
    if let Some(m) = &options.meter {
        m.set_items("logs", Some(dirs.len() as u64));
        // The bytes of the logs to be read (those a time leaves out are not): the time left goes by them.
        let to_read = |dir: &Path| options.modified_since.is_none_or(|since| changed_since(dir, since).unwrap_or(true));
        let total = dirs.iter().filter(|(_, d)| to_read(d)).map(|(_, d)| crate::dir::segment_bytes(d)).sum();
        m.set_bytes_total(Some(total));
    }
    for (name, dir) in dirs {
        let metadata = format == Format::Kafka && storage_file::metadata_log_sign(&dir).is_some();
        let mut verdict = if metadata { check_metadata_log(&dir, options) } else { check_one(&dir, format, options) };
        if let (LogVerdict::Intact { report }, Some(layers)) = (&mut verdict, &layers) {
            let topic = log_core::kafka::topic_partition(&name).map_or(name.as_str(), |(t, _)| t);
            if let Ok(resolved) = layers.resolve_all(topic) {
                predict_record_limit(report, &resolved);
            }
        }
        let line = LogCheck { name, verdict };
        if let Some(m) = &options.meter {
            m.item_done();
        }
        each(&line);
        checked.logs.push(line);
    }
    Ok(checked)
}

/// Damage to the metadata log in `dir`: `what` went wrong, and what it makes of every topic's settings.
fn metadata_damage(dir: &Path, what: String) -> LogVerdict {
    LogVerdict::Damaged {
        problem: log_core::check::Problem {
            class: ProblemClass::Corruption,
            file: dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            position: None,
            what: format!("{what}: clean and analyze take every topic as delete"),
        },
    }
}

/// The KRaft metadata log's verdict, as `clean` and `analyze` read it: its segments checked as a partition's
/// (when it has any: one holding only snapshots, or nothing yet, is a metadata log all the same), then replayed
/// from its latest snapshot as a broker's start replays it; a snapshot or record that does not read is damage,
/// for `clean` and `analyze` then take every topic as `delete`.
fn check_metadata_log(dir: &Path, options: &DirCheckOptions) -> LogVerdict {
    let mut verdict = check_one(dir, Format::Kafka, options);
    if let LogVerdict::Unchecked { .. } = verdict
        && !has_segments(dir)
    {
        verdict = LogVerdict::Intact { report: log_core::check::CheckReport::default() };
    }
    if let LogVerdict::Intact { report } = &mut verdict {
        let mut image = kafka_records::kraft::image::MetadataImage::default();
        let mut bad = None;
        match kafka_records::kraft::metadata_log::replay(dir, &mut |r| {
            if bad.is_none()
                && let Err(e) = image.apply(r.offset, &r.value)
            {
                bad = Some(e);
            }
        }) {
            Err(e) => return metadata_damage(dir, format!("the metadata log cannot be read ({e})")),
            Ok(sources) if sources.snapshot.is_none() && sources.segments.is_empty() => {
                report.notices.push(log_core::check::Notice {
                    file: String::new(),
                    what: "the metadata log holds no snapshot and no segment yet".into(),
                });
            }
            Ok(_) => {}
        }
        if let Some(e) = bad {
            return metadata_damage(dir, format!("a metadata record does not decode ({e})"));
        }
    }
    verdict
}

/// True when `dir` holds a `.log` segment.
fn has_segments(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .map(|r| r.flatten().any(|e| e.file_name().to_string_lossy().ends_with(".log")))
        .unwrap_or(false)
}

/// One log's verdict.
fn check_one(dir: &Path, format: Format, options: &DirCheckOptions) -> LogVerdict {
    if let Some(since) = options.modified_since {
        match changed_since(dir, since) {
            Ok(false) => return LogVerdict::Unchanged,
            Ok(true) => {}
            Err(e) => return LogVerdict::Unchecked { reason: format!("cannot be listed: {e}") },
        }
    }
    match check_limited(dir, format, options.rate.as_ref(), options.meter.as_deref()) {
        Ok(report) => LogVerdict::Intact { report },
        Err(CheckError::Problem { problem, .. })
            if matches!(problem.class, ProblemClass::Corruption | ProblemClass::UnusableName) =>
        {
            LogVerdict::Damaged { problem }
        }
        Err(CheckError::Problem { problem, .. }) => LogVerdict::Unchecked { reason: problem.to_string() },
        Err(CheckError::Store { source, .. }) => LogVerdict::Unchecked { reason: source.to_string() },
    }
}

/// Whether the directory `dir` or a file in it was modified at or after `since` (a file created, renamed or
/// removed changes the directory's own time).
fn changed_since(dir: &Path, since: SystemTime) -> std::io::Result<bool> {
    if std::fs::metadata(dir)?.modified()? >= since {
        return Ok(true);
    }
    for entry in std::fs::read_dir(dir)? {
        let meta = entry?.metadata()?;
        if meta.modified()? >= since {
            return Ok(true);
        }
    }
    Ok(false)
}
