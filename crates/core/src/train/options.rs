//! `TrainOptions`: the training options as one flat record, one field per
//! option of the Python API, the CLI and the bindings, by the same names;
//! `TrainOptions::into_config` converts it to a checked `ValidConfig`.

use super::config::{LangSource, LanguageBalance, Parity, SuperBpe, TrainConfig};
use super::validate::ValidConfig;
use crate::error::{Error, Result};
use crate::input::fields::{FieldSpec, Fields, LangField, OnBadRecord};
use crate::input::TextMode;
use crate::model::{Model, Scheme};
use crate::pretok::PreTokenizerChoice;
use std::path::PathBuf;

/// The training options as one flat record: exactly the fields of the
/// `EngineOptions` record Python hands over (`TrainOptions.engine_options`,
/// through `_engine.train_settings`), with its defaults, so the bindings
/// read that record straight into it and a test can compare the two lists
/// (`TrainOptions::names`). Unknown keys are refused: an option that
/// does not reach the engine is a bug, not something to ignore.
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrainOptions {
    pub vocab_size: usize,
    pub scheme: String,
    /// A preset by its name (or an alias), or `{"regex": pattern}`.
    pub pretokenizer: PreTokenizerChoice,
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
    /// (A Parquet/Arrow column is Python's `text_column`, read in Python;
    /// an Arrow run leaves this unset.)
    pub text_field: Option<String>,
    /// Tab-separated lines: these columns (1-based) are texts.
    pub columns: Option<Vec<usize>>,
    /// "error" or "skip": a line without text where the fields say.
    pub on_bad_record: String,
    pub min_word_count: u64,
    /// The model to continue: parsed once, where it is read (the bindings
    /// hand over a loaded model; JSON callers give its JSON).
    #[serde(deserialize_with = "model_json", skip_serializing)]
    pub resume_from: Option<Model>,
    pub checkpoint_path: Option<PathBuf>,
    pub checkpoint_every: usize,
    pub superbpe_transition: Option<usize>,
    pub superbpe_max_words: usize,
    pub superbpe_colon_rule: bool,
    pub langs: Option<Vec<PathBuf>>,
    pub file_languages: Option<Vec<String>>,
    /// Each record's language is this field (JSON lines), or, in an Arrow
    /// run, the name of the column (Python's `lang_column`) whose ids come
    /// with the rows.
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
    /// The options the caller set, by name, where it knows (the command
    /// line does); `None`: those that differ from their defaults. Resuming
    /// a checkpoint takes the others from it (`checkpoint`).
    #[serde(skip)]
    pub explicit: Option<Vec<String>>,
}

impl Default for TrainOptions {
    /// The Python API's defaults.
    fn default() -> Self {
        let parity = Parity::default();
        TrainOptions {
            vocab_size: 32000,
            scheme: "bytes".into(),
            pretokenizer: PreTokenizerChoice::Preset(crate::pretok::DEFAULT_PRESET),
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
            explicit: None,
        }
    }
}

