//! The floors a pass is measured against: what a cleaning pass must do and nothing more, with its own few
//! lines of parsing (never the project's decoder), in the same run as the pass. A pass is judged by its time
//! over its floor's, per phase.
//!
//! - [`BareMap`]: the bare table, 16-byte slots (a 64-bit xxh3 hash and the offset), plain linear probing,
//!   keys hashed and their slots prefetched 16 at a time, at load 0.5 (`FLOOR_LOAD`). Not a usable map (a
//!   hash collision merges keys, nothing bounds the probes); it shows what the machine's memory allows. At
//!   load 0.9 (a pass's map's) it was the slower of two floors, and the faster is the one we report: on a
//!   6M-record, 1M-key native log the floors agree with `shared/floors/limitpass` (its 128 MiB table) to 2%
//!   at load 0.9 (1.05 s against 1.05-1.08 s) and load 0.5 takes its walk 2 from 114-116 to 104-106 ns a
//!   record (docs/memory.md, "Two floors").
//! - [`native_floor`]: a native log's two walks. Walk 1 reads every frame's header and key (no checksum, as
//!   pass 1 checks none) and puts the key in the bare table; walk 2 reads every frame with its CRC-32C
//!   checked, looks the keys up in runs of 16, and writes the frames whose offset is their key's latest, with
//!   an index entry every `index.interval.bytes`, into a new file per group of segments (a group: adjacent
//!   segments whose sizes add up to at most `segment.bytes`, as a pass groups them), each file and its index
//!   synced ([`Out::Dir`]) or held in memory as a memory backend's segments are ([`Out::Memory`]).
//! - [`kafka_floor`]: the same two walks over a Kafka partition's batches: headers parsed, records read by
//!   their varints (compressed batches decompressed with `log_core::kafka::compression`, the codec not being
//!   what is floored), batch CRC-32Cs checked in walk 2, a batch that keeps every record written as it is, one
//!   that keeps some rebuilt (its kept records' bytes under the old header, count, length and CRC fixed), one
//!   that keeps none dropped; with Kafka's `.index` and `.timeindex` entries. [`Recompress::No`] writes a
//!   rebuilt batch uncompressed (the floor of everything but the codec); [`Recompress::Yes`] compresses it
//!   again with its codec at Kafka's level (`compress`), as a pass must.
//! - [`kafka_keys_walk`] (and [`kafka_keys_floor`] over a log): walk 1 of a Kafka partition without the
//!   table, every key parsed and hashed and nothing remembered: the least pass 1 of any two-pass cleaner,
//!   which with [`crate::io_floor`]'s read-once, write-once floor makes the two-pass floor `vs-kafka` shows.
//!   Its parsing is checked (a broker-written partition may be damaged): an error names what and where.
//!
//! Neither floor judges tombstones, transactions or producers' last batches: a key's latest record is kept,
//! every other dropped, control batches copied.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use cleaner::map::prefetch;
use log_core::kafka::Compression;

/// The load of the floors' bare tables: half their slots at most (a hit in about 1.5 probes, a miss in 2.5).
const FLOOR_LOAD: f64 = 0.5;

/// The bare table.
#[derive(Debug)]
pub struct BareMap {
    slots: Vec<[u64; 2]>,
}

impl BareMap {
    /// A table with room for `keys` keys at load `load_factor`.
    pub fn new(keys: usize, load_factor: f64) -> BareMap {
        let slots = ((keys as f64 / load_factor).ceil() as usize).max(1);
        BareMap { slots: vec![[0, 0]; slots] }
    }

    fn home(&self, h: u64) -> usize {
        ((u128::from(h) * self.slots.len() as u128) >> 64) as usize
    }

    fn hash(key: &[u8]) -> u64 {
        xxhash_rust::xxh3::xxh3_64(key) | 1
    }

    fn prefetch_all(&self, keys: &[&[u8]], hashes: &mut [u64; 16]) {
        for (h, k) in hashes.iter_mut().zip(keys) {
            *h = Self::hash(k);
            prefetch(&self.slots, self.home(*h));
        }
    }

