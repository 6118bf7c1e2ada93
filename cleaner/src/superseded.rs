//! What pass 1 with a map leaves pass 2 beside the map: the offsets of the dirty section that a later record
//! of their key superseded ([`Superseded`]), noted as each put replaced a key's earlier offset
//! ([`crate::map::OffsetMap::put_batch_superseding`]).
//!
//! Pass 2 then judges a record pass 1 put by one bit instead of hashing its key again and probing the map at
//! a random slot. The answer is the same: a record pass 1 put is superseded exactly when the map holds a later
//! offset for its key, and the put of that later offset is what noted it (a collision of two keys in the map
//! makes them one key both ways). Records pass 1 did not put are asked of the map, as before: those below the
//! checkpoint, and the batches pass 1 read as aborted that pass 2 judges record by record
//! ([`crate::keep::Pass1Txns`]). The set costs a bit an offset of the dirty section, allowed only where that
//! is at most an eighth of the dedupe buffer (so a pass's memory stays within the buffer and an eighth).

use crate::external::StaleSet;
use crate::map::Probes;

/// The share of the dedupe buffer the set may take: an eighth.
const BUDGET_SHARE: usize = 8;

/// The dirty section's offsets a later record of their key superseded, from `start` (the checkpoint) to the
/// end of what pass 1 could map.
pub(crate) struct Superseded {
    set: StaleSet,
    start: u64,
    end: u64,
    /// Offset ranges (first, last) of the batches pass 1 left unmapped that pass 2 judges by key, in offset
    /// order.
    unmapped: Vec<(u64, u64)>,
}

impl Superseded {
    /// An empty set for the offsets `start..end`, or `None` when its bits would take more than an eighth of
    /// `buffer_bytes` (or more than [`crate::external::MEMORY_BYTES`]: it is always held in memory).
    pub(crate) fn new(start: u64, end: u64, buffer_bytes: usize) -> Option<Superseded> {
        let bytes = end.saturating_sub(start).div_ceil(8);
        let allowed = (buffer_bytes / BUDGET_SHARE) as u64;
        if bytes > allowed.min(crate::external::MEMORY_BYTES) {
            return None;
        }
        let set = StaleSet::new(start, end, None).ok()?;
        Some(Superseded { set, start, end, unmapped: Vec::new() })
    }

    /// Notes `offsets` superseded.
    #[inline]
    pub(crate) fn note(&mut self, offsets: &[u64]) {
        self.set.set_all(offsets);
    }

    /// The batches pass 1 left unmapped that pass 2 judges by key (offset ranges, in order).
    pub(crate) fn ask_the_map_for(&mut self, unmapped: Vec<(u64, u64)>) {
        self.unmapped = unmapped;
    }

    /// True when every one of `offsets` is a record pass 1 put (given that each is a keyed record below the
    /// pass's end offset in a batch pass 2 judges by key): within the set and in no unmapped batch.
    #[inline]
    fn knows(&self, offsets: &[u64]) -> bool {
        offsets.iter().all(|&o| o >= self.start && o < self.end)
            && (self.unmapped.is_empty() || offsets.iter().all(|&o| !self.in_unmapped(o)))
    }

    fn in_unmapped(&self, offset: u64) -> bool {
        let i = self.unmapped.partition_point(|&(_, last)| last < offset);
        self.unmapped.get(i).is_some_and(|&(first, _)| first <= offset)
    }

    /// `out[i]` for the record of key `keys[i]` at `offsets[i]`: `Some(u64::MAX)` for a superseded record and
    /// `None` for one that is its key's latest, where pass 1 put every one of them; otherwise what the map
    /// holds for each key.
    #[inline]
    pub(crate) fn get_batch(
        &self,
        map: &dyn crate::map::OffsetMap,
        keys: &[&[u8]],
        offsets: &[u64],
        out: &mut [Option<u64>],
        probes: &mut Probes,
    ) {
        if self.knows(offsets) {
            crate::external::lookup(&self.set, offsets, out, probes);
        } else {
            map.get_batch(keys, out, probes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::{MapKind, OffsetMap};

    fn map() -> Box<dyn OffsetMap> {
        crate::CleanerConfig { map: MapKind::Compact, dedupe_buffer_bytes: 1 << 20, ..Default::default() }
            .build_map()
            .expect("map")
    }

    #[test]
    fn every_map_notes_the_earlier_offset_each_put_replaced() {
        let mut rng = log_core::workload::SplitMix64::new(3);
        let keys: Vec<[u8; 8]> = (0..5_000u64).map(|_| (rng.next_u64() % 700).to_le_bytes()).collect();
        let records: Vec<(&[u8], u64)> = keys.iter().enumerate().map(|(o, k)| (&k[..], 1_000 + o as u64)).collect();
        // What a put supersedes: the key's previous offset.
        let mut last = std::collections::HashMap::new();
        let expected: Vec<u64> = records.iter().filter_map(|&(k, o)| last.insert(k, o)).collect();
        for kind in MapKind::ALL {
            let config = crate::CleanerConfig { map: kind, dedupe_buffer_bytes: 1 << 20, ..Default::default() };
            let mut m = config.build_map().expect("map");
            m.begin_bounded(1_000, 5_000);
            let mut noted = Vec::new();
            let put: usize = records.chunks(37).map(|run| m.put_batch_superseding(run, &mut noted)).sum();
            assert_eq!((put, &noted), (records.len(), &expected), "{kind}");
        }
    }

    #[test]
    fn a_set_larger_than_an_eighth_of_the_buffer_is_not_made() {
        assert!(Superseded::new(0, 8 * 1024, 1024 * 8).is_some());
        assert!(Superseded::new(0, 8 * 1024 + 8, 1024 * 8).is_none());
    }

    #[test]
    fn records_pass_1_put_are_answered_by_the_set_and_the_others_by_the_map() {
        let mut m = map();
        m.begin_bounded(100, 100);
        let mut s = Superseded::new(100, 200, 1 << 20).expect("set");
        let mut noted = Vec::new();
        // Key a at 100 and 150, key b at 120; 160 lies in a batch pass 1 left unmapped (key a there too).
        let put = m.put_batch_superseding(&[(b"a", 100), (b"b", 120), (b"a", 150)], &mut noted);
        assert_eq!((put, noted.as_slice()), (3, &[100][..]));
        s.note(&noted);
        s.ask_the_map_for(vec![(160, 169)]);
        let mut out = [None; 3];
        let mut probes = Probes::default();
        s.get_batch(&*m, &[b"a", b"b", b"a"], &[100, 120, 150], &mut out, &mut probes);
        assert_eq!(out, [Some(u64::MAX), None, None], "the set: 100 superseded");
        // A record below the set, or in an unmapped batch: the map's answer for the whole run.
        s.get_batch(&*m, &[b"a", b"b"], &[99, 120], &mut out[..2], &mut probes);
        assert_eq!(out[..2], [Some(150), Some(120)]);
        s.get_batch(&*m, &[b"b", b"a"], &[120, 165], &mut out[..2], &mut probes);
        assert_eq!(out[..2], [Some(120), Some(150)]);
        assert!(s.in_unmapped(160) && s.in_unmapped(169) && !s.in_unmapped(159) && !s.in_unmapped(170));
    }
}
