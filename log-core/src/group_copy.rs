//! [`GroupCopy`]: the cleaned copy of a group of adjacent sealed segments, written only once something
//! changes.

use std::sync::Arc;

use crate::cleaning::{Cleaning, Replacement};
use crate::error::{Error, ReplacementProblem, Result};
use crate::format::Format;
use crate::segment::{SealedSegment, SegmentWriter, Stamp, SummaryBuilder};

/// Builds the cleaned copy of a group as pass 2 walks its segments in order, batch by batch, calling
/// [`GroupCopy::next_segment`] before the batches of each segment after the first.
///
/// In the native format the output is named after the first segment of the group that keeps a record (so a
/// segment left empty disappears and one that loses its first records keeps its name, as a pass over single
/// segments does), and the segments before it, and those after it whose records it now holds, go by removal
/// markers. In Kafka's format the output is always named after the group's first segment and is kept even
/// when it empties, as a broker's cleaner keeps a group's head (its base may be the log start); it carries
/// Kafka's `.index` and `.timeindex`, and a `.txnindex` of the aborted transactions it still needs.
///
/// While every batch of the first segment is kept unchanged nothing is written: the copy only remembers how
/// far the unchanged prefix reaches (and its summary, built as it goes). The first batch kept after a change,
/// or the start of a second segment (a group of several becomes one file), creates the output and copies that
/// prefix in one block. So a segment is scanned once whatever happens, and a group of one segment that needs
/// no change costs no write at all.
#[derive(Debug)]
pub struct GroupCopy<'a> {
    cleaning: &'a Cleaning<'a>,
    group: &'a [Arc<SealedSegment>],
    format: Format,
    /// The segment being read (index into `group`).
    current: usize,
    /// Summary of the first segment's unchanged prefix, while no file exists.
    prefix: SummaryBuilder,
    /// End of the unchanged prefix in the first segment.
    prefix_end: u64,
    /// A batch was dropped or re-encoded.
    changed: bool,
    /// The output and the index in `group` of the segment it is named after.
    writer: Option<(SegmentWriter, usize)>,
}

impl<'a> GroupCopy<'a> {
    pub(crate) fn new(cleaning: &'a Cleaning<'a>, group: &'a [Arc<SealedSegment>]) -> Self {
        let log = cleaning.log();
        let first = group.first().map_or(0, |s| s.base());
        GroupCopy {
            cleaning,
            group,
            format: log.format(),
            current: 0,
            prefix: SummaryBuilder::new(log.format(), first, log.config().index_interval_bytes),
            prefix_end: 0,
            changed: false,
            writer: None,
        }
    }

    fn first_base(&self) -> u64 {
        self.group.first().map_or(0, |s| s.base())
    }

    /// Moves on to the next segment of the group; its batches follow.
    ///
    /// # Errors
    /// [`Error::Io`] when the output cannot be created; [`Error::BadReplacement`] past the group's end.
    pub fn next_segment(&mut self) -> Result<()> {
        if self.writer.is_none() && self.prefix_end > 0 {
            self.writer()?;
        }
        self.current += 1;
        if self.current >= self.group.len() {
            return Err(Error::BadReplacement { base: self.first_base(), problem: ReplacementProblem::Empty });
        }
        Ok(())
    }

    /// Keeps, unchanged, the batch at byte `position` of the current segment (`bytes`, described by `stamp`).
    ///
    /// # Errors
    /// [`Error::Io`] from the backend; [`Error::Corrupt`] if offsets do not increase.
    pub fn keep(&mut self, position: u64, bytes: &[u8], stamp: Stamp) -> Result<()> {
        if self.writer.is_none() && self.current == 0 && !self.changed && position == self.prefix_end {
            let source = &self.group[0];
            self.prefix.note(source.base(), stamp, position, bytes.len() as u64).map_err(|kind| Error::Corrupt {
                segment: source.name().to_owned(),
                position,
                kind,
            })?;
            self.prefix_end += bytes.len() as u64;
            return Ok(());
        }
        let r = self.writer()?.append_batch(bytes, stamp);
        self.cleaning.log().check(r)
    }

