//! Repairing a native log: its layout, its removal markers, its `.lcindex` hints and its checkpoint.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::format::Format;
use crate::format::native::names::{FileKind, file_name};
use crate::names::CHECKPOINT_FILE;
use crate::protocol::native::layout::{Layout, PendingSwap, SwapContent, load_swap, marker_ranges, prove_swaps};
use crate::repair::{
    Backups, RepairAction, RepairOutcome, RepairPlan, Rewrite, damage, delete_quietly, rewrite_without,
};
use crate::storage::{Segment, SegmentStore};

/// The first bytes of `file`, at most `max` (enough to tell a removal marker).
fn head(file: &Arc<dyn Segment>, name: &str, max: usize) -> Result<Vec<u8>> {
    let mut bytes = vec![0; usize::try_from(file.len()).unwrap_or(usize::MAX).min(max)];
    file.read_at(0, &mut bytes).map_err(Error::io("read", name))?;
    Ok(bytes)
}

/// Lists what a repair of the native log in `store` would do. Reads only.
///
/// # Errors
/// [`Error::Io`] when the store cannot be read.
pub(crate) fn plan(store: &dyn SegmentStore) -> Result<RepairPlan> {
    let layout = Layout::scan(store)?;
    let mut plan = RepairPlan {
        format: Format::Native,
        index_interval_bytes: crate::DEFAULT_INDEX_INTERVAL_BYTES,
        ..RepairPlan::default()
    };
    for (name, reason) in &layout.unusable {
        plan.cannot_fix.push(format!("{name}: {reason}; move it out of the directory by hand"));
    }
    let mut segments = layout.logs.clone();
    if layout.pending_swap() == PendingSwap::Complete {
        let markers = marker_ranges(store, &layout);
        let interval = crate::DEFAULT_INDEX_INTERVAL_BYTES;
        let mut loaded: Vec<(u64, &String, Result<SwapContent>)> =
            layout.swaps.iter().map(|(&b, n)| (b, n, load_swap(store, &layout, &markers, b, n, interval))).collect();
        // A swap that loads must also be one a pass could have written.
        let mut valid = std::collections::BTreeMap::new();
        for (b, n, result) in &mut loaded {
            if result.is_ok() {
                let content = std::mem::replace(result, Err(Error::ReadOnly));
                if let Ok(content) = content {
                    valid.insert(*b, ((*n).clone(), content));
                }
            }
        }
        let proofs = prove_swaps(store, &layout, &markers, &valid);
        for ((b, (_, content)), proof) in valid.into_iter().zip(proofs) {
            if let Some((_, _, result)) = loaded.iter_mut().find(|(lb, _, _)| *lb == b) {
                *result = proof.map(|_| content);
            }
        }
        // A marker that follows a cleaned segment set aside goes with it: it may remove the rest of that
        // segment's group, whose records only the set-aside file held.
        let set_aside: Vec<u64> = loaded.iter().filter(|(_, _, r)| r.is_err()).map(|&(b, _, _)| b).collect();
        for (base, name, result) in &mut loaded {
            let follows = set_aside.iter().any(|&a| next_old_base(&layout, a) == Some(*base));
            if follows && let Ok(SwapContent::Removed { .. }) = result {
                let kind = crate::CorruptKind::BadRemovalMarker("the cleaned segment before it is set aside");
                *result = Err(Error::Corrupt { segment: (*name).clone(), position: 0, kind });
            }
        }
        for (base, name, result) in loaded {
            match result {
                Ok(SwapContent::Removed { end }) => {
                    // A valid removal marker: the next open (or the repair) removes the segments.
                    segments.retain(|&b, _| !(base..end).contains(&b));
                }
                Ok(SwapContent::Segment(_)) => {
                    // A valid committed swap: it is completed first; repair the segment it becomes.
                    segments.insert(base, name.clone());
                }
                Err(e) => {
                    let end = markers.get(&base).copied().unwrap_or(base + 1);
                    let restored: Vec<u64> = layout
                        .deleted
                        .range(base..end.max(base + 1))
                        .map(|(&b, _)| b)
                        .filter(|b| !layout.logs.contains_key(b))
                        .collect();
                    let segment = if layout.logs.contains_key(&base) {
                        "the segment it was to replace is kept".to_owned()
                    } else if !restored.is_empty() {
                        let names: Vec<String> = restored.iter().map(|&b| file_name(b, FileKind::Log)).collect();
                        format!("{} restored from .deleted", names.join(", "))
                    } else {
                        "the segment it replaced is gone already: its records are lost".to_owned()
                    };
                    plan.actions.push(RepairAction::DiscardSwap { file: name.clone(), reason: e.to_string(), segment });
                    for b in restored {
                        if let Some(deleted) = layout.deleted.get(&b) {
                            segments.insert(b, deleted.clone());
                        }
                    }
                }
            }
        }
    }
    let active_base = segments.last_key_value().map(|(&b, _)| b);
    let mut floor: Option<u64> = None;
    for (&base, name) in &segments {
        let file = store.open(name).map_err(Error::io("open", name))?;
        let scanned = damage::scan(Format::Native, base, name, &file, floor)?;
        let next_base = segments.range(base + 1..).next().map(|(&b, _)| b);
        let offsets = scanned.dropped(next_base);
        let damage::Damage { ranges, records, first, last, data_end, cannot_judge, .. } = scanned;
        if let Some((at, why)) = cannot_judge {
            plan.cannot_fix.push(format!("{name} at byte {at}: {why}"));
        }
        if let (Some(first), Some(f)) = (first, floor)
            && first <= f
        {
            plan.cannot_fix.push(format!("{name}: its offsets overlap the segment before it"));
        }
        floor = last.or(floor);
        let active = Some(base) == active_base;
        // A torn tail alone is the next open's to cut.
        let torn_only = active && ranges.len() == 1 && ranges[0].1 == data_end;
        if ranges.is_empty() || torn_only {
            continue;
        }
        let bytes_cut = ranges.iter().map(|(s, e)| e - s).sum();
        plan.actions.push(RepairAction::CutRanges {
            // The segment as it stands once a pending swap is finished.
            segment: file_name(base, FileKind::Log),
            ranges,
            offsets,
            bytes: bytes_cut,
            records_kept: records,
            active,
        });
    }
    if layout.checkpoint
        && let Err(e) = crate::checkpoint::read_own(store)
    {
        plan.actions.push(RepairAction::ResetCheckpoint { reason: e.to_string() });
    }
    if plan.actions.iter().all(|a| !matches!(a, RepairAction::CutRanges { .. })) {
        hint_actions(store, &layout, &segments, active_base, &mut plan)?;
    }
    Ok(plan)
}

