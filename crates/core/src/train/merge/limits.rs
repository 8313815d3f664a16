//! Which merged tokens may be created: SuperBPE's word and colon limits.

/// Limits on which merged tokens may be created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenLimits {
    /// Maximum number of words (runs of non-space bytes) per token; 0: none.
    pub max_words: usize,
    /// Refuse tokens that span ": ".
    pub colon_rule: bool,
}

/// Words in a token: runs of bytes other than space, tab, CR, LF.
fn word_count(t: &[u8]) -> u32 {
    let mut n = 0;
    let mut inside = false;
    for &c in t {
        let space = matches!(c, b' ' | b'\t' | b'\r' | b'\n');
        if !space && !inside {
            n += 1;
        }
        inside = !space;
    }
    n
}

/// What the limits need to know of a token, precomputed so that checking a
/// pair reads two small records instead of both tokens' bytes.
#[derive(Clone, Copy)]
pub(super) struct Edges {
    pub(super) words: u32,
    flags: u8,
}

const FIRST_WORD: u8 = 1; // the first byte is not whitespace
const LAST_WORD: u8 = 2; // the last byte is not whitespace
const ENDS_COLON_SPACE: u8 = 4; // ends with ": "
const ENDS_COLON: u8 = 8; // ends with ":"
const SPACE_THEN_MORE: u8 = 16; // starts with a space and has more bytes

pub(super) fn edges(t: &[u8]) -> Edges {
    let space = |c: &u8| matches!(c, b' ' | b'\t' | b'\r' | b'\n');
    let mut flags = 0;
    if t.first().is_some_and(|c| !space(c)) {
        flags |= FIRST_WORD;
    }
    if t.last().is_some_and(|c| !space(c)) {
        flags |= LAST_WORD;
    }
    if t.ends_with(b": ") {
        flags |= ENDS_COLON_SPACE;
    }
    if t.ends_with(b":") {
        flags |= ENDS_COLON;
    }
    if t.len() > 1 && t[0] == b' ' {
        flags |= SPACE_THEN_MORE;
    }
    Edges { words: word_count(t), flags }
}

/// Whether joining tokens `a` and `b` respects the limits (see `TokenLimits`):
/// at most `max_words` words (a word may continue across the join), and,
/// with the colon rule, no ": " followed by more bytes.
#[inline]
pub(super) fn within_limits(a: Edges, b: Edges, limits: &TokenLimits) -> bool {
    if limits.max_words > 0 {
        let joined = (a.flags & LAST_WORD != 0) && (b.flags & FIRST_WORD != 0);
        if (a.words + b.words - joined as u32) as usize > limits.max_words {
            return false;
        }
    }
    if limits.colon_rule && (a.flags & ENDS_COLON_SPACE != 0 || (a.flags & ENDS_COLON != 0 && b.flags & SPACE_THEN_MORE != 0)) {
        return false;
    }
    true
}
