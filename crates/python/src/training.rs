//! Training entry points: files, a counts file, a Python iterable of `str`,
//! and one part of a distributed count, each taking the run's checked
//! settings (`TrainSettings`) and running one of the core's requests
//! (`TrainOn`, `CountOf`).

use crate::progress::{finish, PyObserver};
use crate::settings::TrainSettings;
use crate::shards::wire_bytes;
use crate::tokenizer::NativeTokenizer;
use bpeforge_core::api::feed::{Chunk, Layout, Source};
use bpeforge_core::api::progress::Observer;
use bpeforge_core::api::{count_to_file as count_counts_file, CountOf, Error, Fed, TrainOn, TrainOptions};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyIterator, PyString};
use std::path::PathBuf;
use std::sync::Arc;

/// The training option names the engine takes (`TrainOptions`' fields).
#[pyfunction]
pub(crate) fn train_option_names() -> Vec<&'static str> {
    TrainOptions::names().to_vec()
}

/// Trains on files (the engine reads and decompresses them itself).
#[pyfunction]
pub(crate) fn train_files(py: Python<'_>, paths: Vec<PathBuf>, settings: &TrainSettings, progress: &Bound<'_, PyAny>) -> PyResult<NativeTokenizer> {
    let config = &settings.config;
    let mut observer = PyObserver::new(progress)?;
    let result = py.detach(|| TrainOn::Files(&paths).train(config, observer.engine()));
    NativeTokenizer::from_model(finish(result, observer)?)
}

/// Counts files into a counts file (`bpeforge count`, `bpeforge.count`),
/// written atomically; returns its header as JSON.
#[pyfunction]
pub(crate) fn count_to_file(py: Python<'_>, paths: Vec<PathBuf>, settings: &TrainSettings, progress: &Bound<'_, PyAny>, output: PathBuf) -> PyResult<String> {
    let config = &settings.config;
    let mut observer = PyObserver::new(progress)?;
    let result = py.detach(|| count_counts_file(&paths, config, observer.engine(), &output));
    finish(result, observer)
}

/// Trains on a counts file (`count_to_file`'s, or one a checkpointed run
/// saved) without counting.
#[pyfunction]
pub(crate) fn train_counts_file(py: Python<'_>, path: PathBuf, settings: &TrainSettings, progress: &Bound<'_, PyAny>) -> PyResult<NativeTokenizer> {
    let config = &settings.config;
    let mut observer = PyObserver::new(progress)?;
    let result = py.detach(|| TrainOn::CountsFile(&path).train(config, observer.engine()));
    NativeTokenizer::from_model(finish(result, observer)?)
}

/// Counts the word types of files (or of a byte range of one plain file) and
/// returns them serialized, with no check of the merge phase's budget: a
/// hook for the tests of counting itself (spilling at tight budgets, equal
/// counts at every thread count); the package counts through `count_shard`
/// and `count_to_file`.
#[pyfunction(name = "_count_files")]
#[pyo3(signature = (paths, settings, progress, byte_range=None))]
pub(crate) fn count_files<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    settings: &TrainSettings,
    progress: &Bound<'_, PyAny>,
    byte_range: Option<(u64, u64)>,
) -> PyResult<Bound<'py, PyBytes>> {
    let config = &settings.config;
    let mut observer = PyObserver::new(progress)?;
    let result = py.detach(|| {
        let counts = CountOf::Files { paths: &paths, byte_range }.count(config, observer.engine())?;
        let len = counts.wire_len(config)?;
        Ok((counts, len))
    });
    let (counts, len) = finish(result, observer)?;
    wire_bytes(py, counts, len)
}

/// Trains on a Python iterable of `str`, through the pipeline's steps as for
/// files (`Fed::count_plain`, then `TrainOn::Fed`): the calling thread pulls
/// texts under the GIL while worker threads count earlier chunks without
/// it; the merge phase runs without the GIL.
#[pyfunction]
pub(crate) fn train_iterator(py: Python<'_>, texts: &Bound<'_, PyAny>, settings: &TrainSettings, progress: &Bound<'_, PyAny>) -> PyResult<NativeTokenizer> {
    let config = &settings.config;
    let mut observer = PyObserver::new(progress)?;
    let iter = texts.try_iter().map_err(|_| {
        PyTypeError::new_err(format!(
            "texts must be an iterable of str, got {}",
            texts.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })?;
    let mut source = PyTexts { iter, item_no: 0, exhausted: false, error: None, name: Arc::from("<iterator>") };
    let counted = Fed::count_plain(&mut source, config, observer.engine());
    if let Some(err) = source.error.take() {
        return Err(err);
    }
    let counted = match counted {
        Ok(c) => c,
        Err(e) => return NativeTokenizer::from_model(finish(Err(e), observer)?),
    };
    let inputs = [source.name.to_string()];
    let result = py.detach(|| TrainOn::Fed { fed: counted, inputs: &inputs }.train(config, observer.engine()));
    NativeTokenizer::from_model(finish(result, observer)?)
}

/// Texts pulled from the iterator per chunk (bounded memory, few GIL trips).
const ITER_CHUNK_BYTES: usize = 4 << 20;
const ITER_CHUNK_ITEMS: usize = 65_536;

/// A Python iterator of `str` as a source: chunks of up to
/// `ITER_CHUNK_BYTES` or `ITER_CHUNK_ITEMS` texts. What Python raised (the
/// iterator's exception, an item that is not a `str`) is kept in `error`,
/// to be raised as it is.
struct PyTexts<'py> {
    iter: Bound<'py, PyIterator>,
    item_no: u64,
    exhausted: bool,
    error: Option<PyErr>,
    name: Arc<str>,
}

impl PyTexts<'_> {
    fn fail(&mut self, err: PyErr) -> Error {
        self.error = Some(err);
        Error::input("the iterator of texts raised an exception")
    }
}

impl Source for PyTexts<'_> {
    fn next_chunk(&mut self, observer: &mut dyn Observer) -> Result<Option<Chunk>, Error> {
        if self.exhausted {
            return Ok(None);
        }
        let mut data = Vec::with_capacity(ITER_CHUNK_BYTES + 4096);
        let mut ends = Vec::new();
        let first = self.item_no + 1;
        while data.len() < ITER_CHUNK_BYTES && ends.len() < ITER_CHUNK_ITEMS {
            if ends.len() % 4096 == 4095 && observer.should_stop() {
                return Err(Error::interrupted());
            }
            let obj = match self.iter.next() {
                None => {
                    self.exhausted = true;
                    break;
                }
                Some(Err(e)) => return Err(self.fail(e)),
                Some(Ok(obj)) => obj,
            };
            self.item_no += 1;
            let s = match obj.cast::<PyString>() {
                Ok(s) => s,
                Err(_) => {
                    let kind = obj.get_type().name().map(|n| n.to_string()).unwrap_or_default();
                    return Err(self.fail(PyTypeError::new_err(format!("texts: item {} is {kind}, not str", self.item_no))));
                }
            };
            match s.to_str() {
                Ok(t) => data.extend_from_slice(t.as_bytes()),
                Err(e) => return Err(self.fail(e)),
            }
            ends.push(data.len());
        }
        if ends.is_empty() {
            return Ok(None);
        }
        Ok(Some(Chunk { data, layout: Layout::Ends(ends), source: self.name.clone(), first_line: first, langs: Vec::new() }))
    }
}
