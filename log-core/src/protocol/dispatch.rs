//! What the log's core asks a segment format, one question a method: the one place outside each format's own
//! modules that tells the two apart. `Log`, its readers, segments, the cleaning transaction, group copies and
//! the swap proofs call these and never compare formats themselves; a third format adds an arm to each match
//! here and its own module beside [`super::native`] and [`super::kafka`].

use super::{kafka, native};
use crate::cleaning::Replacement;
use crate::error::Result;
use crate::format::Format;
use crate::names::{SegmentFile, Stage, name};
use crate::record::AppendRecord;
use crate::storage::{SegmentSource, SegmentStore};
use crate::txn::SegmentTxns;

impl Format {
    /// What the control record whose key is `key` marks: a transaction's `ABORT` or `COMMIT`; `None` for a key
    /// that is no marker's, and always for a format without transactions.
    pub fn marker_type(self, key: Option<&[u8]>) -> Option<crate::txn::MarkerType> {
        match self {
            Format::Native => None,
            Format::Kafka => crate::format::kafka::txn::marker_type(key),
        }
    }

    /// The producers whose batches a pass starting at offset `start` inside `segment` reads as aborted, as the
    /// format's own cleaner finds them from where it starts reading (the pass-start rule); none for a format
    /// without transactions.
    ///
    /// # Errors
    /// As the format's reading of its indexes ([`kafka::txn_index::producers_read_as_aborted`]).
    pub fn producers_read_as_aborted(
        self,
        store: &dyn SegmentStore,
        segment: &crate::SealedSegment,
        start: u64,
        index_interval: u64,
        txns: &crate::txn::TxnState,
    ) -> Result<Vec<i64>> {
        match self {
            Format::Native => Ok(Vec::new()),
            Format::Kafka => kafka::txn_index::producers_read_as_aborted(store, segment, start, index_interval, txns),
        }
    }

    /// Refuses a cleaner checkpoint in `checkpoint` unless a log of this format may keep it there (a native log
    /// keeps its own; a Kafka partition's lives in its broker's log directory, or nowhere).
    ///
    /// # Errors
    /// [`crate::Error::InvalidConfig`] naming both places.
    pub(crate) fn require_checkpoint_placement(self, checkpoint: &crate::CheckpointFile) -> Result<()> {
        let allowed = match self {
            Format::Native => matches!(checkpoint, crate::CheckpointFile::Own),
            Format::Kafka => true,
        };
        if allowed {
            return Ok(());
        }
        Err(crate::Error::InvalidConfig(format!(
            "a {} log keeps its cleaner checkpoint in {}, not in {}",
            self.name(),
            crate::CheckpointFile::Own.describe(),
            checkpoint.describe()
        )))
    }

    /// Recovers the files of a writable log of this format that a crash can leave (an interrupted swap, strays)
    /// and lists its live segments, for [`crate::open::open`]'s skeleton.
    ///
    /// # Errors
    /// As the format's recovery ([`native::open::recover`], [`kafka::recovery::recover`]).
    pub(crate) fn recover(
        self,
        store: &dyn SegmentStore,
        config: &crate::LogConfig,
        checkpoint: &crate::CheckpointFile,
    ) -> Result<crate::open::Recovered> {
        match self {
            Format::Native => native::open::recover(store, config),
            Format::Kafka => kafka::recovery::recover(store, config, checkpoint),
        }
    }

    /// One attempt at a read-only load of a log of this format: `Ok(None)` when it changed meanwhile.
    ///
    /// # Errors
    /// As the format's read-only load.
    pub(crate) fn load_read_only(
        self,
        store: &std::sync::Arc<dyn SegmentStore>,
        config: &crate::LogConfig,
        checkpoint: &crate::CheckpointFile,
    ) -> Result<Option<crate::open::Parts>> {
        match self {
            Format::Native => native::open::load_read_only(store, config),
            Format::Kafka => kafka::recovery::load_read_only(store, config, checkpoint),
        }
    }

    /// Whether loading a sealed segment verifies every batch's checksum. The native format does, once, and
    /// saves a hint so that the next open need not; Kafka's checksums are verified by every read and pass
    /// instead, and only its batch headers are walked at load (a broker's partitions are large).
    pub(crate) fn verifies_at_load(self) -> bool {
        match self {
            Format::Native => true,
            Format::Kafka => false,
        }
    }

    /// Appends to `out` the marker that stands for "the segment based at `base`, whose records all lay below
    /// `end`, is removed" in a cleaning swap, where this format removes segments by marker (see
    /// [`Format::removes_by_marker`]); a format that does not appends nothing.
    pub(crate) fn encode_removal(self, base: u64, end: u64, out: &mut Vec<u8>) {
        match self {
            Format::Native => out.extend_from_slice(&crate::format::native::removal::encode(base, end)),
            Format::Kafka => {}
        }
    }