impl TrainOptions {
    /// The option names, in declaration order (read from the serde
    /// derivation itself, so this list cannot drift from the fields).
    pub fn names() -> &'static [&'static str] {
        super::field_names::of::<TrainOptions>()
    }

    /// Checks the settings a resumed model keeps, and takes from a resumed
    /// checkpoint the options left out (`checkpoint`).
    fn take_from_resumed(&mut self) -> Result<super::checkpoint::Taken> {
        use super::checkpoint::as_json;
        let Some(model) = self.resume_from.take() else { return Ok(Default::default()) };
        self.check_resumed_settings(&model)?;
        let mine = as_json(&*self);
        let default = as_json(&TrainOptions::default());
        let given = |name: &str| match &self.explicit {
            Some(names) => names.iter().any(|n| n == name),
            None => mine.get(name) != default.get(name),
        };
        let taken = super::checkpoint::take_recorded(&mine, &given, &model)?;
        if !taken.options.is_empty() {
            let mut merged = mine.clone();
            merged.extend(taken.options.clone());
            let mut filled: TrainOptions = serde_json::from_value(serde_json::Value::Object(merged))
                .map_err(|e| Error::model(format!("metadata.checkpoint of the resumed model: {e}")))?;
            filled.normalizer = self.normalizer.take();
            filled.explicit = self.explicit.take();
            *self = filled;
        }
        self.resume_from = Some(model);
        Ok(taken)
    }

    /// Converts and checks the options: the typed config, or a parameter
    /// error naming the option.
    pub fn into_config(mut self) -> Result<ValidConfig> {
        let taken = self.take_from_resumed()?;
        let recorded = super::checkpoint::as_json(&self);
        self.check_ranges()?;
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
        let mut config = TrainConfig::new(self.vocab_size, scheme, self.pretokenizer.spec())
            .special_tokens(self.special_tokens)
            .min_frequency(self.min_frequency)
            .max_token_length(self.max_token_length)
            .threads(threads)
            .text_mode(text_mode)
            .min_word_count(self.min_word_count);
        if let Some(model) = self.resume_from {
            config = config.resume_from(model);
        }
        if let Some(path) = self.checkpoint_path {
            config = config.checkpoint(path, self.checkpoint_every);
        }
        config.progress_csv = self.progress_csv;
        config.max_memory = self.max_memory;
        if let Some(kept) = taken.min_word_count {
            config.min_word_count = config.min_word_count.max(kept);
        }
        config.resumed_min_word_count = taken.min_word_count;
        config.run_options = recorded;
        config.from_checkpoint = taken.options;
        let source = lang_source(self.langs, self.file_languages, self.lang_field)?;
        let parity = self.max_premium.map(|max_premium| Parity {
            max_premium,
            rounds: self.balance_rounds,
            reference: self.premium_reference,
            min_lines: self.balance_min_lines,
            max_lift: self.balance_max_lift,
            held_apart: self.balance_held_apart,
        });
        if let Some(source) = source {
            if self.temperature == 1.0 && parity.is_none() {
                return Err(unused_languages(&source));
            }
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
        config.validate()
    }

    /// The ranges of the options the config keeps only when another option
    /// is set (the parity tuning without `max_premium`, `temperature`
    /// without languages, `checkpoint_every` without a path): a value out
    /// of range is refused whether or not it is used. The others are
    /// checked where the config is (`TrainConfig::validate`).
    fn check_ranges(&self) -> Result<()> {
        if self.checkpoint_every == 0 {
            return Err(Error::parameter("checkpoint_every must be a positive integer (merges between checkpoints), got 0"));
        }
        if self.superbpe_transition == Some(0) {
            return Err(Error::parameter("superbpe_transition must be a positive integer (a vocabulary size) or None, got 0"));
        }
        super::validate::check_temperature(self.temperature)?;
        let parity = Parity {
            max_premium: self.max_premium.unwrap_or(Parity::default().max_premium),
            rounds: self.balance_rounds,
            reference: self.premium_reference.clone(),
            min_lines: self.balance_min_lines,
            max_lift: self.balance_max_lift,
            held_apart: self.balance_held_apart,
        };
        if self.max_premium.is_some() { parity.validate() } else { parity.validate_tuning() }
    }

    /// A resumed model keeps its scheme, pre-tokenizer, special tokens and
    /// alphabet settings: an option set (not at its default) to something
    /// else is refused, not ignored. Values are shown as Python writes them.
    fn check_resumed_settings(&self, model: &Model) -> Result<()> {
        let default = TrainOptions::default();
        let (scheme, unk, eow, coverage, fallback, fuse, normalizer) = match &model.scheme {
            Scheme::Bytes => ("bytes", "<unk>".to_string(), None, 1.0, false, false, None),
            Scheme::Chars { unk_token, end_of_word_suffix, character_coverage, byte_fallback, fuse_unk, normalizer, .. } => (
                "chars",
                unk_token.clone(),
                end_of_word_suffix.clone(),
                *character_coverage,
                *byte_fallback,
                *fuse_unk,
                normalizer.clone(),
            ),
        };
        let specials: Vec<String> = model
            .special_tokens
            .iter()
            .filter(|t| matches!(model.scheme, Scheme::Bytes) || **t != unk)
            .filter(|t| !(fallback && is_byte_piece(t)))
            .cloned()
            .collect();
        let normalizer_name = |n: &Option<crate::normalize::NormalizerSpec>| py_str(n.as_ref().map_or("identity", |n| n.name.as_str()));
        let mut conflicts = Vec::new();
        let mut differ = |name: &str, set: bool, given: String, kept: String| {
            let differs = if name == "normalizer" { self.normalizer != normalizer } else { given != kept };
            if set && differs {
                conflicts.push(format!("{name}={given} (the model has {kept})"));
            }
        };
        differ("scheme", self.scheme != default.scheme, py_str(&self.scheme), py_str(scheme));
        differ("pretokenizer", self.pretokenizer != default.pretokenizer, py_str(self.pretokenizer.name()), py_str(model.pretokenizer.name()));
        differ("special_tokens", self.special_tokens != default.special_tokens, py_list(&self.special_tokens), py_list(&specials));
        differ("character_coverage", self.character_coverage != default.character_coverage, py_float(self.character_coverage), py_float(coverage));
        differ("end_of_word_suffix", self.end_of_word_suffix != default.end_of_word_suffix, py_opt(&self.end_of_word_suffix), py_opt(&eow));
        differ("unk_token", self.unk_token != default.unk_token, py_str(&self.unk_token), py_str(&unk));
        differ("byte_fallback", self.byte_fallback != default.byte_fallback, py_bool(self.byte_fallback), py_bool(fallback));
        differ("fuse_unk", self.fuse_unk != default.fuse_unk, py_bool(self.fuse_unk), py_bool(fuse));
        differ("normalizer", self.normalizer != default.normalizer, normalizer_name(&self.normalizer), normalizer_name(&normalizer));
        if conflicts.is_empty() {
            return Ok(());
        }
        Err(Error::parameter(format!(
            "resume_from keeps the resumed model's settings, and these differ: {}. Leave them out to continue the model as it is",
            conflicts.join("; ")
        )))
    }
}

