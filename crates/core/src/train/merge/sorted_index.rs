//! The initial pair index by sorting, for vocabularies past `DENSE_IDS`.
//!
//! A hash map keyed by pair costs a cache miss per pair occurrence once it
//! outgrows the caches, and an allocation per distinct pair for its word
//! list. SuperBPE's second stage meets both at once: on 200k lines its 8M
//! symbols held 2.45M distinct pairs, and the map took 360 ns per symbol,
//! most of the stage's time. Here every occurrence becomes one `u64`
//! (left id, right id, word), each thread sorts the records of its words by
//! pair with a radix sort (stable, so the words stay ascending), and the
//! pairs are then read off in key order, bucket by bucket on every thread,
//! merging the threads' sorted runs. Only the pairs that stay hot go into a
//! map, once each, at their final size.
//!
//! The result is the map path's exactly (the same counts, the same word
//! lists); only the order in which the cold pairs are parked differs, and
//! nothing depends on that order.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Key-order buckets the grouping is shared out in (the top bits of the
/// key): many more than threads, so uneven buckets even out.
const BUCKET_BITS: u32 = 12;

/// Bits per radix pass.
const RADIX_BITS: u32 = 11;

/// How a record packs a pair occurrence: `a`, `b` and the word, high to low.
#[derive(Clone, Copy)]
struct Layout {
    id_bits: u32,
    word_bits: u32,
}

impl Layout {
    /// The layout for ids below `ids` and `words` words, if a record fits
    /// in 64 bits (ids up to 2^16 with 2^32 words, 2^20 with 2^24, ...).
    fn new(ids: usize, words: usize) -> Option<Layout> {
        let bits = |n: usize| usize::BITS - n.max(2).saturating_sub(1).leading_zeros();
        let (id_bits, word_bits) = (bits(ids), bits(words));
        (2 * id_bits + word_bits <= 64).then_some(Layout { id_bits, word_bits })
    }
    fn key_bits(self) -> u32 {
        2 * self.id_bits
    }
    fn record(self, a: u32, b: u32, w: usize) -> u64 {
        ((((a as u64) << self.id_bits) | b as u64) << self.word_bits) | w as u64
    }
    /// The record's pair, as `pack` gives it.
    fn key(self, r: u64) -> u64 {
        let pair = r >> self.word_bits;
        pack(
            (pair >> self.id_bits) as u32,
            (pair & ((1 << self.id_bits) - 1)) as u32,
        )
    }
    fn word(self, r: u64) -> usize {
        (r & ((1u64 << self.word_bits) - 1)) as usize
    }
    fn bucket_bits(self) -> u32 {
        BUCKET_BITS.min(self.key_bits())
    }
    fn bucket(self, r: u64) -> usize {
        (r >> (self.word_bits + self.key_bits() - self.bucket_bits())) as usize
    }
}

/// Sorts `records` by their pair bits (above `word_bits`), keeping the order
/// of equal pairs: least significant digit first, `RADIX_BITS` at a time.
fn radix_sort_pairs(records: &mut Vec<u64>, layout: Layout) {
    let mut scratch = vec![0u64; records.len()];
    let mut shift = layout.word_bits;
    let end = layout.word_bits + layout.key_bits();
    while shift < end {
        let bits = RADIX_BITS.min(end - shift);
        let mask = (1u64 << bits) - 1;
        let mut starts = vec![0usize; 1 << bits];
        for &r in records.iter() {
            starts[((r >> shift) & mask) as usize] += 1;
        }
        let mut sum = 0;
        for s in starts.iter_mut() {
            let n = *s;
            *s = sum;
            sum += n;
        }
        for &r in records.iter() {
            let d = ((r >> shift) & mask) as usize;
            scratch[starts[d]] = r;
            starts[d] += 1;
        }
        std::mem::swap(records, &mut scratch);
        shift += bits;
    }
}

/// What one thread read off its buckets: the hot pairs and the cold ones.
struct Grouped {
    hot: Vec<(u64, PairInfo)>,
    cold: Cold,
}

/// The pair index of `build_index` by sorting, for ids below `ids`; `None`
/// where a record does not fit in 64 bits (the map path builds it then).
///
/// `parts` threads each sort the records of the words `part_range(p)`;
/// `threshold_of(top)` is the hot threshold for the largest count `top`.
#[allow(clippy::too_many_arguments)]
pub(super) fn index_by_sorting<S: Sym>(
    syms: &[S],
    words: &Words,
    ids: usize,
    parts: usize,
    part_range: &(dyn Fn(usize) -> std::ops::Range<usize> + Sync),
    min_keep: u64,
    threshold_of: &(dyn Fn(u64) -> u64 + Sync),
    candidate: &(dyn Fn(u32, u32) -> bool + Sync),
    step: &crate::steps::Step,
) -> Option<Result<(Map<u64, PairInfo>, Cold)>> {
    let layout = Layout::new(ids, words.len())?;
    Some(build(
        syms,
        words,
        parts,
        part_range,
        min_keep,
        threshold_of,
        candidate,
        step,
        layout,
    ))
}

