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
use super::tally::Tally;
use crate::util::{new_map, on_threads, pack, prefetch, Map};

const NONE: u32 = u32::MAX;

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

}

/// A symbol as stored in the word table: `u16` while every id (including
/// the tokens the loop will create) fits below `u16::MAX`, else `u32`. The
/// largest value (`END`) is never an id: it fills the tail a word loses
/// when it is merged in place.
trait Sym: Copy + Eq + Send + Sync + 'static {
    const END: Self;
    fn id(self) -> u32;
    fn of(id: u32) -> Self;
}

impl Sym for u16 {
    const END: u16 = u16::MAX;
    #[inline(always)]
    fn id(self) -> u32 {
        self as u32
    }
    #[inline(always)]
    fn of(id: u32) -> u16 {
        debug_assert!(id < u16::MAX as u32);
        id as u16
    }
}

impl Sym for u32 {
    const END: u32 = u32::MAX;
    #[inline(always)]
    fn id(self) -> u32 {
        self
    }
    #[inline(always)]
    fn of(id: u32) -> u32 {
        id
    }
}

/// Ids below this fit the narrow (`u16`) symbols.
const NARROW_IDS: u32 = u16::MAX as u32;

enum Symbols {
    Narrow(Vec<u16>),
    Wide(Vec<u32>),
}

impl Symbols {
    fn len(&self) -> usize {
        match self {
            Symbols::Narrow(v) => v.len(),
            Symbols::Wide(v) => v.len(),
        }
    }

    /// Switches to `u32` symbols (a symbol id of `NARROW_IDS` or more).
    fn widen(&mut self) {
        if let Symbols::Narrow(v) = self {
            let mut wide: Vec<u32> = crate::mem::vec_with_capacity(v.capacity().max(v.len()));
            wide.extend(v.iter().map(|&s| s as u32));
            *self = Symbols::Wide(wide);
        }
    }
}

/// One word type's record: the low 32 bits of its first symbol's offset
/// and its count. Offset and count are read together for every word a merge
/// visits, so they share 8 bytes (one cache line for both).
#[derive(Clone, Copy, Default)]
struct WordRec {
    start: u32,
    /// The count when below 2^31; otherwise `BIG | k` where `big[k]`
    /// holds the full 64-bit count.
    weight: u32,
}

const BIG: u32 = 1 << 31;

/// Where words start: the low 32 bits in `WordRec::start` and, past 2^32
/// symbols, the high part from `high` (the record indices at which it grows
/// by one), so offsets never wrap while a record stays 8 bytes.
#[derive(Default)]
struct Starts {
    /// Record `i` starts at `recs[i].start + 2^32 * #{h in high : h <= i}`.
    high: Vec<u32>,
}

impl Starts {
    #[inline(always)]
    fn offset(&self, recs: &[WordRec], i: usize) -> usize {
        let low = recs[i].start as usize;
        if self.high.is_empty() {
            low
        } else {
            low + ((self.high.partition_point(|&h| h as usize <= i) as u64) << 32) as usize
        }
    }

    /// Records that the next record (index `i`) starts at offset `at`.
    fn push(&mut self, recs: &mut Vec<WordRec>, at: usize) {
        let i = recs.len() as u32;
        while ((self.high.len() as u64) << 32) + (1u64 << 32) <= at as u64 {
            self.high.push(i);
        }
        recs.push(WordRec { start: at as u32, weight: 0 });
    }
}

/// The most word types a table holds: the pair index keeps word numbers
/// as `u32` (and `u32::MAX` marks "none").
const MAX_WORDS: usize = u32::MAX as usize - 1;

/// Input to the merge loop: word types as symbol-id sequences with counts.
///
/// Stored as the loop uses it, so no copy is made: the symbols of all words
/// back to back (`u16` while ids fit), one 8-byte record per word, and the
/// rare counts of 2^31 or more aside. About 2 bytes per symbol plus 8 per
/// word type (the previous layout took 4 + 8 + 4, then 16 per symbol as
/// linked nodes in the loop).
pub struct WordTable {
    syms: Symbols,
    /// One record per word, plus a final one whose start is the end.
    recs: Vec<WordRec>,
    starts: Starts,
    big: Vec<u64>,
}

impl WordTable {
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// A table with room for `symbols` symbols in all (no regrowth).
    pub fn with_capacity(symbols: usize) -> Self {
        // Huge pages: the loop reads the symbols at random (see `mem`).
        let syms = Symbols::Narrow(crate::mem::vec_with_capacity(symbols));
        let mut table = WordTable { syms, recs: Vec::new(), starts: Starts::default(), big: Vec::new() };
        table.starts.push(&mut table.recs, 0);
        table
    }

