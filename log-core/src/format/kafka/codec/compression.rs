//! The codecs of Kafka's record batches (attributes bits 0–2). A batch this project rewrites is compressed
//! exactly as Kafka's own cleaner compresses it (each codec at its default level, whatever the topic's
//! `compression.*.level`, through the library Kafka's Java code calls), so its bytes are Kafka's:
//!
//! | codec | writes (as Kafka) | reads |
//! |---|---|---|
//! | gzip | stock zlib at level 6 through `flate2` (Java's `Deflater` is zlib; the gzip header Java 17 writes) | zlib |
//! | lz4 | Kafka's own frame (`Lz4BlockOutputStream`: 64 KiB independent blocks, no checksums) over the C library's `LZ4_compress_default` (lz4-java's fast compressor, which Kafka takes at its default level) | `lz4_flex` (any LZ4 frame) |
//! | zstd | libzstd 1.5.7 (what zstd-jni 1.5.7 bundles), streaming at level 3, no content size, no checksum, flushed before it is ended | libzstd |
//! | snappy | `snap` in the xerial framing Java clients write (snappy-java's C++ snappy may pick other matches: a few bytes a chunk differ) | `snap` (xerial or a raw block, as librdkafka writes) |
//!
//! Tests pin each writer against batches Kafka 4.4's Java code wrote, so that a library upgrade that changes
//! the output fails.
//!
//! Decompression is bounded: the output may not pass a limit the caller gives (a hostile batch cannot make
//! us allocate more than that), and a snappy block whose header announces more is refused before anything is
//! allocated.

use std::io::Read;

use serde::Serialize;

/// A batch's codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// Records stored as they are.
    None,
    /// A gzip member.
    Gzip,
    /// Snappy: xerial-framed or one raw block (both are read; xerial is written, as Java clients do).
    Snappy,
    /// An LZ4 frame.
    Lz4,
    /// A zstd frame.
    Zstd,
}

impl Compression {
    /// Every codec, in attribute order.
    pub const ALL: [Compression; 5] =
        [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd];

    /// The codec of attribute bits 0–2; `None` for the values Kafka does not define (5–7).
    pub fn from_bits(bits: u8) -> Option<Compression> {
        Self::ALL.get(usize::from(bits)).copied()
    }

    /// The attribute bits.
    pub fn bits(self) -> u8 {
        self as u8
    }

    /// The codec's name, as Kafka's `compression.type` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }
}

/// Why a block could not be decompressed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecompressError {
    /// The codec reported the block as malformed.
    #[error("{codec} data is malformed: {reason}")]
    Malformed {
        /// The codec.
        codec: &'static str,
        /// What the codec said.
        reason: String,
    },
    /// The output would pass the limit.
    #[error("{codec} data expands past {limit} bytes")]
    TooLarge {
        /// The codec.
        codec: &'static str,
        /// The limit.
        limit: usize,
    },
}

/// The xerial snappy framing's magic (Java's `SnappyOutputStream`).
const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
/// The block size Java clients use for xerial framing.
const XERIAL_BLOCK: usize = 32 * 1024;

/// Decompresses `data` into `buf` and returns how many bytes it produced, `buf[..n]`: what [`decompress`]
/// gives, from a buffer reused across batches. Its bytes past `n` are left from earlier batches, so that the
/// common case (Kafka's LZ4 frames, a batch of a few kilobytes in blocks of up to 64 KiB or more) decodes
/// straight into the buffer without clearing a block's worth of it for every batch. Anything the fast path
/// does not take (another codec, a frame with a dictionary, a check that fails) goes through [`decompress`],
/// whose error is the answer.
///
/// # Errors
/// As [`decompress`].
pub fn decompress_reusing(
    codec: Compression,
    data: &[u8],
    limit: usize,
    buf: &mut Vec<u8>,
) -> Result<usize, DecompressError> {
    if codec == Compression::Lz4
        && let Some(n) = lz4_frame_into(data, limit, buf)
    {
        return Ok(n);
    }
    decompress(codec, data, limit, buf)?;
    Ok(buf.len())
}

