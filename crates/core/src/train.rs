//! Training end to end: settings -> counting -> word table -> merge loop -> model.

use crate::count::{count_parallel, CountStats, Counter, WordCounts};
use crate::util::{join_all, new_map, threads_or_default, Map};
use crate::error::{Error, Result};
use crate::input::{read_chunks, total_size, Chunk, TextMode};
use crate::encode::Encoder;
use crate::merge::{learn_merges, Flow, MergeParams, WordTable};
use crate::model::{Model, Scheme, SPACE_MARKER};
use crate::pretok::{PreTokenizer, PreTokenizerSpec, SpecialSplitter};
use std::io::Write;
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
    /// Word types seen fewer times than this are dropped after counting
    /// (1 keeps all). Saves memory and merge time on huge corpora; merges
    /// then only see frequent word types.
    pub min_word_count: u64,
    /// Continue this model's merges (its scheme, pre-tokenizer, special
    /// tokens and alphabet win over the fields above).
    pub resume_from: Option<Model>,
    /// Save the model every `n` merges to this path (and when interrupted).
    pub checkpoint: Option<(PathBuf, usize)>,
    /// Train SuperBPE: plain BPE up to a transition size, then superwords.
    pub superbpe: Option<SuperBpe>,
    /// Limits on merged tokens (set for SuperBPE's stage 2).
    pub token_limits: TokenLimits,
    /// Reweight counts by language (files only, lines mode).
    pub balance: Option<LanguageBalance>,
    /// Write (merge index, pair count, elapsed seconds) rows here, live.
    pub progress_csv: Option<PathBuf>,
}

/// Language-balanced counting: each line's language comes from a side file
/// (one tag per line, aligned with each input file) or one tag per file;
/// word counts are reweighted so language l's share p_l (of lines) becomes
/// q_l = p_l^(1/T) / sum_k p_k^(1/T), as temperature sampling does in
/// multilingual MT and LM data mixing, without dropping any line.
#[derive(Debug, Clone, PartialEq)]
pub struct LanguageBalance {
    pub source: LangSource,
    /// 1: no change; larger: flatter (more weight to small languages).
    pub temperature: f64,
    /// Parity balancing: start from the temperature weights, then reweight
    /// by measured premiums (`balance::train_parity`).
    pub parity: Option<crate::balance::Parity>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum LangSource {
    /// One language file per input file, one tag per line.
    Files(Vec<PathBuf>),
    /// One tag per input file.
    PerFile(Vec<String>),
}

/// Weights are scaled integers: counts stay exact u64 sums; the final
/// division rounds to nearest and never goes below 1 (no word type lost).
pub const WEIGHT_SCALE: u64 = 1 << 16;
/// Largest per-language weight (keeps scaled u64 counts far from overflow).
pub const MAX_LANGUAGE_WEIGHT: f64 = 1e4;

/// Languages, their line counts and counting weights.
#[derive(Debug, Clone, Default)]
pub struct LanguageTable {
    pub names: Vec<String>,
    pub ids: std::collections::HashMap<String, u16>,
    pub lines: Vec<u64>,
    pub weights: Vec<u64>,
}

impl LanguageTable {
    fn id(&mut self, tag: &str, where_: impl Fn() -> String) -> Result<u16> {
        if let Some(&id) = self.ids.get(tag) {
            return Ok(id);
        }
        if tag.is_empty() {
            return Err(Error::input(format!("{}: empty language tag", where_())));
        }
        if self.names.len() >= u16::MAX as usize {
            return Err(Error::input(format!("{}: more than 65535 distinct language tags", where_())));
        }
        let id = self.names.len() as u16;
        self.names.push(tag.to_string());
        self.ids.insert(tag.to_string(), id);
        self.lines.push(0);
        Ok(id)
    }

