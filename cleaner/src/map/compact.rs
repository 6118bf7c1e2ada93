//! [`CompactMap`]: this project's offset map, 12 bytes a slot.
//!
//! # Layout
//! A slot is 12 bytes, little-endian: a u64 *tag* (bits 8..64: a 56-bit fingerprint; bits 0..8: the probe
//! distance plus one, 0 for an empty slot) and a u32 offset relative to the pass's base offset. The table
//! has `slots` home positions plus up to [`OVERFLOW`] slots after them (half the table for a tiny one), so
//! that probing never wraps around; an insertion whose run would pass the end is refused as [`MapFull`].
//!
//! # Hashing and identity (quotienting)
//! A key's xxh3-128 hash gives its home slot (the low 64 bits, scaled to `slots`) and its fingerprint (the top
//! 56 bits of the high 64). A slot stores only the fingerprint and how far it sits from its home; the home is
//! part of the key's identity without being stored. Two keys look alike only when they share home and
//! fingerprint: probability `1 / (slots · 2^56)` per pair, so `n² / (2 · slots · 2^56)` for `n` keys
//! (6.2e-10 for 10^8 keys at load 0.9).
//!
//! # Robin Hood ordering
//! Along a probe run, keys are kept in the order of their distance from home: an insertion takes the slot of
//! the first key that is closer to its home than the new key would be, and shifts the run after it by one.
//! So a lookup stops at the first empty slot *or* the first slot whose key is closer to home than the searched
//! key would be there: an absent key costs about as much as a present one, even at a high load (plain linear
//! probing walks about 50 slots per miss at load 0.9). Distances are capped at 254: an insertion that would
//! push a key further is refused as [`MapFull`], which bounds every lookup at 255 slots at any load.
//!
//! # Offsets
//! Offsets are stored relative to the base offset of the pass ([`OffsetMap::begin`]), in 32 bits. An offset
//! 2^32 or more above the base is refused as [`MapFull`]: the cleaner then ends the pass there, so a dirty
//! section spanning more offsets is mapped in chunks, as partial passes.
//!
//! # Memory in proportion to the work
//! A pass that says how many offsets it may map ([`OffsetMap::begin_bounded`]) gets a table no larger than
//! those offsets can fill at the load factor (within the budget), and the table starts smaller still and
//! doubles in place as keys arrive, so that resident memory follows the keys, not the budget: 100 thousand keys
//! under a 16 GiB budget touch a few MiB. The budget is reserved as address space only; untouched pages cost
//! nothing, and a later, smaller pass gives the pages it no longer uses back.
//!
//! Growing keeps every key's identity. A key's home at the pass's full size `M` is `home_M` (its hash scaled to
//! `M`); at `M / 2^k` home positions, the home is `home_M >> k` and the `k` bits below are stored in the
//! slot's spare offset bits (the pass's offsets need only `b` of the 32 bits; `k <= 32 - b`). Growing by `2^j`
//! takes `j` of those bits into the home: keys keep their Robin Hood order (a home `h` only splits into
//! `h·2^j ..= h·2^j + 2^j - 1`), so the table is rewritten in one forward walk, in place. The collision
//! probability is that of a table of `M` home positions from the start: `n^2 / (2 · M · 2^56)`.
//!
//! How far to grow: when the table is full, the puts so far (`r`, `c` of them new keys) estimate the pass's
//! distinct keys as if keys were drawn uniformly (`c = k (1 - e^(-r/k))`), and the table grows to hold them in
//! one step (doubling at least). The first growth of a pass over a million keys, at 60 thousand puts, already
//! estimates them within a few percent, so the table is rewritten once, while small; a skewed distribution
//! reads as fewer keys and costs a later doubling. Without a repeat yet, the estimate is the pass's bound.
//!
//! # Batches
//! [`OffsetMap::put_batch`] and [`OffsetMap::get_batch`] hash a run of keys first and prefetch every home
//! slot, then probe: the random memory accesses of the run overlap instead of queueing.

use super::hash::{HashBits, prefetch, xxh3_128};
use super::table::Table;
use super::{BATCH, MapFull, MapKind, MapStats, OffsetMap, Probes, superseded_by};

/// Bytes of a slot.
pub const SLOT_BYTES: usize = 12;
/// Most slots after the last home position, so that a run starting near the end needs no wrap-around.
pub const OVERFLOW: usize = 256;
/// Largest distance from home (stored plus one in the tag's low byte).
const MAX_DISTANCE: u64 = 254;
/// Home positions a growing table starts with at least (768 KiB of slots): small passes never grow.
const MIN_GROWING_SLOTS: usize = 1 << 16;
/// The load a growing table aims at for the keys it expects, where the pass's full size has room for it: a
/// lookup at load 0.72 walked 2.19 slots (issue 31: 10 million records over a million keys in 128 MiB), at
/// 0.36 about 1.3. Growth goes by powers of two, so the load ends between half this and this. Where the full
/// size is smaller the table grows to it and its load is the keys over it, up to the load factor as before.
/// Only the table's size changes: what the map holds, its capacity and its collision probability (that of
/// the full size) do not.
const ROOMY_LOAD: f64 = 0.5;

