//! The model: what a trained vocabulary is, and its file format.
//!
//! One JSON document (gzip-compressed when the file name ends in `.gz`):
//!
//! ```json
//! {"format": "bpeforge-model", "version": 1,
//!  "scheme": {"type": "bytes"},
//!  "pretokenizer": {"type": "gpt2"},
//!  "special_tokens": ["<|endoftext|>"],
//!  "alphabet": null,
//!  "merges": [[104, 101], ...],          // ids of (left, right), in order
//!  "merge_counts": [123456, ...],
//!  "metadata": {...}}
//! ```
//!
//! Ids: special tokens, then the alphabet (256 bytes, or `alphabet` for the
//! chars scheme), then one id per merge. Saving is atomic (temporary file in
//! the same directory, then rename); loading validates every field and refuses
//! hostile sizes before allocating for them.
//!
//! Why this file is long: it is one concern, the model file. Most lines are
//! the loader's checks of every field (a malformed or hostile file is a
//! clear error, never a panic) and their tests.

use crate::util::Map;
use crate::error::{Error, Result};
use crate::pretok::PreTokenizerSpec;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::path::Path;

pub const FORMAT: &str = "bpeforge-model";
pub const VERSION: u32 = 1;
/// Upper bound on merges in a model file (far above any real vocabulary).
pub const MAX_MERGES: usize = 16_000_000;
/// Upper bound on one token's length. Training never makes longer tokens,
/// and loading refuses them, so a small hostile file cannot claim 2^40-byte
/// tokens by doubling.
pub const MAX_TOKEN_BYTES: usize = 1 << 16;
/// Upper bound on the bytes of all tokens together (a 2M-token vocabulary
/// of 8-byte tokens is 16 MiB); a chain of merges that each add one byte
/// would otherwise make loading quadratic in time and memory.
pub const MAX_VOCAB_BYTES: usize = 1 << 26;
/// External ids must be below this (an inverse table is indexed by them).
pub const MAX_EXTERNAL_ID: u32 = 1 << 24;

/// Reads a JSON array, refusing more than `MAX_MERGES` elements as soon as
/// they are seen (instead of after allocating for all of them).
fn bounded_vec<'de, D, T>(d: D) -> std::result::Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct V<T>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for V<T> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(f, "an array of at most {MAX_MERGES} elements")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Vec<T>, A::Error> {
            let mut out = Vec::new();
            while let Some(x) = seq.next_element()? {
                if out.len() >= MAX_MERGES {
                    return Err(serde::de::Error::custom(format!("an array has more than {MAX_MERGES} elements; refused")));
                }
                out.push(x);
            }
            Ok(out)
        }
    }
    d.deserialize_seq(V(std::marker::PhantomData))
}

fn bounded_opt_vec<'de, D, T>(d: D) -> std::result::Result<Option<Vec<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct W<T>(Vec<T>);
    impl<'de, T: Deserialize<'de>> Deserialize<'de> for W<T> {
        fn deserialize<D2: serde::Deserializer<'de>>(d: D2) -> std::result::Result<Self, D2::Error> {
            bounded_vec(d).map(W)
        }
    }
    Option::<W<T>>::deserialize(d).map(|o| o.map(|w| w.0))
}
/// Upper bound on a model file's uncompressed size.
pub const MAX_MODEL_BYTES: u64 = 2 << 30;

/// The base-symbol scheme.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Scheme {
    /// 256 byte symbols; lossless on any input.
    Bytes,
    /// Unicode characters with a word-boundary marker.
    Chars {
        unk_token: String,
        /// `None`: SentencePiece-style `▁` prefix; `Some("</w>")`: suffix.
        end_of_word_suffix: Option<String>,
        character_coverage: f64,
        /// A character outside the alphabet becomes its UTF-8 bytes, the
        /// special tokens `<0x00>`..`<0xFF>` (SentencePiece's byte pieces).
        #[serde(default, skip_serializing_if = "is_false")]
        byte_fallback: bool,
        /// A run of unknown characters is one `unk_token` (SentencePiece).
        #[serde(default, skip_serializing_if = "is_false")]
        fuse_unk: bool,
        /// A `▁` starts every text (SentencePiece's `add_dummy_prefix` for
        /// pre-tokenizers that keep spaces inside pieces).
        #[serde(default, skip_serializing_if = "is_false")]
        dummy_prefix: bool,
        /// SentencePiece's text normalizer (a precompiled charsmap such as
        /// `nmt_nfkc`), applied before pre-tokenizing; none is the identity.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        normalizer: Option<crate::normalize::NormalizerSpec>,
    },
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The name of byte `b`'s token under byte fallback (SentencePiece's `<0x%02X>`).
pub fn byte_piece(b: u8) -> String {
    format!("<0x{b:02X}>")
}

