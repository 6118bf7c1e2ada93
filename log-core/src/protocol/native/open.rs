//! The native format's front half of opening a log: its swap recovery (the rules of [`PendingSwap`]), the
//! store's names checked, and what the open's skeleton ([`crate::open::open`]) asks of the format: the
//! recovery of a writable store ([`recover`]) and one attempt of a read-only load ([`load_read_only`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::checkpoint::CheckpointFile;
use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::format::Format;
use crate::format::native::names::{FileKind, file_name};
use crate::log::RecoveryReport;
use crate::names::CHECKPOINT_TMP_FILE;
use crate::open::{Parts, ReadOnlyFront, Recovered, delete_if_exists, read_only_back_half, sync_dir};
use crate::producers::ProducerFiles;
use crate::protocol::native::layout::{
    Layout, PendingSwap, SwapContent, load_swap, marker_ranges, prove_swaps, swap_range,
};
use crate::segment::SealedSegment;
use crate::storage::SegmentStore;

/// Completes or rolls back a cleaning swap that a crash interrupted (the rules of [`PendingSwap`]).
///
/// Every `.swap` to be completed is validated first ([`load_swap`]), so a damaged or foreign `.swap` never
/// replaces a good segment: the open fails naming it and nothing is changed. `.deleted` files are always
/// garbage.
pub(crate) fn recover_swap(
    store: &dyn SegmentStore,
    layout: &Layout,
    config: &LogConfig,
    report: &mut RecoveryReport,
) -> Result<()> {
    let mut changed = false;
    let mut gone: Vec<String> = Vec::new();
    match layout.pending_swap() {
        PendingSwap::None => {}
        PendingSwap::RollBack => {
            // The `.swap` files go first, durably, so that a crash half-way through the rollback can never
            // leave `.swap` files without the `.cleaned` ones that mark the swap uncommitted.
            for names in [&layout.swaps, &layout.cleaned] {
                for name in names.values() {
                    delete_if_exists(store, name)?;
                    report.cleaned_files_discarded += 1;
                }
                sync_dir(store)?;
            }
        }
        PendingSwap::Complete => {
            let markers = marker_ranges(store, layout);
            let mut validated = BTreeMap::new();
            for (&base, name) in &layout.swaps {
                let content = load_swap(store, layout, &markers, base, name, config.index_interval_bytes)?;
                validated.insert(base, (name.clone(), content));
            }
            for effect in prove_swaps(store, layout, &markers, &validated) {
                report.pending_swaps.push(effect?);
            }
            let ranges: Vec<(u64, u64)> =
                validated.iter().map(|(&b, (_, c))| swap_range(layout, &markers, b, c)).collect();
            // The segments the swap replaces are renamed `.deleted` (as the pass itself does) and the swap's
            // segments take their names; its markers go only once that is durable, and the `.deleted` files
            // last: a crash at any step leaves every replaced segment for the next open's proof.
            for (&b, log) in &layout.logs {
                if ranges.iter().any(|&(from, to)| (from..to).contains(&b)) {
                    let deleted = file_name(b, FileKind::Deleted);
                    store.rename(log, &deleted).map_err(Error::io("rename", log))?;
                    delete_if_exists(store, &file_name(b, FileKind::Index))?;
                    gone.push(deleted);
                }
            }
            for (&base, (name, content)) in &validated {
                if let SwapContent::Segment(_) = content {
                    store.rename(name, &file_name(base, FileKind::Log)).map_err(Error::io("rename", name))?;
                    delete_if_exists(store, &file_name(base, FileKind::Index))?;
                }
                report.swaps_completed += 1;
            }
            sync_dir(store)?;
            for (name, content) in validated.values() {
                if let SwapContent::Removed { .. } = content {
                    delete_if_exists(store, name)?;
                }
            }
            changed = true;
        }
    }
    if changed {
        sync_dir(store)?;
    }
    for name in layout.deleted.values() {
        delete_if_exists(store, name)?;
        report.stray_files_removed += 1;
        changed = true;
    }
    for name in &gone {
        delete_if_exists(store, name)?;
    }
    if layout.checkpoint_tmp {
        delete_if_exists(store, CHECKPOINT_TMP_FILE)?;
        report.stray_files_removed += 1;
        changed = true;
    }
    if changed {
        sync_dir(store)?;
    }
    Ok(())
}

/// Refuses a store whose names the log cannot use, or that holds another format.
pub(crate) fn usable(store: &dyn SegmentStore, layout: &Layout) -> Result<()> {
    layout.check_usable()?;
    match layout.foreign_format(store) {
        Some((found, other_format)) => Err(Error::NotALog { found, other_format }),
        None => Ok(()),
    }
}

