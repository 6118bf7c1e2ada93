//! Reading a segment's batches, in windows of whole batches: from a mapped view (one window, zero-copy) or
//! through reads (windows of about [`WINDOW_BYTES`], for the active segment and for files another process
//! may still change, which are never mapped).
//!
//! A consumer asks the [`SegmentScan`] for a [`Window`] and iterates the batches inside it with a plain
//! iterator; everything it borrows from one window stays valid until it asks for the next, so a pass can
//! collect a run of keys across many batches (a whole mapped segment, or a window's worth) before handing them
//! to a map.

use std::cell::Cell;
use std::sync::Arc;

use crate::error::{CorruptKind, Error, Result};
use crate::format::{BatchRef, Format, LENGTH_PREFIX_BYTES};
use crate::record::RecordRef;
use crate::segment::Stamp;
pub use crate::storage::SegmentSource;
use crate::storage::{Segment, SegmentBytes};

/// Bytes a read-through scan reads at a time (a window grows to hold a larger batch).
pub const WINDOW_BYTES: usize = 1 << 20;

pub use crate::storage::RELEASE_STEP_BYTES;

/// What an iterator over a mapped window lets go behind it: the mapping and where the window starts in it.
#[derive(Debug, Clone, Copy)]
struct Behind<'w> {
    mapping: &'w SegmentBytes,
    /// Position in the mapping of the window's first byte.
    origin: usize,
    /// Bytes of the window already let go.
    released: usize,
}

impl Behind<'_> {
    /// Lets the window's memory up to `at` go once a step's worth has passed.
    #[inline]
    fn passed(&mut self, at: usize) {
        if at - self.released >= RELEASE_STEP_BYTES {
            self.mapping.release(self.origin + self.released, self.origin + at);
            self.released = at;
        }
    }
}

/// A scan of the batches of one segment between two byte positions.
#[derive(Debug)]
pub struct SegmentScan<'a> {
    format: Format,
    name: &'a str,
    source: &'a SegmentSource,
    /// Next byte to deliver.
    pos: u64,
    end: u64,
    buf: Vec<u8>,
    verify: bool,
    finished: bool,
    /// Where a zero fill (a preallocated segment's unwritten space) ends the data, once found.
    zero_fill: Cell<Option<u64>>,
    /// Mapped bytes before this position were handed out and let go.
    released: u64,
}

impl Drop for SegmentScan<'_> {
    /// The last window's memory goes too.
    fn drop(&mut self) {
        self.release_behind();
    }
}

impl<'a> SegmentScan<'a> {
    /// Scans the bytes `start..end` of `source` (the segment called `name`, for errors), checking every
    /// batch's checksum when `verify` is set.
    pub fn new(format: Format, name: &'a str, source: &'a SegmentSource, start: u64, end: u64, verify: bool) -> Self {
        SegmentScan {
            format,
            name,
            source,
            pos: start,
            end,
            buf: Vec::new(),
            verify,
            finished: false,
            zero_fill: Cell::new(None),
            released: start,
        }
    }

    /// Lets the memory of the mapped bytes handed out so far go (a hint; they read the same afterwards).
    fn release_behind(&mut self) {
        if let SegmentSource::Mapped(bytes) = self.source
            && self.pos > self.released
        {
            let to_usize = |p: u64| usize::try_from(p).unwrap_or(usize::MAX);
            bytes.release(to_usize(self.released), to_usize(self.pos));
            self.released = self.pos;
        }
    }

    /// Where the data ends in a zero fill, if the scan met one (Kafka's preallocated segments).
    pub fn zero_fill(&self) -> Option<u64> {
        self.zero_fill.get()
    }

