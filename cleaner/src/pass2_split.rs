//! Pass 2 of one group on several threads. A group's output is one segment written in offset order, so the
//! threads cannot all write it: the group's segments are cut into contiguous parts of about equal bytes; the
//! calling thread copies the first part straight into the group's copy, while each other part is judged on a
//! thread of its own into a [`Recorder`], which hands what it keeps (the bytes and their [`Stamp`]s) over a
//! bounded channel. Once its own part is done, the calling thread replays the parts' records in order into the
//! same copy, so the output is byte for byte what one thread writes.
//!
//! Why: when a pass has one group (a few large segments compacting into one, the usual case of a partition's
//! first clean), pass 2 used one core; judging a batch (its checksum, the lookups of its
//! keys, decoding and re-encoding it) is most of pass 2's work and needs no order, and writing is a copy.
//!
//! Memory: each helper runs at most [`CHUNKS_AHEAD`] chunks of about [`CHUNK_BYTES`] ahead of the writer, then
//! waits, so the pass's memory stays bounded whatever the group's size.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use log_core::{Cleaning, Replacement, SealedSegment, Stamp};

use crate::error::{Error, Result};
use crate::keep::CopyCounts;
use crate::pace::{Pace, panic_message};
use crate::pass2::{Buffers, CopyContext, CopyOutput, copy_segments};

/// The bytes a chunk gathers before it is handed over (tiny in unit tests, so that a small log's parts take
/// many chunks and the helpers wait on the writer).
const CHUNK_BYTES: usize = if cfg!(test) { 256 } else { 4 << 20 };
/// The chunks a helper may run ahead of the writer.
const CHUNKS_AHEAD: usize = if cfg!(test) { 2 } else { 8 };
/// The verdicts a chunk gathers at most, whatever their bytes (dropped batches carry none).
const CHUNK_OPS: usize = if cfg!(test) { 8 } else { 1 << 16 };

/// One verdict of pass 2 on a batch, as [`CopyOutput`] receives it; kept bytes lie in the chunk's data.
#[derive(Debug, Clone, Copy)]
enum Op {
    NextSegment,
    Keep { position: u64, start: usize, len: usize, stamp: Stamp },
    KeepChanged { start: usize, len: usize, stamp: Stamp },
    Drop,
}

/// Verdicts in order, with the bytes of the batches they keep.
#[derive(Default)]
struct Chunk {
    ops: Vec<Op>,
    data: Vec<u8>,
}

/// A [`CopyOutput`] that records the verdicts of its part, handing them over a chunk at a time.
struct Recorder {
    chunk: Chunk,
    to_writer: SyncSender<Chunk>,
}

impl Recorder {
    fn push(&mut self, op: Op) -> Result<()> {
        self.chunk.ops.push(op);
        if self.chunk.data.len() >= CHUNK_BYTES || self.chunk.ops.len() >= CHUNK_OPS {
            self.hand_over()?;
        }
        Ok(())
    }

    fn append(&mut self, bytes: &[u8]) -> (usize, usize) {
        let start = self.chunk.data.len();
        self.chunk.data.extend_from_slice(bytes);
        (start, bytes.len())
    }

    /// Hands the chunk over; [`Error::Aborted`] when the writer has stopped (it failed, and says why).
    fn hand_over(&mut self) -> Result<()> {
        let full = std::mem::take(&mut self.chunk);
        self.to_writer.send(full).map_err(|_| Error::Aborted)
    }
}

impl CopyOutput for Recorder {
    fn next_segment(&mut self) -> Result<()> {
        self.push(Op::NextSegment)
    }
    fn keep(&mut self, position: u64, bytes: &[u8], stamp: Stamp) -> Result<()> {
        let (start, len) = self.append(bytes);
        self.push(Op::Keep { position, start, len, stamp })
    }
    fn keep_changed(&mut self, bytes: &[u8], stamp: Stamp) -> Result<()> {
        let (start, len) = self.append(bytes);
        self.push(Op::KeepChanged { start, len, stamp })
    }
    fn drop_batch(&mut self) -> Result<()> {
        self.push(Op::Drop)
    }
}

