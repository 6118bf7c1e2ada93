//! Swapping cleaned segments in: Kafka's `.cleaned` → `.swap` → `.log` protocol, atomic for readers (one
//! pointer swap under the write lock) and for crashes (see [`crate::open`] for the recovery side).

use std::io;
use std::sync::Arc;

use crate::checkpoint;
use crate::error::{Error, Result};
use crate::log::Log;
use crate::names::{FileKind, file_name, parse_file_name};
use crate::segment::{SealedSegment, SegmentWriter};

/// The cleaned copy of one closed segment.
#[derive(Debug)]
pub struct Replacement {
    /// The segment that was cleaned, as read from a snapshot.
    pub old: Arc<SealedSegment>,
    /// Its cleaned copy, written to `<base>.log.cleaned`, sealed and synced. A removal marker
    /// ([`SealedSegment::is_removal`]) when nothing survived: the segment then disappears.
    pub new: SealedSegment,
}

/// Held by a cleaning pass from its snapshot to its commit: one pass at a time per log. Creating and
/// committing cleaned segments require it.
#[derive(Debug)]
pub struct CleaningGuard<'a> {
    _exclusive: std::sync::MutexGuard<'a, ()>,
    log: &'a Log,
}

impl CleaningGuard<'_> {
    fn check_for(&self, log: &Log) -> Result<()> {
        if std::ptr::eq(self.log, log) {
            Ok(())
        } else {
            Err(Error::BadReplacement("the cleaning guard belongs to another log".into()))
        }
    }
}

