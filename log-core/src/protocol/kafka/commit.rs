//! Swapping cleaned segments into a Kafka partition with a broker's own file protocol (`LocalLog.replaceSegments`),
//! one group at a time, as Kafka's cleaner does, so that a broker started after a crash of ours finishes or
//! undoes each group exactly as it would its own (and so does our own open, [`super::recovery`]):
//!
//! 1. the group's output files are renamed from `.cleaned` to `.swap` (the log first, then its indexes), and
//!    the directory synced: from here the group is committed;
//! 2. every file of the old segments is renamed `.deleted`;
//! 3. the `.swap` files are renamed into place, the directory synced, the new segment list published;
//! 4. the `.deleted` files are removed and the directory synced.
//!
//! A crash before step 1 ends leaves a `.cleaned` file, and recovery removes the group's output; after it,
//! recovery completes the swap. Groups are committed in base order, so after a crash the groups below some
//! base are cleaned and the rest are not: a tombstone a group dropped never leaves an older record of its key
//! behind in a group below it. The checkpoint moves once every group is in.

use std::sync::Arc;

use crate::cleaning::Replacement;
use crate::error::Result;
use crate::format::kafka::files::{FILES, KafkaName, SegmentFile, Stage, classify, name};
use crate::segment::SealedSegment;
use crate::swap::SwapSteps;

/// True when the outputs of `r` cover its group as Kafka's cleaner writes them: one output named after the
/// group's head, which it keeps even when empty; no markers.
pub(crate) fn covers_exactly(r: &Replacement) -> bool {
    let head = r.old.first().map(|s| s.base());
    r.head.is_none()
        && r.tail.is_none()
        && r.new
            .as_ref()
            .is_some_and(|n| Some(n.base()) == head && n.name() == name(n.base(), SegmentFile::Log, Stage::Cleaned))
}

/// Commits `replacements` one group at a time (see the module docs), for the commit's skeleton
/// ([`crate::Log::commit_swap`], which checked them and moves the checkpoint after); `owned` are the files the
/// pass created. Stray `.cleaned` and `.swap` files it does not own are removed first, durably.
pub(crate) fn swap(steps: &SwapSteps<'_>, replacements: Vec<Replacement>, owned: &[String]) -> Result<()> {
    steps.remove_strays(|n| {
        matches!(classify(n), KafkaName::Segment { stage: Stage::Cleaned | Stage::Swap, .. })
            && !owned.iter().any(|o| o == n)
    })?;
    for Replacement { old, new, .. } in replacements {
        let Some(new) = new else { continue };
        let base = new.base();
        // 1. `.cleaned` → `.swap`: the commit point of this group.
        let mut outputs = Vec::new();
        for file in FILES {
            let cleaned = name(base, file, Stage::Cleaned);
            if owned.contains(&cleaned) && steps.exists(&cleaned)? {
                steps.rename(&cleaned, &name(base, file, Stage::Swap))?;
                outputs.push(file);
            }
        }
        steps.sync_dir()?;
        // 2. The old segments' files → `.deleted`.
        let mut deleted = Vec::new();
        for segment in &old {
            for file in FILES {
                let live = name(segment.base(), file, Stage::Live);
                if steps.exists(&live)? {
                    let gone = name(segment.base(), file, Stage::Deleted);
                    steps.rename(&live, &gone)?;
                    deleted.push(gone);
                }
            }
        }
        // 3. `.swap` → in place.
        for file in outputs {
            steps.rename(&name(base, file, Stage::Swap), &name(base, file, Stage::Live))?;
        }
        steps.sync_dir()?;
        let segment: Arc<SealedSegment> = Arc::new(new.renamed(name(base, SegmentFile::Log, Stage::Live)));
        let first = old.first().map(|s| s.base());
        steps.publish(|closed| {
            let mut now = Vec::with_capacity(closed.len());
            for s in closed {
                if Some(s.base()) == first {
                    now.push(Arc::clone(&segment));
                } else if !old.iter().any(|o| Arc::ptr_eq(o, s)) {
                    now.push(Arc::clone(s));
                }
            }
            now
        })?;
        // 4. The replaced files go.
        for gone in &deleted {
            steps.delete(gone)?;
        }
        if !deleted.is_empty() {
            steps.sync_dir()?;
        }
    }
    Ok(())
}