/// The byte a `<0xHH>` token stands for (the inverse of [`byte_piece`]);
/// None for any other name.
pub fn piece_byte(name: &str) -> Option<u8> {
    let hex = name.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() == 2 && hex.bytes().all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b)) {
        return u8::from_str_radix(hex, 16).ok();
    }
    None
}

impl Scheme {
    pub fn name(&self) -> &'static str {
        match self {
            Scheme::Bytes => "bytes",
            Scheme::Chars { .. } => "chars",
        }
    }
}

/// The word-boundary marker of the chars scheme in prefix mode.
pub const SPACE_MARKER: &str = "\u{2581}";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    pub format: String,
    pub version: u32,
    pub scheme: Scheme,
    pub pretokenizer: PreTokenizerSpec,
    #[serde(deserialize_with = "bounded_vec")]
    pub special_tokens: Vec<String>,
    #[serde(default, deserialize_with = "bounded_opt_vec")]
    pub alphabet: Option<Vec<String>>,
    #[serde(deserialize_with = "bounded_vec")]
    pub merges: Vec<(u32, u32)>,
    #[serde(default, deserialize_with = "bounded_vec")]
    pub merge_counts: Vec<u64>,
    #[serde(default)]
    pub metadata: serde_json::Value,
    /// Optional external ids: `ids[i]` is the id callers see for the token
    /// with internal id `i` (imported vocabularies keep their own numbering).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "bounded_opt_vec")]
    pub ids: Option<Vec<u32>>,
}

impl Model {
    pub fn new(
        scheme: Scheme,
        pretokenizer: PreTokenizerSpec,
        special_tokens: Vec<String>,
        alphabet: Option<Vec<String>>,
    ) -> Self {
        Model {
            format: FORMAT.to_string(),
            version: VERSION,
            scheme,
            pretokenizer,
            special_tokens,
            alphabet,
            merges: Vec::new(),
            merge_counts: Vec::new(),
            metadata: serde_json::Value::Object(Default::default()),
            ids: None,
        }
    }

    /// Number of base symbols (256 or the alphabet's length).
    pub fn base_len(&self) -> usize {
        match &self.scheme {
            Scheme::Bytes => 256,
            Scheme::Chars { .. } => self.alphabet.as_ref().map_or(0, Vec::len),
        }
    }

    /// The first base-symbol id.
    pub fn base_start(&self) -> usize {
        self.special_tokens.len()
    }

    pub fn vocab_size(&self) -> usize {
        self.special_tokens.len() + self.base_len() + self.merges.len()
    }

    /// The id of `<unk>` (chars scheme).
    pub fn unk_id(&self) -> Option<u32> {
        match &self.scheme {
            Scheme::Chars { unk_token, .. } => self.special_tokens.iter().position(|t| t == unk_token).map(|i| i as u32),
            Scheme::Bytes => None,
        }
    }

    /// Byte fallback: the special-token index of each byte's token.
    pub fn byte_token_ids(&self) -> Option<Vec<u32>> {
        match &self.scheme {
            Scheme::Chars { byte_fallback: true, .. } => (0..=255u8)
                .map(|b| {
                    let name = byte_piece(b);
                    self.special_tokens.iter().position(|t| *t == name).map(|i| i as u32)
                })
                .collect(),
            _ => None,
        }
    }

