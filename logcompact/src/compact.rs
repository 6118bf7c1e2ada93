//! Compacting one log directory, in place or into a copy: the passes a `compact` command runs, for both
//! formats, with every setting a pass takes.

use std::path::{Path, PathBuf};

use cleaner::{CleanStats, Cleaner, PassOptions};
use log_core::{DirtySection, Format, Log, LogConfig, RecoveryReport};

use crate::copy::{CopyError, copy_beside_metered, place};
use crate::datadir::settings::{Layers, SettingsError};
use crate::dir::{CheckpointPastEnd, OpenError, OpenedLog, open_writable, open_writable_copy_as, open_writable_listed};

/// What to compact, and how.
#[derive(Debug, Clone)]
pub struct CompactRequest {
    /// The log's directory.
    pub dir: PathBuf,
    /// Its format.
    pub format: Format,
    /// The first pass's options (later passes of `until_clean` do not purge again). Their `drop_invalid` is
    /// raised where Kafka's cleaner drops records without a key: a native log, or a Kafka topic whose own
    /// settings compact it ([`topic_policy`]).
    pub options: PassOptions,
    /// The settings read for the directory ([`crate::datadir::settings_of`]): what says whether a Kafka
    /// partition's topic is compacted ([`topic_policy`]). `Layers::default()` says nothing, so a Kafka
    /// partition is refused; [`Layers::compact_anyway`] is the operator's word that the broker compacts it.
    pub settings: Layers,
    /// Passes until nothing is dirty, or one pass.
    pub until_clean: bool,
    /// The log's `segment.bytes` (the most a group of cleaned segments merges into).
    pub segment_bytes: u64,
    /// The log's `index.interval.bytes` (bytes of batches between two entries of the indexes it writes).
    pub index_interval_bytes: u64,
    /// Nothing is done below this dirty ratio (Kafka's `min.cleanable.dirty.ratio`).
    pub min_cleanable_dirty_ratio: f64,
    /// Start from this first dirty offset instead of the checkpoint.
    pub checkpoint: Option<u64>,
    /// Compact a copy made here instead of the directory itself (which is then never written).
    pub out: Option<PathBuf>,
    /// Whether the cleaner's clock is checked against the log's newest record first ([`crate::ClockTrust`]).
    pub clock_trust: crate::clock::ClockTrust,
    /// The directory's names, when the caller read them already ([`crate::dir::Listing::read`], before
    /// anything was locked): handed down so that the directory is not listed again to tell what it is.
    /// `None`: read here.
    pub listing: Option<crate::dir::Listing>,
}

impl CompactRequest {
    /// A request to compact the Kafka partition in `dir` in place until nothing is dirty, as the topic's
    /// `settings` say (they decide whether it is compacted at all: [`topic_policy`]): Kafka's default segment
    /// and index sizes, every dirty segment taken (no minimum dirty ratio), the clock checked, the default pass
    /// options. Set a field to ask otherwise.
    pub fn kafka(dir: &std::path::Path, settings: Layers) -> CompactRequest {
        CompactRequest {
            dir: dir.to_path_buf(),
            format: Format::Kafka,
            options: PassOptions::default(),
            settings,
            until_clean: true,
            segment_bytes: log_core::DEFAULT_SEGMENT_BYTES,
            index_interval_bytes: log_core::DEFAULT_INDEX_INTERVAL_BYTES,
            min_cleanable_dirty_ratio: 0.0,
            checkpoint: None,
            out: None,
            clock_trust: crate::clock::ClockTrust::Checked,
            listing: None,
        }
    }
}

/// What a compaction did.
#[derive(Debug)]
pub struct Compaction {
    /// The directory compacted (the copy with `out`).
    pub dir: PathBuf,
    /// What opening it repaired (a torn tail cut, an interrupted swap finished, a checkpoint reset).
    pub recovery: RecoveryReport,
    /// What the passes did.
    pub outcome: CompactOutcome,
    /// Where the cleaner checkpoint is kept, for reports.
    pub checkpoint_source: String,
    /// False when the checkpoint is kept for this run only (a Kafka partition outside a log directory): a
    /// later compaction starts again from the log's start.
    pub checkpoint_saved: bool,
    /// The log's sections before the first pass (after opening repaired it): with [`Compaction::after`], the
    /// sizes a summary compares. Both are measured with the same clock and lag, so they differ only by what
    /// the passes did.
    pub before: DirtySection,
    /// The log's sections after the last pass.
    pub after: DirtySection,
    /// The log's next offset: what an emptied log's summary names instead of a range of offsets.
    pub next_offset: u64,
}

