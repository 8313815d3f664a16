//! Byte classes by blocks: for each 64-byte block of the text, one bit per
//! byte for each class the scanners run over.
//!
//! A character's class bits are set on every byte of it, so a run of
//! characters of a class is a run of set bits and its end is one
//! `trailing_ones`. ASCII bytes are classified sixteen at a time (SSE2 on
//! x86-64, which every x86-64 has; a table elsewhere); each non-ASCII
//! character is decoded once, at its lead byte, and its class read from
//! [`Classes`].
//!
//! Why: the scanners spent most of their time finding where runs end, one
//! character (or eight ASCII bytes) per step with a class lookup and a
//! branch each. With the masks a piece costs a few table lookups at its
//! start and one bit scan per run.

use super::tables::{Classes, LETTER, LOWERISH, NUMBER, SPACE, UPPERISH};

/// Bytes per block.
pub(super) const BLOCK: usize = 64;

/// The class masks of one block: bit `k` is byte `k` of the block.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub(super) struct Block {
    /// `\p{L}`.
    pub letter: u64,
    /// `\p{N}`.
    pub number: u64,
    /// `\s`.
    pub space: u64,
    /// o200k's upper-ish class (`tables::UPPERISH`).
    pub upper: u64,
    /// o200k's lower-ish class (`tables::LOWERISH`).
    pub lower: u64,
    /// Single bytes the patterns name: ` `, `\r` or `\n`, `'`, `/`.
    pub space_byte: u64,
    pub newline: u64,
    pub apostrophe: u64,
    pub slash: u64,
    /// Continuation bytes (`10xxxxxx`): a character starts at every other
    /// byte of the text.
    pub continuation: u64,
    /// The bytes inside the text (a block at its end is shorter).
    pub inside: u64,
}

impl Block {
    /// The bytes whose character has any of the class `bits` (a constant
    /// in every caller, so this folds to one or two loads).
    #[inline(always)]
    pub fn any(&self, bits: u8) -> u64 {
        let mut m = 0;
        if bits & LETTER != 0 {
            m |= self.letter;
        }
        if bits & NUMBER != 0 {
            m |= self.number;
        }
        if bits & SPACE != 0 {
            m |= self.space;
        }
        if bits & UPPERISH != 0 {
            m |= self.upper;
        }
        if bits & LOWERISH != 0 {
            m |= self.lower;
        }
        m
    }

    /// Sets the `span` bits in every mask of the class `class`.
    #[inline(always)]
    fn mark(&mut self, class: u8, span: u64) {
        let on = |bit: u8| if class & bit != 0 { span } else { 0 };
        self.letter |= on(LETTER);
        self.number |= on(NUMBER);
        self.space |= on(SPACE);
        self.upper |= on(UPPERISH);
        self.lower |= on(LOWERISH);
    }
}

/// Masks beyond the classes every preset reads, for [`block`]'s `needs`:
/// upper-ish and lower-ish (o200k), `\r`/`\n` (cl100k, o200k), `/` (o200k).
pub(super) const CASES: u8 = 1;
pub(super) const NEWLINES: u8 = 2;
pub(super) const SLASHES: u8 = 4;
pub(super) const ALL: u8 = CASES | NEWLINES | SLASHES;

/// The masks of the 64 bytes of `s` from `start` (any offset; past the end
/// of `s` no class is set). Of the masks in `needs` (a constant where it is
/// inlined), only those are computed for ASCII bytes; the others are empty.
#[inline(always)]
pub(super) fn block(s: &[u8], start: usize, classes: &Classes, needs: u8) -> Block {
    let mut buf = [0u8; BLOCK];
    let bytes: &[u8; BLOCK] = match s.get(start..start + BLOCK) {
        Some(full) => full.try_into().unwrap_or(&buf),
        None => {
            let tail = s.get(start..).unwrap_or_default();
            buf[..tail.len()].copy_from_slice(tail);
            &buf
        }
    };
    let (mut m, non_ascii, continuation) = ascii(bytes, needs);
    let inside = s.len().saturating_sub(start);
    m.inside = if inside >= BLOCK { !0 } else { (1u64 << inside) - 1 };
    m.continuation = continuation;
    if non_ascii != 0 {
        non_ascii_chars(s, start, non_ascii, continuation, classes, &mut m);
    }
    m
}

