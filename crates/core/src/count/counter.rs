//! Counting the pre-tokens of texts (`Counter`): the special-token split,
//! the normalizer, the pre-tokenizer and SuperBPE's second split, per text,
//! chunk and record layout.

use super::{Adder, WordCounts};
use crate::error::{Error, Result};
use crate::input::fields::OnBadRecord;
use crate::input::{Chunk, Layout};
use crate::pretok::{utf8_runs, PreTokCache, PreTokenizer, Segment, SpecialSplitter};
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};

/// Counts the pre-tokens of texts.
pub struct Counter<'a> {
    pub pretokenizer: &'a PreTokenizer,
    pub specials: &'a SpecialSplitter,
    /// Bytes scheme: invalid UTF-8 runs become pieces. Chars scheme: an error.
    pub allow_invalid_utf8: bool,
    /// SuperBPE: also count the stage-2 units (into `WordCounts::superword`).
    pub superword: Option<&'a PreTokenizer>,
    /// Language balancing: the integer weight of each language id (see
    /// `train::LanguageBalance`); chunks then carry a language per text.
    pub lang_weights: Option<&'a [u64]>,
    /// Parity balancing: key every piece by its text's language instead
    /// (`WordCounts::add_tagged`), so the weights can change after counting.
    pub tag_languages: bool,
    /// Chars scheme: SentencePiece's normalizer, applied to each text
    /// segment before pre-tokenizing (as encoding does).
    pub normalizer: Option<&'a crate::normalize::Normalizer>,
}

/// A counting thread's regex scratch space (see `PreTokenizer::split_with`).
pub struct Scratch {
    words: PreTokCache,
    superword: Option<PreTokCache>,
}

