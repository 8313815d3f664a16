//! GPT-2: `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
//!
//! The branches are tried in order at `pos`; the first that matches wins
//! (leftmost-first). None of them needs backtracking except the look-ahead,
//! which `Text::whitespace_end` handles.

use super::masks::Block;
use super::tables::{LETTER, NUMBER, SPACE, WORDLIKE};
use super::tiles::{after, before, leads_of, Contractions, Rules, Starts};

pub(super) const RULES: Rules = Rules { starts, needs: 0, contractions: Contractions::Alone, digit_groups: false, piece_end };

/// Where pieces start in a window (see `tiles`), before contractions: each
/// run of letters, of digits and of "other", or the space before it (` ?`);
/// each run of whitespace, and its last character when text follows (with
/// `\s+(?!\S)` the run gives that one back).
#[inline(always)]
pub(super) fn starts(w: &Block) -> Starts {
    let other = !(w.letter | w.number | w.space) & w.inside;
    let runs = (w.letter & !before(w.letter)) | (w.number & !before(w.number)) | (other & !before(other));
    let space_start = w.space & !before(w.space);
    let space_last = w.space & !after(w.space) & after(w.inside);
    Starts {
        bits: (runs & !before(w.space_byte)) | space_start | leads_of(space_last, w.continuation),
        hard: false,
    }
}

use super::{contraction_end, Text};

pub(super) fn piece_end(t: &mut Text, pos: usize) -> usize {
    let b = t.byte(pos);
    if b == b'\'' {
        if let Some(end) = contraction_end(t.s, pos, false) {
            return end;
        }
    }
    let (mut class, _) = t.at(pos);
    let mut start = pos;
    // ` ?` before a letter, digit or other run: the space joins it.
    if b == b' ' {
        if let Some(next) = t.class_at(pos + 1) {
            if next & SPACE == 0 {
                start = pos + 1;
                class = next;
            }
        }
    }
    if class & LETTER != 0 {
        t.run_any(start, LETTER)
    } else if class & NUMBER != 0 {
        t.run_any(start, NUMBER)
    } else if class & SPACE == 0 {
        t.run_none(start, WORDLIKE)
    } else {
        t.whitespace_end(pos, false)
    }
}
