//! The end of the external pass's pass 1: every partition's runs, and what its buffer still holds, judged key
//! by key, on one thread or several.
//!
//! Partitions share no key, so they are judged apart: each thread takes the next partition not yet taken and
//! judges it with a scratch of its own (a sort's scratch, the slices read back, a read buffer). The only thing
//! they share is the stale set, which each thread sets a batch of `judgement::MARK_BATCH` offsets at a time under a
//! lock. The set is the same whatever the threads (a bit an offset, set or not), so the pass's answer is.
//!
//! A partition whose slices are read back in two groups or more has them read on a thread of its own, one
//! group ahead of the one being sorted and judged: the reads are direct and synchronous, and a judge had waited
//! on the disk 30-45% of the end (one thread on the 4 GiB backlog: the end's merge 0.59-0.66 s against
//! 0.72-0.78 s). The vectors the groups are read into (at most two besides the judge's own), and the reader's
//! read buffer, pass from one partition to the next, each vector sized once for its group: made anew for each
//! partition and grown as they filled, they had their pages faulted in again every time (145K of the pass's
//! 392K page faults on the 4 GiB backlog, 251K since). It told on two threads, where each judge's frees unmap
//! memory while the other faults: the end's merge, summed over them, took 0.90-1.08 s before and 0.53-0.86 s
//! after (four alternating pairs); one thread's was unchanged.
//!
//! Memory: per thread besides the first, what the first one has (a sort's scratch of at most a sixteenth of
//! the budget, slices read back of at most a thirty-second and 4 MiB, three times over once a partition has
//! been read ahead, kept to the end, and a 1 MiB read buffer for the judge and one for its reader) and 512 KiB
//! of offsets; within the budget plus 64 MiB on two threads.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use super::budget::ENTRY_BYTES;
use super::entry::Entry;
use super::judgement::{Marks, Merged, READ_ENTRIES, Source, judge_counting, merge_and_judge};
use super::sort::Sorter;
use super::spill_file::{ReadBuf, SpillFile};
use super::stale::StaleSet;

/// Entries a slice read back whole is read in at a time (1 MiB): one buffer however many runs.
const READ_BACK_ENTRIES: usize = (1 << 20) / ENTRY_BYTES;

/// One partition to judge: its buffer's entries (sorted here) and its runs in the spill file.
pub(super) struct Partition<'a> {
    pub(super) entries: &'a mut [Entry],
    pub(super) runs: Vec<Run>,
}

/// What every judge shares: the spill file, the slicing, and how many entries slices read back together hold
/// at most.
pub(super) struct Plan<'a> {
    pub(super) file: Option<&'a SpillFile>,
    pub(super) slicing: Slicing,
    pub(super) allowance: u64,
}

/// One thread's judge: its scratch and its figures.
struct Judge<'s, 'set> {
    sorter: Sorter,
    load: Vec<Entry>,
    /// Vectors a partition's read-ahead filled, kept for the next partition's: a vector new to each one
    /// faulted in its pages again (145K page faults of the 4 GiB backlog's 392K, and their copies as it grew).
    spares: Vec<Vec<Entry>>,
    read_buf: ReadBuf,
    /// The read-ahead's read buffer, kept from one partition to the next likewise.
    ahead_buf: ReadBuf,
    marks: Marks<'s, 'set>,
    /// What it found, and its scratch at its largest (`buffer_bytes`).
    tally: Merged,
}

