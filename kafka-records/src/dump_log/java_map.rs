//! The order in which Kafka 4.4's `DumpLogSegments` prints its summaries: each is a `java.util.HashMap` keyed
//! by a file's absolute path, filled with `computeIfAbsent` once per reported pair and printed with `forEach`.
//!
//! [`JavaHashMap`] models exactly what decides that order: buckets `(h ^ (h >>> 16)) & (n - 1)` over Java's
//! `String.hashCode` (UTF-16 units), a new key linked at the head of its bucket, a table of 16 slots made on
//! the first call and doubled at the start of any later call that finds more than `0.75 n` keys (or when a
//! bucket reaches eight keys in a table under 64 slots), a resize keeping each bucket's relative order.
//! Invariant: [`JavaHashMap::in_order`] lists every key once, in the order `HashMap.forEach` visits them.

/// Java's `String.hashCode`, over UTF-16 code units.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// A `java.util.HashMap<String, V>` as far as its iteration order goes.
#[derive(Debug, Clone)]
pub struct JavaHashMap<V> {
    /// Keys, their spread hashes and values, in insertion order.
    entries: Vec<(String, u32, V)>,
    /// Each bucket's entries (indexes into `entries`) in iteration order; empty until the first call.
    buckets: Vec<Vec<usize>>,
}

impl<V> Default for JavaHashMap<V> {
    fn default() -> Self {
        JavaHashMap { entries: Vec::new(), buckets: Vec::new() }
    }
}

impl<V> JavaHashMap<V> {
    fn resize(&mut self) {
        let n = if self.buckets.is_empty() { 16 } else { self.buckets.len() * 2 };
        let mut buckets = vec![Vec::new(); n];
        for bucket in &self.buckets {
            for &i in bucket {
                buckets[(self.entries[i].1 as usize) & (n - 1)].push(i);
            }
        }
        self.buckets = buckets;
    }

    /// `computeIfAbsent(key, k -> make())`: the value for `key`.
    pub fn compute_if_absent(&mut self, key: &str, make: impl FnOnce() -> V) -> &mut V {
        if self.buckets.is_empty() || self.entries.len() > self.buckets.len() * 3 / 4 {
            self.resize();
        }
        let h = java_string_hash(key) as u32;
        let hash = h ^ (h >> 16);
        let slot = (hash as usize) & (self.buckets.len() - 1);
        if let Some(&i) = self.buckets[slot].iter().find(|&&i| self.entries[i].0 == key) {
            return &mut self.entries[i].2;
        }
        let bin_count = self.buckets[slot].len();
        self.entries.push((key.to_owned(), hash, make()));
        let i = self.entries.len() - 1;
        self.buckets[slot].insert(0, i);
        // `treeifyBin` on a long bucket grows a small table instead.
        if bin_count >= 7 && self.buckets.len() < 64 {
            self.resize();
        }
        &mut self.entries[i].2
    }

    /// The keys and values in `forEach` order.
    pub fn in_order(&self) -> Vec<(&str, &V)> {
        self.buckets.iter().flatten().map(|&i| (self.entries[i].0.as_str(), &self.entries[i].2)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_key_into_a_bucket_prints_first() {
        assert_eq!(java_string_hash("hello"), 99_162_322);
        let mut m: JavaHashMap<u32> = JavaHashMap::default();
        // "Aa" and "BB" share a hash, so a bucket.
        for k in ["Aa", "BB", "c"] {
            *m.compute_if_absent(k, || 0) += 1;
        }
        let order: Vec<&str> = m.in_order().into_iter().map(|(k, _)| k).collect();
        assert_eq!(order, ["BB", "Aa", "c"]);
    }

    #[test]
    fn the_table_grows_only_when_a_call_finds_it_over_three_quarters() {
        let mut m: JavaHashMap<()> = JavaHashMap::default();
        for i in 0..13 {
            m.compute_if_absent(&format!("k{i}"), || ());
        }
        assert_eq!(m.buckets.len(), 16, "the 13th key goes into a table of 16");
        m.compute_if_absent("k0", || ());
        assert_eq!(m.buckets.len(), 32, "any later call grows it");
    }
}
