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

    /// Marks each of `offsets`.
    fn mark_all(&mut self, offsets: &[u64]) {
        for &o in offsets {
            self.mark(o);
        }
    }
}

impl Mark for StaleSet {
    fn mark(&mut self, offset: u64) {
        self.set_from_start(offset);
    }

    fn mark_all(&mut self, offsets: &[u64]) {
        self.set_all_from_start(offsets);
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

    /// Within the batch's [`MARK_BATCH`] whatever the lengths handed: what would pass it is set first.
    fn mark_all(&mut self, offsets: &[u64]) {
        if self.pending.len() + offsets.len() > MARK_BATCH {
            self.flush();
        }
        if offsets.len() >= MARK_BATCH {
            let mut set = self.set.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            set.set_all_from_start(offsets);
            return;
        }
        if self.pending.capacity() < MARK_BATCH {
            // Once, exactly: grown by the chunks' lengths, the vector would pass the batch's bytes.
            self.pending.reserve_exact(MARK_BATCH - self.pending.len());
        }
        self.pending.extend_from_slice(offsets);
        if self.pending.len() == MARK_BATCH {
            self.flush();
        }
    }
}

/// Stale offsets a judgement of sorted entries gathers before it hands them on (2 KiB, on the stack).
const STALE_CHUNK: usize = 256;

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

/// The judgement of sorted entries (by [`Entry::key`]: hash, then offset) walked back to front, without a
/// branch on what an entry holds: going down a key from its highest offset, an entry is stale exactly when a
/// mapped entry of its key came before it (a higher offset: [`judge`]'s rule, since a key's offsets are
/// distinct: pass 1 refuses offsets out of order, [`crate::offset_order::OffsetOrder`]), so one flag carried
/// down each key decides. Most entries of a backlog's partition are stale or not at random, so judging key
/// by key with a branch on it (as [`judge`] does) mispredicted often. Stale offsets go to the [`Mark`]
/// [`STALE_CHUNK`] at a time, and the rest by [`Backward::finish`].
struct Backward {
    later: Option<Entry>,
    later_mapped: bool,
    offsets: [u64; STALE_CHUNK],
    noted: usize,
}

impl Backward {
    fn new() -> Self {
        Backward { later: None, later_mapped: false, offsets: [0; STALE_CHUNK], noted: 0 }
    }

    /// Judges `e`, the entry before the last one judged.
    #[inline]
    fn judge(&mut self, e: Entry, stale: &mut impl Mark) -> Verdict {
        let same = self.later.is_some_and(|l| l.same_key(e));
        debug_assert!(!same || self.later.is_some_and(|l| l.offset() > e.offset()), "a key's offsets are distinct");
        self.later_mapped &= same;
        let is_stale = self.later_mapped;
        self.later_mapped |= e.mapped();
        self.offsets[self.noted] = e.offset();
        self.noted += usize::from(is_stale);
        if self.noted == STALE_CHUNK {
            stale.mark_all(&self.offsets);
            self.noted = 0;
        }
        self.later = Some(e);
        Verdict { is_stale, last_of_key: !same }
    }

