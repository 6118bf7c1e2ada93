//! Offset maps: key → latest offset over the dirty section, in a fixed memory budget.
//!
//! Pass 1 of the cleaner fills a map with [`OffsetMap::put_batch`]; pass 2 asks it with
//! [`OffsetMap::get_batch`]. The maps are interchangeable behind [`OffsetMap`], built by a [`MapKind`] from a
//! byte budget and a load factor, so that designs can be compared on the same passes:
//!
//! | kind | slot | bytes per key at its load factor | exact | P(some pair of keys collides) at 10^6 / 10^8 / 10^10 keys |
//! |---|---|---|---|---|
//! | `skimpy` (Kafka's `SkimpyOffsetMap`) | 24 B: MD5 digest (16) + offset (8) | 26.7 at 0.9 | no | 1.5e-27 / 1.5e-23 / 1.5e-19 |
//! | `fullkey` (hashbrown, full keys) | 16 B entry + 1 control byte; the key in an arena | the key's length once or twice (the arena doubles) + 19 to 39 of table (17-byte buckets at a load of 7/16 to 7/8): 35 to 71 for 16-byte keys, 52 measured at 10^6 keys and 44.5 at 10^7 | yes | 0 |
//! | `compact` (ours) | 12 B: 56-bit fingerprint + 8-bit probe distance + 32-bit relative offset | 13.3 at 0.9 | no | 6.2e-12 / 6.2e-10 / 6.2e-8 (see [`MapKind::collision_probability`]) |
//!
//! Speed, measured on this project's 2-core machine in one run (`cargo run --release -p bench --bin map-bench`;
//! 16-byte keys, 4 puts per key, the map filled to 0.9; ns per operation, put / get of a present key / get of
//! an absent key; the bare limit is 16-byte slots, xxh3 and linear probing with the same batching):
//!
//! | | 10^6 keys | 10^7 keys |
//! |---|---|---|
//! | bare limit | 53 / 51 / 145 | 108 / 88 / 331 |
//! | `skimpy` | 262 / 225 / 411 | 267 / 239 / 452 |
//! | `fullkey` | 315 / 302 / 50 | 274 / 271 / 100 |
//! | `compact` | 74 / 60 / 57 | 97 / 91 / 92 |
//!
//! What a collision does: two distinct keys that a map cannot tell apart count as one key, so when both are
//! in the dirty section, the older key's latest record is taken for a stale copy of the newer key and dropped
//! by pass 2. The key is then lost from the log. `fullkey` compares whole keys and never does this; the other
//! two accept the (tiny) risk to hold a key in a fixed, small number of bytes, as Kafka does.
//!
//! Contract for every implementation:
//! - [`OffsetMap::begin`] forgets every key and sets the pass's base offset, costing in proportion to what the
//!   last pass touched (not to the budget).
//! - `put` of a key already present overwrites its offset (offsets arrive in increasing order, so the latest
//!   wins) and succeeds (in `skimpy`, Kafka's design, only while the map is below its capacity: Kafka's cleaner
//!   stops at the first keyed record once its map is full, a key it holds included); `put` of a new key
//!   succeeds while the budget can take it and otherwise returns [`MapFull`], leaving the map unchanged. The
//!   cleaner's pass 1 stops at the first refused put. A map may also refuse an offset it cannot represent
//!   (the compact map stores offsets relative to the base).
//! - `get` returns the offset last put for the key, or `None`; it always terminates quickly, even on a full
//!   map, and takes `&self` so that one map can serve several readers.

mod compact;
mod fullkey;
pub(crate) mod hash;
mod kind;
mod md5x;
pub(crate) mod skimpy;
pub(crate) mod table;

pub use compact::CompactMap;
pub use fullkey::FullKeyMap;
pub use hash::{HashBits, prefetch};
pub use kind::{BuildError, MapKind};
pub use skimpy::SkimpyMap;

use serde::{Deserialize, Serialize};

/// A put refused because the budget cannot take the key (or the map cannot represent its offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapFull;

/// How many keys a batch carries at most: enough to hide the memory latency of a random probe behind the
/// hashing of the others (16 in flight is what the machine's measurements favour).
pub const BATCH: usize = 16;

