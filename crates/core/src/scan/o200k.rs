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

use super::masks::{self, Block};
use super::tables::{LETTER, LOWERISH, NEWLINE, NUMBER, UPPERISH};
use super::cl100k::starts_around_words;
use super::tiles::{after, before, Contractions, Rules, Starts};

pub(super) const RULES: Rules = Rules { starts, needs: masks::ALL, contractions: Contractions::Suffix, digit_groups: true, piece_end };

/// Where pieces start in a window (see `tiles`), before contractions and
/// digit groups. As cl100k's rule with words in place of letter runs: a
/// word is a run of U or W characters (letters and marks), and inside it a
/// piece starts where a U-only character follows a W-only one. Hard, next
/// to cl100k's newline case:
/// * a U-only character after one in both classes (Lm, Lo, marks): `U*`
///   gives back only as far as the run's end decides;
/// * a mark not after a word character: marks lead words and join runs of
///   "other" depending on what follows;
/// * a newline then `/`, which `[\r\n/]*` joins to the "other" before.
#[inline(always)]
pub(super) fn starts(w: &Block) -> Starts {
    let word = w.upper | w.lower;
    let both = w.upper & w.lower;
    let upper_only = w.upper & !w.lower;
    let lower_only = w.lower & !w.upper;
    let mark = both & !w.letter;
    let case_split = upper_only & before(lower_only);
    let blank = w.space & !w.newline;
    let hard = (w.newline & after(blank | w.slash)) | (upper_only & before(both)) | (mark & !before(word));
    Starts { bits: starts_around_words(w, word) | case_split, hard: hard != 0 }
}

use super::{contraction_end, Text};

pub(super) fn piece_end(t: &mut Text, pos: usize) -> usize {
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
fn upper_then_lower(t: &mut Text, start: usize) -> Option<usize> {
    let i = t.run_any(start, UPPERISH);
    let end = match t.class_at(i) {
        Some(c) if c & LOWERISH != 0 => t.run_any(i, LOWERISH),
        // `U*` gives back down to the last character of the run in W too.
        _ if i > start => t.last_with_all(start, i, UPPERISH | LOWERISH)?,
        _ => return None,
    };
    Some(contraction_end(t.s, end, true).unwrap_or(end))
}

/// Branch 2 from `start`: `U+W*` then an optional contraction.
#[inline]
fn upper_run(t: &mut Text, start: usize) -> Option<usize> {
    let upper_end = t.run_any(start, UPPERISH);
    if upper_end == start {
        return None;
    }
    let end = t.run_any(upper_end, LOWERISH);
    Some(contraction_end(t.s, end, true).unwrap_or(end))
}
