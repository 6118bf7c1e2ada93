//! `analyze --data-dir`: every log or partition of a data directory at a glance, read without changing
//! anything: per log its size, dirty ratio, the bytes a full compaction would reclaim, its distinct keys, the
//! buffer one pass needs per map, and whether Kafka's cleaner would pick it now and why not; sorted by
//! reclaimable bytes, with a total. Logs are analysed one at a time ([`cleaner::analyze::analyze`], each in
//! its own bounded memory), so the run's memory does not grow with the directory; each as `analyze --dir`
//! enriches it ([`crate::analyze::analyze_opened`]: hanging transactions' abort commands, consumer groups).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use cleaner::advise::Budget;
use cleaner::{LogSettings, PassOptions};
use log_core::Format;
use log_core::progress::Meter;
use serde::Serialize;

use super::settings::Layers;
use super::{DataDirError, discover};
use crate::{OpenError, open_read_only};

/// One log's row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LogRow {
    /// The log's (or partition's) directory name.
    pub log: String,
    /// Bytes of all its segments.
    pub bytes: u64,
    /// Kafka's cleanable ratio against the cleaner checkpoint.
    pub dirty_ratio: f64,
    /// Bytes a full compaction now would reclaim.
    pub reclaimable_bytes: u64,
    /// Whether the cleaner takes this log at all (its `cleanup.policy` compacts): only such logs count in the
    /// totals' reclaimable bytes.
    pub compacted: bool,
    /// Distinct keys of the dirty section (an estimate beyond 16M keys).
    pub distinct_keys: u64,
    /// True when `distinct_keys` was counted exactly.
    pub distinct_keys_exact: bool,
    /// Per map, the dedupe buffer (all threads) one pass over the dirty section needs.
    pub buffer_bytes_for_one_pass: BTreeMap<String, u64>,
    /// Whether Kafka's cleaner would pick it now (its dirty ratio reaches `min.cleanable.dirty.ratio`, or its
    /// oldest dirty record is past `max.compaction.lag.ms`).
    pub cleanable_now: bool,
    /// Why, or why not.
    pub reason: String,
    /// Kafka: the last stable offset.
    pub last_stable_offset: Option<u64>,
    /// Kafka: open transactions.
    pub open_transactions: usize,
    /// Kafka: the open transactions, each with the `kafka-transactions.sh` command that aborts it (its
    /// coordinator epoch from the broker's producer snapshot when no marker of its producer is in the log).
    pub hanging_transactions: Vec<cleaner::analyze::OpenTransaction>,
    /// `__consumer_offsets`: the consumer groups with a key in the partition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumer_groups: Option<usize>,
}

/// A data directory's analysis.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DirAnalysis {
    /// A row a log, most reclaimable bytes first.
    pub logs: Vec<LogRow>,
    /// Bytes of all the logs.
    pub total_bytes: u64,
    /// Bytes compacting the logs the cleaner takes would reclaim (a `delete` topic's are not counted).
    pub total_reclaimable_bytes: u64,
    /// Bytes a compaction would reclaim from the logs the cleaner leaves alone (their policy is `delete`): shown
    /// apart, never in the total.
    pub not_compacted_reclaimable_bytes: u64,
    /// Logs that could not be read, with why.
    pub unreadable: Vec<(String, String)>,
    /// Directories passed over, with why.
    pub ignored: Vec<(String, String)>,
}

