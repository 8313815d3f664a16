//! Pre-tokenization for Python: `pretokenize` (and its reference and
//! counting forms for tests and benchmarks), the preset table, and the
//! Unicode script of characters (the report's script figure).

use crate::errors::to_pyerr;
use bpeforge_core::api::{Error, PreTokenizer, PreTokenizerChoice, PreTokenizerSpec, LISTS};
use pyo3::prelude::*;
use std::sync::{Arc, Mutex};

/// The pre-tokenizer `preset` names: a preset's name or alias (a string),
/// or a custom regex tagged as `{"regex": pattern}` (never a bare string:
/// no name is taken for a regex, nor a regex for a name).
fn choice(preset: &Bound<'_, PyAny>) -> PyResult<PreTokenizerChoice> {
    pythonize::depythonize(preset).map_err(|e| to_pyerr(Error::parameter(format!("pretokenizer: {e}"))))
}

/// The pre-tokenizer `preset` names, compiled once per process: building
/// one per call made `pretokenize` run at 0.14 MB/s. `reference` picks the
/// regex path for the presets.
fn cached_pretokenizer(preset: &Bound<'_, PyAny>, reference: bool) -> PyResult<Arc<PreTokenizer>> {
    type Compiled = std::collections::HashMap<(PreTokenizerSpec, bool), Arc<PreTokenizer>>;
    static CACHE: std::sync::OnceLock<Mutex<Compiled>> = std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (choice(preset)?.spec(), reference);
    if let Some(p) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(Arc::clone(p));
    }
    let spec = key.0.clone();
    let p = Arc::new(if reference { PreTokenizer::regex_reference(spec) } else { PreTokenizer::new(spec) }.map_err(to_pyerr)?);
    let mut map = cache.lock().unwrap_or_else(|e| e.into_inner());
    // Custom patterns are unbounded in number: keep the cache small.
    if map.len() >= 64 {
        map.clear();
    }
    map.insert(key, Arc::clone(&p));
    Ok(p)
}

/// The pieces a pre-tokenizer cuts `text` into; `preset`: a preset's name
/// or alias, or `{"regex": pattern}`.
#[pyfunction]
#[pyo3(signature = (text, preset=None))]
pub(crate) fn pretokenize<'t>(text: &'t str, preset: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<&'t str>> {
    with_default(preset, |p| cached_pretokenizer(p, false))?.pieces(text).map_err(to_pyerr)
}

/// `pretokenize` on the regex path even for the presets: the reference the
/// hand-written scanners are tested against (tests, fuzz, bench only).
#[pyfunction]
#[pyo3(signature = (text, preset=None))]
pub(crate) fn _pretokenize_reference<'t>(text: &'t str, preset: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<&'t str>> {
    with_default(preset, |p| cached_pretokenizer(p, true))?.pieces(text).map_err(to_pyerr)
}

/// The number of pieces, without building them as Python strings, with the
/// GIL released: times the pre-tokenizer alone (bench/pretok.py).
#[pyfunction]
#[pyo3(signature = (text, preset=None, reference=false))]
pub(crate) fn _pretokenize_count(py: Python<'_>, text: &str, preset: Option<&Bound<'_, PyAny>>, reference: bool) -> PyResult<usize> {
    let p = with_default(preset, |p| cached_pretokenizer(p, reference))?;
    py.detach(|| {
        let mut n = 0usize;
        p.split(text, &mut |_| n += 1).map(|()| n)
    })
    .map_err(to_pyerr)
}

/// `f` of `preset`, or of the default preset's name when none is given.
fn with_default<T>(preset: Option<&Bound<'_, PyAny>>, f: impl FnOnce(&Bound<'_, PyAny>) -> PyResult<T>) -> PyResult<T> {
    match preset {
        Some(p) => f(p),
        None => Python::attach(|py| f(pyo3::types::PyString::new(py, LISTS.default_pretokenizer).as_any())),
    }
}

/// The preset a name or alias means (its exact name), or None: where
/// Python asks the engine's table what a name is.
#[pyfunction]
pub(crate) fn preset_name(name: &str) -> Option<&'static str> {
    LISTS.presets.iter().find(|p| p.is_named(name)).map(|p| p.name)
}

/// The pre-tokenizer presets (`bpeforge_core::api::LISTS.presets`, the one
/// table), as a tuple of dicts: `name`, `aliases` (tiktoken's names of
/// the encodings with its pattern, taken wherever a preset is named),
/// `about`, and `pattern` and `fast` (None for the presets without a regex).
pub(crate) fn presets(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyTuple>> {
    let items = LISTS.presets.iter().map(|p| {
        let d = pyo3::types::PyDict::new(py);
        d.set_item("name", p.name)?;
        d.set_item("aliases", pyo3::types::PyTuple::new(py, p.aliases)?)?;
        d.set_item("about", p.about)?;
        d.set_item("pattern", p.regex().map(|r| r.pattern))?;
        d.set_item("fast", p.regex().map(|r| r.fast))?;
        Ok(d)
    });
    pyo3::types::PyTuple::new(py, items.collect::<PyResult<Vec<_>>>()?)
}

/// The Unicode Script property of each character of `text` (`"Latin"`,
/// `"Han"`, `"Common"`, `"Inherited"`; `"Unknown"` for unassigned code
/// points), from the Unicode tables the regex engine already carries, so
/// the report's script figure and the pre-tokenizer's `\p{..}` classes use
/// the same Unicode version.
#[pyfunction]
pub(crate) fn script_of(text: &str) -> Vec<&'static str> {
    let table = SCRIPT_TABLE.get_or_init(script_table);
    text.chars()
        .map(|c| match table.binary_search_by(|&(lo, hi, _)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        }) {
            Ok(i) => table[i].2,
            Err(_) => "Unknown",
        })
        .collect()
}

