//! The judgement of the external pass, the same within a run and across runs: among the entries of one hash,
//! every entry below the highest mapped offset is stale; the others survive (the mapped latest, or the entries
//! that were only asked about when no record of the key was mapped). Here too what the judging found
//! ([`Merged`]) and the merge of sorted runs by key.

use std::sync::Mutex;

use super::budget::ENTRY_BYTES;
use super::entry::Entry;
use super::spill_file::{ReadBuf, SpillFile};
use super::stale::StaleSet;
use super::tournament::Tournament;

/// Entries a merge reads from a run at a time (64 KiB).
pub(super) const READ_ENTRIES: usize = (64 << 10) / ENTRY_BYTES;

/// Where a judgement notes a stale offset (from the pass's first, as entries hold it): the stale set itself,
/// or a judge's batch of offsets for it (`end_judge.rs`).
pub(super) trait Mark {
    fn mark(&mut self, offset: u64);
}

impl Mark for StaleSet {
    fn mark(&mut self, offset: u64) {
        self.set_from_start(offset);
    }
}

/// Stale offsets a thread notes before it sets them in the shared set (512 KiB).
pub(super) const MARK_BATCH: usize = 1 << 16;

/// A thread's batch of stale offsets for a stale set it shares with others: set [`MARK_BATCH`] at a time
/// under the lock, and the rest by [`Marks::flush`] (which the thread calls when it is done).
pub(super) struct Marks<'s, 'set> {
    pending: Vec<u64>,
    set: &'s Mutex<&'set mut StaleSet>,
}

impl<'s, 'set> Marks<'s, 'set> {
    pub(super) fn new(set: &'s Mutex<&'set mut StaleSet>) -> Self {
        Marks { pending: Vec::new(), set }
    }

    /// Bytes its batch holds.
    pub(super) fn memory_bytes(&self) -> usize {
        self.pending.capacity() * 8
    }

    /// Sets the offsets noted so far.
    pub(super) fn flush(&mut self) {
        let mut set = self.set.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        set.set_all_from_start(&self.pending);
        self.pending.clear();
    }
}

impl Mark for Marks<'_, '_> {
    fn mark(&mut self, offset: u64) {
        self.pending.push(offset);
        if self.pending.len() == MARK_BATCH {
            self.flush();
        }
    }
}

/// Judges the entries of one key (any order): marks those below the highest mapped offset stale, and hands
/// the others to `survive`. Returns whether the key was mapped (a map would have held it).
pub(super) fn judge(group: &[Entry], stale: &mut impl Mark, mut survive: impl FnMut(Entry)) -> bool {
    let latest = latest_mapped(group);
    for &e in group {
        if superseded(e, latest) {
            stale.mark(e.offset());
        } else {
            survive(e);
        }
    }
    latest.is_some()
}

/// The highest mapped offset among the entries of one key.
fn latest_mapped(group: &[Entry]) -> Option<u64> {
    group.iter().filter(|e| e.mapped()).map(|e| e.offset()).max()
}

/// Whether `e` is below its key's highest mapped offset `latest`.
fn superseded(e: Entry, latest: Option<u64>) -> bool {
    latest.is_some_and(|m| e.offset() < m)
}

/// The end of the run of entries equal in key to `entries[from]` (sorted entries).
fn key_end(entries: &[Entry], from: usize) -> usize {
    let mut to = from + 1;
    while to < entries.len() && entries[to].same_key(entries[from]) {
        to += 1;
    }
    to
}

/// Calls `f` with each run of equal keys of the sorted `entries`.
pub(super) fn each_key(entries: &[Entry], mut f: impl FnMut(&[Entry])) {
    let mut from = 0;
    while from < entries.len() {
        let to = key_end(entries, from);
        f(&entries[from..to]);
        from = to;
    }
}

/// Judges the sorted `entries` key by key and keeps the survivors, in order, at their front; their number.
pub(super) fn judge_in_place(entries: &mut [Entry], stale: &mut impl Mark) -> usize {
    let (mut kept, mut from) = (0, 0);
    while from < entries.len() {
        let to = key_end(entries, from);
        let latest = latest_mapped(&entries[from..to]);
        for i in from..to {
            let e = entries[i];
            if superseded(e, latest) {
                stale.mark(e.offset());
            } else {
                entries[kept] = e;
                kept += 1;
            }
        }
        from = to;
    }
    kept
}

