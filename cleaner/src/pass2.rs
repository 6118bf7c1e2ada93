//! Pass 2: re-copies a group of closed segments, batch by batch, keeping a record iff the keep rule
//! ([`crate::keep`]) says so. A batch whose records all stay is copied as its bytes; one that loses records (or
//! needs a delete horizon) is rewritten in its own format ([`log_core::BatchRef::rewrite`]); one that loses
//! every record goes (Kafka keeps a producer's last batch, empty). The keys of uncompressed batches are looked
//! up in runs of up to [`BATCH`] across batches, so a map can hide memory latency.

use std::sync::Arc;

use log_core::{BatchRef, Cleaning, Format, Frame, GroupCopy, Placed, RecordRef, Replacement, SealedSegment, Stamp};

use log_core::producers::ActiveProducers;
use log_core::txn::TxnState;

use crate::error::Result;
use crate::external::StaleSet;
use crate::keep::{
    BatchDecision, CopyCounts, Facts, Judge, Verdict, batch_decision, is_aborted, kept_whole, marker_decision,
    marker_may_go, verdict,
};
use crate::map::{BATCH, OffsetMap, Probes};
use crate::pace::Pace;
use crate::pass1::recycle;
use crate::superseded::Superseded;

/// What pass 2 needs besides the group: the rule's settings, the map, the partition's transaction state
/// (Kafka: aborted transactions) and its active producers (whose last writes are kept even when emptied).
pub(crate) struct CopyContext<'a> {
    pub(crate) judge: Judge,
    pub(crate) lookup: Lookup<'a>,
    pub(crate) txns: &'a TxnState,
    pub(crate) producers: &'a ActiveProducers,
}

/// Where pass 2 learns whether a record was superseded: the offset map of pass 1 (asked by key), the offsets
/// its puts superseded (asked by offset, the map for the records pass 1 did not put), or the external pass's
/// stale offsets (asked by offset).
#[derive(Clone, Copy)]
pub(crate) enum Lookup<'a> {
    Map(&'a dyn OffsetMap),
    Superseded(&'a dyn OffsetMap, &'a Superseded),
    Stale(&'a StaleSet),
    /// Nothing was mapped: no record is superseded.
    Nothing,
}

impl Lookup<'_> {
    /// `out[i]` for the record of key `keys[i]` at `offsets[i]`: the latest offset mapped for the key (a map),
    /// or `Some(u64::MAX)` for a stale record and `None` otherwise (the external pass).
    #[inline]
    fn get_batch(&self, keys: &[&[u8]], offsets: &[u64], out: &mut [Option<u64>], probes: &mut Probes) {
        match self {
            Lookup::Map(m) => m.get_batch(keys, out, probes),
            Lookup::Superseded(m, s) => s.get_batch(*m, keys, offsets, out, probes),
            Lookup::Stale(s) => crate::external::lookup(s, offsets, out, probes),
            Lookup::Nothing => out.iter_mut().for_each(|o| *o = None),
        }
    }
}

impl CopyContext<'_> {
    /// True for a batch kept, emptied if need be, as Kafka's cleaner keeps it: the one holding an active
    /// producer's last write (for the producer's sequence and epoch: [`ActiveProducers::keeps_empty`]), and
    /// the batch that ends the round ([`Judge::round_end`]).
    fn keeps_empty(&self, batch: &BatchRef<'_>) -> bool {
        self.ends_round(batch)
            || batch
                .producer_id()
                .zip(batch.producer_epoch())
                .is_some_and(|(p, epoch)| self.producers.keeps_empty(p, epoch, batch.last_offset, batch.is_control()))
    }

    fn ends_round(&self, batch: &BatchRef<'_>) -> bool {
        self.judge.round_end.is_some_and(|end| batch.last_offset.checked_add(1) == Some(end))
    }
}

/// Buffers one pass-2 thread reuses from batch to batch (the borrowed ones empty between uses, recycled to
/// the lifetime at hand), so judging a batch allocates nothing.
#[derive(Default)]
pub(crate) struct Buffers {
    scratch: Vec<u8>,
    out: Vec<u8>,
    encode: Vec<u8>,
    latest: Vec<Option<u64>>,
    keys: Vec<&'static [u8]>,
    offsets: Vec<u64>,
    kept: Vec<RecordRef<'static>>,
}