/// `index_by_sorting` once the layout is known: the records sorted per
/// thread, the largest count, then the hot and cold pairs.
///
/// Why this function is long: its three passes share the runs, the bucket
/// starts and the threshold, and each is already one call (`on_shards`
/// with `Sorted::for_pairs`); what remains is their order.
#[allow(clippy::too_many_arguments)]
fn build<S: Sym>(
    syms: &[S],
    words: &Words,
    parts: usize,
    part_range: &(dyn Fn(usize) -> std::ops::Range<usize> + Sync),
    min_keep: u64,
    threshold_of: &(dyn Fn(u64) -> u64 + Sync),
    candidate: &(dyn Fn(u32, u32) -> bool + Sync),
    step: &crate::steps::Step,
    layout: Layout,
) -> Result<(Map<u64, PairInfo>, Cold)> {
    // Each thread: the records of its words, sorted by pair.
    let runs: Vec<Vec<u64>> = on_shards(parts, &|p| {
        let mut tick = step.ticker();
        let range = part_range(p);
        let mut records = Vec::with_capacity(words.offset(range.end) - words.offset(range.start));
        for w in range {
            tick.tick();
            let word = &syms[words.offset(w)..words.offset(w + 1)];
            for pair in word.windows(2) {
                let (a, b) = (pair[0].id(), pair[1].id());
                if candidate(a, b) {
                    records.push(layout.record(a, b, w));
                }
            }
        }
        radix_sort_pairs(&mut records, layout);
        records
    })?;
    let buckets = 1usize << layout.bucket_bits();
    // Where each bucket starts in each run (and where the last ends).
    let starts: Vec<Vec<usize>> = runs
        .iter()
        .map(|run| {
            (0..=buckets)
                .map(|k| run.partition_point(|&r| layout.bucket(r) < k))
                .collect()
        })
        .collect();
    let sorted = Sorted {
        runs: &runs,
        starts: &starts,
        layout,
    };
    let next = AtomicUsize::new(0);
    let top = on_shards(parts, &|_| {
        let mut top = 0;
        sorted.for_pairs(&next, |_, group| {
            top = top.max(group.iter().map(|&w| words.weight(w)).sum::<u64>());
        });
        top
    })?
    .into_iter()
    .max()
    .unwrap_or(0);
    let threshold = threshold_of(top);
    let next = AtomicUsize::new(0);
    let grouped = on_shards(parts, &|_| {
        let mut out = Grouped {
            hot: Vec::new(),
            cold: Cold::new(threshold),
        };
        let mut list = WordList::new();
        sorted.for_pairs(&next, |key, group| {
            let count: u64 = group.iter().map(|&w| words.weight(w)).sum();
            if count < min_keep {
                return;
            }
            list.bytes.clear();
            list.last = u32::MAX;
            for &w in group {
                list.add(w as u32);
            }
            if count >= threshold {
                let mut words = std::mem::replace(&mut list, WordList::new());
                words.bytes.shrink_to_fit();
                out.hot.push((key, PairInfo { count, words }));
            } else {
                out.cold.park(key, count, &list.bytes);
            }
        });
        out
    })?;
    drop(runs);
    let mut pairs: Map<u64, PairInfo> = new_map();
    // Room for as many pairs again as the merges will create (see
    // `build_index`).
    pairs.reserve(2 * grouped.iter().map(|g| g.hot.len()).sum::<usize>());
    let mut cold = Cold::new(threshold);
    for g in grouped {
        pairs.extend(g.hot);
        cold.absorb(g.cold);
    }
    Ok((pairs, cold))
}

/// The threads' sorted runs, read off pair by pair.
struct Sorted<'a> {
    runs: &'a [Vec<u64>],
    starts: &'a [Vec<usize>],
    layout: Layout,
}