    /// Puts a run of up to 16 keys.
    pub fn put_batch(&mut self, batch: &[(&[u8], u64)]) {
        let mut keys: [&[u8]; 16] = [&[]; 16];
        for (k, &(key, _)) in keys.iter_mut().zip(batch) {
            *k = key;
        }
        let mut hashes = [0u64; 16];
        self.prefetch_all(&keys[..batch.len()], &mut hashes);
        let n = self.slots.len();
        for (&h, &(_, offset)) in hashes.iter().zip(batch) {
            let mut i = self.home(h);
            loop {
                let slot = &mut self.slots[i];
                if slot[0] == 0 || slot[0] == h {
                    *slot = [h, offset];
                    break;
                }
                i = if i + 1 == n { 0 } else { i + 1 };
            }
        }
    }

    /// Looks up a run of up to 16 keys.
    pub fn get_batch(&self, keys: &[&[u8]], out: &mut [Option<u64>]) {
        let mut hashes = [0u64; 16];
        self.prefetch_all(keys, &mut hashes);
        let n = self.slots.len();
        for (&h, o) in hashes.iter().zip(out.iter_mut()).take(keys.len()) {
            let mut i = self.home(h);
            *o = loop {
                let slot = self.slots[i];
                if slot[0] == h {
                    break Some(slot[1]);
                }
                if slot[0] == 0 {
                    break None;
                }
                i = if i + 1 == n { 0 } else { i + 1 };
            };
        }
    }
}

/// Where a floor writes.
#[derive(Debug, Clone, Copy)]
pub enum Out<'a> {
    /// New files in this directory (created if need be), each synced (`fdatasync`) when written, as a pass
    /// on the file backend syncs its output.
    Dir(&'a Path),
    /// Memory: the output held until the floor ends, as a memory backend holds new segments.
    Memory,
}

/// What a floor took.
#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct Floor {
    /// Seconds of walk 1 (read, keys put).
    pub pass1_seconds: f64,
    /// Seconds of walk 2 (read with checksums, keys looked up, kept bytes and indexes written and synced).
    pub pass2_seconds: f64,
    /// Records it kept.
    pub kept: u64,
    /// Bytes it wrote (data, indexes left out).
    pub bytes_written: u64,
    /// Output files (data files; each has its index files).
    pub files: u64,
}

impl Floor {
    /// Both walks.
    pub fn seconds(&self) -> f64 {
        self.pass1_seconds + self.pass2_seconds
    }
}

/// The bytes of every closed segment of `log`, with their base offsets: mapped where the store maps them,
/// else read (walks never copy a mapped segment).
fn segments(log: &log_core::Log) -> Vec<(u64, std::sync::Arc<log_core::SealedSegment>)> {
    log.snapshot().closed().iter().map(|s| (s.base(), std::sync::Arc::clone(s))).collect()
}

fn with_bytes<T>(segment: &log_core::SealedSegment, f: impl FnOnce(&[u8]) -> T) -> T {
    match segment.bytes() {
        Some(b) => f(b),
        None => {
            let mut buf = vec![0u8; usize::try_from(segment.size()).expect("a segment that fits in memory")];
            segment.file().read_at(0, &mut buf).expect("read a segment");
            f(&buf)
        }
    }
}

/// Groups of adjacent segments whose sizes add up to at most `segment_bytes` (one at least), as a pass
/// groups them.
fn groups(sizes: &[u64], segment_bytes: u64) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut total = 0u64;
    for (i, &s) in sizes.iter().enumerate() {
        if i > start && total + s > segment_bytes {
            out.push(start..i);
            start = i;
            total = 0;
        }
        total += s;
    }
    if start < sizes.len() {
        out.push(start..sizes.len());
    }
    out
}

/// The index a floor writes beside its data: native (offset, position) pairs, or Kafka's `.index` and
/// `.timeindex`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum IndexKind {
    Native,
    Kafka,
}

