//! Training from word counts: one stage (`driver`), or SuperBPE's two
//! (`superbpe`, which runs the driver's stage twice). Both are steps this
//! module calls; neither calls back up.

use super::driver::train_stage;
use super::stats::TrainStats;
use super::{TrainConfig, ValidConfig};
use crate::clock::PhaseTime;
use crate::count::WordCounts;
use crate::error::{Error, Result};
use crate::model::Model;
use crate::observe::Observer;

/// The merge loop and model assembly, given word counts and checked
/// settings.
pub fn train_from_counts(
    counts: WordCounts,
    config: &ValidConfig,
    observer: &mut dyn Observer,
    inputs: serde_json::Value,
    count: PhaseTime,
) -> Result<Model> {
    train_derived(counts, config, observer, inputs, count)
}

/// `train_from_counts` on a config derived from a validated one (a
/// balancing round's or a SuperBPE stage's: the same settings with outputs
/// or limits changed, never checked again).
pub(crate) fn train_derived(
    counts: WordCounts,
    config: &TrainConfig,
    observer: &mut dyn Observer,
    inputs: serde_json::Value,
    count: PhaseTime,
) -> Result<Model> {
    let (mut model, stats) = train_with_stats(counts, config, observer, inputs, count)?;
    model.metadata = stats.to_metadata();
    Ok(model)
}

/// `train_from_counts`, returning the record apart from the model.
fn train_with_stats(
    mut counts: WordCounts,
    config: &TrainConfig,
    observer: &mut dyn Observer,
    inputs: serde_json::Value,
    count: PhaseTime,
) -> Result<(Model, TrainStats)> {
    match &config.superbpe {
        Some(sb) => {
            let units = counts.superword.take().ok_or_else(|| Error::training("SuperBPE needs stage-2 counts"))?;
            super::superbpe::train(counts, *units, config, sb, observer, inputs, count)
        }
        None => train_stage(counts, config, observer, inputs, count),
    }
}