/// Where a key lives and what identifies it.
#[derive(Debug, Clone, Copy)]
struct Hashed {
    /// Its home at the pass's full size; the home now is this shifted right by the table's shift.
    home_full: usize,
    /// The fingerprint, already in the tag's position (bits 8..64).
    fp: u64,
}

/// The overflow after `homes` home positions: 256 slots, or as many as the homes for a tiny table.
fn overflow_for(homes: usize) -> usize {
    homes.min(OVERFLOW)
}

/// The 12 bytes of slot `i`.
fn slot_bytes(bytes: &[u8], i: usize) -> [u8; SLOT_BYTES] {
    let mut e = [0u8; SLOT_BYTES];
    e.copy_from_slice(&bytes[i * SLOT_BYTES..(i + 1) * SLOT_BYTES]);
    e
}

fn tag_of(e: &[u8; SLOT_BYTES]) -> u64 {
    u64::from_le_bytes([e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7]])
}

fn stored_of(e: &[u8; SLOT_BYTES]) -> u32 {
    u32::from_le_bytes([e[8], e[9], e[10], e[11]])
}

/// The distinct keys `k` that `r` uniform draws yielding `c` distinct ones point to: the root of
/// `k (1 - e^(-r/k)) = c` (by bisection; it grows with `k`), for `c < r`.
fn distinct_keys_for(c: f64, r: f64) -> f64 {
    let drawn = |k: f64| k * -(-r / k).exp_m1();
    let (mut lo, mut hi) = (c, c.max(1.0) * 2.0);
    while drawn(hi) < c && hi < 1e18 {
        hi *= 2.0;
    }
    for _ in 0..64 {
        let mid = (lo + hi) / 2.0;
        if drawn(mid) < c { lo = mid } else { hi = mid }
    }
    hi
}

/// One growth of a table's home positions by `2^steps`.
struct Growth {
    old_total: usize,
    new_total: usize,
    steps: u32,
    /// The lowest of the stored home bits that go into the new home.
    low_bit: u32,
}

impl Growth {
    /// Walks the old table's keys by old home (within one home, by the home bits that become the new home's
    /// low bits: the new homes stay in Robin Hood order) and gives each its place in the grown table; when
    /// `WRITE`, writes it there and zeroes the slots between. Old slot `i` is read at slot `source + i` of
    /// `bytes`, or from `tail` for `i >= tail_from`. False when a key would go further than [`MAX_DISTANCE`]
    /// from its new home, or past the new table's end.
    fn place<const WRITE: bool>(
        &self,
        bytes: &mut [u8],
        source: usize,
        tail: &[u8],
        tail_from: usize,
        group: &mut Vec<(u32, [u8; SLOT_BYTES])>,
    ) -> bool {
        let read = |bytes: &[u8], i: usize| -> [u8; SLOT_BYTES] {
            if i >= tail_from { slot_bytes(tail, i - tail_from) } else { slot_bytes(bytes, source + i) }
        };
        let mask = ((1u64 << self.steps) - 1) as u32;
        let mut next_free = 0usize;
        let mut slot = 0usize;
        while slot < self.old_total {
            let tag = tag_of(&read(bytes, slot));
            if tag & 0xff == 0 {
                slot += 1;
                continue;
            }
            let home = slot + 1 - (tag & 0xff) as usize;
            group.clear();
            while slot < self.old_total {
                let e = read(bytes, slot);
                let t = tag_of(&e);
                if t & 0xff == 0 || slot + 1 - (t & 0xff) as usize != home {
                    break;
                }
                group.push(((stored_of(&e) >> self.low_bit) & mask, e));
                slot += 1;
            }
            if group.len() > 1 {
                group.sort_by_key(|&(bits, _)| bits);
            }
            for &(bits, e) in group.iter() {
                let new_home = (home << self.steps) | bits as usize;
                let at = new_home.max(next_free);
                let distance = (at - new_home) as u64;
                if distance > MAX_DISTANCE || at >= self.new_total {
                    return false;
                }
                if WRITE {
                    bytes[next_free * SLOT_BYTES..at * SLOT_BYTES].fill(0);
                    let out = &mut bytes[at * SLOT_BYTES..(at + 1) * SLOT_BYTES];
                    out[..8].copy_from_slice(&((tag_of(&e) & !0xff) | (distance + 1)).to_le_bytes());
                    out[8..].copy_from_slice(&(stored_of(&e) & !(mask << self.low_bit)).to_le_bytes());
                }
                next_free = at + 1;
            }
        }
        if WRITE {
            bytes[next_free * SLOT_BYTES..self.new_total * SLOT_BYTES].fill(0);
        }
        true
    }
}

