//! `repair`: the one way stored records are ever dropped because they look damaged, and only on request.
//!
//! [`plan`] reads the store (changing nothing) and lists what a repair would do: drop the damaged byte ranges
//! of segments while keeping every valid record around them, set aside a `.swap` that would replace a segment
//! with garbage (restoring the segment it replaced), set aside an unreadable checkpoint, delete hints that
//! disagree with their segments. [`apply`] does it, keeping a copy of every byte it cuts in a file named
//! `repair-<time>.<what>.bytes` in the store (such names are not part of the log and stay until removed by
//! hand).
//!
//! Order matters for crashes. Invalid `.swap` files are set aside first; then a pending swap is finished
//! (completed or rolled back) exactly as the next open would; only then are segments cut. Each segment is
//! replaced atomically: its repaired copy is written to `repair-<time>.<base>.log.new` (a name outside the
//! swap protocol, so a crash can never make recovery mistake it for a pass's output), synced, and renamed
//! over `<base>.log`. A crash leaves the old or the new segment, and at worst a leftover `.new` file. A torn
//! tail alone is left to the next open, which cuts it.

use std::sync::Arc;

use crate::codec;
use crate::error::{Error, Result};
use crate::layout::{Layout, PendingSwap, SwapContent, load_swap, marker_ranges};
use crate::names::{CHECKPOINT_FILE, FileKind, file_name};
use crate::storage::{Segment, SegmentStore};

/// One thing a repair does.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum RepairAction {
    /// Drop these byte ranges of a segment, keeping the valid records before, between and after them.
    CutRanges {
        /// The segment's file.
        segment: String,
        /// `[start, end)` byte ranges to drop.
        ranges: Vec<(u64, u64)>,
        /// Bytes dropped in all.
        bytes: u64,
        /// Valid records kept in the segment.
        records_kept: u64,
        /// True for the active (last) segment.
        active: bool,
    },
    /// Set aside a committed `.swap` that is not a valid segment or removal marker, and put back the segment it
    /// was to replace.
    DiscardSwap {
        /// The `.swap` file.
        file: String,
        /// Why it is not valid.
        reason: String,
        /// What happens to the segment of that base: kept, restored from `.deleted`, or lost.
        segment: String,
    },
    /// Set aside a checkpoint file that does not parse; cleaning then starts from the log's start.
    ResetCheckpoint {
        /// Why it does not parse.
        reason: String,
    },
    /// Delete an index hint that disagrees with its segment (the next open rebuilds it).
    DropHint {
        /// The hint.
        file: String,
        /// How it disagrees.
        reason: String,
    },
}

/// What a repair would do; empty when there is nothing to repair by hand.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RepairPlan {
    /// The actions, in the order [`apply`] takes them.
    pub actions: Vec<RepairAction>,
    /// Problems a repair cannot fix (names the log cannot use, segments whose offsets overlap), for a human.
    pub cannot_fix: Vec<String>,
}

/// All bytes of the file `name`.
fn read_all(file: &Arc<dyn Segment>, name: &str) -> Result<Vec<u8>> {
    let len =
        usize::try_from(file.len()).map_err(|_| Error::io("read", name)(std::io::ErrorKind::OutOfMemory.into()))?;
    let mut bytes = vec![0; len];
    file.read_at(0, &mut bytes).map_err(Error::io("read", name))?;
    Ok(bytes)
}

/// What a scan of one segment's bytes found.
struct Damage {
    /// `[start, end)` byte ranges that hold no valid frame continuing the segment.
    ranges: Vec<(u64, u64)>,
    /// Valid frames kept.
    frames: u64,
    /// Offset of the first valid frame.
    first: Option<u64>,
    /// Offset of the last valid frame.
    last: Option<u64>,
}

