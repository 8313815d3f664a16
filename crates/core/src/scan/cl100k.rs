//! cl100k_base:
//! `'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+`
//!
//! The possessive quantifiers change nothing here: what they keep could
//! never be given back to a later part of the same branch anyway.

use super::masks::{self, Block};
use super::tables::{LETTER, NEWLINE, NUMBER};
use super::tiles::{after, before, leads_of, whole_chars, Contractions, Rules, Starts};

pub(super) const RULES: Rules =
    Rules { starts, needs: masks::NEWLINES, contractions: Contractions::AloneFolded, digit_groups: true, piece_end };

/// Where pieces start in a window (see `tiles`), before contractions and
/// digit groups:
/// * a run of letters starts a piece, or the character before it does when
///   that one may lead it: whitespace other than CR/LF (always the last of
///   its run), or "other" that is a run of its own and not after a space;
/// * a run of digits, and a run of "other" not after a space (the space
///   leads it);
/// * a run of whitespace, and its last character when text follows (with
///   `\s+(?!\S)` the run gives that one back); newlines just after
///   "other" belong to it (`[\r\n]*`), and a run that ends with a newline
///   is one piece (`\s*[\r\n]`);
/// * hard: a newline followed by other whitespace, where `\s*[\r\n]` ends
///   at the last newline of the run.
#[inline(always)]
pub(super) fn starts(w: &Block) -> Starts {
    Starts {
        bits: starts_around_words(w, w.letter),
        hard: w.newline & after(w.space & !w.newline) != 0,
    }
}

/// The piece starts above, with `word` the characters a word is a run of
/// (letters here; o200k's letters and marks, which it then cuts by case).
#[inline(always)]
pub(super) fn starts_around_words(w: &Block, word: u64) -> u64 {
    let other = !(word | w.number | w.space) & w.inside;
    let other_start = other & !before(other);
    let leads_alone = whole_chars(other_start & !before(w.space_byte), w.continuation);
    let blank = w.space & !w.newline;
    let word_start = word & !before(word);
    let led = word_start & before(leads_alone | blank);
    let words = (word_start & !led) | leads_of(after(led), w.continuation);
    let digits = w.number & !before(w.number);
    let others = other_start & !before(w.space_byte);
    let space_start = w.space & !before(w.space);
    let joins_other = space_start & w.newline & before(other);
    let space_last = w.space & !after(w.space) & after(w.inside);
    let spaces = (space_start & !joins_other) | leads_of(space_last & !w.newline, w.continuation);
    words | digits | others | spaces
}

use super::{contraction_end, Text};

pub(super) fn piece_end(t: &mut Text, pos: usize) -> usize {
    if t.byte(pos) == b'\'' {
        if let Some(end) = contraction_end(t.s, pos, true) {
            return end;
        }
    }
    let (class, len) = t.at(pos);
    if class & LETTER != 0 {
        return t.run_any(pos, LETTER);
    }
    // One character that is not CR, LF, a letter or a digit may lead a
    // run of letters.
    if class & (NUMBER | NEWLINE) == 0 {
        if let Some(next) = t.class_at(pos + len) {
            if next & LETTER != 0 {
                return t.run_any(pos + len, LETTER);
            }
        }
    }
    // `\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+`
    t.digits_other_or_space(pos, class, b"\r\n")
}
