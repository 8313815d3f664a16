//! Word lists: the words a pair occurs in, as varint deltas, with its count.

/// A pair's weighted count and the words it occurs in, each once (see
/// `WordList`). Entries go stale when a word loses the pair; the loop then
/// finds nothing to merge in that word.
pub(super) struct PairInfo {
    pub(super) count: u64,
    pub(super) words: WordList,
}

/// Word numbers, ascending, as LEB128 varints of the difference to the
/// previous one (the first relative to `u32::MAX`, wrapping). Lists are
/// written once, in ascending order: the initial index word by word, and a
/// new pair's list while the merge that creates it visits the words of the
/// merged pair in their (ascending) order. Frequent pairs occur in nearby
/// words, so most entries take one byte where a `u32` takes four; the lists
/// are most of the merge phase's memory.
#[derive(Default)]
pub(super) struct WordList {
    pub(super) bytes: Vec<u8>,
    /// The last word number added (`u32::MAX`: none).
    pub(super) last: u32,
}

impl WordList {
    pub(super) fn new() -> Self {
        WordList { bytes: Vec::new(), last: u32::MAX }
    }

    /// Adds `w` unless it is the last word added (several occurrences in a word).
    #[inline(always)]
    pub(super) fn add(&mut self, w: u32) {
        if self.last != w {
            put_varint(&mut self.bytes, w.wrapping_sub(self.last));
            self.last = w;
        }
    }

    /// Appends `other`, whose words all come after this list's.
    pub(super) fn append(&mut self, other: WordList) {
        let Some((first, used)) = get_varint(&other.bytes) else { return };
        let w = u32::MAX.wrapping_add(first);
        self.bytes.reserve_exact(other.bytes.len() + 5);
        put_varint(&mut self.bytes, w.wrapping_sub(self.last));
        self.bytes.extend_from_slice(&other.bytes[used..]);
        self.last = other.last;
    }

    /// The word numbers, into `out` (cleared first).
    pub(super) fn decode_into(&self, out: &mut Vec<u32>) {
        decode_words(&self.bytes, out)
    }
}

/// The word numbers of a `WordList`'s bytes, into `out` (cleared first).
pub(super) fn decode_words(bytes: &[u8], out: &mut Vec<u32>) {
    {
        out.clear();
        let mut w = u32::MAX;
        let (mut d, mut shift) = (0u32, 0u32);
        for &byte in bytes {
            d |= ((byte & 0x7f) as u32) << shift;
            if byte & 0x80 != 0 {
                shift += 7;
            } else {
                w = w.wrapping_add(d);
                out.push(w);
                (d, shift) = (0, 0);
            }
        }
    }
}

#[inline(always)]
fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The first varint of `bytes` and how many bytes it took.
fn get_varint(bytes: &[u8]) -> Option<(u32, usize)> {
    let mut v = 0u32;
    for (i, &byte) in bytes.iter().enumerate().take(5) {
        v |= ((byte & 0x7f) as u32) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

pub(super) fn put_varint64(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(super) fn get_varint64(bytes: &[u8]) -> (u64, usize) {
    let mut v = 0u64;
    for (i, &byte) in bytes.iter().enumerate().take(10) {
        v |= ((byte & 0x7f) as u64) << (7 * i);
        if byte & 0x80 == 0 {
            return (v, i + 1);
        }
    }
    (v, bytes.len())
}

/// A pair's count and words while they are being collected.
pub(super) struct Collecting {
    pub(super) count: u64,
    pub(super) words: WordList,
}

impl Collecting {
    pub(super) fn new() -> Self {
        Collecting { count: 0, words: WordList::new() }
    }
    #[inline(always)]
    pub(super) fn add(&mut self, weight: u64, w: u32) {
        self.count += weight;
        self.words.add(w);
    }

    /// Adds `later`, whose words all come after these.
    pub(super) fn absorb(&mut self, later: Collecting) {
        self.count += later.count;
        self.words.append(later.words);
    }
}
