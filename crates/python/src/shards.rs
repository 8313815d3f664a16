//! The native half of `bpeforge.distributed.train`: the language table (one
//! worker task), one shard's count (one task per shard), and the driver's
//! running sum of the shards' tables (`CountSum`, the core's), which takes
//! each serialized table as it arrives, so the driver never holds every
//! shard's table at once, and then trains exactly as the local file path does.

use crate::errors::to_pyerr;
use crate::progress::{finish, PyObserver};
use crate::settings::TrainSettings;
use crate::tokenizer::NativeTokenizer;
use bpeforge_core::api::{language_table as languages_of, CountOf, CountSum as Sum, Part, TrainOn};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::path::PathBuf;

/// The run's languages, their line counts and the UTF-8 bytes of their
/// texts known before counting (the core's `language_table`: language
/// files, per-file tags, or with `lang_field` a pass over the records):
/// built once, by one task, and sent to every shard and to the driver's
/// training.
#[pyfunction]
pub(crate) fn language_table(py: Python<'_>, paths: Vec<PathBuf>, settings: &TrainSettings) -> PyResult<(Vec<String>, Vec<u64>, Vec<u64>)> {
    py.detach(|| languages_of(&paths, &settings.config)).map_err(to_pyerr)
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
    let mut observer = PyObserver::new(progress)?;
    let result = py.detach(|| {
        let shard = CountOf::Shard { paths, file_indices, byte_range, lines_before, languages };
        let mut counts = shard.count(config, observer.engine())?;
        let len = counts.wire_len(config)?;
        let lang_bytes = std::mem::take(&mut counts.lang_bytes);
        Ok((counts, len, lang_bytes))
    });
    let (counts, len, lang_bytes) = finish(result, observer)?;
    Ok((wire_bytes(py, counts, len)?, lang_bytes))
}

/// A part's wire form (`WordCounts::to_bytes`) written straight into a
/// Python `bytes` of its length: one copy of the output, and a table freed
/// behind the cursor (counts that spilled are written from their runs).
pub(crate) fn wire_bytes(py: Python<'_>, counts: Part, len: usize) -> PyResult<Bound<'_, PyBytes>> {
    PyBytes::new_with(py, len, |buf| py.detach(|| counts.write_wire(buf)).map_err(to_pyerr))
}

/// The sum of serialized count tables, added one at a time (each part can
/// be dropped once added). Parts are all plain or all weighted.
#[pyclass(module = "bpeforge._native")]
pub(crate) struct CountSum {
    sum: Sum,
}

#[pymethods]
impl CountSum {
    #[new]
    fn new() -> Self {
        CountSum { sum: Sum::default() }
    }

    /// Adds one serialized table (from `count_shard`, or the tests' `_count_files`),
    /// times `weight` if given.
    #[pyo3(signature = (part, weight=None))]
    fn add(&mut self, py: Python<'_>, part: &[u8], weight: Option<f64>) -> PyResult<()> {
        py.detach(|| self.sum.add(part, weight)).map_err(to_pyerr)
    }

    /// Tables added so far.
    #[getter]
    fn parts(&self) -> usize {
        self.sum.parts()
    }

    /// Word types in the sum so far.
    #[getter]
    fn word_types(&self) -> usize {
        self.sum.word_types()
    }

    /// Seconds spent adding tables.
    #[getter]
    fn seconds(&self) -> f64 {
        self.sum.seconds()
    }
}

/// Trains on a `CountSum` (which is used up) as the local file path trains
/// on its counts (`bpeforge_core::api::TrainOn::Sum`): the plain driver,
/// or with `languages` (names, lines) and `lang_bytes` the run's language
/// balancing; `sharded`: the seconds counting took from the first task to
/// the summed table, and the number of shards.
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
    let mut observer = PyObserver::new(progress)?;
    let mut sum = sum.borrow_mut();
    let on = TrainOn::Sum { sum: &mut sum.sum, languages, lang_bytes, sharded, inputs: &inputs };
    let result = py.detach(|| on.train(config, observer.engine()));
    NativeTokenizer::from_model(finish(result, observer)?)
}

