//! Sorted runs of entries: a buffer cut into partitions by hash, each of which, when full, is sorted and
//! judged, its survivors written to an unlinked temporary file as a run of that partition; at the end, each
//! partition's runs read back together by hash (sorted in memory, or merged when large) and judged again.
//!
//! The judgement, the same within a run and across runs: among the entries of one hash, every entry below the
//! highest mapped offset is stale; the others survive (the mapped latest, or the entries that were only asked
//! about when no record of the key was mapped).

use std::path::PathBuf;

use super::budget::ENTRY_BYTES;
use super::end_judge::{self, Partition, Plan, Run, Slicing};
use super::entry::Entry;
use super::judgement::{Mark, Merged, judge_in_place};
use super::sort::Sorter;
use super::spill_file::{MEMORY_BYTES, SpillFile};
use super::stale::StaleSet;
use crate::map::prefetch;

/// The buffer, cut into partitions by the top bits of the hash, and the runs each partition spilled so far.
///
/// Every entry of a key lands in the one partition of its hash, and within it in one *slice* (the next bits
/// of the hash), so each slice is judged on its own. Sorting a partition's buffer (about 1 MiB: the CPU's
/// caches hold it, and a counting pass on the hash orders it) replaces sorting the whole budget at once; at
/// the end a few slices at a time are read back from every run of their partition (each run records where its
/// slices start) and sorted together, instead of merging every run of the pass through one tournament whose
/// depth grows with the runs. Only slices larger than the read-back allowance are merged from their runs.
pub(crate) struct Runs {
    /// Entries the whole buffer holds (the budget).
    capacity: usize,
    /// Partitions: `2^part_bits`.
    part_bits: u32,
    /// Slices of a partition: `2^slice_bits`.
    slice_bits: u32,
    /// Entries a partition's buffer holds before it spills.
    part_capacity: usize,
    /// The partitions' buffers in one allocation (so that growing them is one reallocation, never a heap of
    /// freed smaller ones): partition `p`'s region is `p * region..(p + 1) * region`, its entries the first
    /// `fill[p]` of it.
    buf: Vec<Entry>,
    /// Entries of each partition's region: doubling up to `part_capacity` as the work needs.
    region: usize,
    fill: Vec<usize>,
    /// Each partition's runs in the spill file.
    runs: Vec<Vec<Run>>,
    spill_dir: Option<PathBuf>,
    /// Bytes of runs the spill holds in memory before it moves to a file (`spill_file::MEMORY_BYTES`; none in
    /// the tests that judge runs read from a file).
    spill_in_memory: usize,
    file: Option<SpillFile>,
    /// Entries written to the spill file.
    written: u64,
    /// The bytes of a run being written, a piece at a time.
    out: Vec<u8>,
    sorter: Sorter,
    merged: Merged,
}

/// Entries the buffer first takes (1 MiB), growing from there by doubling up to the budget.
const FIRST_ENTRIES: usize = 1 << 16;

/// The fewest entries a partition's buffer holds (1 MiB): fewer, larger partitions below it, one for a
/// small budget. Smaller partitions sort in less of the cache but fill more streams at once: 4096 entries
/// (1024 partitions of a 128 MiB budget) spent what their sorts saved on the pushes' misses.
const MIN_PART_ENTRIES: usize = 1 << 16;

/// The most partitions (2^10).
const MAX_PART_BITS: u32 = 10;

/// The hash's top bits that name a partition and a slice within it, together (4096 slices in all).
const SLICE_AND_PART_BITS: u32 = 12;

/// Entries ahead of a partition's end whose line a push prefetches (three lines).
const AHEAD: usize = 8;

/// The buffer's size from which the end frees it before judging (see [`Runs::finish`]): 32 MiB, more than the
/// end's scratch on two threads.
const FREE_BEFORE_END_BYTES: usize = 32 << 20;

/// Bytes of a run handed to the spill file at a time.
const WRITE_BYTES: usize = 64 << 10;

