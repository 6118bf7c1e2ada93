//! What a broker knows of each producer of a partition, whatever the format: its epoch, the last offset of its
//! last data batch and the time of its last write, as replaying the partition's batches in order leaves them.
//! A format with no producers (the native format) has none.
//!
//! The rules are Kafka's `ProducerStateEntry`: a data batch sets the producer's epoch and becomes its last data
//! batch; a transaction marker sets its epoch; and whenever a batch or marker comes with an epoch other than
//! the producer's current one, the producer's earlier data batches are forgotten. So under Kafka's transaction
//! version 2, where every marker bumps the epoch, a producer whose last write was a marker has no last data
//! batch. An emptied marker (no record) is no write at all.
//!
//! A cleaner keeps, emptied if need be, the batch that holds a producer's last write ([`ActiveProducers::
//! keeps_empty`]): its last data batch, or, when it has none, its markers of its current epoch. Without it the
//! producer's sequence and epoch would be lost to whoever rebuilds the state from the batches.
//!
//! A segment's writes are folded once into a [`ProducerSteps`] a producer, kept with the segment
//! ([`crate::txn::SegmentTxns::producers`]), and [`ActiveProducers::apply`] moves a state over them: replaying a
//! partition from any segment costs one step a producer a segment, not a read of its batches.
//!
//! ```
//! use log_core::producers::{ActiveProducers, StepsBuilder};
//!
//! // Producer 7 writes a data batch (offsets 10-12) at epoch 3, then a marker that bumps the epoch to 4.
//! let mut segment = StepsBuilder::default();
//! segment.data(7, 3, 12, 1_000, false);
//! segment.marker(7, 4, 1_001);
//! let mut state = ActiveProducers::default();
//! state.apply(&segment.finish());
//! // Its data batch is forgotten (another epoch came after it); its marker of epoch 4 holds its last write.
//! assert!(!state.keeps_empty(7, 3, 12, false));
//! assert!(state.keeps_empty(7, 4, 13, true));
//! ```

use std::collections::HashMap;

/// How long a producer stays active after its last write, unless it has a transaction open (Kafka's
/// `producer.id.expiration.ms`, one day by default).
pub const DEFAULT_PRODUCER_ID_EXPIRATION_MS: i64 = 86_400_000;

/// What a broker loading a partition's producer state reads besides the batches, found as the log is opened
/// (so that loading it later reads no directory).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProducerFiles {
    /// The names of the producer snapshots beside the segments (Kafka: `<offset>.snapshot`).
    pub snapshots: Vec<String>,
    /// True when the broker was stopped cleanly (Kafka: its log directory holds `.kafka_cleanshutdown`).
    pub clean_shutdown: bool,
    /// The log start offset the broker recorded, if any.
    pub recorded_log_start: Option<u64>,
    /// The recovery point the broker recorded, if any: after an unclean stop a broker recovers every segment
    /// from the one holding it (from the log start when none was recorded).
    pub recovery_point: Option<u64>,
}

/// How a partition's producer state is loaded: the clock and settings of the broker loading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerLoad {
    /// The broker's clock, in ms since the epoch: producers whose last write is `expiration_ms` or more
    /// before it are expired.
    pub now_ms: i64,
    /// `producer.id.expiration.ms`.
    pub expiration_ms: i64,
}

/// How one segment moves one producer's state on (a fold of its writes in the segment, in offset order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerSteps {
    /// The producer.
    pub producer_id: i64,
    /// The epoch of its first write in the segment.
    pub first_epoch: i16,
    /// True when every write of the segment has `first_epoch`.
    pub one_epoch: bool,
    /// The epoch of its last write in the segment.
    pub last_epoch: i16,
    /// The time of its last write: a data batch's max timestamp, a marker's record timestamp.
    pub last_timestamp: i64,
    /// The last offset of its last data batch in the segment, unless a later write changed the epoch.
    pub last_data_offset: Option<u64>,
    /// True when the segment holds a data batch of the producer.
    pub has_data: bool,
    /// Whether the producer has a transaction open after the segment: its last transactional write there was
    /// a data batch (`Some(true)`) or a marker (`Some(false)`); `None` when it wrote none there.
    pub txn_open: Option<bool>,
}