/// Judges every partition on up to `threads` threads (this one among them), `sorter` the first one's (the
/// others make theirs, of at most `sorter_most` entries): what they found (keys, slices, phases' seconds
/// summed over the threads, and their scratch as `buffer_bytes`).
///
/// # Errors
/// A spill file cannot be read: the first error; the other threads stop at their next partition.
pub(super) fn judge_all(
    partitions: Vec<Partition<'_>>,
    plan: &Plan<'_>,
    stale: &mut StaleSet,
    threads: usize,
    sorter: Sorter,
    sorter_most: usize,
) -> std::io::Result<Merged> {
    let threads = threads.clamp(1, partitions.len().max(1));
    let queue = Mutex::new(partitions.into_iter());
    let set = Mutex::new(stale);
    let failed = AtomicBool::new(false);
    let run = |sorter: Sorter| -> std::io::Result<Merged> {
        let marks = Marks::new(&set);
        let mut judge = Judge {
            sorter,
            load: Vec::new(),
            spares: Vec::new(),
            read_buf: ReadBuf::default(),
            ahead_buf: ReadBuf::default(),
            marks,
            tally: Merged::default(),
        };
        loop {
            let next = queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner).next();
            let Some(partition) = next.filter(|_| !failed.load(Ordering::Acquire)) else { break };
            if let Err(e) = judge.partition(partition, plan) {
                failed.store(true, Ordering::Release);
                return Err(e);
            }
        }
        judge.marks.flush();
        judge.tally.buffer_bytes = (judge.sorter.memory_bytes()
            + (judge.load.capacity() + judge.spares.iter().map(Vec::capacity).sum::<usize>()) * ENTRY_BYTES
            + judge.read_buf.memory_bytes()
            + judge.ahead_buf.memory_bytes()
            + judge.marks.memory_bytes()) as u64;
        Ok(judge.tally)
    };
    if threads == 1 {
        return run(sorter);
    }
    std::thread::scope(|scope| {
        let others: Vec<_> = (1..threads).map(|_| scope.spawn(|| run(Sorter::new(sorter_most)))).collect();
        let mut tally = run(sorter);
        for handle in others {
            let theirs = match handle.join() {
                Ok(theirs) => theirs,
                Err(panic) => std::panic::resume_unwind(panic),
            };
            match (&mut tally, theirs) {
                (Ok(t), Ok(theirs)) => t.add_judged(&theirs),
                (Ok(_), Err(e)) => tally = Err(e),
                (Err(_), _) => {}
            }
        }
        tally
    })
}

impl Judge<'_, '_> {
    /// Judges one partition's keys across its runs and buffer, a few slices at a time.
    fn partition(&mut self, partition: Partition<'_>, plan: &Plan<'_>) -> std::io::Result<()> {
        let Partition { entries: buf, runs } = partition;
        let slicing = plan.slicing;
        let t = std::time::Instant::now();
        self.sorter.sort(buf, slicing.part_bits());
        self.tally.phases.sort_seconds += t.elapsed().as_secs_f64();
        let buf = &*buf;
        self.tally.phases.merged_entries +=
            buf.len() as u64 + runs.iter().map(|r| r.len(0, slicing.slices())).sum::<u64>();
        let file = match plan.file {
            Some(file) if !runs.is_empty() => file,
            _ => {
                let t = std::time::Instant::now();
                judge_counting(buf, &mut self.marks, &mut self.tally);
                self.tally.phases.merge_seconds += t.elapsed().as_secs_f64();
                return Ok(());
            }
        };
        let in_buf = slicing.starts(buf);
        let size = |q: usize| runs.iter().map(|r| r.len(q, q + 1)).sum::<u64>() + in_buf[q + 1] - in_buf[q];
        let (slices, allowance) = (slicing.slices(), plan.allowance);
        // A read back costs a read from every run. Where the allowance gives each run less than a merge reads
        // at a time (a small budget over many runs), those reads are a few KiB each and cost more than merging:
        // every slice is then merged (with 16-byte entries, a 651 KiB budget's 9 runs read back 2,300 times,
        // 0.11 s, against 0.03 s for one merge).
        let reads_pay = allowance >= runs.len() as u64 * READ_ENTRIES as u64;
        // The partition's groups of slices, `(from, to, read back)`: as many slices as the allowance holds (at
        // least one), read back and sorted; a slice too large to read back is merged with the slices after it
        // that are too large as well, in one merge (a merge costs the same an entry over any range of slices,
        // and its setup, a read from every run, once, where a small budget's slices are all too large).
        let mut groups = Vec::new();
        let mut from = 0;
        if !reads_pay {
            groups.push((0, slices, false));
            from = slices;
        }
        while from < slices {
            let (mut to, mut n) = (from + 1, size(from));
            if n > allowance {
                while to < slices && size(to) > allowance {
                    n += size(to);
                    to += 1;
                }
            } else {
                while to < slices && n + size(to) <= allowance {
                    n += size(to);
                    to += 1;
                }
            }
            groups.push((from, to, n <= allowance));
            from = to;
        }
        let read_backs = groups.iter().filter(|g| g.2).count();
        let part = Sliced { file, runs: &runs, buf, in_buf: &in_buf, slicing };
        if read_backs < 2 {
            return self.groups(&groups, &part, None);
        }
        // Two or more groups read back: the next one is read on a thread of its own while this one is sorted
        // and judged (the reads are direct, and a judge waited on the disk for 30-45% of the end).
        std::thread::scope(|scope| {
            let (loaded, ahead) = std::sync::mpsc::sync_channel::<std::io::Result<Vec<Entry>>>(0);
            let (give_back, spare) = std::sync::mpsc::channel::<Vec<Entry>>();
            for v in self.spares.drain(..) {
                let _ = give_back.send(v);
            }
            let (groups, runs, in_buf) = (&groups, &runs, &in_buf);
            let mut read_buf = std::mem::take(&mut self.ahead_buf);
            let reader = scope.spawn(move || {
                for &(from, to, _) in groups.iter().filter(|g| g.2) {
                    let mut out = spare.try_recv().unwrap_or_default();
                    let extra = usize::try_from(in_buf[to] - in_buf[from]).unwrap_or(usize::MAX);
                    let read = read_slices(file, runs, from, to, extra, &mut out, &mut read_buf).map(|()| out);
                    let failed = read.is_err();
                    // The judge stopped (its receiver gone), or this read failed: nothing more to read.
                    if loaded.send(read).is_err() || failed {
                        break;
                    }
                }
                // The vectors given back and not filled again, and the read buffer, for the next partition.
                (spare, read_buf)
            });
            let judged = self.groups(groups, &part, Some(ReadAhead { loaded: &ahead, give_back: &give_back }));
            // The reader ends once the judge has taken its last group or stopped (`ahead` is dropped then).
            drop(ahead);
            match reader.join() {
                Ok((spare, read_buf)) => {
                    self.spares.extend(spare.try_iter());
                    self.ahead_buf = read_buf;
                }
                Err(panic) => std::panic::resume_unwind(panic),
            }
            judged
        })
    }

