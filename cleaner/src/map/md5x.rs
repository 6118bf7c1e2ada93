//! MD5 of several keys at once (RFC 1321), for the skimpy map's batch path.
//!
//! A scalar MD5 of a 16-byte key costs about 155 ns on this project's machine and is most of what a skimpy
//! map lookup costs. MD5's rounds are 32-bit additions, rotations and bitwise functions, the same for every
//! message, so sixteen keys are hashed side by side: every state word holds sixteen lanes. One lane's 64
//! steps are a chain, each waiting for the one before; several registers of lanes give the core independent
//! chains to interleave. On x86_64 with AVX2 (detected at run time) the lanes are two 256-bit registers;
//! otherwise four SSE2 registers (SSE2 is part of every x86_64 CPU; the compiler would not vectorize the plain
//! loops); elsewhere a portable loop over the lanes does the same work. Every step is written out (a macro a
//! step, its constants immediates), and `k + m`, which does not wait for the chain, is added off it. Keys of
//! different lengths take different numbers of 64-byte blocks; a lane whose message has ended keeps its state
//! while the others go on. The digests are exactly MD5's (tested against the `md-5` crate), so the map keeps
//! Kafka's layout and answers.

/// Lanes hashed side by side.
pub const LANES: usize = 16;

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
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: `avx2::compress` needs AVX2, which this CPU has: checked just above.
            #[expect(unsafe_code, reason = "calling a target-feature function; see SAFETY")]
            return unsafe { avx2::compress(state, m) };
        }
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

/// One step of MD5: `a = b + rotl(a + (k + m) + f(b, c, d), s)`, with step `i`'s constant, message word and
/// shift as immediates. `k + m` does not depend on the chain of steps, so it is added first, off it. Expands
/// inside a module that defines the lane operations `add`, `rotl`, `splat` and the round function `f`.
#[cfg(target_arch = "x86_64")]
macro_rules! step {
    ($f:ident, $a:ident, $b:ident, $c:ident, $d:ident, $w:ident, $i:literal) => {
        $a = add(
            $b,
            rotl::<{ SHIFTS[$i] as i32 }, { 32 - SHIFTS[$i] as i32 }>(add(
                add($a, add($w[word($i)], splat(K[$i]))),
                $f($b, $c, $d),
            )),
        );
    };
}

/// Four steps of round `f`, starting at step `i`: the state's words take turns as `a`.
#[cfg(target_arch = "x86_64")]
macro_rules! four_steps {
    ($f:ident, $a:ident, $b:ident, $c:ident, $d:ident, $w:ident, $i:literal, $j:literal, $k:literal, $l:literal) => {
        step!($f, $a, $b, $c, $d, $w, $i);
        step!($f, $d, $a, $b, $c, $w, $j);
        step!($f, $c, $d, $a, $b, $w, $k);
        step!($f, $b, $c, $d, $a, $w, $l);
    };
}

/// The 64 steps on the lanes of one module's vector type `V`: the body of its `compress`.
#[cfg(target_arch = "x86_64")]
macro_rules! rounds {
    ($state:ident, $m:ident) => {{
        let w: [V; 16] = std::array::from_fn(|i| load(&$m[i]));
        let (mut a, mut b, mut c, mut d) = (load(&$state[0]), load(&$state[1]), load(&$state[2]), load(&$state[3]));
        four_steps!(fun_f, a, b, c, d, w, 0, 1, 2, 3);
        four_steps!(fun_f, a, b, c, d, w, 4, 5, 6, 7);
        four_steps!(fun_f, a, b, c, d, w, 8, 9, 10, 11);
        four_steps!(fun_f, a, b, c, d, w, 12, 13, 14, 15);
        four_steps!(fun_g, a, b, c, d, w, 16, 17, 18, 19);
        four_steps!(fun_g, a, b, c, d, w, 20, 21, 22, 23);
        four_steps!(fun_g, a, b, c, d, w, 24, 25, 26, 27);
        four_steps!(fun_g, a, b, c, d, w, 28, 29, 30, 31);
        four_steps!(fun_h, a, b, c, d, w, 32, 33, 34, 35);
        four_steps!(fun_h, a, b, c, d, w, 36, 37, 38, 39);
        four_steps!(fun_h, a, b, c, d, w, 40, 41, 42, 43);
        four_steps!(fun_h, a, b, c, d, w, 44, 45, 46, 47);
        four_steps!(fun_i, a, b, c, d, w, 48, 49, 50, 51);
        four_steps!(fun_i, a, b, c, d, w, 52, 53, 54, 55);
        four_steps!(fun_i, a, b, c, d, w, 56, 57, 58, 59);
        four_steps!(fun_i, a, b, c, d, w, 60, 61, 62, 63);
        [store(a), store(b), store(c), store(d)]
    }};
}

