//! What a training run records about itself, typed: the driver fills a
//! `TrainStats`, SuperBPE combines two of them, and `to_metadata` turns one
//! into the model's `metadata` JSON (the only place its layout is written).

use super::TrainConfig;
use crate::clock::PhaseTime;
use crate::count::CountStats;
use crate::input::TextMode;
use serde::Serialize;

/// A training run's record; serialized as the model's metadata.
#[derive(Debug, Clone, Serialize)]
pub struct TrainStats {
    pub library: String,
    pub inputs: serde_json::Value,
    pub settings: Settings,
    pub corpus: Corpus,
    pub timings: Timings,
    /// Word types counted (before `min_word_count` pruning).
    pub word_types: usize,
    pub word_count_table: WordCountTable,
    pub word_types_pruned: usize,
    pub word_table: WordTableStats,
    pub resumed_merges: usize,
    /// Fewer merges than the vocabulary asked for (no pair left to merge).
    pub stopped_early: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superbpe: Option<SuperBpeStats>,
    /// An extended import keeps what its importer recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub import: Option<serde_json::Value>,
    /// What keeping to `max_memory` took (spilled runs, dropped types).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_budget: Option<MemoryBudget>,
}

/// The memory budget's record: the budget, what counting spilled, and the
/// rarest word types dropped so the merge phase fits (`min_word_count` the
/// merge phase ran with; the types and the share of all pre-tokens dropped
/// beyond the `min_word_count` asked for).
#[derive(Debug, Clone, Serialize)]
pub struct MemoryBudget {
    /// As given (None: the default share of the available memory, which
    /// differs from machine to machine and is not recorded).
    pub max_memory: Option<u64>,
    pub spill_runs: usize,
    pub spill_bytes: u64,
    pub effective_min_word_count: u64,
    pub word_types_dropped: u64,
    pub pretokens_dropped: u64,
    pub pretoken_share_dropped: f64,
}

