//! What a store holds, by name, before anything is opened: the log's segments, hints and swap files, names
//! that look like the log's but cannot be used, and signs of another format (a Kafka partition). Reading only:
//! the writable open, the read-only open, `check` and `repair` all start from a [`Layout`].

use std::collections::BTreeMap;
use std::io;
use std::sync::Arc;

use crate::error::{CorruptKind, Error, Result};
use crate::format::native::names::{FileKind, NameClass, classify};
use crate::names::{CHECKPOINT_FILE, CHECKPOINT_TMP_FILE};
use crate::removal;
use crate::segment::SealedSegment;
use crate::storage::SegmentStore;

/// The names of a store, classified.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    /// `.log` segments by base.
    pub logs: BTreeMap<u64, String>,
    /// `.lcindex` hints by base.
    pub hints: BTreeMap<u64, String>,
    /// `.log.cleaned` files by base (an uncommitted swap).
    pub cleaned: BTreeMap<u64, String>,
    /// `.log.swap` files by base (a committed swap, unless a `.cleaned` file is left).
    pub swaps: BTreeMap<u64, String>,
    /// `.log.deleted` files by base.
    pub deleted: BTreeMap<u64, String>,
    /// The checkpoint file exists.
    pub checkpoint: bool,
    /// A checkpoint write was interrupted.
    pub checkpoint_tmp: bool,
    /// Names with one of the log's suffixes that cannot be used, with the reason.
    pub unusable: Vec<(String, String)>,
    /// Every other name.
    pub foreign: Vec<String>,
}

/// What recovery does with the swap files of a [`Layout`] (Kafka's `LogLoader` rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PendingSwap {
    /// No swap was interrupted.
    None,
    /// A `.cleaned` file is left, so the commit point was not reached: every `.cleaned` and `.swap` file
    /// goes, the old segments stay.
    RollBack,
    /// Every output file of the swap is `.swap`: each replaces (or, holding a removal marker, removes) the
    /// segment of its base.
    Complete,
}

/// A committed `.swap` file, validated.
#[derive(Debug)]
pub(crate) enum SwapContent {
    /// The cleaned segment that replaces the `.log` of its base.
    Segment(Box<SealedSegment>),
    /// A removal marker: every segment based in `[base, end)` goes (one segment a pass cleaned away, or the
    /// tail of a group merged into the segment before it).
    Removed {
        /// The first offset after the removed range.
        end: u64,
    },
}

/// The `[base, end)` ranges of the valid removal markers among the `.swap` files of `layout`, by base.
/// Files that are not valid markers are left out here (validation names them).
pub(crate) fn marker_ranges(store: &dyn SegmentStore, layout: &Layout) -> BTreeMap<u64, u64> {
    let mut ranges = BTreeMap::new();
    for (&base, name) in &layout.swaps {
        let Ok(file) = store.open(name) else { continue };
        if file.len() != removal::MARKER_BYTES as u64 {
            continue;
        }
        let mut bytes = [0u8; removal::MARKER_BYTES];
        if file.read_at(0, &mut bytes).is_ok()
            && let Ok(end) = removal::decode(&bytes, base)
        {
            ranges.insert(base, end);
        }
    }
    ranges
}

/// True when a marker of `ranges` removes the segment based at `base`.
pub(crate) fn removed_by(ranges: &BTreeMap<u64, u64>, base: u64) -> bool {
    ranges.range(..=base).next_back().is_some_and(|(_, &end)| base < end)
}

impl Layout {
    /// Lists and classifies the names of `store`. Changes nothing.
    ///
    /// # Errors
    /// [`Error::Io`] when the store cannot be listed.
    pub fn scan(store: &dyn SegmentStore) -> Result<Layout> {
        let names = store.list().map_err(Error::io("list", crate::error::DIRECTORY))?;
        let mut layout = Layout::default();
        for name in names {
            match classify(&name) {
                NameClass::Ours(base, kind) => {
                    // A symbolic link or a directory under one of the log's names is refused, not skipped.
                    if let Err(e) = store.file_id(&name)
                        && e.kind() != io::ErrorKind::NotFound
                    {
                        layout.unusable.push((name, format!("it is not a regular file ({e})")));
                        continue;
                    }
                    let map = match kind {
                        FileKind::Log => &mut layout.logs,
                        FileKind::Index => &mut layout.hints,
                        FileKind::Cleaned => &mut layout.cleaned,
                        FileKind::Swap => &mut layout.swaps,
                        FileKind::Deleted => &mut layout.deleted,
                    };
                    map.insert(base, name);
                }
                NameClass::Unusable(reason) => layout.unusable.push((name, reason.to_owned())),
                NameClass::Foreign if name == CHECKPOINT_FILE => layout.checkpoint = true,
                NameClass::Foreign if name == CHECKPOINT_TMP_FILE => layout.checkpoint_tmp = true,
                NameClass::Foreign => layout.foreign.push(name),
            }
        }
        Ok(layout)
    }

