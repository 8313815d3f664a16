//! Texts inside structured lines: a field of a JSON-lines record, or columns
//! of a tab-separated line (bitext). Extraction runs in the counting
//! workers, one line at a time, so every thread parses and nothing of a
//! record outlives its line.
//!
//! JSON is parsed by serde_json straight from the line's bytes: keys are
//! compared without allocating, fields off the path are skipped (but still
//! checked: a malformed record is an error, not a guess), and the text is
//! borrowed from the line unless it contains escapes.

use crate::error::Error;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// Where the text of a line is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldSpec {
    /// A JSON object per line; the text is the string at this path of keys
    /// (`"meta.body"` is `["meta", "body"]`).
    Json(Vec<String>),
    /// Tab-separated columns (0-based here; 1-based in the options), each a text.
    Columns(Vec<usize>),
}

/// What to do with a line that has no text where the spec says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnBadRecord {
    /// Stop with an error naming the file and line.
    #[default]
    Error,
    /// Skip the line and count it (`CountStats::bad_records`).
    Skip,
}

/// How structured lines are read: the spec and the bad-record policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fields {
    pub spec: FieldSpec,
    pub on_bad_record: OnBadRecord,
    /// JSON lines: each record's language is in this field (balanced training).
    pub lang: Option<LangField>,
}

/// The language field of JSON records and the id of each language tag
/// (filled in once the languages are known, before counting).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LangField {
    pub path: Vec<String>,
    pub ids: Arc<HashMap<String, u16>>,
}

impl Fields {
    /// The language tag of a JSON record (`lang` set), or why there is none
    /// (an input error without the file and line: see [`bad_record`]).
    pub fn language_tag<'a>(&self, line: &'a [u8]) -> crate::error::Result<Option<Cow<'a, str>>> {
        let Some(lang) = &self.lang else { return Ok(None) };
        let tag = json_field(line, &lang.path)?;
        if tag.trim().is_empty() {
            return Err(Error::input(format!("field {:?} is an empty language tag", lang.path.join("."))));
        }
        Ok(Some(tag))
    }

    /// The language id of a record, or why there is none (no tag, or a tag
    /// the languages pass did not see).
    pub fn language(&self, line: &[u8]) -> crate::error::Result<Option<u16>> {
        let (Some(lang), Some(tag)) = (&self.lang, self.language_tag(line)?) else { return Ok(None) };
        lang.ids
            .get(tag.trim())
            .copied()
            .map(Some)
            .ok_or_else(|| Error::input(format!("language tag {tag:?} changed while reading")))
    }
}

impl Fields {
    /// Parses `"a.b.c"` into a JSON path, refusing empty keys; the error
    /// names `option`, the parameter that gave the path (`text_field`, ...).
    pub fn json_path(option: &str, dotted: &str) -> crate::error::Result<Vec<String>> {
        let keys: Vec<String> = dotted.split('.').map(str::to_string).collect();
        if dotted.trim().is_empty() || keys.iter().any(|k| k.is_empty()) {
            return Err(Error::parameter(format!(
                "{option} {dotted:?}: a dotted path of non-empty keys, e.g. \"text\" or \"meta.body\""
            )));
        }
        Ok(keys)
    }

    /// Appends each text of `line` to `out` (one for JSON, one per column
    /// for TSV). A blank line has no text and is not an error. On a bad
    /// record, returns why (an input error without the file and line: see
    /// [`bad_record`]) and appends nothing.
    pub fn texts<'a>(&self, line: &'a [u8], out: &mut Vec<Cow<'a, [u8]>>) -> crate::error::Result<()> {
        match &self.spec {
            FieldSpec::Json(path) => {
                if line.iter().all(u8::is_ascii_whitespace) {
                    return Ok(());
                }
                out.push(match json_field(line, path)? {
                    Cow::Borrowed(s) => Cow::Borrowed(s.as_bytes()),
                    Cow::Owned(s) => Cow::Owned(s.into_bytes()),
                });
            }
            FieldSpec::Columns(columns) => {
                let cells = || line.split(|&b| b == b'\t');
                let n = cells().count();
                if let Some(&missing) = columns.iter().find(|&&c| c >= n) {
                    return Err(Error::input(format!(
                        "column {} is missing (the line has {} tab-separated column{})",
                        missing + 1,
                        n,
                        if n == 1 { "" } else { "s" }
                    )));
                }
                for &c in columns {
                    out.extend(cells().nth(c).map(Cow::Borrowed));
                }
            }
        }
        Ok(())
    }

    /// How the metadata names this mode.
    pub fn describe(&self) -> String {
        match &self.spec {
            FieldSpec::Json(path) => format!("JSON lines, field {:?}", path.join(".")),
            FieldSpec::Columns(c) => {
                let cols: Vec<String> = c.iter().map(|i| (i + 1).to_string()).collect();
                format!("tab-separated, column(s) {}", cols.join(","))
            }
        }
    }
}