/// Classes of the non-ASCII characters that have a byte in the block at
/// `start`: each is decoded at its lead byte (for the first bytes, possibly
/// before the block) and its class written on its bytes of a class array,
/// which then becomes masks (bit `j` of every class byte at once).
#[inline(never)]
fn non_ascii_chars(s: &[u8], start: usize, non_ascii: u64, continuation: u64, classes: &Classes, m: &mut Block) {
    // Four bytes of slack: a class is written four bytes at a time.
    let mut class = [0u8; BLOCK + 4];
    // A character that began in the block before: its bytes here are the
    // leading continuation bytes.
    let head = continuation.trailing_ones() as usize;
    if head > 0 && start > 0 {
        let mut lead = start - 1;
        while lead > 0 && s[lead] & 0xC0 == 0x80 {
            lead -= 1;
        }
        let (cp, _) = super::decode(s, lead);
        class[..4].copy_from_slice(&(u32::from(classes.of(cp)) * 0x0101_0101).to_ne_bytes());
    }
    // The block and the three bytes after it, where the last character
    // may end (a zero-padded copy at the end of the text).
    let mut padded = [0u8; BLOCK + 4];
    let bytes: &[u8; BLOCK + 4] = match s.get(start..start + BLOCK + 4) {
        Some(inside) => inside.try_into().unwrap_or(&padded),
        None => {
            let tail = s.get(start..).unwrap_or_default();
            padded[..tail.len()].copy_from_slice(tail);
            &padded
        }
    };
    let mut leads = non_ascii & !continuation;
    while leads != 0 {
        let k = leads.trailing_zeros() as usize;
        leads &= leads - 1;
        let lead = bytes[k] as u32;
        let (b1, b2) = (bytes[k + 1] as u32 & 0x3F, bytes[k + 2] as u32 & 0x3F);
        // Two- and three-byte characters (every BMP script) without a
        // branch on the length; four-byte ones apart.
        let c = if lead < 0xF0 {
            let two = ((lead & 0x1F) << 6) | b1;
            let three = ((lead & 0x0F) << 12) | (b1 << 6) | b2;
            classes.of_bmp(if lead < 0xE0 { two } else { three } as u16)
        } else {
            classes.of(super::decode(s, start + k).0)
        };
        // Past the character this writes bytes that the next character
        // overwrites or that are ASCII (masked off below).
        class[k..k + 4].copy_from_slice(&(u32::from(c) * 0x0101_0101).to_ne_bytes());
    }
    let class: &[u8; BLOCK] = class[..BLOCK].try_into().unwrap_or(&[0; BLOCK]);
    let of = class_masks(class);
    m.letter |= of.letter & non_ascii;
    m.number |= of.number & non_ascii;
    m.space |= of.space & non_ascii;
    m.upper |= of.upper & non_ascii;
    m.lower |= of.lower & non_ascii;
}

/// The class masks of 64 class bytes: SSE2 on x86-64, byte by byte elsewhere.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn class_masks(class: &[u8; BLOCK]) -> Block {
    // SAFETY: the build enables SSE2 (cfg above).
    unsafe { class_masks_sse2(class) }
}

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[target_feature(enable = "sse2")]
fn class_masks_sse2(class: &[u8; BLOCK]) -> Block {
    use std::arch::x86_64::*;
    let mut m = Block::default();
    for (k, lane) in class.chunks_exact(16).enumerate() {
        // SAFETY: `lane` is 16 readable bytes; the load is unaligned.
        let v = unsafe { _mm_loadu_si128(lane.as_ptr().cast()) };
        let shift = 16 * k;
        // Bit `j` of each byte shifted to its top bit (a 16-bit shift
        // by `7 - j` keeps it inside its byte), which `movemask` reads.
        const _: () = assert!(LETTER == 1 && NUMBER == 2 && SPACE == 4 && UPPERISH == 8 && LOWERISH == 16);
        let top = |moved: __m128i| (_mm_movemask_epi8(moved) as u32 as u64) << shift;
        m.letter |= top(_mm_slli_epi16::<7>(v));
        m.number |= top(_mm_slli_epi16::<6>(v));
        m.space |= top(_mm_slli_epi16::<5>(v));
        m.upper |= top(_mm_slli_epi16::<4>(v));
        m.lower |= top(_mm_slli_epi16::<3>(v));
    }
    m
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
fn class_masks(class: &[u8; BLOCK]) -> Block {
    let mut m = Block::default();
    for (k, &c) in class.iter().enumerate() {
        m.mark(c, 1 << k);
    }
    m
}

/// The masks of the ASCII bytes of a block, the block's non-ASCII bytes
/// and its continuation bytes (`10xxxxxx`): with AVX2 where the CPU has it
/// (32 bytes a step), else with SSE2 (16).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn ascii(bytes: &[u8; BLOCK], needs: u8) -> (Block, u64, u64) {
    // One instance per preset's needs (`needs` is a constant once inlined).
    macro_rules! with_needs {
        ($f:ident) => {
            match needs {
                0 => $f::<0>(bytes),
                NEWLINES => $f::<NEWLINES>(bytes),
                _ => $f::<ALL>(bytes),
            }
        };
    }
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        unsafe { with_needs!(ascii_avx2) }
    } else {
        // SAFETY: the build enables SSE2 (cfg above; every x86-64 has it).
        unsafe { with_needs!(ascii_sse2) }
    }
}

