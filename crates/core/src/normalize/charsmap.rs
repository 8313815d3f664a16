//! SentencePiece's precompiled charsmap: the normalization table a `.model`
//! stores in `normalizer_spec.precompiled_charsmap` (and HF's `Precompiled`
//! normalizer in base64).
//!
//! Layout (little-endian): a u32 `n`, then `n` bytes of a darts-clone
//! double-array trie (u32 units), then NUL-terminated UTF-8 replacement
//! strings; a key's trie value is the offset of its replacement in them.
//!
//! The blob may come from a hostile file, so every unit read is
//! bounds-checked and every value a lookup can reach is checked once when
//! the blob is parsed (see `Charsmap::parse`): a broken blob is a
//! `ModelFormatError`, never a panic or a read out of bounds.

use crate::error::{Error, Result};

/// SentencePiece keeps at most this many prefix matches per position
/// (`Normalizer::kMaxTrieResultsSize`) and takes the longest of them.
const MAX_MATCHES: usize = 32;

/// A parsed charsmap: the trie's units and the replacement strings.
#[derive(Debug, Clone)]
pub struct Charsmap {
    units: Vec<u32>,
    strings: Vec<u8>,
}

// darts-clone's unit fields.
#[inline]
fn has_leaf(unit: u32) -> bool {
    (unit >> 8) & 1 == 1
}
#[inline]
fn value(unit: u32) -> u32 {
    unit & ((1 << 31) - 1)
}
#[inline]
fn label(unit: u32) -> u32 {
    unit & ((1 << 31) | 0xFF)
}
#[inline]
fn offset(unit: u32) -> usize {
    ((unit >> 10) << ((unit & (1 << 9)) >> 6)) as usize
}

/// A malformed charsmap: a model-format error naming the field.
fn broken(why: String) -> Error {
    Error::model(format!("precompiled_charsmap: {why}"))
}

impl Charsmap {
    /// Parses and checks a blob.
    pub fn parse(blob: &[u8]) -> Result<Self> {
        if blob.len() <= 4 {
            return Err(broken(format!(
                "{} bytes is too short for a charsmap",
                blob.len()
            )));
        }
        let trie_size = u32::from_le_bytes([blob[0], blob[1], blob[2], blob[3]]) as usize;
        let body = &blob[4..];
        if trie_size > body.len() {
            return Err(broken(format!(
                "the trie claims {trie_size} bytes but only {} follow the size field",
                body.len()
            )));
        }
        // SentencePiece reads `trie_size / 4` units (a ragged tail is ignored).
        let units: Vec<u32> = body[..trie_size]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if units.is_empty() {
            return Err(broken("the trie is empty".into()));
        }
        let map = Charsmap {
            units,
            strings: body[trie_size..].to_vec(),
        };
        map.check_values()?;
        Ok(map)
    }

    /// Every value a lookup can read is a valid replacement. A lookup reads
    /// a value at `i ^ offset(unit_i)` after matching a unit `i` with the
    /// leaf flag, and only units whose label fits a byte ever match; so
    /// checking those units' values covers every lookup, in one pass.
    fn check_values(&self) -> Result<()> {
        for (i, &u) in self.units.iter().enumerate() {
            if u >> 31 != 0 || !has_leaf(u) {
                continue;
            }
            let at = i ^ offset(u);
            let Some(&leaf) = self.units.get(at) else {
                return Err(broken(format!(
                    "unit {i} points to unit {at}, past the trie's {} units",
                    self.units.len()
                )));
            };
            self.replacement_at(value(leaf) as usize)?;
        }
        Ok(())
    }

    /// The NUL-terminated replacement string at `start`.
    fn replacement_at(&self, start: usize) -> Result<&str> {
        let rest = self
            .strings
            .get(start..)
            .filter(|r| !r.is_empty())
            .ok_or_else(|| {
                broken(format!(
                    "a replacement offset {start} is past the {} bytes of replacement strings",
                    self.strings.len()
                ))
            })?;
        let len = memchr::memchr(0, rest)
            .ok_or_else(|| broken(format!("the replacement at offset {start} is not NUL-terminated")))?;
        std::str::from_utf8(&rest[..len])
            .map_err(|_| broken(format!("the replacement at offset {start} is not UTF-8")))
    }

