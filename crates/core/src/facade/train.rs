//! What to train on and what to count, one request each: files, a counts
//! file, texts a caller feeds, the sum of a distributed count's parts; and
//! the parts themselves (files or a byte range, a shard, a caller's
//! texts), serialized for the driver's sum.

use crate::balance::LanguageTable;
use crate::count::CountOutput;
use crate::error::{Error, Result};
use crate::model::Model;
use crate::observe::Observer;
use crate::pipeline::{self, CountScope, Counted};
use crate::shard::{self, count_shard_output};
use crate::source::Source;
use crate::sum::{summed_languages, CountSum};
use crate::train::ValidConfig;
use std::path::{Path, PathBuf};

/// The copies of a shard's serialized counts held at once as a task
/// returns them: its bytes, and the object store's copy made from them.
const RETURNED_COPIES: u64 = 2;

/// Languages as a caller passes them: each one's name (in id order) and
/// its line (or row) count.
type Languages = Option<(Vec<String>, Vec<u64>)>;

/// What a run trains on.
pub enum TrainOn<'a> {
    /// Files the engine reads (and decompresses) itself.
    Files(&'a [PathBuf]),
    /// A counts file (`count_to_file`'s, or one a checkpointed run saved),
    /// trained on without counting.
    CountsFile(&'a Path),
    /// Texts a caller fed, counted by `Fed::count`; `inputs` name them in
    /// the model's record.
    Fed { fed: Fed, inputs: &'a [String] },
    /// The sum of a distributed count's parts (used up), trained on as the
    /// local file path trains on its counts: the plain driver, or with
    /// `languages` (`language_table`'s names and lines) and `lang_bytes`
    /// (the UTF-8 bytes of each language's texts) the run's balancing;
    /// `sharded`: the seconds counting took from the first task to the
    /// summed table, and the number of shards.
    Sum { sum: &'a mut CountSum, languages: Languages, lang_bytes: Option<Vec<u64>>, sharded: Option<(f64, usize)>, inputs: &'a [String] },
}

impl TrainOn<'_> {
    /// Runs the training and returns the model.
    pub fn train(self, config: &ValidConfig, observer: &mut dyn Observer) -> Result<Model> {
        match self {
            TrainOn::Files(paths) => pipeline::train_files(paths, config, observer),
            TrainOn::CountsFile(path) => pipeline::train_counts_file(path, config, observer),
            TrainOn::Fed { fed, inputs } => pipeline::train_counted(*fed.counted, config, fed.languages.as_ref(), serde_json::json!(inputs), observer),
            TrainOn::Sum { sum, languages, lang_bytes, sharded, inputs } => {
                let table = summed_languages(config, languages)?;
                sum.train(table.as_ref(), lang_bytes, sharded, config, observer, inputs)
            }
        }
    }
}

/// A caller's texts (`Source`) counted for a whole run. The calling thread
/// pulls the chunks while the workers count the ones before; training goes
/// on with `TrainOn::Fed` (a caller that holds a lock while feeding, such
/// as Python's, releases it for that half).
pub struct Fed {
    counted: Box<Counted>,
    languages: Option<LanguageTable>,
}

impl Fed {
    /// Counts `source`, balanced by `languages` (for `lang_field`: each
    /// language's name in id order and its row count, read by the caller
    /// in a first pass over the language column; chunks carry the ids).
    pub fn count(source: &mut dyn Source, languages: Languages, config: &ValidConfig, observer: &mut dyn Observer) -> Result<Fed> {
        let languages = pipeline::fed_languages(config, languages)?;
        let counted = pipeline::count_source(config, languages.as_ref(), CountScope::Run, source, observer)?;
        Ok(Fed { counted: Box::new(counted), languages })
    }

    /// Counts `source` without language balancing, whatever the options
    /// say of languages (a source whose texts carry none).
    pub fn count_plain(source: &mut dyn Source, config: &ValidConfig, observer: &mut dyn Observer) -> Result<Fed> {
        let counted = pipeline::count_source(config, None, CountScope::Run, source, observer)?;
        Ok(Fed { counted: Box::new(counted), languages: None })
    }
}

/// What one part of a distributed count counts.
pub enum CountOf<'a> {
    /// Files, or the byte range `start..end` of one plain file.
    Files { paths: &'a [PathBuf], byte_range: Option<(u64, u64)> },
    /// One shard (see `shard`): the files at `file_indices` of the run's
    /// inputs, or a byte range of one after `lines_before` lines, balanced
    /// by `languages` (`language_table`'s names and lines).
    Shard { paths: Vec<PathBuf>, file_indices: Vec<usize>, byte_range: Option<(u64, u64)>, lines_before: u64, languages: Languages },
    /// A caller's texts as one shard, balanced as `Fed::count` balances.
    Source { source: &'a mut dyn Source, languages: Languages },
}

impl CountOf<'_> {
    /// Counts the part.
    pub fn count(self, config: &ValidConfig, observer: &mut dyn Observer) -> Result<Part> {
        match self {
            CountOf::Files { paths, byte_range } => {
                let counts = pipeline::count_part(paths, byte_range, config, observer)?;
                Ok(Part { counts, lang_bytes: Vec::new(), within_budget: false })
            }
            CountOf::Shard { paths, file_indices, byte_range, lines_before, languages } => {
                let table = summed_languages(config, languages)?;
                let shard = shard::Shard { paths, file_indices, byte_range, lines_before };
                let (counts, lang_bytes) = count_shard_output(&shard, table.as_ref(), config, observer)?;
                Ok(Part { counts, lang_bytes, within_budget: true })
            }
            CountOf::Source { source, languages } => {
                let table = pipeline::fed_languages(config, languages)?;
                let (counts, lang_bytes) = pipeline::count_source(config, table.as_ref(), CountScope::Part, source, observer)?.into_parts();
                Ok(Part { counts, lang_bytes, within_budget: true })
            }
        }
    }
}

/// One part's counts, to be serialized for the driver's sum
/// (`CountSum::add`), with the UTF-8 bytes of each language's texts
/// (balanced runs). Counts that spilled are still their runs, written in
/// the wire form without building the table.
pub struct Part {
    counts: CountOutput,
    pub lang_bytes: Vec<u64>,
    /// A shard's serialized counts, with the copies a task holds as it
    /// returns them, must fit in the run's memory budget.
    within_budget: bool,
}

impl Part {
    /// The length of the wire form (`write_wire` fills that many bytes).
    pub fn wire_len(&self, config: &ValidConfig) -> Result<usize> {
        if self.within_budget {
            self.counts.wire_len_within(config.memory_budget(), RETURNED_COPIES)
        } else {
            self.counts.wire_len()
        }
    }

    /// Writes the wire form into `out` (`wire_len` bytes), freeing the
    /// table behind the cursor.
    pub fn write_wire(self, out: &mut [u8]) -> Result<()> {
        self.counts.write_wire(out)
    }
}

/// Counts files into a counts file (`bpeforge count`), written
/// atomically; returns its header as JSON.
pub fn count_to_file(paths: &[PathBuf], config: &ValidConfig, observer: &mut dyn Observer, output: &Path) -> Result<String> {
    let header = pipeline::count_to_file(paths, config, observer, output)?;
    serde_json::to_string(&header).map_err(|e| Error::output(e.to_string()))
}

/// The run's languages, their line counts and the UTF-8 bytes of their
/// texts known before counting (language files, per-file tags, or with
/// `lang_field` a pass over the records): built once, by one task, and
/// sent to every shard and to the driver's training.
pub fn language_table(paths: &[PathBuf], config: &ValidConfig) -> Result<(Vec<String>, Vec<u64>, Vec<u64>)> {
    match pipeline::language_table(paths, config)? {
        Some((table, bytes)) => Ok((table.names, table.lines, bytes)),
        None => Err(Error::parameter("language_table needs langs, file_languages or lang_field")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{Chunk, Layout};
    use crate::observe::Silent;
    use crate::train::TrainConfig;
    use std::sync::Arc;

    /// Texts handed over a batch at a time.
    struct Batches<'t>(std::slice::Chunks<'t, String>);

    impl Source for Batches<'_> {
        fn next_chunk(&mut self, _: &mut dyn Observer) -> Result<Option<Chunk>> {
            Ok(self.0.next().map(|batch| {
                let (mut data, mut ends) = (Vec::new(), Vec::new());
                for t in batch {
                    data.extend_from_slice(t.as_bytes());
                    ends.push(data.len());
                }
                Chunk { data, layout: Layout::Ends(ends), source: Arc::from("<batches>"), first_line: 1, langs: Vec::new() }
            }))
        }
    }

    fn wire(part: Part, config: &ValidConfig) -> Vec<u8> {
        let mut out = vec![0; part.wire_len(config).unwrap()];
        part.write_wire(&mut out).unwrap();
        out
    }

    /// Every request trains the same merges on the same texts: a file, the
    /// texts fed, and parts of them counted from a file, from a shard and
    /// from fed texts, summed (in memory or one at a time).
    #[test]
    fn every_request_trains_the_same_merges_on_the_same_texts() {
        let texts: Vec<String> = (0..6_000).map(|i| format!("w{} x{} shared", i % 613, i % 97)).collect();
        let dir = std::env::temp_dir().join(format!("bpeforge-facade-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (head, tail) = (dir.join("head.txt"), dir.join("tail.txt"));
        std::fs::write(&head, texts[..3_000].join("\n") + "\n").unwrap();
        std::fs::write(&tail, texts[3_000..].join("\n") + "\n").unwrap();
        let both = [head.clone(), tail.clone()];
        let mut c = TrainConfig::new(400, crate::model::Scheme::Bytes, crate::pretok::PreTokenizerSpec::GPT2);
        c.threads = 2;
        let config = c.validate().unwrap();
        let inputs = ["<texts>".to_string()];
        let merges = |on: TrainOn| on.train(&config, &mut Silent).unwrap().merges;

        let expected = merges(TrainOn::Files(&both));
        let fed = Fed::count_plain(&mut Batches(texts.chunks(1_000)), &config, &mut Silent).unwrap();
        assert_eq!(merges(TrainOn::Fed { fed, inputs: &inputs }), expected, "fed texts");

        let of_files = CountOf::Files { paths: std::slice::from_ref(&head), byte_range: None }.count(&config, &mut Silent).unwrap();
        let shard = CountOf::Shard { paths: vec![tail.clone()], file_indices: vec![1], byte_range: None, lines_before: 0, languages: None };
        let of_shard = shard.count(&config, &mut Silent).unwrap();
        let parts = [wire(of_files, &config), wire(of_shard, &config)];
        let mut sum = CountSum::default();
        for part in &parts {
            sum.add(part, None).unwrap();
        }
        let on = TrainOn::Sum { sum: &mut sum, languages: None, lang_bytes: None, sharded: None, inputs: &inputs };
        assert_eq!(merges(on), expected, "parts from files and a shard");

        let mut source = Batches(texts[3_000..].chunks(1_000));
        let of_source = CountOf::Source { source: &mut source, languages: None }.count(&config, &mut Silent).unwrap();
        let mut sum = CountSum::default();
        sum.add(&parts[0], None).unwrap();
        sum.add(&wire(of_source, &config), None).unwrap();
        let on = TrainOn::Sum { sum: &mut sum, languages: None, lang_bytes: None, sharded: None, inputs: &inputs };
        assert_eq!(merges(on), expected, "a sum with a part from fed texts");

        std::fs::remove_dir_all(&dir).unwrap();
    }
}
