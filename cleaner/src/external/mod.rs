//! The external pass (`--map external`): one pass over a dirty section of any number of distinct keys, in a
//! fixed memory budget, with one extra sequential write instead of a re-read of the log per buffer-full.
//!
//! Pass 1 reads every closed segment up to the end of the dirty section (the clean ones too: their records
//! are what pass 2 will ask about) and gives each keyed record an entry: the key's hash (87 bits of its xxh3-128), its offset,
//! and whether pass 1 maps it (a record of the dirty section, outside control and aborted batches) or only
//! asks about it (a record pass 2 may look up). Entries fill a buffer of the budget's size, cut into up to 1024
//! partitions by the top bits of the hash (every entry of a key in one), each at least 65,536 entries (1 MiB:
//! 128 of a 128 MiB budget). A full partition is sorted by hash and offset (a counting pass on the hash) and its
//! runs of one hash are judged at once: every entry below the latest mapped offset of its hash is *stale* (a
//! newer record of its key was mapped), and only the rest is written to a temporary file as a sorted run of
//! that partition (about one entry a key), which records where each slice of the partition (the hash's next
//! bits) starts in it. At the end each partition is judged the same way across its runs, a few slices at a
//! time: read back from every run and sorted together when they come to at most a thirty-second of the
//! budget (and 4 MiB), merged from the runs where a slice is larger than that (such slices in a row in one merge). A partition's sort fits the CPU's
//! caches where the whole budget's did not, and no merge plays every run of the pass at once.
//! Stale offsets go into a bit set over the section's offsets, which pass 2 reads
//! instead of a map: a record is dropped as superseded exactly when its offset is stale, which is what the
//! in-memory maps decide by key.
//!
//! Memory: the buffer (grown by doubling from 1 MiB as entries come, up to the budget, less the stale set's
//! bytes when they live in a file, up to half: [`entries_capacity`]; so a budget larger
//! than the machine gives costs only what the keys need, and one the machine cannot grow further is full where
//! it stands), while judging the runs, the slices read back (at most a thirty-second of the budget and 4 MiB, and as
//! much again for their sort) or a read buffer per run of a larger slice (64 KiB each), and the bit set (a bit
//! per offset from the log's start to the end of the dirty section, in memory up to 32 MiB and in a temporary
//! file beyond). Disk: about 16 bytes a record of the runs, written once and read once, in the spill directory
//! (the system's temporary directory unless [`crate::CleanerConfig::spill_dir`] names one), past the page cache
//! where the file system allows (`spill_file.rs`: the first 2 MiB of runs stay in memory, and a spill that
//! outgrows them takes up to 4 MiB more for its write buffers, handed to a thread that writes them while the
//! pass goes on, and reads the slices back in reads of up to 1 MiB; on two threads or more, each half of the
//! hashes has a spill of its own); the files are unlinked, so removed as the pass ends, whatever happens.
//!
//! Identity: two keys are one to this pass when 87 bits of their xxh3-128 hashes agree (an entry is 16 bytes:
//! `entry.rs`), about `n^2 / 2^88` for `n` keys (3.2e-11 at 10^8 keys, against 6.2e-10 for the compact map
//! and 1.5e-23 for Kafka's MD5 map). Its offsets are held from the pass's first in 40 bits: a pass spans at
//! most 2^40 offsets ([`spans`]; a longer one is refused before it reads, [`Error::SectionTooLong`]).

pub(crate) mod budget;
mod end_judge;
mod entry;
mod fill_watch;
mod judgement;
mod runs;
mod sort;
mod spill_file;
mod stale;
mod tournament;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use log_core::{Placed, SealedSegment};

use crate::error::{Error, Result};
use crate::keep::Pass1Txns;
use crate::map::{MapStats, Probes};
use crate::offset_order::OffsetOrder;
use crate::pace::Pace;
use crate::pass1::Scanned;
pub use budget::{ENTRY_BYTES, MIN_BUDGET_BYTES};
use entry::Entry;
pub(crate) use fill_watch::FillWatch;
use runs::Runs;
pub(crate) use stale::{MEMORY_BYTES, StaleSet};

