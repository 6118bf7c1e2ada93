//! The transaction state of a log, whatever its format: which transactions were aborted, which are still
//! open, and where the last stable offset (LSO) lies (each producer's own state: [`crate::producers`]). A format that has
//! no transactions (the native format) has none of it: its state is empty and its LSO the log end.
//!
//! A transactional producer's data batches open a transaction at the first of them; its marker (`ABORT` or
//! `COMMIT`) ends it. An aborted transaction spans from its first data batch to its marker (a marker without
//! data before it is an empty transaction spanning only itself), as the entries of Kafka's `.txnindex` do. A
//! transaction with no marker yet is open: the LSO is the first offset of the earliest open one (else the log
//! end), and no cleaner may take anything at or past it.
//!
//! A segment's events are read by its format (Kafka: from its batch headers) once, and kept with the segment
//! ([`crate::SealedSegment::transactions`]); [`TxnState::fold`] folds them in log order.

use std::collections::HashMap;

/// What a transaction marker says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerType {
    /// The transaction's records are discarded.
    Abort,
    /// The transaction's records are visible.
    Commit,
    /// A control type this reader does not know (kept, never acted on).
    Other(i16),
}

/// One transactional fact of a segment, in offset order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnEvent {
    /// A transactional data batch.
    Data {
        /// Its producer.
        producer_id: i64,
        /// The producer's epoch.
        producer_epoch: i16,
        /// The batch's first offset.
        base_offset: u64,
        /// The batch's last offset.
        last_offset: u64,
        /// Its first timestamp.
        timestamp: i64,
        /// Records of the batch.
        records: u64,
        /// Bytes of the batch.
        bytes: u64,
    },
    /// A control batch that lost its record (a bare header a cleaner kept): its producer's transaction ended
    /// there (a broker holding the producer's state saw the marker), as neither a commit nor an abort that this
    /// reader can still tell.
    Ended {
        /// Its producer.
        producer_id: i64,
        /// Its offset.
        offset: u64,
    },
    /// A control batch (transaction marker).
    Marker {
        /// Its producer.
        producer_id: i64,
        /// The producer's epoch.
        producer_epoch: i16,
        /// The marker's offset.
        offset: u64,
        /// Abort or commit.
        kind: MarkerType,
        /// The transaction coordinator's epoch that wrote it.
        coordinator_epoch: i32,
        /// Bytes of the batch.
        bytes: u64,
    },
}

/// One segment's transactional facts and how it moves each producer's state on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SegmentTxns {
    /// Transactional data batches and markers, in offset order.
    pub events: Vec<TxnEvent>,
    /// Every producer writing in the segment (transactional or idempotent), by id: its writes folded
    /// ([`crate::producers`]).
    pub producers: Vec<crate::producers::ProducerSteps>,
}

impl std::fmt::Display for MarkerType {
    /// As Kafka names the types (`kafka-dump-log.sh` prints `endTxnMarker: COMMIT`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MarkerType::Abort => f.write_str("ABORT"),
            MarkerType::Commit => f.write_str("COMMIT"),
            MarkerType::Other(t) => write!(f, "UNKNOWN({t})"),
        }
    }
}

/// A segment's transactional facts folded from its batches as a writer writes them (a format's own fold:
/// `Format::written_txns`), so that the written segment needs no walk of its headers to give them.
pub(crate) trait WrittenTxns: std::fmt::Debug + Send {
    /// Folds the encoded batch `bytes` written at `pos` of the segment `name`.
    fn encoded(&mut self, name: &str, pos: u64, bytes: &[u8]);

    /// The facts; `None` when a batch did not parse as one (a walk of the segment then reports why).
    fn finish(self: Box<Self>) -> Option<SegmentTxns>;
}

/// An aborted transaction (what an entry of Kafka's `.txnindex` records).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct AbortedTxn {
    /// Its producer.
    pub producer_id: i64,
    /// Its first offset (its first data batch, or the marker for an empty transaction).
    pub first_offset: u64,
    /// Its marker's offset.
    pub last_offset: u64,
    /// The LSO once the marker was written: the first offset of the earliest other open transaction, else the
    /// marker's offset + 1.
    pub last_stable_offset: u64,
}

