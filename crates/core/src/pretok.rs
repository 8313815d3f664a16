//! Pre-tokenization: cutting a text into the pieces ("words") that BPE merges
//! never cross, plus the special-token splitter that runs before it.
//!
//! Guarantees:
//! * The presets (`PRESETS`: `gpt2`, `cl100k`, `o200k`, `superword`) give exactly the
//!   matches of the published regexes. They run on hand-written scanners
//!   (`crate::scan`); the regex path below stays as their reference
//!   (`PreTokenizer::regex_reference`) and runs custom patterns.
//! * Every preset covers its input completely, so byte-level BPE is lossless.
//! * Matching is linear in the text length for presets and for custom
//!   patterns that the `regex` crate accepts. Custom patterns that need
//!   look-around or back-references run on a backtracking engine with a step
//!   limit of 1,000,000 per search and a time budget of 0.25 s + 1 s per MiB
//!   for a whole text: a pathological pattern fails with a clear error
//!   instead of hanging.
//!
//! Performance notes for the regex path (measured on multi-200k, 1 thread;
//! see bench/):
//! * The published GPT-style patterns contain `\s+(?!\S)`, a look-ahead that
//!   forces a backtracking engine (fancy-regex) onto the whole pattern. We drop
//!   that alternative, match with the `regex` crate's DFA, and emulate it: a
//!   whitespace-only match of n >= 2 characters that came from the final `\s+`
//!   branch and is followed by a non-space gives back its last character.
//! * Searches are anchored at the end of the previous piece (the presets match
//!   at every position), so only the forward DFA runs: no reverse scan to find
//!   the start of each match.

mod choice;
mod presets;
mod spec_serde;

use crate::error::{Error, Result};
use crate::scan::Scanner;
pub use choice::PreTokenizerChoice;
use presets::Cut;
pub(crate) use presets::Split;
pub use presets::{preset, preset_pattern, PresetDef, PresetRegex, PRESETS};
use aho_corasick::{AhoCorasick, MatchKind};
use regex_automata::{meta, Anchored, Input};

/// The pre-tokenizer a training run uses when none is named (the one place
/// this default is spelled; the Python API and the CLI read it from here).
///
/// `o200k`: its letter classes include combining marks (`\p{M}`), so in
/// scripts whose vowels are marks (Devanagari, Tamil, Telugu, Khmer, Tibetan,
/// ...) a word stays one piece and merges can cross its marks. `gpt2` leaves
/// marks out of `\p{L}+`: every mark is a piece of its own, and those scripts
/// pay 2-4x the tokens of English on parallel text. Models record their
/// pre-tokenizer, so models trained under an older default keep theirs.
pub const DEFAULT_PRETOKENIZER: &str = DEFAULT_PRESET.name;

/// `DEFAULT_PRETOKENIZER`'s row.
pub const DEFAULT_PRESET: &PresetDef = &presets::O200K;

/// Step limit for backtracking custom patterns, per search.
const BACKTRACK_LIMIT: usize = 1_000_000;

/// Which pre-tokenizer; stored in the model file as `{"type": name}` for a
/// preset and `{"type": "regex", "pattern": ..., "isolated": ...}` for a
/// custom regex (`spec_serde`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PreTokenizerSpec {
    /// A row of `PRESETS`.
    Preset(&'static PresetDef),
    /// A custom regex. `isolated`: the text between matches is a piece too
    /// (every regex a user trains with: nothing is lost). Without it only the
    /// matches are pieces, as tiktoken and HF's `Split(Removed, invert)` cut:
    /// models imported from them, and files written before the field existed.
    Regex { pattern: String, isolated: bool },
}