/// The damaged ranges of the bytes of a segment based at `base`: from each frame that fails to decode (or
/// whose offset does not continue the segment) to the next valid frame that does.
fn damaged_ranges(bytes: &[u8], base: u64) -> Damage {
    let mut ranges = Vec::new();
    let mut frames = 0;
    let mut first = None;
    let mut last: Option<u64> = None;
    let mut pos = 0usize;
    let read_at = |p: u64, out: &mut [u8]| {
        let start = usize::try_from(p).map_err(|_| std::io::ErrorKind::InvalidInput)?;
        let src = bytes.get(start..start + out.len()).ok_or(std::io::ErrorKind::UnexpectedEof)?;
        out.copy_from_slice(src);
        Ok(())
    };
    while pos < bytes.len() {
        let good = match codec::decode(&bytes[pos..]) {
            Ok((rec, len))
                if rec.offset >= base
                    && last.is_none_or(|l| rec.offset > l)
                    && rec.offset < crate::names::MAX_OFFSET =>
            {
                Some((rec.offset, len))
            }
            _ => None,
        };
        match good {
            Some((offset, len)) => {
                frames += 1;
                first.get_or_insert(offset);
                last = Some(offset);
                pos += len;
            }
            None => {
                let floor = last.or(base.checked_sub(1));
                let resume = tail_search(&read_at, pos as u64 + 1, bytes.len() as u64, floor);
                let end = resume.map_or(bytes.len(), |r| r as usize);
                ranges.push((pos as u64, end as u64));
                pos = end;
            }
        }
    }
    Damage { ranges, frames, first, last }
}

fn tail_search(
    read_at: &dyn Fn(u64, &mut [u8]) -> std::io::Result<()>,
    from: u64,
    end: u64,
    floor: Option<u64>,
) -> Option<u64> {
    match crate::tail::next_valid_batch(crate::Format::Native, read_at, from, end, floor) {
        Ok(crate::tail::Found::At(at)) => Some(at),
        _ => None,
    }
}

