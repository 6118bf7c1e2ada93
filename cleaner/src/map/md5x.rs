//! MD5 of several keys at once (RFC 1321), for the skimpy map's batch path.
//!
//! A scalar MD5 of a 16-byte key costs about 145 ns on this project's machine and is most of what a skimpy
//! map lookup costs. MD5's rounds are 32-bit additions, rotations and bitwise functions, the same for every
//! message, so eight keys are hashed side by side: every state word holds eight lanes. On x86_64 the lanes are
//! two SSE2 registers (SSE2 is part of every x86_64 CPU; the compiler would not vectorize the plain loops);
//! elsewhere a portable loop over the lanes does the same work. Keys of different lengths take different
//! numbers of 64-byte blocks; a lane whose message has ended keeps its state while the others go on. The
//! digests are exactly MD5's (tested against the `md-5` crate), so the map keeps Kafka's layout and answers.

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

/// The 64 steps of MD5 on one block of every lane: the state's words after the block, before they are added
/// to the state.
fn compress(state: &[Lanes; 4], m: &[Lanes; 16]) -> [Lanes; 4] {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `sse2::compress` needs SSE2, which every x86_64 CPU has (it is part of the architecture's
        // baseline, so the compiler assumes it everywhere in this build).
        #[expect(unsafe_code, reason = "calling a target-feature function; see SAFETY")]
        unsafe {
            sse2::compress(state, m)
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    portable::compress(state, m)
}

/// The lanes with SSE2: eight lanes as two 128-bit registers.
#[cfg(target_arch = "x86_64")]
mod sse2 {
    use core::arch::x86_64::{
        __m128i, _mm_add_epi32, _mm_and_si128, _mm_andnot_si128, _mm_cvtsi32_si128, _mm_or_si128, _mm_set_epi32,
        _mm_set1_epi32, _mm_sll_epi32, _mm_srl_epi32, _mm_storeu_si128, _mm_xor_si128,
    };

    use super::{K, LANES, Lanes, SHIFTS, word};

    #[derive(Clone, Copy)]
    struct V(__m128i, __m128i);

    #[target_feature(enable = "sse2")]
    fn load(l: &Lanes) -> V {
        let s = |i: usize| l[i] as i32;
        V(_mm_set_epi32(s(3), s(2), s(1), s(0)), _mm_set_epi32(s(7), s(6), s(5), s(4)))
    }

    #[target_feature(enable = "sse2")]
    fn store(v: V) -> Lanes {
        let mut out = [0u32; LANES];
        let (lo, hi) = out.split_at_mut(4);
        // SAFETY: each half is 4 u32 = 16 bytes, exactly what an unaligned 128-bit store writes.
        #[expect(unsafe_code, reason = "an unaligned store into a 16-byte array; see SAFETY")]
        unsafe {
            _mm_storeu_si128(lo.as_mut_ptr().cast(), v.0);
            _mm_storeu_si128(hi.as_mut_ptr().cast(), v.1);
        }
        out
    }

    macro_rules! lanewise {
        ($name:ident, $op:ident) => {
            #[target_feature(enable = "sse2")]
            #[inline]
            fn $name(a: V, b: V) -> V {
                V($op(a.0, b.0), $op(a.1, b.1))
            }
        };
    }
    lanewise!(add, _mm_add_epi32);
    lanewise!(and, _mm_and_si128);
    lanewise!(andnot, _mm_andnot_si128);
    lanewise!(or, _mm_or_si128);
    lanewise!(xor, _mm_xor_si128);

    #[target_feature(enable = "sse2")]
    #[inline]
    fn rotl(v: V, s: u32) -> V {
        let (l, r) = (_mm_cvtsi32_si128(s as i32), _mm_cvtsi32_si128(32 - s as i32));
        V(
            _mm_or_si128(_mm_sll_epi32(v.0, l), _mm_srl_epi32(v.0, r)),
            _mm_or_si128(_mm_sll_epi32(v.1, l), _mm_srl_epi32(v.1, r)),
        )
    }

    /// `a = b + rotl(f(b, c, d) + a + k + m, s)` for round `round`.
    #[target_feature(enable = "sse2")]
    #[inline]
    fn step(round: usize, a: V, b: V, c: V, d: V, m: V, i: usize) -> V {
        let f = match round {
            0 => or(and(b, c), andnot(b, d)),
            1 => or(and(d, b), andnot(d, c)),
            2 => xor(xor(b, c), d),
            _ => {
                let ones = V(_mm_set1_epi32(-1), _mm_set1_epi32(-1));
                xor(c, or(b, xor(d, ones)))
            }
        };
        let k = V(_mm_set1_epi32(K[i] as i32), _mm_set1_epi32(K[i] as i32));
        add(b, rotl(add(add(add(f, a), k), m), SHIFTS[i]))
    }

    #[target_feature(enable = "sse2")]
    pub(super) fn compress(state: &[Lanes; 4], m: &[Lanes; 16]) -> [Lanes; 4] {
        let w: [V; 16] = std::array::from_fn(|i| load(&m[i]));
        let (mut a, mut b, mut c, mut d) = (load(&state[0]), load(&state[1]), load(&state[2]), load(&state[3]));
        let mut i = 0;
        while i < 64 {
            let r = i / 16;
            a = step(r, a, b, c, d, w[word(i)], i);
            d = step(r, d, a, b, c, w[word(i + 1)], i + 1);
            c = step(r, c, d, a, b, w[word(i + 2)], i + 2);
            b = step(r, b, c, d, a, w[word(i + 3)], i + 3);
            i += 4;
        }
        [store(a), store(b), store(c), store(d)]
    }
}

/// The lanes as plain loops (for architectures without the SSE2 path).
#[cfg(any(not(target_arch = "x86_64"), test))]
mod portable {
    use super::{K, LANES, Lanes, SHIFTS, word};

    pub(super) fn compress(state: &[Lanes; 4], m: &[Lanes; 16]) -> [Lanes; 4] {
        let [mut a, mut b, mut c, mut d] = *state;
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
        [a, b, c, d]
    }
}

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
        let [a, b, c, d] = compress(&state, &m);
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
        // The portable lanes agree with the SSE2 ones.
        let m: [Lanes; 16] =
            std::array::from_fn(|i| std::array::from_fn(|l| ((i * 31 + l * 7) as u32).wrapping_mul(0x9E37_79B9)));
        let st: [Lanes; 4] =
            std::array::from_fn(|i| std::array::from_fn(|l| ((i + l) as u32).wrapping_mul(0x1234_5679)));
        assert_eq!(compress(&st, &m), portable::compress(&st, &m));
        let mut one = [[0u8; 16]; 1];
        md5_lanes(&[b"The quick brown fox jumps over the lazy dog"], &mut one);
        assert_eq!(one[0][..4], [0x9e, 0x10, 0x7d, 0x9d], "RFC test vector 9e107d9d372bb6826bd81d3542a419d6");
    }
}

#[cfg(test)]
mod timing {
    use super::*;
    use md5::{Digest, Md5};

    /// `cargo test --release -p cleaner md5x::timing -- --ignored --nocapture`: ns per key, lanes vs scalar.
    #[test]
    #[ignore = "a timing printout, not a test"]
    fn lanes_against_scalar() {
        let keys: Vec<[u8; 16]> =
            (0..4096u64).map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) as u128).to_le_bytes()).collect();
        let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
        let mut out = [[0u8; 16]; LANES];
        let mut sink = 0u8;
        let t = std::time::Instant::now();
        for _ in 0..100 {
            for c in refs.chunks(LANES) {
                md5_lanes(c, &mut out);
                sink ^= out[0][0];
            }
        }
        let lanes = t.elapsed().as_nanos() as f64 / (100 * refs.len()) as f64;
        let t = std::time::Instant::now();
        for _ in 0..100 {
            for k in &refs {
                let d: [u8; 16] = Md5::digest(k).into();
                sink ^= d[0];
            }
        }
        let scalar = t.elapsed().as_nanos() as f64 / (100 * refs.len()) as f64;
        eprintln!("md5 of a 16-byte key: {lanes:.1} ns in lanes, {scalar:.1} ns scalar ({sink})");
    }
}
