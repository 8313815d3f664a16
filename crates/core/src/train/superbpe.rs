//! SuperBPE (Liu et al., 2025): stage 1 learns subwords up to the
//! transition size on the word-level pieces; stage 2 continues from exactly
//! that state on the wider stage-2 units (its merges may join words), with
//! the paper's limits. The model encodes with the stage-2 pre-tokenizer, as
//! SuperBPE tokenizers do.

use super::driver::train_stage;
use super::merge::TokenLimits;
use super::stats::{SuperBpeStats, Timings, TrainStats};
use super::{SuperBpe, TrainConfig};
use crate::memory::alloc::release_free_memory;
use crate::clock::PhaseTime;
use crate::count::WordCounts;
use crate::error::Result;
use crate::model::Model;
use crate::observe::Observer;
use crate::pretok::PreTokenizerSpec;

/// Trains both stages; the record is stage 1's, with the vocabulary size,
/// pre-tokenizer, merge time and `stopped_early` of the whole run and each
/// stage's numbers under `superbpe`.
pub(crate) fn train(
    words: WordCounts,
    mut units: WordCounts,
    config: &TrainConfig,
    sb: &SuperBpe,
    observer: &mut dyn Observer,
    inputs: serde_json::Value,
    count: PhaseTime,
) -> Result<(Model, TrainStats)> {
    let mut stage1 = config.clone();
    stage1.superbpe = None;
    stage1.vocab_size = sb.transition;
    stage1.checkpoint = None;
    let stats = words.stats.clone();
    let (mut model, s1) = train_stage(words, &stage1, observer, inputs.clone(), count)?;
    model.metadata = s1.to_metadata();
    release_free_memory();
    let stage1_pretokenizer = model.pretokenizer.clone();
    model.pretokenizer = PreTokenizerSpec::SUPERWORD;
    let mut stage2 = config.clone();
    stage2.superbpe = None;
    stage2.pretokenizer = PreTokenizerSpec::SUPERWORD;
    stage2.resume_from = Some(model);
    stage2.token_limits = TokenLimits { max_words: sb.max_words, colon_rule: sb.colon_rule };
    units.stats = stats;
    let (model, s2) = train_stage(units, &stage2, observer, inputs, PhaseTime::default())?;
    let mut combined = s1.clone();
    combined.superbpe = Some(SuperBpeStats {
        transition: sb.transition,
        stage1_pretokenizer: stage1_pretokenizer.name().to_string(),
        max_words: sb.max_words,
        colon_rule: sb.colon_rule,
        stage1_word_table: s1.word_table,
        stage2_units: s2.word_types,
        stage2_word_table: s2.word_table,
        stage1_merge_seconds: s1.timings.merge_seconds,
        stage2_merge_seconds: s2.timings.merge_seconds,
        stage2_merge_breakdown: s2.timings.merge_breakdown.clone(),
        stage2_memory_budget: s2.memory_budget.clone().filter(|m| m.word_types_dropped > 0),
    });
    let merge = |t: &Timings| PhaseTime { seconds: t.merge_seconds, cpu_seconds: t.merge_cpu_seconds, threads: t.threads };
    combined.timings = Timings::of(&count, &merge(&s1.timings).plus(&merge(&s2.timings)), None);
    combined.stopped_early = s2.stopped_early;
    combined.settings.vocab_size = config.vocab_size;
    combined.settings.pretokenizer = "superword".to_string();
    Ok((model, combined))
}