static SCRIPT_TABLE: std::sync::OnceLock<Vec<(char, char, &'static str)>> = std::sync::OnceLock::new();

/// Every Script value of Unicode 16 (PropertyValueAliases.txt) but Unknown,
/// the set regex-syntax 0.8 generates its `\p{Script=..}` tables for.
/// tests/test_report.py checks that together they cover every assigned
/// character.
const SCRIPT_NAMES: &[&str] = &[
    "Adlam", "Ahom", "Anatolian_Hieroglyphs", "Arabic", "Armenian", "Avestan", "Balinese", "Bamum", "Bassa_Vah",
    "Batak", "Bengali", "Bhaiksuki", "Bopomofo", "Brahmi", "Braille", "Buginese", "Buhid", "Canadian_Aboriginal",
    "Carian", "Caucasian_Albanian", "Chakma", "Cham", "Cherokee", "Chorasmian", "Common", "Coptic", "Cuneiform",
    "Cypriot", "Cypro_Minoan", "Cyrillic", "Deseret", "Devanagari", "Dives_Akuru", "Dogra", "Duployan",
    "Egyptian_Hieroglyphs", "Elbasan", "Elymaic", "Ethiopic", "Garay", "Georgian", "Glagolitic", "Gothic", "Grantha",
    "Greek", "Gujarati", "Gunjala_Gondi", "Gurmukhi", "Gurung_Khema", "Han", "Hangul", "Hanifi_Rohingya", "Hanunoo",
    "Hatran", "Hebrew", "Hiragana", "Imperial_Aramaic", "Inherited", "Inscriptional_Pahlavi",
    "Inscriptional_Parthian", "Javanese", "Kaithi", "Kannada", "Katakana", "Kawi", "Kayah_Li", "Kharoshthi",
    "Khitan_Small_Script", "Khmer", "Khojki", "Khudawadi", "Kirat_Rai", "Lao", "Latin", "Lepcha", "Limbu",
    "Linear_A", "Linear_B", "Lisu", "Lycian", "Lydian", "Mahajani", "Makasar", "Malayalam", "Mandaic", "Manichaean",
    "Marchen", "Masaram_Gondi", "Medefaidrin", "Meetei_Mayek", "Mende_Kikakui", "Meroitic_Cursive",
    "Meroitic_Hieroglyphs", "Miao", "Modi", "Mongolian", "Mro", "Multani", "Myanmar", "Nabataean", "Nag_Mundari",
    "Nandinagari", "New_Tai_Lue", "Newa", "Nko", "Nushu", "Nyiakeng_Puachue_Hmong", "Ogham", "Ol_Chiki", "Ol_Onal",
    "Old_Hungarian", "Old_Italic", "Old_North_Arabian", "Old_Permic", "Old_Persian", "Old_Sogdian",
    "Old_South_Arabian", "Old_Turkic", "Old_Uyghur", "Oriya", "Osage", "Osmanya", "Pahawh_Hmong", "Palmyrene",
    "Pau_Cin_Hau", "Phags_Pa", "Phoenician", "Psalter_Pahlavi", "Rejang", "Runic", "Samaritan", "Saurashtra",
    "Sharada", "Shavian", "Siddham", "SignWriting", "Sinhala", "Sogdian", "Sora_Sompeng", "Soyombo", "Sundanese",
    "Sunuwar", "Syloti_Nagri", "Syriac", "Tagalog", "Tagbanwa", "Tai_Le", "Tai_Tham", "Tai_Viet", "Takri", "Tamil",
    "Tangsa", "Tangut", "Telugu", "Thaana", "Thai", "Tibetan", "Tifinagh", "Tirhuta", "Todhri", "Toto",
    "Tulu_Tigalari", "Ugaritic", "Vai", "Vithkuqi", "Wancho", "Warang_Citi", "Yezidi", "Yi", "Zanabazar_Square",
];

/// (first, last, script) ranges sorted by first char: each script's class
/// as regex-syntax resolves `\p{Script=NAME}`. The ranges are disjoint
/// (each code point has one Script value).
fn script_table() -> Vec<(char, char, &'static str)> {
    use regex_syntax::hir::{Class, HirKind};
    let mut table = Vec::new();
    for &name in SCRIPT_NAMES {
        // A name this regex-syntax does not know is skipped (its characters
        // read "Unknown"); the coverage test would say so.
        let Ok(hir) = regex_syntax::parse(&format!(r"\p{{Script={name}}}")) else { continue };
        if let HirKind::Class(Class::Unicode(class)) = hir.kind() {
            table.extend(class.ranges().iter().map(|r| (r.start(), r.end(), name)));
        }
    }
    table.sort_unstable_by_key(|&(lo, _, _)| lo);
    table
}
