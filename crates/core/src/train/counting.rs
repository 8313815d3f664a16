//! Counting for training: the pre-tokenizer, special tokens and SuperBPE's
//! stage-2 units of a `TrainConfig`, fed with chunks from files or Python.

use super::{TrainConfig, ValidConfig};
use crate::count::{count_parallel_output, CountLimits, CountOutput, Counter, WordCounts};
use crate::error::Result;
use crate::input::Chunk;
use crate::model::Scheme;
use crate::observe::Observer;
use crate::pretok::{PreTokenizer, PreTokenizerSpec, SpecialSplitter};
use crate::util::threads_or_default;

/// How often the observer is polled.
pub(crate) const POLL_SECONDS: f64 = 0.05;

/// Counts word types from chunks produced by `feed` (files or Python).
pub fn count_words<'c>(
    config: &'c ValidConfig,
    observer: &mut dyn Observer,
    feed: impl FnOnce(&mut dyn FnMut(Chunk) -> Result<()>, &mut dyn Observer) -> Result<()>,
) -> Result<WordCounts> {
    count_words_weighted(config, observer, None, feed)
}

/// `count_words` with per-language integer weights (chunks carry languages).
pub fn count_words_weighted<'c>(
    config: &'c ValidConfig,
    observer: &mut dyn Observer,
    lang_weights: Option<&[u64]>,
    feed: impl FnOnce(&mut dyn FnMut(Chunk) -> Result<()>, &mut dyn Observer) -> Result<()>,
) -> Result<WordCounts> {
    let mode = match lang_weights {
        Some(w) => CountMode::Weighted(w),
        None => CountMode::Plain,
    };
    // Not final counts: a spilled count's runs are merged whole.
    count_words_output(config, observer, mode, false, feed)?.into_table(None)
}

/// How counting treats the language of each text.
#[derive(Clone, Copy)]
pub(crate) enum CountMode<'w> {
    Plain,
    /// Each occurrence counts its language's integer weight.
    Weighted(&'w [u64]),
    /// Keys carry the language (`WordCounts::add_tagged`), counts are raw.
    Tagged,
}

/// Counts word types in `mode`, leaving a count that spilled as its runs
/// unless `final_counts`: the counts are trained on as they are (not a part
/// of a later sum, nor reweighted), so merging spilled runs may already
/// drop the rarest word types the merge phase would not have room for,
/// and the result is that fitted table.
pub(crate) fn count_words_output<'c>(
    config: &'c TrainConfig,
    observer: &mut dyn Observer,
    mode: CountMode<'_>,
    final_counts: bool,
    feed: impl FnOnce(&mut dyn FnMut(Chunk) -> Result<()>, &mut dyn Observer) -> Result<()>,
) -> Result<CountOutput> {
    let (lang_weights, tag_languages) = match mode {
        CountMode::Plain => (None, false),
        CountMode::Weighted(w) => (Some(w), false),
        CountMode::Tagged => (None, true),
    };
    let normalizer = match &config.scheme {
        Scheme::Chars { normalizer: Some(spec), .. } => Some(spec.compile()?),
        _ => None,
    };
    let (words, normalizer) = crate::normalize::words(&config.pretokenizer, normalizer);
    let pre = PreTokenizer::new(words)?;
    let specials = SpecialSplitter::new(&config.all_special_tokens())?;
    let stage2 = match &config.superbpe {
        Some(_) => Some(PreTokenizer::new(PreTokenizerSpec::SUPERWORD)?),
        None => None,
    };
    let counter = Counter {
        pretokenizer: &pre,
        specials: &specials,
        allow_invalid_utf8: matches!(config.scheme, Scheme::Bytes),
        superword: stage2.as_ref(),
        lang_weights,
        tag_languages,
        normalizer: normalizer.as_ref(),
    };
    let threads = threads_or_default(config.threads);
    // `max_memory`'s first effect: the budget less what the process holds
    // now (Python, the input's buffers); counting keeps within the rest.
    let budget = config.memory_budget();
    let held = crate::memory::budget::process_rss() + crate::memory::budget::reserved();
    crate::memory::budget::check_floor(budget, held, threads, final_counts)?;
    let room = budget.saturating_sub(held);
    let asked = config.min_word_count.max(1);
    let choose = move |h: &crate::memory::budget::CountHistogram, held: u64| crate::memory::budget::fit_merge_phase(h, asked, room.saturating_sub(held), budget, true);
    let limits = CountLimits {
        budget: crate::memory::budget::CountBudget::new(room, threads, budget),
        choose_min: if final_counts { Some(&choose) } else { None },
    };
    let out = count_parallel_output(&counter, threads, Some(&limits), |sink| feed(sink, observer))?;
    if final_counts {
        return out.into_table(limits.choose_min).map(CountOutput::Table);
    }
    Ok(out)
}
