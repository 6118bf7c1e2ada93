//! The removal marker: what a `.log.cleaned` (then `.log.swap`) file holds when a cleaning pass leaves a
//! segment with no record, so that the segment disappears at the swap.
//!
//! An empty file could not be told from a file truncated or created by accident, and a `.swap` is trusted to
//! replace (here: delete) a segment, so the marker is a small checksummed record of what it removes.
//! Layout, little-endian: `b"LCRM"`, u8 version (1), 3 zero bytes, u64 base (the removed segment's base, as
//! in the file name), u64 end (the first offset after the removed range), u32 CRC-32C of the 24 bytes
//! before it. 28 bytes in all.

use crate::error::CorruptKind;

const MAGIC: &[u8; 4] = b"LCRM";
const VERSION: u8 = 1;
/// Size of a removal marker.
pub const MARKER_BYTES: usize = 28;

/// The marker for the segment based at `base` whose records all lay below `end`.
pub fn encode(base: u64, end: u64) -> [u8; MARKER_BYTES] {
    let mut out = [0u8; MARKER_BYTES];
    out[..4].copy_from_slice(MAGIC);
    out[4] = VERSION;
    out[8..16].copy_from_slice(&base.to_le_bytes());
    out[16..24].copy_from_slice(&end.to_le_bytes());
    let crc = crate::checksum::crc32c(&out[..24]);
    out[24..].copy_from_slice(&crc.to_le_bytes());
    out
}

/// Checks that `bytes` is the marker of the segment based at `base`; returns its `end`.
///
/// # Errors
/// [`CorruptKind::BadRemovalMarker`] saying what is wrong.
pub fn decode(bytes: &[u8], base: u64) -> Result<u64, CorruptKind> {
    let bad = CorruptKind::BadRemovalMarker;
    let marker: &[u8; MARKER_BYTES] = bytes.try_into().map_err(|_| bad("not 28 bytes long"))?;
    if &marker[..4] != MAGIC || marker[4] != VERSION {
        return Err(bad("bad magic or version"));
    }
    let crc = u32::from_le_bytes([marker[24], marker[25], marker[26], marker[27]]);
    if crate::checksum::crc32c(&marker[..24]) != crc {
        return Err(bad("checksum mismatch"));
    }
    let field = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&marker[at..at + 8]);
        u64::from_le_bytes(b)
    };
    if field(8) != base {
        return Err(bad("it names another segment"));
    }
    let end = field(16);
    if end < base {
        return Err(bad("its end lies below its base"));
    }
    Ok(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_every_damage_is_refused() {
        let m = encode(40, 77);
        assert_eq!(decode(&m, 40), Ok(77));
        assert!(decode(&m, 41).is_err(), "another segment's marker");
        assert!(decode(&[], 40).is_err(), "an empty file is no marker");
        assert!(decode(&m[..27], 40).is_err());
        for i in 0..MARKER_BYTES {
            let mut bad = m;
            bad[i] ^= 1;
            assert!(decode(&bad, 40).is_err(), "byte {i}");
        }
    }
}
