//! Training: settings -> counting -> word table -> merge loop -> model.
//!
//! * `options`: `TrainOptions`, the flat option list shared with Python and
//!   the CLI, converted to a config.
//! * `config`: `TrainConfig`, the typed settings the engine runs on.
//! * `validate`: `TrainConfig::validate`, the one check, giving the
//!   `ValidConfig` every entry point takes.
//! * `counting`: word types from chunks, per the config.
//! * `from_counts`: `train_from_counts`, one stage or SuperBPE's two.
//! * `superbpe`: the two-stage SuperBPE run (two driver stages).
//! * `driver`: one stage, the named steps from counts to a model.
//! * `words`: the base vocabulary and word table per scheme.
//! * `merge`: the O(M log N) merge loop, one file per part (the heap, the
//!   word lists, the cold arena, one merge step, ...); `merge/mod.rs` holds
//!   `learn_merges` and the argument why the lazy heap is exact.
//! * `extend`: resuming a model (replayed merges, external ids).
//! * `checkpoint`: what a checkpoint records of its run, taken back on resume.
//! * `counts_file`: word counts saved with their inputs, to train on without counting.
//! * `stats`: the typed record that becomes the model's metadata.
//!
//! Training from files (with language balancing) starts one level up, in
//! `crate::pipeline`.

pub mod checkpoint;
pub mod counts_file;
pub mod config;
mod field_names;
pub mod options;
pub mod validate;
mod counting;
mod driver;
mod from_counts;
mod extend;
pub mod merge;
pub mod stats;
mod superbpe;
mod words;

pub use config::{LangSource, LanguageBalance, Parity, SuperBpe, TrainConfig};
pub use options::TrainOptions;
pub use validate::ValidConfig;
pub(crate) use counting::{count_words_output, CountMode, POLL_SECONDS};
pub use counting::{count_words, count_words_weighted};
pub use from_counts::train_from_counts;
pub(crate) use from_counts::train_derived;
pub use merge::TokenLimits;
pub use stats::TrainStats;
