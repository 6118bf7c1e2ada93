//! Segments as the log sees them: a sealed segment with its byte view and index, the record scan over
//! bytes, and the writer the log and the cleaner both use to build segments.

use std::sync::Arc;

use crate::codec;
use crate::error::{CorruptKind, Error, Result};
use crate::index::OffsetIndex;
use crate::index_file;
use crate::names::{FileKind, file_name};
use crate::record::RecordRef;
use crate::storage::{Segment, SegmentBytes, SegmentStore};

/// Reads the `.lcindex` hint of the segment based at `base` whose bytes are `bytes`; `None` if missing or
/// unusable. A hint that decodes is trusted only if it matches the segment where that is cheap to see: its
/// first entry is the first frame and carries the first offset, and the frames from its last entry on chain
/// to the end of the segment and end at its last offset. The other entries are checked when a read uses
/// one ([`SealedSegment::records_from`]), so a crafted hint can never make a read skip records.
fn read_hint(store: &dyn SegmentStore, base: u64, bytes: &[u8]) -> Option<SegmentSummary> {
    let file = store.open(&file_name(base, FileKind::Index)).ok()?;
    let size = usize::try_from(file.len()).ok()?;
    // An index holds at most one 16-byte entry per frame; anything larger is not an index of this segment.
    if size as u64 > 128 + (bytes.len() as u64).saturating_mul(2) {
        return None;
    }
    let mut raw = vec![0; size];
    file.read_at(0, &mut raw).ok()?;
    let summary = index_file::decode(&raw, base, bytes.len() as u64).ok()?;
    hint_matches(&summary, base, bytes).then_some(summary)
}

/// The cheap part of trusting a hint (see [`read_hint`]).
pub(crate) fn hint_matches(summary: &SegmentSummary, base: u64, bytes: &[u8]) -> bool {
    let entries = summary.index.entries();
    let (Some(&(first, 0)), Some(&(_, tail))) = (entries.first(), entries.last()) else {
        return bytes.is_empty() && summary.records == 0;
    };
    let first_ok = matches!(codec::decode(bytes), Ok((rec, _))
        if rec.offset == first && first >= base && summary.first_timestamp == Some(rec.timestamp));
    if !first_ok || summary.first_offset != Some(first) {
        return false;
    }
    let Ok(tail) = usize::try_from(tail) else { return false };
    let mut last = None;
    for item in RecordIter::new(bytes, tail, "") {
        match item {
            Ok((_, rec, _)) if last.is_none_or(|l| rec.offset > l) => last = Some(rec.offset),
            _ => return false,
        }
    }
    last == summary.last_offset
}

/// A decoded frame: its byte position, the record, and the frame's length.
pub type Frame<'a> = (u64, RecordRef<'a>, usize);

/// Scans the records of a byte slice in order.
///
/// Yields `(position, record, frame length)`; on the first bad frame yields one `Err` naming the segment and
/// the position, then stops.
#[derive(Debug, Clone)]
pub struct RecordIter<'a> {
    bytes: &'a [u8],
    pos: usize,
    name: &'a str,
    failed: bool,
    /// Skip the checksums ([`codec::decode_unverified`]).
    unverified: bool,
}

impl<'a> RecordIter<'a> {
    /// Scans `bytes` (the segment called `name`) from byte `pos`.
    pub fn new(bytes: &'a [u8], pos: usize, name: &'a str) -> Self {
        RecordIter { bytes, pos, name, failed: false, unverified: false }
    }

    /// The same scan without computing checksums (see [`codec::decode_unverified`] for when that is right).
    pub fn unverified(mut self) -> Self {
        self.unverified = true;
        self
    }

    /// Byte position of the next frame.
    pub fn position(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for RecordIter<'a> {
    type Item = Result<Frame<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let Some(rest) = self.bytes.get(self.pos..) else {
            // A start position past the end (from a bad index entry) is an error, never an empty segment.
            self.failed = true;
            let kind = CorruptKind::Truncated { needed: self.pos as u64, available: self.bytes.len() as u64 };
            return Some(Err(Error::Corrupt { segment: self.name.to_owned(), position: self.pos as u64, kind }));
        };
        if rest.is_empty() {
            return None;
        }
        let decoded = if self.unverified { codec::decode_unverified(rest) } else { codec::decode(rest) };
        match decoded {
            Ok((rec, len)) => {
                let at = self.pos as u64;
                self.pos += len;
                Some(Ok((at, rec, len)))
            }
            Err(kind) => {
                self.failed = true;
                Some(Err(Error::Corrupt { segment: self.name.to_owned(), position: self.pos as u64, kind }))
            }
        }
    }
}

