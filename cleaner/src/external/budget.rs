//! The external pass's sizes, which the map kinds read to size it beside the maps: a leaf, so that the map
//! kinds and the external pass do not import each other.

/// Bytes of an entry (hash high and low halves, the offset tagged with whether it is mapped).
pub const ENTRY_BYTES: usize = 24;
/// The smallest budget the external pass takes: a buffer of 16 entries (useful only to test its runs: a
/// buffer that small spills a run every 16 records).
pub const MIN_BUDGET_BYTES: usize = 16 * ENTRY_BYTES;
