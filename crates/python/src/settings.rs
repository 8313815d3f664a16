//! `TrainSettings`: a run's training options as the engine takes them,
//! converted and checked once (`TrainOptions::into_config`, the core's one
//! check) when Python builds it; every training entry point of the bindings
//! takes it, already checked.

use crate::{to_pyerr, NativeTokenizer};
use bpeforge_core::api::{Error, Model, TrainOptions, ValidConfig};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;

/// The checked settings of one training run (`bpeforge.options.TrainOptions.settings()`).
#[pyclass(frozen, module = "bpeforge._native")]
pub(crate) struct TrainSettings {
    pub(crate) config: ValidConfig,
}

#[pymethods]
impl TrainSettings {
    /// Reads `options` (one attribute per field of the core's
    /// `TrainOptions`, by the same names, with the engine's types:
    /// `bpeforge.options.EngineOptions`) and checks it. `resume_from` is a
    /// loaded model (`_native.NativeTokenizer`, whose model is taken as it
    /// is) or a model path (read and parsed here, once).
    #[new]
    fn new(py: Python<'_>, options: &Bound<'_, PyAny>) -> PyResult<Self> {
        let fields = PyDict::new(py);
        for name in TrainOptions::names().iter().filter(|n| **n != "resume_from") {
            let value = options.getattr(*name).map_err(|_| {
                to_pyerr(Error::parameter(format!("training options: {name} is missing")))
            })?;
            fields.set_item(name, value)?;
        }
        let mut record: TrainOptions = pythonize::depythonize(&fields)
            .map_err(|e| to_pyerr(Error::parameter(format!("training options: {e}"))))?;
        record.resume_from = resumed_model(py, &options.getattr("resume_from")?)?;
        let config = py.detach(|| record.into_config()).map_err(to_pyerr)?;
        Ok(TrainSettings { config })
    }

    /// The settings of one counting task of a distributed run: `threads`
    /// counting threads, `budget_share` (0 to 1] of the run's memory budget
    /// (the tasks side by side on a machine keep to it together), and none
    /// of the files the driver writes (checkpoints, the progress CSV).
    fn for_counting_task(&self, threads: usize, budget_share: f64) -> Self {
        let config = self.config.clone().with_threads(threads).with_budget_share(budget_share).without_outputs();
        TrainSettings { config }
    }

    /// The memory budget the run keeps to, in bytes (`max_memory`, or the
    /// default share of the memory available now).
    #[getter]
    fn memory_budget(&self) -> u64 {
        self.config.memory_budget()
    }
}

/// `resume_from`: a loaded model's own `Model` (a `Tokenizer`'s, taken as
/// it is: no copy through JSON) or a model file, read and parsed once.
fn resumed_model(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Option<Model>> {
    if value.is_none() {
        return Ok(None);
    }
    // A `bpeforge.Tokenizer` holds its `NativeTokenizer` as `_native`.
    let native = if value.hasattr("_native")? { value.getattr("_native")? } else { value.clone() };
    if let Ok(native) = native.cast::<NativeTokenizer>() {
        return Ok(Some(native.get().enc.model().clone()));
    }
    let path: PathBuf = value.extract()?;
    py.detach(|| Model::load(&path)).map(Some).map_err(to_pyerr)
}