    /// Judges `groups` of the partition's slices in order: merging those too large to read back, and reading
    /// back and sorting the others, here or (`ahead`) from a thread that reads them in order, handing each
    /// group's entries on and taking the vector back to fill again.
    fn groups(
        &mut self,
        groups: &[(usize, usize, bool)],
        part: &Sliced<'_>,
        ahead: Option<ReadAhead<'_>>,
    ) -> std::io::Result<()> {
        let Sliced { file, runs, buf, in_buf, slicing } = *part;
        for &(from, to, read_back) in groups {
            let t = std::time::Instant::now();
            let in_memory = &buf[in_buf[from] as usize..in_buf[to] as usize];
            if !read_back {
                let slices = runs.iter().map(|r| Source::file(file, r.first + r.starts[from], r.len(from, to)));
                let sources = slices.chain([Source::Memory { entries: in_memory, at: 0 }]);
                merge_and_judge(sources, &mut self.marks, &mut self.tally)?;
                self.tally.slices_merged += 1;
                self.tally.phases.merge_seconds += t.elapsed().as_secs_f64();
                continue;
            }
            self.tally.slice_reads += 1;
            let mut load = match &ahead {
                Some(ahead) => ahead
                    .loaded
                    .recv()
                    .unwrap_or_else(|_| Err(std::io::Error::other("the read-ahead of the runs stopped")))?,
                None => {
                    let mut load = std::mem::take(&mut self.load);
                    let extra = in_memory.len();
                    read_slices(file, runs, from, to, extra, &mut load, &mut self.read_buf)?;
                    load
                }
            };
            load.extend_from_slice(in_memory);
            self.tally.phases.merge_seconds += t.elapsed().as_secs_f64();
            let t = std::time::Instant::now();
            self.sorter.sort(&mut load, slicing.part_bits());
            self.tally.phases.sort_seconds += t.elapsed().as_secs_f64();
            let t = std::time::Instant::now();
            judge_counting(&load, &mut self.marks, &mut self.tally);
            self.tally.phases.merge_seconds += t.elapsed().as_secs_f64();
            // The larger vector stays in `load`; the other goes back to be filled again.
            if load.capacity() < self.load.capacity() {
                std::mem::swap(&mut load, &mut self.load);
            }
            match &ahead {
                Some(ahead) => {
                    let _ = ahead.give_back.send(load);
                }
                None => self.load = load,
            }
        }
        Ok(())
    }
}