/// MD5's four round functions over the lane operations of the module it expands in.
#[cfg(target_arch = "x86_64")]
macro_rules! round_functions {
    ($feature:literal) => {
        /// Round 1: `(b & c) | (!b & d)`.
        #[target_feature(enable = $feature)]
        #[inline]
        fn fun_f(b: V, c: V, d: V) -> V {
            or(and(b, c), andnot(b, d))
        }

        /// Round 2: `(d & b) | (!d & c)`.
        #[target_feature(enable = $feature)]
        #[inline]
        fn fun_g(b: V, c: V, d: V) -> V {
            or(and(d, b), andnot(d, c))
        }

        /// Round 3: `b ^ c ^ d` (`c ^ d` first: it does not wait for `b`, the newest word).
        #[target_feature(enable = $feature)]
        #[inline]
        fn fun_h(b: V, c: V, d: V) -> V {
            xor(b, xor(c, d))
        }

        /// Round 4: `c ^ (b | !d)`.
        #[target_feature(enable = $feature)]
        #[inline]
        fn fun_i(b: V, c: V, d: V) -> V {
            xor(c, or(b, xor(d, splat(u32::MAX))))
        }
    };
}

/// The lanes with SSE2: sixteen lanes as four 128-bit registers (four independent chains).
#[cfg(target_arch = "x86_64")]
mod sse2 {
    use core::arch::x86_64::{
        __m128i, _mm_add_epi32, _mm_and_si128, _mm_andnot_si128, _mm_loadu_si128, _mm_or_si128, _mm_set1_epi32,
        _mm_slli_epi32, _mm_srli_epi32, _mm_storeu_si128, _mm_unpackhi_epi32, _mm_unpackhi_epi64, _mm_unpacklo_epi32,
        _mm_unpacklo_epi64, _mm_xor_si128,
    };

    use crate::map::md5x::{K, Lanes, SHIFTS, word};

    type V = [__m128i; 4];

    #[target_feature(enable = "sse2")]
    fn load(l: &Lanes) -> V {
        // SAFETY: `l` is 16 u32 = 64 bytes; each unaligned 128-bit load reads 16 of them, at 0, 16, 32, 48.
        #[expect(unsafe_code, reason = "unaligned loads from a 64-byte array; see SAFETY")]
        unsafe {
            let p = l.as_ptr();
            std::array::from_fn(|i| _mm_loadu_si128(p.add(4 * i).cast()))
        }
    }

    #[target_feature(enable = "sse2")]
    fn store(v: V) -> Lanes {
        let mut out = [0u32; 16];
        // SAFETY: `out` is 16 u32 = 64 bytes; each unaligned 128-bit store writes 16 of them, at 0, 16, 32, 48.
        #[expect(unsafe_code, reason = "unaligned stores into a 64-byte array; see SAFETY")]
        unsafe {
            let p = out.as_mut_ptr();
            for (i, x) in v.iter().enumerate() {
                _mm_storeu_si128(p.add(4 * i).cast(), *x);
            }
        }
        out
    }