    /// Counts lines per language and derives the weights.
    pub fn build(paths: &[PathBuf], balance: &LanguageBalance) -> Result<Self> {
        use std::io::BufRead;
        let mut table = LanguageTable::default();
        match &balance.source {
            LangSource::Files(langs) => {
                if langs.len() != paths.len() {
                    return Err(Error::parameter(format!(
                        "langs: {} language file(s) for {} input file(s); give one per input file",
                        langs.len(),
                        paths.len()
                    )));
                }
                for path in langs {
                    let reader = std::io::BufReader::new(crate::input::open(path, Arc::new(AtomicU64::new(0)))?);
                    for (n, line) in reader.lines().enumerate() {
                        let line = line.map_err(|e| Error::io_read(path, &e))?;
                        let tag = line.trim();
                        let id = table.id(tag, || format!("{}, line {}", path.display(), n + 1))?;
                        table.lines[id as usize] += 1;
                    }
                }
            }
            LangSource::PerFile(tags) => {
                if tags.len() != paths.len() {
                    return Err(Error::parameter(format!(
                        "file_languages: {} tag(s) for {} input file(s); give one per input file",
                        tags.len(),
                        paths.len()
                    )));
                }
                for (path, tag) in paths.iter().zip(tags) {
                    let id = table.id(tag, || "file_languages".to_string())?;
                    let mut reader = crate::input::open(path, Arc::new(AtomicU64::new(0)))?;
                    let mut buf = vec![0u8; 1 << 20];
                    let mut last = b'\n';
                    let mut n = 0u64;
                    loop {
                        let k = reader.read(&mut buf).map_err(|e| Error::io_read(path, &e))?;
                        if k == 0 {
                            break;
                        }
                        n += memchr::memchr_iter(b'\n', &buf[..k]).count() as u64;
                        last = buf[k - 1];
                    }
                    if last != b'\n' {
                        n += 1;
                    }
                    table.lines[id as usize] += n;
                }
            }
        }
        let total: u64 = table.lines.iter().sum();
        if total == 0 {
            return Err(Error::training("language balancing: the language files are empty"));
        }
        let t = balance.temperature;
        let p: Vec<f64> = table.lines.iter().map(|&l| l as f64 / total as f64).collect();
        let z: f64 = p.iter().map(|&x| x.powf(1.0 / t)).sum();
        table.weights = p
            .iter()
            .map(|&x| {
                let q = x.powf(1.0 / t) / z;
                ((q / x) * WEIGHT_SCALE as f64).round().max(1.0) as u64
            })
            .collect();
        Ok(table)
    }

    fn metadata(&self, temperature: f64) -> serde_json::Value {
        let total: u64 = self.lines.iter().sum();
        let mut langs = serde_json::Map::new();
        for (i, name) in self.names.iter().enumerate() {
            let p = self.lines[i] as f64 / total as f64;
            let w = self.weights[i] as f64 / WEIGHT_SCALE as f64;
            langs.insert(
                name.clone(),
                serde_json::json!({"lines": self.lines[i], "share": (p * 1e6).round() / 1e6,
                                   "balanced_share": (p * w * 1e6).round() / 1e6, "weight": (w * 1e4).round() / 1e4}),
            );
        }
        serde_json::json!({"method": "temperature", "temperature": temperature, "languages": langs})
    }
}

/// SuperBPE settings (Liu et al., 2025).
#[derive(Debug, Clone, PartialEq)]
pub struct SuperBpe {
    /// Vocabulary size at which stage 1 (subwords) ends.
    pub transition: usize,
    /// At most this many words in one token (0: no limit); the paper uses 4.
    pub max_words: usize,
    /// No token may span ": " (a colon, a space, and more after it).
    pub colon_rule: bool,
}

/// Limits on which merged tokens may be created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenLimits {
    /// Maximum number of words (runs of non-space bytes) per token; 0: none.
    pub max_words: usize,
    /// Refuse tokens that span ": ".
    pub colon_rule: bool,
}

impl TrainConfig {
    /// A configuration with the usual defaults.
    pub fn new(vocab_size: usize, scheme: Scheme, pretokenizer: PreTokenizerSpec) -> Self {
        TrainConfig {
            vocab_size,
            scheme,
            pretokenizer,
            special_tokens: Vec::new(),
            min_frequency: 2,
            max_token_length: None,
            threads: 0,
            text_mode: TextMode::Lines,
            min_word_count: 1,
            resume_from: None,
            checkpoint: None,
            superbpe: None,
            token_limits: TokenLimits::default(),
            balance: None,
            progress_csv: None,
        }
    }

