//! Swapping cleaned segments in: Kafka's `.cleaned` → `.swap` → `.log` protocol, atomic for readers (one
//! pointer swap under the write lock) and for crashes (see [`crate::open`] for the recovery side). Grouped
//! replacements need nothing more: the tail of a group goes by a removal marker covering its range, swapped
//! in with the group's new segment at the same commit point.

use std::collections::HashMap;
use std::io;
use std::sync::Arc;

use crate::cleaning::Replacement;
use crate::error::{Error, ReplacementProblem, Result};
use crate::format::native::names::{FileKind, file_name, parse_file_name};
use crate::log::Log;
use crate::segment::SealedSegment;

fn bad(base: u64, problem: ReplacementProblem) -> Error {
    Error::BadReplacement { base, problem }
}

/// True when the outputs of `r` cover its group exactly ([`Replacement`]'s invariant): each output is
/// `<base>.log.cleaned` of one of the group's segments, markers where the group goes, and a segment where it
/// stays.
fn covers_exactly(format: crate::Format, r: &Replacement) -> bool {
    let bases: Vec<u64> = r.old.iter().map(|s| s.base()).collect();
    if format == crate::Format::Kafka {
        // One output named after the group's head, which it keeps even when empty; no markers.
        let named = |o: &SealedSegment| {
            o.name()
                == crate::format::kafka::files::name(
                    o.base(),
                    crate::format::kafka::files::SegmentFile::Log,
                    crate::format::kafka::files::Stage::Cleaned,
                )
        };
        return r.head.is_none()
            && r.tail.is_none()
            && r.new.as_ref().is_some_and(|n| Some(n.base()) == bases.first().copied() && named(n));
    }
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

impl Log {
    /// Removes `.cleaned` and `.swap` files that this commit does not own (left by a pass that failed and
    /// could not clean up), durably, so that recovery can never mistake them for part of this swap.
    fn remove_strays(&self, replacements: &[Replacement]) -> Result<()> {
        let store = &*self.store;
        let names = self.check(store.list().map_err(Error::io("list", crate::error::DIRECTORY)))?;
        let mut removed = false;
        for name in names {
            let stray = match parse_file_name(&name) {
                Some((_, FileKind::Swap)) => true,
                Some((_, FileKind::Cleaned)) => {
                    !replacements.iter().flat_map(|r| r.outputs()).any(|o| o.name() == name)
                }
                _ => false,
            };
            if stray {
                self.check(store.delete(&name).map_err(Error::io("delete", &name)))?;
                removed = true;
            }
        }
        if removed {
            self.check(store.sync_dir().map_err(Error::io("sync directory", crate::error::DIRECTORY)))?;
        }
        Ok(())
    }

    /// Checks, under the read lock and changing nothing, that `replacements` fit the log's current segments
    /// and `checkpoint` its active segment; returns the checkpoint now in force.
    pub(crate) fn validate_replacements(&self, replacements: &[Replacement], checkpoint: u64) -> Result<u64> {
        let inner = self.read_inner();
        self.writable()?;
        if checkpoint > inner.active.base {
            let active_base = inner.active.base;
            return Err(bad(checkpoint, ReplacementProblem::CheckpointBeyondActive { active_base }));
        }
        let mut bases: Vec<u64> = replacements.iter().flat_map(|r| r.old.iter().map(|s| s.base())).collect();
        bases.sort_unstable();
        if let Some(w) = bases.windows(2).find(|w| w[0] == w[1]) {
            return Err(bad(w[0], ReplacementProblem::ReplacedTwice));
        }
        for r in replacements {
            let Some(first) = r.old.first() else { return Err(bad(checkpoint, ReplacementProblem::Empty)) };
            let Some(at) = inner.closed.iter().position(|s| Arc::ptr_eq(s, first)) else {
                return Err(bad(first.base(), ReplacementProblem::NotCurrent));
            };
            for (k, old) in r.old.iter().enumerate() {
                if !inner.closed.get(at + k).is_some_and(|s| Arc::ptr_eq(s, old)) {
                    let problem = if inner.closed.iter().any(|s| Arc::ptr_eq(s, old)) {
                        ReplacementProblem::NotAdjacent
                    } else {
                        ReplacementProblem::NotCurrent
                    };
                    return Err(bad(old.base(), problem));
                }
            }
            if !covers_exactly(self.format, r) {
                return Err(bad(first.base(), ReplacementProblem::WrongOutput));
            }
        }
        Ok(inner.checkpoint)
    }

    /// Replaces groups of cleaned segments and then moves the cleaner checkpoint to `checkpoint`.
    ///
    /// Crash safety: stray `.cleaned`/`.swap` files of failed passes are removed (durably); every output
    /// `.cleaned` file is renamed to `.swap` and the old segments' hints deleted, and the directory synced
    /// (the commit point); then each old `.log` is renamed `.deleted` and each `.swap` holding a segment
    /// renamed into place; the directory is synced; the `.deleted` files and the `.swap` files holding removal
    /// markers (segments cleaned away, and the tails of groups) are removed and the directory synced again. A
    /// crash before the commit point leaves the old log, after it the new one (see [`Log::open`], which
    /// validates every `.swap` before it replaces anything). The checkpoint is written only after the swap,
    /// so a crash in between only makes the next pass redo work.
    ///
    /// Readers holding a [`crate::LogSnapshot`] keep reading the old segments; new snapshots see only the new.
    /// The write lock is taken only to publish the new segment list, not across the file work and its syncs,
    /// so appends and reads are not stalled by a commit; the caller's cleaning slot keeps other commits out.
    pub(crate) fn commit_replacements(&self, replacements: Vec<Replacement>, checkpoint: u64) -> Result<()> {
        let previous_checkpoint = self.validate_replacements(&replacements, checkpoint)?;
        let store = &*self.store;
        self.remove_strays(&replacements)?;
        for output in replacements.iter().flat_map(|r| r.outputs()) {
            let swap = file_name(output.base(), FileKind::Swap);
            self.check(store.rename(output.name(), &swap).map_err(Error::io("rename", &swap)))?;
        }
        // The old segments' index hints go first, durably, so that no hint can describe a segment's successor.
        for old in replacements.iter().flat_map(|r| &r.old) {
            let index = file_name(old.base(), FileKind::Index);
            match store.delete(&index) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return self.check(Err(Error::io("delete", &index)(e))),
            }
        }
        if !replacements.is_empty() {
            self.check(store.sync_dir().map_err(Error::io("sync directory", crate::error::DIRECTORY)))?;
        }
        // Committed: from here on a crash completes the swap.
        let mut replaced: HashMap<u64, Option<Arc<SealedSegment>>> = HashMap::new();
        let mut markers = Vec::new();
        for Replacement { old, head, new, tail } in replacements {
            for old in &old {
                let log = file_name(old.base(), FileKind::Log);
                let deleted = file_name(old.base(), FileKind::Deleted);
                self.check(store.rename(&log, &deleted).map_err(Error::io("rename", &log)))?;
                replaced.insert(old.base(), None);
            }
            // A removal marker's `.swap` stays until the renames are durable: it is what tells recovery to
            // finish removing the segments it covers.
            if let Some(new) = new {
                let base = new.base();
                let swap = file_name(base, FileKind::Swap);
                let log = file_name(base, FileKind::Log);
                self.check(store.rename(&swap, &log).map_err(Error::io("rename", &swap)))?;
                let segment = new.renamed(log);
                self.check(segment.write_hint(store))?;
                replaced.insert(base, Some(Arc::new(segment)));
            }
            for marker in head.iter().chain(tail.iter()) {
                markers.push(file_name(marker.base(), FileKind::Swap));
            }
        }
        if !replaced.is_empty() {
            self.check(store.sync_dir().map_err(Error::io("sync directory", crate::error::DIRECTORY)))?;
            let mut inner = self.write_inner()?;
            let closed: Vec<Arc<SealedSegment>> = inner
                .closed
                .iter()
                .filter_map(|s| match replaced.get(&s.base()) {
                    None => Some(Arc::clone(s)),
                    Some(new) => new.clone(),
                })
                .collect();
            inner.closed = Arc::new(closed);
            drop(inner);
            for &base in replaced.keys() {
                let deleted = file_name(base, FileKind::Deleted);
                self.check(store.delete(&deleted).map_err(Error::io("delete", &deleted)))?;
            }
            for swap in &markers {
                self.check(store.delete(swap).map_err(Error::io("delete", swap)))?;
            }
            self.check(store.sync_dir().map_err(Error::io("sync directory", crate::error::DIRECTORY)))?;
        }
        if checkpoint != previous_checkpoint {
            self.check(self.checkpoint_file.write(store, checkpoint))?;
            self.write_inner()?.checkpoint = checkpoint;
        }
        Ok(())
    }
}
