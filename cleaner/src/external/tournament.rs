//! A tournament (loser) tree over k sorted sources: which source holds the smallest head, updated in one
//! comparison a level (log2 k) when the winner's source moves to its next entry. A binary heap takes about
//! twice that (a pop sifts down comparing two children a level, then the push sifts up), and the external
//! pass's merge does it once an entry: at 13 runs (68M records in 128 MiB) the heap was its largest cost.
//!
//! The tree is Knuth's: internal node `t` (1..k) keeps the loser of the match played there, node 0 the
//! overall winner; leaf `s` sits at position `s + k`, its parent at half that.

/// The tournament of `heads.len()` sources. A source's head is `None` once it is exhausted (it loses to every
/// entry); ties go to the lower source.
pub(super) struct Tournament<T> {
    heads: Vec<Option<T>>,
    /// `losers[0]` the winner, `losers[t]` the loser at node `t`.
    losers: Vec<usize>,
}

impl<T: Ord + Copy> Tournament<T> {
    /// The tournament of sources whose first entries are `heads` (at least one source).
    pub(super) fn new(heads: Vec<Option<T>>) -> Self {
        let k = heads.len();
        // Every node starts holding a virtual source `k` that beats everything; playing each real leaf in
        // turn pushes the virtual ones up and out, leaving each node the loser of a real match.
        let mut t = Tournament { heads, losers: vec![k; k.max(1)] };
        for s in (0..k).rev() {
            t.replay(s);
        }
        t
    }

    /// The winner: its source and head (`None` when every source is exhausted).
    pub(super) fn winner(&self) -> (usize, Option<T>) {
        let w = self.losers[0];
        (w, self.heads.get(w).copied().flatten())
    }

    /// The winner's source moved to `next`: the matches on its path are played again.
    pub(super) fn advance(&mut self, next: Option<T>) {
        let w = self.losers[0];
        if let Some(h) = self.heads.get_mut(w) {
            *h = next;
        }
        self.replay(w);
    }

    /// Whether source `a` goes before source `b` (the virtual source `k` before all).
    fn beats(&self, a: usize, b: usize) -> bool {
        let k = self.heads.len();
        if a == k || b == k {
            return a == k && b != k;
        }
        match (self.heads[a], self.heads[b]) {
            (Some(x), Some(y)) => (x, a) < (y, b),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => a < b,
        }
    }

    /// Plays leaf `s`'s path to the root.
    fn replay(&mut self, s: usize) {
        let k = self.heads.len();
        let mut winner = s;
        let mut node = (s + k) / 2;
        while node > 0 {
            if self.beats(self.losers[node], winner) {
                std::mem::swap(&mut self.losers[node], &mut winner);
            }
            node /= 2;
        }
        self.losers[0] = winner;
    }
}

#[cfg(test)]
mod tests {
    use super::Tournament;

    #[test]
    fn a_tournament_merges_any_number_of_sorted_sources_in_order() {
        let mut rng = log_core::workload::SplitMix64::new(3);
        for k in 1..=17usize {
            // Sources of different lengths (some empty), values repeating across them.
            let sources: Vec<Vec<u64>> = (0..k)
                .map(|i| {
                    let mut v: Vec<u64> =
                        (0..(rng.next_u64() % 40) + (i as u64 % 3)).map(|_| rng.next_u64() % 50).collect();
                    v.sort_unstable();
                    v
                })
                .collect();
            let mut expected: Vec<u64> = sources.concat();
            expected.sort_unstable();
            let mut at = vec![0usize; k];
            let mut t = Tournament::new(sources.iter().map(|s| s.first().copied()).collect());
            let mut merged = Vec::new();
            while let (s, Some(v)) = t.winner() {
                merged.push(v);
                at[s] += 1;
                t.advance(sources[s].get(at[s]).copied());
            }
            assert_eq!(merged, expected, "{k} sources");
        }
    }
}
