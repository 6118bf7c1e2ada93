//! The state a `read_committed` consumer rebuilds from a partition, as one entry a key: the key's hash, the
//! offset of the latest record it reads for that key, and a hash of that record's value (or "deleted"), sorted
//! by key hash. Built in bounded memory: entries gather in a buffer of at most `capacity`; a full buffer is
//! sorted and reduced to one entry a key, and when that still fills more than half of it, it goes to a
//! temporary file as a sorted run. The runs are merged at the end, keeping each key's latest entry. Work is
//! `O(n log n)` in the records and memory `O(capacity + runs)`.

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
        Entry { key_hash: xxhash_rust::xxh3::xxh3_64(key), offset_and_flags: (offset & !FLAGS) | flags, value_hash }
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

/// Sorts `entries` by key and keeps each key's entry of the largest offset (sorted by the key alone, the
/// cheaper comparison; a key's entries are few and scanned for their largest offset). A radix sort of the
/// hashes was tried: no faster here, and it needs a second buffer.
fn reduce(entries: &mut Vec<Entry>) {
    entries.sort_unstable_by_key(|e| e.key_hash);
    let mut out = 0usize;
    let mut i = 0usize;
    while i < entries.len() {
        let mut latest = entries[i];
        let mut j = i + 1;
        while j < entries.len() && entries[j].key_hash == latest.key_hash {
            if entries[j].offset() > latest.offset() {
                latest = entries[j];
            }
            j += 1;
        }
        entries[out] = latest;
        out += 1;
        i = j;
    }
    entries.truncate(out);
}

/// Gathers a partition's entries in offset order and hands them back sorted, one a key.
#[derive(Debug)]
pub struct DigestBuilder<'t> {
    buf: Vec<Entry>,
    capacity: usize,
    tmp_dir: &'t Path,
    runs: Vec<tempfile::NamedTempFile>,
}

impl<'t> DigestBuilder<'t> {
    /// A builder holding at most `capacity` entries in memory (at least 1,024), spilling sorted runs into
    /// `tmp_dir`.
    pub fn new(capacity: usize, tmp_dir: &'t Path) -> DigestBuilder<'t> {
        DigestBuilder { buf: Vec::new(), capacity: capacity.max(1024), tmp_dir, runs: Vec::new() }
    }

    /// Adds the entry of a record later in the log than every one added before.
    ///
    /// # Errors
    /// When a run cannot be written.
    pub fn push(&mut self, e: Entry) -> io::Result<()> {
        if self.buf.len() == self.capacity {
            reduce(&mut self.buf);
            if self.buf.len() > self.capacity / 2 {
                self.spill()?;
            }
        }
        if self.buf.capacity() == 0 {
            self.buf.reserve_exact(self.capacity.min(1 << 16));
        }
        self.buf.push(e);
        Ok(())
    }

    fn spill(&mut self) -> io::Result<()> {
        let mut run = tempfile::Builder::new().prefix("logcompact-audit-run").tempfile_in(self.tmp_dir)?;
        {
            let mut w = BufWriter::with_capacity(1 << 16, run.as_file_mut());
            for e in &self.buf {
                w.write_all(&e.to_bytes())?;
            }
            w.flush()?;
        }
        self.runs.push(run);
        self.buf.clear();
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
        reduce(&mut self.buf);
        if !self.runs.is_empty() && !self.buf.is_empty() {
            self.spill()?;
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
            for e in &self.buf {
                each(*e)?;
            }
            return Ok(self.buf.len() as u64);
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
            assert_eq!(spilled, keys > 512, "{keys} keys: a run is spilled only when the keys outgrow half the buffer");
        }
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
