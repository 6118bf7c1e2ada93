//! Segments as the log sees them: a sealed segment with its bytes and index, the summary a scan of its batches
//! learns, and the writer the log and the cleaner both use to build segments, in either [`Format`].

use std::sync::Arc;

use crate::error::{CorruptKind, Error, Result};
use crate::format::Format;
pub use crate::format::Stamp;
pub use crate::format::side_indexes::SideIndexFiles;
use crate::format::side_indexes::SideIndexes;
use crate::index::OffsetIndex;
use crate::scan::{SegmentScan, SegmentSource, batch_bytes_at};
use crate::storage::{Segment, SegmentStore};

/// What a scan of a segment learned: enough to serve reads without scanning again.
#[derive(Debug, Clone, Default)]
pub struct SegmentSummary {
    /// Sparse index of `(batch base offset, position)`.
    pub index: OffsetIndex,
    /// Base offset of the first batch.
    pub first_offset: Option<u64>,
    /// Last offset of the last batch.
    pub last_offset: Option<u64>,
    /// Number of records.
    pub records: u64,
    /// Number of batches (records, in the native format).
    pub batches: u64,
    /// Largest delete horizon among stamped tombstones.
    pub max_delete_horizon: Option<i64>,
    /// Largest timestamp of the first batch (Kafka's first batch timestamp: what `max.compaction.lag.ms`
    /// measures a dirty segment's age by).
    pub first_timestamp: Option<i64>,
    /// Largest record timestamp (Kafka's `largestTimestamp`: a segment holding a record younger than
    /// `min.compaction.lag.ms` is not cleaned yet).
    pub max_timestamp: Option<i64>,
}

impl SegmentSummary {
    pub(crate) fn new(index_interval: u64) -> Self {
        SegmentSummary { index: OffsetIndex::new(index_interval), ..Default::default() }
    }

    /// Records a batch; checks that offsets increase and do not fall below `base`.
    #[inline]
    pub(crate) fn note(&mut self, base: u64, stamp: Stamp, pos: u64, len: u64) -> Result<(), CorruptKind> {
        let Stamp { base_offset, last_offset, records, max_timestamp, delete_horizon } = stamp;
        if base_offset < base {
            return Err(CorruptKind::OffsetBelowBase { base, found: base_offset });
        }
        if last_offset >= crate::names::MAX_OFFSET {
            return Err(CorruptKind::OffsetOutOfRange(last_offset));
        }
        if let Some(previous) = self.last_offset
            && base_offset <= previous
        {
            return Err(CorruptKind::OffsetNotIncreasing { previous, found: base_offset });
        }
        self.index.on_append(base_offset, pos, len);
        self.first_offset.get_or_insert(base_offset);
        self.last_offset = Some(last_offset);
        self.records += records;
        self.batches += 1;
        self.first_timestamp.get_or_insert(max_timestamp);
        self.max_timestamp = Some(self.max_timestamp.map_or(max_timestamp, |m| m.max(max_timestamp)));
        if let Some(h) = delete_horizon {
            self.max_delete_horizon = Some(self.max_delete_horizon.map_or(h, |m| m.max(h)));
        }
        Ok(())
    }
}

/// A [`SegmentSummary`] being built, with Kafka's `.index` and `.timeindex` for a Kafka segment.
#[derive(Debug, Clone)]
pub(crate) struct SummaryBuilder {
    pub(crate) summary: SegmentSummary,
    pub(crate) side: Option<SideIndexes>,
}

impl SummaryBuilder {
    pub(crate) fn new(format: Format, base: u64, index_interval: u64) -> Self {
        SummaryBuilder {
            summary: SegmentSummary::new(index_interval),
            side: SideIndexes::new(format, base, index_interval),
        }
    }

    #[inline]
    pub(crate) fn note(&mut self, base: u64, stamp: Stamp, pos: u64, len: u64) -> Result<(), CorruptKind> {
        self.summary.note(base, stamp, pos, len)?;
        if let Some(k) = &mut self.side {
            k.on_batch(&stamp, pos, len);
        }
        Ok(())
    }
}

/// A sealed (closed) segment: immutable, read through its [`SegmentSource`].
#[derive(Debug)]
pub struct SealedSegment {
    base: u64,
    name: String,
    format: Format,
    file: Arc<dyn Segment>,
    source: SegmentSource,
    /// Bytes of batches; a zero fill after them (a preallocated Kafka segment) is left out.
    data_len: u64,
    summary: SegmentSummary,
    /// Its transactional facts (Kafka), walked once on first use: the segment never changes.
    txns: TxnsOnce,
}

