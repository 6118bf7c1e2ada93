//! Sorting a partition's entries by hash in linear time: one counting pass on the hash bits just below the
//! partition's own (as many bits as the entries need for about one key a bucket), then each bucket of more
//! than [`INSERTION`] entries sorted on its own and one insertion pass over the whole partition for the rest
//! (an entry moves only within its bucket). The result is the entries' full order (hash, then offset), which the runs'
//! merge needs; a comparison sort of the same entries took most of pass 1's judging (about 45 ns an entry for
//! a 128 MiB buffer, 30 for a partition's few hundred KiB).

use super::entry::Entry;

/// Buckets at most (2^20: 4 MiB of counts), whatever the entries.
const MAX_BUCKET_BITS: u32 = 20;

/// Entries below which a comparison sort is as quick.
const SMALL: usize = 64;

/// A bucket's length up to which an insertion sort orders it (longer: many entries of one key).
const INSERTION: usize = 16;

/// The scratch a sort reuses: the entries placed by bucket, and the buckets' counts.
#[derive(Default)]
pub(super) struct Sorter {
    scratch: Vec<Entry>,
    counts: Vec<u32>,
    /// The most entries sorted through the scratch; more are sorted in place (by comparison).
    most: usize,
}

impl Sorter {
    /// A sorter whose scratch holds at most `most` entries (as many again as the entries it sorts that way):
    /// more are sorted in place, so that a budget of one partition is not held twice.
    pub(super) fn new(most: usize) -> Sorter {
        Sorter { most, ..Sorter::default() }
    }

    /// Sorts `entries`, whose hashes all share their top `skip_bits` bits (a partition's).
    pub(super) fn sort(&mut self, entries: &mut [Entry], skip_bits: u32) {
        let n = entries.len();
        if n < SMALL || n > self.most.min(u32::MAX as usize) || skip_bits >= 64 - MAX_BUCKET_BITS {
            entries.sort_unstable();
            return;
        }
        let bits = (usize::BITS - (n - 1).leading_zeros()).clamp(1, MAX_BUCKET_BITS);
        let bucket = |e: &Entry| ((e.hi() << skip_bits) >> (64 - bits)) as usize;
        self.counts.clear();
        self.counts.resize(1 << bits, 0);
        for e in entries.iter() {
            self.counts[bucket(e)] += 1;
        }
        // Each bucket's start.
        let mut at = 0u32;
        for c in &mut self.counts {
            let len = *c;
            *c = at;
            at += len;
        }
        // The scratch is as large as the entries: memory the machine may not give (a huge budget's partition),
        // in which case the entries are sorted in place instead, never an abort.
        self.scratch.clear();
        if self.scratch.try_reserve_exact(n).is_err() {
            entries.sort_unstable();
            return;
        }
        self.scratch.resize(n, Entry::default());
        for &e in entries.iter() {
            let slot = &mut self.counts[bucket(&e)];
            self.scratch[*slot as usize] = e;
            *slot += 1;
        }
        entries.copy_from_slice(&self.scratch);
        // Each count is now its bucket's end. A bucket of many entries (a key written many times) is sorted on
        // its own; then one insertion pass over them all orders the rest. It moves an entry only within its
        // bucket, since the buckets are in order, and so costs a comparison an entry and a move an inversion,
        // without a branch on each bucket's length (most hold none, one or two entries: one in two mispredicted).
        let mut start = 0usize;
        for &end in &self.counts {
            let end = end as usize;
            if end - start > INSERTION {
                entries[start..end].sort_unstable();
            }
            start = end;
        }
        insertion_sort(entries);
    }

    /// Bytes the scratch holds.
    pub(super) fn memory_bytes(&self) -> usize {
        self.scratch.capacity() * std::mem::size_of::<Entry>() + self.counts.capacity() * 4
    }
}

/// Sorts `run`: a comparison an entry, and a move for each pair out of order.
fn insertion_sort(run: &mut [Entry]) {
    for i in 1..run.len() {
        let e = run[i];
        if e.key() >= run[i - 1].key() {
            continue;
        }
        let mut j = i;
        while j > 0 && e.key() < run[j - 1].key() {
            run[j] = run[j - 1];
            j -= 1;
        }
        run[j] = e;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_and_the_last_bucket_are_ordered_too() {
        // The smallest and largest hashes, each five times at falling offsets (and one with two hashes alike
        // in their high half only), among random ones: the insertion pass must move entries to the very front
        // and within the very last bucket.
        let mut rng = log_core::workload::SplitMix64::new(5);
        let mut entries: Vec<Entry> =
            (0..200u64).map(|o| Entry::new(u128::from(rng.next_u64()) << 64, o, true)).collect();
        for o in (300..305u64).rev() {
            entries.push(Entry::new(0, o, o % 2 == 0));
            entries.push(Entry::new(u128::MAX, o, true));
            entries.push(Entry::new(u128::from(u64::MAX) << 64, o, false));
        }
        entries.rotate_left(100);
        let mut expected = entries.clone();
        expected.sort_unstable();
        Sorter::new(usize::MAX).sort(&mut entries, 0);
        assert_eq!(entries, expected);
        assert_eq!(entries[0].offset(), 300, "the front entry");
    }

    #[test]
    fn a_counting_sort_gives_the_full_order() {
        let mut rng = log_core::workload::SplitMix64::new(11);
        let mut sorter = Sorter::new(usize::MAX);
        for (n, skip_bits, keys) in
            [(0, 0, 1), (10, 0, 5), (100, 0, 1), (5_000, 0, 3_000), (5_000, 8, 40), (70_000, 10, 9_000)]
        {
            // Keys sharing their top `skip_bits` bits, some repeated (one key many times when keys is 1), and
            // some that share all of `hi` but not `lo`.
            let top = if skip_bits == 0 { 0 } else { (rng.next_u64() >> (64 - skip_bits)) << (64 - skip_bits) };
            let universe: Vec<u128> = (0..keys)
                .map(|i| {
                    let hi = top | (rng.next_u64() >> skip_bits);
                    let hi = if i % 7 == 1 { top } else { hi };
                    // Keys alike in the high half too, told apart by the low half's kept bits.
                    (u128::from(hi) << 64) | u128::from(rng.next_u64() % 3) << 62
                })
                .collect();
            let mut entries: Vec<Entry> = (0..n)
                .map(|o| Entry::new(universe[(rng.next_u64() % keys) as usize], rng.next_u64() >> 24, o % 3 == 0))
                .collect();
            let mut expected = entries.clone();
            expected.sort_unstable();
            let mut in_place = entries.clone();
            sorter.sort(&mut entries, skip_bits);
            assert_eq!(entries, expected, "{n} entries, {skip_bits} bits skipped, {keys} keys");
            let mut small = Sorter::new(n / 2);
            small.sort(&mut in_place, skip_bits);
            assert_eq!(in_place, expected, "{n} entries in place");
            assert!(small.memory_bytes() == 0, "a sort past its scratch's size takes no scratch");
        }
    }
}