/// What the passes of a compaction did.
#[derive(Debug)]
pub enum CompactOutcome {
    /// Nothing was done, and why. No pass ran, so a requested purge did not act either.
    NothingDone(String),
    /// The passes ran: their statistics.
    Cleaned(Vec<CleanStats>),
}

/// Why a compaction failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompactError {
    /// A setting is out of its range.
    #[error("{name} {value} is {why}")]
    Setting {
        /// Kafka's name of the setting.
        name: &'static str,
        /// The value given.
        value: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The log's configuration does not suit its format.
    #[error("{0}")]
    Config(#[source] log_core::Error),
    /// The settings read for the directory do not resolve.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// The first dirty offset given is past the end of the log.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointPastEnd),
    /// The partition's topic is not compacted: its own settings say so, or the caller's do.
    #[error("{}: {why}", dir.display())]
    NotCompacted {
        /// The directory.
        dir: PathBuf,
        /// The topic.
        topic: String,
        /// Its `cleanup.policy` and where that came from ([`Layers::why_left_alone`]).
        why: String,
    },
    /// Nothing read says whether the partition's topic is compacted, and the caller did not say it is:
    /// compacting a `delete` topic loses every record but each key's latest, so it is never done on a guess.
    #[error("{}: nothing here says whether topic {topic} is compacted{}; compacting a delete topic loses its older records", dir.display(), notice.as_ref().map(|n| format!(" ({n})")).unwrap_or_default())]
    PolicyUnknown {
        /// The directory.
        dir: PathBuf,
        /// The topic.
        topic: String,
        /// Why the broker's settings were not read, when that is known.
        notice: Option<String>,
    },
    /// The directory could not be opened.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The copy for `out` could not be made.
    #[error(transparent)]
    Copy(#[from] CopyError),
    /// The cleaner's clock would stamp delete horizons in the past of the log's records.
    #[error("{dir}: {source}", dir = dir.display())]
    Clock {
        /// The directory.
        dir: PathBuf,
        /// Why.
        #[source]
        source: crate::clock::ClockError,
    },
    /// A pass failed; passes already committed stay.
    #[error("{dir}: cleaning pass failed: {source}")]
    Pass {
        /// The directory.
        dir: PathBuf,
        /// The cleaner's error.
        #[source]
        source: cleaner::Error,
    },
}

/// What [`topic_policy`] found: the pass options it raises, and whether the caller's word overrides the topic's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyVerdict {
    /// Records without a key are dropped, as Kafka's cleaner drops them from a compacted topic.
    pub drop_invalid: bool,
    /// The partition is compacted on the caller's word ([`Layers::compact_anyway`]), not its topic's settings.
    pub asserted: Option<Asserted>,
}

/// A compaction on the caller's word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asserted {
    /// The topic.
    pub topic: String,
    /// Who said so (the flag, or `the saved ` and the flag an earlier run saved).
    pub by: String,
    /// The topic's own `cleanup.policy` and where it came from, when its settings give one (one that does not
    /// compact: else the word was not needed).
    pub own: Option<(String, String)>,
}