/// What loading a segment learned besides its summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Loaded {
    /// Where a zero fill starts (its data ends there).
    pub zero_fill: Option<u64>,
}

impl SealedSegment {
    /// Seals `file` if needed and validates every batch (with its checksum for the native format; Kafka's
    /// headers and lengths, whose checksums every read and pass verifies), building the index.
    ///
    /// # Errors
    /// [`Error::Corrupt`] naming `name` and the byte position of the first bad batch; [`Error::Io`].
    pub fn load(format: Format, base: u64, name: String, file: Arc<dyn Segment>, index_interval: u64) -> Result<Self> {
        Self::load_reporting(format, base, name, file, index_interval).map(|(s, _)| s)
    }

    /// As [`SealedSegment::load`], verifying every batch's checksum whatever the format: for a segment about to
    /// replace others (a `.swap` to complete), whose damage would otherwise be found only once the segments it
    /// replaces are gone.
    ///
    /// # Errors
    /// As [`SealedSegment::load`].
    pub fn load_verified(
        format: Format,
        base: u64,
        name: String,
        file: Arc<dyn Segment>,
        index_interval: u64,
    ) -> Result<Self> {
        file.seal().map_err(Error::io("seal", &name))?;
        let source = SegmentSource::of(&file).map_err(Error::io("map", &name))?;
        let len = file.len();
        let (summary, data_len, txns) = summarize(format, base, &name, &source, len, index_interval, true)?;
        Ok(SealedSegment { base, name, format, file, source, data_len, summary, txns })
    }

    /// As [`SealedSegment::load`], also returning what it noticed.
    ///
    /// # Errors
    /// As [`SealedSegment::load`].
    pub fn load_reporting(
        format: Format,
        base: u64,
        name: String,
        file: Arc<dyn Segment>,
        index_interval: u64,
    ) -> Result<(Self, Loaded)> {
        file.seal().map_err(Error::io("seal", &name))?;
        let source = SegmentSource::of(&file).map_err(Error::io("map", &name))?;
        let len = file.len();
        // Kafka's checksums are verified by every read and pass, not at open: only the headers are walked.
        let verify = format.verifies_at_load();
        let (summary, data_len, txns) = summarize(format, base, &name, &source, len, index_interval, verify)?;
        let zero_fill = (data_len < len).then_some(data_len);
        Ok((SealedSegment { base, name, format, file, source, data_len, summary, txns }, Loaded { zero_fill }))
    }

    /// Opens a sealed segment of the native format using its `.lcindex` hint when it checks out (no scan),
    /// else scanning and validating every frame as [`SealedSegment::load`] does, rewriting the hint when
    /// `rewrite_hint` is set (a log opened read-only leaves it alone). A Kafka segment has no hint of ours: its
    /// batch headers are walked. Returns the segment, whether a hint had to be rebuilt, and what loading noticed.
    ///
    /// # Errors
    /// As [`SealedSegment::load`].
    pub fn open_with_hint(
        format: Format,
        store: &dyn SegmentStore,
        base: u64,
        name: String,
        file: Arc<dyn Segment>,
        index_interval: u64,
        rewrite_hint: bool,
    ) -> Result<(Self, bool, Loaded)> {
        if !format.keeps_hint() {
            let (segment, loaded) = SealedSegment::load_reporting(format, base, name, file, index_interval)?;
            return Ok((segment, false, loaded));
        }
        file.seal().map_err(Error::io("seal", &name))?;
        let source = SegmentSource::of(&file).map_err(Error::io("map", &name))?;
        let len = file.len();
        if let Some(summary) = format.read_hint(store, base, &name, &source, len) {
            return Ok((
                SealedSegment { base, name, format, file, source, data_len: len, summary, txns: Default::default() },
                false,
                Loaded::default(),
            ));
        }
        let (summary, data_len, txns) = summarize(format, base, &name, &source, len, index_interval, true)?;
        let segment = SealedSegment { base, name, format, file, source, data_len, summary, txns };
        if rewrite_hint {
            // The hint is optional: failing to save it (a full disk) must not keep the log from opening; the
            // log is not live yet, so nothing waits on this write, and the next open tries again.
            let _ = segment.write_hint(store);
        }
        Ok((segment, true, Loaded::default()))
    }