/// One body for both vector widths: `$load`, `$set1`, ... are the
/// intrinsics of the width, `$lane` its bytes per step.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
macro_rules! ascii_by_lanes {
    ($name:ident, $feature:literal, $lane:literal, $vec:ty, $load:ident, $set1:ident, $sub:ident, $cmplt:ident,
     $cmpeq:ident, $or:ident, $movemask:ident) => {
        #[target_feature(enable = $feature)]
        fn $name<const NEEDS: u8>(bytes: &[u8; BLOCK]) -> (Block, u64, u64) {
            use std::arch::x86_64::*;
            // `lo <= v <= hi` for ASCII `lo..hi`, on any byte: shifted into
            // the signed range, one compare.
            #[inline]
            #[target_feature(enable = $feature)]
            fn in_range(v: $vec, lo: u8, hi: u8) -> $vec {
                let shifted = $sub(v, $set1(lo.wrapping_add(128) as i8));
                $cmplt(shifted, $set1((hi - lo + 1).wrapping_sub(128) as i8))
            }
            #[inline]
            #[target_feature(enable = $feature)]
            fn bits(v: $vec) -> u64 {
                $movemask(v) as u32 as u64
            }
            let mut m = Block::default();
            let mut non_ascii = 0u64;
            let mut continuation = 0u64;
            for (k, lane) in bytes.chunks_exact($lane).enumerate() {
                // SAFETY: `lane` is `$lane` readable bytes; the load is unaligned.
                let v = unsafe { $load(lane.as_ptr().cast()) };
                let shift = $lane * k;
                let eq = |b: u8| $cmpeq(v, $set1(b as i8));
                let space_byte = eq(b' ');
                m.space_byte |= bits(space_byte) << shift;
                m.space |= bits($or(space_byte, in_range(v, 0x09, 0x0D))) << shift;
                m.apostrophe |= bits(eq(b'\'')) << shift;
                if NEEDS & NEWLINES != 0 {
                    m.newline |= bits($or(eq(b'\n'), eq(b'\r'))) << shift;
                }
                if NEEDS & SLASHES != 0 {
                    m.slash |= bits(eq(b'/')) << shift;
                }
                if NEEDS & CASES != 0 {
                    let upper = in_range(v, b'A', b'Z');
                    let lower = in_range(v, b'a', b'z');
                    m.upper |= bits(upper) << shift;
                    m.lower |= bits(lower) << shift;
                    m.letter |= bits($or(upper, lower)) << shift;
                } else {
                    // ASCII letters fold to lower case with bit 5 (no
                    // other byte folds into `a..=z`).
                    m.letter |= bits(in_range($or(v, $set1(0x20)), b'a', b'z')) << shift;
                }
                m.number |= bits(in_range(v, b'0', b'9')) << shift;
                non_ascii |= bits(v) << shift;
                // 0x80..=0xBF are the signed bytes below -64.
                continuation |= bits($cmplt(v, $set1(-64))) << shift;
            }
            (m, non_ascii, continuation)
        }
    };
}

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
ascii_by_lanes!(ascii_sse2, "sse2", 16, __m128i, _mm_loadu_si128, _mm_set1_epi8, _mm_sub_epi8, _mm_cmplt_epi8,
    _mm_cmpeq_epi8, _mm_or_si128, _mm_movemask_epi8);

/// `_mm256_cmpgt_epi8` with the arguments of a "less than".
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline]
#[target_feature(enable = "avx2")]
fn mm256_cmplt_epi8(a: std::arch::x86_64::__m256i, b: std::arch::x86_64::__m256i) -> std::arch::x86_64::__m256i {
    std::arch::x86_64::_mm256_cmpgt_epi8(b, a)
}

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
ascii_by_lanes!(ascii_avx2, "avx2", 32, __m256i, _mm256_loadu_si256, _mm256_set1_epi8, _mm256_sub_epi8,
    mm256_cmplt_epi8, _mm256_cmpeq_epi8, _mm256_or_si256, _mm256_movemask_epi8);

