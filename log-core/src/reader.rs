//! Reading: a consistent [`LogSnapshot`] of the segments and the [`LogReader`] over it.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::format::Format;
use crate::record::Record;
use crate::scan::{SegmentSource, batch_bytes_at};
use crate::segment::SealedSegment;
use crate::storage::Segment;

/// The segments of a log at one instant. Cleaning or rolling after the snapshot was taken does not change what
/// it reads: it holds the old segments' bytes alive, so a reader sees the old segments or the new ones, never
/// a mix.
#[derive(Debug, Clone)]
pub struct LogSnapshot {
    format: Format,
    closed: Arc<Vec<Arc<SealedSegment>>>,
    active_base: u64,
    active_name: Arc<str>,
    active: SegmentSource,
    active_len: u64,
    active_records: u64,
    active_batches: u64,
    active_first_timestamp: Option<i64>,
    active_max_timestamp: Option<i64>,
    next_offset: u64,
    high_watermark: Option<u64>,
    log_start: Option<u64>,
}

impl LogSnapshot {
    /// The transaction state of the snapshot's log (Kafka: aborted and open transactions, the last stable
    /// offset capped by the high watermark, each producer's last data batch; for the native format none, and
    /// the LSO is the log end). Closed
    /// segments are walked once and remembered; the active segment is walked each call.
    ///
    /// # Errors
    /// [`crate::Error::Corrupt`] for a header or control batch that does not parse; [`crate::Error::Io`].
    pub fn transactions(&self) -> crate::Result<crate::txn::TxnState> {
        use crate::txn::TxnState;
        if !self.format.has_transactions() {
            return Ok(TxnState::fold([], self.next_offset));
        }
        let mut segments = Vec::with_capacity(self.closed.len() + 1);
        for s in self.closed.iter() {
            segments.push(s.transactions()?);
        }
        segments.push(std::sync::Arc::new(self.format.segment_txns(
            &self.active,
            &self.active_name,
            self.active_len,
        )?));
        let mut state = TxnState::fold(segments.iter().map(|s| &**s), self.next_offset);
        // Kafka's first unstable offset is never below the log start offset (UnifiedLog.updateFirstUnstableOffset),
        // and its LSO never passes the high watermark.
        if let Some(start) = self.log_start {
            state.last_stable_offset = state.last_stable_offset.max(start.min(self.next_offset));
            state.log_start = start;
        }
        if let Some(hw) = self.high_watermark {
            state.last_stable_offset = state.last_stable_offset.min(hw);
        }
        Ok(state)
    }

    pub(crate) fn with_high_watermark(mut self, high_watermark: Option<u64>) -> Self {
        self.high_watermark = high_watermark;
        self
    }

    /// Kafka: the log start offset the broker recorded for the partition, if any.
    pub fn log_start(&self) -> Option<u64> {
        self.log_start
    }

    pub(crate) fn with_log_start(mut self, log_start: Option<u64>) -> Self {
        self.log_start = log_start;
        self
    }

    /// Kafka: the high watermark the broker recorded for the partition, if any (the last stable offset, and
    /// so any cleaning, stops there).
    pub fn high_watermark(&self) -> Option<u64> {
        self.high_watermark
    }

    pub(crate) fn new(
        format: Format,
        closed: Arc<Vec<Arc<SealedSegment>>>,
        active: &crate::log::Active,
        next_offset: u64,
    ) -> Self {
        let summary = &active.summary.summary;
        LogSnapshot {
            format,
            closed,
            active_base: active.base,
            active_name: Arc::from(active.name.as_str()),
            active: SegmentSource::Reads(Arc::clone(&active.file)),
            active_len: active.readable_len(),
            active_records: summary.records,
            active_batches: summary.batches,
            active_first_timestamp: summary.first_timestamp,
            active_max_timestamp: summary.max_timestamp,
            next_offset,
            high_watermark: None,
            log_start: None,
        }
    }

    /// The segment format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Records in the active segment when the snapshot was taken.
    pub fn active_records_count(&self) -> u64 {
        self.active_records
    }

    /// Batches in the active segment when the snapshot was taken.
    pub fn active_batches_count(&self) -> u64 {
        self.active_batches
    }

    /// Largest timestamp of the active segment's first batch, if it has one.
    pub fn active_first_timestamp(&self) -> Option<i64> {
        self.active_first_timestamp
    }

    /// Largest timestamp in the active segment, if it has a batch.
    pub fn active_max_timestamp(&self) -> Option<i64> {
        self.active_max_timestamp
    }

