//! The word table: every word type's symbols back to back, with its count.

use super::*;

/// A symbol as stored in the word table: `u16` while every id (including
/// the tokens the loop will create) fits below `u16::MAX`, else `u32`. The
/// largest value (`END`) is never an id: it fills the tail a word loses
/// when it is merged in place.
pub(super) trait Sym: Copy + Eq + Send + Sync + 'static {
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
pub(super) const NARROW_IDS: u32 = u16::MAX as u32;

pub(super) enum Symbols {
    Narrow(Vec<u16>),
    Wide(Vec<u32>),
}

impl Symbols {
    pub(super) fn len(&self) -> usize {
        match self {
            Symbols::Narrow(v) => v.len(),
            Symbols::Wide(v) => v.len(),
        }
    }

    /// Switches to `u32` symbols (a symbol id of `NARROW_IDS` or more).
    pub(super) fn widen(&mut self) {
        if let Symbols::Narrow(v) = self {
            let mut wide: Vec<u32> = crate::memory::mem::vec_with_capacity(v.capacity().max(v.len()));
            wide.extend(v.iter().map(|&s| s as u32));
            *self = Symbols::Wide(wide);
        }
    }
}

/// One word type's record: the low 32 bits of its first symbol's offset
/// and its count. Offset and count are read together for every word a merge
/// visits, so they share 8 bytes (one cache line for both).
#[derive(Clone, Copy, Default)]
pub(super) struct WordRec {
    start: u32,
    /// The count when below 2^31; otherwise `BIG | k` where `big[k]`
    /// holds the full 64-bit count.
    pub(super) weight: u32,
}

const BIG: u32 = 1 << 31;

/// Where words start: the low 32 bits in `WordRec::start` and, past 2^32
/// symbols, the high part from `high` (the record indices at which it grows
/// by one), so offsets never wrap while a record stays 8 bytes.
#[derive(Default)]
pub(super) struct Starts {
    /// Record `i` starts at `recs[i].start + 2^32 * #{h in high : h <= i}`.
    pub(super) high: Vec<u32>,
}

impl Starts {
    #[inline(always)]
    pub(super) fn offset(&self, recs: &[WordRec], i: usize) -> usize {
        let low = recs[i].start as usize;
        if self.high.is_empty() {
            low
        } else {
            low + ((self.high.partition_point(|&h| h as usize <= i) as u64) << 32) as usize
        }
    }

    /// Records that the next record (index `i`) starts at offset `at`.
    pub(super) fn push(&mut self, recs: &mut Vec<WordRec>, at: usize) {
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
    pub(super) syms: Symbols,
    /// One record per word, plus a final one whose start is the end.
    pub(super) recs: Vec<WordRec>,
    pub(super) starts: Starts,
    pub(super) big: Vec<u64>,
}

impl WordTable {
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// A table with room for `symbols` symbols in all (no regrowth).
    pub fn with_capacity(symbols: usize) -> Self {
        // Huge pages: the loop reads the symbols at random (see `mem`).
        let syms = Symbols::Narrow(crate::memory::mem::vec_with_capacity(symbols));
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

    pub(super) fn truncate_symbols(&mut self, len: usize) {
        match &mut self.syms {
            Symbols::Narrow(v) => v.truncate(len),
            Symbols::Wide(v) => v.truncate(len),
        }
    }

    /// Closes the word that ends at symbol offset `end`.
    pub(super) fn end_word(&mut self, end: usize, count: u64) -> Result<()> {
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
        let mut syms = crate::memory::mem::zeroed_u16(symbols);
        let mut recs = crate::memory::mem::filled_vec(words + 1, WordRec::default());
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
    pub(super) fn count(&self, w: usize) -> u64 {
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
    pub(super) syms: &'a mut [u16],
    pub(super) recs: &'a mut [WordRec],
    /// Symbols and words written so far.
    at: usize,
    pub(super) word: usize,
    /// The part's first symbol offset in the whole table.
    pub(super) base: usize,
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

#[inline(always)]
fn weight_of(weight: u32, big: &[u64]) -> u64 {
    if weight & BIG == 0 {
        weight as u64
    } else {
        big[(weight & !BIG) as usize]
    }
}

/// The word records of a table (without its symbols, which the loop owns
/// and rewrites).
pub(super) struct Words {
    pub(super) recs: Vec<WordRec>,
    pub(super) starts: Starts,
    pub(super) big: Vec<u64>,
}

impl Words {
    pub(super) fn len(&self) -> usize {
        self.recs.len() - 1
    }
    #[inline(always)]
    pub(super) fn offset(&self, w: usize) -> usize {
        self.starts.offset(&self.recs, w)
    }
    #[inline(always)]
    pub(super) fn weight(&self, w: usize) -> u64 {
        weight_of(self.recs[w].weight, &self.big)
    }
}