    /// Number of symbols of all word types.
    pub fn symbols(&self) -> usize {
        self.syms.len()
    }

    /// Adds a word; words of fewer than two symbols cannot merge and are skipped.
    pub fn push(&mut self, symbols: impl IntoIterator<Item = u32>, count: u64) -> Result<()> {
        let before = self.syms.len();
        let mut rest = symbols.into_iter();
        if let Symbols::Narrow(v) = &mut self.syms {
            let mut wide = None;
            for s in rest.by_ref() {
                if s < NARROW_IDS {
                    v.push(s as u16);
                } else {
                    wide = Some(s);
                    break;
                }
            }
            if let Some(s) = wide {
                self.syms.widen();
                if let Symbols::Wide(v) = &mut self.syms {
                    v.push(s);
                }
            }
        }
        if let Symbols::Wide(v) = &mut self.syms {
            v.extend(rest.inspect(|&s| debug_assert!(s != u32::MAX)));
        }
        let end = self.syms.len();
        if end - before < 2 {
            self.truncate_symbols(before);
            return Ok(());
        }
        self.end_word(end, count)
    }

    fn truncate_symbols(&mut self, len: usize) {
        match &mut self.syms {
            Symbols::Narrow(v) => v.truncate(len),
            Symbols::Wide(v) => v.truncate(len),
        }
    }

    /// Closes the word that ends at symbol offset `end`.
    fn end_word(&mut self, end: usize, count: u64) -> Result<()> {
        if self.len() >= MAX_WORDS {
            return Err(too_many_words());
        }
        let weight = if count < BIG as u64 {
            count as u32
        } else {
            if self.big.len() >= BIG as usize {
                return Err(Error::training("more than 2^31 word types with counts of 2^31 or more"));
            }
            self.big.push(count);
            BIG | (self.big.len() - 1) as u32
        };
        if let Some(last) = self.recs.last_mut() {
            last.weight = weight;
        }
        self.starts.push(&mut self.recs, end);
        Ok(())
    }

    /// A table of `u16` symbols written on one thread per part: part `p`
    /// holds `sizes[p] = (words, symbols)` (words of two symbols or more,
    /// every id below `u16::MAX`) and `fill(p, writer)` writes exactly those,
    /// in order; the parts follow each other. Each thread also faults in its
    /// own share of the symbols' pages, which one thread did before.
    pub(crate) fn build_in_parts(
        sizes: &[(usize, usize)],
        fill: &(dyn Fn(usize, &mut PartWriter) -> Result<()> + Sync),
    ) -> Result<WordTable> {
        let words: usize = sizes.iter().map(|s| s.0).sum();
        let symbols: usize = sizes.iter().map(|s| s.1).sum();
        if words > MAX_WORDS {
            return Err(too_many_words());
        }
        let mut syms = crate::mem::zeroed_u16(symbols);
        let mut recs = crate::mem::filled_vec(words + 1, WordRec::default());
        // Hand each part its own slices (through a lock taken once each).
        let mut writers = Vec::with_capacity(sizes.len());
        let (mut sym_rest, mut rec_rest, mut base) = (&mut syms[..], &mut recs[..words], 0usize);
        for &(w, n) in sizes {
            let (s, sr) = std::mem::take(&mut sym_rest).split_at_mut(n);
            let (r, rr) = std::mem::take(&mut rec_rest).split_at_mut(w);
            (sym_rest, rec_rest) = (sr, rr);
            writers.push(std::sync::Mutex::new(Some(PartWriter { syms: s, recs: r, at: 0, word: 0, base, big: Vec::new() })));
            base += n;
        }
        let bigs = on_shards(sizes.len(), &|p| -> Result<Vec<u64>> {
            let mut writer = writers[p].lock().map_err(|_| crate::util::worker_crashed())?.take().ok_or_else(crate::util::worker_crashed)?;
            fill(p, &mut writer)?;
            if writer.at != writer.syms.len() || writer.word != writer.recs.len() {
                return Err(Error::training("word table parts changed while they were written (a bug)"));
            }
            Ok(writer.big)
        })?;
        drop(writers);
        recs[words] = WordRec { start: symbols as u32, weight: 0 };
        // Counts of 2^31 or more: renumber each part's into one list.
        let mut big = Vec::new();
        let mut first_word = 0;
        for (part, &(w, _)) in bigs.into_iter().zip(sizes) {
            let part = part?;
            if !part.is_empty() {
                for rec in recs[first_word..first_word + w].iter_mut().filter(|r| r.weight & BIG != 0) {
                    rec.weight = BIG | ((rec.weight & !BIG) + big.len() as u32);
                }
                big.extend(part);
            }
            first_word += w;
        }
        if big.len() > BIG as usize {
            return Err(Error::training("more than 2^31 word types with counts of 2^31 or more"));
        }
        // Past 2^32 symbols: where the high part of the offsets grows (the
        // records hold the low 32 bits; no word is 2^32 symbols long).
        let mut starts = Starts::default();
        if symbols as u64 >= 1 << 32 {
            let mut at = 0u64;
            for (i, r) in recs.iter().enumerate().skip(1) {
                at += (r.start.wrapping_sub(recs[i - 1].start)) as u64;
                while ((starts.high.len() as u64 + 1) << 32) <= at {
                    starts.high.push(i as u32);
                }
            }
        }
        Ok(WordTable { syms: Symbols::Narrow(syms), recs, starts, big })
    }

