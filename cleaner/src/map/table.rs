//! [`Table`]: the zeroed memory an offset map lives in, taken once and reused across passes.
//!
//! Three properties the maps rely on:
//! - **Lazy.** The bytes are an anonymous memory map: the kernel hands out zeroed pages on first touch, so a
//!   large budget on a small log costs only the pages the pass writes (`--dedupe-buffer 8GiB` on a
//!   three-record log stays at a few pages of resident memory).
//! - **Cheap to clear.** Writes mark the 64 KiB chunk they fall in; [`Table::clear`] zeroes only marked
//!   chunks, so clearing after a pass costs in proportion to what that pass touched (Kafka zero-fills its
//!   whole buffer before every pass).
//! - **Honest about failure.** A budget the machine cannot map is an error, never an abort.
//! - **A budget is a bound.** The mapping asks for no swap reservation (`MAP_NORESERVE`): a budget is address
//!   space, committed page by page as a pass writes, so `--dedupe-buffer 1TiB` on a small log is refused by
//!   nothing but the address space (128 TiB on x86-64 Linux), where a reserving mapping larger than the
//!   machine's memory and swap is refused at once by Linux's overcommit heuristic. Under strict overcommit
//!   (`vm.overcommit_memory = 2`) Linux ignores the flag and such a budget is an error, as before. A pass
//!   writes only what its dirty section can fill (each map sizes its table by the section's bound), so the
//!   commitment that matters follows the work.

use std::io;

use memmap2::MmapMut;

/// Bytes per dirty-tracking chunk.
const CHUNK_BYTES: usize = 64 << 10;

/// A zeroed byte table of a fixed size.
pub struct Table {
    /// `None` for a zero-sized table (an anonymous map cannot be empty).
    map: Option<MmapMut>,
    /// One bit per chunk: set once a write may have made the chunk non-zero.
    dirty: Vec<u64>,
    /// Chunks marked dirty since the last clear.
    dirty_chunks: usize,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table").field("bytes", &self.len()).field("dirty_chunks", &self.dirty_chunks).finish()
    }
}

impl Table {
    /// A zeroed table of `bytes` bytes; no page is touched until written.
    ///
    /// # Errors
    /// The operating system's error when it cannot map that much memory.
    pub fn new(bytes: usize) -> io::Result<Table> {
        let map = if bytes == 0 {
            None
        } else {
            let map = memmap2::MmapOptions::new().len(bytes).no_reserve_swap().map_anon()?;
            // Large tables suffer TLB misses on every random probe; transparent huge pages (where the system
            // allows them on request) take 1.3-1.5x off a probe. Advice only: failure changes nothing. Under a
            // VM that reports free memory to its host (virtio-balloon free page reporting), a huge page made
            // from a block freed a few seconds before is faulted in by the host again, about 2 ms a MiB on the
            // project's machines: a pass over a million keys then loses what the probes gain (docs/memory.md,
            // "Why pass 1 of `pass-bench` swings"); the advice stays for the machines that do not.
            #[cfg(target_os = "linux")]
            let _ = map.advise(memmap2::Advice::HugePage);
            Some(map)
        };
        let chunks = bytes.div_ceil(CHUNK_BYTES);
        Ok(Table { map, dirty: vec![0; chunks.div_ceil(64)], dirty_chunks: 0 })
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.map.as_ref().map_or(0, |m| m.len())
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or_default()
    }

    /// The bytes, to write the range `at..at + len` (marked dirty).
    pub fn write(&mut self, at: usize, len: usize) -> &mut [u8] {
        self.mark(at);
        if len > 0 {
            self.mark(at + len - 1);
        }
        match self.map.as_deref_mut() {
            Some(b) => &mut b[at..at + len],
            None => &mut [],
        }
    }

    /// The bytes, to write the range `at..at + len`, every chunk of it marked dirty (for writes spread over a
    /// large range, such as a table growing in place).
    pub fn write_range(&mut self, at: usize, len: usize) -> &mut [u8] {
        if len > 0 {
            let (first, last) = (at / CHUNK_BYTES, (at + len - 1) / CHUNK_BYTES);
            for chunk in first..=last {
                self.mark(chunk * CHUNK_BYTES);
            }
        }
        match self.map.as_deref_mut() {
            Some(b) => &mut b[at..at + len],
            None => &mut [],
        }
    }

    fn mark(&mut self, at: usize) {
        let chunk = at / CHUNK_BYTES;
        let (word, bit) = (chunk / 64, 1u64 << (chunk % 64));
        if let Some(w) = self.dirty.get_mut(word)
            && *w & bit == 0
        {
            *w |= bit;
            self.dirty_chunks += 1;
        }
    }

