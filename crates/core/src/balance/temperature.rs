//! Temperature balancing: each language's share of lines p_l becomes
//! q_l = p_l^(1/T) / sum_k p_k^(1/T) by weighting its word counts, as
//! temperature sampling does in multilingual MT and LM data mixing, without
//! dropping any line. Also the per-line language tags (`Tagger`) that both
//! balancing methods count with.

use crate::count::WordCounts;
use crate::error::{Error, Result};
use crate::input::fields::{bad_record, Fields, OnBadRecord};
use crate::input::{read_chunks, Chunk, TextMode};
use crate::model::Model;
use crate::observe::Observer;
use crate::train::{train_derived, LangSource, LanguageBalance, TrainConfig};
use std::io::Read;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// Weights are scaled integers: counts stay exact u64 sums; the final
/// division rounds to nearest and never goes below 1 (no word type lost).
pub const WEIGHT_SCALE: u64 = 1 << 16;
/// Largest per-language weight (keeps scaled u64 counts far from overflow).
pub const MAX_LANGUAGE_WEIGHT: f64 = 1e4;

/// Languages, their line counts and counting weights.
#[derive(Debug, Clone, Default)]
pub struct LanguageTable {
    pub names: Vec<String>,
    pub ids: std::collections::HashMap<String, u16>,
    pub lines: Vec<u64>,
    pub weights: Vec<u64>,
    /// Held-apart lines (parity balancing): a text whose `held_hash` is
    /// below this is tagged `id + names.len()` instead of `id`. 0: none.
    pub hold_below: u64,
}

