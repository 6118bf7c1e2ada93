//! Opening a Kafka partition directory as a [`Log`], with a broker's own recovery rules (`LogLoader`), so that
//! whatever a crash of ours leaves, our next open and a broker started instead finish or undo it alike:
//!
//! 1. Every `*.deleted` file goes.
//! 2. Every `.swap` file whose base is at or above the smallest `.cleaned` base goes (a pass renames its
//!    outputs from `.cleaned` to `.swap` in descending base order, so a `.cleaned` file left means the swap was
//!    not committed), and every `.cleaned` file goes.
//! 3. Each remaining `.log.swap` covers `[its base, its next offset)` (at least its own base): every segment
//!    file in that range goes (its `.log` renamed `.deleted` first, removed once the swap is in place), and
//!    every `.swap` file is renamed into place.
//! 4. Index files without their `.log` go.
//!
//! Before anything is changed, every `.log.swap` to complete is loaded and checked: its batches must parse
//! with their checksums, it must lie wholly below the active segment (no pass writes one that reaches it), its
//! range must not overlap another's, and [`crate::swap_proof`] must prove a pass could have written it (its
//! records a subset of what it replaces, every record it removes one a pass may drop). Anything else is
//! corruption naming the file, and nothing is changed. The read-only open applies the same rules in memory
//! and reports what the next writable open will do.
//!
//! Unlike the native format, an empty closed segment stays (a broker keeps a cleaned group's head even when
//! it empties: its base is the log start), and a zero fill at the end of a segment (`log.preallocate`) ends
//! its data.

use std::collections::BTreeMap;
use std::io;
use std::sync::Arc;

use crate::checkpoint::CheckpointFile;
use crate::config::LogConfig;
use crate::error::{CorruptKind, Error, Result};
use crate::format::Format;
use crate::format::kafka::files::{KafkaName, SegmentFile, Stage, classify, name};
use crate::log::RecoveryReport;
use crate::open::{Parts, ReadOnlyFront, Recovered, delete_if_exists, read_only_back_half, sync_dir};
use crate::segment::SealedSegment;
use crate::storage::SegmentStore;

/// The names of a partition directory, classified.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KafkaLayout {
    /// Segment files by base, then by file and stage.
    pub segments: BTreeMap<u64, BTreeMap<(SegmentFile, Stage), String>>,
    /// Producer snapshots and the broker's own files: left alone.
    pub kept: Vec<String>,
    /// `*.deleted` files of producer snapshots (a broker removes them on load, and so does recovery).
    pub deleted_snapshots: Vec<String>,
    /// Names that are not part of the partition (ignored, with a notice).
    pub foreign: Vec<String>,
    /// Names a broker would take for segment files that cannot be used, with the reason.
    pub unusable: Vec<(String, String)>,
}

impl KafkaLayout {
    /// Lists and classifies the names of `store`. Changes nothing.
    ///
    /// # Errors
    /// [`Error::Io`] when the store cannot be listed.
    pub fn scan(store: &dyn SegmentStore) -> Result<KafkaLayout> {
        let names = store.list().map_err(Error::io("list", crate::error::DIRECTORY))?;
        let mut layout = KafkaLayout::default();
        for n in names {
            match classify(&n) {
                KafkaName::Segment { base, file, stage } => {
                    if let Err(e) = store.file_id(&n)
                        && e.kind() != io::ErrorKind::NotFound
                    {
                        layout.unusable.push((n, format!("it is not a regular file ({e})")));
                        continue;
                    }
                    layout.segments.entry(base).or_default().insert((file, stage), n);
                }
                KafkaName::Snapshot if n.ends_with(Stage::Deleted.suffix()) => layout.deleted_snapshots.push(n),
                KafkaName::Snapshot | KafkaName::Broker => layout.kept.push(n),
                KafkaName::Unusable(reason) => layout.unusable.push((n, reason.to_owned())),
                KafkaName::Foreign => layout.foreign.push(n),
            }
        }
        Ok(layout)
    }

    /// The files of one file kind and stage, by base.
    pub fn files(&self, file: SegmentFile, stage: Stage) -> BTreeMap<u64, String> {
        self.segments.iter().filter_map(|(&b, m)| m.get(&(file, stage)).map(|n| (b, n.clone()))).collect()
    }