/// A batch whose records wait in the run for their lookups.
struct Pending<'w> {
    placed: Placed<'w>,
    records: std::ops::Range<usize>,
}

/// Where pass 2's verdicts go: a group's cleaned copy ([`GroupCopy`]), or a count of what it would write (a
/// dry run).
pub(crate) trait CopyOutput {
    /// The batches of the next segment of the group follow.
    fn next_segment(&mut self) -> Result<()>;
    /// Keeps the batch at `position` of the current segment as its `bytes` are.
    fn keep(&mut self, position: u64, bytes: &[u8], stamp: Stamp) -> Result<()>;
    /// Keeps a batch in a new encoding.
    fn keep_changed(&mut self, bytes: &[u8], stamp: Stamp) -> Result<()>;
    /// Drops the current batch.
    fn drop_batch(&mut self) -> Result<()>;
}

impl CopyOutput for GroupCopy<'_> {
    fn next_segment(&mut self) -> Result<()> {
        Ok(GroupCopy::next_segment(self)?)
    }
    fn keep(&mut self, position: u64, bytes: &[u8], stamp: Stamp) -> Result<()> {
        Ok(GroupCopy::keep(self, position, bytes, stamp)?)
    }
    fn keep_changed(&mut self, bytes: &[u8], stamp: Stamp) -> Result<()> {
        Ok(GroupCopy::keep_changed(self, bytes, stamp)?)
    }
    fn drop_batch(&mut self) -> Result<()> {
        Ok(GroupCopy::drop_batch(self)?)
    }
}

/// A dry run's output: what the copy would write, counted.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct DryOutput {
    pub(crate) bytes: u64,
    pub(crate) batches: u64,
}

impl CopyOutput for DryOutput {
    fn next_segment(&mut self) -> Result<()> {
        Ok(())
    }
    fn keep(&mut self, _position: u64, bytes: &[u8], _stamp: Stamp) -> Result<()> {
        self.bytes += bytes.len() as u64;
        self.batches += 1;
        Ok(())
    }
    fn keep_changed(&mut self, bytes: &[u8], _stamp: Stamp) -> Result<()> {
        self.keep(0, bytes, _stamp)
    }
    fn drop_batch(&mut self) -> Result<()> {
        Ok(())
    }
}

/// Pass 2 over one group. `Ok(None)` when the group is one segment whose batches are all kept as they are (no
/// new file is written).
pub(crate) fn copy_group(
    cleaning: &Cleaning<'_>,
    group: &[Arc<SealedSegment>],
    cx: &CopyContext<'_>,
    bufs: &mut Buffers,
    counts: &mut CopyCounts,
    pace: &mut Pace<'_>,
) -> Result<Option<Replacement>> {
    let mut copy = cleaning.copy(group);
    copy_segments(group, cx, bufs, counts, pace, &mut copy)?;
    Ok(copy.finish()?)
}

