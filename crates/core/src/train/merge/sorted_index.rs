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
//! An index of more than `SLICE_RECORDS` occurrences is built in slices of
//! the key space, one pass over the words each, so that only one slice's
//! records are held at a time; every pair is parked until the largest
//! count (and so the threshold) is known, then the hot ones are taken out.
//!
//! The result is the map path's exactly (the same counts, the same word
//! lists); only the order in which the cold pairs are parked differs, and
//! nothing depends on that order.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

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
/// of equal pairs: least significant digit first, `RADIX_BITS` at a time,
/// through `scratch` (kept from one call to the next: memory new to the
/// process is slow).
fn radix_sort_pairs(records: &mut Vec<u64>, scratch: &mut Vec<u64>, layout: Layout) {
    scratch.clear();
    scratch.resize(records.len(), 0);
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
        std::mem::swap(records, scratch);
        shift += bits;
    }
}

/// Records sorted at once at most (with as many again for the sort's
/// scratch: 512 MiB). On 1 GB of text (7 copies of multi-1m, 32k,
/// transition 26k, 2 threads) SuperBPE's stage 2 has 351M pair
/// occurrences: sorted at once, with scratch, they took the run's peak to
/// 7.2-7.3 GB; in 11 slices it was 3.0 GB, and the index took 26 s instead
/// of 37-42 s (memory new to the process is slow on the VM it was measured on).
const SLICE_RECORDS: usize = 1 << 25;

/// The pair index of `build_index` by sorting; `None` where a record does
/// not fit in 64 bits (the map path builds it then).
pub(super) fn index_by_sorting<S: Sym>(
    inputs: &IndexInputs<'_, S>,
) -> Option<Result<(Map<u64, PairInfo>, Cold)>> {
    let layout = Layout::new(inputs.ids, inputs.words.len())?;
    Some(build(&Job { inputs, layout }, SLICE_RECORDS))
}

/// What every pass over the words reads.
struct Job<'a, S: Sym> {
    inputs: &'a IndexInputs<'a, S>,
    layout: Layout,
}

impl<S: Sym> Job<'_, S> {
    /// The key buckets in slices of at most `most` records: all in one
    /// where the words have no more pairs than that, else from the number
    /// of records in each bucket (one more pass over the words).
    fn slices(&self, most: usize) -> Result<Vec<std::ops::Range<usize>>> {
        let buckets = 1usize << self.layout.bucket_bits();
        if self.inputs.words.offset(self.inputs.words.len()) <= most {
            return Ok(vec![0..buckets]);
        }
        Ok(slices(&self.bucket_sizes()?, most))
    }

    /// Calls `f(record)` for every candidate pair occurrence of part `p`'s
    /// words whose bucket is in `slice`, word by word (the bucket is
    /// checked first: the candidate filter is a call).
    #[inline(always)]
    fn for_records_in(&self, p: usize, slice: &std::ops::Range<usize>, mut f: impl FnMut(u64)) {
        for w in (self.inputs.part_range)(p) {
            let word = &self.inputs.syms[self.inputs.words.offset(w)..self.inputs.words.offset(w + 1)];
            for pair in word.windows(2) {
                let (a, b) = (pair[0].id(), pair[1].id());
                let r = self.layout.record(a, b, w);
                if slice.contains(&self.layout.bucket(r)) && (self.inputs.candidate)(a, b) {
                    f(r);
                }
            }
        }
    }

    /// The records in each key bucket, over all parts.
    fn bucket_sizes(&self) -> Result<Vec<usize>> {
        let buckets = 1usize << self.layout.bucket_bits();
        let per_part = on_shards(self.inputs.parts, &|p| {
            let mut sizes = vec![0usize; buckets];
            self.for_records_in(p, &(0..buckets), |r| sizes[self.layout.bucket(r)] += 1);
            sizes
        })?;
        let mut sizes = vec![0usize; buckets];
        for part in per_part {
            for (s, n) in sizes.iter_mut().zip(part) {
                *s += n;
            }
        }
        Ok(sizes)
    }
}