/// This project's offset map (see the [module docs](self)).
pub struct CompactMap {
    table: Table,
    /// Home positions the budget holds (with their overflow).
    budget_homes: usize,
    load_factor: f64,
    /// Home positions at this pass's full size (a multiple of `1 << shift`).
    full: usize,
    /// Home positions now: `full >> shift`.
    slots: usize,
    /// All slots now: the home positions and the overflow after them.
    total: usize,
    /// Doublings left: the low `shift` bits of a key's full-size home are stored in its slot.
    shift: u32,
    /// Bits of a stored offset that hold the offset relative to the base; the home bits sit above them.
    offset_bits: u32,
    /// Keys the table holds now; at `full` size, the pass's capacity.
    capacity: usize,
    /// The most home positions this pass had, for the statistics.
    peak_slots: usize,
    /// The most keys this pass may put (its offsets' span), or the budget's capacity.
    bound: u64,
    entries: usize,
    base: u64,
    latest: Option<u64>,
    lookups: u64,
    probes: u64,
    bits: HashBits,
}

impl std::fmt::Debug for CompactMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactMap")
            .field("slots", &self.slots)
            .field("full", &self.full)
            .field("capacity", &self.capacity)
            .field("entries", &self.entries)
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl CompactMap {
    /// A map in a budget of `bytes` bytes, full at `floor(slots × load_factor)` keys.
    ///
    /// # Errors
    /// The operating system's error when it cannot map the budget.
    pub fn new(bytes: usize, load_factor: f64) -> std::io::Result<Self> {
        Self::with_bits(bytes, load_factor, HashBits::ALL)
    }

    pub(crate) fn with_bits(bytes: usize, load_factor: f64, bits: HashBits) -> std::io::Result<Self> {
        let (homes, total) = Self::slots_for(bytes);
        let table = Table::new(total * SLOT_BYTES)?;
        let lf = if load_factor.is_finite() { load_factor.clamp(0.0, 1.0) } else { 1.0 };
        let mut m = CompactMap {
            table,
            budget_homes: homes,
            load_factor: lf,
            full: homes,
            slots: homes,
            total,
            shift: 0,
            offset_bits: 32,
            capacity: 0,
            peak_slots: homes,
            bound: 0,
            entries: 0,
            base: 0,
            latest: None,
            lookups: 0,
            probes: 0,
            bits,
        };
        m.capacity = m.capacity_at(homes);
        Ok(m)
    }

    /// Home positions and all slots in a budget of `bytes` (the overflow comes out of the budget too).
    fn slots_for(bytes: usize) -> (usize, usize) {
        let total = bytes / SLOT_BYTES;
        (total - (total / 2).min(OVERFLOW), total)
    }

    /// Keys a budget of `bytes` holds at `load_factor` (clamped to `(0, 1]`).
    pub fn capacity_for(bytes: usize, load_factor: f64) -> usize {
        let lf = if load_factor.is_finite() { load_factor.clamp(0.0, 1.0) } else { 1.0 };
        (Self::slots_for(bytes).0 as f64 * lf).floor() as usize
    }

    fn capacity_at(&self, homes: usize) -> usize {
        (homes as f64 * self.load_factor).floor() as usize
    }

    /// Sets the geometry of a pass over at most `max_keys` keys whose offsets span `span` (both bounded by the
    /// budget): the full size, the starting size and the bits a stored offset needs.
    fn size_for(&mut self, span: Option<u64>, max_keys: Option<u64>) {
        let offset_bits = match span {
            Some(s) if s > 1 => (64 - (s - 1).leading_zeros()).min(32),
            Some(_) => 1,
            None => 32,
        };
        let needed = max_keys.map_or(self.budget_homes, |k| {
            let homes = (k as f64 / self.load_factor.max(f64::MIN_POSITIVE)).ceil();
            if homes >= self.budget_homes as f64 { self.budget_homes } else { (homes as usize).max(1) }
        });
        // Doublings: while the table starts above the smallest growing size, and spare offset bits hold the
        // home bits it does not use yet.
        let mut shift = 0u32;
        while shift < 32 - offset_bits && (needed >> (shift + 1)) >= MIN_GROWING_SLOTS {
            shift += 1;
        }
        // The full size a multiple of 2^shift, rounded up within the budget (else down).
        let unit = 1usize << shift;
        let mut full = needed.div_ceil(unit) * unit;
        if full + overflow_for(full) > self.table.len() / SLOT_BYTES {
            full = needed / unit * unit;
        }
        self.full = full;
        self.bound = max_keys.unwrap_or(self.capacity_at(full) as u64);
        self.shift = shift;
        self.offset_bits = offset_bits;
        self.set_slots(full >> shift);
        self.peak_slots = self.slots;
    }

    fn set_slots(&mut self, homes: usize) {
        self.slots = homes;
        self.total = homes + overflow_for(homes);
        self.capacity = self.capacity_at(if self.shift == 0 { homes } else { self.full });
    }

    /// Keys the table holds before it must grow (all of the pass's capacity once it cannot).
    fn room_now(&self) -> usize {
        self.capacity_at(self.slots)
    }

    #[inline]
    fn hash(&self, key: &[u8]) -> Hashed {
        let h = self.bits.mask(xxh3_128(key));
        let (lo, hi) = (h as u64, (h >> 64) as u64);
        let home_full = ((u128::from(lo) * self.full as u128) >> 64) as usize;
        Hashed { home_full, fp: hi & !0xff }
    }

    #[inline]
    fn home(&self, h: Hashed) -> usize {
        h.home_full >> self.shift
    }

    /// The home bits below `home` that the slot stores, in the stored offset's position.
    #[inline]
    fn ext_bits(&self, h: Hashed) -> u32 {
        if self.shift == 0 { 0 } else { ((h.home_full & ((1 << self.shift) - 1)) as u32) << self.offset_bits }
    }

    /// The mask of a stored offset's bits relative to the base (the rest are home bits).
    #[inline]
    fn rel_mask(&self) -> u32 {
        if self.offset_bits == 32 { u32::MAX } else { (1 << self.offset_bits) - 1 }
    }

    /// The mask of a stored offset's home bits.
    #[inline]
    fn ext_mask(&self) -> u32 {
        if self.shift == 0 { 0 } else { (((1u64 << self.shift) - 1) << self.offset_bits) as u32 }
    }

    #[inline]
    fn tag_at(bytes: &[u8], slot: usize) -> u64 {
        let at = slot * SLOT_BYTES;
        let b = &bytes[at..at + 8];
        u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    }

    #[inline]
    fn offset_at(bytes: &[u8], slot: usize) -> u32 {
        let at = slot * SLOT_BYTES + 8;
        let b = &bytes[at..at + 4];
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }

    #[inline]
    fn write_slot(&mut self, slot: usize, tag: u64, stored: u32) {
        let out = self.table.write(slot * SLOT_BYTES, SLOT_BYTES);
        out[..8].copy_from_slice(&tag.to_le_bytes());
        out[8..].copy_from_slice(&stored.to_le_bytes());
    }

    /// Walks the run from the key's home: `Ok(slot)` where the key is, or `Err((slot, distance))` where it would
    /// be inserted (the first empty slot or the first key closer to its home). Also returns the slots
    /// inspected.
    #[inline]
    fn search(&self, h: Hashed) -> (Result<usize, (usize, u64)>, u64) {
        let bytes = self.table.bytes();
        let (ext, ext_mask) = (self.ext_bits(h), self.ext_mask());
        let mut slot = self.home(h);
        let mut distance = 0u64;
        loop {
            if slot >= self.total {
                return (Err((slot, MAX_DISTANCE + 1)), distance);
            }
            let tag = Self::tag_at(bytes, slot);
            let stored = tag & 0xff;
            if stored == 0 || stored - 1 < distance {
                return (Err((slot, distance)), distance + 1);
            }
            if stored - 1 == distance && tag & !0xff == h.fp && Self::offset_at(bytes, slot) & ext_mask == ext {
                return (Ok(slot), distance + 1);
            }
            distance += 1;
            slot += 1;
            if distance > MAX_DISTANCE {
                return (Err((slot, distance)), distance);
            }
        }
    }

    /// Puts a hashed key: the key's earlier offset when it held one (the put replaced it), `None` for a new key.
    fn put_hashed(&mut self, h: Hashed, offset: u64) -> Result<Option<u64>, MapFull> {
        self.lookups += 1;
        let Some(rel) = offset
            .checked_sub(self.base)
            .and_then(|r| u32::try_from(r).ok())
            .filter(|&r| self.offset_bits == 32 || r >> self.offset_bits == 0)
        else {
            return Err(MapFull);
        };
        if self.slots == 0 {
            return Err(MapFull);
        }
        let (found, inspected) = self.search(h);
        self.probes += inspected;
        let (at, distance) = match found {
            Ok(slot) => {
                let tag = Self::tag_at(self.table.bytes(), slot);
                let was = Self::offset_at(self.table.bytes(), slot);
                self.write_slot(slot, tag, (was & self.ext_mask()) | rel);
                self.latest = Some(offset);
                return Ok(Some(self.base + u64::from(was & self.rel_mask())));
            }
            Err(place) => place,
        };
        // The end of the run from `at`, if every key it shifts stays within the cap.
        let run_end = || -> Option<usize> {
            let bytes = self.table.bytes();
            let mut end = at;
            loop {
                let stored = Self::tag_at(bytes, end) & 0xff;
                if stored == 0 {
                    return Some(end);
                }
                if stored > MAX_DISTANCE || end + 1 >= self.total {
                    return None;
                }
                end += 1;
            }
        };
        let fits = self.entries < self.room_now() && distance <= MAX_DISTANCE;
        let end = if fits { run_end() } else { None };
        let Some(end) = end else {
            // A table below its full size doubles and tries again; one at its size (or that cannot double: a
            // run would grow too long) refuses the key.
            if self.shift > 0 {
                if self.grow(self.growth_steps()) {
                    return self.put_hashed_again(h, offset);
                }
                self.capacity = self.entries;
            }
            return Err(MapFull);
        };
        // Shift `at..end` one slot on (each key one further from home), then place the new key at `at`.
        if end > at {
            let out = self.table.write(at * SLOT_BYTES, (end + 1 - at) * SLOT_BYTES);
            out.copy_within(0..(end - at) * SLOT_BYTES, SLOT_BYTES);
            for s in 1..=(end - at) {
                let t = &mut out[s * SLOT_BYTES..s * SLOT_BYTES + 8];
                t[0] += 1;
            }
        }
        self.write_slot(at, h.fp | (distance + 1), self.ext_bits(h) | rel);
        self.entries += 1;
        self.latest = Some(offset);
        Ok(None)
    }

    /// The put after a growth, which counted its lookup already.
    fn put_hashed_again(&mut self, h: Hashed, offset: u64) -> Result<Option<u64>, MapFull> {
        self.lookups -= 1;
        self.put_hashed(h, offset)
    }

    /// How many doublings a table that is full now takes at once: enough for the keys the pass will have by
    /// its end, as far as the puts so far tell. With `r` puts of `c` distinct keys, keys drawn uniformly from
    /// `k` give `c = k (1 - e^(-r/k))`, solved for `k`; the pass's bound `t` on puts then shows
    /// `k (1 - e^(-t/k))` keys (1% added); without a repeat yet, the bound itself. The table grows to hold them
    /// at [`ROOMY_LOAD`] (or the load factor, if lower): at least one doubling, at most the table's (its full
    /// size). A skewed key distribution reads as fewer keys: the table then doubles again later.
    fn growth_steps(&self) -> u32 {
        let (c, r) = (self.entries as f64, self.lookups as f64);
        let bound = self.bound as f64;
        // The keys drawn from, then the distinct ones the pass's remaining puts (at most its bound) will show.
        let expected = if r > c + 0.5 {
            let k = distinct_keys_for(c, r);
            (k * -(-bound.max(r) / k).exp_m1()).min(bound)
        } else {
            bound
        };
        let homes = expected * 1.01 / self.load_factor.clamp(f64::MIN_POSITIVE, ROOMY_LOAD);
        let mut steps = 1;
        while steps < self.shift && ((self.slots << steps) as f64) < homes {
            steps += 1;
        }
        steps
    }

    /// Multiplies the home positions by `2^steps` in place (see the module docs). Returns false, changing
    /// nothing, when the grown table would put a key further than [`MAX_DISTANCE`] from its home or past the
    /// overflow.
    fn grow(&mut self, steps: u32) -> bool {
        let (old_slots, old_total) = (self.slots, self.total);
        let new_slots = old_slots << steps;
        let new_total = new_slots + overflow_for(new_slots);
        let low_bit = self.offset_bits + self.shift - steps;
        let walk = Growth { old_total, new_total, steps, low_bit };
        // A dry run first, on the table as it is: growing must not fail half-way.
        let mut group = Vec::new();
        let old = self.table.write_range(0, old_total * SLOT_BYTES);
        if !walk.place::<false>(old, 0, &[], old_total, &mut group) {
            return false;
        }
        // Move the old table to the top of the new one, then place every key from there; the keys of the last
        // slots are read aside first, as their new places may lie over their old copies. Every other write
        // lands below the copies not yet read (a key of home h goes below (h + 1) 2^steps + 254; its copy, and
        // those after it, sit at new_slots - old_slots + h and beyond).
        let source = new_slots - old_slots;
        let bytes = self.table.write_range(0, new_total * SLOT_BYTES);
        bytes.copy_within(0..old_total * SLOT_BYTES, source * SLOT_BYTES);
        let tail_from = old_total.saturating_sub(2 * OVERFLOW + 2);
        let tail = bytes[(source + tail_from) * SLOT_BYTES..(source + old_total) * SLOT_BYTES].to_vec();
        let placed = walk.place::<true>(bytes, source, &tail, tail_from, &mut group);
        debug_assert!(placed, "the dry run placed every key");
        self.shift -= steps;
        self.set_slots(new_slots);
        self.peak_slots = self.peak_slots.max(new_slots);
        true
    }

    fn get_hashed(&self, h: Hashed, probes: &mut Probes) -> Option<u64> {
        probes.lookups += 1;
        if self.slots == 0 {
            return None;
        }
        let (found, inspected) = self.search(h);
        probes.probes += inspected;
        found.ok().map(|slot| self.base + u64::from(Self::offset_at(self.table.bytes(), slot) & self.rel_mask()))
    }

    /// Puts a run of keys in order, hashed [`BATCH`] at a time; hands `superseded` each earlier offset a put
    /// replaced, and returns how many keys were put before the first refused one.
    #[inline]
    fn put_run(&mut self, batch: &[(&[u8], u64)], mut superseded: impl FnMut(u64)) -> usize {
        let mut done = 0;
        let mut hashed = [Hashed { home_full: 0, fp: 0 }; BATCH];
        let mut keys: [&[u8]; BATCH] = [&[]; BATCH];
        for run in batch.chunks(BATCH) {
            for (k, &(key, _)) in keys.iter_mut().zip(run) {
                *k = key;
            }
            self.hash_batch(&keys[..run.len()], &mut hashed);
            for (&h, &(_, offset)) in hashed.iter().zip(run) {
                match self.put_hashed(h, offset) {
                    Ok(earlier) => superseded_by(earlier, offset, &mut superseded),
                    Err(MapFull) => return done,
                }
                done += 1;
            }
        }
        done
    }

    fn hash_batch(&self, keys: &[&[u8]], out: &mut [Hashed; BATCH]) {
        for (h, k) in out.iter_mut().zip(keys) {
            *h = self.hash(k);
            // A run is a few slots long (about 5.7 at load 0.9): often it continues into the next line.
            let at = self.home(*h) * SLOT_BYTES;
            prefetch(self.table.bytes(), at);
            prefetch(self.table.bytes(), at + 64);
            if self.load_factor > 0.92 {
                // Runs twice as long above a load of 0.9: a third line is often needed.
                prefetch(self.table.bytes(), at + 128);
                prefetch(self.table.bytes(), at + 192);
            }
        }
    }

    fn start_pass(&mut self, base_offset: u64, span: Option<u64>, max_keys: Option<u64>) {
        self.table.clear();
        self.size_for(span, max_keys);
        // Pages a larger earlier pass touched past what this pass may use go back to the system.
        self.table.release_from((self.full + overflow_for(self.full)) * SLOT_BYTES);
        self.entries = 0;
        self.base = base_offset;
        self.latest = None;
        self.lookups = 0;
        self.probes = 0;
    }
}