    /// The name of the hint this format keeps beside the segment based at `base`, if it keeps one.
    pub(crate) fn hint_name(self, base: u64) -> Option<String> {
        match self {
            Format::Native => {
                Some(crate::format::native::names::file_name(base, crate::format::native::names::FileKind::Index))
            }
            Format::Kafka => None,
        }
    }

    /// The summary the hint beside the sealed segment `name` (based at `base`, `len` bytes of `source`) saved,
    /// where this format keeps one and it is usable; `None` otherwise (the segment is then scanned).
    pub(crate) fn read_hint(
        self,
        store: &dyn SegmentStore,
        base: u64,
        name: &str,
        source: &crate::storage::SegmentSource,
        len: u64,
    ) -> Option<crate::segment::SegmentSummary> {
        match self {
            Format::Native => native::hint::read(store, base, name, source, len),
            Format::Kafka => None,
        }
    }

    /// Writes and syncs the hint of a sealed segment based at `base`, `len` bytes long, whose scan learned
    /// `summary`, where this format keeps one (see [`Format::keeps_hint`]).
    ///
    /// # Errors
    /// [`crate::Error::Io`] naming the hint.
    pub(crate) fn write_hint(
        self,
        store: &dyn SegmentStore,
        base: u64,
        len: u64,
        summary: &crate::segment::SegmentSummary,
    ) -> Result<()> {
        match self {
            Format::Native => native::hint::write(store, base, len, summary),
            Format::Kafka => Ok(()),
        }
    }

    /// Whether the format keeps this project's `.lcindex` hint beside each sealed segment (Kafka's segments
    /// carry Kafka's own indexes instead, written by their writer).
    pub(crate) fn keeps_hint(self) -> bool {
        match self {
            Format::Native => true,
            Format::Kafka => false,
        }
    }

    /// Whether an empty segment file stands for nothing. A native segment always holds at least its first
    /// frame once created by a roll, so an empty closed one is the leftover of an interrupted roll; a Kafka
    /// segment may be empty and is kept (a broker creates them so).
    pub(crate) fn empty_file_is_leftover(self) -> bool {
        match self {
            Format::Native => true,
            Format::Kafka => false,
        }
    }

    /// Whether a pass's output that keeps no record is a removal marker (the native format); a Kafka group
    /// keeps its head segment, empty, as Kafka's cleaner does.
    pub(crate) fn removes_by_marker(self) -> bool {
        match self {
            Format::Native => true,
            Format::Kafka => false,
        }
    }

    /// Whether a group a pass empties keeps its head segment, empty, named after the group's first segment
    /// (Kafka's cleaner does: its base may be the log start), instead of going by removal markers.
    pub(crate) fn keeps_group_head(self) -> bool {
        !self.removes_by_marker()
    }

    /// Whether each batch is one record (the native frame), so that a scan may walk records as frames.
    pub(crate) fn frames_are_records(self) -> bool {
        match self {
            Format::Native => true,
            Format::Kafka => false,
        }
    }

    /// Whether a cleaner judges the batches at or past a pass's end offset (below the last stable offset) as
    /// Kafka's does, rewriting the segment holding the end offset whole: an aborted batch goes, a marker
    /// follows the marker rule, a tombstone gets its delete horizon, every record is kept. The native format
    /// copies them as they are (a later pass judges them).
    pub fn judges_past_end(self) -> bool {
        match self {
            Format::Native => false,
            Format::Kafka => true,
        }
    }

    /// Whether a cleaning round ends at the log's high watermark, keeping the batch that ends there (emptied
    /// if need be) so that the round's last offset is not lost: Kafka 4.4's `upperBoundOffsetOfCleaningRound`.
    pub fn ends_rounds_at_high_watermark(self) -> bool {
        match self {
            Format::Native => false,
            Format::Kafka => true,
        }
    }

    /// Whether its batches carry transactions (Kafka's transactional producers and markers). A format without
    /// has an empty transaction state whose last stable offset is the log end.
    pub fn has_transactions(self) -> bool {
        match self {
            Format::Native => false,
            Format::Kafka => true,
        }
    }

    /// A fold of a segment's transactional facts from the batches a walk of it reads anyway (none for a format
    /// without transactions): [`Format::segment_txns`] without a walk of its own.
    pub(crate) fn txn_fold(self) -> Option<TxnFold> {
        match self {
            Format::Native => None,
            Format::Kafka => Some(TxnFold::new()),
        }
    }

    /// A fold of a written segment's transactional facts from the batches its writer writes (none for a format
    /// without transactions).
    pub(crate) fn written_txns(self) -> Option<Box<dyn crate::txn::WrittenTxns>> {
        self.txn_fold().map(|f| Box::new(f) as Box<dyn crate::txn::WrittenTxns>)
    }

