//! Sorted runs of entries: a buffer that, when full, is sorted and judged, its survivors written to an
//! unlinked temporary file; at the end, a merge of every run by hash, judged again.
//!
//! The judgement, the same within a run and across runs: among the entries of one hash, every entry below the
//! highest mapped offset is stale; the others survive (the mapped latest, or the entries that were only asked
//! about when no record of the key was mapped).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use super::budget::ENTRY_BYTES;
use super::stale::StaleSet;
use super::tournament::Tournament;

/// An entry: a key's hash, and an offset tagged with whether pass 1 maps it. Ordered by hash, then offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Entry {
    hi: u64,
    lo: u64,
    /// `offset << 1 | mapped` (Kafka's offsets are below 2^63).
    tagged: u64,
}

impl Entry {
    pub(crate) fn new(hash: u128, offset: u64, mapped: bool) -> Entry {
        Entry { hi: (hash >> 64) as u64, lo: hash as u64, tagged: offset << 1 | u64::from(mapped) }
    }

    fn offset(self) -> u64 {
        self.tagged >> 1
    }

    fn mapped(self) -> bool {
        self.tagged & 1 == 1
    }

    fn same_key(self, other: Entry) -> bool {
        self.hi == other.hi && self.lo == other.lo
    }

    fn write(self, out: &mut impl Write) -> std::io::Result<()> {
        out.write_all(&self.hi.to_le_bytes())?;
        out.write_all(&self.lo.to_le_bytes())?;
        out.write_all(&self.tagged.to_le_bytes())
    }

    fn read(b: &[u8]) -> Entry {
        let word = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[at..at + 8]);
            u64::from_le_bytes(w)
        };
        Entry { hi: word(0), lo: word(8), tagged: word(16) }
    }
}

/// Judges the entries of one key (any order): marks those below the highest mapped offset stale, and hands
/// the others to `survive`.
fn judge(group: &[Entry], stale: &mut StaleSet, mut survive: impl FnMut(Entry)) {
    let latest = group.iter().filter(|e| e.mapped()).map(|e| e.offset()).max();
    for &e in group {
        match latest {
            Some(m) if e.offset() < m => stale.set(e.offset()),
            _ => survive(e),
        }
    }
}

/// Calls `f` with each run of equal keys of the sorted `entries`.
fn each_key(entries: &[Entry], mut f: impl FnMut(&[Entry])) {
    let mut from = 0;
    while from < entries.len() {
        let mut to = from + 1;
        while to < entries.len() && entries[to].same_key(entries[from]) {
            to += 1;
        }
        f(&entries[from..to]);
        from = to;
    }
}

/// What the merge found.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Merged {
    /// Distinct keys (hashes).
    pub(crate) keys: u64,
    /// Entries pushed.
    pub(crate) entries: u64,
    /// Runs written to the spill file.
    pub(crate) runs: u64,
    /// Bytes written to it.
    pub(crate) spilled_bytes: u64,
    /// Bytes of the buffer at its fullest.
    pub(crate) buffer_bytes: u64,
    /// Where the time went.
    pub(crate) phases: crate::map::ExternalPhases,
}

/// The buffer and the runs spilled so far.
pub(crate) struct Runs {
    capacity: usize,
    buf: Vec<Entry>,
    spill_dir: Option<PathBuf>,
    file: Option<File>,
    /// Each run: its first entry's index in the file, and its length in entries.
    runs: Vec<(u64, u64)>,
    written: u64,
    merged: Merged,
}

/// Entries the buffer first takes (1.5 MiB), growing from there by doubling up to the budget.
const FIRST_ENTRIES: usize = 1 << 16;

/// Entries a merge reads from a run at a time (64 KiB).
const READ_ENTRIES: usize = (64 << 10) / ENTRY_BYTES;

impl Runs {
    /// Runs of at most `capacity` entries (at least 16), spilled to `spill_dir` (or the system's temporary
    /// directory).
    pub(crate) fn new(capacity: usize, spill_dir: Option<PathBuf>) -> Runs {
        Runs {
            capacity: capacity.max(16),
            buf: Vec::new(),
            spill_dir,
            file: None,
            runs: Vec::new(),
            written: 0,
            merged: Merged::default(),
        }
    }

