//! The seam every offset map is behind: the [`OffsetMap`] trait, its figures and the kinds of map there are
//! ([`MapKind`], whose sizes and builders live in `kind.rs`). A leaf of the maps: each map and the builder
//! import it, and it imports none of them.

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
    /// Keys the budget takes at most (exact for slot maps; for `fullkey`, for keys the size of the ones seen;
    /// `u64::MAX` for the external pass, which takes any number in one pass).
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
    /// Slots inspected by them (a get of pass 2 answered by a bit, the superseded offsets' or the external
    /// pass's stale offsets', counts one).
    pub probes: u64,
    /// `probes / lookups` (1.0 is a perfect hash).
    pub probes_per_lookup: f64,
    /// The external pass: sorted runs it wrote to its spill file.
    #[serde(default)]
    pub spilled_runs: u64,
    /// The external pass: bytes of those runs.
    #[serde(default)]
    pub spilled_bytes: u64,
    /// The external pass: where its pass 1 spent its time beyond reading the records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_phases: Option<ExternalPhases>,
}

/// Where the external pass's pass 1 spends its time besides reading the segments and hashing the keys: the
/// parts a floor of reading and writing does not have.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ExternalPhases {
    /// Seconds sorting the buffer by hash (each full buffer, and the last).
    pub sort_seconds: f64,
    /// Seconds judging each sorted buffer and writing its survivors as a run.
    pub spill_seconds: f64,
    /// Seconds merging the runs by hash and judging each key across them.
    pub merge_seconds: f64,
    /// Entries the merge read back from the runs and the last buffer.
    pub merged_entries: u64,
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

    /// Forgets every key and gives back what memory the map can (a map bounded to no key keeps one slot): a
    /// pass whose full map fell back to the external pass then does not hold both buffers at once.
    fn release(&mut self) {
        self.begin_bounded(0, 0);
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

    /// As [`OffsetMap::put_batch`], and pushes onto `superseded` each earlier offset a put replaced (the key's
    /// offset before it, below the one put): pass 1 then knows every record of the dirty section a later one
    /// superseded, and pass 2 asks a bit set by offset instead of the map by key. This default asks the map
    /// before each put; the maps read the earlier offset in the slot the put overwrites.
    fn put_batch_superseding(&mut self, batch: &[(&[u8], u64)], superseded: &mut Vec<u64>) -> usize {
        let mut probes = Probes::default();
        let mut done = 0;
        for &(key, offset) in batch {
            let earlier = self.get(key, &mut probes);
            if self.put(key, offset).is_err() {
                break;
            }
            superseded_by(earlier, offset, &mut |o| superseded.push(o));
            done += 1;
        }
        done
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

/// Hands `superseded` the offset a put of `offset` replaced (`earlier`, the key's offset before it), if any:
/// only an earlier offset below the one put is superseded (pass 1 puts offsets in increasing order).
#[inline]
pub(crate) fn superseded_by(earlier: Option<u64>, offset: u64, superseded: &mut impl FnMut(u64)) {
    if let Some(e) = earlier.filter(|&e| e < offset) {
        superseded(e);
    }
}

/// The offset maps there are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MapKind {
    /// Kafka's `SkimpyOffsetMap`: MD5 digests and offsets, 24 bytes a slot.
    Skimpy,
    /// Whole keys in a hashbrown table over a key arena: exact, bytes per key depending on key length.
    FullKey,
    /// This project's map: a 56-bit fingerprint, a probe distance and a 32-bit relative offset in 12 bytes a
    /// slot, Robin Hood ordering so that absent keys are found absent in a few probes.
    Compact,
    /// Not a map: the external pass, which sorts runs of (key hash, offset) in its budget, spills them to a
    /// temporary file and merges them, so that one pass cleans any number of distinct keys (see the
    /// cleaner's `external` module). It builds no [`OffsetMap`].
    External,
}

impl MapKind {
    /// Every in-memory map, in the order reports list them.
    pub const ALL: [MapKind; 3] = [MapKind::Skimpy, MapKind::FullKey, MapKind::Compact];

    /// Every way a pass maps its keys: the maps, then the external pass.
    pub const WITH_EXTERNAL: [MapKind; 4] = [MapKind::Skimpy, MapKind::FullKey, MapKind::Compact, MapKind::External];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            MapKind::Skimpy => "skimpy",
            MapKind::FullKey => "fullkey",
            MapKind::Compact => "compact",
            MapKind::External => "external",
        }
    }

    /// The kind called `name`.
    pub fn from_name(name: &str) -> Option<MapKind> {
        MapKind::WITH_EXTERNAL.into_iter().find(|k| k.name() == name)
    }
}

impl std::fmt::Display for MapKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl MapStats {
    /// A table's counts: `entries` keys in `slots` slots (its utilization), `probes` slots inspected by
    /// `lookups` puts and gets (probes a lookup); the sizes are the map's to add.
    pub(crate) fn counted(entries: u64, slots: u64, lookups: u64, probes: u64) -> MapStats {
        MapStats {
            entries,
            slots,
            utilization: ratio(entries, slots),
            lookups,
            probes,
            probes_per_lookup: ratio(probes, lookups),
            ..MapStats::default()
        }
    }
}

/// `n / d`, or 0 while `d` is 0: a map's ratios (bytes a key, probes a lookup) before it holds anything.
pub(crate) fn ratio(n: u64, d: u64) -> f64 {
    if d == 0 { 0.0 } else { n as f64 / d as f64 }
}