/// Folds a segment's writes, in offset order, into one [`ProducerSteps`] a producer.
#[derive(Debug, Default)]
pub struct StepsBuilder {
    steps: HashMap<i64, ProducerSteps>,
}

impl StepsBuilder {
    fn step(&mut self, producer_id: i64, epoch: i16, timestamp: i64) -> &mut ProducerSteps {
        let s = self.steps.entry(producer_id).or_insert(ProducerSteps {
            producer_id,
            first_epoch: epoch,
            one_epoch: true,
            last_epoch: epoch,
            last_timestamp: timestamp,
            last_data_offset: None,
            has_data: false,
            txn_open: None,
        });
        s.one_epoch &= epoch == s.first_epoch;
        if epoch != s.last_epoch {
            s.last_data_offset = None;
        }
        s.last_epoch = epoch;
        s.last_timestamp = timestamp;
        s
    }

    /// A data batch of `producer_id` at `epoch` whose last offset is `last_offset` (an emptied one too: it
    /// keeps its offsets) and whose max timestamp is `max_timestamp`; a `transactional` one opens a
    /// transaction unless one is open.
    pub fn data(&mut self, producer_id: i64, epoch: i16, last_offset: u64, max_timestamp: i64, transactional: bool) {
        let s = self.step(producer_id, epoch, max_timestamp);
        s.last_data_offset = Some(last_offset);
        s.has_data = true;
        if transactional {
            s.txn_open = Some(true);
        }
    }

    /// A transaction marker (a control batch with its record) of `producer_id` at `epoch`, its record written
    /// at `timestamp`: it ends the producer's transaction.
    pub fn marker(&mut self, producer_id: i64, epoch: i16, timestamp: i64) {
        self.step(producer_id, epoch, timestamp).txn_open = Some(false);
    }

    /// The steps, by producer.
    pub fn finish(self) -> Vec<ProducerSteps> {
        let mut v: Vec<ProducerSteps> = self.steps.into_values().collect();
        v.sort_unstable_by_key(|s| s.producer_id);
        v
    }
}

/// One producer's state (what Kafka's cleaner reads of it: `LastRecord`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerState {
    /// Its current epoch.
    pub epoch: i16,
    /// The last offset of its last data batch, if the epoch has not changed since.
    pub last_data_offset: Option<u64>,
    /// The time of its last write.
    pub last_timestamp: i64,
    /// True while it has a transaction open (it never expires then).
    pub txn_open: bool,
}

/// The producers a broker holds as active, by id. See the module docs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ActiveProducers {
    producers: HashMap<i64, ProducerState>,
}

impl ActiveProducers {
    /// A state loaded as it was saved (a broker's producer snapshot).
    pub fn from_states(states: impl IntoIterator<Item = (i64, ProducerState)>) -> ActiveProducers {
        ActiveProducers { producers: states.into_iter().collect() }
    }

    /// Moves the state over one segment's writes.
    pub fn apply(&mut self, steps: &[ProducerSteps]) {
        for s in steps {
            // A producer first seen here starts with no epoch (Kafka: -1), which no write carries.
            let p = self.producers.entry(s.producer_id).or_insert(ProducerState {
                epoch: -1,
                last_data_offset: None,
                last_timestamp: -1,
                txn_open: false,
            });
            if let Some(open) = s.txn_open {
                p.txn_open = open;
            }
            if s.has_data {
                p.last_data_offset = s.last_data_offset;
            } else if !(s.one_epoch && s.first_epoch == p.epoch) {
                p.last_data_offset = None;
            }
            p.epoch = s.last_epoch;
            p.last_timestamp = s.last_timestamp;
        }
    }

