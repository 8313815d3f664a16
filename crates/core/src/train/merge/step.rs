//! One merge step's count changes, summed, then applied to the pair index.

use super::*;

/// One merge step's count changes, applied to the pair index at its end.
///
/// While a step runs, count changes are summed in small tallies instead of
/// probing the large global table for every occurrence: a frequent merge
/// touches few distinct neighbour pairs many times, so this turns hundreds
/// of thousands of cache-missing probes into a few thousand. Every pair a
/// merge `(a, b) -> r` changes shares a side with it, so the tallies are
/// keyed by the other side (see `Tally`): losses of `(x, a)` and `(b, y)`,
/// new pairs `(x, r)` and `(r, y)`. The one case that does not fit, a word
/// where an occurrence follows a merged one ("abab": `(r, a)` lost, `(r, r)`
/// new), goes to the small maps `dec_rest` and `new_rest`.
pub(super) struct Step {
    /// This step's merge (set by `begin`), and the ids it may meet.
    pub(super) a: u32,
    pub(super) b: u32,
    pub(super) r: u32,
    pub(super) ids: usize,
    /// Losses of `(x, a)` by `x` (never `r`) and of `(b, y)` by `y`.
    pub(super) dec_before: Tally<u64>,
    pub(super) dec_after: Tally<u64>,
    /// New pairs `(x, r)` by `x` (never `r`) and `(r, y)` by `y`, with the
    /// words they occur in.
    pub(super) new_before: Tally<Collecting>,
    pub(super) new_after: Tally<Collecting>,
    /// Losses of `(r, a)` and the new pair `(r, r)`.
    dec_rest: Map<u64, u64>,
    new_rest: Map<u64, Collecting>,
}

/// The changes of part of a step's words (see `Step::seal`).
pub(super) struct StepPart {
    dec_before: Vec<(u32, u64)>,
    dec_after: Vec<(u32, u64)>,
    dec_rest: Vec<(u64, u64)>,
    new_before: Vec<(u32, Collecting)>,
    new_after: Vec<(u32, Collecting)>,
    new_rest: Vec<(u64, Collecting)>,
}

impl Step {
    pub(super) fn new() -> Self {
        Step {
            a: 0,
            b: 0,
            r: 0,
            ids: 0,
            dec_before: Tally::new(),
            dec_after: Tally::new(),
            new_before: Tally::new(),
            new_after: Tally::new(),
            dec_rest: new_map(),
            new_rest: new_map(),
        }
    }

    /// Starts the step of merge `(a, b) -> r`; every id is below `ids`.
    pub(super) fn begin(&mut self, a: u32, b: u32, r: u32, ids: usize) {
        (self.a, self.b, self.r, self.ids) = (a, b, r, ids);
        self.dec_before.reserve_ids(ids);
        self.dec_after.reserve_ids(ids);
        self.new_before.reserve_ids(ids);
        self.new_after.reserve_ids(ids);
    }

    /// Takes this step's changes out (leaving it empty for the same
    /// merge), to be added to another step by `absorb`.
    pub(super) fn seal(&mut self) -> StepPart {
        StepPart {
            dec_before: self.dec_before.take(),
            dec_after: self.dec_after.take(),
            dec_rest: self.dec_rest.drain().collect(),
            new_before: self.new_before.take(),
            new_after: self.new_after.take(),
            new_rest: self.new_rest.drain().collect(),
        }
    }

    /// Adds the changes of `later`, whose words all come after this step's.
    pub(super) fn absorb(&mut self, later: StepPart) {
        for (x, d) in later.dec_before {
            *self.dec_before.entry(x, || 0) += d;
        }
        for (y, d) in later.dec_after {
            *self.dec_after.entry(y, || 0) += d;
        }
        for (key, d) in later.dec_rest {
            *self.dec_rest.entry(key).or_insert(0) += d;
        }
        for (x, c) in later.new_before {
            self.new_before.entry(x, Collecting::new).absorb(c);
        }
        for (y, c) in later.new_after {
            self.new_after.entry(y, Collecting::new).absorb(c);
        }
        for (key, c) in later.new_rest {
            self.new_rest.entry(key).or_insert_with(Collecting::new).absorb(c);
        }
    }

    /// `(x, a)` loses `weight`.
    #[inline(always)]
    pub(super) fn dec_before(&mut self, x: u32, weight: u64) {
        if x == self.r {
            *self.dec_rest.entry(pack(x, self.a)).or_insert(0) += weight;
        } else {
            *self.dec_before.entry(x, || 0) += weight;
        }
    }

    /// `(b, y)` loses `weight`.
    #[inline(always)]
    pub(super) fn dec_after(&mut self, y: u32, weight: u64) {
        *self.dec_after.entry(y, || 0) += weight;
    }

    /// `(x, r)` occurs in word `w`, of count `weight`.
    #[inline(always)]
    pub(super) fn new_before(&mut self, x: u32, weight: u64, w: u32) {
        if x == self.r {
            self.new_rest.entry(pack(x, x)).or_insert_with(Collecting::new).add(weight, w);
        } else {
            self.new_before.entry(x, Collecting::new).add(weight, w);
        }
    }

    /// `(r, y)` occurs in word `w`, of count `weight`.
    #[inline(always)]
    pub(super) fn new_after(&mut self, y: u32, weight: u64, w: u32) {
        self.new_after.entry(y, Collecting::new).add(weight, w);
    }

    /// Pairs with the new symbol may lose occurrences within the same step
    /// (in "ab ab", (ab, a) appears and then becomes (ab, ab)), so decrements
    /// of those are taken out of the new counts first. Pairs whose count is
    /// below `min_keep` (the minimum frequency) can never be merged again and
    /// are dropped; their heap entries are skipped when popped.
    pub(super) fn apply(&mut self, pairs: &mut Map<u64, PairInfo>, cold: &mut Cold, heap: &mut PairHeap, tokens: &[Vec<u8>], min_keep: u64) {
        let (a, b, r) = (self.a, self.b, self.r);
        let mut lose = |key: u64, d: u64| {
            if let Some(e) = pairs.get_mut(&key) {
                debug_assert!(e.count >= d);
                e.count = e.count.saturating_sub(d);
                if e.count < min_keep {
                    pairs.remove(&key);
                }
            }
        };
        // Pairs without `r` existed before this step.
        for (x, d) in self.dec_before.drain() {
            lose(pack(x, a), d);
        }
        for (y, d) in self.dec_after.drain() {
            lose(pack(b, y), d);
        }
        // The only loss with `r` is (r, a), made earlier in this step as (r, y = a).
        for (key, d) in self.dec_rest.drain() {
            debug_assert_eq!(key, pack(r, a));
            if let Some(e) = self.new_after.get_mut(a) {
                debug_assert!(e.count >= d);
                e.count = e.count.saturating_sub(d);
            }
        }
        let news = self.new_before.drain().map(|(x, c)| (pack(x, r), c));
        let news = news.chain(self.new_after.drain().map(|(y, c)| (pack(r, y), c)));
        for (key, c) in news.chain(self.new_rest.drain()) {
            if c.count < cold.threshold {
                if c.count >= min_keep {
                    cold.park(key, c.count, &c.words.bytes);
                }
            } else {
                heap.push(Entry { count: c.count, a: (key >> 32) as u32, b: key as u32 }, tokens);
                let mut words = c.words;
                words.bytes.shrink_to_fit();
                pairs.insert(key, PairInfo { count: c.count, words });
            }
        }
    }
}
