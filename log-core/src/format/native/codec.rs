//! The record frame: how one record is laid out in a segment.
//!
//! All integers are little-endian. A frame is
//!
//! ```text
//! u32 body_len          bytes of body that follow the 8-byte frame header
//! u32 crc32c            CRC-32C (Castagnoli) of the body
//! body:
//!   u8  version         FORMAT_VERSION (1)
//!   u8  flags           bit 0: key present, bit 1: value present, bit 2: delete horizon present
//!   u64 offset
//!   i64 timestamp (ms)
//!   i64 delete_horizon  only if flag bit 2
//!   u32 key_len, key    only if flag bit 0
//!   u32 value_len, value only if flag bit 1
//!   u16 header_count
//!   header_count × (u16 name_len, name (UTF-8), u32 value_len, value)
//! ```
//!
//! Decoding borrows from the input and never allocates, so a corrupt length can never make it reserve memory;
//! every length is checked against the bytes that are actually there.
#![allow(
    clippy::unnecessary_lazy_evaluations,
    reason = "a CorruptKind can hold a codec's message: built eagerly, every good frame would pay for dropping it"
)]

use crate::error::CorruptKind;
use crate::record::{Header, HeaderBytes, HeaderSplit, RecordRef};

/// Version byte written into every frame.
pub const FORMAT_VERSION: u8 = 1;
/// Size of the frame header (length + CRC).
pub const FRAME_HEADER_BYTES: usize = 8;
/// Largest body a frame may carry (the record model's limit).
pub const MAX_RECORD_BYTES: usize = crate::record::MAX_RECORD_BYTES;
/// Smallest possible body: version, flags, offset, timestamp, header count.
const MIN_BODY_BYTES: usize = 1 + 1 + 8 + 8 + 2;

const FLAG_KEY: u8 = 1;
const FLAG_VALUE: u8 = 2;
const FLAG_HORIZON: u8 = 4;
const KNOWN_FLAGS: u8 = FLAG_KEY | FLAG_VALUE | FLAG_HORIZON;

/// The fields of a record to encode, borrowed.
#[derive(Debug, Clone, Copy)]
pub struct EncodeFields<'a> {
    /// Offset.
    pub offset: u64,
    /// Timestamp in ms.
    pub timestamp: i64,
    /// Key, if any.
    pub key: Option<&'a [u8]>,
    /// Value; `None` for a tombstone.
    pub value: Option<&'a [u8]>,
    /// Delete horizon of a stamped tombstone.
    pub delete_horizon: Option<i64>,
}

/// Size of the frame that [`encode`] would write, or `Err` with that size when its body, counting the 8 bytes
/// of a delete horizon whether present or not, exceeds [`MAX_RECORD_BYTES`], or a field exceeds its length
/// prefix.
pub fn encoded_len<'h>(
    fields: &EncodeFields<'_>,
    headers: impl Iterator<Item = (&'h str, &'h [u8])>,
) -> Result<usize, usize> {
    let mut body = MIN_BODY_BYTES;
    let mut ok = true;
    if fields.delete_horizon.is_some() {
        body += 8;
    }
    for part in [fields.key, fields.value].into_iter().flatten() {
        ok &= u32::try_from(part.len()).is_ok();
        body = body.saturating_add(4 + part.len());
    }
    let mut count = 0usize;
    for (name, value) in headers {
        count += 1;
        ok &= u16::try_from(name.len()).is_ok() && u32::try_from(value.len()).is_ok();
        body = body.saturating_add(2 + name.len() + 4 + value.len());
    }
    ok &= u16::try_from(count).is_ok();
    // Room for a delete horizon is always reserved, so that the cleaner can stamp any tombstone it keeps
    // without growing it past the limit.
    let with_horizon = if fields.delete_horizon.is_some() { body } else { body.saturating_add(8) };
    if ok && with_horizon <= MAX_RECORD_BYTES {
        Ok(FRAME_HEADER_BYTES + body)
    } else {
        Err(FRAME_HEADER_BYTES.saturating_add(body))
    }
}