/// One output file of a floor and its index, written through a 512 KiB buffer (a pass's write buffer) into a
/// file store's bulk copy (`SegmentStore::create_copy`: past the page cache where the file system allows, as a
/// pass's output is written), and each finished file synced on a helper while the next group is walked, as a
/// pass's copying thread hands its groups to a finisher: the floor waits for the disk no more than a pass does.
struct Writer<'a> {
    out: Out<'a>,
    /// The store over the output directory ([`Out::Dir`]).
    store: Option<storage_file::FileStore>,
    kind: IndexKind,
    interval: u64,
    base: u64,
    file: Option<std::sync::Arc<dyn log_core::Segment>>,
    buf: Vec<u8>,
    /// Memory output: every finished file's bytes.
    held: Vec<Vec<u8>>,
    written: u64,
    since_entry: u64,
    index: Vec<u8>,
    time_index: Vec<u8>,
    max_timestamp: i64,
    bytes: u64,
    files: u64,
    /// The previous file's sync and index files, under way.
    syncing: Option<std::thread::JoinHandle<()>>,
}

const WRITE_BUFFER: usize = 512 << 10;

impl<'a> Writer<'a> {
    fn new(out: Out<'a>, kind: IndexKind, interval: u64) -> Self {
        let store = match out {
            Out::Dir(d) => Some(storage_file::FileStore::open(d).expect("the floor's output directory")),
            Out::Memory => None,
        };
        Writer {
            out,
            store,
            kind,
            interval: interval.max(1),
            base: 0,
            file: None,
            buf: Vec::with_capacity(WRITE_BUFFER),
            held: Vec::new(),
            written: 0,
            since_entry: u64::MAX,
            index: Vec::new(),
            time_index: Vec::new(),
            max_timestamp: i64::MIN,
            bytes: 0,
            files: 0,
            syncing: None,
        }
    }

    fn path(&self, dir: &Path, suffix: &str) -> PathBuf {
        dir.join(format!("{:020}.{suffix}", self.base))
    }

    /// Starts the output of a group whose first segment's base is `base`.
    fn start(&mut self, base: u64) {
        self.base = base;
        self.written = 0;
        self.since_entry = u64::MAX;
        self.index.clear();
        self.time_index.clear();
        self.max_timestamp = i64::MIN;
        if let Some(store) = &self.store {
            let name = format!("{:020}.log", self.base);
            // A file of an earlier round under the name goes first, as `File::create` would truncate it.
            let _ = log_core::SegmentStore::delete(store, &name);
            self.file = Some(log_core::SegmentStore::create_copy(store, &name).expect("create the floor's output"));
        }
        self.files += 1;
    }

    /// Writes one kept frame or batch: `offset` its (last) offset, `timestamp` its (largest) timestamp.
    #[expect(clippy::big_endian_bytes, reason = "Kafka's index entries are big-endian")]
    fn write(&mut self, bytes: &[u8], first_offset: u64, last_offset: u64, timestamp: i64) {
        let position = self.written + self.buf.len() as u64;
        if self.since_entry >= self.interval {
            match self.kind {
                IndexKind::Native => {
                    self.index.extend_from_slice(&first_offset.to_le_bytes());
                    self.index.extend_from_slice(&position.to_le_bytes());
                }
                IndexKind::Kafka => {
                    let relative = (last_offset - self.base) as u32;
                    self.index.extend_from_slice(&relative.to_be_bytes());
                    self.index.extend_from_slice(&(position as u32).to_be_bytes());
                    if timestamp > self.max_timestamp {
                        self.max_timestamp = timestamp;
                        self.time_index.extend_from_slice(&timestamp.to_be_bytes());
                        self.time_index.extend_from_slice(&relative.to_be_bytes());
                    }
                }
            }
            self.since_entry = 0;
        }
        self.since_entry += bytes.len() as u64;
        if self.buf.len() + bytes.len() > WRITE_BUFFER {
            self.flush();
        }
        self.buf.extend_from_slice(bytes);
        self.bytes += bytes.len() as u64;
    }

    fn flush(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        match &mut self.file {
            Some(f) => {
                f.append(&self.buf).expect("write the floor's output");
            }
            None => match self.held.last_mut() {
                Some(h) if self.written > 0 => h.extend_from_slice(&self.buf),
                _ => self.held.push(self.buf.clone()),
            },
        }
        self.written += self.buf.len() as u64;
        self.buf.clear();
    }

