//! Pieces from boundary masks: 64 bytes at a time, no branch per character.
//!
//! For a window of 64 bytes, [`masks::block`] gives one bit per byte for
//! each class; a preset's rule (`starts` in its module) turns those masks
//! into the set of bytes where a piece starts, with a few shifts, ANDs and
//! ORs. The pieces are then the spans between consecutive start bits.
//!
//! Each rule is local: whether a piece starts at byte `i` depends only on
//! the characters within a few bytes of `i`. So a window trusts the bits
//! away from its edges (the edges hold the context), and windows overlap
//! by 11 bytes. What is not local is left to the
//! scalar scanner (`piece_end` of the preset), which then cuts the pieces
//! of that window:
//! * a rule's `hard` cases (a newline followed by other whitespace in
//!   cl100k/o200k, where `\s*[\r\n]` looks ahead to the last newline; and in
//!   o200k the case and mark rules that backtrack);
//! * a run of digits that enters the window from the left (cl100k and o200k
//!   cut digits in threes from the run's start).
//!
//! Two corrections need the text and run per window after the masks:
//! contractions (`'s`, `'ll`...; checked at the few apostrophes) and the
//! groups of three digits.
//!
//! The scanners stay the reference: the differential tests in `tests.rs`
//! hold this path, which `Scanner::split` takes for gpt2, cl100k and o200k,
//! to the regex path and to the published patterns.

use super::masks::{self, Block, BLOCK};
use super::tables::Classes;
use super::{contraction_end, next_end, piece, Text};

/// Bytes of context before and after the bits a window trusts. Before: a
/// word led by a character of up to four bytes that must start its own run
/// of "other" looks five bytes back. After: the last character of a run of
/// whitespace (up to four bytes) looks at the byte after it.
const CONTEXT_BEFORE: usize = 6;
const CONTEXT_AFTER: usize = 5;

/// Piece starts of one window, and whether the masks cannot decide them.
pub(super) struct Starts {
    pub bits: u64,
    pub hard: bool,
}

/// How a preset's contractions attach (see `contractions`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Contractions {
    /// A piece of their own at a piece start: gpt2 (case-sensitive).
    Alone,
    /// The same, case-insensitive: cl100k.
    AloneFolded,
    /// The tail of the word before them, case-insensitive: o200k.
    Suffix,
}

/// One preset for the tiler.
pub(super) struct Rules {
    pub starts: fn(&Block) -> Starts,
    /// The masks `starts` reads beyond the common ones (`masks::CASES`...).
    pub needs: u8,
    pub contractions: Contractions,
    /// `\p{N}{1,3}`: runs of digits cut in threes (cl100k, o200k).
    pub digit_groups: bool,
    /// The scalar scanner, for what the masks leave.
    pub piece_end: fn(&mut Text, usize) -> usize,
}

/// Bit `i` set where `m` has bit `i - 1`: "the byte before is in `m`".
#[inline(always)]
pub(super) fn before(m: u64) -> u64 {
    m << 1
}

/// Bit `i` set where `m` has bit `i + 1`: "the byte after is in `m`".
#[inline(always)]
pub(super) fn after(m: u64) -> u64 {
    m >> 1
}

/// `m` (on lead bytes) spread over the continuation bytes of each
/// character: all the bytes of the characters `m` marks.
#[inline(always)]
pub(super) fn whole_chars(m: u64, continuation: u64) -> u64 {
    let mut m = m;
    for _ in 0..3 {
        m |= before(m) & continuation;
    }
    m
}

/// The lead bytes of the characters whose last byte `m` marks.
#[inline(always)]
pub(super) fn leads_of(m: u64, continuation: u64) -> u64 {
    let mut m = m;
    for _ in 0..3 {
        m |= after(m & continuation);
    }
    m & !continuation
}

