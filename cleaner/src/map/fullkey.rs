//! [`FullKeyMap`]: whole keys in a hashbrown table, exact (two distinct keys are never taken for one).
//!
//! Keys are copied into one arena (a single growing buffer, not one allocation per key); the table holds
//! 16-byte entries `(arena start u32, key length u32, offset u64)` and hashbrown's control byte per bucket.
//! The map honours the same byte budget as the slot maps by accounting its real memory: the table's buckets
//! (which double as hashbrown grows them, at most 7/8 full) and the arena. A new key is refused with
//! [`MapFull`] when holding it would take the map past its budget at any moment. hashbrown grows a table by
//! allocating the new one beside the old (a map that priced only the table it ended with held 1.3-1.5 times its
//! budget while it grew), so the map grows its table itself: the entries move out into a plain vector (16 bytes
//! an entry, less than the 17-byte buckets at up to 7/8 full they leave), the old table is freed, and the new
//! one is built from the vector; a growth is priced as the new table, that vector and the arena together. So
//! its bytes per key depend on key length: 16 + 1 bytes of entry per bucket at a load between 7/16 and 7/8,
//! plus the key itself.
//!
//! A batch ([`OffsetMap::put_batch`], [`OffsetMap::get_batch`]) first walks every key's probe sequence
//! without comparing, prefetching each candidate's bytes in the arena, then looks the keys up: the misses of
//! a batch overlap instead of two a key (the table, then the arena) paid one after the other. The answers are
//! those of one key at a time.

use hashbrown::HashTable;

use super::hash::{HashBits, prefetch, xxh3_64};
use super::{BATCH, MapFull, MapKind, MapStats, OffsetMap, Probes, superseded_by};

#[derive(Debug, Clone, Copy)]
struct Entry {
    start: u32,
    len: u32,
    offset: u64,
}

/// Control bytes hashbrown adds after the buckets (its SIMD group width).
const GROUP_WIDTH: usize = 16;

/// The exact map (see the [module docs](self)).
pub struct FullKeyMap {
    table: HashTable<Entry>,
    /// Bucket count of the table as sized (tracked so that growth can be priced before it happens).
    buckets: usize,
    arena: Vec<u8>,
    budget: usize,
    /// Key length seen most, for [`OffsetMap::capacity`]'s estimate.
    key_bytes_seen: (u64, u64),
    latest: Option<u64>,
    lookups: u64,
    probes: u64,
    bits: HashBits,
}

impl std::fmt::Debug for FullKeyMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FullKeyMap")
            .field("entries", &self.table.len())
            .field("buckets", &self.buckets)
            .field("arena", &self.arena.len())
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

/// hashbrown's bucket count for a table asked to hold `items`.
fn buckets_for(items: usize) -> usize {
    match items {
        0 => 0,
        1..=3 => 4,
        4..=7 => 8,
        n => (n.saturating_mul(8) / 7).next_power_of_two(),
    }
}

/// Items a table of `buckets` buckets holds before it grows.
fn items_in(buckets: usize) -> usize {
    if buckets < 8 { buckets.saturating_sub(1) } else { buckets / 8 * 7 }
}

/// Bytes of a table of `buckets` buckets.
fn table_bytes(buckets: usize) -> usize {
    if buckets == 0 { 0 } else { buckets.saturating_mul(FullKeyMap::ENTRY_BYTES).saturating_add(GROUP_WIDTH) }
}

/// What the map holds, as far as its memory goes.
struct Held {
    buckets: usize,
    keys: usize,
    arena_len: usize,
    arena_cap: usize,
}

/// The table and arena sizes after holding one more key.
struct Grown {
    buckets: usize,
    arena_cap: usize,
}

/// Bytes held at the peak of a table growth to `buckets` with `keys` entries: the new table and the entries
/// moved out of the old one (freed before the new one is allocated, and smaller than it).
fn growth_bytes(buckets: usize, keys: usize) -> usize {
    table_bytes(buckets).saturating_add(keys.saturating_mul(std::mem::size_of::<Entry>()))
}

