//! Repairing a Kafka partition directory: its segments' damaged ranges, a `.swap` that cannot be completed,
//! and `.index` / `.timeindex` files that disagree with their segments, with a broker's own recovery rules
//! (`LogLoader`, see [`crate::protocol::kafka::KafkaLayout`]) run where the native repair runs its own.
//!
//! A cut segment gets its indexes rewritten from the batches it keeps; a segment whose indexes disagree with it
//! (a length that is no whole number of entries, entries out of order, past the end of the data, or naming a
//! position where no batch starts) gets them rebuilt. Missing indexes are left missing: a broker rebuilds
//! them on load. The log directory's `cleaner-offset-checkpoint` is the broker's, shared by every partition,
//! and is never changed here.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::format::Format;
use crate::format::kafka::files::{SegmentFile, Stage, name, write_indexes};
use crate::format::kafka::index::{KafkaIndexes, OFFSET_ENTRY_BYTES, TIME_ENTRY_BYTES, offset_entry, time_entry};
use crate::format::kafka::txn::{SegmentTxns, TxnState, index_disagreement};
use crate::protocol::kafka::recovery::{self as open, KafkaLayout};
use crate::protocol::kafka::txn_index::read_index_file;
use crate::repair::{
    Backups, RepairAction, RepairOutcome, RepairPlan, Rewrite, damage, delete_quietly, rewrite_without,
};
use crate::scan::{SegmentScan, SegmentSource};
use crate::segment::Stamp;
use crate::storage::{Segment, SegmentStore};

/// The `.swap` file an error names, when it is one.
fn swap_named(e: &Error) -> Option<&str> {
    match e {
        Error::Corrupt { segment, .. } | Error::CorruptNotTorn { segment, .. } if segment.ends_with(".swap") => {
            Some(segment)
        }
        _ => None,
    }
}

