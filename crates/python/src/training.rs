//! Training entry points: files, a Python iterable of `str`, and one shard
//! of a distributed count, each taking the run's checked settings
//! (`TrainSettings`) and going through the core's pipeline.

use crate::{finish, NativeTokenizer, PyObserver, TrainSettings};
use bpeforge_core::api::{self, Chunk, CountPacer, CountProgress, CountScope, Error, Layout, Observer, TrainOptions};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
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
    let result = py.detach(|| bpeforge_core::api::train_files(&paths, config, &mut observer));
    NativeTokenizer::from_model(finish(result, observer)?)
}

/// Counts files into a counts file (`bpeforge count`, `bpeforge.count`),
/// written atomically; returns its header as JSON.
#[pyfunction]
pub(crate) fn count_to_file(py: Python<'_>, paths: Vec<PathBuf>, settings: &TrainSettings, progress: &Bound<'_, PyAny>, output: PathBuf) -> PyResult<String> {
    let config = &settings.config;
    let mut observer = PyObserver::new(progress)?;
    let result = py.detach(|| {
        let header = api::count_to_file(&paths, config, &mut observer, &output)?;
        serde_json::to_string(&header).map_err(|e| Error::output(e.to_string()))
    });
    finish(result, observer)
}

/// Trains on a counts file (`count_to_file`'s, or one a checkpointed run
/// saved) without counting.
#[pyfunction]
pub(crate) fn train_counts_file(py: Python<'_>, path: PathBuf, settings: &TrainSettings, progress: &Bound<'_, PyAny>) -> PyResult<NativeTokenizer> {
    let config = &settings.config;
    let mut observer = PyObserver::new(progress)?;
    let result = py.detach(|| api::train_counts_file(&path, config, &mut observer));
    NativeTokenizer::from_model(finish(result, observer)?)
}

/// Counts the word types of files (or of a byte range of one plain file) and
/// returns them serialized: one shard of a distributed count.
#[pyfunction]
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
        let raw = Arc::new(std::sync::atomic::AtomicU64::new(0));
        api::count_words(config, &mut observer, |sink, observer| {
            if observer.should_stop() {
                return Err(Error::interrupted());
            }
            match byte_range {
                Some((start, end)) => {
                    if paths.len() != 1 {
                        return Err(Error::parameter("byte_range needs exactly one input file"));
                    }
                    bpeforge_core::api::read_range_chunks(&paths[0], &config.text_mode, start, end, raw.clone(), sink)
                }
                None => {
                    bpeforge_core::api::total_size(&paths)?;
                    bpeforge_core::api::read_chunks(&paths, &config.text_mode, raw.clone(), sink)
                }
            }
        })
        .and_then(|c| {
            let counts = api::CountOutput::Table(c);
            let len = counts.wire_len()?;
            Ok((counts, len))
        })
    });
    let (counts, len) = finish(result, observer)?;
    crate::shards::wire_bytes(py, counts, len)
}

/// Texts pulled from the iterator per chunk (bounded memory, few GIL trips).
const ITER_CHUNK_BYTES: usize = 4 << 20;
const ITER_CHUNK_ITEMS: usize = 65_536;

/// Trains on a Python iterable of `str`, through the pipeline's steps as for
/// files (`count_fed`, then `train_counted`): the calling thread pulls texts
/// under the GIL while worker threads count earlier chunks without it.
/// Why this function is long: the pull loop keeps the Python error it met
/// for after counting, so it cannot be a separate function that returns.
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
    let source: Arc<str> = Arc::from("<iterator>");
    let watch = bpeforge_core::api::Stopwatch::start(bpeforge_core::api::threads_or_default(config.threads));
    let start = watch.instant();
    let mut py_error: Option<PyErr> = None;
    let feed = |sink: &mut dyn FnMut(Chunk) -> bpeforge_core::api::Result<()>, observer: &mut dyn Observer, _: &mut [u64]| {
        let mut item_no: u64 = 0;
        let mut iter = iter;
        let mut pacer = CountPacer::new(start);
        let mut read: u64 = 0;
        loop {
            let mut data = Vec::with_capacity(ITER_CHUNK_BYTES + 4096);
            let mut ends = Vec::new();
            let first = item_no + 1;
            let mut exhausted = false;
            while data.len() < ITER_CHUNK_BYTES && ends.len() < ITER_CHUNK_ITEMS {
                if ends.len() % 4096 == 4095 && observer.should_stop() {
                    return Err(Error::interrupted());
                }
                match iter.next() {
                    None => {
                        exhausted = true;
                        break;
                    }
                    Some(Err(e)) => {
                        py_error = Some(e);
                        return Err(Error::input("the iterator raised an exception"));
                    }
                    Some(Ok(obj)) => {
                        item_no += 1;
                        let s = match obj.cast::<PyString>() {
                            Ok(s) => s,
                            Err(_) => {
                                py_error = Some(PyTypeError::new_err(format!(
                                    "texts: item {item_no} is {}, not str",
                                    obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                                )));
                                return Err(Error::input("bad item"));
                            }
                        };
                        match s.to_str() {
                            Ok(t) => data.extend_from_slice(t.as_bytes()),
                            Err(e) => {
                                py_error = Some(e);
                                return Err(Error::input("bad item"));
                            }
                        }
                        ends.push(data.len());
                    }
                }
            }
            read += data.len() as u64;
            if !ends.is_empty() {
                sink(Chunk { data, layout: Layout::Ends(ends), source: source.clone(), first_line: first, langs: Vec::new() })?;
            }
            pacer.poll(observer, |t| CountProgress { raw_bytes_done: read, raw_bytes_total: None, elapsed: t, file: None })?;
            if exhausted {
                return Ok(0_u64);
            }
            let _ = py;
        }
    };
    let counted = api::count_fed(&config, None, Vec::new(), watch, &mut observer, CountScope::Run, Box::new(feed));
    let counted = match counted {
        Ok(c) => c,
        Err(e) => {
            if let Some(err) = py_error {
                return Err(err);
            }
            return NativeTokenizer::from_model(finish(Err(e), observer)?);
        }
    };
    let result = py.detach(|| api::train_counted(counted, config, None, serde_json::json!(["<iterator>"]), &mut observer));
    NativeTokenizer::from_model(finish(result, observer)?)
}
