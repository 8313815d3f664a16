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
}

const SHORT_KEY: usize = 15;

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
        WordCounts { short: new_map(), long: new_map(), stats: CountStats::default() }
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
    }
}

/// Counts the pre-tokens of texts.
pub struct Counter<'a> {
    pub pretokenizer: &'a PreTokenizer,
    pub specials: &'a SpecialSplitter,
    /// Bytes scheme: invalid UTF-8 runs become pieces. Chars scheme: an error.
    pub allow_invalid_utf8: bool,
}

impl Counter<'_> {
    /// Counts one text into `out`. `on_invalid` is called with the offset of
    /// the first invalid byte when invalid UTF-8 is not allowed.
    pub fn count_text(&self, text: &[u8], out: &mut WordCounts) -> std::result::Result<(), (usize, Option<Error>)> {
        out.stats.texts += 1;
        out.stats.bytes += text.len() as u64;
        let base = text.as_ptr() as usize;
        self.specials.split(text, &mut |seg| match seg {
            Segment::Special(_) => {
                out.stats.specials += 1;
                Ok(())
            }
            Segment::Text(seg) => utf8_runs(seg, &mut |run| match run {
                Ok(s) => self
                    .pretokenizer
                    .split(s, &mut |piece| {
                        out.stats.pieces += 1;
                        out.add(piece.as_bytes(), 1);
                    })
                    .map_err(|e| (s.as_ptr() as usize - base, Some(e))),
                Err(bad) => {
                    if self.allow_invalid_utf8 {
                        out.stats.pieces += 1;
                        out.add(bad, 1);
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
        chunk.for_each_text(&mut |text, offset| {
            self.count_text(text, out).map_err(|(at, err)| {
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
    if threads == 1 {
        let mut counts = WordCounts::new();
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
                scope.spawn(move || {
                    let mut counts = WordCounts::new();
                    for chunk in rx.iter() {
                        if failed.load(Ordering::Relaxed) {
                            continue; // drain so the feeder never blocks
                        }
                        if let Err(e) = counter.count_chunk(&chunk, &mut counts) {
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
        drop(tx);
        let mut parts: Vec<WordCounts> = workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|_| {
                failed.store(true, Ordering::Relaxed);
                WordCounts::new()
            }))
            .collect();
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
