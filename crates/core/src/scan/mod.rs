//! Hand-written scanners for the preset pre-tokenizers.
//!
//! Each preset's published regex is a fixed alternation whose matches tile
//! the text; a scanner computes, for a piece starting at `pos`, where the
//! regex's leftmost-first match ends, by reading character classes (see
//! [`tables`]) instead of running a DFA. The look-ahead `\s+(?!\S)` and the
//! backtracking the patterns imply are worked out per preset in its module.
//!
//! gpt2, cl100k and o200k run on [`tiles`]: boundary masks that cut 64
//! bytes at a time and hand the cases those cannot decide to the scanners
//! here (`piece_end` of each preset); `superword` runs on its scanner.
//!
//! The regex path in `pretok` stays as the reference: the tests in
//! `tests.rs` compare every scanner with it, and with the published pattern
//! on a backtracking engine, on random and hand-picked text, and the masks
//! with the scalar scanners.

mod cl100k;
mod gpt2;
mod masks;
mod o200k;
mod superword;
pub(crate) mod tables;
mod tiles;
#[cfg(test)]
pub(crate) mod tests;

use masks::{Block, BLOCK};
use tables::{classes, Classes, LETTER, LOWERISH, NUMBER, SPACE, UPPERISH, WORDLIKE};

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
        match self.preset {
            Preset::Gpt2 => tiles::split(text, self.classes, &gpt2::RULES, f),
            Preset::Cl100k => tiles::split(text, self.classes, &cl100k::RULES, f),
            Preset::O200k => tiles::split(text, self.classes, &o200k::RULES, f),
            Preset::Superword => superword::split(text, &mut Text::new(text.as_bytes(), self.classes), f),
        }
    }

    /// [`split`](Self::split) by the scalar scanners alone, piece by piece:
    /// what the masks are held to in the tests.
    #[cfg(test)]
    pub(crate) fn split_scalar<'t>(&self, text: &'t str, f: &mut impl FnMut(&'t str)) {
        let mut t = Text::new(text.as_bytes(), self.classes);
        match self.preset {
            Preset::Gpt2 => tile(text, &mut t, f, gpt2::piece_end),
            Preset::Cl100k => tile(text, &mut t, f, cl100k::piece_end),
            Preset::O200k => tile(text, &mut t, f, o200k::piece_end),
            Preset::Superword => superword::split(text, &mut t, f),
        }
    }
}

/// Cuts `text` into consecutive pieces, each ending where `piece_end` says.
#[cfg(test)]
fn tile<'t>(
    text: &'t str,
    t: &mut Text,
    f: &mut impl FnMut(&'t str),
    piece_end: impl Fn(&mut Text, usize) -> usize,
) {
    let mut pos = 0;
    while pos < t.len() {
        let end = next_end(t, pos, &piece_end);
        f(piece(text, pos, end));
        pos = end;
    }
}