    /// Takes scheme, pre-tokenizer and special tokens from `resume_from`.
    pub fn adopt_resumed_settings(&mut self) {
        if let Some(m) = &self.resume_from {
            self.scheme = m.scheme.clone();
            self.pretokenizer = m.pretokenizer.clone();
            let unk = match &m.scheme {
                Scheme::Chars { unk_token, .. } => Some(unk_token.clone()),
                Scheme::Bytes => None,
            };
            self.special_tokens = m.special_tokens.iter().filter(|t| Some(*t) != unk.as_ref()).cloned().collect();
        }
    }

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
        if let Some(b) = &self.balance {
            if !(b.temperature > 0.0 && b.temperature.is_finite()) {
                return Err(Error::parameter(format!("temperature must be positive, got {}", b.temperature)));
            }
            if self.text_mode != TextMode::Lines {
                return Err(Error::parameter("language balancing reads one language per line: it needs the lines text mode"));
            }
            if let Some(p) = &b.parity {
                p.validate()?;
                if self.superbpe.is_some() {
                    return Err(Error::parameter("max_premium (parity balancing) cannot be combined with superbpe_transition"));
                }
                if self.resume_from.is_some() {
                    return Err(Error::parameter(
                        "max_premium (parity balancing) cannot be combined with resume_from: each round retrains from the start",
                    ));
                }
            }
        }
        if let Some(sb) = &self.superbpe {
            if !matches!(self.scheme, Scheme::Bytes) {
                return Err(Error::parameter("superbpe_transition: SuperBPE is implemented for scheme=\"bytes\""));
            }
            if sb.transition >= self.vocab_size {
                return Err(Error::parameter(format!(
                    "superbpe_transition {} must be below vocab_size {} (stage 2 learns the merges in between)",
                    sb.transition, self.vocab_size
                )));
            }
            if self.resume_from.is_some() {
                return Err(Error::parameter("superbpe_transition cannot be combined with resume_from"));
            }
            if self.pretokenizer == PreTokenizerSpec::Superword {
                return Err(Error::parameter("superbpe_transition: stage 1 needs a word-level pre-tokenizer such as \"gpt2\""));
            }
        }
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
    /// Progress of `encode_file`.
    fn encoding(&mut self, _p: &CountProgress) {}
    fn encoded(&mut self, _stats: &crate::encode_file::EncodeStats) {}
    /// A round of parity balancing ended (`balance::train_parity`).
    fn balancing(&mut self, _round: &crate::balance::BalanceRound) {}
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
    let languages = match &config.balance {
        Some(b) => Some(LanguageTable::build(paths, b)?),
        None => None,
    };
    let parity = config.balance.as_ref().and_then(|b| b.parity.as_ref());
    // UTF-8 bytes of each language's texts (what parity measures against).
    let mut lang_bytes = vec![0u64; languages.as_ref().map_or(0, |t| t.names.len())];
    let mut counts = {
        let raw = raw.clone();
        let weights = languages.as_ref().map(|t| t.weights.clone());
        let mode = match (parity, &weights) {
            (Some(_), _) => CountMode::Tagged,
            (None, Some(w)) => CountMode::Weighted(w),
            (None, None) => CountMode::Plain,
        };
        let languages = &languages;
        let lang_bytes = &mut lang_bytes;
        count_words_mode(config, observer, mode, move |sink, observer| {
            let mut last = 0.0f64;
            for (i, path) in paths.iter().enumerate() {
                let mut tagger = match (&config.balance, languages) {
                    (Some(b), Some(table)) => Some(Tagger::new(&b.source, i, table)?),
                    _ => None,
                };
                read_chunks(std::slice::from_ref(path), &config.text_mode, raw.clone(), &mut |mut chunk| {
                    if let Some(t) = tagger.as_mut() {
                        t.tag(&mut chunk)?;
                    }
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
                })?;
                if let Some(t) = tagger {
                    for (total, b) in lang_bytes.iter_mut().zip(t.finish()?) {
                        *total += b;
                    }
                }
            }
            Ok(())
        })?
    };
    let inputs: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let count_seconds = start.elapsed().as_secs_f64();
    if let (Some(p), Some(table), Some(b)) = (parity, &languages, &config.balance) {
        return crate::balance::train_parity(
            counts,
            table,
            &lang_bytes,
            b.temperature,
            p,
            config,
            observer,
            serde_json::json!(inputs),
            count_seconds,
        );
    }
    if languages.is_some() {
        counts.rescale(WEIGHT_SCALE);
    }
    let mut model = train_from_counts(counts, config, observer, serde_json::json!(inputs), count_seconds)?;
    if let (Some(table), Some(b), Some(obj)) = (&languages, &config.balance, model.metadata.as_object_mut()) {
        obj.insert("language_balance".into(), table.metadata(b.temperature));
    }
    Ok(model)
}

/// Attaches each line's language id to chunks of input file `i`.
struct Tagger<'a> {
    fixed: Option<u16>,
    reader: Option<(std::io::BufReader<Box<dyn std::io::Read + Send>>, &'a PathBuf)>,
    table: &'a LanguageTable,
    line: u64,
    /// UTF-8 bytes of the texts seen, per language id.
    bytes: Vec<u64>,
}

impl<'a> Tagger<'a> {
    fn new(source: &'a LangSource, i: usize, table: &'a LanguageTable) -> Result<Self> {
        Ok(match source {
            LangSource::PerFile(tags) => Tagger {
                fixed: table.ids.get(&tags[i]).copied(),
                reader: None,
                table,
                line: 0,
                bytes: vec![0; table.names.len()],
            },
            LangSource::Files(files) => {
                let r = crate::input::open(&files[i], Arc::new(AtomicU64::new(0)))?;
                Tagger {
                    fixed: None,
                    reader: Some((std::io::BufReader::new(r), &files[i])),
                    table,
                    line: 0,
                    bytes: vec![0; table.names.len()],
                }
            }
        })
    }

