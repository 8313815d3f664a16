//! Text normalization before pre-tokenization: SentencePiece's normalizers
//! (`nmt_nfkc`, `nfkc`, ... or any user-defined rule table), read from their
//! precompiled charsmap.
//!
//! The identity (no normalizer) is the default and leaves every code path as
//! it was. With a charsmap, a text is rewritten as SentencePiece's
//! `Normalizer::NormalizePrefix` does, position by position: the longest key
//! of the table that prefixes the remaining bytes is replaced by its value;
//! otherwise one UTF-8 character is copied (an invalid byte becomes U+FFFD,
//! consuming that byte).
//!
//! SentencePiece's whitespace handling around it maps onto bpeforge's
//! pre-tokenizers (see `words` and docs/SEMANTICS.md): with
//! `add_dummy_prefix` + `remove_extra_whitespaces` SentencePiece's words are
//! the normalized text's runs between U+0020 characters, each with a `▁`
//! before it; that is the `whitespace` pre-tokenizer cutting at U+0020 only
//! (other whitespace the table leaves, such as U+0085 under `nmt_nfkc`, is
//! part of a word, as in SentencePiece). With `add_dummy_prefix` alone (spaces
//! kept) the dummy prefix is added to the normalized text.

mod base64;
pub mod charsmap;

use crate::error::{Error, Result};
use crate::pretok::PreTokenizerSpec;
use charsmap::Charsmap;
use serde::{Deserialize, Serialize};

/// A normalizer as stored in a model file (chars scheme).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NormalizerSpec {
    /// SentencePiece's `normalization_rule_name` (`nmt_nfkc`, `nfkc`,
    /// `user_defined`, ...), kept for exports and `inspect`.
    pub name: String,
    /// The precompiled charsmap, base64.
    pub precompiled_charsmap: String,
}

impl NormalizerSpec {
    pub fn from_charsmap(name: &str, blob: &[u8]) -> Self {
        NormalizerSpec {
            name: name.to_string(),
            precompiled_charsmap: base64::encode(blob),
        }
    }

    /// The charsmap's bytes.
    pub fn charsmap_bytes(&self) -> Result<Vec<u8>> {
        base64::decode(&self.precompiled_charsmap)
            .ok_or_else(|| Error::model("normalizer: precompiled_charsmap is not valid base64"))
    }

    /// Parses and checks the table.
    pub fn compile(&self) -> Result<Normalizer> {
        if self.name.is_empty() || self.name == "identity" {
            return Err(Error::model(format!(
                "normalizer: a charsmap named {:?}; the identity normalizer is stored as no normalizer",
                self.name
            )));
        }
        Ok(Normalizer {
            charsmap: Charsmap::parse(&self.charsmap_bytes()?)?,
            trims_end: false,
        })
    }
}

/// A compiled normalizer.
#[derive(Debug, Clone)]
pub struct Normalizer {
    charsmap: Charsmap,
    /// Drop the normalized text's trailing U+0020 and `▁` (see `words`).
    trims_end: bool,
}

impl Normalizer {
    /// `text` rewritten by the table (see the module docs).
    pub fn normalize(&self, text: &[u8]) -> String {
        let mut out = String::with_capacity(text.len() + text.len() / 8);
        let mut i = 0;
        while i < text.len() {
            let rest = &text[i..];
            if let Some((len, replacement)) = self.charsmap.longest_match(rest) {
                out.push_str(replacement);
                i += len;
                continue;
            }
            match first_char(rest) {
                Some(c) => {
                    out.push(c);
                    i += c.len_utf8();
                }
                None => {
                    out.push('\u{FFFD}');
                    i += 1;
                }
            }
        }
        if self.trims_end {
            out.truncate(out.trim_end_matches([' ', SPACE_SYMBOL]).len());
        }
        out
    }
}

/// The first character of `bytes`, if they start with a valid UTF-8 one.
#[inline]
fn first_char(bytes: &[u8]) -> Option<char> {
    let n = match bytes[0] {
        0x00..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => return None,
    };
    std::str::from_utf8(bytes.get(..n)?).ok()?.chars().next()
}

