//! Asking the CPU to load the bytes a scan is about to read.
//!
//! A scan of a segment reads a few bytes of each record (its length, offset and key, for a cleaner's pass 1)
//! from segments far larger than the CPU's caches. The CPU's own prefetchers follow such a stream only within
//! a 4 KiB page, and a key-only scan does too little work a record to hide a miss, so each record's first byte
//! was a miss paid in full: on the 4 GiB backlog, 62% of the key parse's samples sat on that one load. A scan
//! calls [`scan_ahead`] at each record (Kafka's key reads, and every walk of native frames), which keeps about
//! [`SCAN_AHEAD`] bytes of requests in flight ahead of it. A reader of whole batches whose checksum comes first
//! (a pass 2) asks instead for the next batch while it reads this one's records ([`next_batch_ahead`]): the
//! checksum reads a batch in one go, too fast for a request issued then to arrive in time.

/// How far ahead of a record its scan asks for the bytes: 1 KiB, about eight records of 125 bytes. Measured on
/// the 4 GiB backlog (`--map external`): pass 1 took 2.97-2.99 s on one thread without it, 2.67 s with it;
/// 2 KiB did no better than 1.
pub const SCAN_AHEAD: usize = 1 << 10;

/// Asks the CPU to start loading the cache line holding `items[at]` (a hint: no effect on results, and
/// nothing happens for an index out of range).
#[inline]
pub fn prefetch<T>(items: &[T], at: usize) {
    if let Some(item) = items.get(at) {
        prefetch_line(std::ptr::from_ref(item).cast());
    }
}

/// Asks the CPU to start loading the three cache lines [`SCAN_AHEAD`] bytes past `at`, the first byte of the
/// record a scan is reading (a hint: no effect on results). Three lines, 192 bytes: called once a record, the
/// requests leave no line unasked between records of up to 192 bytes (two lines left about one line in six
/// unasked under the native bench's 152-byte frames). Measured with `pass-bench` (6M records, 1M keys): the
/// native pass 1 went from 71-76 to 66-71 ns a record, and the floor's walk 1, which calls this too, from 52-53
/// to 49-51. Past the end of what `at` lies in, the request reaches whatever follows it in memory, or nothing: a
/// hint cannot fault.
#[inline]
pub fn scan_ahead(at: *const u8) {
    let ahead = at.wrapping_add(SCAN_AHEAD);
    prefetch_line(ahead);
    prefetch_line(ahead.wrapping_add(64));
    prefetch_line(ahead.wrapping_add(128));
}

/// Asks for the two cache lines one batch's records (`records_len` bytes) past `at`: about where the record at
/// the same place in the next batch lies when batches are alike (a batch header, 61 bytes, before it; the
/// records of a batch, called in turn, cover the next batch's lines between them). A reader that takes a
/// batch's records whole (a pass 2) calls it at each record, so that the next batch is in the cache by the
/// time its checksum is taken. For a compressed batch, whose records lie in a buffer of their own, the hint
/// reaches past that buffer: wasted, and harmless.
#[inline]
pub fn next_batch_ahead(at: *const u8, records_len: usize) {
    let ahead = at.wrapping_add(records_len);
    prefetch_line(ahead);
    prefetch_line(ahead.wrapping_add(64));
}

/// The hint itself, on the line holding `p`.
#[inline]
fn prefetch_line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` only hints the cache; it reads nothing and cannot fault, whatever the address
    // (an unmapped one included). SSE, which it needs, is part of every x86_64 CPU.
    #[expect(unsafe_code, reason = "a cache hint; see SAFETY")]
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hint_past_any_mapping_does_not_fault() {
        let bytes = [7u8; 100];
        // Past the end of the slice, at its last byte, and at addresses no process maps (null, the top of the
        // address space, where adding the distance wraps around).
        scan_ahead(bytes.as_ptr().wrapping_add(bytes.len()));
        scan_ahead(bytes.as_ptr().wrapping_add(99));
        scan_ahead(std::ptr::null());
        scan_ahead(std::ptr::without_provenance(usize::MAX - 10));
        next_batch_ahead(bytes.as_ptr(), usize::MAX);
        next_batch_ahead(std::ptr::null(), 1 << 20);
        prefetch(&bytes, 99);
        prefetch(&bytes, 100);
        prefetch(&bytes, usize::MAX);
        assert_eq!(bytes, [7u8; 100], "a hint changes nothing");
    }
}
