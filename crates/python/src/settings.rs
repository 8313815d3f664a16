//! `TrainSettings`: a run's training options as the engine takes them,
//! converted and checked once (`TrainOptions::into_config`, the core's one
//! check) when Python builds it; every training entry point of the bindings
//! takes it, already checked.

use crate::errors::to_pyerr;
use crate::tokenizer::NativeTokenizer;
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
    /// is), a model path (read and parsed here, once) or the
    /// `TrainSettings` of the same options (whose model is taken).
    /// `explicit` names the options the caller set (the command line knows
    /// them; None: those that differ from their defaults): resuming a
    /// checkpoint takes the others from it.
    #[new]
    #[pyo3(signature = (options, explicit=None))]
    fn new(py: Python<'_>, options: &Bound<'_, PyAny>, explicit: Option<Vec<String>>) -> PyResult<Self> {
        let fields = PyDict::new(py);
        for name in TrainOptions::names().iter().filter(|n| **n != "resume_from") {
            let value = options.getattr(*name).map_err(|_| {
                to_pyerr(Error::parameter(format!("training options: {name} is missing")))
            })?;
            fields.set_item(name, value)?;
        }
        let mut record: TrainOptions = pythonize::depythonize(&fields).map_err(|e| to_pyerr(conversion_error(py, &fields, e)))?;
        record.resume_from = resumed_model(py, &options.getattr("resume_from")?)?;
        record.explicit = explicit;
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

    /// The options a resumed checkpoint gave (those left at their
    /// defaults), by name, in the engine's form.
    #[getter]
    fn from_checkpoint<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        pythonize::pythonize(py, &self.config.from_checkpoint).map_err(|e| to_pyerr(Error::parameter(e.to_string())))
    }

    /// The memory budget the run keeps to, in bytes (`max_memory`, or the
    /// default share of the memory available now).
    #[getter]
    fn memory_budget(&self) -> u64 {
        self.config.memory_budget()
    }
}

/// `resume_from`: a loaded model's own `Model` (a `Tokenizer`'s, taken as
/// it is: no copy through JSON), the model another `TrainSettings` of the
/// same run already read, or a model file, read and parsed once.
fn resumed_model(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Option<Model>> {
    if value.is_none() {
        return Ok(None);
    }
    // The settings of the same options: the model they already read.
    if let Ok(settings) = value.cast::<TrainSettings>() {
        return Ok(settings.get().config.resume_from.clone());
    }
    // A `bpeforge.Tokenizer` holds its `NativeTokenizer` as `_native`.
    let native = if value.hasattr("_native")? { value.getattr("_native")? } else { value.clone() };
    if let Ok(native) = native.cast::<NativeTokenizer>() {
        return Ok(Some(native.get().enc.model().clone()));
    }
    let path: PathBuf = value.extract()?;
    py.detach(|| Model::load(&path)).map(Some).map_err(to_pyerr)
}

/// Why the options do not fit the engine's record, naming the option: the
/// first field that does not convert on its own (Python hands over values
/// of the right kind, so this is a negative or too large integer where
/// the engine counts).
fn conversion_error(py: Python<'_>, fields: &Bound<'_, PyDict>, whole: pythonize::PythonizeError) -> Error {
    for (name, value) in fields.iter() {
        let one = PyDict::new(py);
        if one.set_item(&name, &value).is_err() {
            continue;
        }
        if let Err(e) = pythonize::depythonize::<TrainOptions>(&one) {
            let negative = |v: &Bound<'_, PyAny>| v.extract::<i64>().is_ok_and(|n| n < 0);
            let has_negative = negative(&value)
                || value.try_iter().is_ok_and(|items| items.flatten().any(|v| negative(&v)));
            let shown = value.repr().map_or_else(|_| "?".to_string(), |r| r.to_string());
            return if has_negative {
                Error::parameter(format!("{name} must not be negative, got {shown}"))
            } else {
                Error::parameter(format!("{name}: {e} (got {shown})"))
            };
        }
    }
    Error::parameter(format!("training options: {whole}"))
}
