//! A counts file: a run's word counts, saved once counting finishes, with
//! what they were counted from (each input file's path, size and
//! modification time) and how (the settings that decide the counts:
//! `counting_key`). Training on it skips counting and gives the merges,
//! counts and ids of a run that counts the same files (SEMANTICS §8): a
//! resumed checkpoint reuses the counts file written beside it, and
//! `bpeforge train --counts` trains any size or merge settings on one.
//!
//! Layout: the magic `BPFCFILE`, the header's length (u64, little-endian),
//! the header (JSON), then the counts in their wire form
//! (`WordCounts::to_bytes`, `BPFCNT02`).

use super::config::TrainConfig;
use super::stats::Settings;
use crate::count::WordCounts;
use crate::error::{Error, Result};
use crate::model::Scheme;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"BPFCFILE";

/// An input file as a counts file names it: a different size or time of
/// last change means other text.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InputStamp {
    /// Absolute, with links resolved.
    pub path: String,
    pub bytes: u64,
    /// Nanoseconds since the Unix epoch.
    pub modified_ns: u128,
}

impl InputStamp {
    pub fn of(path: &Path) -> Result<InputStamp> {
        let (meta, full) = super::checkpoint::resolved(path)?;
        let modified_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        Ok(InputStamp { path: full, bytes: meta.len(), modified_ns })
    }
}

/// What a counts file says about its counts.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CountsHeader {
    pub library: String,
    pub inputs: Vec<InputStamp>,
    /// The settings that decide the counts (`counting_key`).
    pub counting: Map<String, Value>,
    /// The counting options as the run was given them (engine form): what
    /// a run on the file takes for those it is not given.
    pub options: Map<String, Value>,
    pub count_seconds: f64,
}

/// The settings that decide a run's word counts: scheme and its text
/// settings, pre-tokenizer, special tokens, and how texts are read. (The
/// merge phase's options, the vocabulary size among them, do not.)
pub fn counting_key(config: &TrainConfig) -> Map<String, Value> {
    let settings = Settings::of(config);
    let mut key = Map::new();
    key.insert("scheme".into(), json!(settings.scheme));
    key.insert("pretokenizer".into(), json!(settings.pretokenizer));
    key.insert("special_tokens".into(), json!(config.all_special_tokens()));
    key.insert("text_mode".into(), json!(settings.text_mode));
    if let Scheme::Chars { end_of_word_suffix, normalizer, .. } = &config.scheme {
        key.insert("end_of_word_suffix".into(), json!(end_of_word_suffix));
        key.insert("normalizer".into(), json!(normalizer.as_ref().map_or("identity", |n| n.name.as_str())));
    }
    key
}

/// The options (by `TrainOptions` name) that decide the counts.
pub const COUNTING_OPTIONS: &[&str] = &[
    "scheme",
    "pretokenizer",
    "special_tokens",
    "end_of_word_suffix",
    "normalizer",
    "documents",
    "separator",
    "text_field",
    "columns",
    "on_bad_record",
];

/// Counts files are plain counts: a balanced or SuperBPE run counts by
/// language or by word units, which it does not keep.
pub fn check_countable(config: &TrainConfig, what: &str) -> Result<()> {
    if config.balance.is_some() {
        return Err(Error::parameter(format!(
            "{what}: a counts file holds plain word counts; language balancing (langs, file_languages, lang_field) counts by language and is not available with it"
        )));
    }
    if config.superbpe.is_some() {
        return Err(Error::parameter(format!("{what}: a counts file holds plain word counts; superbpe_transition is not available with it")));
    }
    Ok(())
}

impl CountsHeader {
    pub fn new(config: &TrainConfig, paths: &[PathBuf], count_seconds: f64) -> Result<Self> {
        // (A normalizer is recorded by its name, as Python gives it.)
        let options = COUNTING_OPTIONS
            .iter()
            .filter_map(|&n| config.run_options.get(n).map(|v| (n.to_string(), v.get("name").cloned().unwrap_or_else(|| v.clone()))))
            .collect();
        Ok(CountsHeader {
            library: format!("bpeforge {}", env!("CARGO_PKG_VERSION")),
            inputs: paths.iter().map(|p| InputStamp::of(p)).collect::<Result<_>>()?,
            counting: counting_key(config),
            options,
            count_seconds,
        })
    }