    /// Every name at `stage`, any file kind.
    pub(crate) fn names_at(&self, stage: Stage) -> Vec<(u64, String)> {
        let mut out = Vec::new();
        for (&b, m) in &self.segments {
            for ((_, st), n) in m {
                if *st == stage {
                    out.push((b, n.clone()));
                }
            }
        }
        out
    }

    /// Signs that the directory holds a log of this project's own format.
    fn native_signs(&self) -> Vec<&str> {
        self.foreign
            .iter()
            .map(String::as_str)
            .filter(|n| n.ends_with(".lcindex") || *n == crate::names::CHECKPOINT_FILE || *n == "logcompact.lock")
            .take(3)
            .collect()
    }
}

/// What recovery does to a partition, decided before anything changes.
#[derive(Debug, Default)]
pub(crate) struct Recovery {
    /// Files to delete first: leftovers (`.deleted` files outside a pending swap's range, `.cleaned` files and
    /// the `.swap` files of an uncommitted swap).
    delete_first: Vec<String>,
    /// Index files of the segments a pending swap replaces (deleted before the swap takes their place).
    replaced: Vec<String>,
    /// `.log` files of the segments a pending swap replaces: renamed `.deleted` (as the pass itself does)
    /// before the swap takes their place, so a crash in between leaves them for the next proof.
    to_deleted: Vec<(String, String)>,
    /// `.log.deleted` files in a pending swap's range: the segments it replaces, removed only once the swap
    /// is in place.
    deleted_last: Vec<String>,
    /// `.swap` files renamed into place: (from, to).
    renames: Vec<(String, String)>,
    /// The validated `.log.swap` segments by base (what they become).
    pub(crate) swapped: BTreeMap<u64, SealedSegment>,
    /// The ranges `[from, to)` the pending swaps replace, one a `.log.swap`, in order.
    pub(crate) ranges: Vec<(u64, u64)>,
    /// Index files left without their `.log`.
    orphans: Vec<String>,
    report: RecoveryReport,
}

impl Recovery {
    /// True when a pending swap replaces the segment based at `base`.
    pub(crate) fn covers(&self, base: u64) -> bool {
        self.ranges.iter().any(|&(from, to)| (from..to).contains(&base))
    }
}

