//! The native half of `bpeforge.distributed.train`: the language table (one
//! worker task), one shard's count (one task per shard), and the driver's
//! running sum of the shards' tables (`CountSum`), which takes each
//! serialized table as it arrives, so the driver never holds every shard's
//! table at once, and then trains exactly as the local file path does.

use super::{finish, to_pyerr, NativeTokenizer, PyObserver, TrainSettings};
use bpeforge_core::api::{self, train_on_counts, LanguageTable, ShardedCount};
use bpeforge_core::api::WordCounts;
use bpeforge_core::api::Error;
use bpeforge_core::api::{count_shard_output, CountOutput, Shard};
use bpeforge_core::api::TrainConfig;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::path::PathBuf;
use std::time::Instant;

/// The run's languages, their line counts and the UTF-8 bytes of their
/// texts known before counting (`pipeline::language_table`: language
/// files, per-file tags, or with `lang_field` a pass over the records):
/// built once, by one task, and sent to every shard and to the driver's
/// training.
#[pyfunction]
pub(crate) fn language_table(py: Python<'_>, paths: Vec<PathBuf>, settings: &TrainSettings) -> PyResult<(Vec<String>, Vec<u64>, Vec<u64>)> {
    let table = py.detach(|| api::language_table(&paths, &settings.config)).map_err(to_pyerr)?;
    let Some((table, bytes)) = table else {
        return Err(to_pyerr(Error::parameter("language_table needs langs, file_languages or lang_field")));
    };
    Ok((table.names, table.lines, bytes))
}

/// The language table of `languages` (names, lines) for `config`'s temperature.
pub(crate) fn table_of(config: &TrainConfig, languages: Option<(Vec<String>, Vec<u64>)>) -> Result<Option<LanguageTable>, Error> {
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

/// Counts one shard (see `bpeforge_core::shard`) and returns its table
/// serialized, with the UTF-8 bytes of each language's texts (balanced runs).
#[pyfunction]
#[pyo3(signature = (paths, file_indices, settings, progress, byte_range=None, lines_before=0, languages=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn count_shard<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    file_indices: Vec<usize>,
    settings: &TrainSettings,
    progress: &Bound<'_, PyAny>,
    byte_range: Option<(u64, u64)>,
    lines_before: u64,
    languages: Option<(Vec<String>, Vec<u64>)>,
) -> PyResult<(Bound<'py, PyBytes>, Vec<u64>)> {
    let config = &settings.config;
    let table = table_of(&config, languages).map_err(to_pyerr)?;
    let mut observer = PyObserver::new(progress)?;
    let shard = Shard { paths, file_indices, byte_range, lines_before };
    let result = py.detach(|| {
        let (counts, lang_bytes) = count_shard_output(&shard, table.as_ref(), config, &mut observer)?;
        let len = counts.wire_len_within(config.memory_budget(), RETURNED_COPIES)?;
        Ok((counts, len, lang_bytes))
    });
    let (counts, len, lang_bytes) = finish(result, observer)?;
    Ok((wire_bytes(py, counts, len)?, lang_bytes))
}

/// The copies of a task's serialized counts held at once as it returns
/// them: its `bytes`, and Ray's object store's copy made from them.
pub(crate) const RETURNED_COPIES: u64 = 2;