    macro_rules! lanewise {
        ($name:ident, $op:ident) => {
            #[target_feature(enable = "sse2")]
            #[inline]
            fn $name(a: V, b: V) -> V {
                [$op(a[0], b[0]), $op(a[1], b[1]), $op(a[2], b[2]), $op(a[3], b[3])]
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
    fn splat(x: u32) -> V {
        [_mm_set1_epi32(x as i32); 4]
    }

    /// Rotates every lane left by `L` bits (`R` is `32 - L`).
    #[target_feature(enable = "sse2")]
    #[inline]
    fn rotl<const L: i32, const R: i32>(v: V) -> V {
        v.map(|x| _mm_or_si128(_mm_slli_epi32::<L>(x), _mm_srli_epi32::<R>(x)))
    }

    round_functions!("sse2");

    /// Sixteen rows of 16 words into 16 rows of 16 lanes, four 4x4 blocks of words at a time.
    #[target_feature(enable = "sse2")]
    pub(super) fn transpose(rows: &[[u8; 64]; 16]) -> [Lanes; 16] {
        let mut m = [[0u32; 16]; 16];
        for group in 0..4 {
            for quarter in 0..4 {
                // SAFETY: every row is 64 bytes; the loads read bytes 16q..16q+16 of it. Every `m[w]` is 16 u32;
                // the stores write u32 4g..4g+4 of it.
                #[expect(unsafe_code, reason = "unaligned loads and stores inside arrays; see SAFETY")]
                unsafe {
                    let row = |k: usize| _mm_loadu_si128(rows[4 * group + k].as_ptr().add(16 * quarter).cast());
                    let (r0, r1, r2, r3) = (row(0), row(1), row(2), row(3));
                    let (t0, t1) = (_mm_unpacklo_epi32(r0, r1), _mm_unpacklo_epi32(r2, r3));
                    let (t2, t3) = (_mm_unpackhi_epi32(r0, r1), _mm_unpackhi_epi32(r2, r3));
                    let words = [
                        _mm_unpacklo_epi64(t0, t1),
                        _mm_unpackhi_epi64(t0, t1),
                        _mm_unpacklo_epi64(t2, t3),
                        _mm_unpackhi_epi64(t2, t3),
                    ];
                    for (j, w) in words.into_iter().enumerate() {
                        _mm_storeu_si128(m[4 * quarter + j].as_mut_ptr().add(4 * group).cast(), w);
                    }
                }
            }
        }
        m
    }

    #[target_feature(enable = "sse2")]
    pub(super) fn compress(state: &[Lanes; 4], m: &[Lanes; 16]) -> [Lanes; 4] {
        rounds!(state, m)
    }
}

/// The lanes with AVX2: sixteen lanes as two 256-bit registers (two independent chains, half the instructions
/// of SSE2's four).
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use core::arch::x86_64::{
        __m256i, _mm256_add_epi32, _mm256_and_si256, _mm256_andnot_si256, _mm256_loadu_si256, _mm256_or_si256,
        _mm256_set1_epi32, _mm256_slli_epi32, _mm256_srli_epi32, _mm256_storeu_si256, _mm256_xor_si256,
    };

    use crate::map::md5x::{K, Lanes, SHIFTS, word};

    type V = [__m256i; 2];

    #[target_feature(enable = "avx2")]
    fn load(l: &Lanes) -> V {
        // SAFETY: `l` is 16 u32 = 64 bytes; each unaligned 256-bit load reads 32 of them, at 0 and 32.
        #[expect(unsafe_code, reason = "unaligned loads from a 64-byte array; see SAFETY")]
        unsafe {
            let p = l.as_ptr();
            [_mm256_loadu_si256(p.cast()), _mm256_loadu_si256(p.add(8).cast())]
        }
    }

    #[target_feature(enable = "avx2")]
    fn store(v: V) -> Lanes {
        let mut out = [0u32; 16];
        // SAFETY: `out` is 16 u32 = 64 bytes; each unaligned 256-bit store writes 32 of them, at 0 and 32.
        #[expect(unsafe_code, reason = "unaligned stores into a 64-byte array; see SAFETY")]
        unsafe {
            let p = out.as_mut_ptr();
            _mm256_storeu_si256(p.cast(), v[0]);
            _mm256_storeu_si256(p.add(8).cast(), v[1]);
        }
        out
    }

    macro_rules! lanewise {
        ($name:ident, $op:ident) => {
            #[target_feature(enable = "avx2")]
            #[inline]
            fn $name(a: V, b: V) -> V {
                [$op(a[0], b[0]), $op(a[1], b[1])]
            }
        };
    }
    lanewise!(add, _mm256_add_epi32);
    lanewise!(and, _mm256_and_si256);
    lanewise!(andnot, _mm256_andnot_si256);
    lanewise!(or, _mm256_or_si256);
    lanewise!(xor, _mm256_xor_si256);

    #[target_feature(enable = "avx2")]
    #[inline]
    fn splat(x: u32) -> V {
        [_mm256_set1_epi32(x as i32); 2]
    }

    /// Rotates every lane left by `L` bits (`R` is `32 - L`).
    #[target_feature(enable = "avx2")]
    #[inline]
    fn rotl<const L: i32, const R: i32>(v: V) -> V {
        [
            _mm256_or_si256(_mm256_slli_epi32::<L>(v[0]), _mm256_srli_epi32::<R>(v[0])),
            _mm256_or_si256(_mm256_slli_epi32::<L>(v[1]), _mm256_srli_epi32::<R>(v[1])),
        ]
    }

    round_functions!("avx2");

    #[target_feature(enable = "avx2")]
    pub(super) fn compress(state: &[Lanes; 4], m: &[Lanes; 16]) -> [Lanes; 4] {
        rounds!(state, m)
    }
}

/// The lanes as plain loops (for architectures without the SSE2 path).
#[cfg(any(not(target_arch = "x86_64"), test))]
mod portable {
    use crate::map::md5x::{K, LANES, Lanes, SHIFTS, word};

    pub(super) fn transpose(rows: &[[u8; 64]; LANES]) -> [Lanes; 16] {
        std::array::from_fn(|w| {
            std::array::from_fn(|lane| {
                let b = &rows[lane][4 * w..4 * w + 4];
                u32::from_le_bytes([b[0], b[1], b[2], b[3]])
            })
        })
    }

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

/// Writes the 64-byte block number `block` of the padded message of `key` (MD5's padding: `0x80`, zeros, the
/// length in bits as a little-endian u64 in the last 8 bytes of the last block) into `out`.
fn block_bytes(key: &[u8], block: usize, out: &mut [u8; 64]) {
    *out = [0; 64];
    let start = block * 64;
    let len = key.len();
    if let Some(rest) = key.get(start..) {
        // Eight bytes at a time, then the last few one by one: keys are short, and a copy of a length known
        // only at run time would be a call.
        let src = &rest[..rest.len().min(64)];
        let mut words = src.chunks_exact(8);
        for (dst, word) in out.chunks_exact_mut(8).zip(&mut words) {
            dst.copy_from_slice(word);
        }
        let whole = src.len() - words.remainder().len();
        for (dst, &b) in out[whole..].iter_mut().zip(words.remainder()) {
            *dst = b;
        }
    }
    if (start..start + 64).contains(&len) {
        out[len - start] = 0x80;
    }
    if block + 1 == blocks(len) {
        out[56..].copy_from_slice(&((len as u64).wrapping_mul(8)).to_le_bytes());
    }
}

/// The message words by word, then lane (as the rounds read them) of the lanes' blocks, each 16 little-endian
/// words.
fn transpose(rows: &[[u8; 64]; LANES]) -> [Lanes; 16] {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `sse2::transpose` needs SSE2, which every x86_64 CPU has (the architecture's baseline).
        #[expect(unsafe_code, reason = "calling a target-feature function; see SAFETY")]
        unsafe {
            sse2::transpose(rows)
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    portable::transpose(rows)
}

/// Blocks in the padded message of a key of `len` bytes.
const fn blocks(len: usize) -> usize {
    (len + 8) / 64 + 1
}

/// The MD5 digests of up to [`LANES`] keys: `out[i]` is the digest of `keys[i]`, its 16 bytes read as a
/// little-endian `u128` (`out[i].to_le_bytes()` is the digest as MD5 writes it). A number, not bytes, so that
/// the map reads its windows from a register rather than reading back bytes just stored.
pub fn md5_lanes(keys: &[&[u8]], out: &mut [u128]) {
    let n = keys.len().min(LANES).min(out.len());
    let mut state: [Lanes; 4] =
        [[0x6745_2301; LANES], [0xefcd_ab89; LANES], [0x98ba_dcfe; LANES], [0x1032_5476; LANES]];
    let mut lane_blocks = [0usize; LANES];
    for (b, k) in lane_blocks.iter_mut().zip(keys.iter().take(n)) {
        *b = blocks(k.len());
    }
    let max_blocks = lane_blocks.iter().copied().max().unwrap_or(0);
    // Each lane's block as bytes (a lane past its message, or unused, hashes whatever it holds; its state is
    // not updated), then turned into words by word index, then lane, as the rounds read them.
    let mut rows = [[0u8; 64]; LANES];
    for block in 0..max_blocks {
        for (lane, key) in keys.iter().enumerate().take(n) {
            if block < lane_blocks[lane] {
                block_bytes(key, block, &mut rows[lane]);
            }
        }
        let m = transpose(&rows);
        let after = compress(&state, &m);
        // A lane whose message has ended keeps its state: its words are added under a mask of zeros (no
        // branch a lane, so the loop runs on vectors).
        let live: Lanes = std::array::from_fn(|l| if block < lane_blocks[l] { u32::MAX } else { 0 });
        for (words, new) in state.iter_mut().zip(&after) {
            for ((w, &x), &keep) in words.iter_mut().zip(new).zip(&live) {
                *w = w.wrapping_add(x & keep);
            }
        }
    }
    for (l, digest) in out.iter_mut().enumerate().take(n) {
        *digest = u128::from(state[0][l])
            | u128::from(state[1][l]) << 32
            | u128::from(state[2][l]) << 64
            | u128::from(state[3][l]) << 96;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use md5::{Digest, Md5};

    #[test]
    fn digests_equal_md5_for_every_length_and_lane_count() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 31 + 7) as u8).collect();
        // Keys of every length from 0 to 200 bytes, in groups of 1 to 16 lanes of mixed lengths.
        let mut len = 0;
        while len <= 200 {
            for lanes in 1..=LANES {
                let keys: Vec<&[u8]> = (0..lanes).map(|l| &data[l..l + (len + l * 13) % 201]).collect();
                let mut out = vec![0u128; lanes];
                md5_lanes(&keys, &mut out);
                for (k, d) in keys.iter().zip(&out) {
                    let want: [u8; 16] = Md5::digest(k).into();
                    assert_eq!(d.to_le_bytes(), want, "key of {} bytes among {lanes} lanes", k.len());
                }
            }
            len += 7;
        }
        // The portable lanes agree with the SSE2 ones and, where the CPU has it, the AVX2 ones.
        let m: [Lanes; 16] =
            std::array::from_fn(|i| std::array::from_fn(|l| ((i * 31 + l * 7) as u32).wrapping_mul(0x9E37_79B9)));
        let st: [Lanes; 4] =
            std::array::from_fn(|i| std::array::from_fn(|l| ((i + l) as u32).wrapping_mul(0x1234_5679)));
        let portable = portable::compress(&st, &m);
        assert_eq!(compress(&st, &m), portable);
        // Rows that differ in every lane (each byte of lane l is xored with 17 l), so that no lane can stand
        // in for another.
        let rows: [[u8; 64]; LANES] =
            std::array::from_fn(|l| std::array::from_fn(|i| (i as u8).wrapping_mul(3) ^ (l as u8).wrapping_mul(17)));
        assert_eq!(transpose(&rows), portable::transpose(&rows), "the SSE2 transposition");
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: SSE2 is in every x86_64 CPU's baseline; AVX2 is called only where detected.
            #[expect(unsafe_code, reason = "calling target-feature functions; see SAFETY")]
            unsafe {
                assert_eq!(sse2::compress(&st, &m), portable, "SSE2 lanes");
                if std::arch::is_x86_feature_detected!("avx2") {
                    assert_eq!(avx2::compress(&st, &m), portable, "AVX2 lanes");
                }
            }
        }
        let mut one = [0u128; 1];
        md5_lanes(&[b"The quick brown fox jumps over the lazy dog"], &mut one);
        assert_eq!(
            one[0].to_le_bytes()[..4],
            [0x9e, 0x10, 0x7d, 0x9d],
            "RFC test vector 9e107d9d372bb6826bd81d3542a419d6"
        );
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
        const ROUNDS: usize = 1000;
        let mut out = [0u128; LANES];
        let mut sink = 0u8;
        let t = std::time::Instant::now();
        for _ in 0..ROUNDS {
            for c in refs.chunks(LANES) {
                md5_lanes(c, &mut out);
                sink ^= out[0] as u8;
            }
        }
        let lanes = t.elapsed().as_nanos() as f64 / (ROUNDS * refs.len()) as f64;
        let t = std::time::Instant::now();
        for _ in 0..ROUNDS {
            for k in &refs {
                let d: [u8; 16] = Md5::digest(k).into();
                sink ^= d[0];
            }
        }
        let scalar = t.elapsed().as_nanos() as f64 / (ROUNDS * refs.len()) as f64;
        eprintln!("md5 of a 16-byte key: {lanes:.1} ns in lanes, {scalar:.1} ns scalar ({sink})");
        #[cfg(target_arch = "x86_64")]
        {
            let m: [Lanes; 16] = std::array::from_fn(|i| std::array::from_fn(|l| (i * 31 + l) as u32));
            let mut st: [Lanes; 4] = std::array::from_fn(|i| std::array::from_fn(|l| (i + l) as u32));
            let t = std::time::Instant::now();
            for _ in 0..100_000 {
                // SAFETY: SSE2 is in every x86_64 CPU's baseline.
                #[expect(unsafe_code, reason = "calling a target-feature function; see SAFETY")]
                let r = unsafe { sse2::compress(&st, &m) };
                st[0][0] ^= r[0][0];
            }
            let sse2 = t.elapsed().as_nanos() as f64 / (100_000 * LANES) as f64;
            let t = std::time::Instant::now();
            if std::arch::is_x86_feature_detected!("avx2") {
                for _ in 0..100_000 {
                    // SAFETY: AVX2 detected just above.
                    #[expect(unsafe_code, reason = "calling a target-feature function; see SAFETY")]
                    let r = unsafe { avx2::compress(&st, &m) };
                    st[0][0] ^= r[0][0];
                }
            }
            let avx2 = t.elapsed().as_nanos() as f64 / (100_000 * LANES) as f64;
            if std::arch::is_x86_feature_detected!("avx2") {
                eprintln!("one block's rounds a key: SSE2 {sse2:.1} ns, AVX2 {avx2:.1} ns ({})", st[0][0]);
            } else {
                eprintln!("one block's rounds a key: SSE2 {sse2:.1} ns (no AVX2 on this CPU) ({})", st[0][0]);
            }
        }
    }
}
