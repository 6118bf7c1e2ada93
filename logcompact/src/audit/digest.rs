//! The state a `read_committed` consumer rebuilds from a partition, as one entry a key: the key's hash, the
//! offset of the latest record it reads for that key, and a hash of that record's value (or "deleted"), sorted
//! by key hash. Built in bounded memory: entries go into an open-addressing table keyed by their key hash (a
//! later record of a key replaces the earlier, so the table holds one entry a key), its slots prefetched a
//! batch at a time so that the misses overlap; when the table fills its `capacity`, its entries are sorted and
//! go to a temporary file as a sorted run. At the end the table is sorted (and spilled too when runs were
//! written) and the runs merged, keeping each key's latest entry. Work is `O(n + k log k)` for `n` records of
//! `k` keys held at a time; memory `O(capacity + runs)`.
//!
//! Sorting every record's entry and then keeping each key's latest, as this did first, took a third of an
//! audit: the table keeps the sort to the distinct keys.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;

/// Bytes of an entry on disk.
pub const ENTRY_BYTES: usize = 24;

/// The bit of [`Entry::offset_and_flags`] set for a tombstone: the key reads as deleted.
pub const DELETED: u64 = 1 << 63;
/// The bit set when the record came in a transaction (its batch is transactional).
pub const TRANSACTIONAL: u64 = 1 << 62;
const FLAGS: u64 = DELETED | TRANSACTIONAL;

/// One key's latest record as a consumer reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    /// xxh3-64 of the key.
    pub key_hash: u64,
    /// The record's offset, with [`DELETED`] and [`TRANSACTIONAL`] in the top bits.
    pub offset_and_flags: u64,
    /// xxh3-64 of the value (0 for a tombstone).
    pub value_hash: u64,
}

impl Entry {
    /// The entry of a record.
    pub fn of(key: &[u8], value: Option<&[u8]>, offset: u64, transactional: bool) -> Entry {
        let mut flags = if transactional { TRANSACTIONAL } else { 0 };
        let value_hash = match value {
            Some(v) => xxhash_rust::xxh3::xxh3_64(v),
            None => {
                flags |= DELETED;
                0
            }
        };
        Entry {
            key_hash: xxhash_rust::xxh3::xxh3_64(key),
            offset_and_flags: (offset & !FLAGS).min(!FLAGS - 1) | flags,
            value_hash,
        }
    }

    /// The record's offset.
    pub fn offset(&self) -> u64 {
        self.offset_and_flags & !FLAGS
    }

    /// True for a tombstone.
    pub fn is_deleted(&self) -> bool {
        self.offset_and_flags & DELETED != 0
    }

    /// True when the record came in a transaction.
    pub fn is_transactional(&self) -> bool {
        self.offset_and_flags & TRANSACTIONAL != 0
    }

    /// Its 24 bytes, little-endian.
    pub fn to_bytes(self) -> [u8; ENTRY_BYTES] {
        let mut b = [0u8; ENTRY_BYTES];
        b[..8].copy_from_slice(&self.key_hash.to_le_bytes());
        b[8..16].copy_from_slice(&self.offset_and_flags.to_le_bytes());
        b[16..].copy_from_slice(&self.value_hash.to_le_bytes());
        b
    }

    /// The entry of 24 bytes.
    pub fn from_bytes(b: &[u8; ENTRY_BYTES]) -> Entry {
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(w)
        };
        Entry { key_hash: word(0), offset_and_flags: word(8), value_hash: word(16) }
    }

    fn sort_key(&self) -> (u64, u64) {
        (self.key_hash, self.offset())
    }
}

/// Most bits of a key hash that name its range in a summary ([`RangeHashes`]): 4,096 ranges.
pub const RANGE_BITS: u32 = 12;
/// Live keys a range holds at least, on average, in a summary: a range costs about 35 bytes of the file, so a
/// summary stays near 2 bytes a key on a small partition and far below on a large one (4,096 ranges).
const KEYS_PER_RANGE: u64 = 16;

/// A partition's live keys by key-hash range, what `audit --summary` writes instead of the entries: the ranges
/// named by the top `bits` of a key hash, and for each range holding a live key `(range, live keys, the sum of
/// their entries' xxh3-64)`, in range order. Replicas whose views of every key of a range agree give it the
/// same pair (a tombstone and no record read the same, so tombstones are left out); a range whose pairs differ
/// is compared key by key in a full audit. Sums add up, so ranges narrower than another replica's are merged
/// exactly into its wider ones ([`RangeHashes::coarsened`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RangeHashes {
    /// Bits of the key hash naming a range (at most [`RANGE_BITS`]).
    pub bits: u32,
    /// `(range, live keys, sum of their entries' hashes)`, ranges in order.
    pub hashes: Vec<(u16, u64, u64)>,
}