/// Decides recovery for `layout` (Kafka's `LogLoader` rules), validating every `.log.swap` it would complete
/// and proving that a cleaning pass could have written it ([`crate::swap_proof`]).
pub(crate) fn plan(store: &dyn SegmentStore, layout: &KafkaLayout, config: &LogConfig) -> Result<Recovery> {
    let mut r = Recovery::default();
    let cleaned = layout.names_at(Stage::Cleaned);
    let min_cleaned = cleaned.iter().map(|&(b, _)| b).min();
    let mut swaps = Vec::new();
    for (b, n) in layout.names_at(Stage::Swap) {
        if min_cleaned.is_some_and(|m| b >= m) {
            r.delete_first.push(n);
            r.report.cleaned_files_discarded += 1;
        } else {
            swaps.push((b, n));
        }
    }
    for (_, n) in cleaned {
        r.delete_first.push(n);
        r.report.cleaned_files_discarded += 1;
    }
    let live_logs = layout.files(SegmentFile::Log, Stage::Live);
    let active_base = live_logs.last_key_value().map(|(&b, _)| b);
    let log_swaps: Vec<(u64, String)> =
        swaps.iter().filter(|(b, n)| n == &name(*b, SegmentFile::Log, Stage::Swap)).cloned().collect();
    for (base, n) in &log_swaps {
        let corrupt = |kind| Error::Corrupt { segment: n.clone(), position: 0, kind };
        if active_base.is_none_or(|a| *base >= a) {
            return Err(corrupt(CorruptKind::SwapOverActive { active_base }));
        }
        let file = store.open(n).map_err(Error::io("open", n))?;
        // Checksums too: once the swap completes, the segments it replaces are gone.
        let segment = SealedSegment::load_verified(Format::Kafka, *base, n.clone(), file, config.index_interval_bytes)?;
        if active_base.is_some_and(|a| segment.next_offset() > a) {
            return Err(corrupt(CorruptKind::SwapOverActive { active_base }));
        }
        // A broker replaces the segments in `[base, next offset)`, and the one of its own base by the rename.
        let to = segment.next_offset().max(base + 1);
        if let Some(&(previous, previous_to)) = r.ranges.last()
            && *base < previous_to
        {
            // Two swaps whose ranges overlap: no pass writes them (one group is swapped at a time).
            let kind = CorruptKind::OffsetBeyondNextSegment { next_base: *base, found: previous_to - 1 };
            let segment = name(previous, SegmentFile::Log, Stage::Swap);
            return Err(Error::Corrupt { segment, position: 0, kind });
        }
        r.ranges.push((*base, to));
        r.swapped.insert(*base, segment);
    }
    for (b, n) in layout.names_at(Stage::Deleted) {
        if n == name(b, SegmentFile::Log, Stage::Deleted) && r.covers(b) {
            r.deleted_last.push(n);
        } else {
            r.delete_first.push(n);
        }
        r.report.stray_files_removed += 1;
    }
    for n in &layout.deleted_snapshots {
        r.delete_first.push(n.clone());
        r.report.stray_files_removed += 1;
    }
    r.report.pending_swaps = prove_swaps(store, layout, &r)?;
    for (&b, files) in &layout.segments {
        if !r.covers(b) {
            continue;
        }
        for ((file, stage), n) in files {
            if *stage != Stage::Live {
                continue;
            }
            if *file == SegmentFile::Log {
                r.to_deleted.push((n.clone(), name(b, SegmentFile::Log, Stage::Deleted)));
            } else {
                r.replaced.push(n.clone());
            }
        }
    }
    for (b, n) in &swaps {
        let stem = n.strip_suffix(Stage::Swap.suffix()).unwrap_or(n).to_owned();
        r.renames.push((n.clone(), stem));
        if r.swapped.contains_key(b) && n.ends_with(".log.swap") {
            r.report.swaps_completed += 1;
        }
    }
    // Index files whose `.log` is gone once the swap is done (a broker deletes orphaned indexes on load).
    let mut after: BTreeMap<u64, Vec<SegmentFile>> = BTreeMap::new();
    for (&b, files) in &layout.segments {
        for ((file, stage), n) in files {
            let live = match stage {
                Stage::Live => !r.covers(b),
                Stage::Swap => swaps.iter().any(|(_, s)| s == n),
                Stage::Cleaned | Stage::Deleted => false,
            };
            if live {
                after.entry(b).or_default().push(*file);
            }
        }
    }
    for (b, files) in after {
        if !files.contains(&SegmentFile::Log) {
            for file in files {
                r.orphans.push(name(b, file, Stage::Live));
                r.report.stray_files_removed += 1;
            }
        }
    }
    Ok(r)
}

/// Proves each pending `.log.swap` of `r` ([`crate::swap_proof`]): its records come from the segments it
/// replaces (live or already `.deleted`), and every record it removes is one a pass may drop, a later record
/// of its key being looked for in the `.deleted` segments and the segments after its range.
fn prove_swaps(
    store: &dyn SegmentStore,
    layout: &KafkaLayout,
    r: &Recovery,
) -> Result<Vec<crate::swap_proof::SwapEffect>> {
    use crate::swap_proof::{Claim, Part, SwapEffect, prove};
    let open = |n: &str| -> Result<Part> { Ok(Part::reads(n, &store.open(n).map_err(Error::io("open", n))?)) };
    let mut effects = Vec::new();
    for (&(from, to), (_, swap)) in r.ranges.iter().zip(&r.swapped) {
        let mut originals = Vec::new();
        let mut later = Vec::new();
        for (&b, files) in layout.segments.range(from..) {
            let log = |stage| files.get(&(SegmentFile::Log, stage));
            if b < to {
                for n in [log(Stage::Live), log(Stage::Deleted)].into_iter().flatten() {
                    originals.push(open(n)?);
                }
                continue;
            }
            if let Some(s) = r.swapped.get(&b) {
                later.push(Part::of(s));
            } else if let Some(n) = log(Stage::Live).filter(|_| !r.covers(b)) {
                later.push(open(n)?);
            }
            if let Some(n) = log(Stage::Deleted) {
                later.push(open(n)?);
            }
        }
        let claim = Claim {
            format: Format::Kafka,
            file: swap.name(),
            range: (from, to),
            kept: Some(Part::of(swap)),
            kept_is_output: true,
            originals: &originals,
            later: &later,
        };
        let removed = prove(&claim)?;
        effects.push(SwapEffect { file: swap.name().to_owned(), removed });
    }
    Ok(effects)
}

