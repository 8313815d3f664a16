//! A batch's texts as the caller passed them.
//!
//! A list or a tuple (the usual case) is read in place: each item is taken,
//! its type checked and its reference counted only when the block it falls
//! in is prepared, which the calling thread does while other threads encode
//! earlier blocks. Collecting every item before any encoding began (a
//! vector of 50,000 references, each a read of a `str` not in the cache)
//! was serial work in front of every thread: perf of a 2-thread batch of
//! 50,000 held-apart lines, run in a new process as `bench/encode.py` runs
//! it, put 65 of the calling thread's first 104 samples in `listiter_next`
//! and the helper thread's first sample 10 ms into the call. Any other
//! iterable (a generator, a subclass of list) is still collected first.

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

pub(crate) enum Texts<'py> {
    /// An exact list and its length when the call began: another Python
    /// thread may change it while the GIL is released, which `check_len`
    /// turns into an error rather than texts skipped or encoded twice.
    List(Bound<'py, PyList>, usize),
    Tuple(Bound<'py, PyTuple>),
    Collected(Vec<Bound<'py, PyString>>),
}

impl<'py> Texts<'py> {
    pub(crate) fn new(texts: &Bound<'py, PyAny>) -> PyResult<Self> {
        if let Ok(list) = texts.cast_exact::<PyList>() {
            return Ok(Texts::List(list.clone(), list.len()));
        }
        if let Ok(tuple) = texts.cast_exact::<PyTuple>() {
            return Ok(Texts::Tuple(tuple.clone()));
        }
        let mut collected = Vec::new();
        for (i, item) in texts.try_iter()?.enumerate() {
            collected.push(as_str(i, item?)?);
        }
        Ok(Texts::Collected(collected))
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Texts::List(_, len) => *len,
            Texts::Tuple(tuple) => tuple.len(),
            Texts::Collected(texts) => texts.len(),
        }
    }

    /// Text `i` (below `len()`), with a reference of its own. Callers
    /// check a list's length (`check_len`) before a run of calls.
    pub(crate) fn get(&self, i: usize) -> PyResult<Bound<'py, PyString>> {
        let item = match self {
            Texts::List(list, _) => list.get_item(i)?,
            Texts::Tuple(tuple) => tuple.get_item(i)?,
            Texts::Collected(texts) => return Ok(texts[i].clone()),
        };
        as_str(i, item)
    }

    /// An error if the list no longer has the length it had when the call
    /// began.
    pub(crate) fn check_len(&self) -> PyResult<()> {
        match self {
            Texts::List(list, len) if list.len() != *len => Err(PyRuntimeError::new_err(format!(
                "texts: the list changed size during the call (from {len} to {} items)",
                list.len()
            ))),
            _ => Ok(()),
        }
    }
}

/// Item `i` as a `str`, else a `TypeError` that names it.
fn as_str<'py>(i: usize, item: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyString>> {
    item.cast_into::<PyString>().map_err(|e| {
        PyTypeError::new_err(format!(
            "texts: item {i} is {}, not str",
            e.into_inner().get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })
}