impl RangeHashes {
    /// Empty, with [`RANGE_BITS`] bits.
    pub fn new() -> RangeHashes {
        RangeHashes { bits: RANGE_BITS, hashes: Vec::new() }
    }

    /// Adds the entry `e`, later in key-hash order than every one added before.
    pub fn add(&mut self, e: &Entry) {
        if e.is_deleted() {
            return;
        }
        let range = if self.bits == 0 { 0 } else { (e.key_hash >> (64 - self.bits)) as u16 };
        let h = xxhash_rust::xxh3::xxh3_64(&e.to_bytes());
        match self.hashes.last_mut() {
            Some((r, keys, sum)) if *r == range => {
                *keys += 1;
                *sum = sum.wrapping_add(h);
            }
            _ => self.hashes.push((range, 1, h)),
        }
    }

    /// The same keys in ranges of `bits` bits (no more than it has).
    pub fn coarsened(&self, bits: u32) -> RangeHashes {
        let bits = bits.min(self.bits);
        let mut out = RangeHashes { bits, hashes: Vec::new() };
        for &(range, keys, sum) in &self.hashes {
            let wide = range >> (self.bits - bits);
            match out.hashes.last_mut() {
                Some((r, k, s)) if *r == wide => {
                    *k += keys;
                    *s = s.wrapping_add(sum);
                }
                _ => out.hashes.push((wide, keys, sum)),
            }
        }
        out
    }

    /// Narrowed to about `KEYS_PER_RANGE` (16) live keys a range, as a summary writes it.
    pub fn sized(&self) -> RangeHashes {
        let live: u64 = self.hashes.iter().map(|r| r.1).sum();
        let ranges = (live / KEYS_PER_RANGE).max(1);
        self.coarsened(u64::BITS - 1 - ranges.leading_zeros())
    }
}

/// Sorts `entries` by key hash (each key once: they come from the table).
fn sort_by_key(entries: &mut [Entry]) {
    entries.sort_unstable_by_key(|e| e.key_hash);
}

/// `offset_and_flags` of an empty slot: no record's, since [`Entry::of`] keeps offsets below it.
const EMPTY: u64 = u64::MAX;
/// An empty slot.
const VACANT: Entry = Entry { key_hash: 0, offset_and_flags: EMPTY, value_hash: 0 };
/// Entries gathered before their slots are prefetched and filled together.
const BATCH: usize = 32;
/// The table's first size, in slots.
const FIRST_SLOTS: usize = 1 << 10;

/// Gathers a partition's entries in offset order and hands them back sorted, one a key.
#[derive(Debug)]
pub struct DigestBuilder<'t> {
    /// Open addressing, linear probing, slot `key_hash >> shift`; a power of two long.
    slots: Vec<Entry>,
    shift: u32,
    /// Keys in `slots`.
    held: usize,
    /// Entries gathered, their slots not yet prefetched.
    pending: Vec<Entry>,
    /// Entries whose slots were prefetched when they were gathered, placed when the next batch is: the misses
    /// of one batch overlap the placing of the one before.
    ready: Vec<Entry>,
    /// Most slots the table may grow to (a power of two); it holds at most three quarters of them.
    max_slots: usize,
    /// After [`DigestBuilder::seal`]: the table's entries, sorted.
    sorted: Vec<Entry>,
    tmp_dir: &'t Path,
    runs: Vec<tempfile::NamedTempFile>,
}

