//! Training end to end: settings -> counting -> word table -> merge loop -> model.

use crate::count::{count_parallel, new_map, CountStats, Counter, Map, WordCounts};
use crate::error::{Error, Result};
use crate::input::{read_chunks, total_size, Chunk, TextMode};
use crate::merge::{learn_merges, MergeParams, WordTable};
use crate::model::{Model, Scheme, SPACE_MARKER};
use crate::pretok::{PreTokenizer, PreTokenizerSpec, SpecialSplitter};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Everything that decides what is learned.
#[derive(Debug, Clone)]
pub struct TrainConfig {
    pub vocab_size: usize,
    pub scheme: Scheme,
    pub pretokenizer: PreTokenizerSpec,
    /// The user's special tokens (the chars scheme adds `unk_token` first).
    pub special_tokens: Vec<String>,
    pub min_frequency: u64,
    pub max_token_length: Option<usize>,
    pub threads: usize,
    pub text_mode: TextMode,
}

impl TrainConfig {
    /// Checks the settings before any input is read.
    pub fn validate(&self) -> Result<()> {
        if self.vocab_size == 0 {
            return Err(Error::parameter("vocab_size must be positive"));
        }
        if self.vocab_size > u32::MAX as usize / 2 {
            return Err(Error::parameter(format!("vocab_size {} is too large", self.vocab_size)));
        }
        if self.max_token_length == Some(0) {
            return Err(Error::parameter("max_token_length must be at least 1 (or None for no limit)"));
        }
        if let Scheme::Chars { unk_token, end_of_word_suffix, character_coverage } = &self.scheme {
            if !(*character_coverage > 0.0 && *character_coverage <= 1.0) {
                return Err(Error::parameter(format!(
                    "character_coverage must be in (0, 1], got {character_coverage}"
                )));
            }
            if unk_token.is_empty() {
                return Err(Error::parameter("unk_token must not be empty"));
            }
            if let Some(s) = end_of_word_suffix {
                if s.is_empty() {
                    return Err(Error::parameter("end_of_word_suffix must not be empty (use None for the ▁ prefix)"));
                }
                if self.pretokenizer != PreTokenizerSpec::Whitespace {
                    return Err(Error::parameter(format!(
                        "end_of_word_suffix needs pretokenizer=\"whitespace\" (got {:?}): words must be whitespace-separated to end them",
                        self.pretokenizer.name()
                    )));
                }
            }
        }
        let mut seen = std::collections::HashSet::new();
        for t in &self.special_tokens {
            if t.is_empty() {
                return Err(Error::parameter("special_tokens: an empty string cannot be a special token"));
            }
            if !seen.insert(t) {
                return Err(Error::parameter(format!("special_tokens: {t:?} is listed twice")));
            }
        }
        if let TextMode::Records(sep) = &self.text_mode {
            if sep.is_empty() {
                return Err(Error::parameter("separator must not be empty"));
            }
        }
        PreTokenizer::new(self.pretokenizer.clone())?;
        Ok(())
    }

    /// All special tokens in id order.
    pub fn all_special_tokens(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Scheme::Chars { unk_token, .. } = &self.scheme {
            out.push(unk_token.clone());
        }
        for t in &self.special_tokens {
            if !out.contains(t) {
                out.push(t.clone());
            }
        }
        out
    }
}

/// Progress while counting.
#[derive(Debug, Clone)]
pub struct CountProgress {
    pub raw_bytes_done: u64,
    pub raw_bytes_total: Option<u64>,
    pub elapsed: f64,
}

/// Progress while merging.
#[derive(Debug, Clone)]
pub struct MergeProgress {
    pub done: usize,
    pub target: usize,
    pub pair_count: u64,
    pub elapsed: f64,
}

/// What the caller sees during training.
pub trait Observer {
    /// Polled every few milliseconds on the training thread; `true` stops the
    /// run with an `Interrupted` error.
    fn should_stop(&mut self) -> bool {
        false
    }
    fn counting(&mut self, _p: &CountProgress) {}
    fn counted(&mut self, _stats: &CountStats, _word_types: usize, _seconds: f64) {}
    fn merging(&mut self, _p: &MergeProgress) {}
    fn merged(&mut self, _merges: usize, _seconds: f64) {}
}

/// An observer that sees nothing and never stops.
pub struct Silent;
impl Observer for Silent {}

/// How often the observer is polled.
const POLL_SECONDS: f64 = 0.05;