    /// The next window of whole batches, `Ok(None)` at the end. A window ends either at a batch boundary or
    /// at the end of the scan; damage shows as an `Err` from its batch iterator.
    ///
    /// # Errors
    /// [`Error::Io`] from a read; a batch larger than its format allows is [`Error::Corrupt`].
    pub fn next_window(&mut self) -> Result<Option<Window<'_>>> {
        if self.finished || self.pos >= self.end {
            return Ok(None);
        }
        let start = self.pos;
        if let Some(bytes) = self.source.mapped() {
            self.release_behind();
            let (from, to) = (usize::try_from(start).unwrap_or(usize::MAX), usize::try_from(self.end).unwrap_or(0));
            let bytes = bytes.get(from..to.min(bytes.len())).unwrap_or_default();
            self.finished = true;
            self.pos = self.end;
            return Ok(Some(self.window(bytes, start, true)));
        }
        let SegmentSource::Reads(file) = self.source else { return Ok(None) };
        let left = self.end - start;
        let take = usize::try_from(left).unwrap_or(usize::MAX).min(WINDOW_BYTES);
        self.buf.resize(take, 0);
        file.read_at(start, &mut self.buf).map_err(Error::io("read", self.name))?;
        // Walk the batch lengths to the last batch that is whole in the buffer.
        let mut at = 0usize;
        loop {
            let head = &self.buf[at..];
            if head.is_empty() {
                break;
            }
            if self.format.is_zero_header(head) {
                if at > 0 {
                    break;
                }
                if self.rest_is_zero(file, start)? {
                    self.zero_fill.set(Some(start));
                    self.finished = true;
                    return Ok(None);
                }
                // Zeros followed by something else: what is there is shown, as damage, by the batches.
                break;
            }
            let probe = &head[..head.len().min(LENGTH_PREFIX_BYTES)];
            let len = match self.format.batch_len(probe) {
                Ok(len) if len <= self.format.max_batch_bytes() => len,
                _ => break,
            };
            if at + len <= self.buf.len() {
                at += len;
                continue;
            }
            if at == 0 && start + len as u64 <= self.end {
                // One batch larger than a window: read all of it.
                let have = self.buf.len();
                self.buf.resize(len, 0);
                file.read_at(start + have as u64, &mut self.buf[have..]).map_err(Error::io("read", self.name))?;
                at = len;
            }
            break;
        }
        let len = if at == 0 { self.buf.len() } else { at };
        if at == 0 {
            // The first batch is damaged or cut off: the window shows it, and the scan ends after it.
            self.finished = true;
        }
        self.pos = start + len as u64;
        let reaches_end = self.pos == self.end;
        let (format, name, verify) = (self.format, self.name, self.verify);
        Ok(Some(Window {
            format,
            name,
            verify,
            bytes: &self.buf[..len],
            start,
            reaches_end,
            zero_fill: &self.zero_fill,
            mapping: None,
        }))
    }

    fn window<'w>(&'w self, bytes: &'w [u8], start: u64, reaches_end: bool) -> Window<'w> {
        let mapping = match self.source {
            SegmentSource::Mapped(m) => Some(m),
            SegmentSource::Reads(_) => None,
        };
        Window {
            format: self.format,
            name: self.name,
            verify: self.verify,
            bytes,
            start,
            reaches_end,
            zero_fill: &self.zero_fill,
            mapping,
        }
    }

    /// True when every byte from `from` to the end of the scan is zero (read in windows).
    fn rest_is_zero(&self, file: &Arc<dyn Segment>, from: u64) -> Result<bool> {
        let mut buf = vec![0u8; WINDOW_BYTES.min(usize::try_from(self.end - from).unwrap_or(usize::MAX))];
        let mut at = from;
        while at < self.end {
            let n = usize::try_from(self.end - at).unwrap_or(usize::MAX).min(buf.len());
            file.read_at(at, &mut buf[..n]).map_err(Error::io("read", self.name))?;
            if buf[..n].iter().any(|&b| b != 0) {
                return Ok(false);
            }
            at += n as u64;
        }
        Ok(true)
    }
}

/// Whole batches of a segment, borrowed from a [`SegmentScan`].
#[derive(Debug)]
pub struct Window<'w> {
    format: Format,
    name: &'w str,
    verify: bool,
    bytes: &'w [u8],
    /// Position in the segment of `bytes[0]`.
    start: u64,
    /// The window runs to the end of the scan.
    reaches_end: bool,
    zero_fill: &'w Cell<Option<u64>>,
    /// The mapping the bytes are borrowed from, if they are.
    mapping: Option<&'w SegmentBytes>,
}