/// Calls `f` with each piece of `text`, in order, cutting by masks where
/// they decide and with `rules.piece_end` where they do not.
#[inline(always)]
pub(super) fn split<'t>(text: &'t str, classes: &'static Classes, rules: &Rules, f: &mut impl FnMut(&'t str)) {
    let s = text.as_bytes();
    // The scalar scanner's state, made on the first window it cuts.
    let mut scalar: Option<Text> = None;
    let len = s.len();
    // `pos`: the start of the next piece. `seen`: no piece starts in
    // `pos + 1 .. seen` (a long piece being crossed).
    let mut pos = 0;
    let mut seen = 0;
    while pos < len {
        let from = pos.max(seen);
        let base = from.saturating_sub(CONTEXT_BEFORE);
        let w = masks::block(s, base, classes, rules.needs);
        let last = base + BLOCK >= len;
        // Bits `lo..hi` of the window are trusted.
        let hi = if last { len - base } else { BLOCK - CONTEXT_AFTER };
        let mut starts = (rules.starts)(&w);
        if rules.digit_groups && !starts.hard {
            starts.hard = digit_groups(s, base, &w, &mut starts.bits);
        }
        if !starts.hard {
            starts.hard = contractions(s, base, &w, rules.contractions, &mut starts.bits);
        }
        if starts.hard {
            // The scalar scanner cuts the pieces that start in this window.
            let stop = base + hi;
            let t = scalar.get_or_insert_with(|| Text::new(s, classes));
            while pos < stop {
                let end = next_end(t, pos, &rules.piece_end);
                f(piece(text, pos, end));
                pos = end;
            }
            seen = pos;
            continue;
        }
        // Starts after `pos` (at `from` itself too when crossing a long piece).
        let lo = from - base + usize::from(from == pos);
        let mut bits = starts.bits & (!0u64 << lo) & (!0u64 >> (BLOCK - hi));
        while bits != 0 {
            let end = base + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            f(piece(text, pos, end));
            pos = end;
        }
        if last {
            f(piece(text, pos, len));
            return;
        }
        seen = base + hi;
    }
}

/// `\p{N}{1,3}`: in each run of digits of four characters or more, a piece
/// starts at every third character from the run's start. `true` when that
/// start cannot be found cheaply (a run entering the window that is long or
/// not ASCII before the window).
#[inline]
fn digit_groups(s: &[u8], base: usize, w: &Block, starts: &mut u64) -> bool {
    let digits = w.number;
    let entering = base > 0 && digits & 1 != 0;
    // Four digit bytes in a row, or a run from before: the only windows
    // with work to do.
    if !entering && digits & after(digits) & after(after(digits)) & after(after(after(digits))) == 0 {
        return false;
    }
    // Digits of the run at bit 0 before the window.
    let mut before_window = 0;
    if entering {
        let mut k = base;
        while k > 0 && s[k - 1].is_ascii_digit() {
            k -= 1;
            before_window += 1;
            if before_window > BLOCK {
                return true;
            }
        }
        if k > 0 && s[k - 1] >= 0x80 {
            return true;
        }
    }
    let mut runs = digits & !before(digits);
    while runs != 0 {
        let start = runs.trailing_zeros() as usize;
        runs &= runs - 1;
        let run = (digits >> start).trailing_ones() as usize;
        let mut chars = if start == 0 { before_window } else { 0 };
        let mut k = start;
        while k < start + run {
            if chars > 0 && chars % 3 == 0 {
                *starts |= 1 << k;
            }
            chars += 1;
            k += super::utf8_len(s[base + k]);
        }
    }
    false
}

/// The contractions (`'s 't 're 've 'm 'll 'd`) in the window.
/// `Alone`: at an apostrophe where a piece starts, the contraction is a
/// piece and a new one starts after it. `Suffix`: an apostrophe right after
/// a word joins the word with its contraction. Once only: in `it's's` the
/// second `'s` starts a piece of its own, and whether an apostrophe ends a
/// contraction depends on the whole chain before it; so `true` (hard) where
/// a candidate apostrophe follows another by two or three bytes.
#[inline]
fn contractions(s: &[u8], base: usize, w: &Block, kind: Contractions, starts: &mut u64) -> bool {
    let mut at = match kind {
        Contractions::Alone | Contractions::AloneFolded => w.apostrophe & *starts,
        Contractions::Suffix => w.apostrophe & before(w.upper | w.lower),
    };
    while at != 0 {
        let k = at.trailing_zeros() as usize;
        at &= at - 1;
        let i = base + k;
        if kind == Contractions::Suffix && (s[i.saturating_sub(3)..i.saturating_sub(1)].contains(&b'\'')) {
            return true;
        }
        let Some(end) = contraction_end(s, i, kind != Contractions::Alone) else { continue };
        let n = end - i;
        let span = ((1u64 << n) - 1) << k;
        *starts &= match kind {
            // The piece is `i..end`: nothing starts inside it.
            Contractions::Alone | Contractions::AloneFolded => !(span & !(1 << k)),
            // The word's piece goes on to `end`.
            Contractions::Suffix => !span,
        };
        if end < s.len() && k + n < BLOCK {
            *starts |= 1 << (k + n);
        }
    }
    false
}
