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

use std::io;
use std::sync::Arc;

use crate::cleaning::Replacement;
use crate::error::{Error, Result};
use crate::format::kafka::files::{KafkaName, SegmentFile, Stage, classify, name};
use crate::log::Log;
use crate::segment::SealedSegment;

impl Log {
    /// Removes `.cleaned` and `.swap` files this commit does not own (left by a pass that failed and could not
    /// clean up), durably, so that recovery can never mistake them for part of this swap.
    fn remove_kafka_strays(&self, owned: &[String]) -> Result<()> {
        let store = &*self.store;
        let names = self.check(store.list().map_err(Error::io("list", crate::error::DIRECTORY)))?;
        let mut removed = false;
        for n in names {
            let stray = matches!(classify(&n), KafkaName::Segment { stage: Stage::Cleaned | Stage::Swap, .. })
                && !owned.contains(&n);
            if stray {
                self.check(store.delete(&n).map_err(Error::io("delete", &n)))?;
                removed = true;
            }
        }
        if removed {
            self.check(store.sync_dir().map_err(Error::io("sync directory", crate::error::DIRECTORY)))?;
        }
        Ok(())
    }

    /// Commits `replacements` one group at a time (see the module docs), then moves the checkpoint.
    pub(crate) fn commit_kafka(&self, replacements: Vec<Replacement>, checkpoint: u64, owned: &[String]) -> Result<()> {
        let previous_checkpoint = self.validate_replacements(&replacements, checkpoint)?;
        self.remove_kafka_strays(owned)?;
        let store = &*self.store;
        let exists = |n: &str| match store.file_id(n) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::io("stat", n)(e)),
        };
        let sync = || self.check(store.sync_dir().map_err(Error::io("sync directory", crate::error::DIRECTORY)));
        for Replacement { old, new, .. } in replacements {
            let Some(new) = new else { continue };
            let base = new.base();
            // 1. `.cleaned` → `.swap`: the commit point of this group.
            let mut outputs = Vec::new();
            for file in crate::format::kafka::files::FILES {
                let cleaned = name(base, file, Stage::Cleaned);
                if owned.contains(&cleaned) && self.check(exists(&cleaned))? {
                    let swap = name(base, file, Stage::Swap);
                    self.check(store.rename(&cleaned, &swap).map_err(Error::io("rename", &cleaned)))?;
                    outputs.push(file);
                }
            }
            sync()?;
            // 2. The old segments' files → `.deleted`.
            let mut deleted = Vec::new();
            for segment in &old {
                for file in crate::format::kafka::files::FILES {
                    let live = name(segment.base(), file, Stage::Live);
                    if self.check(exists(&live))? {
                        let gone = name(segment.base(), file, Stage::Deleted);
                        self.check(store.rename(&live, &gone).map_err(Error::io("rename", &live)))?;
                        deleted.push(gone);
                    }
                }
            }
            // 3. `.swap` → in place.
            for file in outputs {
                let swap = name(base, file, Stage::Swap);
                let live = name(base, file, Stage::Live);
                self.check(store.rename(&swap, &live).map_err(Error::io("rename", &swap)))?;
            }
            sync()?;
            let segment: Arc<SealedSegment> = Arc::new(new.renamed(name(base, SegmentFile::Log, Stage::Live)));
            {
                let mut inner = self.write_inner()?;
                let first = old.first().map(|s| s.base());
                let mut closed = Vec::with_capacity(inner.closed.len());
                for s in inner.closed.iter() {
                    if Some(s.base()) == first {
                        closed.push(Arc::clone(&segment));
                    } else if !old.iter().any(|o| Arc::ptr_eq(o, s)) {
                        closed.push(Arc::clone(s));
                    }
                }
                inner.closed = Arc::new(closed);
            }
            // 4. The replaced files go.
            for gone in &deleted {
                self.check(store.delete(gone).map_err(Error::io("delete", gone)))?;
            }
            if !deleted.is_empty() {
                sync()?;
            }
        }
        if checkpoint != previous_checkpoint {
            self.check(self.checkpoint_file.write(store, checkpoint))?;
            self.write_inner()?.checkpoint = checkpoint;
        }
        Ok(())
    }
}