/// LZ4 frame (the format Kafka's clients write: magic, a descriptor, blocks, an end mark) decoded into `buf`
/// from its start; `None` for anything but a well-formed frame within `limit` (the caller then takes the
/// general decoder, which names the problem). Checks the descriptor's checksum, and the blocks' and the
/// content's when the frame carries them, as the general decoder does.
fn lz4_frame_into(data: &[u8], limit: usize, buf: &mut Vec<u8>) -> Option<usize> {
    const MAGIC: u32 = 0x184D_2204;
    let u32_at = |at: usize| data.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    if u32_at(0)? != MAGIC {
        return None;
    }
    let (flg, bd) = (*data.get(4)?, *data.get(5)?);
    // Version 01, no reserved bits, no dictionary.
    if flg >> 6 != 1 || flg & 0b10 != 0 || flg & 0b1 != 0 || bd & 0x8F != 0 {
        return None;
    }
    let independent = flg & 0x20 != 0;
    let block_checksums = flg & 0x10 != 0;
    let content_size = flg & 0x08 != 0;
    let content_checksum = flg & 0x04 != 0;
    let block_max = match (bd >> 4) & 0x7 {
        4 => 64 << 10,
        5 => 256 << 10,
        6 => 1 << 20,
        7 => 4 << 20,
        _ => return None,
    };
    let descriptor_end = 6 + if content_size { 8 } else { 0 };
    let hc = *data.get(descriptor_end)?;
    if (xxhash_rust::xxh32::xxh32(data.get(4..descriptor_end)?, 0) >> 8) as u8 != hc {
        return None;
    }
    let mut pos = descriptor_end + 1;
    let mut n = 0usize;
    loop {
        let size = u32_at(pos)?;
        pos += 4;
        if size == 0 {
            break;
        }
        let stored = size & 0x8000_0000 != 0;
        let len = (size & 0x7FFF_FFFF) as usize;
        if len > block_max {
            return None;
        }
        let block = data.get(pos..pos + len)?;
        pos += len;
        if block_checksums {
            if xxhash_rust::xxh32::xxh32(block, 0) != u32_at(pos)? {
                return None;
            }
            pos += 4;
        }
        // Room for a whole block after what is produced (grown once, then reused).
        let room = n.checked_add(block_max)?;
        if room > limit.saturating_add(block_max) {
            return None;
        }
        if buf.len() < room {
            buf.resize(room, 0);
        }
        let written = if stored {
            buf[n..n + len].copy_from_slice(block);
            len
        } else if independent || n == 0 {
            lz4_flex::block::decompress_into(block, &mut buf[n..room]).ok()?
        } else {
            // Linked blocks may copy from the 64 KiB before them.
            let (before, out) = buf.split_at_mut(n);
            let dict = &before[n.saturating_sub(64 << 10)..];
            lz4_flex::block::decompress_into_with_dict(block, &mut out[..block_max], dict).ok()?
        };
        n += written;
        if n > limit {
            return None;
        }
    }
    if content_checksum && xxhash_rust::xxh32::xxh32(&buf[..n], 0) != u32_at(pos)? {
        return None;
    }
    if content_size && u64::from_le_bytes(data.get(6..14)?.try_into().ok()?) != n as u64 {
        return None;
    }
    Some(n)
}

/// Decompresses `data` into `out` (cleared first), producing at most `limit` bytes.
///
/// # Errors
/// [`DecompressError`] for malformed data or output past `limit`.
pub fn decompress(codec: Compression, data: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), DecompressError> {
    out.clear();
    let name = codec.name();
    let malformed = |e: &dyn std::fmt::Display| DecompressError::Malformed { codec: name, reason: e.to_string() };
    match codec {
        Compression::None => {
            if data.len() > limit {
                return Err(DecompressError::TooLarge { codec: name, limit });
            }
            out.extend_from_slice(data);
            Ok(())
        }
        Compression::Gzip => {
            if gzip_with_libdeflate(data, limit, out)? {
                return Ok(());
            }
            // Anything libdeflate does not take in one go (several members, bytes after the last one, a size
            // trailer that lies): member by member, as Java's GZIPInputStream reads them.
            out.clear();
            gzip_members(data, limit, out)
        }
        Compression::Lz4 => bounded_read(lz4_flex::frame::FrameDecoder::new(data), name, limit, out),
        Compression::Zstd => zstd_frame(data, limit, out),
        Compression::Snappy if data.starts_with(&XERIAL_MAGIC) => {
            // Magic, version (i32), compatible version (i32), then blocks: length (i32, big-endian) + raw block.
            let mut pos = XERIAL_MAGIC.len() + 8;
            if data.len() < pos {
                return Err(malformed(&"xerial header cut off"));
            }
            while pos < data.len() {
                let len = data.get(pos..pos + 4).ok_or_else(|| malformed(&"xerial block length cut off"))?;
                let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
                pos += 4;
                let block = data.get(pos..pos.saturating_add(len)).ok_or_else(|| malformed(&"xerial block cut off"))?;
                raw_snappy(block, limit, out)?;
                pos += len;
            }
            Ok(())
        }
        Compression::Snappy => raw_snappy(data, limit, out),
    }
}

