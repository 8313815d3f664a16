//! Training from files, end to end: language tags (if balancing), counting,
//! then the plain driver or a balancing method. This is the one place that
//! knows both `train` and `balance`; neither knows it.

use crate::clock::{PhaseTime, Stopwatch};
use crate::balance::{self, LangSource, LanguageTable, Tagger};
use crate::error::{Error, Result};
use crate::input::fields::LangField;
use crate::input::{read_chunks, read_range_chunks, total_size, Chunk, Layout, TextMode};
use crate::count::{CountOutput, WordCounts};
use crate::model::Model;
use crate::observe::{CountProgress, FileProgress, Observer};
use crate::source::{FedFiles, Source};
use crate::train::checkpoint::CheckpointRecord;
use crate::train::counts_file::{self, CountsHeader};
use crate::train::{count_words, count_words_output, train_from_counts, CountMode, TrainConfig, ValidConfig, POLL_SECONDS};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Hands chunks to the sink and adds to the UTF-8 bytes of each language's
/// texts (what parity measures against); returns the number of records it
/// skipped itself (`on_bad_record="skip"` on Arrow data), counted with the
/// counters' own in `bad_records`.
pub(crate) type Feed<'f> = dyn FnOnce(&mut dyn FnMut(Chunk) -> Result<()>, &mut dyn Observer, &mut [u64]) -> Result<u64> + 'f;

/// Trains on files. A run that writes checkpoints saves its counts beside
/// them once counting finishes (`counts_file::beside`; the checkpoints name
/// the file), and resuming such a checkpoint trains on those counts without
/// counting again.
pub fn train_files(paths: &[PathBuf], config: &ValidConfig, observer: &mut dyn Observer) -> Result<Model> {
    if paths.is_empty() {
        return Err(Error::input("no input files given"));
    }
    total_size(paths)?;
    let record = config.resume_from.as_ref().map(CheckpointRecord::of).transpose()?.flatten();
    if let Some(record) = &record {
        record.check_inputs(paths)?;
    }
    let inputs = serde_json::json!(paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>());
    if let Some((header, counts)) = counts_to_reuse(paths, config, record.as_ref())? {
        let count = PhaseTime::wall(header.count_seconds, crate::util::threads_or_default(config.threads));
        return train_on_counts(counts, None, &[], config, observer, inputs, count);
    }
    let (counted, languages) = count_files(paths, config, observer)?;
    if let Some((checkpoint, _)) = &config.checkpoint {
        save_counts_beside(checkpoint, paths, config, &counted)?;
    }
    train_counted(counted, config, languages.as_ref(), inputs, observer)
}

/// Saves a checkpointed run's counts beside its checkpoint, where they can
/// be (plain counts held in one table); else removes a counts file left
/// there by another run, so that no checkpoint names counts not its own.
/// Counts that cannot be written (a full disk) do not stop the run: its
/// checkpoints then name none, and resuming counts again.
fn save_counts_beside(checkpoint: &Path, paths: &[PathBuf], config: &ValidConfig, counted: &Counted) -> Result<()> {
    let file = counts_file::beside(checkpoint);
    let saved = match &counted.counts {
        CountOutput::Table(table) if counts_file::check_countable(config, "").is_ok() => {
            CountsHeader::new(config, paths, counted.count.seconds).and_then(|header| counts_file::save(&file, &header, table)).is_ok()
        }
        _ => false,
    };
    if saved {
        return Ok(());
    }
    match std::fs::remove_file(&file) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(Error::output(format!("cannot remove the counts file {} of another run: {e}", file.display())))
        }
        _ => Ok(()),
    }
}

