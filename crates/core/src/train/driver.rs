//! The training driver: word counts in, model out, as a list of named steps
//! (HF tokenizers' `do_train` reads the same way):
//!
//! 1. (the settings come validated: a `ValidConfig`, `TrainConfig::validate`);
//! 2. check the counts and report them;
//! 3. check what is resumed, and its external id range (`extend::Resume`);
//! 4. base vocabulary and word table per scheme (`words::build`);
//! 5. how many merges to learn (`merge_target`);
//! 6. the merge loop, with checkpoints and the progress CSV (`MergeSink`);
//! 7. assemble the model and its typed record (`TrainStats`).

use super::checkpoint::{CheckpointRecord, InputFile};
use super::extend::Resume;
use super::merge::{learn_merges, Flow, Learned, MergeParams};
use super::stats::{Corpus, MemoryBudget, MergeBreakdown, Settings, Timings, TrainStats, WordCountTable, WordTableStats};
use crate::memory::budget::Dropped;
use super::words::{self, WordBase};
use super::{counting::POLL_SECONDS, TrainConfig};
use crate::count::{CountStats, WordCounts};
use crate::error::{Error, Result};
use crate::model::Model;
use crate::clock::{PhaseTime, Stopwatch};
use crate::observe::{MergeProgress, Observer};
use crate::util::{new_map, threads_or_default, Map};
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

/// One training stage: the named steps from word counts to a model and its
/// record (SuperBPE runs two of them, `superbpe`). The settings come checked
/// (a `ValidConfig`, or a config derived from one: `from_counts`).
pub(super) fn train_stage(
    counts: WordCounts,
    config: &TrainConfig,
    observer: &mut dyn Observer,
    inputs: serde_json::Value,
    count: PhaseTime,
) -> Result<(Model, TrainStats)> {
    let counted = check_counts(&counts, &inputs)?;
    observer.counted(&counted.stats, counted.word_types, &count);
    let specials = config.all_special_tokens();
    let merge_watch = Stopwatch::start(threads_or_default(config.threads));
    let merge_start = merge_watch.instant();
    let resume = Resume::new(config, &specials)?;
    let fitted = fit_to_budget(&counts, config)?;
    if let Some(d) = &fitted.dropped {
        observer.dropped_for_memory(d, fitted.budget, counted.stats.pieces);
    }
    let config = fitted.config.as_ref().unwrap_or(config);
    // The setup steps report their own progress (`steps`).
    let (table, run) = crate::steps::watch(observer, threads_or_default(config.threads), |observer| -> Result<_> {
        let base = words::build(counts, config, &specials, &resume)?;
        let plan = merge_target(config, &specials, base, &resume)?;
        let table = merge_watch.elapsed();
        let record = config.checkpoint.is_some().then(|| checkpoint_record(config, &fitted.memory, &inputs));
        Ok((table, run_merges(config, observer, plan, &resume, merge_start, record)?))
    })?;
    let merge = merge_watch.elapsed();
    observer.merged(run.learned.merges.len(), &merge);
    let model = run.assemble(config, &specials, &resume, &run.learned.merges);
    let stats = TrainStats {
        library: format!("bpeforge {}", env!("CARGO_PKG_VERSION")),
        inputs,
        settings: Settings::of(config),
        corpus: Corpus::of(&counted.stats),
        timings: Timings::of(
            &count,
            &merge,
            Some(MergeBreakdown {
                word_table_seconds: table.seconds,
                word_table_cpu_seconds: table.cpu_seconds,
                pair_index_seconds: run.learned.setup_seconds,
                loop_seconds: merge.seconds - table.seconds - run.learned.setup_seconds,
            }),
        ),
        word_types: counted.word_types,
        word_count_table: WordCountTable::new(counted.table_bytes, counted.word_types),
        word_types_pruned: run.pruned + fitted.memory_left_out,
        word_table: run.word_table,
        resumed_merges: run.old_merges.len(),
        stopped_early: model.merges.len() < run.target,
        superbpe: None,
        import: resume.model.and_then(|m| m.metadata.get("import")).cloned(),
        memory_budget: Some(fitted.memory),
    };
    Ok((model, stats))
}

/// What counting produced, as the record keeps it.
struct Counted {
    word_types: usize,
    table_bytes: usize,
    stats: CountStats,
}

