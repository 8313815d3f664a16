//! The word-count table (`WordCounts`): inline short and mid keys in
//! `table`'s open-addressing tables, long keys in a hash map; adding,
//! visiting, merging, scaling and pruning counts.

use super::table::{keyed, mid_key_bytes, Batch, Entry, Keyed, MidSlot, MidTable, ShortTable, Slot};
use crate::memory::budget::Dropped;
use crate::count_stats::CountStats;
use crate::util::{new_map, Map};

/// Word types (raw pre-token bytes) and their counts.
///
/// Pre-tokens of up to 15 bytes (the great majority in every language we
/// measured) are keys of their own: 16 bytes inline in the table, so a probe
/// never leaves the table and equality is two integer compares. Splitting
/// the map this way cut counting time on multi-200k by about a third (the
/// boxed-key probe was a cache miss per pre-token). Pre-tokens of 16..=31
/// bytes are inline 32-byte keys in a second table (`mid`), and only longer
/// ones are boxed.
#[derive(Debug)]
pub struct WordCounts {
    pub(super) short: ShortTable,
    pub(super) mid: MidTable,
    pub(super) long: Map<Box<[u8]>, u64>,
    pub stats: CountStats,
    /// SuperBPE: the stage-2 units of the same texts, counted in the same pass.
    pub superword: Option<Box<WordCounts>>,
    /// What keeping to the memory budget took while counting.
    pub memory: CountMemory,
}

/// Spilling and pruning done while counting (`count_parallel` with limits).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CountMemory {
    /// Sorted runs written to disk, and their bytes.
    pub spill_runs: usize,
    pub spill_bytes: u64,
    /// Word types dropped when the merged runs did not fit the budget.
    pub dropped: Option<Dropped>,
    /// Word types of the runs not in the table (below the `min_word_count`
    /// the merged runs were built with, the asked one included).
    pub types_left_out: u64,
}


/// `WordCounts` while counting: inline keys go through a `Batch` each, long
/// ones straight into the map. Borrowing the counts mutably means nobody can
/// read them while keys are still in flight.
pub struct Adder<'a> {
    short: Batch<'a, Slot>,
    mid: Batch<'a, MidSlot>,
    long: &'a mut Map<Box<[u8]>, u64>,
    pub(super) stats: &'a mut CountStats,
    pub(super) superword: Option<&'a mut WordCounts>,
}

impl Adder<'_> {
    #[inline]
    pub(super) fn add(&mut self, piece: &[u8], n: u64) {
        match keyed(piece) {
            Keyed::Short(key) => self.short.push(key, n),
            Keyed::Mid(key) => self.mid.push(key, n),
            Keyed::Long(piece) => *self.long.entry_ref(piece).or_insert(0) += n,
        }
    }

    /// `WordCounts::add_tagged` through the pipeline.
    #[inline]
    pub(super) fn add_tagged(&mut self, language: u16, piece: &[u8], n: u64) {
        with_tag(language, piece, |key| self.add(key, n))
    }
}

/// Calls `f` with the key `add_tagged` uses: the language id (2 bytes,
/// little-endian) followed by the piece.
#[inline]
fn with_tag(language: u16, piece: &[u8], f: impl FnOnce(&[u8])) {
    let mut buf = [0u8; 64];
    if piece.len() + 2 <= buf.len() {
        buf[..2].copy_from_slice(&language.to_le_bytes());
        buf[2..piece.len() + 2].copy_from_slice(piece);
        f(&buf[..piece.len() + 2]);
    } else {
        let mut key = Vec::with_capacity(piece.len() + 2);
        key.extend_from_slice(&language.to_le_bytes());
        key.extend_from_slice(piece);
        f(&key);
    }
}

impl Default for WordCounts {
    fn default() -> Self {
        Self::new()
    }
}

impl WordCounts {
    pub fn new() -> Self {
        WordCounts {
            short: ShortTable::with_capacity(0),
            mid: MidTable::with_capacity(0),
            long: new_map(),
            stats: CountStats::default(),
            superword: None,
            memory: CountMemory::default(),
        }
    }

