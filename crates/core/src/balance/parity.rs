//! Parity balancing: per-language weights found by training, measuring how
//! many tokens each language pays, and reweighting (`Parity`).
//!
//! Where premiums are measured (`Parity::held_apart`): by default on lines
//! held apart from the merge loop (a share of each language's lines, chosen
//! by a hash of the text while counting: they carry their language's second
//! tag, `id + languages`). Measured on the training lines themselves, a
//! lifted language's merges memorise those lines and its premium drops
//! there, but not on new text of the language; on held-apart lines only
//! merges that generalise count. The weighing rounds train without the
//! held-apart lines; a last merge loop trains on every line with the final
//! weights.
//!
//! What premiums are measured in: tokens per text *unit* (`text_units`: a
//! character, two for a syllable of a syllabary, three for a Han
//! character). Bytes alone overrate scripts of 2-3 bytes a letter (on
//! parallel help pages Tibetan text has 3.7x English's bytes but 1.3x its
//! characters), characters alone overrate the scripts where one character
//! is a syllable or a word (Chinese: 0.35x English's characters); units keep
//! every language of parallel-dev within 0.84-1.27x of English.
//!
//! Temperature balancing (`balance::temperature`) fixes the
//! weights from line counts alone: it cannot know that one language is cheap
//! to tokenize and another costly, so it moves far more vocabulary than the
//! costly languages need, mostly away from the large ones. Parity balancing
//! measures instead. Counting keys every word type by its language (so the
//! weights can change without reading the corpus again); each round sums the
//! language tables with the current weights, runs the merge loop, and
//! measures every language's tokens per text unit (on its held-apart lines,
//! or with `held_apart` 0 on its training counts). A language's *premium* is
//! the reference language's units per token divided by its own (2.0: twice
//! the tokens for the same text). Languages above `max_premium` get more
//! weight (at most `Parity::max_lift` times their starting weight); no
//! language ever gets less than its starting weight. The step uses each
//! language's measured response to its last change (a secant on log weight
//! vs log premium); with held-apart lines the first step may go all the way
//! to `max_lift`, and one round (the default) is one measuring merge loop
//! plus the final one. Without held-apart lines the model of the last round
//! is the result.
//!
//! Measured on parallel-dev (bench/fairness.py, 32k, multi-1m without the
//! parallel texts): `max_premium` 1.7 over languages with 1,000 lines cut the
//! worst decile of seen languages' parallel premiums from 3.12x to 2.02x, for
//! 2.8% more English tokens and 1.4x the unbalanced training time.

use crate::clock::PhaseTime;
use crate::count::WordCounts;
use crate::encode::{Cache, Encoder};
use crate::error::{Error, Result};
use crate::model::Model;
use super::temperature::{LanguageTable, MAX_LANGUAGE_WEIGHT, WEIGHT_SCALE};
use crate::observe::{BalanceRound, MergeProgress, Observer};
use crate::train::{train_derived, Parity, TrainConfig};

/// Largest change of a weight in one round.
const MAX_STEP: f64 = 8.0;
/// Response (d log premium / d log weight) assumed before one is measured.
const FIRST_SLOPE: f64 = 1.0 / 6.0;
/// Bounds on a measured response (noisy when a weight barely moved).
const SLOPE_RANGE: (f64, f64) = (0.03, 0.5);
/// A measuring round with held-apart lines trains on the word types seen
/// at least this often (its `min_word_count`): its merge loop runs faster
/// and the premiums barely move; the final merge loop keeps every type.
const MEASURE_MIN_COUNT: u64 = 2;
/// Premiums this close to the band count as inside it.
const TOLERANCE: f64 = 0.005;

/// Text units and tokens of one language's measured counts.
#[derive(Debug, Clone, Copy, Default)]
struct Cost {
    units: u64,
    tokens: u64,
}

impl Cost {
    fn units_per_token(&self) -> f64 {
        self.units as f64 / self.tokens.max(1) as f64
    }
}