/// The error for a line without its text (or language), naming where it is.
pub fn bad_record(source: &str, line: u64, why: &Error) -> Error {
    Error::input(format!(
        "{source}, line {line}: {why} (on_bad_record=\"skip\" skips such lines and counts them)"
    ))
}

/// The string at `path` in the JSON object `line`, or why there is none.
///
/// A record must be UTF-8 as a whole (RFC 8259), not only in the field
/// read: serde_json skips the other strings without checking them, so the
/// line is checked once here, which also spares serde_json its per-string
/// checks.
pub fn json_field<'a>(line: &'a [u8], path: &[String]) -> crate::error::Result<Cow<'a, str>> {
    json_field_why(line, path).map_err(Error::input)
}

/// [`json_field`]'s lookup, with why there is no string as plain text.
fn json_field_why<'a>(line: &'a [u8], path: &[String]) -> std::result::Result<Cow<'a, str>, String> {
    let line = match simdutf8::basic::from_utf8(line) {
        Ok(text) => text,
        Err(_) => {
            // std's check, only for the rare bad line, to say where.
            let at = std::str::from_utf8(line).err().map_or(0, |e| e.valid_up_to());
            return Err(format!("malformed JSON: invalid UTF-8 at byte {}", at + 1));
        }
    };
    let mut de = serde_json::Deserializer::from_str(line);
    let found = PathSeed { path, depth: 0 }.deserialize(&mut de).map_err(|e| format!("malformed JSON: {e}"))?;
    de.end().map_err(|e| format!("malformed JSON: {e}"))?;
    match found {
        Found::Str(s) => Ok(s),
        Found::Missing(depth) => Err(format!("no field {:?}", path[..=depth].join("."))),
        Found::Wrong(depth, kind) => Err(if depth == path.len() {
            format!("field {:?} is {kind}, not a string", path.join("."))
        } else if depth == 0 {
            format!("the record is {kind}, not an object")
        } else {
            format!("field {:?} is {kind}, not an object", path[..depth].join("."))
        }),
    }
}

/// The outcome of looking up a path.
enum Found<'a> {
    Str(Cow<'a, str>),
    /// The key at this depth of the path is absent.
    Missing(usize),
    /// The value reached by this many keys of the path is of this kind
    /// (a string expected at the end of the path, an object before it).
    Wrong(usize, &'static str),
}

/// Looks up `path[depth..]` in the value being deserialized.
struct PathSeed<'p> {
    path: &'p [String],
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for PathSeed<'_> {
    type Value = Found<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Found<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl PathSeed<'_> {
    fn leaf(&self) -> bool {
        self.depth == self.path.len()
    }
    fn wrong<'de>(&self, kind: &'static str) -> Found<'de> {
        Found::Wrong(self.depth, kind)
    }
}

/// Whether a key equals the wanted one, compared without allocating.
struct KeyIs<'k>(&'k str);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIs<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        Ok(v == self.0)
    }
}