/// SentencePiece's mark for a space (U+2581).
const SPACE_SYMBOL: char = '\u{2581}';

/// How a model with a normalizer cuts a text into words: its pre-tokenizer
/// and normalizer as they apply to one text. The model's own, except that
/// with `whitespace` (SentencePiece's `add_dummy_prefix` +
/// `remove_extra_whitespaces`) words are cut at U+0020 only, as
/// SentencePiece does after normalizing (it collapses runs of U+0020 and
/// trims them; every other character is part of a word), and the
/// normalized text loses its trailing U+0020 and `▁`: SentencePiece writes a
/// space as `▁` before trimming the end, so it trims a `▁` of the text too
/// (`x ▁` encodes as `x`, `▁` alone as nothing).
pub fn words(spec: &PreTokenizerSpec, normalizer: Option<Normalizer>) -> (PreTokenizerSpec, Option<Normalizer>) {
    match (spec, normalizer) {
        (spec, Some(n)) if *spec == PreTokenizerSpec::WHITESPACE => {
            let spec = PreTokenizerSpec::Regex { pattern: "[^ ]+".to_string(), isolated: false };
            (spec, Some(Normalizer { trims_end: true, ..n }))
        }
        (_, normalizer) => (spec.clone(), normalizer),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nmt_nfkc() -> Normalizer {
        let blob = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../python/bpeforge/data/nmt_nfkc.charsmap")).unwrap();
        NormalizerSpec::from_charsmap("nmt_nfkc", &blob).compile().unwrap()
    }

    #[test]
    fn nmt_nfkc_as_sentencepiece_normalizes() {
        let n = nmt_nfkc();
        // Expected values: sentencepiece 0.2's SentencePieceNormalizer(rule_name="nmt_nfkc"),
        // before its whitespace handling.
        for (text, want) in [
            ("ｈｅｌｌｏ　ｗｏｒｌｄ", "hello world"),
            ("\u{FB01}ne \u{2460}\u{00BD}", "fine 11⁄2"),
            ("a\u{0B}b\tc\u{85}d", "ab c\u{85}d"),
            ("e\u{301}", "é"),
            ("plain ascii", "plain ascii"),
        ] {
            assert_eq!(n.normalize(text.as_bytes()), want, "{text:?}");
        }
        assert_eq!(n.normalize(b"a\xFFb\xE2\x82"), "a\u{FFFD}b\u{FFFD}\u{FFFD}");
    }

    #[test]
    fn whitespace_words_trim_trailing_spaces_and_space_marks_as_sentencepiece() {
        let (spec, n) = words(&PreTokenizerSpec::WHITESPACE, Some(nmt_nfkc()));
        assert!(matches!(spec, PreTokenizerSpec::Regex { .. }));
        let n = n.unwrap();
        assert_eq!(n.normalize("x \u{2581} \u{2581}".as_bytes()), "x");
        assert_eq!(n.normalize("\u{2581}".as_bytes()), "");
        // (nmt_nfkc's table itself maps `▁` to a space.)
        assert_eq!(n.normalize("\u{2581}a\u{2581}b".as_bytes()), " a b");
        // Spaces kept (any other pre-tokenizer): nothing is trimmed.
        let (_, kept) = words(&PreTokenizerSpec::NONE, Some(nmt_nfkc()));
        assert_eq!(kept.unwrap().normalize("x \u{2581}".as_bytes()), "x  ");
    }

    #[test]
    fn stored_form_round_trips_and_refuses_garbage() {
        let blob = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../python/bpeforge/data/nmt_nfkc.charsmap")).unwrap();
        let spec = NormalizerSpec::from_charsmap("nmt_nfkc", &blob);
        assert_eq!(spec.charsmap_bytes().unwrap(), blob);
        let bad = NormalizerSpec { name: "nmt_nfkc".into(), precompiled_charsmap: "not base64!".into() };
        assert_eq!(bad.compile().unwrap_err().kind(), crate::error::ErrorKind::ModelFormat);
        let named_identity = NormalizerSpec { name: "identity".into(), ..spec };
        assert!(named_identity.compile().is_err());
    }
}