impl Counter<'_> {
    /// Scratch space for one counting thread.
    pub fn scratch(&self) -> Scratch {
        Scratch { words: self.pretokenizer.cache(), superword: self.superword.map(|p| p.cache()) }
    }

    /// Counts one text into `out`. `on_invalid` is called with the offset of
    /// the first invalid byte when invalid UTF-8 is not allowed.
    pub fn count_text(&self, text: &[u8], out: &mut WordCounts) -> std::result::Result<(), (usize, Option<Error>)> {
        self.count_weighted(text, 1, out)
    }

    /// Like `count_text`, each occurrence counting `weight`.
    pub fn count_weighted(&self, text: &[u8], weight: u64, out: &mut WordCounts) -> std::result::Result<(), (usize, Option<Error>)> {
        self.count_into(text, None, weight, None, &mut out.adder(), &mut self.scratch())
    }

    /// Counts one text with every piece keyed by `language` (see
    /// `WordCounts::add_tagged`), or plainly when `language` is None.
    /// `checked` is the same text as a `str` where the caller already knows
    /// it is UTF-8 (then it is not checked again, piece by piece).
    ///
    /// Why this function is long: it is the counting hot loop (special
    /// tokens, normalization, UTF-8 runs, both pre-tokenizers, language tags)
    /// as nested closures over one text, so the compiler inlines them into one
    /// loop; split into functions, each piece would pay a call and re-borrow.
    pub(super) fn count_into(
        &self,
        text: &[u8],
        checked: Option<&str>,
        weight: u64,
        language: Option<u16>,
        out: &mut Adder,
        scratch: &mut Scratch,
    ) -> std::result::Result<(), (usize, Option<Error>)> {
        out.stats.texts += 1;
        out.stats.bytes += text.len() as u64;
        let base = text.as_ptr() as usize;
        self.specials.split(text, &mut |seg| match seg {
            Segment::Special(_) => {
                out.stats.specials += 1;
                Ok(())
            }
            Segment::Text(seg) => {
                // Offsets of errors are in `text`; a normalized segment's pieces
                // are not, and report the segment's start.
                let seg_start = seg.as_ptr() as usize - base;
                let offset_of = |p: *const u8| (p as usize).checked_sub(base).filter(|&o| o <= text.len()).unwrap_or(seg_start);
                let normalized;
                let seg = match self.normalizer {
                    Some(n) => {
                        if let (Err(e), false) = (std::str::from_utf8(seg), self.allow_invalid_utf8) {
                            return Err((seg_start + e.valid_up_to(), None));
                        }
                        normalized = n.normalize(seg);
                        normalized.as_bytes()
                    }
                    None => seg,
                };
                let mut count_run = |run: std::result::Result<&str, &[u8]>| match run {
                    Ok(s) => {
                        if let (Some(p2), Some(second), Some(cache)) =
                            (self.superword, out.superword.as_deref_mut(), scratch.superword.as_mut())
                        {
                            p2.split_with(cache, s, &mut |piece| second.add(piece.as_bytes(), weight))
                                .map_err(|e| (offset_of(s.as_ptr()), Some(e)))?;
                        }
                        let mut pieces = 0u64;
                        let r = self
                            .pretokenizer
                            .split_with(&mut scratch.words, s, &mut |piece| {
                                pieces += 1;
                                match language {
                                    None => out.add(piece.as_bytes(), weight),
                                    Some(l) => out.add_tagged(l, piece.as_bytes(), weight),
                                }
                            })
                            .map_err(|e| (offset_of(s.as_ptr()), Some(e)));
                        out.stats.pieces += pieces;
                        r
                    }
                    Err(bad) => {
                        if self.allow_invalid_utf8 {
                            out.stats.pieces += 1;
                            match language {
                                None => out.add(bad, weight),
                                Some(l) => out.add_tagged(l, bad, weight),
                            }
                            if let Some(second) = out.superword.as_deref_mut() {
                                second.add(bad, weight);
                            }
                            Ok(())
                        } else {
                            Err((offset_of(bad.as_ptr()), None))
                        }
                    }
                };
                // A segment of checked text needs no second check: its ends
                // are found in O(1) (`str::get` checks they are char boundaries).
                let checked_seg = match (checked, self.normalizer) {
                    (Some(t), None) => t.get(seg_start..seg_start + seg.len()),
                    _ => None,
                };
                match checked_seg {
                    Some(s) if !s.is_empty() => count_run(Ok(s)),
                    Some(_) => Ok(()),
                    None => utf8_runs(seg, &mut count_run),
                }
            }
        })
    }

    /// The (weight, tagged language) a text of language `lang` counts with.
    pub(super) fn weigh(&self, lang: Option<u16>) -> (u64, Option<u16>) {
        match (self.tag_languages, self.lang_weights, lang) {
            (true, _, l) => (1, Some(l.unwrap_or(0))),
            (false, Some(w), Some(l)) => (w[l as usize], None),
            _ => (1, None),
        }
    }

    /// Counts every text of a chunk; errors name the source and line.
    pub fn count_chunk(&self, chunk: &Chunk, out: &mut WordCounts) -> Result<()> {
        self.count_chunk_until(chunk, out, None)
    }

    /// `count_chunk` that gives up (with `Interrupted`) soon after `cancel` is set.
    pub fn count_chunk_until(&self, chunk: &Chunk, out: &mut WordCounts, cancel: Option<&AtomicBool>) -> Result<()> {
        self.count_chunk_with(chunk, out, cancel, &mut self.scratch())
    }

    /// `count_chunk_until` with the thread's own scratch space.
    pub fn count_chunk_with(
        &self,
        chunk: &Chunk,
        out: &mut WordCounts,
        cancel: Option<&AtomicBool>,
        scratch: &mut Scratch,
    ) -> Result<()> {
        let mut index = 0usize;
        let mut out = out.adder();
        let fields = match &chunk.layout {
            Layout::Fields(f) => Some(&**f),
            _ => None,
        };
        let mut texts: Vec<Cow<[u8]>> = Vec::new();
        // A chunk of lines is checked as UTF-8 once, in bulk (per line,
        // lines of ~140 bytes, the check was 3.6% of counting multi-1m); a
        // line of it is then a `str` in O(1). Invalid chunks are checked
        // line by line, which finds and reports (or keeps) the bad bytes.
        let chunk_text = match chunk.layout {
            Layout::Lines | Layout::Whole => simdutf8::basic::from_utf8(&chunk.data).ok(),
            _ => None,
        };
        chunk.for_each_text(&mut |text, offset| {
            if index % 1024 == 1023 && cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                return Err(Error::interrupted());
            }
            let (mut weight, mut language) = self.weigh(chunk.langs.get(index).copied());
            index += 1;
            let Some(fields) = fields else {
                let checked = chunk_text.and_then(|t| t.get(offset..offset + text.len()));
                return self
                    .count_into(text, checked, weight, language, &mut out, scratch)
                    .map_err(|(at, err)| count_error(chunk, text, at, offset + at, err));
            };
            texts.clear();
            // A record's own language (lang_field) wins over the chunk's.
            let read = fields.texts(text, &mut texts);
            match read.and_then(|()| if texts.is_empty() { Ok(None) } else { fields.language(text) }) {
                Ok(Some(lang)) => (weight, language) = self.weigh(Some(lang)),
                Ok(_) => {}
                Err(why) => {
                    return match fields.on_bad_record {
                        OnBadRecord::Skip => {
                            out.stats.bad_records += 1;
                            Ok(())
                        }
                        OnBadRecord::Error => Err(crate::input::fields::bad_record(&chunk.source, chunk.line_of(offset), &why)),
                    };
                }
            }
            for field in &texts {
                self.count_into(field, None, weight, language, &mut out, scratch)
                    .map_err(|(at, err)| count_error(chunk, field, at, offset, err))?;
            }
            Ok(())
        })
    }
}

/// The error for a text that could not be counted: `at` is the offset in
/// `text`, `located` an offset in the chunk on the same line, `err` the
/// pre-tokenizer's error, or None for invalid UTF-8.
fn count_error(chunk: &Chunk, text: &[u8], at: usize, located: usize, err: Option<Error>) -> Error {
    let line = chunk.line_of(located);
    let whole_line = !matches!(chunk.layout, Layout::Fields(_));
    match err {
        Some(e) => e.with_context(format_args!("{}, line {}", chunk.source, line)),
        None => Error::input(format!(
            "{}, line {}: invalid UTF-8 (byte 0x{:02x} at byte {} of the {}); the chars scheme needs valid UTF-8 — fix or drop the line, or use scheme=\"bytes\", which keeps invalid bytes as their own pieces",
            chunk.source,
            line,
            text[at],
            at + 1,
            if whole_line { "line" } else { "field" }
        )),
    }
}
