//! Reading: a consistent [`LogSnapshot`] of the segments and the [`LogReader`] over it.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::record::Record;
use crate::segment::{ChunkReader, SealedSegment};
use crate::storage::Segment;

/// The segments of a log at one instant. Cleaning or rolling after the snapshot was taken does not change what
/// it reads: it holds the old segments' bytes alive, so a reader sees the old segments or the new ones, never
/// a mix.
#[derive(Debug, Clone)]
pub struct LogSnapshot {
    closed: Arc<Vec<Arc<SealedSegment>>>,
    active_base: u64,
    active_file: Arc<dyn Segment>,
    active_len: u64,
    active_records: u64,
    active_first_timestamp: Option<i64>,
}

impl LogSnapshot {
    pub(crate) fn new(closed: Arc<Vec<Arc<SealedSegment>>>, active: &crate::log::Active) -> Self {
        LogSnapshot {
            closed,
            active_base: active.base,
            active_file: Arc::clone(&active.file),
            active_len: active.readable_len(),
            active_records: active.summary.records,
            active_first_timestamp: active.summary.first_timestamp,
        }
    }

    /// Records in the active segment when the snapshot was taken.
    pub fn active_records_count(&self) -> u64 {
        self.active_records
    }

    /// Timestamp of the active segment's first record, if it has one.
    pub fn active_first_timestamp(&self) -> Option<i64> {
        self.active_first_timestamp
    }

    /// Closed segments, oldest first.
    pub fn closed(&self) -> &[Arc<SealedSegment>] {
        &self.closed
    }

    /// Base offset of the active segment.
    pub fn active_base(&self) -> u64 {
        self.active_base
    }

    /// Bytes in the active segment when the snapshot was taken.
    pub fn active_len(&self) -> u64 {
        self.active_len
    }

    /// The records of the active segment as of the snapshot, oldest first.
    ///
    /// # Errors
    /// [`Error::Corrupt`] or [`Error::Io`].
    pub fn active_records(&self) -> Result<Vec<Record>> {
        self.reader_from_hint(self.active_base, 0, self.closed.len()).collect()
    }

    /// Every record from the first with offset `>= offset`, across segments.
    pub fn reader(&self, offset: u64) -> LogReader {
        let seg = self.closed.partition_point(|s| s.last_offset().is_some_and(|l| l < offset));
        self.reader_from_hint(offset, 0, seg)
    }

    fn reader_from_hint(&self, offset: u64, active_pos: u64, seg: usize) -> LogReader {
        LogReader { snap: self.clone(), from: offset, seg, pos: None, active: None, active_pos, done: false }
    }

    /// The first record with offset `>= offset`, or `None`.
    ///
    /// # Errors
    /// [`Error::Corrupt`] or [`Error::Io`].
    pub fn read(&self, offset: u64) -> Result<Option<Record>> {
        self.reader(offset).next().transpose()
    }

    /// As [`LogSnapshot::read`], starting the active segment's scan at `active_pos` (from its index).
    pub(crate) fn read_from_hint(&self, offset: u64, active_pos: u64) -> Result<Option<Record>> {
        let seg = self.closed.partition_point(|s| s.last_offset().is_some_and(|l| l < offset));
        self.reader_from_hint(offset, active_pos, seg).next().transpose()
    }
}

/// Iterator over owned records from an offset, across closed segments and then the active one.
#[derive(Debug)]
pub struct LogReader {
    snap: LogSnapshot,
    from: u64,
    /// Index of the closed segment being read; `closed.len()` means the active segment.
    seg: usize,
    /// Byte position in the current closed segment (`None` until sought).
    pos: Option<usize>,
    active: Option<ChunkReader>,
    active_pos: u64,
    done: bool,
}

impl LogReader {
    fn next_closed(&mut self) -> Option<Result<Record>> {
        while let Some(segment) = self.snap.closed.get(self.seg) {
            let pos = *self.pos.get_or_insert_with(|| segment.seek(self.from));
            let mut iter = crate::segment::RecordIter::new(segment.bytes(), pos, segment.name());
            for item in iter.by_ref() {
                match item {
                    Err(e) => return Some(Err(e)),
                    Ok((_, rec, _)) if rec.offset < self.from => continue,
                    Ok((_, rec, _)) => {
                        self.pos = Some(iter.position());
                        return Some(Ok(rec.to_record()));
                    }
                }
            }
            self.seg += 1;
            self.pos = None;
        }
        None
    }

    fn next_active(&mut self) -> Option<Result<Record>> {
        let snap = &self.snap;
        let start = if self.from >= snap.active_base { self.active_pos } else { 0 };
        let reader =
            self.active.get_or_insert_with(|| ChunkReader::new(Arc::clone(&snap.active_file), start, snap.active_len));
        // The segment's name is built only for an error: reading allocates nothing per record but the record.
        let name = || crate::names::file_name(snap.active_base, crate::names::FileKind::Log);
        loop {
            let position = reader.position();
            match reader.next_frame() {
                Err(e) => return Some(Err(Error::io("read", &name())(e))),
                Ok(None) => return None,
                Ok(Some(Err(kind))) => return Some(Err(Error::Corrupt { segment: name(), position, kind })),
                Ok(Some(Ok((_, rec, _)))) if rec.offset < self.from => continue,
                Ok(Some(Ok((_, rec, _)))) => return Some(Ok(rec.to_record())),
            }
        }
    }
}

impl Iterator for LogReader {
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.next_closed().or_else(|| self.next_active());
        match &item {
            None | Some(Err(_)) => self.done = true,
            Some(Ok(_)) => {}
        }
        item
    }
}
