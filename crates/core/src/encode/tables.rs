//! The encoder's two hot look-ups as flat open-addressing tables of `u64`
//! slots, so that a look-up touches one cache line.
//!
//! Profiles of `encode` on the real o200k_base vocabulary (held-apart
//! multilingual lines, where 4 pieces in 10 are not one token) spent most of
//! the merge time waiting on memory in `hashbrown` probes: a control-byte
//! group, then the bucket, then (for byte-string keys) the key's heap bytes.
//! Here a slot holds the whole key (pairs) or a 32-bit fingerprint (pieces)
//! next to the value, and the piece table is kept at most half full, so a
//! miss usually ends in the first line (the pair table, behind a filter,
//! packs tighter: see `dense_capacity`).
//!
//! The slots are `HugeTable`s: from 2 MiB up they sit on huge pages, so
//! that a look-up's TLB miss does not add a page walk to its cache miss.
//! Python per call, fresh processes alternating (16 pairs, medians): 8% less
//! time on o200k_base (2 MiB of pair slots, 4 MiB of piece slots), 2.5% on
//! cl100k_base, 7% on a 32k vocabulary, with the piece cache's slots
//! (`cache`) also on huge pages.

use super::key::PieceKey;
use crate::memory::mem::HugeTable;
use crate::util::prefetch;

const EMPTY: u64 = u64::MAX;

/// Slots for `n` entries: a power of two, at most half full.
fn capacity(n: usize) -> usize {
    (2 * n).next_power_of_two().max(16)
}

/// Slots for `n` entries: a power of two, at most four fifths full. For the
/// pair table, whose filter turns away nearly every pair that is no merge
/// (so few look-ups walk a long run to an empty slot): o200k_base's 200k
/// pairs take 2 MiB instead of 4, more of the pairs merging looks up stay
/// in the core's cache, and encoding held-apart lines one by one in Rust
/// (`examples/encode_lines`) took 6-9% less time (same process, the two
/// tables alternating, medians of 15); through Python's per-call path the
/// difference was within noise. The whole-piece table gained nothing from
/// the same change: most of its look-ups are misses, which it has no
/// filter for.
fn dense_capacity(n: usize) -> usize {
    (n + n / 4).next_power_of_two().max(16)
}

/// Token pair -> merge rank. A slot packs `left:21 | right:21 | rank:21`,
/// so it serves vocabularies of fewer than 2^21 - 1 ids (`new` says `None`
/// otherwise and the caller keeps its general map).
///
/// A dense table of the ranks of every pair of the first 1,024 ids (4 MiB,
/// one read for the pairs of bytes and early merges, as fastokens keeps)
/// in front of this one gained nothing on fresh o200k_base text through
/// Python (CPU-time medians 27.2, 29.1, 26.4 MB/s against 28.0, 27.9, 27.3).
pub(super) struct PairRanks {
    slots: HugeTable<u64>,
    mask: usize,
    /// A blocked Bloom filter of the pairs: two bits of one word per pair.
    /// Most look-ups of a merge loop are pairs that are no merge; at 8 bits
    /// a pair (~200 KB for o200k_base's 4 MB of slots) the filter stays in
    /// the core's own cache and turns ~19 in 20 of those away without a
    /// read of the table, which usually waits on memory.
    filter: Box<[u64]>,
    filter_mask: usize,
}

/// Slot bytes above which `PairRanks::prefetch_pays`.
const PREFETCH_MIN_BYTES: usize = 1 << 20;

/// Filter bits per pair.
const FILTER_BITS_PER_PAIR: usize = 8;

const FIELD_BITS: u32 = 21;
const FIELD: u64 = (1 << FIELD_BITS) - 1;