/// Appends the frame of a record to `out`. Returns the frame's length.
///
/// # Errors
/// `Err(size)` when the record is larger than [`MAX_RECORD_BYTES`] (or has more than 65,535 headers, or
/// a header name longer than 65,535 bytes); `out` is then unchanged.
pub fn encode<'h, I>(fields: &EncodeFields<'_>, headers: I, out: &mut Vec<u8>) -> Result<usize, usize>
where
    I: Iterator<Item = (&'h str, &'h [u8])> + Clone,
{
    let len = encoded_len(fields, headers.clone())?;
    let start = out.len();
    out.reserve(len);
    out.extend_from_slice(&[0u8; FRAME_HEADER_BYTES]);
    out.push(FORMAT_VERSION);
    let mut flags = 0;
    if fields.key.is_some() {
        flags |= FLAG_KEY;
    }
    if fields.value.is_some() {
        flags |= FLAG_VALUE;
    }
    if fields.delete_horizon.is_some() {
        flags |= FLAG_HORIZON;
    }
    out.push(flags);
    out.extend_from_slice(&fields.offset.to_le_bytes());
    out.extend_from_slice(&fields.timestamp.to_le_bytes());
    if let Some(h) = fields.delete_horizon {
        out.extend_from_slice(&h.to_le_bytes());
    }
    for part in [fields.key, fields.value].into_iter().flatten() {
        // Lengths were checked by `encoded_len`.
        out.extend_from_slice(&(part.len() as u32).to_le_bytes());
        out.extend_from_slice(part);
    }
    let count_at = out.len();
    out.extend_from_slice(&[0, 0]);
    let mut count: u16 = 0;
    for (name, value) in headers {
        count += 1;
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&(value.len() as u32).to_le_bytes());
        out.extend_from_slice(value);
    }
    out[count_at..count_at + 2].copy_from_slice(&count.to_le_bytes());
    let body_len = (len - FRAME_HEADER_BYTES) as u32;
    let crc = crate::checksum::crc32c(&out[start + FRAME_HEADER_BYTES..]);
    out[start..start + 4].copy_from_slice(&body_len.to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
    debug_assert_eq!(out.len() - start, len);
    Ok(len)
}

/// Why an owned record cannot be framed ([`encode_with_headers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncodeError {
    /// The frame would be this large, past [`MAX_RECORD_BYTES`] (or a field past its length prefix).
    TooLarge(usize),
    /// A header has a null value, which Kafka's format allows and this format cannot store.
    NullHeaderValue,
}

/// Encodes an owned-header record; see [`encode`].
///
/// # Errors
/// [`EncodeError::TooLarge`] as [`encode`]; [`EncodeError::NullHeaderValue`]; `out` is then unchanged.
pub fn encode_with_headers(
    fields: &EncodeFields<'_>,
    headers: &[Header],
    out: &mut Vec<u8>,
) -> Result<usize, EncodeError> {
    if headers.iter().any(|h| h.value.is_none()) {
        return Err(EncodeError::NullHeaderValue);
    }
    let iter = headers.iter().map(|h| (h.name.as_str(), h.value.as_deref().unwrap_or_default()));
    encode(fields, iter, out).map_err(EncodeError::TooLarge)
}

/// Re-encodes a borrowed record of this format with a new delete horizon (used by the cleaner to stamp
/// tombstones).
///
/// # Errors
/// `Err(size)` as [`encode`].
pub fn encode_ref_with_horizon(rec: &RecordRef<'_>, horizon: Option<i64>, out: &mut Vec<u8>) -> Result<usize, usize> {
    let fields = EncodeFields {
        offset: rec.offset,
        timestamp: rec.timestamp,
        key: rec.key,
        value: rec.value,
        delete_horizon: horizon,
    };
    // A record of this format was validated by the decoder: UTF-8 names, no null value.
    let headers = rec.headers().map(|(n, v)| (std::str::from_utf8(n).unwrap_or_default(), v.unwrap_or_default()));
    encode(&fields, headers, out)
}

