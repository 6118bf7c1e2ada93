//! The record decoder on arbitrary bytes: never panics, never allocates from a length it read, and what it
//! accepts re-encodes to the same bytes. Half of the inputs get a correct checksum written in (when the first
//! byte is odd), so that the fuzzer explores the body's fields and not only the checksum.
#![no_main]

use libfuzzer_sys::fuzz_target;
use log_core::codec::{FRAME_HEADER_BYTES, decode, encode_ref_with_horizon};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let mut frame = rest.to_vec();
    if mode & 1 == 1 && frame.len() >= FRAME_HEADER_BYTES {
        let body_len = u32::from_le_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize;
        let end = FRAME_HEADER_BYTES.saturating_add(body_len).min(frame.len());
        let crc = crc32c::crc32c(&frame[FRAME_HEADER_BYTES..end]);
        frame[4..8].copy_from_slice(&crc.to_le_bytes());
    }
    let Ok((rec, len)) = decode(&frame) else { return };
    assert!(len <= frame.len());
    let mut out = Vec::new();
    // A frame whose body sits at the limit without a horizon cannot be re-encoded (8 bytes stay reserved).
    if encode_ref_with_horizon(&rec, rec.delete_horizon, &mut out).is_ok() {
        assert_eq!(&out[..], &frame[..len], "decode then encode changed the frame");
    }
});