/// Hints of closed segments that disagree with them (only once the segments themselves are sound).
fn hint_actions(
    store: &dyn SegmentStore,
    layout: &Layout,
    segments: &std::collections::BTreeMap<u64, String>,
    active_base: Option<u64>,
    plan: &mut RepairPlan,
) -> Result<()> {
    for (&base, hint) in &layout.hints {
        let Some(name) = segments.get(&base).filter(|_| Some(base) != active_base) else { continue };
        let file = store.open(name).map_err(Error::io("open", name))?;
        let segment = crate::segment::SealedSegment::load(
            crate::Format::Native,
            base,
            name.clone(),
            file,
            crate::DEFAULT_INDEX_INTERVAL_BYTES,
        )?;
        if let Err(reason) = super::check::verify_hint(store, hint, &segment) {
            plan.actions.push(RepairAction::DropHint { file: hint.clone(), reason });
        }
    }
    Ok(())
}

/// Carries out a native `plan` (see [`crate::repair::apply`]).
pub(crate) fn apply(store: &dyn SegmentStore, plan: &RepairPlan, stamp: u64) -> Result<RepairOutcome> {
    let mut backups = Backups::new(store, stamp);
    let mut done = Vec::new();
    // 1. Invalid `.swap` files go, their segments restored, before any swap is finished.
    for action in &plan.actions {
        let RepairAction::DiscardSwap { file, .. } = action else { continue };
        let Some((base, _)) = crate::format::native::names::parse_file_name(file) else { continue };
        let swap = store.open(file).map_err(Error::io("open", file))?;
        let marker = head(&swap, file, crate::removal::MARKER_BYTES + 1)?;
        backups.keep_file(file)?;
        // A valid marker set aside with its group restores every segment of its range.
        let end = crate::removal::decode(&marker, base).unwrap_or(base + 1).max(base + 1);
        let deleted_now = Layout::scan(store)?.deleted;
        for (&b, deleted) in deleted_now.range(base..end) {
            let log = file_name(b, FileKind::Log);
            if store.file_id(&log).is_err() {
                store.rename(deleted, &log).map_err(Error::io("rename", deleted))?;
                crate::open::sync_dir(store)?;
            }
        }
        delete_quietly(store, file)?;
        crate::open::sync_dir(store)?;
        done.push(action.clone());
    }
    // 2. A pending swap is finished as the next open would finish it (every `.swap` left is valid now).
    let layout = Layout::scan(store)?;
    let mut report = crate::log::RecoveryReport::default();
    crate::protocol::native::open::recover_swap(store, &layout, &crate::LogConfig::default(), &mut report)?;
    // 3. Damaged ranges are cut, one segment at a time, each replaced atomically.
    for action in &plan.actions {
        let RepairAction::CutRanges { segment, ranges, active, .. } = action else { continue };
        let Some((base, FileKind::Log)) = crate::format::native::names::parse_file_name(segment) else { continue };
        let file = store.open(segment).map_err(Error::io("open", segment))?;
        for &(start, end) in ranges {
            backups.keep_range(&format!("{segment}.{start}-{end}"), &file, start, end)?;
        }
        // No hint may describe the old segment once the new one stands under its name.
        delete_quietly(store, &file_name(base, FileKind::Index))?;
        crate::open::sync_dir(store)?;
        let temp = format!("repair-{stamp}.{segment}.new");
        let rewrite = Rewrite::new(Format::Native, base, segment, ranges, file.len(), &temp, plan.index_interval_bytes);
        let (size, _) = rewrite_without(store, &rewrite)?;
        if size == 0 && !active {
            delete_quietly(store, &temp)?;
            delete_quietly(store, segment)?;
        } else {
            store.rename(&temp, segment).map_err(Error::io("rename", &temp))?;
        }
        crate::open::sync_dir(store)?;
        done.push(action.clone());
    }
    // 4. Derived and side files.
    for action in &plan.actions {
        match action {
            RepairAction::ResetCheckpoint { .. } => {
                backups.keep_file(CHECKPOINT_FILE)?;
                delete_quietly(store, CHECKPOINT_FILE)?;
                crate::open::sync_dir(store)?;
            }
            RepairAction::DropHint { file, .. } => {
                delete_quietly(store, file)?;
                crate::open::sync_dir(store)?;
            }
            RepairAction::CutRanges { .. }
            | RepairAction::DiscardSwap { .. }
            | RepairAction::RebuildIndexes { .. }
            | RepairAction::RebuildTxnIndex { .. } => {
                continue;
            }
        }
        done.push(action.clone());
    }
    let mut outcome = backups.outcome;
    outcome.actions = done;
    Ok(outcome)
}

/// The base of the segment after `base` as the log stood before the swap (`.log` or `.deleted`).
fn next_old_base(layout: &Layout, base: u64) -> Option<u64> {
    let next = |m: &std::collections::BTreeMap<u64, String>| m.range(base + 1..).next().map(|(&b, _)| b);
    match (next(&layout.logs), next(&layout.deleted)) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
