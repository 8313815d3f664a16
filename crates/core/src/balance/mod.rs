//! Language balancing: how much each language's text counts in training.
//!
//! * `temperature`: fixed weights from line counts (p^(1/T)), and the
//!   per-line language tags both methods count with.
//! * `parity`: weights found by training and measuring each language's
//!   tokens per text unit (`parity::text_units`), round after round.
//!
//! The settings (`LanguageBalance`, `LangSource`, `Parity`) are training
//! options and live with them in `train::config`; this module runs them.
//! It calls the training driver; the driver never calls it (the file entry,
//! `crate::pipeline`, picks the method through `train_balanced`).

pub mod parity;
pub mod temperature;

pub use crate::observe::BalanceRound;
pub use crate::train::{LangSource, LanguageBalance, Parity};
pub(crate) use temperature::Tagger;
pub use temperature::{LanguageTable, MAX_LANGUAGE_WEIGHT, WEIGHT_SCALE};

use crate::count::WordCounts;
use crate::error::Result;
use crate::model::Model;
use crate::observe::Observer;
use crate::train::ValidConfig;

/// Balanced training on counts keyed (parity) or weighted (temperature) by
/// language: the step the file entry takes instead of the plain driver.
#[allow(clippy::too_many_arguments)]
pub fn train_balanced(
    counts: WordCounts,
    table: &LanguageTable,
    lang_bytes: &[u64],
    balance: &LanguageBalance,
    config: &ValidConfig,
    observer: &mut dyn Observer,
    inputs: serde_json::Value,
    count: crate::clock::PhaseTime,
) -> Result<Model> {
    match &balance.parity {
        Some(p) => parity::train_parity(counts, table, lang_bytes, balance.temperature, p, config, observer, inputs, count),
        None => temperature::train_weighted(counts, table, balance.temperature, config, observer, inputs, count),
    }
}