/// Reads the 8-byte frame header at the start of `bytes`: `(total frame length, stored crc)`.
///
/// # Errors
/// [`CorruptKind::Truncated`] when fewer than 8 bytes are given, [`CorruptKind::BadLength`] when the body
/// length is below the minimum or above [`MAX_RECORD_BYTES`].
#[inline]
pub fn frame_header(bytes: &[u8]) -> Result<(usize, u32), CorruptKind> {
    let (len, rest) = split_u32(bytes)
        .ok_or_else(|| CorruptKind::Truncated { needed: FRAME_HEADER_BYTES as u64, available: bytes.len() as u64 })?;
    let (crc, _) = split_u32(rest)
        .ok_or_else(|| CorruptKind::Truncated { needed: FRAME_HEADER_BYTES as u64, available: bytes.len() as u64 })?;
    let body = len as usize;
    if !(MIN_BODY_BYTES..=MAX_RECORD_BYTES).contains(&body) {
        return Err(CorruptKind::BadLength(len));
    }
    Ok((FRAME_HEADER_BYTES + body, crc))
}

/// Bytes a frame start must offer for [`plausible_frame_start`]: the frame header, version, flags and offset.
pub const PROBE_BYTES: usize = FRAME_HEADER_BYTES + 1 + 1 + 8;

/// A cheap test of whether a frame of the current version with an offset above `floor` could start at
/// `head`, with `room` bytes left in the segment from there: a plausible length, version, flags and offset.
/// Returns the frame's length when it could; only then is the checksum worth computing. Garbage and zero
/// fill almost never pass, which keeps a search for valid frames after a damaged region fast.
pub fn plausible_frame_start(head: &[u8], room: u64, floor: Option<u64>) -> Option<usize> {
    let probe = head.get(..PROBE_BYTES)?;
    let (frame_len, _) = frame_header(probe).ok()?;
    let (version, flags) = (probe[FRAME_HEADER_BYTES], probe[FRAME_HEADER_BYTES + 1]);
    let (offset, _) = split_u64(&probe[FRAME_HEADER_BYTES + 2..])?;
    let fits = frame_len as u64 <= room;
    let offset_ok = floor.is_none_or(|f| offset > f) && offset < crate::names::MAX_OFFSET;
    (fits && version == FORMAT_VERSION && flags & !KNOWN_FLAGS == 0 && offset_ok).then_some(frame_len)
}

/// Decodes the frame at the start of `bytes`. Returns the record and the frame's length.
///
/// Never panics and never allocates, whatever the input.
///
/// # Errors
/// A [`CorruptKind`] saying what is wrong with the frame.
#[inline]
pub fn decode(bytes: &[u8]) -> Result<(RecordRef<'_>, usize), CorruptKind> {
    let (body, frame_len, stored) = frame_body(bytes)?;
    let computed = crate::checksum::crc32c(body);
    if computed != stored {
        return Err(CorruptKind::ChecksumMismatch { stored, computed });
    }
    decode_body(body).map(|r| (r, frame_len))
}

/// Decodes the frame at the start of `bytes` without computing its checksum: every length is still checked
/// against the bytes that are there, so garbage gives an error or a wrong record but never a panic or an
/// allocation. For a reader that verifies the same frames later, before anything it decides is acted on (the
/// cleaner's pass 1, whose frames pass 2 reads again, checksums included, before the pass commits).
///
/// # Errors
/// A [`CorruptKind`] saying what is wrong with the frame's fields.
#[inline]
pub fn decode_unverified(bytes: &[u8]) -> Result<(RecordRef<'_>, usize), CorruptKind> {
    let (body, frame_len, _) = frame_body(bytes)?;
    decode_body(body).map(|r| (r, frame_len))
}

/// The frame at the start of `bytes`: its body, its length and its stored checksum, the length checked against
/// the bytes there.
#[inline]
fn frame_body(bytes: &[u8]) -> Result<(&[u8], usize, u32), CorruptKind> {
    let (frame_len, stored) = frame_header(bytes)?;
    let frame = bytes
        .get(..frame_len)
        .ok_or_else(|| CorruptKind::Truncated { needed: frame_len as u64, available: bytes.len() as u64 })?;
    Ok((frame.get(FRAME_HEADER_BYTES..).unwrap_or_default(), frame_len, stored))
}

