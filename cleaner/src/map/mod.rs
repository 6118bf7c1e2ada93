//! Offset maps: key → latest offset over the dirty section, in a fixed memory budget.
//!
//! Pass 1 of the cleaner fills a map with [`OffsetMap::put`]; pass 2 asks it with [`OffsetMap::get`]. Maps are
//! interchangeable behind [`OffsetMap`] so that designs can be compared on the same passes.

pub(crate) mod skimpy;
pub(crate) mod table;

pub use skimpy::SkimpyMap;

/// A put refused because the map already holds [`OffsetMap::capacity`] keys and the key is new.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapFull;

/// A map from keys to the latest offset seen for them, in a fixed memory budget.
///
/// Contract for every implementation:
/// - `put` of a key already present overwrites its offset (offsets arrive in increasing order, so the latest
///   wins) and always succeeds; `put` of a new key succeeds while `len() < capacity()` and otherwise returns
///   [`MapFull`] leaving the map unchanged. The cleaner's pass 1 stops at the first refused put.
/// - `get` returns the offset last put for the key, or `None`; it always terminates, even on a full map.
///   A map may treat two distinct keys as one (the skimpy map compares digests, not keys) and must say so.
/// - `lookups` and `probes` count every `put` and `get` and the slots they inspected since the last `clear`,
///   so `probes / lookups` is the average probe length.
pub trait OffsetMap: Send {
    /// Short name for reports (`"skimpy_md5"`, ...).
    fn kind(&self) -> &'static str;
    /// Maps `key` to `offset`.
    ///
    /// # Errors
    /// [`MapFull`] when `key` is new and the map holds `capacity()` keys.
    fn put(&mut self, key: &[u8], offset: u64) -> Result<(), MapFull>;
    /// The offset mapped for `key`.
    fn get(&mut self, key: &[u8]) -> Option<u64>;
    /// Keys held.
    fn len(&self) -> usize;
    /// True when no key is held.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Keys the map accepts before it is full (at its load factor).
    fn capacity(&self) -> usize;
    /// Slots of the underlying table: `len() / slots()` is Kafka's "buffer utilization".
    fn slots(&self) -> usize;
    /// Forgets every key and resets the counters.
    fn clear(&mut self);
    /// The last offset put, if any.
    fn latest_offset(&self) -> Option<u64>;
    /// Bytes of memory the map holds (its budget, reserved once).
    fn memory_bytes(&self) -> usize;
    /// Bytes of that memory the map has touched since the last clear (resident, and what the next clear
    /// costs); a map that touches all of it says so by default.
    fn touched_bytes(&self) -> usize {
        self.memory_bytes()
    }
    /// `put` and `get` calls since the last clear.
    fn lookups(&self) -> u64;
    /// Slots inspected by those calls.
    fn probes(&self) -> u64;
}
