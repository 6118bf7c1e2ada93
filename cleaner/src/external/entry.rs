//! The external pass's entry: a key's hash and a record's offset, 16 bytes in memory and in the spill file.
//!
//! Layout: the hash's high half (64 bits), then one word of the low half's top [`KEY_LOW_BITS`] bits, the
//! record's offset from the pass's first ([`OFFSET_BITS`]: a pass spans at most 2^40 offsets, checked before
//! it reads) and whether pass 1 maps it. So entries order by hash, then offset, as two words compare, and a
//! key is its 87 hash bits: two keys are one to the pass when those agree (`n^2 / 2^88` for `n` keys: 3.2e-11
//! at 10^8 keys). Why not the 128 bits of the 24-byte entry before it: the pass moves every entry through
//! memory several times (partitioned, sorted, spilled, read back, merged), and at 16 bytes pass 1 of the 4 GiB
//! backlog took 15-20% less time; a budget holds 1.5 times the entries, so fewer runs.

/// Bits of an entry's offset (from the pass's first offset).
pub(crate) const OFFSET_BITS: u32 = 40;

/// The most offsets a pass spans.
pub(crate) const MOST_OFFSETS: u64 = 1 << OFFSET_BITS;

/// Bits of the hash's low half an entry keeps: the rest of its second word.
pub(crate) const KEY_LOW_BITS: u32 = 64 - OFFSET_BITS - 1;

/// The key's bits of an entry's second word.
const KEY_MASK: u64 = !0 << (64 - KEY_LOW_BITS);

/// An entry: a key's hash, and an offset tagged with whether pass 1 maps it. Ordered by hash, then offset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Entry {
    hi: u64,
    /// The hash's low half's top [`KEY_LOW_BITS`] bits, then `offset << 1 | mapped`.
    rest: u64,
}

impl Entry {
    /// The entry of a record at `offset` from the pass's first (below [`MOST_OFFSETS`]: higher bits are lost)
    /// whose key hashes to `hash`.
    pub(crate) fn new(hash: u128, offset: u64, mapped: bool) -> Entry {
        debug_assert!(offset < MOST_OFFSETS, "offset {offset} from the pass's first");
        let rest = (hash as u64 & KEY_MASK) | (offset << 1 & !KEY_MASK) | u64::from(mapped);
        Entry { hi: (hash >> 64) as u64, rest }
    }

    /// The entry with its hash's high half rotated left by one bit: for runs that take only the hashes of one
    /// top bit (half of them, on a thread of their own), whose partitions and buckets then come from the bits
    /// below it. A bijection, so keys stay apart and alike; only the order of keys within such runs changes.
    pub(super) fn rotated(self) -> Entry {
        Entry { hi: self.hi.rotate_left(1), ..self }
    }

    /// The entry's order as one number: hash, then offset, as [`Ord`] orders entries (one comparison of two
    /// words without a branch between them).
    #[inline]
    pub(super) fn key(self) -> u128 {
        u128::from(self.hi) << 64 | u128::from(self.rest)
    }

    /// The hash's high half, by which entries are partitioned and bucketed.
    pub(super) fn hi(self) -> u64 {
        self.hi
    }

    /// The record's offset from the pass's first.
    pub(super) fn offset(self) -> u64 {
        (self.rest & !KEY_MASK) >> 1
    }

    pub(super) fn mapped(self) -> bool {
        self.rest & 1 == 1
    }

    pub(super) fn same_key(self, other: Entry) -> bool {
        self.hi == other.hi && (self.rest ^ other.rest) & KEY_MASK == 0
    }

    pub(super) fn write(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.hi.to_le_bytes());
        out.extend_from_slice(&self.rest.to_le_bytes());
    }

    pub(super) fn read(b: &[u8]) -> Entry {
        let word = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[at..at + 8]);
            u64::from_le_bytes(w)
        };
        Entry { hi: word(0), rest: word(8) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_keeps_its_offset_its_tag_and_87_bits_of_its_key() {
        let hash = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210_u128;
        let last = MOST_OFFSETS - 1;
        for (offset, mapped) in [(0, false), (1, true), (last, true), (last, false)] {
            let e = Entry::new(hash, offset, mapped);
            assert_eq!((e.offset(), e.mapped(), e.hi()), (offset, mapped, 0x0123_4567_89ab_cdef));
            let mut bytes = Vec::new();
            e.write(&mut bytes);
            assert_eq!(Entry::read(&bytes), e);
            // The low half's bits below the kept ones do not tell keys apart; the kept ones do.
            assert!(e.same_key(Entry::new(hash ^ (1 << (64 - KEY_LOW_BITS - 1)), 5, !mapped)));
            assert!(!e.same_key(Entry::new(hash ^ (1 << (64 - KEY_LOW_BITS)), offset, mapped)));
            assert!(!e.same_key(Entry::new(hash ^ (1 << 64), offset, mapped)));
        }
        // By hash, then offset.
        let (a, b) = (Entry::new(hash, 7, true), Entry::new(hash, 9, false));
        assert!(a < b && Entry::new(hash + (1 << 64), 0, false) > b);
        assert!(Entry::new(hash + (1 << (64 - KEY_LOW_BITS)), 0, false) > b);
    }
}