/// What a scan of a segment learned: enough to serve reads without scanning again.
#[derive(Debug, Clone, Default)]
pub struct SegmentSummary {
    /// Sparse offset index.
    pub index: OffsetIndex,
    /// Offset of the first record.
    pub first_offset: Option<u64>,
    /// Offset of the last record.
    pub last_offset: Option<u64>,
    /// Number of records.
    pub records: u64,
    /// Largest delete horizon among stamped tombstones.
    pub max_delete_horizon: Option<i64>,
    /// Timestamp of the first record (Kafka's first batch timestamp: what `max.compaction.lag.ms` measures
    /// a dirty segment's age by).
    pub first_timestamp: Option<i64>,
    /// Largest record timestamp (Kafka's `largestTimestamp`: a segment holding a record younger than
    /// `min.compaction.lag.ms` is not cleaned yet).
    pub max_timestamp: Option<i64>,
}

/// What the summary of a segment learns from one record: its offset, timestamp and delete horizon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// The record's offset.
    pub offset: u64,
    /// The record's timestamp, ms since the Unix epoch.
    pub timestamp: i64,
    /// The delete horizon of a stamped tombstone.
    pub delete_horizon: Option<i64>,
}

impl Stamp {
    /// The stamp of `rec`.
    pub fn of(rec: &RecordRef<'_>) -> Self {
        Stamp { offset: rec.offset, timestamp: rec.timestamp, delete_horizon: rec.delete_horizon }
    }
}

impl SegmentSummary {
    pub(crate) fn new(index_interval: u64) -> Self {
        SegmentSummary { index: OffsetIndex::new(index_interval), ..Default::default() }
    }

    /// Records a frame; checks that offsets increase and do not fall below `base`.
    pub(crate) fn note(&mut self, base: u64, stamp: Stamp, pos: u64, len: u64) -> Result<(), CorruptKind> {
        let Stamp { offset, timestamp, delete_horizon: horizon } = stamp;
        if offset < base {
            return Err(CorruptKind::OffsetBelowBase { base, found: offset });
        }
        if offset >= crate::names::MAX_OFFSET {
            return Err(CorruptKind::OffsetOutOfRange(offset));
        }
        if let Some(previous) = self.last_offset
            && offset <= previous
        {
            return Err(CorruptKind::OffsetNotIncreasing { previous, found: offset });
        }
        self.index.on_append(offset, pos, len);
        self.first_offset.get_or_insert(offset);
        self.last_offset = Some(offset);
        self.records += 1;
        self.first_timestamp.get_or_insert(timestamp);
        self.max_timestamp = Some(self.max_timestamp.map_or(timestamp, |m| m.max(timestamp)));
        if let Some(h) = horizon {
            self.max_delete_horizon = Some(self.max_delete_horizon.map_or(h, |m| m.max(h)));
        }
        Ok(())
    }
}

/// A sealed (closed) segment: immutable, read through a zero-copy view.
#[derive(Debug)]
pub struct SealedSegment {
    base: u64,
    name: String,
    file: Arc<dyn Segment>,
    bytes: SegmentBytes,
    summary: SegmentSummary,
}

impl SealedSegment {
    /// Seals `file` if needed and validates every frame, building the index.
    ///
    /// # Errors
    /// [`Error::Corrupt`] naming `name` and the byte position of the first bad frame; [`Error::Io`].
    pub fn load(base: u64, name: String, file: Arc<dyn Segment>, index_interval: u64) -> Result<Self> {
        file.seal().map_err(Error::io("seal", &name))?;
        let bytes = file.view().map_err(Error::io("map", &name))?;
        let summary = Self::summarize(base, &name, &bytes, index_interval)?;
        Ok(SealedSegment { base, name, file, bytes, summary })
    }