thread_local! {
    /// This thread's zstd decompression context, reused from batch to batch (a new one allocates and clears
    /// its window for every batch of a few kilobytes).
    static ZSTD_D: std::cell::RefCell<Option<zstd::zstd_safe::DCtx<'static>>> = const { std::cell::RefCell::new(None) };
    /// This thread's zstd compression context, reused (level 3 set once; each batch a new session).
    static ZSTD_C: std::cell::RefCell<Option<zstd::zstd_safe::CCtx<'static>>> = const { std::cell::RefCell::new(None) };
    /// This thread's gzip inflater.
    static INFLATE: std::cell::RefCell<Option<super::inflate::Inflater>> = const { std::cell::RefCell::new(None) };
    /// This thread's deflater at Kafka's level, reset for every batch.
    static DEFLATE: std::cell::RefCell<Option<flate2::Compress>> = const { std::cell::RefCell::new(None) };
}

/// The zstd frames of `data` into `out` (cleared), at most `limit` bytes, growing `out` as they decode (Kafka's
/// frames carry no content size) and never past `limit` + 1: frame after frame, skippable ones skipped, until
/// the input ends, as zstd-jni's stream reads them.
fn zstd_frame(data: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), DecompressError> {
    use zstd::zstd_safe::{DCtx, InBuffer, OutBuffer, ResetDirective};
    let malformed = |code: usize| DecompressError::Malformed {
        codec: "zstd",
        reason: zstd::zstd_safe::get_error_name(code).to_owned(),
    };
    ZSTD_D.with(|cell| {
        let mut cell = cell.borrow_mut();
        let dctx = cell.get_or_insert_with(DCtx::create);
        dctx.reset(ResetDirective::SessionOnly).map_err(malformed)?;
        let mut input = InBuffer::around(data);
        loop {
            if out.len() > limit {
                return Err(DecompressError::TooLarge { codec: "zstd", limit });
            }
            if out.capacity() == out.len() {
                // Grow geometrically, bounded by the limit (a byte past it tells it was passed).
                let want = out.len().max(data.len() * 4).max(16 << 10).min(limit + 1 - out.len()).max(1);
                out.reserve(want);
            }
            let pos = out.len();
            let left = {
                let mut output = OutBuffer::around_pos(out, pos);
                dctx.decompress_stream(&mut output, &mut input).map_err(malformed)?
            };
            if left == 0 && input.pos() == data.len() {
                // The last frame is whole (zstd-jni's stream reads frame after frame, skippable ones skipped,
                // until its input ends).
                if out.len() > limit {
                    return Err(DecompressError::TooLarge { codec: "zstd", limit });
                }
                return Ok(());
            }
            if left != 0 && input.pos() == data.len() && out.len() < out.capacity() {
                return Err(DecompressError::Malformed { codec: "zstd", reason: "the frame is cut off".into() });
            }
        }
    })
}

/// Every gzip member of `data` into `out`, at most `limit` bytes, as Java's `GZIPInputStream` (Kafka's gzip
/// reader) reads them: the first must be whole; after each, more bytes are another member when they start with
/// a gzip header that reads, and are ignored otherwise (`readTrailer` takes a header that does not read for the
/// end of the stream).
fn gzip_members(data: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), DecompressError> {
    let mut rest = data;
    let mut first = true;
    while first || (!rest.is_empty() && gzip_header_len(rest).is_some()) {
        first = false;
        let mut member = flate2::bufread::GzDecoder::new(rest);
        let left = limit.saturating_sub(out.len());
        bounded_read(&mut member, "gzip", left, out).map_err(|e| match e {
            DecompressError::TooLarge { .. } => DecompressError::TooLarge { codec: "gzip", limit },
            other => other,
        })?;
        rest = member.into_inner();
    }
    Ok(())
}