/// A body's first fields: its version (this format's), its flags (known ones only) and its offset, and the
/// rest of the body.
#[inline]
fn body_head(body: &[u8]) -> Result<(u8, u64, &[u8]), CorruptKind> {
    let (&version, rest) = body.split_first().ok_or_else(|| SHORT)?;
    if version != FORMAT_VERSION {
        return Err(CorruptKind::UnknownVersion(version));
    }
    let (&flags, rest) = rest.split_first().ok_or_else(|| SHORT)?;
    if flags & !KNOWN_FLAGS != 0 {
        return Err(CorruptKind::Malformed("unknown flag bits"));
    }
    let (offset, rest) = split_u64(rest).ok_or_else(|| SHORT)?;
    Ok((flags, offset, rest))
}

/// A body too short for the fields its flags say it has.
const SHORT: CorruptKind = CorruptKind::Malformed("body shorter than its fields");

/// The offset and key of the frame at the start of `bytes`, and the frame's length, without its checksum and
/// without reading past the key: the frame's length and the fields up to the key are checked against the
/// bytes there, the value and headers not read at all (for the cleaner's pass 1, which needs no more: pass 2
/// reads every frame whole, checksum included, before the pass commits). Touching only the frame's first
/// bytes leaves the rest of a long record's cache lines unread.
///
/// # Errors
/// A [`CorruptKind`] saying what is wrong with the fields read.
#[inline]
pub fn decode_key_unverified(bytes: &[u8]) -> Result<(u64, Option<&[u8]>, usize), CorruptKind> {
    let (body, frame_len, _) = frame_body(bytes)?;
    let (flags, offset, rest) = body_head(body)?;
    // The timestamp, and the delete horizon when there is one.
    let skip = if flags & FLAG_HORIZON != 0 { 16 } else { 8 };
    let rest = rest.get(skip..).ok_or_else(|| SHORT)?;
    let key = if flags & FLAG_KEY != 0 {
        Some(split_bytes_u32(rest).ok_or_else(|| CorruptKind::Malformed("key runs past the body"))?.0)
    } else {
        None
    };
    Ok((offset, key, frame_len))
}

/// Decodes a body whose checksum has been verified (or will be, see [`decode_unverified`]).
#[inline]
fn decode_body(body: &[u8]) -> Result<RecordRef<'_>, CorruptKind> {
    let (flags, offset, rest) = body_head(body)?;
    let (timestamp, mut rest) = split_u64(rest).ok_or_else(|| SHORT)?;
    let mut delete_horizon = None;
    if flags & FLAG_HORIZON != 0 {
        let (h, r) = split_u64(rest).ok_or_else(|| SHORT)?;
        delete_horizon = Some(h as i64);
        rest = r;
    }
    let mut key = None;
    if flags & FLAG_KEY != 0 {
        let (k, r) = split_bytes_u32(rest).ok_or_else(|| CorruptKind::Malformed("key runs past the body"))?;
        key = Some(k);
        rest = r;
    }
    let mut value = None;
    if flags & FLAG_VALUE != 0 {
        let (v, r) = split_bytes_u32(rest).ok_or_else(|| CorruptKind::Malformed("value runs past the body"))?;
        value = Some(v);
        rest = r;
    }
    let (count, headers) = split_u16(rest).ok_or_else(|| SHORT)?;
    let mut scan = headers;
    for _ in 0..count {
        let (name, r) = split_header(scan).ok_or_else(|| CorruptKind::Malformed("header name runs past the body"))?;
        if std::str::from_utf8(name).is_err() {
            return Err(CorruptKind::Malformed("header name is not UTF-8"));
        }
        let (_, r) = split_bytes_u32(r).ok_or_else(|| CorruptKind::Malformed("header value runs past the body"))?;
        scan = r;
    }
    if !scan.is_empty() {
        return Err(CorruptKind::Malformed("trailing bytes after the headers"));
    }
    let headers = HeaderBytes { bytes: headers, count: usize::from(count), split: split_one_header };
    Ok(RecordRef { offset, timestamp: timestamp as i64, key, value, delete_horizon, body_bytes: body.len(), headers })
}

