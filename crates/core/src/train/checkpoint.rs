//! What a checkpoint records of its run, and how resuming it takes that
//! back: a checkpoint is an unfinished run (fewer merges than the vocabulary
//! it was started for), and it continues to the straight run it is part of
//! only with the same options. So a checkpoint's `metadata.checkpoint`
//! holds every option that changes what is learned (`RESULT_OPTIONS`, as
//! the run was given them), the `min_word_count` the memory budget chose,
//! and the input files; resuming it takes each option left at its default
//! from the record and refuses one given with another value (SEMANTICS §8).
//! A finished model has no such record: extending it takes the options as
//! given.

use crate::error::{Error, Result};
use crate::model::Model;
use serde_json::{Map, Value};
use std::path::Path;

/// The options (by their `TrainOptions` names) that change what a run
/// learns, besides those the model keeps itself (scheme, pre-tokenizer,
/// special tokens, alphabet settings, checked as the options are made).
/// `threads`, the output files and the progress never change the result.
pub const RESULT_OPTIONS: &[&str] = &[
    "vocab_size",
    "min_frequency",
    "max_token_length",
    "min_word_count",
    "max_memory",
    "documents",
    "separator",
    "text_field",
    "columns",
    "on_bad_record",
    "langs",
    "file_languages",
    "lang_field",
    "temperature",
    "max_premium",
    "balance_rounds",
    "premium_reference",
    "balance_min_lines",
    "balance_max_lift",
    "balance_held_apart",
    "superbpe_transition",
    "superbpe_max_words",
    "superbpe_colon_rule",
];

/// A checkpoint's record of its run (`metadata.checkpoint`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CheckpointRecord {
    /// `RESULT_OPTIONS` as the run was given them (engine form).
    pub options: Map<String, Value>,
    /// The `min_word_count` the merge phase ran with (raised by
    /// `max_memory` when the word table would not fit it).
    pub effective_min_word_count: u64,
    /// The files the run counted (absent for iterators and Arrow data).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Vec<InputFile>>,
    /// The counts file the run saved once counting finished
    /// (`counts_file::beside` the checkpoint; absolute): resuming trains on
    /// those counts instead of counting again, which under a memory budget
    /// could keep other word types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<String>,
}

/// An input file as a checkpoint (or a counts file) names it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InputFile {
    /// Absolute, with links resolved.
    pub path: String,
    pub bytes: u64,
}

/// A file's metadata and its absolute path with links resolved: how a
/// checkpoint and a counts file name their inputs.
pub fn resolved(path: &Path) -> Result<(std::fs::Metadata, String)> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io_read(path, &e))?;
    let full = std::fs::canonicalize(path).map_err(|e| Error::io_read(path, &e))?;
    Ok((meta, full.display().to_string()))
}

impl InputFile {
    pub fn of(path: &Path) -> Result<InputFile> {
        let (meta, path) = resolved(path)?;
        Ok(InputFile { path, bytes: meta.len() })
    }

    /// The files of a run's `inputs` record (paths as given), or `None`
    /// when they are not all files (an iterator, Arrow columns).
    pub fn of_inputs(inputs: &Value) -> Option<Vec<InputFile>> {
        let items = inputs.as_array()?;
        items.iter().map(|v| InputFile::of(Path::new(v.as_str()?)).ok()).collect()
    }
}

impl CheckpointRecord {
    /// The record of `model`, if it is a checkpoint (`None` for a finished
    /// model, or one saved before checkpoints kept a record).
    pub fn of(model: &Model) -> Result<Option<CheckpointRecord>> {
        match model.metadata.get("checkpoint") {
            None | Some(Value::Null) => Ok(None),
            Some(v) => serde_json::from_value(v.clone())
                .map(Some)
                .map_err(|e| Error::model(format!("metadata.checkpoint of the resumed model is not a checkpoint record: {e}"))),
        }
    }

    /// Refuses to continue on other files than the run counted: the result
    /// would equal no straight run.
    pub fn check_inputs(&self, paths: &[std::path::PathBuf]) -> Result<()> {
        let Some(kept) = &self.inputs else { return Ok(()) };
        let given = paths.iter().map(|p| InputFile::of(p)).collect::<Result<Vec<_>>>()?;
        if given == *kept {
            return Ok(());
        }
        let show = |files: &[InputFile]| {
            files.iter().map(|f| format!("{} ({} bytes)", f.path, f.bytes)).collect::<Vec<_>>().join(", ")
        };
        Err(Error::parameter(format!(
            "resume_from is a checkpoint of a run on {}, but this run reads {}: an unfinished run continues only on the \
             same input files (finish it first to extend the model with other data)",
            show(kept),
            show(&given)
        )))
    }
}

/// A record's options as JSON, by name (engine form): what a run records,
/// and what resuming compares and fills in.
pub fn as_json<T: serde::Serialize>(options: &T) -> Map<String, Value> {
    match serde_json::to_value(options) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// `RESULT_OPTIONS` of `all` (as `as_json` gives them).
pub fn result_options(all: &Map<String, Value>) -> Map<String, Value> {
    RESULT_OPTIONS.iter().filter_map(|&name| all.get(name).map(|v| (name.to_string(), v.clone()))).collect()
}

/// What resuming a checkpoint takes from its record.
#[derive(Debug, Default)]
pub struct Taken {
    /// The options left at their defaults that the record gave, by name.
    pub options: Map<String, Value>,
    /// The `min_word_count` the straight run's merge phase had.
    pub min_word_count: Option<u64>,
}

/// What resuming `model` takes from its record, given the run's options
/// (`mine`, as `as_json` gives them) and which of them the caller gave
/// (`given`): each recorded option not given; an option given with another
/// value is refused, naming both. `vocab_size` may be given: any size at
/// least the model's continues the same merges.
pub fn take_recorded(mine: &Map<String, Value>, given: &dyn Fn(&str) -> bool, model: &Model) -> Result<Taken> {
    let Some(record) = CheckpointRecord::of(model)? else { return Ok(Taken::default()) };
    let mut taken = Map::new();
    let mut conflicts = Vec::new();
    for &name in RESULT_OPTIONS {
        let (Some(kept), Some(value)) = (record.options.get(name), mine.get(name)) else { continue };
        if !given(name) {
            if value != kept {
                taken.insert(name.to_string(), kept.clone());
            }
        } else if name != "vocab_size" && value != kept {
            conflicts.push(format!("{name}={} (the checkpoint has {})", py_json(value), py_json(kept)));
        }
    }
    if !conflicts.is_empty() {
        return Err(Error::parameter(format!(
            "resume_from is a checkpoint of an unfinished run, which continues only with the options it was started with \
             (so that it equals the straight run), and these differ: {}. Leave them out to take the checkpoint's",
            conflicts.join("; ")
        )));
    }
    Ok(Taken { options: taken, min_word_count: Some(record.effective_min_word_count) })
}

/// A JSON value as Python's `repr` shows it (error messages name Python's values).
fn py_json(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::String(s) => format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")),
        Value::Array(items) => format!("[{}]", items.iter().map(py_json).collect::<Vec<_>>().join(", ")),
        Value::Number(n) if n.is_f64() => {
            let x = n.as_f64().unwrap_or(0.0);
            if x.fract() == 0.0 && x.abs() < 1e16 { format!("{x:.1}") } else { format!("{x}") }
        }
        other => other.to_string(),
    }
}
