//! `repair`: the one way stored records are ever dropped because they look damaged, and only on request, for
//! a native log and a Kafka partition alike ([`plan_for`], each format answering in its own module).
//!
//! A plan reads the store (changing nothing) and lists what a repair would do: drop the damaged byte ranges
//! of segments while keeping every valid batch around them, set aside a `.swap` that would replace segments
//! with garbage (restoring the segments it replaced), set aside an unreadable checkpoint, drop or rebuild
//! indexes that disagree with their segments. [`apply`] does it, keeping a copy of every byte it cuts in a
//! file named `repair-<time>.<what>.bytes` in the store (such names belong to neither format, so they stay
//! until removed by hand, and a broker ignores them too).
//!
//! Order matters for crashes. Invalid `.swap` files are set aside first; then a pending swap is finished
//! (completed or rolled back) exactly as the next open would; only then are segments cut. Each segment is
//! replaced atomically: its repaired copy is written to `repair-<time>.<base>.log.new` (a name outside both
//! swap protocols, so a crash can never make recovery mistake it for a pass's output), synced, and renamed
//! over the segment. A crash leaves the old or the new segment, and at worst a leftover `.new` file; running
//! the repair again continues it. A torn tail alone is left to the next open, which cuts it.
//!
//! Memory is bounded whatever the segments' sizes: segments are scanned and copied in windows, cut bytes are
//! copied to their backups in chunks, and the search past damage is linear in the bytes searched.

pub(crate) mod damage;

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::format::Format;
use crate::scan::SegmentScan;
use crate::segment::{SegmentWriter, SideIndexFiles, Stamp};
use crate::storage::SegmentSource;
use crate::storage::{Segment, SegmentStore};

/// What a repair of the log of `format` in `store` would do, changing nothing. `config` gives the index interval of the indexes a repair
/// rewrites (a Kafka segment's `.index` and `.timeindex`; a native log's hints are dropped instead, and its
/// next open rebuilds them with the settings it is opened with).
///
/// # Errors
/// As the format's plan: the store cannot be read, or holds no log of `format`.
pub fn plan_for(format: Format, store: &dyn SegmentStore, config: &crate::LogConfig) -> Result<RepairPlan> {
    format.plan_repair(store, config)
}

/// One thing a repair does.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum RepairAction {
    /// Drop these byte ranges of a segment, keeping the valid batches before, between and after them.
    CutRanges {
        /// The segment's file.
        segment: String,
        /// `[start, end)` byte ranges to drop.
        ranges: Vec<(u64, u64)>,
        /// The offsets each range held, one entry a range, in the same order.
        offsets: Vec<DroppedOffsets>,
        /// Bytes dropped in all.
        bytes: u64,
        /// Valid records kept in the segment.
        records_kept: u64,
        /// True for the active (last) segment.
        active: bool,
    },
    /// Set aside a committed `.swap` that is not a valid segment or removal marker, and put back the segments it
    /// was to replace.
    DiscardSwap {
        /// The `.swap` file.
        file: String,
        /// Why it is not valid.
        reason: String,
        /// What happens to the segments it was to replace: kept, restored from `.deleted`, or lost.
        segment: String,
    },
    /// Set aside a checkpoint file that does not parse; cleaning then starts from the log's start.
    ResetCheckpoint {
        /// Why it does not parse.
        reason: String,
    },
    /// Delete an index hint that disagrees with its segment (the next open rebuilds it).
    DropHint {
        /// The hint.
        file: String,
        /// How it disagrees.
        reason: String,
    },
    /// Rewrite a Kafka segment's `.index` and `.timeindex` from its batches (they disagree with it).
    RebuildIndexes {
        /// The segment.
        segment: String,
        /// How they disagree.
        reason: String,
    },
    /// Rewrite a Kafka segment's `.txnindex` from the partition's batches, as a broker's recovery rebuilds it
    /// (it does not parse, or disagrees with the transaction markers); a copy of the old file is kept.
    RebuildTxnIndex {
        /// The `.txnindex` file.
        file: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// The offsets a cut byte range held. Damaged bytes cannot be read, so they are named by the valid records
/// around them: every offset between the last valid record before the range and the first valid one after
/// it. That is exact for a log never cleaned there (its offsets have no gaps) and an upper bound otherwise,
/// hence `records_at_most`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct DroppedOffsets {
    /// The first offset the range can have held (`None` when it held none).
    pub first: Option<u64>,
    /// The last (`None` with `first`: to the end of the log, nothing valid follows the range).
    pub last: Option<u64>,
    /// Records it can have held at most, one an offset (`None` when it runs to the end of the log; `Some(0)`:
    /// the records on both sides have adjacent offsets, so only bytes go).
    pub records_at_most: Option<u64>,
}