    fn tag(&mut self, chunk: &mut Chunk) -> Result<()> {
        use std::io::BufRead;
        let mut lengths = Vec::new();
        chunk.for_each_text::<()>(&mut |text, _| {
            lengths.push(text.len() as u64);
            Ok(())
        })
        .ok();
        let n = lengths.len();
        if let Some(id) = self.fixed {
            chunk.langs = vec![id; n];
            self.bytes[id as usize] += lengths.iter().sum::<u64>();
            return Ok(());
        }
        let Some((reader, path)) = self.reader.as_mut() else { return Ok(()) };
        let mut tags = Vec::with_capacity(n);
        let mut buf = String::new();
        for _ in 0..n {
            buf.clear();
            self.line += 1;
            let k = reader.read_line(&mut buf).map_err(|e| Error::io_read(path, &e))?;
            if k == 0 {
                return Err(Error::input(format!(
                    "{} has only {} line(s) but {} has more lines: the language file must have one tag per input line",
                    path.display(),
                    self.line - 1,
                    chunk.source
                )));
            }
            let tag = buf.trim();
            let id = self.table.ids.get(tag).copied().ok_or_else(|| {
                Error::input(format!("{}, line {}: language tag {tag:?} changed while reading", path.display(), self.line))
            })?;
            tags.push(id);
            self.bytes[id as usize] += lengths[tags.len() - 1];
        }
        chunk.langs = tags;
        Ok(())
    }

    /// Checks the language file has no extra lines; returns the bytes per language.
    fn finish(self) -> Result<Vec<u64>> {
        use std::io::BufRead;
        if let Some((mut reader, path)) = self.reader {
            let mut buf = String::new();
            while reader.read_line(&mut buf).map_err(|e| Error::io_read(path, &e))? > 0 {
                if !buf.trim().is_empty() {
                    return Err(Error::input(format!(
                        "{} has more lines ({}+) than its input file: the language file must have one tag per input line",
                        path.display(),
                        self.line + 1
                    )));
                }
                buf.clear();
            }
        }
        Ok(self.bytes)
    }
}

/// Counts word types from chunks produced by `feed` (files or Python).
pub fn count_words<'c>(
    config: &'c TrainConfig,
    observer: &mut dyn Observer,
    feed: impl FnOnce(&mut dyn FnMut(Chunk) -> Result<()>, &mut dyn Observer) -> Result<()>,
) -> Result<WordCounts> {
    count_words_weighted(config, observer, None, feed)
}

/// `count_words` with per-language integer weights (chunks carry languages).
pub fn count_words_weighted<'c>(
    config: &'c TrainConfig,
    observer: &mut dyn Observer,
    lang_weights: Option<&[u64]>,
    feed: impl FnOnce(&mut dyn FnMut(Chunk) -> Result<()>, &mut dyn Observer) -> Result<()>,
) -> Result<WordCounts> {
    let mode = match lang_weights {
        Some(w) => CountMode::Weighted(w),
        None => CountMode::Plain,
    };
    count_words_mode(config, observer, mode, feed)
}

/// How counting treats the language of each text.
#[derive(Clone, Copy)]
enum CountMode<'w> {
    Plain,
    /// Each occurrence counts its language's integer weight.
    Weighted(&'w [u64]),
    /// Keys carry the language (`WordCounts::add_tagged`), counts are raw.
    Tagged,
}