    /// The transactional facts of a segment's batches below `end` (none for a format without transactions).
    ///
    /// # Errors
    /// As [`SegmentTxns::scan`] for a format that reads them.
    pub(crate) fn segment_txns(self, source: &SegmentSource, name: &str, end: u64) -> Result<SegmentTxns> {
        match self {
            Format::Native => Ok(SegmentTxns::default()),
            Format::Kafka => SegmentTxns::scan(source, name, end),
        }
    }

    /// The producers a broker loading the partition of `snapshot` (beside `files`) holds as active (none for a
    /// format without producers): Kafka's [`kafka::producer_state::load_active_producers`].
    ///
    /// # Errors
    /// As that function.
    pub(crate) fn load_active_producers(
        self,
        store: &dyn crate::SegmentStore,
        snapshot: &crate::LogSnapshot,
        files: &crate::producers::ProducerFiles,
        load: &crate::producers::ProducerLoad,
    ) -> Result<crate::producers::ActiveProducers> {
        match self {
            Format::Native => Ok(crate::producers::ActiveProducers::default()),
            Format::Kafka => kafka::producer_state::load_active_producers(store, snapshot, files, load),
        }
    }

    /// Moves `state` over the batches of `snapshot` whose last offset is `from` or later (nothing for a format
    /// without producers): Kafka's [`kafka::producer_state::replay_producers`].
    ///
    /// # Errors
    /// As that function.
    pub(crate) fn replay_producers(
        self,
        state: &mut crate::producers::ActiveProducers,
        snapshot: &crate::LogSnapshot,
        from: u64,
    ) -> Result<()> {
        match self {
            Format::Native => Ok(()),
            Format::Kafka => kafka::producer_state::replay_producers(state, snapshot, from),
        }
    }

    /// Checks every segment's `.txnindex` in `store` against `txns`, narrowing aborted transactions to their
    /// entries, as [`kafka::txn_index::verify_index_files`] does; returns the `.txnindex` files a segment needs
    /// and lacks. Asked of both formats alike: no format writes a `.txnindex` into a native log, so one found
    /// there is checked as damage would be.
    ///
    /// # Errors
    /// As [`kafka::txn_index::verify_index_files`].
    pub fn verify_txn_indexes(
        self,
        store: &dyn SegmentStore,
        snapshot: &crate::LogSnapshot,
        txns: &mut crate::txn::TxnState,
    ) -> Result<Vec<String>> {
        match self {
            Format::Native | Format::Kafka => kafka::txn_index::verify_index_files(store, snapshot, txns),
        }
    }

    /// Carries out a repair `plan` by the format's side of the repair protocol.
    ///
    /// # Errors
    /// As [`crate::repair::apply`].
    pub(crate) fn apply_repair(
        self,
        store: &dyn SegmentStore,
        plan: &crate::repair::RepairPlan,
        stamp: u64,
    ) -> Result<crate::repair::RepairOutcome> {
        match self {
            Format::Native => native::repair::apply(store, plan, stamp),
            Format::Kafka => kafka::repair::apply(store, plan, stamp),
        }
    }

    /// The largest span of offsets one segment may cover, if the format bounds it (a Kafka index entry holds
    /// an offset relative to its segment's base in an i32).
    pub(crate) fn max_offset_span(self) -> Option<u64> {
        match self {
            Format::Native => None,
            Format::Kafka => Some(i32::MAX as u64),
        }
    }

    /// Why `segment_bytes` is too large for a segment of this format, if it is (a Kafka index entry holds a
    /// 32-bit position, so Kafka's `segment.bytes` is an int).
    pub(crate) fn segment_bytes_problem(self, segment_bytes: u64) -> Option<String> {
        match self {
            Format::Kafka if segment_bytes > i32::MAX as u64 => Some(format!(
                "segment.bytes {segment_bytes} is above Kafka's largest segment ({} bytes: it is an int)",
                i32::MAX
            )),
            Format::Native | Format::Kafka => None,
        }
    }

    /// `check` of a log of this format in `store`, its cleaner checkpoint in `checkpoint` (see
    /// [`crate::check::check`]).
    ///
    /// # Errors
    /// The first problem found.
    pub(crate) fn check(
        self,
        store: std::sync::Arc<dyn SegmentStore>,
        checkpoint: crate::CheckpointFile,
        meter: Option<&crate::progress::Meter>,
    ) -> std::result::Result<crate::check::CheckReport, crate::check::Problem> {
        match self {
            Format::Native => native::check::check_store_counted(store, meter),
            Format::Kafka => kafka::check::check_kafka_counted(store, checkpoint, meter),
        }
    }

