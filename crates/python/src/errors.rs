//! Engine errors as Python exceptions: each `ErrorKind` maps to its class
//! in `bpeforge.errors` (the one place the hierarchy is declared).
//!
//! The classes are looked up once, when the module is imported
//! (`bind_classes`), and kept: an error costs no import or attribute lookup,
//! and a class renamed or removed in `bpeforge.errors` makes the import fail
//! with its name, instead of every later error silently becoming a
//! `RuntimeError`.

use bpeforge_core::api::{Error, ErrorKind};
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

/// The Python class of each error kind (Ctrl-C is `KeyboardInterrupt`).
const CLASSES: [(ErrorKind, &str); 6] = [
    (ErrorKind::Parameter, "ParameterError"),
    (ErrorKind::Input, "InputError"),
    (ErrorKind::ModelFormat, "ModelFormatError"),
    (ErrorKind::SpecialToken, "SpecialTokenError"),
    (ErrorKind::Training, "TrainingError"),
    (ErrorKind::Output, "OutputError"),
];

/// The classes of `CLASSES`, in its order, then the base class.
static BOUND: PyOnceLock<Vec<Py<PyAny>>> = PyOnceLock::new();

/// Reads the exception classes from `bpeforge.errors`, once, at import; a
/// missing one fails the import, naming it.
pub(crate) fn bind_classes(py: Python<'_>) -> PyResult<()> {
    let module = py.import("bpeforge.errors")?;
    let mut classes = Vec::with_capacity(CLASSES.len() + 1);
    for name in CLASSES.iter().map(|(_, n)| *n).chain(["BpeforgeError"]) {
        let class = module.getattr(name).map_err(|_| {
            pyo3::exceptions::PyImportError::new_err(format!(
                "bpeforge._native: bpeforge.errors has no class {name}, which engine errors are raised as"
            ))
        })?;
        classes.push(class.unbind());
    }
    let _ = BOUND.set(py, classes);
    Ok(())
}

/// Maps an engine error to its Python exception.
pub(crate) fn to_pyerr(e: Error) -> PyErr {
    if e.kind() == ErrorKind::Interrupted {
        return PyKeyboardInterrupt::new_err("training interrupted");
    }
    Python::attach(|py| {
        let Some(classes) = BOUND.get(py) else {
            // Only before the module finished importing, which raises no engine error.
            return PyRuntimeError::new_err(e.message().to_string());
        };
        let at = CLASSES.iter().position(|(k, _)| *k == e.kind()).unwrap_or(CLASSES.len());
        match classes[at].bind(py).call1((e.message(),)) {
            Ok(obj) => PyErr::from_value(obj),
            Err(err) => err,
        }
    })
}
