//! The producers a Kafka broker holds as active once it has loaded a partition: the state its cleaner reads to
//! keep each producer's last write ([`crate::producers`]). Kafka 4.4 loads it so (`LogLoader.load`,
//! `ProducerStateManager.removeStraySnapshots`, `UnifiedLog.rebuildProducerState`, `truncateAndReload`):
//!
//! 1. Of the `<offset>.snapshot` files, those at a segment's base offset count, and of the others only the
//!    newest, and only when it lies in the last segment (a broker's clean stop writes one at the log end).
//!    Those above the log start offset and at most the log end are candidates.
//! 2. The newest candidate that reads is loaded (one that does not is passed over: the broker deletes it and
//!    tries the next), without the producers that expired by then: no open transaction, and the time since
//!    their last write at least `producer.id.expiration.ms`.
//! 3. The batches from the snapshot's offset to the log end are replayed over it (from the batch holding that
//!    offset).
//! 4. With no candidate, a broker that was stopped cleanly starts with no producer at all (it writes empty
//!    snapshots instead of reading the log); after an unclean stop it replays the log from its start.
//! 5. After an unclean stop a broker first recovers every segment from the one holding its recovery point
//!    (`LogLoader.recoverLog`, each segment with a producer state of its own, before step 1): the state at each
//!    recovered segment's base is loaded from the newest snapshot above the log start and at most that base
//!    (for the first, any found there, the batches after it replayed; for the others, the one the previous
//!    recovery saved), expired producers dropped, or starts empty when there is none (snapshots at or below the
//!    log start are deleted); then all the segment's batches are replayed, below the log start too. The final
//!    load reads what the last recovery saved at the log end.
//!
//! The broker expires producers again every `producer.id.expiration.check.interval.ms` while it runs; a state
//! loaded here is the one a broker has just after it started (as Kafka's cleaner run offline on the directory
//! sees it).

use crate::error::{Error, Result};
use crate::producers::{ActiveProducers, ProducerFiles, ProducerLoad, ProducerState};
use crate::reader::LogSnapshot;
use crate::storage::{SegmentSource, SegmentStore};
use crate::txn::SegmentTxns;

use crate::format::kafka::producer_snapshot::{ProducerEntry, read_snapshot};

pub use crate::producers::DEFAULT_PRODUCER_ID_EXPIRATION_MS;

/// A snapshot file larger than this is passed over unread (46 bytes a producer: far more producers than any
/// broker tracks for one partition).
const MAX_SNAPSHOT_BYTES: u64 = 256 << 20;

/// The snapshot offset in a file name `<20 digits>.snapshot`.
fn snapshot_offset(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(".snapshot")?;
    (stem.len() == 20 && stem.bytes().all(|b| b.is_ascii_digit())).then(|| stem.parse().ok()).flatten()
}

/// The snapshot offsets a broker would consider, newest first: above `log_start`, at most `ceiling`, and with
/// the segments' `bases`, only those its load keeps (step 1 of the module docs; a recovery, which runs before,
/// considers them all).
fn candidates(names: &[String], bases: Option<&[u64]>, log_start: u64, ceiling: u64) -> Vec<u64> {
    let mut offsets: Vec<u64> = names.iter().filter_map(|n| snapshot_offset(n)).collect();
    offsets.sort_unstable();
    offsets.dedup();
    if let Some(bases) = bases {
        let is_base = |o: &u64| bases.binary_search(o).is_ok();
        let newest_stray = offsets.iter().copied().filter(|o| !is_base(o)).max();
        let last_base = bases.last().copied();
        offsets.retain(|o| is_base(o) || (Some(*o) == newest_stray && last_base.is_some_and(|b| *o >= b)));
    }
    offsets.retain(|o| *o > log_start && *o <= ceiling);
    offsets.reverse();
    offsets
}

/// The entries of the snapshot `name`, or `None` when it cannot be read (Kafka deletes such a file with a
/// warning and tries the next).
fn read_entries(store: &dyn SegmentStore, name: &str) -> Result<Option<Vec<ProducerEntry>>> {
    let file = match store.open(name) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("open", name)(e)),
    };
    let len = file.len();
    if len > MAX_SNAPSHOT_BYTES {
        return Ok(None);
    }
    let mut bytes = vec![0u8; len as usize];
    file.read_at(0, &mut bytes).map_err(Error::io("read", name))?;
    Ok(read_snapshot(&bytes).ok())
}

