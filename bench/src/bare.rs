//! The bare limit an offset map is measured against: 16-byte slots (a 64-bit xxh3 hash and the offset),
//! plain linear probing, no budget or statistics, keys hashed and their slots prefetched 16 at a time. It is
//! not a usable map (a hash collision merges keys, nothing bounds the probes); it shows what the machine's
//! memory allows, so that a real map's figures can be read as a ratio to it in the same run.

use cleaner::map::prefetch;

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

/// What the bare pass took.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct BarePass {
    /// Seconds of its first walk (frames decoded without checksums, keys put in the bare table).
    pub pass1_seconds: f64,
    /// Seconds of its second walk (frames decoded with checksums, keys looked up, kept frames copied).
    pub pass2_seconds: f64,
    /// Records it kept.
    pub kept: u64,
    /// Bytes it copied.
    pub bytes_kept: u64,
}

/// The floor of a native pass over the closed segments of `log`: the same two walks a pass makes over the same
/// mapped bytes, with nothing but what they cannot do without. Walk 1 decodes each frame (no checksum, as
/// pass 1 does not verify either) and puts its key in the [`BareMap`] (sized for `keys`, batched and
/// prefetched as the real maps are); walk 2 decodes each frame with its CRC-32C checksum, looks its key up in
/// runs of 16, and copies the frames whose offset is their key's latest into one buffer (no files, no
/// indexes, no swap). A real pass with an offset map is judged by its time over this one, measured in the
/// same run.
///
/// # Panics
/// On a log that does not read (the benchmark's own).
pub fn bare_pass(log: &log_core::Log, keys: usize) -> BarePass {
    let snapshot = log.snapshot();
    let mut map = BareMap::new(keys.max(1), 0.9);
    let started = std::time::Instant::now();
    for segment in snapshot.closed() {
        let mut scan = segment.scan();
        while let Some(window) = scan.next_window().expect("read") {
            // A window a mapped segment (a memory one: one window): the run's keys borrow it.
            let mut run: Vec<(&[u8], u64)> = Vec::with_capacity(16);
            let frames = window.frames().expect("a native log");
            for f in frames {
                let f = f.expect("frame");
                if let Some(k) = f.record.key {
                    run.push((k, f.record.offset));
                    if run.len() == 16 {
                        map.put_batch(&run);
                        run.clear();
                    }
                }
            }
            map.put_batch(&run);
            run.clear();
        }
    }
    let pass1_seconds = started.elapsed().as_secs_f64();
    let started = std::time::Instant::now();
    let mut out: Vec<u8> = Vec::new();
    let (mut kept, mut bytes_kept) = (0u64, 0u64);
    let mut found = [None; 16];
    for segment in snapshot.closed() {
        let mut scan = segment.scan_from(0, true);
        while let Some(window) = scan.next_window().expect("read") {
            let mut keys_run: Vec<&[u8]> = Vec::with_capacity(16);
            let mut pending: Vec<(u64, &[u8])> = Vec::with_capacity(16);
            let mut flush = |keys_run: &mut Vec<&[u8]>, pending: &mut Vec<(u64, &[u8])>, out: &mut Vec<u8>| {
                map.get_batch(keys_run, &mut found);
                for ((offset, bytes), latest) in pending.iter().zip(found.iter()) {
                    if *latest == Some(*offset) {
                        out.extend_from_slice(bytes);
                        kept += 1;
                        bytes_kept += bytes.len() as u64;
                    }
                }
                keys_run.clear();
                pending.clear();
                // The output of a group is written and let go: keep the buffer from growing past a segment.
                if out.len() > 16 << 20 {
                    out.clear();
                }
            };
            for f in window.frames().expect("a native log") {
                let f = f.expect("frame");
                let Some(k) = f.record.key else { continue };
                keys_run.push(k);
                pending.push((f.record.offset, f.bytes));
                if keys_run.len() == 16 {
                    flush(&mut keys_run, &mut pending, &mut out);
                }
            }
            flush(&mut keys_run, &mut pending, &mut out);
        }
    }
    std::hint::black_box(&out);
    BarePass { pass1_seconds, pass2_seconds: started.elapsed().as_secs_f64(), kept, bytes_kept }
}

/// What the bare walk of a Kafka partition took.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct BareWalk {
    /// Seconds of walk 1 (batch headers parsed, every record decoded, no checksum, keys put in the bare table).
    pub walk1_seconds: f64,
    /// Seconds of walk 2 (the same with each batch's CRC-32C checked, keys looked up).
    pub walk2_seconds: f64,
    /// Seconds of the two walks without the table (the read alone).
    pub read_seconds: f64,
    /// Records decoded by each walk.
    pub records: u64,
}

/// The floor of a Kafka compaction pass over the closed segments of `log`: the two walks a pass makes over
/// the same batches, with the bare table the native floor has ([`BareMap`], sized for `keys`) and nothing
/// else (no output). Walk 1 parses every batch header, decodes every record (decompressing compressed
/// batches) and puts its key, as pass 1 must; walk 2 does the same with each batch's CRC-32C checked and the
/// keys looked up, as pass 2 must before it keeps a batch. The same walks without the table are timed too.
///
/// # Panics
/// On a partition that does not read (the benchmark's own).
pub fn bare_kafka_walk(log: &log_core::Log, keys: usize) -> BareWalk {
    let snapshot = log.snapshot();
    let mut scratch = Vec::new();
    let mut map = BareMap::new(keys.max(1), 0.9);
    let mut found = [None; 16];
    // `table`: 0 none, 1 put, 2 get.
    let mut walk = |verify: bool, table: u8| -> (f64, u64) {
        let started = std::time::Instant::now();
        let (mut records, mut sum) = (0u64, 0usize);
        for segment in snapshot.closed() {
            let mut scan = segment.scan_from(0, verify);
            while let Some(window) = scan.next_window().expect("read") {
                for placed in window.batches() {
                    let batch = placed.expect("batch").batch;
                    let mut run: Vec<(&[u8], u64)> = Vec::with_capacity(16);
                    let mut keys_run: Vec<&[u8]> = Vec::with_capacity(16);
                    for r in batch.records(&mut scratch).expect("records") {
                        let r = r.expect("record");
                        records += 1;
                        sum += r.value.map_or(0, <[u8]>::len);
                        let Some(k) = r.key else { continue };
                        match table {
                            1 => {
                                run.push((k, r.offset));
                                if run.len() == 16 {
                                    map.put_batch(&run);
                                    run.clear();
                                }
                            }
                            2 => {
                                keys_run.push(k);
                                if keys_run.len() == 16 {
                                    map.get_batch(&keys_run, &mut found);
                                    sum += usize::from(found[0].is_some());
                                    keys_run.clear();
                                }
                            }
                            _ => sum += k.len(),
                        }
                    }
                    map.put_batch(&run);
                    map.get_batch(&keys_run, &mut found);
                }
            }
        }
        std::hint::black_box(sum);
        (started.elapsed().as_secs_f64(), records)
    };
    let (read1, _) = walk(false, 0);
    let (read2, _) = walk(true, 0);
    let (walk1_seconds, records) = walk(false, 1);
    let (walk2_seconds, _) = walk(true, 2);
    BareWalk { walk1_seconds, walk2_seconds, read_seconds: read1 + read2, records }
}
