//! Counting word types: texts -> special-token split -> pre-tokens -> counts.
//!
//! (Over 600 lines: the word-count table and the parallel counter are one
//! tuned unit, and they are read together. The inline-key tables and their
//! prefetching batch are in `table`.)
//!
//! Counting is the embarrassingly parallel half of training. The caller feeds
//! chunks (from files or from Python); `threads` workers each count into a
//! private hash map, and the maps are summed at the end. Sums commute, so the
//! counts (and hence the trained model) never depend on the thread count.
//!
//! Performance notes:
//! * Keys are the raw bytes of each pre-token, inline up to 31 bytes (see
//!   `WordCounts`); longer ones are probed with a borrowed slice
//!   (`entry_ref`), so only the first occurrence of a type allocates.
//! * Inline keys live in our own open-addressing tables (`table::Table`) so
//!   that each key's slot can be prefetched 16 pre-tokens before it is
//!   updated (`table::Batch`): on multi-1m the table is far larger than the
//!   caches and a probe was a cache miss per pre-token. Their memory asks
//!   for huge pages (`mem.rs`).
//! * Keys over 31 bytes (0.4% of multi-1m's pre-tokens): hashbrown with
//!   foldhash (fast on byte strings, fixed seed, so runs are reproducible).
//! * Each counting thread owns its regex cache (`Scratch`).
//! * With `threads == 1` the caller's thread counts inline; no channel.

use crate::error::{Error, Result};
use crate::fields::OnBadRecord;
use crate::input::{Chunk, Layout};
use std::borrow::Cow;
use crate::pretok::{utf8_runs, PreTokCache, PreTokenizer, Segment, SpecialSplitter};
use std::sync::atomic::{AtomicBool, Ordering};
use crate::budget::{CountBudget, CountHistogram, Dropped};
use crate::spill::{RunKey, SpillDir};
use crate::util::{new_map, Map};
use std::sync::Mutex;

mod partitioned;
mod table;
use partitioned::Shared;
use table::{keyed, mid_key_bytes, Batch, Keyed, MidSlot, MidTable, ShortTable, Slot};
pub use table::short_key_bytes;

/// What counting saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CountStats {
    /// Bytes of text (after decompression, without line terminators).
    pub bytes: u64,
    /// Number of texts (lines, records, items).
    pub texts: u64,
    /// Number of pre-tokens (word occurrences).
    pub pieces: u64,
    /// Occurrences of special tokens (not trained on).
    pub specials: u64,
    /// Lines skipped for having no text where the fields mode says
    /// (`OnBadRecord::Skip`).
    pub bad_records: u64,
}

impl CountStats {
    fn add(&mut self, o: &CountStats) {
        self.bytes += o.bytes;
        self.texts += o.texts;
        self.pieces += o.pieces;
        self.specials += o.specials;
        self.bad_records += o.bad_records;
    }
}

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
    short: ShortTable,
    mid: MidTable,
    long: Map<Box<[u8]>, u64>,
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
    stats: &'a mut CountStats,
    superword: Option<&'a mut WordCounts>,
}