impl<'t> DigestBuilder<'t> {
    /// A builder holding at most `capacity` entries' room in memory (at least 1,024, rounded down to a power of
    /// two; three quarters of it filled), spilling sorted runs into `tmp_dir`.
    pub fn new(capacity: usize, tmp_dir: &'t Path) -> DigestBuilder<'t> {
        let capacity = capacity.max(FIRST_SLOTS);
        let max_slots = 1usize << (usize::BITS - 1 - capacity.leading_zeros());
        let first = FIRST_SLOTS.min(max_slots);
        DigestBuilder {
            slots: vec![VACANT; first],
            shift: 64 - first.trailing_zeros(),
            held: 0,
            pending: Vec::with_capacity(BATCH),
            ready: Vec::with_capacity(BATCH),
            max_slots,
            sorted: Vec::new(),
            tmp_dir,
            runs: Vec::new(),
        }
    }

    /// Adds the entry of a record later in the log than every one added before.
    ///
    /// # Errors
    /// When a run cannot be written.
    pub fn push(&mut self, e: Entry) -> io::Result<()> {
        self.pending.push(e);
        if self.pending.len() == BATCH {
            self.place_ready()?;
            for e in &self.pending {
                cleaner::map::prefetch(&self.slots, (e.key_hash >> self.shift) as usize);
            }
            std::mem::swap(&mut self.pending, &mut self.ready);
        }
        Ok(())
    }

    /// Puts the ready entries in the table, room made first (the table grown, or spilled when it may not
    /// grow).
    fn place_ready(&mut self) -> io::Result<()> {
        if self.ready.is_empty() {
            return Ok(());
        }
        if (self.held + self.ready.len()) * 4 > self.slots.len() * 3 {
            if self.slots.len() < self.max_slots {
                self.grow();
            } else {
                self.spill_table()?;
            }
        }
        let mask = self.slots.len() - 1;
        for e in &self.ready {
            let mut i = (e.key_hash >> self.shift) as usize;
            loop {
                let s = &mut self.slots[i];
                if s.offset_and_flags == EMPTY {
                    *s = *e;
                    self.held += 1;
                    break;
                }
                if s.key_hash == e.key_hash {
                    // Entries come in offset order: the later record of a key is the one a consumer reads.
                    *s = *e;
                    break;
                }
                i = (i + 1) & mask;
            }
        }
        self.ready.clear();
        Ok(())
    }

    /// Doubles the table, placing its entries again.
    fn grow(&mut self) {
        let slots = self.slots.len() * 2;
        let old = std::mem::replace(&mut self.slots, vec![VACANT; slots]);
        self.shift = 64 - slots.trailing_zeros();
        let mask = slots - 1;
        for e in old.into_iter().filter(|e| e.offset_and_flags != EMPTY) {
            let mut i = (e.key_hash >> self.shift) as usize;
            while self.slots[i].offset_and_flags != EMPTY {
                i = (i + 1) & mask;
            }
            self.slots[i] = e;
        }
    }

    /// The table's entries, sorted by key hash, moved into `self.sorted` (the table left empty).
    fn drain_sorted(&mut self) {
        self.sorted.clear();
        self.sorted.extend(self.slots.iter().filter(|e| e.offset_and_flags != EMPTY));
        self.slots.fill(VACANT);
        self.held = 0;
        sort_by_key(&mut self.sorted);
    }

    /// Writes the table's entries as a sorted run and empties it.
    fn spill_table(&mut self) -> io::Result<()> {
        self.drain_sorted();
        self.spill_sorted()
    }

    fn spill_sorted(&mut self) -> io::Result<()> {
        let mut run = tempfile::Builder::new().prefix("logcompact-audit-run").tempfile_in(self.tmp_dir)?;
        {
            let mut w = BufWriter::with_capacity(1 << 16, run.as_file_mut());
            for e in &self.sorted {
                w.write_all(&e.to_bytes())?;
            }
            w.flush()?;
        }
        self.runs.push(run);
        self.sorted = Vec::new();
        Ok(())
    }

    /// Sorted runs written so far (for reports: 0 when the partition fit in memory).
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    /// Ends the input: what is left in memory is sorted and reduced (and spilled too when runs were spilled,
    /// so that [`DigestBuilder::merge`] reads runs only).
    ///
    /// # Errors
    /// When a run cannot be written.
    pub fn seal(&mut self) -> io::Result<()> {
        self.place_ready()?;
        std::mem::swap(&mut self.pending, &mut self.ready);
        self.place_ready()?;
        self.drain_sorted();
        self.slots = Vec::new();
        if !self.runs.is_empty() && !self.sorted.is_empty() {
            self.spill_sorted()?;
        }
        Ok(())
    }

    /// Hands every key's latest entry to `each`, in key-hash order, after [`DigestBuilder::seal`]; returns how
    /// many. It may be called again (to count, then to write).
    ///
    /// # Errors
    /// When a run cannot be read back, or `each` fails.
    pub fn merge(&self, each: &mut dyn FnMut(Entry) -> io::Result<()>) -> io::Result<u64> {
        if self.runs.is_empty() {
            for e in &self.sorted {
                each(*e)?;
            }
            return Ok(self.sorted.len() as u64);
        }
        let mut readers: Vec<BufReader<File>> = Vec::with_capacity(self.runs.len());
        for r in &self.runs {
            readers.push(BufReader::with_capacity(1 << 16, r.reopen()?));
        }
        let next = |r: &mut BufReader<File>| -> io::Result<Option<Entry>> {
            let mut b = [0u8; ENTRY_BYTES];
            match r.read_exact(&mut b) {
                Ok(()) => Ok(Some(Entry::from_bytes(&b))),
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(None),
                Err(e) => Err(e),
            }
        };
        let mut heap = BinaryHeap::new();
        for (i, r) in readers.iter_mut().enumerate() {
            if let Some(e) = next(r)? {
                heap.push(Reverse((e.sort_key(), i, e)));
            }
        }
        let mut pending: Option<Entry> = None;
        let mut written = 0u64;
        while let Some(Reverse((_, i, e))) = heap.pop() {
            if let Some(n) = next(&mut readers[i])? {
                heap.push(Reverse((n.sort_key(), i, n)));
            }
            if let Some(p) = pending.filter(|p| p.key_hash != e.key_hash) {
                each(p)?;
                written += 1;
            }
            pending = Some(e);
        }
        if let Some(p) = pending {
            each(p)?;
            written += 1;
        }
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference: a map of key -> last entry.
    fn model(entries: &[Entry]) -> Vec<Entry> {
        let mut m = std::collections::BTreeMap::new();
        for e in entries {
            m.insert(e.key_hash, *e);
        }
        m.into_values().collect()
    }

    #[test]
    fn spilled_runs_merge_to_each_keys_latest_entry() {
        let tmp = tempfile::tempdir().expect("tmp");
        for keys in [10u64, 3_000, 20_000] {
            let mut all = Vec::new();
            let mut b = DigestBuilder::new(1024, tmp.path());
            for offset in 0..50_000u64 {
                let k = (offset * 7919) % keys;
                let value = offset.to_le_bytes();
                let e = Entry::of(&k.to_le_bytes(), (offset % 11 != 0).then_some(&value[..]), offset, offset % 5 == 0);
                all.push(e);
                b.push(e).expect("push");
            }
            let spilled = b.runs() > 0;
            b.seal().expect("seal");
            let mut got = Vec::new();
            let n = b
                .merge(&mut |e| {
                    got.push(e);
                    Ok(())
                })
                .expect("merge");
            assert_eq!(b.merge(&mut |_| Ok(())).expect("again"), n, "a second merge reads the same");
            assert_eq!(got, model(&all), "{keys} keys");
            assert_eq!(spilled, keys > 768, "{keys} keys: a run is spilled only when the keys outgrow the table");
        }
    }

    #[test]
    fn a_growing_table_keeps_each_keys_latest_entry() {
        let tmp = tempfile::tempdir().expect("tmp");
        // From 1,024 slots up to 64Ki: several doublings, every key placed again at each, no run spilled; keys
        // in a scattered order, each written once first, then the even ones many times (an odd key's one entry
        // must survive every doubling), the last batch not full.
        let keys = 30_000u64;
        let mut all = Vec::new();
        let mut b = DigestBuilder::new(1 << 16, tmp.path());
        for offset in 0..100_003u64 {
            let k = (offset * 2_654_435_761) % keys;
            let k = if offset < keys { k } else { k & !1 };
            let value = offset.to_le_bytes();
            let e = Entry::of(&k.to_le_bytes(), (offset % 7 != 0).then_some(&value[..]), offset, false);
            all.push(e);
            b.push(e).expect("push");
        }
        assert_eq!(b.runs(), 0, "30,000 keys fit in three quarters of 64Ki slots");
        b.seal().expect("seal");
        let mut got = Vec::new();
        b.merge(&mut |e| {
            got.push(e);
            Ok(())
        })
        .expect("merge");
        assert_eq!(got, model(&all));
    }

    #[test]
    fn an_entry_round_trips_its_bytes_and_flags() {
        let e = Entry::of(b"k", None, 42, true);
        assert!(e.is_deleted() && e.is_transactional() && e.offset() == 42);
        assert_eq!(Entry::from_bytes(&e.to_bytes()), e);
        let live = Entry::of(b"k", Some(b"v"), 7, false);
        assert!(!live.is_deleted() && !live.is_transactional() && live.offset() == 7);
    }
}