    /// Keeps a batch in a new encoding (records dropped from it, or a delete horizon stamped on it).
    ///
    /// # Errors
    /// As [`GroupCopy::keep`].
    pub fn keep_changed(&mut self, bytes: &[u8], stamp: Stamp) -> Result<()> {
        self.changed = true;
        let r = self.writer()?.append_batch(bytes, stamp);
        self.cleaning.log().check(r)
    }

    /// Drops the current batch.
    ///
    /// # Errors
    /// None today; kept fallible for outputs that must record drops.
    pub fn drop_batch(&mut self) -> Result<()> {
        self.changed = true;
        Ok(())
    }

    /// The output, created on first need: named after the first segment (whose unchanged prefix it starts
    /// with) when that prefix holds batches or the format keeps a group's head, else after the current
    /// segment, the first to keep a record.
    fn writer(&mut self) -> Result<&mut SegmentWriter> {
        if self.writer.is_none() {
            let named = if self.prefix_end > 0 || self.format.keeps_group_head() { 0 } else { self.current };
            let segment = self
                .group
                .get(named)
                .ok_or(Error::BadReplacement { base: self.first_base(), problem: ReplacementProblem::Empty })?;
            let mut w = self.cleaning.create_output(segment.base())?;
            if named == 0 && self.prefix_end > 0 {
                let prefix = std::mem::replace(&mut self.prefix, SummaryBuilder::new(self.format, 0, 1));
                self.cleaning.log().check(w.append_prefix(segment.source(), self.prefix_end, prefix))?;
            }
            self.writer = Some((w, named));
        }
        let base = self.first_base();
        match &mut self.writer {
            Some((w, _)) => Ok(w),
            None => Err(Error::BadReplacement { base, problem: ReplacementProblem::Empty }),
        }
    }

    /// A removal marker for the segments `group[from..to]` (native format only).
    fn marker(&self, from: usize, to: usize) -> Result<Option<SealedSegment>> {
        let (Some(first), Some(last)) = (self.group.get(from), to.checked_sub(1).and_then(|l| self.group.get(l)))
        else {
            return Ok(None);
        };
        if from >= to {
            return Ok(None);
        }
        // The range ends where the next segment of the group starts, or after the last record of the group.
        let end = match self.group.get(to) {
            Some(next) => next.base(),
            None => last.next_offset(),
        };
        let marker = self.cleaning.create_output(first.base())?;
        self.cleaning.log().check(marker.finish_removal(end)).map(Some)
    }

    /// Ends the copy: `None` when the group is one segment whose batches were all kept unchanged (no file was
    /// written); else the replacement: the finished, synced output (if any record was kept, or always in
    /// Kafka's format) and, in the native format, the removal markers of the segments before and after the one
    /// it is named after.
    ///
    /// # Errors
    /// [`Error::Io`] (a failed sync poisons the log); [`Error::Corrupt`] for a source `.txnindex` that is not
    /// whole entries.
    pub fn finish(mut self) -> Result<Option<Replacement>> {
        if self.writer.is_none() && self.prefix_end > 0 {
            if !self.changed && self.group.len() == 1 {
                return Ok(None);
            }
            self.writer()?;
        }
        if self.format.keeps_group_head() && self.writer.is_none() {
            if !self.changed && self.group.len() == 1 {
                return Ok(None);
            }
            // Nothing kept: the group's head stays, empty.
            self.writer()?;
        }
        let old = self.group.to_vec();
        let log = self.cleaning.log();
        let Some((writer, named)) = self.writer.take() else {
            // Nothing was kept: the whole group goes.
            let head = self.marker(0, self.group.len())?;
            return Ok(Some(Replacement { old, head, new: None, tail: None }));
        };
        let (new, indexes) = log.check(writer.finish())?;
        if let Some(files) = indexes {
            log.format().write_output_indexes(self.cleaning, &new, &files)?;
            return Ok(Some(Replacement { old, head: None, new: Some(new), tail: None }));
        }
        let head = self.marker(0, named)?;
        let tail = self.marker(named + 1, self.group.len())?;
        Ok(Some(Replacement { old, head, new: Some(new), tail }))
    }
}