fn count_words_mode<'c>(
    config: &'c TrainConfig,
    observer: &mut dyn Observer,
    mode: CountMode<'_>,
    feed: impl FnOnce(&mut dyn FnMut(Chunk) -> Result<()>, &mut dyn Observer) -> Result<()>,
) -> Result<WordCounts> {
    let (lang_weights, tag_languages) = match mode {
        CountMode::Plain => (None, false),
        CountMode::Weighted(w) => (Some(w), false),
        CountMode::Tagged => (None, true),
    };
    let pre = PreTokenizer::new(config.pretokenizer.clone())?;
    let specials = SpecialSplitter::new(&config.all_special_tokens())?;
    let stage2 = match &config.superbpe {
        Some(_) => Some(PreTokenizer::new(PreTokenizerSpec::Superword)?),
        None => None,
    };
    let counter = Counter {
        pretokenizer: &pre,
        specials: &specials,
        allow_invalid_utf8: matches!(config.scheme, Scheme::Bytes),
        superword: stage2.as_ref(),
        lang_weights,
        tag_languages,
    };
    let threads = threads_or_default(config.threads);
    count_parallel(&counter, threads, |sink| feed(sink, observer))
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
    mut counts: WordCounts,
    config: &TrainConfig,
    observer: &mut dyn Observer,
    inputs: serde_json::Value,
    count_seconds: f64,
) -> Result<Model> {
    config.validate()?;
    if let Some(sb) = &config.superbpe {
        let units = counts.superword.take().ok_or_else(|| Error::training("SuperBPE needs stage-2 counts"))?;
        return train_superbpe(counts, *units, config, sb, observer, inputs, count_seconds);
    }
    let word_types = counts.len();
    let table_bytes = counts.memory_bytes();
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
    let resumed = config.resume_from.as_ref();
    if let Some(m) = resumed {
        if m.special_tokens != specials || m.scheme != config.scheme || m.pretokenizer != config.pretokenizer {
            return Err(Error::parameter(
                "resume_from: the model's scheme, pre-tokenizer and special tokens must be kept when resuming",
            ));
        }
    }
    // An imported model keeps its own (external) ids; new tokens get fresh
    // ids after the largest one in use (SEMANTICS §8).
    let (old_ids, first_new_id) = match resumed.and_then(|m| m.ids.as_ref().map(|ids| (m, ids))) {
        Some((m, ids)) => {
            let first = next_external_id(m, ids)?;
            let room = crate::model::MAX_EXTERNAL_ID as u64 - first as u64;
            let id_count = ids.iter().map(|&e| e as u64 + 1).max().unwrap_or(0);
            let grow = (config.vocab_size as u64).saturating_sub(id_count);
            if grow > room {
                return Err(Error::parameter(format!(
                    "resume_from: new ids start at {first} for this imported model; {grow} new ids would pass the largest id a model may have ({}); lower vocab_size to at most {}",
                    crate::model::MAX_EXTERNAL_ID - 1,
                    id_count + room
                )));
            }
            (Some(ids.clone()), first)
        }
        None => (None, 0),
    };
    // A resumed model's merges are replayed on every word type, which puts
    // the word table exactly where the original run left it.
    let replay = match resumed {
        Some(m) => Some(Encoder::new(m.clone())?),
        None => None,
    };

    // Base symbols and the word table.
    let mut tokens: Vec<Vec<u8>> = specials.iter().map(|s| s.as_bytes().to_vec()).collect();
    let base_start = tokens.len() as u32;
    let mut table = WordTable::new();
    let whitespace = config.pretokenizer == PreTokenizerSpec::Whitespace;
    let min_count = config.min_word_count.max(1);
    let mut pruned_types = 0usize;
    // With a replay, words are collected and replayed on all threads (word
    // types are independent) before entering the table; SuperBPE's stage 2
    // replays tens of thousands of merges on long units, the bulk of its
    // extra cost.
    let mut pending: Vec<(Vec<u32>, u64)> = Vec::new();
    let push_word = |table: &mut WordTable, pending: &mut Vec<(Vec<u32>, u64)>, syms: Vec<u32>, count: u64| -> Result<()> {
        if replay.is_some() {
            pending.push((syms, count));
            Ok(())
        } else {
            table.push(syms, count)
        }
    };
    let (alphabet, unk) = match &config.scheme {
        Scheme::Bytes => {
            tokens.extend((0..=255u8).map(|b| vec![b]));
            let lead = if whitespace { Some(base_start + b' ' as u32) } else { None };
            match &replay {
                // Resuming (and SuperBPE's stage 2): each word type is
                // re-encoded straight from its counted bytes into the table,
                // on all threads; no per-type symbol vectors are kept.
                Some(enc) => {
                    let threads = threads_or_default(config.threads);
                    let (t, pruned) = replay_bytes_table(&counts, enc, whitespace, min_count, threads)?;
                    table = t;
                    pruned_types += pruned;
                }
                None => {
                    // Size the table exactly: one allocation, no regrowth.
                    let mut symbols = 0usize;
                    counts.for_each(|piece, count| {
                        if count >= min_count && piece.len() + lead.is_some() as usize >= 2 {
                            symbols += piece.len() + lead.is_some() as usize;
                        }
                    });
                    table = WordTable::with_capacity(symbols);
                    let mut result = Ok(());
                    counts.for_each(|piece, count| {
                        if count < min_count {
                            pruned_types += 1;
                            return;
                        }
                        if result.is_ok() {
                            let syms = lead.into_iter().chain(piece.iter().map(|&b| base_start + b as u32));
                            result = table.push(syms, count);
                        }
                    });
                    result?;
                }
            }
            // The table now holds every word type: the counts are not needed
            // in the merge loop, which is where the peak memory is.
            drop(counts);
            release_free_memory();
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
                if count < min_count {
                    pruned_types += 1;
                    return;
                }
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
            let unk = specials
                .iter()
                .position(|t| matches!(&config.scheme, Scheme::Chars { unk_token, .. } if t == unk_token))
                .map(|u| u as u32)
                .ok_or_else(|| Error::training("unk_token missing"))?;
            let alphabet: Vec<String> = match resumed {
                // Extending keeps every old id: the alphabet is the model's.
                Some(m) => m.alphabet.clone().unwrap_or_default(),
                None => {
                    let mut order: Vec<u32> = (0..names.len() as u32).collect();
                    order.sort_by(|&x, &y| {
                        freq[y as usize]
                            .cmp(&freq[x as usize])
                            .then_with(|| names[x as usize].as_bytes().cmp(names[y as usize].as_bytes()))
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
                    order.iter().take(keep).map(|&s| names[s as usize].clone()).collect()
                }
            };
            let mut position: Map<&str, u32> = new_map();
            for (k, sym) in alphabet.iter().enumerate() {
                position.insert(sym.as_str(), base_start + k as u32);
                tokens.push(sym.as_bytes().to_vec());
            }
            let remap: Vec<u32> = names.iter().map(|n| position.get(n.as_str()).copied().unwrap_or(unk)).collect();
            drop(position);
            if replay.is_none() {
                table = WordTable::with_capacity(words.iter().map(|(w, _)| if w.len() >= 2 { w.len() } else { 0 }).sum());
            }
            for (ids, count) in words {
                push_word(&mut table, &mut pending, ids.into_iter().map(|s| remap[s as usize]).collect(), count)?;
            }
            (Some(alphabet), Some(unk))
        }
    };
    if let Some(enc) = &replay {
        let threads = threads_or_default(config.threads);
        let per = pending.len().div_ceil(threads.max(1)).max(1);
        std::thread::scope(|s| {
            let handles: Vec<_> = pending
                .chunks_mut(per)
                .map(|part| {
                    s.spawn(move || {
                        for (syms, _) in part.iter_mut() {
                            enc.apply_merges(syms);
                        }
                    })
                })
                .collect();
            join_all(handles)
        })?;
        if !pending.is_empty() {
            // Chars-scheme replay: the table is still empty; size it once.
            table = WordTable::with_capacity(pending.iter().map(|(w, _)| if w.len() >= 2 { w.len() } else { 0 }).sum());
        }
        for (syms, count) in pending.drain(..) {
            table.push(syms, count)?;
        }
    }
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
    let mut old_merges: Vec<(u32, u32, u64)> = Vec::new();
    if let Some(m) = resumed {
        let counts = if m.merge_counts.len() == m.merges.len() { m.merge_counts.clone() } else { vec![0; m.merges.len()] };
        old_merges = m.merges.iter().zip(counts).map(|(&(a, b), c)| (a, b, c)).collect();
        tokens = m.token_bytes()?;
        if config.vocab_size < tokens.len() {
            return Err(Error::parameter(format!(
                "vocab_size {} is below the resumed model's {} tokens; resuming only grows a vocabulary",
                config.vocab_size,
                tokens.len()
            )));
        }
    }
    let mut token_ids: Map<Vec<u8>, u32> = new_map();
    for (i, t) in tokens.iter().enumerate() {
        token_ids.entry(t.clone()).or_insert(i as u32);
    }
    // With external ids, `vocab_size` counts ids (one past the largest, as
    // `Encoder::vocab_size` does): `old ids + N` learns N new tokens.
    let target = match &old_ids {
        Some(ids) => {
            let id_count = ids.iter().map(|&e| e as usize + 1).max().unwrap_or(0);
            if config.vocab_size < id_count {
                return Err(Error::parameter(format!(
                    "vocab_size {} is below the resumed model's {id_count} ids (its largest id is {}); resuming only grows a vocabulary",
                    config.vocab_size,
                    id_count.saturating_sub(1)
                )));
            }
            old_merges.len() + (config.vocab_size - id_count)
        }
        None => config.vocab_size - fixed,
    };
    let params = MergeParams {
        max_merges: target - old_merges.len(),
        min_frequency: config.min_frequency,
        max_token_length: config.max_token_length,
        unk,
        limits: config.token_limits,
        threads: threads_or_default(config.threads),
    };
    let make_model = |merges: &[(u32, u32, u64)]| {
        let mut model = Model::new(config.scheme.clone(), config.pretokenizer.clone(), specials.clone(), alphabet.clone());
        model.merges = old_merges.iter().chain(merges).map(|&(a, b, _)| (a, b)).collect();
        model.merge_counts = old_merges.iter().chain(merges).map(|&(_, _, c)| c).collect();
        if let Some(ids) = &old_ids {
            model.ids = Some(ids.iter().copied().chain((0..merges.len() as u32).map(|k| first_new_id + k)).collect());
        }
        model
    };
    let mut last = 0.0f64;
    let mut last_checkpoint = 0usize;
    let mut csv = match &config.progress_csv {
        Some(path) => {
            let f = std::fs::File::create(path)
                .map_err(|e| Error::output(format!("cannot write {}: {e}", path.display())))?;
            let mut w = std::io::BufWriter::new(f);
            writeln!(w, "merge,pair_count,elapsed_s").map_err(|e| Error::output(e.to_string()))?;
            Some((w, path))
        }
        None => None,
    };
    let mut tick = |merges: &[(u32, u32, u64)], pair_count: u64| -> Result<Flow> {
        let done = old_merges.len() + merges.len();
        if let Some((w, path)) = csv.as_mut() {
            let t = merge_start.elapsed().as_secs_f64();
            writeln!(w, "{},{},{:.4}", done + 1, pair_count, t)
                .map_err(|e| Error::output(format!("cannot write {}: {e}", path.display())))?;
            if t - last >= POLL_SECONDS {
                let _ = w.flush();
            }
        }
        if let Some((path, every)) = &config.checkpoint {
            if *every > 0 && merges.len() >= last_checkpoint + every {
                last_checkpoint = merges.len();
                make_model(merges).save(path)?;
            }
        }
        let t = merge_start.elapsed().as_secs_f64();
        if t - last >= POLL_SECONDS || merges.is_empty() {
            last = t;
            if observer.should_stop() {
                return Ok(Flow::Stop);
            }
            observer.merging(&MergeProgress { done, target, pair_count, elapsed: t });
        }
        Ok(Flow::Continue)
    };
    let table_seconds = merge_start.elapsed().as_secs_f64();
    let word_table_types = table.len();
    let word_table_symbols = table.symbols();
    let learned = learn_merges(table, &mut tokens, &mut token_ids, &params, &mut tick)?;
    drop(tick);
    if let Some((mut w, path)) = csv {
        w.flush().map_err(|e| Error::output(format!("cannot write {}: {e}", path.display())))?;
    }
    let merge_seconds = merge_start.elapsed().as_secs_f64();
    if learned.interrupted {
        if let Some((path, _)) = &config.checkpoint {
            make_model(&learned.merges).save(path)?;
        }
        return Err(Error::interrupted());
    }
    observer.merged(learned.merges.len(), merge_seconds);

    let mut model = make_model(&learned.merges);
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
            "min_word_count": config.min_word_count,
            "threads": threads_or_default(config.threads),
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
        "timings": {
            "count_seconds": round3(count_seconds),
            "merge_seconds": round3(merge_seconds),
            "merge_breakdown": {
                "word_table_seconds": round3(table_seconds),
                "pair_index_seconds": round3(learned.setup_seconds),
                "loop_seconds": round3(merge_seconds - table_seconds - learned.setup_seconds),
            },
        },
        "word_types": word_types,
        "word_count_table": {
            "bytes": table_bytes,
            "bytes_per_type": if word_types > 0 { (table_bytes as f64 / word_types as f64 * 10.0).round() / 10.0 } else { 0.0 },
        },
        "word_types_pruned": pruned_types,
        "word_table": {"types_with_pairs": word_table_types, "symbols": word_table_symbols},
        "resumed_merges": old_merges.len(),
        "stopped_early": stopped_early,
    });
    // An extended import is still that import: keep what the importer
    // recorded (its notes, and the source's id range for later extensions).
    if let (Some(imp), Some(obj)) = (resumed.and_then(|m| m.metadata.get("import")), model.metadata.as_object_mut()) {
        obj.insert("import".into(), imp.clone());
    }
    Ok(model)
}

