//! The external pass's entry: a key's hash and a record's offset, 24 bytes in memory and in the spill file.

/// An entry: a key's hash, and an offset tagged with whether pass 1 maps it. Ordered by hash, then offset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Entry {
    hi: u64,
    lo: u64,
    /// `offset << 1 | mapped` (Kafka's offsets are below 2^63).
    tagged: u64,
}

impl Entry {
    pub(crate) fn new(hash: u128, offset: u64, mapped: bool) -> Entry {
        Entry { hi: (hash >> 64) as u64, lo: hash as u64, tagged: offset << 1 | u64::from(mapped) }
    }

    /// The entry with its hash's high half rotated left by one bit: for runs that take only the hashes of one
    /// top bit (half of them, on a thread of their own), whose partitions and buckets then come from the bits
    /// below it. A bijection, so keys stay apart and alike; only the order of keys within such runs changes.
    pub(super) fn rotated(self) -> Entry {
        Entry { hi: self.hi.rotate_left(1), ..self }
    }

    /// The hash's high half, by which entries are partitioned and bucketed.
    pub(super) fn hi(self) -> u64 {
        self.hi
    }

    /// The hash's low half.
    pub(super) fn lo(self) -> u64 {
        self.lo
    }

    pub(super) fn offset(self) -> u64 {
        self.tagged >> 1
    }

    pub(super) fn mapped(self) -> bool {
        self.tagged & 1 == 1
    }

    pub(super) fn same_key(self, other: Entry) -> bool {
        self.hi == other.hi && self.lo == other.lo
    }

    pub(super) fn write(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.hi.to_le_bytes());
        out.extend_from_slice(&self.lo.to_le_bytes());
        out.extend_from_slice(&self.tagged.to_le_bytes());
    }

    pub(super) fn read(b: &[u8]) -> Entry {
        let word = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[at..at + 8]);
            u64::from_le_bytes(w)
        };
        Entry { hi: word(0), lo: word(8), tagged: word(16) }
    }
}