/// The end of the piece at `pos`, by the scalar scanner `piece_end`.
#[inline(always)]
fn next_end(t: &mut Text, pos: usize, piece_end: &impl Fn(&mut Text, usize) -> usize) -> usize {
    let end = piece_end(t, pos);
    debug_assert!(end > pos && t.s.get(..end).is_some_and(|b| std::str::from_utf8(b).is_ok()));
    if end > pos {
        end
    } else {
        // Unreachable (every preset matches at every position); never loop
        // forever if a scanner bug says otherwise.
        pos + t.at(pos).1
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

/// Blocks of class masks a [`Text`] holds at once: a window that slides
/// forward with the scan (16 blocks: 1 KiB of text, 640 bytes of masks).
const SEGMENT: usize = 16;

/// The text being scanned, with its class table and the class masks of the
/// blocks around the scan position.
pub(crate) struct Text<'a> {
    s: &'a [u8],
    classes: &'static Classes,
    /// Blocks `first .. first + held` of the text.
    first: usize,
    held: usize,
    blocks: [Block; SEGMENT],
}

impl<'a> Text<'a> {
    fn new(s: &'a [u8], classes: &'static Classes) -> Self {
        Text { s, classes, first: 0, held: 0, blocks: [Block::default(); SEGMENT] }
    }

    #[inline(always)]
    fn len(&self) -> usize {
        self.s.len()
    }

    #[inline(always)]
    fn byte(&self, i: usize) -> u8 {
        self.s[i]
    }

    /// The class masks of block `b` (any block; past the text, none set).
    #[inline(always)]
    fn block(&mut self, b: usize) -> &Block {
        let k = b.wrapping_sub(self.first);
        if k < self.held {
            return &self.blocks[k];
        }
        self.hold_from(b)
    }

    /// Computes the masks of the blocks from `b` on.
    #[cold]
    #[inline(never)]
    fn hold_from(&mut self, b: usize) -> &Block {
        let n = SEGMENT.min(self.s.len().div_ceil(BLOCK).saturating_sub(b)).max(1);
        for (k, block) in self.blocks[..n].iter_mut().enumerate() {
            *block = masks::block(self.s, (b + k) * BLOCK, self.classes, masks::ALL);
        }
        self.first = b;
        self.held = n;
        &self.blocks[0]
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

    /// The end of the longest run of characters from `i` (a character
    /// boundary) with any of the class `bits`.
    #[inline(always)]
    fn run_any(&mut self, i: usize, bits: u8) -> usize {
        let off = i % BLOCK;
        let mut b = i / BLOCK;
        // The shift clears the bits above the block: a run that reaches the
        // block's end has exactly `BLOCK - off` ones.
        let ones = (self.block(b).any(bits) >> off).trailing_ones() as usize;
        if ones < BLOCK - off {
            return i + ones;
        }
        loop {
            b += 1;
            if b * BLOCK >= self.s.len() {
                return self.s.len();
            }
            let ones = self.block(b).any(bits).trailing_ones() as usize;
            if ones < BLOCK {
                return b * BLOCK + ones;
            }
        }
    }

    /// The end of the longest run of characters from `i` (a character
    /// boundary) with none of the class `bits`.
    #[inline(always)]
    fn run_none(&mut self, i: usize, bits: u8) -> usize {
        let off = i % BLOCK;
        let mut b = i / BLOCK;
        let ones = (!self.block(b).any(bits) >> off).trailing_ones() as usize;
        if ones < BLOCK - off {
            return (i + ones).min(self.s.len());
        }
        loop {
            b += 1;
            if b * BLOCK >= self.s.len() {
                return self.s.len();
            }
            let ones = (!self.block(b).any(bits)).trailing_ones() as usize;
            if ones < BLOCK {
                return (b * BLOCK + ones).min(self.s.len());
            }
        }
    }

    /// The end of the last character in `start..end` with all of the class
    /// `bits`, if any.
    fn last_with_all(&mut self, start: usize, end: usize, bits: u8) -> Option<usize> {
        let mut b = (end - 1) / BLOCK;
        loop {
            let block = self.block(b);
            let mut m = !0u64;
            for bit in [LETTER, NUMBER, SPACE, UPPERISH, LOWERISH] {
                if bits & bit != 0 {
                    m &= block.any(bit);
                }
            }
            // Keep the bytes of `start..end` in this block.
            let lo = (b * BLOCK).max(start) - b * BLOCK;
            let hi = end.min((b + 1) * BLOCK) - b * BLOCK;
            m &= (!0u64 >> (BLOCK - hi)) & (!0u64 << lo);
            if m != 0 {
                // A character's bits cover all its bytes: the highest is its last.
                return Some(b * BLOCK + 63 - m.leading_zeros() as usize + 1);
            }
            if b * BLOCK <= start {
                return None;
            }
            b -= 1;
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
    fn digits_other_or_space(&mut self, pos: usize, class: u8, trailing: &[u8]) -> usize {
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
            let end = self.run_none(start, WORDLIKE);
            return self.run_bytes(end, trailing);
        }
        self.whitespace_end(pos, true)
    }

    /// A whitespace piece starting at `pos` (the character there is `\s`),
    /// after the patterns' earlier branches failed:
    /// `\s*[\r\n]` (when `newlines`), then `\s+(?!\S)`, then `\s+`.
    #[inline]
    fn whitespace_end(&mut self, pos: usize, newlines: bool) -> usize {
        let end = self.run_any(pos, SPACE);
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

/// The length of the UTF-8 character whose lead byte is `b`.
#[inline(always)]
fn utf8_len(b: u8) -> usize {
    match b {
        0..=0xBF => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
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