    /// Every token's bytes, by id. Validates the merges as it goes.
    pub fn token_bytes(&self) -> Result<Vec<Vec<u8>>> {
        let mut tokens: Vec<Vec<u8>> = Vec::with_capacity(self.vocab_size());
        for t in &self.special_tokens {
            tokens.push(t.as_bytes().to_vec());
        }
        match &self.scheme {
            Scheme::Bytes => tokens.extend((0..=255u8).map(|b| vec![b])),
            Scheme::Chars { .. } => {
                for s in self.alphabet.as_deref().unwrap_or(&[]) {
                    tokens.push(s.as_bytes().to_vec());
                }
            }
        }
        let first_merge = tokens.len();
        let unk = self.unk_id();
        let mut total: usize = tokens.iter().map(Vec::len).sum();
        for (k, &(a, b)) in self.merges.iter().enumerate() {
            let limit = (first_merge + k) as u32;
            if a >= limit || b >= limit {
                return Err(Error::model(format!(
                    "merge {k} refers to id {} which does not exist yet (ids below {limit} only)",
                    a.max(b)
                )));
            }
            if (a as usize) < self.special_tokens.len() || (b as usize) < self.special_tokens.len() || Some(a) == unk || Some(b) == unk {
                return Err(Error::model(format!("merge {k} uses a special token (id {a} or {b}); special tokens never merge")));
            }
            let len = tokens[a as usize].len() + tokens[b as usize].len();
            if len > MAX_TOKEN_BYTES {
                return Err(Error::model(format!("merge {k} makes a token of {len} bytes; tokens longer than {MAX_TOKEN_BYTES} bytes are refused")));
            }
            total += len;
            if total > MAX_VOCAB_BYTES {
                return Err(Error::model(format!("the tokens add up to more than {MAX_VOCAB_BYTES} bytes; refused")));
            }
            let mut t = Vec::with_capacity(len);
            t.extend_from_slice(&tokens[a as usize]);
            t.extend_from_slice(&tokens[b as usize]);
            tokens.push(t);
        }
        Ok(tokens)
    }

    /// Checks everything a loaded (possibly hostile) model claims.
    pub fn validate(&self) -> Result<()> {
        self.validated_tokens().map(drop)
    }

    /// Validates the model and returns its token bytes by id (which the
    /// checks compute anyway; the encoder needs them too).
    pub fn validated_tokens(&self) -> Result<Vec<Vec<u8>>> {
        self.validate_settings()?;
        let tokens = self.token_bytes()?;
        // Merged tokens must be distinct from each other and from base symbols.
        let mut ids: Map<&[u8], usize> = crate::util::map_with_capacity(tokens.len());
        for (i, t) in tokens.iter().enumerate().skip(self.special_tokens.len()) {
            if let Some(prev) = ids.insert(t.as_slice(), i) {
                return Err(Error::model(format!(
                    "tokens {prev} and {i} have the same bytes {:?}; every token must be distinct",
                    String::from_utf8_lossy(t)
                )));
            }
        }
        drop(ids);
        Ok(tokens)
    }

    /// Every check but the tokens' own (which need each token's bytes): the
    /// format, counts, special tokens, scheme, ids and pre-tokenizer.
    pub(crate) fn validate_settings(&self) -> Result<()> {
        if self.format != FORMAT {
            return Err(Error::model(format!("not a bpeforge model (format is {:?}, expected {FORMAT:?})", self.format)));
        }
        if self.version != VERSION {
            return Err(Error::model(format!(
                "model format version {} is not supported by this bpeforge (which reads version {VERSION}); upgrade bpeforge",
                self.version
            )));
        }
        if self.merges.len() > MAX_MERGES {
            return Err(Error::model(format!("the model claims {} merges; more than {MAX_MERGES} is refused", self.merges.len())));
        }
        if !self.merge_counts.is_empty() && self.merge_counts.len() != self.merges.len() {
            return Err(Error::model(format!(
                "merge_counts has {} entries but there are {} merges",
                self.merge_counts.len(),
                self.merges.len()
            )));
        }
        let mut seen = std::collections::HashSet::new();
        for t in &self.special_tokens {
            if t.is_empty() {
                return Err(Error::model("a special token is the empty string"));
            }
            if !seen.insert(t.as_str()) {
                return Err(Error::model(format!("special token {t:?} is listed twice")));
            }
        }
        self.validate_scheme()?;
        self.validate_ids()?;
        crate::pretok::PreTokenizer::new(self.pretokenizer.clone())
            .map_err(|e| Error::model(format!("pretokenizer: {}", e.message())))?;
        Ok(())
    }

