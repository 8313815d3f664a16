//! Cold pairs: too rare for the map and the heap yet, parked in one arena.

use super::*;
use super::lists::{decode_words, get_varint64, put_varint64};

/// Pairs that can still be merged but are too rare to take a place in the
/// pair map and the heap yet ("cold"). On large corpora most pairs the
/// loop creates stay far below the count at which it stops; in the map and
/// the heap each cost ~100 bytes, here a record of ~15 (key, count, word
/// list, back to back).
///
/// Invariant: every pair whose count is at least `threshold` is in the map
/// with its exact count ("hot"). A cold pair's stored count is an upper
/// bound (its decrements are not tracked) and its list holds every word it
/// still occurs in. So while the heap's best count is at least `threshold`
/// it is the true best; when it falls below, `thaw` recounts the cold pairs
/// that may reach a lower threshold from their words, exactly, and moves
/// those that do into the map and the heap.
pub(super) struct Cold {
    arena: Vec<u8>,
    pub(super) threshold: u64,
    /// Bytes of records that became hot (their key is `GONE`); the arena
    /// is compacted when they are half of it.
    gone: usize,
}

/// The key of a cold record whose pair became hot (no pair has it: ids
/// are below `u32::MAX`).
const GONE: u64 = u64::MAX;

impl Cold {
    pub(super) fn new(threshold: u64) -> Self {
        Cold { arena: Vec::new(), threshold, gone: 0 }
    }

    pub(super) fn park(&mut self, key: u64, count: u64, list: &[u8]) {
        self.arena.extend_from_slice(&key.to_le_bytes());
        put_varint64(&mut self.arena, count);
        put_varint64(&mut self.arena, list.len() as u64);
        self.arena.extend_from_slice(list);
    }

    /// Takes over `other`'s records (at the same threshold).
    pub(super) fn absorb(&mut self, other: Cold) {
        debug_assert_eq!(self.threshold, other.threshold);
        if self.arena.is_empty() {
            self.arena = other.arena;
        } else {
            self.arena.extend_from_slice(&other.arena);
        }
        self.gone += other.gone;
    }

    /// Takes out the pairs of at least `threshold` (their lists as word
    /// lists) and keeps the others, `threshold` now theirs: for records
    /// parked before the threshold was known (their counts exact).
    pub(super) fn split_hot(mut self, threshold: u64) -> (Vec<(u64, PairInfo)>, Cold) {
        self.threshold = threshold;
        let mut hot = Vec::new();
        let mut p = 0;
        while p < self.arena.len() {
            let (key, count, list, next) = Cold::record(&self.arena, p);
            if key != GONE && count >= threshold {
                let words = WordList::from_bytes(self.arena[list].to_vec());
                hot.push((key, PairInfo { count, words }));
                self.arena[p..p + 8].copy_from_slice(&GONE.to_le_bytes());
                self.gone += next - p;
            }
            p = next;
        }
        self.compact();
        self.arena.shrink_to_fit();
        (hot, self)
    }

    /// Every record's key, count and word list, in arena order.
    #[cfg(test)]
    pub(super) fn records(&self) -> Vec<(u64, u64, Vec<u8>)> {
        let mut out = Vec::new();
        let mut p = 0;
        while p < self.arena.len() {
            let (key, count, list, next) = Cold::record(&self.arena, p);
            out.push((key, count, self.arena[list].to_vec()));
            p = next;
        }
        out
    }

    /// The record at `p`: its key, count, list and where the next starts.
    pub(super) fn record(arena: &[u8], p: usize) -> (u64, u64, std::ops::Range<usize>, usize) {
        let key = u64::from_le_bytes(arena[p..p + 8].try_into().unwrap_or_default());
        let (count, n) = get_varint64(&arena[p + 8..]);
        let (len, m) = get_varint64(&arena[p + 8 + n..]);
        let list = p + 8 + n + m..p + 8 + n + m + len as usize;
        let next = list.end;
        (key, count, list, next)
    }

    /// Drops the records of pairs that became hot, in place.
    pub(super) fn compact(&mut self) {
        let (mut read, mut write) = (0, 0);
        while read < self.arena.len() {
            let (key, _, _, next) = Cold::record(&self.arena, read);
            if key != GONE {
                self.arena.copy_within(read..next, write);
                write += next - read;
            }
            read = next;
        }
        self.arena.truncate(write);
        self.gone = 0;
    }