    fn finish(self, stale: &mut impl Mark) {
        stale.mark_all(&self.offsets[..self.noted]);
    }
}

/// What [`Backward::judge`] found of an entry.
#[derive(Clone, Copy)]
struct Verdict {
    /// A newer record of its key was mapped.
    is_stale: bool,
    /// It is its key's last entry (the first met of its key, walking back).
    last_of_key: bool,
}

/// Judges the sorted `entries` key by key, marking the stale offsets, and keeps the survivors, in order, at
/// their back; where the survivors start. Each entry is read before anything is written at its place: a
/// survivor goes at or past it.
pub(super) fn judge_in_place(entries: &mut [Entry], stale: &mut impl Mark) -> usize {
    let mut walk = Backward::new();
    let mut out = entries.len();
    for i in (0..entries.len()).rev() {
        let e = entries[i];
        let verdict = walk.judge(e, stale);
        // Written whether or not it survives: a stale one is written over by the next survivor.
        entries[out - 1] = e;
        out -= usize::from(!verdict.is_stale);
    }
    walk.finish(stale);
    out
}

/// Judges the sorted `entries` key by key, marking the stale offsets, and counts the keys in `tally` (a key
/// is mapped when one of its entries is; exactly one of those, its latest, is not stale).
pub(super) fn judge_counting(entries: &[Entry], stale: &mut impl Mark, tally: &mut Merged) {
    let (mut walk, mut keys, mut mapped_keys) = (Backward::new(), 0u64, 0u64);
    for &e in entries.iter().rev() {
        let verdict = walk.judge(e, stale);
        keys += u64::from(verdict.last_of_key);
        mapped_keys += u64::from(e.mapped() & !verdict.is_stale);
    }
    walk.finish(stale);
    tally.keys += keys;
    tally.mapped_keys += mapped_keys;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Offsets marked, in any order.
    #[derive(Default)]
    struct Noted(Vec<u64>);

    impl Mark for Noted {
        fn mark(&mut self, offset: u64) {
            self.0.push(offset);
        }
    }

    /// Sorted entries of a few keys, some written many times (more stale offsets than a chunk holds), mapped
    /// or only asked about at random; keys alike in their high half told apart by the low bits.
    fn entries(seed: u64, n: u64, keys: u64) -> Vec<Entry> {
        let mut rng = log_core::workload::SplitMix64::new(seed);
        let universe: Vec<u128> = (0..keys)
            .map(|i| {
                let hi = if i % 5 == 1 { 7 } else { rng.next_u64() };
                u128::from(hi) << 64 | u128::from(rng.next_u64() % 4) << 62
            })
            .collect();
        let mut entries: Vec<Entry> = (0..n)
            .map(|o| Entry::new(universe[(rng.next_u64() % keys) as usize], o, !rng.next_u64().is_multiple_of(3)))
            .collect();
        entries.sort_unstable();
        entries
    }

    #[test]
    fn a_threads_marks_stay_within_their_batch_whatever_the_chunks() {
        let mut set = StaleSet::new(0, 1 << 20, None).expect("a set in memory");
        let shared = Mutex::new(&mut set);
        let mut marks = Marks::new(&shared);
        // A part chunk (as a walk's finish hands on), then whole ones past the batch, then one larger than it.
        marks.mark_all(&(0..100).collect::<Vec<u64>>());
        let mut next = 100;
        for _ in 0..300 {
            marks.mark_all(&(next..next + STALE_CHUNK as u64).collect::<Vec<u64>>());
            next += STALE_CHUNK as u64;
            assert!(marks.memory_bytes() <= MARK_BATCH * 8, "{} bytes pending", marks.memory_bytes());
        }
        marks.mark_all(&(next..next + MARK_BATCH as u64 + 1).collect::<Vec<u64>>());
        next += MARK_BATCH as u64 + 1;
        assert!(marks.memory_bytes() <= MARK_BATCH * 8);
        marks.flush();
        drop(marks);
        assert!((0..next).all(|o| set.contains(o)), "every offset handed is marked");
        assert!(!set.contains(next));
    }

    #[test]
    fn the_backward_walk_judges_as_each_key_judged_on_its_own() {
        for (seed, n, keys) in
            [(1, 0, 1), (2, 1, 1), (3, 1_000, 1), (4, 5_000, 700), (5, 20_000, 19_000), (6, 3_000, 3)]
        {
            let sorted = entries(seed, n, keys);
            // The reference: each key's entries judged by `judge`, a key at a time.
            let (mut expected_stale, mut expected_kept, mut expected) =
                (Noted::default(), Vec::new(), Merged::default());
            let mut from = 0;
            while from < sorted.len() {
                let to = from + sorted[from..].iter().take_while(|e| e.same_key(sorted[from])).count();
                expected.count_key(judge(&sorted[from..to], &mut expected_stale, |e| expected_kept.push(e)));
                from = to;
            }
            expected_stale.0.sort_unstable();

            let mut in_place = sorted.clone();
            let mut stale = Noted::default();
            let first = judge_in_place(&mut in_place, &mut stale);
            stale.0.sort_unstable();
            assert_eq!(stale.0, expected_stale.0, "seed {seed}: the stale offsets");
            assert_eq!(in_place[first..], expected_kept[..], "seed {seed}: the survivors, in order");

            let (mut stale, mut tally) = (Noted::default(), Merged::default());
            judge_counting(&sorted, &mut stale, &mut tally);
            stale.0.sort_unstable();
            assert_eq!(stale.0, expected_stale.0, "seed {seed}: the stale offsets counted");
            assert_eq!((tally.keys, tally.mapped_keys), (expected.keys, expected.mapped_keys), "seed {seed}");
            assert!(n < 1_000 || expected_stale.0.len() > STALE_CHUNK, "seed {seed}: more than a chunk of stale");
        }
    }
}
