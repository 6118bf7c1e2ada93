//! The audit files of every broker compared, one partition at a time: for each key, the record each replica
//! shows a `read_committed` consumer, below the offsets every replica has reached.
//!
//! A key's views agree when every replica shows the same latest record (offset and value), or none shows one
//! (a tombstone, or nothing: a cleaner removed the tombstone). So replicas whose cleaners ran at different
//! moments agree: one may still hold superseded records or a tombstone the other removed. Not compared, only
//! counted: keys whose latest record on some replica lies at or past the lowest last stable offset of the
//! replicas (written too recently: a replica may not have fetched it yet), and records below the highest log
//! start offset (another replica may have deleted the segment holding them).
//!
//! Files are read as streams, merged by key hash: memory holds one entry a replica, not the partition.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use super::digest::Entry;
use super::file::{AuditFileError, AuditReader, PartitionHeader, PartitionReading};

/// What one replica shows for a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum View {
    /// A record with a value.
    Live {
        /// Its offset.
        offset: u64,
        /// The hash of its value.
        value_hash: u64,
        /// True when it came in a transaction.
        transactional: bool,
    },
    /// A tombstone.
    Deleted {
        /// Its offset.
        offset: u64,
    },
    /// No record of the key.
    Absent,
}

impl View {
    fn of(e: Option<&Entry>) -> View {
        match e {
            None => View::Absent,
            Some(e) if e.is_deleted() => View::Deleted { offset: e.offset() },
            Some(e) => View::Live { offset: e.offset(), value_hash: e.value_hash, transactional: e.is_transactional() },
        }
    }

    /// What a consumer sees: the record, or nothing (a tombstone and no record read the same).
    fn seen(&self) -> Option<(u64, u64)> {
        match *self {
            View::Live { offset, value_hash, .. } => Some((offset, value_hash)),
            _ => None,
        }
    }

    fn offset(&self) -> Option<u64> {
        match *self {
            View::Live { offset, .. } | View::Deleted { offset } => Some(offset),
            View::Absent => None,
        }
    }
}

/// Which of the known ways replicas come to disagree a key's views look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A key deleted on the others still has a value on this replica (its tombstone was removed before the
    /// replica fetched it).
    DeletedKeyBack,
    /// Records of a transaction read as committed on this replica and not on the others (its ABORT was
    /// removed before the replica fetched it; the producer's next COMMIT closed both).
    AbortedReadAsCommitted,
    /// Committed records hidden on this replica (its COMMIT was removed; the producer's next ABORT closed both).
    CommittedHidden,
    /// The views differ otherwise.
    Differs,
}

impl Outcome {
    /// How a report names it.
    pub fn describe(self) -> &'static str {
        match self {
            Outcome::DeletedKeyBack => "a deleted key has a value again",
            Outcome::AbortedReadAsCommitted => "an aborted transaction's record reads as committed",
            Outcome::CommittedHidden => "a committed record is hidden",
            Outcome::Differs => "the latest records differ",
        }
    }
}

/// One key the replicas disagree on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Disagreement {
    /// The key's xxh3-64.
    pub key_hash: u64,
    /// Each replica's view, by node id.
    pub views: BTreeMap<i32, View>,
    /// The replicas that differ from the leader and the majority.
    pub odd: Vec<i32>,
    /// What it looks like.
    pub outcome: Outcome,
}

/// A replica as its file describes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplicaSummary {
    /// Its broker's node id.
    pub node_id: i32,
    /// The audit file.
    pub file: PathBuf,
    /// Its header.
    pub header: PartitionHeader,
}

/// What the comparison found for a partition.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PartitionReport {
    /// `<topic>-<partition>`.
    pub name: String,
    /// The replicas audited.
    pub replicas: Vec<ReplicaSummary>,
    /// Replicas the metadata names that no file holds.
    pub missing: Vec<i32>,
    /// The leader as the newest metadata says, if known.
    pub leader: Option<i32>,
    /// Keys compared below this offset (the lowest last stable offset of the replicas).
    pub compared_below: u64,
    /// Keys compared.
    pub keys_compared: u64,
    /// Keys written too recently to compare (at or past `compared_below` on some replica): counted only.
    pub keys_recent: u64,
    /// Keys whose record lies below another replica's log start: counted only.
    pub keys_below_log_start: u64,
    /// Keys the replicas disagree on.
    pub keys_disagreeing: u64,
    /// The first of those (at most [`LISTED`]).
    pub disagreements: Vec<Disagreement>,
    /// Per outcome, the keys.
    pub outcomes: BTreeMap<Outcome, u64>,
    /// Open transactions of one replica that another has closed: `(node, producer id, first offset)`. A
    /// `read_committed` consumer of that replica stops at that offset for good.
    pub stuck_transactions: Vec<(i32, i64, u64)>,
    /// Why the partition was not compared (a replica unreadable, different topic ids), if it was not.
    pub not_compared: Option<String>,
    /// When a file is a summary (`audit --summary`): the partition compared range by range, not key by key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranges: Option<RangeComparison>,
}