/// Lists what a repair of the Kafka partition in `store` would do, rewriting indexes with `config`'s index
/// interval. Reads only.
///
/// # Errors
/// [`Error::NotALog`] for a directory holding a native log; [`Error::Io`] when the store cannot be read.
pub(crate) fn plan_kafka_with(store: &dyn SegmentStore, config: &LogConfig) -> Result<RepairPlan> {
    let layout = KafkaLayout::scan(store)?;
    let mut plan = RepairPlan {
        format: Format::Kafka,
        index_interval_bytes: config.index_interval_bytes,
        ..RepairPlan::default()
    };
    for (n, reason) in &layout.unusable {
        plan.cannot_fix.push(format!("{n}: {reason}; move it out of the directory by hand"));
    }
    if let Err(e @ Error::NotALog { .. }) = open::usable(store, &layout) {
        return Err(e);
    }
    let live = layout.files(SegmentFile::Log, Stage::Live);
    // The segments as recovery will leave them: `(base, name to read now)`.
    let mut segments: BTreeMap<u64, String> = BTreeMap::new();
    match open::plan(store, &layout, config) {
        Ok(recovery) => {
            for (&b, n) in &live {
                if !recovery.covers(b) {
                    segments.insert(b, n.clone());
                }
            }
            for (b, s) in &recovery.swapped {
                segments.insert(*b, s.name().to_owned());
            }
        }
        Err(e) => {
            let Some(file) = swap_named(&e) else { return Err(e) };
            // The pending swap cannot be completed: all of it is set aside and the segments it was to replace
            // come back from `.deleted` (the pass's work is lost, none of the records it read).
            let restored: Vec<(u64, String)> = layout
                .files(SegmentFile::Log, Stage::Deleted)
                .into_iter()
                .filter(|(b, _)| !live.contains_key(b))
                .collect();
            let segment = if restored.is_empty() {
                "the segments it was to replace are kept".to_owned()
            } else {
                let names: Vec<String> =
                    restored.iter().map(|(b, _)| name(*b, SegmentFile::Log, Stage::Live)).collect();
                format!("{} restored from .deleted", names.join(", "))
            };
            plan.actions.push(RepairAction::DiscardSwap { file: file.to_owned(), reason: e.to_string(), segment });
            segments.extend(live.iter().map(|(&b, n)| (b, n.clone())));
            segments.extend(restored);
        }
    }
    let active_base = segments.last_key_value().map(|(&b, _)| b);
    let mut floor: Option<u64> = None;
    // Each segment's file and where its data ends, for the transaction indexes.
    let mut data: Vec<(u64, String, u64)> = Vec::new();
    for (&base, now) in &segments {
        let file = store.open(now).map_err(Error::io("open", now))?;
        let d = damage::scan(Format::Kafka, base, now, &file, floor)?;
        data.push((base, now.clone(), d.data_end));
        let segment = name(base, SegmentFile::Log, Stage::Live);
        if let Some((at, why)) = &d.cannot_judge {
            plan.cannot_fix.push(format!("{segment} at byte {at}: {why}"));
        }
        if let (Some(first), Some(f)) = (d.first, floor)
            && first <= f
        {
            plan.cannot_fix.push(format!("{segment}: its offsets overlap the segment before it"));
        }
        floor = d.last.or(floor);
        let active = Some(base) == active_base;
        // A torn tail of the active segment alone is the next open's to cut, as a broker's recovery cuts it.
        let torn_only = active && d.ranges.len() == 1 && d.ranges[0].1 >= d.data_end;
        if !d.ranges.is_empty() && !torn_only {
            let bytes = d.ranges.iter().map(|(s, e)| e - s).sum();
            let next_base = segments.range(base + 1..).next().map(|(&b, _)| b);
            plan.actions.push(RepairAction::CutRanges {
                segment,
                ranges: d.ranges.clone(),
                offsets: d.dropped(next_base),
                bytes,
                records_kept: d.records,
                active,
            });
        } else if !active
            && d.ranges.is_empty()
            && let Some(reason) = indexes_disagree(store, base, &file, &d)?
        {
            plan.actions.push(RepairAction::RebuildIndexes { segment, reason });
        }
    }
    // The transaction indexes are judged against the batches once nothing is left to cut or set aside.
    if plan.actions.iter().all(|a| matches!(a, RepairAction::RebuildIndexes { .. })) {
        txn_index_actions(store, &data, &mut plan)?;
    }
    Ok(plan)
}

/// The aborted transactions of the partition whose segments are `data` (`(base, file, data end)`, in order),
/// as a broker's recovery derives them from the batches; `None` when a segment's headers do not walk.
fn derived_transactions(store: &dyn SegmentStore, data: &[(u64, String, u64)]) -> Result<Option<TxnState>> {
    let mut segments = Vec::with_capacity(data.len());
    for (_, n, end) in data {
        let source = SegmentSource::Reads(store.open(n).map_err(Error::io("open", n))?);
        match SegmentTxns::scan(&source, n, *end) {
            Ok(t) => segments.push(t),
            Err(Error::Io { .. }) | Err(Error::Corrupt { .. }) => return Ok(None),
            Err(e) => return Err(e),
        }
    }
    Ok(Some(TxnState::fold(segments.iter(), u64::MAX)))
}