/// How the map grows to hold one more key of `key_bytes` bytes, or `None` when that would take it past
/// `budget` at any moment. The table grows first ([`growth_bytes`], beside the arena as it is); then the arena
/// grows (a reallocation: large blocks are moved by the kernel's page tables, not copied beside themselves).
/// The arena doubles, but only into room that still lets the table double beside it later; once the table
/// cannot grow again, it doubles into what the budget leaves.
/// Keys are addressed by `u32` arena offsets, so the arena stays below 4 GiB.
fn plan(budget: usize, held: &Held, key_bytes: usize) -> Option<Grown> {
    let buckets = if held.keys + 1 > items_in(held.buckets) {
        buckets_for(held.keys + 1).max(held.buckets.saturating_mul(2))
    } else {
        held.buckets
    };
    let needed = held.arena_len.checked_add(key_bytes).filter(|&n| n <= u32::MAX as usize)?;
    if buckets != held.buckets && growth_bytes(buckets, held.keys).saturating_add(held.arena_cap) > budget {
        return None;
    }
    let steady_room = budget.checked_sub(table_bytes(buckets))?.min(u32::MAX as usize);
    if needed > steady_room {
        return None;
    }
    let arena_cap = if needed <= held.arena_cap {
        held.arena_cap
    } else {
        let next_growth = growth_bytes(buckets.saturating_mul(2), items_in(buckets));
        let growth_room = budget.saturating_sub(next_growth).min(steady_room);
        let doubled = held.arena_cap.saturating_mul(2).max(needed);
        if doubled <= growth_room {
            doubled
        } else if needed <= growth_room {
            growth_room
        } else {
            doubled.min(steady_room)
        }
    };
    Some(Grown { buckets, arena_cap })
}

impl FullKeyMap {
    /// Bytes per bucket: a 16-byte entry and a control byte.
    pub const ENTRY_BYTES: usize = std::mem::size_of::<Entry>() + 1;

    /// An empty map that will hold keys while its memory stays within `budget` bytes. Nothing is allocated
    /// until keys arrive.
    pub fn new(budget: usize, bits: HashBits) -> Self {
        FullKeyMap {
            table: HashTable::new(),
            buckets: 0,
            arena: Vec::new(),
            budget,
            key_bytes_seen: (0, 0),
            latest: None,
            lookups: 0,
            probes: 0,
            bits,
        }
    }

    /// Keys of `key_bytes` bytes a budget of `bytes` holds: the map's own growth ([`plan`]) followed from
    /// one growth (of the table or the arena) to the next.
    pub fn capacity_for(bytes: usize, key_bytes: usize) -> usize {
        let mut held = Held { buckets: 0, keys: 0, arena_len: 0, arena_cap: 0 };
        loop {
            let Some(next) = plan(bytes, &held, key_bytes) else { return held.keys };
            // That key is held, and so is every later one until the table or the arena must grow again.
            let keys = held.keys + 1;
            let table_room = items_in(next.buckets);
            let arena_room = next.arena_cap.checked_div(key_bytes).unwrap_or(usize::MAX);
            let keys = keys.max(table_room.min(arena_room));
            held = Held { buckets: next.buckets, keys, arena_len: keys * key_bytes, arena_cap: next.arena_cap };
        }
    }

    fn hash(&self, key: &[u8]) -> u64 {
        self.bits.mask(u128::from(xxh3_64(key))) as u64
    }