/// Replays `chunk`'s verdicts into `copy`.
fn replay<O: CopyOutput>(chunk: &Chunk, copy: &mut O) -> Result<()> {
    for op in &chunk.ops {
        match *op {
            Op::NextSegment => copy.next_segment()?,
            Op::Keep { position, start, len, stamp } => copy.keep(position, &chunk.data[start..start + len], stamp)?,
            Op::KeepChanged { start, len, stamp } => copy.keep_changed(&chunk.data[start..start + len], stamp)?,
            Op::Drop => copy.drop_batch()?,
        }
    }
    Ok(())
}

/// Cuts `group` into at most `parts` contiguous, non-empty ranges of about equal bytes.
pub(crate) fn split_by_bytes(group: &[Arc<SealedSegment>], parts: usize) -> Vec<std::ops::Range<usize>> {
    let sizes: Vec<u64> = group.iter().map(|s| s.size()).collect();
    split_sizes(&sizes, parts)
}

/// [`split_by_bytes`] over bare sizes: each cut at the boundary nearest its share of the bytes, leaving a
/// segment for every part still to come. A tie goes to the earlier cut (the first part's thread also writes).
fn split_sizes(sizes: &[u64], parts: usize) -> Vec<std::ops::Range<usize>> {
    let n = sizes.len();
    let parts = parts.clamp(1, n.max(1));
    let mut prefix = Vec::with_capacity(n + 1);
    prefix.push(0u128);
    for &s in sizes {
        prefix.push(prefix[prefix.len() - 1] + u128::from(s));
    }
    let total = prefix[n];
    let mut ranges = Vec::with_capacity(parts);
    let mut previous = 0usize;
    for cut in 1..parts {
        let (lo, hi) = (previous + 1, n - (parts - cut));
        if lo > hi {
            break;
        }
        let target = total * cut as u128;
        let distance = |b: &usize| (prefix[*b] * parts as u128).abs_diff(target);
        let Some(at) = (lo..=hi).min_by_key(distance) else { break };
        ranges.push(previous..at);
        previous = at;
    }
    if previous < n {
        ranges.push(previous..n);
    }
    ranges
}