impl PreTokenizerSpec {
    /// The preset named `name` (its name or an alias, `PRESETS`).
    pub fn named(name: &str) -> Option<Self> {
        preset(name).map(Self::Preset)
    }
    /// This spec's row of `PRESETS` (None for a custom regex).
    pub fn preset(&self) -> Option<&'static PresetDef> {
        match self {
            Self::Preset(p) => Some(p),
            Self::Regex { .. } => None,
        }
    }
    /// The preset name, or the custom pattern.
    pub fn name(&self) -> &str {
        match self {
            Self::Preset(p) => p.name,
            Self::Regex { pattern, .. } => pattern,
        }
    }
    /// The full published regex for regex-based presets, or the custom
    /// pattern (for exports).
    pub fn pattern(&self) -> Option<&str> {
        match self {
            Self::Preset(p) => p.regex().map(|r| r.pattern),
            Self::Regex { pattern, .. } => Some(pattern),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lookahead {
    /// No `\s+(?!\S)` emulation.
    Off,
    /// Emulate for any whitespace-only match (gpt2).
    AnyWhitespace,
    /// Emulate only when the match does not end in CR/LF: such matches come
    /// from the earlier `\s*[\r\n]` branch (cl100k, o200k).
    NotAfterNewline,
}

#[derive(Debug)]
enum Engine {
    /// A preset's regex, whose matches cover the text.
    Dfa { re: meta::Regex, lookahead: Lookahead },
    /// A custom regex on the linear engine; `isolated`: gaps are pieces.
    Regex { re: meta::Regex, isolated: bool },
    /// A custom regex that needs backtracking (look-around); `isolated` as above.
    Backtrack(Box<fancy_regex::Regex>, bool),
    /// A preset's regex whose matches and gaps are pieces (`Split::Isolated`).
    Isolated(meta::Regex),
    /// A preset's hand-written scanner (`crate::scan`).
    Scan(Scanner),
    Whitespace,
    Whole,
}

/// A compiled pre-tokenizer. Cheap to share between threads (`Sync`).
#[derive(Debug)]
pub struct PreTokenizer {
    spec: PreTokenizerSpec,
    engine: Engine,
}

/// The linear-time engine for `pattern`; its error says why it cannot run
/// it (then a custom pattern goes to the backtracking engine).
fn compile_meta(pattern: &str) -> std::result::Result<meta::Regex, meta::BuildError> {
    meta::Regex::builder().configure(meta::Config::new().utf8_empty(true)).build(pattern)
}

/// Python's `str.isspace()`: Unicode White_Space plus the four information
/// separators U+001C..U+001F. Used by the `whitespace` preset (`str.split()`).
#[inline]
pub fn is_split_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

impl PreTokenizer {
    /// A preset's hand-written scanner where it has one; the regex path
    /// otherwise.
    pub fn new(spec: PreTokenizerSpec) -> Result<Self> {
        match spec.preset().and_then(PresetDef::regex).and_then(|r| r.scanner) {
            Some(scanner) => Ok(PreTokenizer { engine: Engine::Scan(Scanner::new(scanner)), spec }),
            None => Self::regex_reference(spec),
        }
    }

    /// The regex engine for any spec, the presets included (which `new`
    /// gives to their hand-written scanners): the reference that tests and
    /// benchmarks compare the scanners with, and what a preset without a
    /// scanner runs on.
    #[doc(hidden)]
    pub fn regex_reference(spec: PreTokenizerSpec) -> Result<Self> {
        let engine = match &spec {
            PreTokenizerSpec::Preset(p) => match &p.cut {
                Cut::Regex(r) => {
                    let re = compile_meta(r.fast)
                        .map_err(|e| Error::parameter(format!("pretokenizer {:?}: {e}", p.name)))?;
                    match r.split {
                        Split::Covering(lookahead) => Engine::Dfa { re, lookahead },
                        Split::Isolated => Engine::Isolated(re),
                    }
                }
                Cut::Whitespace => Engine::Whitespace,
                Cut::Whole => Engine::Whole,
            },
            PreTokenizerSpec::Regex { pattern, isolated } => {
                if pattern.is_empty() {
                    return Err(Error::parameter(
                        "pretokenizer: the custom regex is empty; use pretokenizer=\"none\" to keep each text whole",
                    ));
                }
                if pattern.len() > 100_000 {
                    return Err(Error::parameter("pretokenizer: the custom regex is longer than 100000 bytes"));
                }
                match compile_meta(pattern) {
                    Ok(re) => Engine::Regex { re, isolated: *isolated },
                    Err(dfa_err) => {
                        let re = fancy_regex::RegexBuilder::new(pattern)
                            .backtrack_limit(BACKTRACK_LIMIT)
                            .build()
                            .map_err(|e| {
                                Error::parameter(format!(
                                    "pretokenizer: invalid regex {pattern:?}: {e} (linear engine said: {dfa_err})"
                                ))
                            })?;
                        Engine::Backtrack(Box::new(re), *isolated)
                    }
                }
            }
        };
        Ok(PreTokenizer { spec, engine })
    }

    pub fn spec(&self) -> &PreTokenizerSpec {
        &self.spec
    }

    /// Calls `f` with each piece of `text`, in order. Empty pieces are skipped.
    pub fn split<'t>(&self, text: &'t str, f: &mut impl FnMut(&'t str)) -> Result<()> {
        self.split_impl(text, f, None)
    }

    /// Scratch space for `split_with`; one per thread.
    pub fn cache(&self) -> PreTokCache {
        PreTokCache(match &self.engine {
            Engine::Dfa { re, .. } | Engine::Regex { re, .. } | Engine::Isolated(re) => Some(re.create_cache()),
            _ => None,
        })
    }

    /// `split` with the caller's own regex scratch space. `split` borrows one
    /// from the regex's shared pool for every match; for all threads but the
    /// pool's owner that is a mutex round trip per pre-token (9% of
    /// counting time with 2 workers on multi-1m).
    pub fn split_with<'t>(&self, cache: &mut PreTokCache, text: &'t str, f: &mut impl FnMut(&'t str)) -> Result<()> {
        self.split_impl(text, f, cache.0.as_mut())
    }

    fn split_impl<'t>(&self, text: &'t str, f: &mut impl FnMut(&'t str), mut cache: Option<&mut meta::Cache>) -> Result<()> {
        match &self.engine {
            Engine::Dfa { re, lookahead } => {
                split_covering(re, &mut cache, *lookahead, text, f);
                Ok(())
            }
            Engine::Regex { re, isolated } => {
                let mut gaps = Gaps::new(text, *isolated);
                for m in re.find_iter(text) {
                    gaps.piece(m.start(), m.end(), f);
                }
                gaps.finish(f);
                Ok(())
            }
            Engine::Backtrack(re, isolated) => {
                // The step limit bounds one search, not a whole text, and the
                // bodies of look-arounds run uncounted; so the whole split gets
                // a time budget: 0.25 s plus 1 s per MiB of text, checked
                // after every search (a clock read is ~20 ns).
                let start = std::time::Instant::now();
                let budget = 0.25 + text.len() as f64 / (1u64 << 20) as f64;
                let mut gaps = Gaps::new(text, *isolated);
                for m in re.find_iter(text) {
                    if start.elapsed().as_secs_f64() > budget {
                        return Err(Error::input(format!(
                            "pretokenizer: the custom regex needs more than {budget:.1} s on a text of {} bytes (its look-around makes it slow); simplify the pattern",
                            text.len()
                        )));
                    }
                    let m = m.map_err(|e| {
                        Error::input(format!(
                            "pretokenizer: the custom regex gave up on a text of {} bytes ({e}); simplify the pattern",
                            text.len()
                        ))
                    })?;
                    gaps.piece(m.start(), m.end(), f);
                }
                gaps.finish(f);
                Ok(())
            }
            Engine::Isolated(re) => {
                split_isolated(re, &mut cache, text, f);
                Ok(())
            }
            Engine::Scan(scanner) => {
                scanner.split(text, f);
                Ok(())
            }
            Engine::Whitespace => {
                for w in text.split(is_split_space) {
                    if !w.is_empty() {
                        f(w);
                    }
                }
                Ok(())
            }
            Engine::Whole => {
                if !text.is_empty() {
                    f(text);
                }
                Ok(())
            }
        }
    }

    /// Convenience: the pieces as a vector.
    pub fn pieces<'t>(&self, text: &'t str) -> Result<Vec<&'t str>> {
        let mut out = Vec::new();
        self.split(text, &mut |p| out.push(p))?;
        Ok(out)
    }
}