    /// Ends the group's output: data flushed; on a helper (after the previous group's is done), the file
    /// synced and its index files written and synced.
    fn finish(&mut self) {
        self.flush();
        let indexes: Vec<(&str, Vec<u8>)> = match self.kind {
            IndexKind::Native => vec![("lcindex", std::mem::take(&mut self.index))],
            IndexKind::Kafka => {
                vec![("index", std::mem::take(&mut self.index)), ("timeindex", std::mem::take(&mut self.time_index))]
            }
        };
        match (self.out, self.file.take()) {
            (Out::Dir(d), Some(f)) => {
                let indexes: Vec<(PathBuf, Vec<u8>)> =
                    indexes.into_iter().map(|(suffix, bytes)| (self.path(d, suffix), bytes)).collect();
                self.wait();
                self.syncing = Some(std::thread::spawn(move || {
                    f.sync().expect("sync the floor's output");
                    for (path, bytes) in indexes {
                        let mut i = std::fs::File::create(path).expect("create an index");
                        i.write_all(&bytes).expect("write an index");
                        i.sync_data().expect("sync an index");
                    }
                }));
            }
            _ => {
                for (_, bytes) in indexes {
                    self.held.push(bytes);
                }
            }
        }
    }

    /// Waits for the last finished file's sync: the floor's walk 2 ends when it is done.
    fn wait(&mut self) {
        if let Some(h) = self.syncing.take() {
            h.join().expect("the floor's sync");
        }
    }
}

/// Keys put in runs of 16.
struct Puts<'k> {
    run: Vec<(&'k [u8], u64)>,
}

impl<'k> Puts<'k> {
    fn new() -> Self {
        Puts { run: Vec::with_capacity(16) }
    }

    fn put(&mut self, map: &mut BareMap, key: &'k [u8], offset: u64) {
        self.run.push((key, offset));
        if self.run.len() == 16 {
            map.put_batch(&self.run);
            self.run.clear();
        }
    }

    fn flush(&mut self, map: &mut BareMap) {
        map.put_batch(&self.run);
        self.run.clear();
    }
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// A native frame: its whole bytes, offset, timestamp, key and body (what the CRC covers) with its CRC.
struct NativeFrame<'b> {
    bytes: &'b [u8],
    offset: u64,
    timestamp: i64,
    key: Option<&'b [u8]>,
    crc: u32,
    body: &'b [u8],
}

/// The frame at `at` of `b` (a native segment: `body_len`, CRC-32C, version, flags, offset, timestamp, an
/// optional delete horizon, an optional key; all little-endian).
fn native_frame(b: &[u8], at: usize) -> NativeFrame<'_> {
    let body_len = le_u32(b, at) as usize;
    let crc = le_u32(b, at + 4);
    let body = &b[at + 8..at + 8 + body_len];
    let flags = body[1];
    let offset = le_u64(body, 2);
    let timestamp = le_u64(body, 10) as i64;
    let mut k = 18;
    if flags & 4 != 0 {
        k += 8;
    }
    let key = (flags & 1 != 0).then(|| {
        let len = le_u32(body, k) as usize;
        &body[k + 4..k + 4 + len]
    });
    NativeFrame { bytes: &b[at..at + 8 + body_len], offset, timestamp, key, crc, body }
}