/// Applies Kafka's recovery rules to the files of `store` (see the module docs): leftovers removed, a committed
/// swap completed, orphaned indexes removed. Every `.log.swap` is validated and proven before anything
/// changes. The segments a swap replaces are renamed `.deleted` before it takes their place and removed only
/// once it has, so a crash at any step leaves them for the next open's proof.
///
/// # Errors
/// [`Error::Corrupt`] for a `.log.swap` that cannot be completed (nothing changed); [`Error::Io`].
pub(crate) fn recover_files(
    store: &dyn SegmentStore,
    layout: &KafkaLayout,
    config: &LogConfig,
) -> Result<RecoveryReport> {
    recover_files_telling(store, layout, config).map(|(report, _)| report)
}

/// As [`recover_files`], also saying whether any file was renamed or removed (when none was, `layout` still
/// describes the directory, which the caller's lock keeps from changing otherwise).
fn recover_files_telling(
    store: &dyn SegmentStore,
    layout: &KafkaLayout,
    config: &LogConfig,
) -> Result<(RecoveryReport, bool)> {
    let recovery = plan(store, layout, config)?;
    let report = recovery.report.clone();
    let touched = !(recovery.delete_first.is_empty()
        && recovery.to_deleted.is_empty()
        && recovery.replaced.is_empty()
        && recovery.renames.is_empty()
        && recovery.deleted_last.is_empty()
        && recovery.orphans.is_empty());
    let mut changed = false;
    for n in &recovery.delete_first {
        delete_if_exists(store, n)?;
        changed = true;
    }
    if changed {
        sync_dir(store)?;
    }
    for (from, to) in &recovery.to_deleted {
        store.rename(from, to).map_err(Error::io("rename", from))?;
    }
    for n in &recovery.replaced {
        delete_if_exists(store, n)?;
    }
    for (from, to) in &recovery.renames {
        store.rename(from, to).map_err(Error::io("rename", from))?;
    }
    if !recovery.to_deleted.is_empty() || !recovery.replaced.is_empty() || !recovery.renames.is_empty() {
        sync_dir(store)?;
    }
    let gone = recovery.deleted_last.iter().chain(recovery.to_deleted.iter().map(|(_, to)| to));
    let mut removed = false;
    for n in gone.chain(&recovery.orphans) {
        delete_if_exists(store, n)?;
        removed = true;
    }
    if removed {
        sync_dir(store)?;
    }
    Ok((report, touched))
}

/// Refuses a directory whose names cannot be used or that holds a native log.
pub(crate) fn usable(store: &dyn SegmentStore, layout: &KafkaLayout) -> Result<()> {
    if let Some((n, reason)) = layout.unusable.first() {
        return Err(Error::UnusableName { name: n.clone(), reason: reason.clone() });
    }
    let signs = layout.native_signs();
    if !signs.is_empty() {
        return Err(Error::NotALog {
            found: format!("a log of this project's own format (its files: {})", signs.join(", ")),
            other_format: true,
        });
    }
    if let Some((_, first)) = layout.files(SegmentFile::Log, Stage::Live).first_key_value()
        && let Ok(file) = store.open(first)
    {
        let mut head = [0u8; crate::codec::PROBE_BYTES];
        let n = usize::try_from(file.len()).unwrap_or(0).min(head.len());
        if file.read_at(0, &mut head[..n]).is_ok()
            && crate::codec::plausible_frame_start(&head[..n], file.len(), None).is_some()
        {
            return Err(Error::NotALog {
                found: format!("{first} starts with a record frame of this project's own format"),
                other_format: true,
            });
        }
    }
    Ok(())
}