/// The counts a resumed checkpoint's run saved (its record names the
/// file): counted from the same files, unchanged, with the same settings
/// (else refused: a stale counts file is never trained on). `None` where
/// the record names none, or the file is gone (counted again).
fn counts_to_reuse(paths: &[PathBuf], config: &ValidConfig, record: Option<&CheckpointRecord>) -> Result<Option<(CountsHeader, WordCounts)>> {
    let Some(file) = record.and_then(|r| r.counts.as_ref()).map(PathBuf::from) else { return Ok(None) };
    if !file.exists() || counts_file::check_countable(config, "").is_err() {
        return Ok(None);
    }
    let header = counts_file::read_header(&file)?;
    if let Some(why) = header.changed_inputs(paths)? {
        return Err(Error::input(format!(
            "the counts file {} of the resumed checkpoint's run is not this run's: {why}; delete it to count again",
            file.display()
        )));
    }
    header.check_settings(&file, config)?;
    counts_file::load(&file).map(Some)
}

/// Counts files into a counts file (`counts_file`): what `bpeforge count`
/// writes, for `train_counts_file`.
pub fn count_to_file(paths: &[PathBuf], config: &ValidConfig, observer: &mut dyn Observer, output: &Path) -> Result<CountsHeader> {
    counts_file::check_countable(config, "count")?;
    if paths.is_empty() {
        return Err(Error::input("no input files given"));
    }
    let (counted, _) = count_files(paths, config, observer)?;
    let header = CountsHeader::new(config, paths, counted.count.seconds)?;
    let table = counted.counts.into_table(None)?;
    if table.is_empty() {
        return Err(Error::training(format!("no text to count: the input ({}) has no pre-tokens; is it empty?", paths[0].display())));
    }
    observer.counted(&table.stats, table.len(), &counted.count);
    counts_file::save(output, &header, &table)?;
    Ok(header)
}

/// Trains on a counts file (`count_to_file`, or the one beside a
/// checkpoint): the run's counting settings must be the file's.
pub fn train_counts_file(path: &Path, config: &ValidConfig, observer: &mut dyn Observer) -> Result<Model> {
    counts_file::check_countable(config, "counts")?;
    let header = counts_file::read_header(path)?;
    header.check_settings(path, config)?;
    let (header, counts) = counts_file::load(path)?;
    let inputs = serde_json::json!(header.inputs.iter().map(|i| i.path.clone()).collect::<Vec<_>>());
    let count = PhaseTime::wall(header.count_seconds, crate::util::threads_or_default(config.threads));
    train_on_counts(counts, None, &[], config, observer, inputs, count)
}

/// Counts files: the language table (when balancing) and the counts.
fn count_files(paths: &[PathBuf], config: &ValidConfig, observer: &mut dyn Observer) -> Result<(Counted, Option<LanguageTable>)> {
    let total = total_size(paths)?;
    // A decompressor's window is outside the tables' estimates: counting leaves it room.
    let _decoder = crate::memory::budget::reserve(crate::input::decoder_bytes(paths));
    let budget = config.memory_budget();
    let room = budget.saturating_sub(crate::memory::budget::process_rss() + crate::memory::budget::reserved());
    crate::memory::disk::check_spill_room(crate::input::text_bytes_estimate(paths), room, budget)?;
    let raw = Arc::new(AtomicU64::new(0));
    let watch = Stopwatch::start(crate::util::threads_or_default(config.threads));
    let start = watch.instant();
    let (languages, lang_bytes) = match language_table(paths, config)? {
        Some((table, bytes)) => (Some(table), bytes),
        None => (None, Vec::new()),
    };
    let text_mode = reading_mode(config, languages.as_ref());
    let text_mode = &text_mode;
    let languages_ref = &languages;
    let feed = move |sink: &mut dyn FnMut(Chunk) -> Result<()>, observer: &mut dyn Observer, lang_bytes: &mut [u64]| {
        let mut pacer = CountPacer::new(start);
        for (i, path) in paths.iter().enumerate() {
            let mut tagger = match (&config.balance, languages_ref) {
                (Some(b), Some(table)) => Some(Tagger::new(&b.source, i, table)?),
                _ => None,
            };
            let file = FileStart::new(path, i, paths.len(), raw.load(Ordering::Relaxed), start.elapsed().as_secs_f64());
            // Each file's start is reported at once, so that even a run too
            // short for a live update tells the observer the totals.
            let (done, t) = (raw.load(Ordering::Relaxed), start.elapsed().as_secs_f64());
            observer.counting(&CountProgress {
                raw_bytes_done: done,
                raw_bytes_total: Some(total),
                elapsed: t,
                file: Some(file.progress(done, t)),
            });
            read_chunks(std::slice::from_ref(path), text_mode, raw.clone(), &mut |mut chunk| {
                if let Some(t) = tagger.as_mut() {
                    t.tag(&mut chunk)?;
                }
                pacer.poll(observer, |t| {
                    let done = raw.load(Ordering::Relaxed);
                    CountProgress { raw_bytes_done: done, raw_bytes_total: Some(total), elapsed: t, file: Some(file.progress(done, t)) }
                })?;
                sink(chunk)
            })?;
            if let Some(t) = tagger {
                for (total, b) in lang_bytes.iter_mut().zip(t.finish()?) {
                    *total += b;
                }
            }
        }
        Ok(0)
    };
    let counted = count_fed(config, languages_ref.as_ref(), lang_bytes, watch, observer, CountScope::Run, Box::new(feed))?;
    Ok((counted, languages))
}

