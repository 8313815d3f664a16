//! Python lists of token ids, from one int object per id.
//!
//! Making a Python int for every id of a result (an allocation each, and
//! later a free) cost more than any other step of turning ids into lists.
//! A tokenizer instead keeps the int of each id it has returned and puts
//! that same object in every list: one reference-count increment per id.
//! Ints are immutable, so sharing them changes nothing a caller can rely on.

use pyo3::prelude::*;
use pyo3::types::{PyInt, PyList};
use std::sync::{Mutex, MutexGuard};

/// The ints of the ids seen so far, by id (grown on demand).
#[derive(Default)]
pub(crate) struct IdInts {
    table: Mutex<Vec<Option<Py<PyInt>>>>,
}

/// The table while one thread uses it; `None` if another thread holds it.
pub(crate) struct Ints<'a>(Option<MutexGuard<'a, Vec<Option<Py<PyInt>>>>>);

impl IdInts {
    /// The table for a run of conversions of ids below `vocab_size`. Never
    /// waits: the holder may be a thread that let the GIL go (a finalizer
    /// run by a collection) while this one holds it; then this one makes
    /// its ints afresh.
    pub(crate) fn lock(&self, vocab_size: usize) -> Ints<'_> {
        let mut table = self.table.try_lock().ok();
        if let Some(t) = table.as_mut() {
            if t.len() < vocab_size {
                t.resize_with(vocab_size, || None);
            }
        }
        Ints(table)
    }
}

impl Ints<'_> {
    /// The list of `ids`.
    pub(crate) fn list<'py>(&mut self, py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, PyList>> {
        let Some(table) = self.0.as_mut() else {
            return PyList::new(py, ids);
        };
        PyList::new(
            py,
            ids.iter().map(|&id| match table.get_mut(id as usize) {
                Some(slot) => slot.get_or_insert_with(|| PyInt::new(py, id).unbind()).bind(py).clone(),
                None => PyInt::new(py, id),
            }),
        )
    }
}