    /// The repair plan for a log of this format in `store` (see [`crate::repair::plan_for`]).
    ///
    /// # Errors
    /// As the format's plan.
    pub(crate) fn plan_repair(
        self,
        store: &dyn SegmentStore,
        config: &crate::LogConfig,
    ) -> Result<crate::repair::RepairPlan> {
        match self {
            Format::Native => native::repair::plan(store),
            Format::Kafka => kafka::repair::plan_kafka_with(store, config),
        }
    }

    /// The name of a cleaning pass's output segment file based at `base`, before it is committed.
    pub fn cleaned_name(self, base: u64) -> String {
        match self {
            Format::Native => {
                crate::format::native::names::file_name(base, crate::format::native::names::FileKind::Cleaned)
            }
            Format::Kafka => name(base, SegmentFile::Log, Stage::Cleaned),
        }
    }

    /// Encodes `rec` at `offset` as the one batch an append writes, into `out` (cleared by the caller);
    /// returns its length.
    ///
    /// # Errors
    /// [`crate::Error::RecordTooLarge`], [`crate::Error::NullHeaderValue`] (the native format stores no null
    /// header value), or the Kafka encoder's refusal.
    pub(crate) fn encode_append(self, offset: u64, rec: &AppendRecord<'_>, out: &mut Vec<u8>) -> Result<usize> {
        match self {
            Format::Native => crate::format::native::append::encode_one(offset, rec, out),
            Format::Kafka => crate::format::kafka::append::encode_one(offset, rec, out),
        }
    }

    /// Writes what a cleaning pass keeps beside the output segment `new`, whose writer built `files` (the
    /// output's side indexes and its transaction index), each under its `.cleaned` name and owned by `cleaning`.
    ///
    /// # Errors
    /// [`crate::Error::Io`] naming the file; the pass's transaction state's error.
    pub(crate) fn write_output_indexes(
        self,
        cleaning: &crate::cleaning::Cleaning<'_>,
        new: &crate::segment::SealedSegment,
        files: &crate::format::side_indexes::SideIndexFiles,
    ) -> Result<()> {
        let crate::format::side_indexes::SideIndexFiles::Kafka(files) = files;
        match self {
            Format::Native => Ok(()),
            Format::Kafka => kafka::output::write_output_files(cleaning, new, files),
        }
    }

    /// Swaps a cleaning pass's replacements in by the format's protocol, for the commit's skeleton
    /// ([`crate::Log::commit_swap`]); `owned` are the names of the files the pass created.
    ///
    /// # Errors
    /// As the format's swap ([`native::commit::swap`], [`kafka::commit::swap`]).
    pub(crate) fn swap(
        self,
        steps: &crate::swap::SwapSteps<'_>,
        replacements: Vec<Replacement>,
        owned: &[String],
    ) -> Result<()> {
        match self {
            Format::Native => native::commit::swap(steps, replacements),
            Format::Kafka => kafka::commit::swap(steps, replacements, owned),
        }
    }

    /// Whether the outputs of `r` cover its group exactly as this format names and lays them out.
    pub(crate) fn covers_exactly(self, r: &Replacement) -> bool {
        match self {
            Format::Native => native::commit::covers_exactly(r),
            Format::Kafka => kafka::commit::covers_exactly(r),
        }
    }
}

/// A segment's transactional facts folded from the batches of a walk ([`Format::txn_fold`]).
#[derive(Debug)]
pub(crate) struct TxnFold(crate::format::kafka::txn::TxnWalk, Unparsed);

/// A batch a fold was given whose header did not parse: the fold then has no answer.
#[derive(Debug, Default)]
pub(crate) struct Unparsed(bool);

impl TxnFold {
    fn new() -> TxnFold {
        TxnFold(crate::format::kafka::txn::TxnWalk::from(0), Unparsed::default())
    }

    /// Folds the batch at `pos` of the segment `name`.
    pub(crate) fn batch(&mut self, name: &str, pos: u64, batch: &crate::format::BatchRef<'_>) {
        if let Some(h) = batch.kafka_header() {
            self.0.batch_bytes(name, pos, h, batch.bytes());
        }
    }

    /// The facts; `None` when a batch did not parse as one (a walk of its own then reports why).
    pub(crate) fn finish(self) -> Option<SegmentTxns> {
        if self.1.0 {
            return None;
        }
        self.0.finish().ok()
    }
}

impl crate::txn::WrittenTxns for TxnFold {
    /// The batch's header is parsed here (a writer has the encoded batch only).
    fn encoded(&mut self, name: &str, pos: u64, bytes: &[u8]) {
        match crate::format::kafka::codec::batch::BatchHeader::parse(bytes) {
            Ok(h) => self.0.batch_bytes(name, pos, &h, bytes),
            Err(_) => self.1 = Unparsed(true),
        }
    }

    fn finish(self: Box<Self>) -> Option<SegmentTxns> {
        TxnFold::finish(*self)
    }
}