impl OffsetMap for CompactMap {
    fn kind(&self) -> MapKind {
        MapKind::Compact
    }

    fn begin(&mut self, base_offset: u64) {
        self.start_pass(base_offset, None, None);
    }

    fn begin_bounded(&mut self, base_offset: u64, max_keys: u64) {
        self.start_pass(base_offset, Some(max_keys), Some(max_keys));
    }

    fn put(&mut self, key: &[u8], offset: u64) -> Result<(), MapFull> {
        let h = self.hash(key);
        self.put_hashed(h, offset).map(drop)
    }

    fn put_batch(&mut self, batch: &[(&[u8], u64)]) -> usize {
        self.put_run(batch, |_| {})
    }

    fn put_batch_superseding(&mut self, batch: &[(&[u8], u64)], superseded: &mut Vec<u64>) -> usize {
        self.put_run(batch, |earlier| superseded.push(earlier))
    }

    fn get(&self, key: &[u8], probes: &mut Probes) -> Option<u64> {
        self.get_hashed(self.hash(key), probes)
    }

    fn get_batch(&self, keys: &[&[u8]], out: &mut [Option<u64>], probes: &mut Probes) {
        let mut hashed = [Hashed { home_full: 0, fp: 0 }; BATCH];
        for (run, out) in keys.chunks(BATCH).zip(out.chunks_mut(BATCH)) {
            self.hash_batch(run, &mut hashed);
            for (&h, o) in hashed.iter().zip(out.iter_mut()).take(run.len()) {
                *o = self.get_hashed(h, probes);
            }
        }
    }