#[inline]
fn split_u16(b: &[u8]) -> Option<(u16, &[u8])> {
    let (head, rest) = b.split_first_chunk::<2>()?;
    Some((u16::from_le_bytes(*head), rest))
}

#[inline]
fn split_u32(b: &[u8]) -> Option<(u32, &[u8])> {
    let (head, rest) = b.split_first_chunk::<4>()?;
    Some((u32::from_le_bytes(*head), rest))
}

#[inline]
fn split_u64(b: &[u8]) -> Option<(u64, &[u8])> {
    let (head, rest) = b.split_first_chunk::<8>()?;
    Some((u64::from_le_bytes(*head), rest))
}

/// Splits a u32-length-prefixed byte string off the front of `b`.
#[inline]
pub(crate) fn split_bytes_u32(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = split_u32(b)?;
    let len = usize::try_from(len).ok()?;
    (rest.len() >= len).then(|| rest.split_at(len))
}

/// Splits a u16-length-prefixed header name off the front of `b`.
#[inline]
pub(crate) fn split_header(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = split_u16(b)?;
    let len = usize::from(len);
    (rest.len() >= len).then(|| rest.split_at(len))
}

/// One header of a validated block: u16-prefixed name, u32-prefixed value (never null in this format).
fn split_one_header(b: &[u8]) -> Option<HeaderSplit<'_>> {
    let (name, rest) = split_header(b)?;
    let (value, rest) = split_bytes_u32(rest)?;
    Some((name, Some(value), rest))
}