impl<'w> Window<'w> {
    fn behind(&self) -> Option<Behind<'w>> {
        self.mapping.map(|m| Behind {
            mapping: m,
            origin: usize::try_from(self.start).unwrap_or(usize::MAX),
            released: 0,
        })
    }

    /// The window's bytes.
    pub fn bytes(&self) -> &'w [u8] {
        self.bytes
    }

    /// Position in the segment of its first byte.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// Its batches in order; on the first bad one an `Err` naming the segment and position, then nothing.
    #[inline]
    pub fn batches(&self) -> Batches<'w> {
        Batches {
            format: self.format,
            name: self.name,
            verify: self.verify,
            bytes: self.bytes,
            start: self.start,
            reaches_end: self.reaches_end,
            at: 0,
            failed: false,
            zero_fill: self.zero_fill,
            behind: self.behind(),
        }
    }
}

/// A batch and where it starts in its segment.
#[derive(Debug, Clone, Copy)]
pub struct Placed<'w> {
    /// Byte position of the batch in the segment.
    pub position: u64,
    /// The batch.
    pub batch: BatchRef<'w>,
}

/// The batches of a [`Window`].
#[derive(Debug, Clone)]
pub struct Batches<'w> {
    format: Format,
    name: &'w str,
    verify: bool,
    bytes: &'w [u8],
    start: u64,
    reaches_end: bool,
    at: usize,
    failed: bool,
    zero_fill: &'w Cell<Option<u64>>,
    behind: Option<Behind<'w>>,
}

impl<'w> Batches<'w> {
    /// Byte position in the segment of the next batch.
    pub fn position(&self) -> u64 {
        self.start + self.at as u64
    }
}

impl<'w> Iterator for Batches<'w> {
    type Item = Result<Placed<'w>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let rest = self.bytes.get(self.at..)?;
        if rest.is_empty() {
            return None;
        }
        let position = self.start + self.at as u64;
        if self.format.is_zero_header(rest) {
            self.failed = true;
            if self.reaches_end && rest.iter().all(|&b| b == 0) {
                self.zero_fill.set(Some(position));
                return None;
            }
            // Zeros where a batch should start, with data after them: not a preallocated tail.
            return Some(Err(Error::Corrupt { segment: self.name.to_owned(), position, kind: CorruptKind::ZeroFill }));
        }
        if let Some(b) = &mut self.behind {
            b.passed(self.at);
        }
        match self.format.parse(rest, self.verify) {
            Ok(batch) => {
                self.at += batch.len();
                Some(Ok(Placed { position, batch }))
            }
            Err(kind) => {
                self.failed = true;
                Some(Err(Error::Corrupt { segment: self.name.to_owned(), position, kind }))
            }
        }
    }
}

/// A native frame of a window: where it starts, its record and its length.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'w> {
    /// Byte position of the frame in the segment.
    pub position: u64,
    /// Its record.
    pub record: RecordRef<'w>,
    /// Its bytes.
    pub bytes: &'w [u8],
}

impl Frame<'_> {
    /// What a segment's summary learns from it.
    #[inline]
    pub fn stamp(&self) -> Stamp {
        Stamp {
            base_offset: self.record.offset,
            last_offset: self.record.offset,
            records: 1,
            max_timestamp: self.record.timestamp,
            delete_horizon: self.record.delete_horizon,
        }
    }
}

/// The frames of a [`Window`] of a native segment: the batch-of-one fast path of [`Batches`], yielding each
/// record without wrapping it in a [`BatchRef`]. On the first bad frame an `Err` naming the segment and
/// position, then nothing.
#[derive(Debug, Clone)]
pub struct Frames<'w> {
    format: Format,
    name: &'w str,
    verify: bool,
    bytes: &'w [u8],
    start: u64,
    at: usize,
    failed: bool,
    behind: Option<Behind<'w>>,
}

impl<'w> Window<'w> {
    /// Its frames, for a window of a format whose batches are one record each (`None` otherwise: use
    /// [`Window::batches`]).
    #[inline]
    pub fn frames(&self) -> Option<Frames<'w>> {
        self.format.frames_are_records().then_some(Frames {
            format: self.format,
            name: self.name,
            verify: self.verify,
            bytes: self.bytes,
            start: self.start,
            at: 0,
            failed: false,
            behind: self.behind(),
        })
    }
}