/// Whether `req`'s log may be compacted, decided once for every caller: a native log always (its records
/// without a key dropped); a Kafka partition when its topic's own settings compact it (the broker's metadata
/// log, saved settings, a settings file: then records without a key are dropped, as Kafka's cleaner drops
/// them), or on the caller's word that the broker compacts it (a `cleanup.policy` given as a flag, this run's
/// or saved: then they are kept unless the pass options drop them). A topic whose settings say `delete`, or
/// whose settings say nothing and no word was given, is refused: compacting a `delete` topic loses every
/// record but each key's latest.
///
/// # Errors
/// [`CompactError::NotCompacted`], [`CompactError::PolicyUnknown`], [`CompactError::Settings`].
pub fn topic_policy(req: &CompactRequest) -> Result<PolicyVerdict, CompactError> {
    if req.format == Format::Native {
        return Ok(PolicyVerdict { drop_invalid: true, asserted: None });
    }
    // Read as a Kafka log directory's settings, whatever format the caller's layers were read for.
    let layers = &Layers { format: req.format, ..req.settings.clone() };
    let topic = crate::datadir::topic_of(&req.dir);
    let resolved = layers.resolve_all(&topic)?;
    // The topic's own settings: without a cleanup.policy given as a flag (this run's or saved), which says what
    // to do, not what the topic is.
    let mut own_layers = layers.clone();
    let this_run = own_layers.flags.remove("cleanup.policy");
    let saved = own_layers.saved.flags.remove("cleanup.policy");
    let by = this_run.map(|(_, flag)| flag).or_else(|| saved.map(|(_, flag)| format!("the saved {flag}")));
    let own = own_layers.resolve_all(&topic)?;
    let from = own.sources.get("cleanup.policy").cloned().unwrap_or_default();
    let known = !["default", "Kafka's default for a topic"].contains(&from.as_str());
    if !resolved.settings.cleanup_policy.compacts() && (known || by.is_some()) {
        return Err(CompactError::NotCompacted { dir: req.dir.clone(), why: layers.why_left_alone(&topic), topic });
    }
    if known && own.settings.cleanup_policy.compacts() {
        return Ok(PolicyVerdict { drop_invalid: true, asserted: None });
    }
    let Some(by) = by else {
        return Err(CompactError::PolicyUnknown { dir: req.dir.clone(), topic, notice: layers.broker_notice.clone() });
    };
    let own = known.then(|| (own.settings.cleanup_policy.name().to_owned(), from));
    Ok(PolicyVerdict { drop_invalid: false, asserted: Some(Asserted { topic, by, own }) })
}

/// Why a pass would find nothing to clean in `log`, or `None` when it would.
pub fn nothing_cleanable(log: &Log, d: &DirtySection, lag_ms: i64) -> Option<String> {
    if d.is_cleanable() {
        return None;
    }
    Some(if d.closed_segments == 0 {
        format!(
            "nothing to clean: all {} records are in the active segment, which no pass takes; `logcompact roll` seals \
             it (or write with a smaller --segment-bytes)",
            d.active_records
        )
    } else if d.open_transactions > 0 && d.held_by_last_stable_offset {
        // The last stable offset, not the lag, is what holds the section back.
        format!(
            "nothing to clean: {} open transaction(s) hold the last stable offset at {}, and no segment from the one \
             holding it on is cleaned until they end (`logcompact analyze --format kafka` names them and the command that aborts one)",
            d.open_transactions,
            d.last_stable_offset.unwrap_or(0)
        )
    } else if d.held_by_last_stable_offset {
        // No transaction is open: the high watermark (replication-offset-checkpoint) bounds the last stable
        // offset.
        format!(
            "nothing to clean: the high watermark at {} (replication-offset-checkpoint) holds the last stable \
             offset, and no segment from the one holding it on is cleaned until the replicas have its records",
            d.last_stable_offset.unwrap_or(0)
        )
    } else if d.too_young_bytes > 0 {
        format!(
            "nothing to clean: the dirty records ({}) are younger than min.compaction.lag.ms ({})",
            log_core::human::bytes(d.too_young_bytes),
            log_core::human::duration_ms(u64::try_from(lag_ms).unwrap_or(0))
        )
    } else {
        format!(
            "nothing dirty: every closed segment has been through a pass (checkpoint at offset {}); the active \
             segment's {} records wait for a roll",
            log.cleaner_checkpoint(),
            d.active_records
        )
    })
}

/// Runs `req` with `cleaner`, calling `each` with every pass's statistics as it ends (an error from it stops
/// the passes). With `out`, the directory is copied there first and the copy compacted.
///
/// # Errors
/// [`CompactError`].
pub fn compact(
    req: &CompactRequest,
    cleaner: &mut Cleaner,
    each: impl FnMut(&CleanStats) -> Result<(), cleaner::Error>,
) -> Result<Compaction, CompactError> {
    compact_observed(req, cleaner, |_| {}, each)
}