/// Consecutive bucket ranges of at most `most` records each (a bucket of
/// more is a slice of its own).
fn slices(sizes: &[usize], most: usize) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut held) = (0, 0);
    for (k, &n) in sizes.iter().enumerate() {
        if held > 0 && held + n > most {
            out.push(start..k);
            (start, held) = (k, 0);
        }
        held += n;
    }
    out.push(start..sizes.len());
    out
}

/// `index_by_sorting` once the layout is known. In one slice (most
/// indexes): the records sorted per thread, the largest count, then the hot
/// and the cold pairs. In several, slice by slice, every pair is parked in
/// an arena of records (`Cold`'s) per thread, and once the largest count is
/// known each thread takes the pairs of at least the threshold out of its
/// share of the arenas.
fn build<S: Sym>(job: &Job<'_, S>, slice_records: usize) -> Result<(Map<u64, PairInfo>, Cold)> {
    let &IndexInputs { threshold_of, step, .. } = job.inputs;
    let slices = job.slices(slice_records)?;
    let mut buffers = Buffers::new(job.inputs.parts);
    if let [slice] = &slices[..] {
        let runs = buffers.sorted(job, slice, Some(step), true)?;
        let sorted = Sorted::new(&runs, slice, job.layout);
        let threshold = threshold_of(top_count(job, &sorted)?);
        let grouped = group(job, &sorted, Some(threshold))?;
        drop((runs, buffers));
        return Ok(join(grouped.into_iter().map(|g| (g.hot, g.cold)).collect(), threshold));
    }
    let (mut top, mut parked) = (0, Vec::new());
    for (k, slice) in slices.iter().enumerate() {
        let runs = buffers.sorted(job, slice, (k == 0).then_some(step), k + 1 == slices.len())?;
        for g in group(job, &Sorted::new(&runs, slice, job.layout), None)? {
            top = top.max(g.top);
            parked.push(Mutex::new(g.cold));
        }
        buffers.give_back(runs);
    }
    drop(buffers);
    let threshold = threshold_of(top);
    let split = on_shards(job.inputs.parts, &|t| {
        parked
            .iter()
            .skip(t)
            .step_by(job.inputs.parts)
            .map(|arena| std::mem::replace(&mut *lock(arena), Cold::new(0)).split_hot(threshold))
            .collect::<Vec<_>>()
    })?;
    Ok(join(split.into_iter().flatten().collect(), threshold))
}

/// The threads' hot pairs in one map, with room for as many pairs again as
/// the merges will create (see `build_index`), and their cold ones in one
/// arena.
fn join(parts: Vec<(Vec<(u64, PairInfo)>, Cold)>, threshold: u64) -> (Map<u64, PairInfo>, Cold) {
    let mut pairs: Map<u64, PairInfo> = new_map();
    pairs.reserve(2 * parts.iter().map(|(hot, _)| hot.len()).sum::<usize>());
    let mut cold = Cold::new(threshold);
    for (hot, rest) in parts {
        pairs.extend(hot);
        cold.absorb(rest);
    }
    (pairs, cold)
}

/// Each thread's record buffer and sort scratch, kept from one slice to the
/// next.
struct Buffers {
    records: Vec<Vec<u64>>,
    scratch: Vec<Mutex<Vec<u64>>>,
}

impl Buffers {
    fn new(parts: usize) -> Self {
        Buffers {
            records: (0..parts).map(|_| Vec::new()).collect(),
            scratch: (0..parts).map(|_| Mutex::default()).collect(),
        }
    }

    /// Each part's records of the buckets `slice`, sorted by pair (ticking
    /// `step` once per word where given); the scratch is freed after the
    /// `last` slice's sort.
    fn sorted<S: Sym>(
        &mut self,
        job: &Job<'_, S>,
        slice: &std::ops::Range<usize>,
        step: Option<&crate::steps::Step>,
        last: bool,
    ) -> Result<Vec<Vec<u64>>> {
        let lent: Vec<Mutex<Vec<u64>>> = self.records.drain(..).map(Mutex::new).collect();
        let layout = job.layout;
        on_shards(job.inputs.parts, &|p| {
            let mut records = std::mem::take(&mut *lock(&lent[p]));
            records.clear();
            if let Some(step) = step {
                let mut tick = step.ticker();
                (job.inputs.part_range)(p).for_each(|_| tick.tick());
            }
            job.for_records_in(p, slice, |r| records.push(r));
            let mut scratch = lock(&self.scratch[p]);
            radix_sort_pairs(&mut records, &mut scratch, layout);
            if last {
                // Not held while the pairs are read off.
                *scratch = Vec::new();
            }
            records
        })
    }

