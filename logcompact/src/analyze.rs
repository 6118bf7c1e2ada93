//! `analyze` of one log directory of either format, read without changing anything: what
//! [`cleaner::analyze::analyze`] finds (counts, codecs, the dirty ratio, a dry run of a full compaction, the
//! buffer each map needs, open transactions), enriched with what only the directory knows: a hanging
//! transaction's coordinator epoch from the broker's producer snapshot (so that its abort command is complete),
//! the partition's topic in that command, and for `__consumer_offsets` each consumer group's live and
//! tombstoned keys. `analyze --data-dir` enriches every partition the same way ([`crate::datadir::analyze`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cleaner::advise::Budget;
use cleaner::analyze::Analysis;
use cleaner::{PassOptions, SystemClock};
use log_core::Format;
use log_core::progress::Meter;
use serde::Serialize;

use crate::dir::{CheckpointPastEnd, OpenError, OpenedLog, open_read_only, start_dirty_at};
use kafka_records::consumer_offsets::GroupSummary;

/// What to analyze.
#[derive(Debug, Clone)]
pub struct AnalyzeRequest {
    /// The log's directory (a Kafka partition's is `<topic>-<partition>`).
    pub dir: PathBuf,
    /// Its format.
    pub format: Format,
    /// The first dirty offset instead of the stored checkpoint.
    pub checkpoint: Option<u64>,
    /// The dedupe buffer the advice sizes passes for.
    pub budget: Budget,
    /// The topic's settings a pass would take (the dry run's delete horizon and compaction lag).
    pub options: PassOptions,
    /// Where the reads are counted, each a stage ([`cleaner::analyze::analyze`]), for a progress reporter.
    pub meter: Option<Arc<Meter>>,
}

/// A log's analysis.
#[derive(Debug, Clone, Serialize)]
pub struct LogAnalysis {
    /// What the cleaner's analysis found, the transactions enriched from the directory.
    #[serde(flatten)]
    pub analysis: Analysis,
    /// `__consumer_offsets` only: each consumer group's keys as a full compaction leaves them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumer_groups: Option<GroupSummary>,
}

/// Why a log could not be analysed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnalyzeError {
    /// The directory could not be opened.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// `checkpoint` lies past the end of the log.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointPastEnd),
    /// Reading the log failed (damage names the file and position), or the budget is wrong.
    #[error("{}: {source}", dir.display())]
    Cleaner {
        /// The directory.
        dir: PathBuf,
        /// The cleaner's error.
        #[source]
        source: cleaner::Error,
    },
    /// Reading `__consumer_offsets`' groups failed.
    #[error("{}: {source}", dir.display())]
    Log {
        /// The directory.
        dir: PathBuf,
        /// The log's error.
        #[source]
        source: log_core::Error,
    },
}

/// Analyses the log `req` names, opened read-only (no lock, nothing written).
///
/// # Errors
/// [`AnalyzeError`].
pub fn analyze(req: &AnalyzeRequest) -> Result<LogAnalysis, AnalyzeError> {
    let opened = open_read_only(&req.dir, req.format)?;
    let source = match req.checkpoint {
        Some(c) => {
            start_dirty_at(&opened.log, c)?;
            "the checkpoint given".to_owned()
        }
        None => match (opened.log.checkpoint_file().read(&**opened.log.store()), opened.log.checkpoint_file()) {
            (Ok(Some(_)), _) => opened.checkpoint_source.clone(),
            (_, log_core::CheckpointFile::Memory) => {
                format!("the log's start (the cleaner checkpoint is {})", opened.checkpoint_source)
            }
            _ => format!("the log's start (no cleaner checkpoint in {})", opened.checkpoint_source),
        },
    };
    analyze_opened(&opened, req.format, source, req.budget, req.options, req.meter.as_ref())
}

/// Analyses an opened log, `checkpoint_source` saying where its first dirty offset came from, and enriches it
/// from its directory; its reads counted on `meter` when given.
///
/// # Errors
/// [`AnalyzeError::Cleaner`] and [`AnalyzeError::Log`] for damage or a bad budget.
pub fn analyze_opened(
    opened: &OpenedLog,
    format: Format,
    checkpoint_source: String,
    budget: Budget,
    options: PassOptions,
    meter: Option<&Arc<Meter>>,
) -> Result<LogAnalysis, AnalyzeError> {
    let dir = &opened.dir;
    let mut a =
        cleaner::analyze::analyze(&opened.log, checkpoint_source, budget, options, Arc::new(SystemClock), meter)
            .map_err(|source| AnalyzeError::Cleaner { dir: dir.clone(), source })?;
    let offsets_topic = enrich_transactions(&mut a, dir, format);
    // Kafka's group coordinator's partition: each group's live keys and tombstones.
    let consumer_groups = if offsets_topic {
        Some(
            kafka_records::consumer_offsets::group_summary(&opened.log)
                .map_err(|source| AnalyzeError::Log { dir: dir.clone(), source })?,
        )
    } else {
        None
    };
    Ok(LogAnalysis { analysis: a, consumer_groups })
}

/// Names the partition in every open transaction's abort command and fills in, from the broker's newest
/// producer snapshot, the coordinator epoch of a transaction whose producer wrote no marker here. Returns
/// whether the directory is a partition of `__consumer_offsets`.
fn enrich_transactions(a: &mut Analysis, dir: &Path, format: Format) -> bool {
    let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let Some((topic, partition)) = log_core::kafka::topic_partition(name) else { return false };
    if a.transactions.open_transactions.iter().any(|t| t.coordinator_epoch.is_none())
        && let Some(producers) = kafka_records::producer_snapshot::newest(dir)
    {
        a.transactions.take_coordinator_epochs(
            &producers.iter().map(|p| (p.producer_id, p.producer_epoch, p.coordinator_epoch)).collect::<Vec<_>>(),
        );
    }
    a.transactions.name_partition(topic, partition);
    format == Format::Kafka && topic == "__consumer_offsets"
}