/// Analyses every log of `data_dir` (each opened read-only: no lock, nothing written) with the settings
/// `layers` give it, `budget` for the buffer figures, counting on `meter` (a
/// [`Meter::running_total`]) the logs done and the bytes and records read.
///
/// # Errors
/// [`DataDirError::Unreadable`] when the directory cannot be listed, [`DataDirError::NoLogs`] when it holds no
/// log, [`DataDirError::Settings`]. A log that cannot be read is a row of `unreadable`, not an error.
pub fn analyze_dir(
    data_dir: &Path,
    format: Format,
    layers: &Layers,
    budget: Budget,
    meter: Option<&Arc<Meter>>,
) -> Result<DirAnalysis, DataDirError> {
    let found = discover(data_dir, format)?;
    let mut out = DirAnalysis { ignored: found.ignored.clone(), ..DirAnalysis::default() };
    let now = log_core::now_ms();
    // The bytes to read: until a log is opened, the most its analysis can read (four times its segment bytes:
    // all of it dirty), then what it reads of it (the count scan, and the key replay and dry run of its dirty
    // section), so that the total only comes down as the logs are opened.
    let mut sizes: Vec<u64> = found.logs.iter().map(|f| crate::dir::segment_bytes(&f.dir).saturating_mul(4)).collect();
    let set_total = |sizes: &[u64]| {
        if let Some(m) = meter {
            m.set_bytes_total(Some(sizes.iter().sum()));
        }
    };
    if let Some(m) = meter {
        m.set_items("logs", Some(found.logs.len() as u64));
    }
    set_total(&sizes);
    for (i, f) in found.logs.iter().enumerate() {
        // Whatever becomes of it, the log is done when this iteration ends.
        let _done = meter.map(|m| ItemDone(m));
        if let Some(stray) = layers.stray(&f.dir, &f.settings_name) {
            sizes[i] = 0;
            set_total(&sizes);
            out.ignored.push((f.name.clone(), stray.to_string()));
            continue;
        }
        // A topic whose settings Kafka would refuse is named, not a reason to analyze nothing.
        let resolved = match layers.resolve(&f.settings_name) {
            Ok(r) => r,
            Err(e) => {
                sizes[i] = 0;
                set_total(&sizes);
                out.unreadable.push((f.name.clone(), format!("its topic's settings: {e}")));
                continue;
            }
        };
        let opened = match open_read_only(&f.dir, format) {
            Ok(o) => o,
            Err(e) => {
                sizes[i] = 0;
                set_total(&sizes);
                if !matches!(e, OpenError::NotALog { .. }) {
                    out.unreadable.push((f.name.clone(), e.to_string()));
                }
                continue;
            }
        };
        let settings = resolved.as_ref().map(|r| r.settings.clone());
        // The pass the cleaner would run, with every setting of the topic (its max.decompressed.message.bytes
        // included: a record over it shows here as the pass's failure).
        let options = settings.as_ref().map_or_else(PassOptions::default, |s| s.pass_options(false));
        sizes[i] = cleaner::analyze::bytes_to_read(&opened.log, &options, now);
        set_total(&sizes);
        let lag = options.min_compaction_lag_ms;
        let source = opened.checkpoint_source.clone();
        let (a, groups) = match crate::analyze::analyze_opened(&opened, format, source, budget, options, meter) {
            Ok(found) => (found.analysis, found.consumer_groups),
            Err(e) => {
                out.unreadable.push((f.name.clone(), e.to_string()));
                continue;
            }
        };
        let section = opened.log.dirty_section(now, lag);
        let (cleanable_now, reason) = verdict(settings.as_ref(), &section, now, &f.settings_name);
        let compacted = settings.as_ref().is_some_and(|s| s.cleanup_policy.compacts());
        out.total_bytes += a.bytes;
        if compacted {
            out.total_reclaimable_bytes += a.bytes_reclaimed;
        } else {
            out.not_compacted_reclaimable_bytes += a.bytes_reclaimed;
        }
        out.logs.push(LogRow {
            log: f.name.clone(),
            bytes: a.bytes,
            dirty_ratio: a.dirty_ratio,
            reclaimable_bytes: a.bytes_reclaimed,
            compacted,
            distinct_keys: a.dirty.distinct.keys,
            distinct_keys_exact: a.dirty.distinct.exact,
            buffer_bytes_for_one_pass: a
                .dirty
                .maps
                .iter()
                .map(|m| (m.map.name().to_owned(), m.total_buffer_bytes_for_one_pass))
                .collect(),
            cleanable_now,
            reason,
            last_stable_offset: a.transactions.last_stable_offset,
            open_transactions: a.transactions.open_transactions.len(),
            hanging_transactions: a.transactions.open_transactions.clone(),
            consumer_groups: groups.map(|g| g.groups.len()),
        });
    }
    if out.logs.is_empty() && out.unreadable.is_empty() {
        return Err(DataDirError::NoLogs { dir: data_dir.to_path_buf(), what: "analyze", left_alone: 0, format });
    }
    // The logs the cleaner takes first, most reclaimable first; those it leaves alone after them.
    out.logs.sort_by(|a, b| {
        b.compacted
            .cmp(&a.compacted)
            .then_with(|| b.reclaimable_bytes.cmp(&a.reclaimable_bytes))
            .then_with(|| a.log.cmp(&b.log))
    });
    Ok(out)
}

/// Whether Kafka's cleaner would pick a log with `settings` (`None`: left alone) and dirty section `d` now,
/// and why (not).
fn verdict(settings: Option<&LogSettings>, d: &log_core::DirtySection, now: i64, topic: &str) -> (bool, String) {
    let Some(s) = settings.filter(|s| s.cleanup_policy.compacts()) else {
        return (false, format!("cleanup.policy of {topic} is delete: the cleaner leaves it alone"));
    };
    let held_by_txn = d.open_transactions > 0;
    if !d.is_cleanable() {
        let why = if d.open_transactions > 0 && d.dirty_bytes == 0 {
            format!(
                "an open transaction holds the last stable offset at {}: nothing past it can be cleaned",
                d.last_stable_offset.unwrap_or(0)
            )
        } else if d.held_by_last_stable_offset && d.dirty_bytes == 0 {
            format!(
                "the broker's high watermark at {} holds the last stable offset: no segment from the one holding it \
                 on can be cleaned",
                d.last_stable_offset.unwrap_or(0)
            )
        } else if d.too_young_bytes > 0 && d.dirty_bytes == 0 {
            format!("its dirty records are younger than min.compaction.lag.ms ({} ms)", s.min_compaction_lag_ms)
        } else if d.closed_segments == 0 || d.dirty_bytes == 0 {
            "nothing dirty outside the active segment, which is never cleaned".to_owned()
        } else {
            "nothing to clean".to_owned()
        };
        return (false, why);
    }
    let delay = d.compaction_delay_ms(now, s.max_compaction_lag_ms);
    let ratio = d.dirty_ratio();
    let txn = if held_by_txn { " (an open transaction holds part of it back)" } else { "" };
    if delay > 0 {
        return (true, format!("its oldest dirty record is {delay} ms past max.compaction.lag.ms{txn}"));
    }
    if ratio >= s.min_cleanable_dirty_ratio {
        return (
            true,
            format!(
                "dirty ratio {:.1}% reaches min.cleanable.dirty.ratio {:.0}%{txn}",
                ratio * 100.0,
                s.min_cleanable_dirty_ratio * 100.0
            ),
        );
    }
    (
        false,
        format!(
            "dirty ratio {:.1}% is below min.cleanable.dirty.ratio {:.0}%",
            ratio * 100.0,
            s.min_cleanable_dirty_ratio * 100.0
        ),
    )
}

/// Counts one item done on its meter when dropped, however its iteration ends.
struct ItemDone<'a>(&'a Meter);

impl Drop for ItemDone<'_> {
    fn drop(&mut self) {
        self.0.item_done();
    }
}