    fn give_back(&mut self, runs: Vec<Vec<u64>>) {
        self.records = runs;
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The largest count of any pair of `sorted`.
fn top_count<S: Sym>(job: &Job<'_, S>, sorted: &Sorted<'_>) -> Result<u64> {
    let next = AtomicUsize::new(0);
    let tops = on_shards(job.inputs.parts, &|_| {
        let mut top = 0;
        sorted.for_pairs(&next, |_, group| {
            top = top.max(group.iter().map(|&w| job.inputs.words.weight(w)).sum::<u64>());
        });
        top
    })?;
    Ok(tops.into_iter().max().unwrap_or(0))
}

/// What one thread read off its buckets: the largest count, the hot pairs
/// and the cold ones.
struct Grouped {
    top: u64,
    hot: Vec<(u64, PairInfo)>,
    cold: Cold,
}

/// The pairs of `sorted` of at least `min_keep`, on every thread: those of
/// at least `threshold` hot, the others parked; with no threshold, all parked.
fn group<S: Sym>(job: &Job<'_, S>, sorted: &Sorted<'_>, threshold: Option<u64>) -> Result<Vec<Grouped>> {
    let min_keep = job.inputs.min_keep;
    let next = AtomicUsize::new(0);
    on_shards(job.inputs.parts, &|_| {
        let mut out = Grouped {
            top: 0,
            hot: Vec::new(),
            cold: Cold::new(threshold.unwrap_or(0)),
        };
        let mut list = WordList::new();
        sorted.for_pairs(&next, |key, group| {
            let count: u64 = group.iter().map(|&w| job.inputs.words.weight(w)).sum();
            out.top = out.top.max(count);
            if count < min_keep {
                return;
            }
            list.bytes.clear();
            list.last = u32::MAX;
            for &w in group {
                list.add(w as u32);
            }
            if threshold.is_some_and(|t| count >= t) {
                let mut words = std::mem::replace(&mut list, WordList::new());
                words.bytes.shrink_to_fit();
                out.hot.push((key, PairInfo { count, words }));
            } else {
                out.cold.park(key, count, &list.bytes);
            }
        });
        out
    })
}

/// The threads' sorted runs of one slice, read off pair by pair.
struct Sorted<'a> {
    runs: &'a [Vec<u64>],
    /// Where each bucket of the slice starts in each run (and where the
    /// last ends).
    starts: Vec<Vec<usize>>,
    layout: Layout,
}

impl<'a> Sorted<'a> {
    fn new(runs: &'a [Vec<u64>], slice: &std::ops::Range<usize>, layout: Layout) -> Self {
        let starts = runs
            .iter()
            .map(|run| {
                (slice.start..=slice.end)
                    .map(|k| run.partition_point(|&r| layout.bucket(r) < k))
                    .collect()
            })
            .collect();
        Sorted {
            runs,
            starts,
            layout,
        }
    }

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
            let inputs = IndexInputs {
                syms: &syms,
                words: &words,
                ids,
                parts,
                part_range: &part_range,
                min_keep,
                threshold_of: &threshold_of,
                candidate: &candidate,
                step: &step,
            };
            let by_map = listed(index_by_map(&inputs).unwrap());
            let job = Job {
                inputs: &inputs,
                layout: Layout::new(ids, n).expect("the records fit"),
            };
            // At once, and in slices of the key space: a record or a few each.
            for most in [SLICE_RECORDS, [1, 7, 100][round % 3]] {
                let by_sorting = build(&job, most).unwrap();
                assert_eq!(listed(by_sorting), by_map, "round {round}, slices of {most}");
            }
        }
    }

    #[test]
    fn slices_cover_the_buckets_in_order_within_their_size() {
        assert_eq!(slices(&[3, 0, 2, 9, 1, 1], 4), vec![0..2, 2..3, 3..4, 4..6]);
        assert_eq!(slices(&[0, 0], 1), vec![0..2]);
        assert_eq!(slices(&[5], 100), vec![0..1]);
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
