//! What a pass did, as a serialisable record (the figures Kafka logs after a pass, and more).

use serde::{Deserialize, Serialize};

/// Statistics of one cleaning pass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CleanStats {
    /// Offset map kind.
    pub map: String,
    /// True for a purge pass (every horizon stamped by an earlier pass counts as expired).
    pub purge: bool,
    /// The clock reading the pass used, in ms.
    pub now_ms: i64,
    /// First dirty offset (the checkpoint) when the pass began.
    pub first_dirty_offset: u64,
    /// First offset not mapped: the new checkpoint.
    pub end_offset: u64,
    /// Base offset of the active segment, where the dirty section ends at most.
    pub active_base: u64,
    /// True when the map filled before the end of the dirty section (a partial pass).
    pub map_full: bool,
    /// Pass 1, building the map.
    pub pass1: Pass1Stats,
    /// Pass 2, re-copying.
    pub pass2: Pass2Stats,
    /// The offset map after pass 1.
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
    /// Closed segments written anew.
    pub segments_rewritten: u64,
    /// Closed segments that lost every record and disappeared.
    pub segments_removed: u64,
    /// Closed segments within the pass that needed no change and were left as they were.
    pub segments_unchanged: u64,
    /// Seconds spent swapping the new segments in and writing the checkpoint.
    pub swap_seconds: f64,
    /// Seconds for the whole pass.
    pub total_seconds: f64,
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

/// The offset map's figures after pass 1.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MapStats {
    /// Keys mapped.
    pub entries: u64,
    /// Keys the map takes before it is full.
    pub capacity: u64,
    /// Slots of the table.
    pub slots: u64,
    /// `entries / slots`, Kafka's "buffer utilization".
    pub utilization: f64,
    /// Bytes of the map (its budget).
    pub memory_bytes: u64,
    /// Bytes of the map this pass touched (resident memory; what clearing costs).
    pub touched_bytes: u64,
    /// Puts and gets in both passes.
    pub lookups: u64,
    /// Slots inspected by them.
    pub probes: u64,
    /// `probes / lookups` (1.0 is a perfect hash).
    pub probes_per_lookup: f64,
}