    fn len(&self) -> usize {
        self.entries
    }

    /// Keys the budget holds (a pass that said how many keys it may put can hold fewer, all it needs).
    fn capacity(&self) -> usize {
        self.capacity_at(self.budget_homes)
    }

    fn latest_offset(&self) -> Option<u64> {
        self.latest
    }

    fn stats(&self) -> MapStats {
        let budget = self.table.len() as u64;
        let allocated = ((self.peak_slots + overflow_for(self.peak_slots)) * SLOT_BYTES) as u64;
        let capacity = self.capacity();
        MapStats {
            capacity: capacity as u64,
            bytes_per_slot: SLOT_BYTES as f64,
            memory_bytes: budget,
            allocated_bytes: allocated,
            touched_bytes: self.table.touched_bytes() as u64,
            bytes_per_key: super::seam::ratio(budget, capacity as u64),
            ..MapStats::counted(self.entries as u64, self.budget_homes as u64, self.lookups, self.probes)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(m: &CompactMap, key: &[u8]) -> Option<u64> {
        m.get(key, &mut Probes::default())
    }

    fn key(i: u64) -> Vec<u8> {
        format!("key-{i:012}").into_bytes()
    }

    #[test]
    fn put_get_overwrite_and_relative_offsets() {
        let mut m = CompactMap::new(12 * 1000, 0.9).expect("map");
        m.begin(1 << 40);
        assert_eq!(get(&m, b"a"), None);
        m.put(b"a", (1 << 40) + 5).expect("room");
        m.put(b"b", (1 << 40) + 6).expect("room");
        m.put(b"a", (1 << 40) + 7).expect("overwrite");
        assert_eq!(get(&m, b"a"), Some((1 << 40) + 7));
        assert_eq!(get(&m, b"b"), Some((1 << 40) + 6));
        assert_eq!(m.len(), 2);
        // Offsets that 32 bits above the base cannot hold are refused: the pass ends there.
        assert_eq!(m.put(b"c", (1 << 40) + (1 << 32)), Err(MapFull));
        assert_eq!(m.put(b"c", (1 << 40) - 1), Err(MapFull), "below the base");
        m.put(b"c", (1 << 40) + u64::from(u32::MAX)).expect("the largest relative offset");
        m.begin(0);
        assert_eq!((m.len(), get(&m, b"a")), (0, None));
    }

    #[test]
    fn holds_its_capacity_and_every_key_stays_reachable() {
        for lf in [0.5, 0.9, 0.95, 1.0] {
            let mut m = CompactMap::new(12 * 50_000, lf).expect("map");
            m.begin(0);
            let mut n = 0u64;
            while m.put(&key(n), n * 3).is_ok() {
                n += 1;
            }
            assert!(n as usize >= m.capacity() * 98 / 100, "load {lf}: {n} of {}", m.capacity());
            assert!(n as usize <= m.capacity());
            for i in 0..n {
                assert_eq!(get(&m, &key(i)), Some(i * 3), "load {lf} key {i}");
            }
            // Absent keys are found absent in a few probes, even when full.
            let mut p = Probes::default();
            for i in n + 1..n + 10_001 {
                assert_eq!(m.get(&key(i), &mut p), None);
            }
            let per_miss = p.probes as f64 / p.lookups as f64;
            let bound = match lf {
                x if x <= 0.9 => 8.0,
                x if x <= 0.95 => 16.0,
                _ => 255.0,
            };
            assert!(per_miss < bound, "load {lf}: {per_miss} probes per miss");
            eprintln!("load {lf}: {per_miss:.2} probes per miss");
        }
    }

    #[test]
    fn a_bounded_pass_grows_in_place_and_keeps_every_key() {
        // A 1 GiB budget (address space only) for a pass of at most a million offsets.
        let mut m = CompactMap::new(1 << 30, 0.9).expect("map");
        let base = 5_000_000u64;
        m.begin_bounded(base, 1_000_000);
        let start = m.slots;
        assert!(start < m.full && m.shift > 0, "the table starts below its full size: {start} of {}", m.full);
        // Keys that widen as the pass goes (each phase's keys put about four times, in a scrambled order), so
        // that every growth's estimate falls short and the table grows several times; a model of the latest
        // offsets beside it.
        let mut model = std::collections::HashMap::new();
        let mut offset = base;
        let mut sizes = vec![start];
        for phase_keys in [40_000u64, 120_000, 300_000] {
            for i in 0..phase_keys * 2 {
                let k = (i * 7_919) % phase_keys;
                m.put(&key(k), offset).expect("room");
                model.insert(k, offset);
                offset += 1;
                if *sizes.last().expect("a size") != m.slots {
                    sizes.push(m.slots);
                }
            }
        }
        assert!(sizes.len() >= 3, "it grew at least twice: {sizes:?}");
        assert_eq!(m.len(), 300_000);
        for (k, o) in &model {
            assert_eq!(get(&m, &key(*k)), Some(*o), "key {k}");
        }
        let mut p = Probes::default();
        for k in 300_000..310_000 {
            assert_eq!(m.get(&key(k), &mut p), None, "absent key {k}");
        }
        let s = m.stats();
        // Memory follows the keys: at most the table for the pass's bound, and no more than that was touched.
        assert!(s.allocated_bytes <= 1_000_000 * 12 * 10 / 9 + (1 << 20), "{s:?}");
        assert!(s.touched_bytes <= s.allocated_bytes + (64 << 10), "{s:?}");
        assert_eq!(s.memory_bytes, (1 << 30) / 12 * 12);
        // Offsets past the pass's bound are refused (the slot's spare bits hold home bits).
        assert_eq!(m.put(&key(1), base + (1 << 20)), Err(MapFull));
        // A later, smaller pass gives the pages back, and starts small again.
        m.begin_bounded(0, 1000);
        assert_eq!(m.stats().touched_bytes, 0);
        m.put(b"k", 999).expect("room");
        assert_eq!((get(&m, b"k"), get(&m, &key(7))), (Some(999), None));
    }

    #[test]
    fn growth_keeps_keys_that_share_a_home_in_order() {
        // A small table grown from far below its size, with keys crowded (load 1.0): runs cross old homes and
        // split into both new homes.
        let mut m = CompactMap::new(12 << 22, 1.0).expect("map");
        m.begin_bounded(0, 300_000);
        let start = m.slots;
        let mut n = 0u64;
        while m.put(&key(n), n).is_ok() {
            n += 1;
        }
        // Nearly full (a run longer than the distance cap ends it at a load of 1.0), after doubling twice.
        assert!(n >= 294_000, "{n} keys");
        assert_eq!(m.slots, start * 4);
        for i in (0..n).step_by(7) {
            assert_eq!(get(&m, &key(i)), Some(i));
        }
        // The Robin Hood order holds: along the table, every key's home is at or after the one before.
        let bytes = m.table.bytes();
        let mut last_home = 0;
        for slot in 0..m.total {
            let tag = CompactMap::tag_at(bytes, slot);
            if tag & 0xff != 0 {
                let home = slot + 1 - (tag & 0xff) as usize;
                assert!(home >= last_home, "slot {slot}: home {home} after {last_home}");
                last_home = home;
            }
        }
    }

    #[test]
    fn the_distinct_key_estimate_inverts_uniform_draws() {
        let k: f64 = 1e6;
        for r in [6e4, 1e6, 4e6] {
            let c = k * -(-r / k).exp_m1();
            let est = distinct_keys_for(c, r);
            assert!((est - k).abs() / k < 1e-6, "r {r}: {est}");
        }
    }

    #[test]
    fn a_pass_over_uniform_keys_grows_once_to_their_size() {
        // 4 puts a key over a million keys, in a pass bounded by the four million offsets: the table grows from
        // its smallest size straight to the size for a million keys at a roomy load (not four million keys), at
        // the first growth.
        let mut m = CompactMap::new(1 << 30, 0.9).expect("map");
        m.begin_bounded(0, 4_000_000);
        let start = m.slots;
        let mut rng = log_core::workload::SplitMix64::new(9);
        let mut sizes = vec![start];
        for o in 0..4_000_000u64 {
            m.put(&key(rng.next_u64() % 1_000_000), o).expect("room");
            if *sizes.last().expect("a size") != m.slots {
                sizes.push(m.slots);
            }
        }
        assert_eq!(sizes.len(), 2, "one growth: {sizes:?}");
        let s = m.stats();
        let load = 1_000_000.0 / m.slots as f64;
        assert!((ROOMY_LOAD / 2.0..=ROOMY_LOAD).contains(&load), "a million keys at load {load}: {s:?}");
        assert!(s.allocated_bytes < (1_000_000.0 * 12.0 / (ROOMY_LOAD / 2.0)) as u64, "{s:?}");
    }

    #[test]
    fn twelve_bytes_a_slot() {
        let m = CompactMap::new(12 << 20, 0.9).expect("map");
        let s = m.stats();
        assert_eq!(s.bytes_per_slot, 12.0);
        assert_eq!(s.memory_bytes, (s.slots + OVERFLOW as u64) * 12);
        // A tiny budget still holds a key: the overflow shrinks with the table.
        let mut tiny = CompactMap::new(48, 0.9).expect("map");
        tiny.begin(0);
        assert_eq!(tiny.capacity(), 1);
        tiny.put(b"k", 3).expect("one key");
        assert_eq!((tiny.put(b"other", 4), get(&tiny, b"k")), (Err(MapFull), Some(3)));
        assert!(s.bytes_per_key < 13.4, "{}", s.bytes_per_key);
    }

    #[test]
    fn batches_give_the_same_answers_as_single_keys() {
        let keys: Vec<Vec<u8>> = (0..3000u64).map(|i| key(i * 7919 % 2011)).collect();
        let mut one = CompactMap::new(12 * 4000, 0.9).expect("map");
        let mut batched = CompactMap::new(12 * 4000, 0.9).expect("map");
        one.begin(10);
        batched.begin(10);
        let pairs: Vec<(&[u8], u64)> = keys.iter().enumerate().map(|(i, k)| (&k[..], 10 + i as u64)).collect();
        for &(k, o) in &pairs {
            one.put(k, o).expect("room");
        }
        assert_eq!(batched.put_batch(&pairs), pairs.len());
        let probe: Vec<Vec<u8>> = (0..2500u64).map(key).collect();
        let refs: Vec<&[u8]> = probe.iter().map(|k| &k[..]).collect();
        let mut out = vec![None; refs.len()];
        batched.get_batch(&refs, &mut out, &mut Probes::default());
        for (k, got) in refs.iter().zip(&out) {
            assert_eq!(*got, get(&one, k));
        }
    }
}