    /// The longest key that prefixes `input` (among the first `MAX_MATCHES`
    /// matches, as SentencePiece): its length in bytes and its replacement.
    pub fn longest_match(&self, input: &[u8]) -> Option<(usize, &str)> {
        let mut node = offset(*self.units.first()?);
        let mut found: Option<(usize, usize)> = None;
        let mut matches = 0;
        for (i, &b) in input.iter().enumerate() {
            node ^= b as usize;
            let Some(&unit) = self.units.get(node) else {
                break;
            };
            if label(unit) != b as u32 {
                break;
            }
            node ^= offset(unit);
            if has_leaf(unit) {
                let Some(&leaf) = self.units.get(node) else {
                    break;
                };
                found = Some((i + 1, value(leaf) as usize));
                matches += 1;
                if matches == MAX_MATCHES {
                    break;
                }
            }
        }
        let (len, start) = found?;
        // Checked in `parse`; a failure here cannot happen, and is no match.
        self.replacement_at(start).ok().map(|s| (len, s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A two-key trie built by hand: "a" -> "x", "ab" -> "yz".
    /// Root at 0 (offset 2: children at 2 ^ c).
    fn tiny() -> Vec<u8> {
        // Node layout: root unit 0 with offset 2. Child 'a' (0x61) at 2^0x61=0x63.
        // Its offset 0x80: children at 0x63^0x80=0xE3 (leaf: label 0) and 0xE3^'b'=0x81.
        // 'b' at 0x81 with offset 0x100: leaf at 0x81^0x100=0x181.
        let mut units = vec![0u32; 0x190];
        let node =
            |label: u32, off: u32, leaf: bool| (off << 10) | if leaf { 1 << 8 } else { 0 } | label;
        units[0] = node(0, 2, false);
        units[0x63] = node(0x61, 0x80, true);
        units[0xE3] = (1 << 31) | 0; // value 0: "x"
        units[0x81] = node(0x62, 0x100, true);
        units[0x181] = (1 << 31) | 2; // value 2: "yz"
        let mut blob = ((units.len() * 4) as u32).to_le_bytes().to_vec();
        for u in units {
            blob.extend_from_slice(&u.to_le_bytes());
        }
        blob.extend_from_slice(b"x\0yz\0");
        blob
    }

    #[test]
    fn longest_prefix_wins() {
        let m = Charsmap::parse(&tiny()).unwrap();
        assert_eq!(m.longest_match(b"abc"), Some((2, "yz")));
        assert_eq!(m.longest_match(b"ac"), Some((1, "x")));
        assert_eq!(m.longest_match(b"b"), None);
        assert_eq!(m.longest_match(b""), None);
    }

    #[test]
    fn hostile_blobs_are_model_errors() {
        let good = tiny();
        let mut cases: Vec<Vec<u8>> =
            vec![vec![], vec![1, 0, 0, 0], good[..good.len() / 2].to_vec()];
        let mut past = good.clone();
        past[..4].copy_from_slice(&(u32::MAX).to_le_bytes());
        cases.push(past);
        let mut bad_offset = good.clone();
        let at = 4 + 0x181 * 4;
        bad_offset[at..at + 4].copy_from_slice(&((1u32 << 31) | 999).to_le_bytes());
        cases.push(bad_offset);
        let mut no_nul = good.clone();
        no_nul.pop();
        cases.push(no_nul);
        let mut wild = good.clone();
        let at = 4 + 0x81 * 4;
        wild[at..at + 4].copy_from_slice(&((0x1FFFFFu32 << 10) | (1 << 9) | (1 << 8) | 0x62).to_le_bytes());
        cases.push(wild);
        for c in cases {
            let e = Charsmap::parse(&c).unwrap_err();
            assert_eq!(
                e.kind(),
                crate::error::ErrorKind::ModelFormat,
                "{}",
                e.message()
            );
        }
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut x = 0x9E3779B97F4A7C15u64;
        for len in [5usize, 8, 64, 300, 4096] {
            for _ in 0..200 {
                let blob: Vec<u8> = (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x as u8
                    })
                    .collect();
                if let Ok(m) = Charsmap::parse(&blob) {
                    for start in 0..blob.len().min(64) {
                        let _ = m.longest_match(&blob[start..]);
                    }
                }
            }
        }
    }
}