/// Step 2: a clear error for empty input; the counts' size.
fn check_counts(counts: &WordCounts, inputs: &serde_json::Value) -> Result<Counted> {
    let counted = Counted {
        word_types: counts.len() + counts.memory.types_left_out as usize,
        table_bytes: counts.memory_bytes(),
        stats: counts.stats.clone(),
    };
    if counts.is_empty() {
        return Err(Error::training(format!(
            "no text to train on: the input ({}) has {} text(s) but no pre-tokens; is it empty?",
            describe_inputs(inputs),
            counted.stats.texts
        )));
    }
    Ok(counted)
}

/// The run's config for the merge phase (a copy with a higher
/// `min_word_count` if the budget needs one), and the budget's record.
struct Fitted {
    config: Option<TrainConfig>,
    memory: MemoryBudget,
    /// Types counted but never in the table (merged runs left them out).
    memory_left_out: usize,
    dropped: Option<Dropped>,
    /// The budget in bytes (the default one resolved).
    budget: u64,
}

/// Step 2b, `max_memory`'s second effect: estimates the merge phase's
/// memory from the word types and, if it would not fit the budget, raises `min_word_count` just enough (adding
/// to what merging spilled runs already dropped).
fn fit_to_budget(counts: &WordCounts, config: &TrainConfig) -> Result<Fitted> {
    let budget = config.memory_budget();
    // What the process holds besides the counts (freed as the word table is built).
    let others = crate::memory::budget::process_rss().saturating_sub(counts.table_bytes());
    let room = budget.saturating_sub(others);
    let asked = config.min_word_count.max(1);
    // A resumed checkpoint merges the word types its run merged (the
    // `min_word_count` it recorded), whatever else the process holds now:
    // another cut would give a model equal to no straight run.
    let (chosen, dropped) = match config.resumed_min_word_count {
        Some(_) => (asked, None),
        None => crate::memory::budget::fit_merge_phase(&counts.histogram(), asked, room, budget, false)?,
    };
    let dropped = match (counts.memory.dropped, dropped) {
        (Some(a), Some(b)) => Some(Dropped { min_word_count: b.min_word_count, types: a.types + b.types, pretokens: a.pretokens + b.pretokens }),
        (a, b) => b.or(a),
    };
    let memory = MemoryBudget::new(config.max_memory, &counts.memory, dropped, asked, counts.stats.pieces);
    let config = (chosen > asked).then(|| config.clone().min_word_count(chosen));
    Ok(Fitted { config, memory, memory_left_out: counts.memory.types_left_out as usize, dropped, budget })
}

/// Everything the merge loop starts from.
struct MergePlan {
    base: WordBase,
    old_merges: Vec<(u32, u32, u64)>,
    /// Merges in the finished model (old ones included).
    target: usize,
}

/// Step 5: checks that the vocabulary holds the base symbols (and a resumed
/// model's tokens or ids) and computes the number of merges to reach it.
fn merge_target(config: &TrainConfig, specials: &[String], mut base: WordBase, resume: &Resume) -> Result<MergePlan> {
    let symbols = base.tokens.len() - specials.len();
    let fixed = specials.len() + symbols;
    if config.vocab_size < fixed {
        return Err(Error::parameter(format!(
            "vocab_size {} is below the base vocabulary: {} special token(s) + {} base symbols = {}; raise vocab_size to at least {}",
            config.vocab_size,
            specials.len(),
            symbols,
            fixed,
            fixed
        )));
    }
    let old_merges = resume.old_merges();
    if let Some(m) = resume.model {
        base.tokens = m.token_bytes()?;
        // (A model with its own ids is checked by its ids, below.)
        if resume.old_ids.is_none() && config.vocab_size < base.tokens.len() {
            return Err(Error::parameter(format!(
                "vocab_size {} is below the resumed model's {} tokens; resuming only grows a vocabulary",
                config.vocab_size,
                base.tokens.len()
            )));
        }
    }
    // With external ids, `vocab_size` counts ids (one past the largest, as
    // `Encoder::vocab_size` does): `old ids + N` learns N new tokens.
    let target = match &resume.old_ids {
        Some(ids) => {
            let id_count = ids.iter().map(|&e| e as usize + 1).max().unwrap_or(0);
            if config.vocab_size < id_count {
                return Err(Error::parameter(format!(
                    "vocab_size {} is below the resumed model's {id_count} ids (its largest id is {}); resuming only grows a vocabulary",
                    config.vocab_size,
                    id_count.saturating_sub(1)
                )));
            }
            old_merges.len() + (config.vocab_size - id_count)
        }
        None => config.vocab_size - fixed,
    };
    Ok(MergePlan { base, old_merges, target })
}

