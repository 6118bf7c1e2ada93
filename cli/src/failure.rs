//! How a command fails, and the exit code for each way. The same codes for every command:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success (a log with only recoverable leftovers of a crash checks out as 0) |
//! | 1 | corruption or loss: stored data is damaged or cannot be reached |
//! | 2 | usage: bad options, a bad script line, a directory that holds no log of this format |
//! | 3 | the command could not be carried out: an I/O error, a directory in use by a writer, too little memory |

use std::fmt;
use std::process::ExitCode;

/// The exit codes, as `--help` and the README give them.
pub const EXIT_CODES: &str = "\
Exit codes (the same for every command):
  0  success (a log whose only findings are leftovers of a crash that the next open repairs is intact)
  1  corruption or loss: stored data is damaged or cannot be reached
  2  usage: bad options, a bad script line, or a directory that holds no log of this format
  3  the command could not be carried out: an I/O error, the directory is in use by a writer, too little memory";

/// The exit codes in one line, for `-h`.
pub const EXIT_CODES_SHORT: &str =
    "--help shows every flag (Kafka's topic settings among them) and what the exit codes mean.";

/// What to do about a checkpoint file of a broker's log directory that does not parse: it is the broker's,
/// shared by the log directory's partitions, and no repair rewrites it.
pub const BROKER_CHECKPOINT_HINT: &str = "(nothing was changed; this checkpoint file belongs to the broker and no \
     repair rewrites it: with the broker stopped, fix the line by hand or remove the file, and cleaning restarts \
     from each partition's log start)";

/// What to do when a broker (or another run) holds a Kafka log directory's lock.
pub const BROKER_LOCK_HINT: &str = "(nothing was changed: stop the broker, or let the other logcompact run end, then \
     rerun; commands that only read, such as check, analyze and status, run beside a broker)";

/// What to do when another writer holds a log's directory.
pub const LOCK_HINT: &str = "(nothing was changed: let the other logcompact process that writes here end, then rerun)";

/// What to do about a name the log cannot use (a directory or a symbolic link under a segment's or a swap's
/// name): no repair can read or remove it.
pub const UNUSABLE_NAME_HINT: &str = "(nothing was changed; no repair can use or remove it: move it out of the \
     directory by hand, and if it is a segment or a swap of this log, put back a regular file in its place)";

/// What to do with a Kafka partition given to a command of the native format.
pub const KAFKA_HINT: &str =
    "dump, check, analyze, advise, compact, roll, repair, clean and status take Kafka partitions with --format kafka";

/// Whether a native open was refused because the directory holds a Kafka partition of magic 2 (one this tool
/// reads with `--format kafka`).
fn wants_format_kafka(e: &logcompact::OpenError) -> bool {
    matches!(e, logcompact::OpenError::NotALog { format: log_core::Format::Native, other_format: true, .. })
}