/// Frames of records `key` = `value` (timestamp 7) at `offsets`: a segment's bytes, for unit tests.
#[cfg(test)]
pub(crate) fn test_frames(offsets: impl IntoIterator<Item = u64>) -> Vec<u8> {
    let mut out = Vec::new();
    for offset in offsets {
        let fields =
            EncodeFields { offset, timestamp: 7, key: Some(b"key"), value: Some(b"value"), delete_horizon: None };
        encode(&fields, std::iter::empty(), &mut out).expect("encodes");
    }
    out
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Record;
    use proptest::prelude::*;

    fn encode_record(r: &Record) -> Vec<u8> {
        let mut out = Vec::new();
        let fields = EncodeFields {
            offset: r.offset,
            timestamp: r.timestamp,
            key: r.key.as_deref(),
            value: r.value.as_deref(),
            delete_horizon: r.delete_horizon,
        };
        encode_with_headers(&fields, &r.headers, &mut out).expect("small record encodes");
        out
    }

    fn arb_record() -> impl Strategy<Value = Record> {
        (
            any::<u64>(),
            any::<i64>(),
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40)),
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..80)),
            proptest::collection::vec(("[a-z]{0,6}", proptest::collection::vec(any::<u8>(), 0..8)), 0..4),
            proptest::option::of(any::<i64>()),
        )
            .prop_map(|(offset, timestamp, key, value, headers, delete_horizon)| Record {
                offset,
                timestamp,
                key,
                value,
                headers: headers.into_iter().map(|(n, v)| Header::new(n, v)).collect(),
                delete_horizon,
            })
    }

    proptest! {
        #[test]
        fn prop_record_roundtrip(r in arb_record()) {
            let bytes = encode_record(&r);
            let (back, len) = decode(&bytes).expect("decodes");
            prop_assert_eq!(len, bytes.len());
            prop_assert_eq!(back.to_record(), r);
        }

        #[test]
        fn prop_truncated_frame_is_an_error(r in arb_record(), cut in any::<prop::sample::Index>()) {
            let bytes = encode_record(&r);
            let at = cut.index(bytes.len());
            prop_assert!(decode(&bytes[..at]).is_err());
        }

        #[test]
        fn prop_altered_byte_is_an_error(r in arb_record(), at in any::<prop::sample::Index>(), bit in 0u8..8) {
            let mut bytes = encode_record(&r);
            let i = at.index(bytes.len());
            bytes[i] ^= 1 << bit;
            prop_assert!(decode(&bytes).is_err());
        }

        #[test]
        fn prop_arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode(&bytes);
            let _ = decode_key_unverified(&bytes);
        }

        /// The key-only read gives the offset, key and length the whole decoding gives, and a cut frame is an
        /// error to it too (its length says where the frame ends).
        #[test]
        fn prop_key_only_reads_what_decoding_reads(
            r in arb_record(), cut in any::<prop::sample::Index>(), at in any::<prop::sample::Index>(),
        ) {
            let bytes = encode_record(&r);
            let (whole, len) = decode(&bytes).expect("decodes");
            prop_assert_eq!(decode_key_unverified(&bytes), Ok((whole.offset, whole.key, len)));
            prop_assert!(decode_key_unverified(&bytes[..cut.index(bytes.len())]).is_err());
            // A byte changed anywhere never panics; past the key it goes unseen (pass 2's checksum sees it).
            let mut changed = bytes.clone();
            let i = at.index(changed.len());
            changed[i] ^= 0x5a;
            let _ = decode_key_unverified(&changed);
        }
    }

    #[test]
    fn huge_length_is_rejected_without_allocation() {
        let mut bytes = vec![0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0];
        bytes.extend_from_slice(&[0; 32]);
        assert_eq!(decode(&bytes).map(|_| ()), Err(CorruptKind::BadLength(0x7fff_ffff)));
    }

    #[test]
    fn body_with_valid_crc_but_bad_fields_is_malformed() {
        // A body claiming a key longer than itself, with a correct CRC.
        let mut body = vec![FORMAT_VERSION, FLAG_KEY];
        body.extend_from_slice(&1u64.to_le_bytes());
        body.extend_from_slice(&2i64.to_le_bytes());
        body.extend_from_slice(&1000u32.to_le_bytes());
        body.extend_from_slice(&[0, 0]);
        let mut frame = (body.len() as u32).to_le_bytes().to_vec();
        frame.extend_from_slice(&crate::checksum::crc32c(&body).to_le_bytes());
        frame.extend_from_slice(&body);
        assert!(matches!(decode(&frame), Err(CorruptKind::Malformed(_))));
    }

    #[test]
    fn every_accepted_tombstone_can_still_be_stamped() {
        // Body = 20 fixed + (4 + key) + (2 + 1 + 4 + header value) = MAX + key - 33 here: a 25-byte key is the
        // largest accepted, because 8 bytes stay reserved for the horizon.
        let headers = [Header::new("h", vec![0u8; MAX_RECORD_BYTES - 64])];
        let mut out = Vec::new();
        let tombstone = |k: &'static [u8]| EncodeFields {
            offset: 0,
            timestamp: 0,
            key: Some(k),
            value: None,
            delete_horizon: None,
        };
        static KEY: [u8; 26] = [0; 26];
        assert!(encode_with_headers(&tombstone(&KEY), &headers, &mut out).is_err(), "a 26-byte key is too many");
        out.clear();
        let largest = tombstone(&KEY[..25]);
        assert!(encode_with_headers(&largest, &headers, &mut out).is_ok());
        out.clear();
        let stamped = EncodeFields { delete_horizon: Some(1), ..largest };
        assert!(encode_with_headers(&stamped, &headers, &mut out).is_ok(), "stamping must not overflow the limit");
        assert_eq!(out.len(), FRAME_HEADER_BYTES + MAX_RECORD_BYTES);
    }

    #[test]
    fn oversized_record_is_refused_by_encode() {
        let big = vec![0u8; MAX_RECORD_BYTES];
        let fields = EncodeFields { offset: 0, timestamp: 0, key: Some(b"k"), value: Some(&big), delete_horizon: None };
        let mut out = Vec::new();
        assert!(encode_with_headers(&fields, &[], &mut out).is_err());
        assert!(out.is_empty());
    }
}