/// A partition compared by the hashes of its key ranges (one replica's file, at least, a summary).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RangeComparison {
    /// Key ranges holding a live key on some replica.
    pub ranges: u64,
    /// Of those, ranges whose replicas differ: the partition is then audited in full on each broker
    /// (`audit --partition NAME`), which names the keys, or finds they were only written too recently.
    pub ranges_differing: u64,
}

impl PartitionReport {
    /// True when the replicas disagree (keys, or a transaction open on one only).
    pub fn disagrees(&self) -> bool {
        self.keys_disagreeing > 0 || !self.stuck_transactions.is_empty()
    }

    /// True when the replicas disagree, or could not be compared though several were audited (a replica
    /// unreadable, different topics under one name), or their key ranges differ in a summary (to audit in
    /// full): never taken for an agreement.
    pub fn needs_attention(&self) -> bool {
        self.disagrees()
            || (self.not_compared.is_some() && self.replicas.len() > 1)
            || self.ranges.as_ref().is_some_and(|r| r.ranges_differing > 0)
    }

    /// The replicas that disagree with the leader and the majority.
    pub fn odd_replicas(&self) -> Vec<i32> {
        let mut odd: Vec<i32> = self.disagreements.iter().flat_map(|d| d.odd.iter().copied()).collect();
        odd.extend(self.stuck_transactions.iter().map(|s| s.0));
        odd.sort_unstable();
        odd.dedup();
        odd
    }
}

/// Disagreeing keys listed a partition (the rest are counted).
pub const LISTED: usize = 1000;

/// What [`compare`] found.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CompareReport {
    /// The brokers compared: node id -> file.
    pub brokers: BTreeMap<i32, PathBuf>,
    /// The partitions, by name.
    pub partitions: Vec<PartitionReport>,
    /// What the files say that is odd but does not stop the comparison.
    pub warnings: Vec<String>,
}

impl CompareReport {
    /// True when any partition's replicas disagree, or several could not be compared.
    pub fn disagrees(&self) -> bool {
        self.partitions.iter().any(PartitionReport::needs_attention)
    }
}

/// Why files cannot be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// A file is unreadable or damaged.
    #[error(transparent)]
    File(#[from] AuditFileError),
    /// Files of different clusters.
    #[error("{} is of cluster {theirs}, {} of cluster {ours}: audit files of one cluster are compared", their_file.display(), our_file.display())]
    OtherCluster {
        /// The first file.
        our_file: PathBuf,
        /// Its cluster.
        ours: String,
        /// The other.
        their_file: PathBuf,
        /// Its cluster.
        theirs: String,
    },
    /// Two files of one broker.
    #[error("{} and {} are both of broker {node}: give one file a broker", first.display(), second.display())]
    SameBroker {
        /// The node.
        node: i32,
        /// One file.
        first: PathBuf,
        /// The other.
        second: PathBuf,
    },
    /// A file names no broker.
    #[error("{}: the audit names no broker (no node.id in meta.properties)", file.display())]
    NoBroker {
        /// The file.
        file: PathBuf,
    },
    /// Fewer than two files.
    #[error("compare needs the audit files of at least two brokers")]
    TooFew,
}

struct Input {
    node: i32,
    path: PathBuf,
    reader: AuditReader,
    current: Option<PartitionReading>,
}

/// Compares the audit files `files` (one a broker, of one cluster).
///
/// # Errors
/// [`CompareError`]: unreadable or damaged files, files of other clusters, two of one broker.
pub fn compare(files: &[PathBuf]) -> Result<CompareReport, CompareError> {
    if files.len() < 2 {
        return Err(CompareError::TooFew);
    }
    let mut inputs: Vec<Input> = Vec::new();
    let mut report = CompareReport::default();
    for f in files {
        let reader = AuditReader::open(f)?;
        let node = reader.broker.node_id.ok_or_else(|| CompareError::NoBroker { file: f.clone() })?;
        if let Some(first) = inputs.first() {
            let (ours, theirs) = (&first.reader.broker.cluster_id, &reader.broker.cluster_id);
            if ours != theirs {
                return Err(CompareError::OtherCluster {
                    our_file: first.path.clone(),
                    ours: ours.clone().unwrap_or_else(|| "(none)".into()),
                    their_file: f.clone(),
                    theirs: theirs.clone().unwrap_or_else(|| "(none)".into()),
                });
            }
        }
        if let Some(other) = inputs.iter().find(|i| i.node == node) {
            return Err(CompareError::SameBroker { node, first: other.path.clone(), second: f.clone() });
        }
        report.brokers.insert(node, f.clone());
        inputs.push(Input { node, path: f.clone(), reader, current: None });
    }
    for i in &mut inputs {
        i.current = i.reader.next_partition()?;
    }
    while let Some(name) = inputs.iter().filter_map(|i| i.current.as_ref().map(|c| c.header.name.clone())).min() {
        let at: Vec<usize> =
            (0..inputs.len()).filter(|&i| inputs[i].current.as_ref().is_some_and(|c| c.header.name == name)).collect();
        let partition = compare_partition(&mut inputs, &at, &name, &mut report.warnings)?;
        report.partitions.push(partition);
        for &i in &at {
            inputs[i].current = inputs[i].reader.next_partition()?;
        }
    }
    Ok(report)
}