    /// Number of distinct word types.
    pub fn len(&self) -> usize {
        self.short.len + self.mid.len + self.long.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds `n` occurrences of `piece`.
    #[inline]
    pub fn add(&mut self, piece: &[u8], n: u64) {
        match keyed(piece) {
            Keyed::Short(key) => self.short.add_one(key, n),
            Keyed::Mid(key) => self.mid.add_one(key, n),
            Keyed::Long(piece) => *self.long.entry_ref(piece).or_insert(0) += n,
        }
    }

    /// Adds `n` occurrences of `piece` in language `language`: the key is the
    /// language id (2 bytes, little-endian) followed by the piece. A table
    /// of such keys holds each language's own counts (`split_tag`).
    #[inline]
    pub fn add_tagged(&mut self, language: u16, piece: &[u8], n: u64) {
        with_tag(language, piece, |key| self.add(key, n))
    }

    /// The language and the piece of a key made by `add_tagged` (a key
    /// shorter than a tag reads as language 0).
    #[inline]
    pub fn split_tag(key: &[u8]) -> (u16, &[u8]) {
        match key {
            [a, b, rest @ ..] => (u16::from_le_bytes([*a, *b]), rest),
            _ => (0, key),
        }
    }

    /// A pipelined adder for many pieces (see `Batch`).
    pub(super) fn adder(&mut self) -> Adder<'_> {
        Adder {
            short: Batch::on_table(&mut self.short),
            mid: Batch::on_table(&mut self.mid),
            long: &mut self.long,
            stats: &mut self.stats,
            superword: self.superword.as_deref_mut(),
        }
    }

    /// Calls `f(bytes, count)` for every word type (in no particular order).
    pub fn for_each(&self, mut f: impl FnMut(&[u8], u64)) {
        for (k, v) in self.short.iter() {
            let b = k.to_le_bytes();
            f(&b[..b[15] as usize], v);
        }
        self.for_each_longer(f);
    }

    /// `for_each` over the word types of over 15 bytes.
    pub(super) fn for_each_longer(&self, mut f: impl FnMut(&[u8], u64)) {
        for s in self.mid.entries() {
            f(mid_key_bytes(&s.key), s.count);
        }
        for (k, &v) in self.long.iter() {
            f(k, v);
        }
    }

    /// `for_each` over share `part` of `parts` (one per thread): a
    /// contiguous range of the short keys' slots and one of the mid keys'
    /// (see `share`); the long keys, few, go with the last share. The
    /// shares together visit every word type once.
    pub fn for_each_part(&self, part: usize, parts: usize, mut f: impl FnMut(&[u8], u64)) {
        for s in share(&self.short.slots, part, parts).iter().filter(|s| !s.is_empty()) {
            let b = s.key.to_le_bytes();
            f(&b[..b[15] as usize], s.count);
        }
        for s in share(&self.mid.slots, part, parts).iter().filter(|s| !s.is_empty()) {
            f(mid_key_bytes(&s.key), s.count);
        }
        if part + 1 == parts {
            for (k, &v) in self.long.iter() {
                f(k, v);
            }
        }
    }

    /// `for_each_part` for the last reader of the table: the pages of this
    /// share's slots are handed back behind the cursor (as `drain_each`
    /// does), so that building the word table on all threads does not hold
    /// the whole count table beside it. The table must not be read again,
    /// only dropped: the slots read are zero afterwards.
    pub fn drain_part(&self, part: usize, parts: usize, mut f: impl FnMut(&[u8], u64)) {
        drain_share(&self.short.slots, part, parts, |s| {
            let b = s.key.to_le_bytes();
            f(&b[..b[15] as usize], s.count);
        });
        drain_share(&self.mid.slots, part, parts, |s| f(mid_key_bytes(&s.key), s.count));
        if part + 1 == parts {
            for (k, &v) in self.long.iter() {
                f(k, v);
            }
        }
    }

    /// Every word type as `(key, count)`, borrowing the table: short keys
    /// are copied (16 bytes), longer ones point into it. Lets several threads
    /// share the word types without copying their bytes.
    pub fn entries(&self) -> (Vec<(u128, u64)>, Vec<(&[u8], u64)>) {
        let short = self.short.iter().collect();
        (short, self.longer_entries())
    }