/// The counts' wire form (`WordCounts::to_bytes`) written straight into a
/// Python `bytes` of its length: one copy of the output, and a table freed
/// behind the cursor (counts that spilled are written from their runs).
pub(crate) fn wire_bytes(py: Python<'_>, counts: CountOutput, len: usize) -> PyResult<Bound<'_, PyBytes>> {
    PyBytes::new_with(py, len, |buf| py.detach(|| counts.write_wire(buf)).map_err(to_pyerr))
}

/// The sum of serialized count tables, added one at a time (each part can
/// be dropped once added). Parts are all plain or all weighted.
#[pyclass(module = "bpeforge._native")]
pub(crate) struct CountSum {
    total: Option<WordCounts>,
    parts: usize,
    weighted: Option<bool>,
    seconds: f64,
}

impl CountSum {
    fn add_part(&mut self, part: &[u8], weight: Option<f64>) -> Result<(), Error> {
        let start = Instant::now();
        let total = self.total.as_mut().ok_or_else(|| Error::parameter("this CountSum was already trained on"))?;
        if *self.weighted.get_or_insert(weight.is_some()) != weight.is_some() {
            return Err(Error::parameter("CountSum: give a weight for every part or for none"));
        }
        let factor = match weight {
            None => 1,
            Some(w) if w > 0.0 && w <= api::MAX_LANGUAGE_WEIGHT => {
                (w * api::WEIGHT_SCALE as f64).round().max(1.0) as u64
            }
            Some(w) => {
                return Err(Error::parameter(format!(
                    "weights[{}] must be in (0, {}], got {w}",
                    self.parts,
                    api::MAX_LANGUAGE_WEIGHT
                )))
            }
        };
        total.add_bytes(part, factor)?;
        self.parts += 1;
        self.seconds += start.elapsed().as_secs_f64();
        Ok(())
    }

    /// The summed table (weighted parts rescaled); the sum is then used up.
    fn take(&mut self) -> Result<WordCounts, Error> {
        let mut total = self.total.take().ok_or_else(|| Error::parameter("this CountSum was already trained on"))?;
        if self.weighted == Some(true) {
            total.rescale(api::WEIGHT_SCALE);
        }
        Ok(total)
    }
}

#[pymethods]
impl CountSum {
    #[new]
    fn new() -> Self {
        CountSum { total: Some(WordCounts::new()), parts: 0, weighted: None, seconds: 0.0 }
    }

    /// Adds one serialized table (from `count_shard` or `count_files`),
    /// times `weight` if given.
    #[pyo3(signature = (part, weight=None))]
    fn add(&mut self, py: Python<'_>, part: &[u8], weight: Option<f64>) -> PyResult<()> {
        py.detach(|| self.add_part(part, weight)).map_err(to_pyerr)
    }

    /// Tables added so far.
    #[getter]
    fn parts(&self) -> usize {
        self.parts
    }

    /// Word types in the sum so far.
    #[getter]
    fn word_types(&self) -> usize {
        self.total.as_ref().map_or(0, |t| t.len())
    }

    /// Seconds spent adding tables.
    #[getter]
    fn seconds(&self) -> f64 {
        self.seconds
    }
}

/// Trains on a `CountSum` (which is used up) as the local file path trains
/// on its counts: the plain driver, or with `languages` (names, lines) and
/// `lang_bytes` the run's language balancing. With `sharded` (the seconds
/// counting took from the first task to the summed table, and the number
/// of shards) the model's timings record the sharded count
/// (`stats::ShardedCount`); without it, the time spent summing.
#[pyfunction]
#[pyo3(signature = (sum, settings, progress, inputs, languages=None, lang_bytes=None, sharded=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn train_count_sum(
    py: Python<'_>,
    sum: &Bound<'_, CountSum>,
    settings: &TrainSettings,
    progress: &Bound<'_, PyAny>,
    inputs: Vec<String>,
    languages: Option<(Vec<String>, Vec<u64>)>,
    lang_bytes: Option<Vec<u64>>,
    sharded: Option<(f64, usize)>,
) -> PyResult<NativeTokenizer> {
    let config = &settings.config;
    let table = table_of(&config, languages).map_err(to_pyerr)?;
    let lang_bytes = lang_bytes.unwrap_or_else(|| vec![0; table.as_ref().map_or(0, |t| t.names.len())]);
    if table.as_ref().is_some_and(|t| t.names.len() != lang_bytes.len()) {
        return Err(to_pyerr(Error::parameter("lang_bytes: one byte count per language is needed")));
    }
    let (counts, seconds) = {
        let mut sum = sum.borrow_mut();
        (sum.take().map_err(to_pyerr)?, sum.seconds)
    };
    let mut observer = PyObserver::new(progress)?;
    let result = py.detach(|| {
        let count = bpeforge_core::api::PhaseTime::wall(seconds, bpeforge_core::api::threads_or_default(config.threads));
        let mut model = train_on_counts(counts, table.as_ref(), &lang_bytes, config, &mut observer, serde_json::json!(inputs), count)?;
        if let Some((seconds, shards)) = sharded {
            ShardedCount { seconds, shards }.record(&mut model.metadata);
        }
        Ok(model)
    });
    NativeTokenizer::from_model(finish(result, observer)?)
}

/// Sums serialized word counts (from `count_files`), each part times its
/// weight if `weights` is given, and runs the merge loop: `CountSum` and
/// `train_count_sum` in one call, for parts already in memory.
#[pyfunction]
#[pyo3(signature = (parts, settings, progress, inputs, weights=None))]
pub(crate) fn train_counts(
    py: Python<'_>,
    parts: Vec<Vec<u8>>,
    settings: &TrainSettings,
    progress: &Bound<'_, PyAny>,
    inputs: Vec<String>,
    weights: Option<Vec<f64>>,
) -> PyResult<NativeTokenizer> {
    let config = &settings.config;
    if let Some(w) = weights.as_ref().filter(|w| w.len() != parts.len()) {
        return Err(to_pyerr(Error::parameter(format!("weights: {} weight(s) for {} part(s)", w.len(), parts.len()))));
    }
    let mut sum = CountSum::new();
    let mut observer = PyObserver::new(progress)?;
    let result = py.detach(|| {
        for (i, part) in parts.iter().enumerate() {
            sum.add_part(part, weights.as_ref().map(|w| w[i]))?;
        }
        let count = bpeforge_core::api::PhaseTime::wall(sum.seconds, bpeforge_core::api::threads_or_default(config.threads));
        bpeforge_core::api::train_from_counts(sum.take()?, config, &mut observer, serde_json::json!(inputs), count)
    });
    NativeTokenizer::from_model(finish(result, observer)?)
}