impl PairRanks {
    /// The table of `(left, right, rank)` triples; the first triple of a pair
    /// wins, as the merge list's first occurrence does.
    pub(super) fn new(pairs: &[(u32, u32, u32)]) -> Option<Self> {
        // All-ones fields are kept out so that no key equals EMPTY's.
        if pairs.iter().any(|&(a, b, r)| a as u64 >= FIELD || b as u64 >= FIELD || r as u64 >= FIELD) {
            return None;
        }
        let cap = dense_capacity(pairs.len());
        let words = (pairs.len() * FILTER_BITS_PER_PAIR / 64).next_power_of_two().max(1);
        let mut table = PairRanks {
            slots: HugeTable::filled(cap, EMPTY),
            mask: cap - 1,
            filter: vec![0; words].into_boxed_slice(),
            filter_mask: words - 1,
        };
        for &(a, b, r) in pairs {
            let key = Self::key(a, b);
            let (w, bits) = Self::filter_bits(key);
            table.filter[w & table.filter_mask] |= bits;
            let mut i = Self::home(key, table.mask);
            loop {
                let slot = table.slots[i];
                if slot == EMPTY {
                    table.slots[i] = key << FIELD_BITS | r as u64;
                    break;
                }
                if slot >> FIELD_BITS == key {
                    break;
                }
                i = (i + 1) & table.mask;
            }
        }
        Some(table)
    }

    #[inline]
    fn key(a: u32, b: u32) -> u64 {
        (a as u64) << FIELD_BITS | b as u64
    }

    #[inline]
    fn home(key: u64, mask: usize) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize & mask
    }

    /// The filter word of a pair, and its two bits there.
    #[inline]
    fn filter_bits(key: u64) -> (usize, u64) {
        let h = key.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
        let h = h ^ (h >> 29);
        ((h >> 40) as usize, 1u64 << (h & 63) | 1u64 << ((h >> 6) & 63))
    }

    /// Whether the pair may be in the table (false: it certainly is not).
    #[inline]
    fn may_hold(&self, key: u64) -> bool {
        let (w, bits) = Self::filter_bits(key);
        self.filter[w & self.filter_mask] & bits == bits
    }

    /// Whether the table is too large to stay in a core's own cache, so that
    /// fetching slots ahead of their look-ups (`Self::prefetch`) pays: above 1 MiB
    /// of slots (o200k_base's 2 MiB, 10-12% less time merging held-apart
    /// lines), not at 1 MiB (cl100k_base, 1% more) or 512 KiB (a 32k
    /// vocabulary, 3% more).
    #[inline]
    pub(super) fn prefetch_pays(&self) -> bool {
        std::mem::size_of_val(&*self.slots) > PREFETCH_MIN_BYTES
    }

    /// Starts loading the home slot of the pair `(a, b)`.
    /// Not its filter word: fetching that too took more time than it saved.
    #[inline]
    pub(super) fn prefetch(&self, a: u32, b: u32) {
        prefetch(&self.slots, Self::home(Self::key(a, b), self.mask));
    }

    /// The rank of the pair `(a, b)`, or `None`.
    #[inline]
    pub(super) fn get(&self, a: u32, b: u32) -> Option<u32> {
        let key = Self::key(a, b);
        if !self.may_hold(key) {
            return None;
        }
        let i = Self::home(key, self.mask);
        self.probe(key, i, self.slots[i])
    }

    /// The ranks of two pairs, their home slots read before either is
    /// examined. A merge asks for the pairs on both sides of the new token;
    /// each read usually waits on memory, and a branch on the first slot's
    /// contents (mispredicted, it discards the work after it) would
    /// otherwise hold back the second read until the first had arrived.
    #[inline]
    pub(super) fn get2(&self, (a, b): (u32, u32), (c, d): (u32, u32)) -> (Option<u32>, Option<u32>) {
        let (k1, k2) = (Self::key(a, b), Self::key(c, d));
        let (i1, i2) = (Self::home(k1, self.mask), Self::home(k2, self.mask));
        // A pair the filter turns away reads as an empty slot (no key matches it).
        let s1 = if self.may_hold(k1) { self.slots[i1] } else { EMPTY };
        let s2 = if self.may_hold(k2) { self.slots[i2] } else { EMPTY };
        (self.probe(k1, i1, s1), self.probe(k2, i2, s2))
    }

    /// Finishes a look-up of `key` whose home slot `i` held `slot`.
    #[inline]
    fn probe(&self, key: u64, mut i: usize, mut slot: u64) -> Option<u32> {
        loop {
            if slot >> FIELD_BITS == key {
                return Some((slot & FIELD) as u32);
            }
            if slot == EMPTY {
                return None;
            }
            i = (i + 1) & self.mask;
            slot = self.slots[i];
        }
    }
}