    /// The word types of over 15 bytes, borrowing the table.
    pub(super) fn longer_entries(&self) -> Vec<(&[u8], u64)> {
        let mid = self.mid.entries().map(|s| (mid_key_bytes(&s.key), s.count));
        mid.chain(self.long.iter().map(|(k, &v)| (&k[..], v))).collect()
    }

    /// Adds `other` into `self` (the bigger tables absorb the smaller).
    pub fn merge(&mut self, mut other: WordCounts) {
        if other.short.len > self.short.len {
            std::mem::swap(&mut self.short, &mut other.short);
        }
        if other.long.len() > self.long.len() {
            std::mem::swap(&mut self.long, &mut other.long);
        }
        self.short.absorb(&other.short);
        drop(other.short);
        if other.mid.len > self.mid.len {
            std::mem::swap(&mut self.mid, &mut other.mid);
        }
        self.mid.absorb(&other.mid);
        drop(other.mid);
        self.long.reserve(other.long.len());
        for (k, v) in other.long.drain() {
            *self.long.entry(k).or_insert(0) += v;
        }
        self.stats.add(&other.stats);
        match (&mut self.superword, other.superword.take()) {
            (Some(mine), Some(theirs)) => mine.merge(*theirs),
            (None, Some(theirs)) => self.superword = Some(theirs),
            _ => {}
        }
    }
}

impl WordCounts {
    /// Divides every count by `scale` (rounding to nearest), never below 1:
    /// the last step of weighted counting, where weights were scaled integers.
    pub fn rescale(&mut self, scale: u64) {
        let f = |v: &mut u64| *v = ((*v + scale / 2) / scale).max(1);
        self.short.values_mut().for_each(f);
        self.mid.values_mut().for_each(f);
        self.long.values_mut().for_each(f);
        if let Some(s) = self.superword.as_deref_mut() {
            s.rescale(scale);
        }
    }

    /// Multiplies every count by `factor` (saturating): the first step of
    /// summing tables with weights (scaled integers; `rescale` ends it).
    pub fn multiply(&mut self, factor: u64) {
        let f = |v: &mut u64| *v = v.saturating_mul(factor);
        self.short.values_mut().for_each(f);
        self.mid.values_mut().for_each(f);
        self.long.values_mut().for_each(f);
        if let Some(s) = self.superword.as_deref_mut() {
            s.multiply(factor);
        }
    }

    /// Drops word types seen fewer than `min` times; returns how many.
    pub fn prune(&mut self, min: u64) -> usize {
        let before = self.len();
        self.short.retain(|v| v >= min);
        self.mid.retain(|v| v >= min);
        self.long.retain(|_, v| *v >= min);
        before - self.len()
    }

    /// Approximate heap bytes of the table (for reporting bytes per type).
    pub fn memory_bytes(&self) -> usize {
        let long = self.long.capacity() * (16 + 8 + 1) + self.long.keys().map(|k| k.len().max(16)).sum::<usize>();
        self.short.bytes() + self.mid.bytes() + long
    }
}

/// Share `part` of `parts` of a table's slots. Short and mid slots are
/// both shared out: on s10 the mid keys (16 to 31 bytes: most words of the
/// scripts of 2 or 3 bytes a character) were a third of the word types,
/// and the last share, which took all of them, did three quarters of the
/// word table's work on 2 threads.
fn share<S>(slots: &[S], part: usize, parts: usize) -> &[S] {
    let n = slots.len();
    &slots[n * part / parts..n * (part + 1) / parts]
}

/// `f` for every filled slot of share `part` of `parts`, handing the
/// pages read back block by block (see `WordCounts::drain_part`).
fn drain_share<S: Entry>(slots: &Vec<S>, part: usize, parts: usize, mut f: impl FnMut(&S)) {
    const BLOCK: usize = 1 << 16;
    let n = slots.len();
    let (from, to) = (n * part / parts, n * (part + 1) / parts);
    for start in (from..to).step_by(BLOCK) {
        let end = (start + BLOCK).min(to);
        for s in slots[start..end].iter().filter(|s| !s.is_empty()) {
            f(s);
        }
        // Only whole pages inside [start, end), which no other share reads.
        crate::memory::mem::release(slots, start, end);
    }
}
