//! The merge loop: heap + word lists + lazy updates, O(M log N) overall.
//!
//! Each word type is stored once, with its count, as a run of symbols in
//! one array (`table`), and merged there in place. For every candidate pair
//! the loop keeps its weighted count and the words it occurs in (`lists`;
//! entries go stale when a word loses the pair, and are skipped when
//! visited). A binary max-heap (`heap`) holds `(count, pair)` entries;
//! counts that went down are not searched for in the heap: when an entry is
//! popped, its count is compared with the pair's current count and
//! re-pushed when stale. Pairs too rare to matter yet wait in a compact
//! arena (`cold`) until the heap's best falls near them.
//!
//! Why that is exact: a merge `(a, b) -> r` only *creates* adjacencies that
//! contain the fresh symbol `r`, so a pair's count only grows during the one
//! merge step that creates the later of its two symbols, and only shrinks
//! afterwards. An entry pushed at the end of that step is therefore an upper
//! bound forever after; the first popped entry whose count is current is the
//! true maximum.
//!
//! Determinism: the heap orders by count, then by the pair's byte strings
//! (smaller first) — never by ids, addresses or hash order — so the merge list
//! does not depend on word order, thread count or hash seeds.
//!
//! The parts, in the order a run uses them:
//! * `table`: the word table (input) and the word records the loop reads;
//! * `index`: the initial pair index, built on all threads;
//! * `heap`, `lists`, `cold`: the loop's state;
//! * `visit`: one merge applied to its words (in pieces from 128 words on);
//! * `crew`: the helper threads the loop keeps for those pieces;
//! * `step`, `tally`: that merge's count changes, summed, then applied;
//! * `limits`: which merged tokens SuperBPE's stage 2 may create.

mod cold;
mod crew;
mod heap;
mod index;
mod limits;
mod lists;
mod sorted_index;
mod spans;
mod step;
mod table;
mod tally;
#[cfg(test)]
mod tests;
mod visit;

use crate::error::{Error, Result};
use crate::util::{new_map, on_threads, pack, prefetch, Map};
use cold::Cold;
use crew::Crew;
use heap::{Entry, PairHeap};
use index::build_index;
use limits::{edges, within_limits, Edges};
use lists::{decode_shared, Collecting, PairInfo, WordList};
use step::Step;
use tally::Tally;
use visit::{merge_in_shares, Merge, Sharing};

pub use limits::TokenLimits;
pub use table::WordTable;
use table::{Sym, Symbols, WordRec, Words, NARROW_IDS};

const NONE: u32 = u32::MAX;

/// Merge-loop settings.
pub struct MergeParams {
    /// How many merges to learn at most.
    pub max_merges: usize,
    pub min_frequency: u64,
    pub max_token_length: Option<usize>,
    /// A symbol that never merges (`<unk>`), if any.
    pub unk: Option<u32>,
    /// SuperBPE's word-count and ": " limits.
    pub limits: TokenLimits,
    /// Threads for building the initial pair index and for visiting the
    /// words of the loop's larger merges.
    pub threads: usize,
}

/// Called before every merge with the merges learned so far and the count of
/// the pair about to be merged; returning `Stop` ends the loop early (the
/// merges so far are returned with `interrupted = true`).
pub type MergeTick<'a> = dyn FnMut(&[(u32, u32, u64)], u64) -> Result<Flow> + 'a;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Stop,
}

/// The merge loop's result.
pub struct Learned {
    /// `(left, right, count)` in order.
    pub merges: Vec<(u32, u32, u64)>,
    /// True when the tick asked to stop.
    pub interrupted: bool,
    /// Seconds spent building the node arena and pair index (before the loop).
    pub setup_seconds: f64,
}

/// Learns merges; `tokens` is extended in place with each new token's bytes,
/// and `token_ids` with its id.
pub fn learn_merges(
    table: WordTable,
    tokens: &mut Vec<Vec<u8>>,
    token_ids: &mut Map<Vec<u8>, u32>,
    params: &MergeParams,
    tick: &mut MergeTick,
) -> Result<Learned> {
    learn(table, tokens, token_ids, params, tick, false, None)
}