/// The outcome of the merge loop, with what assembling the model needs.
struct MergeRun {
    learned: Learned,
    old_merges: Vec<(u32, u32, u64)>,
    target: usize,
    alphabet: Option<Vec<String>>,
    pruned: usize,
    word_table: WordTableStats,
}

impl MergeRun {
    /// Step 7: the model after `merges` new merges (also used for checkpoints).
    fn assemble(&self, config: &TrainConfig, specials: &[String], resume: &Resume, merges: &[(u32, u32, u64)]) -> Model {
        assemble(config, specials, self.alphabet.clone(), &self.old_merges, resume, merges)
    }
}

fn assemble(
    config: &TrainConfig,
    specials: &[String],
    alphabet: Option<Vec<String>>,
    old_merges: &[(u32, u32, u64)],
    resume: &Resume,
    merges: &[(u32, u32, u64)],
) -> Model {
    let mut model = Model::new(config.scheme.clone(), config.pretokenizer.clone(), specials.to_vec(), alphabet);
    model.merges = old_merges.iter().chain(merges).map(|&(a, b, _)| (a, b)).collect();
    model.merge_counts = old_merges.iter().chain(merges).map(|&(_, _, c)| c).collect();
    if let Some(ids) = &resume.old_ids {
        let first = resume.first_new_id;
        model.ids = Some(ids.iter().copied().chain((0..merges.len() as u32).map(|k| first + k)).collect());
    }
    model
}

/// Step 6: the merge loop. An interrupted run saves its checkpoint (if one
/// is configured) and ends with `Interrupted`.
fn run_merges(
    config: &TrainConfig,
    observer: &mut dyn Observer,
    plan: MergePlan,
    resume: &Resume,
    merge_start: Instant,
    record: Option<CheckpointRecord>,
) -> Result<MergeRun> {
    let MergePlan { base, old_merges, target } = plan;
    let WordBase { mut tokens, table, alphabet, unk, pruned } = base;
    let specials = config.all_special_tokens();
    let mut token_ids: Map<Vec<u8>, u32> = new_map();
    for (i, t) in tokens.iter().enumerate() {
        token_ids.entry(t.clone()).or_insert(i as u32);
    }
    let params = MergeParams {
        max_merges: target - old_merges.len(),
        min_frequency: config.min_frequency,
        max_token_length: config.max_token_length,
        unk,
        limits: config.token_limits,
        threads: threads_or_default(config.threads),
    };
    let word_table = WordTableStats { types_with_pairs: table.len(), symbols: table.symbols() };
    let checkpoint_model = |merges: &[(u32, u32, u64)]| {
        let mut model = assemble(config, &specials, alphabet.clone(), &old_merges, resume, merges);
        if let Some(record) = &record {
            model.metadata = serde_json::json!({ "checkpoint": record });
        }
        model
    };
    let mut sink = MergeSink::new(config, old_merges.len(), target, merge_start)?;
    let learned = learn_merges(table, &mut tokens, &mut token_ids, &params, &mut |merges, pair_count| {
        sink.tick(merges, pair_count, observer, &checkpoint_model)
    })?;
    sink.finish()?;
    if learned.interrupted {
        if let Some((path, _)) = &config.checkpoint {
            checkpoint_model(&learned.merges).save(path)?;
        }
        return Err(Error::interrupted());
    }
    Ok(MergeRun { learned, old_merges, target, alphabet, pruned, word_table })
}