impl Runs {
    /// Runs of at most `capacity` entries in all (at least 16), spilled to `spill_dir` (or the system's
    /// temporary directory).
    pub(crate) fn new(capacity: usize, spill_dir: Option<PathBuf>) -> Runs {
        let capacity = capacity.max(16);
        let mut part_bits = 0;
        while part_bits < MAX_PART_BITS && capacity >> (part_bits + 1) >= MIN_PART_ENTRIES {
            part_bits += 1;
        }
        let part_capacity = capacity >> part_bits;
        // A run's slice starts cost 8 bytes each: at most one for 64 entries of a full run.
        let slice_bits = (SLICE_AND_PART_BITS - part_bits).min((part_capacity / 64).max(1).ilog2());
        Runs {
            capacity,
            part_bits,
            slice_bits,
            part_capacity,
            buf: Vec::new(),
            region: 0,
            fill: vec![0; 1 << part_bits],
            runs: (0..1usize << part_bits).map(|_| Vec::new()).collect(),
            spill_dir,
            spill_in_memory: MEMORY_BYTES,
            file: None,
            written: 0,
            out: Vec::new(),
            // A sixteenth of the budget: a partition's buffer (a sixty-fourth of a 128 MiB budget) and the
            // slices read back (a thirty-second) sort through it; one partition of a small budget sorts in place.
            sorter: Sorter::new(capacity / 16),
            merged: Merged::default(),
        }
    }

    fn part_of(&self, e: Entry) -> usize {
        if self.part_bits == 0 { 0 } else { (e.hi() >> (64 - self.part_bits)) as usize }
    }

    fn slicing(&self) -> Slicing {
        Slicing { part_bits: self.part_bits, slice_bits: self.slice_bits }
    }

