//! One shard of a distributed count (a Ray task of `bpeforge.distributed`):
//! some whole input files, or the lines that start in a byte range of one,
//! counted exactly as `crate::pipeline` counts those texts, so that the sum
//! of the shards' tables is the table of a local run:
//!
//! * plain runs count plainly; SuperBPE's stage-2 units are counted in the
//!   same pass and travel in the table (`WordCounts::to_bytes`);
//! * language-balanced runs tag every line with its language from the same
//!   language table (built once, `LanguageTable::build`, and sent to every
//!   shard), then count weighted (temperature) or keyed by language
//!   (parity), as `pipeline::count_mode` says; each shard also returns the
//!   UTF-8 bytes of each language's texts, which parity measures against.
//!
//! With `lang_field` each record names its language, mapped to the ids of
//! the same table (built in a first pass over the records).
//!
//! A shard that starts inside its file skips the tags of the lines before
//! it (`Shard::lines_before`, counted when the shards were planned); the
//! shard that reaches its file's end checks that the language file has no
//! extra lines, as the local run does.

use crate::balance::{LanguageTable, Tagger};
use crate::count::{CountOutput, WordCounts};
use crate::error::{Error, Result};
use crate::input::{read_chunks, read_range_chunks, total_size};
use crate::observe::Observer;
use crate::pipeline::{count_mode, reading_mode};
use crate::train::{count_words_output, ValidConfig};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// What a shard reads.
#[derive(Debug, Clone)]
pub struct Shard {
    /// Whole files, or exactly one file when `byte_range` is set.
    pub paths: Vec<PathBuf>,
    /// Each path's position among the run's inputs (which language file,
    /// or which `file_languages` tag, belongs to it).
    pub file_indices: Vec<usize>,
    /// The lines that start in `[start, end)` of the one plain file.
    pub byte_range: Option<(u64, u64)>,
    /// With `byte_range`: the number of lines of the file before the range.
    pub lines_before: u64,
}

/// A shard's counts and, for balanced runs, the UTF-8 bytes of each
/// language's texts in it (empty otherwise).
#[derive(Debug)]
pub struct ShardCounts {
    pub counts: WordCounts,
    pub lang_bytes: Vec<u64>,
}

/// Counts one shard; `languages` is the run's language table when
/// `config` balances languages.
pub fn count_shard(
    shard: &Shard,
    languages: Option<&LanguageTable>,
    config: &ValidConfig,
    observer: &mut dyn Observer,
) -> Result<ShardCounts> {
    let (out, lang_bytes) = count_shard_output(shard, languages, config, observer)?;
    Ok(ShardCounts { counts: out.into_table(None)?, lang_bytes })
}

