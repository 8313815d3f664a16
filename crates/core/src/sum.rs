//! The driver's half of a distributed count (`bpeforge.distributed`): the
//! running sum of the shards' serialized tables (`CountSum`), which takes
//! each table as it arrives, so the driver never holds every shard's table
//! at once, and then trains exactly as the local file path does
//! (`pipeline::train_on_counts`).

use crate::balance::{LanguageTable, MAX_LANGUAGE_WEIGHT, WEIGHT_SCALE};
use crate::clock::PhaseTime;
use crate::count::WordCounts;
use crate::error::{Error, Result};
use crate::model::Model;
use crate::observe::Observer;
use crate::pipeline::train_on_counts;
use crate::train::stats::ShardedCount;
use crate::train::ValidConfig;
use std::time::Instant;

/// The sum of serialized count tables, added one at a time (each part can
/// be dropped once added). Parts are all plain or all weighted.
pub struct CountSum {
    total: Option<WordCounts>,
    parts: usize,
    weighted: Option<bool>,
    seconds: f64,
}

impl Default for CountSum {
    fn default() -> Self {
        CountSum { total: Some(WordCounts::new()), parts: 0, weighted: None, seconds: 0.0 }
    }
}

impl CountSum {
    /// Adds one serialized table (`WordCounts::to_bytes`), times `weight`
    /// (a language's temperature weight) if given.
    pub fn add(&mut self, part: &[u8], weight: Option<f64>) -> Result<()> {
        let start = Instant::now();
        let total = self.total.as_mut().ok_or_else(|| Error::parameter("this CountSum was already trained on"))?;
        if *self.weighted.get_or_insert(weight.is_some()) != weight.is_some() {
            return Err(Error::parameter("CountSum: give a weight for every part or for none"));
        }
        let factor = match weight {
            None => 1,
            Some(w) if w > 0.0 && w <= MAX_LANGUAGE_WEIGHT => (w * WEIGHT_SCALE as f64).round().max(1.0) as u64,
            Some(w) => {
                return Err(Error::parameter(format!("weights[{}] must be in (0, {MAX_LANGUAGE_WEIGHT}], got {w}", self.parts)))
            }
        };
        total.add_bytes(part, factor)?;
        self.parts += 1;
        self.seconds += start.elapsed().as_secs_f64();
        Ok(())
    }

    /// Tables added so far.
    pub fn parts(&self) -> usize {
        self.parts
    }

    /// Word types in the sum so far.
    pub fn word_types(&self) -> usize {
        self.total.as_ref().map_or(0, |t| t.len())
    }

    /// Seconds spent adding tables.
    pub fn seconds(&self) -> f64 {
        self.seconds
    }

    /// The summed table (weighted parts rescaled); the sum is then used up.
    fn take(&mut self) -> Result<WordCounts> {
        let mut total = self.total.take().ok_or_else(|| Error::parameter("this CountSum was already trained on"))?;
        if self.weighted == Some(true) {
            total.rescale(WEIGHT_SCALE);
        }
        Ok(total)
    }

    /// Trains on the sum (which is used up) as the local file path trains on
    /// its counts: the plain driver, or with `languages` (the run's table,
    /// `summed_languages`) and `lang_bytes` (the UTF-8 bytes of each
    /// language's texts; None: none known) its language balancing. With
    /// `sharded` (the seconds counting took from the first task to the
    /// summed table, and the number of shards) the model's timings record
    /// the sharded count (`ShardedCount`); without it, the time spent summing.
    pub fn train(
        &mut self,
        languages: Option<&LanguageTable>,
        lang_bytes: Option<Vec<u64>>,
        sharded: Option<(f64, usize)>,
        config: &ValidConfig,
        observer: &mut dyn Observer,
        inputs: &[String],
    ) -> Result<Model> {
        let lang_bytes = lang_bytes.unwrap_or_else(|| vec![0; languages.map_or(0, |t| t.names.len())]);
        if languages.is_some_and(|t| t.names.len() != lang_bytes.len()) {
            return Err(Error::parameter("lang_bytes: one byte count per language is needed"));
        }
        let counts = self.take()?;
        let count = PhaseTime::wall(self.seconds, crate::util::threads_or_default(config.threads));
        let mut model = train_on_counts(counts, languages, &lang_bytes, config, observer, serde_json::json!(inputs), count)?;
        if let Some((seconds, shards)) = sharded {
            ShardedCount { seconds, shards }.record(&mut model.metadata);
        }
        Ok(model)
    }
}

/// The language table of a summed run from `languages` (names and line
/// counts, as `pipeline::language_table` gave them) for `config`'s
/// temperature; none for a run that balances no languages.
pub fn summed_languages(config: &ValidConfig, languages: Option<(Vec<String>, Vec<u64>)>) -> Result<Option<LanguageTable>> {
    match (languages, &config.balance) {
        (Some((names, lines)), Some(b)) => LanguageTable::from_lines(names, lines, b.temperature).map(|mut t| {
            t.hold_apart(b);
            Some(t)
        }),
        (None, None) => Ok(None),
        (Some(_), None) => Err(Error::parameter("languages given for a run without langs or file_languages")),
        (None, Some(_)) => Err(Error::parameter("a language-balanced run needs its language table (languages=...)")),
    }
}