/// Each segment's `.txnindex` that does not parse or disagrees with the markers ([`index_disagreement`]):
/// rebuilt from the batches, as a broker's recovery would. A missing one is left to the next compaction (a
/// `check` notice).
fn txn_index_actions(store: &dyn SegmentStore, data: &[(u64, String, u64)], plan: &mut RepairPlan) -> Result<()> {
    let Some(mut txns) = derived_transactions(store, data)? else { return Ok(()) };
    for (i, &(base, _, _)) in data.iter().enumerate() {
        let end = data.get(i + 1).map_or(u64::MAX, |&(b, _, _)| b);
        let file = name(base, SegmentFile::TxnIndex, Stage::Live);
        let reason = match read_index_file(store, &file) {
            Ok(None) => continue,
            Err(Error::Corrupt { position, kind: crate::error::CorruptKind::Malformed(what), .. }) => {
                Some(format!("{what}, at byte {position}"))
            }
            Err(e) => return Err(e),
            Ok(Some(entries)) => match index_disagreement(base, end, &entries, &txns) {
                Some(d) => Some(d.to_string()),
                None => {
                    for e in &entries {
                        txns.narrow(e.producer_id, e.last_offset, e.first_offset);
                    }
                    None
                }
            },
        };
        if let Some(reason) = reason {
            plan.actions.push(RepairAction::RebuildTxnIndex { file, reason });
        }
    }
    Ok(())
}

/// Writes the `.txnindex` of the segment based at `base` from the partition's batches (the aborted
/// transactions with data whose ABORT marker the segment holds, in marker order, each with the last stable
/// offset recovery gives it), through a temporary file renamed over the old one.
fn rebuild_txn_index(store: &dyn SegmentStore, base: u64, stamp: u64) -> Result<()> {
    let layout = KafkaLayout::scan(store)?;
    let mut data = Vec::new();
    for (b, n) in layout.files(SegmentFile::Log, Stage::Live) {
        let end = store.open(&n).map_err(Error::io("open", &n))?.len();
        data.push((b, n, end));
    }
    let Some(txns) = derived_transactions(store, &data)? else { return Ok(()) };
    let end = data.iter().map(|&(b, _, _)| b).find(|&b| b > base).unwrap_or(u64::MAX);
    let mut bytes = Vec::new();
    for a in txns.aborted.iter().filter(|a| (base..end).contains(&a.last_offset) && a.first_offset < a.last_offset) {
        a.encode(&mut bytes);
    }
    let file = name(base, SegmentFile::TxnIndex, Stage::Live);
    let temp = format!("repair-{stamp}.{file}.new");
    delete_quietly(store, &temp)?;
    let out = store.create(&temp).map_err(Error::io("create", &temp))?;
    out.append(&bytes).map_err(Error::io("append", &temp))?;
    out.sync().map_err(Error::io("sync", &temp))?;
    store.rename(&temp, &file).map_err(Error::io("rename", &temp))?;
    store.sync_dir().map_err(Error::io("sync directory", &file))
}

/// Bytes of index entries read at a time: a whole number of both entry sizes (8 and 12).
const INDEX_CHUNK: usize = 24 << 15;

/// Reads the index file `name` a whole number of `entry`-byte entries at a time; `Ok(None)` when it is
/// missing, `Err` text when its length is no whole number of entries.
fn for_each_entry(
    store: &dyn SegmentStore,
    name: &str,
    entry: usize,
    mut f: impl FnMut(&[u8]) -> std::result::Result<(), String>,
) -> Result<Option<std::result::Result<(), String>>> {
    let Ok(file) = store.open(name) else { return Ok(None) };
    let len = file.len();
    if len % entry as u64 != 0 {
        return Ok(Some(Err(format!("{name} is {len} bytes, not a whole number of {entry}-byte entries"))));
    }
    let mut chunk = vec![0u8; usize::try_from(len).unwrap_or(usize::MAX).min(INDEX_CHUNK)];
    let mut at = 0u64;
    while at < len {
        let n = usize::try_from(len - at).unwrap_or(usize::MAX).min(chunk.len());
        file.read_at(at, &mut chunk[..n]).map_err(Error::io("read", name))?;
        for e in chunk[..n].chunks_exact(entry) {
            if let Err(why) = f(e) {
                return Ok(Some(Err(why)));
            }
        }
        at += n as u64;
    }
    Ok(Some(Ok(())))
}

