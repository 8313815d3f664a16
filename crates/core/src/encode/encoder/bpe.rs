//! Exact BPE of one piece: the lowest-ranked pair merges first (leftmost
//! among equals) until none applies. Pieces of up to `SHORT` symbols use a
//! flat array with a linear scan; longer ones a heap over a linked list.

use crate::encode::key::PieceKey;
use crate::encode::tables::PairRanks;
use crate::encode::{Cache, Encoder, NO_RANK, SHORT};
use crate::util::pack;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

impl Encoder {
    /// Applies the model's merges to internal symbol ids in place (exact BPE).
    pub fn apply_merges(&self, syms: &mut Vec<u32>) {
        self.bpe(syms)
    }

    /// Bytes scheme: which adjacent byte pairs `(x, y)` occur inside some
    /// merged token (index `x * 256 + y`). Where a text has a pair that is
    /// not in this set, no merge can ever join the symbols on its two sides,
    /// so the two sides encode independently: exact BPE of the whole equals
    /// the concatenation of the parts' (see `encode_bytes_split`).
    pub fn joinable_byte_pairs(&self) -> Vec<bool> {
        let mut inside = vec![false; 1 << 16];
        let first = self.model.special_tokens.len() + self.model.base_len();
        for id in first..self.raw.len() {
            for w in self.raw.get(id).windows(2) {
                inside[(w[0] as usize) << 8 | w[1] as usize] = true;
            }
        }
        inside
    }

    /// Bytes scheme: exact BPE of the base symbols of `bytes`, appended to
    /// `out` as internal ids. The text is cut wherever the byte pair at the
    /// cut is not in `joinable` (from `joinable_byte_pairs`) and the parts
    /// are encoded one by one; the result is the same as encoding the whole,
    /// in a fraction of the time for long texts (the short-piece path is
    /// quadratic). A part is looked up in `cache` first (the same parts
    /// recur in many texts), then whole, and is merged afresh only if both
    /// miss; what it gives is stored in `cache`. As in `encode_run`, each
    /// part is encoded `LOOKAHEAD` parts after it is cut, its cache slot
    /// prefetched when it is cut, so that the look-ups' waits on memory
    /// overlap.
    pub fn encode_bytes_split(
        &self,
        bytes: &[u8],
        joinable: &[bool],
        out: &mut Vec<u32>,
        scratch: &mut Vec<u32>,
        cache: &mut Cache,
    ) {
        const LOOKAHEAD: usize = 8;
        let mut part = |p: &[u8], key: &PieceKey, cache: &mut Cache, out: &mut Vec<u32>| {
            if p.len() == 1 {
                out.push(self.base_start + p[0] as u32);
                return;
            }
            if let Some(ids) = cache.get(key, p) {
                out.extend_from_slice(ids);
                return;
            }
            let start = out.len();
            if let Some(id) = self.whole_piece(p, key) {
                out.push(id);
            } else if p.len() <= SHORT && !self.byte_pair_ranks.is_empty() {
                self.bpe_bytes_short(p, out);
            } else {
                scratch.clear();
                scratch.extend(p.iter().map(|&b| self.base_start + b as u32));
                self.bpe(scratch);
                out.extend_from_slice(scratch);
            }
            cache.put(key, p, &out[start..]);
        };
        let mut waiting: [(&[u8], PieceKey); LOOKAHEAD] = [(&[], PieceKey::new(&[])); LOOKAHEAD];
        let mut given = 0usize;
        for p in unjoinable_cuts(bytes, joinable) {
            let key = PieceKey::new(p);
            if p.len() > 1 {
                cache.prefetch(&key);
            }
            let slot = given % LOOKAHEAD;
            if given >= LOOKAHEAD {
                let (p, k) = &waiting[slot];
                part(p, k, cache, out);
            }
            waiting[slot] = (p, key);
            given += 1;
        }
        for k in given.saturating_sub(LOOKAHEAD)..given {
            let (p, key) = &waiting[k % LOOKAHEAD];
            part(p, key, cache, out);
        }
    }

    /// Applies merges by rank to `syms` in place.
    pub(super) fn bpe(&self, syms: &mut Vec<u32>) {
        if syms.len() < 2 {
            return;
        }
        if syms.len() <= SHORT {
            self.bpe_short(syms)
        } else {
            self.bpe_long(syms)
        }
    }

    /// The rank of merging `(a, b)` and the id it makes; `(NO_RANK, 0)` if none.
    #[inline]
    pub(in crate::encode) fn rank(&self, a: u32, b: u32) -> (u32, u32) {
        match &self.pair_table {
            Some(t) => t.get(a, b).map_or((NO_RANK, 0), |r| (r, self.first_merge + r)),
            None => self.ranks.get(&pack(a, b)).copied().unwrap_or((NO_RANK, 0)),
        }
    }

