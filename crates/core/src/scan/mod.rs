//! Hand-written scanners for the preset pre-tokenizers.
//!
//! Each preset's published regex is a fixed alternation whose matches tile
//! the text; a scanner computes, for a piece starting at `pos`, where the
//! regex's leftmost-first match ends, by reading character classes (see
//! [`tables`]) instead of running a DFA. The look-ahead `\s+(?!\S)` and the
//! backtracking the patterns imply are worked out per preset in its module.
//!
//! The regex path in `pretok` stays as the reference: the tests in
//! `tests.rs` compare every scanner with it, and with the published pattern
//! on a backtracking engine, on random and hand-picked text.

mod cl100k;
mod gpt2;
mod o200k;
mod superword;
pub(crate) mod tables;
#[cfg(test)]
pub(crate) mod tests;

use tables::{classes, Classes, NUMBER, SPACE, WORDLIKE};

/// Which preset a [`Scanner`] cuts like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    Gpt2,
    Cl100k,
    O200k,
    /// SuperBPE stage 2: the isolated split of the `superword` pattern (`pretok::PRESETS`).
    Superword,
}

/// A preset pre-tokenizer without a regex.
#[derive(Clone, Copy)]
pub struct Scanner {
    preset: Preset,
    classes: &'static Classes,
}

impl std::fmt::Debug for Scanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scanner").field("preset", &self.preset).finish()
    }
}

impl Scanner {
    pub fn new(preset: Preset) -> Self {
        Scanner { preset, classes: classes() }
    }

    /// Calls `f` with each piece of `text`, in order; the pieces cover it.
    pub fn split<'t>(&self, text: &'t str, f: &mut impl FnMut(&'t str)) {
        let t = Text { s: text.as_bytes(), classes: self.classes };
        match self.preset {
            Preset::Gpt2 => tile(text, &t, f, gpt2::piece_end),
            Preset::Cl100k => tile(text, &t, f, cl100k::piece_end),
            Preset::O200k => tile(text, &t, f, o200k::piece_end),
            Preset::Superword => superword::split(text, &t, f),
        }
    }
}

/// Cuts `text` into consecutive pieces, each ending where `piece_end` says.
#[inline(always)]
fn tile<'t>(text: &'t str, t: &Text, f: &mut impl FnMut(&'t str), piece_end: impl Fn(&Text, usize) -> usize) {
    let mut pos = 0;
    while pos < t.len() {
        let mut end = piece_end(t, pos);
        debug_assert!(end > pos && text.is_char_boundary(end));
        if end <= pos {
            // Unreachable (every preset matches at every position); never
            // loop forever if a scanner bug says otherwise.
            end = pos + t.at(pos).1;
        }
        f(piece(text, pos, end));
        pos = end;
    }
}

/// `&text[start..end]` for offsets the scanners produce.
#[inline(always)]
fn piece(text: &str, start: usize, end: usize) -> &str {
    // Scanners only return offsets they reached by whole characters, so the
    // boundary check of `&text[start..end]` can never fail; `get` keeps the
    // code safe and the fallback is unreachable.
    text.get(start..end).unwrap_or_default()
}

/// The text being scanned, with its class table.
pub(crate) struct Text<'a> {
    s: &'a [u8],
    classes: &'static Classes,
}

impl<'a> Text<'a> {
    #[inline(always)]
    fn len(&self) -> usize {
        self.s.len()
    }

    #[inline(always)]
    fn byte(&self, i: usize) -> u8 {
        self.s[i]
    }

    /// The class and UTF-8 length of the character at `i` (`i < len`).
    #[inline(always)]
    fn at(&self, i: usize) -> (u8, usize) {
        let b = self.s[i];
        if b < 0x80 {
            (self.classes.ascii(b), 1)
        } else {
            let (cp, n) = decode(self.s, i);
            (self.classes.of(cp), n)
        }
    }

    /// The class of the character at `i`, or `None` at the end of the text.
    #[inline(always)]
    fn class_at(&self, i: usize) -> Option<u8> {
        if i < self.s.len() {
            Some(self.at(i).0)
        } else {
            None
        }
    }

