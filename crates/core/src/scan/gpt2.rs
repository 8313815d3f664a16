//! GPT-2: `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
//!
//! The branches are tried in order at `pos`; the first that matches wins
//! (leftmost-first). None of them needs backtracking except the look-ahead,
//! which `Text::whitespace_end` handles.

use super::tables::{LETTER, NUMBER, SPACE, WORDLIKE};
use super::{contraction_end, Text, ASCII_LETTERS};

pub(super) fn piece_end(t: &Text, pos: usize) -> usize {
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
        t.run_word(start, LETTER, ASCII_LETTERS)
    } else if class & NUMBER != 0 {
        t.run(start, |c| c & NUMBER != 0)
    } else if class & SPACE == 0 {
        t.run(start, |c| c & WORDLIKE == 0)
    } else {
        t.whitespace_end(pos, false)
    }
}