    /// The first unusable name as an error.
    ///
    /// # Errors
    /// [`Error::UnusableName`].
    pub fn check_usable(&self) -> Result<()> {
        match self.unusable.first() {
            Some((name, reason)) => Err(Error::UnusableName { name: name.clone(), reason: reason.clone() }),
            None => Ok(()),
        }
    }

    /// What recovery will do with the swap files.
    pub fn pending_swap(&self) -> PendingSwap {
        if !self.cleaned.is_empty() {
            PendingSwap::RollBack
        } else if !self.swaps.is_empty() {
            PendingSwap::Complete
        } else {
            PendingSwap::None
        }
    }

    /// True when the store holds no segment at all (nor swap output that would become one).
    pub fn has_no_segments(&self) -> bool {
        self.logs.is_empty() && (self.swaps.is_empty() || self.pending_swap() == PendingSwap::RollBack)
    }

    /// Signs that the store holds a Kafka partition rather than a log of this format: Kafka's own file
    /// names, or a `.log` that starts with a Kafka record batch; and whether it is one this build reads (no
    /// batch of a message format older than magic 2). `None` when there are none.
    pub fn foreign_format(&self, store: &dyn SegmentStore) -> Option<(String, bool)> {
        let kafka_names: Vec<&str> = self
            .foreign
            .iter()
            .map(String::as_str)
            .filter(|n| {
                ["leader-epoch-checkpoint", "partition.metadata"].contains(n)
                    || [".timeindex", ".txnindex", ".snapshot"].iter().any(|s| is_kafka_segment_file(n, s))
                    || is_kafka_segment_file(n, ".index") && !is_legacy_hint(store, n)
            })
            .take(3)
            .collect();
        let batch = self.logs.values().next().and_then(|name| kafka_batch_at_start(store, name).map(|m| (name, m)));
        if kafka_names.is_empty() && batch.is_none() {
            return None;
        }
        let mut what = String::from("a Kafka partition directory");
        if !kafka_names.is_empty() {
            what.push_str(&format!(" (Kafka's files: {})", kafka_names.join(", ")));
        }
        if let Some((name, magic)) = batch {
            what.push_str(&format!("; {name} starts with a Kafka record batch of magic {magic}"));
        }
        let readable = batch.is_none_or(|(_, magic)| magic == 2);
        Some((what, readable))
    }

    /// A short description of what the store holds, for an error saying it is not a log.
    pub fn describe(&self) -> String {
        let total = self.foreign.len() + usize::from(self.checkpoint) + usize::from(self.checkpoint_tmp);
        if total == 0 && self.hints.is_empty() && self.deleted.is_empty() && self.cleaned.is_empty() {
            return "nothing: the directory is empty (no segment file)".into();
        }
        let mut shown: Vec<&str> = self.foreign.iter().map(String::as_str).take(5).collect();
        if self.checkpoint {
            shown.push(CHECKPOINT_FILE);
        }
        let more = if self.foreign.len() > 5 { ", ..." } else { "" };
        format!("no segment file (no <20-digit base>.log); other files: {}{more}", shown.join(", "))
    }
}

/// True for an `<base>.index` file that is this project's own hint from before hints were renamed
/// `.lcindex` (it starts with the hint's magic), not Kafka's offset index. Such files are ignored.
fn is_legacy_hint(store: &dyn SegmentStore, name: &str) -> bool {
    let mut magic = [0u8; 4];
    store.open(name).is_ok_and(|f| f.read_at(0, &mut magic).is_ok()) && &magic == b"LCIX"
}