/// What a checkpoint of this run records (`checkpoint::CheckpointRecord`):
/// the `min_word_count` the merge phase kept to is the budget's (which
/// counting may have raised by dropping rare types) or the config's.
fn checkpoint_record(config: &TrainConfig, memory: &MemoryBudget, inputs: &serde_json::Value) -> CheckpointRecord {
    let mut options = super::checkpoint::result_options(&config.run_options);
    options.entry("vocab_size").or_insert(serde_json::json!(config.vocab_size));
    let effective_min_word_count = config.min_word_count.max(memory.effective_min_word_count);
    let counts = config
        .checkpoint
        .as_ref()
        .and_then(|(path, _)| std::fs::canonicalize(super::counts_file::beside(path)).ok())
        .map(|path| path.display().to_string());
    CheckpointRecord { options, effective_min_word_count, inputs: InputFile::of_inputs(inputs), counts }
}

/// Where the merge loop reports after every merge: the live progress CSV,
/// periodic checkpoints, and (every `POLL_SECONDS`) the observer.
struct MergeSink<'c> {
    csv: Option<(std::io::BufWriter<std::fs::File>, &'c PathBuf)>,
    checkpoint: Option<&'c (PathBuf, usize)>,
    last_checkpoint: usize,
    last_poll: f64,
    old_merges: usize,
    target: usize,
    start: Instant,
}

impl<'c> MergeSink<'c> {
    fn new(config: &'c TrainConfig, old_merges: usize, target: usize, start: Instant) -> Result<Self> {
        let csv = match &config.progress_csv {
            Some(path) => {
                let f = std::fs::File::create(path)
                    .map_err(|e| Error::output(format!("cannot write {}: {e}", path.display())))?;
                let mut w = std::io::BufWriter::new(f);
                writeln!(w, "merge,pair_count,elapsed_s").map_err(|e| Error::output(e.to_string()))?;
                Some((w, path))
            }
            None => None,
        };
        let checkpoint = config.checkpoint.as_ref();
        Ok(MergeSink { csv, checkpoint, last_checkpoint: 0, last_poll: 0.0, old_merges, target, start })
    }

    fn tick(
        &mut self,
        merges: &[(u32, u32, u64)],
        pair_count: u64,
        observer: &mut dyn Observer,
        model: &dyn Fn(&[(u32, u32, u64)]) -> Model,
    ) -> Result<Flow> {
        let done = self.old_merges + merges.len();
        if let Some((w, path)) = self.csv.as_mut() {
            let t = self.start.elapsed().as_secs_f64();
            writeln!(w, "{},{},{:.4}", done + 1, pair_count, t)
                .map_err(|e| Error::output(format!("cannot write {}: {e}", path.display())))?;
            if t - self.last_poll >= POLL_SECONDS {
                let _ = w.flush();
            }
        }
        if let Some((path, every)) = self.checkpoint {
            if *every > 0 && merges.len() >= self.last_checkpoint + every {
                self.last_checkpoint = merges.len();
                model(merges).save(path)?;
            }
        }
        let t = self.start.elapsed().as_secs_f64();
        if t - self.last_poll >= POLL_SECONDS || merges.is_empty() {
            self.last_poll = t;
            if observer.should_stop() {
                return Ok(Flow::Stop);
            }
            observer.merging(&MergeProgress { done, target: self.target, pair_count, elapsed: t });
        }
        Ok(Flow::Continue)
    }

    fn finish(self) -> Result<()> {
        if let Some((mut w, path)) = self.csv {
            w.flush().map_err(|e| Error::output(format!("cannot write {}: {e}", path.display())))?;
        }
        Ok(())
    }
}