/// How many text units a character counts: 3 for a Han character (a
/// morpheme or word), 2 for a character of a syllabary (kana, Hangul
/// syllables, Yi, Ethiopic, Cherokee, Canadian syllabics, Vai), else 1.
/// On the parallel help pages of parallel-dev, these units keep every
/// language within 0.84-1.27x of English's units for the same messages,
/// where bytes range over 0.91-3.66x and characters over 0.34-1.27x.
fn char_units(c: char) -> u64 {
    match c as u32 {
        0x2E80..=0x2FDF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x3FFFF => 3,
        0x3040..=0x30FF | 0x31F0..=0x31FF | 0xFF66..=0xFF9F | 0xAC00..=0xD7AF | 0xA000..=0xA48F
        | 0x1200..=0x139F | 0x2D80..=0x2DDF | 0xAB00..=0xAB2F | 0x13A0..=0x13FF | 0xAB70..=0xABBF
        | 0x1400..=0x167F | 0x18B0..=0x18FF | 0xA500..=0xA63F => 2,
        _ => 1,
    }
}

/// The text units of a piece (`char_units` per character); bytes that are
/// not UTF-8 count one each.
pub fn text_units(piece: &[u8]) -> u64 {
    match std::str::from_utf8(piece) {
        Ok(s) => s.chars().map(char_units).sum(),
        Err(_) => piece.len() as u64,
    }
}

/// Every language's cost under `model`: on its held-apart word types (tags
/// `id + languages`) when `held`, else on its training word types.
fn measure(tagged: &WordCounts, model: &Model, languages: usize, held: bool) -> Result<Vec<Cost>> {
    let encoder = Encoder::new(model.clone())?;
    let mut cache = Cache::new();
    let mut costs = vec![Cost::default(); languages];
    let mut ids = Vec::new();
    tagged.for_each(|key, count| {
        let (lang, piece) = WordCounts::split_tag(key);
        let lang = lang as usize;
        let own = match (held, lang >= languages) {
            (true, true) => lang - languages,
            (false, false) => lang,
            _ => return,
        };
        ids.clear();
        encoder.encode_pretoken(piece, &mut ids, Some(&mut cache));
        if let Some(c) = costs.get_mut(own) {
            c.tokens += ids.len() as u64 * count;
            c.units += text_units(piece) * count;
        }
    });
    Ok(costs)
}

/// The language tables summed with integer weights (scaled by WEIGHT_SCALE);
/// no word type falls below a count of 1. Held-apart word types (tags
/// `id + languages`) count with their language's weight when `held`, else
/// not at all.
fn combine(tagged: &WordCounts, weights: &[u64], languages: usize, held: bool) -> WordCounts {
    let mut out = WordCounts::new();
    tagged.for_each(|key, count| {
        let (lang, piece) = WordCounts::split_tag(key);
        let mut lang = lang as usize;
        if lang >= languages {
            if !held {
                return;
            }
            lang -= languages;
        }
        let w = weights.get(lang).copied().unwrap_or(WEIGHT_SCALE);
        out.add(piece, count.saturating_mul(w));
    });
    out.rescale(WEIGHT_SCALE);
    out.stats = tagged.stats.clone();
    out
}

/// Forwards to the caller's observer, but reports the word counts only once
/// (every round starts the merge loop from the same counts).
struct Rounds<'o> {
    inner: &'o mut dyn Observer,
    counted: bool,
}

impl Observer for Rounds<'_> {
    fn should_stop(&mut self) -> bool {
        self.inner.should_stop()
    }
    fn counted(&mut self, stats: &crate::count::CountStats, word_types: usize, time: &PhaseTime) {
        if !std::mem::replace(&mut self.counted, true) {
            self.inner.counted(stats, word_types, time)
        }
    }
    fn step(&mut self, p: &crate::observe::StepProgress) {
        self.inner.step(p)
    }
    fn merging(&mut self, p: &MergeProgress) {
        self.inner.merging(p)
    }
    fn merged(&mut self, merges: usize, time: &PhaseTime) {
        self.inner.merged(merges, time)
    }
    fn balancing(&mut self, round: &BalanceRound) {
        self.inner.balancing(round)
    }
    fn dropped_for_memory(&mut self, dropped: &crate::memory::budget::Dropped, budget: u64, pretokens: u64) {
        self.inner.dropped_for_memory(dropped, budget, pretokens)
    }
}