/// Trains on files.
pub fn train_files(paths: &[PathBuf], config: &TrainConfig, observer: &mut dyn Observer) -> Result<Model> {
    config.validate()?;
    if paths.is_empty() {
        return Err(Error::input("no input files given"));
    }
    let total = total_size(paths)?;
    let raw = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let counts = {
        let raw = raw.clone();
        count_words(config, observer, move |sink, observer| {
            let mut last = 0.0f64;
            read_chunks(paths, &config.text_mode, raw.clone(), &mut |chunk| {
                let t = start.elapsed().as_secs_f64();
                if t - last >= POLL_SECONDS {
                    last = t;
                    if observer.should_stop() {
                        return Err(Error::interrupted());
                    }
                    observer.counting(&CountProgress {
                        raw_bytes_done: raw.load(Ordering::Relaxed),
                        raw_bytes_total: Some(total),
                        elapsed: t,
                    });
                }
                sink(chunk)
            })
        })?
    };
    let inputs: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let count_seconds = start.elapsed().as_secs_f64();
    train_from_counts(counts, config, observer, serde_json::json!(inputs), count_seconds)
}

/// Counts word types from chunks produced by `feed` (files or Python).
pub fn count_words<'c>(
    config: &'c TrainConfig,
    observer: &mut dyn Observer,
    feed: impl FnOnce(&mut dyn FnMut(Chunk) -> Result<()>, &mut dyn Observer) -> Result<()>,
) -> Result<WordCounts> {
    let pre = PreTokenizer::new(config.pretokenizer.clone())?;
    let specials = SpecialSplitter::new(&config.all_special_tokens())?;
    let counter = Counter {
        pretokenizer: &pre,
        specials: &specials,
        allow_invalid_utf8: matches!(config.scheme, Scheme::Bytes),
    };
    let threads = if config.threads == 0 { default_threads() } else { config.threads };
    count_parallel(&counter, threads, |sink| feed(sink, observer))
}

/// All cores, as the OS reports them.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
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

