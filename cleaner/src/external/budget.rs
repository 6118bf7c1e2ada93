//! The external pass's sizes, which the map kinds read to size it beside the maps: a leaf, so that the map
//! kinds and the external pass do not import each other.

/// Bytes of an entry (the hash's high half, and a word of its low half's top bits, the offset from the pass's
/// first and whether it is mapped: `entry.rs`).
pub const ENTRY_BYTES: usize = 16;
/// The smallest budget the external pass takes: a buffer of 16 entries (useful only to test its runs: a
/// buffer that small spills a run every 16 records).
pub const MIN_BUDGET_BYTES: usize = 16 * ENTRY_BYTES;