/// The floor of a native pass over the closed segments of `log` (the module's [`native_floor`] item):
/// `keys` sizes the bare table; `segment_bytes` and `index_interval` are the log's settings.
///
/// # Panics
/// On a log that does not read or output that cannot be written (the benchmark's own).
pub fn native_floor(log: &log_core::Log, keys: usize, out: Out<'_>, segment_bytes: u64, index_interval: u64) -> Floor {
    let segs = segments(log);
    let mut map = BareMap::new(keys.max(1), FLOOR_LOAD);
    let started = Instant::now();
    for (_, s) in &segs {
        with_bytes(s, |b| {
            let mut puts = Puts::new();
            let mut at = 0;
            while at + 8 <= b.len() {
                log_core::cache::scan_ahead(b.as_ptr().wrapping_add(at));
                let f = native_frame(b, at);
                if let Some(k) = f.key {
                    puts.put(&mut map, k, f.offset);
                }
                at += f.bytes.len();
            }
            puts.flush(&mut map);
        });
    }
    let pass1_seconds = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let mut w = Writer::new(out, IndexKind::Native, index_interval);
    let mut kept = 0u64;
    let sizes: Vec<u64> = segs.iter().map(|(_, s)| s.size()).collect();
    for group in groups(&sizes, segment_bytes) {
        w.start(segs[group.start].0);
        for (_, s) in &segs[group] {
            with_bytes(s, |b| {
                let mut run: Vec<NativeFrame<'_>> = Vec::with_capacity(16);
                let mut found = [None; 16];
                let mut settle = |run: &mut Vec<NativeFrame<'_>>, w: &mut Writer<'_>| {
                    let mut keys: [&[u8]; 16] = [&[]; 16];
                    for (k, f) in keys.iter_mut().zip(run.iter()) {
                        *k = f.key.unwrap_or_default();
                    }
                    map.get_batch(&keys[..run.len()], &mut found);
                    for (f, latest) in run.iter().zip(found) {
                        if latest == Some(f.offset) {
                            w.write(f.bytes, f.offset, f.offset, f.timestamp);
                            kept += 1;
                        }
                    }
                    run.clear();
                };
                let mut at = 0;
                while at + 8 <= b.len() {
                    log_core::cache::scan_ahead(b.as_ptr().wrapping_add(at));
                    let f = native_frame(b, at);
                    assert_eq!(log_core::checksum::crc32c(f.body), f.crc, "a frame's CRC-32C");
                    at += f.bytes.len();
                    if f.key.is_some() {
                        run.push(f);
                        if run.len() == 16 {
                            settle(&mut run, &mut w);
                        }
                    }
                }
                settle(&mut run, &mut w);
            });
        }
        w.finish();
    }
    w.wait();
    let pass2_seconds = started.elapsed().as_secs_f64();
    std::hint::black_box(&w.held);
    Floor { pass1_seconds, pass2_seconds, kept, bytes_written: w.bytes, files: w.files }
}

/// Whether the Kafka floor compresses a rebuilt batch again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recompress {
    /// Rebuilt batches are written uncompressed: everything a pass does but the codec's compression.
    No,
    /// Rebuilt batches are compressed with their codec at Kafka's level, as a pass writes them.
    Yes,
}

#[expect(clippy::big_endian_bytes, reason = "Kafka's batches are big-endian")]
fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

#[expect(clippy::big_endian_bytes, reason = "Kafka's batches are big-endian")]
fn be_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// A zigzag varint at `*at` of `b`, moving `*at` past it; `None` where `b` ends first or it runs past 64 bits.
fn varint(b: &[u8], at: &mut usize) -> Option<i64> {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            break;
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
    Some(((v >> 1) as i64) ^ -((v & 1) as i64))
}

/// The whole batches of the Kafka segment bytes `b`, in order, each by the length its header gives (after 8
/// bytes of base offset, 4 of length), magic 2; a batch cut short, shorter than a header or of another magic is
/// an error naming its position, after which nothing more is given.
#[expect(clippy::big_endian_bytes, reason = "Kafka's batches are big-endian")]
fn kafka_batches(b: &[u8]) -> impl Iterator<Item = Result<&[u8], String>> {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= b.len() {
            return None;
        }
        let batch = b
            .get(at + 8..at + 12)
            .and_then(|l| usize::try_from(i32::from_be_bytes(l.try_into().ok()?)).ok())
            .filter(|&len| len + 12 >= BATCH_HEADER)
            .and_then(|len| b.get(at..at + 12 + len))
            .filter(|batch| batch[MAGIC_AT] == 2);
        let Some(batch) = batch else {
            let bad = Err(format!("the batch at position {at} is cut short or not of magic 2"));
            at = b.len();
            return Some(bad);
        };
        at += batch.len();
        Some(Ok(batch))
    })
}