fn describe_inputs(inputs: &serde_json::Value) -> String {
    match inputs {
        serde_json::Value::Array(items) => {
            let names: Vec<String> = items.iter().take(3).map(|v| v.as_str().unwrap_or("?").to_string()).collect();
            let more = if items.len() > 3 { format!(" and {} more", items.len() - 3) } else { String::new() };
            format!("{}{more}", names.join(", "))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    //! The driver's steps on small hand-made counts.
    use super::*;
    use crate::train::train_from_counts;
    use crate::error::ErrorKind;
    use crate::model::Scheme;
    use crate::observe::Silent;
    use crate::pretok::PreTokenizerSpec;

    fn counts(words: &[(&str, u64)]) -> WordCounts {
        let mut c = WordCounts::new();
        for &(w, n) in words {
            c.add(w.as_bytes(), n);
            c.stats.pieces += n;
        }
        c.stats.texts = 1;
        c
    }

    fn corpus() -> WordCounts {
        counts(&[("hello", 10), (" hello", 8), (" world", 7), (" help", 3), (" low", 2)])
    }

    fn config(vocab_size: usize) -> TrainConfig {
        TrainConfig::new(vocab_size, Scheme::Bytes, PreTokenizerSpec::GPT2).min_frequency(1).threads(1)
    }

    fn train(c: WordCounts, config: &TrainConfig) -> Result<Model> {
        train_from_counts(c, &config.clone().validate()?, &mut Silent, serde_json::json!(["test"]), PhaseTime::default())
    }

    #[test]
    fn empty_counts_are_a_training_error_naming_the_input() {
        let err = train(WordCounts::new(), &config(300)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Training);
        assert!(err.message().contains("no text to train on") && err.message().contains("test"), "{}", err.message());
    }

    #[test]
    fn a_vocabulary_below_the_base_symbols_is_refused() {
        let err = train(corpus(), &config(200)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Parameter);
        assert!(err.message().contains("at least 256"), "{}", err.message());
    }

    #[test]
    fn merges_stop_early_when_no_pair_is_left_and_the_record_says_so() {
        let model = train(corpus(), &config(10_000)).unwrap();
        assert!(!model.merges.is_empty() && model.merges.len() < 10_000 - 256);
        assert_eq!(model.metadata["stopped_early"], true);
        assert_eq!(model.metadata["settings"]["vocab_size"], 10_000);
        assert_eq!(model.metadata["word_types"], 5);
        assert!(model.metadata.get("superbpe").is_none() && model.metadata.get("import").is_none());
        assert_eq!(model.merge_counts.len(), model.merges.len());
    }

    #[test]
    fn resuming_continues_exactly_where_a_shorter_run_stopped() {
        let whole = train(corpus(), &config(266)).unwrap();
        let part = train(corpus(), &config(261)).unwrap();
        let resumed = train(corpus(), &config(266).resume_from(part)).unwrap();
        assert_eq!(resumed.merges, whole.merges);
        assert_eq!(resumed.merge_counts, whole.merge_counts);
        assert_eq!(resumed.metadata["resumed_merges"], 5);
    }

    #[test]
    fn resuming_never_shrinks_a_vocabulary() {
        let part = train(corpus(), &config(264)).unwrap();
        let err = train(corpus(), &config(262).resume_from(part)).unwrap_err();
        assert!(err.message().contains("resuming only grows"), "{}", err.message());
    }

    #[test]
    fn checkpoints_are_loadable_models() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ck.json");
        let model = train(corpus(), &config(264).checkpoint(path.clone(), 2)).unwrap();
        let saved = Model::load(&path).unwrap();
        assert!(!saved.merges.is_empty() && model.merges.starts_with(&saved.merges));
    }

    #[test]
    fn the_progress_csv_has_a_row_per_merge() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.csv");
        let model = train(corpus(), &config(264).progress_csv(path.clone())).unwrap();
        let csv = std::fs::read_to_string(&path).unwrap();
        assert!(csv.starts_with("merge,pair_count,elapsed_s\n"));
        assert!(csv.lines().count() > model.merges.len());
    }

    #[test]
    fn an_observer_that_stops_interrupts_the_merge_loop() {
        struct Stop;
        impl Observer for Stop {
            fn should_stop(&mut self) -> bool {
                true
            }
        }
        let err = train_from_counts(corpus(), &config(264).validate().unwrap(), &mut Stop, serde_json::json!([]), PhaseTime::default()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Interrupted);
    }

    /// The default budget is resolved once, when training starts: after
    /// the process has grown (as counting makes it grow), the merge phase's
    /// copy of the config (`fit_to_budget`'s) reads the figure counting read,
    /// not a share of what is free by then.
    #[test]
    fn the_default_budget_is_resolved_once_when_training_starts() {
        let config = config(300).validate().unwrap();
        assert_eq!(config.max_memory, None);
        let counting = config.memory_budget();
        let grown = vec![1u8; 512 << 20];
        std::hint::black_box(&grown);
        let merge_phase = (*config).clone().min_word_count(3);
        assert_eq!(merge_phase.memory_budget(), counting);
        assert_eq!(config.memory_budget(), counting);
        drop(grown);
    }
}
