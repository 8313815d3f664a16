//! Counting word types: texts -> special-token split -> pre-tokens -> counts.
//!
//! Counting is the embarrassingly parallel half of training. The caller feeds
//! chunks (from files or from Python); `threads` workers each count into a
//! private hash map, and the maps are summed at the end. Sums commute, so the
//! counts (and hence the trained model) never depend on the thread count.
//!
//! Performance notes:
//! * Keys are the raw bytes of each pre-token, inline when short (see
//!   `WordCounts`); long ones are probed with a borrowed slice (`entry_ref`),
//!   so only the first occurrence of a type allocates.
//! * foldhash: on this workload (short byte strings, ~2M distinct) it hashed
//!   faster than ahash/FxHash in our runs, and it is seedable, so runs are
//!   reproducible.
//! * With `threads == 1` the caller's thread counts inline; no channel.

use crate::error::{Error, Result};
use crate::input::Chunk;
use crate::pretok::{utf8_runs, PreTokenizer, Segment, SpecialSplitter};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

pub type Hasher = foldhash::fast::FixedState;
pub type Map<K, V> = hashbrown::HashMap<K, V, Hasher>;

pub fn new_map<K, V>() -> Map<K, V> {
    Map::with_hasher(Hasher::with_seed(0x5eed_b9e_f0a6e))
}

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
}

impl CountStats {
    fn add(&mut self, o: &CountStats) {
        self.bytes += o.bytes;
        self.texts += o.texts;
        self.pieces += o.pieces;
        self.specials += o.specials;
    }
}

/// Word types (raw pre-token bytes) and their counts.
///
/// Pre-tokens of up to 15 bytes (the great majority in every language we
/// measured) are keys of their own: 16 bytes inline in the table, so a probe
/// never leaves the table and equality is two integer compares. Longer ones
/// are boxed. Splitting the map this way cut counting time on multi-200k
/// by about a third (the boxed-key probe was a cache miss per pre-token).
#[derive(Debug)]
pub struct WordCounts {
    short: Map<u128, u64>,
    long: Map<Box<[u8]>, u64>,
    pub stats: CountStats,
    /// SuperBPE: the stage-2 units of the same texts, counted in the same pass.
    pub superword: Option<Box<WordCounts>>,
}

const SHORT_KEY: usize = 15;

/// The bytes of a short key (see `WordCounts::entries`).
#[inline]
pub fn short_key_bytes(key: &u128) -> ([u8; 16], usize) {
    let b = key.to_le_bytes();
    (b, b[15] as usize)
}

#[inline]
fn short_key(piece: &[u8]) -> u128 {
    let mut b = [0u8; 16];
    b[..piece.len()].copy_from_slice(piece);
    b[15] = piece.len() as u8;
    u128::from_le_bytes(b)
}

impl Default for WordCounts {
    fn default() -> Self {
        Self::new()
    }
}

impl WordCounts {
    pub fn new() -> Self {
        WordCounts { short: new_map(), long: new_map(), stats: CountStats::default(), superword: None }
    }