    /// Refuses a run whose settings would count otherwise, naming each.
    pub fn check_settings(&self, path: &Path, config: &TrainConfig) -> Result<()> {
        let mine = counting_key(config);
        let differ: Vec<String> = self
            .counting
            .iter()
            .chain(mine.iter().filter(|(k, _)| !self.counting.contains_key(*k)))
            .filter(|(k, v)| mine.get(*k) != Some(v))
            .map(|(k, v)| format!("{k} {} (this run: {})", v, mine.get(k).cloned().unwrap_or(Value::Null)))
            .collect();
        if differ.is_empty() {
            return Ok(());
        }
        Err(Error::parameter(format!(
            "the counts file {} was counted with other settings: {}; give the settings it was counted with (or count again)",
            path.display(),
            differ.join("; ")
        )))
    }

    /// Whether `paths` are the files counted, unchanged (`None`), or what
    /// differs.
    pub fn changed_inputs(&self, paths: &[PathBuf]) -> Result<Option<String>> {
        let now = paths.iter().map(|p| InputStamp::of(p)).collect::<Result<Vec<_>>>()?;
        if now == self.inputs {
            return Ok(None);
        }
        let names = |s: &[InputStamp]| s.iter().map(|i| i.path.clone()).collect::<Vec<_>>();
        Ok(Some(if names(&now) != names(&self.inputs) {
            format!("it counted {}, this run reads {}", names(&self.inputs).join(", "), names(&now).join(", "))
        } else {
            let changed: Vec<String> = now.iter().zip(&self.inputs).filter(|(a, b)| a != b).map(|(a, _)| a.path.clone()).collect();
            format!("{} changed since (size or time of last change)", changed.join(", "))
        }))
    }
}

/// Writes `counts` with `header` to `path` (atomically: a temporary file
/// beside it, renamed).
pub fn save(path: &Path, header: &CountsHeader, counts: &WordCounts) -> Result<()> {
    use std::io::Write;
    let head = serde_json::to_vec(header).map_err(|e| Error::output(e.to_string()))?;
    let fail = |e: std::io::Error| Error::output(format!("cannot write {}: {e}", path.display()));
    let tmp = crate::atomic::temp_beside(path)?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, tmp);
    w.write_all(MAGIC).map_err(fail)?;
    w.write_all(&(head.len() as u64).to_le_bytes()).map_err(fail)?;
    w.write_all(&head).map_err(fail)?;
    counts.write_to(&mut w).map_err(fail)?;
    let tmp = w.into_inner().map_err(|e| fail(e.into_error()))?;
    tmp.as_file().sync_all().map_err(fail)?;
    crate::atomic::persist(tmp, path)
}

/// Reads a counts file's header alone.
pub fn read_header(path: &Path) -> Result<CountsHeader> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(|e| Error::io_read(path, &e))?;
    let mut start = [0u8; 16];
    file.read_exact(&mut start).map_err(|_| not_counts(path))?;
    let len = header_len(path, &start)?;
    let mut head = vec![0u8; len];
    file.read_exact(&mut head).map_err(|_| not_counts(path))?;
    parse_header(path, &head)
}

/// Reads a counts file: its header and its counts.
pub fn load(path: &Path) -> Result<(CountsHeader, WordCounts)> {
    let data = std::fs::read(path).map_err(|e| Error::io_read(path, &e))?;
    let start = data.get(..16).ok_or_else(|| not_counts(path))?;
    let len = header_len(path, start)?;
    let head = data.get(16..16 + len).ok_or_else(|| not_counts(path))?;
    let header = parse_header(path, head)?;
    let counts = WordCounts::from_bytes(&data[16 + len..]).map_err(|e| Error::input(format!("{}: {}", path.display(), e.message())))?;
    Ok((header, counts))
}

fn header_len(path: &Path, start: &[u8]) -> Result<usize> {
    if &start[..8] != MAGIC {
        return Err(not_counts(path));
    }
    let len = u64::from_le_bytes(start[8..16].try_into().unwrap_or([0; 8]));
    if len > 1 << 30 {
        return Err(not_counts(path));
    }
    Ok(len as usize)
}

fn parse_header(path: &Path, head: &[u8]) -> Result<CountsHeader> {
    serde_json::from_slice(head).map_err(|e| Error::input(format!("{}: the counts file's header is damaged: {e}", path.display())))
}

fn not_counts(path: &Path) -> Error {
    Error::input(format!("{}: not a bpeforge counts file (written by `bpeforge count` or beside a checkpoint)", path.display()))
}

/// The counts file a checkpoint keeps beside it: `CHECKPOINT.counts`.
pub fn beside(checkpoint: &Path) -> PathBuf {
    let mut name = checkpoint.as_os_str().to_owned();
    name.push(".counts");
    PathBuf::from(name)
}
