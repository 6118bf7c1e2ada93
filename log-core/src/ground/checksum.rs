//! CRC-32C (Castagnoli) of frames.
//!
//! The `crc32c` crate is built for large buffers: it splits them three ways to overlap the `crc32`
//! instruction's latency and combines the parts with table shifts, which costs about 300 instructions on a
//! 150-byte record frame. A frame is checked once per read and twice per cleaning pass, so for buffers up to
//! [`SMALL`] bytes this module runs one chain of SSE4.2 `crc32` instructions, 8 bytes each (about 60
//! instructions for that frame), and leaves longer buffers to the crate. The result is the same CRC-32C
//! (tested against the crate for every length up to 2 KiB).

/// Buffers up to this many bytes take the single-chain path.
const SMALL: usize = 1024;

/// The CRC-32C of `data`.
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if data.len() <= SMALL && std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: `crc32c_sse42` needs SSE4.2, which the line above found on this CPU.
        #[expect(unsafe_code, reason = "calling a target-feature function after detecting it; see SAFETY")]
        return unsafe { crc32c_sse42(data) };
    }
    crc32c::crc32c(data)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
fn crc32c_sse42(data: &[u8]) -> u32 {
    use core::arch::x86_64::{_mm_crc32_u8, _mm_crc32_u64};
    let mut crc = u64::from(u32::MAX);
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        crc = _mm_crc32_u64(crc, u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]));
    }
    let mut crc = crc as u32;
    for &b in words.remainder() {
        crc = _mm_crc32_u8(crc, b);
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equals_the_crate_for_every_length_and_the_standard_check_value() {
        let data: Vec<u8> = (0..2100u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        for len in 0..2100 {
            for start in [0, 1, 3, 7] {
                let d = &data[start..(start + len).min(data.len())];
                assert_eq!(crc32c(d), crc32c::crc32c(d), "{} bytes at {start}", d.len());
            }
        }
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
    }
}