impl Log {
    /// Waits until no other pass is cleaning this log and reserves it for the caller's pass.
    pub fn begin_cleaning(&self) -> CleaningGuard<'_> {
        CleaningGuard { _exclusive: self.cleaning.lock().unwrap_or_else(std::sync::PoisonError::into_inner), log: self }
    }

    /// Removes `.cleaned` and `.swap` files that this commit does not own (left by a pass that failed and
    /// could not clean up), durably, so that recovery can never mistake them for part of this swap.
    fn remove_strays(&self, replacements: &[Replacement]) -> Result<()> {
        let store = &*self.store;
        let names = self.check(store.list().map_err(Error::io("list", "<store>")))?;
        let mut removed = false;
        for name in names {
            let stray = match parse_file_name(&name) {
                Some((_, FileKind::Swap)) => true,
                Some((_, FileKind::Cleaned)) => !replacements.iter().any(|r| r.new.name() == name),
                _ => false,
            };
            if stray {
                self.check(store.delete(&name).map_err(Error::io("delete", &name)))?;
                removed = true;
            }
        }
        if removed {
            self.check(store.sync_dir().map_err(Error::io("sync directory", "<store>")))?;
        }
        Ok(())
    }

    /// Starts the cleaned copy of the segment based at `base`: an empty `<base>.log.cleaned` file (a stale one
    /// from an abandoned pass is replaced).
    ///
    /// # Errors
    /// [`Error::Poisoned`]; [`Error::ReadOnly`]; [`Error::Io`] (which poisons the log, as every failed change
    /// of storage does).
    pub fn create_cleaned(&self, guard: &CleaningGuard<'_>, base: u64) -> Result<SegmentWriter> {
        guard.check_for(self)?;
        self.writable()?;
        let name = file_name(base, FileKind::Cleaned);
        let file = self.check(
            match self.store.delete(&name) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(Error::io("delete", &name)(e)),
                _ => Ok(()),
            }
            .and_then(|()| self.store.create(&name).map_err(Error::io("create", &name))),
        )?;
        Ok(SegmentWriter::new(base, name, file, self.config.index_interval_bytes))
    }

    /// Finishes a cleaned copy started with [`Log::create_cleaned`]: flushes, seals and syncs it. A failed
    /// sync poisons the log like any other (an fsync is never retried).
    ///
    /// # Errors
    /// [`Error::Io`] (which poisons the log).
    pub fn finish_cleaned(&self, writer: SegmentWriter) -> Result<SealedSegment> {
        self.check(writer.finish())
    }

    /// Replaces cleaned segments and then moves the cleaner checkpoint to `checkpoint`.
    ///
    /// Crash safety: stray `.cleaned`/`.swap` files of failed passes are removed (durably); every `.cleaned`
    /// file is renamed to `.swap` and the directory synced (the commit point); then each old `.log` is renamed
    /// `.deleted` and each `.swap` holding a segment renamed into place; the directory is synced; the
    /// `.deleted` files and the `.swap` files holding removal markers (segments cleaned away) are removed and
    /// the directory synced again. A crash before the commit point leaves the old log, after it the new one
    /// (see [`Log::open`], which validates every `.swap` before it replaces anything). The checkpoint is written
    /// only after the swap, so a crash in between only makes the next pass redo work.
    ///
    /// Readers holding a [`crate::LogSnapshot`] keep reading the old segments; new snapshots see only the new.
    /// The write lock is taken only to publish the new segment list, not across the file work and its syncs,
    /// so appends and reads are not stalled by a commit.
    ///
    /// # Errors
    /// [`Error::BadReplacement`] when a replacement does not match the log's current segments (nothing is
    /// changed then); [`Error::Poisoned`]; [`Error::Io`] (which poisons the log).
    pub fn commit_cleaning(
        &self,
        cleaning: &CleaningGuard<'_>,
        replacements: Vec<Replacement>,
        checkpoint: u64,
    ) -> Result<()> {
        cleaning.check_for(self)?;
        // Validate under the read lock, then do the file work without holding any lock (appends, rolls and
        // reads go on: they touch neither these files nor the closed list), and take the write lock only to
        // publish the new list. The cleaning guard keeps any other commit out meanwhile.
        let previous_checkpoint = {
            let inner = self.read_inner();
            self.writable()?;
            if checkpoint > inner.active.base {
                return Err(Error::BadReplacement(format!(
                    "checkpoint {checkpoint} is beyond the active segment's base {}",
                    inner.active.base
                )));
            }
            let mut bases: Vec<u64> = replacements.iter().map(|r| r.old.base()).collect();
            bases.sort_unstable();
            if let Some(w) = bases.windows(2).find(|w| w[0] == w[1]) {
                return Err(Error::BadReplacement(format!("segment {} is replaced twice", w[0])));
            }
            for r in &replacements {
                let base = r.old.base();
                let current = inner.closed.iter().find(|s| s.base() == base);
                if !current.is_some_and(|s| Arc::ptr_eq(s, &r.old)) {
                    return Err(Error::BadReplacement(format!("segment {base} is not a current closed segment")));
                }
                if r.new.base() != base || r.new.name() != file_name(base, FileKind::Cleaned) {
                    return Err(Error::BadReplacement(format!("{} does not replace segment {base}", r.new.name())));
                }
            }
            inner.checkpoint
        };
        let store = &*self.store;
        self.remove_strays(&replacements)?;
        for r in &replacements {
            let base = r.old.base();
            let swap = file_name(base, FileKind::Swap);
            self.check(store.rename(r.new.name(), &swap).map_err(Error::io("rename", &swap)))?;
        }
        // The old segments' index hints go first, durably, so that no hint can describe a segment's successor.
        for r in &replacements {
            let index = file_name(r.old.base(), FileKind::Index);
            match store.delete(&index) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return self.check(Err(Error::io("delete", &index)(e))),
            }
        }
        if !replacements.is_empty() {
            self.check(store.sync_dir().map_err(Error::io("sync directory", "<store>")))?;
        }
        // Committed: from here on a crash completes the swap.
        let mut replaced = std::collections::HashMap::with_capacity(replacements.len());
        for r in replacements {
            let base = r.old.base();
            let log = file_name(base, FileKind::Log);
            let swap = file_name(base, FileKind::Swap);
            let deleted = file_name(base, FileKind::Deleted);
            self.check(store.rename(&log, &deleted).map_err(Error::io("rename", &log)))?;
            // A removal marker's `.swap` (the segment is gone) stays until the renames are durable: it is what
            // tells recovery to finish removing the segment.
            let new = if r.new.is_removal() {
                None
            } else {
                self.check(store.rename(&swap, &log).map_err(Error::io("rename", &swap)))?;
                let segment = r.new.renamed(log);
                self.check(segment.write_hint(store))?;
                Some(Arc::new(segment))
            };
            replaced.insert(base, new);
        }
        if !replaced.is_empty() {
            self.check(store.sync_dir().map_err(Error::io("sync directory", "<store>")))?;
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
            for (&base, new) in &replaced {
                let deleted = file_name(base, FileKind::Deleted);
                self.check(store.delete(&deleted).map_err(Error::io("delete", &deleted)))?;
                if new.is_none() {
                    let swap = file_name(base, FileKind::Swap);
                    self.check(store.delete(&swap).map_err(Error::io("delete", &swap)))?;
                }
            }
            self.check(store.sync_dir().map_err(Error::io("sync directory", "<store>")))?;
        }
        if checkpoint != previous_checkpoint {
            self.check(checkpoint::write(store, checkpoint))?;
            self.write_inner()?.checkpoint = checkpoint;
        }
        Ok(())
    }
}
