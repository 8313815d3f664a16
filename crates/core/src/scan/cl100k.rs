//! cl100k_base:
//! `'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+`
//!
//! The possessive quantifiers change nothing here: what they keep could
//! never be given back to a later part of the same branch anyway.

use super::tables::{LETTER, NEWLINE, NUMBER};
use super::{contraction_end, Text, ASCII_LETTERS};

pub(super) fn piece_end(t: &Text, pos: usize) -> usize {
    if t.byte(pos) == b'\'' {
        if let Some(end) = contraction_end(t.s, pos, true) {
            return end;
        }
    }
    let (class, len) = t.at(pos);
    let letters = |start| t.run_word(start, LETTER, ASCII_LETTERS);
    if class & LETTER != 0 {
        return letters(pos);
    }
    // One character that is not CR, LF, a letter or a digit may lead a
    // run of letters.
    if class & (NUMBER | NEWLINE) == 0 {
        if let Some(next) = t.class_at(pos + len) {
            if next & LETTER != 0 {
                return letters(pos + len);
            }
        }
    }
    // `\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+`
    t.digits_other_or_space(pos, class, b"\r\n")
}
