//! o200k_base:
//! ```text
//! [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//! |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//! |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//! ```
//! Call the two bracket classes U ("upper-ish") and W ("lower-ish"); Lm, Lo
//! and the marks are in both. Unlike the other presets the word branches
//! backtrack, and leftmost-first order matters:
//! * the optional leading character is tried first, and a branch that fails
//!   with it is retried without it; without it the branch can only succeed
//!   when that character is a mark (marks are not `\p{L}`, so they can lead,
//!   but they are in U and W too);
//! * branch 1 `U*W+`: `U*` takes the longest U run; if a W-only character
//!   (Ll) follows, `W+` runs on from there. Otherwise `U*` gives back down to
//!   the last character of the run that is also in W, and `W+` is that one
//!   character. With no such character branch 1 fails;
//! * branch 2 `U+W*` is greedy with nothing to give back.

use super::tables::{LETTER, LOWERISH, NEWLINE, NUMBER, UPPERISH};
use super::{contraction_end, Text, ASCII_LOWER, ASCII_UPPER};

pub(super) fn piece_end(t: &Text, pos: usize) -> usize {
    let (class, len) = t.at(pos);
    let can_lead = class & (LETTER | NUMBER | NEWLINE) == 0 && pos + len < t.len();
    let in_word = class & (UPPERISH | LOWERISH) != 0;
    if can_lead {
        if let Some(end) = upper_then_lower(t, pos + len) {
            return end;
        }
    }
    if in_word {
        if let Some(end) = upper_then_lower(t, pos) {
            return end;
        }
    }
    if can_lead {
        if let Some(end) = upper_run(t, pos + len) {
            return end;
        }
    }
    if in_word {
        if let Some(end) = upper_run(t, pos) {
            return end;
        }
    }
    // `\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]|\s+(?!\S)|\s+`
    t.digits_other_or_space(pos, class, b"\r\n/")
}

/// Branch 1 from `start`: `U*W+` then an optional contraction.
#[inline]
fn upper_then_lower(t: &Text, start: usize) -> Option<usize> {
    let mut i = start;
    // End of the last character of the U run that is in W too.
    let mut last_lowerish_end = None;
    while i < t.len() {
        let (c, n) = t.at(i);
        if c & UPPERISH == 0 {
            break;
        }
        i += n;
        if c & LOWERISH != 0 {
            last_lowerish_end = Some(i);
        }
    }
    let end = match t.class_at(i) {
        Some(c) if c & LOWERISH != 0 => t.run_word(i, LOWERISH, ASCII_LOWER),
        _ => last_lowerish_end?,
    };
    Some(contraction_end(t.s, end, true).unwrap_or(end))
}

/// Branch 2 from `start`: `U+W*` then an optional contraction.
#[inline]
fn upper_run(t: &Text, start: usize) -> Option<usize> {
    let upper_end = t.run_word(start, UPPERISH, ASCII_UPPER);
    if upper_end == start {
        return None;
    }
    let end = t.run_word(upper_end, LOWERISH, ASCII_LOWER);
    Some(contraction_end(t.s, end, true).unwrap_or(end))
}