/// Runs parity balancing on language-tagged counts; returns the last round's
/// model with `language_balance` metadata (weights, premiums, rounds).
/// Each round: weights -> combined counts -> the driver -> measured premiums
/// -> report; then stop (converged or last round) or step the weights.
///
/// Why this function is long: the rounds share their state (weights, model,
/// costs, premiums, the search), and each step is already a call
/// (`combine`, `train_from_counts`, `measure`, `premiums`, `Search`); what
/// remains is the round's report and the `language_balance` metadata,
/// which name every setting of the run.
#[allow(clippy::too_many_arguments)]
pub fn train_parity(
    tagged: WordCounts,
    table: &LanguageTable,
    text_bytes: &[u64],
    temperature: f64,
    parity: &Parity,
    config: &TrainConfig,
    observer: &mut dyn Observer,
    inputs: serde_json::Value,
    count: PhaseTime,
) -> Result<Model> {
    let mut rounds_observer = Rounds { inner: observer, counted: false };
    let observer: &mut dyn Observer = &mut rounds_observer;
    let reference = reference_language(table, text_bytes, parity)?;
    let mut search = Search::new(table, text_bytes, parity, reference, table.hold_below > 0);
    let mut rounds_meta = Vec::new();
    let mut round = 0usize;
    let languages = table.names.len();
    // Held-apart lines exist when the tagger held some apart (hold_below).
    // Without them each round's model is measured on its own training
    // counts and the last round's model is the result (rounds + 1 merge
    // loops). With them, each of `rounds` (at least 1) rounds trains
    // without the held-apart lines, measures on them and steps the weights;
    // one last merge loop trains on every line with the stepped weights
    // (rounds + 1 merge loops as well).
    let held = table.hold_below > 0;
    let measured_on = if held { "held-apart lines" } else { "training counts" };
    let measure_rounds = if held { parity.rounds.max(1) } else { parity.rounds + 1 };
    loop {
        let started = std::time::Instant::now();
        let weights = search.weights();
        let last = round + 1 == measure_rounds;
        let counts = combine(&tagged, &weights, languages, false);
        let mut model = if last && !held {
            train_derived(counts, config, observer, inputs.clone(), count)?
        } else {
            // Intermediate rounds neither checkpoint nor write the CSV.
            let mut quiet = config.clone();
            quiet.checkpoint = None;
            quiet.progress_csv = None;
            if held {
                quiet.min_word_count = quiet.min_word_count.max(MEASURE_MIN_COUNT);
            }
            train_derived(counts, &quiet, observer, inputs.clone(), count)?
        };
        let costs = measure(&tagged, &model, languages, held)?;
        let ref_upt = costs[reference].units_per_token();
        let premium = premiums(&costs, ref_upt);
        let (worst, above) = search.assess(&premium);
        let report = BalanceRound {
            round,
            rounds: measure_rounds - 1,
            reference: table.names[reference].clone(),
            reference_units_per_token: ref_upt,
            worst_premium: worst.0,
            worst_language: table.names[worst.1].clone(),
            above,
            seconds: started.elapsed().as_secs_f64(),
        };
        observer.balancing(&report);
        rounds_meta.push(serde_json::json!({
            "round": round, "reference_units_per_token": round4(ref_upt), "worst_premium": round4(worst.0),
            "worst_language": report.worst_language, "above_band": above, "seconds": round4(report.seconds),
        }));
        let converged = above == 0;
        // balance_rounds=0 measures only: the weights stay where they start.
        if held && !converged && parity.rounds > 0 {
            search.step(&premium);
        }
        if last || converged {
            let weights = if held {
                let weights = search.weights();
                model = train_derived(combine(&tagged, &weights, languages, true), config, observer, inputs, count)?;
                weights
            } else {
                weights
            };
            let langs = languages_metadata(table, &weights, &costs, &premium, &search.balanced);
            if let Some(obj) = model.metadata.as_object_mut() {
                obj.insert(
                    "language_balance".into(),
                    serde_json::json!({
                        "method": "parity", "temperature": temperature, "max_premium": parity.max_premium,
                        "reference": table.names[reference], "min_lines": parity.min_lines, "max_lift": parity.max_lift,
                        "held_apart": if held { parity.held_apart } else { 0.0 },
                        "rounds": rounds_meta, "converged": converged,
                        "premiums_measured_on": measured_on, "premium_unit": "tokens per text unit",
                        "languages": langs,
                    }),
                );
            }
            return Ok(model);
        }
        if !held {
            search.step(&premium);
        }
        round += 1;
    }
}