    /// Closed segments, oldest first.
    pub fn closed(&self) -> &[Arc<SealedSegment>] {
        &self.closed
    }

    /// Base offset of the active segment.
    pub fn active_base(&self) -> u64 {
        self.active_base
    }

    /// File name of the active segment.
    pub fn active_name(&self) -> &str {
        &self.active_name
    }

    /// The active segment's bytes, read through reads (it may still grow).
    pub fn active_source(&self) -> &SegmentSource {
        &self.active
    }

    /// The active segment's file.
    pub fn active_file(&self) -> Option<&Arc<dyn Segment>> {
        match &self.active {
            SegmentSource::Reads(f) => Some(f),
            SegmentSource::Mapped(_) => None,
        }
    }

    /// Bytes in the active segment when the snapshot was taken.
    pub fn active_len(&self) -> u64 {
        self.active_len
    }

    /// The offset the next append gets (after the last batch of the log).
    pub fn next_offset(&self) -> u64 {
        self.next_offset
    }

    /// The records of the active segment as of the snapshot, oldest first.
    ///
    /// # Errors
    /// [`Error::Corrupt`] or [`Error::Io`].
    pub fn active_records(&self) -> Result<Vec<Record>> {
        self.reader_at(self.active_base, 0, self.closed.len()).collect()
    }

    /// Every record from the first with offset `>= offset`, across segments.
    pub fn reader(&self, offset: u64) -> LogReader {
        let seg = self.closed.partition_point(|s| s.next_offset() <= offset);
        self.reader_at(offset, 0, seg)
    }

    fn reader_at(&self, offset: u64, active_pos: u64, seg: usize) -> LogReader {
        LogReader {
            snap: self.clone(),
            from: offset,
            seg,
            pos: None,
            active_pos,
            pending: VecDeque::new(),
            buf: Vec::new(),
            scratch: Vec::new(),
            done: false,
        }
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
        let seg = self.closed.partition_point(|s| s.next_offset() <= offset);
        self.reader_at(offset, active_pos, seg).next().transpose()
    }
}

/// Iterator over owned records from an offset, across closed segments and then the active one. It decodes
/// one batch at a time and hands out its records.
#[derive(Debug)]
pub struct LogReader {
    snap: LogSnapshot,
    from: u64,
    /// Index of the segment being read; `closed.len()` means the active segment.
    seg: usize,
    /// Byte position of the next batch in the current segment (`None` until sought).
    pos: Option<u64>,
    active_pos: u64,
    /// Records of the last batch decoded, not yet handed out.
    pending: VecDeque<Record>,
    buf: Vec<u8>,
    scratch: Vec<u8>,
    done: bool,
}

impl LogReader {
    /// Decodes the next batch into `pending`; `Ok(false)` at the end of the log.
    fn next_batch(&mut self) -> Result<bool> {
        let snap = &self.snap;
        loop {
            let (name, source, end, base) = match snap.closed.get(self.seg) {
                Some(s) => (s.name(), s.source(), s.size(), s.base()),
                None if self.seg == snap.closed.len() => {
                    (&*snap.active_name, &snap.active, snap.active_len, snap.active_base)
                }
                None => return Ok(false),
            };
            let pos = match self.pos {
                Some(p) => p,
                None => match snap.closed.get(self.seg) {
                    Some(s) => s.seek(self.from),
                    None if self.from >= base => self.active_pos,
                    None => 0,
                },
            };
            let Some(bytes) = batch_bytes_at(snap.format, name, source, pos, end, &mut self.buf)? else {
                self.seg += 1;
                self.pos = None;
                continue;
            };
            if snap.format.is_zero_header(bytes) {
                // A preallocated segment's zero fill ends its data.
                self.seg += 1;
                self.pos = None;
                continue;
            }
            let corrupt = |kind| Error::Corrupt { segment: name.to_owned(), position: pos, kind };
            let batch = snap.format.parse(bytes, true).map_err(corrupt)?;
            self.pos = Some(pos + batch.len() as u64);
            if batch.last_offset < self.from {
                continue;
            }
            for rec in batch.records(&mut self.scratch).map_err(corrupt)? {
                let rec = rec.map_err(corrupt)?;
                if rec.offset >= self.from {
                    self.pending.push_back(rec.to_record());
                }
            }
            if !self.pending.is_empty() {
                return Ok(true);
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
        if let Some(r) = self.pending.pop_front() {
            return Some(Ok(r));
        }
        match self.next_batch() {
            Ok(true) => self.pending.pop_front().map(Ok),
            Ok(false) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}
