//! [`CleanedCopy`]: the cleaned copy of one sealed segment, written only once something changes.

use crate::error::Result;
use crate::log::Log;
use crate::segment::{SealedSegment, SegmentSummary, SegmentWriter};
use crate::swap::CleaningGuard;

/// Builds the cleaned copy of a sealed segment as pass 2 walks it, record by record.
///
/// While every record is kept unchanged nothing is written: the copy only remembers how far the unchanged
/// prefix reaches (and its index, built as it goes). The first dropped or re-encoded record creates the
/// `.cleaned` file and copies that prefix in one block, so a segment is scanned once whatever happens, and a
/// segment that needs no change costs no write at all.
#[derive(Debug)]
pub struct CleanedCopy<'a> {
    log: &'a Log,
    guard: &'a CleaningGuard<'a>,
    source: &'a SealedSegment,
    /// Summary of the unchanged prefix, while no file exists.
    prefix: SegmentSummary,
    /// End of the unchanged prefix in the source.
    prefix_end: usize,
    writer: Option<SegmentWriter>,
}

impl Log {
    /// Starts the cleaned copy of `source`, a closed segment of this log.
    pub fn cleaned_copy<'a>(&'a self, guard: &'a CleaningGuard<'a>, source: &'a SealedSegment) -> CleanedCopy<'a> {
        CleanedCopy {
            log: self,
            guard,
            source,
            prefix: SegmentSummary::new(self.config.index_interval_bytes),
            prefix_end: 0,
            writer: None,
        }
    }
}

impl CleanedCopy<'_> {
    /// Keeps, unchanged, the frame at byte `position` of the source holding the record with `offset`.
    ///
    /// # Errors
    /// [`crate::Error::Io`] from the backend; [`crate::Error::Corrupt`] if offsets do not increase.
    pub fn keep(&mut self, position: u64, frame: &[u8], offset: u64, delete_horizon: Option<i64>) -> Result<()> {
        if self.writer.is_none() && position == self.prefix_end as u64 {
            let base = self.source.base();
            self.prefix
                .note(base, offset, delete_horizon, position, frame.len() as u64)
                .map_err(|kind| crate::Error::Corrupt { segment: self.source.name().to_owned(), position, kind })?;
            self.prefix_end += frame.len();
            return Ok(());
        }
        let r = self.writer()?.append_frame(frame, offset, delete_horizon);
        self.log.check(r)
    }

    /// Keeps a record in a new encoding (a tombstone stamped with its delete horizon).
    ///
    /// # Errors
    /// As [`CleanedCopy::keep`].
    pub fn keep_changed(&mut self, frame: &[u8], offset: u64, delete_horizon: Option<i64>) -> Result<()> {
        let r = self.writer()?.append_frame(frame, offset, delete_horizon);
        self.log.check(r)
    }

    /// Drops the current record.
    ///
    /// # Errors
    /// [`crate::Error::Io`] when the copy's file cannot be created.
    pub fn drop_record(&mut self) -> Result<()> {
        self.writer().map(|_| ())
    }

    /// The writer, created on first need with the unchanged prefix copied in.
    fn writer(&mut self) -> Result<&mut SegmentWriter> {
        let writer = match self.writer.take() {
            Some(w) => w,
            None => {
                let mut w = self.log.create_cleaned(self.guard, self.source.base())?;
                let prefix = self.source.bytes().get(..self.prefix_end).unwrap_or_default();
                self.log.check(w.append_prefix(prefix, std::mem::take(&mut self.prefix)))?;
                w
            }
        };
        Ok(self.writer.insert(writer))
    }

    /// Ends the copy: `None` when every record was kept unchanged (no file was written), else the finished,
    /// synced `.cleaned` segment, or a removal marker when no record was kept.
    ///
    /// # Errors
    /// [`crate::Error::Io`] (a failed sync poisons the log).
    pub fn finish(self) -> Result<Option<SealedSegment>> {
        match self.writer {
            None => Ok(None),
            Some(w) if w.records() == 0 => {
                let end = self.source.last_offset().map_or(self.source.base(), |l| l + 1);
                self.log.check(w.finish_removal(end)).map(Some)
            }
            Some(w) => self.log.finish_cleaned(w).map(Some),
        }
    }
}
