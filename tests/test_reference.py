"""Hand-checked tests of the oracle (tests/reference.py) against docs/SEMANTICS.md.

Every expected value here was worked out by hand from the spec (the
derivation is in the comments); none comes from the engine.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference import (
    ALL_PRESETS,
    REGEX_PRESETS,
    file_texts,
    reference_alphabet,
    reference_decode_bytes,
    reference_encode,
    reference_encode_by_rank,
    reference_model_from_merges,
    reference_pretokenize,
    reference_train,
    split_specials,
    text_pieces,
)

M = "\u2581".encode()  # ▁ as token bytes: e2 96 81


# ---------------------------------------------------------------- merge loop


def test_aaa_merges_to_aa_a():
    # "aaa": pair (a,a) occurs twice (overlapping count) -> merged left to right: [aa, a]
    m = reference_train(["aaa"], 257, pretokenizer="none", min_frequency=1)
    assert m.merges == [(b"a", b"a")]
    assert m.merge_counts == [2]
    # then (aa, a) once -> "aaa"
    m = reference_train(["aaa"], 258, pretokenizer="none", min_frequency=1)
    assert m.merges == [(b"a", b"a"), (b"aa", b"a")]
    assert m.merge_counts == [2, 1]
    assert m.vocab[256:] == [b"aa", b"aaa"]


def test_aaaa_becomes_aa_aa():
    # "aaaa": (a,a) counted 3 times; replaced without overlap -> [aa, aa]; then (aa,aa) once
    m = reference_train(["aaaa"], 1000, pretokenizer="none", min_frequency=1)
    assert m.merges == [(b"a", b"a"), (b"aa", b"aa")]
    assert m.merge_counts == [3, 1]


def test_counts_weighted_by_word_type_count():
    # gpt2 pieces: "ab", " ab" | " ab", " ab" -> types (a,b)x1 and ( ,a,b)x3
    # pairs: (a,b)=4, ( ,a)=3 -> (a,b) first, then ( ,ab)=3
    m = reference_train(["ab ab", " ab ab"], 258, pretokenizer="gpt2", min_frequency=1)
    assert m.merges == [(b"a", b"b"), (b" ", b"ab")]
    assert m.merge_counts == [4, 3]


def test_tie_break_smallest_bytes():
    # (b,a)=1 and (a,b)=1 -> (a,b) since b"a" < b"b"
    m = reference_train(["ba", "ab"], 257, pretokenizer="none", min_frequency=1)
    assert m.merges == [(b"a", b"b")]
    # equal left bytes -> compare right bytes: (a,b) before (a,c)
    m = reference_train(["ac", "ab"], 258, pretokenizer="none", min_frequency=1)
    assert m.merges == [(b"a", b"b"), (b"a", b"c")]
    # bytes compare unsigned: "é" = c3 a9; (z,z)=1 vs (c3,a9)=1 -> 0x7a < 0xc3
    m = reference_train(["\u00e9", "zz"], 258, pretokenizer="none", min_frequency=1)
    assert m.merges == [(b"z", b"z"), (b"\xc3", b"\xa9")]


def test_higher_count_beats_smaller_bytes():
    # gpt2: "zz", " zz" -> (z,z)=2, ( ,z)=1: count wins although b" " < b"z";
    # then ( ,zz)=1 < min_frequency 2 -> stop
    m = reference_train(["zz zz"], 300, pretokenizer="gpt2", min_frequency=2)
    assert m.merges == [(b"z", b"z")]
    assert m.merge_counts == [2]


def test_min_frequency_stop():
    # pieces "ab", " ab", "cd": (a,b)=2, ( ,a)=1, (c,d)=1
    assert reference_train(["ab abcd"], 300, min_frequency=3).merges == []
    m = reference_train(["ab ab", "cd"], 300, min_frequency=2)
    assert m.merges == [(b"a", b"b")]
    m = reference_train(["ab ab", "cd"], 300, min_frequency=1)
    # after ab: ( ,ab)=1, (c,d)=1 -> b" " < b"c"
    assert m.merges == [(b"a", b"b"), (b" ", b"ab"), (b"c", b"d")]
    assert m.merge_counts == [2, 1, 1]


def test_stops_when_no_pairs_left():
    m = reference_train(["a", "b", ""], 10_000, pretokenizer="none", min_frequency=1)
    assert m.merges == [] and len(m.vocab) == 256


def test_max_token_length_bytes():
    # (a,a) -> aa (2 bytes ok); (aa,aa) would be 4 bytes > 2 -> not a candidate
    m = reference_train(["aaaa"], 1000, pretokenizer="none", min_frequency=1, max_token_length=2)
    assert m.merges == [(b"a", b"a")] and m.merge_counts == [3]
    m = reference_train(["aaaa"], 1000, pretokenizer="none", min_frequency=1, max_token_length=1)
    assert m.merges == []
    # a lower-count pair that fits wins over a longer one: "aaaa bb" with max 2:
    # after aa: (aa,aa)=1 too long; ( ,b)=1 and (b,b)=1 -> b" " < b"b"
    m = reference_train(["aaaa bb"], 1000, pretokenizer="gpt2", min_frequency=1, max_token_length=2)
    assert m.merges == [(b"a", b"a"), (b" ", b"b")]


def test_max_token_length_counts_utf8_bytes_chars_scheme():
    # chars/gpt2: pieces " a", " a" -> (▁,a) x2; "▁a" is 3+1 = 4 bytes
    assert reference_train([" a a"], 100, scheme="chars", max_token_length=3).merges == []
    m = reference_train([" a a"], 100, scheme="chars", max_token_length=4)
    assert m.merges == [(M, b"a")] and m.merge_counts == [2]


# ---------------------------------------------------------------- ids / vocab size


def test_ids_bytes_with_specials():
    # ids: <s>=0, </s>=1, byte b = 2+b, merges from 258.
    # "abab": (a,b)=2, (b,a)=1 -> ab=258 -> [ab,ab] -> (ab,ab)=1 -> abab=259
    m = reference_train(["abab"], 260, pretokenizer="none", special_tokens=("<s>", "</s>"), min_frequency=1)
    assert m.vocab[:2] == [b"<s>", b"</s>"]
    assert m.vocab[2:258] == [bytes([i]) for i in range(256)]
    assert m.vocab[258:] == [b"ab", b"abab"]
    assert len(m.vocab) == 260 and len(m.merges) == 260 - 2 - 256
    assert reference_encode(m, "ab<s>abab</s>a") == [258, 0, 259, 1, 2 + ord("a")]


def test_ids_chars():
    # chars/gpt2 "ab ab": pieces "ab", " ab" -> (a,b), (▁,a,b)
    # freq a=2 b=2 ▁=1 -> alphabet [a, b, ▁]; ids <unk>=0, <s>=1, a=2, b=3, ▁=4
    # merges: (a,b)=2 -> 5; then (▁,ab)=1 < 2 -> stop
    m = reference_train(["ab ab"], 10, scheme="chars", special_tokens=("<s>",))
    assert m.vocab == [b"<unk>", b"<s>", b"a", b"b", M, b"ab"]
    assert m.merges == [(b"a", b"b")]
    assert reference_encode(m, "ab<s> ba") == [5, 1, 4, 3, 2]


def test_vocab_size_arithmetic_and_minimum():
    with pytest.raises(ValueError):
        reference_train(["abc"], 256, special_tokens=("<s>",))
    m = reference_train(["abc"], 257, special_tokens=("<s>",), min_frequency=1)
    assert m.merges == [] and len(m.vocab) == 257
    # chars: <unk> + alphabet {a,b,c} = 4
    with pytest.raises(ValueError):
        reference_train(["abc"], 3, scheme="chars")
    assert len(reference_train(["abc"], 4, scheme="chars", min_frequency=1).vocab) == 4
    # vocab_size caps the number of merges
    m = reference_train(["abcdefgh"], 256 + 3, pretokenizer="none", min_frequency=1)
    assert m.merges == [(b"a", b"b"), (b"ab", b"c"), (b"abc", b"d")]


def test_alphabet_order_frequency_then_bytes():
    # b=3, a=1, c=1, é=1: b first, then a, c, é by UTF-8 bytes
    assert reference_alphabet(["\u00e9cabbb"], pretokenizer="none") == ["b", "a", "c", "\u00e9"]


# ---------------------------------------------------------------- special tokens


def test_special_tokens_never_trained_on():
    # segments "x","x","x": no pairs at all
    m = reference_train(["x<s>x<s>x"], 300, pretokenizer="none", special_tokens=("<s>",), min_frequency=1)
    assert m.merges == []
    # without the special: (x,<)=(<,s)=(s,>)=(>,x)=2 -> smallest bytes b"<" (0x3c)
    m = reference_train(["x<s>x<s>x"], 257, pretokenizer="none", min_frequency=1)
    assert m.merges == [(b"<", b"s")] and m.merge_counts == [2]


def test_special_split_leftmost_then_longest():
    assert split_specials("a<s>b", ["<s", "<s>"]) == [(False, "a"), (True, "<s>"), (False, "b")]
    assert split_specials("a<sb", ["<s", "<s>"]) == [(False, "a"), (True, "<s"), (False, "b")]
    # "abcd" starts at 1, "bc" at 2: leftmost wins even though shorter/later in the list
    assert split_specials("xabcd", ["bc", "abcd"]) == [(False, "x"), (True, "abcd"), (False, "")]
    assert split_specials("abcd", ["ab", "bcd"]) == [(False, ""), (True, "ab"), (False, "cd")]
    assert split_specials("<s><s>", ["<s>"]) == [
        (False, ""), (True, "<s>"), (False, ""), (True, "<s>"), (False, "")
    ]


def test_special_tokens_split_before_pretokenization():
    # "a<s>b" must not let gpt2 see "a" and "b" as one segment: chars/none -> pieces "a", "b"
    pieces = list(text_pieces("a b<s>c", "none", ("<s>",), "chars"))
    assert pieces == [("piece", "a b"), ("special", "<s>"), ("piece", "c")]


# ---------------------------------------------------------------- chars scheme


def test_unk_token_text_is_a_special_token_in_chars():
    # §5 lists <unk> among the special tokens (chars), §2 splits at special tokens:
    # "a<unk>b a<unk>b" -> "a" | "b a" | "b" -> gpt2 pieces "a", "b", " a", "b"
    # -> words (a), (b)x2, (▁,a): the only pair is (▁,a)
    m = reference_train(["a<unk>b a<unk>b"], 100, scheme="chars", min_frequency=1)
    assert m.vocab[0] == b"<unk>"
    assert set(m.vocab[1:4]) == {b"a", b"b", M} and len(m.vocab) == 5
    assert m.merges == [(M, b"a")]
    # bytes scheme: no unk token, "<unk>" is plain text
    assert b"<u" in [l + r for l, r in
                     reference_train(["<unk><unk>"], 257, pretokenizer="none", min_frequency=1).merges]
    # encoding: the <unk> text maps to id 0 like any allowed special
    assert reference_encode(m, "b<unk>") == [m.vocab.index(b"b"), 0]
    m = reference_train(["ab"], 100, scheme="chars", unk_token="[UNK]", special_tokens=("<s>",))
    assert m.vocab[:2] == [b"[UNK]", b"<s>"]


def test_character_coverage_drops_rare_chars_to_unk():
    # "aaab": a=3, b=1, total 4; coverage 0.75 -> prefix [a] covers 3/4
    m = reference_train(["aaab"], 100, scheme="chars", pretokenizer="none", min_frequency=1,
                        character_coverage=0.75)
    assert m.vocab[:2] == [b"<unk>", b"a"]
    # word (a,a,a,<unk>): (a,a)=2 -> (aa,a,<unk>): (aa,a)=1 -> (aaa,<unk>): only an <unk> pair left
    assert m.merges == [(b"a", b"a"), (b"aa", b"a")]
    assert m.merge_counts == [2, 1]
    assert reference_encode(m, "ab") == [1, 0]
    # coverage 0.8 needs both symbols
    m = reference_train(["aaab"], 100, scheme="chars", pretokenizer="none", character_coverage=0.8)
    assert m.vocab[:3] == [b"<unk>", b"a", b"b"]


def test_character_coverage_is_decimal_exact():
    # a=7 of 25 symbols: 7/25 = 0.28 exactly, so [a] covers "at least 0.28"
    # (in binary floating point 0.28 * 25 = 7.000000000000001, which must not matter)
    corpus = ["aaaaaaa"] + [chr(0x4E00 + i) for i in range(18)]
    assert reference_alphabet(corpus, pretokenizer="none", character_coverage=0.28) == ["a"]
    assert len(reference_alphabet(corpus, pretokenizer="none", character_coverage=0.2801)) == 2
    assert reference_alphabet(["aaaaaaabbb"], pretokenizer="none", character_coverage=0.7) == ["a"]
    assert reference_alphabet(["aaaaaaabbb"], pretokenizer="none", character_coverage=0.71) == ["a", "b"]


def test_unk_never_merged():
    # pairs with <unk> are never candidates, even when they are the most frequent
    m = reference_train(["ab", "ab", "ab", "cd"], 100, scheme="chars", pretokenizer="none",
                        min_frequency=1, character_coverage=0.75)
    # freq a=3 b=3 c=1 d=1 (total 8): [a, b] cover 6/8 = 0.75 -> c, d -> <unk>
    assert m.vocab == [b"<unk>", b"a", b"b", b"ab"]
    assert m.merges == [(b"a", b"b")]
    # "aaaa" + ten distinct rare letters: a=4 of 14 >= 0.25 -> only a kept;
    # (<unk>,<unk>) occurs 9 times but (a,a)=3 is chosen
    m = reference_train(["aaaa", "bcdefghijk"], 3, scheme="chars", pretokenizer="none",
                        min_frequency=1, character_coverage=0.25)
    assert m.vocab == [b"<unk>", b"a", b"aa"]
    assert m.merge_counts == [3]


def test_prefix_mode_whitespace_chars():
    # words (▁,a,b) x2: freq a=b=▁=2 -> alphabet by bytes [a, b, ▁]
    # pairs (▁,a)=2 (a,b)=2 -> tie: (b"a", b"b") < (b"\xe2..", b"a")
    m = reference_train(["ab ab"], 100, scheme="chars", pretokenizer="whitespace")
    assert m.vocab[:4] == [b"<unk>", b"a", b"b", M]
    assert m.merges == [(b"a", b"b"), (M, b"ab")]
    assert m.merge_counts == [2, 2]


def test_whitespace_bytes_space_prefix():
    # words ( ,a,b) x2: ( ,a)=2 (a,b)=2 -> b" " < b"a"
    m = reference_train(["ab\tab"], 300, scheme="bytes", pretokenizer="whitespace")
    assert m.merges == [(b" ", b"a"), (b" a", b"b")]


def test_regex_preset_chars_replaces_spaces_only():
    pieces = [p for _, p in text_pieces("a b\tc", "none", (), "chars")]
    m = reference_train(["a b\tc"], 1000, scheme="chars", pretokenizer="none", min_frequency=1)
    assert pieces == ["a b\tc"]
    assert set(m.vocab[1:6]) == {b"a", M, b"b", b"\t", b"c"}


def test_suffix_mode():
    # words "ab" x2, "b" x1 -> (a, b</w>) x2, (b</w>) x1; freq b</w>=3, a=2
    m = reference_train(["ab ab b"], 100, scheme="chars", pretokenizer="whitespace",
                        end_of_word_suffix="</w>")
    assert m.vocab[:3] == [b"<unk>", b"b</w>", b"a"]
    assert m.merges == [(b"a", b"b</w>")]
    assert m.merge_counts == [2]
    # "b</w>" is 5 bytes: a + b</w> = 6 > 5
    m = reference_train(["ab ab b"], 100, scheme="chars", pretokenizer="whitespace",
                        end_of_word_suffix="</w>", max_token_length=5)
    assert m.merges == []
    # "b" inside a word is a different symbol from "b</w>": "ba ab"
    # words (b, a</w>), (a, b</w>) -> alphabet all freq 1, by bytes: a, a</w>, b, b</w>
    assert reference_alphabet(["ba ab"], pretokenizer="whitespace", end_of_word_suffix="</w>") == [
        "a", "a</w>", "b", "b</w>"
    ]
    with pytest.raises(ValueError):
        reference_train(["ab"], 100, scheme="chars", pretokenizer="gpt2", end_of_word_suffix="</w>")


# ---------------------------------------------------------------- pre-tokenization


@pytest.mark.parametrize(
    "preset,text,pieces",
    [
        ("gpt2", "Hello world's 123  \n a  b",
         ["Hello", " world", "'s", " 123", "  \n", " a", " ", " b"]),
        ("gpt2", "I'M", ["I", "'", "M"]),
        ("gpt2", "1234567", ["1234567"]),
        ("gpt2", "don't!!", ["don", "'t", "!!"]),
        ("cl100k", "I'M 1234", ["I", "'M", " ", "123", "4"]),
        ("cl100k", "a\n\nb", ["a", "\n\n", "b"]),
        ("cl100k", "  hello", [" ", " hello"]),
        ("cl100k", "x 'll", ["x", " '", "ll"]),
        ("cl100k", "!!\r\n\r\nx", ["!!\r\n\r\n", "x"]),
        ("o200k", "HelloWorld don't", ["Hello", "World", " don't"]),
        ("o200k", "HelloWORLDFoo", ["Hello", "WORLDFoo"]),
        ("o200k", "DON'T 12345", ["DON'T", " ", "123", "45"]),
        ("o200k", "x!!/\n", ["x", "!!/\n"]),
        ("whitespace", " a\tb\x1c c\u00a0d ", ["a", "b", "c", "d"]),
        ("none", "a b", ["a b"]),
        ("none", "", []),
        (r"\p{L}+", "ab 12 cd", ["ab", " 12 ", "cd"]),  # custom regexes keep the gaps
    ],
)
def test_pretokenize_hand_examples(preset, text, pieces):
    assert reference_pretokenize(text, preset) == pieces


@settings(max_examples=300, deadline=None)
@given(st.text(), st.sampled_from(REGEX_PRESETS))
def test_regex_presets_cover_text(text, preset):
    assert "".join(reference_pretokenize(text, preset)) == text


# ---------------------------------------------------------------- files / invalid UTF-8


def test_file_texts():
    assert file_texts(b"a\r\nb\n\nc\rd\n") == [b"a", b"b", b"", b"c\rd"]
    assert file_texts(b"x") == [b"x"]


def test_invalid_utf8_runs_are_pieces():
    pieces = list(text_pieces(b"ab\xff\xfe cd\xc3", "gpt2", (), "bytes"))
    assert pieces == [("piece", "ab"), ("piece", b"\xff\xfe"), ("piece", " cd"), ("piece", b"\xc3")]
    with pytest.raises(UnicodeDecodeError):
        list(text_pieces(b"ab\xff", "gpt2", (), "chars"))
    # (ff,fe) is counted like any pair; it is never joined to neighbours
    m = reference_train([b"\xff\xfe\xff\xfe"], 257, pretokenizer="gpt2", min_frequency=1)
    # (ff,fe)=2, (fe,ff)=1
    assert m.merges == [(b"\xff", b"\xfe")] and m.merge_counts == [2]


# ---------------------------------------------------------------- encoding


def test_encode_applies_merges_in_order():
    m = reference_train(["aaa"], 258, pretokenizer="none", min_frequency=1)
    # a a a a a -> (a,a): aa aa a -> (aa,a): aa aaa
    assert reference_encode(m, "aaaaa") == [256, 257]
    assert reference_encode_by_rank(m, "aaaaa") == [256, 257]


def test_model_from_merges_matches_trained_model():
    m = reference_train(["hello hello world", "low lower lowest"], 256 + 20, min_frequency=1)
    r = reference_model_from_merges(m.merges, "bytes", "gpt2")
    assert r.vocab == m.vocab and r.merge_ids == m.merge_ids


corpus_text = st.text(alphabet=st.sampled_from(list("aab  \t\n'sé😀1.\u0301中<>")), max_size=20)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(corpus_text, min_size=1, max_size=10),
    st.lists(corpus_text, max_size=5),
    st.sampled_from(ALL_PRESETS),
    st.sampled_from(["bytes", "chars"]),
    st.integers(0, 25),
)
def test_encode_orders_agree_and_bytes_lossless(corpus, texts, preset, scheme, merges):
    n_base = 256 if scheme == "bytes" else 1 + len(reference_alphabet(corpus, scheme, preset))
    m = reference_train(corpus, n_base + merges, scheme=scheme, pretokenizer=preset, min_frequency=1)
    # merge counts never increase (a merge cannot create a pair more frequent than itself)
    assert m.merge_counts == sorted(m.merge_counts, reverse=True)
    for t in corpus + texts:
        ids = reference_encode(m, t)
        assert ids == reference_encode_by_rank(m, t)
        if scheme == "bytes" and preset in REGEX_PRESETS:
            assert reference_decode_bytes(m, ids) == t.encode()
    # after encoding, no pair of any merge is left adjacent within a
    # pre-token (merges never cross pre-token boundaries: with cl100k, "<.b"
    # is "<." + "b", and the pair (".", "b") may stay)
    for t in corpus:
        for piece in reference_pretokenize(t, preset):
            ids = reference_encode(m, piece)
            if reference_pretokenize(piece, preset) != [piece]:
                continue  # a piece that re-splits on its own (look-around context)
            pairs = set(zip(ids, ids[1:]))
            assert not any((a, b) in pairs for a, b, _ in m.merge_ids)