/// Lists what a repair of the log in `store` would do. Reads only.
///
/// # Errors
/// [`Error::Io`] when the store cannot be read.
pub fn plan(store: &dyn SegmentStore) -> Result<RepairPlan> {
    let layout = Layout::scan(store)?;
    let mut plan = RepairPlan::default();
    for (name, reason) in &layout.unusable {
        plan.cannot_fix.push(format!("{name}: {reason}; move it out of the directory by hand"));
    }
    let mut segments = layout.logs.clone();
    if layout.pending_swap() == PendingSwap::Complete {
        let markers = marker_ranges(store, &layout);
        let interval = crate::DEFAULT_INDEX_INTERVAL_BYTES;
        let mut loaded: Vec<(u64, &String, Result<SwapContent>)> =
            layout.swaps.iter().map(|(&b, n)| (b, n, load_swap(store, &layout, &markers, b, n, interval))).collect();
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
        let bytes = read_all(&file, name)?;
        let Damage { ranges, frames, first, last } = damaged_ranges(&bytes, base);
        if let (Some(first), Some(f)) = (first, floor)
            && first <= f
        {
            plan.cannot_fix.push(format!("{name}: its offsets overlap the segment before it"));
        }
        floor = last.or(floor);
        let active = Some(base) == active_base;
        // A torn tail alone is the next open's to cut.
        let torn_only = active && ranges.len() == 1 && ranges[0].1 == bytes.len() as u64;
        if ranges.is_empty() || torn_only {
            continue;
        }
        let bytes_cut = ranges.iter().map(|(s, e)| e - s).sum();
        plan.actions.push(RepairAction::CutRanges {
            // The segment as it stands once a pending swap is finished.
            segment: file_name(base, FileKind::Log),
            ranges,
            bytes: bytes_cut,
            records_kept: frames,
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
        if let Err(reason) = crate::check::verify_hint(store, hint, &segment) {
            plan.actions.push(RepairAction::DropHint { file: hint.clone(), reason });
        }
    }
    Ok(())
}

/// What [`apply`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RepairOutcome {
    /// The actions taken.
    pub actions: Vec<RepairAction>,
    /// Files written with copies of what was cut or set aside.
    pub backups: Vec<String>,
}

/// Carries out `plan` on `store` (which must not be open as a log, and must hold no other writer: the
/// caller holds the store's lock), keeping copies of what it cuts under names starting with `repair-<stamp>.`.
///
/// # Errors
/// [`Error::Io`]; the store is then partly repaired, every segment either old or new (running the repair
/// again continues it).
pub fn apply(store: &dyn SegmentStore, plan: &RepairPlan, stamp: u64) -> Result<RepairOutcome> {
    let mut outcome = RepairOutcome::default();
    let sync_dir = || store.sync_dir().map_err(Error::io("sync directory", "<store>"));
    // A copy is durable (data and name) before anything it holds is removed.
    let backup = |outcome: &mut RepairOutcome, what: &str, bytes: &[u8]| -> Result<()> {
        // The suffix keeps a copy of `x.log.swap` from ending in one of the log's own suffixes.
        let name = format!("repair-{stamp}.{what}.bytes");
        let file = store.create(&name).map_err(Error::io("create", &name))?;
        file.append(bytes).map_err(Error::io("append", &name))?;
        file.sync().map_err(Error::io("sync", &name))?;
        store.sync_dir().map_err(Error::io("sync directory", &name))?;
        outcome.backups.push(name);
        Ok(())
    };
    // 1. Invalid `.swap` files go, their segments restored, before any swap is finished.
    for action in &plan.actions {
        let RepairAction::DiscardSwap { file, .. } = action else { continue };
        let Some((base, _)) = crate::names::parse_file_name(file) else { continue };
        let swap = store.open(file).map_err(Error::io("open", file))?;
        let bytes = read_all(&swap, file)?;
        backup(&mut outcome, file, &bytes)?;
        // A valid marker set aside with its group restores every segment of its range.
        let end = crate::removal::decode(&bytes, base).unwrap_or(base + 1).max(base + 1);
        let deleted_now = Layout::scan(store)?.deleted;
        for (&b, deleted) in deleted_now.range(base..end) {
            let log = file_name(b, FileKind::Log);
            if store.file_id(&log).is_err() {
                store.rename(deleted, &log).map_err(Error::io("rename", deleted))?;
                sync_dir()?;
            }
        }
        delete_quietly(store, file)?;
        sync_dir()?;
        outcome.actions.push(action.clone());
    }
    // 2. A pending swap is finished as the next open would finish it (every `.swap` left is valid now).
    let layout = Layout::scan(store)?;
    let mut report = crate::log::RecoveryReport::default();
    crate::open::recover_swap(store, &layout, &crate::LogConfig::default(), &mut report)?;
    // 3. Damaged ranges are cut, one segment at a time, each replaced atomically.
    for action in &plan.actions {
        let RepairAction::CutRanges { segment, ranges, active, .. } = action else { continue };
        let Some((base, FileKind::Log)) = crate::names::parse_file_name(segment) else { continue };
        let file = store.open(segment).map_err(Error::io("open", segment))?;
        let bytes = read_all(&file, segment)?;
        for &(start, end) in ranges {
            let cut = bytes.get(start as usize..end as usize).unwrap_or_default();
            backup(&mut outcome, &format!("{segment}.{start}-{end}"), cut)?;
        }
        let mut kept = Vec::with_capacity(bytes.len());
        let mut at = 0u64;
        for &(start, end) in ranges {
            kept.extend_from_slice(bytes.get(at as usize..start as usize).unwrap_or_default());
            at = end;
        }
        kept.extend_from_slice(bytes.get(at as usize..).unwrap_or_default());
        // No hint may describe the old segment once the new one stands under its name.
        delete_quietly(store, &file_name(base, FileKind::Index))?;
        sync_dir()?;
        if kept.is_empty() && !active {
            delete_quietly(store, segment)?;
        } else {
            let temp = format!("repair-{stamp}.{segment}.new");
            delete_quietly(store, &temp)?;
            let out = store.create(&temp).map_err(Error::io("create", &temp))?;
            out.append(&kept).map_err(Error::io("append", &temp))?;
            out.sync().map_err(Error::io("sync", &temp))?;
            store.rename(&temp, segment).map_err(Error::io("rename", &temp))?;
        }
        sync_dir()?;
        outcome.actions.push(action.clone());
    }
    // 4. Derived and side files.
    for action in &plan.actions {
        match action {
            RepairAction::ResetCheckpoint { .. } => {
                let file = store.open(CHECKPOINT_FILE).map_err(Error::io("open", CHECKPOINT_FILE))?;
                backup(&mut outcome, CHECKPOINT_FILE, &read_all(&file, CHECKPOINT_FILE)?)?;
                delete_quietly(store, CHECKPOINT_FILE)?;
                sync_dir()?;
            }
            RepairAction::DropHint { file, .. } => {
                delete_quietly(store, file)?;
                sync_dir()?;
            }
            RepairAction::CutRanges { .. } | RepairAction::DiscardSwap { .. } => continue,
        }
        outcome.actions.push(action.clone());
    }
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

fn delete_quietly(store: &dyn SegmentStore, name: &str) -> Result<()> {
    match store.delete(name) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io("delete", name)(e)),
        _ => Ok(()),
    }
}