/// The newest metadata of `name` among the files: its replicas and leader.
fn metadata_of(inputs: &[Input], name: &str) -> Option<kafka_records::kraft::image::PartitionState> {
    inputs.iter().filter_map(|i| i.reader.broker.metadata.get(name)).max_by_key(|s| s.leader_epoch).cloned()
}

fn compare_partition(
    inputs: &mut [Input],
    at: &[usize],
    name: &str,
    warnings: &mut Vec<String>,
) -> Result<PartitionReport, CompareError> {
    let mut report = PartitionReport { name: name.to_owned(), ..PartitionReport::default() };
    let meta = metadata_of(inputs, name);
    if let Some(m) = &meta {
        report.leader = (m.leader >= 0).then_some(m.leader);
        report.missing = m.replicas.iter().copied().filter(|r| !at.iter().any(|&i| inputs[i].node == *r)).collect();
        for &i in at {
            if !m.replicas.contains(&inputs[i].node) {
                warnings.push(format!(
                    "{name}: broker {} holds a replica the metadata does not name (replicas {:?}): a leftover of a \
                     reassignment; compared all the same",
                    inputs[i].node, m.replicas
                ));
            }
        }
    }
    for &i in at {
        let c = inputs[i].current.as_ref().map(|c| c.header.clone()).unwrap_or_default();
        report.replicas.push(ReplicaSummary { node_id: inputs[i].node, file: inputs[i].path.clone(), header: c });
    }
    let headers: Vec<&PartitionHeader> = report.replicas.iter().map(|r| &r.header).collect();
    if let Some(bad) = headers.iter().find(|h| h.error.is_some()) {
        report.not_compared = Some(format!(
            "a replica could not be read ({}): {}",
            bad.dir.display(),
            bad.error.clone().unwrap_or_default()
        ));
    }
    let ids: Vec<&Option<String>> = headers.iter().map(|h| &h.topic_id).collect();
    if ids.iter().any(|id| *id != ids[0]) {
        report.not_compared = Some(format!(
            "the replicas hold different topics under one name (topic ids {}): a topic deleted and made again \
             while a broker was away",
            ids.iter().map(|i| i.as_deref().unwrap_or("none")).collect::<Vec<_>>().join(", ")
        ));
    }
    if at.len() < 2 && report.not_compared.is_none() {
        report.not_compared = Some("one replica only: nothing to compare it with".into());
    }
    // Open transactions one replica has and another has closed, though the first has fetched past where the
    // other's marker lies (below the other's last stable offset): a replica merely behind is not flagged.
    for (i, h) in headers.iter().enumerate() {
        for &(pid, first) in &h.open_transactions {
            let closed_elsewhere = headers.iter().enumerate().any(|(j, o)| {
                j != i
                    && o.last_stable_offset > first
                    && h.log_end >= o.last_stable_offset
                    && !o.open_transactions.contains(&(pid, first))
            });
            if closed_elsewhere {
                report.stuck_transactions.push((report.replicas[i].node_id, pid, first));
            }
        }
    }
    let compared_below = headers.iter().map(|h| h.last_stable_offset).min().unwrap_or(0);
    let log_start = headers.iter().map(|h| h.log_start).max().unwrap_or(0);
    report.compared_below = compared_below;
    if report.not_compared.is_some() {
        drain(inputs, at)?;
        return Ok(report);
    }
    if headers.iter().any(|h| h.ranges.is_some()) {
        report.ranges = Some(compare_ranges(inputs, at)?);
        return Ok(report);
    }
    let leader_pos = report.leader.and_then(|l| at.iter().position(|&i| inputs[i].node == l));
    let nodes: Vec<i32> = at.iter().map(|&i| inputs[i].node).collect();
    let mut heads: Vec<Option<Entry>> = Vec::with_capacity(at.len());
    for &i in at {
        heads.push(next_entry(&mut inputs[i])?);
    }
    while let Some(key) = heads.iter().flatten().map(|e| e.key_hash).min() {
        let views: Vec<View> = heads.iter().map(|h| View::of(h.as_ref().filter(|e| e.key_hash == key))).collect();
        for (pos, &i) in at.iter().enumerate() {
            if heads[pos].is_some_and(|e| e.key_hash == key) {
                heads[pos] = next_entry(&mut inputs[i])?;
            }
        }
        if views.iter().filter_map(View::offset).any(|o| o >= compared_below) {
            report.keys_recent += 1;
            continue;
        }
        if views.iter().any(|v| matches!(v, View::Live { offset, .. } if *offset < log_start)) {
            report.keys_below_log_start += 1;
            continue;
        }
        report.keys_compared += 1;
        let seen: Vec<Option<(u64, u64)>> = views.iter().map(View::seen).collect();
        if seen.iter().all(|s| *s == seen[0]) {
            continue;
        }
        report.keys_disagreeing += 1;
        let (odd, outcome) = judge(&views, &seen, leader_pos);
        *report.outcomes.entry(outcome).or_default() += 1;
        if report.disagreements.len() < LISTED {
            report.disagreements.push(Disagreement {
                key_hash: key,
                views: nodes.iter().copied().zip(views.iter().copied()).collect(),
                odd: odd.into_iter().map(|p| nodes[p]).collect(),
                outcome,
            });
        }
    }
    Ok(report)
}