/// The merge loop and model assembly, given word counts.
pub fn train_from_counts(
    counts: WordCounts,
    config: &TrainConfig,
    observer: &mut dyn Observer,
    inputs: serde_json::Value,
    count_seconds: f64,
) -> Result<Model> {
    config.validate()?;
    let word_types = counts.len();
    let stats = counts.stats.clone();
    if counts.is_empty() {
        return Err(Error::training(format!(
            "no text to train on: the input ({}) has {} text(s) but no pre-tokens; is it empty?",
            describe_inputs(&inputs),
            stats.texts
        )));
    }
    observer.counted(&counts.stats, word_types, count_seconds);
    let specials = config.all_special_tokens();
    let merge_start = Instant::now();

    // Base symbols and the word table.
    let mut tokens: Vec<Vec<u8>> = specials.iter().map(|s| s.as_bytes().to_vec()).collect();
    let base_start = tokens.len() as u32;
    let mut table = WordTable::new();
    let whitespace = config.pretokenizer == PreTokenizerSpec::Whitespace;
    let (alphabet, unk) = match &config.scheme {
        Scheme::Bytes => {
            tokens.extend((0..=255u8).map(|b| vec![b]));
            let lead = if whitespace { Some(base_start + b' ' as u32) } else { None };
            let mut result = Ok(());
            counts.for_each(|piece, count| {
                if result.is_ok() {
                    result = table.push(lead.into_iter().chain(piece.iter().map(|&b| base_start + b as u32)), count);
                }
            });
            result?;
            (None, None)
        }
        Scheme::Chars { end_of_word_suffix, character_coverage, .. } => {
            // Pass 1: intern symbols, count them, keep each word as symbol ids.
            let mut interned: Map<String, u32> = new_map();
            let mut freq: Vec<u64> = Vec::new();
            let mut names: Vec<String> = Vec::new();
            let mut words: Vec<(Vec<u32>, u64)> = Vec::with_capacity(counts.len());
            let mut buf = Vec::new();
            counts.for_each(|piece, count| {
                // Counting already checked UTF-8 for the chars scheme.
                let piece = String::from_utf8_lossy(piece);
                char_symbols(&piece, whitespace, end_of_word_suffix.as_deref(), &mut buf);
                let ids: Vec<u32> = buf
                    .iter()
                    .map(|s| {
                        let next = names.len() as u32;
                        let id = *interned.entry_ref(s.as_str()).or_insert(next);
                        if id == next {
                            names.push(s.clone());
                            freq.push(0);
                        }
                        freq[id as usize] += count;
                        id
                    })
                    .collect();
                words.push((ids, count));
            });
            drop(counts);
            let mut order: Vec<u32> = (0..names.len() as u32).collect();
            order.sort_by(|&x, &y| {
                freq[y as usize].cmp(&freq[x as usize]).then_with(|| names[x as usize].as_bytes().cmp(names[y as usize].as_bytes()))
            });
            let total: u64 = freq.iter().sum();
            let mut keep = order.len();
            if *character_coverage < 1.0 {
                let mut cum = 0u64;
                for (k, &s) in order.iter().enumerate() {
                    cum += freq[s as usize];
                    // The covered share, as the contract states it (cum / total >= c);
                    // cum >= c * total rounds differently at exact boundaries.
                    if (cum as f64) / (total as f64) >= *character_coverage {
                        keep = k + 1;
                        break;
                    }
                }
            }
            let unk = config.all_special_tokens().iter().position(|t| {
                matches!(&config.scheme, Scheme::Chars { unk_token, .. } if t == unk_token)
            });
            let unk = unk.map(|u| u as u32).ok_or_else(|| Error::training("unk_token missing"))?;
            let mut remap = vec![unk; names.len()];
            let mut alphabet = Vec::with_capacity(keep);
            for (k, &s) in order.iter().take(keep).enumerate() {
                remap[s as usize] = base_start + k as u32;
                alphabet.push(names[s as usize].clone());
                tokens.push(names[s as usize].as_bytes().to_vec());
            }
            for (ids, count) in words {
                table.push(ids.into_iter().map(|s| remap[s as usize]), count)?;
            }
            (Some(alphabet), Some(unk))
        }
    };
    let base = tokens.len() - specials.len();
    let fixed = specials.len() + base;
    if config.vocab_size < fixed {
        return Err(Error::parameter(format!(
            "vocab_size {} is below the base vocabulary: {} special token(s) + {} base symbols = {}; raise vocab_size to at least {}",
            config.vocab_size,
            specials.len(),
            base,
            fixed,
            fixed
        )));
    }
    let mut token_ids: Map<Vec<u8>, u32> = new_map();
    for (i, t) in tokens.iter().enumerate() {
        token_ids.entry(t.clone()).or_insert(i as u32);
    }
    let target = config.vocab_size - fixed;
    let params = MergeParams {
        max_merges: target,
        min_frequency: config.min_frequency,
        max_token_length: config.max_token_length,
        unk,
    };
    let mut last = 0.0f64;
    let mut tick = |done: usize, pair_count: u64| -> bool {
        let t = merge_start.elapsed().as_secs_f64();
        if t - last >= POLL_SECONDS || done == 0 {
            last = t;
            if observer.should_stop() {
                return true;
            }
            observer.merging(&MergeProgress { done, target, pair_count, elapsed: t });
        }
        false
    };
    let word_table_types = table.len();
    let word_table_symbols = table.sym.len();
    let merges = learn_merges(table, &mut tokens, &mut token_ids, &params, &mut tick)?;
    let merge_seconds = merge_start.elapsed().as_secs_f64();
    observer.merged(merges.len(), merge_seconds);

    let mut model = Model::new(config.scheme.clone(), config.pretokenizer.clone(), specials, alphabet);
    model.merges = merges.iter().map(|&(a, b, _)| (a, b)).collect();
    model.merge_counts = merges.iter().map(|&(_, _, c)| c).collect();
    let stopped_early = model.merges.len() < target;
    model.metadata = serde_json::json!({
        "library": format!("bpeforge {}", env!("CARGO_PKG_VERSION")),
        "inputs": inputs,
        "settings": {
            "vocab_size": config.vocab_size,
            "scheme": config.scheme.name(),
            "pretokenizer": config.pretokenizer.name(),
            "min_frequency": config.min_frequency,
            "max_token_length": config.max_token_length,
            "threads": if config.threads == 0 { default_threads() } else { config.threads },
            "text_mode": match &config.text_mode {
                TextMode::Lines => "lines".to_string(),
                TextMode::WholeFile => "documents".to_string(),
                TextMode::Records(s) => format!("records separated by {:?}", String::from_utf8_lossy(s)),
            },
        },
        "corpus": {
            "bytes": stats.bytes,
            "texts": stats.texts,
            "pretokens": stats.pieces,
            "special_token_occurrences": stats.specials,
        },
        "timings": {"count_seconds": round3(count_seconds), "merge_seconds": round3(merge_seconds)},
        "word_types": word_types,
        "word_table": {"types_with_pairs": word_table_types, "symbols": word_table_symbols},
        "stopped_early": stopped_early,
    });
    Ok(model)
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn describe_inputs(inputs: &serde_json::Value) -> String {
    match inputs {
        serde_json::Value::Array(items) => {
            let names: Vec<String> = items.iter().take(3).map(|v| v.as_str().unwrap_or("?").to_string()).collect();
            let more = if items.len() > 3 { format!(" and {} more", items.len() - 3) } else { String::new() };
            format!("{}{more}", names.join(", "))
        }
        other => other.to_string(),
    }
}