    /// Bytes of the chunks written since the last clear: the memory the last pass touched.
    pub fn touched_bytes(&self) -> usize {
        (self.dirty_chunks * CHUNK_BYTES).min(self.len())
    }

    /// Gives the pages of `from..` back to the system (they read as zeros again, and count in no resident set
    /// until written): a pass that uses less of the table than the last one does not keep the last one's memory.
    pub fn release_from(&mut self, from: usize) {
        let Some(map) = self.map.as_mut() else { return };
        let page = 4096;
        let start = from.div_ceil(page) * page;
        if start >= map.len() {
            return;
        }
        let len = map.len() - start;
        // SAFETY: the map is this table's own private anonymous mapping, and `&mut self` means no reference
        // into it is alive. MADV_DONTNEED on such a mapping drops its pages, after which the range reads as
        // zeros: the state `clear` would leave it in, which every map expects of unwritten bytes.
        #[expect(unsafe_code, reason = "MADV_DONTNEED on the table's own anonymous mapping; see SAFETY")]
        let released = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, len) };
        if released.is_err() {
            // Without the advice the pages stay: zero them instead, so the range still reads as zeros.
            map[start..].fill(0);
        }
        // The marks of the released chunks go, a word at a time: a terabyte's table has 16 million chunks.
        let first = start.div_ceil(CHUNK_BYTES);
        for (i, w) in self.dirty.iter_mut().enumerate().skip(first / 64) {
            let keep = if i == first / 64 { (1u64 << (first % 64)) - 1 } else { 0 };
            let gone = *w & !keep;
            if gone != 0 {
                // Written only where marked, as in `clear`.
                self.dirty_chunks -= gone.count_ones() as usize;
                *w &= keep;
            }
        }
    }

    /// Zeroes every chunk written since the last clear.
    pub fn clear(&mut self) {
        if self.dirty_chunks == 0 {
            return;
        }
        let Some(bytes) = self.map.as_deref_mut() else { return };
        // Only marked words are written: a terabytes' budget has megabytes of marks, which a write to every
        // word would make resident at every pass (141 MiB for 64 TiB on a three-record log).
        for (w, word) in self.dirty.iter_mut().enumerate().filter(|(_, word)| **word != 0) {
            let mut bits = *word;
            while bits != 0 {
                let chunk = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let start = chunk * CHUNK_BYTES;
                let end = (start + CHUNK_BYTES).min(bytes.len());
                bytes[start..end].fill(0);
            }
            *word = 0;
        }
        self.dirty_chunks = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_are_cleared_and_counted_by_chunk() {
        let mut t = Table::new(5 * CHUNK_BYTES + 100).expect("map");
        assert!(t.bytes().iter().all(|&b| b == 0));
        t.write(10, 4).copy_from_slice(b"abcd");
        t.write(CHUNK_BYTES - 2, 4).copy_from_slice(b"wxyz");
        t.write(5 * CHUNK_BYTES + 96, 4).copy_from_slice(b"last");
        assert_eq!(t.touched_bytes(), 3 * CHUNK_BYTES);
        assert_eq!(&t.bytes()[10..14], b"abcd");
        t.clear();
        assert_eq!(t.touched_bytes(), 0);
        assert!(t.bytes().iter().all(|&b| b == 0), "every written chunk is zero again");
    }

    #[test]
    fn released_pages_read_as_zeros_and_are_no_longer_counted() {
        let mut t = Table::new(4 * CHUNK_BYTES).expect("map");
        t.write_range(0, 4 * CHUNK_BYTES).fill(7);
        assert_eq!(t.touched_bytes(), 4 * CHUNK_BYTES);
        t.release_from(2 * CHUNK_BYTES);
        assert_eq!(t.touched_bytes(), 2 * CHUNK_BYTES);
        assert!(t.bytes()[2 * CHUNK_BYTES..].iter().all(|&b| b == 0));
        assert!(t.bytes()[..2 * CHUNK_BYTES].iter().all(|&b| b == 7));
        t.clear();
        assert!(t.bytes().iter().all(|&b| b == 0));
    }

    #[test]
    fn an_impossible_budget_is_an_error_not_an_abort() {
        assert!(Table::new(usize::MAX / 2).is_err());
        let empty = Table::new(0).expect("empty");
        assert!(empty.len() == 0 && empty.bytes().is_empty());
    }
}
