//! The merge loop: heap + linked lists + lazy updates, O(M log N) overall.
//!
//! Each word type is stored once, with its count, as a run of nodes in one
//! arena (struct-of-arrays, `u32` links). For every candidate pair we keep its
//! weighted count and the nodes where it starts (`pos`, which may hold stale
//! entries that are checked and skipped when used). A binary max-heap holds
//! `(count, pair)` entries; counts that went down are not searched for in the
//! heap: when an entry is popped, its count is compared with the pair's
//! current count and re-pushed when stale.
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
//! Performance notes:
//! * Per merge, the work is the merged pair's occurrence list plus a few hash
//!   operations per occurrence; nothing is ever rescanned.
//! * One hash map holds both the count and the positions of a pair (one probe
//!   per update instead of two). Pairs whose count drops to zero are removed,
//!   which keeps the map near the number of live pairs.
//! * Tie-breaks compare byte strings only when counts are equal; on real
//!   corpora that is common only in the long tail of small counts.

use crate::error::{Error, Result};
use crate::util::{new_map, on_threads, pack, prefetch, Map};

const NONE: u32 = u32::MAX;
const DEAD: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Entry {
    count: u64,
    a: u32,
    b: u32,
}

/// `x` must be popped before `y`: higher count, then smaller (left, right) bytes.
#[inline]
fn before(x: &Entry, y: &Entry, tokens: &[Vec<u8>]) -> bool {
    if x.count != y.count {
        return x.count > y.count;
    }
    if x.a != y.a {
        return tokens[x.a as usize] < tokens[y.a as usize];
    }
    tokens[x.b as usize] < tokens[y.b as usize]
}

/// A binary heap with a comparator that looks at the token table.
#[derive(Default)]
struct PairHeap {
    v: Vec<Entry>,
}

impl PairHeap {
    fn push(&mut self, e: Entry, tokens: &[Vec<u8>]) {
        self.v.push(e);
        let mut i = self.v.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if before(&self.v[i], &self.v[parent], tokens) {
                self.v.swap(i, parent);
                i = parent;
            } else {
                break;
            }
        }
    }

    /// Orders the entries already in `v` into a heap in O(n) (Floyd), where
    /// n pushes cost O(n log n) comparisons, many of them byte compares of
    /// tied counts. The pop order does not depend on the layout: `before` is
    /// a total order (no two pairs have the same bytes).
    fn heapify(&mut self, tokens: &[Vec<u8>]) {
        for i in (0..self.v.len() / 2).rev() {
            self.sift_down(i, tokens);
        }
    }

    fn pop(&mut self, tokens: &[Vec<u8>]) -> Option<Entry> {
        let last = self.v.pop()?;
        if self.v.is_empty() {
            return Some(last);
        }
        let top = std::mem::replace(&mut self.v[0], last);
        self.sift_down(0, tokens);
        Some(top)
    }

    fn sift_down(&mut self, mut i: usize, tokens: &[Vec<u8>]) {
        let n = self.v.len();
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let c = if r < n && before(&self.v[r], &self.v[l], tokens) { r } else { l };
            if before(&self.v[c], &self.v[i], tokens) {
                self.v.swap(c, i);
                i = c;
            } else {
                break;
            }
        }
    }

    fn len(&self) -> usize {
        self.v.len()
    }
}

struct PairInfo {
    count: u64,
    pos: Vec<u32>,
}

/// One symbol occurrence. All four fields are read together for every
/// occurrence of a merged pair, so they share a 16-byte slot: one cache-line
/// fetch instead of one per array (struct-of-arrays measured 1.6x slower on
/// multi-200k). The word's count travels in the node (`weight`), because a
/// look-up in a per-word array was another cache miss per occurrence.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Node {
    sym: u32,
    prev: u32,
    next: u32,
    /// The word type's count when below 2^31; otherwise `BIG | k` where
    /// `big_weights[k]` holds the full 64-bit count.
    weight: u32,
}

const BIG: u32 = 1 << 31;

#[inline(always)]
fn weight_of(node: &Node, big_weights: &[u64]) -> u64 {
    if node.weight & BIG == 0 {
        node.weight as u64
    } else {
        big_weights[(node.weight & !BIG) as usize]
    }
}

