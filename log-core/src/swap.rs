//! The cleaning commit's skeleton, one for every format: the replacements are checked against the log under
//! its read lock (changing nothing when they do not fit), the format's swap protocol runs through
//! [`SwapSteps`] (file work whose failure poisons the log, and the publication of the new segment list), then
//! the checkpoint moves. A format's protocol never touches `Log` itself: the steps are all it is given.

use std::io;
use std::sync::Arc;

use crate::cleaning::Replacement;
use crate::error::{DIRECTORY, Error, ReplacementProblem, Result};
use crate::log::Log;
use crate::segment::SealedSegment;
use crate::storage::SegmentStore;

fn bad(base: u64, problem: ReplacementProblem) -> Error {
    Error::BadReplacement { base, problem }
}

impl Log {
    /// Swaps `replacements` in by the format's protocol and then moves the cleaner checkpoint to `checkpoint`;
    /// `owned` are the names of the files the pass created. The checkpoint is written only after the swap, so a
    /// crash in between only makes the next pass redo work.
    ///
    /// # Errors
    /// [`Error::BadReplacement`] when a replacement does not fit the log (nothing is changed then);
    /// [`Error::Poisoned`]; [`Error::Io`] (which poisons the log).
    pub(crate) fn commit_swap(&self, replacements: Vec<Replacement>, checkpoint: u64, owned: &[String]) -> Result<()> {
        let previous_checkpoint = self.validate_replacements(&replacements, checkpoint)?;
        self.format.swap(&SwapSteps { log: self }, replacements, owned)?;
        if checkpoint != previous_checkpoint {
            self.check(self.checkpoint_file.write(&*self.store, checkpoint))?;
            self.write_inner()?.checkpoint = checkpoint;
        }
        Ok(())
    }

    /// Checks, under the read lock and changing nothing, that `replacements` fit the log's current segments
    /// (each group adjacent closed segments, each segment replaced once, its outputs covering the group as the
    /// format names them) and `checkpoint` its active segment; returns the checkpoint now in force.
    fn validate_replacements(&self, replacements: &[Replacement], checkpoint: u64) -> Result<u64> {
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
            if !self.format.covers_exactly(r) {
                return Err(bad(first.base(), ReplacementProblem::WrongOutput));
            }
        }
        Ok(inner.checkpoint)
    }
}

/// What a format's swap protocol may do to the log it commits into: file work in the log's store, each step's
/// failure poisoning the log (its files and its segment list may disagree until it is opened again), and the
/// publication of the new segment list under the write lock.
pub(crate) struct SwapSteps<'a> {
    log: &'a Log,
}

impl SwapSteps<'_> {
    fn step<T>(&self, r: io::Result<T>, what: &'static str, name: &str) -> Result<T> {
        self.log.check(r.map_err(Error::io(what, name)))
    }

    /// Renames `from` to `to`; an error names `from`.
    pub(crate) fn rename(&self, from: &str, to: &str) -> Result<()> {
        self.step(self.log.store.rename(from, to), "rename", from)
    }

    /// Removes `name`.
    pub(crate) fn delete(&self, name: &str) -> Result<()> {
        self.step(self.log.store.delete(name), "delete", name)
    }

    /// Removes `name` if it is there.
    pub(crate) fn delete_if_exists(&self, name: &str) -> Result<()> {
        match self.log.store.delete(name) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            r => self.step(r, "delete", name),
        }
    }

    /// Whether `name` is there.
    pub(crate) fn exists(&self, name: &str) -> Result<bool> {
        match self.log.store.file_id(name) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => self.step(Err(e), "stat", name),
        }
    }

    /// Makes the renames and removals so far durable.
    pub(crate) fn sync_dir(&self) -> Result<()> {
        self.step(self.log.store.sync_dir(), "sync directory", DIRECTORY)
    }

    /// Removes, durably, the files `is_stray` names among the store's (left by a pass that failed and could not
    /// clean up), so that recovery can never mistake them for part of this swap.
    pub(crate) fn remove_strays(&self, is_stray: impl Fn(&str) -> bool) -> Result<()> {
        let store: &dyn SegmentStore = &*self.log.store;
        let names = self.step(store.list(), "list", DIRECTORY)?;
        let mut removed = false;
        for name in names.iter().filter(|n| is_stray(n)) {
            self.delete(name)?;
            removed = true;
        }
        if removed {
            self.sync_dir()?;
        }
        Ok(())
    }

    /// Publishes the segment list `replace` makes of the current closed segments, at once for readers: new
    /// snapshots see only it, and readers holding an older snapshot keep reading the segments it holds.
    ///
    /// # Errors
    /// [`Error::Poisoned`] when an earlier step failed.
    pub(crate) fn publish(&self, replace: impl FnOnce(&[Arc<SealedSegment>]) -> Vec<Arc<SealedSegment>>) -> Result<()> {
        let mut inner = self.log.write_inner()?;
        let closed = replace(&inner.closed);
        inner.closed = Arc::new(closed);
        Ok(())
    }

    /// Writes `segment`'s hint, where its format keeps one.
    pub(crate) fn write_hint(&self, segment: &SealedSegment) -> Result<()> {
        self.log.check(segment.write_hint(&*self.log.store))
    }
}
