//! [`StaleSet`]: a bit an offset, from the log's first closed offset to the end of the dirty section, set for
//! the records the external pass found superseded. In memory up to [`MEMORY_BYTES`], beyond in an unlinked
//! temporary file of its own, mapped (untouched pages cost nothing, and the pages it touches are file pages
//! the kernel can write out under pressure).

use std::path::Path;

use memmap2::MmapMut;

/// The largest bit set kept in memory.
pub const MEMORY_BYTES: u64 = 32 << 20;

/// Where the bits live.
enum Bits {
    Memory(Vec<u8>),
    File(MmapMut),
}

/// The stale offsets of a pass.
pub(crate) struct StaleSet {
    start: u64,
    end: u64,
    bits: Bits,
    count: u64,
}

impl std::fmt::Debug for StaleSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaleSet")
            .field("start", &self.start)
            .field("end", &self.end)
            .field("count", &self.count)
            .finish()
    }
}

impl StaleSet {
    /// An empty set for the offsets `start..end`, its file (when it needs one) in `dir` or the system's
    /// temporary directory.
    ///
    /// # Errors
    /// The file cannot be made or mapped.
    pub(crate) fn new(start: u64, end: u64, dir: Option<&Path>) -> std::io::Result<StaleSet> {
        let bytes = end.saturating_sub(start).div_ceil(8);
        let bits = if bytes <= MEMORY_BYTES {
            Bits::Memory(vec![0; usize::try_from(bytes).unwrap_or(usize::MAX)])
        } else {
            let file = match dir {
                Some(d) => tempfile::tempfile_in(d)?,
                None => tempfile::tempfile()?,
            };
            file.set_len(bytes)?;
            // SAFETY: the file was just created by this process and is unlinked (it has no name another process
            // could open it by), so nothing but this mapping changes it while it lives; the mapping owns the
            // only handle that outlives this function.
            #[expect(unsafe_code, reason = "mapping an unlinked temporary file of this process; see SAFETY")]
            let map = unsafe { MmapMut::map_mut(&file)? };
            Bits::File(map)
        };
        Ok(StaleSet { start, end, bits, count: 0 })
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        match &mut self.bits {
            Bits::Memory(v) => v,
            Bits::File(m) => m,
        }
    }

    fn bytes(&self) -> &[u8] {
        match &self.bits {
            Bits::Memory(v) => v,
            Bits::File(m) => m,
        }
    }

    /// Marks `offset` stale (an offset outside the set's range is ignored).
    #[cfg(test)]
    pub(crate) fn set(&mut self, offset: u64) {
        if let Some(i) = offset.checked_sub(self.start) {
            self.set_from_start(i);
        }
    }

    /// Marks the offset `i` past the set's start stale (an index past its end is ignored).
    pub(crate) fn set_from_start(&mut self, i: u64) {
        self.set_all_from_start(&[i]);
    }

    /// Marks every one of `offsets` stale (those outside the set's range are ignored).
    #[inline]
    pub(crate) fn set_all(&mut self, offsets: &[u64]) {
        let start = self.start;
        self.set_each(offsets.iter().filter_map(|&o| o.checked_sub(start)));
    }

    /// Marks every offset `i` past the set's start of `indexes` stale (those past its end are ignored): as the
    /// external pass's entries hold them ([`super::entry::Entry::offset`]).
    #[inline]
    pub(crate) fn set_all_from_start(&mut self, indexes: &[u64]) {
        self.set_each(indexes.iter().copied());
    }

    /// Sets the bits `indexes` (those past the end are ignored), a run at a time: the bits found once and no
    /// branch on what each held.
    #[inline]
    fn set_each(&mut self, indexes: impl Iterator<Item = u64>) {
        let span = self.end.saturating_sub(self.start);
        let mut added = 0u64;
        let bytes = self.bytes_mut();
        for i in indexes {
            if i >= span {
                continue;
            }
            let Some(byte) = bytes.get_mut((i / 8) as usize) else { continue };
            let bit = 1u8 << (i % 8);
            added += u64::from(*byte & bit == 0);
            *byte |= bit;
        }
        self.count += added;
    }

    /// True when `offset` is stale.
    #[inline]
    pub(crate) fn contains(&self, offset: u64) -> bool {
        if offset < self.start || offset >= self.end {
            return false;
        }
        let i = offset - self.start;
        self.bytes()[(i / 8) as usize] & (1 << (i % 8)) != 0
    }

    /// Stale offsets marked.
    #[cfg(test)]
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// Bytes of the set's file (none when it is held in memory).
    pub(crate) fn file_bytes(&self) -> u64 {
        match &self.bits {
            Bits::Memory(_) => 0,
            Bits::File(m) => m.len() as u64,
        }
    }

    /// Bytes of memory the set holds (its file's pages included, as they become resident when set).
    pub(crate) fn memory_bytes(&self) -> u64 {
        self.bytes().len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_are_set_once_and_only_in_range() {
        for (start, end) in [(100u64, 1_000u64), (0, (MEMORY_BYTES + 1) * 8)] {
            let mut s = StaleSet::new(start, end, None).expect("set");
            assert!(!s.contains(start) && !s.contains(end - 1));
            s.set(start);
            s.set(end - 1);
            s.set(end - 1);
            s.set(end);
            s.set(start.saturating_sub(1));
            assert!(s.contains(start) && s.contains(end - 1) && !s.contains(end) && !s.contains(start + 1));
            assert_eq!(s.count(), 2);
            s.set_all(&[start + 1, start + 1, start, end, start + 9]);
            assert!(s.contains(start + 1) && s.contains(start + 9) && !s.contains(start + 2) && !s.contains(end));
            assert_eq!(s.count(), 4);
            assert_eq!(s.file_bytes(), if end - start > MEMORY_BYTES * 8 { (end - start).div_ceil(8) } else { 0 });
        }
    }
}
