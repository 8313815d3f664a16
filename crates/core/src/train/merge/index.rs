//! The initial pair index, built on all threads.

use super::*;
use super::sorted_index::index_by_sorting;

/// Pairs below 1/COLD_RATIO of the largest initial count start cold.
///
/// A thaw recounts every word of the pairs it brings in, work that pairs
/// hot from the start never cost (the merges keep their counts), so the
/// hot set is made large enough that a 32k vocabulary needs no thaw. At
/// 1/1024, s10 and m1 thawed once at about merge 20k; the thaw was a fifth
/// of m1's loop, and its transient lists raised the peak.
const COLD_RATIO: u64 = 16384;

/// The initial pair index: every candidate pair's weighted count and the
/// words it occurs in, for the pairs that can still be merged.
///
/// A pair's count never grows after the step that created it (see the top
/// of this file), so a pair below `min_keep` (the minimum frequency) now can
/// never be merged and is dropped here.
///
/// With several threads each builds the index of a contiguous range of
/// words; the parts are joined in range order, so every word list comes out
/// ascending (which keeps the loop's visits to the word table in address
/// order). Past `DENSE_IDS` the parts are sorted instead (`sorted_index`).
pub(super) fn build_index<S: Sym>(
    syms: &[S],
    words: &Words,
    threads: usize,
    min_keep: u64,
    first_threshold: Option<u64>,
    ids: usize,
    candidate: &(dyn Fn(u32, u32) -> bool + Sync),
) -> Result<(Map<u64, PairInfo>, Cold)> {
    let n = words.len();
    let step = crate::steps::begin("pair index", "words", n as u64);
    let parts = if threads <= 1 || syms.len() < 1 << 20 { 1 } else { threads };
    // Each part gets about as many symbols (the work) as the others, not
    // as many words: long words are not spread evenly through the table.
    let cut = |p: usize| words_before_symbol(words, n, syms.len() * p / parts);
    let part_range = |p: usize| cut(p)..if p + 1 == parts { n } else { cut(p + 1) };
    // Hot from 1/COLD_RATIO of the largest count down: a 32k vocabulary
    // rarely gets that far, and when it does, one `thaw` brings the next
    // pairs in.
    let threshold_of = |top: u64| first_threshold.unwrap_or(top / COLD_RATIO).max(min_keep);
    let inputs = IndexInputs { syms, words, ids, parts, part_range: &part_range, min_keep, threshold_of: &threshold_of, candidate, step: &step };
    if ids > DENSE_IDS {
        if let Some(index) = index_by_sorting(&inputs) {
            return index;
        }
    }
    index_by_map(&inputs)
}

/// `build_index` with a map per thread, joined: any number of ids, and
/// below `DENSE_IDS` counted in an array.
pub(super) fn index_by_map<S: Sym>(inputs: &IndexInputs<'_, S>) -> Result<(Map<u64, PairInfo>, Cold)> {
    let &IndexInputs { syms, words, ids, parts, part_range, min_keep, threshold_of, candidate, step } = inputs;
    let build_part = |p: usize| -> Map<u64, Collecting> {
        let range = part_range(p);
        let mut tick = step.ticker();
        if ids <= DENSE_IDS {
            index_dense(syms, words, range, ids, candidate, &mut tick)
        } else {
            index_sparse(syms, words, range, candidate, &mut tick)
        }
    };
    let mut parts = on_shards(parts, &build_part)?.into_iter();
    let mut all = parts.next().unwrap_or_default();
    for part in parts {
        for (key, c) in part {
            match all.entry(key) {
                hashbrown::hash_map::Entry::Occupied(mut o) => {
                    let mine = o.get_mut();
                    mine.count += c.count;
                    mine.words.append(c.words);
                }
                hashbrown::hash_map::Entry::Vacant(v) => {
                    v.insert(c);
                }
            }
        }
    }
    let top = all.values().map(|c| c.count).max().unwrap_or(0);
    let threshold = threshold_of(top);
    let mut cold = Cold::new(threshold);
    let kept = all.values().filter(|c| c.count >= threshold).count();
    let mut pairs: Map<u64, PairInfo> = new_map();
    // Room for as many pairs again as the merges will create: the table
    // grows during the loop, and growing a large table briefly holds the old
    // and the new one (SuperBPE's stage 2 peaked there).
    pairs.reserve(2 * kept);
    for (key, c) in all.drain() {
        if c.count >= threshold {
            let mut words = c.words;
            words.bytes.shrink_to_fit();
            pairs.insert(key, PairInfo { count: c.count, words });
        } else if c.count >= min_keep {
            cold.park(key, c.count, &c.words.bytes);
        }
    }
    Ok((pairs, cold))
}

/// The number of words (of the first `n`) that start before symbol `at`.
fn words_before_symbol(words: &Words, n: usize, at: usize) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if words.offset(mid) < at {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Up to this many token ids (the bytes scheme's 256 and the special
/// tokens), `build_index` counts pairs in an array indexed by the pair
/// (at most 384² entries of 40 bytes, 6 MB, per thread) instead of a map.
pub(super) const DENSE_IDS: usize = 384;

/// The pair index of words `range` in a map: any number of ids.
fn index_sparse<S: Sym>(
    syms: &[S],
    words: &Words,
    range: std::ops::Range<usize>,
    candidate: &(dyn Fn(u32, u32) -> bool + Sync),
    tick: &mut crate::steps::Ticker,
) -> Map<u64, Collecting> {
    let mut map: Map<u64, Collecting> = new_map();
    for w in range {
        tick.tick();
        let word = &syms[words.offset(w)..words.offset(w + 1)];
        let weight = words.weight(w);
        for pair in word.windows(2) {
            let (a, b) = (pair[0].id(), pair[1].id());
            if candidate(a, b) {
                map.entry(pack(a, b)).or_insert_with(Collecting::new).add(weight, w as u32);
            }
        }
    }
    map
}

/// `index_sparse` for ids below `ids` (at most `DENSE_IDS`): every pair
/// occurrence is an array index instead of a hash probe, and `candidate`
/// is asked once per pair of ids instead of once per occurrence. On s10
/// (237M symbols) the probes were half of the index's time.
fn index_dense<S: Sym>(
    syms: &[S],
    words: &Words,
    range: std::ops::Range<usize>,
    ids: usize,
    candidate: &(dyn Fn(u32, u32) -> bool + Sync),
    tick: &mut crate::steps::Ticker,
) -> Map<u64, Collecting> {
    let allowed: Vec<bool> = (0..ids * ids).map(|k| candidate((k / ids) as u32, (k % ids) as u32)).collect();
    let mut slots: Vec<Collecting> = (0..ids * ids).map(|_| Collecting::new()).collect();
    for w in range {
        tick.tick();
        let word = &syms[words.offset(w)..words.offset(w + 1)];
        let weight = words.weight(w);
        for pair in word.windows(2) {
            let k = pair[0].id() as usize * ids + pair[1].id() as usize;
            if allowed[k] {
                slots[k].add(weight, w as u32);
            }
        }
    }
    let mut map: Map<u64, Collecting> = new_map();
    map.reserve(slots.iter().filter(|c| !c.words.bytes.is_empty()).count());
    for (k, c) in slots.into_iter().enumerate() {
        if !c.words.bytes.is_empty() {
            map.insert(pack((k / ids) as u32, (k % ids) as u32), c);
        }
    }
    map
}