/// Pass 2 over the segments of one group into `copy`.
pub(crate) fn copy_segments<O: CopyOutput>(
    group: &[Arc<SealedSegment>],
    cx: &CopyContext<'_>,
    bufs: &mut Buffers,
    counts: &mut CopyCounts,
    pace: &mut Pace<'_>,
    copy: &mut O,
) -> Result<()> {
    let mut pending_buf: Vec<Pending<'static>> = Vec::new();
    let mut records_buf: Vec<RecordRef<'static>> = Vec::new();
    let mut singles_buf: Vec<Frame<'static>> = Vec::new();
    for (i, segment) in group.iter().enumerate() {
        if i > 0 {
            copy.next_segment()?;
        }
        counts.segments_read += 1;
        let mut scan = segment.scan();
        if segment.format() == Format::Native {
            while let Some(window) = scan.next_window()? {
                let Some(frames) = window.frames() else { continue };
                let mut singles: Vec<Frame<'_>> = recycle(std::mem::take(&mut singles_buf));
                let result = copy_singles(copy, frames, &mut singles, cx, bufs, counts, pace);
                singles_buf = recycle(singles);
                result?;
            }
            continue;
        }
        while let Some(window) = scan.next_window()? {
            let mut pending: Vec<Pending<'_>> = recycle(std::mem::take(&mut pending_buf));
            let mut records: Vec<RecordRef<'_>> = recycle(std::mem::take(&mut records_buf));
            let mut keys = 0usize;
            for item in window.batches() {
                let placed = item?;
                let batch = placed.batch;
                counts.batches_read += 1;
                counts.records_read += batch.record_count;
                counts.bytes_read += batch.len() as u64;
                pace.step(batch.len() as u64, batch.record_count)?;
                if kept_whole(&batch, &cx.judge) {
                    settle(copy, &mut pending, &mut records, cx, bufs, counts)?;
                    keys = 0;
                    counts.control_batches_kept += u64::from(batch.is_control());
                    keep_bytes(copy, &placed, counts)?;
                    continue;
                }
                if batch.is_control() {
                    settle(copy, &mut pending, &mut records, cx, bufs, counts)?;
                    keys = 0;
                    judge_marker(copy, &placed, segment.name(), cx, bufs, counts)?;
                    continue;
                }
                if is_aborted(&batch, cx.txns) {
                    // Gone whatever its keys (emptied instead when it is its producer's last data batch).
                    settle(copy, &mut pending, &mut records, cx, bufs, counts)?;
                    keys = 0;
                    counts.aborted_batches_removed += 1;
                    counts.aborted_records_removed += batch.record_count;
                    decide(copy, &placed, &[], None, cx, bufs, counts)?;
                    continue;
                }
                let corrupt = |kind| log_core::Error::Corrupt {
                    segment: segment.name().to_owned(),
                    position: placed.position,
                    kind,
                };
                if past_end_unchanged(&batch, &cx.judge).map_err(corrupt)? {
                    settle(copy, &mut pending, &mut records, cx, bufs, counts)?;
                    keys = 0;
                    keep_bytes(copy, &placed, counts)?;
                    continue;
                }
                match batch.records_in_place() {
                    Some(recs) => {
                        let start = records.len();
                        for rec in recs.map_err(corrupt)? {
                            let rec = rec.map_err(corrupt)?;
                            keys += usize::from(rec.key.is_some() && rec.offset < cx.judge.end_offset);
                            records.push(rec);
                        }
                        pending.push(Pending { placed, records: start..records.len() });
                        if keys >= BATCH {
                            settle(copy, &mut pending, &mut records, cx, bufs, counts)?;
                            keys = 0;
                        }
                    }
                    None => {
                        // A compressed batch: its records borrow the scratch buffer, so it is judged alone.
                        settle(copy, &mut pending, &mut records, cx, bufs, counts)?;
                        keys = 0;
                        judge_compressed(copy, &placed, segment.name(), cx, bufs, counts)?;
                    }
                }
            }
            settle(copy, &mut pending, &mut records, cx, bufs, counts)?;
            pending_buf = recycle(pending);
            records_buf = recycle(records);
        }
    }
    Ok(())
}