    fn key_of<'a>(arena: &'a [u8], e: &Entry) -> &'a [u8] {
        arena.get(e.start as usize..e.start as usize + e.len as usize).unwrap_or_default()
    }

    /// Grows the table to `buckets` buckets without holding the old table beside the new: the entries move
    /// out into a vector, the old table is freed, the new one is allocated and the entries go back. If an
    /// allocation fails, the map holds what it held (the table rebuilt at its old size) and the key is refused.
    fn grow_table(&mut self, buckets: usize) -> Result<(), MapFull> {
        let mut entries = Vec::new();
        if entries.try_reserve_exact(self.table.len()).is_err() {
            return Err(MapFull);
        }
        entries.extend(self.table.drain());
        self.table = HashTable::new();
        let arena = &self.arena;
        let bits = self.bits;
        let rehash = |e: &Entry| bits.mask(u128::from(xxh3_64(Self::key_of(arena, e)))) as u64;
        // Exactly the items `buckets` holds: hashbrown then allocates `buckets` (asking for more makes it take
        // the next power of two, twice what the budget was priced at).
        let grown = self.table.try_reserve(items_in(buckets), rehash).is_ok();
        if !grown {
            // The old table's memory was just freed: take it back.
            self.table.reserve(items_in(self.buckets), rehash);
        }
        for e in entries {
            self.table.insert_unique(rehash(&e), e, rehash);
        }
        if grown {
            self.buckets = buckets;
            Ok(())
        } else {
            Err(MapFull)
        }
    }

    /// Hashes a run of keys (at most [`BATCH`]) and walks each one's probe sequence without comparing keys,
    /// asking for the arena's line of every candidate on the way. The walks do not depend on one another, so
    /// the core overlaps their misses on the table; the lookups that follow find the table's lines and the
    /// keys' bytes in the cache instead of missing twice, one miss after the other, a key.
    fn hash_and_prefetch(&self, keys: &[&[u8]], hashes: &mut [u64; BATCH]) {
        for (h, key) in hashes.iter_mut().zip(keys) {
            *h = self.hash(key);
            let _ = self.table.find(*h, |e| {
                prefetch(&self.arena, e.start as usize);
                false
            });
        }
    }

    /// The put of a key whose hash is known: the key's earlier offset when it held one (the put replaced it),
    /// `None` for a new key.
    fn put_hashed(&mut self, key: &[u8], hash: u64, offset: u64) -> Result<Option<u64>, MapFull> {
        self.lookups += 1;
        let arena = &self.arena;
        let mut compared = 0u64;
        if let Some(e) = self.table.find_mut(hash, |e| {
            compared += 1;
            Self::key_of(arena, e) == key
        }) {
            let earlier = std::mem::replace(&mut e.offset, offset);
            self.probes += compared.max(1);
            self.latest = Some(offset);
            return Ok(Some(earlier));
        }
        self.probes += compared.max(1);
        // A new key: price the table's growth and the arena's before anything changes.
        let len = self.table.len();
        let held =
            Held { buckets: self.buckets, keys: len, arena_len: self.arena.len(), arena_cap: self.arena.capacity() };
        let Some(grown) = plan(self.budget, &held, key.len()) else { return Err(MapFull) };
        if grown.buckets != self.buckets {
            self.grow_table(grown.buckets)?;
        }
        if grown.arena_cap > self.arena.capacity()
            && self.arena.try_reserve_exact(grown.arena_cap - self.arena.len()).is_err()
        {
            return Err(MapFull);
        }
        let start = self.arena.len() as u32;
        self.arena.extend_from_slice(key);
        let arena = &self.arena;
        let bits = self.bits;
        self.table.insert_unique(hash, Entry { start, len: key.len() as u32, offset }, |e| {
            bits.mask(u128::from(xxh3_64(Self::key_of(arena, e)))) as u64
        });
        self.key_bytes_seen.0 += key.len() as u64;
        self.key_bytes_seen.1 += 1;
        self.latest = Some(offset);
        Ok(None)
    }

    /// Puts a run of keys in order, hashed [`BATCH`] at a time; hands `superseded` each earlier offset a put
    /// replaced, and returns how many keys were put before the first refused one.
    #[inline]
    fn put_run(&mut self, batch: &[(&[u8], u64)], mut superseded: impl FnMut(u64)) -> usize {
        let mut done = 0;
        let mut hashes = [0u64; BATCH];
        let mut keys: [&[u8]; BATCH] = [&[]; BATCH];
        for run in batch.chunks(BATCH) {
            for (k, &(key, _)) in keys.iter_mut().zip(run) {
                *k = key;
            }
            self.hash_and_prefetch(&keys[..run.len()], &mut hashes);
            for (&h, &(key, offset)) in hashes.iter().zip(run) {
                match self.put_hashed(key, h, offset) {
                    Ok(earlier) => superseded_by(earlier, offset, &mut superseded),
                    Err(MapFull) => return done,
                }
                done += 1;
            }
        }
        done
    }

    /// The lookup of a key whose hash is known.
    fn get_hashed(&self, key: &[u8], hash: u64, probes: &mut Probes) -> Option<u64> {
        probes.lookups += 1;
        let mut compared = 0u64;
        let found = self.table.find(hash, |e| {
            compared += 1;
            Self::key_of(&self.arena, e) == key
        });
        probes.probes += compared.max(1);
        found.map(|e| e.offset)
    }

    /// Memory held: the table and the arena.
    fn memory(&self) -> usize {
        table_bytes(self.buckets) + self.arena.capacity()
    }
}