    pub(super) fn bpe_short(&self, syms: &mut Vec<u32>) {
        let mut r: Vec<(u32, u32)> = syms.windows(2).map(|w| self.rank(w[0], w[1])).collect();
        loop {
            let mut best = NO_RANK;
            let mut at = 0;
            for (i, &(rank, _)) in r.iter().enumerate() {
                if rank < best {
                    best = rank;
                    at = i;
                }
            }
            if best == NO_RANK {
                break;
            }
            syms[at] = r[at].1;
            syms.remove(at + 1);
            r.remove(at);
            if at < r.len() {
                r[at] = self.rank(syms[at], syms[at + 1]);
            }
            if at > 0 {
                r[at - 1] = self.rank(syms[at - 1], syms[at]);
            }
        }
    }

    /// Exact BPE of a bytes-scheme piece of 2..=SHORT bytes, appended to
    /// `out`: `bpe_short` on stack arrays (no allocation), with the first
    /// pass's ranks read from `byte_pair_ranks`. Same merges, same order.
    /// Most such pieces are short: their arrays are a quarter of the size,
    /// since initialising two arrays of SHORT took a tenth of this time.
    pub(super) fn bpe_bytes_short(&self, piece: &[u8], out: &mut Vec<u32>) {
        if piece.len() <= SHORT / 4 {
            self.bpe_bytes_within::<{ SHORT / 4 + LANE }>(piece, out)
        } else {
            self.bpe_bytes_within::<{ SHORT + LANE }>(piece, out)
        }
    }

    /// `bpe_bytes_short` for pieces of 2..=N - LANE bytes (the arrays have
    /// `LANE` spare elements for `remove_at`).
    fn bpe_bytes_within<const N: usize>(&self, piece: &[u8], out: &mut Vec<u32>) {
        let mut len = piece.len();
        debug_assert!((2..=N - LANE).contains(&len));
        let mut syms = [0u32; N];
        let mut ranks = [NO_RANK; N];
        for (i, &b) in piece.iter().enumerate() {
            syms[i] = self.base_start + b as u32;
        }
        for (i, w) in piece.windows(2).enumerate() {
            ranks[i] = self.byte_pair_ranks[(w[0] as usize) << 8 | w[1] as usize];
        }
        let ahead = self.pair_table.as_ref().filter(|t| t.prefetch_pays());
        if let Some(table) = ahead {
            for (i, &rank) in ranks[..len - 1].iter().enumerate() {
                if rank != NO_RANK {
                    prefetch_next_pairs(table, &syms[..len], i, self.first_merge + rank);
                }
            }
        }
        loop {
            // The lowest rank, leftmost among equals (ranks[..len - 1] are live).
            let mut best = NO_RANK;
            let mut at = 0;
            for (i, &rank) in ranks[..len - 1].iter().enumerate() {
                if rank < best {
                    best = rank;
                    at = i;
                }
            }
            if best == NO_RANK {
                break;
            }
            syms[at] = self.first_merge + best;
            remove_at(&mut syms, at + 1, len);
            remove_at(&mut ranks, at, len - 1);
            len -= 1;
            // The pairs on both sides of the new token, read together.
            match (&self.pair_table, at > 0, at + 1 < len) {
                (Some(table), true, true) => {
                    let (left, right) = table.get2((syms[at - 1], syms[at]), (syms[at], syms[at + 1]));
                    ranks[at - 1] = left.unwrap_or(NO_RANK);
                    ranks[at] = right.unwrap_or(NO_RANK);
                    if ahead.is_some() {
                        if let Some(rank) = left {
                            prefetch_next_pairs(table, &syms[..len], at - 1, self.first_merge + rank);
                        }
                        if let Some(rank) = right {
                            prefetch_next_pairs(table, &syms[..len], at, self.first_merge + rank);
                        }
                    }
                }
                _ => {
                    if at + 1 < len {
                        ranks[at] = self.rank(syms[at], syms[at + 1]).0;
                    }
                    if at > 0 {
                        ranks[at - 1] = self.rank(syms[at - 1], syms[at]).0;
                    }
                }
            }
        }
        out.extend_from_slice(&syms[..len]);
    }