/// A transaction without a marker yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct OpenTxn {
    /// Its producer.
    pub producer_id: i64,
    /// The producer's epoch in its first batch.
    pub producer_epoch: i16,
    /// Its first offset.
    pub first_offset: u64,
    /// The first timestamp of its first batch.
    pub first_timestamp: i64,
    /// The coordinator epoch of this producer's last marker, if any (what ending it by hand needs).
    pub coordinator_epoch: Option<i32>,
}

/// The transaction state of a whole partition. See the module docs.
#[derive(Debug, Clone, Default)]
pub struct TxnState {
    /// Aborted transactions in the order of their markers.
    pub aborted: Vec<AbortedTxn>,
    /// Open transactions, by first offset.
    pub open: Vec<OpenTxn>,
    /// The last stable offset: the first offset of the earliest open transaction, else the log end.
    pub last_stable_offset: u64,
    /// Records of data batches of aborted transactions.
    pub aborted_records: u64,
    /// Bytes of those batches.
    pub aborted_bytes: u64,
    /// Markers (control batches).
    pub markers: u64,
    /// Bytes of the markers.
    pub marker_bytes: u64,
    /// The log start offset: no reader goes below it, so an aborted transaction whose marker lies below it needs
    /// no `.txnindex` entry (Kafka's cleaner writes none: it never sees one).
    pub log_start: u64,
    /// Producer id → aborted ranges `(first, last)`, sorted, for [`TxnState::is_aborted`].
    ranges: HashMap<i64, Vec<(u64, u64)>>,
    /// (producer, marker offset) of the markers whose transaction has a data batch in the log (an emptied one
    /// counts: it still opens a transaction to whoever rebuilds the state from the batches).
    with_data: std::collections::HashSet<(i64, u64)>,
    /// (producer, marker offset) -> the entry a segment's `.txnindex` holds for that aborted transaction, as
    /// it was written (its first offset and last stable offset may differ from what the batches now say: a
    /// cleaner keeps an entry as it read it).
    recorded: HashMap<(i64, u64), AbortedTxn>,
    /// Producer id -> offsets of its COMMIT markers, in order (which COMMIT claims the batches of a transaction
    /// whose ABORT a cleaner does not see: [`TxnState::forget_aborted_before`]).
    commits: HashMap<i64, Vec<u64>>,
}

