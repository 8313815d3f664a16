//! One merge applied to the words of its list, on one thread or several.

use super::*;
use super::step::StepPart;
use super::spans::Spans;
use std::sync::Mutex;

/// One merge `(a, b) -> r`, applied word by word.
pub(super) struct Merge<F: Fn(u32, u32) -> bool> {
    pub(super) a: u32,
    pub(super) b: u32,
    pub(super) r: u32,
    pub(super) candidate: F,
}

impl<F: Fn(u32, u32) -> bool> Merge<F> {
    /// Merges the words `list` (ascending), whose symbols are `syms` from
    /// symbol offset `base` on.
    pub(super) fn visit<S: Sym>(&self, list: &[u32], syms: &mut [S], base: usize, words: &Words, step: &mut Step) {
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
    pub(super) fn word<S: Sym>(&self, word: &mut [S], w: u32, weight: u64, step: &mut Step) {
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

/// What shared merges keep between them: one scratch step per thread
/// (its tallies are as long as the ids; allocated once).
#[derive(Default)]
pub(super) struct Sharing {
    scratch: Vec<Mutex<Step>>,
}

/// A shared merge's words are cut into pieces of at least this many words,
/// and at most `PIECES_PER_THREAD` per thread: each thread owns a span of
/// them and, its own done, takes the others' from the back (`Spans`), so
/// that a slow or late thread holds up the others by one piece at most.
/// (Words differ in length, so equal shares without taking left the first
/// of two threads waiting ~22% of the time on s10.)
#[cfg(not(test))]
const PIECE_WORDS: usize = 64;
/// Tests cut even tiny merges into many pieces.
#[cfg(test)]
const PIECE_WORDS: usize = 1;
const PIECES_PER_THREAD: usize = 4;

/// How many pieces a merge of `len` words is cut into.
fn pieces(len: usize, threads: usize) -> usize {
    (len / PIECE_WORDS).clamp(1, threads * PIECES_PER_THREAD)
}

/// `merge.visit` on the crew's threads, in pieces of `list` handed out by
/// `Spans`; their count changes end up in `step` as if one thread had
/// visited the words in order.
pub(super) fn merge_in_shares<S: Sym, F: Fn(u32, u32) -> bool + Sync>(
    merge: &Merge<F>,
    list: &[u32],
    syms: &mut [S],
    words: &Words,
    step: &mut Step,
    sharing: &mut Sharing,
    crew: &Crew,
) {
    let threads = crew.threads();
    let n = pieces(list.len(), threads);
    sharing.scratch.resize_with(threads, || Mutex::new(Step::new()));
    for scratch in sharing.scratch.iter_mut() {
        scratch.get_mut().unwrap_or_else(|e| e.into_inner()).begin(step.a, step.b, step.r, step.ids);
    }
    // Piece p: list[cut(p)..cut(p + 1)], whose symbols start at the offset
    // of its first word and end before the next piece's first word.
    let cut = |p: usize| list.len() * p / n;
    let mut pieces = Vec::with_capacity(n);
    let mut rest = syms;
    let mut base = 0;
    for p in 0..n {
        let end = match list.get(cut(p + 1)) {
            Some(&w) if p + 1 < n => words.offset(w as usize),
            _ => base + rest.len(),
        };
        let (mine, later) = std::mem::take(&mut rest).split_at_mut(end - base);
        // Each piece is taken once, by the thread that claims its number.
        pieces.push(Mutex::new(Some((&list[cut(p)..cut(p + 1)], mine, base))));
        rest = later;
        base = end;
    }
    // Part p: the changes of the pieces from p on that one thread visited
    // in one go. The caller's own span goes straight into `step`: it starts
    // at piece 0, so its changes come first.
    let parts: Vec<Mutex<Option<StepPart>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let spans = Spans::new(n, threads);
    let scratch = &sharing.scratch;
    let first = Mutex::new(step);
    crew.run(&|k| {
        let take = |p: usize| pieces[p].lock().unwrap_or_else(|e| e.into_inner()).take();
        let mut mine = scratch[k].lock().unwrap_or_else(|e| e.into_inner());
        let mut own = None;
        while let Some(p) = spans.take_own(k) {
            own.get_or_insert(p);
            // Every piece number is handed out once, so its piece is there.
            if let Some((part, part_syms, part_base)) = take(p) {
                if k == 0 {
                    let mut step = first.lock().unwrap_or_else(|e| e.into_inner());
                    merge.visit(part, part_syms, part_base, words, &mut step);
                } else {
                    merge.visit(part, part_syms, part_base, words, &mut mine);
                }
            }
        }
        // A helper's own span is one part (the caller's is in `step`).
        if let Some(p) = own.filter(|_| k > 0) {
            *parts[p].lock().unwrap_or_else(|e| e.into_inner()) = Some(mine.seal());
        }
        while let Some(p) = spans.take_other(k) {
            if let Some((part, part_syms, part_base)) = take(p) {
                merge.visit(part, part_syms, part_base, words, &mut mine);
                *parts[p].lock().unwrap_or_else(|e| e.into_inner()) = Some(mine.seal());
            }
        }
    });
    let step = first.into_inner().unwrap_or_else(|e| e.into_inner());
    drop(pieces);
    for part in parts {
        if let Some(part) = part.into_inner().unwrap_or_else(|e| e.into_inner()) {
            step.absorb(part);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_bounded_by_words_and_threads() {
        assert_eq!(pieces(0, 2), 1);
        assert_eq!(pieces(1, 2), 1);
        assert_eq!(pieces(3, 2), 3);
        assert_eq!(pieces(1_000_000, 2), 2 * PIECES_PER_THREAD);
        assert_eq!(pieces(1_000_000, 16), 16 * PIECES_PER_THREAD);
    }
}