/// `count_shard`, leaving counts that spilled as their runs: a task writes
/// them in the wire form (`CountOutput::write_wire`) without building the
/// table. With the UTF-8 bytes of each language's texts (balanced runs).
pub fn count_shard_output(
    shard: &Shard,
    languages: Option<&LanguageTable>,
    config: &ValidConfig,
    observer: &mut dyn Observer,
) -> Result<(CountOutput, Vec<u64>)> {
    if shard.paths.len() != shard.file_indices.len() {
        return Err(Error::parameter("shard: one file index per path is needed"));
    }
    if shard.byte_range.is_some() && shard.paths.len() != 1 {
        return Err(Error::parameter("byte_range needs exactly one input file"));
    }
    let balance = match (&config.balance, languages) {
        (Some(b), Some(table)) => Some((b, table)),
        (None, _) => None,
        (Some(_), None) => return Err(Error::parameter("a language-balanced shard needs the run's language table")),
    };
    let mut lang_bytes = vec![0u64; languages.map_or(0, |t| t.names.len())];
    let raw = Arc::new(AtomicU64::new(0));
    let mode = count_mode(config, languages);
    let text_mode = reading_mode(config, languages);
    // Not the final counts (the driver sums the shards), so a spilled count
    // keeps every type.
    let counts = count_words_output(config, observer, mode, false, |sink, observer| {
        if observer.should_stop() {
            return Err(Error::interrupted());
        }
        for (path, &index) in shard.paths.iter().zip(&shard.file_indices) {
            let path = std::slice::from_ref(path);
            let mut tagger = match balance {
                Some((b, table)) => Some(Tagger::new(&b.source, index, table)?),
                None => None,
            };
            if let (Some(t), Some(_)) = (tagger.as_mut(), shard.byte_range) {
                t.skip_lines(shard.lines_before)?;
            }
            let mut feed = |mut chunk: crate::input::Chunk| {
                if let Some(t) = tagger.as_mut() {
                    t.tag(&mut chunk)?;
                }
                sink(chunk)
            };
            let reaches_end = match shard.byte_range {
                Some((start, end)) => {
                    read_range_chunks(&path[0], &text_mode, start, end, raw.clone(), &mut feed)?;
                    end >= total_size(path)?
                }
                None => {
                    total_size(path)?;
                    read_chunks(path, &text_mode, raw.clone(), &mut feed)?;
                    true
                }
            };
            if let Some(t) = tagger {
                let bytes = if reaches_end { t.finish()? } else { t.into_bytes() };
                for (total, b) in lang_bytes.iter_mut().zip(bytes) {
                    *total += b;
                }
            }
        }
        Ok(())
    })?;
    Ok((counts, lang_bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Scheme;
    use crate::observe::Silent;
    use crate::pretok::PreTokenizerSpec;
    use crate::train::{LangSource, LanguageBalance, SuperBpe, TrainConfig};
    use std::collections::HashMap;

    fn snapshot(c: &WordCounts) -> HashMap<Vec<u8>, u64> {
        let mut m = HashMap::new();
        c.for_each(|k, v| {
            m.insert(k.to_vec(), v);
        });
        m
    }

    fn write(dir: &std::path::Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// Lines before byte `start` as the planner counts them: those that
    /// start before it.
    fn lines_before(text: &str, start: usize) -> u64 {
        if start == 0 {
            0
        } else {
            1 + text.as_bytes()[..start - 1].iter().filter(|&&b| b == b'\n').count() as u64
        }
    }

    /// Byte-range shards of a tagged file, summed, equal the whole file
    /// counted at once: counts (weighted and keyed by language), stage-2
    /// units, and bytes per language; the table survives its byte form.
    #[test]
    fn shards_of_a_tagged_file_sum_to_the_whole() {
        let dir = tempfile::tempdir().unwrap();
        let lines: Vec<String> = (0..400).map(|i| format!("word{} common: text {}", i % 37, i % 5)).collect();
        let text = lines.join("\n") + "\nlast line without newline";
        let tags: String = (0..401).map(|i| if i % 3 == 0 { "de\n" } else { "en\n" }).collect();
        let input = write(dir.path(), "t.txt", &text);
        let langs = write(dir.path(), "t.langs", &tags);
        let balance = LanguageBalance { source: LangSource::Files(vec![langs]), temperature: 3.0, parity: None };
        let table = LanguageTable::build(std::slice::from_ref(&input), &balance).unwrap();
        let mut config = TrainConfig::new(500, Scheme::Bytes, PreTokenizerSpec::GPT2).balance(balance);
        config = config.superbpe(SuperBpe { transition: 300, max_words: 4, colon_rule: true });
        let config = config.validate().unwrap();
        let whole = Shard { paths: vec![input.clone()], file_indices: vec![0], byte_range: None, lines_before: 0 };
        let expected = count_shard(&whole, Some(&table), &config, &mut Silent).unwrap();
        let size = text.len();
        let cuts: Vec<usize> = (0..=7).map(|k| size * k / 7).collect();
        let mut total = WordCounts::new();
        let mut bytes = vec![0u64; 2];
        for w in cuts.windows(2) {
            let shard = Shard {
                paths: vec![input.clone()],
                file_indices: vec![0],
                byte_range: Some((w[0] as u64, w[1] as u64)),
                lines_before: lines_before(&text, w[0]),
            };
            let part = count_shard(&shard, Some(&table), &config, &mut Silent).unwrap();
            total.add_bytes(&part.counts.to_bytes(), 1).unwrap();
            bytes.iter_mut().zip(&part.lang_bytes).for_each(|(t, b)| *t += b);
        }
        assert_eq!(snapshot(&total), snapshot(&expected.counts));
        let (units, expected_units) = (total.superword.as_deref().unwrap(), expected.counts.superword.as_deref().unwrap());
        assert!(units.len() > 10);
        assert_eq!(snapshot(units), snapshot(expected_units));
        assert_eq!(total.stats, expected.counts.stats);
        assert_eq!(bytes, expected.lang_bytes);
    }

    #[test]
    fn a_language_file_too_short_for_the_shard_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let input = write(dir.path(), "t.txt", "a\nb\nc\nd\n");
        let langs = write(dir.path(), "short.langs", "en\nen\n");
        let balance = LanguageBalance { source: LangSource::Files(vec![langs]), temperature: 1.0, parity: None };
        let table = LanguageTable::from_lines(vec!["en".into()], vec![4], 1.0).unwrap();
        let config = TrainConfig::new(300, Scheme::Bytes, PreTokenizerSpec::GPT2).balance(balance).validate().unwrap();
        let shard = Shard { paths: vec![input], file_indices: vec![0], byte_range: Some((4, 8)), lines_before: 2 };
        let err = count_shard(&shard, Some(&table), &config, &mut Silent).unwrap_err();
        assert!(err.message().contains("short.langs has only 2 line(s)"), "{}", err.message());
    }
}