    /// Writes and syncs the `.lcindex` hint of a native segment (its name becomes durable with the caller's
    /// next directory sync); a Kafka segment's indexes are written with it by its writer. A hint that is never
    /// written, or torn by a crash, is rebuilt on open, but a failed write or sync is still an error: the log
    /// treats every failed sync alike.
    ///
    /// # Errors
    /// [`Error::Io`] naming the index file.
    pub fn write_hint(&self, store: &dyn SegmentStore) -> Result<()> {
        self.format.write_hint(store, self.base, self.size(), &self.summary)
    }

    pub(crate) fn from_parts(
        format: Format,
        base: u64,
        name: String,
        file: Arc<dyn Segment>,
        source: SegmentSource,
        summary: SegmentSummary,
    ) -> Self {
        let data_len = file.len();
        SealedSegment { base, name, format, file, source, data_len, summary, txns: Default::default() }
    }

    /// The same segment under a new file name (after a rename).
    pub(crate) fn renamed(mut self, name: String) -> Self {
        self.name = name;
        self
    }

    /// Base offset (from the file name); records may start above it after cleaning.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// File name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// All bytes of its batches, when the segment is mapped (`None` for one read through reads).
    pub fn bytes(&self) -> Option<&[u8]> {
        let len = usize::try_from(self.data_len).ok()?;
        self.source.mapped().and_then(|b| b.get(..len))
    }

    /// Where its bytes come from.
    pub fn source(&self) -> &SegmentSource {
        &self.source
    }

    /// Size in bytes of its batches.
    pub fn size(&self) -> u64 {
        self.data_len
    }

    /// The backend file.
    pub fn file(&self) -> &Arc<dyn Segment> {
        &self.file
    }

    /// Offsets, index and counts learned when the segment was loaded or written.
    pub fn summary(&self) -> &SegmentSummary {
        &self.summary
    }

    /// Its transactional data batches and markers and how it moves each producer's state on (empty for the
    /// native format), from a walk of its batch headers on first use.
    ///
    /// # Errors
    /// [`Error::Corrupt`] for a header or control batch that does not parse; [`Error::Io`].
    pub fn transactions(&self) -> Result<Arc<crate::txn::SegmentTxns>> {
        if let Some(t) = self.txns.get() {
            return Ok(Arc::clone(t));
        }
        let t = Arc::new(self.format.segment_txns(&self.source, &self.name, self.data_len)?);
        Ok(Arc::clone(self.txns.get_or_init(|| t)))
    }

    /// True for the output of a native cleaning pass that kept no record of its segment: it holds a removal
    /// marker, not frames, and removes the segment when swapped in. (A Kafka segment may be empty and stay.)
    pub fn is_removal(&self) -> bool {
        self.format.removes_by_marker() && self.summary.batches == 0
    }

    /// Bytes of its batches (a zero fill after them left out).
    pub(crate) fn data_len(&self) -> u64 {
        self.data_len
    }

    /// Offset of the last batch's last offset (`None` for an empty segment).
    pub fn last_offset(&self) -> Option<u64> {
        self.summary.last_offset
    }

    /// The offset after its last batch, or its base when it is empty.
    pub fn next_offset(&self) -> u64 {
        self.summary.last_offset.map_or(self.base, |l| l + 1)
    }