/// How the indexes of the closed segment `file` (based at `base`, scanned as `d`) disagree with it, if they do.
fn indexes_disagree(
    store: &dyn SegmentStore,
    base: u64,
    file: &Arc<dyn Segment>,
    d: &damage::Damage,
) -> Result<Option<String>> {
    let last = d.last.unwrap_or(base);
    let index = name(base, SegmentFile::OffsetIndex, Stage::Live);
    let mut previous: Option<(u64, u64)> = None;
    let mut batch = Vec::new();
    let mut io_error = None;
    let offsets = for_each_entry(store, &index, OFFSET_ENTRY_BYTES, |e| {
        let (relative, position) = e.try_into().map(offset_entry).unwrap_or_default();
        let position = u64::from(position);
        let offset = base.saturating_add_signed(i64::from(relative));
        if relative < 0 || offset > last {
            return Err(format!("{index} has an entry for offset {offset}, outside {base}..={last}"));
        }
        if previous.is_some_and(|(o, p)| offset <= o || position <= p) {
            return Err(format!("{index} has entries out of order at offset {offset}"));
        }
        previous = Some((offset, position));
        // The entry must name where a batch starts, at or below its offset.
        match batch_at(file, position, d.data_end, &mut batch) {
            Ok(Some(first)) if first <= offset => Ok(()),
            Ok(_) => Err(format!("{index} names byte {position} for offset {offset}, where no such batch starts")),
            Err(e) => {
                io_error = Some(e);
                Err(String::new())
            }
        }
    })?;
    if let Some(e) = io_error {
        return Err(e);
    }
    if let Some(Err(why)) = offsets {
        return Ok(Some(why));
    }
    let time_index = name(base, SegmentFile::TimeIndex, Stage::Live);
    let mut previous: Option<(i64, u64)> = None;
    let times = for_each_entry(store, &time_index, TIME_ENTRY_BYTES, |e| {
        let (timestamp, relative) = e.try_into().map(time_entry).unwrap_or_default();
        let offset = base.saturating_add_signed(i64::from(relative));
        if relative < 0 || offset > last {
            return Err(format!("{time_index} has an entry for offset {offset}, outside {base}..={last}"));
        }
        if previous.is_some_and(|(pt, po)| timestamp <= pt || offset < po) {
            return Err(format!("{time_index} has entries out of order at timestamp {timestamp}"));
        }
        previous = Some((timestamp, offset));
        Ok(())
    })?;
    Ok(times.and_then(Result::err))
}

