//! Offset maps: key → latest offset over the dirty section, in a fixed memory budget.
//!
//! Pass 1 of the cleaner fills a map with [`OffsetMap::put_batch`] (or [`OffsetMap::put_batch_superseding`],
//! which also tells which earlier offsets each put replaced); pass 2 asks it with [`OffsetMap::get_batch`]. The maps are interchangeable behind [`OffsetMap`], built by a [`MapKind`] from a
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
mod seam;
pub(crate) mod skimpy;
pub(crate) mod table;

pub use compact::CompactMap;
pub use fullkey::FullKeyMap;
pub use hash::{HashBits, prefetch};
pub use kind::BuildError;
pub(crate) use seam::superseded_by;
pub use seam::{BATCH, ExternalPhases, MapFull, MapKind, MapStats, OffsetMap, Probes};
pub use skimpy::SkimpyMap;