/// The length of the gzip header at the start of `data` (RFC 1952: magic, method 8, flags, then the optional
/// extra field, name, comment and header CRC the flags say), or `None` when it is not one whole.
fn gzip_header_len(data: &[u8]) -> Option<usize> {
    if data.len() < 10 || data[0] != 0x1f || data[1] != 0x8b || data[2] != 8 {
        return None;
    }
    let flags = data[3];
    let mut at = 10usize;
    if flags & 0x04 != 0 {
        let xlen = usize::from(u16::from_le_bytes([*data.get(at)?, *data.get(at + 1)?]));
        at = at.checked_add(2 + xlen)?;
    }
    for bit in [0x08, 0x10] {
        if flags & bit != 0 {
            at += data.get(at..)?.iter().position(|&b| b == 0)? + 1;
        }
    }
    if flags & 0x02 != 0 {
        at += 2;
    }
    (at <= data.len()).then_some(at)
}

/// `data` into `out` with libdeflate when it is one gzip member and nothing after it, sized by its trailer's
/// size: `Ok(false)` when it is not (several members, bytes after the member, a size trailer that lies; the
/// caller then reads it member by member).
fn gzip_with_libdeflate(data: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<bool, DecompressError> {
    let Some(tail) = data.len().checked_sub(4).and_then(|at| data.get(at..)) else { return Ok(false) };
    let size = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]) as usize;
    // A trailer past the limit may be bytes after the last member (ignored): the member-by-member read judges.
    if size > limit {
        return Ok(false);
    }
    out.clear();
    out.resize(size, 0);
    INFLATE.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            *cell = super::inflate::Inflater::new();
        }
        let Some(inflater) = cell.as_mut() else { return Ok(false) };
        match inflater.member(data, out) {
            super::inflate::Member::Whole { read, written } => Ok(read == data.len() && written == size),
            _ => Ok(false),
        }
    })
}

/// Appends one raw snappy block's output to `out`, refusing before allocating when its header announces
/// more than `limit` bytes in all.
fn raw_snappy(block: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), DecompressError> {
    let malformed = |e: snap::Error| DecompressError::Malformed { codec: "snappy", reason: e.to_string() };
    let n = snap::raw::decompress_len(block).map_err(malformed)?;
    if out.len().saturating_add(n) > limit {
        return Err(DecompressError::TooLarge { codec: "snappy", limit });
    }
    let start = out.len();
    out.resize(start + n, 0);
    let written = snap::raw::Decoder::new().decompress(block, &mut out[start..]).map_err(malformed)?;
    out.truncate(start + written);
    Ok(())
}

fn bounded_read(
    reader: impl Read,
    codec: &'static str,
    limit: usize,
    out: &mut Vec<u8>,
) -> Result<(), DecompressError> {
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    reader.take(cap).read_to_end(out).map_err(|e| DecompressError::Malformed { codec, reason: e.to_string() })?;
    if out.len() > limit {
        return Err(DecompressError::TooLarge { codec, limit });
    }
    Ok(())
}

/// The zstd level Kafka's cleaner and its Java producer write at (`CompressionType.ZSTD`'s default, zstd's).
pub const ZSTD_LEVEL: i32 = 3;
/// The gzip level Kafka writes at (`Deflater.DEFAULT_COMPRESSION`, zlib's 6).
pub const GZIP_LEVEL: u32 = 6;
/// The block size of Kafka's LZ4 frames (`Lz4BlockOutputStream`'s default, 64 KiB: the descriptor's `BD` 0x40).
const LZ4_BLOCK: usize = 64 << 10;

/// Compresses `data` with `codec`, appending to `out`, as Kafka 4.4 compresses a batch's records (see the
/// module's table).
pub fn compress(codec: Compression, data: &[u8], out: &mut Vec<u8>) {
    match codec {
        Compression::None => out.extend_from_slice(data),
        Compression::Gzip => gzip_as_kafka(data, out),
        Compression::Lz4 => kafka_lz4_frame(data, out),
        Compression::Zstd => zstd_as_kafka(data, out),
        Compression::Snappy => {
            out.extend_from_slice(&XERIAL_MAGIC);
            out.extend_from_slice(&1i32.to_be_bytes());
            out.extend_from_slice(&1i32.to_be_bytes());
            let mut encoder = snap::raw::Encoder::new();
            for chunk in data.chunks(XERIAL_BLOCK) {
                let block = encoder.compress_vec(chunk).unwrap_or_default();
                out.extend_from_slice(&(block.len() as u32).to_be_bytes());
                out.extend_from_slice(&block);
            }
        }
    }
}