    /// Number of distinct word types.
    pub fn len(&self) -> usize {
        self.short.len() + self.long.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds `n` occurrences of `piece`.
    #[inline]
    pub fn add(&mut self, piece: &[u8], n: u64) {
        if piece.len() <= SHORT_KEY {
            *self.short.entry(short_key(piece)).or_insert(0) += n;
        } else {
            *self.long.entry_ref(piece).or_insert(0) += n;
        }
    }

    /// Calls `f(bytes, count)` for every word type (in no particular order).
    pub fn for_each(&self, mut f: impl FnMut(&[u8], u64)) {
        for (&k, &v) in self.short.iter() {
            let b = k.to_le_bytes();
            f(&b[..b[15] as usize], v);
        }
        for (k, &v) in self.long.iter() {
            f(k, v);
        }
    }

    /// Every word type as `(key, count)`, borrowing the table: short keys
    /// are copied (16 bytes), long ones point into it. Lets several threads
    /// share the word types without copying their bytes.
    pub fn entries(&self) -> (Vec<(u128, u64)>, Vec<(&[u8], u64)>) {
        let short = self.short.iter().map(|(&k, &v)| (k, v)).collect();
        let long = self.long.iter().map(|(k, &v)| (&k[..], v)).collect();
        (short, long)
    }

    /// Adds `other` into `self` (the bigger maps absorb the smaller).
    pub fn merge(&mut self, mut other: WordCounts) {
        if other.short.len() > self.short.len() {
            std::mem::swap(&mut self.short, &mut other.short);
        }
        if other.long.len() > self.long.len() {
            std::mem::swap(&mut self.long, &mut other.long);
        }
        self.short.reserve(other.short.len());
        for (k, v) in other.short.drain() {
            *self.short.entry(k).or_insert(0) += v;
        }
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

const COUNTS_MAGIC: &[u8; 8] = b"BPFCNT01";

impl WordCounts {
    /// A compact binary form (for sending counts between processes, e.g. Ray
    /// tasks): magic, 4 stats, then `len u32, bytes, count u64` per type.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(40 + self.len() * 20);
        out.extend_from_slice(COUNTS_MAGIC);
        for v in [self.stats.bytes, self.stats.texts, self.stats.pieces, self.stats.specials, self.len() as u64] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        self.for_each(|k, v| {
            out.extend_from_slice(&(k.len() as u32).to_le_bytes());
            out.extend_from_slice(k);
            out.extend_from_slice(&v.to_le_bytes());
        });
        out
    }

    /// Reads `to_bytes` output, checking every length.
    pub fn from_bytes(data: &[u8]) -> Result<WordCounts> {
        let bad = || Error::input("word counts: the data is truncated or not from WordCounts::to_bytes");
        if data.len() < 48 || &data[..8] != COUNTS_MAGIC {
            return Err(bad());
        }
        let u64_at = |p: usize| -> Result<u64> {
            data.get(p..p + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]))).ok_or_else(bad)
        };
        let mut counts = WordCounts::new();
        counts.stats = CountStats { bytes: u64_at(8)?, texts: u64_at(16)?, pieces: u64_at(24)?, specials: u64_at(32)? };
        let n = u64_at(40)?;
        let mut p = 48;
        for _ in 0..n {
            let len = data.get(p..p + 4).map(|b| u32::from_le_bytes(b.try_into().unwrap_or([0; 4]))).ok_or_else(bad)? as usize;
            p += 4;
            let key = data.get(p..p + len).ok_or_else(bad)?;
            p += len;
            let v = u64_at(p)?;
            p += 8;
            counts.add(key, v);
        }
        if p != data.len() {
            return Err(bad());
        }
        Ok(counts)
    }

    /// Divides every count by `scale` (rounding to nearest), never below 1:
    /// the last step of weighted counting, where weights were scaled integers.
    pub fn rescale(&mut self, scale: u64) {
        let f = |v: &mut u64| *v = ((*v + scale / 2) / scale).max(1);
        self.short.values_mut().for_each(f);
        self.long.values_mut().for_each(f);
        if let Some(s) = self.superword.as_deref_mut() {
            s.rescale(scale);
        }
    }

    /// Drops word types seen fewer than `min` times; returns how many.
    pub fn prune(&mut self, min: u64) -> usize {
        let before = self.len();
        self.short.retain(|_, v| *v >= min);
        self.long.retain(|_, v| *v >= min);
        before - self.len()
    }

    /// Approximate heap bytes of the table (for reporting bytes per type).
    pub fn memory_bytes(&self) -> usize {
        let short = self.short.capacity() * (16 + 8 + 1);
        let long = self.long.capacity() * (16 + 8 + 1) + self.long.keys().map(|k| k.len().max(16)).sum::<usize>();
        short + long
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
}