/// The hash that decides whether a text is held apart: FNV-1a over its
/// bytes, then a 64-bit finaliser (so nearby texts spread evenly). The same
/// text is always on the same side, on every platform and in every shard.
pub fn held_hash(text: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in text {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// `hold_below` for holding apart `share` of the texts (0 when there are
/// too many languages to give each a second tag).
pub fn hold_threshold(share: f64, languages: usize) -> u64 {
    if share <= 0.0 || languages * 2 > u16::MAX as usize + 1 {
        return 0;
    }
    (share.min(1.0) * u64::MAX as f64) as u64
}

impl LanguageTable {
    fn id(&mut self, tag: &str, where_: impl Fn() -> String) -> Result<u16> {
        if let Some(&id) = self.ids.get(tag) {
            return Ok(id);
        }
        if tag.is_empty() {
            return Err(Error::input(format!("{}: empty language tag", where_())));
        }
        if self.names.len() >= u16::MAX as usize {
            return Err(Error::input(format!("{}: more than 65535 distinct language tags", where_())));
        }
        let id = self.names.len() as u16;
        self.names.push(tag.to_string());
        self.ids.insert(tag.to_string(), id);
        self.lines.push(0);
        Ok(id)
    }

    /// Counts lines per language and derives the weights.
    pub fn build(paths: &[PathBuf], balance: &LanguageBalance) -> Result<Self> {
        use std::io::BufRead;
        let mut table = LanguageTable::default();
        match &balance.source {
            LangSource::Files(langs) => {
                if langs.len() != paths.len() {
                    return Err(Error::parameter(format!(
                        "langs: {} language file(s) for {} input file(s); give one per input file",
                        langs.len(),
                        paths.len()
                    )));
                }
                for path in langs {
                    let reader = std::io::BufReader::new(crate::input::open(path, Arc::new(AtomicU64::new(0)))?);
                    for (n, line) in reader.lines().enumerate() {
                        let line = line.map_err(|e| Error::io_read(path, &e))?;
                        let tag = line.trim();
                        let id = table.id(tag, || format!("{}, line {}", path.display(), n + 1))?;
                        table.lines[id as usize] += 1;
                    }
                }
            }
            LangSource::PerFile(tags) => {
                if tags.len() != paths.len() {
                    return Err(Error::parameter(format!(
                        "file_languages: {} tag(s) for {} input file(s); give one per input file",
                        tags.len(),
                        paths.len()
                    )));
                }
                for (path, tag) in paths.iter().zip(tags) {
                    let id = table.id(tag, || "file_languages".to_string())?;
                    let mut reader = crate::input::open(path, Arc::new(AtomicU64::new(0)))?;
                    let mut buf = vec![0u8; 1 << 20];
                    let mut last = b'\n';
                    let mut n = 0u64;
                    loop {
                        let k = reader.read(&mut buf).map_err(|e| Error::io_read(path, &e))?;
                        if k == 0 {
                            break;
                        }
                        n += memchr::memchr_iter(b'\n', &buf[..k]).count() as u64;
                        last = buf[k - 1];
                    }
                    if last != b'\n' {
                        n += 1;
                    }
                    table.lines[id as usize] += n;
                }
            }
            LangSource::Field(field) => {
                return Err(Error::parameter(format!(
                    "lang_field={field:?}: the languages are a field of each record, which needs text_field (JSON lines)"
                )));
            }
        }
        table.weigh(balance.temperature)?;
        table.hold_apart(balance);
        Ok(table)
    }

    /// Sets `hold_below` for parity balancing with held-apart lines, where
    /// the `Tagger` tags the lines (language files, per-file tags); records
    /// that name their own language (`lang_field`) and Arrow columns are
    /// tagged while counting and hold nothing apart.
    pub fn hold_apart(&mut self, balance: &LanguageBalance) {
        self.hold_below = match (&balance.parity, &balance.source) {
            (Some(p), LangSource::Files(_) | LangSource::PerFile(_)) => hold_threshold(p.held_apart, self.names.len()),
            _ => 0,
        };
    }

    /// The table for languages counted elsewhere (e.g. an Arrow column):
    /// `names` in first-seen order, `lines[i]` texts of language `i`.
    pub fn from_lines(names: Vec<String>, lines: Vec<u64>, temperature: f64) -> Result<Self> {
        if names.len() != lines.len() {
            return Err(Error::parameter(format!("{} language name(s) for {} line count(s)", names.len(), lines.len())));
        }
        let mut table = LanguageTable::default();
        for (name, n) in names.iter().zip(lines) {
            let id = table.id(name, || "languages".to_string())?;
            if id as usize + 1 != table.names.len() {
                return Err(Error::parameter(format!("language {name:?} is listed twice")));
            }
            table.lines[id as usize] = n;
        }
        table.weigh(temperature)?;
        Ok(table)
    }

    /// The languages of JSON records (`fields.lang`), read before counting
    /// (the weights need every language's share): the table, in first-seen
    /// order as a side file gives it, and the UTF-8 bytes of each language's
    /// texts. Bad records are errors or skipped exactly as counting treats
    /// them.
    pub fn from_records(paths: &[PathBuf], fields: &Fields, temperature: f64) -> Result<(Self, Vec<u64>)> {
        let mode = TextMode::Fields(fields.clone());
        let mut table = LanguageTable::default();
        let mut bytes: Vec<u64> = Vec::new();
        read_chunks(paths, &mode, Arc::new(AtomicU64::new(0)), &mut |chunk| {
            let mut texts = Vec::new();
            chunk.for_each_text(&mut |line, offset| {
                texts.clear();
                let found = fields.texts(line, &mut texts);
                let tag = match found.and_then(|()| if texts.is_empty() { Ok(None) } else { fields.language_tag(line) }) {
                    Ok(Some(tag)) => tag,
                    Ok(None) => return Ok(()),
                    Err(_) if fields.on_bad_record == OnBadRecord::Skip => return Ok(()),
                    Err(why) => return Err(bad_record(&chunk.source, chunk.line_of(offset), &why)),
                };
                let id = table.id(tag.trim(), || format!("{}, line {}", chunk.source, chunk.line_of(offset)))? as usize;
                table.lines[id] += 1;
                bytes.resize(table.names.len(), 0);
                bytes[id] += texts.iter().map(|t| t.len() as u64).sum::<u64>();
                Ok(())
            })
        })?;
        table.weigh(temperature)?;
        Ok((table, bytes))
    }

    /// Derives the weights from the line counts.
    fn weigh(&mut self, t: f64) -> Result<()> {
        let total: u64 = self.lines.iter().sum();
        if total == 0 {
            return Err(Error::training("language balancing: no text has a language (the language files or fields are empty)"));
        }
        let p: Vec<f64> = self.lines.iter().map(|&l| l as f64 / total as f64).collect();
        let z: f64 = p.iter().map(|&x| x.powf(1.0 / t)).sum();
        self.weights = p
            .iter()
            .map(|&x| {
                let q = x.powf(1.0 / t) / z;
                ((q / x) * WEIGHT_SCALE as f64).round().max(1.0) as u64
            })
            .collect();
        Ok(())
    }

    fn metadata(&self, temperature: f64) -> serde_json::Value {
        let total: u64 = self.lines.iter().sum();
        let mut langs = serde_json::Map::new();
        for (i, name) in self.names.iter().enumerate() {
            let p = self.lines[i] as f64 / total as f64;
            let w = self.weights[i] as f64 / WEIGHT_SCALE as f64;
            langs.insert(
                name.clone(),
                serde_json::json!({"lines": self.lines[i], "share": (p * 1e6).round() / 1e6,
                                   "balanced_share": (p * w * 1e6).round() / 1e6, "weight": (w * 1e4).round() / 1e4}),
            );
        }
        serde_json::json!({"method": "temperature", "temperature": temperature, "languages": langs})
    }
}

/// Attaches each line's language id to chunks of input file `i`.
pub(crate) struct Tagger<'a> {
    fixed: Option<u16>,
    reader: Option<(std::io::BufReader<Box<dyn std::io::Read + Send>>, &'a PathBuf)>,
    table: &'a LanguageTable,
    line: u64,
    /// UTF-8 bytes of the texts seen, per language id.
    bytes: Vec<u64>,
}

impl<'a> Tagger<'a> {
    pub(crate) fn new(source: &'a LangSource, i: usize, table: &'a LanguageTable) -> Result<Self> {
        Ok(match source {
            // Each record names its own language (read while counting).
            LangSource::Field(_) => Tagger { fixed: None, reader: None, table, line: 0, bytes: vec![0; table.names.len()] },
            LangSource::PerFile(tags) => Tagger {
                fixed: table.ids.get(&tags[i]).copied(),
                reader: None,
                table,
                line: 0,
                bytes: vec![0; table.names.len()],
            },
            LangSource::Files(files) => {
                let r = crate::input::open(&files[i], Arc::new(AtomicU64::new(0)))?;
                Tagger {
                    fixed: None,
                    reader: Some((std::io::BufReader::new(r), &files[i])),
                    table,
                    line: 0,
                    bytes: vec![0; table.names.len()],
                }
            }
        })
    }

    pub(crate) fn tag(&mut self, chunk: &mut Chunk) -> Result<()> {
        use std::io::BufRead;
        let mut lengths = Vec::new();
        let mut held = Vec::new();
        let hold_below = self.table.hold_below;
        chunk.for_each_text::<()>(&mut |text, _| {
            lengths.push(text.len() as u64);
            if hold_below > 0 {
                held.push(held_hash(text) < hold_below);
            }
            Ok(())
        })
        .ok();
        let n = lengths.len();
        if let Some(id) = self.fixed {
            chunk.langs = vec![id; n];
            self.bytes[id as usize] += lengths.iter().sum::<u64>();
            self.hold(&mut chunk.langs, &held);
            return Ok(());
        }
        let Some((reader, path)) = self.reader.as_mut() else { return Ok(()) };
        let mut tags = Vec::with_capacity(n);
        let mut buf = String::new();
        for _ in 0..n {
            buf.clear();
            self.line += 1;
            let k = reader.read_line(&mut buf).map_err(|e| Error::io_read(path, &e))?;
            if k == 0 {
                return Err(Error::input(format!(
                    "{} has only {} line(s) but {} has more lines: the language file must have one tag per input line",
                    path.display(),
                    self.line - 1,
                    chunk.source
                )));
            }
            let tag = buf.trim();
            let id = self.table.ids.get(tag).copied().ok_or_else(|| {
                Error::input(format!("{}, line {}: language tag {tag:?} changed while reading", path.display(), self.line))
            })?;
            tags.push(id);
            self.bytes[id as usize] += lengths[tags.len() - 1];
        }
        self.hold(&mut tags, &held);
        chunk.langs = tags;
        Ok(())
    }

    /// Gives held-apart texts their language's second tag (`id + languages`).
    fn hold(&self, tags: &mut [u16], held: &[bool]) {
        let n = self.table.names.len() as u16;
        for (tag, &h) in tags.iter_mut().zip(held) {
            if h {
                *tag += n;
            }
        }
    }

    /// Skips the tags of the first `lines` lines of the input file: a shard
    /// that starts inside its file (`crate::shard`).
    pub(crate) fn skip_lines(&mut self, lines: u64) -> Result<()> {
        use std::io::BufRead;
        let Some((reader, path)) = self.reader.as_mut() else { return Ok(()) };
        let mut buf = Vec::new();
        for _ in 0..lines {
            buf.clear();
            if reader.read_until(b'\n', &mut buf).map_err(|e| Error::io_read(path, &e))? == 0 {
                return Err(Error::input(format!(
                    "{} has only {} line(s) but its input file has more lines: the language file must have one tag per input line",
                    path.display(),
                    self.line
                )));
            }
            self.line += 1;
        }
        Ok(())
    }

    /// The bytes per language so far, without `finish`'s check for extra
    /// lines (a shard that ends before its file does).
    pub(crate) fn into_bytes(self) -> Vec<u64> {
        self.bytes
    }

    /// Checks the language file has no extra lines; returns the bytes per language.
    pub(crate) fn finish(self) -> Result<Vec<u64>> {
        use std::io::BufRead;
        if let Some((mut reader, path)) = self.reader {
            let mut buf = String::new();
            while reader.read_line(&mut buf).map_err(|e| Error::io_read(path, &e))? > 0 {
                if !buf.trim().is_empty() {
                    return Err(Error::input(format!(
                        "{} has more lines ({}+) than its input file: the language file must have one tag per input line",
                        path.display(),
                        self.line + 1
                    )));
                }
                buf.clear();
            }
        }
        Ok(self.bytes)
    }
}


/// Temperature-balanced training: the weighted counts (scaled by
/// `WEIGHT_SCALE`) rescaled to integers, the driver, and the languages'
/// shares and weights in the model's metadata.
pub(crate) fn train_weighted(
    mut counts: WordCounts,
    table: &LanguageTable,
    temperature: f64,
    config: &TrainConfig,
    observer: &mut dyn Observer,
    inputs: serde_json::Value,
    count: crate::clock::PhaseTime,
) -> Result<Model> {
    counts.rescale(WEIGHT_SCALE);
    let mut model = train_derived(counts, config, observer, inputs, count)?;
    if let Some(obj) = model.metadata.as_object_mut() {
        obj.insert("language_balance".into(), table.metadata(temperature));
    }
    Ok(model)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::Layout;

    fn write(dir: &std::path::Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn balance(source: LangSource, temperature: f64) -> LanguageBalance {
        LanguageBalance { source, temperature, parity: None }
    }

    #[test]
    fn lines_are_counted_per_language_and_temperature_flattens_the_shares() {
        let dir = tempfile::tempdir().unwrap();
        let big = write(dir.path(), "big.txt", &"a\n".repeat(90));
        let small = write(dir.path(), "small.txt", &"b\n".repeat(10));
        let paths = vec![big, small];
        let tags = LangSource::PerFile(vec!["en".into(), "xx".into()]);
        let t1 = LanguageTable::build(&paths, &balance(tags.clone(), 1.0)).unwrap();
        assert_eq!(t1.lines, vec![90, 10]);
        assert_eq!(t1.weights, vec![WEIGHT_SCALE, WEIGHT_SCALE]);
        let t3 = LanguageTable::build(&paths, &balance(tags, 3.0)).unwrap();
        assert!(t3.weights[1] > WEIGHT_SCALE && t3.weights[0] < WEIGHT_SCALE, "{:?}", t3.weights);
        // Balanced shares: p^(1/3) normalised.
        let q_small = 0.1f64.powf(1.0 / 3.0) / (0.9f64.powf(1.0 / 3.0) + 0.1f64.powf(1.0 / 3.0));
        let got = 10.0 * t3.weights[1] as f64 / (90.0 * t3.weights[0] as f64 + 10.0 * t3.weights[1] as f64);
        assert!((got - q_small).abs() < 1e-3, "{got} vs {q_small}");
    }

    #[test]
    fn a_tag_per_input_file_must_match_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(dir.path(), "a.txt", "x\n");
        let err = LanguageTable::build(&[a], &balance(LangSource::PerFile(vec![]), 1.0)).unwrap_err();
        assert!(err.message().contains("file_languages"), "{}", err.message());
    }

    #[test]
    fn language_files_need_non_empty_tags_and_one_per_line() {
        let dir = tempfile::tempdir().unwrap();
        let text = write(dir.path(), "t.txt", "one\ntwo\nthree\n");
        let empty_tag = write(dir.path(), "l1.txt", "en\n\nde\n");
        let err = LanguageTable::build(&[text.clone()], &balance(LangSource::Files(vec![empty_tag]), 1.0)).unwrap_err();
        assert!(err.message().contains("line 2: empty language tag"), "{}", err.message());

        let short = write(dir.path(), "l2.txt", "en\nde\n");
        let source = LangSource::Files(vec![short]);
        let table = LanguageTable::build(&[text.clone()], &balance(source.clone(), 1.0)).unwrap();
        let mut tagger = Tagger::new(&source, 0, &table).unwrap();
        let mut chunk = Chunk {
            data: b"one\ntwo\nthree\n".to_vec(),
            layout: Layout::Lines,
            source: Arc::from("t.txt"),
            first_line: 1,
            langs: Vec::new(),
        };
        let err = tagger.tag(&mut chunk).unwrap_err();
        assert!(err.message().contains("has only 2 line(s)"), "{}", err.message());
    }

    #[test]
    fn records_name_their_languages_in_first_seen_order() {
        use crate::input::fields::{FieldSpec, LangField};
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "r.jsonl",
            "{\"text\": \"aa\", \"l\": \"de\"}\n\n{\"text\": \"b\\u00e9\", \"l\": \" en \"}\n{\"text\": \"c\"}\n{\"text\": \"dd\", \"l\": \"de\"}\n",
        );
        let lang = Some(LangField { path: vec!["l".into()], ids: Default::default() });
        let mut fields = Fields { spec: FieldSpec::Json(vec!["text".into()]), on_bad_record: OnBadRecord::Error, lang };
        let err = LanguageTable::from_records(&[path.clone()], &fields, 1.0).unwrap_err();
        assert!(err.message().contains("r.jsonl, line 4: no field \"l\""), "{}", err.message());
        fields.on_bad_record = OnBadRecord::Skip;
        let (table, bytes) = LanguageTable::from_records(&[path], &fields, 1.0).unwrap();
        assert_eq!(table.names, vec!["de".to_string(), "en".to_string()]);
        assert_eq!(table.lines, vec![2, 1]);
        assert_eq!(bytes, vec![4, 3]); // "é" is two bytes once unescaped
    }

    #[test]
    fn tags_follow_the_lines_and_bytes_are_summed_per_language() {
        let dir = tempfile::tempdir().unwrap();
        let text = write(dir.path(), "t.txt", "aa\nbbb\nc\n");
        let langs = write(dir.path(), "l.txt", "en\nde\nen\n");
        let source = LangSource::Files(vec![langs]);
        let table = LanguageTable::build(&[text], &balance(source.clone(), 1.0)).unwrap();
        let mut tagger = Tagger::new(&source, 0, &table).unwrap();
        let mut chunk =
            Chunk { data: b"aa\nbbb\nc\n".to_vec(), layout: Layout::Lines, source: Arc::from("t.txt"), first_line: 1, langs: Vec::new() };
        tagger.tag(&mut chunk).unwrap();
        let (en, de) = (table.ids["en"], table.ids["de"]);
        assert_eq!(chunk.langs, vec![en, de, en]);
        let bytes = tagger.finish().unwrap();
        assert_eq!((bytes[en as usize], bytes[de as usize]), (3, 3));
    }
}