/// The gzip header Java's `GZIPOutputStream` writes (no name, no time, OS "unknown").
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

/// gzip as Kafka's `GZIPOutputStream` writes it: Java's header, a raw deflate stream from zlib at level 6 with
/// a 32 KiB window, then the CRC-32 and size trailer. The deflater is this thread's, reset for every batch.
fn gzip_as_kafka(data: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&GZIP_HEADER);
    DEFLATE.with(|cell| {
        let mut cell = cell.borrow_mut();
        let deflater = cell.get_or_insert_with(|| flate2::Compress::new(flate2::Compression::new(GZIP_LEVEL), false));
        deflater.reset();
        let start_in = deflater.total_in();
        loop {
            out.reserve((data.len() / 2).max(4096));
            let consumed = usize::try_from(deflater.total_in() - start_in).unwrap_or(data.len()).min(data.len());
            match deflater.compress_vec(&data[consumed..], out, flate2::FlushCompress::Finish) {
                Ok(flate2::Status::StreamEnd) => break,
                Ok(_) => continue,
                // zlib fails only on a bad stream state, which a reset never leaves.
                Err(_) => break,
            }
        }
    });
    let mut crc = flate2::Crc::new();
    crc.update(data);
    out.extend_from_slice(&crc.sum().to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
}

/// zstd as Kafka's `ZstdOutputStreamNoFinalizer` writes it: a streaming frame at level 3 with no pledged
/// content size and no checksum (all the input given as it continues), flushed before it is ended, so that it
/// ends with an empty last block. The context is this thread's, a new session for every batch.
fn zstd_as_kafka(data: &[u8], out: &mut Vec<u8>) {
    use zstd::zstd_safe::{CCtx, CParameter, InBuffer, OutBuffer, ResetDirective, zstd_sys::ZSTD_EndDirective};
    let start = out.len();
    let ok = ZSTD_C.with(|cell| -> Result<(), usize> {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            let mut c = CCtx::create();
            c.set_parameter(CParameter::CompressionLevel(ZSTD_LEVEL))?;
            *cell = Some(c);
        }
        let Some(cctx) = cell.as_mut() else { return Ok(()) };
        cctx.reset(ResetDirective::SessionOnly)?;
        let mut input = InBuffer::around(data);
        for directive in
            [ZSTD_EndDirective::ZSTD_e_continue, ZSTD_EndDirective::ZSTD_e_flush, ZSTD_EndDirective::ZSTD_e_end]
        {
            loop {
                out.reserve(zstd::zstd_safe::compress_bound(data.len() - input.pos()).max(64));
                let pos = out.len();
                let mut output = OutBuffer::around_pos(out, pos);
                let left = cctx.compress_stream2(&mut output, &mut input, directive)?;
                let done = match directive {
                    ZSTD_EndDirective::ZSTD_e_continue => input.pos() == data.len(),
                    _ => left == 0,
                };
                if done {
                    break;
                }
            }
        }
        Ok(())
    });
    if ok.is_err() {
        // Only an allocation libzstd could not make fails here; the batch is then refused by the reader that
        // checks it (an empty frame never decodes to the records).
        out.truncate(start);
    }
}

/// LZ4 as Kafka's `Lz4BlockOutputStream` writes it: magic, `FLG` 0x60 (version 1, independent blocks, no
/// checksums, no content size), `BD` 0x40 (64 KiB blocks), the descriptor's checksum byte; then each 64 KiB of
/// input as a block (its little-endian length, the high bit set when it is stored as it is because
/// compressing did not make it smaller); then an end mark of four zero bytes.
fn kafka_lz4_frame(data: &[u8], out: &mut Vec<u8>) {
    const FLG: u8 = 0x60;
    const BD: u8 = 0x40;
    out.extend_from_slice(&0x184D_2204u32.to_le_bytes());
    out.extend_from_slice(&[FLG, BD, (xxhash_rust::xxh32::xxh32(&[FLG, BD], 0) >> 8) as u8]);
    for chunk in data.chunks(LZ4_BLOCK) {
        let len_at = out.len();
        out.extend_from_slice(&[0; 4]);
        let bound = lz4_block_bound(chunk.len());
        out.resize(len_at + 4 + bound, 0);
        let packed = lz4::block::compress_to_buffer(
            chunk,
            Some(lz4::block::CompressionMode::DEFAULT),
            false,
            &mut out[len_at + 4..],
        )
        .unwrap_or(usize::MAX);
        let header = if packed < chunk.len() {
            out.truncate(len_at + 4 + packed);
            packed as u32
        } else {
            out.truncate(len_at + 4);
            out.extend_from_slice(chunk);
            chunk.len() as u32 | 0x8000_0000
        };
        out[len_at..len_at + 4].copy_from_slice(&header.to_le_bytes());
    }
    out.extend_from_slice(&[0; 4]);
}