impl Counter<'_> {
    /// Counts one text into `out`. `on_invalid` is called with the offset of
    /// the first invalid byte when invalid UTF-8 is not allowed.
    pub fn count_text(&self, text: &[u8], out: &mut WordCounts) -> std::result::Result<(), (usize, Option<Error>)> {
        self.count_weighted(text, 1, out)
    }

    /// Like `count_text`, each occurrence counting `weight`.
    pub fn count_weighted(&self, text: &[u8], weight: u64, out: &mut WordCounts) -> std::result::Result<(), (usize, Option<Error>)> {
        out.stats.texts += 1;
        out.stats.bytes += text.len() as u64;
        let base = text.as_ptr() as usize;
        self.specials.split(text, &mut |seg| match seg {
            Segment::Special(_) => {
                out.stats.specials += 1;
                Ok(())
            }
            Segment::Text(seg) => utf8_runs(seg, &mut |run| match run {
                Ok(s) => {
                    if let (Some(p2), Some(second)) = (self.superword, out.superword.as_deref_mut()) {
                        p2.split(s, &mut |piece| second.add(piece.as_bytes(), weight))
                            .map_err(|e| (s.as_ptr() as usize - base, Some(e)))?;
                    }
                    self.pretokenizer
                        .split(s, &mut |piece| {
                            out.stats.pieces += 1;
                            out.add(piece.as_bytes(), weight);
                        })
                        .map_err(|e| (s.as_ptr() as usize - base, Some(e)))
                }
                Err(bad) => {
                    if self.allow_invalid_utf8 {
                        out.stats.pieces += 1;
                        out.add(bad, weight);
                        if let Some(second) = out.superword.as_deref_mut() {
                            second.add(bad, weight);
                        }
                        Ok(())
                    } else {
                        Err((bad.as_ptr() as usize - base, None))
                    }
                }
            }),
        })
    }

    /// Counts every text of a chunk; errors name the source and line.
    pub fn count_chunk(&self, chunk: &Chunk, out: &mut WordCounts) -> Result<()> {
        self.count_chunk_until(chunk, out, None)
    }

    /// `count_chunk` that gives up (with `Interrupted`) soon after `cancel` is set.
    pub fn count_chunk_until(&self, chunk: &Chunk, out: &mut WordCounts, cancel: Option<&AtomicBool>) -> Result<()> {
        let mut index = 0usize;
        chunk.for_each_text(&mut |text, offset| {
            if index % 1024 == 1023 && cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                return Err(Error::interrupted());
            }
            let weight = match self.lang_weights {
                Some(w) if !chunk.langs.is_empty() => chunk.langs.get(index).map_or(1, |&l| w[l as usize]),
                _ => 1,
            };
            index += 1;
            self.count_weighted(text, weight, out).map_err(|(at, err)| {
                let line = chunk.line_of(offset + at);
                match err {
                    Some(e) => Error::new(e.kind, format!("{}, line {}: {}", chunk.source, line, e.message)),
                    None => Error::input(format!(
                        "{}, line {}: invalid UTF-8 (byte 0x{:02x} at byte {} of the line); the chars scheme needs valid UTF-8 — fix or drop the line, or use scheme=\"bytes\", which keeps invalid bytes as their own pieces",
                        chunk.source,
                        line,
                        text[at],
                        at + 1
                    )),
                }
            })
        })
    }
}

/// Runs `feed` on the caller's thread; it hands chunks to `threads` counting
/// workers. Returns the summed counts, or the first error.
pub fn count_parallel(
    counter: &Counter,
    threads: usize,
    feed: impl FnOnce(&mut dyn FnMut(Chunk) -> Result<()>) -> Result<()>,
) -> Result<WordCounts> {
    let threads = threads.max(1);
    let fresh = || {
        let mut c = WordCounts::new();
        if counter.superword.is_some() {
            c.superword = Some(Box::new(WordCounts::new()));
        }
        c
    };
    if threads == 1 {
        let mut counts = fresh();
        feed(&mut |chunk| counter.count_chunk(&chunk, &mut counts))?;
        return Ok(counts);
    }
    let failed = AtomicBool::new(false);
    let first_error: Mutex<Option<Error>> = Mutex::new(None);
    let (tx, rx) = crossbeam_channel::bounded::<Chunk>(threads * 2);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let rx = rx.clone();
                let failed = &failed;
                let first_error = &first_error;
                let fresh = &fresh;
                scope.spawn(move || {
                    let mut counts = fresh();
                    for chunk in rx.iter() {
                        if failed.load(Ordering::Relaxed) {
                            continue; // drain so the feeder never blocks
                        }
                        if let Err(e) = counter.count_chunk_until(&chunk, &mut counts, Some(failed)) {
                            if e.kind == crate::error::ErrorKind::Interrupted {
                                continue; // the feeder stopped; its error is reported
                            }
                            failed.store(true, Ordering::Relaxed);
                            let mut slot = first_error.lock().unwrap_or_else(|p| p.into_inner());
                            if slot.is_none() {
                                *slot = Some(e);
                            }
                        }
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
        let mut parts: Vec<WordCounts> = workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|_| {
                failed.store(true, Ordering::Relaxed);
                WordCounts::new()
            }))
            .collect();
        // A worker's own error (e.g. invalid UTF-8 naming the line) explains
        // a failed feed better than the feeder's "counting failed".
        if let Some(e) = first_error.lock().unwrap_or_else(|p| p.into_inner()).take() {
            return Err(e);
        }
        fed?;
        if failed.load(Ordering::Relaxed) {
            return Err(Error::training("a counting worker crashed (this is a bug in bpeforge; please report it)"));
        }
        parts.sort_by_key(|p| std::cmp::Reverse(p.len()));
        let mut total = parts.remove(0);
        for p in parts {
            total.merge(p);
        }
        Ok(total)
    })
}