/// How many positions ahead to prefetch nodes while merging.
const PREFETCH_AHEAD: usize = 8;

/// Input to the merge loop: word types as symbol-id sequences with counts.
pub struct WordTable {
    pub sym: Vec<u32>,
    /// Start offset of each word in `sym`, plus a final end offset.
    pub starts: Vec<u32>,
    pub counts: Vec<u64>,
}

impl WordTable {
    pub fn new() -> Self {
        WordTable { sym: Vec::new(), starts: vec![0], counts: Vec::new() }
    }

    /// A table with room for `symbols` symbols in all (no regrowth).
    pub fn with_capacity(symbols: usize) -> Self {
        WordTable { sym: Vec::with_capacity(symbols), starts: vec![0], counts: Vec::new() }
    }

    /// Number of symbols of all word types.
    pub fn symbols(&self) -> usize {
        self.sym.len()
    }
    /// Adds a word; words of fewer than two symbols cannot merge and are skipped.
    pub fn push(&mut self, symbols: impl IntoIterator<Item = u32>, count: u64) -> Result<()> {
        let before = self.sym.len();
        self.sym.extend(symbols);
        if self.sym.len() - before < 2 {
            self.sym.truncate(before);
            return Ok(());
        }
        if self.sym.len() >= u32::MAX as usize - 1 {
            return Err(Error::training(
                "the word-type table exceeds 4 billion symbols; prune rare word types (min count) or shard the corpus",
            ));
        }
        self.starts.push(self.sym.len() as u32);
        self.counts.push(count);
        Ok(())
    }
    /// Appends the words of `other` (after this table's words).
    pub fn append(&mut self, other: WordTable) -> Result<()> {
        let shift = self.sym.len();
        if shift + other.sym.len() >= u32::MAX as usize - 1 {
            return Err(Error::training(
                "the word-type table exceeds 4 billion symbols; prune rare word types (min count) or shard the corpus",
            ));
        }
        self.sym.extend_from_slice(&other.sym);
        self.starts.extend(other.starts[1..].iter().map(|&s| s + shift as u32));
        self.counts.extend_from_slice(&other.counts);
        Ok(())
    }
    pub fn len(&self) -> usize {
        self.counts.len()
    }
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }
}

impl Default for WordTable {
    fn default() -> Self {
        Self::new()
    }
}

/// Limits on which merged tokens may be created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenLimits {
    /// Maximum number of words (runs of non-space bytes) per token; 0: none.
    pub max_words: usize,
    /// Refuse tokens that span ": ".
    pub colon_rule: bool,
}

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
    /// Threads for building the initial pair index (the loop is sequential).
    pub threads: usize,
}

/// Words in a token: runs of bytes other than space, tab, CR, LF.
fn word_count(t: &[u8]) -> u32 {
    let mut n = 0;
    let mut inside = false;
    for &c in t {
        let space = matches!(c, b' ' | b'\t' | b'\r' | b'\n');
        if !space && !inside {
            n += 1;
        }
        inside = !space;
    }
    n
}

/// What the limits need to know of a token, precomputed so that checking a
/// pair reads two small records instead of both tokens' bytes.
#[derive(Clone, Copy)]
struct Edges {
    words: u32,
    flags: u8,
}

const FIRST_WORD: u8 = 1; // the first byte is not whitespace
const LAST_WORD: u8 = 2; // the last byte is not whitespace
const ENDS_COLON_SPACE: u8 = 4; // ends with ": "
const ENDS_COLON: u8 = 8; // ends with ":"
const SPACE_THEN_MORE: u8 = 16; // starts with a space and has more bytes

fn edges(t: &[u8]) -> Edges {
    let space = |c: &u8| matches!(c, b' ' | b'\t' | b'\r' | b'\n');
    let mut flags = 0;
    if t.first().is_some_and(|c| !space(c)) {
        flags |= FIRST_WORD;
    }
    if t.last().is_some_and(|c| !space(c)) {
        flags |= LAST_WORD;
    }
    if t.ends_with(b": ") {
        flags |= ENDS_COLON_SPACE;
    }
    if t.ends_with(b":") {
        flags |= ENDS_COLON;
    }
    if t.len() > 1 && t[0] == b' ' {
        flags |= SPACE_THEN_MORE;
    }
    Edges { words: word_count(t), flags }
}