impl Adder<'_> {
    #[inline]
    fn add(&mut self, piece: &[u8], n: u64) {
        match keyed(piece) {
            Keyed::Short(key) => self.short.push(key, n),
            Keyed::Mid(key) => self.mid.push(key, n),
            Keyed::Long(piece) => *self.long.entry_ref(piece).or_insert(0) += n,
        }
    }

    /// `WordCounts::add_tagged` through the pipeline.
    #[inline]
    fn add_tagged(&mut self, language: u16, piece: &[u8], n: u64) {
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
    fn adder(&mut self) -> Adder<'_> {
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
    fn for_each_longer(&self, mut f: impl FnMut(&[u8], u64)) {
        for s in self.mid.entries() {
            f(mid_key_bytes(&s.key), s.count);
        }
        for (k, &v) in self.long.iter() {
            f(k, v);
        }
    }

    /// `for_each` over share `part` of `parts` (one per thread): the short
    /// keys' slots in contiguous ranges, the longer keys with the last share.
    /// The shares, in order, visit the word types in `for_each`'s order.
    pub fn for_each_part(&self, part: usize, parts: usize, mut f: impl FnMut(&[u8], u64)) {
        let n = self.short.slots.len();
        for s in self.short.slots[n * part / parts..n * (part + 1) / parts].iter().filter(|s| s.key != 0) {
            let b = s.key.to_le_bytes();
            f(&b[..b[15] as usize], s.count);
        }
        if part + 1 == parts {
            self.for_each_longer(f);
        }
    }

    /// `for_each_part` for the last reader of the table: the pages of this
    /// share's short slots are handed back behind the cursor (as
    /// `drain_each` does), so that building the word table on all threads
    /// does not hold the whole count table beside it. The table must not be
    /// read again, only dropped: the slots read are zero afterwards.
    pub fn drain_part(&self, part: usize, parts: usize, mut f: impl FnMut(&[u8], u64)) {
        const BLOCK: usize = 1 << 16;
        let n = self.short.slots.len();
        let (from, to) = (n * part / parts, n * (part + 1) / parts);
        for start in (from..to).step_by(BLOCK) {
            let end = (start + BLOCK).min(to);
            for s in self.short.slots[start..end].iter().filter(|s| s.key != 0) {
                let b = s.key.to_le_bytes();
                f(&b[..b[15] as usize], s.count);
            }
            // Only whole pages inside [start, end), which no other share reads.
            crate::mem::release(&self.short.slots, start, end);
        }
        if part + 1 == parts {
            self.for_each_longer(f);
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
    fn longer_entries(&self) -> Vec<(&[u8], u64)> {
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

/// Keeping counting within a memory budget: table sizes, spilling to
/// sorted runs, merging runs and thread tables with a low peak.
impl WordCounts {
    /// The table's memory, cheaply (long keys at an average allocation).
    pub fn table_bytes(&self) -> u64 {
        let long = self.long.capacity() * (16 + 8 + 1) + self.long.len() * 40;
        (self.short.bytes() + self.mid.bytes() + long) as u64 + self.superword.as_ref().map_or(0, |s| s.table_bytes())
    }

    /// Caps the inline tables' growth at `bytes` (with room for the one
    /// growth step, which holds the old and the new table): the short table
    /// alone may take it all, the mid table (a sixth of the types or fewer
    /// in the languages we measured) half of it.
    fn cap_table(&mut self, bytes: u64) {
        self.short.cap_bytes(bytes as usize);
        self.mid.cap_bytes(bytes as usize / 2);
        if let Some(s) = self.superword.as_deref_mut() {
            s.cap_table(bytes);
        }
    }

    fn over(&self, bytes: u64) -> bool {
        let full = |c: &WordCounts| c.short.full || c.mid.full;
        full(self) || self.superword.as_deref().is_some_and(full) || self.table_bytes() > bytes
    }

    /// Writes the table to `dirs` as a sorted run and empties it (its stats
    /// stay: they are summed apart from the runs).
    fn spill(&mut self, dirs: &SpillDirs) -> Result<()> {
        if let (Some(s), Some(d)) = (self.superword.as_deref_mut(), dirs.superword.as_ref()) {
            s.spill_to(d)?;
        }
        self.spill_to(&dirs.main)
    }

    fn spill_to(&mut self, dir: &SpillDir) -> Result<()> {
        let mut short = std::mem::replace(&mut self.short, ShortTable::with_capacity(0));
        let (max_slots, cap) = (short.max_slots, short.slots.len());
        let mut dense = short.into_dense();
        dense.sort_unstable_by_key(|s| s.key);
        let mut longer = self.longer_entries();
        longer.sort_unstable_by(|a, b| a.0.cmp(b.0));
        dir.write_run(dense.iter().map(|s| (s.key, s.count)), longer.into_iter())?;
        drop(dense);
        self.long.clear();
        // Fresh tables of the same sizes (their pages are faulted in again
        // as they fill, and the old ones' are freed now).
        short = ShortTable::with_capacity(cap);
        short.max_slots = max_slots;
        self.short = short;
        let mut mid = MidTable::with_capacity(self.mid.slots.len());
        mid.max_slots = self.mid.max_slots;
        self.mid = mid;
        Ok(())
    }

    /// Calls `f(bytes, count)` for every word type, consuming the table and
    /// freeing its memory behind the cursor: the word table being built
    /// from it grows as the counts shrink.
    pub fn drain_each(self, mut f: impl FnMut(&[u8], u64)) {
        let WordCounts { short, mid, long, .. } = self;
        let slots = short.slots;
        const BLOCK: usize = 1 << 16;
        for start in (0..slots.len()).step_by(BLOCK) {
            let end = (start + BLOCK).min(slots.len());
            for s in &slots[start..end] {
                if s.key != 0 {
                    let b = s.key.to_le_bytes();
                    f(&b[..b[15] as usize], s.count);
                }
            }
            crate::mem::release(&slots, start, end);
        }
        drop(slots);
        for s in mid.entries() {
            f(mid_key_bytes(&s.key), s.count);
        }
        drop(mid);
        for (k, v) in long {
            f(&k, v);
        }
    }

    /// Word types by count, for the budget's estimate.
    pub fn histogram(&self) -> CountHistogram {
        let mut h = CountHistogram::new();
        for (k, v) in self.short.iter() {
            h.add(k.to_le_bytes()[15] as usize, v);
        }
        self.for_each_longer(|k, v| h.add(k.len(), v));
        h
    }

    /// The sum of the runs in `dirs` (and of `stats`): types counted fewer
    /// than the count `choose_min` picks from the runs' histogram are left
    /// out (and recorded in `memory.dropped`); SuperBPE's units likewise,
    /// in the room the word types' table leaves.
    fn from_runs(dirs: &SpillDirs, stats: CountStats, superword_stats: Option<CountStats>, choose_min: Option<&ChooseMin>) -> Result<WordCounts> {
        let mut out = WordCounts::new();
        out.add_fitted_runs(&dirs.main, choose_min, 0)?;
        out.stats = stats;
        out.memory.spill_runs = dirs.main.run_count();
        out.memory.spill_bytes = dirs.main.bytes_written();
        if let (Some(d), Some(st)) = (dirs.superword.as_ref(), superword_stats) {
            let mut s = WordCounts::new();
            s.add_fitted_runs(d, choose_min, out.table_bytes())?;
            s.stats = st;
            s.memory.spill_runs = d.run_count();
            s.memory.spill_bytes = d.bytes_written();
            out.superword = Some(Box::new(s));
        }
        Ok(out)
    }

    /// Adds the merged runs of `dir`, the types counted at least as often as
    /// `choose_min` picks from their histogram (`held`: the bytes of tables
    /// already built beside this one), recording what that left out.
    fn add_fitted_runs(&mut self, dir: &SpillDir, choose_min: Option<&ChooseMin>, held: u64) -> Result<()> {
        let Some(choose) = choose_min else {
            return self.add_runs(dir, 1);
        };
        let mut h = CountHistogram::new();
        dir.merge(|k, v| h.add(run_key_len(k), v))?;
        let (chosen, dropped) = choose(&h, held)?;
        let kept = h.kept(chosen).0;
        self.short = ShortTable::with_capacity(kept as usize * 4 / 3 + 1);
        self.memory.dropped = dropped;
        self.memory.types_left_out = h.kept(1).0 - kept;
        self.add_runs(dir, chosen)
    }

    /// Adds the merged runs of `dir`, the types counted at least `min` times.
    fn add_runs(&mut self, dir: &SpillDir, min: u64) -> Result<()> {
        let WordCounts { short, mid, long, .. } = self;
        let (mut short, mut mid) = (Batch::on_table(short), Batch::on_table(mid));
        dir.merge(|k, v| match k {
            _ if v < min => {}
            RunKey::Short(k) => short.push(k, v),
            RunKey::Long(k) => match keyed(k) {
                Keyed::Short(k) => short.push(k, v),
                Keyed::Mid(k) => mid.push(k, v),
                Keyed::Long(k) => {
                    long.insert(k.into(), v);
                }
            },
        })
    }
}

fn run_key_len(k: RunKey) -> usize {
    match k {
        RunKey::Short(k) => k.to_le_bytes()[15] as usize,
        RunKey::Long(k) => k.len(),
    }
}

/// Picks the `min_word_count` for merged runs from their histogram and the
/// bytes of the tables already built beside them (SuperBPE's units come
/// after the word types), and what it drops beyond the one asked for.
pub type ChooseMin<'a> = dyn Fn(&CountHistogram, u64) -> Result<(u64, Option<Dropped>)> + Sync + 'a;

/// The memory limits of one counting (`count_parallel`).
pub struct CountLimits<'a> {
    pub budget: CountBudget,
    /// Final counts (not a part for a later sum): merged runs may drop the
    /// rarest types to fit, as this decides.
    pub choose_min: Option<&'a ChooseMin<'a>>,
}

/// Where the runs of a counting go: the word types and SuperBPE's units.
struct SpillDirs {
    main: SpillDir,
    superword: Option<SpillDir>,
}

/// Version 2 adds `bad_records` to the stats; version 1 is still read.
const COUNTS_MAGIC: &[u8; 8] = b"BPFCNT02";
const COUNTS_MAGIC_V1: &[u8; 8] = b"BPFCNT01";

impl WordCounts {
    /// A compact binary form (for sending counts between processes, e.g. Ray
    /// tasks): magic, 5 stats, the number of types, then `len u32, bytes,
    /// count u64` per type; then, for SuperBPE, the stage-2 table
    /// (`superword`) in the same form.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(56 + self.len() * 20);
        out.extend_from_slice(COUNTS_MAGIC);
        let s = &self.stats;
        for v in [s.bytes, s.texts, s.pieces, s.specials, s.bad_records, self.len() as u64] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        self.for_each(|k, v| {
            out.extend_from_slice(&(k.len() as u32).to_le_bytes());
            out.extend_from_slice(k);
            out.extend_from_slice(&v.to_le_bytes());
        });
        if let Some(units) = &self.superword {
            out.extend_from_slice(&units.to_bytes());
        }
        out
    }

    /// Reads `to_bytes` output, checking every length.
    pub fn from_bytes(data: &[u8]) -> Result<WordCounts> {
        let mut counts = WordCounts::new();
        counts.add_bytes(data, 1)?;
        Ok(counts)
    }

    /// Adds a table in `to_bytes` form, every count times `factor`
    /// (saturating), without building that table first: a running sum of
    /// many tables holds only itself and the bytes being added. On an error
    /// (data not from `to_bytes`) part of the table may have been added.
    pub fn add_bytes(&mut self, data: &[u8], factor: u64) -> Result<()> {
        let bad = || Error::input("word counts: the data is truncated or not from WordCounts::to_bytes");
        let v2 = data.get(..8) == Some(&COUNTS_MAGIC[..]);
        if data.len() < 48 || !(v2 || &data[..8] == COUNTS_MAGIC_V1) {
            return Err(bad());
        }
        let u64_at = |p: usize| -> Result<u64> {
            data.get(p..p + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]))).ok_or_else(bad)
        };
        let bad_records = if v2 { u64_at(40)? } else { 0 };
        self.stats.add(&CountStats { bytes: u64_at(8)?, texts: u64_at(16)?, pieces: u64_at(24)?, specials: u64_at(32)?, bad_records });
        let header = if v2 { 48 } else { 40 };
        let n = u64_at(header)?;
        let mut p = header + 8;
        let mut adder = self.adder();
        for _ in 0..n {
            let len = data.get(p..p + 4).map(|b| u32::from_le_bytes(b.try_into().unwrap_or([0; 4]))).ok_or_else(bad)? as usize;
            p += 4;
            let key = data.get(p..p + len).ok_or_else(bad)?;
            p += len;
            let v = u64_at(p)?;
            p += 8;
            adder.add(key, v.saturating_mul(factor));
        }
        drop(adder);
        if p < data.len() {
            self.superword.get_or_insert_with(Default::default).add_bytes(&data[p..], factor)?;
        }
        Ok(())
    }

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

