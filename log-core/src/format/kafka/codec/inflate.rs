//! libdeflate's gzip decoder, told how many input bytes a member took: a Kafka gzip batch may hold several
//! members, or bytes after its member (Java's `GZIPInputStream` reads the members and ignores such bytes), so a
//! decode that stops at the first member must say where it stopped. The `libdeflater` crate's call does not
//! (libdeflate then ignores what follows the member), hence this wrapper of `libdeflate_gzip_decompress_ex`.

use std::ptr::NonNull;

/// A libdeflate decompressor, freed when dropped.
#[derive(Debug)]
pub(crate) struct Inflater {
    p: NonNull<libdeflate_sys::libdeflate_decompressor>,
}

/// What one member's decode came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Member {
    /// Decoded: the bytes of input it took and of output it wrote.
    Whole { read: usize, written: usize },
    /// The output buffer is too small for it.
    TooLarge,
    /// Not a gzip member that decodes.
    Bad,
}

impl Inflater {
    /// A decompressor, or `None` when libdeflate cannot allocate one.
    pub(crate) fn new() -> Option<Inflater> {
        // SAFETY: libdeflate_alloc_decompressor takes no argument and returns a new decompressor or null; a
        // non-null one is owned by the Inflater and freed once, in Drop.
        #[expect(unsafe_code, reason = "libdeflate's allocator; see SAFETY")]
        let p = unsafe { libdeflate_sys::libdeflate_alloc_decompressor() };
        NonNull::new(p).map(|p| Inflater { p })
    }

    /// Decodes the gzip member at the start of `input` into `out`.
    pub(crate) fn member(&mut self, input: &[u8], out: &mut [u8]) -> Member {
        let (mut read, mut written) = (0usize, 0usize);
        // SAFETY: `self.p` is a live decompressor this Inflater owns (used by one thread at a time: `&mut self`);
        // `input` and `out` are valid for reads and writes of their lengths, which are passed; the two out
        // parameters point at live locals.
        #[expect(unsafe_code, reason = "libdeflate's decoder; see SAFETY")]
        let result = unsafe {
            libdeflate_sys::libdeflate_gzip_decompress_ex(
                self.p.as_ptr(),
                input.as_ptr().cast(),
                input.len(),
                out.as_mut_ptr().cast(),
                out.len(),
                &raw mut read,
                &raw mut written,
            )
        };
        match result {
            libdeflate_sys::libdeflate_result_LIBDEFLATE_SUCCESS => {
                Member::Whole { read: read.min(input.len()), written: written.min(out.len()) }
            }
            libdeflate_sys::libdeflate_result_LIBDEFLATE_INSUFFICIENT_SPACE => Member::TooLarge,
            _ => Member::Bad,
        }
    }
}

impl Drop for Inflater {
    fn drop(&mut self) {
        // SAFETY: `self.p` came from libdeflate_alloc_decompressor and is freed here only, once.
        #[expect(unsafe_code, reason = "libdeflate's free; see SAFETY")]
        unsafe {
            libdeflate_sys::libdeflate_free_decompressor(self.p.as_ptr());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_says_how_much_input_it_took() {
        let mut gz = Vec::new();
        super::super::compression::compress(super::super::compression::Compression::Gzip, b"hello, kafka", &mut gz);
        let one = gz.len();
        gz.extend_from_slice(b"trailing");
        let mut inflater = Inflater::new().expect("an inflater");
        let mut out = vec![0u8; 64];
        assert_eq!(inflater.member(&gz, &mut out), Member::Whole { read: one, written: 12 });
        assert_eq!(&out[..12], b"hello, kafka");
        assert_eq!(inflater.member(&gz, &mut out[..4]), Member::TooLarge);
        assert_eq!(inflater.member(b"not gzip at all", &mut out), Member::Bad);
    }
}
