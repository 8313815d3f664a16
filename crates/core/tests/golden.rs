//! The golden cases (`tests/data/golden/<case>/`, shared with pytest's
//! tests/test_golden.py): each case's corpus trained with its settings must
//! give exactly the expected merges, merge counts, vocabulary size and ids.
//! The expected files were written by the build before the layout change
//! (see tests/data/golden/regenerate.py); a difference is a behaviour change.

use bpeforge_core::encode::{Encoder, Specials};
use bpeforge_core::observe::Silent;
use bpeforge_core::train::TrainOptions;
use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(Deserialize)]
struct Expected {
    vocab_size: usize,
    merges: Vec<(u32, u32)>,
    merge_counts: Vec<u64>,
    ids: Vec<Vec<u32>>,
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/golden")
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> T {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The case's settings as `TrainOptions`, side-file paths made absolute.
fn options(case: &Path) -> TrainOptions {
    let mut settings: serde_json::Value = read_json(&case.join("settings.json"));
    if let Some(langs) = settings.get_mut("langs").and_then(|v| v.as_array_mut()) {
        for p in langs.iter_mut() {
            *p = serde_json::json!(case.join(p.as_str().unwrap_or_default()));
        }
    }
    serde_json::from_value(settings).unwrap_or_else(|e| panic!("{}: settings.json: {e}", case.display()))
}

fn check(case: &Path) -> Result<(), String> {
    let config = options(case).into_config().map_err(|e| e.to_string())?;
    let model = bpeforge_core::train_files(&[case.join("corpus.txt")], &config, &mut Silent).map_err(|e| e.to_string())?;
    let expected: Expected = read_json(&case.join("expected.json"));
    if model.merges != expected.merges {
        let first = model.merges.iter().zip(&expected.merges).position(|(a, b)| a != b);
        return Err(format!(
            "merges differ ({} vs {} expected; first difference at {first:?})",
            model.merges.len(),
            expected.merges.len()
        ));
    }
    if model.merge_counts != expected.merge_counts {
        return Err("merge counts differ".into());
    }
    let encoder = Encoder::new(model).map_err(|e| e.to_string())?;
    if encoder.vocab_size() != expected.vocab_size {
        return Err(format!("vocab_size {} vs {} expected", encoder.vocab_size(), expected.vocab_size));
    }
    let samples: Vec<String> = read_json(&case.join("samples.json"));
    for (k, (text, ids)) in samples.iter().zip(&expected.ids).enumerate() {
        let got = encoder.encode(text.as_bytes(), &Specials::Ordinary, None).map_err(|e| e.to_string())?;
        if &got != ids {
            return Err(format!("sample {k} ({text:?}) encodes differently"));
        }
    }
    Ok(())
}

#[test]
fn golden_cases_train_and_encode_as_recorded() {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(golden_dir())
        .expect("tests/data/golden")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("settings.json").exists())
        .collect();
    cases.sort();
    assert!(cases.len() >= 6, "expected the golden cases in {}", golden_dir().display());
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| check(c).err().map(|e| format!("{}: {e}", c.file_name().unwrap_or_default().to_string_lossy())))
        .collect();
    assert!(failures.is_empty(), "golden cases differ:\n{}", failures.join("\n"));
}