/// The word table of a resumed run (bytes scheme): every word type of
/// `counts` (at least `min_count` times) re-encoded with the resumed model's
/// merges, which is the state after its last merge (SEMANTICS §8). Word
/// types are shared between `threads` workers by reference (no copy of their
/// bytes); each builds a part of the table, and the parts are joined in
/// order. Returns the table and the number of word types pruned.
fn replay_bytes_table(
    counts: &WordCounts,
    enc: &Encoder,
    whitespace: bool,
    min_count: u64,
    threads: usize,
) -> Result<(WordTable, usize)> {
    let (short, long) = counts.entries();
    let pruned = short.iter().filter(|e| e.1 < min_count).count() + long.iter().filter(|e| e.1 < min_count).count();
    let joinable = enc.joinable_byte_pairs();
    let threads = threads.max(1);
    let work = |short: &[(u128, u64)], long: &[(&[u8], u64)]| -> Result<WordTable> {
        let mut table = WordTable::new();
        let (mut syms, mut scratch, mut buf) = (Vec::new(), Vec::new(), Vec::new());
        let mut one = |piece: &[u8], count: u64, table: &mut WordTable| -> Result<()> {
            if count < min_count {
                return Ok(());
            }
            syms.clear();
            let bytes = if whitespace {
                buf.clear();
                buf.push(b' ');
                buf.extend_from_slice(piece);
                &buf[..]
            } else {
                piece
            };
            enc.encode_bytes_split(bytes, &joinable, &mut syms, &mut scratch);
            table.push(syms.iter().copied(), count)
        };
        for (key, count) in short {
            let (b, n) = crate::count::short_key_bytes(key);
            one(&b[..n], *count, &mut table)?;
        }
        for &(piece, count) in long {
            one(piece, count, &mut table)?;
        }
        Ok(table)
    };
    let parts: Vec<Result<WordTable>> = if threads == 1 {
        vec![work(&short, &long)]
    } else {
        let (ps, pl) = (short.len().div_ceil(threads).max(1), long.len().div_ceil(threads).max(1));
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let sh = &short[(t * ps).min(short.len())..((t + 1) * ps).min(short.len())];
                    let lo = &long[(t * pl).min(long.len())..((t + 1) * pl).min(long.len())];
                    let work = &work;
                    s.spawn(move || work(sh, lo))
                })
                .collect();
            join_all(handles)
        })?
    };
    let mut parts = parts.into_iter();
    let mut table = parts.next().unwrap_or_else(|| Ok(WordTable::new()))?;
    for part in parts {
        table.append(part?)?;
    }
    Ok((table, pruned))
}