/// A frame's offset and key, as [`Frames::next_key`] reads them.
#[derive(Debug, Clone, Copy)]
pub struct FrameKey<'w> {
    /// Its record's offset.
    pub offset: u64,
    /// Its record's key.
    pub key: Option<&'w [u8]>,
    /// Its length in bytes.
    pub len: usize,
}

impl<'w> Frames<'w> {
    /// Byte position in the segment of the next frame.
    #[inline]
    pub fn position(&self) -> u64 {
        self.start + self.at as u64
    }

    /// The next frame's offset and key only, for a pass that reads the frames whole again, checksums
    /// included, before acting on them (the cleaner's pass 1): no checksum, and nothing past the key read
    /// ([`Format::decode_frame_key`]), whatever the window's `verify`.
    ///
    /// # Errors
    /// [`Error::Corrupt`] naming the segment and the frame, as [`Iterator::next`].
    #[inline]
    pub fn next_key(&mut self) -> Option<Result<FrameKey<'w>>> {
        self.step(|format, rest, _| {
            let (offset, key, len) = format.decode_frame_key(rest)?;
            Ok((FrameKey { offset, key, len }, len))
        })
    }

    /// The next frame by `decode` (the format, the bytes from the frame on, and the frame's position; what it
    /// read and the frame's length), moving past it; after an error, nothing more.
    ///
    /// Always inlined, as is [`Iterator::next`]: called, it returned its frame (128 bytes) through memory, and
    /// pass 2's copy of it into its run of lookups stalled on reading back what the call had just stored
    /// (`perf annotate`: 46% of `copy_segments`' samples on that one load). Inlined, the native pass 2 of
    /// `pass-bench` went from 51-55 to 47-53 ns a record (6M records, 1M keys).
    #[inline(always)]
    fn step<T>(
        &mut self,
        decode: impl FnOnce(Format, &'w [u8], u64) -> std::result::Result<(T, usize), CorruptKind>,
    ) -> Option<Result<T>> {
        if self.failed {
            return None;
        }
        let rest = self.bytes.get(self.at..).filter(|r| !r.is_empty())?;
        let position = self.start + self.at as u64;
        if let Some(b) = &mut self.behind {
            b.passed(self.at);
        }
        crate::cache::scan_ahead(rest.as_ptr());
        match decode(self.format, rest, position) {
            Ok((read, len)) => {
                self.at += len;
                Some(Ok(read))
            }
            Err(kind) => {
                self.failed = true;
                Some(Err(Error::Corrupt { segment: self.name.to_owned(), position, kind }))
            }
        }
    }
}

impl<'w> Iterator for Frames<'w> {
    type Item = Result<Frame<'w>>;

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        let verify = self.verify;
        self.step(|format, rest, position| {
            let (record, len) = format.decode_frame(rest, verify)?;
            Ok((Frame { position, record, bytes: &rest[..len] }, len))
        })
    }
}

/// The bytes of the one batch at `pos` of `source` (`buf` holds them when they are read), `Ok(None)` at or
/// past `end`.
///
/// # Errors
/// [`Error::Corrupt`] for a length that runs past `end` or is impossible; [`Error::Io`].
pub(crate) fn batch_bytes_at<'b>(
    format: Format,
    name: &str,
    source: &'b SegmentSource,
    pos: u64,
    end: u64,
    buf: &'b mut Vec<u8>,
) -> Result<Option<&'b [u8]>> {
    if pos >= end {
        return Ok(None);
    }
    let corrupt = |kind| Error::Corrupt { segment: name.to_owned(), position: pos, kind };
    let room = end - pos;
    let mut head = [0u8; LENGTH_PREFIX_BYTES];
    let n = usize::try_from(room).unwrap_or(usize::MAX).min(head.len());
    source.read_at(pos, &mut head[..n]).map_err(Error::io("read", name))?;
    let len = format.batch_len(&head[..n]).map_err(corrupt)?;
    if len as u64 > room {
        return Err(corrupt(CorruptKind::Truncated { needed: len as u64, available: room }));
    }
    if let Some(bytes) = source.mapped() {
        let at = usize::try_from(pos).unwrap_or(usize::MAX);
        return Ok(bytes.get(at..at + len));
    }
    buf.resize(len, 0);
    source.read_at(pos, buf).map_err(Error::io("read", name))?;
    Ok(Some(&buf[..]))
}