/// Pass 2 over one group on up to `parts` threads (this one and `parts - 1` helpers), as
/// [`crate::pass2::copy_group`] does on one. `pace` makes each thread's stop flag, throttle and tally.
///
/// # Errors
/// The first error of any part (this thread's first); nothing of the group is committed then.
pub(crate) fn copy_group_split<'p>(
    cleaning: &Cleaning<'_>,
    group: &[Arc<SealedSegment>],
    parts: usize,
    cx: &CopyContext<'_>,
    bufs: &mut Buffers,
    counts: &mut CopyCounts,
    helper_pace: &(dyn Fn() -> Pace<'p> + Sync),
) -> Result<Option<Replacement>> {
    let ranges = split_by_bytes(group, parts);
    let mut pace = helper_pace();
    let pace = &mut pace;
    let Some((first, rest)) = ranges.split_first().filter(|(_, rest)| !rest.is_empty()) else {
        let copied = crate::pass2::copy_group(cleaning, group, cx, bufs, counts, pace);
        pace.settle();
        return copied;
    };
    let mut copy = cleaning.copy(group);
    let (written, helpers) = std::thread::scope(|scope| {
        let mut receivers: Vec<Receiver<Chunk>> = Vec::with_capacity(rest.len());
        let mut handles = Vec::with_capacity(rest.len());
        for range in rest {
            let (to_writer, from_helper) = sync_channel(CHUNKS_AHEAD);
            receivers.push(from_helper);
            let part = &group[range.clone()];
            handles.push(scope.spawn(move || -> Result<CopyCounts> {
                let mut recorder = Recorder { chunk: Chunk::default(), to_writer };
                let (mut counts, mut bufs, mut pace) = (CopyCounts::default(), Buffers::default(), helper_pace());
                let judged = copy_segments(part, cx, &mut bufs, &mut counts, &mut pace, &mut recorder);
                pace.settle();
                judged?;
                recorder.hand_over()?;
                Ok(counts)
            }));
        }
        let written = (|| -> Result<()> {
            copy_segments(&group[first.clone()], cx, bufs, counts, pace, &mut copy)?;
            for from_helper in receivers.drain(..) {
                copy.next_segment()?;
                for chunk in from_helper {
                    replay(&chunk, &mut copy)?;
                }
            }
            Ok(())
        })();
        // A writer that stopped early lets its helpers see it (their next hand-over fails) before they are
        // joined.
        drop(receivers);
        let helpers: Vec<Result<CopyCounts>> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| Err(Error::Panicked { message: panic_message(&*p) })))
            .collect();
        (written, helpers)
    });
    pace.settle();
    written?;
    for helper in helpers {
        counts.add(&helper?);
    }
    Ok(copy.finish()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    use log_core::kafka::{Compression, RecordToWrite, new_header, write_batch};
    use log_core::{AppendRecord, CheckpointFile, Log, LogConfig, SegmentStore};
    use storage_mem::MemStore;

    use crate::{CleanerConfig, ManualClock, MapKind, PassOptions};

    const NOW: i64 = 1_800_000_000_000;

    /// Every file of `store`, by name, with its bytes.
    fn files(store: &dyn SegmentStore) -> Vec<(String, Vec<u8>)> {
        let mut names = store.list().expect("list");
        names.sort();
        names
            .into_iter()
            .map(|n| {
                let f = store.open(&n).expect("open");
                let mut bytes = vec![0; usize::try_from(f.len()).expect("size")];
                f.read_at(0, &mut bytes).expect("read");
                (n, bytes)
            })
            .collect()
    }

    /// Cleans `log` until clean on `threads` threads; the passes' statistics.
    fn clean(log: &Log, threads: usize) -> Vec<crate::CleanStats> {
        clean_in(log, threads, 1 << 20)
    }

    /// Cleans `log` until clean on `threads` threads with a map of `buffer` bytes; the passes' statistics.
    fn clean_in(log: &Log, threads: usize, buffer: usize) -> Vec<crate::CleanStats> {
        let config =
            CleanerConfig { map: MapKind::Compact, dedupe_buffer_bytes: buffer, threads, ..CleanerConfig::default() };
        let mut cleaner = crate::Cleaner::new(config, Arc::new(ManualClock::new(NOW))).expect("cleaner");
        let mut passes = Vec::new();
        let options = PassOptions { delete_retention_ms: 0, ..PassOptions::default() };
        cleaner
            .clean_until_clean(log, options, |s| {
                passes.push(s.clone());
                Ok(())
            })
            .expect("passes");
        passes
    }

    /// A native log of small segments: 3000 records over 40 keys, every 7th a tombstone.
    fn native_log() -> (Arc<dyn SegmentStore>, Log) {
        let store: Arc<dyn SegmentStore> = Arc::new(MemStore::new());
        let log = Log::open(
            Arc::clone(&store),
            log_core::OpenOptions::new(LogConfig { segment_bytes: 4096, ..LogConfig::default() }),
        )
        .expect("open");
        for i in 0u64..3000 {
            let key = format!("key-{}", (i * 7919) % 40);
            let value = format!("value-{i}");
            let tombstone = i % 7 == 0;
            let record = AppendRecord {
                key: Some(key.as_bytes()),
                value: (!tombstone).then_some(value.as_bytes()),
                timestamp: 1_000 + i as i64,
                headers: &[],
            };
            log.append(&record).expect("append");
        }
        log.roll().expect("roll");
        drop(log);
        // Reopened with room for them all in one output: one group, as a first clean of a partition is.
        let log = Log::open(
            Arc::clone(&store),
            log_core::OpenOptions::new(LogConfig { segment_bytes: 1 << 20, ..LogConfig::default() }),
        )
        .expect("reopen");
        (store, log)
    }

    #[test]
    fn a_native_group_on_several_threads_is_written_byte_for_byte_as_on_one() {
        let (one_store, one) = native_log();
        let one_passes = clean(&one, 1);
        for threads in [2, 3] {
            let (store, log) = native_log();
            let passes = clean(&log, threads);
            assert_eq!(passes.len(), one_passes.len());
            assert_eq!(passes[0].groups, 1, "one group: the split path");
            assert_eq!(files(&*store), files(&*one_store), "{threads} threads");
            assert_eq!(passes[0].pass2.records_kept, one_passes[0].pass2.records_kept);
            assert_eq!(passes[0].pass2.records_read, one_passes[0].pass2.records_read);
            assert_eq!(passes[0].offset_map.lookups, one_passes[0].offset_map.lookups);
        }
    }

    /// A Kafka partition of five closed segments (one group) whose batches take each codec in turn, written by
    /// three producers (each one's last batch is kept, emptied if need be), over 30 keys, some tombstones.
    /// Transactions are the Kafka model test's (`cleaner/tests/suite/kafka_model.rs`, run on 1-3 threads).
    fn kafka_log() -> (Arc<dyn SegmentStore>, Log) {
        kafka_log_damaged(false)
    }

    /// [`kafka_log`], with one value byte of an uncompressed batch of the last segment flipped when `damaged`
    /// (its checksum then fails in pass 2, in the last part).
    fn kafka_log_damaged(damaged: bool) -> (Arc<dyn SegmentStore>, Log) {
        use log_core::kafka::files::{SegmentFile, Stage, name};
        const CODECS: [Compression; 4] = [Compression::None, Compression::Lz4, Compression::Zstd, Compression::Gzip];
        let store: Arc<dyn SegmentStore> = Arc::new(MemStore::new());
        let mut offset = 0i64;
        let (mut bytes, mut scratch) = (Vec::new(), Vec::new());
        for segment in 0..5 {
            let file = store.create(&name(offset as u64, SegmentFile::Log, Stage::Live)).expect("create");
            for batch in 0..12 {
                let keys: Vec<String> = (0..10).map(|i| format!("k{}", (offset + i) * 13 % 30)).collect();
                let values: Vec<String> = (0..10).map(|i| format!("v{}", offset + i)).collect();
                let records: Vec<RecordToWrite<'_>> = (0..10)
                    .map(|i| RecordToWrite {
                        offset: offset + i,
                        timestamp: 1_000 + offset + i,
                        key: Some(keys[i as usize].as_bytes()),
                        value: (i % 9 != 4).then(|| values[i as usize].as_bytes()),
                        header_count: 0,
                        header_bytes: &[],
                    })
                    .collect();
                let mut h = new_header(offset, 9);
                h.producer_id = 7 + (segment * 12 + batch) % 3;
                bytes.clear();
                let codec = CODECS[(segment * 12 + batch) as usize % CODECS.len()];
                write_batch(&h, codec, None, &records, &mut bytes, &mut scratch).expect("batch");
                if damaged && segment == 4 && batch == 8 {
                    assert_eq!(codec, Compression::None);
                    let last = bytes.len() - 3;
                    bytes[last] ^= 0x55;
                }
                file.append(&bytes).expect("append");
                offset += 10;
            }
            file.sync().expect("sync");
            file.seal().expect("seal");
        }
        store.create(&name(offset as u64, SegmentFile::Log, Stage::Live)).expect("active");
        let log =
            Log::open(Arc::clone(&store), log_core::OpenOptions::kafka(LogConfig::default(), CheckpointFile::Memory))
                .expect("open");
        (store, log)
    }

    #[test]
    fn a_kafka_group_of_every_codec_on_several_threads_is_written_byte_for_byte_as_on_one() {
        let (one_store, one) = kafka_log();
        let one_passes = clean(&one, 1);
        for threads in [2, 4] {
            let (store, log) = kafka_log();
            let passes = clean(&log, threads);
            assert_eq!(passes[0].groups, 1, "one group: the split path");
            assert_eq!(files(&*store), files(&*one_store), "{threads} threads");
            assert_eq!(passes[0].pass2.batches_rewritten, one_passes[0].pass2.batches_rewritten);
            assert_eq!(passes[0].tombstones_kept, one_passes[0].tombstones_kept);
        }
    }

    #[test]
    fn parts_are_contiguous_non_empty_and_about_equal() {
        let sizes = |ranges: &[std::ops::Range<usize>]| ranges.iter().map(|r| r.len()).collect::<Vec<_>>();
        // Only sizes matter here: the split is computed from them alone.
        let segs = |n: usize| -> Vec<u64> { (0..n).map(|_| 64).collect() };
        let split = |sizes_in: &[u64], parts: usize| {
            let ranges = split_sizes(sizes_in, parts);
            let mut next = 0;
            for r in &ranges {
                assert!(r.start == next && !r.is_empty(), "contiguous, non-empty: {ranges:?}");
                next = r.end;
            }
            assert_eq!(next, sizes_in.len(), "every segment in a part: {ranges:?}");
            ranges
        };
        assert_eq!(sizes(&split(&segs(4), 2)), vec![2, 2]);
        assert_eq!(sizes(&split(&segs(1), 2)), vec![1]);
        assert_eq!(sizes(&split(&segs(3), 2)), vec![1, 2]);
        assert_eq!(sizes(&split(&segs(5), 3)), vec![2, 1, 2]);
        assert_eq!(sizes(&split(&[1000, 1, 1, 1], 2)), vec![1, 3]);
        assert_eq!(sizes(&split(&[1, 1, 1, 1000], 2)), vec![3, 1]);
        assert_eq!(sizes(&split(&segs(2), 8)), vec![1, 1]);
        assert_eq!(sizes(&split(&segs(9), 1)), vec![9]);
        assert!(split(&[], 2).is_empty());
    }

    #[test]
    fn passes_whose_map_fills_end_where_they_end_on_one_thread() {
        // A map of about 12 keys: every pass stops at a refused key, inside a unit pass 1 reads ahead.
        let buffer = MapKind::Compact.bytes_for(12, 0.9, 1);
        for make in [native_log as fn() -> (Arc<dyn SegmentStore>, Log), kafka_log] {
            let (one_store, one) = make();
            let one_passes = clean_in(&one, 1, buffer);
            assert!(one_passes.len() > 2 && one_passes[0].map_full, "{} passes", one_passes.len());
            for threads in [2, 3] {
                let (store, log) = make();
                let passes = clean_in(&log, threads, buffer);
                let ends = |p: &[crate::CleanStats]| p.iter().map(|s| s.end_offset).collect::<Vec<_>>();
                assert_eq!(ends(&passes), ends(&one_passes), "{threads} threads");
                assert_eq!(files(&*store), files(&*one_store), "{threads} threads");
            }
        }
    }

    #[test]
    fn damage_in_a_helpers_part_fails_the_pass_and_changes_nothing() {
        for threads in [1, 2, 3] {
            let (store, log) = kafka_log_damaged(true);
            let before = files(&*store);
            let config = CleanerConfig {
                map: MapKind::Compact,
                dedupe_buffer_bytes: 1 << 20,
                threads,
                ..CleanerConfig::default()
            };
            let mut cleaner = crate::Cleaner::new(config, Arc::new(ManualClock::new(NOW))).expect("cleaner");
            let err = cleaner.clean(&log, PassOptions::default()).expect_err("a damaged batch");
            assert!(
                matches!(&err, Error::Log(log_core::Error::Corrupt { segment, .. }) if segment.starts_with("00000000000000000480")),
                "{threads} threads: {err}"
            );
            assert_eq!(files(&*store), before, "{threads} threads: nothing changed");
        }
    }
}