/// The run's language table, when it balances languages, and the UTF-8
/// bytes of each language's texts known before counting: with `lang_field`
/// a first pass over the records reads both (the weights need every
/// language's share before counting); language files and per-file tags
/// give the table, and their bytes are added while counting.
pub fn language_table(paths: &[PathBuf], config: &ValidConfig) -> Result<Option<(LanguageTable, Vec<u64>)>> {
    let Some(b) = &config.balance else { return Ok(None) };
    match (&b.source, &config.text_mode) {
        (LangSource::Field(_), TextMode::Fields(fields)) => LanguageTable::from_records(paths, fields, b.temperature).map(Some),
        _ => {
            let table = LanguageTable::build(paths, b)?;
            let n = table.names.len();
            Ok(Some((table, vec![0; n])))
        }
    }
}

/// The text mode to read files with: with `lang_field`, records name their
/// language by the ids of `languages` (the same ids in every shard).
pub fn reading_mode(config: &TrainConfig, languages: Option<&LanguageTable>) -> TextMode {
    let mut mode = config.text_mode.clone();
    if let (TextMode::Fields(fields), Some(table)) = (&mut mode, languages) {
        if let Some(LangField { ids, .. }) = fields.lang.as_mut() {
            *ids = Arc::new(table.ids.clone());
        }
    }
    mode
}

/// Paces a counting feed: every `POLL_SECONDS` it stops the run if the
/// observer asks to, else reports where counting is.
pub(crate) struct CountPacer {
    start: Instant,
    last: f64,
}

impl CountPacer {
    pub(crate) fn new(start: Instant) -> Self {
        CountPacer { start, last: 0.0 }
    }

    /// Reports `progress(elapsed seconds)` when a poll interval has passed.
    pub(crate) fn poll(&mut self, observer: &mut dyn Observer, progress: impl FnOnce(f64) -> CountProgress) -> Result<()> {
        let t = self.start.elapsed().as_secs_f64();
        if t - self.last < POLL_SECONDS {
            return Ok(());
        }
        self.last = t;
        if observer.should_stop() {
            return Err(Error::interrupted());
        }
        observer.counting(&progress(t));
        Ok(())
    }
}

/// The counts of a feed, with what balancing needs of them.
pub struct Counted {
    counts: CountOutput,
    lang_bytes: Vec<u64>,
    count: PhaseTime,
}