/// Recovers the log in the writable `store` for the open's skeleton ([`crate::open::open`]) and lists its live
/// segments.
///
/// An interrupted cleaning swap is completed (after validating every `.swap`) or rolled back; a hint without
/// its segment, or one for the active segment (which has none), is removed. The skeleton then trusts a closed
/// segment whose `.lcindex` hint checks out without a full scan (its checksums are verified on every read and
/// cleaning pass) and scans and validates any other (a bad frame there is an error naming the file and
/// position: nothing is skipped); a torn tail of the active segment (a bad region with no valid record after
/// it, all a torn write can leave) is cut back to the last whole record and reported in
/// [`crate::Log::recovery_report`]; a bad frame with valid records after it is corruption and nothing is cut.
///
/// # Errors
/// [`Error::UnusableName`] for a segment-like name the log cannot use; [`Error::NotALog`] for a store holding
/// another format (a Kafka partition); [`Error::Corrupt`] naming a bad `.swap`; [`Error::Io`].
pub(crate) fn recover(store: &dyn SegmentStore, config: &LogConfig) -> Result<Recovered> {
    let mut report = RecoveryReport::default();
    let layout = Layout::scan(store)?;
    usable(store, &layout)?;
    recover_swap(store, &layout, config, &mut report)?;
    let layout = Layout::scan(store)?;
    let active_base = layout.logs.last_key_value().map(|(&b, _)| b);
    for (&base, name) in &layout.hints {
        if !layout.logs.contains_key(&base) || Some(base) == active_base {
            delete_if_exists(store, name)?;
            report.stray_files_removed += 1;
        }
    }
    Ok(Recovered { logs: layout.logs, report, producer_files: ProducerFiles::default() })
}

/// One attempt of a read-only open (`Ok(None)` when the log changed while it was being loaded): it sees the log
/// as the next writable open would leave it, without doing the work. An interrupted swap is resolved in memory
/// (a `.swap` to complete is validated and read in place of its segment), a torn tail is left out of the view,
/// hints that do not check out are not rewritten (the segment is scanned instead), and the report tells what
/// that open would repair. Consistency without a lock: after loading, the names are listed again and every
/// segment's file identity compared with the file loaded (see [`crate::open::read_only_back_half`]).
///
/// # Errors
/// [`Error::NotALog`] when the store holds no segment or another format; otherwise as [`recover`].
pub(crate) fn load_read_only(store: &Arc<dyn SegmentStore>, config: &LogConfig) -> Result<Option<Parts>> {
    let store_ref: &dyn SegmentStore = &**store;
    let layout = Layout::scan(store_ref)?;
    usable(store_ref, &layout)?;
    let mut report = RecoveryReport::default();
    let mut names: BTreeMap<u64, (String, Option<SealedSegment>)> =
        layout.logs.iter().map(|(&b, n)| (b, (n.clone(), None))).collect();
    match layout.pending_swap() {
        PendingSwap::None => {}
        PendingSwap::RollBack => report.cleaned_files_discarded = layout.cleaned.len() + layout.swaps.len(),
        PendingSwap::Complete => {
            let markers = marker_ranges(store_ref, &layout);
            let mut validated = BTreeMap::new();
            for (&base, name) in &layout.swaps {
                let content = load_swap(store_ref, &layout, &markers, base, name, config.index_interval_bytes)?;
                validated.insert(base, (name.clone(), content));
            }
            for effect in prove_swaps(store_ref, &layout, &markers, &validated) {
                report.pending_swaps.push(effect?);
            }
            for (base, (name, content)) in validated {
                match content {
                    SwapContent::Removed { end } => names.retain(|&b, _| !(base..end).contains(&b)),
                    SwapContent::Segment(s) => {
                        names.insert(base, (name, Some(*s)));
                    }
                }
                report.swaps_completed += 1;
            }
        }
    }
    let last_log = layout.logs.last_key_value().map(|(&b, _)| b);
    let stray_hints = layout.hints.keys().filter(|&&b| !layout.logs.contains_key(&b) || Some(b) == last_log).count();
    report.stray_files_removed = layout.deleted.len() + usize::from(layout.checkpoint_tmp) + stray_hints;
    let front =
        ReadOnlyFront { names, report, checkpoint: CheckpointFile::Own, producer_files: ProducerFiles::default() };
    let not_a_log = || Error::NotALog { found: layout.describe(), other_format: false };
    // A roll after the first listing (a new active segment, the old one's hint) leaves the loaded view a
    // consistent prefix.
    let unchanged = |active_base| Ok(same_up_to(&Layout::scan(store_ref)?, &layout, active_base));
    read_only_back_half(Format::Native, store, config, front, not_a_log, unchanged)
}

/// True when two listings agree on everything up to the segment based at `active_base`: a roll after the
/// first listing (a new active segment, the old one's hint) leaves the loaded view a consistent prefix.
fn same_up_to(now: &Layout, then: &Layout, active_base: u64) -> bool {
    let upto =
        |m: &BTreeMap<u64, String>, limit: u64| m.range(..limit).map(|(&b, n)| (b, n.clone())).collect::<Vec<_>>();
    upto(&now.logs, active_base + 1) == upto(&then.logs, active_base + 1)
        && upto(&now.hints, active_base) == upto(&then.hints, active_base)
        && now.cleaned == then.cleaned
        && now.swaps == then.swaps
        && now.unusable == then.unusable
}
