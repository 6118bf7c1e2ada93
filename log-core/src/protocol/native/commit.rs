//! Swapping cleaned segments in: Kafka's `.cleaned` → `.swap` → `.log` protocol, atomic for readers (one
//! pointer swap under the write lock) and for crashes (see [`crate::open`] for the recovery side). Grouped
//! replacements need nothing more: the tail of a group goes by a removal marker covering its range, swapped
//! in with the group's new segment at the same commit point.

use std::collections::HashMap;
use std::sync::Arc;

use crate::cleaning::Replacement;
use crate::error::Result;
use crate::format::native::names::{FileKind, file_name, parse_file_name};
use crate::segment::SealedSegment;
use crate::swap::SwapSteps;

/// True when the outputs of `r` cover its group exactly ([`Replacement`]'s invariant): each output is
/// `<base>.log.cleaned` of one of the group's segments, markers where the group goes, and a segment where it
/// stays.
pub(crate) fn covers_exactly(r: &Replacement) -> bool {
    let bases: Vec<u64> = r.old.iter().map(|s| s.base()).collect();
    let named = |o: &SealedSegment| o.name() == file_name(o.base(), FileKind::Cleaned);
    let at = |o: &SealedSegment| bases.iter().position(|&b| b == o.base());
    match (&r.head, &r.new, &r.tail) {
        (Some(h), None, None) => at(h) == Some(0) && h.is_removal() && named(h),
        (head, Some(n), tail) => {
            let Some(k) = at(n) else { return false };
            let head_ok = match head {
                Some(h) => k > 0 && at(h) == Some(0) && h.is_removal() && named(h),
                None => k == 0,
            };
            let tail_ok = match tail {
                Some(t) => at(t) == Some(k + 1) && t.is_removal() && named(t),
                None => k + 1 == bases.len(),
            };
            head_ok && tail_ok && !n.is_removal() && named(n)
        }
        _ => false,
    }
}

/// Replaces groups of cleaned segments by this format's protocol, for the commit's skeleton
/// ([`crate::Log::commit_swap`], which checked the replacements and moves the checkpoint after).
///
/// Crash safety: stray `.cleaned`/`.swap` files of failed passes are removed (durably); every output
/// `.cleaned` file is renamed to `.swap` and the old segments' hints deleted, and the directory synced
/// (the commit point); then each old `.log` is renamed `.deleted` and each `.swap` holding a segment
/// renamed into place; the directory is synced; the `.deleted` files and the `.swap` files holding removal
/// markers (segments cleaned away, and the tails of groups) are removed and the directory synced again. A
/// crash before the commit point leaves the old log, after it the new one (see [`crate::Log::open`], which
/// validates every `.swap` before it replaces anything).
///
/// Readers holding a [`crate::LogSnapshot`] keep reading the old segments; new snapshots see only the new.
/// The write lock is taken only to publish the new segment list, not across the file work and its syncs,
/// so appends and reads are not stalled by a commit; the caller's cleaning slot keeps other commits out.
pub(crate) fn swap(steps: &SwapSteps<'_>, replacements: Vec<Replacement>) -> Result<()> {
    steps.remove_strays(|name| match parse_file_name(name) {
        Some((_, FileKind::Swap)) => true,
        Some((_, FileKind::Cleaned)) => !replacements.iter().flat_map(|r| r.outputs()).any(|o| o.name() == name),
        _ => false,
    })?;
    for output in replacements.iter().flat_map(|r| r.outputs()) {
        steps.rename(output.name(), &file_name(output.base(), FileKind::Swap))?;
    }
    // The old segments' index hints go first, durably, so that no hint can describe a segment's successor.
    for old in replacements.iter().flat_map(|r| &r.old) {
        steps.delete_if_exists(&file_name(old.base(), FileKind::Index))?;
    }
    if !replacements.is_empty() {
        steps.sync_dir()?;
    }
    // Committed: from here on a crash completes the swap.
    let mut replaced: HashMap<u64, Option<Arc<SealedSegment>>> = HashMap::new();
    let mut markers = Vec::new();
    for Replacement { old, head, new, tail } in replacements {
        for old in &old {
            steps.rename(&file_name(old.base(), FileKind::Log), &file_name(old.base(), FileKind::Deleted))?;
            replaced.insert(old.base(), None);
        }
        // A removal marker's `.swap` stays until the renames are durable: it is what tells recovery to
        // finish removing the segments it covers.
        if let Some(new) = new {
            let base = new.base();
            let log = file_name(base, FileKind::Log);
            steps.rename(&file_name(base, FileKind::Swap), &log)?;
            let segment = new.renamed(log);
            steps.write_hint(&segment)?;
            replaced.insert(base, Some(Arc::new(segment)));
        }
        for marker in head.iter().chain(tail.iter()) {
            markers.push(file_name(marker.base(), FileKind::Swap));
        }
    }
    if !replaced.is_empty() {
        steps.sync_dir()?;
        steps.publish(|closed| {
            closed
                .iter()
                .filter_map(|s| match replaced.get(&s.base()) {
                    None => Some(Arc::clone(s)),
                    Some(new) => new.clone(),
                })
                .collect()
        })?;
        for &base in replaced.keys() {
            steps.delete(&file_name(base, FileKind::Deleted))?;
        }
        for swap in &markers {
            steps.delete(swap)?;
        }
        steps.sync_dir()?;
    }
    Ok(())
}