impl Counted {
    /// The counts and the UTF-8 bytes of each language's texts. A run's
    /// counts are a table; a part's that spilled are still its runs, to be
    /// written in the wire form without building the table
    /// (`CountOutput::write_wire`).
    pub fn into_parts(self) -> (CountOutput, Vec<u64>) {
        (self.counts, self.lang_bytes)
    }
}

/// Whose counts a feed's are: a whole run's, or one part of a run's (a
/// shard of a distributed count, summed elsewhere).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountScope {
    Run,
    Part,
}

/// Counts the chunks `feed` hands over (files, or a `Source`'s), balanced
/// by `languages` if given (chunks then carry a language per text, or the
/// records name theirs). `lang_bytes` starts at what is known before
/// counting; the feed adds the rest. Training goes on with
/// `train_counted` (callers that hold a lock while feeding, such as
/// Python's, release it for that half).
pub(crate) fn count_fed(
    config: &ValidConfig,
    languages: Option<&LanguageTable>,
    mut lang_bytes: Vec<u64>,
    start: Stopwatch,
    observer: &mut dyn Observer,
    scope: CountScope,
    feed: Box<Feed<'_>>,
) -> Result<Counted> {
    lang_bytes.resize(languages.map_or(0, |t| t.names.len()), 0);
    let mode = count_mode(config, languages);
    // A run's plain counts are its final table: a spilled count may leave
    // out the rarest types as its runs merge (weighted and SuperBPE counts
    // go on, and a part is summed with others first).
    let final_counts = scope == CountScope::Run && matches!(mode, CountMode::Plain) && config.superbpe.is_none();
    let mut skipped = 0;
    let mut counts = count_words_output(config, observer, mode, final_counts, |sink, observer| {
        skipped = feed(sink, observer, &mut lang_bytes)?;
        Ok(())
    })?;
    if scope == CountScope::Run {
        counts = CountOutput::Table(counts.into_table(None)?);
    }
    counts.stats_mut().bad_records += skipped;
    Ok(Counted { counts, lang_bytes, count: start.elapsed() })
}

/// Counts the chunks of `source` (see `count_fed`): the calling thread
/// pulls them while the workers count the chunks before, adding each text's
/// UTF-8 bytes to its language (`Chunk::langs`) and reporting progress.
pub fn count_source(
    config: &ValidConfig,
    languages: Option<&LanguageTable>,
    scope: CountScope,
    source: &mut dyn Source,
    observer: &mut dyn Observer,
) -> Result<Counted> {
    let watch = Stopwatch::start(crate::util::threads_or_default(config.threads));
    let start = watch.instant();
    let mut files = FedFiles::new(source.files());
    let feed = |sink: &mut dyn FnMut(Chunk) -> Result<()>, observer: &mut dyn Observer, lang_bytes: &mut [u64]| {
        let mut read = 0u64;
        let mut pacer = CountPacer::new(start);
        while let Some(chunk) = source.next_chunk(observer)? {
            read += chunk.data.len() as u64;
            files.add(&chunk.source, chunk.data.len() as u64);
            add_language_bytes(&chunk, lang_bytes)?;
            if matches!(&chunk.layout, Layout::Ends(ends) if !ends.is_empty()) {
                sink(chunk)?;
            }
            pacer.poll(observer, |t| files.progress(read, t))?;
        }
        Ok(source.skipped())
    };
    count_fed(config, languages, Vec::new(), watch, observer, scope, Box::new(feed))
}

/// The language table of a run fed by the caller: `languages` (names in
/// id order and their row counts, read by the caller in a first pass over
/// the language column) for `lang_field`, else none.
pub fn fed_languages(config: &ValidConfig, languages: Option<(Vec<String>, Vec<u64>)>) -> Result<Option<LanguageTable>> {
    match (&config.balance, languages) {
        (Some(b), Some((names, lines))) if matches!(b.source, LangSource::Field(_)) => {
            Ok(Some(LanguageTable::from_lines(names, lines, b.temperature)?))
        }
        (None, None) => Ok(None),
        _ => Err(Error::parameter("Arrow input balances languages by a column only (lang_field)")),
    }
}