impl DroppedOffsets {
    /// For a person: `offsets 4750-4799 (up to 50 records)`, `offsets 4750 and on (to the end of the log)`,
    /// `no offset (the records around it are adjacent)`.
    pub fn describe(&self) -> String {
        use crate::human::{count, offsets};
        match (self.first, self.last, self.records_at_most) {
            (Some(f), Some(l), Some(n)) => {
                format!("offsets {} (up to {})", offsets(f, l), count(n, "record", "records"))
            }
            (Some(f), None, _) => format!("offsets {f} and on (no valid record follows)"),
            _ => "no offset (the valid records around it are adjacent)".to_owned(),
        }
    }
}

/// What a repair would do; empty when there is nothing to repair by hand.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RepairPlan {
    /// The format of the store it was made for.
    pub format: Format,
    /// The actions, in the order [`apply`] takes them.
    pub actions: Vec<RepairAction>,
    /// Problems a repair cannot fix (names the log cannot use, segments whose offsets overlap, data of another
    /// format version), for a human.
    pub cannot_fix: Vec<String>,
    /// The index interval segments are rewritten with (the log's `index.interval.bytes`).
    pub index_interval_bytes: u64,
}

/// What [`apply`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RepairOutcome {
    /// The actions taken.
    pub actions: Vec<RepairAction>,
    /// Files written with copies of what was cut or set aside.
    pub backups: Vec<String>,
}

/// Carries out `plan` on `store` (which must not be open as a log, and must hold no other writer: the
/// caller holds the store's lock, and for a Kafka partition the broker's lock), keeping copies of what it cuts
/// under names starting with `repair-<stamp>.`.
///
/// # Errors
/// [`Error::Io`]; the store is then partly repaired, every segment either old or new (running the repair
/// again continues it).
pub fn apply(store: &dyn SegmentStore, plan: &RepairPlan, stamp: u64) -> Result<RepairOutcome> {
    plan.format.apply_repair(store, plan, stamp)
}

/// Bytes copied per read and write when a repair copies a file or a range of one.
const COPY_CHUNK: usize = 1 << 20;

/// Copies of what a repair removes, each durable (data and name) before anything it holds is removed.
pub(crate) struct Backups<'s> {
    store: &'s dyn SegmentStore,
    stamp: u64,
    pub(crate) outcome: RepairOutcome,
}

impl<'s> Backups<'s> {
    pub(crate) fn new(store: &'s dyn SegmentStore, stamp: u64) -> Self {
        Backups { store, stamp, outcome: RepairOutcome::default() }
    }

    /// Keeps bytes `start..end` of `file` as `repair-<stamp>.<what>.bytes`.
    pub(crate) fn keep_range(&mut self, what: &str, file: &Arc<dyn Segment>, start: u64, end: u64) -> Result<()> {
        // The suffix keeps a copy of `x.log.swap` from ending in one of the log's own suffixes.
        let name = format!("repair-{}.{what}.bytes", self.stamp);
        delete_quietly(self.store, &name)?;
        let out = self.store.create(&name).map_err(Error::io("create", &name))?;
        copy_range(file, start, end, &*out, what, &name)?;
        out.sync().map_err(Error::io("sync", &name))?;
        self.store.sync_dir().map_err(Error::io("sync directory", &name))?;
        self.outcome.backups.push(name);
        Ok(())
    }