    /// Lowers the threshold to `threshold`: cold pairs whose exact count
    /// reaches it become hot, the others stay cold with their exact count
    /// and the words they still occur in (or go, below `min_keep`).
    ///
    /// The records of the pairs that stay cold are not moved (most of the
    /// arena, which a copy would also double for the time of the copy): the
    /// ones read out are marked `GONE`, and rewritten at the end if their
    /// exact count keeps them cold.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn thaw<S: Sym>(
        &mut self,
        threshold: u64,
        syms: &[S],
        words: &Words,
        pairs: &mut Map<u64, PairInfo>,
        heap: &mut PairHeap,
        tokens: &[Vec<u8>],
        min_keep: u64,
        threads: usize,
    ) -> Result<()> {
        self.threshold = threshold;
        // Pass 1: the pairs that may reach the threshold, and all their
        // words in one list, so that pass 2 can prefetch across pairs (most
        // lists are short; the words are cache misses).
        let (mut rising, mut all) = (Vec::new(), Vec::new());
        let mut list = Vec::new();
        let mut p = 0;
        while p < self.arena.len() {
            let (key, count, bytes, next) = Cold::record(&self.arena, p);
            if key != GONE && count >= threshold {
                decode_words(&self.arena[bytes], &mut list);
                rising.push((key, all.len()));
                all.extend_from_slice(&list);
                self.arena[p..p + 8].copy_from_slice(&GONE.to_le_bytes());
                self.gone += next - p;
            }
            p = next;
        }
        if self.gone * 2 > self.arena.len() {
            self.compact();
        }
        rising.push((0, all.len()));
        // Pass 2: exact counts, and the words each pair still occurs in; the
        // pairs in `threads` shares of about equal words, read-only, so on
        // one thread per share (a thaw visits millions of words on s10).
        let shares = if threads > 1 && all.len() >= PARALLEL_WORDS { threads } else { 1 };
        let pairs_n = rising.len() - 1;
        let cut = |k: usize| if k == shares { pairs_n } else { rising.partition_point(|r| r.1 < all.len() * k / shares).min(pairs_n) };
        let recount = |k: usize| -> Vec<(u64, u64, WordList)> {
            rising[cut(k)..cut(k + 1) + 1]
                .windows(2)
                .map(|pair| {
                    let (key, from, to) = (pair[0].0, pair[0].1, pair[1].1);
                    let (exact, still) = recount_pair::<S>(key, &all[from..to], syms, words);
                    (key, exact, still)
                })
                .collect()
        };
        for (key, exact, mut still) in on_shards(shares, &recount)?.into_iter().flatten() {
            if exact >= threshold {
                still.bytes.shrink_to_fit();
                heap.push(Entry { count: exact, a: (key >> 32) as u32, b: key as u32 }, tokens);
                pairs.insert(key, PairInfo { count: exact, words: still });
            } else if exact >= min_keep {
                self.park(key, exact, &still.bytes);
            }
        }
        Ok(())
    }
}

/// The exact count of pair `key` in words `list` (ascending), and the words
/// it still occurs in.
fn recount_pair<S: Sym>(key: u64, list: &[u32], syms: &[S], words: &Words) -> (u64, WordList) {
    let (x, y) = (S::of((key >> 32) as u32), S::of(key as u32));
    let (mut exact, mut still) = (0u64, WordList::new());
    for (i, &w) in list.iter().enumerate() {
        if let Some(&far) = list.get(i + 2 * PREFETCH_AHEAD) {
            prefetch(&words.recs, far as usize);
            prefetch(&words.recs, far as usize + 1);
        }
        if let Some(&near) = list.get(i + PREFETCH_AHEAD) {
            prefetch(syms, words.offset(near as usize));
            prefetch(syms, words.offset(near as usize + 1) - 1);
        }
        let w = w as usize;
        let word = &syms[words.offset(w)..words.offset(w + 1)];
        let n = word.windows(2).filter(|p| p[0] == x && p[1] == y).count() as u64;
        if n > 0 {
            exact += n * words.weight(w);
            still.add(w as u32);
        }
    }
    (exact, still)
}