    /// Adds an entry; a full buffer is sorted, judged and written as a run.
    ///
    /// # Errors
    /// The spill file cannot be made or written.
    pub(crate) fn push(&mut self, e: Entry, stale: &mut StaleSet) -> std::io::Result<()> {
        if self.buf.len() == self.buf.capacity() {
            // The buffer grows with the work, doubling up to the budget: a pass over a few keys takes a little
            // memory whatever the budget (1 TiB, 2^64 - 1 bytes), and one the machine cannot grow further is
            // full where it stands (spilled as a run), never an abort.
            let want = self.capacity.min(self.buf.len().saturating_mul(2).max(FIRST_ENTRIES));
            if self.buf.try_reserve_exact(want - self.buf.len()).is_err() {
                if self.buf.is_empty() {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::OutOfMemory,
                        "cannot allocate the external pass's buffer",
                    ));
                }
                self.spill(stale)?;
            }
        }
        self.buf.push(e);
        self.merged.entries += 1;
        if self.buf.len() >= self.capacity {
            self.spill(stale)?;
        }
        Ok(())
    }

    fn spill(&mut self, stale: &mut StaleSet) -> std::io::Result<()> {
        self.merged.buffer_bytes = self.merged.buffer_bytes.max((self.buf.capacity() * ENTRY_BYTES) as u64);
        let t = std::time::Instant::now();
        self.buf.sort_unstable();
        self.merged.phases.sort_seconds += t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        if self.file.is_none() {
            self.file = Some(match &self.spill_dir {
                Some(d) => tempfile::tempfile_in(d)?,
                None => tempfile::tempfile()?,
            });
        }
        let Some(file) = &self.file else { return Ok(()) };
        let first = self.written;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        let mut result = Ok(());
        let mut kept = 0u64;
        each_key(&self.buf, |group| {
            judge(group, stale, |e| {
                if result.is_ok() {
                    result = e.write(&mut out);
                    kept += 1;
                }
            });
        });
        result?;
        out.flush()?;
        self.written += kept;
        self.runs.push((first, kept));
        self.merged.runs += 1;
        self.merged.spilled_bytes += kept * ENTRY_BYTES as u64;
        self.buf.clear();
        self.merged.phases.spill_seconds += t.elapsed().as_secs_f64();
        Ok(())
    }

    /// Merges every run (and what the buffer holds) by key and judges each key across them.
    ///
    /// # Errors
    /// A spill file cannot be read.
    pub(crate) fn finish(mut self, stale: &mut StaleSet) -> std::io::Result<Merged> {
        self.merged.buffer_bytes = self.merged.buffer_bytes.max((self.buf.capacity() * ENTRY_BYTES) as u64);
        let t = std::time::Instant::now();
        self.buf.sort_unstable();
        self.merged.phases.sort_seconds += t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        let Some(file) = self.file.take() else {
            // Everything fit in the buffer: one run, judged where it is.
            let mut keys = 0;
            each_key(&self.buf, |group| {
                keys += 1;
                judge(group, stale, |_| {});
            });
            self.merged.keys = keys;
            self.merged.phases.merged_entries = self.buf.len() as u64;
            self.merged.phases.merge_seconds = t.elapsed().as_secs_f64();
            return Ok(self.merged);
        };
        // The buffer's entries are the last run, read from memory; the others from the file.
        let mut sources: Vec<Source<'_>> =
            self.runs.iter().map(|&(first, len)| Source::file(&file, first, len)).collect();
        sources.push(Source::Memory { entries: &self.buf, at: 0 });
        let mut heads = Vec::with_capacity(sources.len());
        for s in &mut sources {
            heads.push(s.next()?);
        }
        let mut tournament = Tournament::new(heads);
        let mut group: Vec<Entry> = Vec::new();
        let (mut keys, mut merged) = (0u64, 0u64);
        while let (i, Some(e)) = tournament.winner() {
            merged += 1;
            if group.first().is_some_and(|g| !g.same_key(e)) {
                keys += 1;
                judge(&group, stale, |_| {});
                group.clear();
            }
            group.push(e);
            tournament.advance(sources[i].next()?);
        }
        if !group.is_empty() {
            keys += 1;
            judge(&group, stale, |_| {});
        }
        self.merged.keys = keys;
        self.merged.phases.merged_entries = merged;
        self.merged.phases.merge_seconds = t.elapsed().as_secs_f64();
        Ok(self.merged)
    }
}