/// Counts the pre-tokens of texts.
pub struct Counter<'a> {
    pub pretokenizer: &'a PreTokenizer,
    pub specials: &'a SpecialSplitter,
    /// Bytes scheme: invalid UTF-8 runs become pieces. Chars scheme: an error.
    pub allow_invalid_utf8: bool,
    /// SuperBPE: also count the stage-2 units (into `WordCounts::superword`).
    pub superword: Option<&'a PreTokenizer>,
    /// Language balancing: the integer weight of each language id (see
    /// `train::LanguageBalance`); chunks then carry a language per text.
    pub lang_weights: Option<&'a [u64]>,
    /// Parity balancing: key every piece by its text's language instead
    /// (`WordCounts::add_tagged`), so the weights can change after counting.
    pub tag_languages: bool,
    /// Chars scheme: SentencePiece's normalizer, applied to each text
    /// segment before pre-tokenizing (as encoding does).
    pub normalizer: Option<&'a crate::normalize::Normalizer>,
}

/// A counting thread's regex scratch space (see `PreTokenizer::split_with`).
pub struct Scratch {
    words: PreTokCache,
    superword: Option<PreTokCache>,
}

impl Counter<'_> {
    /// Scratch space for one counting thread.
    pub fn scratch(&self) -> Scratch {
        Scratch { words: self.pretokenizer.cache(), superword: self.superword.map(|p| p.cache()) }
    }

    /// Counts one text into `out`. `on_invalid` is called with the offset of
    /// the first invalid byte when invalid UTF-8 is not allowed.
    pub fn count_text(&self, text: &[u8], out: &mut WordCounts) -> std::result::Result<(), (usize, Option<Error>)> {
        self.count_weighted(text, 1, out)
    }

    /// Like `count_text`, each occurrence counting `weight`.
    pub fn count_weighted(&self, text: &[u8], weight: u64, out: &mut WordCounts) -> std::result::Result<(), (usize, Option<Error>)> {
        self.count_into(text, None, weight, None, &mut out.adder(), &mut self.scratch())
    }

    /// Counts one text with every piece keyed by `language` (see
    /// `WordCounts::add_tagged`), or plainly when `language` is None.
    /// `checked` is the same text as a `str` where the caller already knows
    /// it is UTF-8 (then it is not checked again, piece by piece).
    fn count_into(
        &self,
        text: &[u8],
        checked: Option<&str>,
        weight: u64,
        language: Option<u16>,
        out: &mut Adder,
        scratch: &mut Scratch,
    ) -> std::result::Result<(), (usize, Option<Error>)> {
        out.stats.texts += 1;
        out.stats.bytes += text.len() as u64;
        let base = text.as_ptr() as usize;
        self.specials.split(text, &mut |seg| match seg {
            Segment::Special(_) => {
                out.stats.specials += 1;
                Ok(())
            }
            Segment::Text(seg) => {
                // Offsets of errors are in `text`; a normalized segment's pieces
                // are not, and report the segment's start.
                let seg_start = seg.as_ptr() as usize - base;
                let offset_of = |p: *const u8| (p as usize).checked_sub(base).filter(|&o| o <= text.len()).unwrap_or(seg_start);
                let normalized;
                let seg = match self.normalizer {
                    Some(n) => {
                        if let (Err(e), false) = (std::str::from_utf8(seg), self.allow_invalid_utf8) {
                            return Err((seg_start + e.valid_up_to(), None));
                        }
                        normalized = n.normalize(seg);
                        normalized.as_bytes()
                    }
                    None => seg,
                };
                let mut count_run = |run: std::result::Result<&str, &[u8]>| match run {
                    Ok(s) => {
                        if let (Some(p2), Some(second), Some(cache)) =
                            (self.superword, out.superword.as_deref_mut(), scratch.superword.as_mut())
                        {
                            p2.split_with(cache, s, &mut |piece| second.add(piece.as_bytes(), weight))
                                .map_err(|e| (offset_of(s.as_ptr()), Some(e)))?;
                        }
                        let mut pieces = 0u64;
                        let r = self
                            .pretokenizer
                            .split_with(&mut scratch.words, s, &mut |piece| {
                                pieces += 1;
                                match language {
                                    None => out.add(piece.as_bytes(), weight),
                                    Some(l) => out.add_tagged(l, piece.as_bytes(), weight),
                                }
                            })
                            .map_err(|e| (offset_of(s.as_ptr()), Some(e)));
                        out.stats.pieces += pieces;
                        r
                    }
                    Err(bad) => {
                        if self.allow_invalid_utf8 {
                            out.stats.pieces += 1;
                            match language {
                                None => out.add(bad, weight),
                                Some(l) => out.add_tagged(l, bad, weight),
                            }
                            if let Some(second) = out.superword.as_deref_mut() {
                                second.add(bad, weight);
                            }
                            Ok(())
                        } else {
                            Err((offset_of(bad.as_ptr()), None))
                        }
                    }
                };
                // A segment of checked text needs no second check: its ends
                // are found in O(1) (`str::get` checks they are char boundaries).
                let checked_seg = match (checked, self.normalizer) {
                    (Some(t), None) => t.get(seg_start..seg_start + seg.len()),
                    _ => None,
                };
                match checked_seg {
                    Some(s) if !s.is_empty() => count_run(Ok(s)),
                    Some(_) => Ok(()),
                    None => utf8_runs(seg, &mut count_run),
                }
            }
        })
    }

    /// The (weight, tagged language) a text of language `lang` counts with.
    fn weigh(&self, lang: Option<u16>) -> (u64, Option<u16>) {
        match (self.tag_languages, self.lang_weights, lang) {
            (true, _, l) => (1, Some(l.unwrap_or(0))),
            (false, Some(w), Some(l)) => (w[l as usize], None),
            _ => (1, None),
        }
    }

    /// Counts every text of a chunk; errors name the source and line.
    pub fn count_chunk(&self, chunk: &Chunk, out: &mut WordCounts) -> Result<()> {
        self.count_chunk_until(chunk, out, None)
    }

    /// `count_chunk` that gives up (with `Interrupted`) soon after `cancel` is set.
    pub fn count_chunk_until(&self, chunk: &Chunk, out: &mut WordCounts, cancel: Option<&AtomicBool>) -> Result<()> {
        self.count_chunk_with(chunk, out, cancel, &mut self.scratch())
    }

    /// `count_chunk_until` with the thread's own scratch space.
    pub fn count_chunk_with(
        &self,
        chunk: &Chunk,
        out: &mut WordCounts,
        cancel: Option<&AtomicBool>,
        scratch: &mut Scratch,
    ) -> Result<()> {
        let mut index = 0usize;
        let mut out = out.adder();
        let fields = match &chunk.layout {
            Layout::Fields(f) => Some(&**f),
            _ => None,
        };
        let mut texts: Vec<Cow<[u8]>> = Vec::new();
        // A chunk of lines is checked as UTF-8 once, in bulk (per line,
        // lines of ~140 bytes, the check was 3.6% of counting multi-1m); a
        // line of it is then a `str` in O(1). Invalid chunks are checked
        // line by line, which finds and reports (or keeps) the bad bytes.
        let chunk_text = match chunk.layout {
            Layout::Lines | Layout::Whole => simdutf8::basic::from_utf8(&chunk.data).ok(),
            _ => None,
        };
        chunk.for_each_text(&mut |text, offset| {
            if index % 1024 == 1023 && cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                return Err(Error::interrupted());
            }
            let (mut weight, mut language) = self.weigh(chunk.langs.get(index).copied());
            index += 1;
            let Some(fields) = fields else {
                let checked = chunk_text.and_then(|t| t.get(offset..offset + text.len()));
                return self
                    .count_into(text, checked, weight, language, &mut out, scratch)
                    .map_err(|(at, err)| count_error(chunk, text, at, offset + at, err));
            };
            texts.clear();
            // A record's own language (lang_field) wins over the chunk's.
            let read = fields.texts(text, &mut texts);
            match read.and_then(|()| if texts.is_empty() { Ok(None) } else { fields.language(text) }) {
                Ok(Some(lang)) => (weight, language) = self.weigh(Some(lang)),
                Ok(_) => {}
                Err(why) => {
                    return match fields.on_bad_record {
                        OnBadRecord::Skip => {
                            out.stats.bad_records += 1;
                            Ok(())
                        }
                        OnBadRecord::Error => Err(crate::fields::bad_record(&chunk.source, chunk.line_of(offset), &why)),
                    };
                }
            }
            for field in &texts {
                self.count_into(field, None, weight, language, &mut out, scratch)
                    .map_err(|(at, err)| count_error(chunk, field, at, offset, err))?;
            }
            Ok(())
        })
    }
}