impl MemoryBudget {
    pub fn new(max_memory: Option<u64>, spilled: &crate::count::CountMemory, dropped: Option<crate::memory::budget::Dropped>, asked: u64, pretokens: u64) -> Self {
        let d = dropped.unwrap_or(crate::memory::budget::Dropped { min_word_count: asked, types: 0, pretokens: 0 });
        MemoryBudget {
            max_memory,
            spill_runs: spilled.spill_runs,
            spill_bytes: spilled.spill_bytes,
            effective_min_word_count: d.min_word_count,
            word_types_dropped: d.types,
            pretokens_dropped: d.pretokens,
            pretoken_share_dropped: if pretokens > 0 { (d.pretokens as f64 / pretokens as f64 * 1e6).round() / 1e6 } else { 0.0 },
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    pub vocab_size: usize,
    pub scheme: String,
    pub pretokenizer: String,
    pub min_frequency: u64,
    pub max_token_length: Option<usize>,
    pub min_word_count: u64,
    pub threads: usize,
    pub text_mode: String,
}

impl Settings {
    pub fn of(config: &TrainConfig) -> Self {
        Settings {
            vocab_size: config.vocab_size,
            scheme: config.scheme.name().to_string(),
            pretokenizer: config.pretokenizer.name().to_string(),
            min_frequency: config.min_frequency,
            max_token_length: config.max_token_length,
            min_word_count: config.min_word_count,
            threads: crate::util::threads_or_default(config.threads),
            text_mode: match &config.text_mode {
                TextMode::Lines => "lines".to_string(),
                TextMode::WholeFile => "documents".to_string(),
                TextMode::Records(s) => format!("records separated by {:?}", String::from_utf8_lossy(s)),
                TextMode::Fields(f) => f.describe(),
            },
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Corpus {
    pub bytes: u64,
    pub texts: u64,
    pub pretokens: u64,
    pub special_token_occurrences: u64,
    /// Lines skipped by `on_bad_record="skip"` (absent when none were).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bad_records: Option<u64>,
}

impl Corpus {
    pub fn of(stats: &CountStats) -> Self {
        Corpus {
            bytes: stats.bytes,
            texts: stats.texts,
            pretokens: stats.pieces,
            special_token_occurrences: stats.specials,
            bad_records: (stats.bad_records > 0).then_some(stats.bad_records),
        }
    }
}

/// Seconds, rounded to milliseconds when serialized: each phase's wall
/// time and the process's CPU time in it (`crate::clock`: user + system
/// time of all threads, from `getrusage`; null where unknown, as for counts
/// made on Ray workers), and the threads the run used. CPU seconds over
/// wall seconds over `threads` is how busy the cores were.
#[derive(Debug, Clone, Serialize)]
pub struct Timings {
    pub threads: usize,
    #[serde(serialize_with = "millis")]
    pub count_seconds: f64,
    #[serde(serialize_with = "opt_millis")]
    pub count_cpu_seconds: Option<f64>,
    /// From the end of counting to the last merge (word table included).
    #[serde(serialize_with = "millis")]
    pub merge_seconds: f64,
    #[serde(serialize_with = "opt_millis")]
    pub merge_cpu_seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merge_breakdown: Option<MergeBreakdown>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MergeBreakdown {
    #[serde(serialize_with = "millis")]
    pub word_table_seconds: f64,
    #[serde(serialize_with = "opt_millis")]
    pub word_table_cpu_seconds: Option<f64>,
    #[serde(serialize_with = "millis")]
    pub pair_index_seconds: f64,
    #[serde(serialize_with = "millis")]
    pub loop_seconds: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct WordCountTable {
    pub bytes: usize,
    /// One decimal.
    pub bytes_per_type: f64,
}

impl WordCountTable {
    pub fn new(bytes: usize, word_types: usize) -> Self {
        let per = if word_types > 0 { (bytes as f64 / word_types as f64 * 10.0).round() / 10.0 } else { 0.0 };
        WordCountTable { bytes, bytes_per_type: per }
    }
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct WordTableStats {
    pub types_with_pairs: usize,
    pub symbols: usize,
}

/// SuperBPE's two stages (the rest of the record is stage 1's).
#[derive(Debug, Clone, Serialize)]
pub struct SuperBpeStats {
    pub transition: usize,
    pub stage1_pretokenizer: String,
    pub max_words: usize,
    pub colon_rule: bool,
    pub stage1_word_table: WordTableStats,
    pub stage2_units: usize,
    pub stage2_word_table: WordTableStats,
    #[serde(serialize_with = "millis")]
    pub stage1_merge_seconds: f64,
    #[serde(serialize_with = "millis")]
    pub stage2_merge_seconds: f64,
    pub stage2_merge_breakdown: Option<MergeBreakdown>,
    /// Stage 2's own fit to `max_memory` when it dropped word units (stage
    /// 1's is the run's `memory_budget`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage2_memory_budget: Option<MemoryBudget>,
}

impl TrainStats {
    /// The model's `metadata` object.
    pub fn to_metadata(&self) -> serde_json::Value {
        // Plain data (strings, numbers, JSON values): serializing cannot fail.
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

pub(crate) fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn millis<S: serde::Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(round3(*x))
}

fn opt_millis<S: serde::Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match x {
        Some(x) => s.serialize_some(&round3(*x)),
        None => s.serialize_none(),
    }
}

impl Timings {
    /// The record of a run's counting and merge phase.
    pub fn of(count: &PhaseTime, merge: &PhaseTime, merge_breakdown: Option<MergeBreakdown>) -> Self {
        Timings {
            threads: merge.threads.max(count.threads),
            count_seconds: count.seconds,
            count_cpu_seconds: count.cpu_seconds,
            merge_seconds: merge.seconds,
            merge_cpu_seconds: merge.cpu_seconds,
            merge_breakdown,
        }
    }
}

/// A count made in shards elsewhere (Ray tasks) and summed by the driver:
/// the model's `timings` then say how long counting took from the first
/// task to the summed table (`count_seconds`), how much of it the driver
/// spent adding tables (`count_sum_seconds`, what the engine timed), and in
/// how many shards (`count_shards`).
#[derive(Debug, Clone, Copy)]
pub struct ShardedCount {
    pub seconds: f64,
    pub shards: usize,
}

impl ShardedCount {
    /// Records this count in a model's `metadata` (as `TrainStats::to_metadata` made it).
    pub fn record(&self, metadata: &mut serde_json::Value) {
        if let Some(timings) = metadata.get_mut("timings").and_then(|t| t.as_object_mut()) {
            let summed = timings.get("count_seconds").cloned().unwrap_or(serde_json::Value::Null);
            timings.insert("count_sum_seconds".into(), summed);
            timings.insert("count_seconds".into(), serde_json::json!(round3(self.seconds)));
            timings.insert("count_shards".into(), serde_json::json!(self.shards));
        }
    }
}