/// The reference language: the one named, or the one with the most bytes.
fn reference_language(table: &LanguageTable, bytes: &[u64], parity: &Parity) -> Result<usize> {
    let n = table.names.len();
    let reference = match &parity.reference {
        Some(tag) => *table.ids.get(tag.as_str()).ok_or_else(|| {
            Error::parameter(format!(
                "premium_reference: language {tag:?} does not occur in the language tags"
            ))
        })? as usize,
        None => (0..n)
            .max_by_key(|&l| (bytes[l], std::cmp::Reverse(l)))
            .unwrap_or(0),
    };
    if bytes[reference] == 0 {
        return Err(Error::parameter(format!(
            "premium_reference: language {:?} has no text to measure",
            table.names[reference]
        )));
    }
    Ok(reference)
}

/// Every language's premium: the reference's text units per token over its
/// own (1 for a language without tokens).
fn premiums(costs: &[Cost], ref_upt: f64) -> Vec<f64> {
    costs
        .iter()
        .map(|c| {
            if c.tokens == 0 {
                1.0
            } else {
                ref_upt / c.units_per_token()
            }
        })
        .collect()
}

/// Every language's premium from its text units (`text_units`) and tokens,
/// against language `reference`: what the weighing measures, for programs
/// that measure a model on other lines (`bpeforge report`).
pub fn premiums_of(units: &[u64], tokens: &[u64], reference: usize) -> Vec<f64> {
    let costs: Vec<Cost> = units.iter().zip(tokens).map(|(&units, &tokens)| Cost { units, tokens }).collect();
    let ref_upt = costs.get(reference).map_or(1.0, Cost::units_per_token);
    premiums(&costs, ref_upt)
}

/// The weight search: per language, the log of the factor on its starting
/// weight and its last (log factor, log premium).
struct Search {
    balanced: Vec<bool>,
    start_weight: Vec<f64>,
    factor: Vec<f64>,
    last: Vec<Option<(f64, f64)>>,
    /// log of the largest factor, and of the band's edge.
    hi_f: f64,
    band: f64,
    reference: usize,
    /// log of the largest change of a weight in one round.
    max_step: f64,
}

impl Search {
    fn new(table: &LanguageTable, bytes: &[u64], parity: &Parity, reference: usize, held: bool) -> Self {
        let n = table.names.len();
        Search {
            balanced: (0..n)
                .map(|l| l != reference && table.lines[l] >= parity.min_lines && bytes[l] > 0)
                .collect(),
            start_weight: table
                .weights
                .iter()
                .map(|&w| w as f64 / WEIGHT_SCALE as f64)
                .collect(),
            factor: vec![0.0f64; n],
            last: vec![None; n],
            hi_f: parity.max_lift.ln(),
            band: parity.max_premium.ln(),
            reference,
            // Premiums measured on held-apart lines do not flatter a lifted
            // language, so one step may go all the way to max_lift.
            max_step: if held { parity.max_lift.ln().max(MAX_STEP.ln()) } else { MAX_STEP.ln() },
        }
    }

    /// This round's integer weights (scaled by WEIGHT_SCALE).
    fn weights(&self) -> Vec<u64> {
        (0..self.factor.len())
            .map(|l| {
                let w = self.start_weight[l] * self.factor[l].exp();
                ((w * WEIGHT_SCALE as f64).round().max(1.0))
                    .min(MAX_LANGUAGE_WEIGHT * WEIGHT_SCALE as f64)
                    as u64
            })
            .collect()
    }

    /// The worst balanced premium (and whose), and how many balanced
    /// languages are above the band with room to grow.
    fn assess(&self, premium: &[f64]) -> ((f64, usize), usize) {
        let mut worst = (0.0f64, self.reference);
        let mut above = 0usize;
        for l in (0..premium.len()).filter(|&l| self.balanced[l]) {
            if premium[l] > worst.0 {
                worst = (premium[l], l);
            }
            // Above the band, and its weight can still grow.
            if premium[l].ln() > self.band + TOLERANCE && self.factor[l] < self.hi_f {
                above += 1;
            }
        }
        (worst, above)
    }