/// Adds the UTF-8 bytes of each text of `chunk` to its language's.
fn add_language_bytes(chunk: &Chunk, lang_bytes: &mut [u64]) -> Result<()> {
    let Layout::Ends(ends) = &chunk.layout else { return Ok(()) };
    let mut begin = 0;
    for (&end, &tag) in ends.iter().zip(&chunk.langs) {
        let slot = lang_bytes.get_mut(tag as usize).ok_or_else(|| Error::input(format!("{}: language id {tag} out of range", chunk.source)))?;
        *slot += (end - begin) as u64;
        begin = end;
    }
    Ok(())
}

/// Counts files, or the byte range `start..end` of one plain file, as one
/// part of a distributed count (summed elsewhere, so never cut to a budget).
pub fn count_part(paths: &[PathBuf], byte_range: Option<(u64, u64)>, config: &ValidConfig, observer: &mut dyn Observer) -> Result<CountOutput> {
    let raw = Arc::new(AtomicU64::new(0));
    let counts = count_words(config, observer, |sink, observer| {
        if observer.should_stop() {
            return Err(Error::interrupted());
        }
        match byte_range {
            Some((start, end)) => {
                if paths.len() != 1 {
                    return Err(Error::parameter("byte_range needs exactly one input file"));
                }
                read_range_chunks(&paths[0], &config.text_mode, start, end, raw.clone(), sink)
            }
            None => {
                total_size(paths)?;
                read_chunks(paths, &config.text_mode, raw.clone(), sink)
            }
        }
    })?;
    Ok(CountOutput::Table(counts))
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

/// The merge half of a run, after `count_fed`: the plain driver or a balancing method.
pub fn train_counted(
    counted: Counted,
    config: &ValidConfig,
    languages: Option<&LanguageTable>,
    inputs: serde_json::Value,
    observer: &mut dyn Observer,
) -> Result<Model> {
    let Counted { counts, lang_bytes, count } = counted;
    train_on_counts(counts.into_table(None)?, languages, &lang_bytes, config, observer, inputs, count)
}

/// The step after counting (`count_mode`'s counts, from here or from the
/// shards of a distributed run): the plain driver, or the balancing method
/// with the language table and each language's bytes.
pub fn train_on_counts(
    counts: WordCounts,
    languages: Option<&LanguageTable>,
    lang_bytes: &[u64],
    config: &ValidConfig,
    observer: &mut dyn Observer,
    inputs: serde_json::Value,
    count: PhaseTime,
) -> Result<Model> {
    match (languages, &config.balance) {
        (Some(table), Some(b)) => balance::train_balanced(counts, table, lang_bytes, b, config, observer, inputs, count),
        _ => train_from_counts(counts, config, observer, inputs, count),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::Layout;
    use crate::observe::Silent;

    fn snapshot(c: &WordCounts) -> std::collections::HashMap<Vec<u8>, u64> {
        let mut m = std::collections::HashMap::new();
        c.for_each(|k, v| {
            m.insert(k.to_vec(), v);
        });
        m
    }

    /// Chunks of `texts` as a feed hands them over (Arrow batches, Python
    /// iterators): explicit ends, with `skipped` records it left out.
    fn feed_of(texts: &[String], skipped: u64) -> Box<Feed<'_>> {
        Box::new(move |sink, _, _| {
            for batch in texts.chunks(5_000) {
                let (mut data, mut ends) = (Vec::new(), Vec::new());
                for t in batch {
                    data.extend_from_slice(t.as_bytes());
                    ends.push(data.len());
                }
                sink(Chunk { data, layout: Layout::Ends(ends), source: Arc::from("<batches>"), first_line: 1, langs: Vec::new() })?;
            }
            Ok(skipped)
        })
    }

    /// Texts from a `Source`, a chunk at a time, with records it skipped.
    struct Batches<'t> {
        texts: std::slice::Chunks<'t, String>,
        skipped: u64,
    }

    impl Source for Batches<'_> {
        fn next_chunk(&mut self, _: &mut dyn Observer) -> Result<Option<Chunk>> {
            Ok(self.texts.next().map(|batch| {
                let (mut data, mut ends) = (Vec::new(), Vec::new());
                for t in batch {
                    data.extend_from_slice(t.as_bytes());
                    ends.push(data.len());
                }
                Chunk { data, layout: Layout::Ends(ends), source: Arc::from("<batches>"), first_line: 1, langs: Vec::new() }
            }))
        }
        fn skipped(&self) -> u64 {
            self.skipped
        }
    }

    /// A source's chunks are counted as the same chunks fed directly, and
    /// the records it skipped are counted as bad.
    #[test]
    fn a_source_counts_as_its_chunks_fed() {
        let texts: Vec<String> = (0..20_000).map(|i| format!("w{} x{} shared", i % 1013, i % 97)).collect();
        let mut c = TrainConfig::new(1_000, crate::model::Scheme::Bytes, crate::pretok::PreTokenizerSpec::GPT2);
        c.threads = 2;
        let config = c.validate().unwrap();
        let fed = count_fed(&config, None, Vec::new(), Stopwatch::start(2), &mut Silent, CountScope::Run, feed_of(&texts, 3)).unwrap();
        let mut source = Batches { texts: texts.chunks(5_000), skipped: 3 };
        let pulled = count_source(&config, None, CountScope::Run, &mut source, &mut Silent).unwrap();
        let (CountOutput::Table(a), CountOutput::Table(b)) = (fed.into_parts().0, pulled.into_parts().0) else { panic!("a run's count is not a table") };
        assert!(snapshot(&a) == snapshot(&b), "the source's counts differ from its chunks'");
        assert_eq!(a.stats, b.stats);
        assert_eq!(b.stats.bad_records, 3);
    }

    /// A part's count (a Ray task's Arrow shard) that spilled stays as its
    /// runs, whose wire form reads back as the count in memory; a
    /// run's count is a table. The records the feed skipped are counted in
    /// both.
    #[test]
    fn a_fed_part_that_spilled_is_left_as_its_runs() {
        let texts: Vec<String> = (0..200_000).map(|i| format!("w{i} x{} shared", i % 97)).collect();
        let config = |max_memory| {
            let mut c = TrainConfig::new(1_000, crate::model::Scheme::Bytes, crate::pretok::PreTokenizerSpec::GPT2);
            (c.threads, c.max_memory) = (1, max_memory);
            c.validate().unwrap()
        };
        let count = |config: &ValidConfig, scope| {
            count_fed(config, None, Vec::new(), Stopwatch::start(1), &mut Silent, scope, feed_of(&texts, 3)).unwrap().into_parts().0
        };
        let in_memory = count(&config(None), CountScope::Run);
        let CountOutput::Table(table) = &in_memory else { panic!("a run's count is not a table") };
        assert_eq!(table.stats.bad_records, 3);
        let expected = snapshot(table);
        // The budget leaves the count about 40 MiB beside this process; its
        // input buffers take 32 of them, so its 200,000 types spill.
        let tight = config(Some(crate::memory::budget::process_rss() + (40 << 20)));
        let part = count(&tight, CountScope::Part);
        assert!(matches!(part, CountOutput::Runs(_)), "the part did not spill");
        let mut wire = vec![0; part.wire_len().unwrap()];
        part.write_wire(&mut wire).unwrap();
        let back = WordCounts::from_bytes(&wire).unwrap();
        assert!(snapshot(&back) == expected, "the runs' wire form is not the counts in memory");
        assert_eq!(back.stats, table.stats);
    }
}
