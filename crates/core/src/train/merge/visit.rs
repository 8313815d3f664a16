//! One merge applied to the words of its list, on one thread or several.

use super::*;
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

/// `merge.visit` on the crew's threads, each on a contiguous share of
/// `list`; their count changes end up in `step` as if one thread had
/// visited the words in order.
pub(super) fn merge_in_shares<S: Sym, F: Fn(u32, u32) -> bool + Sync>(
    merge: &Merge<F>,
    list: &[u32],
    syms: &mut [S],
    words: &Words,
    step: &mut Step,
    spare: &mut Vec<Step>,
    crew: &Crew,
) {
    let threads = crew.threads();
    spare.resize_with(threads - 1, Step::new);
    for later in spare.iter_mut() {
        later.begin(step.a, step.b, step.r, step.ids);
    }
    // Share k: list[cuts[k]..cuts[k + 1]], whose symbols start at the
    // offset of its first word and end before the next share's first word.
    let cuts: Vec<usize> = (0..=threads).map(|k| list.len() * k / threads).collect();
    let steps = std::iter::once(&mut *step).chain(spare.iter_mut());
    let mut shares = Vec::with_capacity(threads);
    let mut rest = syms;
    let mut base = 0;
    for (k, share_step) in steps.enumerate() {
        let end = if k + 1 == threads { base + rest.len() } else { words.offset(list[cuts[k + 1]] as usize) };
        let (mine, later) = std::mem::take(&mut rest).split_at_mut(end - base);
        // Each share is taken once, by the thread of its number.
        shares.push(Mutex::new(Some((&list[cuts[k]..cuts[k + 1]], mine, base, share_step))));
        rest = later;
        base = end;
    }
    crew.run(&|k| {
        let share = shares[k].lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((part, part_syms, part_base, part_step)) = share {
            merge.visit(part, part_syms, part_base, words, part_step);
        }
    });
    drop(shares);
    for later in spare.iter_mut() {
        step.absorb(later);
    }
}