/// True for `<20 digits><suffix>`.
fn is_kafka_segment_file(name: &str, suffix: &str) -> bool {
    name.strip_suffix(suffix).is_some_and(|stem| stem.len() == 20 && stem.bytes().all(|b| b.is_ascii_digit()))
}

#[expect(clippy::big_endian_bytes, reason = "Kafka's format is big-endian")]
/// The magic byte when the file `name` starts with what a Kafka record batch (magic 2) or message set (magic
/// 0 or 1) starts with, and not with a frame of this format.
fn kafka_batch_at_start(store: &dyn SegmentStore, name: &str) -> Option<u8> {
    let file = store.open(name).ok()?;
    let mut head = [0u8; 61];
    let n = usize::try_from(file.len()).ok()?.min(head.len());
    file.read_at(0, &mut head[..n]).ok()?;
    let head = &head[..n];
    if crate::codec::plausible_frame_start(head, file.len(), None).is_some() {
        return None;
    }
    let magic = *head.get(16)?;
    let length = i32::from_be_bytes(head.get(8..12)?.try_into().ok()?);
    let base = i64::from_be_bytes(head.get(..8)?.try_into().ok()?);
    // A v2 batch header is 61 bytes (49 after the length field); a v0/v1 message at least 14 after it.
    let plausible = match magic {
        2 => length >= 49,
        0 | 1 => length >= 14,
        _ => false,
    };
    (plausible && base >= 0).then_some(magic)
}

/// Validates the committed `.swap` file `name` of the segment based at `base` before it may replace (or
/// remove) segments: a removal marker for this base whose range covers no other `.swap`, or a segment whose
/// every frame decodes, whose offsets increase from `base` and stay below the next segment that survives the
/// swap ([`next_base_after`]; a grouped output covers the segments its group's marker removes). `markers`
/// is [`marker_ranges`] of `layout`.
///
/// # Errors
/// [`Error::Corrupt`] naming the `.swap` file; [`Error::Io`].
pub(crate) fn load_swap(
    store: &dyn SegmentStore,
    layout: &Layout,
    markers: &BTreeMap<u64, u64>,
    base: u64,
    name: &str,
    index_interval: u64,
) -> Result<SwapContent> {
    let corrupt = |position, kind| Error::Corrupt { segment: name.to_owned(), position, kind };
    // The active segment (the last `.log`: no pass ever renames it) never takes part in a swap, so a `.swap`
    // at or past its base, or a marker whose range reaches it, is not what the protocol writes.
    let active_base = layout.logs.last_key_value().map(|(&b, _)| b);
    if active_base.is_none_or(|a| base >= a) {
        return Err(corrupt(0, CorruptKind::SwapOverActive { active_base }));
    }
    let file = store.open(name).map_err(Error::io("open", name))?;
    if file.len() == removal::MARKER_BYTES as u64 || file.is_empty() {
        let mut bytes = vec![0; removal::MARKER_BYTES.min(usize::try_from(file.len()).unwrap_or(0))];
        file.read_at(0, &mut bytes).map_err(Error::io("read", name))?;
        let end = removal::decode(&bytes, base).map_err(|kind| corrupt(0, kind))?;
        if active_base.is_none_or(|a| end > a) {
            return Err(corrupt(0, CorruptKind::SwapOverActive { active_base }));
        }
        if layout.swaps.range(base + 1..end.max(base + 1)).next().is_some() {
            return Err(corrupt(0, CorruptKind::BadRemovalMarker("its range covers another .swap file")));
        }
        return Ok(SwapContent::Removed { end });
    }
    let segment = SealedSegment::load(crate::Format::Native, base, name.to_owned(), Arc::clone(&file), index_interval)?;
    if let (Some(next_base), Some(last)) = (next_base_after(layout, markers, base), segment.last_offset())
        && last >= next_base
    {
        return Err(corrupt(0, CorruptKind::OffsetBeyondNextSegment { next_base, found: last }));
    }
    Ok(SwapContent::Segment(Box::new(segment)))
}