/// The records' bytes of the batch `batch` (one [`kafka_batches`] gave): `None` for a control batch (a
/// marker), else its records as stored, or decompressed into `plain` for a compressed batch (at most
/// `MAX_DECOMPRESSED_BYTES`, the bound the project's own reader keeps: a batch that inflates past it is an
/// error, not an allocation that can abort).
fn records_bytes<'b>(batch: &'b [u8], plain: &'b mut Vec<u8>) -> Result<Option<&'b [u8]>, String> {
    let attributes = batch[ATTRIBUTES_AT + 1];
    if attributes & CONTROL_BIT != 0 {
        return Ok(None);
    }
    let codec = Compression::from_bits(attributes & CODEC_BITS).ok_or_else(|| format!("codec {attributes:#x}"))?;
    if codec == Compression::None {
        return Ok(Some(&batch[BATCH_HEADER..]));
    }
    log_core::kafka::compression::decompress(
        codec,
        &batch[BATCH_HEADER..],
        log_core::kafka::MAX_DECOMPRESSED_BYTES,
        plain,
    )
    .map_err(|e| format!("a {codec:?} batch: {e}"))?;
    Ok(Some(plain))
}

/// A zigzag varint appended to `out`.
#[cfg(test)]
fn put_varint(v: i64, out: &mut Vec<u8>) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

/// One record of a batch: where its bytes lie in the records' bytes, its offset delta and its key.
struct KafkaRecord {
    range: std::ops::Range<usize>,
    offset_delta: i64,
    key: Option<std::ops::Range<usize>>,
}

/// The records of a batch's (decompressed) records bytes `r`, `count` of them, into `out`; an error where a
/// record's varints or its key run past its bytes.
fn kafka_records(r: &[u8], count: usize, out: &mut Vec<KafkaRecord>) -> Result<(), String> {
    out.clear();
    let bad = |i: usize| format!("record {i} of {count} runs past its batch");
    let mut at = 0;
    for i in 0..count {
        let start = at;
        // The project's two read-aheads (a floor does what a pass must, as well as it can): the bytes ahead
        // of this record (its pass 1's) and the next batch's (its pass 2's), both in each walk of the floors:
        // the second made the two-pass floor faster, not slower (0.10 -> 0.09 s on the 2M-record partition).
        log_core::cache::scan_ahead(r.as_ptr().wrapping_add(at));
        log_core::cache::next_batch_ahead(r.as_ptr().wrapping_add(at), r.len());
        let len = varint(r, &mut at).and_then(|l| usize::try_from(l).ok()).ok_or_else(|| bad(i))?;
        let end = at.checked_add(len).filter(|&e| e <= r.len()).ok_or_else(|| bad(i))?;
        let body = &r[..end];
        let mut p = at + 1; // attributes
        varint(body, &mut p).ok_or_else(|| bad(i))?; // timestamp delta
        let offset_delta = varint(body, &mut p).ok_or_else(|| bad(i))?;
        let key_len = varint(body, &mut p).ok_or_else(|| bad(i))?;
        let key = match usize::try_from(key_len) {
            Ok(k) => Some(p..p.checked_add(k).filter(|&e| e <= end).ok_or_else(|| bad(i))?),
            Err(_) => None,
        };
        out.push(KafkaRecord { range: start..end, offset_delta, key });
        at = end;
    }
    Ok(())
}

/// Batch header fields (magic 2, big-endian): where they lie.
const BATCH_HEADER: usize = 61;
const MAGIC_AT: usize = 16;
const CRC_AT: usize = 17;
const ATTRIBUTES_AT: usize = 21;
const MAX_TIMESTAMP_AT: usize = 35;
const COUNT_AT: usize = 57;
/// Bits of the attributes' low byte: the codec, and the control flag (a marker batch).
const CODEC_BITS: u8 = 7;
const CONTROL_BIT: u8 = 0x20;