    /// The scheme's own fields and the chars alphabet.
    fn validate_scheme(&self) -> Result<()> {
        match &self.scheme {
            Scheme::Bytes => {
                if self.alphabet.is_some() {
                    return Err(Error::model("the bytes scheme has a fixed alphabet; 'alphabet' must be null"));
                }
            }
            Scheme::Chars { unk_token, end_of_word_suffix, character_coverage, byte_fallback, dummy_prefix, normalizer, .. } => {
                if let Some(n) = normalizer {
                    n.compile()?;
                    if end_of_word_suffix.is_some() {
                        return Err(Error::model("a normalizer (SentencePiece's) goes with the ▁ prefix mode, not an end_of_word_suffix"));
                    }
                }
                if !(0.0..=1.0).contains(character_coverage) || character_coverage.is_nan() {
                    return Err(Error::model(format!("character_coverage {character_coverage} is outside [0, 1]")));
                }
                if *byte_fallback && self.byte_token_ids().is_none() {
                    let missing = (0..=255u8).map(byte_piece).find(|n| !self.special_tokens.contains(n)).unwrap_or_default();
                    return Err(Error::model(format!(
                        "byte_fallback needs the 256 byte tokens <0x00>..<0xFF> among the special tokens; {missing} is missing"
                    )));
                }
                if (*byte_fallback || *dummy_prefix) && end_of_word_suffix.is_some() {
                    return Err(Error::model("byte_fallback and dummy_prefix are for the ▁ prefix mode, not an end_of_word_suffix"));
                }
                if self.unk_id().is_none() {
                    return Err(Error::model(format!("unk_token {unk_token:?} is not among the special tokens")));
                }
                if let Some(s) = end_of_word_suffix {
                    if s.is_empty() {
                        return Err(Error::model("end_of_word_suffix is the empty string"));
                    }
                }
                let alphabet = self.alphabet.as_ref().ok_or_else(|| Error::model("the chars scheme needs an 'alphabet'"))?;
                let mut seen = std::collections::HashSet::new();
                for s in alphabet {
                    let body = match end_of_word_suffix {
                        Some(suf) => s.strip_suffix(suf.as_str()).unwrap_or(s),
                        None => s,
                    };
                    if body.chars().count() != 1 {
                        return Err(Error::model(format!("alphabet symbol {s:?} is not one character")));
                    }
                    if !seen.insert(s.as_str()) {
                        return Err(Error::model(format!("alphabet symbol {s:?} is listed twice")));
                    }
                }
            }
        }
        Ok(())
    }

    /// External ids: one per token, distinct, in range.
    fn validate_ids(&self) -> Result<()> {
        if let Some(ids) = &self.ids {
            if ids.len() != self.vocab_size() {
                return Err(Error::model(format!(
                    "'ids' has {} entries but the vocabulary has {} tokens",
                    ids.len(),
                    self.vocab_size()
                )));
            }
            let mut seen = std::collections::HashSet::with_capacity(ids.len());
            for &e in ids {
                if e >= MAX_EXTERNAL_ID {
                    return Err(Error::model(format!("external id {e} is too large (ids must be below {MAX_EXTERNAL_ID})")));
                }
                if !seen.insert(e) {
                    return Err(Error::model(format!("external id {e} is used twice in 'ids'")));
                }
            }
        }
        Ok(())
    }

