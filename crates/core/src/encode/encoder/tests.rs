//! Tests of exact encoding's paths against each other.

use super::*;
use crate::encode::{Specials, SHORT};
use crate::pretok::PreTokenizerSpec;

#[test]
fn byte_fallback_and_fused_unknowns() {
    let chars = |byte_fallback: bool, fuse_unk: bool| {
        let mut specials = vec!["<unk>".to_string()];
        if byte_fallback {
            specials.extend((0..=255u8).map(crate::model::byte_piece));
        }
        let scheme = Scheme::Chars {
            unk_token: "<unk>".into(),
            end_of_word_suffix: None,
            character_coverage: 1.0,
            byte_fallback,
            fuse_unk,
            dummy_prefix: false,
            normalizer: None,
        };
        let alphabet = vec!["\u{2581}".to_string(), "a".to_string()];
        Encoder::new(Model::new(scheme, PreTokenizerSpec::WHITESPACE, specials, Some(alphabet))).unwrap()
    };
    let ids = |enc: &Encoder, text: &str| enc.encode(text.as_bytes(), &Specials::Ordinary, None).unwrap();
    // "a é€": ▁ a ▁ é(2 bytes) €(3 bytes); ▁ and a are ids 257 and 258.
    let bf = chars(true, false);
    assert_eq!(ids(&bf, "a é€"), vec![257, 258, 257, 1 + 0xC3, 1 + 0xA9, 1 + 0xE2, 1 + 0x82, 1 + 0xAC]);
    assert_eq!(bf.decode_bytes(&ids(&bf, "a é€")).unwrap(), "a é€".as_bytes());
    assert_eq!(ids(&bf, "<0x41>"), ids(&bf, "<0x41>")); // text, never the byte token: no panic either
    let fused = chars(false, true);
    assert_eq!(ids(&fused, "a é€a"), vec![1, 2, 1, 0, 2]);
    assert_eq!(fused.decode_bytes(&[0]).unwrap(), " \u{2047} ".as_bytes());
    assert_eq!(ids(&chars(false, false), "é€"), vec![1, 0, 0]);
}

#[test]
fn seeded_caches_give_the_ids_encoding_without_a_cache_gives() {
    let model = |pretok: PreTokenizerSpec| {
        let mut m = Model::new(Scheme::Bytes, pretok, vec![], None);
        let (a, b, c, sp) = (b'a' as u32, b'b' as u32, b'c' as u32, b' ' as u32);
        // 256 ab, 257 " ab", 258 abc, 259 ba, 260 " a" (after 257, so " ab" is reached whole)
        m.merges = vec![(a, b), (sp, 256), (256, c), (b, a), (sp, a)];
        Encoder::new(m).unwrap()
    };
    let texts = ["ab abc ba abab", " ab ab  cab", "abcabc a b c", "ba ba ba", ""];
    for pretok in [PreTokenizerSpec::GPT2, PreTokenizerSpec::WHITESPACE] {
        let enc = model(pretok.clone());
        let mut cache = enc.new_cache();
        // Where pieces are looked up whole, a token's piece is in the cache before any text.
        let seeded = cache.get(&PieceKey::new(b" ab"), b" ab");
        assert_eq!(seeded, enc.plain_bytes().then_some(&[257u32][..]), "{pretok:?}");
        for _ in 0..2 {
            for text in texts {
                let uncached = enc.encode(text.as_bytes(), &Specials::Ordinary, None).unwrap();
                let cached = enc.encode(text.as_bytes(), &Specials::Ordinary, Some(&mut cache)).unwrap();
                assert_eq!(cached, uncached, "{pretok:?} {text:?}");
            }
        }
    }
}

#[test]
fn long_and_short_paths_agree() {
    // Merges over "ab" repeated: (a,b) -> 256, (256,256) -> 257, ...
    let mut m = Model::new(Scheme::Bytes, PreTokenizerSpec::NONE, vec![], None);
    let a = b'a' as u32;
    let b = b'b' as u32;
    m.merges = vec![(a, b), (256, 256), (257, 257), (a, a)];
    let enc = Encoder::new(m).unwrap();
    for n in [1usize, 2, 3, 7, 11, 20, 45, 50, 97, 200, 1001] {
        let text: Vec<u8> = b"ab".iter().cycle().take(2 * n).copied().chain(b"aaa".iter().copied()).collect();
        let mut s1: Vec<u32> = text.iter().map(|&c| c as u32).collect();
        let mut s2 = s1.clone();
        enc.bpe_short(&mut s1);
        enc.bpe_long(&mut s2);
        assert_eq!(s1, s2, "n={n}");
        if text.len() <= SHORT {
            let mut s3 = Vec::new();
            enc.bpe_bytes_short(&text, &mut s3);
            assert_eq!(s1, s3, "n={n}");
        }
        assert_eq!(enc.decode_bytes(&s1).unwrap(), text);
    }
}

#[test]
fn split_encoding_equals_whole_encoding() {
    // Merges that make tokens across spaces and punctuation, over a small
    // alphabet, so texts have both joinable and unjoinable byte pairs.
    let mut m = Model::new(Scheme::Bytes, PreTokenizerSpec::NONE, vec!["<s>".into()], None);
    let id = |c: u8| 1 + c as u32;
    let t = |k: u32| 257 + k;
    m.merges = vec![
        (id(b'a'), id(b'b')),   // t0 ab
        (id(b' '), t(0)),       // t1 " ab"
        (id(b'c'), id(b'.')),   // t2 c.
        (t(1), t(1)),           // t3 " ab ab"
        (id(b'b'), id(b'c')),   // t4 bc
        (t(2), id(b' ')),       // t5 "c. "
        (id(b'a'), id(b'a')),   // t6 aa
        (t(6), id(b'a')),       // t7 aaa
    ];
    let enc = Encoder::new(m).unwrap();
    let joinable = enc.joinable_byte_pairs();
    assert!(joinable[(b'a' as usize) << 8 | b'b' as usize]);
    assert!(!joinable[(b'b' as usize) << 8 | b'a' as usize]);
    let mut rng = crate::util::Lcg(7);
    let (mut out, mut scratch, mut cache) = (Vec::new(), Vec::new(), enc.new_cache());
    for _ in 0..3000 {
        let state = rng.step();
        let len = (state >> 58) as usize + 1;
        let text: Vec<u8> = (0..len).map(|k| b"abc. a"[((state >> (k % 50)) % 6) as usize]).collect();
        let mut whole: Vec<u32> = text.iter().map(|&c| id(c)).collect();
        enc.bpe(&mut whole);
        // Twice: the second time, its parts come from the cache.
        for _ in 0..2 {
            out.clear();
            enc.encode_bytes_split(&text, &joinable, &mut out, &mut scratch, &mut cache);
            assert_eq!(out, whole, "{:?}", String::from_utf8_lossy(&text));
        }
    }
}