impl Sorted<'_> {
    /// Calls `f(key, words)` for every pair of the buckets this thread
    /// takes from `next` (shared by the threads, so each bucket is read
    /// once), with the word of each occurrence, ascending.
    fn for_pairs(&self, next: &AtomicUsize, mut f: impl FnMut(u64, &[usize])) {
        let buckets = self.starts.first().map_or(0, |s| s.len() - 1);
        let mut at = vec![0usize; self.runs.len()];
        let mut group: Vec<usize> = Vec::new();
        loop {
            let k = next.fetch_add(1, Ordering::Relaxed);
            if k >= buckets {
                return;
            }
            for (i, s) in self.starts.iter().enumerate() {
                at[i] = s[k];
            }
            let mut current = None;
            loop {
                // The smallest head: the next pair, and for equal pairs the
                // earlier run (whose words come first).
                let mut best: Option<(usize, u64)> = None;
                for (i, run) in self.runs.iter().enumerate() {
                    if at[i] < self.starts[i][k + 1] && best.is_none_or(|(_, b)| run[at[i]] < b) {
                        best = Some((i, run[at[i]]));
                    }
                }
                let Some((i, r)) = best else { break };
                at[i] += 1;
                let pair = r >> self.layout.word_bits;
                if current != Some(pair) {
                    if let Some(c) = current {
                        f(self.layout.key(c << self.layout.word_bits), &group);
                    }
                    group.clear();
                    current = Some(pair);
                }
                group.push(self.layout.word(r));
            }
            if let Some(c) = current {
                f(self.layout.key(c << self.layout.word_bits), &group);
            }
            group.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::index::index_by_map;
    use super::*;
    use std::collections::BTreeMap;

    type Listed = BTreeMap<u64, (u64, Vec<u8>)>;

    /// The hot and the cold pairs of an index, by key.
    fn listed(index: (Map<u64, PairInfo>, Cold)) -> (Listed, Listed, u64) {
        let (pairs, cold) = index;
        let hot = pairs
            .iter()
            .map(|(&k, p)| (k, (p.count, p.words.bytes.clone())))
            .collect();
        let parked: Listed = cold
            .records()
            .into_iter()
            .map(|(k, c, l)| (k, (c, l)))
            .collect();
        assert_eq!(parked.len(), cold.records().len(), "a pair parked twice");
        (hot, parked, cold.threshold)
    }

    #[test]
    fn sorting_builds_the_index_the_map_builds() {
        let mut rng = crate::util::Lcg(11);
        let mut next = |n: u64| (rng.step() >> 33) % n;
        for round in 0..60 {
            let ids = [385u64, 1000, 70_000][round % 3];
            // Few ids in use make repeated pairs; many make most pairs rare.
            let used = [3u64, 40, 5000][(round / 3) % 3];
            let mut table = WordTable::new();
            for _ in 0..1 + next(400) {
                let len = 1 + next(12);
                let weight = if next(10) == 0 { 1 << 40 } else { 1 + next(6) };
                table
                    .push(
                        (0..len).map(|_| (ids - 1 - next(used.min(ids))) as u32),
                        weight,
                    )
                    .unwrap();
            }
            let WordTable {
                mut syms,
                recs,
                starts,
                big,
            } = table;
            syms.widen();
            let Symbols::Wide(syms) = syms else {
                unreachable!()
            };
            let words = Words { recs, starts, big };
            let n = words.len();
            let parts = 1 + round % 3;
            let cut = |p: usize| {
                if p >= parts {
                    n
                } else {
                    n * p * p / (parts * parts)
                }
            };
            let part_range = |p: usize| cut(p)..cut(p + 1);
            let min_keep = 1 + next(3);
            let threshold_of = |top: u64| (top / 4).max(min_keep);
            let skip = 2 + next(5) as u32;
            let candidate = |a: u32, b: u32| (a ^ b) % skip != 0;
            let step = crate::steps::begin("pair index", "words", n as u64);
            let ids = ids as usize;
            let by_map = index_by_map(
                &syms,
                &words,
                ids,
                parts,
                &part_range,
                min_keep,
                &threshold_of,
                &candidate,
                &step,
            );
            let by_sorting = index_by_sorting(
                &syms,
                &words,
                ids,
                parts,
                &part_range,
                min_keep,
                &threshold_of,
                &candidate,
                &step,
            );
            let by_sorting = by_sorting.expect("the records fit").unwrap();
            assert_eq!(listed(by_sorting), listed(by_map.unwrap()), "round {round}");
        }
    }

    #[test]
    fn records_too_wide_for_64_bits_are_left_to_the_map() {
        assert!(Layout::new(1 << 16, 1 << 32).is_some());
        assert!(Layout::new((1 << 16) + 1, 1 << 32).is_none());
        assert!(Layout::new(1 << 20, (1 << 24) + 1).is_none());
        let layout = Layout::new(26_000, 300_000).unwrap();
        let r = layout.record(25_999, 7, 299_999);
        assert_eq!((layout.key(r), layout.word(r)), (pack(25_999, 7), 299_999));
    }
}