/// Whether joining tokens `a` and `b` respects the limits (see `TokenLimits`):
/// at most `max_words` words (a word may continue across the join), and,
/// with the colon rule, no ": " followed by more bytes.
#[inline]
fn within_limits(a: Edges, b: Edges, limits: &TokenLimits) -> bool {
    if limits.max_words > 0 {
        let joined = (a.flags & LAST_WORD != 0) && (b.flags & FIRST_WORD != 0);
        if (a.words + b.words - joined as u32) as usize > limits.max_words {
            return false;
        }
    }
    if limits.colon_rule && (a.flags & ENDS_COLON_SPACE != 0 || (a.flags & ENDS_COLON != 0 && b.flags & SPACE_THEN_MORE != 0)) {
        return false;
    }
    true
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
    let setup_start = std::time::Instant::now();
    let n = table.sym.len();

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

    // Initial pair counts and positions, in two passes: over the word table,
    // then over the node arena.
    //
    // Pass 1 counts every candidate pair. A pair's count never grows after
    // the step that created it (see the top of this file), so a pair below
    // `min_frequency` now can never be merged; only the others are kept, and
    // only they get a position list (pass 2) and a heap entry. On real
    // corpora most distinct pairs occur once (SuperBPE's stage 2 above all).
    //
    // With several threads the pairs are split by a hash of the pair into
    // disjoint shards; each thread scans all nodes for its own shard, so no
    // two threads hold the same pair and no table is held twice. Each
    // position list comes out ascending (the loop relies on that for
    // overlapping pairs).
    let min_keep = params.min_frequency.max(1);
    let threads = params.threads.max(1);
    let shards = if threads == 1 || n < 1 << 20 { 1 } else { threads };
    let shard_of = move |key: u64| -> usize {
        if shards == 1 {
            0
        } else {
            ((key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize) % shards
        }
    };
    let mut kept: Vec<Map<u64, PairInfo>> = {
        let table = &table;
        let count_shard = |shard: usize| -> Map<u64, PairInfo> {
            // (weighted count, occurrences): the occurrences size each
            // position list exactly in pass 2.
            let mut counts: Map<u64, (u64, u32)> = new_map();
            for w in 0..table.counts.len() {
                let (s, e) = (table.starts[w] as usize, table.starts[w + 1] as usize);
                for i in s..e - 1 {
                    let (a, b) = (table.sym[i], table.sym[i + 1]);
                    let key = pack(a, b);
                    if shard_of(key) != shard {
                        continue;
                    }
                    let extra = limited.then_some(&token_edges[..]);
                    if !candidate(a, b, &token_len, extra) {
                        continue;
                    }
                    let e = counts.entry(key).or_insert((0, 0));
                    e.0 += table.counts[w];
                    e.1 += 1;
                }
            }
            let mut pairs: Map<u64, PairInfo> = new_map();
            pairs.reserve(counts.values().filter(|c| c.0 >= min_keep).count());
            for (&key, &(count, occurrences)) in counts.iter() {
                if count >= min_keep {
                    pairs.insert(key, PairInfo { count, pos: Vec::with_capacity(occurrences as usize) });
                }
            }
            pairs
        };
        on_shards(shards, &count_shard)?
    };
    // The arena is built only now: pass 1 read the compact table (4 bytes a
    // symbol), so the two never hold the pair counts at the same time.
    let (nodes, big_weights) = build_nodes(table);
    let mut nodes = nodes;
    {
        let nodes = &nodes[..];
        let fill = |pairs: &mut Map<u64, PairInfo>, shard: usize| {
            for i in 0..nodes.len() {
                let j = nodes[i].next;
                if j == NONE {
                    continue;
                }
                let key = pack(nodes[i].sym, nodes[j as usize].sym);
                if shard_of(key) != shard {
                    continue;
                }
                if let Some(e) = pairs.get_mut(&key) {
                    e.pos.push(i as u32);
                }
            }
        };
        if shards == 1 {
            fill(&mut kept[0], 0);
        } else {
            std::thread::scope(|s| {
                let handles: Vec<_> = kept
                    .iter_mut()
                    .enumerate()
                    .map(|(t, m)| {
                        let fill = &fill;
                        s.spawn(move || fill(m, t))
                    })
                    .collect();
                crate::util::join_all(handles)
            })?;
        }
    }
    let mut kept = kept.into_iter();
    let mut pairs = kept.next().unwrap_or_default();
    let rest: Vec<_> = kept.collect();
    // Room for as many pairs again as the merges will create: the table
    // grows during the loop, and growing a large table briefly holds the old
    // and the new one (SuperBPE's stage 2 peaked there).
    let total: usize = pairs.len() + rest.iter().map(|p| p.len()).sum::<usize>();
    pairs.reserve(2 * total - pairs.len());
    for part in rest {
        pairs.extend(part);
    }
    let mut heap = PairHeap::default();
    heap.v.reserve(pairs.len());
    heap.v.extend(pairs.iter().map(|(&key, info)| Entry { count: info.count, a: (key >> 32) as u32, b: key as u32 }));
    heap.heapify(tokens);

    let setup_seconds = setup_start.elapsed().as_secs_f64();
    let mut merges: Vec<(u32, u32, u64)> = Vec::with_capacity(params.max_merges.min(1 << 20));
    // Per-step deltas (see `apply_step`): small, so they stay in cache.
    let mut step_dec: Map<u64, u64> = new_map();
    let mut step_new: Map<u64, PairInfo> = new_map();
    while merges.len() < params.max_merges {
        let Some(top) = heap.pop(tokens) else { break };
        let key = pack(top.a, top.b);
        let current = match pairs.get(&key) {
            None => continue,
            Some(info) => info.count,
        };
        if current != top.count {
            heap.push(Entry { count: current, ..top }, tokens);
            continue;
        }
        if top.count < params.min_frequency.max(1) {
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

        let mut positions = info.pos;
        if a == b {
            // Overlapping occurrences must be merged left to right.
            positions.sort_unstable();
        }
        for (k, &i) in positions.iter().enumerate() {
            // Two-stage prefetch: the node itself 2D positions ahead; D ahead
            // (by then usually in cache) the neighbours it links to, which
            // lie in another line when the word crosses one or has dead
            // nodes from earlier merges.
            if let Some(&far) = positions.get(k + 2 * PREFETCH_AHEAD) {
                prefetch(&nodes, far as usize);
            }
            if let Some(&near) = positions.get(k + PREFETCH_AHEAD) {
                let n = nodes[near as usize];
                if n.prev != NONE {
                    prefetch(&nodes, n.prev as usize);
                }
                if n.next != NONE {
                    prefetch(&nodes, n.next as usize);
                    prefetch(&nodes, n.next as usize + 1);
                }
            }
            let iu = i as usize;
            let node = nodes[iu];
            if node.sym != a || node.next == NONE {
                continue;
            }
            let j = node.next;
            let right = nodes[j as usize];
            if right.sym != b {
                continue;
            }
            let w = weight_of(&node, &big_weights);
            let p = node.prev;
            let nx = right.next;
            if p != NONE {
                let ps = nodes[p as usize].sym;
                *step_dec.entry(pack(ps, a)).or_insert(0) += w;
                if candidate(ps, r, &token_len, limited.then_some(&token_edges[..])) {
                    add_new(&mut step_new, pack(ps, r), w, p);
                }
            }
            if nx != NONE {
                let ns = nodes[nx as usize].sym;
                *step_dec.entry(pack(b, ns)).or_insert(0) += w;
                if candidate(r, ns, &token_len, limited.then_some(&token_edges[..])) {
                    add_new(&mut step_new, pack(r, ns), w, i);
                }
                nodes[nx as usize].prev = i;
            }
            nodes[iu].sym = r;
            nodes[iu].next = nx;
            nodes[j as usize].sym = DEAD;
        }
        apply_step(&mut pairs, &mut step_dec, &mut step_new, &mut heap, tokens, min_keep);
        merges.push((a, b, top.count));
    }
    let _ = heap.len();
    Ok(Learned { merges, interrupted: false, setup_seconds })
}

/// Runs `f(shard)` for every shard, on one thread per shard when there are
/// several; the results in shard order.
fn on_shards<T: Send>(shards: usize, f: &(dyn Fn(usize) -> T + Sync)) -> Result<Vec<T>> {
    on_threads(shards, f)
}

/// The node arena of `table` (one node per symbol, words consecutive), and
/// the 64-bit counts that do not fit a node's weight. The table is freed.
fn build_nodes(table: WordTable) -> (Vec<Node>, Vec<u64>) {
    // Huge pages: the loop reads the arena at random (see `mem`).
    let mut nodes: Vec<Node> = crate::mem::vec_with_capacity(table.sym.len());
    let mut big_weights: Vec<u64> = Vec::new();
    for w in 0..table.counts.len() {
        let (s, e) = (table.starts[w] as usize, table.starts[w + 1] as usize);
        let count = table.counts[w];
        let weight = if count < BIG as u64 {
            count as u32
        } else {
            big_weights.push(count);
            BIG | (big_weights.len() - 1) as u32
        };
        for i in s..e {
            nodes.push(Node {
                sym: table.sym[i],
                prev: if i > s { (i - 1) as u32 } else { NONE },
                next: if i + 1 < e { (i + 1) as u32 } else { NONE },
                weight,
            });
        }
    }
    (nodes, big_weights)
}

/// Records an occurrence of a pair that contains the new symbol.
#[inline]
fn add_new(step_new: &mut Map<u64, PairInfo>, key: u64, w: u64, at: u32) {
    let e = step_new.entry(key).or_insert_with(|| PairInfo { count: 0, pos: Vec::new() });
    e.count += w;
    e.pos.push(at);
}

/// Applies one merge step's deltas to the global pair table.
///
/// While a step runs, count changes are summed in two small maps instead of
/// probing the large global table four times per occurrence: a frequent
/// merge touches few distinct neighbour pairs many times, so this turns
/// hundreds of thousands of cache-missing probes into a few thousand.
/// Pairs with the new symbol may lose occurrences within the same step (in
/// "ab ab", (ab, a) appears and then becomes (ab, ab)), so decrements of
/// those are taken out of the new counts first. Pairs whose count is below
/// `min_keep` (the minimum frequency) can never be merged again and are
/// dropped; their heap entries are skipped when popped.
fn apply_step(
    pairs: &mut Map<u64, PairInfo>,
    step_dec: &mut Map<u64, u64>,
    step_new: &mut Map<u64, PairInfo>,
    heap: &mut PairHeap,
    tokens: &[Vec<u8>],
    min_keep: u64,
) {
    for (key, d) in step_dec.drain() {
        if let Some(e) = step_new.get_mut(&key) {
            debug_assert!(e.count >= d);
            e.count = e.count.saturating_sub(d);
        } else if let Some(e) = pairs.get_mut(&key) {
            debug_assert!(e.count >= d);
            e.count = e.count.saturating_sub(d);
            if e.count < min_keep {
                pairs.remove(&key);
            }
        }
    }
    for (key, info) in step_new.drain() {
        if info.count >= min_keep {
            heap.push(Entry { count: info.count, a: (key >> 32) as u32, b: key as u32 }, tokens);
            pairs.insert(key, info);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(words: &[(&str, u64)]) -> (WordTable, Vec<Vec<u8>>, Map<Vec<u8>, u32>) {
        let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        let mut ids = new_map();
        for (i, t) in tokens.iter().enumerate() {
            ids.insert(t.clone(), i as u32);
        }
        let mut table = WordTable::new();
        for (w, c) in words {
            table.push(w.bytes().map(u32::from), *c).unwrap();
        }
        tokens.truncate(256);
        (table, tokens, ids)
    }

    /// The merges (as symbol ids) the loop learns on `words`.
    fn learn_ids(words: &[(&str, u64)], max_merges: usize, min_frequency: u64, threads: usize) -> Vec<(u32, u32, u64)> {
        let (table, mut tokens, mut ids) = setup(words);
        let params = MergeParams { max_merges, min_frequency, max_token_length: None, unk: None, limits: Default::default(), threads };
        learn_merges(table, &mut tokens, &mut ids, &params, &mut |_, _| Ok(Flow::Continue)).unwrap().merges
    }

    fn run(words: &[(&str, u64)], max_merges: usize) -> Vec<(String, String, u64)> {
        let (table, mut tokens, mut ids) = setup(words);
        let params = MergeParams { max_merges, min_frequency: 1, max_token_length: None, unk: None, limits: Default::default(), threads: 2 };
        let learned = learn_merges(table, &mut tokens, &mut ids, &params, &mut |_, _| Ok(Flow::Continue)).unwrap();
        learned
            .merges
            .into_iter()
            .map(|(a, b, c)| {
                (
                    String::from_utf8(tokens[a as usize].clone()).unwrap(),
                    String::from_utf8(tokens[b as usize].clone()).unwrap(),
                    c,
                )
            })
            .collect()
    }

    #[test]
    fn parallel_pair_index_gives_the_same_merges() {
        // > 1M symbols so the threaded index is used; random words over a
        // small alphabet, with overlapping runs ("aaa...") mixed in.
        let mut state = 12345u64;
        let mut words: Vec<(String, u64)> = Vec::new();
        let mut total = 0;
        while total < 1_300_000 {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let len = 2 + (state >> 60) as usize;
            let w: String = (0..len).map(|k| (b'a' + ((state >> (k * 3 % 58)) & 3) as u8) as char).collect();
            total += w.len();
            words.push((w, 1 + (state >> 62)));
        }
        let words: Vec<(&str, u64)> = words.iter().map(|(w, c)| (w.as_str(), *c)).collect();
        let run_with = |threads: usize| learn_ids(&words, 300, 1, threads);
        assert_eq!(run_with(1), run_with(2));
        assert_eq!(run_with(1), run_with(3));
    }

    #[test]
    fn pruning_below_min_frequency_changes_nothing() {
        // With min_frequency=1 the loop keeps every pair; its merges with
        // count >= k must be exactly what min_frequency=k learns (which drops
        // rarer pairs from the index and the heap), on 1 and 2 threads.
        let mut state = 99u64;
        let mut words: Vec<(String, u64)> = Vec::new();
        let mut total = 0;
        while total < 1_200_000 {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let len = 2 + (state >> 59) as usize;
            let w: String = (0..len).map(|k| (b'a' + ((state >> (k * 5 % 57)) % 7) as u8) as char).collect();
            total += w.len();
            words.push((w, 1 + (state >> 62) * (state >> 40 & 1)));
        }
        let words: Vec<(&str, u64)> = words.iter().map(|(w, c)| (w.as_str(), *c)).collect();
        let run_with = |min_frequency: u64, threads: usize| learn_ids(&words, usize::MAX, min_frequency, threads);
        let all = run_with(1, 1);
        for k in [2u64, 3, 5] {
            let expect: Vec<_> = all.iter().copied().take_while(|m| m.2 >= k).collect();
            assert!(expect.len() < all.len(), "k={k}: the test needs merges below k");
            assert_eq!(run_with(k, 1), expect, "k={k}");
            assert_eq!(run_with(k, 2), expect, "k={k}, 2 threads");
        }
    }

    #[test]
    fn overlapping_runs_merge_left_to_right() {
        // "aaa" has the pair (a,a) twice but only one merge fits: "aa a".
        let m = run(&[("aaa", 1)], 2);
        assert_eq!(m[0], ("a".into(), "a".into(), 2));
        assert_eq!(m[1], ("aa".into(), "a".into(), 1));
    }

    #[test]
    fn ties_break_by_bytes() {
        // (c,d) and (a,b) both occur 3 times: (a,b) is smaller.
        let m = run(&[("ab", 3), ("cd", 3)], 1);
        assert_eq!(m[0], ("a".into(), "b".into(), 3));
    }

    #[test]
    fn counts_are_weighted_and_updated() {
        let m = run(&[("hug", 10), ("pug", 5), ("pun", 12), ("bun", 4), ("hugs", 5)], 3);
        assert_eq!(m[0], ("u".into(), "g".into(), 20));
        assert_eq!(m[1], ("u".into(), "n".into(), 16));
        assert_eq!(m[2], ("h".into(), "ug".into(), 15));
    }

    #[test]
    fn duplicate_bytes_are_not_merged_twice() {
        // After "ab"+"c" -> "abc", the pair ("a","bc") would give "abc" again.
        let m = run(&[("abc", 5), ("xbc", 3), ("ab", 2)], 10);
        let made: Vec<String> = m.iter().map(|(a, b, _)| format!("{a}{b}")).collect();
        let mut uniq = made.clone();
        uniq.sort();
        uniq.dedup();
        assert_eq!(uniq.len(), made.len(), "{made:?}");
    }
}