    /// Keeps all of the file `name`.
    pub(crate) fn keep_file(&mut self, name: &str) -> Result<()> {
        let file = self.store.open(name).map_err(Error::io("open", name))?;
        let len = file.len();
        self.keep_range(name, &file, 0, len)
    }
}

/// Appends bytes `start..end` of `from` (called `from_name`) to `to` (called `to_name`), a chunk at a time.
fn copy_range(
    from: &Arc<dyn Segment>,
    start: u64,
    end: u64,
    to: &dyn Segment,
    from_name: &str,
    to_name: &str,
) -> Result<()> {
    let mut chunk = vec![0u8; usize::try_from(end.saturating_sub(start)).unwrap_or(usize::MAX).min(COPY_CHUNK)];
    let mut at = start;
    while at < end {
        let n = usize::try_from(end - at).unwrap_or(usize::MAX).min(chunk.len());
        from.read_at(at, &mut chunk[..n]).map_err(Error::io("read", from_name))?;
        to.append(&chunk[..n]).map_err(Error::io("append", to_name))?;
        at += n as u64;
    }
    Ok(())
}

/// What [`rewrite_without`] copies.
pub(crate) struct Rewrite<'a> {
    pub(crate) format: Format,
    /// The segment's base offset.
    pub(crate) base: u64,
    /// The segment's file.
    pub(crate) segment: &'a str,
    /// `[start, end)` byte ranges left out.
    pub(crate) ranges: &'a [(u64, u64)],
    /// Where the segment's data ends.
    pub(crate) data_end: u64,
    /// The new file.
    pub(crate) temp: &'a str,
    /// The index interval of the copy.
    pub(crate) interval: u64,
}

impl<'a> Rewrite<'a> {
    /// A rewrite of `segment` of `format`, based at `base`, without `ranges`, up to `data_end`, into `temp`,
    /// its indexes (if the format keeps any) an entry every `interval` bytes.
    pub(crate) fn new(
        format: Format,
        base: u64,
        segment: &'a str,
        ranges: &'a [(u64, u64)],
        data_end: u64,
        temp: &'a str,
        interval: u64,
    ) -> Rewrite<'a> {
        Rewrite { format, base, segment, ranges, data_end, temp, interval }
    }
}

/// Writes to the new file `r.temp` the batches of `r.segment` outside `r.ranges`, up to `r.data_end`, a window
/// at a time, checking every batch's checksum again; synced. Returns the number of bytes written and, for a
/// Kafka segment, its index files' bytes.
///
/// # Errors
/// [`Error::Corrupt`] if a batch outside the ranges no longer reads (the segment changed since the plan);
/// [`Error::Io`].
pub(crate) fn rewrite_without(store: &dyn SegmentStore, r: &Rewrite<'_>) -> Result<(u64, Option<SideIndexFiles>)> {
    let file = store.open(r.segment).map_err(Error::io("open", r.segment))?;
    let source = SegmentSource::Reads(file);
    delete_quietly(store, r.temp)?;
    let out = store.create(r.temp).map_err(Error::io("create", r.temp))?;
    let mut writer = SegmentWriter::new(r.format, r.base, r.temp.to_owned(), out, r.interval);
    let mut kept = Vec::with_capacity(r.ranges.len() + 1);
    let mut at = 0u64;
    for &(start, end) in r.ranges {
        kept.push((at, start.min(r.data_end)));
        at = end;
    }
    kept.push((at, r.data_end));
    for (start, end) in kept.into_iter().filter(|(s, e)| s < e) {
        let mut scan = SegmentScan::new(r.format, r.segment, &source, start, end, true);
        while let Some(window) = scan.next_window()? {
            for item in window.batches() {
                let placed = item?;
                writer.append_batch(placed.batch.bytes(), Stamp::of(&placed.batch))?;
            }
        }
    }
    let size = writer.size();
    let (_, files) = writer.finish()?;
    Ok((size, files))
}

pub(crate) fn delete_quietly(store: &dyn SegmentStore, name: &str) -> Result<()> {
    match store.delete(name) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io("delete", name)(e)),
        _ => Ok(()),
    }
}
