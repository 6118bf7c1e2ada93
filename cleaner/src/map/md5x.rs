//! MD5 of several keys at once (RFC 1321), for the skimpy map's batch path.
//!
//! A scalar MD5 of a 16-byte key costs about 145 ns on this project's machine and is most of what a skimpy
//! map lookup costs. MD5's rounds are 32-bit additions, rotations and bitwise functions, the same for every
//! message, so eight keys are hashed side by side: every state word is an array of eight lanes and every step
//! a loop over the lanes, which the compiler turns into SIMD instructions (SSE2 on any x86_64, wider where the
//! build allows). Keys of different lengths take different numbers of 64-byte blocks; a lane whose message
//! has ended keeps its state while the others go on. The digests are exactly MD5's (tested against the
//! `md-5` crate), so the map keeps Kafka's layout and answers.

/// Lanes hashed side by side.
pub const LANES: usize = 8;

/// Per-step shift amounts.
const SHIFTS: [u32; 64] = [
    7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, //
    5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, //
    4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, //
    6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
];

/// Per-step constants: the integer part of `abs(sin(i + 1)) * 2^32` (RFC 1321, section 3.4).
const K: [u32; 64] = [
    0xd76a_a478,
    0xe8c7_b756,
    0x2420_70db,
    0xc1bd_ceee,
    0xf57c_0faf,
    0x4787_c62a,
    0xa830_4613,
    0xfd46_9501,
    0x6980_98d8,
    0x8b44_f7af,
    0xffff_5bb1,
    0x895c_d7be,
    0x6b90_1122,
    0xfd98_7193,
    0xa679_438e,
    0x49b4_0821,
    0xf61e_2562,
    0xc040_b340,
    0x265e_5a51,
    0xe9b6_c7aa,
    0xd62f_105d,
    0x0244_1453,
    0xd8a1_e681,
    0xe7d3_fbc8,
    0x21e1_cde6,
    0xc337_07d6,
    0xf4d5_0d87,
    0x455a_14ed,
    0xa9e3_e905,
    0xfcef_a3f8,
    0x676f_02d9,
    0x8d2a_4c8a,
    0xfffa_3942,
    0x8771_f681,
    0x6d9d_6122,
    0xfde5_380c,
    0xa4be_ea44,
    0x4bde_cfa9,
    0xf6bb_4b60,
    0xbebf_bc70,
    0x289b_7ec6,
    0xeaa1_27fa,
    0xd4ef_3085,
    0x0488_1d05,
    0xd9d4_d039,
    0xe6db_99e5,
    0x1fa2_7cf8,
    0xc4ac_5665,
    0xf429_2244,
    0x432a_ff97,
    0xab94_23a7,
    0xfc93_a039,
    0x655b_59c3,
    0x8f0c_cc92,
    0xffef_f47d,
    0x8584_5dd1,
    0x6fa8_7e4f,
    0xfe2c_e6e0,
    0xa301_4314,
    0x4e08_11a1,
    0xf753_7e82,
    0xbd3a_f235,
    0x2ad7_d2bb,
    0xeb86_d391,
];

/// Which message word step `i` reads.
const fn word(i: usize) -> usize {
    match i / 16 {
        0 => i,
        1 => (5 * i + 1) % 16,
        2 => (3 * i + 5) % 16,
        _ => (7 * i) % 16,
    }
}

type Lanes = [u32; LANES];

/// The 64-byte block number `block` of the padded message of `key` (MD5's padding: `0x80`, zeros, the
/// length in bits as a little-endian u64 in the last 8 bytes of the last block), as 16 little-endian words.
fn block_words(key: &[u8], block: usize, out: &mut [u32; 16]) {
    let mut bytes = [0u8; 64];
    let start = block * 64;
    let len = key.len();
    if start < len {
        let take = (len - start).min(64);
        bytes[..take].copy_from_slice(&key[start..start + take]);
    }
    if (start..start + 64).contains(&len) {
        bytes[len - start] = 0x80;
    }
    if block + 1 == blocks(len) {
        bytes[56..].copy_from_slice(&((len as u64).wrapping_mul(8)).to_le_bytes());
    }
    for (w, chunk) in out.iter_mut().zip(bytes.chunks_exact(4)) {
        *w = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
    }
}

