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

/// What shared merges keep between them: the other threads' steps, and
/// how fast each thread's share went (see `Sharing::cuts`).
#[derive(Default)]
pub(super) struct Sharing {
    spare: Vec<Step>,
    /// Words per unit of time of each share, relative to the others.
    speed: Vec<f64>,
}

/// Merges from this many words on teach `Sharing` their shares' speeds
/// (smaller ones are over too fast to time well).
#[cfg(not(test))]
const TIMED_WORDS: usize = 4096;
/// Tests learn from tiny merges, so that their shares are cut unevenly.
#[cfg(test)]
const TIMED_WORDS: usize = 4;

impl Sharing {
    /// Where `len` words are cut into one share per thread: in proportion
    /// to the speeds the shares of earlier merges had. The word table is
    /// ordered by length (it comes from the key-sorted count table), so the
    /// later words of a merge are slower to visit: cut into equal counts,
    /// the second of two shares took ~22% longer on s10, and the first
    /// thread waited for it.
    fn cuts(&mut self, len: usize, threads: usize) -> Vec<usize> {
        self.speed.resize(threads, 1.0);
        let total: f64 = self.speed.iter().sum();
        let mut before = 0.0;
        let mut cuts = vec![0];
        for k in 1..threads {
            before += self.speed[k - 1];
            let cut = ((len as f64 * before / total) as usize).clamp(cuts[k - 1], len);
            cuts.push(cut);
        }
        cuts.push(len);
        cuts
    }

    /// Moves the speeds a fifth of the way towards those just measured
    /// (`words[k]` visited in `seconds[k]`), relative to their mean.
    fn learn(&mut self, words: &[usize], seconds: &[f64]) {
        let measured: Vec<f64> = words.iter().zip(seconds).map(|(&w, &t)| if t > 0.0 { w as f64 / t } else { 0.0 }).collect();
        if measured.iter().any(|&m| m <= 0.0 || !m.is_finite()) {
            return;
        }
        let mean = measured.iter().sum::<f64>() / measured.len() as f64;
        for (speed, m) in self.speed.iter_mut().zip(measured) {
            *speed = 0.8 * *speed + 0.2 * (m / mean);
        }
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
    sharing: &mut Sharing,
    crew: &Crew,
) {
    let threads = crew.threads();
    let cuts = sharing.cuts(list.len(), threads);
    let spare = &mut sharing.spare;
    spare.resize_with(threads - 1, Step::new);
    for later in spare.iter_mut() {
        later.begin(step.a, step.b, step.r, step.ids);
    }
    // Share k: list[cuts[k]..cuts[k + 1]], whose symbols start at the
    // offset of its first word and end before the next share's first word.
    let steps = std::iter::once(&mut *step).chain(spare.iter_mut());
    let mut shares = Vec::with_capacity(threads);
    let mut rest = syms;
    let mut base = 0;
    for (k, share_step) in steps.enumerate() {
        let end = match list.get(cuts[k + 1]) {
            Some(&w) if k + 1 < threads => words.offset(w as usize),
            _ => base + rest.len(),
        };
        let (mine, later) = std::mem::take(&mut rest).split_at_mut(end - base);
        // Each share is taken once, by the thread of its number.
        shares.push(Mutex::new(Some((&list[cuts[k]..cuts[k + 1]], mine, base, share_step))));
        rest = later;
        base = end;
    }
    let seconds: Vec<Mutex<f64>> = (0..threads).map(|_| Mutex::new(0.0)).collect();
    crew.run(&|k| {
        let share = shares[k].lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((part, part_syms, part_base, part_step)) = share {
            let start = std::time::Instant::now();
            merge.visit(part, part_syms, part_base, words, part_step);
            *seconds[k].lock().unwrap_or_else(|e| e.into_inner()) = start.elapsed().as_secs_f64();
        }
    });
    drop(shares);
    for later in sharing.spare.iter_mut() {
        step.absorb(later);
    }
    if list.len() >= TIMED_WORDS {
        let counts: Vec<usize> = cuts.windows(2).map(|c| c[1] - c[0]).collect();
        let seconds: Vec<f64> = seconds.into_iter().map(|t| t.into_inner().unwrap_or_else(|e| e.into_inner())).collect();
        sharing.learn(&counts, &seconds);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_follow_the_speeds_measured() {
        let mut sharing = Sharing::default();
        assert_eq!(sharing.cuts(100, 2), vec![0, 50, 100]);
        assert_eq!(sharing.cuts(0, 3), vec![0, 0, 0, 0]);
        // The second share went at half the first's speed, again and again.
        for _ in 0..50 {
            sharing.learn(&[50, 50], &[1.0, 2.0]);
        }
        let cuts = sharing.cuts(300, 2);
        assert!((195..=205).contains(&cuts[1]), "{cuts:?}");
        // Nothing is learned from a share that took no time.
        let before = sharing.speed.clone();
        sharing.learn(&[10, 0], &[1.0, 0.0]);
        assert_eq!(sharing.speed, before);
        // Cuts stay in order and within the list whatever the speeds.
        sharing.speed = vec![1e-9, 1.0, 1e9];
        let cuts = sharing.cuts(7, 3);
        assert!(cuts.windows(2).all(|c| c[0] <= c[1]) && cuts[3] == 7, "{cuts:?}");
    }
}
