//! Kafka's zig-zag variable-length integers (protobuf's `sint32` / `sint64`), bounded: a varint longer than its
//! type allows, or one cut off by the end of the buffer, is an error, never a panic or a long loop.

/// Reads a zig-zag varint of at most 5 bytes at `*pos`, moving `*pos` past it. `None` when it is cut off or
/// too long.
#[inline]
pub fn read_varint(buf: &[u8], pos: &mut usize) -> Option<i32> {
    // Most of a record's varints (lengths, deltas, counts) fit one byte.
    if let Some(&b) = buf.get(*pos)
        && b < 0x80
    {
        *pos += 1;
        return Some(i32::from(b >> 1) ^ -i32::from(b & 1));
    }
    let mut p = *pos;
    let raw = u32::try_from(read_unsigned(buf, &mut p, 5)?).ok()?;
    *pos = p;
    Some(((raw >> 1) as i32) ^ -((raw & 1) as i32))
}

/// Reads a zig-zag varlong of at most 10 bytes at `*pos`, moving `*pos` past it.
#[inline]
pub fn read_varlong(buf: &[u8], pos: &mut usize) -> Option<i64> {
    if let Some(&b) = buf.get(*pos)
        && b < 0x80
    {
        *pos += 1;
        return Some(i64::from(b >> 1) ^ -i64::from(b & 1));
    }
    let raw = read_unsigned(buf, pos, 10)?;
    Some(((raw >> 1) as i64) ^ -((raw & 1) as i64))
}

#[inline]
fn read_unsigned(buf: &[u8], pos: &mut usize, max_bytes: usize) -> Option<u64> {
    let mut value = 0u64;
    for i in 0..max_bytes {
        let b = *buf.get(*pos + i)?;
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            *pos += i + 1;
            return Some(value);
        }
    }
    None
}

/// Appends `v` as a zig-zag varint.
pub fn write_varint(out: &mut Vec<u8>, v: i32) {
    write_unsigned(out, u64::from(((v << 1) ^ (v >> 31)) as u32));
}

/// Appends `v` as a zig-zag varlong.
pub fn write_varlong(out: &mut Vec<u8>, v: i64) {
    write_unsigned(out, ((v << 1) ^ (v >> 63)) as u64);
}

fn write_unsigned(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Bytes `v` takes as a zig-zag varlong.
pub fn varlong_len(v: i64) -> usize {
    unsigned_len(((v << 1) ^ (v >> 63)) as u64)
}

/// Bytes `v` takes as a zig-zag varint.
pub fn varint_len(v: i32) -> usize {
    unsigned_len(u64::from(((v << 1) ^ (v >> 31)) as u32))
}

/// Bytes [`write_unsigned`] writes for `u`: seven bits a byte.
fn unsigned_len(mut u: u64) -> usize {
    let mut n = 1;
    while u >= 0x80 {
        u >>= 7;
        n += 1;
    }
    n
}

/// Reads a varint-length-prefixed byte string at `*pos` (length -1: null), moving `*pos` past it.
///
/// # Errors
/// What is wrong with the length or the bytes.
#[inline]
pub fn read_bytes<'a>(buf: &'a [u8], pos: &mut usize) -> Result<Option<&'a [u8]>, &'static str> {
    let len = read_varint(buf, pos).ok_or("a length varint is cut off or too long")?;
    if len < 0 {
        return if len == -1 { Ok(None) } else { Err("a length below -1") };
    }
    let end = pos.checked_add(len as usize).filter(|&e| e <= buf.len()).ok_or("a field runs past the record")?;
    let s = &buf[*pos..end];
    *pos = end;
    Ok(Some(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_known_encodings() {
        for v in [0, -1, 1, 63, -64, 64, i32::MAX, i32::MIN] {
            let mut out = Vec::new();
            write_varint(&mut out, v);
            assert_eq!(out.len(), varint_len(v));
            let mut pos = 0;
            assert_eq!(read_varint(&out, &mut pos), Some(v));
            assert_eq!(pos, out.len());
        }
        for v in [0, -1, 63, -64, 64, -65, i64::MAX, i64::MIN, 1 << 40, -(1 << 40), 1 << 62] {
            let mut out = Vec::new();
            write_varlong(&mut out, v);
            assert_eq!(out.len(), varlong_len(v), "{v}");
            let mut pos = 0;
            assert_eq!(read_varlong(&out, &mut pos), Some(v));
        }
        // Zig-zag: -1 is 1, 1 is 2, 300 is 600 = 0xd8 0x04.
        let mut out = Vec::new();
        write_varint(&mut out, 300);
        assert_eq!(out, [0xd8, 0x04]);
    }

    #[test]
    fn cut_off_or_overlong_varints_are_refused() {
        let mut pos = 0;
        assert_eq!(read_varint(&[0x80], &mut pos), None);
        assert_eq!(read_varint(&[0xff; 6], &mut pos), None);
        assert_eq!(read_varint(&[0xff, 0xff, 0xff, 0xff, 0x7f], &mut pos), None, "more than 32 bits");
        assert_eq!(read_varlong(&[0xff; 11], &mut pos), None);
        assert_eq!(pos, 0);
    }
}
