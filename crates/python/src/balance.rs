//! Parity balancing's measure for Python (`bpeforge report`): text units
//! and premiums, the engine's own functions, so a report measures a
//! premium exactly as training does.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// The text units of each text (`bpeforge_core::api::text_units`: a
/// character counts 1, a syllable of a syllabary 2, a Han character 3).
#[pyfunction]
pub(crate) fn text_units(py: Python<'_>, texts: Vec<String>) -> Vec<u64> {
    py.detach(|| texts.iter().map(|t| bpeforge_core::api::text_units(t.as_bytes())).collect())
}

/// Every language's premium from its text units and tokens against the
/// language at index `reference` (`bpeforge_core::api::premiums_of`).
#[pyfunction]
pub(crate) fn premiums(units: Vec<u64>, tokens: Vec<u64>, reference: usize) -> PyResult<Vec<f64>> {
    if units.len() != tokens.len() || reference >= units.len() {
        return Err(PyValueError::new_err(format!(
            "premiums: {} units, {} token counts and reference {reference}: the lists must be as long, the reference an index into them",
            units.len(),
            tokens.len()
        )));
    }
    Ok(bpeforge_core::api::premiums_of(&units, &tokens, reference))
}