    /// Calls `f` with every batch in order, checksums verified; stops at the first error (`f`'s or damage).
    ///
    /// # Errors
    /// [`Error::Corrupt`] naming the segment and position; [`Error::Io`]; what `f` returns.
    pub fn for_each_batch(&self, mut f: impl FnMut(crate::scan::Placed<'_>) -> Result<()>) -> Result<()> {
        let mut scan = self.scan();
        while let Some(window) = scan.next_window()? {
            for item in window.batches() {
                f(item?)?;
            }
        }
        Ok(())
    }

    /// Every record, copied out (for tests and small tools; a pass reads batches instead).
    ///
    /// # Errors
    /// As [`SealedSegment::for_each_batch`].
    pub fn read_records(&self) -> Result<Vec<crate::Record>> {
        let mut out = Vec::new();
        let mut scratch = Vec::new();
        self.for_each_batch(|placed| {
            let corrupt = |kind| Error::Corrupt { segment: self.name.clone(), position: placed.position, kind };
            for rec in placed.batch.records(&mut scratch).map_err(corrupt)? {
                out.push(rec.map_err(corrupt)?.to_record());
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// A scan of every batch, checksums included.
    pub fn scan(&self) -> SegmentScan<'_> {
        SegmentScan::new(self.format, &self.name, &self.source, 0, self.data_len, true)
    }

    /// A scan from the batch holding `offset` (found through the index: batches before it may still come
    /// first, and a caller skips those whose last offset is below `offset`), checksums computed iff `verify`.
    pub fn scan_from(&self, offset: u64, verify: bool) -> SegmentScan<'_> {
        SegmentScan::new(self.format, &self.name, &self.source, self.seek(offset), self.data_len, verify)
    }

    /// The byte position to scan from for the first batch holding an offset `>= offset`: the index entry at
    /// or below it when that entry points at a valid batch starting at its offset, else the segment's start
    /// (an index loaded from a damaged hint costs a longer scan, never a skipped record).
    pub fn seek(&self, offset: u64) -> u64 {
        let Some((entry, pos)) = self.summary.index.seek_entry(offset) else { return 0 };
        let mut buf = Vec::new();
        match batch_bytes_at(self.format, &self.name, &self.source, pos, self.data_len, &mut buf) {
            Ok(Some(bytes)) if self.format.parse(bytes, true).is_ok_and(|b| b.base_offset == entry) => pos,
            _ => 0,
        }
    }
}

/// Scans `source` (`len` bytes) and builds its summary, checking every checksum when `verify` is set; returns
/// it, where the data ends, and the segment's transactional facts folded on the way (set when its format has
/// them and they parsed: a segment's first [`SealedSegment::transactions`] then reads nothing again).
/// A segment's transactional facts, once known.
type TxnsOnce = std::sync::OnceLock<Arc<crate::txn::SegmentTxns>>;

fn summarize(
    format: Format,
    base: u64,
    name: &str,
    source: &SegmentSource,
    len: u64,
    index_interval: u64,
    verify: bool,
) -> Result<(SegmentSummary, u64, TxnsOnce)> {
    let mut summary = SegmentSummary::new(index_interval);
    let mut fold = format.txn_fold();
    let mut scan = SegmentScan::new(format, name, source, 0, len, verify);
    while let Some(window) = scan.next_window()? {
        for item in window.batches() {
            let placed = item?;
            summary
                .note(base, Stamp::of(&placed.batch), placed.position, placed.batch.len() as u64)
                .map_err(|kind| Error::Corrupt { segment: name.to_owned(), position: placed.position, kind })?;
            if let Some(f) = &mut fold {
                f.batch(name, placed.position, &placed.batch);
            }
        }
    }
    let txns = std::sync::OnceLock::new();
    if let Some(t) = fold.and_then(|f| f.finish()) {
        let _ = txns.set(Arc::new(t));
    }
    Ok((summary, scan.zero_fill().unwrap_or(len), txns))
}

/// Builds a segment by appending whole batches, buffering writes (Kafka's 512 KiB I/O buffer) and keeping the
/// summary (and a Kafka segment's indexes) as it goes, so the finished segment never has to be scanned again.
#[derive(Debug)]
pub struct SegmentWriter {
    format: Format,
    base: u64,
    name: String,
    file: Arc<dyn Segment>,
    buffer: Vec<u8>,
    written: u64,
    summary: SummaryBuilder,
    /// The transactional facts of the batches written, folded as they are (none for a format without them, or
    /// once a prefix was copied whole): the finished segment then needs no walk of its headers to give them,
    /// which would read back every page of a copy written past the page cache.
    txns: Option<Box<dyn crate::txn::WrittenTxns>>,
}

/// Size of the writer's buffer.
pub const WRITE_BUFFER_BYTES: usize = 512 << 10;

impl SegmentWriter {
    /// A writer appending to the empty `file` called `name` for a segment based at `base`.
    pub fn new(format: Format, base: u64, name: String, file: Arc<dyn Segment>, index_interval: u64) -> Self {
        let written = file.len();
        let summary = SummaryBuilder::new(format, base, index_interval);
        let txns = if written == 0 { format.written_txns() } else { None };
        SegmentWriter { format, base, name, file, buffer: Vec::new(), written, summary, txns }
    }

    /// Appends, in one block, the first `len` bytes of `source` (another segment) whose batches all stay as
    /// they are, with the summary already built for them. Only valid on a writer that has written nothing yet.
    ///
    /// # Errors
    /// [`Error::Io`] from the backend.
    pub(crate) fn append_prefix(&mut self, source: &SegmentSource, len: u64, summary: SummaryBuilder) -> Result<()> {
        debug_assert_eq!(self.size(), 0, "a prefix goes first");
        // Its batches are not walked here: the segment's transactions are then read from it on first use.
        self.txns = None;
        if let Some(bytes) = source.mapped() {
            let bytes = bytes.get(..usize::try_from(len).unwrap_or(usize::MAX)).unwrap_or_default();
            if !bytes.is_empty() {
                self.file.append(bytes).map_err(Error::io("append", &self.name))?;
            }
        } else {
            let mut chunk = vec![0u8; WRITE_BUFFER_BYTES];
            let mut at = 0u64;
            while at < len {
                let n = usize::try_from(len - at).unwrap_or(usize::MAX).min(chunk.len());
                source.read_at(at, &mut chunk[..n]).map_err(Error::io("read", &self.name))?;
                self.file.append(&chunk[..n]).map_err(Error::io("append", &self.name))?;
                at += n as u64;
            }
        }
        self.written += len;
        self.summary = summary;
        Ok(())
    }

    /// Appends one encoded batch described by `stamp`.
    ///
    /// # Errors
    /// [`Error::Corrupt`] if its offsets do not follow the previous batch's; [`Error::Io`] from a flush.
    pub fn append_batch(&mut self, batch: &[u8], stamp: Stamp) -> Result<()> {
        let pos = self.written + self.buffer.len() as u64;
        self.summary.note(self.base, stamp, pos, batch.len() as u64).map_err(|kind| Error::Corrupt {
            segment: self.name.clone(),
            position: pos,
            kind,
        })?;
        if let Some(fold) = &mut self.txns {
            fold.encoded(&self.name, pos, batch);
        }
        if self.buffer.len() + batch.len() > WRITE_BUFFER_BYTES {
            self.flush()?;
        }
        if batch.len() >= WRITE_BUFFER_BYTES {
            self.file.append(batch).map_err(Error::io("append", &self.name))?;
            self.written += batch.len() as u64;
        } else {
            if self.buffer.capacity() == 0 {
                self.buffer.reserve_exact(WRITE_BUFFER_BYTES);
            }
            self.buffer.extend_from_slice(batch);
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if !self.buffer.is_empty() {
            self.file.append(&self.buffer).map_err(Error::io("append", &self.name))?;
            self.written += self.buffer.len() as u64;
            self.buffer.clear();
        }
        Ok(())
    }

    /// The base of the segment being written.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.summary.summary.records
    }

    /// Bytes written so far, buffered ones included.
    pub fn size(&self) -> u64 {
        self.written + self.buffer.len() as u64
    }

    /// Ends a native copy that kept no record: writes a removal marker for the segment (whose records all lay
    /// below `end`) instead of leaving an empty file, seals and syncs it. The result stands for "this segment
    /// is removed" in a cleaning swap; it holds no frame.
    ///
    /// # Errors
    /// [`Error::Io`] from the backend.
    pub fn finish_removal(mut self, end: u64) -> Result<SealedSegment> {
        debug_assert_eq!(self.summary.summary.records, 0);
        debug_assert!(self.format.removes_by_marker(), "this format's segments are never removed by markers");
        self.buffer.clear();
        if self.written > 0 {
            self.file.truncate(0).map_err(Error::io("truncate", &self.name))?;
            self.written = 0;
        }
        self.format.encode_removal(self.base, end, &mut self.buffer);
        self.summary = SummaryBuilder::new(self.format, self.base, self.summary.summary.index.interval());
        self.finish().map(|(s, _)| s)
    }

    /// Flushes, seals and syncs the file; returns the finished segment and, for a Kafka segment, its offset
    /// and time index files' bytes (Kafka's layout), for the caller to write beside it.
    ///
    /// # Errors
    /// [`Error::Io`] from the backend.
    pub fn finish(mut self) -> Result<(SealedSegment, Option<SideIndexFiles>)> {
        self.flush()?;
        self.file.seal().map_err(Error::io("seal", &self.name))?;
        self.file.sync().map_err(Error::io("sync", &self.name))?;
        let source = SegmentSource::of(&self.file).map_err(Error::io("map", &self.name))?;
        let SummaryBuilder { summary, side } = self.summary;
        let files = side.map(SideIndexes::finish);
        let segment = SealedSegment::from_parts(self.format, self.base, self.name, self.file, source, summary);
        if let Some(txns) = self.txns.and_then(|fold| fold.finish()) {
            let _ = segment.txns.set(Arc::new(txns));
        }
        Ok((segment, files))
    }
}