    /// A segment over bytes read into memory (the file itself is not sealed), validated as
    /// [`SealedSegment::load`] validates.
    ///
    /// # Errors
    /// As [`SealedSegment::load`].
    pub(crate) fn from_bytes(base: u64, name: String, file: Arc<dyn Segment>, bytes: Vec<u8>) -> Result<Self> {
        let bytes = SegmentBytes::new(bytes);
        let summary = Self::summarize(base, &name, &bytes, crate::DEFAULT_INDEX_INTERVAL_BYTES)?;
        Ok(SealedSegment { base, name, file, bytes, summary })
    }

    fn summarize(base: u64, name: &str, bytes: &[u8], index_interval: u64) -> Result<SegmentSummary> {
        let mut summary = SegmentSummary::new(index_interval);
        for item in RecordIter::new(bytes, 0, name) {
            let (pos, rec, len) = item?;
            summary.note(base, Stamp::of(&rec), pos, len as u64).map_err(|kind| Error::Corrupt {
                segment: name.to_owned(),
                position: pos,
                kind,
            })?;
        }
        Ok(summary)
    }

    /// Opens a sealed segment using its `.lcindex` hint when it checks out (no scan), else scanning and
    /// validating every frame as [`SealedSegment::load`] does, rewriting the hint when `rewrite_hint` is set
    /// (a log opened read-only leaves it alone). Returns the segment and whether the hint had to be rebuilt.
    ///
    /// # Errors
    /// As [`SealedSegment::load`].
    pub fn open_with_hint(
        store: &dyn SegmentStore,
        base: u64,
        name: String,
        file: Arc<dyn Segment>,
        index_interval: u64,
        rewrite_hint: bool,
    ) -> Result<(Self, bool)> {
        file.seal().map_err(Error::io("seal", &name))?;
        let bytes = file.view().map_err(Error::io("map", &name))?;
        if let Some(summary) = read_hint(store, base, &bytes) {
            return Ok((SealedSegment { base, name, file, bytes, summary }, false));
        }
        let segment = SealedSegment::load(base, name, file, index_interval)?;
        if rewrite_hint {
            // The hint is optional: failing to save it (a full disk) must not keep the log from opening; the
            // log is not live yet, so nothing waits on this write, and the next open tries again.
            let _ = segment.write_hint(store);
        }
        Ok((segment, true))
    }

    /// Writes and syncs the `.lcindex` hint of this segment (its name becomes durable with the caller's next
    /// directory sync). A hint that is never written, or torn by a crash, is rebuilt on open, but a failed
    /// write or sync is still an error: the log treats every failed sync alike.
    ///
    /// # Errors
    /// [`Error::Io`] naming the index file.
    pub fn write_hint(&self, store: &dyn SegmentStore) -> Result<()> {
        let name = file_name(self.base, FileKind::Index);
        match store.delete(&name) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(Error::io("delete", &name)(e)),
            _ => {}
        }
        let file = store.create(&name).map_err(Error::io("create", &name))?;
        file.append(&index_file::encode(self.base, self.size(), &self.summary)).map_err(Error::io("append", &name))?;
        file.sync().map_err(Error::io("sync", &name))?;
        file.seal().map_err(Error::io("seal", &name))
    }

    pub(crate) fn from_parts(
        base: u64,
        name: String,
        file: Arc<dyn Segment>,
        bytes: SegmentBytes,
        summary: SegmentSummary,
    ) -> Self {
        SealedSegment { base, name, file, bytes, summary }
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

    /// All bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// The backend file.
    pub fn file(&self) -> &Arc<dyn Segment> {
        &self.file
    }

    /// Offsets, index and counts learned when the segment was loaded or written.
    pub fn summary(&self) -> &SegmentSummary {
        &self.summary
    }

    /// True for the output of a cleaning pass that kept no record of its segment: it holds a removal marker,
    /// not frames, and removes the segment when swapped in.
    pub fn is_removal(&self) -> bool {
        self.summary.records == 0
    }

    /// Offset of the last record (`None` only for an empty segment, which a log never keeps).
    pub fn last_offset(&self) -> Option<u64> {
        self.summary.last_offset
    }

    /// Every record, oldest first.
    pub fn records(&self) -> RecordIter<'_> {
        RecordIter::new(&self.bytes, 0, &self.name)
    }

    /// The records from the first one with an offset `>= offset`, found through the sparse index.
    pub fn records_from(&self, offset: u64) -> impl Iterator<Item = Result<Frame<'_>>> + '_ {
        let start = self.seek(offset);
        RecordIter::new(&self.bytes, start, &self.name)
            .filter(move |r| !matches!(r, Ok((_, rec, _)) if rec.offset < offset))
    }

    /// As [`SealedSegment::records_from`], without computing checksums: for a reader that reads the same
    /// frames again with their checksums before acting on what it learned (the cleaner's pass 1).
    pub fn records_from_unverified(&self, offset: u64) -> impl Iterator<Item = Result<Frame<'_>>> + '_ {
        let start = self.seek(offset);
        RecordIter::new(&self.bytes, start, &self.name)
            .unverified()
            .filter(move |r| !matches!(r, Ok((_, rec, _)) if rec.offset < offset))
    }

    /// The byte position to scan from for the first record with an offset `>= offset`: the index entry at or
    /// below it when that entry points at a valid frame carrying its offset, else the segment's start (an
    /// index loaded from a damaged hint costs a longer scan, never a skipped record).
    pub fn seek(&self, offset: u64) -> usize {
        let Some((entry, pos)) = self.summary.index.seek_entry(offset) else { return 0 };
        let Ok(at) = usize::try_from(pos) else { return 0 };
        match self.bytes.get(at..).map(codec::decode) {
            Some(Ok((rec, _))) if rec.offset == entry => at,
            _ => 0,
        }
    }
}