/// Compares the partition's replicas `at` by their key ranges: a summary's from its header, a full file's
/// folded from its entries as it is read.
fn compare_ranges(inputs: &mut [Input], at: &[usize]) -> Result<RangeComparison, CompareError> {
    let mut each: Vec<super::digest::RangeHashes> = Vec::with_capacity(at.len());
    for &i in at {
        let given = inputs[i].current.as_ref().and_then(|c| c.header.ranges.clone());
        let ranges = match given {
            Some(r) => r,
            None => {
                let mut folded = super::digest::RangeHashes::new();
                while let Some(e) = next_entry(&mut inputs[i])? {
                    folded.add(&e);
                }
                folded
            }
        };
        each.push(ranges);
    }
    // Every replica's ranges as wide as the widest any replica wrote (their sums add up exactly).
    let bits = each.iter().map(|r| r.bits).min().unwrap_or(0);
    let mut by_range: BTreeMap<u16, Vec<Option<(u64, u64)>>> = BTreeMap::new();
    for (pos, ranges) in each.iter().enumerate() {
        for (range, keys, sum) in ranges.coarsened(bits).hashes {
            by_range.entry(range).or_insert_with(|| vec![None; each.len()])[pos] = Some((keys, sum));
        }
    }
    let differing = by_range.values().filter(|v| v.iter().any(|x| *x != v[0])).count();
    Ok(RangeComparison { ranges: by_range.len() as u64, ranges_differing: differing as u64 })
}

/// The replicas (positions) whose view differs from the majority's (the leader's on a tie), and what the
/// difference looks like.
fn judge(views: &[View], seen: &[Option<(u64, u64)>], leader: Option<usize>) -> (Vec<usize>, Outcome) {
    let count = |s: &Option<(u64, u64)>| seen.iter().filter(|o| *o == s).count();
    let best = seen.iter().map(count).max().unwrap_or(0);
    let majority_pos = leader
        .filter(|&l| count(&seen[l]) == best)
        .unwrap_or_else(|| (0..seen.len()).find(|&p| count(&seen[p]) == best).unwrap_or(0));
    let majority = seen[majority_pos];
    let odd: Vec<usize> = (0..seen.len()).filter(|&p| seen[p] != majority).collect();
    let Some(&first_odd) = odd.first() else { return (odd, Outcome::Differs) };
    let theirs = views[first_odd];
    let ours = views[majority_pos];
    let outcome = match (theirs, ours) {
        (View::Live { transactional: true, offset: t, .. }, _) if ours.offset().is_none_or(|o| t > o) => {
            Outcome::AbortedReadAsCommitted
        }
        (View::Live { .. }, View::Deleted { .. } | View::Absent) => Outcome::DeletedKeyBack,
        (_, View::Live { transactional: true, offset: o, .. }) if theirs.offset().is_none_or(|t| t < o) => {
            Outcome::CommittedHidden
        }
        _ => Outcome::Differs,
    };
    (odd, outcome)
}

fn next_entry(input: &mut Input) -> Result<Option<Entry>, CompareError> {
    let Some(current) = input.current.as_mut() else { return Ok(None) };
    Ok(input.reader.next_entry(current)?)
}

/// Reads past the entries of partitions not compared.
fn drain(inputs: &mut [Input], at: &[usize]) -> Result<(), CompareError> {
    for &i in at {
        while next_entry(&mut inputs[i])?.is_some() {}
    }
    Ok(())
}