/// The producers a broker loading the partition of `snapshot` (in `store`, beside `files`) holds as active at
/// the clock and settings of `load`. See the module docs.
///
/// # Errors
/// [`Error::Io`] reading a snapshot or a segment; [`Error::Corrupt`] for a batch header that does not parse.
pub fn load_active_producers(
    store: &dyn SegmentStore,
    snapshot: &LogSnapshot,
    files: &ProducerFiles,
    load: &ProducerLoad,
) -> Result<ActiveProducers> {
    let closed = snapshot.closed();
    let mut bases: Vec<u64> = closed.iter().map(|s| s.base()).collect();
    bases.push(snapshot.active_base());
    let log_end = snapshot.next_offset();
    let log_start = files.recorded_log_start.unwrap_or(0).max(bases[0]);
    let recovery_point = files.recovery_point.unwrap_or(0);
    if files.clean_shutdown || recovery_point >= log_end {
        let (mut state, from) = match newest_snapshot(store, files, Some(&bases), log_start, log_end, load)? {
            Some(found) => found,
            None if files.clean_shutdown => return Ok(ActiveProducers::default()),
            None => (ActiveProducers::default(), log_start),
        };
        replay_producers(&mut state, snapshot, from)?;
        return Ok(state);
    }
    // Recovery, segment by segment from the one holding the recovery point, each with a state of its own: the
    // state at the segment's base comes from the newest snapshot above the log start and at most that base
    // (for the first, one found there, the batches after it replayed up to the base; for the next ones, the
    // one the previous recovery saved at its end), expired producers dropped, or starts empty when there is
    // none (a snapshot at or below the log start is deleted); then every batch of the segment is replayed.
    let first_recovered = bases.iter().copied().take_while(|&b| b <= recovery_point).last().unwrap_or(bases[0]);
    let mut state = ActiveProducers::default();
    if first_recovered > log_start {
        let (found, from) = newest_snapshot(store, files, None, log_start, first_recovered, load)?
            .unwrap_or((ActiveProducers::default(), log_start));
        state = found;
        for s in closed.iter().filter(|s| s.base() < first_recovered && s.next_offset() > from) {
            if s.base() >= from {
                state.apply(&s.transactions()?.producers);
            } else {
                state.apply(&SegmentTxns::scan_from(s.source(), s.name(), s.data_len(), from)?.producers);
            }
        }
    }
    for s in closed.iter().filter(|s| s.base() >= first_recovered) {
        if s.base() > first_recovered {
            saved_and_loaded(&mut state, s.base(), log_start, load);
        }
        state.apply(&s.transactions()?.producers);
    }
    let active = snapshot.active_base();
    if active > first_recovered {
        saved_and_loaded(&mut state, active, log_start, load);
    }
    let active_source: &SegmentSource = snapshot.active_source();
    state.apply(&SegmentTxns::scan(active_source, snapshot.active_name(), snapshot.active_len())?.producers);
    // The final load reads the snapshot the last recovery saved at the log end.
    saved_and_loaded(&mut state, log_end, log_start, load);
    Ok(state)
}

/// A state saved as a snapshot at `offset` and loaded again: its expired producers dropped, or nothing left
/// when the snapshot lies at or below the log start (a broker deletes those).
fn saved_and_loaded(state: &mut ActiveProducers, offset: u64, log_start: u64, load: &ProducerLoad) {
    if offset <= log_start {
        *state = ActiveProducers::default();
    } else {
        state.expire(load.now_ms, load.expiration_ms);
    }
}

/// The newest readable snapshot above `log_start` and at most `ceiling`, loaded (expired producers dropped),
/// with its offset. With `bases`, only those a broker's load keeps count (step 1 of the module docs).
fn newest_snapshot(
    store: &dyn SegmentStore,
    files: &ProducerFiles,
    bases: Option<&[u64]>,
    log_start: u64,
    ceiling: u64,
    load: &ProducerLoad,
) -> Result<Option<(ActiveProducers, u64)>> {
    for offset in candidates(&files.snapshots, bases, log_start, ceiling) {
        let name = format!("{offset:020}.snapshot");
        if let Some(entries) = read_entries(store, &name)? {
            let mut state = ActiveProducers::from_states(entries.iter().map(|e| {
                (
                    e.producer_id,
                    ProducerState {
                        epoch: e.producer_epoch,
                        last_data_offset: u64::try_from(e.last_offset).ok(),
                        last_timestamp: e.timestamp,
                        txn_open: e.current_txn_first_offset >= 0,
                    },
                )
            }));
            state.expire(load.now_ms, load.expiration_ms);
            return Ok(Some((state, offset)));
        }
    }
    Ok(None)
}

/// Moves `state` over the batches of `snapshot` whose last offset is `from` or later: segments wholly past it
/// from their cached steps, the one holding it from the batch holding it.
///
/// # Errors
/// [`Error::Io`] reading a segment; [`Error::Corrupt`] for a batch header that does not parse.
pub fn replay_producers(state: &mut ActiveProducers, snapshot: &LogSnapshot, from: u64) -> Result<()> {
    for s in snapshot.closed().iter().filter(|s| s.next_offset() > from) {
        if s.base() >= from {
            state.apply(&s.transactions()?.producers);
        } else {
            state.apply(&SegmentTxns::scan_from(s.source(), s.name(), s.data_len(), from)?.producers);
        }
    }
    if snapshot.next_offset() > from {
        let active: &SegmentSource = snapshot.active_source();
        let at = if snapshot.active_base() >= from { 0 } else { from };
        state.apply(&SegmentTxns::scan_from(active, snapshot.active_name(), snapshot.active_len(), at)?.producers);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(offsets: &[u64]) -> Vec<String> {
        offsets.iter().map(|o| format!("{o:020}.snapshot")).chain(["00000000000000000000.log".into()]).collect()
    }

    #[test]
    fn the_snapshots_a_broker_keeps_and_reads() {
        let bases = [0, 100, 200];
        // At segment bases, and the newest stray only when it lies in the last segment.
        let b = Some(&bases[..]);
        assert_eq!(candidates(&names(&[100, 200, 250]), b, 0, 300), vec![250, 200, 100]);
        assert_eq!(candidates(&names(&[100, 150, 200]), b, 0, 300), vec![200, 100]);
        assert_eq!(candidates(&names(&[120, 150, 250]), b, 0, 300), vec![250]);
        // Above the log start, at most the log end.
        assert_eq!(candidates(&names(&[0, 100, 200, 301]), b, 100, 300), vec![200]);
        assert_eq!(candidates(&names(&[300]), b, 0, 300), vec![300]);
        // A recovery considers every snapshot.
        assert_eq!(candidates(&names(&[120, 150, 250]), None, 0, 200), vec![150, 120]);
        assert!(snapshot_offset("123.snapshot").is_none());
    }
}