/// Blocks in the padded message of a key of `len` bytes.
const fn blocks(len: usize) -> usize {
    (len + 8) / 64 + 1
}

/// The MD5 digests of up to [`LANES`] keys: `out[i]` is the digest of `keys[i]`.
pub fn md5_lanes(keys: &[&[u8]], out: &mut [[u8; 16]]) {
    let n = keys.len().min(LANES).min(out.len());
    let mut state: [Lanes; 4] =
        [[0x6745_2301; LANES], [0xefcd_ab89; LANES], [0x98ba_dcfe; LANES], [0x1032_5476; LANES]];
    let mut lane_blocks = [0usize; LANES];
    for (b, k) in lane_blocks.iter_mut().zip(keys.iter().take(n)) {
        *b = blocks(k.len());
    }
    let max_blocks = lane_blocks.iter().copied().max().unwrap_or(0);
    let mut words = [[0u32; 16]; LANES];
    for block in 0..max_blocks {
        for (lane, w) in words.iter_mut().enumerate().take(n) {
            if block < lane_blocks[lane] {
                block_words(keys[lane], block, w);
            }
        }
        // Message words by word index, then lane, as the rounds read them.
        let mut m = [[0u32; LANES]; 16];
        for (lane, w) in words.iter().enumerate() {
            for (i, &x) in w.iter().enumerate() {
                m[i][lane] = x;
            }
        }
        let [mut a, mut b, mut c, mut d] = state;
        for i in 0..64 {
            let g = &m[word(i)];
            let mut f = [0u32; LANES];
            for l in 0..LANES {
                let (x, y, z) = (b[l], c[l], d[l]);
                let fun = match i / 16 {
                    0 => (x & y) | (!x & z),
                    1 => (z & x) | (!z & y),
                    2 => x ^ y ^ z,
                    _ => y ^ (x | !z),
                };
                f[l] = fun.wrapping_add(a[l]).wrapping_add(K[i]).wrapping_add(g[l]);
            }
            a = d;
            d = c;
            c = b;
            for l in 0..LANES {
                b[l] = b[l].wrapping_add(f[l].rotate_left(SHIFTS[i]));
            }
        }
        for (l, &lb) in lane_blocks.iter().enumerate() {
            // A lane whose message has ended keeps its state.
            if block < lb {
                state[0][l] = state[0][l].wrapping_add(a[l]);
                state[1][l] = state[1][l].wrapping_add(b[l]);
                state[2][l] = state[2][l].wrapping_add(c[l]);
                state[3][l] = state[3][l].wrapping_add(d[l]);
            }
        }
    }
    for (l, digest) in out.iter_mut().enumerate().take(n) {
        for (j, s) in state.iter().enumerate() {
            digest[j * 4..j * 4 + 4].copy_from_slice(&s[l].to_le_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use md5::{Digest, Md5};

    #[test]
    fn digests_equal_md5_for_every_length_and_lane_count() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 31 + 7) as u8).collect();
        // Keys of every length from 0 to 200 bytes, in groups of 1 to 8 lanes of mixed lengths.
        let mut len = 0;
        while len <= 200 {
            for lanes in 1..=LANES {
                let keys: Vec<&[u8]> = (0..lanes).map(|l| &data[l..l + (len + l * 13) % 201]).collect();
                let mut out = vec![[0u8; 16]; lanes];
                md5_lanes(&keys, &mut out);
                for (k, d) in keys.iter().zip(&out) {
                    let want: [u8; 16] = Md5::digest(k).into();
                    assert_eq!(*d, want, "key of {} bytes among {lanes} lanes", k.len());
                }
            }
            len += 7;
        }
        let mut one = [[0u8; 16]; 1];
        md5_lanes(&[b"The quick brown fox jumps over the lazy dog"], &mut one);
        assert_eq!(one[0][..4], [0x9e, 0x10, 0x7d, 0x9d], "RFC test vector 9e107d9d372bb6826bd81d3542a419d6");
    }
}