/// A partition as its groups of slices are judged: the spill file, its runs, its buffer's entries (sorted) and
/// where each slice starts among them.
#[derive(Clone, Copy)]
struct Sliced<'a> {
    file: &'a SpillFile,
    runs: &'a [Run],
    buf: &'a [Entry],
    in_buf: &'a [u64],
    slicing: Slicing,
}

/// The judge's end of a thread reading the groups read back ahead, in order: each group's entries from the
/// runs as they come, and the way back for a vector to fill again.
struct ReadAhead<'c> {
    loaded: &'c std::sync::mpsc::Receiver<std::io::Result<Vec<Entry>>>,
    give_back: &'c std::sync::mpsc::Sender<Vec<Entry>>,
}

/// Reads the entries of slices `from..to` of every run into `out` (cleared first, and made to hold `extra`
/// entries more, which the caller adds, without growing again), in reads of at most 1 MiB through `read_buf`.
fn read_slices(
    file: &SpillFile,
    runs: &[Run],
    from: usize,
    to: usize,
    extra: usize,
    out: &mut Vec<Entry>,
    read_buf: &mut ReadBuf,
) -> std::io::Result<()> {
    out.clear();
    let total = runs.iter().map(|r| r.len(from, to)).sum::<u64>();
    out.reserve_exact(usize::try_from(total).unwrap_or(usize::MAX).saturating_add(extra));
    for r in runs {
        let (mut at, end) = (r.first + r.starts[from], r.first + r.starts[to]);
        while at < end {
            let n = (end - at).min(READ_BACK_ENTRIES as u64);
            let bytes = file.read(at * ENTRY_BYTES as u64, n as usize * ENTRY_BYTES, read_buf)?;
            out.extend(bytes.chunks_exact(ENTRY_BYTES).map(Entry::read));
            at += n;
        }
    }
    Ok(())
}

/// A sorted run in the spill file: its first entry's index there, and where each slice starts within it
/// (`starts[q]` the first entry of slice `q` or beyond; the last, the run's length).
pub(super) struct Run {
    pub(super) first: u64,
    pub(super) starts: Vec<u64>,
}

impl Run {
    /// Entries of slices `from..to`.
    pub(super) fn len(&self, from: usize, to: usize) -> u64 {
        self.starts[to] - self.starts[from]
    }
}

/// How a partition's hashes fall into its slices.
#[derive(Debug, Clone, Copy)]
pub(super) struct Slicing {
    /// Partitions: `2^part_bits`.
    pub(super) part_bits: u32,
    /// Slices of a partition: `2^slice_bits`.
    pub(super) slice_bits: u32,
}

impl Slicing {
    pub(super) fn part_bits(self) -> u32 {
        self.part_bits
    }

    pub(super) fn slices(self) -> usize {
        1 << self.slice_bits
    }

    /// Where each slice of the sorted `entries` of one partition starts (and their end).
    pub(super) fn starts(self, entries: &[Entry]) -> Vec<u64> {
        let (part_bits, slice_bits) = (self.part_bits, self.slice_bits);
        let slice_of =
            |e: &Entry| if slice_bits == 0 { 0 } else { ((e.hi() << part_bits) >> (64 - slice_bits)) as usize };
        let mut starts = Vec::with_capacity(self.slices() + 1);
        for (i, e) in entries.iter().enumerate() {
            let q = slice_of(e);
            while starts.len() <= q {
                starts.push(i as u64);
            }
        }
        starts.resize(self.slices() + 1, entries.len() as u64);
        starts
    }
}