    /// Serializes to JSON (pretty enough to diff, compact merges).
    pub fn to_json(&self) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(64 + self.merges.len() * 16);
        // Hand-assembled so each merge sits on one short line.
        let head = serde_json::json!({
            "format": self.format,
            "version": self.version,
            "scheme": self.scheme,
            "pretokenizer": self.pretokenizer,
            "special_tokens": self.special_tokens,
            "alphabet": self.alphabet,
        });
        let head = serde_json::to_string_pretty(&head).map_err(|e| Error::output(e.to_string()))?;
        out.extend_from_slice(head.trim_end().trim_end_matches('}').trim_end().as_bytes());
        out.extend_from_slice(b",\n  \"merges\": [");
        for (i, (a, b)) in self.merges.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write!(out, "\n    [{a}, {b}]").map_err(|e| Error::output(e.to_string()))?;
        }
        out.extend_from_slice(b"\n  ],\n  \"merge_counts\": ");
        serde_json::to_writer(&mut out, &self.merge_counts).map_err(|e| Error::output(e.to_string()))?;
        if let Some(ids) = &self.ids {
            out.extend_from_slice(b",\n  \"ids\": ");
            serde_json::to_writer(&mut out, ids).map_err(|e| Error::output(e.to_string()))?;
        }
        out.extend_from_slice(b",\n  \"metadata\": ");
        serde_json::to_writer_pretty(&mut out, &self.metadata).map_err(|e| Error::output(e.to_string()))?;
        out.extend_from_slice(b"\n}\n");
        Ok(out)
    }

    pub fn from_json(data: &[u8]) -> Result<Model> {
        let model = Self::parse_json(data)?;
        model.validate()?;
        Ok(model)
    }

    /// Parses without validating: for callers that validate next anyway
    /// (building an `Encoder` does), so the checks run once.
    pub(crate) fn parse_json(data: &[u8]) -> Result<Model> {
        serde_json::from_slice(data).map_err(|e| {
            if e.is_eof() {
                Error::model(format!("the model file is truncated ({e})"))
            } else {
                Error::model(format!("the model file is not a valid bpeforge model: {e}"))
            }
        })
    }

    /// Saves atomically: a failed save leaves any earlier file intact.
    pub fn save(&self, path: &Path) -> Result<()> {
        let json = self.to_json()?;
        let data = if is_gz(path) {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            enc.write_all(&json).map_err(|e| Error::output(e.to_string()))?;
            enc.finish().map_err(|e| Error::output(e.to_string()))?
        } else {
            json
        };
        write_atomic(path, &data)
    }

    pub fn load(path: &Path) -> Result<Model> {
        let file = std::fs::File::open(path).map_err(|e| {
            Error::new(crate::error::ErrorKind::Input, Error::io_read(path, &e).message())
        })?;
        let mut reader: Box<dyn Read> = if is_gz(path) { Box::new(flate2::read::GzDecoder::new(file)) } else { Box::new(file) };
        let data = read_at_most(&mut reader, MAX_MODEL_BYTES as usize)
            .map_err(|e| Error::model(format!("{}: cannot read the model: {e}", path.display())))?
            .ok_or_else(|| Error::model(format!("{}: the model is larger than {MAX_MODEL_BYTES} bytes; refused", path.display())))?;
        Model::from_json(&data).map_err(|e| Error::model(format!("{}: {}", path.display(), e.message())))
    }
}

/// All of `reader`, or `None` once it gives more than `limit` bytes. The
/// buffer's capacity never passes the power of two at or above `limit`:
/// `read_to_end` on `take(limit + 1)` would double a full 2 GiB buffer to
/// 4 GiB to find out that there is one byte more.
fn read_at_most(reader: &mut dyn Read, limit: usize) -> std::io::Result<Option<Vec<u8>>> {
    let mut data = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => return Ok(Some(data)),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if data.len() + n > limit {
            return Ok(None);
        }
        data.extend_from_slice(&buf[..n]);
    }
}

fn is_gz(path: &Path) -> bool {
    path.to_string_lossy().to_ascii_lowercase().ends_with(".gz")
}

pub use crate::atomic::write_atomic;

#[cfg(test)]
mod tests {
    //! The loader on malformed and hostile model files: every one is a
    //! `ModelFormat` error with a message naming the problem, never a panic.
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn byte_piece_names_read_back_as_their_bytes_and_nothing_else_does() {
        for b in 0..=255u8 {
            assert_eq!(piece_byte(&byte_piece(b)), Some(b));
        }
        assert_eq!(byte_piece(0x0a), "<0x0A>");
        for other in ["<0x0a>", "<0x0>", "<0x0AB>", "0x0A", "<0xGG>", "<unk>", ""] {
            assert_eq!(piece_byte(other), None, "{other}");
        }
    }

    #[test]
    fn a_model_file_is_read_up_to_its_limit_and_no_further() {
        let text = vec![7u8; 1 << 20];
        let read = |limit: usize| read_at_most(&mut &text[..], limit).unwrap();
        let whole = read(1 << 20).expect("exactly the limit is read");
        assert_eq!(whole, text);
        // Its buffer never grew past the limit's power of two.
        assert!(whole.capacity() <= 1 << 20, "{}", whole.capacity());
        assert!(read((1 << 20) - 1).is_none());
        assert_eq!(read(usize::MAX).map(|d| d.len()), Some(1 << 20));
    }

    fn bytes_model() -> Model {
        let mut m = Model::new(Scheme::Bytes, PreTokenizerSpec::GPT2, vec!["<|endoftext|>".into()], None);
        // ids: 1 special token, bytes at 1..=256; 'a'=98, 'b'=99.
        m.merges = vec![(98, 99), (257, 98)];
        m.merge_counts = vec![10, 4];
        m
    }