/// Builds a segment by appending whole frames, buffering writes (Kafka's 512 KiB I/O buffer) and keeping the
/// summary as it goes, so the finished segment never has to be scanned again.
#[derive(Debug)]
pub struct SegmentWriter {
    base: u64,
    name: String,
    file: Arc<dyn Segment>,
    buffer: Vec<u8>,
    written: u64,
    summary: SegmentSummary,
}

/// Size of the writer's buffer.
pub const WRITE_BUFFER_BYTES: usize = 512 << 10;

impl SegmentWriter {
    /// A writer appending to the empty `file` called `name` for a segment based at `base`.
    pub fn new(base: u64, name: String, file: Arc<dyn Segment>, index_interval: u64) -> Self {
        let written = file.len();
        SegmentWriter { base, name, file, buffer: Vec::new(), written, summary: SegmentSummary::new(index_interval) }
    }

    /// Appends, in one block, the first bytes of another segment whose records all stay as they are, with
    /// the summary already built for them. Only valid on a writer that has written nothing yet.
    ///
    /// # Errors
    /// [`Error::Io`] from the backend.
    pub(crate) fn append_prefix(&mut self, bytes: &[u8], summary: SegmentSummary) -> Result<()> {
        debug_assert_eq!(self.size(), 0, "a prefix goes first");
        if !bytes.is_empty() {
            self.file.append(bytes).map_err(Error::io("append", &self.name))?;
            self.written += bytes.len() as u64;
        }
        self.summary = summary;
        Ok(())
    }