    /// Appends the words of `other` (after this table's words).
    pub fn append(&mut self, other: WordTable) -> Result<()> {
        if matches!(other.syms, Symbols::Wide(_)) {
            self.syms.widen();
        }
        let shift = self.syms.len();
        match (&mut self.syms, &other.syms) {
            (Symbols::Narrow(v), Symbols::Narrow(o)) => v.extend_from_slice(o),
            (Symbols::Wide(v), Symbols::Narrow(o)) => v.extend(o.iter().map(|&s| s as u32)),
            (Symbols::Wide(v), Symbols::Wide(o)) => v.extend_from_slice(o),
            (Symbols::Narrow(_), Symbols::Wide(_)) => unreachable!("widened above"),
        }
        for w in 0..other.len() {
            let end = shift + other.starts.offset(&other.recs, w + 1);
            self.end_word(end, other.count(w))?;
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.recs.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The count of word `w`.
    fn count(&self, w: usize) -> u64 {
        weight_of(self.recs[w].weight, &self.big)
    }
}

fn too_many_words() -> Error {
    Error::training(format!(
        "the word-type table exceeds {MAX_WORDS} word types (the merge index numbers them with 32 bits); prune rare word types (min_word_count) or shard the corpus"
    ))
}

/// One part's share of a table built by `WordTable::build_in_parts`.
pub(crate) struct PartWriter<'a> {
    syms: &'a mut [u16],
    recs: &'a mut [WordRec],
    /// Symbols and words written so far.
    at: usize,
    word: usize,
    /// The part's first symbol offset in the whole table.
    base: usize,
    /// Counts of 2^31 or more, numbered within the part.
    big: Vec<u64>,
}

impl PartWriter<'_> {
    /// Writes the next word (two symbols or more, each below `u16::MAX`).
    pub(crate) fn push(&mut self, symbols: impl IntoIterator<Item = u32>, count: u64) -> Result<()> {
        let start = self.at;
        for s in symbols {
            match self.syms.get_mut(self.at) {
                Some(slot) if s < NARROW_IDS => *slot = s as u16,
                _ => return Err(Error::training("a word table part outgrew its size (a bug)")),
            }
            self.at += 1;
        }
        let weight = if count < BIG as u64 {
            count as u32
        } else {
            self.big.push(count);
            BIG | (self.big.len() - 1) as u32
        };
        let rec = self.recs.get_mut(self.word).ok_or_else(|| Error::training("a word table part outgrew its size (a bug)"))?;
        *rec = WordRec { start: (self.base + start) as u32, weight };
        self.word += 1;
        Ok(())
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

#[inline(always)]
fn weight_of(weight: u32, big: &[u64]) -> u64 {
    if weight & BIG == 0 {
        weight as u64
    } else {
        big[(weight & !BIG) as usize]
    }
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
    let mut advised: Vec<WordRec> = crate::mem::vec_with_capacity(recs.len());
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

/// The word records of a table (without its symbols, which the loop owns
/// and rewrites).
struct Words {
    recs: Vec<WordRec>,
    starts: Starts,
    big: Vec<u64>,
}

impl Words {
    fn len(&self) -> usize {
        self.recs.len() - 1
    }
    #[inline(always)]
    fn offset(&self, w: usize) -> usize {
        self.starts.offset(&self.recs, w)
    }
    #[inline(always)]
    fn weight(&self, w: usize) -> u64 {
        weight_of(self.recs[w].weight, &self.big)
    }
}

/// A pair's weighted count and the words it occurs in, each once (see
/// `WordList`). Entries go stale when a word loses the pair; the loop then
/// finds nothing to merge in that word.
struct PairInfo {
    count: u64,
    words: WordList,
}

/// Word numbers, ascending, as LEB128 varints of the difference to the
/// previous one (the first relative to `u32::MAX`, wrapping). Lists are
/// written once, in ascending order: the initial index word by word, and a
/// new pair's list while the merge that creates it visits the words of the
/// merged pair in their (ascending) order. Frequent pairs occur in nearby
/// words, so most entries take one byte where a `u32` takes four; the lists
/// are most of the merge phase's memory.
#[derive(Default)]
struct WordList {
    bytes: Vec<u8>,
    /// The last word number added (`u32::MAX`: none).
    last: u32,
}

impl WordList {
    fn new() -> Self {
        WordList { bytes: Vec::new(), last: u32::MAX }
    }

    /// Adds `w` unless it is the last word added (several occurrences in a word).
    #[inline(always)]
    fn add(&mut self, w: u32) {
        if self.last != w {
            put_varint(&mut self.bytes, w.wrapping_sub(self.last));
            self.last = w;
        }
    }

    /// Appends `other`, whose words all come after this list's.
    fn append(&mut self, other: WordList) {
        let Some((first, used)) = get_varint(&other.bytes) else { return };
        let w = u32::MAX.wrapping_add(first);
        self.bytes.reserve_exact(other.bytes.len() + 5);
        put_varint(&mut self.bytes, w.wrapping_sub(self.last));
        self.bytes.extend_from_slice(&other.bytes[used..]);
        self.last = other.last;
    }

    /// The word numbers, into `out` (cleared first).
    fn decode_into(&self, out: &mut Vec<u32>) {
        decode_words(&self.bytes, out)
    }
}

/// The word numbers of a `WordList`'s bytes, into `out` (cleared first).
fn decode_words(bytes: &[u8], out: &mut Vec<u32>) {
    {
        out.clear();
        let mut w = u32::MAX;
        let (mut d, mut shift) = (0u32, 0u32);
        for &byte in bytes {
            d |= ((byte & 0x7f) as u32) << shift;
            if byte & 0x80 != 0 {
                shift += 7;
            } else {
                w = w.wrapping_add(d);
                out.push(w);
                (d, shift) = (0, 0);
            }
        }
    }
}

#[inline(always)]
fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The first varint of `bytes` and how many bytes it took.
fn get_varint(bytes: &[u8]) -> Option<(u32, usize)> {
    let mut v = 0u32;
    for (i, &byte) in bytes.iter().enumerate().take(5) {
        v |= ((byte & 0x7f) as u32) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

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
struct Cold {
    arena: Vec<u8>,
    threshold: u64,
    /// Bytes of records that became hot (their key is `GONE`); the arena
    /// is compacted when they are half of it.
    gone: usize,
}

/// The key of a cold record whose pair became hot (no pair has it: ids
/// are below `u32::MAX`).
const GONE: u64 = u64::MAX;

impl Cold {
    fn new(threshold: u64) -> Self {
        Cold { arena: Vec::new(), threshold, gone: 0 }
    }

    fn park(&mut self, key: u64, count: u64, list: &[u8]) {
        self.arena.extend_from_slice(&key.to_le_bytes());
        put_varint64(&mut self.arena, count);
        put_varint64(&mut self.arena, list.len() as u64);
        self.arena.extend_from_slice(list);
    }

    /// The record at `p`: its key, count, list and where the next starts.
    fn record(arena: &[u8], p: usize) -> (u64, u64, std::ops::Range<usize>, usize) {
        let key = u64::from_le_bytes(arena[p..p + 8].try_into().unwrap_or_default());
        let (count, n) = get_varint64(&arena[p + 8..]);
        let (len, m) = get_varint64(&arena[p + 8 + n..]);
        let list = p + 8 + n + m..p + 8 + n + m + len as usize;
        let next = list.end;
        (key, count, list, next)
    }

    /// Drops the records of pairs that became hot, in place.
    fn compact(&mut self) {
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
    fn thaw<S: Sym>(
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

fn put_varint64(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint64(bytes: &[u8]) -> (u64, usize) {
    let mut v = 0u64;
    for (i, &byte) in bytes.iter().enumerate().take(10) {
        v |= ((byte & 0x7f) as u64) << (7 * i);
        if byte & 0x80 == 0 {
            return (v, i + 1);
        }
    }
    (v, bytes.len())
}

/// A pair's count and words while they are being collected.
struct Collecting {
    count: u64,
    words: WordList,
}

impl Collecting {
    fn new() -> Self {
        Collecting { count: 0, words: WordList::new() }
    }
    #[inline(always)]
    fn add(&mut self, weight: u64, w: u32) {
        self.count += weight;
        self.words.add(w);
    }

    /// Adds `later`, whose words all come after these.
    fn absorb(&mut self, later: Collecting) {
        self.count += later.count;
        self.words.append(later.words);
    }
}

/// Pairs below 1/COLD_RATIO of the largest initial count start cold.
const COLD_RATIO: u64 = 1024;

/// How many words ahead to prefetch while merging.
const PREFETCH_AHEAD: usize = 8;

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
    let mut merges: Vec<(u32, u32, u64)> = Vec::with_capacity(params.max_merges.min(1 << 20));
    // Per-step deltas (see `Step`): small, so they stay in cache.
    let mut step = Step::new();
    // The other threads' steps for large merges (see `merge_in_shares`).
    let mut spare_steps: Vec<Step> = Vec::new();
    // The merged pair's words, decoded (reused: no allocation per merge).
    let mut list: Vec<u32> = Vec::new();
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
        info.words.decode_into(&mut list);
        drop(info);
        step.begin(a, b, r, tokens.len());
        if params.threads > 1 && list.len() >= PARALLEL_WORDS {
            merge_in_shares(&merge, &list, &mut syms, words, &mut step, &mut spare_steps, params.threads);
        } else {
            merge.visit(&list, &mut syms, 0, words, &mut step);
        }
        step.apply(&mut pairs, &mut cold, &mut heap, tokens, min_keep);
        merges.push((a, b, top.count));
    }
    Ok(Learned { merges, interrupted: false, setup_seconds })
}

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
/// order).
fn build_index<S: Sym>(
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
    let build_part = |p: usize| -> Map<u64, Collecting> {
        let range = n * p / parts..n * (p + 1) / parts;
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
    // Hot from 1/1024 of the largest count down: the loop rarely gets that
    // far, and when it does, one `thaw` brings the next pairs in.
    let top = all.values().map(|c| c.count).max().unwrap_or(0);
    let threshold = first_threshold.unwrap_or(top / COLD_RATIO).max(min_keep);
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

/// Up to this many token ids (the bytes scheme's 256 and the special
/// tokens), `build_index` counts pairs in an array indexed by the pair
/// (at most 384² entries of 40 bytes, 6 MB, per thread) instead of a map.
const DENSE_IDS: usize = 384;

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

/// One merge `(a, b) -> r`, applied word by word.
struct Merge<F: Fn(u32, u32) -> bool> {
    a: u32,
    b: u32,
    r: u32,
    candidate: F,
}

impl<F: Fn(u32, u32) -> bool> Merge<F> {
    /// Merges the words `list` (ascending), whose symbols are `syms` from
    /// symbol offset `base` on.
    fn visit<S: Sym>(&self, list: &[u32], syms: &mut [S], base: usize, words: &Words, step: &mut Step) {
        for (k, &w) in list.iter().enumerate() {
            // Two-stage prefetch: the word's record 2D words ahead; D ahead
            // (by then usually in cache) its first and last symbol.
            if let Some(&far) = list.get(k + 2 * PREFETCH_AHEAD) {
                prefetch(&words.recs, far as usize);
                prefetch(&words.recs, far as usize + 1);
            }
            if let Some(&near) = list.get(k + PREFETCH_AHEAD) {
                let near = near as usize;
                prefetch(syms, words.offset(near) - base);
                prefetch(syms, words.offset(near + 1) - 1 - base);
            }
            let w = w as usize;
            let word = &mut syms[words.offset(w) - base..words.offset(w + 1) - base];
            self.word(word, w as u32, words.weight(w), step);
        }
    }

    /// Merges every occurrence of `(a, b)` in `word` (word number `w`, of
    /// count `weight`) left to right, in place: the word shifts left and
    /// its freed tail is `END`. Records the count changes of the pairs
    /// around each occurrence in `step`: the pair before the occurrence
    /// is the symbol already written (possibly `r` from an occurrence just
    /// merged, as in "abab"), the pair after it the next unmerged symbol.
    #[inline(always)]
    fn word<S: Sym>(&self, word: &mut [S], w: u32, weight: u64, step: &mut Step) {
        let (a, b, r) = (S::of(self.a), S::of(self.b), S::of(self.r));
        let n = word.len();
        let Some(mut i) = word.windows(2).position(|p| p[0] == a && p[1] == b) else { return };
        let mut j = i;
        while i < n {
            let x = word[i];
            if x == S::END {
                break;
            }
            if x == a && i + 1 < n && word[i + 1] == b {
                if j > 0 {
                    let before = word[j - 1].id();
                    step.dec_before(before, weight);
                    if (self.candidate)(before, self.r) {
                        step.new_before(before, weight, w);
                    }
                }
                if i + 2 < n && word[i + 2] != S::END {
                    let after = word[i + 2].id();
                    step.dec_after(after, weight);
                    if (self.candidate)(self.r, after) {
                        step.new_after(after, weight, w);
                    }
                }
                word[j] = r;
                i += 2;
            } else {
                word[j] = x;
                i += 1;
            }
            j += 1;
        }
        word[j..i].fill(S::END);
    }
}

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
struct Step {
    /// This step's merge (set by `begin`), and the ids it may meet.
    a: u32,
    b: u32,
    r: u32,
    ids: usize,
    /// Losses of `(x, a)` by `x` (never `r`) and of `(b, y)` by `y`.
    dec_before: Tally<u64>,
    dec_after: Tally<u64>,
    /// New pairs `(x, r)` by `x` (never `r`) and `(r, y)` by `y`, with the
    /// words they occur in.
    new_before: Tally<Collecting>,
    new_after: Tally<Collecting>,
    /// Losses of `(r, a)` and the new pair `(r, r)`.
    dec_rest: Map<u64, u64>,
    new_rest: Map<u64, Collecting>,
}

impl Step {
    fn new() -> Self {
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
    fn begin(&mut self, a: u32, b: u32, r: u32, ids: usize) {
        (self.a, self.b, self.r, self.ids) = (a, b, r, ids);
        self.dec_before.reserve_ids(ids);
        self.dec_after.reserve_ids(ids);
        self.new_before.reserve_ids(ids);
        self.new_after.reserve_ids(ids);
    }

    /// Adds `later`'s changes, whose words all come after this step's.
    fn absorb(&mut self, later: &mut Step) {
        for (x, d) in later.dec_before.drain() {
            *self.dec_before.entry(x, || 0) += d;
        }
        for (y, d) in later.dec_after.drain() {
            *self.dec_after.entry(y, || 0) += d;
        }
        for (key, d) in later.dec_rest.drain() {
            *self.dec_rest.entry(key).or_insert(0) += d;
        }
        for (x, c) in later.new_before.drain() {
            self.new_before.entry(x, Collecting::new).absorb(c);
        }
        for (y, c) in later.new_after.drain() {
            self.new_after.entry(y, Collecting::new).absorb(c);
        }
        for (key, c) in later.new_rest.drain() {
            self.new_rest.entry(key).or_insert_with(Collecting::new).absorb(c);
        }
    }

    /// `(x, a)` loses `weight`.
    #[inline(always)]
    fn dec_before(&mut self, x: u32, weight: u64) {
        if x == self.r {
            *self.dec_rest.entry(pack(x, self.a)).or_insert(0) += weight;
        } else {
            *self.dec_before.entry(x, || 0) += weight;
        }
    }

    /// `(b, y)` loses `weight`.
    #[inline(always)]
    fn dec_after(&mut self, y: u32, weight: u64) {
        *self.dec_after.entry(y, || 0) += weight;
    }

    /// `(x, r)` occurs in word `w`, of count `weight`.
    #[inline(always)]
    fn new_before(&mut self, x: u32, weight: u64, w: u32) {
        if x == self.r {
            self.new_rest.entry(pack(x, x)).or_insert_with(Collecting::new).add(weight, w);
        } else {
            self.new_before.entry(x, Collecting::new).add(weight, w);
        }
    }

    /// `(r, y)` occurs in word `w`, of count `weight`.
    #[inline(always)]
    fn new_after(&mut self, y: u32, weight: u64, w: u32) {
        self.new_after.entry(y, Collecting::new).add(weight, w);
    }

    /// Pairs with the new symbol may lose occurrences within the same step
    /// (in "ab ab", (ab, a) appears and then becomes (ab, ab)), so decrements
    /// of those are taken out of the new counts first. Pairs whose count is
    /// below `min_keep` (the minimum frequency) can never be merged again and
    /// are dropped; their heap entries are skipped when popped.
    fn apply(&mut self, pairs: &mut Map<u64, PairInfo>, cold: &mut Cold, heap: &mut PairHeap, tokens: &[Vec<u8>], min_keep: u64) {
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

/// A merge's words from this many on are shared among the threads (and so
/// are a thaw's): each share is a contiguous range of words, so each thread
/// rewrites its own part of the symbols; the steps are summed in word order.
/// Below it, starting threads costs more than it saves.
#[cfg(not(test))]
const PARALLEL_WORDS: usize = 1 << 15;
/// Tests share even tiny merges, so that the threaded paths meet every case.
#[cfg(test)]
const PARALLEL_WORDS: usize = 4;

/// `merge.visit` on `threads` threads, each on a contiguous share of
/// `list`; their count changes end up in `step` as if one thread had
/// visited the words in order.
fn merge_in_shares<S: Sym, F: Fn(u32, u32) -> bool + Sync>(
    merge: &Merge<F>,
    list: &[u32],
    syms: &mut [S],
    words: &Words,
    step: &mut Step,
    spare: &mut Vec<Step>,
    threads: usize,
) {
    spare.resize_with(threads - 1, Step::new);
    for later in spare.iter_mut() {
        later.begin(step.a, step.b, step.r, step.ids);
    }
    // Share k: list[cuts[k]..cuts[k + 1]], whose symbols start at the
    // offset of its first word and end before the next share's first word.
    let cuts: Vec<usize> = (0..=threads).map(|k| list.len() * k / threads).collect();
    let mut shares = Vec::with_capacity(threads);
    let mut rest = syms;
    let mut base = 0;
    for k in 0..threads {
        let end = if k + 1 == threads { base + rest.len() } else { words.offset(list[cuts[k + 1]] as usize) };
        let (mine, later) = std::mem::take(&mut rest).split_at_mut(end - base);
        shares.push((&list[cuts[k]..cuts[k + 1]], mine, base));
        rest = later;
        base = end;
    }
    let mut shares = shares.into_iter();
    let Some((first, first_syms, first_base)) = shares.next() else { return };
    std::thread::scope(|scope| {
        for ((part, part_syms, part_base), part_step) in shares.zip(spare.iter_mut()) {
            scope.spawn(move || merge.visit(part, part_syms, part_base, words, part_step));
        }
        merge.visit(first, first_syms, first_base, words, step);
    });
    for later in spare.iter_mut() {
        step.absorb(later);
    }
}

/// Runs `f(shard)` for every shard, on one thread per shard when there are
/// several; the results in shard order.
fn on_shards<T: Send>(shards: usize, f: &(dyn Fn(usize) -> T + Sync)) -> Result<Vec<T>> {
    on_threads(shards, f)
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

    /// The naive trainer: recount every pair before each merge, take the
    /// largest count (ties: smaller left bytes, then right bytes), merge it
    /// left to right in every word; a pair whose bytes already are a token
    /// is never taken.
    fn reference(words: &[(Vec<u32>, u64)], tokens: &mut Vec<Vec<u8>>, max_merges: usize, min_frequency: u64) -> Vec<(u32, u32, u64)> {
        let mut words: Vec<(Vec<u32>, u64)> = words.to_vec();
        let mut banned = std::collections::HashSet::new();
        let mut merges = Vec::new();
        while merges.len() < max_merges {
            let mut counts: std::collections::HashMap<(u32, u32), u64> = Default::default();
            for (w, c) in &words {
                for p in w.windows(2) {
                    *counts.entry((p[0], p[1])).or_insert(0) += c;
                }
            }
            let best = counts
                .into_iter()
                .filter(|(p, _)| !banned.contains(p))
                .max_by(|x, y| {
                    x.1.cmp(&y.1)
                        .then_with(|| tokens[y.0 .0 as usize].cmp(&tokens[x.0 .0 as usize]))
                        .then_with(|| tokens[y.0 .1 as usize].cmp(&tokens[x.0 .1 as usize]))
                });
            let Some(((a, b), count)) = best else { break };
            if count < min_frequency.max(1) {
                break;
            }
            let bytes = [tokens[a as usize].clone(), tokens[b as usize].clone()].concat();
            if tokens.contains(&bytes) {
                banned.insert((a, b));
                continue;
            }
            let r = tokens.len() as u32;
            tokens.push(bytes);
            for (w, _) in words.iter_mut() {
                let mut out = Vec::with_capacity(w.len());
                let mut i = 0;
                while i < w.len() {
                    if i + 1 < w.len() && w[i] == a && w[i + 1] == b {
                        out.push(r);
                        i += 2;
                    } else {
                        out.push(w[i]);
                        i += 1;
                    }
                }
                *w = out;
            }
            merges.push((a, b, count));
        }
        merges
    }

    #[test]
    fn the_loop_equals_the_naive_trainer_on_random_tables() {
        let mut state = 2024u64;
        let mut next = |m: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % m
        };
        for round in 0..40 {
            // Few letters and short words: many ties, repeats ("aaaa") and
            // pairs that come back as existing tokens ("ab"+"c" vs "a"+"bc").
            let letters = 2 + next(4);
            let n = 1 + next(60) as usize;
            let words: Vec<(Vec<u32>, u64)> = (0..n)
                .map(|_| {
                    let len = 1 + next(9) as usize;
                    ((0..len).map(|_| b'a' as u32 + next(letters) as u32).collect(), 1 + next(5) * next(2))
                })
                .collect();
            let min_frequency = 1 + next(3);
            let mut base: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
            if round % 2 == 1 {
                // More ids than `DENSE_IDS`: the index is built in a map.
                base.extend((0..200u32).map(|k| vec![0xfe, (k >> 8) as u8, k as u8]));
            }
            let expect = reference(&words, &mut base.clone(), usize::MAX, min_frequency);
            for (wide, threads, cold) in [(false, 1, None), (true, 1, None), (false, 2, Some(3)), (true, 1, Some(8)), (false, 1, Some(1000))] {
                let mut table = WordTable::new();
                for (w, c) in &words {
                    table.push(w.iter().copied(), *c).unwrap();
                }
                let mut tokens = base.clone();
                let mut ids: Map<Vec<u8>, u32> = new_map();
                for (i, t) in tokens.iter().enumerate() {
                    ids.insert(t.clone(), i as u32);
                }
                let params = MergeParams { max_merges: usize::MAX, min_frequency, max_token_length: None, unk: None, limits: Default::default(), threads };
                let got = learn(table, &mut tokens, &mut ids, &params, &mut |_, _| Ok(Flow::Continue), wide, cold).unwrap().merges;
                assert_eq!(got, expect, "round {round}, wide {wide}, cold {cold:?}, words {words:?}");
            }
        }
    }

    #[test]
    fn offsets_hold_past_two_to_the_32_symbols() {
        // A synthetic table: only the word records, with words of 3 billion
        // symbols, so the offsets cross 2^32 twice (the symbols themselves
        // would need 18 GB).
        let mut recs = Vec::new();
        let mut starts = Starts::default();
        starts.push(&mut recs, 0);
        let len = 3_000_000_000usize;
        for w in 1..=5 {
            starts.push(&mut recs, w * len);
        }
        starts.push(&mut recs, 5 * len + 2);
        for w in 0..=5 {
            assert_eq!(starts.offset(&recs, w), w * len, "word {w}");
        }
        assert_eq!(starts.offset(&recs, 6), 5 * len + 2);
        assert_eq!(starts.high.len(), ((5 * len + 2) >> 32) as usize);
    }

    #[test]
    fn tables_built_in_parts_equal_pushed_ones() {
        let words: Vec<(Vec<u32>, u64)> = (0..1000u32)
            .map(|k| ((0..2 + k % 7).map(|i| (k * 31 + i * 7) % 300).collect(), if k % 97 == 5 { (1 << 33) + k as u64 } else { 1 + k as u64 % 13 }))
            .collect();
        let mut pushed = WordTable::new();
        for (w, c) in &words {
            pushed.push(w.iter().copied(), *c).unwrap();
        }
        for cuts in [vec![0, 1000], vec![0, 0, 333, 1000], vec![0, 400, 401, 1000, 1000]] {
            let sizes: Vec<(usize, usize)> = cuts.windows(2).map(|c| (c[1] - c[0], words[c[0]..c[1]].iter().map(|w| w.0.len()).sum())).collect();
            let built = WordTable::build_in_parts(&sizes, &|p, out| {
                words[cuts[p]..cuts[p + 1]].iter().try_for_each(|(w, c)| out.push(w.iter().copied(), *c))
            })
            .unwrap();
            let (Symbols::Narrow(a), Symbols::Narrow(b)) = (&built.syms, &pushed.syms) else { unreachable!() };
            assert_eq!(a, b);
            assert_eq!(built.len(), pushed.len());
            for w in 0..=built.len() {
                assert_eq!(built.starts.offset(&built.recs, w), pushed.starts.offset(&pushed.recs, w));
                if w < built.len() {
                    assert_eq!(built.count(w), pushed.count(w), "word {w}");
                }
            }
        }
    }

    #[test]
    fn ids_past_u16_widen_the_table() {
        let mut narrow = WordTable::new();
        narrow.push([1, 2, 3], 7).unwrap();
        let mut wide = WordTable::new();
        wide.push([70_000, 2], 1 << 40).unwrap();
        assert!(matches!(wide.syms, Symbols::Wide(_)));
        narrow.append(wide).unwrap();
        assert!(matches!(narrow.syms, Symbols::Wide(_)));
        narrow.push([5], 1).unwrap(); // one symbol: skipped
        narrow.push([4, 65_535, 4], 3).unwrap();
        assert_eq!((narrow.len(), narrow.symbols()), (3, 8));
        assert_eq!([narrow.count(0), narrow.count(1), narrow.count(2)], [7, 1 << 40, 3]);
        let Symbols::Wide(v) = &narrow.syms else { unreachable!() };
        assert_eq!(v, &[1, 2, 3, 70_000, 2, 4, 65_535, 4]);
    }

    #[test]
    fn word_lists_round_trip() {
        let all: Vec<u32> = vec![0, 1, 2, 130, 20_000, 3_000_000, u32::MAX - 1];
        for cut in 0..=all.len() {
            let (mut a, mut b) = (WordList::new(), WordList::new());
            for &w in &all[..cut] {
                a.add(w);
                a.add(w); // a word with two occurrences is listed once
            }
            for &w in &all[cut..] {
                b.add(w);
            }
            a.append(b);
            let mut out = Vec::new();
            a.decode_into(&mut out);
            assert_eq!(out, all, "cut {cut}");
        }
    }

}