impl<'de> Visitor<'de> for PathSeed<'_> {
    type Value = Found<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Found<'de>, E> {
        Ok(if self.leaf() { Found::Str(Cow::Borrowed(v)) } else { self.wrong("a string") })
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Found<'de>, E> {
        Ok(if self.leaf() { Found::Str(Cow::Owned(v.to_string())) } else { self.wrong("a string") })
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Found<'de>, E> {
        Ok(if self.leaf() { Found::Str(Cow::Owned(v)) } else { self.wrong("a string") })
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Found<'de>, E> {
        Ok(self.wrong("a boolean"))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Found<'de>, E> {
        Ok(self.wrong("a number"))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Found<'de>, E> {
        Ok(self.wrong("a number"))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Found<'de>, E> {
        Ok(self.wrong("a number"))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Found<'de>, E> {
        Ok(self.wrong("null"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Found<'de>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(self.wrong("an array"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Found<'de>, A::Error> {
        if self.leaf() {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            return Ok(self.wrong("an object"));
        }
        // The first occurrence of the key wins; the rest is checked and skipped.
        let mut found = None;
        while let Some(is_ours) = map.next_key_seed(KeyIs(&self.path[self.depth]))? {
            if is_ours && found.is_none() {
                found = Some(map.next_value_seed(PathSeed { path: self.path, depth: self.depth + 1 })?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found.unwrap_or(Found::Missing(self.depth)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(s: &str) -> Vec<String> {
        Fields::json_path("text_field", s).unwrap()
    }

    #[test]
    fn json_fields_borrow_unless_escaped() {
        let line = br#"{"id": 3, "meta": {"x": [1, {"a": 2}], "body": "caf\u00e9 \"q\""}, "text": "plain"}"#;
        assert!(matches!(json_field(line, &path("text")).unwrap(), Cow::Borrowed("plain")));
        assert_eq!(json_field(line, &path("meta.body")).unwrap(), "café \"q\"");
    }

    #[test]
    fn bad_records_say_why() {
        let err = |line: &[u8], p: &str| {
            let e = json_field(line, &path(p)).unwrap_err();
            assert_eq!(e.kind(), crate::error::ErrorKind::Input);
            e.message().to_string()
        };
        assert_eq!(err(br#"{"txt": "a"}"#, "text"), "no field \"text\"");
        assert_eq!(err(br#"{"text": 5}"#, "text"), "field \"text\" is a number, not a string");
        assert_eq!(err(br#"{"text": null}"#, "text"), "field \"text\" is null, not a string");
        assert_eq!(err(br#"{"meta": "x"}"#, "meta.body"), "field \"meta\" is a string, not an object");
        assert_eq!(err(br#"{"meta": {}}"#, "meta.body"), "no field \"meta.body\"");
        assert_eq!(err(br#"["text"]"#, "text"), "the record is an array, not an object");
        assert!(err(br#"{"text": "a""#, "text").starts_with("malformed JSON"));
        assert!(err(br#"{"text": "a"} x"#, "text").starts_with("malformed JSON"));
        assert_eq!(err(b"{\"text\": \"\xff\"}", "text"), "malformed JSON: invalid UTF-8 at byte 11");
        // Invalid UTF-8 anywhere makes the record malformed, not only in the field read.
        assert_eq!(err(b"{\"text\": \"ok\", \"lang\": \"en\x8a\"}", "text"), "malformed JSON: invalid UTF-8 at byte 27");
        assert_eq!(err(b"{\"\xc3\": 1, \"text\": \"ok\"}", "text"), "malformed JSON: invalid UTF-8 at byte 3");
        let e = Fields::json_path("lang_field", "a..b").unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Parameter);
        assert!(e.message().starts_with("lang_field \"a..b\": a dotted path"), "{e}");
    }

    #[test]
    fn columns_are_texts() {
        let f = Fields { spec: FieldSpec::Columns(vec![0, 2]), on_bad_record: OnBadRecord::Error, lang: None };
        let mut got = Vec::new();
        f.texts(b"src\tid\ttgt", &mut got).unwrap();
        assert_eq!(got, vec![&b"src"[..], &b"tgt"[..]]);
        got.clear();
        let e = f.texts(b"only\tone", &mut got).unwrap_err();
        assert!(got.is_empty());
        assert_eq!(e.message(), "column 3 is missing (the line has 2 tab-separated columns)");
        assert_eq!(
            bad_record("a.tsv", 7, &e).message(),
            "a.tsv, line 7: column 3 is missing (the line has 2 tab-separated columns) \
             (on_bad_record=\"skip\" skips such lines and counts them)"
        );
    }
}
