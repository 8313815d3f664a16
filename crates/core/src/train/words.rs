//! The base vocabulary and the word table, per scheme: bytes (256 byte
//! symbols) or chars (Unicode characters, kept by frequency up to
//! `character_coverage`). Word types counted fewer than `min_word_count`
//! times are pruned here.

use super::extend::{replay_bytes_table, replay_words, Resume};
use super::merge::WordTable;
use super::TrainConfig;
use crate::count::WordCounts;
use crate::error::{Error, Result};
use crate::model::{Scheme, SPACE_MARKER};
use crate::pretok::PreTokenizerSpec;
use crate::util::{new_map, threads_or_default, Map};

/// Special tokens and base symbols (the tokens before any merge), and every
/// word type as a run of those symbols.
pub(crate) struct WordBase {
    /// Token bytes by id: special tokens, then base symbols.
    pub tokens: Vec<Vec<u8>>,
    pub table: WordTable,
    /// The chars scheme's alphabet (base symbols in id order).
    pub alphabet: Option<Vec<String>>,
    /// The chars scheme's unknown-symbol id.
    pub unk: Option<u32>,
    /// Word types dropped by `min_word_count`.
    pub pruned: usize,
}

/// Builds the base vocabulary and word table from `counts` (consumed: the
/// merge loop, where the peak memory is, no longer needs them).
pub(crate) fn build(counts: WordCounts, config: &TrainConfig, specials: &[String], resume: &Resume) -> Result<WordBase> {
    let tokens: Vec<Vec<u8>> = specials.iter().map(|s| s.as_bytes().to_vec()).collect();
    let whitespace = config.pretokenizer == PreTokenizerSpec::WHITESPACE;
    match &config.scheme {
        Scheme::Bytes => bytes_base(counts, config, tokens, whitespace, resume),
        Scheme::Chars { end_of_word_suffix, character_coverage, unk_token, .. } => {
            let unk = specials
                .iter()
                .position(|t| t == unk_token)
                .map(|u| u as u32)
                .ok_or_else(|| Error::training("unk_token missing"));
            chars_base(counts, config, tokens, whitespace, end_of_word_suffix.as_deref(), *character_coverage, unk, resume)
        }
    }
}

/// Bytes scheme: 256 byte symbols; each word type's bytes (after a space
/// symbol with the whitespace pre-tokenizer) straight into the table, or
/// re-encoded with the resumed merges on all threads when extending.
fn bytes_base(
    counts: WordCounts,
    config: &TrainConfig,
    mut tokens: Vec<Vec<u8>>,
    whitespace: bool,
    resume: &Resume,
) -> Result<WordBase> {
    let base_start = tokens.len() as u32;
    let min_count = config.min_word_count.max(1);
    tokens.extend((0..=255u8).map(|b| vec![b]));
    let lead = if whitespace { Some(base_start + b' ' as u32) } else { None };
    let mut step = crate::steps::begin("word table", "word types", counts.len() as u64);
    let (table, pruned) = match &resume.replay {
        // No per-type symbol vectors are kept.
        Some(enc) => replay_bytes_table(&counts, enc, whitespace, min_count, threads_or_default(config.threads))?,
        None if base_start + 256 < u16::MAX as u32 => {
            bytes_table_in_parts(&counts, base_start, lead, min_count, threads_or_default(config.threads), &step)?
        }
        None => {
            // Size the table exactly: one allocation, no regrowth.
            let mut symbols = 0usize;
            counts.for_each(|piece, count| {
                if count >= min_count && piece.len() + lead.is_some() as usize >= 2 {
                    symbols += piece.len() + lead.is_some() as usize;
                }
            });
            let mut table = WordTable::with_capacity(symbols);
            let mut pruned = 0usize;
            let mut result = Ok(());
            // Draining: the counts' memory is freed as the table fills.
            counts.drain_each(|piece, count| {
                step.tick();
                if count < min_count {
                    pruned += 1;
                    return;
                }
                if result.is_ok() {
                    let syms = lead.into_iter().chain(piece.iter().map(|&b| base_start + b as u32));
                    result = table.push(syms, count);
                }
            });
            result?;
            (table, pruned)
        }
    };
    crate::memory::alloc::release_free_memory();
    Ok(WordBase { tokens, table, alphabet: None, unk: None, pruned })
}

/// The bytes scheme's word table (symbols `base_start + byte`, after
/// `lead`), built on `threads` threads, each from its share of the counts
/// (`WordCounts::for_each_part`, then `drain_part`, which frees the counts
/// as the table fills): the same words in the same order as one thread
/// would write them. Returns it and the number of pruned types.
fn bytes_table_in_parts(
    counts: &WordCounts,
    base_start: u32,
    lead: Option<u32>,
    min_count: u64,
    threads: usize,
    step: &crate::steps::Step,
) -> Result<(WordTable, usize)> {
    let lead_len = lead.is_some() as usize;
    // Pass 1: each share's words and symbols, so that the table is sized
    // exactly and every share knows where its words go.
    let sizes = crate::util::on_threads(threads, &|p| {
        let (mut words, mut symbols, mut pruned) = (0usize, 0usize, 0usize);
        counts.for_each_part(p, threads, |piece, count| {
            if count < min_count {
                pruned += 1;
            } else if piece.len() + lead_len >= 2 {
                words += 1;
                symbols += piece.len() + lead_len;
            }
        });
        (words, symbols, pruned)
    })?;
    let pruned = sizes.iter().map(|s| s.2).sum();
    let sizes: Vec<(usize, usize)> = sizes.iter().map(|s| (s.0, s.1)).collect();
    let table = WordTable::build_in_parts(&sizes, &|p, out| {
        let mut result = Ok(());
        let mut tick = step.ticker();
        // The last read of the counts: each share frees its pages as it goes.
        counts.drain_part(p, threads, |piece, count| {
            tick.tick();
            if count >= min_count && piece.len() + lead_len >= 2 && result.is_ok() {
                result = out.push(lead.into_iter().chain(piece.iter().map(|&b| base_start + b as u32)), count);
            }
        });
        result
    })?;
    Ok((table, pruned))
}