    /// Merges the pair `(a, b)` starting at node `i` of the linked list and
    /// queues the two new neighbour pairs (shared by exact BPE and dropout).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(in crate::encode) fn merge_at(
        &self,
        i: u32,
        a: u32,
        b: u32,
        syms: &mut [u32],
        next: &mut [u32],
        prev: &mut [u32],
        alive: &mut [bool],
        heap: &mut BinaryHeap<Reverse<(u32, u32, u32, u32)>>,
    ) {
        let iu = i as usize;
        let j = next[iu];
        let (_, new_id) = self.rank(a, b);
        syms[iu] = new_id;
        alive[j as usize] = false;
        let nj = next[j as usize];
        next[iu] = nj;
        if nj != u32::MAX {
            prev[nj as usize] = i;
            let (r2, _) = self.rank(new_id, syms[nj as usize]);
            if r2 != NO_RANK {
                heap.push(Reverse((r2, i, new_id, syms[nj as usize])));
            }
        }
        let p = prev[iu];
        if p != u32::MAX {
            let (r2, _) = self.rank(syms[p as usize], new_id);
            if r2 != NO_RANK {
                heap.push(Reverse((r2, p, syms[p as usize], new_id)));
            }
        }
    }

    pub(super) fn bpe_long(&self, syms: &mut Vec<u32>) {
        let n = syms.len();
        let mut next: Vec<u32> = (1..=n as u32).collect();
        let mut prev: Vec<u32> = (0..n as u32).map(|i| i.wrapping_sub(1)).collect();
        next[n - 1] = u32::MAX;
        let mut heap: BinaryHeap<Reverse<(u32, u32, u32, u32)>> = BinaryHeap::new();
        // (rank, left position, left symbol, right symbol)
        for i in 0..n - 1 {
            let (rank, _) = self.rank(syms[i], syms[i + 1]);
            if rank != NO_RANK {
                heap.push(Reverse((rank, i as u32, syms[i], syms[i + 1])));
            }
        }
        let mut alive = vec![true; n];
        while let Some(Reverse((_, i, a, b))) = heap.pop() {
            let iu = i as usize;
            if !alive[iu] || syms[iu] != a {
                continue;
            }
            let j = next[iu];
            if j == u32::MAX || syms[j as usize] != b {
                continue;
            }
            self.merge_at(i, a, b, syms, &mut next, &mut prev, &mut alive, &mut heap);
        }
        let mut out = Vec::with_capacity(n);
        let mut i = 0u32;
        while i != u32::MAX {
            out.push(syms[i as usize]);
            i = next[i as usize];
        }
        *syms = out;
    }
}

/// Elements `remove_at` moves at a time.
const LANE: usize = 8;

/// Starts loading the pair-table entries of the two pairs that merging
/// `syms[i]` and `syms[i + 1]` into `merged` would make with its neighbours.
///
/// A merge waits on those look-ups: the table (megabytes) is mostly out of
/// the core's caches by the time a piece is merged, as the piece tables'
/// look-ups for the pieces around it pass through them. Fetched when the
/// pair's rank is first known, the entries of every pair that may merge
/// next are on their way together, and the merges that do happen find most
/// of theirs loaded. Whether a pair merges is not known yet: some of these
/// loads are for nothing. Encoding 50,000 held-apart lines one by one in
/// Rust with o200k_base (fresh caches, alternating, medians of 20-30)
/// took 10-12% less time with these fetches: about half from those made
/// when a piece's byte pairs are ranked, the rest from those made after
/// each merge. Fetching also for merges at a piece's ends gained nothing,
/// and fetching the byte-pair ranks of every piece as it is split cost
/// more than it saved. Smaller tables gain nothing (`prefetch_pays`).
#[inline(always)]
fn prefetch_next_pairs(table: &PairRanks, syms: &[u32], i: usize, merged: u32) {
    if i > 0 {
        table.prefetch(syms[i - 1], merged);
    }
    if let Some(&right) = syms.get(i + 2) {
        table.prefetch(merged, right);
    }
}

/// Removes `a[at]` of the live `a[..len]`, moving the rest down by one,
/// `LANE` elements at a time (whatever follows `len - 1` is left undefined;
/// `len + LANE <= N`). `copy_within` called `memmove` for a few bytes, twice
/// per merge: 7% of `encode`; a lane is one vector load and store.
#[inline(always)]
fn remove_at<const N: usize>(a: &mut [u32; N], at: usize, len: usize) {
    let mut i = at;
    while i + 1 < len {
        let lane: [u32; LANE] = std::array::from_fn(|k| a[i + 1 + k]);
        a[i..i + LANE].copy_from_slice(&lane);
        i += LANE;
    }
}

/// The parts of `bytes` between the byte pairs that `joinable` says no
/// token holds (see `Encoder::joinable_byte_pairs`).
fn unjoinable_cuts<'a>(bytes: &'a [u8], joinable: &'a [bool]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let mut start = 0;
    (1..=bytes.len()).filter_map(move |i| {
        let end = i == bytes.len();
        if end || !joinable[(bytes[i - 1] as usize) << 8 | bytes[i] as usize] {
            let part = &bytes[start..i];
            start = i;
            return Some(part);
        }
        None
    })
}
