//! What a pass did, as a serialisable record (the figures Kafka logs after a pass, and more).

use serde::{Deserialize, Serialize};

use crate::map::MapStats;

/// Statistics of one cleaning pass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CleanStats {
    /// Offset map kind.
    pub map: String,
    /// Threads of the pass (pass 2 copies groups on them).
    pub threads: usize,
    /// True for a purge pass (every horizon stamped by an earlier pass counts as expired).
    pub purge: bool,
    /// The clock reading the pass used, in ms.
    pub now_ms: i64,
    /// First dirty offset (the checkpoint) when the pass began.
    pub first_dirty_offset: u64,
    /// First offset not mapped: the new checkpoint.
    pub end_offset: u64,
    /// The first offset the pass could not take (the active segment's base, or the first segment within
    /// `min.compaction.lag.ms`): where the dirty section ends for this pass.
    pub first_uncleanable_offset: u64,
    /// Bytes of the closed segments the pass could take when it began.
    pub dirty_bytes: u64,
    /// Bytes of the closed segments below the checkpoint when it began.
    pub clean_bytes: u64,
    /// Base offset of the active segment, where the dirty section ends at most.
    pub active_base: u64,
    /// True when the map filled before the end of the dirty section (a partial pass).
    pub map_full: bool,
    /// Set when the map filled and the pass mapped the dirty section again with the external pass
    /// ([`crate::CleanerConfig::one_pass`]): what the map would have done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fell_back: Option<FellBack>,
    /// Pass 1, building the map.
    pub pass1: Pass1Stats,
    /// Pass 2, re-copying.
    pub pass2: Pass2Stats,
    /// The offset map after the pass (puts of pass 1 and gets of pass 2 counted).
    pub offset_map: MapStats,
    /// Tombstones kept (stamped or still within their horizon).
    pub tombstones_kept: u64,
    /// Tombstones kept and stamped with a delete horizon for the first time.
    pub tombstones_stamped: u64,
    /// Tombstones dropped because their horizon had passed (shadowed ones count as stale).
    pub tombstones_dropped: u64,
    /// Records dropped because a newer record of their key was mapped.
    pub stale_dropped: u64,
    /// Records without a key, dropped.
    pub invalid_records: u64,
    /// Groups of adjacent segments pass 2 copied (each into one output).
    pub groups: u64,
    /// Outputs written: groups whose segments were written anew as one.
    pub segments_rewritten: u64,
    /// Segments merged into the segment before them by a grouped output.
    pub segments_merged: u64,
    /// Closed segments that lost every record (their whole group did) and disappeared.
    pub segments_removed: u64,
    /// Groups of one segment that needed no change and were left as they were.
    pub segments_unchanged: u64,
    /// Bytes of the segments the pass wrote (groups left unchanged cost none).
    pub bytes_written: u64,
    /// Seconds spent swapping the new segments in and writing the checkpoint.
    pub swap_seconds: f64,
    /// Seconds for the whole pass.
    pub total_seconds: f64,
}

impl CleanStats {
    /// For a partial pass, about how many passes the dirty section it started on takes in all, judged by the
    /// share of its offsets this pass mapped (`None` for a pass that mapped everything).
    pub fn passes_needed(&self) -> Option<u64> {
        if !self.map_full {
            return None;
        }
        let mapped = self.end_offset.saturating_sub(self.first_dirty_offset).max(1);
        let dirty = self.first_uncleanable_offset.saturating_sub(self.first_dirty_offset);
        Some(dirty.div_ceil(mapped).max(2))
    }
}

/// A map that filled, in a pass that then took the external pass ([`crate::CleanerConfig::one_pass`]), or that
/// would have, in a pass that took the external pass at once ([`FellBack::estimated`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FellBack {
    /// The map (`skimpy`, `fullkey`, `compact`).
    pub map: String,
    /// The offset of the first key it refused: where its pass would have ended.
    pub refused_at: u64,
    /// About how many passes it would have taken over the dirty section ([`CleanStats::passes_needed`]).
    pub passes: u64,
    /// Records and bytes its partial pass 1 read before it filled (counted in the pass's pass 1 too; none when
    /// [`FellBack::estimated`]).
    pub records_read: u64,
    /// Bytes of them.
    pub bytes_read: u64,
    /// The map was not run (`auto` took the external pass at once): `refused_at` is estimated from a sketch of
    /// the keys the external pass mapped, within about 1% of the keys (`external/fill_watch.rs`), and nothing
    /// was read twice. Whether it would have filled is told from the distinct keys mapped: exact but at two
    /// edges (a section of exactly the map's capacity counts as filling; a refusal at a probe limit below the
    /// capacity is not foreseen).
    #[serde(default)]
    pub estimated: bool,
}

/// Pass 1 figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Pass1Stats {
    /// Records scanned in the dirty section.
    pub records_read: u64,
    /// Bytes of those records.
    pub bytes_read: u64,
    /// Seconds.
    pub seconds: f64,
}

/// Pass 2 figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Pass2Stats {
    /// Closed segments scanned.
    pub segments_read: u64,
    /// Batches scanned (records, in the native format).
    pub batches_read: u64,
    /// Batches copied as their bytes are.
    pub batches_copied: u64,
    /// Batches rewritten (records dropped from them, or a delete horizon stamped).
    pub batches_rewritten: u64,
    /// Batches that lost every record and went.
    pub batches_removed: u64,
    /// Kafka batches that lost every record and stayed, empty, as their producer's last batch.
    pub empty_batches_kept: u64,
    /// Kafka control batches (transaction markers) kept as they were.
    pub control_batches_kept: u64,
    /// Markers stamped with a delete horizon (their transaction's data gone; removed once it passes).
    pub markers_stamped: u64,
    /// Markers removed (their horizon passed).
    pub markers_removed: u64,
    /// Kafka data batches of aborted transactions removed (or emptied, when their producer's last).
    pub aborted_batches_removed: u64,
    /// Records of those batches.
    pub aborted_records_removed: u64,
    /// Records scanned.
    pub records_read: u64,
    /// Bytes scanned.
    pub bytes_read: u64,
    /// Records kept.
    pub records_kept: u64,
    /// Bytes kept (after re-encoding stamped tombstones).
    pub bytes_kept: u64,
    /// Seconds.
    pub seconds: f64,
}