/// SuperBPE: stage 1 learns subwords up to the transition size on the
/// word-level pieces; stage 2 continues from exactly that state on the wider
/// stage-2 units (its merges may join words), with the paper's limits. The
/// model encodes with the stage-2 pre-tokenizer, as SuperBPE tokenizers do.
fn train_superbpe(
    words: WordCounts,
    mut units: WordCounts,
    config: &TrainConfig,
    sb: &SuperBpe,
    observer: &mut dyn Observer,
    inputs: serde_json::Value,
    count_seconds: f64,
) -> Result<Model> {
    let mut stage1 = config.clone();
    stage1.superbpe = None;
    stage1.vocab_size = sb.transition;
    stage1.checkpoint = None;
    let stats = words.stats.clone();
    let mut model = train_from_counts(words, &stage1, observer, inputs.clone(), count_seconds)?;
    release_free_memory();
    let stage1_meta = model.metadata.clone();
    let stage1_pretokenizer = model.pretokenizer.clone();
    model.pretokenizer = PreTokenizerSpec::Superword;
    let mut stage2 = config.clone();
    stage2.superbpe = None;
    stage2.pretokenizer = PreTokenizerSpec::Superword;
    stage2.resume_from = Some(model);
    stage2.token_limits = TokenLimits { max_words: sb.max_words, colon_rule: sb.colon_rule };
    units.stats = stats;
    let mut model = train_from_counts(units, &stage2, observer, inputs, 0.0)?;
    let stage2_meta = std::mem::take(&mut model.metadata);
    let mut meta = stage1_meta.clone();
    if let Some(obj) = meta.as_object_mut() {
        obj.insert(
            "superbpe".into(),
            serde_json::json!({
                "transition": sb.transition,
                "stage1_pretokenizer": stage1_pretokenizer.name(),
                "max_words": sb.max_words,
                "colon_rule": sb.colon_rule,
                "stage1_word_table": stage1_meta["word_table"].clone(),
                "stage2_units": stage2_meta["word_types"].clone(),
                "stage2_word_table": stage2_meta["word_table"].clone(),
                "stage1_merge_seconds": stage1_meta["timings"]["merge_seconds"].clone(),
                "stage2_merge_seconds": stage2_meta["timings"]["merge_seconds"].clone(),
                "stage2_merge_breakdown": stage2_meta["timings"]["merge_breakdown"].clone(),
            }),
        );
        let m1 = stage1_meta["timings"]["merge_seconds"].as_f64().unwrap_or(0.0);
        let m2 = stage2_meta["timings"]["merge_seconds"].as_f64().unwrap_or(0.0);
        obj.insert("timings".into(), serde_json::json!({"count_seconds": round3(count_seconds), "merge_seconds": round3(m1 + m2)}));
        obj.insert("stopped_early".into(), stage2_meta["stopped_early"].clone());
        if let Some(settings) = obj.get_mut("settings").and_then(|v| v.as_object_mut()) {
            settings.insert("vocab_size".into(), serde_json::json!(config.vocab_size));
            settings.insert("pretokenizer".into(), serde_json::json!("superword"));
        }
    }
    model.metadata = meta;
    Ok(model)
}

