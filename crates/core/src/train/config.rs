//! The training settings: `TrainConfig`, typed, what the engine runs on.
//! Made by `TrainOptions::into_config` (the flat option list of Python and
//! the CLI, `options.rs`) or by the builder setters below (Rust callers),
//! and checked once by `TrainConfig::validate` (`validate.rs`), which turns
//! it into the `ValidConfig` every entry point takes.

use super::merge::TokenLimits;
use crate::input::TextMode;
use crate::model::{Model, Scheme};
use crate::pretok::PreTokenizerSpec;
use std::path::PathBuf;

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
    /// The memory budget in bytes, as given (`max_memory`; None: the
    /// default, resolved once by `memory_budget`). Read through
    /// `memory_budget` by its two effects: counting spills sorted runs to
    /// disk rather than grow past it (`counting::count_words_output`), and
    /// the merge phase drops the rarest word types to fit it
    /// (`driver::fit_to_budget`); see `crate::memory::budget`.
    pub max_memory: Option<u64>,
    /// The default budget, once `memory_budget` has resolved it: shared by
    /// every copy of this config (the merge phase's, SuperBPE's second
    /// stage), so the whole run keeps to the figure read when it started.
    default_budget: std::sync::Arc<std::sync::OnceLock<u64>>,
    /// The result-changing options as given (`checkpoint::RESULT_OPTIONS`),
    /// which a checkpoint records; empty for Rust callers of the builder.
    pub run_options: serde_json::Map<String, serde_json::Value>,
    /// The options a resumed checkpoint gave (those left at their
    /// defaults), by name, as the engine takes them.
    pub from_checkpoint: serde_json::Map<String, serde_json::Value>,
    /// The `min_word_count` a resumed checkpoint's run merged with: the
    /// memory budget does not raise it again (`driver::fit_to_budget`), so
    /// the resumed run merges the same word types as the straight run.
    pub resumed_min_word_count: Option<u64>,
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
    /// by measured premiums (`balance::parity`).
    pub parity: Option<Parity>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum LangSource {
    /// One language file per input file, one tag per line.
    Files(Vec<PathBuf>),
    /// One tag per input file.
    PerFile(Vec<String>),
    /// Each record names its language: a field of JSON lines (dotted path)
    /// or a column of Arrow data.
    Field(String),
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

/// Parity balancing settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Parity {
    /// Target: no language pays more than this many times the reference's
    /// tokens per text unit (`balance::parity`, where the premium is defined).
    pub max_premium: f64,
    /// Reweighting rounds after the first training (each one merge loop).
    pub rounds: usize,
    /// The reference language (default: the one with the most bytes).
    pub reference: Option<String>,
    /// Languages with fewer lines keep their starting weight: too little
    /// text to measure, and lifting them would spend merges on memorising.
    pub min_lines: u64,
    /// Largest factor on a language's starting weight. A language that
    /// would need more gains little per merge it takes from the others
    /// (on multi-1m, 64x for one language cost English 0.9% more tokens
    /// than 16x for the same worst-decile premium).
    pub max_lift: f64,
    /// Share of each language's lines (chosen by a hash of the text, so the
    /// same text is always on the same side) held apart from the merge loop
    /// while weighing: premiums are measured on them, so weights go where
    /// merges help text the vocabulary has not seen. The last round trains
    /// on every line. 0: measure on the training lines themselves.
    pub held_apart: f64,
}

impl Default for Parity {
    fn default() -> Self {
        Parity {
            max_premium: 1.2,
            rounds: 1,
            reference: None,
            min_lines: 500,
            max_lift: 16.0,
            held_apart: 0.1,
        }
    }
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
            max_memory: None,
            default_budget: Default::default(),
            run_options: Default::default(),
            from_checkpoint: Default::default(),
            resumed_min_word_count: None,
        }
    }

    /// The memory budget this run keeps to, in bytes: `max_memory`, or
    /// the default (`crate::memory::budget::default_budget`), resolved at the first
    /// read, when training starts (counting reads it first), and the same
    /// figure at every later read, by this config and its copies: the merge
    /// phase keeps to what counting kept to, not to a share of what is free
    /// after counting. The one place the default is resolved (a distributed
    /// run's tasks too: `ValidConfig::with_budget_share`).
    pub fn memory_budget(&self) -> u64 {
        self.max_memory.unwrap_or_else(|| *self.default_budget.get_or_init(crate::memory::budget::default_budget))
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
        // Byte fallback's 256 byte tokens follow the others, as SentencePiece
        // puts its byte pieces after the control and user-defined ones.
        if let Scheme::Chars { byte_fallback: true, .. } = &self.scheme {
            for name in (0..=255u8).map(crate::model::byte_piece) {
                if !out.contains(&name) {
                    out.push(name);
                }
            }
        }
        out
    }
}


/// Builder-style setters (as HF's `BpeTrainerBuilder`), for Rust callers:
/// `TrainConfig::new(32000, Scheme::Bytes, spec).min_frequency(3).threads(4)`.
impl TrainConfig {
    pub fn special_tokens(mut self, tokens: Vec<String>) -> Self {
        self.special_tokens = tokens;
        self
    }
    pub fn min_frequency(mut self, n: u64) -> Self {
        self.min_frequency = n;
        self
    }
    pub fn max_token_length(mut self, n: Option<usize>) -> Self {
        self.max_token_length = n;
        self
    }
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n;
        self
    }
    pub fn text_mode(mut self, mode: TextMode) -> Self {
        self.text_mode = mode;
        self
    }
    pub fn min_word_count(mut self, n: u64) -> Self {
        self.min_word_count = n;
        self
    }
    /// Continue `model`'s merges; takes its scheme, pre-tokenizer and special tokens.
    pub fn resume_from(mut self, model: Model) -> Self {
        self.resume_from = Some(model);
        self.adopt_resumed_settings();
        self
    }
    pub fn checkpoint(mut self, path: PathBuf, every: usize) -> Self {
        self.checkpoint = Some((path, every));
        self
    }
    pub fn superbpe(mut self, sb: SuperBpe) -> Self {
        self.superbpe = Some(sb);
        self
    }
    pub fn balance(mut self, balance: LanguageBalance) -> Self {
        self.balance = Some(balance);
        self
    }
    pub fn progress_csv(mut self, path: PathBuf) -> Self {
        self.progress_csv = Some(path);
        self
    }
}