    /// Appends one encoded frame holding the record `stamp` describes.
    ///
    /// # Errors
    /// [`Error::Corrupt`] if the offset does not follow the previous one; [`Error::Io`] from a flush.
    pub fn append_frame(&mut self, frame: &[u8], stamp: Stamp) -> Result<()> {
        let pos = self.written + self.buffer.len() as u64;
        self.summary.note(self.base, stamp, pos, frame.len() as u64).map_err(|kind| Error::Corrupt {
            segment: self.name.clone(),
            position: pos,
            kind,
        })?;
        if self.buffer.len() + frame.len() > WRITE_BUFFER_BYTES {
            self.flush()?;
        }
        if frame.len() >= WRITE_BUFFER_BYTES {
            self.file.append(frame).map_err(Error::io("append", &self.name))?;
            self.written += frame.len() as u64;
        } else {
            if self.buffer.capacity() == 0 {
                self.buffer.reserve_exact(WRITE_BUFFER_BYTES);
            }
            self.buffer.extend_from_slice(frame);
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
        self.summary.records
    }

    /// Bytes written so far, buffered ones included.
    pub fn size(&self) -> u64 {
        self.written + self.buffer.len() as u64
    }

    /// Ends a copy that kept no record: writes a removal marker for the segment (whose records all lay below
    /// `end`) instead of leaving an empty file, seals and syncs it. The result stands for "this segment is
    /// removed" in a cleaning swap; it holds no frame.
    ///
    /// # Errors
    /// [`Error::Io`] from the backend.
    pub fn finish_removal(mut self, end: u64) -> Result<SealedSegment> {
        debug_assert_eq!(self.summary.records, 0);
        self.buffer.clear();
        if self.written > 0 {
            self.file.truncate(0).map_err(Error::io("truncate", &self.name))?;
            self.written = 0;
        }
        self.buffer.extend_from_slice(&crate::removal::encode(self.base, end));
        self.summary = SegmentSummary::new(self.summary.index.interval());
        self.finish()
    }

    /// Flushes, seals and syncs the file, and returns the finished segment.
    ///
    /// # Errors
    /// [`Error::Io`] from the backend.
    pub fn finish(mut self) -> Result<SealedSegment> {
        self.flush()?;
        self.file.seal().map_err(Error::io("seal", &self.name))?;
        self.file.sync().map_err(Error::io("sync", &self.name))?;
        let bytes = self.file.view().map_err(Error::io("map", &self.name))?;
        Ok(SealedSegment::from_parts(self.base, self.name, self.file, bytes, self.summary))
    }
}

/// Reads frames of a segment that is still being appended to, through [`Segment::read_at`] in chunks.
#[derive(Debug)]
pub(crate) struct ChunkReader {
    file: Arc<dyn Segment>,
    /// Next position in the file not yet in `buf`.
    file_pos: u64,
    end: u64,
    buf: Vec<u8>,
    /// Start of the unread part of `buf`.
    at: usize,
}

const CHUNK_BYTES: usize = 256 << 10;

impl ChunkReader {
    pub(crate) fn new(file: Arc<dyn Segment>, start: u64, end: u64) -> Self {
        ChunkReader { file, file_pos: start, end, buf: Vec::new(), at: 0 }
    }

    /// Position in the file of the next frame.
    pub(crate) fn position(&self) -> u64 {
        self.file_pos - (self.buf.len() - self.at) as u64
    }

    /// Makes at least `want` unread bytes available if the file has them; returns how many are.
    fn fill(&mut self, want: usize) -> std::io::Result<usize> {
        let have = self.buf.len() - self.at;
        if have >= want || self.file_pos >= self.end {
            return Ok(have);
        }
        self.buf.drain(..self.at);
        self.at = 0;
        let left = self.end - self.file_pos;
        let take = (want.max(CHUNK_BYTES) - have.min(want.max(CHUNK_BYTES))) as u64;
        let take = take.min(left) as usize;
        let old = self.buf.len();
        self.buf.resize(old + take, 0);
        let read = self.buf.get_mut(old..).unwrap_or_default();
        self.file.read_at(self.file_pos, read)?;
        self.file_pos += take as u64;
        Ok(self.buf.len())
    }

    /// The next frame: `Ok(None)` at the end, `Err` with the kind of the first bad frame (a torn tail).
    pub(crate) fn next_frame(&mut self) -> std::io::Result<Option<Result<Frame<'_>, CorruptKind>>> {
        let pos = self.position();
        let have = self.fill(codec::FRAME_HEADER_BYTES)?;
        if have == 0 {
            return Ok(None);
        }
        let head = self.buf.get(self.at..).unwrap_or_default();
        let frame_len = match codec::frame_header(head) {
            Ok((len, _)) => len,
            Err(kind) => return Ok(Some(Err(kind))),
        };
        self.fill(frame_len)?;
        let ChunkReader { buf, at, .. } = self;
        let rest = buf.get(*at..).unwrap_or_default();
        match codec::decode(rest) {
            Ok((rec, len)) => {
                *at += len;
                Ok(Some(Ok((pos, rec, len))))
            }
            Err(kind) => Ok(Some(Err(kind))),
        }
    }
}