/// `learn_merges`, optionally on `u32` symbols even when `u16` would do and
/// with a given first cold threshold (so that tests run every path on the
/// same words).
fn learn(
    table: WordTable,
    tokens: &mut Vec<Vec<u8>>,
    token_ids: &mut Map<Vec<u8>, u32>,
    params: &MergeParams,
    tick: &mut MergeTick,
    force_wide: bool,
    first_threshold: Option<u64>,
) -> Result<Learned> {
    let setup_start = std::time::Instant::now();
    let WordTable { mut syms, recs, starts, big } = table;
    // Every merge removes at least one symbol and leaves every word one, so
    // the loop creates at most `symbols - words` tokens.
    // The records were pushed one by one (their number was unknown); the
    // loop reads them at random, so they move to memory advised for huge
    // pages (see `mem`): 4 KiB pages made nearly every visit a TLB miss.
    let mut advised: Vec<WordRec> = crate::memory::mem::vec_with_capacity(recs.len());
    advised.extend_from_slice(&recs);
    drop(recs);
    let words = Words { recs: advised, starts, big };
    let most_new = (syms.len() - words.len()).min(params.max_merges);
    if force_wide || tokens.len() as u64 + most_new as u64 > NARROW_IDS as u64 {
        syms.widen();
    }
    match syms {
        Symbols::Narrow(v) => run(v, &words, tokens, token_ids, params, tick, setup_start, first_threshold),
        Symbols::Wide(v) => run(v, &words, tokens, token_ids, params, tick, setup_start, first_threshold),
    }
}

/// How many words ahead to prefetch while merging.
const PREFETCH_AHEAD: usize = 8;

/// The merge loop: the best pair off the heap (thawing cold pairs when it
/// runs dry or a cold pair may count more), checked, merged in its words,
/// and the count changes applied, until `max_merges` or no pair is left.
///
/// Why this function is long: it is the one hot loop of training, and its
/// state (heap, pair index, cold pairs, token tables, the crew) stays local
/// so each merge costs no indirection; every step is already a call
/// (`build_index`, `Cold::thaw`, `Merge::visit`, `merge_in_shares`,
/// `Step::apply`), and what remains is their order.
#[allow(clippy::too_many_arguments)]
fn run<S: Sym>(
    mut syms: Vec<S>,
    words: &Words,
    tokens: &mut Vec<Vec<u8>>,
    token_ids: &mut Map<Vec<u8>, u32>,
    params: &MergeParams,
    tick: &mut MergeTick,
    setup_start: std::time::Instant,
    first_threshold: Option<u64>,
) -> Result<Learned> {
    let max_len = params.max_token_length.unwrap_or(usize::MAX).min(crate::model::MAX_TOKEN_BYTES);
    let unk = params.unk.unwrap_or(NONE);
    let mut token_len: Vec<usize> = tokens.iter().map(Vec::len).collect();
    let limited = params.limits.max_words > 0 || params.limits.colon_rule;
    let mut token_edges: Vec<Edges> = if limited { tokens.iter().map(|t| edges(t)).collect() } else { Vec::new() };
    let limits = params.limits;
    // `extra` is only consulted for SuperBPE's stage 2.
    let candidate = |a: u32, b: u32, token_len: &[usize], extra: Option<&[Edges]>| -> bool {
        if a == unk || b == unk || token_len[a as usize] + token_len[b as usize] > max_len {
            return false;
        }
        match extra {
            Some(e) => within_limits(e[a as usize], e[b as usize], &limits),
            None => true,
        }
    };
    let min_keep = params.min_frequency.max(1);
    let (mut pairs, mut cold) = {
        let (token_len, extra) = (&token_len[..], limited.then_some(&token_edges[..]));
        let ids = tokens.len();
        build_index(&syms, words, params.threads, min_keep, first_threshold, ids, &|a, b| candidate(a, b, token_len, extra))?
    };
    let mut heap = PairHeap::default();
    heap.v.reserve(pairs.len());
    heap.v.extend(pairs.iter().map(|(&key, info)| Entry { count: info.count, a: (key >> 32) as u32, b: key as u32 }));
    heap.heapify(tokens);

    let setup_seconds = setup_start.elapsed().as_secs_f64();
    // The crew's helper threads share the larger merges (see `crew`).
    Crew::with(params.threads, |crew| {
        let mut merges: Vec<(u32, u32, u64)> = Vec::with_capacity(params.max_merges.min(1 << 20));
        // Per-step deltas (see `Step`): small, so they stay in cache.
        let mut step = Step::new();
        // The other threads' steps for large merges, and their speeds (see `merge_in_shares`).
        let mut sharing = Sharing::default();
        // The merged pair's words, decoded (reused: no allocation per merge),
        // and the later segments of a list decoded on several threads.
        let mut list: Vec<u32> = Vec::new();
        let mut segments = Vec::new();
        while merges.len() < params.max_merges {
            let Some(top) = heap.pop(tokens) else {
                if cold.threshold > min_keep {
                    cold.thaw(min_keep, &syms, words, &mut pairs, &mut heap, tokens, min_keep, params.threads)?;
                    continue;
                }
                break;
            };
            let key = pack(top.a, top.b);
            let current = match pairs.get(&key) {
                None => continue,
                Some(info) => info.count,
            };
            if current != top.count {
                heap.push(Entry { count: current, ..top }, tokens);
                continue;
            }
            if top.count < cold.threshold {
                // A cold pair may count more: bring in those above 1/8 of this one.
                heap.push(top, tokens);
                let lower = (top.count / 8).max(min_keep);
                cold.thaw(lower, &syms, words, &mut pairs, &mut heap, tokens, min_keep, params.threads)?;
                continue;
            }
            if top.count < min_keep {
                break;
            }
            let (a, b) = (top.a, top.b);
            let mut merged = Vec::with_capacity(token_len[a as usize] + token_len[b as usize]);
            merged.extend_from_slice(&tokens[a as usize]);
            merged.extend_from_slice(&tokens[b as usize]);
            if token_ids.contains_key(&merged) {
                // Its bytes already are a token: never a candidate (SEMANTICS §6).
                pairs.remove(&key);
                continue;
            }
            if tick(&merges, top.count)? == Flow::Stop {
                return Ok(Learned { merges, interrupted: true, setup_seconds });
            }
            let Some(info) = pairs.remove(&key) else { continue };
            let r = tokens.len() as u32;
            token_len.push(merged.len());
            if limited {
                token_edges.push(edges(&merged));
            }
            token_ids.insert(merged.clone(), r);
            tokens.push(merged);

            let (token_len, extra) = (&token_len[..], limited.then_some(&token_edges[..]));
            let merge = Merge { a, b, r, candidate: |x, y| candidate(x, y, token_len, extra) };
            decode_shared(&info.words.bytes, &mut list, crew, &mut segments);
            drop(info);
            step.begin(a, b, r, tokens.len());
            if crew.threads() > 1 && list.len() >= SHARED_MERGE_WORDS {
                merge_in_shares(&merge, &list, &mut syms, words, &mut step, &mut sharing, crew);
            } else {
                merge.visit(&list, &mut syms, 0, words, &mut step);
            }
            step.apply(&mut pairs, &mut cold, &mut heap, tokens, min_keep);
            merges.push((a, b, top.count));
        }
        Ok(Learned { merges, interrupted: false, setup_seconds })
    })
}