/// The error for a text that could not be counted: `at` is the offset in
/// `text`, `located` an offset in the chunk on the same line, `err` the
/// pre-tokenizer's error, or None for invalid UTF-8.
fn count_error(chunk: &Chunk, text: &[u8], at: usize, located: usize, err: Option<Error>) -> Error {
    let line = chunk.line_of(located);
    let whole_line = !matches!(chunk.layout, Layout::Fields(_));
    match err {
        Some(e) => e.with_context(format_args!("{}, line {}", chunk.source, line)),
        None => Error::input(format!(
            "{}, line {}: invalid UTF-8 (byte 0x{:02x} at byte {} of the {}); the chars scheme needs valid UTF-8 — fix or drop the line, or use scheme=\"bytes\", which keeps invalid bytes as their own pieces",
            chunk.source,
            line,
            text[at],
            at + 1,
            if whole_line { "line" } else { "field" }
        )),
    }
}

/// Runs `feed` on the caller's thread; it hands chunks to `threads` counting
/// workers. Returns the summed counts, or the first error. With `limits`,
/// the tables stay within the budget by spilling sorted runs to disk, and
/// the sum is merged from them (`crate::spill`). On several threads the
/// counts are aggregated in shared partitions (`partitioned`), so memory
/// does not grow with the thread count.
pub fn count_parallel(
    counter: &Counter,
    threads: usize,
    limits: Option<&CountLimits>,
    feed: impl FnOnce(&mut dyn FnMut(Chunk) -> Result<()>) -> Result<()>,
) -> Result<WordCounts> {
    if threads > 1 {
        return count_partitioned(counter, threads, limits, feed);
    }
    let mut counts = fresh_counts(counter);
    if let Some(l) = limits {
        counts.cap_table(l.budget.worker_table);
    }
    let dirs = LazyDirs::new(counter);
    let mut scratch = counter.scratch();
    feed(&mut |chunk| {
        counter.count_chunk_with(&chunk, &mut counts, None, &mut scratch)?;
        // A table over its share goes to disk.
        match limits {
            Some(l) if counts.over(l.budget.worker_table) => counts.spill(&*dirs.open()?),
            _ => Ok(()),
        }
    })?;
    let Some(dirs) = dirs.take() else { return Ok(counts) };
    let superword_stats = counts.superword.as_ref().map(|s| s.stats.clone());
    counts.spill(&dirs)?;
    WordCounts::from_runs(&dirs, counts.stats, superword_stats, limits.and_then(|l| l.choose_min))
}