/// True for a data batch (neither a marker nor aborted: those are judged before) that starts at or past the
/// end offset and that pass 2 leaves as it is: every record past the end offset stays (none was mapped), and
/// Kafka's cleaner writes such a batch's original bytes unless it must stamp a delete horizon on it, which
/// only a batch holding a tombstone and no horizon yet needs. So a batch with a horizon is copied without
/// reading its records (a compressed one without decompressing it), and an uncompressed one is walked for a
/// tombstone only, where judging it would look every record over: the segment holding the end offset is
/// rewritten whole every pass, and a run of many passes reads the rest of it each time.
///
/// # Errors
/// The record that does not decode, as judging the batch would find it.
fn past_end_unchanged(batch: &BatchRef<'_>, judge: &Judge) -> std::result::Result<bool, log_core::CorruptKind> {
    // An empty batch (a bare header an earlier pass kept) goes past the end offset too unless something keeps it
    // (Kafka: DELETE_EMPTY with no record retained): it is judged.
    if !judge.judge_past_end || batch.base_offset < judge.end_offset || batch.record_count == 0 {
        return Ok(false);
    }
    if batch.delete_horizon.is_some() {
        return Ok(true);
    }
    let Some(records) = batch.records_in_place() else { return Ok(false) };
    for record in records? {
        if record?.is_tombstone() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Pass 2 over a window of native frames (batches of one record each): the batch-of-one fast path, judging
/// each record as the batch it is, in runs of [`BATCH`] lookups. The same rule as the general path: a kept
/// record is copied as its bytes, one that needs a delete horizon rewritten, a dropped one goes.
fn copy_singles<'w, O: CopyOutput>(
    copy: &mut O,
    frames: log_core::Frames<'w>,
    run: &mut Vec<Frame<'w>>,
    cx: &CopyContext<'_>,
    bufs: &mut Buffers,
    counts: &mut CopyCounts,
    pace: &mut Pace<'_>,
) -> Result<()> {
    let mut frames = frames;
    loop {
        run.clear();
        for item in frames.by_ref() {
            let frame = item?;
            counts.batches_read += 1;
            counts.records_read += 1;
            counts.bytes_read += frame.bytes.len() as u64;
            pace.step(frame.bytes.len() as u64, 1)?;
            run.push(frame);
            if run.len() == BATCH {
                break;
            }
        }
        if run.is_empty() {
            return Ok(());
        }
        judge_singles(copy, run, cx, bufs, counts)?;
    }
}

/// Judges a run of native frames with one batch of lookups.
fn judge_singles<O: CopyOutput>(
    copy: &mut O,
    run: &[Frame<'_>],
    cx: &CopyContext<'_>,
    bufs: &mut Buffers,
    counts: &mut CopyCounts,
) -> Result<()> {
    let judge = cx.judge;
    let mut keys: Vec<&[u8]> = recycle(std::mem::take(&mut bufs.keys));
    let mut offsets = [0u64; BATCH];
    for r in run.iter().map(|f| &f.record).filter(|r| r.offset < judge.end_offset) {
        if let Some(k) = r.key {
            offsets[keys.len()] = r.offset;
            keys.push(k);
        }
    }
    let mut latest = [None; BATCH];
    cx.lookup.get_batch(&keys, &offsets[..keys.len()], &mut latest[..keys.len()], &mut counts.probes);
    bufs.keys = recycle(keys);
    let mut looked_up = latest.iter();
    for frame in run {
        let r = &frame.record;
        let (facts, mapped) = judged(r, &judge, &mut looked_up);
        match verdict(facts, mapped, judge, counts) {
            Verdict::Keep => {
                counts.records_kept += 1;
                counts.bytes_kept += frame.bytes.len() as u64;
                counts.batches_copied += 1;
                copy.keep(frame.position, frame.bytes, frame.stamp())?;
            }
            Verdict::Drop => {
                counts.batches_removed += 1;
                copy.drop_batch()?;
            }
            Verdict::Stamp(h) => {
                let corrupt =
                    |kind| log_core::Error::Corrupt { segment: String::new(), position: frame.position, kind };
                let batch = Format::Native.parse(frame.bytes, false).map_err(corrupt)?;
                let placed = Placed { position: frame.position, batch };
                decide(copy, &placed, std::slice::from_ref(r), Some(h), cx, bufs, counts)?;
            }
        }
    }
    Ok(())
}

/// Judges one compressed batch in bounded memory whatever its number of records: a first walk over its
/// decompressed records looks their keys up in runs of [`BATCH`] and notes each verdict in a bit set (a bit a
/// record); then the batch is copied, dropped, or rewritten from a second walk over the same decompressed
/// bytes, taking the records whose bit is set. A batch of at most [`KEPT_IN_MEMORY`] records keeps its kept
/// records' references from the first walk instead, and is rewritten without decoding them again. Memory: the
/// decompressed records (at most `MAX_DECOMPRESSED_BYTES`), the re-encoded ones and the new batch, and a bit
/// (or, for a small batch, a reference) per record.
/// Records of a batch above which a rewrite decodes the kept ones again rather than hold their references.
const KEPT_IN_MEMORY: u64 = 4096;

fn judge_compressed<O: CopyOutput>(
    copy: &mut O,
    placed: &Placed<'_>,
    segment: &str,
    cx: &CopyContext<'_>,
    bufs: &mut Buffers,
    counts: &mut CopyCounts,
) -> Result<()> {
    let corrupt = |kind| log_core::Error::Corrupt { segment: segment.to_owned(), position: placed.position, kind };
    let judge = cx.judge;
    let batch = &placed.batch;
    let mut scratch = std::mem::take(&mut bufs.scratch);
    let result = (|| -> Result<()> {
        let all = batch.records(&mut scratch).map_err(corrupt)?;
        let mut keep_bits: Vec<u64> = Vec::new();
        let (mut kept, mut stamp, mut index) = (0usize, None, 0usize);
        let mut run: Vec<RecordRef<'_>> = Vec::with_capacity(BATCH);
        let mut keys: Vec<&[u8]> = Vec::with_capacity(BATCH);
        let small = batch.record_count <= KEPT_IN_MEMORY;
        let mut kept_refs: Vec<RecordRef<'_>> = Vec::new();
        let mut walk = all.clone();
        loop {
            run.clear();
            keys.clear();
            for rec in walk.by_ref() {
                let rec = rec.map_err(corrupt)?;
                // The limit guards the records a pass judges by the map; those past the end offset are
                // kept as they are (Kafka's cleaner keeps them whatever their size).
                if rec.offset < judge.end_offset && rec.body_bytes as u64 > judge.max_record_bytes {
                    return Err(crate::Error::RecordTooLarge {
                        segment: segment.to_owned(),
                        offset: rec.offset,
                        bytes: rec.body_bytes as u64,
                        limit: judge.max_record_bytes,
                    });
                }
                run.push(rec);
                if run.len() == BATCH {
                    break;
                }
            }
            if run.is_empty() {
                break;
            }
            let mut offsets = [0u64; BATCH];
            for r in run.iter().filter(|r| r.offset < judge.end_offset) {
                if let Some(k) = r.key {
                    offsets[keys.len()] = r.offset;
                    keys.push(k);
                }
            }
            let mut latest = [None; BATCH];
            cx.lookup.get_batch(&keys, &offsets[..keys.len()], &mut latest[..keys.len()], &mut counts.probes);
            let mut looked_up = latest.iter();
            for r in &run {
                let (facts, mapped) = judged(r, &judge, &mut looked_up);
                let keep = match verdict(facts, mapped, judge, counts) {
                    Verdict::Drop => false,
                    Verdict::Keep => true,
                    Verdict::Stamp(h) => {
                        stamp = Some(h);
                        true
                    }
                };
                if index % 64 == 0 {
                    keep_bits.push(0);
                }
                if keep {
                    kept += 1;
                    if let Some(word) = keep_bits.last_mut() {
                        *word |= 1 << (index % 64);
                    }
                    if small {
                        kept_refs.push(*r);
                    }
                }
                index += 1;
            }
        }
        match batch_decision(batch, kept, stamp, cx.keeps_empty(batch)) {
            BatchDecision::Copy => keep_bytes(copy, placed, counts),
            BatchDecision::Remove => {
                counts.batches_removed += 1;
                copy.drop_batch()
            }
            BatchDecision::Rewrite { horizon } => {
                let new = if small {
                    batch.rewrite(&kept_refs, horizon, &mut bufs.out, &mut bufs.encode).map_err(corrupt)?
                } else {
                    let bits = &keep_bits;
                    // The records were all read once already: a second walk meets no error.
                    let kept_records = all
                        .clone()
                        .enumerate()
                        .filter(move |(i, _)| bits.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0))
                        .filter_map(|(_, r)| r.ok());
                    batch.rewrite_from(kept_records, horizon, &mut bufs.out, &mut bufs.encode).map_err(corrupt)?
                };
                counts.records_kept += kept as u64;
                counts.bytes_kept += bufs.out.len() as u64;
                counts.batches_rewritten += 1;
                counts.empty_batches_kept += u64::from(kept == 0);
                copy.keep_changed(&bufs.out, new)
            }
        }
    })();
    bufs.scratch = scratch;
    result
}

/// The marker rule for one control batch ([`marker_may_go`]): kept while data of its transaction is in the
/// log, else stamped with a delete horizon, and removed once that has passed.
fn judge_marker<O: CopyOutput>(
    copy: &mut O,
    placed: &Placed<'_>,
    segment: &str,
    cx: &CopyContext<'_>,
    bufs: &mut Buffers,
    counts: &mut CopyCounts,
) -> Result<()> {
    let corrupt = |kind| log_core::Error::Corrupt { segment: segment.to_owned(), position: placed.position, kind };
    let batch = &placed.batch;
    let mut scratch = std::mem::take(&mut bufs.scratch);
    let result = (|| -> Result<()> {
        let records: Vec<RecordRef<'_>> =
            batch.records(&mut scratch).map_err(corrupt)?.collect::<std::result::Result<_, _>>().map_err(corrupt)?;
        let kind = records.first().and_then(|r| batch.format().marker_type(r.key));
        let may_go = kind.is_some_and(|k| marker_may_go(batch, k, cx.txns));
        let mut decision = match (records.is_empty(), may_go) {
            // An emptied marker kept earlier (a bare header) stays only while it ends the round or holds its
            // producer's last write, as in Kafka.
            (true, _) if cx.keeps_empty(batch) => BatchDecision::Copy,
            (true, _) => BatchDecision::Remove,
            (false, true) => marker_decision(batch.delete_horizon, batch.base_offset, &cx.judge),
            (false, false) => BatchDecision::Copy,
        };
        // A marker that may go but ends the round or holds its producer's last write stays as a bare header,
        // as Kafka's cleaner keeps it.
        let emptied = decision == BatchDecision::Remove && cx.keeps_empty(batch);
        if emptied {
            decision = BatchDecision::Rewrite { horizon: batch.delete_horizon };
        }
        match decision {
            BatchDecision::Copy => {
                counts.control_batches_kept += 1;
                keep_bytes(copy, placed, counts)
            }
            BatchDecision::Remove => {
                counts.markers_removed += 1;
                counts.batches_removed += 1;
                copy.drop_batch()
            }
            BatchDecision::Rewrite { horizon } => {
                let kept = if emptied { &records[..0] } else { &records[..] };
                let new = batch.rewrite(kept, horizon, &mut bufs.out, &mut bufs.encode).map_err(corrupt)?;
                counts.markers_stamped += u64::from(!emptied);
                counts.empty_batches_kept += u64::from(emptied);
                counts.records_kept += kept.len() as u64;
                counts.bytes_kept += bufs.out.len() as u64;
                counts.batches_rewritten += 1;
                copy.keep_changed(&bufs.out, new)
            }
        }
    })();
    bufs.scratch = scratch;
    result
}

fn keep_bytes<O: CopyOutput>(copy: &mut O, placed: &Placed<'_>, counts: &mut CopyCounts) -> Result<()> {
    let b = &placed.batch;
    counts.records_kept += b.record_count;
    counts.bytes_kept += b.len() as u64;
    counts.batches_copied += 1;
    copy.keep(placed.position, b.bytes(), Stamp::of(b))?;
    Ok(())
}

/// Judges every pending batch, in order, with one run of lookups for their keys.
fn settle<'w, O: CopyOutput>(
    copy: &mut O,
    pending: &mut Vec<Pending<'w>>,
    records: &mut Vec<RecordRef<'w>>,
    cx: &CopyContext<'_>,
    bufs: &mut Buffers,
    counts: &mut CopyCounts,
) -> Result<()> {
    if !pending.is_empty() {
        judge_run(copy, pending, records, cx, bufs, counts)?;
    }
    pending.clear();
    records.clear();
    Ok(())
}