impl OffsetMap for FullKeyMap {
    fn kind(&self) -> MapKind {
        MapKind::FullKey
    }

    fn begin(&mut self, _base_offset: u64) {
        // Keep the memory (it was within budget) for the next pass; forget the keys.
        self.table.clear();
        self.arena.clear();
        self.key_bytes_seen = (0, 0);
        self.latest = None;
        self.lookups = 0;
        self.probes = 0;
    }

    fn put(&mut self, key: &[u8], offset: u64) -> Result<(), MapFull> {
        self.put_hashed(key, self.hash(key), offset).map(drop)
    }

    fn put_batch(&mut self, batch: &[(&[u8], u64)]) -> usize {
        self.put_run(batch, |_| {})
    }

    fn put_batch_superseding(&mut self, batch: &[(&[u8], u64)], superseded: &mut Vec<u64>) -> usize {
        self.put_run(batch, |earlier| superseded.push(earlier))
    }

    fn get(&self, key: &[u8], probes: &mut Probes) -> Option<u64> {
        self.get_hashed(key, self.hash(key), probes)
    }

    fn get_batch(&self, keys: &[&[u8]], out: &mut [Option<u64>], probes: &mut Probes) {
        let mut hashes = [0u64; BATCH];
        for (run, out) in keys.chunks(BATCH).zip(out.chunks_mut(BATCH)) {
            self.hash_and_prefetch(run, &mut hashes);
            for ((&h, key), o) in hashes.iter().zip(run).zip(out.iter_mut()) {
                *o = self.get_hashed(key, h, probes);
            }
        }
    }

    fn len(&self) -> usize {
        self.table.len()
    }

    /// An estimate for keys as long as the ones seen this pass (one byte long before any is seen, so that a
    /// budget that can hold any key never reads as zero).
    fn capacity(&self) -> usize {
        let (bytes, keys) = self.key_bytes_seen;
        let mean = bytes.checked_div(keys).map_or(1, |m| m.max(1) as usize);
        Self::capacity_for(self.budget, mean)
    }

    fn latest_offset(&self) -> Option<u64> {
        self.latest
    }