    /// Adds an entry; a full partition is sorted, judged and written as a run.
    ///
    /// # Errors
    /// The spill file cannot be made or written.
    pub(crate) fn push(&mut self, e: Entry, stale: &mut impl Mark) -> std::io::Result<()> {
        let p = self.part_of(e);
        if self.fill[p] == self.region && !self.grow() {
            // One the machine cannot grow further is full where it stands (spilled as a run), never an abort.
            if self.fill[p] == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::OutOfMemory,
                    "cannot allocate the external pass's buffer",
                ));
            }
            self.spill(p, stale)?;
        }
        let at = p * self.region + self.fill[p];
        self.buf[at] = e;
        self.fill[p] += 1;
        self.merged.entries += 1;
        // The partitions' regions fill as many streams at once as there are partitions, more than the CPU's
        // own prefetcher follows: the line the partition's entries reach next (three on) is asked for now.
        prefetch(&self.buf, at + AHEAD);
        if self.fill[p] >= self.part_capacity {
            self.spill(p, stale)?;
        }
        Ok(())
    }

    /// Doubles every partition's region (up to `part_capacity`), moving each partition's entries to its new
    /// region: the buffer grows with the work, so a pass over a few keys takes a little memory whatever the
    /// budget (1 TiB, 2^64 - 1 bytes). False, changing nothing, when the regions are at their full size or the
    /// memory cannot be had.
    fn grow(&mut self) -> bool {
        let first = (FIRST_ENTRIES >> self.part_bits).max(16);
        let region = self.part_capacity.min(self.region.saturating_mul(2).max(first));
        if region <= self.region {
            return false;
        }
        let parts = self.fill.len();
        if self.buf.try_reserve_exact((region - self.region) * parts).is_err() {
            return false;
        }
        self.buf.resize(region * parts, Entry::default());
        // From the last partition down: each one's new region starts at or past its old one and past every
        // lower partition's entries, so a move never overwrites entries not yet moved.
        for p in (0..parts).rev() {
            let from = p * self.region;
            self.buf.copy_within(from..from + self.fill[p], p * region);
        }
        self.region = region;
        self.merged.buffer_bytes = self.merged.buffer_bytes.max((self.buf.len() * ENTRY_BYTES) as u64);
        true
    }

    /// Sorts partition `p`'s entries, judges them and writes their survivors as a run of `p`.
    fn spill(&mut self, p: usize, stale: &mut impl Mark) -> std::io::Result<()> {
        let t = std::time::Instant::now();
        let from = p * self.region;
        let entries = &mut self.buf[from..from + self.fill[p]];
        self.sorter.sort(entries, self.part_bits);
        self.merged.phases.sort_seconds += t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        let first_kept = judge_in_place(entries, stale);
        let kept = entries.len() - first_kept;
        let survivors = &self.buf[from + first_kept..from + self.fill[p]];
        let starts = self.slicing().starts(survivors);
        let file = match self.file {
            Some(ref mut file) => file,
            None => self.file.insert(SpillFile::new(self.spill_dir.as_deref(), self.spill_in_memory)),
        };
        let first = self.written;
        debug_assert_eq!(file.len(), first * ENTRY_BYTES as u64, "runs are appended in order");
        for piece in survivors.chunks(WRITE_BYTES / ENTRY_BYTES) {
            self.out.clear();
            for &e in piece {
                e.write(&mut self.out);
            }
            file.append(&self.out)?;
        }
        self.written += kept as u64;
        self.fill[p] = 0;
        self.runs[p].push(Run { first, starts });
        self.merged.runs += 1;
        self.merged.spilled_bytes += (kept * ENTRY_BYTES) as u64;
        self.merged.phases.spill_seconds += t.elapsed().as_secs_f64();
        Ok(())
    }

    /// Judges every key across its partition's runs and buffer, a partition at a time, on `threads` threads
    /// (`end_judge.rs`).
    ///
    /// # Errors
    /// A spill file cannot be read.
    pub(crate) fn finish(mut self, stale: &mut StaleSet, threads: usize) -> std::io::Result<Merged> {
        if self.file.is_some() && self.buf.len() * ENTRY_BYTES >= FREE_BEFORE_END_BYTES {
            // Runs were spilled, so the end reads from the file anyway: what a large buffer still holds is
            // spilled as runs too and the buffer freed, so that the end's scratch (a sort's and the slices read
            // back, for each thread) is not held on top of the whole budget. A small one stays: its entries
            // would cost a write and a read from the disk for memory the end's allowance already covers.
            for p in 0..self.fill.len() {
                if self.fill[p] > 0 {
                    self.spill(p, stale)?;
                }
            }
            self.buf = Vec::new();
            self.region = 0;
        }
        if let Some(file) = self.file.as_mut() {
            file.end_writing()?;
        }
        let plan = Plan {
            file: self.file.as_ref(),
            slicing: self.slicing(),
            // Slices read back together add at most twice a thirty-second of the budget (4 MiB at most: the
            // entries and the sort's scratch) to it, for each thread; slices larger than that are merged from
            // their runs, 64 KiB a run.
            allowance: (self.capacity / 32).clamp(1, (4 << 20) / ENTRY_BYTES) as u64,
        };
        // Each partition's entries in the buffer (none once it is freed), and its runs.
        let mut chunks = self.buf.chunks_mut(self.region.max(1));
        let partitions: Vec<Partition<'_>> = std::mem::take(&mut self.runs)
            .into_iter()
            .zip(&self.fill)
            .map(|(runs, &fill)| {
                let entries = match chunks.next() {
                    Some(chunk) => &mut chunk[..fill],
                    None => &mut [],
                };
                Partition { entries, runs }
            })
            .collect();
        let sorter = std::mem::take(&mut self.sorter);
        let judged = end_judge::judge_all(partitions, &plan, stale, threads, sorter, self.capacity / 16)?;
        self.merged.add_judged(&judged);
        if plan.file.is_some() {
            self.merged.buffer_bytes += super::spill_file::WRITE_BYTES as u64;
        }
        Ok(self.merged)
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
        let records: Vec<(u128, u64, bool)> = (0..5_000u64)
            .map(|o| (u128::from(rng.next_u64() % 700) * 0x1_0000_0000_0000_0001, o, o >= 1_500))
            .collect();
        // The end judged on one thread and on several (partitions shared out), the same set either way.
        // Runs spilled to memory, and to a file.
        let cases = [(16, 1), (1024, 1), (3000, 1), (100_000, 1), (16, 2), (3000, 3), (100_000, 2)];
        for ((capacity, threads), in_memory) in cases.into_iter().flat_map(|c| [(c, MEMORY_BYTES), (c, 0)]) {
            let mut stale = StaleSet::new(0, 5_000, None).expect("set");
            let mut runs = Runs::new(capacity, None);
            runs.spill_in_memory = in_memory;
            for &(k, o, m) in &records {
                runs.push(Entry::new(k, o, m), &mut stale).expect("push");
            }
            let merged = runs.finish(&mut stale, threads).expect("finish");
            let found: Vec<u64> = (0..5_000).filter(|&o| stale.contains(o)).collect();
            assert_eq!(found, brute(&records), "capacity {capacity}, {threads} threads");
            assert_eq!(merged.keys, 700);
            assert_eq!(merged.runs > 0, capacity < 5_000, "capacity {capacity}: {merged:?}");
            // Every entry that survived its run is merged once: the last buffer's and the runs' survivors.
            assert!(merged.phases.merged_entries > 0 && merged.phases.merged_entries <= merged.entries, "{merged:?}");
        }
    }

    /// The stale offsets of `records` (key, offset, mapped) by a map of each key's latest mapped offset.
    fn by_map(records: &[(u128, u64, bool)]) -> Vec<u64> {
        let mut latest = std::collections::HashMap::new();
        for &(k, o, _) in records.iter().filter(|r| r.2) {
            let l = latest.entry(k).or_insert(o);
            *l = (*l).max(o);
        }
        records.iter().filter(|&&(k, o, _)| latest.get(&k).is_some_and(|&l| o < l)).map(|r| r.1).collect()
    }

    #[test]
    fn partitions_and_slices_mark_what_a_full_map_would() {
        // Hashes spread over every partition, plus a crowd of keys sharing their top 16 bits (one slice
        // larger than any read-back allowance); the first part only asked about, the rest mapped.
        let mut rng = log_core::workload::SplitMix64::new(5);
        let spread: Vec<u128> =
            (0..40_000).map(|_| u128::from(rng.next_u64()) << 64 | u128::from(rng.next_u64())).collect();
        let crowd: Vec<u128> = (0..12_000)
            .map(|_| u128::from(0xABCD_0000_0000_0000 | rng.next_u64() >> 16) << 64 | u128::from(rng.next_u64()))
            .collect();
        let n = 200_000u64;
        let records: Vec<(u128, u64, bool)> = (0..n)
            .map(|o| {
                let r = rng.next_u64();
                let k = if r.is_multiple_of(4) {
                    crowd[(r / 4 % 12_000) as usize]
                } else {
                    spread[(r / 4 % 40_000) as usize]
                };
                (k, o, o >= 30_000)
            })
            .collect();
        let expected = by_map(&records);
        let keys = records.iter().map(|r| r.0).collect::<std::collections::HashSet<_>>().len() as u64;
        // Capacity: 2^17 and 2^18 entries make two and four partitions (the crowd's overflows at 2^18), 2^20 sixteen
        // that hold everything; 16 one partition of one slice, merged
        // from 12,500 runs; 5,000 one of 64 slices, each larger than its allowance (156 entries); 40,000 one of
        // 512 slices that fit its allowance (1,250 entries), but over five runs, each of which would give a read
        // back a few KiB: merged too.
        for (case, in_memory) in [
            (16, true, false),
            (5_000, true, false),
            (40_000, true, false),
            (1 << 17, true, true),
            (1 << 18, true, true),
            (1 << 20, false, false),
        ]
        .into_iter()
        .flat_map(|c| [(c, 1), (c, 2)])
        .flat_map(|c| [(c, MEMORY_BYTES), (c, 0)])
        {
            let ((capacity, spills, read_back), threads) = case;
            let mut stale = StaleSet::new(0, n, None).expect("set");
            let mut runs = Runs::new(capacity, None);
            runs.spill_in_memory = in_memory;
            let part_bits = runs.part_bits;
            for &(k, o, m) in &records {
                runs.push(Entry::new(k, o, m), &mut stale).expect("push");
            }
            let merged = runs.finish(&mut stale, threads).expect("finish");
            let found: Vec<u64> = (0..n).filter(|&o| stale.contains(o)).collect();
            assert_eq!(found, expected, "capacity {capacity}, {threads} threads");
            assert_eq!(merged.keys, keys, "capacity {capacity}");
            assert_eq!(merged.runs > 0, spills, "capacity {capacity}: {merged:?}");
            // Slices read back whole where they fit a thirty-second of the budget; the crowded one merged.
            assert_eq!(merged.slice_reads > 0, read_back, "capacity {capacity}: {merged:?}");
            assert_eq!(merged.slices_merged > 0, spills, "capacity {capacity}: {merged:?}");
            if capacity == 5_000 || capacity == 40_000 {
                // Every slice too large to read back, or too small a read: one merge over the partition.
                assert_eq!(merged.slices_merged, 1, "{merged:?}");
            }
            assert_eq!(part_bits > 0, capacity >= 1 << 17, "capacity {capacity}");
        }
    }

    #[test]
    fn the_end_keeps_its_scratch_within_its_bound_over_many_partitions() {
        // Sixteen partitions, each with one run of 65,536 entries and about 6,300 in the buffer: three groups of
        // slices read back (at most a thirty-second of the budget each), so each partition's groups are read
        // ahead on a thread of its own. The vectors they are read into go from one partition to the next, and
        // the end's scratch is what one partition needs, not what sixteen did: this pins that vectors given
        // back are filled again rather than piling up (not that none is made anew, which costs time, not
        // memory).
        let capacity = 1 << 20;
        let n = 1_150_000u64;
        let mut rng = log_core::workload::SplitMix64::new(6);
        let mut stale = StaleSet::new(0, n, None).expect("set");
        let mut runs = Runs::new(capacity, None);
        runs.spill_in_memory = 0;
        assert_eq!(runs.part_bits, 4, "sixteen partitions");
        for o in 0..n {
            let k = u128::from(rng.next_u64()) << 64 | u128::from(rng.next_u64());
            runs.push(Entry::new(k, o, true), &mut stale).expect("push");
        }
        let merged = runs.finish(&mut stale, 1).expect("finish");
        assert_eq!(merged.keys, n);
        assert!((0..n).all(|o| !stale.contains(o)), "every key once: nothing stale");
        assert_eq!(merged.slice_reads, 16 * 3, "every partition read back in three groups: {merged:?}");
        assert_eq!(merged.slices_merged, 0, "{merged:?}");
        // The sorter's scratch and counts (`Sorter::new(capacity / 16)`), the vectors (a group judged, one read
        // ahead, one given back, each at most the allowance), the judge's and the reader's read buffers (1 MiB,
        // and a page more where a direct read is not aligned), the offsets marked a batch at a time.
        let sorted_most = capacity / 16;
        let allowance = capacity / 32;
        let one_partition = sorted_most * ENTRY_BYTES
            + sorted_most.next_power_of_two() * 4
            + 3 * allowance * ENTRY_BYTES
            + 2 * ((1 << 20) + 4096)
            + super::super::judgement::MARK_BATCH * 8;
        let most = capacity * ENTRY_BYTES + super::super::spill_file::WRITE_BYTES + one_partition;
        assert!(merged.buffer_bytes as usize <= most, "{} > {most}: {merged:?}", merged.buffer_bytes);
    }
}