/// Chars scheme: symbols interned and counted, the alphabet chosen (or the
/// resumed model's kept), rarer symbols mapped to `unk`.
#[allow(clippy::too_many_arguments)]
fn chars_base(
    counts: WordCounts,
    config: &TrainConfig,
    mut tokens: Vec<Vec<u8>>,
    whitespace: bool,
    suffix: Option<&str>,
    coverage: f64,
    unk: Result<u32>,
    resume: &Resume,
) -> Result<WordBase> {
    let base_start = tokens.len() as u32;
    let interned = intern_symbols(&counts, whitespace, suffix, config.min_word_count.max(1));
    drop(counts);
    let unk = unk?;
    let alphabet: Vec<String> = match resume.model {
        // Extending keeps every old id: the alphabet is the model's.
        Some(m) => m.alphabet.clone().unwrap_or_default(),
        None => choose_alphabet(&interned.names, &interned.freq, coverage),
    };
    let mut position: Map<&str, u32> = new_map();
    for (k, sym) in alphabet.iter().enumerate() {
        position.insert(sym.as_str(), base_start + k as u32);
        tokens.push(sym.as_bytes().to_vec());
    }
    let remap: Vec<u32> = interned.names.iter().map(|n| position.get(n.as_str()).copied().unwrap_or(unk)).collect();
    drop(position);
    let mut words: Vec<(Vec<u32>, u64)> =
        interned.words.into_iter().map(|(ids, count)| (ids.into_iter().map(|s| remap[s as usize]).collect(), count)).collect();
    if let Some(enc) = &resume.replay {
        replay_words(enc, &mut words, threads_or_default(config.threads))?;
    }
    let mut table = WordTable::with_capacity(words.iter().map(|(w, _)| if w.len() >= 2 { w.len() } else { 0 }).sum());
    for (syms, count) in words {
        table.push(syms, count)?;
    }
    Ok(WordBase { tokens, table, alphabet: Some(alphabet), unk: Some(unk), pruned: interned.pruned })
}

/// Every kept word type as symbol ids, with the symbols' names and counts.
struct Interned {
    names: Vec<String>,
    freq: Vec<u64>,
    words: Vec<(Vec<u32>, u64)>,
    pruned: usize,
}

fn intern_symbols(counts: &WordCounts, whitespace: bool, suffix: Option<&str>, min_count: u64) -> Interned {
    let mut interned: Map<String, u32> = new_map();
    let mut out = Interned { names: Vec::new(), freq: Vec::new(), words: Vec::with_capacity(counts.len()), pruned: 0 };
    let mut buf = Vec::new();
    let mut step = crate::steps::begin("word table", "word types", counts.len() as u64);
    counts.for_each(|piece, count| {
        step.tick();
        if count < min_count {
            out.pruned += 1;
            return;
        }
        // Counting already checked UTF-8 for the chars scheme.
        let piece = String::from_utf8_lossy(piece);
        char_symbols(&piece, whitespace, suffix, &mut buf);
        let ids: Vec<u32> = buf
            .iter()
            .map(|s| {
                let next = out.names.len() as u32;
                let id = *interned.entry_ref(s.as_str()).or_insert(next);
                if id == next {
                    out.names.push(s.clone());
                    out.freq.push(0);
                }
                out.freq[id as usize] += count;
                id
            })
            .collect();
        out.words.push((ids, count));
    });
    out
}

/// The most frequent symbols (ties by bytes) covering `coverage` of all
/// symbol occurrences.
fn choose_alphabet(names: &[String], freq: &[u64], coverage: f64) -> Vec<String> {
    let mut order: Vec<u32> = (0..names.len() as u32).collect();
    order.sort_by(|&x, &y| {
        freq[y as usize].cmp(&freq[x as usize]).then_with(|| names[x as usize].as_bytes().cmp(names[y as usize].as_bytes()))
    });
    let total: u64 = freq.iter().sum();
    let mut keep = order.len();
    if coverage < 1.0 {
        let mut cum = 0u64;
        for (k, &s) in order.iter().enumerate() {
            cum += freq[s as usize];
            // The covered share, as the contract states it (cum / total >= c);
            // cum >= c * total rounds differently at exact boundaries.
            if (cum as f64) / (total as f64) >= coverage {
                keep = k + 1;
                break;
            }
        }
    }
    order.iter().take(keep).map(|&s| names[s as usize].clone()).collect()
}

/// Base symbols of one word type, as strings (chars scheme).
fn char_symbols(piece: &str, whitespace: bool, suffix: Option<&str>, out: &mut Vec<String>) {
    out.clear();
    match suffix {
        Some(suf) => {
            let n = piece.chars().count();
            for (i, c) in piece.chars().enumerate() {
                let mut s = c.to_string();
                if i + 1 == n {
                    s.push_str(suf);
                }
                out.push(s);
            }
        }
        None => {
            if whitespace {
                out.push(SPACE_MARKER.to_string());
            }
            for c in piece.chars() {
                out.push(if c == ' ' { SPACE_MARKER.to_string() } else { c.to_string() });
            }
        }
    }
}

