//! `TokenizerBase`: the native base class of `bpeforge.Tokenizer`, so that
//! the common call, `tok.encode(text)` with no options, goes straight to the
//! encoder without a Python frame. That frame (five checks of the keyword
//! defaults, then the bound native call) cost about 150 ns per call, 3% of
//! encoding a short line with o200k_base. Any other call is handed to the
//! Python subclass's `_encode_options`, which checks and applies the options.

use crate::args::specials_rule;
use crate::tokenizer::NativeTokenizer;
use bpeforge_core::api::Specials;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use std::sync::OnceLock;

#[pyclass(subclass, frozen, module = "bpeforge._native")]
pub(crate) struct TokenizerBase {
    native: Py<NativeTokenizer>,
    /// The special-token rules of the default policy, set once by the
    /// subclass (it decides which special tokens are read from text).
    default_rules: OnceLock<Specials>,
}

#[pymethods]
impl TokenizerBase {
    #[new]
    #[pyo3(signature = (native, *_args, **_kwargs))]
    fn new(native: Py<NativeTokenizer>, _args: &Bound<'_, PyAny>, _kwargs: Option<&Bound<'_, PyAny>>) -> Self {
        TokenizerBase { native, default_rules: OnceLock::new() }
    }

    /// The engine's rules for `encode(text)` without options: special-token
    /// indices read as tokens (`allowed`) and refused (`disallowed`), or
    /// neither for a model without special tokens. Set once.
    #[pyo3(signature = (allowed=None, disallowed=None))]
    fn _set_default_rules(&self, allowed: Option<Vec<usize>>, disallowed: Option<Vec<usize>>) -> PyResult<()> {
        let rules = specials_rule(&self.native.get().enc, allowed, disallowed)?;
        // A second call keeps the first rules: they follow from the model.
        let _ = self.default_rules.set(rules);
        Ok(())
    }

    /// Encode ``text`` to ids.
    ///
    /// Special tokens follow tiktoken's safe default: special-token text in
    /// ``text`` raises :class:`bpeforge.SpecialTokenError` unless it is in
    /// ``allowed_special`` (then it becomes its id) or left out of
    /// ``disallowed_special`` (then it is encoded as ordinary text).
    ///
    /// ``dropout=p`` applies BPE-dropout (Provilkov et al., 2020): at each
    /// merge step every applicable merge is skipped with probability ``p``.
    /// The same ``seed`` gives the same result; ``p=0`` is plain encoding and
    /// ``p=1`` leaves the base symbols.
    ///
    /// Example:
    ///     >>> tok = train_from_iterator(["ab ab ab"], vocab_size=258, special_tokens=["<s>"], progress=False)
    ///     >>> tok.encode("<s>ab", allowed_special={"<s>"})[0]
    ///     0
    #[pyo3(
        signature = (text, **options),
        text_signature = "($self, text, *, allowed_special=(), disallowed_special='all', dropout=0.0, seed=None)"
    )]
    fn encode<'py>(
        slf: &Bound<'py, Self>,
        text: &Bound<'py, PyAny>,
        options: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let this = slf.get();
        if options.is_none_or(|o| o.is_empty()) {
            if let (Ok(s), Some(rules)) = (text.cast_exact::<PyString>(), this.default_rules.get()) {
                return Ok(this.native.get().encode_exact(py, s.to_str()?, rules)?.into_any());
            }
        }
        slf.call_method(intern!(py, "_encode_options"), (text,), options)
    }
}