/// LZ4's bound on a compressed block of `n` bytes (`LZ4_COMPRESSBOUND`).
fn lz4_block_bound(n: usize) -> usize {
    n + n / 255 + 16
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gzip_of(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        compress(Compression::Gzip, data, &mut out);
        out
    }

    fn zstd_of(data: &[u8]) -> Vec<u8> {
        zstd::bulk::compress(data, 3).expect("zstd")
    }

    #[test]
    fn gzip_members_and_bytes_after_them_read_as_java_reads_them() {
        let (a, b) = (b"first member ".repeat(50), b"second member".repeat(40));
        let mut two = gzip_of(&a);
        two.extend_from_slice(&gzip_of(&b));
        let mut out = Vec::new();
        decompress(Compression::Gzip, &two, 1 << 20, &mut out).expect("two members");
        assert_eq!(out, [a.clone(), b.clone()].concat());
        // Bytes after the last member that are no gzip header: Java ignores them.
        let mut garbage = gzip_of(&a);
        garbage.extend_from_slice(&[7, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        decompress(Compression::Gzip, &garbage, 1 << 20, &mut out).expect("trailing bytes ignored");
        assert_eq!(out, a);
        // A second member whose header reads but whose data does not is damage, as in Java.
        let mut bad = gzip_of(&a);
        let mut second = gzip_of(&b);
        let n = second.len();
        second[n / 2] ^= 0xff;
        bad.extend_from_slice(&second);
        assert!(decompress(Compression::Gzip, &bad, 1 << 20, &mut out).is_err());
        // The limit counts every member.
        assert!(matches!(
            decompress(Compression::Gzip, &two, a.len() + 10, &mut out),
            Err(DecompressError::TooLarge { .. })
        ));
    }

    #[test]
    fn zstd_frames_and_skippable_frames_read_as_zstd_jni_reads_them() {
        let (a, b) = (b"frame one ".repeat(60), b"frame two".repeat(30));
        let mut two = zstd_of(&a);
        two.extend_from_slice(&zstd_of(&b));
        let mut out = Vec::new();
        decompress(Compression::Zstd, &two, 1 << 20, &mut out).expect("two frames");
        assert_eq!(out, [a.clone(), b.clone()].concat());
        // A skippable frame (magic 0x184D2A5?, a length, that many bytes) before the data.
        let mut skippable = vec![0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4];
        skippable.extend_from_slice(&zstd_of(&a));
        decompress(Compression::Zstd, &skippable, 1 << 20, &mut out).expect("a skippable frame first");
        assert_eq!(out, a);
        // Bytes after the last frame that are no frame: damage, as zstd-jni says.
        let mut garbage = zstd_of(&a);
        garbage.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        assert!(decompress(Compression::Zstd, &garbage, 1 << 20, &mut out).is_err());
        assert!(matches!(
            decompress(Compression::Zstd, &two, a.len() + 10, &mut out),
            Err(DecompressError::TooLarge { .. })
        ));
    }

    #[test]
    fn every_codec_round_trips_and_respects_the_limit() {
        let data: Vec<u8> = (0..100_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
        for codec in Compression::ALL {
            let mut packed = Vec::new();
            compress(codec, &data, &mut packed);
            let mut out = Vec::new();
            decompress(codec, &packed, data.len(), &mut out).expect("decompress");
            assert_eq!(out, data, "{codec:?}");
            let err = decompress(codec, &packed, data.len() - 1, &mut out).expect_err("past the limit");
            assert!(matches!(err, DecompressError::TooLarge { .. }), "{codec:?}: {err}");
        }
    }

    #[test]
    fn lz4_frames_decode_into_a_reused_buffer_as_the_general_decoder_decodes_them() {
        use lz4_flex::frame::{BlockMode, BlockSize, FrameEncoder, FrameInfo};
        let data: Vec<u8> = (0..300_000u32).flat_map(|i| (i % 1013).to_le_bytes()).collect();
        let mut buf = vec![7u8; 10];
        for (independent, block_checksums, content_checksum, content_size, size) in [
            (true, false, false, false, BlockSize::Max64KB),
            (false, true, true, true, BlockSize::Max64KB),
            (true, true, false, false, BlockSize::Max256KB),
            (false, false, true, false, BlockSize::Max4MB),
        ] {
            for part in [&data[..], &data[..1000], &data[..0]] {
                let mut info = FrameInfo::new()
                    .block_size(size)
                    .block_checksums(block_checksums)
                    .content_checksum(content_checksum)
                    .block_mode(if independent { BlockMode::Independent } else { BlockMode::Linked });
                if content_size {
                    info = info.content_size(Some(part.len() as u64));
                }
                let mut enc = FrameEncoder::with_frame_info(info.clone(), Vec::new());
                std::io::Write::write_all(&mut enc, part).expect("write");
                let frame = enc.finish().expect("frame");
                let n = lz4_frame_into(&frame, 1 << 30, &mut buf).expect("the fast path takes it");
                assert_eq!(&buf[..n], part, "independent {independent} checksums {block_checksums}");
                assert_eq!(decompress_reusing(Compression::Lz4, &frame, 1 << 30, &mut buf), Ok(part.len()));
                // A flipped byte in a block: the fast path declines, the general decoder names the problem.
                if part.len() > 100 && (block_checksums || content_checksum) {
                    let mut bad = frame.clone();
                    let at = bad.len() / 2;
                    bad[at] ^= 0x40;
                    assert!(lz4_frame_into(&bad, 1 << 30, &mut buf).is_none());
                    assert!(decompress_reusing(Compression::Lz4, &bad, 1 << 30, &mut buf).is_err());
                }
                // Past the limit: declined, then refused.
                if !part.is_empty() {
                    assert!(lz4_frame_into(&frame, part.len() - 1, &mut buf).is_none());
                    assert!(decompress_reusing(Compression::Lz4, &frame, part.len() - 1, &mut buf).is_err());
                }
            }
        }
    }

    #[test]
    fn a_cut_frame_is_an_error_and_reused_contexts_start_clean() {
        let data: Vec<u8> = (0..70_000u32).flat_map(|i| (i % 97).to_le_bytes()).collect();
        for codec in [Compression::Gzip, Compression::Lz4, Compression::Zstd, Compression::Snappy] {
            let mut packed = Vec::new();
            compress(codec, &data, &mut packed);
            let mut out = Vec::new();
            // lz4_flex reads a frame without its end mark as ended; a batch cut so fails its CRC-32C first.
            let cuts = if codec == Compression::Lz4 {
                vec![packed.len() / 2]
            } else {
                vec![packed.len() / 2, packed.len() - 1]
            };
            for cut in cuts {
                assert!(decompress(codec, &packed[..cut], 1 << 20, &mut out).is_err(), "{codec:?} cut at {cut}");
            }
            // The thread's contexts were left mid-frame: the next batch decodes and encodes as the first did.
            decompress(codec, &packed, 1 << 20, &mut out).expect("whole");
            assert_eq!(out, data, "{codec:?}");
            let mut again = Vec::new();
            compress(codec, &data, &mut again);
            assert_eq!(again, packed, "{codec:?}");
        }
    }

    #[test]
    fn raw_snappy_as_librdkafka_writes_it_is_read() {
        let data = b"hello hello hello hello".repeat(100);
        let raw = snap::raw::Encoder::new().compress_vec(&data).expect("compress");
        let mut out = Vec::new();
        decompress(Compression::Snappy, &raw, 1 << 20, &mut out).expect("raw block");
        assert_eq!(out, data);
    }

    #[test]
    fn garbage_is_an_error_for_every_codec() {
        let mut out = Vec::new();
        for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd] {
            for junk in [&b""[..], b"\x00\x01\x02\x03\x04\x05\x06\x07", &[0xff; 64]] {
                assert!(decompress(codec, junk, 1 << 20, &mut out).is_err() || out.is_empty(), "{codec:?}");
            }
        }
        // A snappy header announcing 4 GiB is refused before allocating.
        let err = decompress(Compression::Snappy, &[0xff, 0xff, 0xff, 0xff, 0x0f], 1 << 20, &mut out);
        assert!(matches!(err, Err(DecompressError::TooLarge { .. })), "{err:?}");
    }
}