/// A failed command.
#[derive(Debug)]
pub enum Failure {
    /// Bad options or configuration: exit code 2.
    Usage(String),
    /// A bad script line: exit code 2.
    Script {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// Stored data is damaged or lost: exit code 1.
    Corruption(String),
    /// I/O, a lock held by another writer, memory: exit code 3.
    Runtime(String),
    /// `dump --style kafka-dump-log` where Kafka's tool dies with an exception: this line (Kafka's
    /// `Exception in thread "main" CLASS: MESSAGE`) on standard error as it is, exit code 1 as Kafka's.
    AsKafka(String),
}

impl Failure {
    /// The process exit code.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Failure::Corruption(_) | Failure::AsKafka(_) => ExitCode::from(1),
            Failure::Usage(_) | Failure::Script { .. } => ExitCode::from(2),
            Failure::Runtime(_) => ExitCode::from(3),
        }
    }

    /// The failure for an error of the log, with `context` in front of its message.
    pub fn from_log(context: &str, e: &log_core::Error) -> Failure {
        let message = if context.is_empty() { e.to_string() } else { format!("{context}: {e}") };
        match e {
            // Intact data of a format this tool does not read (a Kafka message set older than magic 2): usage.
            log_core::Error::Corrupt { kind, .. }
                if kind.is_other_format() && !matches!(kind, log_core::CorruptKind::UnknownVersion(_)) =>
            {
                Failure::Usage(message)
            }
            log_core::Error::BadCheckpointLine { .. } => {
                Failure::Corruption(format!("{message}\n{BROKER_CHECKPOINT_HINT}"))
            }
            _ if e.is_corruption() => Failure::Corruption(format!(
                "{message}\n(nothing was changed; `logcompact check` describes the damage and `logcompact repair` \
                 can drop it, keeping a copy)"
            )),
            log_core::Error::UnusableName { .. } => Failure::Corruption(format!("{message}\n{UNUSABLE_NAME_HINT}")),
            // Only a native open meets a Kafka partition this way (a Kafka open names its own hint).
            log_core::Error::NotALog { other_format: true, .. } => Failure::Usage(format!("{message} ({KAFKA_HINT})")),
            log_core::Error::NotALog { .. } | log_core::Error::InvalidConfig(_) => Failure::Usage(message),
            _ => Failure::Runtime(message),
        }
    }

    /// The failure for a directory the file backend could not open as a store, its message `message`: a
    /// missing directory, a file, or one that is never written (the KRaft metadata log) is usage; the rest
    /// (I/O, a lock held) is runtime.
    pub fn from_store(e: &storage_file::Error, message: String) -> Failure {
        match e {
            storage_file::Error::NotFound(_)
            | storage_file::Error::NotADirectory(_)
            | storage_file::Error::MetadataLog { .. }
            | storage_file::Error::OutsideLogDir { .. } => Failure::Usage(message),
            storage_file::Error::BrokerLocked { .. } => Failure::Runtime(format!("{message}\n{BROKER_LOCK_HINT}")),
            storage_file::Error::Locked { .. } => Failure::Runtime(format!("{message}\n{LOCK_HINT}")),
            _ => Failure::Runtime(message),
        }
    }

    /// The failure for a directory that could not be opened as a log.
    pub fn from_open(e: &logcompact::OpenError) -> Failure {
        use logcompact::OpenError;
        match e {
            OpenError::Store { source, .. } => Failure::from_store(source, e.to_string()),
            OpenError::NotALog { .. } if wants_format_kafka(e) => Failure::Usage(format!("{e} ({KAFKA_HINT})")),
            OpenError::NotALog { .. } => Failure::Usage(e.to_string()),
            OpenError::Log { dir, source } => Failure::from_log(&dir.display().to_string(), source),
            _ => Failure::Runtime(e.to_string()),
        }
    }

    /// The failure for a first dirty offset given past the end of the log, said as the flag that gave it.
    pub fn from_checkpoint(c: &logcompact::dir::CheckpointPastEnd) -> Failure {
        Failure::Usage(format!("--checkpoint {} is past the end of the log (its next offset is {})", c.given, c.end))
    }

    /// The failure for a compaction that could not be done, said in the command line's flags.
    pub fn from_compact(e: &logcompact::CompactError) -> Failure {
        use logcompact::CompactError;
        use logcompact::CopyError;
        match e {
            CompactError::Setting { name, value, why } => {
                Failure::Usage(format!("--{} {value} is {why}", name.replace('.', "-")))
            }
            CompactError::Config(_) | CompactError::Settings(_) => Failure::Usage(e.to_string()),
            CompactError::Checkpoint(c) => Failure::from_checkpoint(c),
            CompactError::NotCompacted { dir, why, .. } => {
                Failure::Usage(format!("{}: {why}; give --cleanup-policy compact to compact it anyway", dir.display()))
            }
            CompactError::PolicyUnknown { .. } => Failure::Usage(format!(
                "{e}: give --cleanup-policy compact if the broker compacts it (records without a key are then kept \
                 unless --drop-invalid), or let its settings be read (--metadata-dir, --config)"
            )),
            CompactError::Open(o) => Failure::from_open(o),
            CompactError::Copy(CopyError::BadTarget { target, why }) => {
                Failure::Usage(format!("--out {}: {why}", target.display()))
            }
            CompactError::Copy(CopyError::Open(o)) => Failure::from_open(o),
            CompactError::Copy(CopyError::Log(l)) => Failure::from_log("copying", l),
            CompactError::Pass { dir, source } => Failure::from_cleaner(&dir.display().to_string(), source),
            CompactError::Clock { .. } => Failure::Usage(format!("{e} (give --i-know-the-clock if it is right)")),
            _ => Failure::Runtime(e.to_string()),
        }
    }

    /// The failure for an error of a cleaning pass.
    pub fn from_cleaner(context: &str, e: &cleaner::Error) -> Failure {
        match e {
            cleaner::Error::Log(e) => Failure::from_log(context, e),
            cleaner::Error::UnkeyedRecords { .. } => Failure::Usage(format!(
                "{context}: {e}: give --drop-invalid to drop them, or leave the partition alone if its topic's \
                 cleanup.policy is delete"
            )),
            cleaner::Error::RecordTooLarge { .. } | cleaner::Error::SectionTooLong { .. } => {
                Failure::Usage(format!("{context}: {e}"))
            }
            cleaner::Error::BufferTooSmall { .. }
            | cleaner::Error::InvalidConfig { .. }
            | cleaner::Error::UnknownSetting { .. } => Failure::Usage(format!("{context}: {e}")),
            _ => Failure::Runtime(format!("{context}: {e}")),
        }
    }

    /// The failure for the data-directory service.
    pub fn from_data_dir(e: &logcompact::datadir::DataDirError) -> Failure {
        use logcompact::datadir::DataDirError;
        match e {
            DataDirError::NoLogs { dir, left_alone: 0, format: logcompact::Format::Native, .. }
                if logcompact::dir::holds_kafka_partitions(dir) =>
            {
                Failure::Usage(format!("{e}: it looks like a Kafka log directory ({KAFKA_HINT})"))
            }
            DataDirError::NoLogs { .. } | DataDirError::UnknownPolicy { .. } | DataDirError::Settings(_) => {
                Failure::Usage(e.to_string())
            }
            DataDirError::Unreadable { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                Failure::Usage(e.to_string())
            }
            DataDirError::Cleaner(c) => Failure::from_cleaner("bad cleaner settings", c),
            DataDirError::Clock { .. } => Failure::Usage(format!("{e} (give --i-know-the-clock if it is right)")),
            DataDirError::Busy { broker_lock: true, .. } => Failure::Runtime(format!("{e}\n{BROKER_LOCK_HINT}")),
            DataDirError::Busy { .. } => Failure::Runtime(format!("{e}\n{LOCK_HINT}")),
            DataDirError::Metadata(_)
            | DataDirError::Stray { .. }
            | DataDirError::Broker(logcompact::kafka::kraft::BrokerSettingsError::Properties { .. }) => {
                Failure::Usage(e.to_string())
            }
            _ => Failure::Runtime(e.to_string()),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Usage(m) | Failure::Corruption(m) | Failure::Runtime(m) => write!(f, "error: {m}"),
            Failure::Script { line, message } => write!(f, "error: line {line}: {message}"),
            Failure::AsKafka(line) => f.write_str(line),
        }
    }
}