/// An empty table for one counting thread (with SuperBPE's second table
/// where the counter counts its units).
fn fresh_counts(counter: &Counter) -> WordCounts {
    let mut c = WordCounts::new();
    if counter.superword.is_some() {
        c.superword = Some(Box::new(WordCounts::new()));
    }
    c
}

/// The spill folders of one counting, created at the first spill (a run
/// that never spills touches no disk).
struct LazyDirs {
    dirs: Mutex<Option<std::sync::Arc<SpillDirs>>>,
    superword: bool,
}

impl LazyDirs {
    fn new(counter: &Counter) -> Self {
        LazyDirs { dirs: Mutex::new(None), superword: counter.superword.is_some() }
    }

    fn open(&self) -> Result<std::sync::Arc<SpillDirs>> {
        let mut slot = self.dirs.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            let superword = if self.superword { Some(SpillDir::new()?) } else { None };
            *slot = Some(std::sync::Arc::new(SpillDirs { main: SpillDir::new()?, superword }));
        }
        Ok(slot.clone().expect("just set"))
    }

    fn take(&self) -> Option<std::sync::Arc<SpillDirs>> {
        self.dirs.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// `count_parallel` on several threads (see `partitioned`): each thread
/// counts into a table capped at its room and flushes it into the shared
/// partitions when full; the partitions spill to disk when they and the
/// rooms would pass the budget.
fn count_partitioned(
    counter: &Counter,
    threads: usize,
    limits: Option<&CountLimits>,
    feed: impl FnOnce(&mut dyn FnMut(Chunk) -> Result<()>) -> Result<()>,
) -> Result<WordCounts> {
    let shared = Shared::new(counter.superword.is_some());
    let total = limits.map_or(u64::MAX, |l| l.budget.total);
    // The threads' rooms take at most a quarter of the budget.
    let most = (total / 4).max(1);
    let dirs = LazyDirs::new(counter);
    let fresh = || {
        let mut c = fresh_counts(counter);
        c.cap_table(shared.thread_room(threads, most));
        c
    };
    let keep_within = |local: &mut WordCounts| -> Result<()> {
        if !local.over(shared.thread_room(threads, most)) {
            return Ok(());
        }
        shared.flush(local);
        let room = shared.thread_room(threads, most);
        if limits.is_some() && shared.held().saturating_add(room * threads as u64) > total {
            shared.spill(&*dirs.open()?)?;
        }
        local.cap_table(shared.thread_room(threads, most));
        Ok(())
    };
    // Each thread's last flush, on its own thread (all at once; they start
    // at other partitions); then what it freed goes back to the system
    // before the thread ends (mimalloc would keep an ended thread's blocks).
    let finish = |local: &mut WordCounts| {
        shared.flush(local);
        crate::alloc::release_free_memory();
    };
    let leftovers = count_on_threads(counter, threads, &fresh, &keep_within, Some(&finish), feed)?;
    let mut stats = CountStats::default();
    let mut superword_stats = counter.superword.map(|_| CountStats::default());
    for l in &leftovers {
        stats.add(&l.stats);
        if let (Some(total), Some(s)) = (superword_stats.as_mut(), l.superword.as_ref()) {
            total.add(&s.stats);
        }
    }
    drop(leftovers);
    if let Some(dirs) = dirs.take() {
        shared.spill(&dirs)?;
        drop(shared);
        return WordCounts::from_runs(&dirs, stats, superword_stats, limits.and_then(|l| l.choose_min));
    }
    let Shared { main, superword } = shared;
    let mut out = main.into_counts(stats);
    if let (Some(units), Some(st)) = (superword, superword_stats) {
        out.superword = Some(Box::new(units.into_counts(st)));
    }
    Ok(out)
}

/// Chunks waiting for a counting thread at most: input in flight is this
/// many chunks and one per thread, not two per thread (on 16 threads 0.2 GB
/// of a counting peak that no longer grows with the threads otherwise).
const QUEUED_CHUNKS: usize = 4;

/// The worker threads of `count_parallel`: each counts the chunks it gets
/// into its own table (`fresh`), calling `keep_within` after each chunk
/// and `finish` at the end (unless counting failed).
fn count_on_threads(
    counter: &Counter,
    threads: usize,
    fresh: &(dyn Fn() -> WordCounts + Sync),
    keep_within: &(dyn Fn(&mut WordCounts) -> Result<()> + Sync),
    finish: Option<&(dyn Fn(&mut WordCounts) + Sync)>,
    feed: impl FnOnce(&mut dyn FnMut(Chunk) -> Result<()>) -> Result<()>,
) -> Result<Vec<WordCounts>> {
    let failed = AtomicBool::new(false);
    let first_error: Mutex<Option<Error>> = Mutex::new(None);
    let (tx, rx) = crossbeam_channel::bounded::<Chunk>((threads * 2).min(QUEUED_CHUNKS));
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let rx = rx.clone();
                let failed = &failed;
                let first_error = &first_error;
                scope.spawn(move || {
                    let mut counts = fresh();
                    let mut scratch = counter.scratch();
                    for chunk in rx.iter() {
                        if failed.load(Ordering::Relaxed) {
                            continue; // drain so the feeder never blocks
                        }
                        let counted = counter
                            .count_chunk_with(&chunk, &mut counts, Some(failed), &mut scratch)
                            .and_then(|()| keep_within(&mut counts));
                        if let Err(e) = counted {
                            if e.kind() == crate::error::ErrorKind::Interrupted {
                                continue; // the feeder stopped; its error is reported
                            }
                            failed.store(true, Ordering::Relaxed);
                            let mut slot = first_error.lock().unwrap_or_else(|p| p.into_inner());
                            if slot.is_none() {
                                *slot = Some(e);
                            }
                        }
                    }
                    if let Some(finish) = finish.filter(|_| !failed.load(Ordering::Relaxed)) {
                        finish(&mut counts);
                    }
                    counts
                })
            })
            .collect();
        drop(rx);
        let fed = feed(&mut |chunk| {
            if failed.load(Ordering::Relaxed) {
                return Err(Error::training("counting failed"));
            }
            tx.send(chunk).map_err(|_| Error::training("counting workers stopped"))
        });
        if fed.is_err() {
            // Stop the workers now: queued chunks are skipped, chunks in
            // progress end within a thousand texts (Ctrl-C within a second).
            failed.store(true, Ordering::Relaxed);
        }
        drop(tx);
        let joined = crate::util::join_all(workers);
        // A worker's own error (e.g. invalid UTF-8 naming the line) explains
        // a failed feed better than the feeder's "counting failed".
        if let Some(e) = first_error.lock().unwrap_or_else(|p| p.into_inner()).take() {
            return Err(e);
        }
        fed?;
        joined
    })
}