/// Recovers the Kafka partition in the writable `store` (the caller holds the broker's lock on its log
/// directory) for the open's skeleton ([`crate::open::open`]), by a broker's rules (see the module docs), and
/// lists its live segments. The skeleton then creates the first segment when there is none, keeps the cleaner
/// checkpoint in the broker's file, and cuts a torn tail or zero fill of the active segment back to its last
/// whole batch, as a broker's recovery does; damage followed by valid batches is corruption and nothing is cut.
///
/// # Errors
/// [`Error::UnusableName`]; [`Error::NotALog`] for a log of this project's own format; [`Error::Corrupt`] or
/// [`Error::CorruptNotTorn`] naming file and position; [`Error::Io`].
pub(crate) fn recover(store: &dyn SegmentStore, config: &LogConfig, checkpoint: &CheckpointFile) -> Result<Recovered> {
    let layout = KafkaLayout::scan(store)?;
    usable(store, &layout)?;
    let (mut report, touched) = recover_files_telling(store, &layout, config)?;
    report.ignored_files = layout.foreign.clone();
    // Listed again only when recovery renamed or removed a file: the caller's lock keeps anyone else out.
    let layout = if touched { KafkaLayout::scan(store)? } else { layout };
    let producer_files = producer_files(&layout, checkpoint)?;
    Ok(Recovered { logs: layout.files(SegmentFile::Log, Stage::Live), report, producer_files })
}

/// The producer snapshots of `layout` and what the broker's log directory says of its stop and log start.
fn producer_files(layout: &KafkaLayout, checkpoint: &CheckpointFile) -> Result<crate::producers::ProducerFiles> {
    Ok(crate::producers::ProducerFiles {
        snapshots: layout.kept.iter().filter(|n| n.ends_with(".snapshot")).cloned().collect(),
        clean_shutdown: checkpoint.clean_shutdown()?,
        recorded_log_start: checkpoint.broker_offsets()?.0,
        recovery_point: checkpoint.recovery_point()?,
    })
}

/// One attempt of a read-only open of the Kafka partition in `store` (`Ok(None)` when the directory changed
/// while it was being loaded): nothing is written, created, cut or removed, no lock is taken, and no file is
/// mapped (a running broker may truncate any of them: a read of a file cut underneath is an error, never a
/// signal). It sees the partition as the next writable open (or a broker's recovery) would leave it, and the
/// report says what that would do. Consistency without a lock: names and file identities compared after
/// loading ([`crate::open::read_only_back_half`]).
///
/// # Errors
/// [`Error::NotALog`] when the directory holds no segment or a native log; otherwise as [`recover`].
pub(crate) fn load_read_only(
    store: &Arc<dyn SegmentStore>,
    config: &LogConfig,
    checkpoint: &CheckpointFile,
) -> Result<Option<Parts>> {
    let store_ref: &dyn SegmentStore = &**store;
    let layout = KafkaLayout::scan(store_ref)?;
    usable(store_ref, &layout)?;
    let mut recovery = plan(store_ref, &layout, config)?;
    let mut report = std::mem::take(&mut recovery.report);
    report.ignored_files = layout.foreign.clone();
    // The segments as the writable open would leave them: live logs outside the swapped range, then the
    // swapped segments in place of what they cover.
    let mut names: BTreeMap<u64, (String, Option<SealedSegment>)> = layout
        .files(SegmentFile::Log, Stage::Live)
        .into_iter()
        .filter(|(b, _)| !recovery.covers(*b))
        .map(|(b, n)| (b, (n, None)))
        .collect();
    for (b, s) in std::mem::take(&mut recovery.swapped) {
        names.insert(b, (s.name().to_owned(), Some(s)));
    }
    let producer_files = producer_files(&layout, checkpoint)?;
    let front = ReadOnlyFront { names, report, checkpoint: checkpoint.clone(), producer_files };
    let not_a_log = || Error::NotALog { found: describe(&layout), other_format: false };
    let unchanged = |active_base| {
        let again = KafkaLayout::scan(store_ref)?;
        Ok(again
            .files(SegmentFile::Log, Stage::Live)
            .range(..=active_base)
            .eq(layout.files(SegmentFile::Log, Stage::Live).range(..=active_base))
            && again.names_at(Stage::Swap) == layout.names_at(Stage::Swap)
            && again.names_at(Stage::Cleaned) == layout.names_at(Stage::Cleaned))
    };
    read_only_back_half(Format::Kafka, store, config, front, not_a_log, unchanged)
}

/// What a directory without a segment holds, for the error.
fn describe(layout: &KafkaLayout) -> String {
    let mut shown: Vec<&str> = layout.foreign.iter().chain(&layout.kept).map(String::as_str).take(5).collect();
    if shown.is_empty() {
        return "no segment file (<20-digit base>.log): the directory is empty".into();
    }
    shown.sort_unstable();
    format!("no segment file (<20-digit base>.log); other files: {}", shown.join(", "))
}