/// The base offset of the whole, valid batch starting at `position` of `file` (below `end`), if one does.
fn batch_at(file: &Arc<dyn Segment>, position: u64, end: u64, buf: &mut Vec<u8>) -> Result<Option<u64>> {
    let source = SegmentSource::Reads(Arc::clone(file));
    match crate::scan::batch_bytes_at(Format::Kafka, "", &source, position, end, buf) {
        Ok(Some(bytes)) => Ok(Format::Kafka.parse(bytes, true).ok().map(|b| b.base_offset)),
        Ok(None) | Err(Error::Corrupt { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes the `.index` and `.timeindex` of the segment `segment` (based at `base`) from its batches.
fn rebuild_indexes(store: &dyn SegmentStore, base: u64, segment: &str, interval: u64) -> Result<()> {
    let file = store.open(segment).map_err(Error::io("open", segment))?;
    let len = file.len();
    let source = SegmentSource::Reads(file);
    let mut indexes = KafkaIndexes::new(base, interval);
    let mut scan = SegmentScan::new(Format::Kafka, segment, &source, 0, len, true);
    while let Some(window) = scan.next_window()? {
        for item in window.batches() {
            let placed = item?;
            indexes.on_batch(&Stamp::of(&placed.batch), placed.position, placed.batch.len() as u64);
        }
    }
    write_indexes(store, base, &indexes.finish(), Stage::Live)
}

/// Carries out a Kafka `plan` (see [`crate::repair::apply`]).
pub(crate) fn apply(store: &dyn SegmentStore, plan: &RepairPlan, stamp: u64) -> Result<RepairOutcome> {
    let mut backups = Backups::new(store, stamp);
    let mut done = Vec::new();
    // 1. A swap that cannot be completed goes (a copy of its bad segment kept), and what it replaced comes back.
    for action in &plan.actions {
        let RepairAction::DiscardSwap { file, .. } = action else { continue };
        backups.keep_file(file)?;
        let layout = KafkaLayout::scan(store)?;
        let live_now = |base: u64, f: SegmentFile| store.file_id(&name(base, f, Stage::Live)).is_ok();
        for (&base, files) in &layout.segments {
            for ((f, stage), n) in files {
                if *stage == Stage::Deleted && !live_now(base, *f) {
                    store.rename(n, &name(base, *f, Stage::Live)).map_err(Error::io("rename", n))?;
                }
            }
        }
        crate::open::sync_dir(store)?;
        for (_, n) in layout.names_at(Stage::Swap).into_iter().chain(layout.names_at(Stage::Cleaned)) {
            delete_quietly(store, &n)?;
        }
        crate::open::sync_dir(store)?;
        done.push(action.clone());
    }
    // 2. What is left is finished as a broker (and our next open) finishes it.
    open::recover_files(store, &KafkaLayout::scan(store)?, &LogConfig::default())?;
    // 3. Damaged ranges are cut, one segment at a time, each replaced atomically, its indexes rewritten.
    for action in &plan.actions {
        match action {
            RepairAction::CutRanges { segment, ranges, .. } => {
                let Some(base) = base_of(segment) else { continue };
                let file = store.open(segment).map_err(Error::io("open", segment))?;
                for &(start, end) in ranges {
                    backups.keep_range(&format!("{segment}.{start}-{end}"), &file, start, end)?;
                }
                // No index may describe the old segment once the new one stands under its name.
                for f in [SegmentFile::OffsetIndex, SegmentFile::TimeIndex] {
                    delete_quietly(store, &name(base, f, Stage::Live))?;
                }
                crate::open::sync_dir(store)?;
                let temp = format!("repair-{stamp}.{segment}.new");
                let rewrite =
                    Rewrite::new(Format::Kafka, base, segment, ranges, file.len(), &temp, plan.index_interval_bytes);
                let (_, files) = rewrite_without(store, &rewrite)?;
                store.rename(&temp, segment).map_err(Error::io("rename", &temp))?;
                crate::open::sync_dir(store)?;
                let files = match files {
                    Some(crate::segment::SideIndexFiles::Kafka(f)) => f,
                    None => crate::format::kafka::index::KafkaIndexFiles::default(),
                };
                write_indexes(store, base, &files, Stage::Live)?;
                crate::open::sync_dir(store)?;
            }
            RepairAction::RebuildIndexes { segment, .. } => {
                let Some(base) = base_of(segment) else { continue };
                rebuild_indexes(store, base, segment, plan.index_interval_bytes)?;
                crate::open::sync_dir(store)?;
            }
            RepairAction::RebuildTxnIndex { file, .. } => {
                let crate::format::kafka::files::KafkaName::Segment { base, .. } =
                    crate::format::kafka::files::classify(file)
                else {
                    continue;
                };
                backups.keep_file(file)?;
                rebuild_txn_index(store, base, stamp)?;
            }
            RepairAction::DiscardSwap { .. } | RepairAction::ResetCheckpoint { .. } | RepairAction::DropHint { .. } => {
                continue;
            }
        }
        done.push(action.clone());
    }
    let mut outcome = backups.outcome;
    outcome.actions = done;
    Ok(outcome)
}

/// The base offset of the segment file `segment`.
fn base_of(segment: &str) -> Option<u64> {
    match crate::format::kafka::files::classify(segment) {
        crate::format::kafka::files::KafkaName::Segment { base, file: SegmentFile::Log, stage: Stage::Live } => {
            Some(base)
        }
        _ => None,
    }
}