    /// Forgets the producers that expired by `now_ms`: no transaction open, and their last write
    /// `expiration_ms` or more before it (Kafka's `ProducerStateManager.isProducerExpired`).
    pub fn expire(&mut self, now_ms: i64, expiration_ms: i64) {
        self.producers.retain(|_, p| !is_expired(p, now_ms, expiration_ms));
    }

    /// The state of `producer_id`, if it is active.
    pub fn get(&self, producer_id: i64) -> Option<&ProducerState> {
        self.producers.get(&producer_id)
    }

    /// Active producers.
    pub fn len(&self) -> usize {
        self.producers.len()
    }

    /// True when no producer is active.
    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }

    /// True when the batch of `producer_id` at `epoch` ending at `last_offset` (a marker when `control`) holds
    /// the producer's last write, so a cleaner keeps it, emptied if need be (Kafka's cleaner: its last data
    /// batch by last offset; when it has none, a control batch of its current epoch).
    pub fn keeps_empty(&self, producer_id: i64, epoch: i16, last_offset: u64, control: bool) -> bool {
        self.producers.get(&producer_id).is_some_and(|p| match p.last_data_offset {
            Some(last) => last == last_offset,
            None => control && epoch == p.epoch,
        })
    }
}

/// True when a producer in state `p` has expired by `now_ms` (see [`ActiveProducers::expire`]).
pub fn is_expired(p: &ProducerState, now_ms: i64, expiration_ms: i64) -> bool {
    !p.txn_open && now_ms.saturating_sub(p.last_timestamp) >= expiration_ms
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (producer, epoch, Some(last offset) for a data batch / None for a marker, timestamp)
    type Write = (i64, i16, Option<u64>, i64);

    fn replay(segments: &[&[Write]]) -> ActiveProducers {
        let mut state = ActiveProducers::default();
        for seg in segments {
            let mut b = StepsBuilder::default();
            for &(p, e, data, ts) in *seg {
                match data {
                    Some(l) => b.data(p, e, l, ts, false),
                    None => b.marker(p, e, ts),
                }
            }
            state.apply(&b.finish());
        }
        state
    }

    #[test]
    fn segments_fold_as_one_run_of_writes() {
        let writes: &[Write] = &[
            (1, 0, Some(3), 10),
            (1, 0, None, 11),
            (2, 5, Some(8), 12),
            (1, 1, None, 13),
            (2, 5, None, 14),
            (1, 1, Some(20), 15),
            (1, 2, None, 16),
            (2, 5, Some(30), 17),
        ];
        let whole = replay(&[writes]);
        for cut in 0..=writes.len() {
            for cut2 in cut..=writes.len() {
                let split = replay(&[&writes[..cut], &writes[cut..cut2], &writes[cut2..]]);
                assert_eq!(split, whole, "cut at {cut} and {cut2}");
            }
        }
        let state = |epoch, last_data_offset, last_timestamp| ProducerState {
            epoch,
            last_data_offset,
            last_timestamp,
            txn_open: false,
        };
        assert_eq!(whole.get(1), Some(&state(2, None, 16)));
        assert_eq!(whole.get(2), Some(&state(5, Some(30), 17)));
    }

    #[test]
    fn a_marker_of_the_same_epoch_keeps_the_last_data_batch() {
        // Transaction version 1: the marker keeps the epoch, so the data batch stays the last write.
        let s = replay(&[&[(4, 2, Some(9), 1)], &[(4, 2, None, 2)]]);
        assert!(s.keeps_empty(4, 2, 9, false));
        assert!(!s.keeps_empty(4, 2, 10, true), "a marker is not the last data batch");
        // Transaction version 2: the marker bumps it.
        let s = replay(&[&[(4, 2, Some(9), 1)], &[(4, 3, None, 2)]]);
        assert!(!s.keeps_empty(4, 2, 9, false));
        assert!(s.keeps_empty(4, 3, 10, true));
        assert!(!s.keeps_empty(5, 3, 10, true), "an unknown producer");
    }
}