/// A custom regex's pieces with nothing lost: its matches, and the text
/// between them as pieces of their own (HF's `Split` with "isolated"
/// behaviour). Without the gaps, text the regex does not match would vanish
/// from training and from encoding, breaking the bytes scheme's promise that
/// decode(encode(text)) == text.
/// With `isolated` false, only the matches (imported models whose source
/// drops the gaps).
struct Gaps<'t> {
    text: &'t str,
    done: usize,
    isolated: bool,
}

impl<'t> Gaps<'t> {
    fn new(text: &'t str, isolated: bool) -> Self {
        Gaps { text, done: 0, isolated }
    }
    /// A match at `start..end`: the gap before it, then the match (empty matches are skipped).
    fn piece(&mut self, start: usize, end: usize, f: &mut impl FnMut(&'t str)) {
        if end > start {
            if self.isolated && start > self.done {
                f(&self.text[self.done..start]);
            }
            f(&self.text[start..end]);
            self.done = end;
        }
    }
    fn finish(self, f: &mut impl FnMut(&'t str)) {
        if self.isolated && self.done < self.text.len() {
            f(&self.text[self.done..]);
        }
    }
}

/// Per-thread scratch space of a pre-tokenizer (see `PreTokenizer::split_with`).
#[derive(Debug)]
pub struct PreTokCache(Option<meta::Cache>);

/// One search, with the caller's cache when there is one.
#[inline]
fn search(re: &meta::Regex, cache: &mut Option<&mut meta::Cache>, input: &Input) -> Option<regex_automata::Match> {
    match cache {
        Some(c) => re.search_with(c, input),
        None => re.search(input),
    }
}

/// Anchored matching from the end of each piece; see the module notes.
fn split_covering<'t>(
    re: &meta::Regex,
    cache: &mut Option<&mut meta::Cache>,
    lookahead: Lookahead,
    text: &'t str,
    f: &mut impl FnMut(&'t str),
) {
    let mut pos = 0;
    while pos < text.len() {
        let input = Input::new(text).range(pos..).anchored(Anchored::Yes);
        let (start, mut end) = match search(re, cache, &input) {
            Some(m) if m.end() > pos => (pos, m.end()),
            _ => {
                // Not expected for the presets; stay correct anyway.
                match search(re, cache, &Input::new(text).range(pos..)) {
                    Some(m) if m.end() > m.start() => (m.start(), m.end()),
                    _ => return,
                }
            }
        };
        if lookahead != Lookahead::Off && end < text.len() {
            end = emulate_lookahead(text, start, end, lookahead);
        }
        f(&text[start..end]);
        pos = end;
    }
}

/// The isolated split of a preset's pattern (`superword`'s): matches and
/// gaps are pieces. ` +(?!\S)` is emulated: a run of spaces followed by a non-space gives
/// back its last space, and a single such space is no match at all (it stays
/// in the gap, joining the words around it).
fn split_isolated<'t>(re: &meta::Regex, cache: &mut Option<&mut meta::Cache>, text: &'t str, f: &mut impl FnMut(&'t str)) {
    let mut pos = 0;
    let mut gap = 0;
    while pos < text.len() {
        let Some(m) = search(re, cache, &Input::new(text).range(pos..)) else { break };
        let (start, mut end) = (m.start(), m.end());
        if end == start {
            break;
        }
        let piece = &text.as_bytes()[start..end];
        if piece.iter().all(|&b| b == b' ') {
            if let Some(c) = text[end..].chars().next() {
                if !c.is_whitespace() {
                    if end - start == 1 {
                        pos = start + 1;
                        continue;
                    }
                    end -= 1;
                }
            }
        }
        if start > gap {
            f(&text[gap..start]);
        }
        f(&text[start..end]);
        gap = end;
        pos = end;
    }
    if gap < text.len() {
        f(&text[gap..]);
    }
}

/// `\s+(?!\S)` emulation: a whitespace run of >= 2 chars followed by a
/// non-space char gives back its last char (which then starts the next piece).
#[inline]
fn emulate_lookahead(text: &str, start: usize, end: usize, lookahead: Lookahead) -> usize {
    let piece = &text[start..end];
    let first = piece.as_bytes()[0];
    // Fast reject: most pieces start with a letter, digit or punctuation.
    if !(first == b' ' || first == b'\t' || first == b'\n' || first == b'\r' || first >= 0x80 || first == 0x0b || first == 0x0c) {
        return end;
    }
    let next = text[end..].chars().next();
    match next {
        Some(c) if !c.is_whitespace() => {}
        _ => return end,
    }
    let mut count = 0usize;
    let mut last = ' ';
    let mut last_len = 0usize;
    for c in piece.chars() {
        if !c.is_whitespace() {
            return end;
        }
        count += 1;
        last = c;
        last_len = c.len_utf8();
    }
    if count < 2 {
        return end;
    }
    if lookahead == Lookahead::NotAfterNewline && (last == '\n' || last == '\r') {
        return end;
    }
    end - last_len
}

/// Splits texts at special tokens: leftmost match first, longest among
/// matches that start at the same place.
#[derive(Debug, Clone)]
pub struct SpecialSplitter {
    matcher: Option<AhoCorasick>,
    tokens: Vec<String>,
}

/// A part of a text: either ordinary text or the special token with index `i`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment<'t> {
    Text(&'t [u8]),
    Special(usize),
}

impl SpecialSplitter {
    pub fn new(tokens: &[String]) -> Result<Self> {
        for t in tokens {
            if t.is_empty() {
                return Err(Error::parameter("special_tokens: an empty string cannot be a special token"));
            }
        }
        let matcher = if tokens.is_empty() {
            None
        } else {
            Some(
                AhoCorasick::builder()
                    .match_kind(MatchKind::LeftmostLongest)
                    // The DFA build is quadratic on long repetitive tokens
                    // ("x" * 100000 took 44 s); the NFA builds in linear time.
                    .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
                    .build(tokens)
                    .map_err(|e| Error::parameter(format!("special_tokens: {e}")))?,
            )
        };
        Ok(SpecialSplitter { matcher, tokens: tokens.to_vec() })
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    pub fn tokens(&self) -> &[String] {
        &self.tokens
    }

    /// Calls `f` for each segment of `text` in order (empty text segments skipped).
    pub fn split<'t, E>(&self, text: &'t [u8], f: &mut impl FnMut(Segment<'t>) -> std::result::Result<(), E>) -> std::result::Result<(), E> {
        let Some(m) = &self.matcher else {
            if !text.is_empty() {
                f(Segment::Text(text))?;
            }
            return Ok(());
        };
        let mut pos = 0;
        for hit in m.find_iter(text) {
            if hit.start() > pos {
                f(Segment::Text(&text[pos..hit.start()]))?;
            }
            f(Segment::Special(hit.pattern().as_usize()))?;
            pos = hit.end();
        }
        if pos < text.len() {
            f(Segment::Text(&text[pos..]))?;
        }
        Ok(())
    }
}

/// Splits bytes into valid UTF-8 runs (as `str`) and invalid runs.
pub fn utf8_runs<'t, E>(
    mut bytes: &'t [u8],
    f: &mut impl FnMut(std::result::Result<&'t str, &'t [u8]>) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    // Nearly every text is valid: one SIMD check, then std's error details
    // only for the rare text that is not.
    if let Ok(s) = simdutf8::basic::from_utf8(bytes) {
        return if s.is_empty() { Ok(()) } else { f(Ok(s)) };
    }
    while !bytes.is_empty() {
        match std::str::from_utf8(bytes) {
            Ok(s) => {
                f(Ok(s))?;
                return Ok(());
            }
            Err(e) => {
                let good = e.valid_up_to();
                if good > 0 {
                    // SAFETY-free: from_utf8 on the validated prefix cannot fail.
                    f(Ok(std::str::from_utf8(&bytes[..good]).unwrap_or_default()))?;
                }
                // Group consecutive invalid sequences into one run.
                let mut bad_end = good + e.error_len().unwrap_or(bytes.len() - good);
                loop {
                    match std::str::from_utf8(&bytes[bad_end..]) {
                        Err(e2) if e2.valid_up_to() == 0 => {
                            bad_end += e2.error_len().unwrap_or(bytes.len() - bad_end);
                        }
                        _ => break,
                    }
                }
                f(Err(&bytes[good..bad_end]))?;
                bytes = &bytes[bad_end..];
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
