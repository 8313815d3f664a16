//! Word lists: the words a pair occurs in, as varint deltas, with its count.

use super::crew::Crew;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

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
        if self.bytes.is_empty() {
            // Nothing to join: take the other's bytes instead of copying them.
            *self = other;
            return;
        }
        let Some((first, used)) = get_varint(&other.bytes) else { return };
        let w = u32::MAX.wrapping_add(first);
        self.bytes.reserve_exact(other.bytes.len() + 5);
        put_varint(&mut self.bytes, w.wrapping_sub(self.last));
        self.bytes.extend_from_slice(&other.bytes[used..]);
        self.last = other.last;
    }

    /// The list whose bytes are `bytes` (as `add` wrote them): its last
    /// word is the sum of the deltas.
    pub(super) fn from_bytes(bytes: Vec<u8>) -> Self {
        let mut last = u32::MAX;
        let mut at = 0;
        while let Some((delta, used)) = get_varint(&bytes[at..]) {
            last = last.wrapping_add(delta);
            at += used;
        }
        WordList { bytes, last }
    }

    /// The word numbers, into `out` (cleared first).
    #[cfg(test)]
    pub(super) fn decode_into(&self, out: &mut Vec<u32>) {
        decode_words(&self.bytes, out)
    }
}

/// The word numbers of a `WordList`'s bytes, into `out` (cleared first).
pub(super) fn decode_words(bytes: &[u8], out: &mut Vec<u32>) {
    out.clear();
    decode_after(bytes, u32::MAX, out);
}

/// Appends to `out` the words of `bytes`, varint deltas that start from
/// word `w` (`u32::MAX` for a list's start, wrapping).
fn decode_after(bytes: &[u8], mut w: u32, out: &mut Vec<u32>) {
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

/// From this many bytes on, a list is decoded on the crew's threads.
#[cfg(not(test))]
const SHARED_DECODE_BYTES: usize = 1 << 14;
/// Tests share even tiny lists.
#[cfg(test)]
const SHARED_DECODE_BYTES: usize = 2;

/// `decode_words` on the crew's threads for a long list (the training
/// thread decoded the merged pair's list while the others waited; on s10
/// that was 0.9 s of a 10 s loop on two threads). The bytes are cut at
/// varint ends into one segment per thread; the first is decoded into
/// `out`, each later one from word 0 into `segments`, and then shifted by
/// the word the segments before it end on as it is appended to `out`.
pub(super) fn decode_shared(bytes: &[u8], out: &mut Vec<u32>, crew: &Crew, segments: &mut Vec<Mutex<Vec<u32>>>) {
    let threads = crew.threads();
    if threads == 1 || bytes.len() < SHARED_DECODE_BYTES {
        return decode_words(bytes, out);
    }
    // Cut k starts a varint: the byte before it ends one (its high bit clear).
    let mut cuts = Vec::with_capacity(threads + 1);
    cuts.push(0);
    for k in 1..threads {
        let mut c = (bytes.len() * k / threads).max(cuts[k - 1]);
        while c > 0 && c < bytes.len() && bytes[c - 1] & 0x80 != 0 {
            c += 1;
        }
        cuts.push(c);
    }
    cuts.push(bytes.len());
    segments.resize_with(threads, || Mutex::new(Vec::new()));
    out.clear();
    let first = Mutex::new(&mut *out);
    let next = AtomicUsize::new(0);
    crew.run(&|_| loop {
        let k = next.fetch_add(1, Ordering::Relaxed);
        if k >= threads {
            return;
        }
        let part = &bytes[cuts[k]..cuts[k + 1]];
        if k == 0 {
            decode_after(part, u32::MAX, &mut first.lock().unwrap_or_else(|e| e.into_inner()));
        } else {
            let mut seg = segments[k].lock().unwrap_or_else(|e| e.into_inner());
            seg.clear();
            decode_after(part, 0, &mut seg);
        }
    });
    for seg in &mut segments[1..] {
        let seg = seg.get_mut().unwrap_or_else(|e| e.into_inner());
        let base = out.last().copied().unwrap_or(u32::MAX);
        out.extend(seg.iter().map(|&d| base.wrapping_add(d)));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_decoded_on_several_threads_equals_one_decoded_on_one() {
        // Gaps of every varint length, and a list that starts at word 0.
        let mut rng = crate::util::Lcg(7);
        let mut next_gap = || {
            let state = rng.step();
            let bits = [3, 10, 17, 24][(state >> 60) as usize % 4];
            1 + ((state >> 20) as u32 & ((1 << bits) - 1))
        };
        for len in [0usize, 1, 2, 5, 100, 5_000] {
            let mut list = WordList::new();
            let mut w = 0u32;
            for _ in 0..len {
                list.add(w);
                w = w.wrapping_add(next_gap()) % (u32::MAX - 1);
            }
            let mut one = Vec::new();
            decode_words(&list.bytes, &mut one);
            assert_eq!(one.len(), len);
            for threads in [1, 2, 3, 5] {
                let mut segments = Vec::new();
                let mut shared = vec![9, 9];
                Crew::with(threads, |crew| decode_shared(&list.bytes, &mut shared, crew, &mut segments));
                assert_eq!(shared, one, "{len} words on {threads} threads");
            }
        }
    }

    #[test]
    fn a_list_from_its_bytes_knows_its_last_word() {
        for words in [vec![], vec![0u32], vec![3, 4, 200, 70_000, 70_001, u32::MAX - 1]] {
            let mut list = WordList::new();
            words.iter().for_each(|&w| list.add(w));
            let again = WordList::from_bytes(list.bytes.clone());
            assert_eq!((again.bytes, again.last), (list.bytes, list.last));
        }
    }

    #[test]
    fn appending_to_an_empty_list_takes_the_other() {
        let mut later = WordList::new();
        for w in [3, 9, 400] {
            later.add(w);
        }
        let mut list = WordList::new();
        list.append(later);
        list.add(401);
        let mut out = Vec::new();
        list.decode_into(&mut out);
        assert_eq!(out, vec![3, 9, 400, 401]);
    }
}