    /// The end of the longest run of characters from `i` whose class `keep`s.
    #[inline(always)]
    fn run(&self, mut i: usize, keep: impl Fn(u8) -> bool) -> usize {
        let s = self.s;
        while i < s.len() {
            let b = s[i];
            if b < 0x80 {
                if !keep(self.classes.ascii(b)) {
                    break;
                }
                i += 1;
            } else {
                let (cp, n) = decode(s, i);
                if !keep(self.classes.of(cp)) {
                    break;
                }
                i += n;
            }
        }
        i
    }

    /// `run` for a class whose ASCII members are exactly `ascii`: eight
    /// bytes at a time over ASCII text (one step covers most words, so the
    /// loop exit is no longer a branch per byte), per character elsewhere.
    #[inline(always)]
    fn run_word(&self, mut i: usize, mask: u8, ascii: AsciiRange) -> usize {
        let s = self.s;
        loop {
            while let Some(chunk) = s.get(i..i + 8) {
                let n = ascii.leading_members(u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8])));
                i += n;
                if n < 8 {
                    break;
                }
            }
            let Some(&b) = s.get(i) else { return i };
            if b < 0x80 {
                // Near the end of the text: one byte at a time.
                if self.classes.ascii(b) & mask == 0 {
                    return i;
                }
                i += 1;
                continue;
            }
            // Character by character while the text is not ASCII: a word
            // of another script is tried eight bytes at a time only where
            // an ASCII byte comes back.
            loop {
                let (cp, n) = decode(s, i);
                if self.classes.of(cp) & mask == 0 {
                    return i;
                }
                i += n;
                match s.get(i) {
                    Some(&b) if b >= 0x80 => {}
                    Some(_) => break,
                    None => return i,
                }
            }
        }
    }

    /// Like `run`, but at most `max` characters.
    #[inline(always)]
    fn run_max(&self, mut i: usize, max: usize, keep: impl Fn(u8) -> bool) -> usize {
        for _ in 0..max {
            if i >= self.s.len() {
                break;
            }
            let (c, n) = self.at(i);
            if !keep(c) {
                break;
            }
            i += n;
        }
        i
    }

    /// The end of the run of ASCII bytes from `i` that are in `set`.
    #[inline(always)]
    fn run_bytes(&self, mut i: usize, set: &[u8]) -> usize {
        while i < self.s.len() && set.contains(&self.s[i]) {
            i += 1;
        }
        i
    }

    /// The start of the character that ends at `end`.
    #[inline(always)]
    fn char_start_before(&self, end: usize) -> usize {
        let mut k = end - 1;
        while self.s[k] & 0xC0 == 0x80 {
            k -= 1;
        }
        k
    }

    /// The branches cl100k and o200k end with, in order:
    /// `\p{N}{1,3}`, ` ?[^\s\p{L}\p{N}]+` followed by any run of `trailing`
    /// bytes (`[\r\n]*` or `[\r\n/]*`), then the whitespace branches.
    fn digits_other_or_space(&self, pos: usize, class: u8, trailing: &[u8]) -> usize {
        if class & NUMBER != 0 {
            return self.run_max(pos, 3, |c| c & NUMBER != 0);
        }
        let other = if class & SPACE == 0 {
            Some(pos)
        } else if self.byte(pos) == b' ' && self.class_at(pos + 1).is_some_and(|c| c & WORDLIKE == 0) {
            Some(pos + 1)
        } else {
            None
        };
        if let Some(start) = other {
            let end = self.run(start, |c| c & WORDLIKE == 0);
            return self.run_bytes(end, trailing);
        }
        self.whitespace_end(pos, true)
    }

    /// A whitespace piece starting at `pos` (the character there is `\s`),
    /// after the patterns' earlier branches failed:
    /// `\s*[\r\n]` (when `newlines`), then `\s+(?!\S)`, then `\s+`.
    #[inline]
    fn whitespace_end(&self, pos: usize, newlines: bool) -> usize {
        let end = self.run(pos, |c| c & SPACE != 0);
        if newlines {
            // `\s*[\r\n]` (o200k: `\s*[\r\n]+`, the same end): the greedy
            // `\s*` backs off to the last CR/LF in the run. CR and LF are
            // single bytes that never occur inside a multi-byte character.
            if let Some(k) = memchr::memrchr2(b'\r', b'\n', &self.s[pos..end]) {
                return pos + k + 1;
            }
        }
        if end == self.len() {
            return end;
        }
        // Followed by a non-space: `\s+(?!\S)` backs off one character,
        // which is only possible when the run has two or more; a single
        // one is the plain `\s+`.
        let last = self.char_start_before(end);
        if last > pos {
            last
        } else {
            end
        }
    }
}