impl TxnState {
    /// The state of a log of `segments` (in offset order) whose next offset is `next_offset`.
    pub fn fold<'a>(segments: impl IntoIterator<Item = &'a SegmentTxns>, next_offset: u64) -> TxnState {
        struct Ongoing {
            epoch: i16,
            first: u64,
            timestamp: i64,
            records: u64,
            bytes: u64,
        }
        let mut state = TxnState { last_stable_offset: next_offset, ..TxnState::default() };
        let mut ongoing: HashMap<i64, Ongoing> = HashMap::new();
        // (first offset, producer) of the ongoing transactions: the LSO after a marker in O(log n).
        let mut firsts: std::collections::BTreeSet<(u64, i64)> = std::collections::BTreeSet::new();
        let mut coordinator: HashMap<i64, i32> = HashMap::new();
        for seg in segments {
            for ev in &seg.events {
                match *ev {
                    TxnEvent::Data { producer_id, producer_epoch, base_offset, timestamp, records, bytes, .. } => {
                        let o = ongoing.entry(producer_id).or_insert_with(|| {
                            firsts.insert((base_offset, producer_id));
                            Ongoing { epoch: producer_epoch, first: base_offset, timestamp, records: 0, bytes: 0 }
                        });
                        o.records += records;
                        o.bytes += bytes;
                    }
                    TxnEvent::Ended { producer_id, .. } => {
                        if let Some(o) = ongoing.remove(&producer_id) {
                            firsts.remove(&(o.first, producer_id));
                        }
                    }
                    TxnEvent::Marker { producer_id, offset, kind, coordinator_epoch, bytes, .. } => {
                        state.markers += 1;
                        state.marker_bytes += bytes;
                        coordinator.insert(producer_id, coordinator_epoch);
                        let ended = ongoing.remove(&producer_id);
                        if let Some(o) = &ended {
                            firsts.remove(&(o.first, producer_id));
                        }
                        if ended.is_some() {
                            state.with_data.insert((producer_id, offset));
                        }
                        if kind == MarkerType::Commit {
                            state.commits.entry(producer_id).or_default().push(offset);
                        }
                        if kind != MarkerType::Abort {
                            continue;
                        }
                        let first = ended.as_ref().map_or(offset, |o| o.first);
                        if let Some(o) = &ended {
                            state.aborted_records += o.records;
                            state.aborted_bytes += o.bytes;
                        }
                        let lso = firsts.first().map_or(offset.saturating_add(1), |&(first, _)| first);
                        state.aborted.push(AbortedTxn {
                            producer_id,
                            first_offset: first,
                            last_offset: offset,
                            last_stable_offset: lso,
                        });
                        state.ranges.entry(producer_id).or_default().push((first, offset));
                    }
                }
            }
        }
        state.open = ongoing
            .into_iter()
            .map(|(producer_id, o)| OpenTxn {
                producer_id,
                producer_epoch: o.epoch,
                first_offset: o.first,
                first_timestamp: o.timestamp,
                coordinator_epoch: coordinator.get(&producer_id).copied(),
            })
            .collect();
        state.open.sort_unstable_by_key(|o| (o.first_offset, o.producer_id));
        if let Some(first) = state.open.first() {
            state.last_stable_offset = state.last_stable_offset.min(first.first_offset);
        }
        for r in state.ranges.values_mut() {
            r.sort_unstable();
        }
        state
    }

    /// True when the marker of `producer_id` at `marker` ends a transaction with a data batch in the log: while
    /// one is there the marker stays, or that batch would read as part of the producer's next transaction (or
    /// as an open one) to anyone who rebuilds the state from the batches, this reader included.
    pub fn has_data(&self, producer_id: i64, marker: u64) -> bool {
        self.with_data.contains(&(producer_id, marker))
    }

    /// Narrows the aborted transaction of `producer_id` ending at `marker` to start at `first` (a `.txnindex`
    /// entry said so: the batches before it belong to an earlier transaction whose marker a cleaner removed).
    pub fn narrow(&mut self, producer_id: i64, marker: u64, first: u64) {
        // Markers have unique offsets and the list is in their order: one binary search each.
        if let Ok(i) = self.aborted.binary_search_by_key(&marker, |a| a.last_offset)
            && self.aborted[i].producer_id == producer_id
        {
            self.aborted[i].first_offset = self.aborted[i].first_offset.max(first);
        }
        if let Some(r) = self.ranges.get_mut(&producer_id)
            && let Ok(i) = r.binary_search_by_key(&marker, |r| r.1)
        {
            r[i].0 = r[i].0.max(first);
        }
    }

    /// Forgets the aborted transactions whose marker lies below `log_start`, as Kafka's cleaner never sees them
    /// (`UnifiedLog.collectAbortedTransactions` searches the `.txnindex` files from the log start offset): their
    /// batches read as committed, and their markers as ending no transaction with data. No consumer reads below
    /// the log start, so only the bytes a cleaner writes there depend on it.
    ///
    /// Kafka's cleaner (`CleanedTransactionMetadata`) notes a producer whose transactional batches it reads as
    /// committed until its next `COMMIT` marker, which an `ABORT` does not clear: that `COMMIT` then has data and
    /// stays, whatever lies between.
    pub fn forget_aborted_before(&mut self, log_start: u64) {
        let gone = self.aborted.partition_point(|a| a.last_offset < log_start);
        for a in self.aborted.drain(..gone).collect::<Vec<_>>() {
            let had_data = self.with_data.remove(&(a.producer_id, a.last_offset));
            if let Some(r) = self.ranges.get_mut(&a.producer_id) {
                r.retain(|&(_, last)| last != a.last_offset);
            }
            let next_commit = self.commits.get(&a.producer_id).and_then(|c| {
                let i = c.partition_point(|&o| o < a.last_offset);
                c.get(i).copied()
            });
            if let (true, Some(commit)) = (had_data, next_commit) {
                self.with_data.insert((a.producer_id, commit));
            }
        }
    }

    /// Remembers `entry` as a segment's `.txnindex` holds it ([`TxnState::recorded_entry`]).
    pub fn record(&mut self, entry: AbortedTxn) {
        self.recorded.insert((entry.producer_id, entry.last_offset), entry);
    }

    /// The `.txnindex` entry recorded for the aborted transaction of `producer_id` whose marker is at `marker`,
    /// as it was written: what a cleaner copies into the `.txnindex` of a segment that keeps the marker
    /// (Kafka's cleaner appends the entry it read, never one derived anew).
    pub fn recorded_entry(&self, producer_id: i64, marker: u64) -> Option<&AbortedTxn> {
        self.recorded.get(&(producer_id, marker))
    }

    /// The aborted transaction whose marker is at `marker`, if any.
    pub fn aborted_at(&self, marker: u64) -> Option<&AbortedTxn> {
        self.aborted.binary_search_by_key(&marker, |a| a.last_offset).ok().map(|i| &self.aborted[i])
    }

    /// True when the transactional batch of `producer_id` starting at `base_offset` belongs to an aborted
    /// transaction.
    pub fn is_aborted(&self, producer_id: i64, base_offset: u64) -> bool {
        self.aborted_range(producer_id, base_offset).is_some()
    }

    /// The `(first, marker)` offsets of the aborted transaction the batch of `producer_id` at `base_offset`
    /// belongs to, if any.
    pub fn aborted_range(&self, producer_id: i64, base_offset: u64) -> Option<(u64, u64)> {
        let ranges = self.ranges.get(&producer_id)?;
        // The last range starting at or before the batch; ranges of one producer never overlap.
        let i = ranges.partition_point(|&(first, _)| first <= base_offset);
        ranges.get(i.checked_sub(1)?).copied().filter(|&(_, last)| last >= base_offset)
    }
}