/// The external pass's state: its budget and where it spills, and the last pass's figures and stale set.
#[derive(Debug)]
pub(crate) struct External {
    budget: usize,
    spill_dir: Option<PathBuf>,
    /// The cleaner's threads: with two or more, pass 1 reads on one and judges on two others.
    threads: usize,
    stats: MapStats,
}

/// Entries a chunk carries from the reading thread to a judging one (256 KiB).
const CHUNK: usize = 1 << 14;

/// Chunks in flight to each judging thread, besides the ones being filled and judged.
const IN_FLIGHT: usize = 2;

/// What pass 1 reads: the segments, and the dirty section's bounds.
struct Scan<'a> {
    segments: &'a [Arc<SealedSegment>],
    checkpoint: u64,
    limit: u64,
    /// The pass's first offset, from which entries hold offsets.
    start: u64,
}

impl Scan<'_> {
    /// Gives `emit` an entry for every keyed record below the limit, in the log's order: mapped when it lies
    /// in the dirty section outside control and aborted batches, only asked about otherwise. A record out of
    /// offset order fails the pass ([`OffsetOrder`]): entries name records by offset.
    ///
    /// Checksums are not computed here, as a map's pass 1 computes none ([`crate::pass1::map_dirty`]): pass 2
    /// copies every segment this reads (all lie below the pass's end offset) and verifies each batch before
    /// anything is committed, so a damaged batch still fails the pass having changed nothing, and an entry it
    /// gave (a damaged key's hash) only ever marks offsets stale in a pass that is then not committed.
    fn entries(
        &self,
        txns: &mut Pass1Txns<'_>,
        pace: &mut Pace<'_>,
        scanned: &mut Scanned,
        mut emit: impl FnMut(Entry) -> Result<()>,
    ) -> Result<()> {
        let (checkpoint, limit, start) = (self.checkpoint, self.limit, self.start);
        let mut scratch = Vec::new();
        let mut order = OffsetOrder::new();
        for (i, segment) in self.segments.iter().enumerate() {
            if segment.base() >= limit {
                break;
            }
            order.segment(segment.base(), self.segments.get(i + 1).map(|s| s.base()));
            let mut scan = segment.scan_from(segment.base(), false);
            while let Some(window) = scan.next_window()? {
                for item in window.batches() {
                    let Placed { batch, position } = item?;
                    if batch.base_offset >= limit {
                        break;
                    }
                    pace.step(batch.len() as u64, batch.record_count)?;
                    scanned.records += batch.record_count;
                    scanned.bytes += batch.len() as u64;
                    // Every batch in order, markers included: a marker can end a producer's reading as aborted.
                    let maps = txns.maps(&batch);
                    if batch.is_control() {
                        continue;
                    }
                    let corrupt =
                        |kind| log_core::Error::Corrupt { segment: segment.name().to_owned(), position, kind };
                    // Keys only: pass 2 reads every record whole (and verifies its batch) before anything is written.
                    let mut records = batch.records(&mut scratch).map_err(corrupt)?;
                    while let Some(rec) = records.next_key() {
                        let (offset, key) = rec.map_err(corrupt)?;
                        order.check(offset).map_err(corrupt)?;
                        let Some(key) = key.filter(|_| offset < limit) else { continue };
                        let h = xxhash_rust::xxh3::xxh3_128(key);
                        let mapped = maps && offset >= checkpoint;
                        // At or above the first segment's base, the pass's first offset (`order`).
                        emit(Entry::new(h, offset - start, mapped))?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// What pass 1 of an external pass leaves for pass 2.
#[derive(Debug)]
pub(crate) struct Mapped {
    /// The stale offsets.
    pub(crate) stale: StaleSet,
    /// What the scan read.
    pub(crate) scanned: Scanned,
    /// Distinct keys of the dirty section mapped: the keys a map over it would have had to hold.
    pub(crate) mapped_keys: u64,
}

impl External {
    pub(crate) fn new(budget: usize, spill_dir: Option<PathBuf>, threads: usize) -> Self {
        External { budget, spill_dir, threads, stats: MapStats::default() }
    }

    /// The figures of the last pass, in a map's terms (entries: distinct keys seen; memory: the budget).
    pub(crate) fn stats(&self) -> MapStats {
        self.stats.clone()
    }

    /// Pass 1 over `segments` (every closed segment from the log's start that pass 2 may read, in order): the
    /// stale offsets below `limit` given that `checkpoint..limit` is the dirty section. `watch`, if given, sees
    /// every entry in the log's order (on this thread), to learn where a map would have filled.
    ///
    /// With two threads or more, the segments are read, parsed and hashed on this thread while two others
    /// partition, sort, judge and spill the entries of each half of the hashes in runs of half the buffer
    /// ([`judge_on_threads`]), which take the larger share of the pass. The ends, judging each partition across
    /// its runs, come one half after the other, each shared out by partition among the threads (`end_judge.rs`:
    /// a sort's scratch and slices read back per thread, within the budget plus 64 MiB on two).
    ///
    /// # Errors
    /// [`Error::Log`] for damage or I/O (the spill files' too); [`Error::Aborted`] when stopped.
    pub(crate) fn map(
        &mut self,
        segments: &[Arc<SealedSegment>],
        checkpoint: u64,
        limit: u64,
        txns: &mut Pass1Txns<'_>,
        pace: &mut Pace<'_>,
        mut watch: Option<&mut FillWatch>,
    ) -> Result<Mapped> {
        let start = first_offset(segments, limit);
        if !spans(start, limit) {
            return Err(Error::SectionTooLong { first: start, limit, most: entry::MOST_OFFSETS });
        }
        if let Some(w) = watch.as_deref_mut() {
            w.begin(start);
        }
        let dir = self.spill_dir.clone().unwrap_or_else(std::env::temp_dir);
        let spill_error = |source: std::io::Error| {
            Error::Log(log_core::Error::Io { op: "spill", name: dir.display().to_string(), source })
        };
        let mut stale = StaleSet::new(start, limit, self.spill_dir.as_deref()).map_err(spill_error)?;
        let mut scanned = Scanned::default();
        let scan = Scan { segments, checkpoint, limit, start };
        let threads = self.threads;
        let capacity = entries_capacity(self.budget, stale.file_bytes());
        let merged = if threads < 2 {
            let mut runs = Runs::new(capacity, self.spill_dir.clone());
            scan.entries(txns, pace, &mut scanned, |e| {
                if let Some(w) = watch.as_deref_mut() {
                    w.see(e);
                }
                runs.push(e, &mut stale).map_err(spill_error)
            })?;
            runs.finish(&mut stale, 1).map_err(spill_error)?
        } else {
            // Each half of the hashes (by the top bit) in runs of half the budget, on a thread of its own.
            let halves = [(); 2].map(|()| Runs::new(capacity / 2, self.spill_dir.clone()));
            let halves = judge_on_threads(&scan, halves, &mut stale, txns, pace, &mut scanned, watch, &spill_error)?;
            let mut merged = judgement::Merged::default();
            for runs in halves {
                merged.add_all(&runs.finish(&mut stale, threads).map_err(spill_error)?);
            }
            merged
        };
        self.stats = MapStats {
            entries: merged.keys,
            capacity: u64::MAX,
            slots: 0,
            bytes_per_slot: ENTRY_BYTES as f64,
            utilization: 0.0,
            memory_bytes: self.budget as u64,
            allocated_bytes: merged.buffer_bytes + stale.memory_bytes(),
            touched_bytes: merged.buffer_bytes + stale.memory_bytes(),
            bytes_per_key: 0.0,
            lookups: merged.entries,
            probes: merged.entries,
            probes_per_lookup: 1.0,
            spilled_runs: merged.runs,
            spilled_bytes: merged.spilled_bytes,
            external_phases: Some(merged.phases),
        };
        Ok(Mapped { stale, scanned, mapped_keys: merged.mapped_keys })
    }
}

/// Pass 1's main phase on three threads: this one reads, parses and hashes, and hands each entry (its hash
/// rotated, [`Entry::rotated`]) to the thread of its hash's half, which partitions, sorts, judges and spills it
/// in its own runs, marking stale offsets in the shared set a batch at a time. The runs come back for their
/// ends. Why two judging threads: on one, judging took about 1.1 s of CPU of the 4 GiB backlog's pass against
/// the reading's 0.65 s, so the reader slept half of the phase waiting on it; with two, the work of the three
/// shares both cores. They meet through a few chunks of [`CHUNK`] entries in flight for each, so the memory
/// added is a few MiB whatever the budget.
#[allow(clippy::too_many_arguments, reason = "pass 1's state, lent to the threads for the phase")]
fn judge_on_threads(
    scan: &Scan<'_>,
    halves: [Runs; 2],
    stale: &mut StaleSet,
    txns: &mut Pass1Txns<'_>,
    pace: &mut Pace<'_>,
    scanned: &mut Scanned,
    mut watch: Option<&mut FillWatch>,
    spill_error: &impl Fn(std::io::Error) -> Error,
) -> Result<[Runs; 2]> {
    let failed = AtomicBool::new(false);
    let shared = std::sync::Mutex::new(stale);
    std::thread::scope(|scope| {
        let failed = &failed;
        let shared = &shared;
        let mut senders = Vec::with_capacity(2);
        let mut judges = Vec::with_capacity(2);
        for mut runs in halves {
            let (to_judge, chunks) = std::sync::mpsc::sync_channel::<Vec<Entry>>(IN_FLIGHT);
            let (give_back, spare) = std::sync::mpsc::channel::<Vec<Entry>>();
            senders.push((to_judge, spare));
            judges.push(scope.spawn(move || -> std::io::Result<Option<Runs>> {
                let mut marks = judgement::Marks::new(shared);
                for mut chunk in chunks {
                    if failed.load(Ordering::Acquire) {
                        return Ok(None);
                    }
                    for &e in &chunk {
                        runs.push(e, &mut marks)?;
                    }
                    chunk.clear();
                    // The reader may have stopped; the chunk is then dropped here.
                    let _ = give_back.send(chunk);
                }
                marks.flush();
                Ok((!failed.load(Ordering::Acquire)).then_some(runs))
            }));
        }
        let mut chunks = [Vec::with_capacity(CHUNK), Vec::with_capacity(CHUNK)];
        let mut read = scan.entries(txns, pace, scanned, |e| {
            if let Some(w) = watch.as_deref_mut() {
                w.see(e);
            }
            let half = usize::from(e.hi() >> 63 == 1);
            let chunk = &mut chunks[half];
            chunk.push(e.rotated());
            if chunk.len() == CHUNK {
                let (to_judge, spare) = &senders[half];
                let next = spare.try_recv().unwrap_or_else(|_| Vec::with_capacity(CHUNK));
                // A failed send: the judging thread stopped on an error, which its join gives.
                to_judge.send(std::mem::replace(chunk, next)).map_err(|_| Error::Aborted)?;
            }
            Ok(())
        });
        for (chunk, (to_judge, _)) in chunks.into_iter().zip(&senders) {
            if read.is_ok() && !chunk.is_empty() {
                read = to_judge.send(chunk).map_err(|_| Error::Aborted);
            }
        }
        failed.store(read.is_err(), Ordering::Release);
        drop(senders);
        let mut judged = Vec::with_capacity(2);
        for judge in judges {
            match judge.join() {
                Ok(result) => judged.push(result),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        // A judging thread's error first: the reader's is then only that it could not hand on.
        let mut halves = Vec::with_capacity(2);
        for result in judged {
            match result {
                Err(e) => return Err(spill_error(e)),
                Ok(runs) => halves.push(runs),
            }
        }
        read?;
        match (halves.pop().flatten(), halves.pop().flatten()) {
            (Some(second), Some(first)) => Ok([first, second]),
            _ => Err(Error::Aborted),
        }
    })
}

/// Entries the pass's buffer holds in a budget of `budget` bytes beside a stale set of `stale_file_bytes` in a
/// file. A set too large for memory ([`MEMORY_BYTES`]) lives in a mapped file whose pages become resident as
/// offsets are marked, at random, while the buffer is full: its bytes come out of the buffer's share of the
/// budget, up to half of it, so that the pass's resident memory stays within the budget and its scratch while
/// the set is at most half the budget (a bit an offset: 537M offsets, 64 MiB of bits, for 128 MiB). Beyond
/// that, its pages add what is past the half, pages the kernel can write out to the file under pressure. A set
/// held in memory (at most 32 MiB, 268M offsets) takes nothing from the buffer: it is counted in the 64 MiB the
/// pass may hold beyond the budget.
fn entries_capacity(budget: usize, stale_file_bytes: u64) -> usize {
    let taken = usize::try_from(stale_file_bytes).unwrap_or(usize::MAX).min(budget / 2);
    (budget - taken) / ENTRY_BYTES
}

/// The first offset of a pass over `segments` (every closed segment from the log's start) below `limit`.
pub(crate) fn first_offset(segments: &[Arc<SealedSegment>], limit: u64) -> u64 {
    segments.first().map_or(limit, |s| s.base()).min(limit)
}

/// Whether a pass from `start` to below `limit` is within what the entries hold ([`entry::MOST_OFFSETS`]
/// offsets from the pass's first: 2^40, a trillion records).
pub(crate) fn spans(start: u64, limit: u64) -> bool {
    limit.saturating_sub(start) <= entry::MOST_OFFSETS
}

/// Fails, naming it, when the spill directory asked for is not a directory. Checked before a pass reads
/// anything (`auto`'s too, before its map), not at the first spill: a pass whose spill stays in memory would
/// never find out.
///
/// # Errors
/// [`Error::Log`] ([`log_core::Error::Io`]: `NotFound`, or `NotADirectory` for a path to something else) naming
/// the directory.
pub(crate) fn check_spill_dir(dir: Option<&std::path::Path>) -> Result<()> {
    let Some(d) = dir.filter(|d| !d.is_dir()) else { return Ok(()) };
    let source = if d.exists() {
        std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory")
    } else {
        std::io::Error::new(std::io::ErrorKind::NotFound, "no such directory")
    };
    Err(Error::Log(log_core::Error::Io { op: "spill", name: d.display().to_string(), source }))
}

/// Pass 2's answer for a run of records by offset: `Some(u64::MAX)` (a newer record of the key was mapped)
/// for a stale one, `None` otherwise, as a map answers `None` for a key it did not map.
pub(crate) fn lookup(stale: &StaleSet, offsets: &[u64], out: &mut [Option<u64>], probes: &mut Probes) {
    for (o, slot) in offsets.iter().zip(out.iter_mut()) {
        *slot = stale.contains(*o).then_some(u64::MAX);
    }
    probes.lookups += offsets.len() as u64;
    probes.probes += offsets.len() as u64;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_set_in_a_file_takes_its_bytes_from_the_buffer_up_to_half() {
        let budget = 128 << 20;
        assert_eq!(entries_capacity(budget, 0), budget / ENTRY_BYTES, "a set in memory: the whole budget");
        assert_eq!(entries_capacity(budget, 35 << 20), (93 << 20) / ENTRY_BYTES);
        assert_eq!(entries_capacity(budget, 64 << 20), (64 << 20) / ENTRY_BYTES);
        assert_eq!(entries_capacity(budget, u64::MAX), (64 << 20) / ENTRY_BYTES, "never below half");
        assert_eq!(entries_capacity(0, 1 << 30), 0);
    }

    #[test]
    fn a_pass_spans_two_to_the_forty_offsets_from_its_first() {
        let most = entry::MOST_OFFSETS;
        assert_eq!(most, 1 << 40);
        assert!(spans(0, most) && spans(7, most + 7) && spans(most * 3, most * 3 + 1));
        assert!(!spans(0, most + 1) && !spans(7, most + 8));
        assert!(spans(9, 3), "an empty pass");
    }
}