/// A merge's words from this many on are shared among the crew's threads
/// (in pieces they claim, see `merge_in_shares`); their count changes are
/// summed in word order. Below it, handing out the pieces costs more than
/// it saves. On m1 at 32k the merges of 128-511 words (7,600 of them, 2.0M
/// words) took 0.3-0.4 s of a 4 s loop on one thread; with 512 here they
/// stayed on one thread whatever `threads` was.
#[cfg(not(test))]
const SHARED_MERGE_WORDS: usize = 128;
/// A thaw's words from this many on are shared among new threads (a thaw
/// is rare: starting threads for it costs little).
#[cfg(not(test))]
const PARALLEL_WORDS: usize = 1 << 15;
/// Tests share even tiny merges and thaws, so that the threaded paths meet
/// every case.
#[cfg(test)]
const SHARED_MERGE_WORDS: usize = 4;
#[cfg(test)]
const PARALLEL_WORDS: usize = 4;

/// Runs `f(shard)` for every shard, on one thread per shard when there are
/// several; the results in shard order.
fn on_shards<T: Send>(shards: usize, f: &(dyn Fn(usize) -> T + Sync)) -> Result<Vec<T>> {
    on_threads(shards, f)
}

/// What the first pair index is built from: `index::build_index` makes it
/// and hands it to the map path (`index_by_map`) or the sorted one
/// (`sorted_index`), here so that neither module uses the other for it.
struct IndexInputs<'a, S: Sym> {
    syms: &'a [S],
    words: &'a Words,
    /// Ids are below this.
    ids: usize,
    /// Threads, each for the words of `part_range(p)`.
    parts: usize,
    part_range: &'a (dyn Fn(usize) -> std::ops::Range<usize> + Sync),
    /// Pairs of a lower count can never be merged.
    min_keep: u64,
    /// The hot threshold for the largest count.
    threshold_of: &'a (dyn Fn(u64) -> u64 + Sync),
    candidate: &'a (dyn Fn(u32, u32) -> bool + Sync),
    step: &'a crate::steps::Step,
}