/// A sorted run being merged.
enum Source<'a> {
    /// A run in the spill file: its entries `next..end` still to read, `buf` the ones read (from `bytes`).
    File {
        file: &'a File,
        next: u64,
        end: u64,
        buf: Vec<Entry>,
        bytes: Vec<u8>,
        at: usize,
    },
    Memory {
        entries: &'a [Entry],
        at: usize,
    },
}

impl<'a> Source<'a> {
    fn file(file: &'a File, first: u64, len: u64) -> Source<'a> {
        Source::File { file, next: first, end: first + len, buf: Vec::new(), bytes: Vec::new(), at: 0 }
    }

    fn next(&mut self) -> std::io::Result<Option<Entry>> {
        match self {
            Source::Memory { entries, at } => {
                let e = entries.get(*at).copied();
                *at += 1;
                Ok(e)
            }
            Source::File { file, next, end, buf, bytes, at } => {
                if *at == buf.len() {
                    let n = usize::try_from((*end - *next).min(READ_ENTRIES as u64)).unwrap_or(READ_ENTRIES);
                    if n == 0 {
                        return Ok(None);
                    }
                    bytes.resize(n * ENTRY_BYTES, 0);
                    file.read_exact_at(bytes, *next * ENTRY_BYTES as u64)?;
                    buf.clear();
                    buf.extend(bytes.chunks_exact(ENTRY_BYTES).map(Entry::read));
                    *next += n as u64;
                    *at = 0;
                }
                let e = buf[*at];
                *at += 1;
                Ok(Some(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stale offsets of `records` (key, offset, mapped) by brute force: below the latest mapped offset of
    /// their key.
    fn brute(records: &[(u128, u64, bool)]) -> Vec<u64> {
        let mut out: Vec<u64> = records
            .iter()
            .filter(|&&(k, o, _)| records.iter().any(|&(k2, o2, m2)| k2 == k && m2 && o2 > o))
            .map(|&(_, o, _)| o)
            .collect();
        out.sort_unstable();
        out
    }

    #[test]
    fn runs_and_their_merge_mark_what_a_full_map_would() {
        // Keys from a small universe, offsets increasing; the first part only asked about (a clean section),
        // the rest mapped; buffers small enough for many runs.
        let mut rng = log_core::workload::SplitMix64::new(4);
        let records: Vec<(u128, u64, bool)> =
            (0..5_000u64).map(|o| (u128::from(rng.next_u64() % 700) * 0x1_0000_0001, o, o >= 1_500)).collect();
        for capacity in [16, 1024, 3000, 100_000] {
            let mut stale = StaleSet::new(0, 5_000, None).expect("set");
            let mut runs = Runs::new(capacity, None);
            for &(k, o, m) in &records {
                runs.push(Entry::new(k, o, m), &mut stale).expect("push");
            }
            let merged = runs.finish(&mut stale).expect("finish");
            let found: Vec<u64> = (0..5_000).filter(|&o| stale.contains(o)).collect();
            assert_eq!(found, brute(&records), "capacity {capacity}");
            assert_eq!(merged.keys, 700);
            assert_eq!(merged.runs > 0, capacity < 5_000, "capacity {capacity}: {merged:?}");
            // Every entry that survived its run is merged once: the last buffer's and the runs' survivors.
            assert!(merged.phases.merged_entries > 0 && merged.phases.merged_entries <= merged.entries, "{merged:?}");
        }
    }
}
