//! A piece's hash, and for short pieces its bytes as three words: made once
//! per piece and used by both piece tables (the cache and the whole-piece
//! ids), for the prefetch and the look-up alike.
//!
//! Each table used to hash the piece itself, at the prefetch and again at
//! the look-up (and the cache once more to store it), and the cache copied
//! the piece into a zero-padded key with a variable-length `memcpy` each
//! time: together ~12% of the instructions of `encode` on o200k_base.

/// Longest piece kept as words (and so the longest the cache can hold).
pub(super) const KEY_MAX: usize = 24;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct PieceKey {
    /// The first `KEY_MAX` bytes, zero-padded, as little-endian words.
    pub(super) words: [u64; 3],
    /// The piece's length in bytes.
    pub(super) len: usize,
    /// A hash of all the piece's bytes and its length.
    pub(super) hash: u64,
}

const K: [u64; 3] = [0x9E37_79B9_7F4A_7C15, 0xC2B2_AE3D_27D4_EB4F, 0x1656_67B1_9E37_79F9];

impl PieceKey {
    #[inline]
    pub(super) fn new(piece: &[u8]) -> Self {
        let mut words = [0u64; 3];
        for (w, chunk) in words.iter_mut().zip(piece.chunks(8)) {
            *w = word(chunk);
        }
        // A multiply-xor of the words and the length, folded and multiplied
        // once more, so that the top bits (the tables' indexes) depend on
        // every byte: pieces that differ only in their last bytes must not
        // share a slot. Bytes past `KEY_MAX` are folded in the same way.
        let mut h = mix(&words, piece.len());
        if piece.len() > KEY_MAX {
            for (k, chunk) in piece[KEY_MAX..].chunks(8).enumerate() {
                h = (h.rotate_left(23) ^ word(chunk)).wrapping_mul(K[k % 3]);
            }
        }
        PieceKey { words, len: piece.len(), hash: finish(h) }
    }

    /// The key of a piece of at most `KEY_MAX` bytes, from its words and
    /// length (as a cache slot keeps them): the same as `new` of its bytes.
    #[inline]
    pub(super) fn from_words(words: [u64; 3], len: usize) -> Self {
        debug_assert!(len <= KEY_MAX);
        PieceKey { words, len, hash: finish(mix(&words, len)) }
    }

    /// Whether the piece is short enough to be kept as words.
    #[inline]
    pub(super) fn fits(&self) -> bool {
        self.len <= KEY_MAX
    }
}

#[inline]
fn mix(words: &[u64; 3], len: usize) -> u64 {
    (words[0] ^ len as u64).wrapping_mul(K[0]) ^ words[1].wrapping_mul(K[1]) ^ words[2].wrapping_mul(K[2])
}

#[inline]
fn finish(h: u64) -> u64 {
    let h = (h ^ (h >> 32)).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    h ^ (h >> 29)
}

/// Up to 8 bytes as a little-endian word, zero-padded, with fixed-size loads
/// only (two overlapping ones for 4 to 7 bytes).
#[inline]
fn word(c: &[u8]) -> u64 {
    let n = c.len();
    if n >= 8 {
        u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])
    } else if n >= 4 {
        let lo = u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as u64;
        let hi = u32::from_le_bytes([c[n - 4], c[n - 3], c[n - 2], c[n - 1]]) as u64;
        lo | hi << (8 * (n - 4))
    } else if n > 0 {
        c[0] as u64 | (c[n / 2] as u64) << (8 * (n / 2)) | (c[n - 1] as u64) << (8 * (n - 1))
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_the_zero_padded_bytes_and_hashes_tell_pieces_apart() {
        let pieces: Vec<Vec<u8>> = (0..=40usize).map(|n| (0..n).map(|i| (i * 37 + 11) as u8).collect()).collect();
        for p in &pieces {
            let key = PieceKey::new(p);
            let mut padded = [0u8; KEY_MAX];
            let n = p.len().min(KEY_MAX);
            padded[..n].copy_from_slice(&p[..n]);
            for (k, w) in key.words.iter().enumerate() {
                assert_eq!(w.to_le_bytes(), padded[8 * k..8 * k + 8], "len {}", p.len());
            }
            assert_eq!(key.fits(), p.len() <= KEY_MAX);
        }
        // Trailing zero bytes, lengths and bytes past KEY_MAX all count.
        let hashes: std::collections::HashSet<u64> = pieces
            .iter()
            .map(|p| PieceKey::new(p).hash)
            .chain([PieceKey::new(&[0; 3]).hash, PieceKey::new(&[0; 30]).hash, PieceKey::new(&[0; 31]).hash])
            .collect();
        assert_eq!(hashes.len(), pieces.len() + 3);
        for p in pieces.iter().filter(|p| p.len() <= KEY_MAX) {
            let key = PieceKey::new(p);
            assert_eq!(PieceKey::from_words(key.words, key.len), key);
        }
        let mut long = vec![b'a'; 40];
        let before = PieceKey::new(&long).hash;
        long[39] = b'b';
        assert_ne!(PieceKey::new(&long).hash, before);
    }
}
