//! BPE-dropout (Provilkov et al., 2020): sampled segmentations for
//! training-time regularisation, reproducible from a seed.

use super::{Encoder, Merging, Specials, NO_RANK};
use crate::error::Result;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// BPE-dropout state: the skip probability and a SplitMix64 generator.
pub struct Dropout {
    p: f64,
    state: u64,
}

impl Dropout {
    pub fn new(p: f64, seed: u64) -> Self {
        Dropout { p, state: seed ^ 0x9E37_79B9_7F4A_7C15 }
    }
    #[inline]
    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// True with probability p.
    #[inline]
    fn drop(&mut self) -> bool {
        if self.p <= 0.0 {
            return false;
        }
        if self.p >= 1.0 {
            return true;
        }
        ((self.next() >> 11) as f64) * (1.0 / (1u64 << 53) as f64) < self.p
    }
}

impl Encoder {
    /// BPE-dropout (Provilkov et al., 2020): at every step each applicable
    /// merge is skipped with probability p; the lowest-rank survivor (leftmost
    /// among equal ranks) is applied; when none survives, the piece is done.
    /// p = 0 is exact BPE; p = 1 leaves the base symbols.
    ///
    /// Implemented on a heap over a linked list: candidates are popped in
    /// rank order and each is skipped with probability p (set aside until a
    /// merge succeeds), which draws from the same distribution as dropping
    /// every applicable merge independently, in O(n log n) per piece
    /// instead of O(n^2) (a 20,000-character word took 1.65 s before).
    pub(super) fn bpe_dropout(&self, syms: &mut Vec<u32>, d: &mut Dropout) {
        let n = syms.len();
        if n < 2 {
            return;
        }
        let mut next: Vec<u32> = (1..=n as u32).collect();
        let mut prev: Vec<u32> = (0..n as u32).map(|i| i.wrapping_sub(1)).collect();
        next[n - 1] = u32::MAX;
        let mut alive = vec![true; n];
        let mut heap: BinaryHeap<Reverse<(u32, u32, u32, u32)>> = BinaryHeap::new();
        for i in 0..n - 1 {
            let (rank, _) = self.rank(syms[i], syms[i + 1]);
            if rank != NO_RANK {
                heap.push(Reverse((rank, i as u32, syms[i], syms[i + 1])));
            }
        }
        let valid = |e: &(u32, u32, u32, u32), syms: &[u32], next: &[u32], alive: &[bool]| {
            let (_, i, a, b) = *e;
            let iu = i as usize;
            alive[iu] && syms[iu] == a && next[iu] != u32::MAX && syms[next[iu] as usize] == b
        };
        let mut skipped: Vec<(u32, u32, u32, u32)> = Vec::new();
        loop {
            // Find the best surviving candidate of this step.
            let chosen = loop {
                match heap.pop() {
                    None => break None,
                    Some(Reverse(e)) => {
                        if !valid(&e, syms, &next, &alive) {
                            continue;
                        }
                        if d.drop() {
                            skipped.push(e);
                            continue;
                        }
                        break Some(e);
                    }
                }
            };
            let Some((_, i, a, b)) = chosen else { break };
            self.merge_at(i, a, b, syms, &mut next, &mut prev, &mut alive, &mut heap);
            // Skipped merges are candidates again at the next step.
            heap.extend(skipped.drain(..).map(Reverse));
        }
        let mut out = Vec::with_capacity(n);
        let mut i = 0u32;
        while i != u32::MAX {
            out.push(syms[i as usize]);
            i = next[i as usize];
        }
        *syms = out;
    }

    /// Encodes with BPE-dropout probability `p`, reproducibly from `seed`.
    pub fn encode_dropout(&self, text: &[u8], specials: &Specials, p: f64, seed: u64) -> Result<Vec<u32>> {
        let mut out = Vec::with_capacity(text.len() / 3 + 1);
        let mut d = Dropout::new(p, seed);
        self.encode_with(text, specials, &mut out, &mut Merging::Dropout(&mut d))?;
        Ok(out)
    }
}