/// Judges the records of `batches` (each naming its range of `records`), looking their keys up in runs, and
/// keeps, rewrites or drops each batch in order.
fn judge_run<O: CopyOutput>(
    copy: &mut O,
    batches: &[Pending<'_>],
    records: &[RecordRef<'_>],
    cx: &CopyContext<'_>,
    bufs: &mut Buffers,
    counts: &mut CopyCounts,
) -> Result<()> {
    let judge = cx.judge;
    let mut keys: Vec<&[u8]> = recycle(std::mem::take(&mut bufs.keys));
    bufs.offsets.clear();
    for r in records.iter().filter(|r| r.offset < judge.end_offset) {
        if let Some(k) = r.key {
            bufs.offsets.push(r.offset);
            keys.push(k);
        }
    }
    bufs.latest.clear();
    bufs.latest.resize(keys.len(), None);
    for ((k, o), l) in keys.chunks(BATCH).zip(bufs.offsets.chunks(BATCH)).zip(bufs.latest.chunks_mut(BATCH)) {
        cx.lookup.get_batch(k, o, l, &mut counts.probes);
    }
    bufs.keys = recycle(keys);
    let latest = std::mem::take(&mut bufs.latest);
    let mut looked_up = latest.iter();
    let mut kept: Vec<RecordRef<'_>> = recycle(std::mem::take(&mut bufs.kept));
    let mut result = Ok(());
    for p in batches {
        kept.clear();
        let mut stamp = None;
        for r in &records[p.records.clone()] {
            let (facts, mapped) = judged(r, &judge, &mut looked_up);
            match verdict(facts, mapped, judge, counts) {
                Verdict::Drop => {}
                Verdict::Keep => kept.push(*r),
                Verdict::Stamp(h) => {
                    stamp = Some(h);
                    kept.push(*r);
                }
            }
        }
        result = decide(copy, &p.placed, &kept, stamp, cx, bufs, counts);
        if result.is_err() {
            break;
        }
    }
    bufs.kept = recycle(kept);
    bufs.latest = latest;
    result
}

fn decide<O: CopyOutput>(
    copy: &mut O,
    placed: &Placed<'_>,
    kept: &[RecordRef<'_>],
    stamp: Option<i64>,
    cx: &CopyContext<'_>,
    bufs: &mut Buffers,
    counts: &mut CopyCounts,
) -> Result<()> {
    let batch: &BatchRef<'_> = &placed.batch;
    match batch_decision(batch, kept.len(), stamp, cx.keeps_empty(batch)) {
        BatchDecision::Copy => keep_bytes(copy, placed, counts),
        BatchDecision::Remove => {
            counts.batches_removed += 1;
            copy.drop_batch()?;
            Ok(())
        }
        BatchDecision::Rewrite { horizon } => {
            let corrupt = |kind| log_core::Error::Corrupt {
                segment: format!("a batch rewritten from byte {}", placed.position),
                position: placed.position,
                kind,
            };
            let new = batch.rewrite(kept, horizon, &mut bufs.out, &mut bufs.encode).map_err(corrupt)?;
            counts.records_kept += kept.len() as u64;
            counts.bytes_kept += bufs.out.len() as u64;
            counts.batches_rewritten += 1;
            counts.empty_batches_kept += u64::from(kept.is_empty());
            copy.keep_changed(&bufs.out, new)?;
            Ok(())
        }
    }
}

/// A record's facts for [`verdict`], with the latest offset pass 1 mapped for its key: the next of
/// `looked_up` (a run's lookups, in record order, made for each keyed record below the end offset), or `None`
/// for a record that has no lookup.
#[inline]
fn judged<'l>(
    r: &RecordRef<'_>,
    judge: &Judge,
    looked_up: &mut impl Iterator<Item = &'l Option<u64>>,
) -> (Facts, Option<u64>) {
    let mapped =
        if r.offset < judge.end_offset && r.key.is_some() { looked_up.next().copied().flatten() } else { None };
    let facts = Facts {
        offset: r.offset,
        keyed: r.key.is_some(),
        tombstone: r.is_tombstone(),
        delete_horizon: r.delete_horizon,
    };
    (facts, mapped)
}
