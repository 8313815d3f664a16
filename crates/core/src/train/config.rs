//! The training settings: `TrainConfig` (typed, what the engine runs on) and
//! `TrainOptions` (flat, one field per option of the Python API, CLI and
//! bindings, by the same names). Converting options to a config and
//! validating a config happen here and nowhere else.

use super::merge::TokenLimits;
use crate::error::{Error, Result};
use crate::fields::{FieldSpec, Fields, LangField, OnBadRecord};
use crate::input::TextMode;
use crate::model::{Model, Scheme};
use crate::pretok::{PreTokenizer, PreTokenizerSpec};
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
    /// The memory budget in bytes (None: `crate::budget::default_budget`):
    /// counting spills to disk and the merge phase drops the rarest word
    /// types rather than grow past it (see `crate::budget`).
    pub max_memory: Option<u64>,
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
    /// tokens per byte.
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

impl Parity {
    pub fn validate(&self) -> Result<()> {
        if !(self.max_premium > 1.0 && self.max_premium.is_finite()) {
            return Err(Error::parameter(format!(
                "max_premium must be a number above 1 (e.g. 1.2: no language pays more than 1.2x the reference's tokens per byte), got {}",
                self.max_premium
            )));
        }
        if !(self.max_lift >= 1.0 && self.max_lift <= 1024.0) {
            return Err(Error::parameter(format!(
                "balance_max_lift must be from 1 to 1024, got {}",
                self.max_lift
            )));
        }
        if !(0.0..=0.5).contains(&self.held_apart) {
            return Err(Error::parameter(format!(
                "balance_held_apart must be from 0 to 0.5 (a share of each language's lines), got {}",
                self.held_apart
            )));
        }
        if self.rounds > 20 {
            return Err(Error::parameter(format!(
                "balance_rounds must be at most 20, got {}",
                self.rounds
            )));
        }
        if let Some(r) = &self.reference {
            if r.trim().is_empty() {
                return Err(Error::parameter(
                    "premium_reference must be a language tag, got an empty string",
                ));
            }
        }
        Ok(())
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
        }
    }

    /// The memory budget this run keeps to, in bytes.
    pub fn memory_budget(&self) -> u64 {
        self.max_memory.unwrap_or_else(crate::budget::default_budget)
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

    /// Checks the settings before any input is read: the one place every
    /// entry (files, iterator, distributed counts, Rust callers) is checked.
    pub fn validate(&self) -> Result<()> {
        if self.vocab_size == 0 {
            return Err(Error::parameter("vocab_size must be positive"));
        }
        if self.vocab_size > u32::MAX as usize / 2 {
            return Err(Error::parameter(format!("vocab_size {} is too large", self.vocab_size)));
        }
        if self.max_memory == Some(0) {
            return Err(Error::parameter("max_memory must be a positive number of bytes (e.g. \"8G\"), or None for the default"));
        }
        if self.max_token_length == Some(0) {
            return Err(Error::parameter("max_token_length must be at least 1 (or None for no limit)"));
        }
        self.validate_scheme()?;
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
        self.validate_balance()?;
        self.validate_superbpe()
    }

    fn validate_scheme(&self) -> Result<()> {
        if let Scheme::Chars { unk_token, end_of_word_suffix, character_coverage, byte_fallback, dummy_prefix, normalizer, .. } = &self.scheme {
            if let Some(n) = normalizer {
                n.compile().map_err(|e| Error::parameter(format!("normalizer: {}", e.message())))?;
                if end_of_word_suffix.is_some() {
                    return Err(Error::parameter(
                        "normalizer cannot be combined with end_of_word_suffix (SentencePiece's normalizers go with the ▁ prefix)",
                    ));
                }
            }
            if (*byte_fallback || *dummy_prefix) && end_of_word_suffix.is_some() {
                return Err(Error::parameter(
                    "byte_fallback cannot be combined with end_of_word_suffix (SentencePiece's byte pieces go with the ▁ prefix)",
                ));
            }
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
        Ok(())
    }

    fn validate_balance(&self) -> Result<()> {
        let Some(b) = &self.balance else { return Ok(()) };
        if !(b.temperature > 0.0 && b.temperature.is_finite()) {
            return Err(Error::parameter(format!("temperature must be positive, got {}", b.temperature)));
        }
        match (&b.source, &self.text_mode) {
            (_, TextMode::Lines) => {}
            (LangSource::Field(_), TextMode::Fields(f)) if matches!(f.spec, FieldSpec::Json(_)) => {}
            (LangSource::Field(_), _) => {
                return Err(Error::parameter("lang_field is a field of JSON records: it needs text_field"));
            }
            _ => {
                return Err(Error::parameter(
                    "language balancing reads one language per line: it needs the lines text mode (or JSON lines with lang_field)",
                ));
            }
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
        Ok(())
    }

    fn validate_superbpe(&self) -> Result<()> {
        let Some(sb) = &self.superbpe else { return Ok(()) };
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
    /// The memory budget in bytes (see `crate::budget`).
    pub fn max_memory(mut self, bytes: u64) -> Self {
        self.max_memory = Some(bytes);
        self
    }
}

/// The training options as one flat record: exactly the keys of the dict the
/// Python facade builds (`_train_args`), with its defaults, so the bindings
/// deserialize that dict straight into it and a test can compare the two
/// lists (`TrainOptions::names`). Unknown keys are refused: an option that
/// does not reach the engine is a bug, not something to ignore.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrainOptions {
    pub vocab_size: usize,
    pub scheme: String,
    pub pretokenizer: String,
    pub special_tokens: Vec<String>,
    pub min_frequency: u64,
    pub max_token_length: Option<usize>,
    /// `None`: all cores.
    pub threads: Option<usize>,
    pub character_coverage: f64,
    pub end_of_word_suffix: Option<String>,
    pub unk_token: String,
    /// Chars scheme: unknown characters become their UTF-8 bytes.
    pub byte_fallback: bool,
    /// Chars scheme: a run of unknown characters is one unk_token.
    pub fuse_unk: bool,
    /// Chars scheme: SentencePiece's normalizer (`None`: the identity);
    /// Python passes the charsmap of the name it was given.
    pub normalizer: Option<crate::normalize::NormalizerSpec>,
    pub documents: bool,
    pub separator: Option<String>,
    /// JSON lines: the text is this field of each record (dotted path).
    pub text_field: Option<String>,
    /// Tab-separated lines: these columns (1-based) are texts.
    pub columns: Option<Vec<usize>>,
    /// "error" or "skip": a line without text where the fields say.
    pub on_bad_record: String,
    pub min_word_count: u64,
    /// The JSON of a model to continue (bytes from Python).
    #[serde(deserialize_with = "model_json")]
    pub resume_from: Option<Vec<u8>>,
    pub checkpoint_path: Option<PathBuf>,
    pub checkpoint_every: usize,
    pub superbpe_transition: Option<usize>,
    pub superbpe_max_words: usize,
    pub superbpe_colon_rule: bool,
    pub langs: Option<Vec<PathBuf>>,
    pub file_languages: Option<Vec<String>>,
    /// Each record's language is this field (JSON lines) or column (Arrow).
    pub lang_field: Option<String>,
    pub temperature: f64,
    pub max_premium: Option<f64>,
    pub balance_rounds: usize,
    pub premium_reference: Option<String>,
    pub balance_min_lines: u64,
    pub balance_max_lift: f64,
    pub balance_held_apart: f64,
    pub progress_csv: Option<PathBuf>,
    /// The memory budget in bytes (`None`: a share of the available memory;
    /// Python parses "8G" and friends into bytes).
    pub max_memory: Option<u64>,
}

impl Default for TrainOptions {
    /// The Python API's defaults.
    fn default() -> Self {
        let parity = Parity::default();
        TrainOptions {
            vocab_size: 32000,
            scheme: "bytes".into(),
            pretokenizer: crate::pretok::DEFAULT_PRETOKENIZER.into(),
            special_tokens: Vec::new(),
            min_frequency: 2,
            max_token_length: None,
            threads: None,
            character_coverage: 1.0,
            end_of_word_suffix: None,
            unk_token: "<unk>".into(),
            byte_fallback: false,
            fuse_unk: false,
            normalizer: None,
            documents: false,
            separator: None,
            text_field: None,
            columns: None,
            on_bad_record: "error".into(),
            min_word_count: 1,
            resume_from: None,
            checkpoint_path: None,
            checkpoint_every: 1000,
            superbpe_transition: None,
            superbpe_max_words: 4,
            superbpe_colon_rule: true,
            langs: None,
            file_languages: None,
            lang_field: None,
            temperature: 1.0,
            max_premium: None,
            balance_rounds: parity.rounds,
            premium_reference: None,
            balance_min_lines: parity.min_lines,
            balance_max_lift: parity.max_lift,
            balance_held_apart: parity.held_apart,
            progress_csv: None,
            max_memory: None,
        }
    }
}

impl TrainOptions {
    /// The option names, in declaration order (read from the serde
    /// derivation itself, so this list cannot drift from the fields).
    pub fn names() -> &'static [&'static str] {
        field_names::of::<TrainOptions>()
    }

    /// Converts and checks the options: the typed config, or a parameter
    /// error naming the option.
    pub fn into_config(self) -> Result<TrainConfig> {
        let scheme = match self.scheme.as_str() {
            "bytes" if self.byte_fallback || self.fuse_unk => {
                return Err(Error::parameter("byte_fallback and fuse_unk are options of scheme=\"chars\" (the bytes scheme never has unknown characters)"))
            }
            "bytes" if self.normalizer.is_some() => {
                return Err(Error::parameter("normalizer is an option of scheme=\"chars\" (SentencePiece's normalizers; the bytes scheme keeps text as it is)"))
            }
            "bytes" => Scheme::Bytes,
            "chars" => Scheme::Chars {
                unk_token: self.unk_token,
                end_of_word_suffix: self.end_of_word_suffix,
                character_coverage: self.character_coverage,
                byte_fallback: self.byte_fallback,
                fuse_unk: self.fuse_unk,
                dummy_prefix: false,
                normalizer: self.normalizer,
            },
            other => return Err(Error::parameter(format!("scheme must be \"bytes\" or \"chars\", got {other:?}"))),
        };
        let mut text_mode = text_mode(self.documents, self.separator, self.text_field, self.columns, &self.on_bad_record)?;
        if let (Some(field), TextMode::Fields(f)) = (&self.lang_field, &mut text_mode) {
            if matches!(f.spec, FieldSpec::Json(_)) {
                let path = Fields::json_path("lang_field", field)?;
                f.lang = Some(LangField { path, ids: Default::default() });
            }
        }
        let threads = crate::util::check_threads(self.threads)?;
        let mut config = TrainConfig::new(self.vocab_size, scheme, PreTokenizerSpec::from_name(&self.pretokenizer))
            .special_tokens(self.special_tokens)
            .min_frequency(self.min_frequency)
            .max_token_length(self.max_token_length)
            .threads(threads)
            .text_mode(text_mode)
            .min_word_count(self.min_word_count.max(1));
        if let Some(json) = self.resume_from {
            config = config.resume_from(Model::from_json(&json)?);
        }
        if let Some(path) = self.checkpoint_path {
            if self.checkpoint_every == 0 {
                return Err(Error::parameter("checkpoint_every must be at least 1 when a checkpoint path is given"));
            }
            config = config.checkpoint(path, self.checkpoint_every);
        }
        config.progress_csv = self.progress_csv;
        config.max_memory = self.max_memory;
        let source = match (self.langs, self.file_languages, self.lang_field) {
            (Some(files), None, None) => Some(LangSource::Files(files)),
            (None, Some(tags), None) => Some(LangSource::PerFile(tags)),
            (None, None, Some(field)) => Some(LangSource::Field(field)),
            (None, None, None) => None,
            _ => {
                return Err(Error::parameter(
                    "give one of langs (files of tags), file_languages (a tag per file) or lang_field (a field of each record)",
                ));
            }
        };
        let parity = self.max_premium.map(|max_premium| Parity {
            max_premium,
            rounds: self.balance_rounds,
            reference: self.premium_reference,
            min_lines: self.balance_min_lines,
            max_lift: self.balance_max_lift,
            held_apart: self.balance_held_apart,
        });
        if let Some(source) = source {
            config = config.balance(LanguageBalance { source, temperature: self.temperature, parity });
        } else if self.temperature != 1.0 {
            return Err(Error::parameter("temperature needs langs=, file_languages= or lang_field= (the language of each line)"));
        } else if parity.is_some() {
            return Err(Error::parameter("max_premium needs langs=, file_languages= or lang_field= (the language of each line)"));
        }
        if let Some(transition) = self.superbpe_transition {
            config = config.superbpe(SuperBpe {
                transition,
                max_words: self.superbpe_max_words,
                colon_rule: self.superbpe_colon_rule,
            });
        }
        config.validate()?;
        Ok(config)
    }
}

/// The text mode the input options choose (at most one of documents,
/// separator, text_field, columns).
fn text_mode(
    documents: bool,
    separator: Option<String>,
    text_field: Option<String>,
    columns: Option<Vec<usize>>,
    on_bad_record: &str,
) -> Result<TextMode> {
    let on_bad_record = match on_bad_record {
        "error" => OnBadRecord::Error,
        "skip" => OnBadRecord::Skip,
        other => return Err(Error::parameter(format!("on_bad_record must be \"error\" or \"skip\", got {other:?}"))),
    };
    let given: Vec<&str> = [
        ("documents", documents),
        ("separator", separator.is_some()),
        ("text_field", text_field.is_some()),
        ("columns", columns.is_some()),
    ]
    .iter()
    .filter(|(_, set)| *set)
    .map(|(name, _)| *name)
    .collect();
    if given.len() > 1 {
        return Err(Error::parameter(format!("{} each choose how texts are read: give one of them", given.join(" and "))));
    }
    let spec = match (text_field, columns) {
        (Some(field), _) => FieldSpec::Json(Fields::json_path("text_field", &field)?),
        (None, Some(cols)) => {
            if cols.is_empty() || cols.contains(&0) {
                return Err(Error::parameter(format!(
                    "columns must be column numbers counted from 1 (e.g. [1, 2] for both sides of a bitext), got {cols:?}"
                )));
            }
            FieldSpec::Columns(cols.iter().map(|c| c - 1).collect())
        }
        (None, None) => {
            if on_bad_record == OnBadRecord::Skip {
                return Err(Error::parameter("on_bad_record=\"skip\" needs text_field (JSON lines) or columns (TSV)"));
            }
            return Ok(match (documents, separator) {
                (_, Some(sep)) => TextMode::Records(sep.into_bytes()),
                (true, None) => TextMode::WholeFile,
                (false, None) => TextMode::Lines,
            });
        }
    };
    Ok(TextMode::Fields(Fields { spec, on_bad_record, lang: None }))
}

/// `resume_from`: model JSON as bytes (Python), a string, or a list of byte
/// values (JSON files), or null.
fn model_json<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Option<Vec<u8>>, D::Error> {
    struct Bytes;
    impl<'de> serde::de::Visitor<'de> for Bytes {
        type Value = Option<Vec<u8>>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("the JSON of a model (bytes or a string) or null")
        }
        fn visit_none<E>(self) -> std::result::Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E>(self) -> std::result::Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D2: serde::Deserializer<'de>>(self, d: D2) -> std::result::Result<Self::Value, D2::Error> {
            d.deserialize_any(self)
        }
        fn visit_bytes<E>(self, v: &[u8]) -> std::result::Result<Self::Value, E> {
            Ok(Some(v.to_vec()))
        }
        fn visit_byte_buf<E>(self, v: Vec<u8>) -> std::result::Result<Self::Value, E> {
            Ok(Some(v))
        }
        fn visit_str<E>(self, v: &str) -> std::result::Result<Self::Value, E> {
            Ok(Some(v.as_bytes().to_vec()))
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(b) = seq.next_element::<u8>()? {
                out.push(b);
            }
            Ok(Some(out))
        }
    }
    d.deserialize_option(Bytes)
}

/// Reads the field names a `Deserialize` derivation declares: a deserializer
/// that only records what `deserialize_struct` is asked for.
mod field_names {
    use serde::de::{self, Deserialize, Deserializer, Visitor};

    struct Names(Option<&'static [&'static str]>);

    #[derive(Debug)]
    struct Done;
    impl std::fmt::Display for Done {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("field names recorded")
        }
    }
    impl std::error::Error for Done {}
    impl de::Error for Done {
        fn custom<T: std::fmt::Display>(_: T) -> Self {
            Done
        }
    }

    impl<'de> Deserializer<'de> for &mut Names {
        type Error = Done;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Done> {
            Err(Done)
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Done> {
            self.0 = Some(fields);
            Err(Done)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
            unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }

    pub fn of<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
        let mut names = Names(None);
        let _ = T::deserialize(&mut names);
        names.0.unwrap_or(&[])
    }
}