/// The first id for new tokens when extending a model with external ids:
/// one past the largest id it uses, and past every id of the source it was
/// imported from (`metadata.import.source_id_end`, written by the importers:
/// source tokens that bpeforge could not represent keep their ids reserved).
fn next_external_id(m: &Model, ids: &[u32]) -> Result<u32> {
    let mut next = ids.iter().map(|&e| e as u64 + 1).max().unwrap_or(0);
    let end = &m.metadata["import"]["source_id_end"];
    if !end.is_null() {
        match end.as_u64() {
            Some(e) if e <= crate::model::MAX_EXTERNAL_ID as u64 => next = next.max(e),
            _ => {
                return Err(Error::parameter(format!(
                    "resume_from: the model's metadata.import.source_id_end must be an integer from 0 to {}, got {end}",
                    crate::model::MAX_EXTERNAL_ID
                )))
            }
        }
    }
    Ok(next as u32)
}

/// Hands memory that was freed back to the operating system (glibc keeps
/// freed blocks, and a block in the middle of a heap or in a worker thread's
/// arena is not returned on its own). Called between the phases of training
/// whose tables are freed before the next phase allocates its own (mostly
/// large, freshly mapped arrays that cannot reuse those blocks), so peak RSS
/// is what the next phase holds, not that plus the last phase's leftovers.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> i32;
        }
        // SAFETY: malloc_trim only releases free memory; it takes no pointers.
        unsafe {
            malloc_trim(0);
        }
    }
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