/// The base after `base` among the segments that exist once the swap is completed: the next `.log` or
/// `.swap` base that no removal marker of `markers` removes.
pub(crate) fn next_base_after(layout: &Layout, markers: &BTreeMap<u64, u64>, base: u64) -> Option<u64> {
    let next = |m: &BTreeMap<u64, String>| m.range(base + 1..).map(|(&b, _)| b).find(|&b| !removed_by(markers, b));
    match (next(&layout.logs), next(&layout.swaps)) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The offsets `[base, end)` a validated `.swap` of `layout` replaces: a removal marker its range, a segment
/// everything up to the next segment that survives the swap (a grouped output covers its group).
pub(crate) fn swap_range(
    layout: &Layout,
    markers: &BTreeMap<u64, u64>,
    base: u64,
    content: &SwapContent,
) -> (u64, u64) {
    match content {
        SwapContent::Removed { end } => (base, *end),
        SwapContent::Segment(_) => (base, next_base_after(layout, markers, base).unwrap_or(crate::names::MAX_OFFSET)),
    }
}

/// Proves each validated `.swap` of `swaps` (by base) as [`crate::swap_proof`] says: a segment's records come
/// from the segments it replaces (live or `.deleted`); every record a swap removes is one a pass may drop,
/// counting as kept the records of a removal marker's range that the segment before it holds (the head of
/// its group). One result a swap, in base order.
///
/// # Errors
/// Each result: [`Error::Corrupt`] naming the `.swap` file or a damaged segment; [`Error::Io`].
pub(crate) fn prove_swaps(
    store: &dyn SegmentStore,
    layout: &Layout,
    markers: &BTreeMap<u64, u64>,
    swaps: &BTreeMap<u64, (String, SwapContent)>,
) -> Vec<Result<crate::swap_proof::SwapEffect>> {
    use crate::swap_proof::{Claim, Part, SwapEffect, prove};
    let ranges: Vec<(u64, u64)> = swaps.iter().map(|(&b, (_, c))| swap_range(layout, markers, b, c)).collect();
    let covered = |b: u64| ranges.iter().any(|&(from, to)| (from..to).contains(&b));
    let open = |n: &str| -> Result<Part> { Ok(Part::reads(n, &store.open(n).map_err(Error::io("open", n))?)) };
    // The segments once the swap is complete: its segments, and the live ones it does not replace.
    let survivor = |b: u64| -> Option<Result<Part>> {
        match swaps.get(&b) {
            Some((_, SwapContent::Segment(s))) => Some(Ok(Part::of(s))),
            Some((_, SwapContent::Removed { .. })) => None,
            None => layout.logs.get(&b).filter(|_| !covered(b)).map(|n| open(n)),
        }
    };
    let one = |(&base, (file, content)): (&u64, &(String, SwapContent)), (from, to): (u64, u64)| {
        let mut originals = Vec::new();
        let mut bases: Vec<u64> =
            layout.logs.range(from..to).chain(layout.deleted.range(from..to)).map(|(&b, _)| b).collect();
        bases.sort_unstable();
        bases.dedup();
        for b in bases {
            for n in [layout.logs.get(&b), layout.deleted.get(&b)].into_iter().flatten() {
                originals.push(open(n)?);
            }
        }
        let mut later = Vec::new();
        let mut bases: Vec<u64> = layout.logs.range(to..).chain(layout.deleted.range(to..)).map(|(&b, _)| b).collect();
        bases.extend(swaps.range(to..).map(|(&b, _)| b));
        bases.sort_unstable();
        bases.dedup();
        for b in bases {
            if let Some(p) = survivor(b) {
                later.push(p?);
            }
            if let Some(d) = layout.deleted.get(&b) {
                later.push(open(d)?);
            }
        }
        let (kept, kept_is_output) = match content {
            SwapContent::Segment(s) => (Some(Part::of(s)), true),
            SwapContent::Removed { .. } => {
                let before = layout.logs.range(..base).chain(swaps.range(..base).map(|(b, (n, _))| (b, n)));
                let head = before.map(|(&b, _)| b).filter(|&b| survivor(b).is_some()).max();
                (head.and_then(survivor).transpose()?, false)
            }
        };
        let claim = Claim {
            format: crate::Format::Native,
            file,
            range: (from, to),
            kept,
            kept_is_output,
            originals: &originals,
            later: &later,
        };
        prove(&claim).map(|removed| SwapEffect { file: file.clone(), removed })
    };
    swaps.iter().zip(ranges.iter().copied()).map(|(s, r)| one(s, r)).collect()
}