#[cfg(test)]
mod tests {
    use super::table::{mid_key, short_key, MID_KEY, SHORT_KEY};
    use super::*;
    use std::collections::HashMap;

    fn snapshot(c: &WordCounts) -> HashMap<Vec<u8>, u64> {
        let mut m = HashMap::new();
        c.for_each(|k, v| {
            assert!(m.insert(k.to_vec(), v).is_none(), "type listed twice: {k:?}");
        });
        m
    }

    /// `short_key` equals the plain layout (the bytes, zeros, the length in
    /// byte 15) for every length: spilled runs and packed tables sort by it.
    #[test]
    fn short_keys_are_the_bytes_and_the_length() {
        let bytes: Vec<u8> = (1..=15u8).map(|b| b.wrapping_mul(37) | 0x80).collect();
        for n in 1..=SHORT_KEY {
            let mut plain = [0u8; 16];
            plain[..n].copy_from_slice(&bytes[..n]);
            plain[15] = n as u8;
            assert_eq!(short_key(&bytes[..n]), u128::from_le_bytes(plain), "length {n}");
            assert_eq!(short_key_bytes(&short_key(&bytes[..n])).1, n);
        }
    }

    /// `mid_key` equals the plain layout (the bytes, zeros, the length in
    /// byte 31) for every length, and `mid_key_bytes` gives the piece back.
    #[test]
    fn mid_keys_are_the_bytes_and_the_length() {
        let bytes: Vec<u8> = (1..=MID_KEY as u8).map(|b| b.wrapping_mul(37) | 0x80).collect();
        for n in SHORT_KEY + 1..=MID_KEY {
            let mut plain = [0u8; 32];
            plain[..n].copy_from_slice(&bytes[..n]);
            plain[31] = n as u8;
            assert_eq!(mid_key(&bytes[..n]), plain, "length {n}");
            assert_eq!(mid_key_bytes(&mid_key(&bytes[..n])), &bytes[..n]);
        }
    }