/// Counters of lookups made through `&self` ([`OffsetMap::get`]), kept by the caller so that a shared map
/// needs no atomic counters on its hot path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Probes {
    /// Lookups.
    pub lookups: u64,
    /// Slots (or entries) inspected by them.
    pub probes: u64,
}

/// What a map reports about itself after a pass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MapStats {
    /// Keys mapped.
    pub entries: u64,
    /// Keys the budget takes at most (exact for slot maps; for `fullkey`, for keys the size of the ones seen).
    pub capacity: u64,
    /// Slots of the table (`fullkey`: buckets of its hash table).
    pub slots: u64,
    /// Bytes of a slot.
    pub bytes_per_slot: f64,
    /// `entries / slots`, Kafka's "buffer utilization".
    pub utilization: f64,
    /// Bytes of the map's budget, reserved once (as address space: untouched pages cost no memory).
    pub memory_bytes: u64,
    /// Bytes of the table the pass sized for its keys, at its largest: what it may touch (for `fullkey`,
    /// the memory it holds).
    #[serde(default)]
    pub allocated_bytes: u64,
    /// Bytes the map touched since its last clear (resident memory, and what the next clear costs); for
    /// `fullkey`, the memory it holds.
    pub touched_bytes: u64,
    /// Budget bytes per key held: `memory_bytes / entries` for slot maps at their load factor, real bytes
    /// held per key for `fullkey`.
    pub bytes_per_key: f64,
    /// Puts and gets since the last clear.
    pub lookups: u64,
    /// Slots inspected by them.
    pub probes: u64,
    /// `probes / lookups` (1.0 is a perfect hash).
    pub probes_per_lookup: f64,
    /// The external pass: sorted runs it wrote to its spill file.
    #[serde(default)]
    pub spilled_runs: u64,
    /// The external pass: bytes of those runs.
    #[serde(default)]
    pub spilled_bytes: u64,
}

/// A map from keys to the latest offset seen for them, in a fixed memory budget.
pub trait OffsetMap: Send + Sync {
    /// The kind of map.
    fn kind(&self) -> MapKind;

    /// Forgets every key and starts a pass whose offsets are at least `base_offset`.
    fn begin(&mut self, base_offset: u64);

    /// As [`OffsetMap::begin`] for a pass that will put at most `max_keys` keys, all below `base_offset +
    /// max_keys` (the offsets of its dirty section bound both): a map may then take no more memory than those
    /// keys need, within its budget, instead of its whole budget.
    fn begin_bounded(&mut self, base_offset: u64, max_keys: u64) {
        let _ = max_keys;
        self.begin(base_offset);
    }

    /// Maps `key` to `offset`.
    ///
    /// # Errors
    /// [`MapFull`] when `key` is new and the budget cannot take it, or `offset` cannot be represented.
    fn put(&mut self, key: &[u8], offset: u64) -> Result<(), MapFull>;

    /// Puts a run of keys in order; returns how many were put before the first refused one (all of them when
    /// none was). Maps that hide memory latency override it (hash the run, prefetch the slots, then probe).
    fn put_batch(&mut self, batch: &[(&[u8], u64)]) -> usize {
        batch.iter().take_while(|&&(k, o)| self.put(k, o).is_ok()).count()
    }

    /// The offset mapped for `key`.
    fn get(&self, key: &[u8], probes: &mut Probes) -> Option<u64>;

    /// Looks up a run of keys: `out[i]` is the offset mapped for `keys[i]`. `out` is at least as long as
    /// `keys`.
    fn get_batch(&self, keys: &[&[u8]], out: &mut [Option<u64>], probes: &mut Probes) {
        for (k, o) in keys.iter().zip(out.iter_mut()) {
            *o = self.get(k, probes);
        }
    }

    /// Keys held.
    fn len(&self) -> usize;

    /// True when no key is held.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keys the budget takes at most (for `fullkey`, an estimate for keys like the ones seen).
    fn capacity(&self) -> usize;

    /// The last offset put, if any.
    fn latest_offset(&self) -> Option<u64>;

    /// The map's figures, counting the puts of this pass (gets are counted by their callers in [`Probes`]).
    fn stats(&self) -> MapStats;
}
