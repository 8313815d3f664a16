//! The lists and limits a caller reads from the engine, in one value.

use crate::encode::MIN_CACHE_BYTES;
use crate::input::COMPRESSIONS;
use crate::pretok::{PresetDef, DEFAULT_PRETOKENIZER, PRESETS};
use crate::progress::ProgressFormat;
use crate::train::checkpoint::RESULT_OPTIONS;

/// What the engine accepts and defaults to, each written once where it
/// is defined and gathered here.
pub struct Lists {
    /// The pre-tokenizer a run uses when none is named.
    pub default_pretokenizer: &'static str,
    /// The pre-tokenizer presets.
    pub presets: &'static [&'static PresetDef],
    /// The compressed-input suffixes the engine reads.
    pub compressions: &'static [&'static str],
    /// The training options that change a run's result (a resumed run's
    /// must match).
    pub result_options: &'static [&'static str],
    /// The progress formats' names.
    pub progress_formats: &'static [&'static str],
    /// The smallest encoding cache, in bytes.
    pub min_cache_bytes: usize,
}

pub const LISTS: Lists = Lists {
    default_pretokenizer: DEFAULT_PRETOKENIZER,
    presets: PRESETS,
    compressions: &COMPRESSIONS,
    result_options: RESULT_OPTIONS,
    progress_formats: &ProgressFormat::NAMES,
    min_cache_bytes: MIN_CACHE_BYTES,
};
