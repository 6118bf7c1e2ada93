//! Repairing a damaged log on disk, native or Kafka ([`log_core::repair`]): a plan that changes nothing, or
//! the plan carried out under the directory's lock (a Kafka partition under the broker's lock on its log
//! directory), followed by one writable open so that recovery finishes what it repairs on its own.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use log_core::progress::Meter;
use log_core::repair::{RepairOutcome, RepairPlan};
use log_core::{Format, LogConfig, SegmentStore};

use crate::dir::{OpenError, kafka_stores, native_store, open_read_only};

/// Why a repair could not be planned or carried out.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RepairError {
    /// The directory could not be opened.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// Reading the log for the plan, or carrying it out, failed.
    #[error("{}: {source}", dir.display())]
    Log {
        /// The directory.
        dir: PathBuf,
        /// The log's error.
        #[source]
        source: log_core::Error,
    },
}

/// What [`repair`] found and did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Repaired {
    /// What a repair does (did, with `apply`).
    pub plan: RepairPlan,
    /// What was done, with the names of the copies kept (`apply` only).
    pub outcome: Option<RepairOutcome>,
    /// What the open after the repair did, or (without `apply`) what the next open will do on its own.
    pub recovery: Vec<String>,
}

/// Plans a repair of the log in `dir` and, with `apply`, carries it out.
///
/// Without `apply` nothing is written, locked or created. With it, the directory is locked as every writer
/// locks it, the plan is made under the lock and carried out, a copy of every byte cut kept in
/// `repair-<time>.*.bytes` files in the directory; then, unless something cannot be fixed, the log is opened
/// once for writing so that recovery cuts a torn tail and finishes a swap.
///
/// # Errors
/// [`RepairError`]. A failure part-way leaves every segment old or new: running it again continues it.
pub fn repair(dir: &Path, format: Format, apply: bool) -> Result<Repaired, RepairError> {
    repair_metered(dir, format, apply, None)
}

/// As [`repair`], counting the bytes the plan reads on `meter` (its one stage's total: the log's segment
/// files), for a progress line.
///
/// # Errors
/// As [`repair`].
pub fn repair_metered(
    dir: &Path,
    format: Format,
    apply: bool,
    meter: Option<&Arc<Meter>>,
) -> Result<Repaired, RepairError> {
    let failed = |source| RepairError::Log { dir: dir.to_path_buf(), source };
    // The plan's reads counted as they happen; the store is the same otherwise.
    let metered = |store: Arc<dyn SegmentStore>| -> Arc<dyn SegmentStore> {
        let Some(m) = meter else { return store };
        let total = store
            .list()
            .unwrap_or_default()
            .iter()
            .filter(|n| n.ends_with(".log"))
            .filter_map(|n| store.open(n).ok().map(|f| f.len()))
            .sum();
        m.begin("plan", Some(total));
        Arc::new(crate::metered::metered(store, Arc::clone(m)))
    };
    // Not even a plan: one that could never be applied would only mislead.
    storage_file::refuse_metadata_log(dir).map_err(|source| OpenError::Store { dir: dir.to_path_buf(), source })?;
    if !apply {
        let store = match format {
            Format::Native => native_store(dir, false)?,
            Format::Kafka => kafka_stores(dir, false)?.partition,
        };
        let plan = log_core::repair::plan_for(format, &*metered(store), &LogConfig::default()).map_err(failed)?;
        let recovery = open_read_only(dir, format)
            .map(|o| crate::describe_recovery(o.log.recovery_report(), false))
            .unwrap_or_default();
        return Ok(Repaired { plan, outcome: None, recovery });
    }
    let stamp = u64::try_from(log_core::now_ms()).unwrap_or(0);
    let (plan, outcome, reopen) = match format {
        Format::Native => {
            let store = native_store(dir, true)?;
            let plan = log_core::repair::plan_for(format, &*metered(Arc::clone(&store)), &LogConfig::default())
                .map_err(failed)?;
            let outcome = log_core::repair::apply(&*store, &plan, stamp).map_err(failed)?;
            let reopen = plan
                .cannot_fix
                .is_empty()
                .then(|| log_core::Log::open(store, log_core::OpenOptions::new(LogConfig::default())))
                .transpose()
                .map_err(failed)?;
            (plan, outcome, reopen)
        }
        Format::Kafka => {
            let stores = kafka_stores(dir, true)?;
            let plan =
                log_core::repair::plan_for(format, &*metered(Arc::clone(&stores.partition)), &LogConfig::default())
                    .map_err(failed)?;
            let outcome = log_core::repair::apply(&*stores.partition, &plan, stamp).map_err(failed)?;
            let reopen = plan
                .cannot_fix
                .is_empty()
                .then(|| {
                    log_core::Log::open(
                        stores.partition,
                        log_core::OpenOptions::kafka(LogConfig::default(), stores.checkpoint),
                    )
                })
                .transpose()
                .map_err(failed)?;
            (plan, outcome, reopen)
        }
    };
    let recovery = reopen.map(|log| crate::describe_recovery(log.recovery_report(), true)).unwrap_or_default();
    Ok(Repaired { plan, outcome: Some(outcome), recovery })
}