/// The floor of a Kafka pass over the closed segments of `log` (the module's [`kafka_floor`] item): `keys`
/// sizes the bare table; `segment_bytes` and `index_interval` are the partition's settings.
///
/// # Panics
/// On a partition that does not read or output that cannot be written (the benchmark's own).
#[expect(clippy::big_endian_bytes, reason = "Kafka's batches are big-endian")]
pub fn kafka_floor(
    log: &log_core::Log,
    keys: usize,
    out: Out<'_>,
    segment_bytes: u64,
    index_interval: u64,
    recompress: Recompress,
) -> Floor {
    let segs = segments(log);
    let mut map = BareMap::new(keys.max(1), FLOOR_LOAD);
    let mut plain = Vec::new();
    let mut records = Vec::new();
    let own = "the benchmark's own partition";
    let started = Instant::now();
    for (_, s) in &segs {
        with_bytes(s, |b| {
            for batch in kafka_batches(b) {
                let batch = batch.expect(own);
                let Some(r) = records_bytes(batch, &mut plain).expect(own) else { continue };
                let base = be_i64(batch, 0) as u64;
                let count = be_i32(batch, COUNT_AT) as usize;
                kafka_records(r, count, &mut records).expect(own);
                let mut run: Vec<(&[u8], u64)> = Vec::with_capacity(16);
                for rec in &records {
                    if let Some(k) = &rec.key {
                        run.push((&r[k.clone()], base + rec.offset_delta as u64));
                        if run.len() == 16 {
                            map.put_batch(&run);
                            run.clear();
                        }
                    }
                }
                map.put_batch(&run);
            }
        });
    }
    let pass1_seconds = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let mut w = Writer::new(out, IndexKind::Kafka, index_interval);
    let (mut kept, mut rebuilt, mut packed) = (0u64, Vec::new(), Vec::new());
    let mut found = [None; 16];
    let mut keep = Vec::new();
    let sizes: Vec<u64> = segs.iter().map(|(_, s)| s.size()).collect();
    for group in groups(&sizes, segment_bytes) {
        w.start(segs[group.start].0);
        for (_, s) in &segs[group] {
            with_bytes(s, |b| {
                for batch in kafka_batches(b) {
                    let batch = batch.expect(own);
                    let crc = u32::from_be_bytes(batch[CRC_AT..CRC_AT + 4].try_into().expect("4 bytes"));
                    assert_eq!(log_core::checksum::crc32c(&batch[ATTRIBUTES_AT..]), crc, "a batch's CRC-32C");
                    let base = be_i64(batch, 0) as u64;
                    let last = base + be_i32(batch, 23) as u64;
                    let max_timestamp = be_i64(batch, MAX_TIMESTAMP_AT);
                    let Some(r) = records_bytes(batch, &mut plain).expect(own) else {
                        w.write(batch, base, last, max_timestamp);
                        continue;
                    };
                    let attributes = batch[ATTRIBUTES_AT + 1];
                    let codec = Compression::from_bits(attributes & CODEC_BITS).expect(own);
                    let count = be_i32(batch, COUNT_AT) as usize;
                    kafka_records(r, count, &mut records).expect(own);
                    keep.clear();
                    for chunk in records.chunks(16) {
                        let mut keys: [&[u8]; 16] = [&[]; 16];
                        for (k, rec) in keys.iter_mut().zip(chunk) {
                            *k = rec.key.clone().map_or(&[][..], |k| &r[k]);
                        }
                        map.get_batch(&keys[..chunk.len()], &mut found);
                        for (rec, latest) in chunk.iter().zip(&found) {
                            keep.push(rec.key.is_some() && *latest == Some(base + rec.offset_delta as u64));
                        }
                    }
                    let n = keep.iter().filter(|&&k| k).count();
                    kept += n as u64;
                    if n == count {
                        w.write(batch, base, last, max_timestamp);
                        continue;
                    }
                    if n == 0 {
                        continue;
                    }
                    // Rebuilt: the kept records' bytes under the old header.
                    packed.clear();
                    for (rec, _) in records.iter().zip(&keep).filter(|(_, k)| **k) {
                        packed.extend_from_slice(&r[rec.range.clone()]);
                    }
                    rebuilt.clear();
                    rebuilt.extend_from_slice(&batch[..BATCH_HEADER]);
                    let codec_out = match recompress {
                        Recompress::Yes => codec,
                        Recompress::No => Compression::None,
                    };
                    log_core::kafka::compression::compress(codec_out, &packed, &mut rebuilt);
                    let batch_len = (rebuilt.len() - 12) as i32;
                    rebuilt[8..12].copy_from_slice(&batch_len.to_be_bytes());
                    rebuilt[ATTRIBUTES_AT + 1] = (attributes & !CODEC_BITS) | codec_out.bits();
                    rebuilt[COUNT_AT..COUNT_AT + 4].copy_from_slice(&(n as i32).to_be_bytes());
                    let crc = log_core::checksum::crc32c(&rebuilt[ATTRIBUTES_AT..]);
                    rebuilt[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
                    w.write(&rebuilt, base, last, max_timestamp);
                }
            });
        }
        w.finish();
    }
    w.wait();
    let pass2_seconds = started.elapsed().as_secs_f64();
    std::hint::black_box(&w.held);
    Floor { pass1_seconds, pass2_seconds, kept, bytes_written: w.bytes, files: w.files }
}

/// The least pass 1 of any two-pass cleaner over the closed segments of a Kafka `log`: every batch's records
/// read by their varints (a compressed batch decompressed) and every key hashed (xxh3-128, as the external
/// pass hashes them), nothing remembered; markers (control batches) skipped, as a pass 1 maps none of their
/// keys. A cleaner that maps keys, sorts them or spills them does this and more, so this plus the read-once,
/// write-once floor ([`crate::io_floor`]) is a floor under a two-pass cleaner on one thread (not a proof of
/// one: a cheaper hash would walk faster). Returns the seconds and the keys hashed.
///
/// A store that does not map its segments (a read-only one) has each read into memory first, which this
/// times too: give a mapped log, or the mapped bytes to [`kafka_keys_walk`].
///
/// # Errors
/// A batch or record cut short or of another magic, a codec unknown or bytes that do not decompress, as text
/// naming where.
pub fn kafka_keys_floor(log: &log_core::Log) -> Result<(f64, u64), String> {
    let segs = segments(log);
    let mut walk = KeysWalk::default();
    let started = Instant::now();
    for (_, s) in &segs {
        with_bytes(s, |b| walk.segment(b)).map_err(|e| format!("segment {}: {e}", s.base()))?;
    }
    std::hint::black_box(walk.sum);
    Ok((started.elapsed().as_secs_f64(), walk.keys))
}

/// [`kafka_keys_floor`] over the bytes of a Kafka partition's closed segments, in order (mapped, as a pass
/// reads them).
///
/// # Errors
/// As [`kafka_keys_floor`], naming the segment by its place in `segments`.
pub fn kafka_keys_walk(segments: &[&[u8]]) -> Result<(f64, u64), String> {
    let mut walk = KeysWalk::default();
    let started = Instant::now();
    for (i, b) in segments.iter().enumerate() {
        walk.segment(b).map_err(|e| format!("segment {i}: {e}"))?;
    }
    std::hint::black_box(walk.sum);
    Ok((started.elapsed().as_secs_f64(), walk.keys))
}

/// The keys floor's state: scratch for a batch's records and decompressed bytes, the keys hashed and a sum of
/// their hashes (so that none is optimised away).
#[derive(Default)]
struct KeysWalk {
    plain: Vec<u8>,
    records: Vec<KafkaRecord>,
    keys: u64,
    sum: u128,
}

impl KeysWalk {
    /// Hashes the key of every record of the segment bytes `b` but a marker's.
    fn segment(&mut self, b: &[u8]) -> Result<(), String> {
        for batch in kafka_batches(b) {
            let batch = batch?;
            let Some(r) = records_bytes(batch, &mut self.plain)? else { continue };
            let count = usize::try_from(be_i32(batch, COUNT_AT)).map_err(|_| "a negative record count".to_owned())?;
            kafka_records(r, count, &mut self.records)?;
            for k in self.records.iter().filter_map(|rec| rec.key.clone()) {
                self.sum = self.sum.wrapping_add(xxhash_rust::xxh3::xxh3_128(&r[k]));
                self.keys += 1;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip() {
        for v in [0i64, 1, -1, 63, -64, 64, 300, -300, i64::from(i32::MAX), i64::from(i32::MIN)] {
            let mut b = Vec::new();
            put_varint(v, &mut b);
            let mut at = 0;
            assert_eq!(varint(&b, &mut at), Some(v));
            assert_eq!(at, b.len());
        }
    }

    #[test]
    fn groups_add_up_to_the_segment_size() {
        assert_eq!(groups(&[4, 4, 4, 9, 1], 8), vec![0..2, 2..3, 3..4, 4..5]);
        assert_eq!(groups(&[], 8), Vec::<std::ops::Range<usize>>::new());
    }
}
