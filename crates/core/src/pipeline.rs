//! Training from files, end to end: language tags (if balancing), counting,
//! then the plain driver or a balancing method. This is the one place that
//! knows both `train` and `balance`; neither knows it.

use crate::balance::{self, LanguageTable, Tagger};
use crate::error::{Error, Result};
use crate::input::{read_chunks, total_size};
use crate::model::Model;
use crate::observe::{CountProgress, Observer};
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
    let parity = config.balance.as_ref().and_then(|b| b.parity.as_ref());
    // UTF-8 bytes of each language's texts (what parity measures against).
    let mut lang_bytes = vec![0u64; languages.as_ref().map_or(0, |t| t.names.len())];
    let counts = {
        let raw = raw.clone();
        let weights = languages.as_ref().map(|t| t.weights.clone());
        let mode = match (parity, &weights) {
            (Some(_), _) => CountMode::Tagged,
            (None, Some(w)) => CountMode::Weighted(w),
            (None, None) => CountMode::Plain,
        };
        let languages = &languages;
        let lang_bytes = &mut lang_bytes;
        let final_counts = matches!(mode, CountMode::Plain) && config.superbpe.is_none();
        count_words_mode(config, observer, mode, final_counts, move |sink, observer| {
            let mut last = 0.0f64;
            for (i, path) in paths.iter().enumerate() {
                let mut tagger = match (&config.balance, languages) {
                    (Some(b), Some(table)) => Some(Tagger::new(&b.source, i, table)?),
                    _ => None,
                };
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
                        observer.counting(&CountProgress {
                            raw_bytes_done: raw.load(Ordering::Relaxed),
                            raw_bytes_total: Some(total),
                            elapsed: t,
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
    match (&languages, &config.balance) {
        (Some(table), Some(b)) => {
            balance::train_balanced(counts, table, &lang_bytes, b, config, observer, serde_json::json!(inputs), count_seconds)
        }
        _ => train_from_counts(counts, config, observer, serde_json::json!(inputs), count_seconds),
    }
}