    /// The model's JSON with `edit` applied to it as a JSON value.
    fn edited(edit: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
        let mut v: serde_json::Value = serde_json::from_slice(&bytes_model().to_json().unwrap()).unwrap();
        edit(&mut v);
        serde_json::to_vec(&v).unwrap()
    }

    fn refused(data: &[u8], needle: &str) {
        let err = Model::from_json(data).expect_err("a bad model must be refused");
        assert_eq!(err.kind(), ErrorKind::ModelFormat, "{}", err.message());
        assert!(err.message().contains(needle), "{:?} should mention {needle:?}", err.message());
    }

    #[test]
    fn a_saved_model_loads_back_equal() {
        let m = bytes_model();
        assert_eq!(Model::from_json(&m.to_json().unwrap()).unwrap(), m);
    }

    #[test]
    fn truncated_and_non_json_files_are_refused() {
        let json = bytes_model().to_json().unwrap();
        refused(&json[..json.len() / 2], "truncated");
        refused(b"", "truncated");
        refused(b"\x00\xff not json", "not a valid bpeforge model");
        refused(b"[1, 2, 3]", "not a valid bpeforge model");
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let mut deep = b"{\"metadata\": ".to_vec();
        deep.extend(std::iter::repeat(b'[').take(100_000));
        refused(&deep, "not a valid bpeforge model");
    }

    #[test]
    fn wrong_format_and_version_are_refused() {
        refused(&edited(|v| v["format"] = "something-else".into()), "not a bpeforge model");
        refused(&edited(|v| v["version"] = 999.into()), "version");
    }

    fn set_merges(v: &mut serde_json::Value, merges: serde_json::Value) {
        v["merges"] = merges;
        v["merge_counts"] = serde_json::json!([]);
    }

    #[test]
    fn merges_must_use_earlier_ids_and_no_special_tokens() {
        refused(&edited(|v| set_merges(v, serde_json::json!([[98, 9999]]))), "merge 0");
        refused(&edited(|v| set_merges(v, serde_json::json!([[0, 98]]))), "special token");
        refused(&edited(|v| set_merges(v, serde_json::json!([[98, -1]]))), "not a valid bpeforge model");
        refused(&edited(|v| set_merges(v, serde_json::json!([[98, 4294967296u64]]))), "not a valid bpeforge model");
    }

    #[test]
    fn special_tokens_must_be_distinct_and_non_empty() {
        refused(&edited(|v| v["special_tokens"] = serde_json::json!(["<a>", "<a>"])), "twice");
        refused(&edited(|v| v["special_tokens"] = serde_json::json!([""])), "empty");
    }

    #[test]
    fn the_chars_scheme_needs_a_sound_alphabet() {
        let chars = |alphabet: serde_json::Value| {
            edited(|v| {
                v["scheme"] = serde_json::json!({"type": "chars", "unk_token": "<|endoftext|>", "end_of_word_suffix": null, "character_coverage": 1.0});
                v["alphabet"] = alphabet;
                v["merges"] = serde_json::json!([]);
                v["merge_counts"] = serde_json::json!([]);
            })
        };
        assert!(Model::from_json(&chars(serde_json::json!(["a", "b"]))).is_ok());
        refused(&chars(serde_json::Value::Null), "alphabet");
        refused(&chars(serde_json::json!(["ab"])), "not one character");
        refused(&chars(serde_json::json!(["a", "a"])), "twice");
        refused(&edited(|v| v["alphabet"] = serde_json::json!(["a"])), "must be null");
    }

    #[test]
    fn external_ids_must_be_distinct_and_in_range() {
        let n = bytes_model().vocab_size();
        refused(&edited(|v| v["ids"] = serde_json::json!(vec![0u32; n])), "twice");
        let mut big: Vec<u64> = (0..n as u64).collect();
        big[0] = MAX_EXTERNAL_ID as u64 + 5;
        refused(&edited(|v| v["ids"] = serde_json::json!(big)), "too large");
    }

    #[test]
    fn a_missing_file_is_an_input_error_naming_it() {
        let err = Model::load(Path::new("/nonexistent/dir/model.json")).unwrap_err();
        assert!(err.message().contains("model.json"), "{}", err.message());
    }
}
