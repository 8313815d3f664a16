//! SuperBPE stage 2: the isolated split of `\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +(?!\S)`:
//! the matches are pieces, and so is the text between them (words joined by
//! single spaces). Unlike the other presets the pattern does not match at
//! every position, so this is a search: where nothing matches the scanner
//! moves on by one character, and the gap grows.

use super::tables::{LETTER, NUMBER, SPACE, WORDLIKE};
use super::{piece, Text};

pub(super) fn split<'t>(text: &'t str, t: &mut Text, f: &mut impl FnMut(&'t str)) {
    let mut gap = 0;
    let mut pos = 0;
    while pos < t.len() {
        let (class, len) = t.at(pos);
        match match_end(t, pos, class) {
            Some(end) => {
                if pos > gap {
                    f(piece(text, gap, pos));
                }
                f(piece(text, pos, end));
                gap = end;
                pos = end;
            }
            // Letters never start a match: skip a whole run of them.
            None if class & LETTER != 0 => pos = t.run_any(pos, LETTER),
            None => pos += len,
        }
    }
    if gap < t.len() {
        f(piece(text, gap, t.len()));
    }
}

/// The end of the pattern's match at `pos`, if it matches there.
#[inline]
fn match_end(t: &mut Text, pos: usize, class: u8) -> Option<usize> {
    if class & NUMBER != 0 {
        return Some(t.run_max(pos, 3, |c| c & NUMBER != 0));
    }
    let is_space = t.byte(pos) == b' ';
    // ` ?[^\s\p{L}\p{N}]{2,}[\r\n/]*`
    let other_start = if is_space { pos + 1 } else { pos };
    if is_space || class & WORDLIKE == 0 {
        let other = |c: u8| c & WORDLIKE == 0;
        let first = t.run_max(other_start, 1, other);
        if first > other_start {
            let end = t.run_none(first, WORDLIKE);
            if end > first {
                return Some(t.run_bytes(end, b"\r\n/"));
            }
        }
    }
    if !is_space {
        return None;
    }
    // ` +(?!\S)`
    let end = t.run_bytes(pos, b" ");
    match t.class_at(end) {
        None => Some(end),
        Some(c) if c & SPACE != 0 => Some(end),
        // Followed by a non-space: give back one space, if there are two.
        _ if end - pos >= 2 => Some(end - 1),
        _ => None,
    }
}