    /// Pseudo-random pieces of 1..=40 bytes (short, mid and long keys, with
    /// repeats), through the pipelined adder, the plain `add`, `merge`,
    /// `prune` and the byte form, checked against a std HashMap.
    #[test]
    fn tables_agree_with_a_plain_map() {
        let mut state = 7u64;
        let mut next = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            state >> 33
        };
        let pieces: Vec<Vec<u8>> = (0..30_000)
            .map(|_| {
                let len = 1 + (next() % 40) as usize;
                (0..len).map(|_| (next() % 3) as u8 * 100).collect()
            })
            .collect();
        let mut expected: HashMap<Vec<u8>, u64> = HashMap::new();
        let mut parts = vec![WordCounts::new(), WordCounts::new()];
        for (i, p) in pieces.iter().cycle().take(100_000).enumerate() {
            let n = 1 + (i % 3) as u64;
            *expected.entry(p.clone()).or_insert(0) += n;
            let part = &mut parts[i % 2];
            if i % 5 == 0 {
                part.add(p, n);
            } else {
                part.adder().add(p, n);
            }
        }
        let mut total = parts.pop().unwrap();
        total.merge(parts.pop().unwrap());
        assert_eq!(total.len(), expected.len());
        assert_eq!(snapshot(&total), expected);
        let again = WordCounts::from_bytes(&total.to_bytes()).unwrap();
        assert_eq!(snapshot(&again), expected);
        let dropped = total.prune(3);
        expected.retain(|_, v| *v >= 3);
        assert_eq!(dropped, again.len() - expected.len());
        assert_eq!(snapshot(&total), expected);
    }

    /// Counting with a budget so small that every few chunks spill (with
    /// and without SuperBPE's second table, 1 and 3 threads) equals the
    /// in-memory count exactly; and the merged runs can leave out the rarest
    /// types as `choose_min` decides.
    #[test]
    fn spilled_counts_equal_the_in_memory_count() {
        use crate::pretok::PreTokenizerSpec;
        let mut state = 11u64;
        let mut next = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            state >> 33
        };
        let words: Vec<String> =
            (0..20_000).map(|i| format!("w{}{}", i, "xyzzyplughfoo".repeat((i % 3) as usize))).collect();
        let chunks: Vec<Vec<u8>> = (0..40)
            .map(|_| {
                let mut text = String::new();
                for _ in 0..2_000 {
                    let w = &words[(next() % 20_000) as usize % (1 + (next() % 20_000) as usize)];
                    text.push_str(w);
                    text.push(if next() % 9 == 0 { '\n' } else { ' ' });
                }
                text.push('\n');
                text.into_bytes()
            })
            .collect();
        let pre = PreTokenizer::new(PreTokenizerSpec::Gpt2).unwrap();
        let stage2 = PreTokenizer::new(PreTokenizerSpec::Superword).unwrap();
        let specials = SpecialSplitter::new(&[]).unwrap();
        for superword in [false, true] {
            let counter = Counter {
                pretokenizer: &pre,
                specials: &specials,
                allow_invalid_utf8: true,
                superword: superword.then_some(&stage2),
                lang_weights: None,
                tag_languages: false,
                normalizer: None,
            };
            let feed = |sink: &mut dyn FnMut(Chunk) -> Result<()>| {
                for c in &chunks {
                    sink(Chunk { data: c.clone(), layout: Layout::Lines, source: "t".into(), first_line: 1, langs: Vec::new() })?;
                }
                Ok(())
            };
            let plain = count_parallel(&counter, 2, None, feed).unwrap();
            for threads in [1, 3] {
                let limits = CountLimits { budget: CountBudget { total: 1 << 20, worker_table: 64 << 10 }, choose_min: None };
                let spilled = count_parallel(&counter, threads, Some(&limits), feed).unwrap();
                assert!(spilled.memory.spill_runs >= 10, "{} runs", spilled.memory.spill_runs);
                assert_eq!(snapshot(&spilled), snapshot(&plain));
                assert_eq!(spilled.stats, plain.stats);
                match (&spilled.superword, &plain.superword) {
                    (Some(a), Some(b)) => {
                        assert_eq!(snapshot(a), snapshot(b));
                        assert_eq!(a.stats, b.stats);
                    }
                    (None, None) => assert!(!superword),
                    _ => panic!("superword table lost"),
                }
            }
            // The units come second, beside the word types' table: they
            // get a higher minimum here, to tell the two apart.
            let choose = |h: &CountHistogram, held: u64| -> Result<(u64, Option<Dropped>)> {
                let min = if held > 0 { 30 } else { 3 };
                let (types, _, pieces) = h.kept(1);
                let (kept, _, kept_pieces) = h.kept(min);
                Ok((min, Some(Dropped { min_word_count: min, types: types - kept, pretokens: pieces - kept_pieces })))
            };
            let limits = CountLimits { budget: CountBudget { total: 1 << 20, worker_table: 64 << 10 }, choose_min: Some(&choose) };
            let pruned = count_parallel(&counter, 2, Some(&limits), feed).unwrap();
            let mut expected = snapshot(&plain);
            let before = expected.len();
            expected.retain(|_, v| *v >= 3);
            assert_eq!(snapshot(&pruned), expected);
            assert_eq!(pruned.memory.types_left_out as usize, before - expected.len());
            assert_eq!(pruned.memory.dropped.unwrap().types as usize, before - expected.len());
            // SuperBPE's units are pruned by the same rule, with their own record.
            if let (Some(units), Some(all)) = (&pruned.superword, &plain.superword) {
                let mut expected = snapshot(all);
                let before = expected.len();
                expected.retain(|_, v| *v >= 30);
                assert!(expected.len() < before, "{} of {before} units kept", expected.len());
                assert_eq!(snapshot(units), expected);
                assert_eq!(units.memory.types_left_out as usize, before - expected.len());
                assert_eq!(units.memory.dropped.unwrap().types as usize, before - expected.len());
            }
        }
    }

    /// A chunk of lines, checked as UTF-8 once (`count_chunk_with`), counts
    /// as its lines do one by one; a chunk with invalid bytes is checked line
    /// by line: its bad bytes are kept (bytes scheme) or reported with their
    /// line (chars scheme).
    #[test]
    fn a_chunk_counts_as_its_lines_do() {
        let pre = PreTokenizer::new(crate::pretok::PreTokenizerSpec::Gpt2).unwrap();
        let specials = SpecialSplitter::new(&["<s>".to_string()]).unwrap();
        let valid = "héllo wörld<s>日本語 text\r\n\nπ = 3.14 <s>\nend".as_bytes().to_vec();
        let mut invalid = valid.clone();
        invalid.splice(3..3, [0xFF, 0xC3]);
        for allow_invalid_utf8 in [true, false] {
            let counter = Counter {
                pretokenizer: &pre,
                specials: &specials,
                allow_invalid_utf8,
                superword: None,
                lang_weights: None,
                tag_languages: false,
                normalizer: None,
            };
            for data in [&valid, &invalid] {
                let chunk = Chunk { data: data.clone(), layout: Layout::Lines, source: "t".into(), first_line: 7, langs: Vec::new() };
                let mut whole = WordCounts::new();
                let result = counter.count_chunk_with(&chunk, &mut whole, None, &mut counter.scratch());
                let mut by_line = WordCounts::new();
                let mut failed = None;
                chunk
                    .for_each_text(&mut |line, _| {
                        counter.count_text(line, &mut by_line).map_err(|(at, _)| *failed.get_or_insert(at))
                    })
                    .ok();
                match (data == &invalid && !allow_invalid_utf8, result) {
                    (true, Err(e)) => {
                        assert_eq!(failed, Some(3));
                        assert!(e.to_string().contains("t, line 7: invalid UTF-8 (byte 0xff at byte 4"), "{e}");
                    }
                    (false, Ok(())) => {
                        assert_eq!(snapshot(&whole), snapshot(&by_line));
                        assert_eq!(whole.stats, by_line.stats);
                        assert!(whole.stats.specials == 2 && whole.len() > 8);
                    }
                    (_, other) => panic!("allow_invalid_utf8={allow_invalid_utf8}: {other:?}"),
                }
            }
        }
    }

    /// Thread tables flushed into the shared partitions, several at once and
    /// several times each, and the partitions' concatenation (a packed
    /// table), spilled or not, see exactly the entries of the tables.
    #[test]
    fn partitions_keep_every_entry() {
        use super::partitioned::Partitions;
        for threads in [1u64, 2, 3] {
            let mut expected: HashMap<Vec<u8>, u64> = HashMap::new();
            let parts = Partitions::new();
            std::thread::scope(|scope| {
                let handles: Vec<_> = (0..threads)
                    .map(|t| {
                        let parts = &parts;
                        scope.spawn(move || {
                            let mut local = WordCounts::new();
                            let mut seen: HashMap<Vec<u8>, u64> = HashMap::new();
                            for i in (t..300_000).step_by(threads as usize) {
                                let key = format!("k{}{}", i % 170_001, if i % 5 == 0 { "-a-long-suffix-here" } else if i % 11 == 0 { "-and-a-suffix-longer-than-31-bytes" } else { "" });
                                local.add(key.as_bytes(), i % 4 + 1);
                                *seen.entry(key.into_bytes()).or_insert(0) += i % 4 + 1;
                                if i % 40_000 == t {
                                    parts.flush(&mut local);
                                    assert!(local.is_empty());
                                }
                            }
                            parts.flush(&mut local);
                            seen
                        })
                    })
                    .collect();
                for h in handles {
                    for (k, v) in h.join().unwrap() {
                        *expected.entry(k).or_insert(0) += v;
                    }
                }
            });
            assert!(parts.held() > 0);
            let total = parts.into_counts(CountStats::default());
            assert!(total.short.packed && total.mid.packed);
            assert_eq!(snapshot(&total), expected);
        }
        let mut expected: HashMap<Vec<u8>, u64> = HashMap::new();
        let mut table = WordCounts::new();
        for i in 0..200_000u64 {
            let key = format!("k{}{}", i % 70_001, if i % 5 == 0 { "-a-long-suffix-here" } else { "" });
            table.add(key.as_bytes(), i % 4 + 1);
            *expected.entry(key.into_bytes()).or_insert(0) += i % 4 + 1;
        }
        let parts = Partitions::new();
        parts.flush(&mut table);
        let total = parts.into_counts(CountStats::default());
        // A packed table still takes additions, short and mid keys alike (its
        // tables become hash tables again).
        let parts = Partitions::new();
        parts.flush(&mut WordCounts::from_bytes(&total.to_bytes()).unwrap());
        let mut grown = parts.into_counts(CountStats::default());
        assert!(grown.short.packed && grown.mid.packed);
        let mut more = expected.clone();
        for key in [&b"k1"[..], b"k1-a-long-suffix-here", b"k3-a-new-mid-key"] {
            grown.add(key, 5);
            *more.entry(key.to_vec()).or_insert(0) += 5;
        }
        grown.adder().add(b"fresh", 2);
        more.insert(b"fresh".to_vec(), 2);
        let mut other = WordCounts::new();
        other.add(b"k2", 1);
        other.add(b"k2-a-long-suffix-here", 1);
        *more.entry(b"k2".to_vec()).or_insert(0) += 1;
        *more.entry(b"k2-a-long-suffix-here".to_vec()).or_insert(0) += 1;
        grown.merge(other);
        assert_eq!(snapshot(&grown), more);
        let mut drained = HashMap::new();
        total.drain_each(|k, v| {
            assert!(drained.insert(k.to_vec(), v).is_none());
        });
        assert_eq!(drained, expected);
        // Spilled partitions: one sorted run that merges back to the same counts.
        let parts = Partitions::new();
        let mut again = WordCounts::from_bytes(&total_bytes(&expected)).unwrap();
        parts.flush(&mut again);
        let dirs = SpillDirs { main: SpillDir::new().unwrap(), superword: None };
        parts.spill_to(&dirs.main).unwrap();
        assert_eq!(parts.held(), Partitions::new().held());
        let merged = WordCounts::from_runs(&dirs, CountStats::default(), None, None).unwrap();
        assert_eq!(snapshot(&merged), expected);
    }

    fn total_bytes(m: &HashMap<Vec<u8>, u64>) -> Vec<u8> {
        let mut c = WordCounts::new();
        for (k, &v) in m {
            c.add(k, v);
        }
        c.to_bytes()
    }
}