/// How a segment's `.txnindex` disagrees with the aborted transactions its markers say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexDisagreement {
    /// The entry at fault (its index in the file), or `None` for a transaction no entry covers.
    pub entry: Option<usize>,
    /// The transaction's producer.
    pub producer_id: i64,
    /// Its first offset (the entry's, or the derived one).
    pub first_offset: u64,
    /// Its last offset (its marker's).
    pub last_offset: u64,
    /// What is wrong.
    pub why: &'static str,
}

impl std::fmt::Display for IndexDisagreement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.entry {
            Some(i) => write!(
                f,
                "entry {i} (producer {}, offsets {} to {}): ",
                self.producer_id, self.first_offset, self.last_offset
            )?,
            None => write!(
                f,
                "producer {}'s aborted transaction at offsets {} to {}: ",
                self.producer_id, self.first_offset, self.last_offset
            )?,
        }
        f.write_str(self.why)
    }
}

/// How a segment's `.txnindex` entries (`entries`, of the segment holding offsets `[base, end)`) disagree with
/// the aborted transactions the partition's markers say (`txns`): the first entry no ABORT marker of the
/// segment stands for, else the first aborted transaction with data left whose marker the segment holds and
/// which no entry covers (a broker would show its records to `read_committed` readers). `None` when they
/// agree. An entry may start before the derived transaction (a pass removed its first batches) or after it
/// (a cleaner removed the COMMIT marker of the producer's transaction before: `verify_index_files` then
/// narrows the transaction to the entry), and a transaction whose data is all gone needs no entry.
pub fn index_disagreement(base: u64, end: u64, entries: &[AbortedTxn], txns: &TxnState) -> Option<IndexDisagreement> {
    let in_segment = |o: u64| (base..end).contains(&o);
    for (i, e) in entries.iter().enumerate() {
        let marker = txns.aborted_at(e.last_offset).filter(|d| d.producer_id == e.producer_id);
        let why = match marker {
            None => Some("no ABORT marker of its producer is at its last offset"),
            Some(_) if !in_segment(e.last_offset) => Some("its ABORT marker is in another segment"),
            Some(_) => None,
        };
        if let Some(why) = why {
            return Some(IndexDisagreement {
                entry: Some(i),
                producer_id: e.producer_id,
                first_offset: e.first_offset,
                last_offset: e.last_offset,
                why,
            });
        }
    }
    let covered: std::collections::HashSet<(i64, u64)> =
        entries.iter().map(|e| (e.producer_id, e.last_offset)).collect();
    let from = txns.aborted.partition_point(|d| d.last_offset < base);
    let to = txns.aborted.partition_point(|d| d.last_offset < end).max(from);
    let uncovered = txns.aborted[from..to].iter().find(|d| {
        d.first_offset < d.last_offset
            && d.last_offset >= txns.log_start
            && !covered.contains(&(d.producer_id, d.last_offset))
    })?;
    Some(IndexDisagreement {
        entry: None,
        producer_id: uncovered.producer_id,
        first_offset: uncovered.first_offset,
        last_offset: uncovered.last_offset,
        why: "no entry covers it, though its data is still there",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(p: i64, base: u64) -> TxnEvent {
        TxnEvent::Data {
            producer_id: p,
            producer_epoch: 0,
            base_offset: base,
            last_offset: base,
            timestamp: 0,
            records: 1,
            bytes: 70,
        }
    }

    fn marker(p: i64, offset: u64, kind: MarkerType) -> TxnEvent {
        TxnEvent::Marker { producer_id: p, producer_epoch: 0, offset, kind, coordinator_epoch: 3, bytes: 78 }
    }

    #[test]
    fn aborted_open_and_committed_transactions_are_told_apart() {
        let seg = SegmentTxns {
            events: vec![
                data(1, 0),
                data(2, 1),
                data(1, 2),
                marker(1, 3, MarkerType::Abort),
                marker(2, 4, MarkerType::Commit),
                marker(3, 5, MarkerType::Abort),
                data(1, 6),
                data(2, 7),
            ],
            producers: vec![],
        };
        let s = TxnState::fold([&seg], 8);
        assert_eq!(
            s.aborted,
            vec![
                AbortedTxn { producer_id: 1, first_offset: 0, last_offset: 3, last_stable_offset: 1 },
                AbortedTxn { producer_id: 3, first_offset: 5, last_offset: 5, last_stable_offset: 6 },
            ]
        );
        assert!(s.is_aborted(1, 0) && s.is_aborted(1, 2) && !s.is_aborted(2, 1) && !s.is_aborted(1, 6));
        assert_eq!(s.open.iter().map(|o| (o.producer_id, o.first_offset)).collect::<Vec<_>>(), vec![(1, 6), (2, 7)]);
        assert_eq!(s.open[0].coordinator_epoch, Some(3));
        assert_eq!(s.last_stable_offset, 6);
        assert_eq!((s.aborted_records, s.markers), (2, 3));
    }

    #[test]
    fn an_index_that_disagrees_with_the_markers_is_found() {
        let seg = SegmentTxns {
            events: vec![data(1, 0), data(1, 1), marker(1, 2, MarkerType::Abort), marker(2, 3, MarkerType::Abort)],
            producers: vec![],
        };
        let s = TxnState::fold([&seg], 4);
        let entry = |p, first, last| AbortedTxn {
            producer_id: p,
            first_offset: first,
            last_offset: last,
            last_stable_offset: 0,
        };
        assert_eq!(index_disagreement(0, 4, &[entry(1, 0, 2)], &s), None, "the empty transaction needs no entry");
        assert_eq!(index_disagreement(0, 4, &[entry(1, 0, 2), entry(2, 3, 3)], &s), None);
        let found = |entries: &[AbortedTxn], base| index_disagreement(base, 4, entries, &s).map(|d| (d.entry, d.why));
        assert_eq!(found(&[entry(1, 1, 2)], 0), None, "an entry that starts later narrows the transaction");
        assert_eq!(found(&[entry(1, 0, 2), entry(3, 0, 3)], 0).map(|d| d.0), Some(Some(1)));
        assert_eq!(found(&[], 0).map(|d| d.0), Some(None), "producer 1's aborted data has no entry");
        assert_eq!(found(&[entry(1, 0, 2)], 3), Some((Some(0), "its ABORT marker is in another segment")));
    }

    #[test]
    fn without_open_transactions_the_lso_is_the_log_end() {
        let seg = SegmentTxns { events: vec![data(1, 0), marker(1, 1, MarkerType::Commit)], producers: vec![] };
        assert_eq!(TxnState::fold([&seg], 9).last_stable_offset, 9);
    }
}