/// A range of ASCII bytes, optionally after folding to lower case, tested on
/// eight bytes at once (SWAR).
#[derive(Clone, Copy)]
pub(crate) struct AsciiRange {
    fold: bool,
    lo: u8,
    hi: u8,
}

/// `[A-Za-z]`: the ASCII part of `\p{L}`.
pub(crate) const ASCII_LETTERS: AsciiRange = AsciiRange { fold: true, lo: b'a', hi: b'z' };
/// `[A-Z]`: the ASCII part of o200k's upper-ish class.
pub(crate) const ASCII_UPPER: AsciiRange = AsciiRange { fold: false, lo: b'A', hi: b'Z' };
/// `[a-z]`: the ASCII part of o200k's lower-ish class.
pub(crate) const ASCII_LOWER: AsciiRange = AsciiRange { fold: false, lo: b'a', hi: b'z' };

impl AsciiRange {
    /// How many of the eight bytes of `word` (little-endian: first byte
    /// lowest) are, from the first on, in the range.
    #[inline(always)]
    fn leading_members(self, word: u64) -> usize {
        const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
        const HIGH: u64 = 0x8080_8080_8080_8080;
        const ONES: u64 = 0x0101_0101_0101_0101;
        let mut x = word & LOW7;
        if self.fold {
            x |= ONES * 0x20;
        }
        // Per byte x <= 0x7F, so adding at most 0x80 never carries into the
        // next byte: the high bit says "x >= lo", resp. "x > hi".
        let at_least_lo = x + ONES * (0x80 - self.lo as u64);
        let above_hi = x + ONES * (0x7F - self.hi as u64);
        let members = at_least_lo & !above_hi & !word & HIGH;
        ((!members & HIGH).trailing_zeros() / 8) as usize
    }
}

/// Decodes the (valid UTF-8) character at `i`.
#[inline(always)]
fn decode(s: &[u8], i: usize) -> (u32, usize) {
    let b0 = s[i] as u32;
    if b0 < 0x80 {
        (b0, 1)
    } else if b0 < 0xE0 {
        (((b0 & 0x1F) << 6) | (s[i + 1] as u32 & 0x3F), 2)
    } else if b0 < 0xF0 {
        (((b0 & 0x0F) << 12) | ((s[i + 1] as u32 & 0x3F) << 6) | (s[i + 2] as u32 & 0x3F), 3)
    } else {
        (
            ((b0 & 0x07) << 18)
                | ((s[i + 1] as u32 & 0x3F) << 12)
                | ((s[i + 2] as u32 & 0x3F) << 6)
                | (s[i + 3] as u32 & 0x3F),
            4,
        )
    }
}

/// Where a contraction starting at `i` (`'s 't 're 've 'm 'll 'd`) ends.
/// `fold`: case-insensitively, as `(?i:...)` in the `regex` crate (simple
/// case folding, so `'ſ` is `'s` too).
#[inline]
fn contraction_end(s: &[u8], i: usize, fold: bool) -> Option<usize> {
    if s.get(i) != Some(&b'\'') {
        return None;
    }
    let lower = |k: usize| s.get(k).map(|&b| if fold { b.to_ascii_lowercase() } else { b });
    match lower(i + 1)? {
        b's' | b't' | b'm' | b'd' => Some(i + 2),
        b'r' | b'v' if lower(i + 2) == Some(b'e') => Some(i + 3),
        b'l' if lower(i + 2) == Some(b'l') => Some(i + 3),
        // U+017F LATIN SMALL LETTER LONG S folds to 's'.
        0xC5 if fold && s.get(i + 2) == Some(&0xBF) => Some(i + 3),
        _ => None,
    }
}
