//! [`GroupCopy`]: the cleaned copy of a group of adjacent sealed segments, written only once something
//! changes.

use std::sync::Arc;

use crate::cleaning::{Cleaning, Replacement};
use crate::error::{Error, ReplacementProblem, Result};
use crate::segment::{SealedSegment, SegmentSummary, SegmentWriter, Stamp};

/// Builds the cleaned copy of a group as pass 2 walks its segments in order, record by record, calling
/// [`GroupCopy::next_segment`] before the records of each segment after the first.
///
/// The output is named after the first segment of the group that keeps a record (so a segment left empty
/// disappears and one that loses its first records keeps its name, as a pass over single segments does);
/// the segments before it, and those after it whose records it now holds, go by removal markers.
///
/// While every record of the first segment is kept unchanged nothing is written: the copy only remembers how
/// far the unchanged prefix reaches (and its index, built as it goes). The first record kept after a change,
/// or the start of a second segment (a group of several becomes one file), creates the output and copies that
/// prefix in one block. So a segment is scanned once whatever happens, and a group of one segment that needs
/// no change costs no write at all.
#[derive(Debug)]
pub struct GroupCopy<'a> {
    cleaning: &'a Cleaning<'a>,
    group: &'a [Arc<SealedSegment>],
    /// The segment being read (index into `group`).
    current: usize,
    /// Summary of the first segment's unchanged prefix, while no file exists.
    prefix: SegmentSummary,
    /// End of the unchanged prefix in the first segment.
    prefix_end: usize,
    /// A record was dropped or re-encoded.
    changed: bool,
    /// The output and the index in `group` of the segment it is named after.
    writer: Option<(SegmentWriter, usize)>,
}

impl<'a> GroupCopy<'a> {
    pub(crate) fn new(cleaning: &'a Cleaning<'a>, group: &'a [Arc<SealedSegment>]) -> Self {
        GroupCopy {
            cleaning,
            group,
            current: 0,
            prefix: SegmentSummary::new(cleaning.log().config.index_interval_bytes),
            prefix_end: 0,
            changed: false,
            writer: None,
        }
    }

    fn first_base(&self) -> u64 {
        self.group.first().map_or(0, |s| s.base())
    }

    /// Moves on to the next segment of the group; its records follow.
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

    /// Keeps, unchanged, the frame at byte `position` of the current segment holding the record `stamp`
    /// describes.
    ///
    /// # Errors
    /// [`Error::Io`] from the backend; [`Error::Corrupt`] if offsets do not increase.
    pub fn keep(&mut self, position: u64, frame: &[u8], stamp: Stamp) -> Result<()> {
        if self.writer.is_none() && self.current == 0 && !self.changed && position == self.prefix_end as u64 {
            let source = &self.group[0];
            self.prefix.note(source.base(), stamp, position, frame.len() as u64).map_err(|kind| Error::Corrupt {
                segment: source.name().to_owned(),
                position,
                kind,
            })?;
            self.prefix_end += frame.len();
            return Ok(());
        }
        let r = self.writer()?.append_frame(frame, stamp);
        self.cleaning.log().check(r)
    }

    /// Keeps a record in a new encoding (a tombstone stamped with its delete horizon).
    ///
    /// # Errors
    /// As [`GroupCopy::keep`].
    pub fn keep_changed(&mut self, frame: &[u8], stamp: Stamp) -> Result<()> {
        self.changed = true;
        let r = self.writer()?.append_frame(frame, stamp);
        self.cleaning.log().check(r)
    }

    /// Drops the current record.
    ///
    /// # Errors
    /// None today; kept fallible for outputs that must record drops.
    pub fn drop_record(&mut self) -> Result<()> {
        self.changed = true;
        Ok(())
    }

    /// The output, created on first need: named after the first segment (whose unchanged prefix it starts
    /// with) when that prefix holds records, else after the current segment, the first to keep a record.
    fn writer(&mut self) -> Result<&mut SegmentWriter> {
        if self.writer.is_none() {
            let named = if self.prefix_end > 0 { 0 } else { self.current };
            let segment = self
                .group
                .get(named)
                .ok_or(Error::BadReplacement { base: self.first_base(), problem: ReplacementProblem::Empty })?;
            let mut w = self.cleaning.create_output(segment.base())?;
            if named == 0 {
                let prefix = segment.bytes().get(..self.prefix_end).unwrap_or_default();
                self.cleaning.log().check(w.append_prefix(prefix, std::mem::take(&mut self.prefix)))?;
            }
            self.writer = Some((w, named));
        }
        let base = self.first_base();
        match &mut self.writer {
            Some((w, _)) => Ok(w),
            None => Err(Error::BadReplacement { base, problem: ReplacementProblem::Empty }),
        }
    }

    /// A removal marker for the segments `group[from..to]`.
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
            None => last.last_offset().map_or(last.base(), |l| l + 1),
        };
        let marker = self.cleaning.create_output(first.base())?;
        self.cleaning.log().check(marker.finish_removal(end)).map(Some)
    }

    /// Ends the copy: `None` when the group is one segment whose records were all kept unchanged (no file
    /// was written); else the replacement: the finished, synced output (if any record was kept) and the
    /// removal markers of the segments before and after the one it is named after.
    ///
    /// # Errors
    /// [`Error::Io`] (a failed sync poisons the log).
    pub fn finish(mut self) -> Result<Option<Replacement>> {
        if self.writer.is_none() && self.prefix_end > 0 {
            if !self.changed && self.group.len() == 1 {
                return Ok(None);
            }
            self.writer()?;
        }
        let old = self.group.to_vec();
        let log = self.cleaning.log();
        let Some((writer, named)) = self.writer.take() else {
            // Nothing was kept: the whole group goes.
            let head = self.marker(0, self.group.len())?;
            return Ok(Some(Replacement { old, head, new: None, tail: None }));
        };
        let new = log.check(writer.finish())?;
        let head = self.marker(0, named)?;
        let tail = self.marker(named + 1, self.group.len())?;
        Ok(Some(Replacement { old, head, new: Some(new), tail }))
    }
}
