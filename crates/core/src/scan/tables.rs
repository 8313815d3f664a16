//! Character classes for the scanners: one byte of flags per code point.
//!
//! Where the data comes from: the classes are read, once per process, out of
//! `regex-syntax` — the very tables the `regex` crate compiles `\p{L}`, `\s`
//! and friends from. So the scanners and the regex reference path agree on
//! every code point by construction, and a `regex` upgrade that moves to a
//! newer Unicode version moves both at once (no generated file to forget).
//!
//! Lookup: ASCII through a 128-entry array, the rest of the Basic
//! Multilingual Plane (every script of running text: Cyrillic, Arabic,
//! Devanagari, CJK...) through a flat 64 KiB array, one load per character;
//! the planes above through a two-level table (code point >> 8 selects one
//! of the distinct 256-entry blocks). The flat array made the gpt2 and
//! cl100k scanners 5% faster on multi-200k than two dependent loads per
//! character did (o200k unchanged).

use regex_syntax::hir::{Class, HirKind};
use std::sync::OnceLock;

/// `\p{L}`.
pub const LETTER: u8 = 1 << 0;
/// `\p{N}`.
pub const NUMBER: u8 = 1 << 1;
/// `\s`: Unicode White_Space, the `regex` crate's definition.
pub const SPACE: u8 = 1 << 2;
/// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`: o200k's "upper-case-like" class.
pub const UPPERISH: u8 = 1 << 3;
/// `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`: o200k's "lower-case-like" class.
pub const LOWERISH: u8 = 1 << 4;
/// `\r` or `\n`.
pub const NEWLINE: u8 = 1 << 5;

/// The classes of `[^\s\p{L}\p{N}]` ("other": punctuation, symbols, marks,
/// controls, unassigned...) have none of these bits.
pub const WORDLIKE: u8 = LETTER | NUMBER | SPACE;

/// Each flag and the regex class it stands for (the source of truth).
const SOURCES: [(u8, &str); 5] = [
    (LETTER, r"\p{L}"),
    (NUMBER, r"\p{N}"),
    (SPACE, r"\s"),
    (UPPERISH, r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"),
    (LOWERISH, r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"),
];

const BLOCK: usize = 256;
const CODE_POINTS: usize = 0x11_0000;
/// Code points of the Basic Multilingual Plane.
const BMP: usize = 0x1_0000;

/// The class table. Build once with [`classes`].
pub struct Classes {
    ascii: [u8; 128],
    /// The class of each BMP code point (U+0000..U+FFFF).
    bmp: Box<[u8; BMP]>,
    /// Code point >> 8 -> block number.
    index: Vec<u16>,
    /// The distinct blocks, `BLOCK` entries each.
    blocks: Vec<u8>,
}

impl Classes {
    /// The class of a code point (any `u32`; values past U+10FFFF have none).
    #[inline(always)]
    pub fn of(&self, cp: u32) -> u8 {
        if let Some(&class) = self.bmp.get(cp as usize) {
            return class;
        }
        match self.index.get((cp >> 8) as usize) {
            Some(&block) => self.blocks[(block as usize) * BLOCK + (cp as usize & (BLOCK - 1))],
            None => 0,
        }
    }

    /// The class of a code point of the Basic Multilingual Plane (one
    /// load, no bounds check).
    #[inline(always)]
    pub fn of_bmp(&self, cp: u16) -> u8 {
        self.bmp[cp as usize]
    }

    /// The class of an ASCII byte.
    #[inline(always)]
    pub fn ascii(&self, b: u8) -> u8 {
        self.ascii[(b & 0x7f) as usize]
    }

    fn build() -> Self {
        let mut flat = vec![0u8; CODE_POINTS];
        for (flag, pattern) in SOURCES {
            for (lo, hi) in class_ranges(pattern) {
                for v in &mut flat[lo as usize..=hi as usize] {
                    *v |= flag;
                }
            }
        }
        flat[b'\r' as usize] |= NEWLINE;
        flat[b'\n' as usize] |= NEWLINE;

        let mut ascii = [0u8; 128];
        ascii.copy_from_slice(&flat[..128]);
        let mut bmp = Box::new([0u8; BMP]);
        bmp.copy_from_slice(&flat[..BMP]);
        let mut seen: std::collections::HashMap<&[u8], u16> = std::collections::HashMap::new();
        let mut index = Vec::with_capacity(CODE_POINTS / BLOCK);
        let mut blocks = Vec::new();
        for chunk in flat.chunks(BLOCK) {
            let next = seen.len();
            let id = *seen.entry(chunk).or_insert_with(|| {
                blocks.extend_from_slice(chunk);
                // At most 4352 blocks exist, so the id always fits.
                next as u16
            });
            index.push(id);
        }
        Classes { ascii, bmp, index, blocks }
    }
}

/// The ranges of a bracket or `\p` class, as `regex-syntax` compiles it.
fn class_ranges(pattern: &str) -> Vec<(u32, u32)> {
    // The patterns are the constants in `SOURCES`; the unit tests parse
    // each one, so this cannot fail at run time.
    let hir = regex_syntax::parse(pattern).expect("the class patterns in SOURCES are valid");
    match hir.kind() {
        HirKind::Class(Class::Unicode(class)) => {
            class.ranges().iter().map(|r| (r.start() as u32, r.end() as u32)).collect()
        }
        other => unreachable!("{pattern} is not a Unicode class: {other:?}"),
    }
}

/// The process-wide class table (built on first use, about a millisecond).
pub fn classes() -> &'static Classes {
    static CLASSES: OnceLock<Classes> = OnceLock::new();
    CLASSES.get_or_init(Classes::build)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_point_agrees_with_the_regex_crate() {
        let c = classes();
        // Debug builds run the regex crate slowly: there, every code point
        // is checked against the ranges and a sample against the regex.
        let stride = if cfg!(debug_assertions) { 13 } else { 1 };
        for (flag, pattern) in SOURCES {
            let ranges = class_ranges(pattern);
            for cp in 0..CODE_POINTS as u32 {
                // The ranges are sorted and disjoint.
                let k = ranges.partition_point(|&(lo, _)| lo <= cp);
                let inside = k > 0 && cp <= ranges[k - 1].1;
                assert_eq!(c.of(cp) & flag != 0, inside, "U+{cp:04X} against the ranges of {pattern}");
            }
            let re = regex::Regex::new(&format!("^{pattern}$")).unwrap();
            for cp in (0..CODE_POINTS as u32).step_by(stride) {
                let Some(ch) = char::from_u32(cp) else { continue };
                let mut buf = [0u8; 4];
                assert_eq!(
                    c.of(cp) & flag != 0,
                    re.is_match(ch.encode_utf8(&mut buf)),
                    "U+{cp:04X} against {pattern}"
                );
            }
        }
        assert_eq!(c.of('\r' as u32) & NEWLINE, NEWLINE);
        assert_eq!(c.of('\n' as u32) & NEWLINE, NEWLINE);
        assert_eq!(c.of(0x85) & NEWLINE, 0);
        assert_eq!(c.of(0x11_0000), 0);
    }

    #[test]
    fn the_table_is_compact() {
        let c = classes();
        assert!(c.blocks.len() <= 200 * 1024, "{} bytes of blocks", c.blocks.len());
    }
}
