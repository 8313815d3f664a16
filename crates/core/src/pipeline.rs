//! Training from files, end to end: language tags (if balancing), counting,
//! then the plain driver or a balancing method. This is the one place that
//! knows both `train` and `balance`; neither knows it.

use crate::balance::{self, LanguageTable, Tagger};
use crate::count::WordCounts;
use crate::error::{Error, Result};
use crate::input::{read_chunks, total_size};
use crate::model::Model;
use crate::observe::{CountProgress, FileProgress, Observer};
use crate::train::{count_words_mode, train_from_counts, CountMode, TrainConfig, POLL_SECONDS};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Trains on files.
pub fn train_files(paths: &[PathBuf], config: &TrainConfig, observer: &mut dyn Observer) -> Result<Model> {
    config.validate()?;
    if paths.is_empty() {
        return Err(Error::input("no input files given"));
    }
    let total = total_size(paths)?;
    let raw = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let languages = match &config.balance {
        Some(b) => Some(LanguageTable::build(paths, b)?),
        None => None,
    };
    // UTF-8 bytes of each language's texts (what parity measures against).
    let mut lang_bytes = vec![0u64; languages.as_ref().map_or(0, |t| t.names.len())];
    let counts = {
        let raw = raw.clone();
        let mode = count_mode(config, languages.as_ref());
        let languages = &languages;
        let lang_bytes = &mut lang_bytes;
        count_words_mode(config, observer, mode, move |sink, observer| {
            let mut last = 0.0f64;
            for (i, path) in paths.iter().enumerate() {
                let mut tagger = match (&config.balance, languages) {
                    (Some(b), Some(table)) => Some(Tagger::new(&b.source, i, table)?),
                    _ => None,
                };
                let file = FileStart::new(path, i, paths.len(), raw.load(Ordering::Relaxed), start.elapsed().as_secs_f64());
                read_chunks(std::slice::from_ref(path), &config.text_mode, raw.clone(), &mut |mut chunk| {
                    if let Some(t) = tagger.as_mut() {
                        t.tag(&mut chunk)?;
                    }
                    let t = start.elapsed().as_secs_f64();
                    if t - last >= POLL_SECONDS {
                        last = t;
                        if observer.should_stop() {
                            return Err(Error::interrupted());
                        }
                        let done = raw.load(Ordering::Relaxed);
                        observer.counting(&CountProgress {
                            raw_bytes_done: done,
                            raw_bytes_total: Some(total),
                            elapsed: t,
                            file: Some(file.progress(done, t)),
                        });
                    }
                    sink(chunk)
                })?;
                if let Some(t) = tagger {
                    for (total, b) in lang_bytes.iter_mut().zip(t.finish()?) {
                        *total += b;
                    }
                }
            }
            Ok(())
        })?
    };
    let inputs: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let count_seconds = start.elapsed().as_secs_f64();
    train_counted(counts, languages.as_ref(), &lang_bytes, config, observer, serde_json::json!(inputs), count_seconds)
}

/// How texts are counted: keyed by language for parity balancing, weighted
/// by language for temperature balancing, else plainly.
pub(crate) fn count_mode<'t>(config: &TrainConfig, languages: Option<&'t LanguageTable>) -> CountMode<'t> {
    let parity = config.balance.as_ref().and_then(|b| b.parity.as_ref());
    match (parity, languages) {
        (Some(_), _) => CountMode::Tagged,
        (None, Some(t)) => CountMode::Weighted(&t.weights),
        (None, None) => CountMode::Plain,
    }
}

/// The step after counting (`count_mode`'s counts): the plain driver, or
/// the balancing method with the language table and each language's bytes.
pub fn train_counted(
    counts: WordCounts,
    languages: Option<&LanguageTable>,
    lang_bytes: &[u64],
    config: &TrainConfig,
    observer: &mut dyn Observer,
    inputs: serde_json::Value,
    count_seconds: f64,
) -> Result<Model> {
    match (languages, &config.balance) {
        (Some(table), Some(b)) => balance::train_balanced(counts, table, lang_bytes, b, config, observer, inputs, count_seconds),
        _ => train_from_counts(counts, config, observer, inputs, count_seconds),
    }
}


/// Where one input file started, for its own bytes, rate and ETA.
struct FileStart {
    path: Arc<str>,
    index: usize,
    files: usize,
    size: u64,
    raw_before: u64,
    started: f64,
}

impl FileStart {
    fn new(path: &std::path::Path, index: usize, files: usize, raw_before: u64, started: f64) -> Self {
        // `total_size` has read every size already; a file that vanished
        // since fails when it is opened, so 0 here is never shown.
        let size = std::fs::metadata(path).map_or(0, |m| m.len());
        FileStart { path: Arc::from(path.display().to_string()), index, files, size, raw_before, started }
    }

    fn progress(&self, raw_done: u64, elapsed: f64) -> FileProgress {
        FileProgress {
            path: self.path.clone(),
            index: self.index,
            files: self.files,
            bytes_done: raw_done.saturating_sub(self.raw_before).min(self.size),
            bytes_total: self.size,
            elapsed: elapsed - self.started,
        }
    }
}