/// What the merge found.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Merged {
    /// Distinct keys (hashes).
    pub(crate) keys: u64,
    /// Distinct keys with a mapped entry: the keys a map over the dirty section would hold.
    pub(crate) mapped_keys: u64,
    /// Entries pushed.
    pub(crate) entries: u64,
    /// Runs written to the spill file.
    pub(crate) runs: u64,
    /// Bytes written to it.
    pub(crate) spilled_bytes: u64,
    /// Bytes of the buffer at its fullest.
    pub(crate) buffer_bytes: u64,
    /// Reads of slices back from the runs (each one or more slices, sorted in memory).
    pub(crate) slice_reads: u64,
    /// Merges of slices too large to read back whole (each of one slice or of several in a row).
    pub(crate) slices_merged: u64,
    /// Where the time went.
    pub(crate) phases: crate::map::ExternalPhases,
}

impl Merged {
    /// Adds everything another pass over other keys found (the other half of the hashes, judged on a thread
    /// of its own): entries, runs and bytes spilled too.
    pub(super) fn add_all(&mut self, other: &Merged) {
        self.add_judged(other);
        self.entries += other.entries;
        self.runs += other.runs;
        self.spilled_bytes += other.spilled_bytes;
        self.phases.spill_seconds += other.phases.spill_seconds;
    }

    /// Counts a key judged at the end, `mapped` as [`judge`] says.
    pub(super) fn count_key(&mut self, mapped: bool) {
        self.keys += 1;
        self.mapped_keys += u64::from(mapped);
    }

    /// Adds what another judge found (its keys, slices, merged entries, phases' seconds and scratch).
    pub(super) fn add_judged(&mut self, other: &Merged) {
        self.keys += other.keys;
        self.mapped_keys += other.mapped_keys;
        self.slice_reads += other.slice_reads;
        self.slices_merged += other.slices_merged;
        self.buffer_bytes += other.buffer_bytes;
        self.phases.sort_seconds += other.phases.sort_seconds;
        self.phases.merge_seconds += other.phases.merge_seconds;
        self.phases.merged_entries += other.phases.merged_entries;
    }
}

/// Merges sorted `sources` by key and judges each key across them, counting the keys in `tally`.
pub(super) fn merge_and_judge<'a>(
    sources: impl Iterator<Item = Source<'a>>,
    stale: &mut impl Mark,
    tally: &mut Merged,
) -> std::io::Result<()> {
    let mut sources: Vec<Source<'a>> = sources.collect();
    let mut heads = Vec::with_capacity(sources.len());
    for s in &mut sources {
        heads.push(s.next()?);
    }
    let mut tournament = Tournament::new(heads);
    let mut group: Vec<Entry> = Vec::new();
    while let (i, Some(e)) = tournament.winner() {
        if group.first().is_some_and(|g| !g.same_key(e)) {
            tally.count_key(judge(&group, stale, |_| {}));
            group.clear();
        }
        group.push(e);
        tournament.advance(sources[i].next()?);
    }
    if !group.is_empty() {
        tally.count_key(judge(&group, stale, |_| {}));
    }
    Ok(())
}

/// A sorted run being merged.
pub(super) enum Source<'a> {
    /// A run in the spill file: its entries `next..end` still to read, `buf` the ones read (from `bytes`).
    File {
        file: &'a SpillFile,
        next: u64,
        end: u64,
        buf: Vec<Entry>,
        bytes: ReadBuf,
        at: usize,
    },
    Memory {
        entries: &'a [Entry],
        at: usize,
    },
}

impl<'a> Source<'a> {
    pub(super) fn file(file: &'a SpillFile, first: u64, len: u64) -> Source<'a> {
        Source::File { file, next: first, end: first + len, buf: Vec::new(), bytes: ReadBuf::default(), at: 0 }
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
                    let read = file.read(*next * ENTRY_BYTES as u64, n * ENTRY_BYTES, bytes)?;
                    buf.clear();
                    buf.extend(read.chunks_exact(ENTRY_BYTES).map(Entry::read));
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