/// As [`compact`], calling `opened` with what opening the log repaired before the first pass.
///
/// # Errors
/// [`CompactError`].
pub fn compact_observed(
    req: &CompactRequest,
    cleaner: &mut Cleaner,
    opened: impl FnOnce(&RecoveryReport),
    each: impl FnMut(&CleanStats) -> Result<(), cleaner::Error>,
) -> Result<Compaction, CompactError> {
    for (name, value) in [
        ("min.compaction.lag.ms", req.options.min_compaction_lag_ms),
        ("delete.retention.ms", req.options.delete_retention_ms),
    ] {
        if value < 0 {
            return Err(CompactError::Setting { name, value: value.to_string(), why: "negative" });
        }
    }
    if !(0.0..=1.0).contains(&req.min_cleanable_dirty_ratio) {
        return Err(CompactError::Setting {
            name: "min.cleanable.dirty.ratio",
            value: req.min_cleanable_dirty_ratio.to_string(),
            why: "not in [0, 1]",
        });
    }
    let verdict = topic_policy(req)?;
    let mut req = req.clone();
    req.options.drop_invalid |= verdict.drop_invalid;
    let req = &req;
    let config = LogConfig {
        segment_bytes: req.segment_bytes,
        index_interval_bytes: req.index_interval_bytes,
        ..LogConfig::default()
    };
    config.validate_for(req.format).map_err(CompactError::Config)?;
    // With --out the copy is compacted under a temporary name beside the target and renamed into place only
    // once every pass is done: a run killed at any moment leaves no target, and the next run starts over.
    let (dir, checkpoint) = match &req.out {
        Some(out) => {
            let unplaced = copy_beside_metered(&req.dir, req.format, out, cleaner.meter().map(|m| &**m))?;
            (unplaced.temp, Some(req.checkpoint.unwrap_or(unplaced.copied.checkpoint)))
        }
        None => (req.dir.clone(), req.checkpoint),
    };
    let log = match &req.out {
        Some(out) => open_writable_copy_as(&dir, out, req.format, config),
        None => match &req.listing {
            Some(listing) => open_writable_listed(&dir, req.format, config, listing),
            None => open_writable(&dir, req.format, config),
        },
    };
    let result = log.map_err(CompactError::from).and_then(|OpenedLog { log, checkpoint_source, .. }| {
        if let Some(c) = checkpoint {
            crate::dir::start_dirty_at(&log, c)?;
        }
        opened(log.recovery_report());
        if req.clock_trust == crate::clock::ClockTrust::Checked {
            crate::clock::check_clock_for_log(cleaner.now_ms(), &log)
                .map_err(|source| CompactError::Clock { dir: req.dir.clone(), source })?;
        }
        let lag = req.options.min_compaction_lag_ms;
        let before = log.dirty_section(cleaner.now_ms(), lag);
        let outcome = compact_log(&log, req.out.as_deref().unwrap_or(&dir), req, cleaner, each)?;
        let after = log.dirty_section(cleaner.now_ms(), lag);
        let checkpoint_saved = !matches!(log.checkpoint_file(), log_core::CheckpointFile::Memory);
        Ok(Compaction {
            dir: req.out.clone().unwrap_or_else(|| dir.clone()),
            recovery: log.recovery_report().clone(),
            outcome,
            checkpoint_source,
            checkpoint_saved,
            before,
            after,
            next_offset: log.next_offset(),
        })
    });
    let Some(out) = &req.out else { return result };
    match result {
        Ok(c) => {
            place(&dir, out)?;
            Ok(c)
        }
        Err(e) => {
            // The copy is this run's own: a failed compaction leaves no half-done copy behind.
            let _ = std::fs::remove_dir_all(&dir);
            Err(e)
        }
    }
}

/// The passes of [`compact`] on an open log.
///
/// # Errors
/// As [`compact`].
pub fn compact_log(
    log: &Log,
    dir: &Path,
    req: &CompactRequest,
    cleaner: &mut Cleaner,
    mut each: impl FnMut(&CleanStats) -> Result<(), cleaner::Error>,
) -> Result<CompactOutcome, CompactError> {
    let lag = req.options.min_compaction_lag_ms;
    let section = log.dirty_section(cleaner.now_ms(), lag);
    let why_not = nothing_cleanable(log, &section, lag).or_else(|| {
        (section.dirty_ratio() < req.min_cleanable_dirty_ratio).then(|| {
            format!(
                "nothing done: the dirty ratio {:.1}% is below min.cleanable.dirty.ratio {:.1}%",
                100.0 * section.dirty_ratio(),
                100.0 * req.min_cleanable_dirty_ratio
            )
        })
    });
    if let Some(why) = why_not {
        // A purge acts in a pass: the caller says that it did not act, rather than pass over it in silence.
        return Ok(CompactOutcome::NothingDone(why));
    }
    let pass_error = |source| CompactError::Pass { dir: dir.to_path_buf(), source };
    let passes = if req.until_clean {
        cleaner.clean_until_clean(log, req.options, &mut each).map_err(pass_error)?
    } else {
        let stats = cleaner.clean(log, req.options).map_err(pass_error)?;
        each(&stats).map_err(pass_error)?;
        vec![stats]
    };
    Ok(CompactOutcome::Cleaned(passes))
}