/// Byte string -> id, for the pieces that are one token. A slot packs a
/// 32-bit fingerprint of the bytes with the id; the bytes themselves are
/// compared (in the caller's token arena) only when the fingerprint matches.
/// Keyed by `PieceKey::hash`, which the caller makes once per piece.
pub(super) struct PieceIds {
    slots: HugeTable<u64>,
    mask: usize,
}

impl PieceIds {
    /// The table of `(bytes, id)` entries (ids below `u32::MAX`; each bytes once).
    pub(super) fn new<'a>(entries: impl ExactSizeIterator<Item = (&'a [u8], u32)>) -> Self {
        let cap = capacity(entries.len());
        let mut table = PieceIds { slots: HugeTable::filled(cap, EMPTY), mask: cap - 1 };
        for (bytes, id) in entries {
            let (mut i, tag) = table.place(&PieceKey::new(bytes));
            while table.slots[i] != EMPTY {
                i = (i + 1) & table.mask;
            }
            table.slots[i] = tag << 32 | id as u64;
        }
        table
    }

    /// Home slot and fingerprint of a piece.
    #[inline]
    fn place(&self, key: &PieceKey) -> (usize, u64) {
        ((key.hash >> 32) as usize & self.mask, key.hash & 0xFFFF_FFFF)
    }

    /// Starts loading the home slot of a piece (see `encode_normalized`).
    #[inline]
    pub(super) fn prefetch(&self, key: &PieceKey) {
        prefetch(&self.slots, self.place(key).0);
    }

    /// The id of `bytes` (whose key is `key`), where `bytes_of(id)` gives an id's bytes.
    #[inline]
    pub(super) fn get<'t>(&self, bytes: &[u8], key: &PieceKey, bytes_of: impl Fn(u32) -> &'t [u8]) -> Option<u32> {
        let (mut i, tag) = self.place(key);
        loop {
            let slot = self.slots[i];
            if slot == EMPTY {
                return None;
            }
            if slot >> 32 == tag && bytes_of(slot as u32) == bytes {
                return Some(slot as u32);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// The ids in the table, in slot order.
    pub(super) fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.slots.iter().filter(|&&slot| slot != EMPTY).map(|&slot| slot as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_ranks_find_every_pair_and_no_other() {
        let pairs: Vec<(u32, u32, u32)> = (0..5000u32).map(|k| (k % 300, (k * 7919) % 4000, k)).collect();
        let table = PairRanks::new(&pairs).unwrap();
        let mut first = std::collections::HashMap::new();
        for &(a, b, r) in &pairs {
            first.entry((a, b)).or_insert(r);
        }
        for (&(a, b), &r) in &first {
            assert_eq!(table.get(a, b), Some(r));
            assert_eq!(table.get2((a, b), (a, 4000)), (Some(r), None));
            assert_eq!(table.get2((a, 4001), (a, b)), (None, Some(r)));
        }
        for a in 0..300 {
            for b in [4000, 4001, 123_456] {
                assert_eq!(table.get(a, b), None);
            }
        }
        assert!(PairRanks::new(&[(0, FIELD as u32, 0)]).is_none());
        // The filter passes every pair and turns most others away.
        assert!(pairs.iter().all(|&(a, b, _)| table.may_hold(PairRanks::key(a, b))));
        let passed = (0..100_000u32).filter(|&k| table.may_hold(PairRanks::key(5000 + k % 1000, k))).count();
        assert!(passed < 15_000, "{passed} of 100000 non-pairs passed the filter");
    }

    #[test]
    fn piece_ids_find_every_piece_and_no_other() {
        let words: Vec<Vec<u8>> = (0..3000u32).map(|k| format!("w{k}").into_bytes()).collect();
        let table = PieceIds::new(words.iter().enumerate().map(|(i, w)| (w.as_slice(), i as u32)));
        let get = |w: &[u8]| table.get(w, &PieceKey::new(w), |id| &words[id as usize]);
        for (i, w) in words.iter().enumerate() {
            assert_eq!(get(w), Some(i as u32));
        }
        for k in 3000..4000u32 {
            assert_eq!(get(format!("w{k}").as_bytes()), None);
        }
        assert_eq!(get(b""), None);
    }
}