    /// Lift every balanced language above the band to its edge; one
    /// lifted earlier and now below the edge eases back toward it (the
    /// smallest weight that keeps it inside), never below its start.
    fn step(&mut self, premium: &[f64]) {
        let (band, hi_f) = (self.band, self.hi_f);
        for l in (0..premium.len()).filter(|&l| self.balanced[l]) {
            let factor = &mut self.factor[l];
            let lp = premium[l].ln();
            if lp <= band && *factor == 0.0 {
                continue;
            }
            let slope = match self.last[l] {
                Some((f0, p0)) if (*factor - f0).abs() > 1e-3 => {
                    ((p0 - lp) / (*factor - f0)).clamp(SLOPE_RANGE.0, SLOPE_RANGE.1)
                }
                _ => FIRST_SLOPE,
            };
            self.last[l] = Some((*factor, lp));
            let max_step = self.max_step;
            let next = (*factor + (lp - band) / slope).clamp(*factor - max_step, *factor + max_step);
            *factor = next.clamp(0.0, hi_f);
        }
    }
}

/// Per language: lines, shares before and after, weight, cost, premium.
fn languages_metadata(
    table: &LanguageTable,
    weights: &[u64],
    costs: &[Cost],
    premium: &[f64],
    balanced: &[bool],
) -> serde_json::Map<String, serde_json::Value> {
    let n = table.names.len();
    let mut langs = serde_json::Map::new();
    let total: u64 = table.lines.iter().sum();
    let weighted_total: f64 = (0..n)
        .map(|l| table.lines[l] as f64 * weights[l] as f64)
        .sum();
    for l in 0..n {
        langs.insert(
            table.names[l].clone(),
            serde_json::json!({
                "lines": table.lines[l],
                "share": round6(table.lines[l] as f64 / total.max(1) as f64),
                "balanced_share": round6(table.lines[l] as f64 * weights[l] as f64 / weighted_total.max(1.0)),
                "weight": round4(weights[l] as f64 / WEIGHT_SCALE as f64),
                "units_per_token": round4(costs[l].units_per_token()),
                "premium": round4(premium[l]),
                "balanced": balanced[l],
            }),
        );
    }
    langs
}

fn round4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The memory message of a round reaches the caller (the wrapper once
    /// forwarded only some events, and the trait's defaults dropped the rest).
    #[test]
    fn rounds_forward_the_memory_drop() {
        #[derive(Default)]
        struct Seen(Vec<u64>);
        impl Observer for Seen {
            fn dropped_for_memory(&mut self, d: &crate::memory::budget::Dropped, _: u64, _: u64) {
                self.0.push(d.min_word_count);
            }
        }
        let mut seen = Seen::default();
        let mut rounds = Rounds { inner: &mut seen, counted: false };
        rounds.dropped_for_memory(&crate::memory::budget::Dropped { min_word_count: 3, types: 10, pretokens: 20 }, 1 << 20, 100);
        assert_eq!(seen.0, [3]);
    }

    #[test]
    fn combine_weights_each_language_and_keeps_every_word_type() {
        let mut tagged = WordCounts::new();
        tagged.add_tagged(0, b"x", 4);
        tagged.add_tagged(1, b"x", 2);
        tagged.add_tagged(1, b"rare", 1);
        // Language 1 counts 3x, language 0 a tenth (rounded, at least 1).
        let combined = combine(&tagged, &[WEIGHT_SCALE / 10, 3 * WEIGHT_SCALE], 2, false);
        let mut got = std::collections::HashMap::new();
        combined.for_each(|piece, count| {
            got.insert(piece.to_vec(), count);
        });
        assert_eq!(got[&b"x".to_vec()], 6);
        assert_eq!(got[&b"rare".to_vec()], 3);
        let low = combine(&tagged, &[1, 1], 2, false);
        low.for_each(|_, count| assert!(count >= 1));
    }

    #[test]
    fn premiums_of_divides_the_references_units_per_token_by_each_languages() {
        // Reference 0: 4 units per token; language 1: 2 (premium 2); language 2: no tokens (1).
        let p = premiums_of(&[40, 20, 0], &[10, 10, 0], 0);
        assert_eq!(p, [1.0, 2.0, 1.0]);
        assert_eq!(text_units("a\u{e9}\u{4e2d}\u{3042}".as_bytes()), 1 + 1 + 3 + 2);
    }

    #[test]
    fn parity_settings_are_checked() {
        assert!(Parity::default().validate().is_ok());
        for bad in [
            Parity { max_premium: 1.0, ..Parity::default() },
            Parity { max_lift: 0.5, ..Parity::default() },
            Parity { rounds: 21, ..Parity::default() },
            Parity { reference: Some(" ".into()), ..Parity::default() },
        ] {
            assert_eq!(bad.validate().unwrap_err().kind(), crate::error::ErrorKind::Parameter);
        }
    }
}
