//! Python arguments checked and converted to the engine's values: thread
//! counts, the special-token rule, the dropout probability.

use crate::errors::to_pyerr;
use bpeforge_core::api::{Encoder, Error, Specials};
use pyo3::prelude::*;

pub(crate) fn specials_rule(enc: &Encoder, allowed: Option<Vec<usize>>, disallowed: Option<Vec<usize>>) -> PyResult<Specials> {
    if allowed.is_none() && disallowed.is_none() {
        return Ok(Specials::Ordinary);
    }
    let n = enc.special_tokens().len();
    let mut a = vec![false; n];
    let mut d = vec![false; n];
    for (list, flags) in [(allowed, &mut a), (disallowed, &mut d)] {
        for k in list.unwrap_or_default() {
            if k >= n {
                return Err(to_pyerr(Error::parameter(format!("special token index {k} out of range"))));
            }
            flags[k] = true;
        }
    }
    Ok(Specials::Rules { allowed: a, disallowed: d })
}

pub(crate) fn check_threads(threads: Option<usize>) -> PyResult<usize> {
    bpeforge_core::api::machine::check_threads(threads).map_err(to_pyerr)
}

pub(crate) fn check_dropout(dropout: Option<f64>) -> PyResult<Option<f64>> {
    match dropout {
        None => Ok(None),
        Some(p) if (0.0..=1.0).contains(&p) => Ok(if p == 0.0 { None } else { Some(p) }),
        Some(p) => Err(to_pyerr(Error::parameter(format!("dropout must be between 0 and 1, got {p}")))),
    }
}
