//! Checking a `TrainConfig`, once: `TrainConfig::validate` is the only way
//! to make a `ValidConfig`, and the entry points (files, iterator, Arrow
//! batches, distributed counts, Rust callers) take a `ValidConfig`, so a
//! run's settings are checked exactly once, before any input is read.

use super::config::{LangSource, Parity, TrainConfig};
use crate::error::{Error, Result};
use crate::input::fields::FieldSpec;
use crate::input::TextMode;
use crate::model::Scheme;
use crate::pretok::{PreTokenizer, PreTokenizerSpec};

/// A `TrainConfig` that passed `TrainConfig::validate` (the only way to
/// make one). It reads as the config it holds; the setters it offers
/// change only what validation does not look at.
#[derive(Debug, Clone)]
pub struct ValidConfig(TrainConfig);

impl std::ops::Deref for ValidConfig {
    type Target = TrainConfig;
    fn deref(&self) -> &TrainConfig {
        &self.0
    }
}

impl ValidConfig {
    /// The counting threads (0: all cores); the result never depends on them.
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.0.threads = threads;
        self
    }

    /// This share (0 to 1] of the run's memory budget
    /// (`TrainConfig::memory_budget`): what one of several counting tasks
    /// on a machine may use, so that together they keep to the budget.
    pub fn with_budget_share(mut self, share: f64) -> Self {
        let share = if share > 0.0 && share <= 1.0 { share } else { 1.0 };
        self.0.max_memory = Some(((self.0.memory_budget() as f64 * share) as u64).max(1));
        self
    }

    /// Without the files a run writes as it goes (checkpoints, the
    /// progress CSV): for counting tasks, whose driver writes them.
    pub fn without_outputs(mut self) -> Self {
        self.0.checkpoint = None;
        self.0.progress_csv = None;
        self
    }
}

impl Parity {
    pub fn validate(&self) -> Result<()> {
        if !(self.max_premium > 1.0 && self.max_premium.is_finite()) {
            return Err(Error::parameter(format!(
                "max_premium must be a number above 1 (e.g. 1.2: no language pays more than 1.2x the reference's tokens per text unit), got {}",
                self.max_premium
            )));
        }
        self.validate_tuning()
    }

    /// The reweighting options' own ranges (all but `max_premium`):
    /// checked also where `max_premium` is unset, so a value out of range
    /// is refused even when it would not be used.
    pub fn validate_tuning(&self) -> Result<()> {
        if !(self.max_lift >= 1.0 && self.max_lift <= 1024.0) {
            return Err(Error::parameter(format!(
                "balance_max_lift must be a number from 1 to 1024, got {}",
                self.max_lift
            )));
        }
        if !(0.0..=0.5).contains(&self.held_apart) {
            return Err(Error::parameter(format!(
                "balance_held_apart must be a number from 0 to 0.5 (a share of each language's lines), got {}",
                self.held_apart
            )));
        }
        if self.rounds > 20 {
            return Err(Error::parameter(format!(
                "balance_rounds must be an integer from 0 to 20, got {}",
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

/// `temperature`: each language's share p becomes p^(1/T), so T is a
/// positive, finite number (checked where given, balanced or not).
pub(crate) fn check_temperature(t: f64) -> Result<()> {
    if !(t > 0.0 && t.is_finite()) {
        return Err(Error::parameter(format!("temperature must be a positive number, got {t}")));
    }
    Ok(())
}

impl TrainConfig {
    /// Checks the settings before any input is read: the one place every
    /// entry (files, iterator, distributed counts, Rust callers) is checked.
    pub fn validate(self) -> Result<ValidConfig> {
        self.check()?;
        Ok(ValidConfig(self))
    }

    fn check(&self) -> Result<()> {
        if self.vocab_size == 0 {
            return Err(Error::parameter("vocab_size must be a positive integer, got 0"));
        }
        if self.vocab_size > u32::MAX as usize / 2 {
            return Err(Error::parameter(format!("vocab_size {} is too large", self.vocab_size)));
        }
        if self.max_memory == Some(0) {
            return Err(Error::parameter("max_memory must be a positive number of bytes (e.g. \"8G\"), or None for the default"));
        }
        if self.min_word_count == 0 {
            return Err(Error::parameter("min_word_count must be a positive integer (1 keeps every word type), got 0"));
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
        self.validate_base_vocabulary()?;
        self.validate_resumed_size()?;
        PreTokenizer::new(self.pretokenizer.clone())?;
        self.validate_balance()?;
        self.validate_superbpe()
    }

    /// A byte-level vocabulary holds the 256 bytes and the special tokens
    /// before any merge: a smaller `vocab_size` is refused before the
    /// corpus is read (a chars alphabet is known only after counting: the
    /// driver checks it then).
    fn validate_base_vocabulary(&self) -> Result<()> {
        if !matches!(self.scheme, Scheme::Bytes) || self.resume_from.is_some() {
            return Ok(());
        }
        let specials = self.special_tokens.iter().collect::<std::collections::HashSet<_>>().len();
        let fixed = 256 + specials;
        if self.vocab_size < fixed {
            return Err(Error::parameter(format!(
                "vocab_size {} is below the base vocabulary of the bytes scheme: {specials} special token(s) + 256 base symbols = {fixed}; raise vocab_size to at least {fixed}",
                self.vocab_size
            )));
        }
        Ok(())
    }

    /// Resuming only grows a vocabulary: a `vocab_size` below the resumed
    /// model's is refused before any input is read. A model with its own
    /// ids (an import) is measured in ids, one past the largest.
    fn validate_resumed_size(&self) -> Result<()> {
        let Some(m) = &self.resume_from else { return Ok(()) };
        let (size, what) = match &m.ids {
            Some(ids) => (ids.iter().map(|&e| e as usize + 1).max().unwrap_or(0), "ids"),
            None => (m.vocab_size(), "tokens"),
        };
        if self.vocab_size < size {
            return Err(Error::parameter(format!(
                "vocab_size {} is below the resumed model's {size} {what}; resuming only grows a vocabulary (give at least {size})",
                self.vocab_size
            )));
        }
        Ok(())
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
                if self.pretokenizer != PreTokenizerSpec::WHITESPACE {
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
        check_temperature(b.temperature)?;
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
        if self.pretokenizer == PreTokenizerSpec::SUPERWORD {
            return Err(Error::parameter("superbpe_transition: stage 1 needs a word-level pre-tokenizer such as \"gpt2\""));
        }
        Ok(())
    }
}
