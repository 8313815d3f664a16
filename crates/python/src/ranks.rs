//! Merge lists from rank tables, for the tiktoken importer and the others.

use crate::errors::to_pyerr;
use bpeforge_core::api::Error;
use pyo3::prelude::*;

/// `bpeforge_core::api::merge_splits`, for the tiktoken importer.
#[pyfunction]
pub(crate) fn merge_splits(py: Python<'_>, tokens: Vec<Vec<u8>>, ranks: Vec<u32>) -> PyResult<Vec<Option<usize>>> {
    if tokens.len() != ranks.len() {
        return Err(to_pyerr(Error::parameter("merge_splits: one rank per token is needed")));
    }
    Ok(py.detach(|| bpeforge_core::api::merge_splits(&tokens, &ranks)))
}

/// `bpeforge_core::api::unreachable_merges`, for the importers.
#[pyfunction]
pub(crate) fn unreachable_merges(py: Python<'_>, base: usize, merges: Vec<(u32, u32)>) -> usize {
    py.detach(|| bpeforge_core::api::unreachable_merges(base, &merges))
}