/// The masks of the ASCII bytes of a block, the block's non-ASCII bytes
/// and its continuation bytes (`10xxxxxx`).
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
fn ascii(bytes: &[u8; BLOCK], _needs: u8) -> (Block, u64, u64) {
    ascii_by_table(bytes, super::tables::classes())
}

/// [`ascii`] one byte at a time through the class table: the portable
/// version, and the reference the tests hold the SIMD one to.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
fn ascii_by_table(bytes: &[u8; BLOCK], classes: &Classes) -> (Block, u64, u64) {
    let mut m = Block::default();
    let mut non_ascii = 0u64;
    let mut continuation = 0u64;
    for (k, &b) in bytes.iter().enumerate() {
        if b >= 0x80 {
            non_ascii |= 1 << k;
            continuation |= ((b & 0xC0 == 0x80) as u64) << k;
        } else {
            m.mark(classes.ascii(b), 1 << k);
            let is = |c: u8| ((b == c) as u64) << k;
            m.space_byte |= is(b' ');
            m.newline |= is(b'\n') | is(b'\r');
            m.apostrophe |= is(b'\'');
            m.slash |= is(b'/');
        }
    }
    (m, non_ascii, continuation)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::tables::classes;

    /// Every byte value at every position of a block, against the table.
    #[test]
    fn ascii_masks_agree_with_the_class_table() {
        for first in 0..=255u8 {
            let mut bytes = [0u8; BLOCK];
            for (k, b) in bytes.iter_mut().enumerate() {
                *b = first.wrapping_add((k as u8).wrapping_mul(37));
            }
            let expected = ascii_by_table(&bytes, classes());
            assert_eq!(ascii(&bytes, ALL), expected, "block from {first}");
            #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
            {
                // What a preset that needs no more than `needs` reads.
                let read = |(m, non_ascii, continuation): (Block, u64, u64), needs: u8| {
                    let when = |need: u8, mask: u64| if needs & need != 0 { mask } else { 0 };
                    let m = Block {
                        upper: when(CASES, m.upper),
                        lower: when(CASES, m.lower),
                        newline: when(NEWLINES, m.newline),
                        slash: when(SLASHES, m.slash),
                        ..m
                    };
                    (m, non_ascii, continuation)
                };
                // SAFETY: SSE2 is enabled by the build; AVX2 only where detected.
                unsafe {
                    assert_eq!(ascii_sse2::<ALL>(&bytes), expected, "SSE2, block from {first}");
                    assert_eq!(ascii_sse2::<0>(&bytes), read(expected, 0), "SSE2, block from {first}");
                    assert_eq!(ascii_sse2::<NEWLINES>(&bytes), read(expected, NEWLINES), "SSE2, block from {first}");
                    if std::is_x86_feature_detected!("avx2") {
                        assert_eq!(ascii_avx2::<ALL>(&bytes), expected, "AVX2, block from {first}");
                        assert_eq!(ascii_avx2::<0>(&bytes), read(expected, 0), "AVX2, block from {first}");
                        assert_eq!(ascii_avx2::<NEWLINES>(&bytes), read(expected, NEWLINES), "AVX2, block from {first}");
                    }
                }
            }
        }
    }

    /// Each character's class is on each of its bytes, across block edges.
    #[test]
    fn characters_are_classed_on_all_their_bytes() {
        let text: String = "aé€😀 1١\u{301}Ω\u{a0}".repeat(40);
        let s = text.as_bytes();
        let c = classes();
        let blocks: Vec<Block> = (0..s.len().div_ceil(BLOCK)).map(|b| block(s, b * BLOCK, c, ALL)).collect();
        let mut i = 0;
        for ch in text.chars() {
            let class = c.of(ch as u32);
            for k in i..i + ch.len_utf8() {
                let got = blocks[k / BLOCK];
                let bit = 1u64 << (k % BLOCK);
                let mut want = Block::default();
                want.mark(class, bit);
                let have = Block {
                    letter: got.letter & bit,
                    number: got.number & bit,
                    space: got.space & bit,
                    upper: got.upper & bit,
                    lower: got.lower & bit,
                    ..Block::default()
                };
                assert_eq!(have, want, "byte {k} of {ch:?}");
            }
            i += ch.len_utf8();
        }
    }
}