/// A byte-fallback token's name (`<0x00>`..`<0xFF>`).
fn is_byte_piece(t: &str) -> bool {
    t.len() == 6 && t.starts_with("<0x") && u8::from_str_radix(&t[3..5], 16).is_ok_and(|b| crate::model::byte_piece(b) == t)
}

/// Values as Python's `repr` shows them (error messages name Python's values).
fn py_str(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

fn py_opt(s: &Option<String>) -> String {
    s.as_deref().map_or_else(|| "None".to_string(), py_str)
}

fn py_list(items: &[String]) -> String {
    format!("[{}]", items.iter().map(|s| py_str(s)).collect::<Vec<_>>().join(", "))
}

fn py_bool(b: bool) -> String {
    if b { "True" } else { "False" }.to_string()
}

fn py_float(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e16 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}

/// Where each line's language comes from: at most one of the three options.
fn lang_source(langs: Option<Vec<PathBuf>>, file_languages: Option<Vec<String>>, lang_field: Option<String>) -> Result<Option<LangSource>> {
    match (langs, file_languages, lang_field) {
        (Some(files), None, None) => Ok(Some(LangSource::Files(files))),
        (None, Some(tags), None) => Ok(Some(LangSource::PerFile(tags))),
        (None, None, Some(field)) if field.trim().is_empty() => {
            Err(Error::parameter("lang_field must name a field or column, got an empty string"))
        }
        (None, None, Some(field)) => Ok(Some(LangSource::Field(field))),
        (None, None, None) => Ok(None),
        _ => Err(Error::parameter(
            "give one of langs (files of tags), file_languages (a tag per file) or lang_field (a field of each record)",
        )),
    }
}

/// Language tags are read only to balance the languages: given without a
/// balancing (temperature 1, no parity) they would change nothing, so they
/// are refused rather than ignored.
fn unused_languages(source: &LangSource) -> Error {
    let (name, what) = match source {
        LangSource::Files(_) => ("langs=", "line"),
        LangSource::PerFile(_) => ("file_languages=", "file"),
        LangSource::Field(_) => ("lang_field=", "record"),
    };
    Error::parameter(format!(
        "{name} (the language of each {what}) is used only to balance the languages, and nothing balances them: \
         give temperature= above 1 (a language's share p becomes p^(1/T)) or max_premium= (parity), \
         or leave {name} out"
    ))
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
fn model_json<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Option<Model>, D::Error> {
    match model_json_bytes(d)? {
        Some(json) => Model::from_json(&json).map(Some).map_err(|e| serde::de::Error::custom(e.message())),
        None => Ok(None),
    }
}

fn model_json_bytes<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Option<Vec<u8>>, D::Error> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A small byte-level model with the default options.
    fn bytes_model() -> Model {
        let config = TrainOptions { vocab_size: 260, min_frequency: 1, threads: Some(1), ..TrainOptions::default() }
            .into_config()
            .unwrap();
        let mut counts = crate::count::WordCounts::new();
        for (w, n) in [("hello", 10), (" hello", 8), (" world", 7)] {
            counts.add(w.as_bytes(), n);
            counts.stats.pieces += n;
        }
        counts.stats.texts = 1;
        let silent = &mut crate::observe::Silent;
        crate::train::train_from_counts(counts, &config, silent, serde_json::json!([]), Default::default()).unwrap()
    }

    #[test]
    fn options_are_checked_once_into_a_valid_config() {
        assert!(TrainOptions::default().into_config().is_ok());
        let bad = TrainOptions { temperature: 2.0, ..TrainOptions::default() };
        let err = bad.into_config().unwrap_err();
        assert!(err.message().contains("temperature needs langs"), "{}", err.message());
    }

    /// Language tags without a balancing would change nothing: refused,
    /// naming the option given and the two that balance.
    #[test]
    fn language_tags_without_a_balancing_are_refused() {
        let d = TrainOptions::default;
        let cases = [
            (TrainOptions { langs: Some(vec!["c.langs".into()]), ..d() }, "langs=", "line"),
            (TrainOptions { file_languages: Some(vec!["en".into()]), ..d() }, "file_languages=", "file"),
            (TrainOptions { lang_field: Some("lang".into()), text_field: Some("text".into()), ..d() }, "lang_field=", "record"),
        ];
        for (options, name, what) in cases {
            let err = options.into_config().unwrap_err();
            let said = format!("{name} (the language of each {what}) is used only to balance the languages");
            assert!(err.message().starts_with(&said), "{}", err.message());
            assert!(err.message().contains("give temperature= above 1") && err.message().contains("max_premium="));
        }
        let balanced = [
            TrainOptions { langs: Some(vec!["c.langs".into()]), temperature: 3.0, ..d() },
            TrainOptions { file_languages: Some(vec!["en".into()]), max_premium: Some(1.2), ..d() },
        ];
        for options in balanced {
            assert!(options.into_config().is_ok());
        }
    }

    /// Every value rule is the engine's: each option out of range is refused
    /// with its Python name and the rule, also where it would go unused.
    #[test]
    fn each_value_rule_names_the_option_and_the_rule() {
        let d = TrainOptions::default;
        let cases: Vec<(TrainOptions, &str)> = vec![
            (TrainOptions { vocab_size: 0, ..d() }, "vocab_size must be a positive integer"),
            (TrainOptions { vocab_size: 257, special_tokens: vec!["<a>".into(), "<b>".into()], ..d() }, "at least 258"),
            (TrainOptions { min_word_count: 0, ..d() }, "min_word_count must be a positive integer"),
            (TrainOptions { checkpoint_every: 0, ..d() }, "checkpoint_every must be a positive integer"),
            (TrainOptions { superbpe_transition: Some(0), ..d() }, "superbpe_transition must be a positive integer"),
            (TrainOptions { temperature: 0.0, ..d() }, "temperature must be a positive number"),
            (TrainOptions { temperature: f64::NAN, ..d() }, "temperature must be a positive number"),
            (TrainOptions { max_premium: Some(1.0), ..d() }, "max_premium must be a number above 1"),
            (TrainOptions { balance_rounds: 21, ..d() }, "balance_rounds must be an integer from 0 to 20"),
            (TrainOptions { balance_max_lift: 0.5, ..d() }, "balance_max_lift must be a number from 1 to 1024"),
            (TrainOptions { balance_held_apart: 0.6, ..d() }, "balance_held_apart must be a number from 0 to 0.5"),
            (TrainOptions { premium_reference: Some(" ".into()), ..d() }, "premium_reference must be a language tag"),
            (TrainOptions { lang_field: Some(" ".into()), ..d() }, "lang_field must name a field or column"),
            (TrainOptions { text_field: Some(" ".into()), ..d() }, "text_field \" \": a dotted path"),
            (TrainOptions { columns: Some(vec![]), ..d() }, "columns must be column numbers counted from 1"),
            (TrainOptions { on_bad_record: "ignore".into(), ..d() }, "on_bad_record must be \"error\" or \"skip\""),
        ];
        for (options, rule) in cases {
            let err = options.into_config().unwrap_err();
            assert!(err.message().contains(rule), "{rule}: {}", err.message());
        }
    }

    #[test]
    fn a_resumed_models_settings_win_and_a_different_one_given_is_refused_in_python_terms() {
        let model = bytes_model();
        let same = TrainOptions { resume_from: Some(model.clone()), ..TrainOptions::default() };
        assert!(same.into_config().is_ok());
        let other = TrainOptions {
            resume_from: Some(model),
            scheme: "chars".into(),
            special_tokens: vec!["<a>".into()],
            ..TrainOptions::default()
        };
        let err = other.into_config().unwrap_err();
        assert!(
            err.message().contains("scheme='chars' (the model has 'bytes'); special_tokens=['<a>'] (the model has [])"),
            "{}",
            err.message()
        );
    }
}