    fn stats(&self) -> MapStats {
        let entries = self.table.len();
        let memory = self.memory() as u64;
        MapStats {
            capacity: self.capacity() as u64,
            bytes_per_slot: Self::ENTRY_BYTES as f64,
            memory_bytes: self.budget as u64,
            allocated_bytes: memory,
            touched_bytes: memory,
            bytes_per_key: super::seam::ratio(memory, entries as u64),
            ..MapStats::counted(entries as u64, self.buckets as u64, self.lookups, self.probes)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A distinct key of `len` bytes (at least 4) for every `i` below 2^32.
    fn key(i: u64, len: usize) -> Vec<u8> {
        let mut k = (i as u32).to_le_bytes().to_vec();
        k.resize(len, b'.');
        k
    }

    #[test]
    fn exact_and_within_its_budget_for_any_key_length() {
        for len in [4usize, 16, 64, 300] {
            let budget = 256 << 10;
            let mut m = FullKeyMap::new(budget, HashBits::ALL);
            m.begin(0);
            let mut n = 0u64;
            while m.put(&key(n, len), n).is_ok() {
                n += 1;
                assert!(m.memory() <= budget, "{len}-byte keys: {} bytes held", m.memory());
                // The table priced is the table hashbrown allocated.
                assert_eq!(m.table.capacity(), items_in(m.buckets), "{len}-byte keys, {n} keys");
            }
            assert_eq!(n as usize, FullKeyMap::capacity_for(budget, len), "{len}-byte keys: the formula is exact");
            for i in 0..n {
                assert_eq!(m.get(&key(i, len), &mut Probes::default()), Some(i));
            }
            assert_eq!(m.get(&key(n, len), &mut Probes::default()), None);
            // Overwrites need no memory and always succeed.
            m.put(&key(0, len), 1_000_000).expect("overwrite");
        }
    }

    #[test]
    fn bytes_per_key_follow_the_key_length() {
        let per_key = |len: usize| {
            let mut m = FullKeyMap::new(64 << 20, HashBits::ALL);
            for i in 0..1_000_000u64 {
                if m.put(&key(i, len), i).is_err() {
                    break;
                }
            }
            m.stats().bytes_per_key
        };
        // Per key: its bytes in the arena (up to twice, as the arena doubles) and 17 bytes of entry per bucket
        // at a table load between 7/16 and 7/8.
        for len in [16usize, 64] {
            let pk = per_key(len);
            let (lo, hi) = (len as f64 + 17.0 * 8.0 / 7.0, 2.0 * len as f64 + 17.0 * 16.0 / 7.0 + 1.0);
            assert!((lo..hi).contains(&pk), "{len}-byte keys: {pk} bytes a key, not in {lo}..{hi}");
        }
    }

    #[test]
    fn a_budget_too_small_for_the_first_table_holds_nothing() {
        let mut m = FullKeyMap::new(40, HashBits::ALL);
        assert_eq!(m.put(b"k", 1), Err(MapFull));
        assert_eq!(FullKeyMap::capacity_for(40, 1), 0);
        assert!(FullKeyMap::capacity_for(table_bytes(4) + 3, 1) == 3);
    }

    #[test]
    fn batches_give_the_same_answers_as_single_keys_and_stop_at_the_first_refused_key() {
        // 1013 keys of several lengths (a key's length follows from its number), each put twice in a row (in
        // one run) and again in later runs, in a budget that holds them all and two that refuse some.
        let id_key = |id: u64| key(id, 4 + (id % 5) as usize * 9);
        let keys: Vec<Vec<u8>> = (0..3000u64).map(|i| id_key(i / 2 * 7919 % 1013)).collect();
        assert_eq!(keys.iter().collect::<std::collections::HashSet<_>>().len(), 1013);
        let pairs: Vec<(&[u8], u64)> = keys.iter().enumerate().map(|(i, k)| (&k[..], i as u64)).collect();
        for budget in [1 << 20, 64 << 10, 16 << 10] {
            let (mut one, mut batched) =
                (FullKeyMap::new(budget, HashBits::ALL), FullKeyMap::new(budget, HashBits::ALL));
            let singly = pairs.iter().take_while(|&&(k, o)| one.put(k, o).is_ok()).count();
            assert_eq!(batched.put_batch(&pairs), singly, "a budget of {budget} bytes");
            let probe: Vec<Vec<u8>> = (0..1500u64).map(id_key).collect();
            let refs: Vec<&[u8]> = probe.iter().map(|k| &k[..]).collect();
            let mut out = vec![None; refs.len()];
            batched.get_batch(&refs, &mut out, &mut Probes::default());
            for (k, got) in refs.iter().zip(&out) {
                assert_eq!(*got, one.get(k, &mut Probes::default()), "{k:?}");
            }
            assert_eq!((one.len(), one.latest_offset()), (batched.len(), batched.latest_offset()));
            let (a, b) = (one.stats(), batched.stats());
            assert_eq!((a.lookups, a.probes), (b.lookups, b.probes), "the puts are counted alike");
        }
    }
}
