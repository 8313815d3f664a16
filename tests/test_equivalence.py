"""The Rust engine must equal the oracle (tests/reference.py) exactly.

Compared: merge list, merge counts, vocabulary size and every id's token bytes.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import random
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SLICE_BYTES_VOCAB, SLICE_CHARS_COVERAGE, stable_chars  # see conftest: Unicode version
from reference import (
    ALL_PRESETS,
    REGEX_PRESETS,
    file_texts,
    reference_alphabet,
    reference_pretokenize,
    reference_train,
)

bpeforge = pytest.importorskip("bpeforge", reason="bpeforge is not built/installed (maturin develop)")


# ------------------------------------------------------------------ helpers


def engine_vocab(tok) -> list:
    return [tok.id_to_token(i) for i in range(tok.vocab_size)]


def assert_same_model(tok, ref, context: object = "") -> None:
    # ids before the first merge: specials (+ <unk>) and the alphabet
    n_base = len(ref.vocab) - len(ref.merges)
    ev = engine_vocab(tok)
    e_base = ev[: tok.vocab_size - len(tok.merges)]
    if e_base != ref.vocab[:n_base]:
        raise AssertionError(
            f"specials/alphabet differ: engine {len(e_base)} entries, oracle {n_base}; "
            f"engine-only {sorted(set(e_base) - set(ref.vocab[:n_base]))[:10]!r}, "
            f"oracle-only {sorted(set(ref.vocab[:n_base]) - set(e_base))[:10]!r}; "
            f"first entries engine {e_base[:6]!r} oracle {ref.vocab[:n_base][:6]!r}\n{context}"
        )
    em, rm = list(tok.merges), list(ref.merges)
    if em != rm:
        i = next((k for k, (x, y) in enumerate(zip(em, rm)) if x != y), min(len(em), len(rm)))
        raise AssertionError(
            f"merge lists differ at index {i}: engine {em[i:i + 3]!r} vs oracle {rm[i:i + 3]!r} "
            f"(engine {len(em)} merges, oracle {len(rm)}; counts engine "
            f"{list(tok.merge_counts)[max(0, i - 1):i + 2]} oracle {ref.merge_counts[max(0, i - 1):i + 2]})"
            f"\n{context}"
        )
    assert list(tok.merge_counts) == ref.merge_counts, context
    assert tok.vocab_size == len(ref.vocab), context
    assert ev == ref.vocab, context
    for i, t in enumerate(ref.vocab):
        j = tok.token_to_id(t)
        assert j is not None and ref.vocab[j] == t, (i, t, j, context)


def train_or_nothing(ref, train_fn, *args, **kw):
    """Train with the engine. For a corpus with nothing to train on, a TrainingError
    is accepted instead of a model (SEMANTICS does not say whether that is an
    error; the engine's own tests want "no text" to raise): returns None then."""
    try:
        return train_fn(*args, **kw)
    except bpeforge.TrainingError:
        if ref.n_symbols == 0:
            return None
        raise


def check_engine(ref, context, train_fn, *args, **kw):
    tok = train_or_nothing(ref, train_fn, *args, **kw)
    if tok is not None:
        assert_same_model(tok, ref, context)


def symbol_count(corpus, kw) -> int:
    return reference_train(corpus, 10**9, **{**kw, "min_frequency": 10**9}).n_symbols


def assert_same_merges(a, b, context: object = "") -> None:
    assert list(a.merges) == list(b.merges), context
    assert list(a.merge_counts) == list(b.merge_counts), context
    assert engine_vocab(a) == engine_vocab(b), context


def base_size(corpus, kw) -> int:
    n_special = len(kw.get("special_tokens", ()))
    if kw["scheme"] == "bytes":
        return n_special + 256
    alphabet = reference_alphabet(
        corpus, scheme="chars", pretokenizer=kw["pretokenizer"],
        special_tokens=kw.get("special_tokens", ()),
        character_coverage=kw.get("character_coverage", 1.0),
        end_of_word_suffix=kw.get("end_of_word_suffix"),
        unk_token=kw.get("unk_token", "<unk>"),
    )
    return 1 + n_special + len(alphabet)


# ------------------------------------------------------------------ strategies


# Fragments that stress the edges: repeated characters, all kinds of
# whitespace, empty strings, emoji (incl. modifiers, ZWJ), combining marks,
# CJK, Arabic, digits of several scripts, punctuation, apostrophes and
# contractions (incl. case variants and U+017F, which case-folds to "s"),
# title/modifier letters, the boundary marker itself, and the special tokens.
FRAGMENTS = [
    "a", "b", "ab", "ba", "aaaa", "bbb", "abab", "A", "HeLLo", "World",
    " ", "  ", "   ", "\t", "\n", "\r\n", "\r", "", "\x0b", "\x0c", "\x1c", "\x85", "\u00a0", "\u2028", "\u3000",
    "\U0001F600", "\U0001F44D\U0001F3FD", "\U0001F468\u200d\U0001F469", "e\u0301", "\u00e9", "\u0301",
    "\u4e2d\u6587", "\u65e5\u672c\u8a9e", "\u0645\u0631\u062d\u0628\u0627", "\u0939\u093f\u0928\u094d\u0926\u0940",
    "123", "4", "12345", "\u0663", "\u216b",
    ".", ",", "!", "...", "?!", "/", "-", "<", ">",
    "'", "'s", "'ll", "'S", "'LL", "'\u017f", "'re", "'ve", "'d", "'m", "'t", "\u2019s",
    "\u01c5", "\u02b0", "\u2581",
    "<s>", "<|end|>", "<unk>", "[UNK]",
]
CHARS = list("aab AB\t\n\r'.1\u00e9\u0301\u4e2d\U0001F600\u00a0\u2028")

text_st = st.one_of(
    st.lists(st.sampled_from(FRAGMENTS), max_size=8).map("".join),
    st.text(alphabet=st.sampled_from(CHARS), max_size=12),
)
corpus_st = st.lists(text_st, min_size=1, max_size=30)

SPECIAL_SETS = [(), ("<s>",), ("<|end|>", "<s", "<s>")]


@st.composite
def train_configs(draw):
    scheme = draw(st.sampled_from(["bytes", "chars"]))
    preset = draw(st.sampled_from(ALL_PRESETS))
    kw = dict(
        scheme=scheme,
        pretokenizer=preset,
        special_tokens=draw(st.sampled_from(SPECIAL_SETS)),
        min_frequency=draw(st.sampled_from([0, 1, 1, 2, 2, 3])),
        max_token_length=draw(st.sampled_from([None, None, None, 1, 2, 3, 4, 5, 6, 8])),
    )
    if scheme == "chars":
        kw["character_coverage"] = draw(st.sampled_from([1.0, 1.0, 0.95, 0.7, 0.5]))
        if preset == "whitespace":
            kw["end_of_word_suffix"] = draw(st.sampled_from([None, "</w>"]))
        kw["unk_token"] = draw(st.sampled_from(["<unk>", "<unk>", "[UNK]"]))
    extra = draw(st.integers(-1, 40))  # merges allowed; -1: vocab_size too small
    return kw, extra


# ------------------------------------------------------------------ training: hypothesis


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpus=corpus_st, cfg=train_configs())
def test_train_matches_oracle(corpus, cfg):
    kw, extra = cfg
    vocab_size = base_size(corpus, kw) + extra
    context = f"corpus={corpus!r}\nvocab_size={vocab_size} kw={kw!r}"
    if extra < 0:
        with pytest.raises(ValueError):
            reference_train(corpus, vocab_size, **kw)
        errors = bpeforge.ParameterError
        if symbol_count(corpus, kw) == 0:
            errors = (bpeforge.ParameterError, bpeforge.TrainingError)
        with pytest.raises(errors):
            bpeforge.train_from_iterator(corpus, vocab_size=vocab_size, progress=False, **kw)
        return
    ref = reference_train(corpus, vocab_size, **kw)
    check_engine(ref, context, bpeforge.train_from_iterator, corpus, vocab_size=vocab_size, progress=False, **kw)


@settings(max_examples=60, deadline=None)
@given(corpus=st.lists(st.text(alphabet=stable_chars, max_size=15), min_size=1, max_size=10),
       scheme=st.sampled_from(["bytes", "chars"]), preset=st.sampled_from(ALL_PRESETS),
       extra=st.integers(0, 20))
def test_train_matches_oracle_arbitrary_unicode(corpus, scheme, preset, extra):
    kw = dict(scheme=scheme, pretokenizer=preset, min_frequency=1)
    vocab_size = base_size(corpus, kw) + extra
    ref = reference_train(corpus, vocab_size, **kw)
    check_engine(ref, f"corpus={corpus!r} vocab_size={vocab_size} kw={kw!r}",
                 bpeforge.train_from_iterator, corpus, vocab_size=vocab_size, progress=False, **kw)


def test_custom_regex_matches_oracle():
    corpus = ["ab12 cd-ef 12 ab ab", "x!y ab12ab", "\u4e2d\u6587 ab"]
    pat = r"\p{L}+|\p{N}+"
    ref = reference_train(corpus, 256 + 10, pretokenizer=pat, min_frequency=1)
    tok = bpeforge.train_from_iterator(corpus, vocab_size=256 + 10, pretokenizer=bpeforge.Regex(pat), min_frequency=1,
                                       progress=False)
    assert_same_model(tok, ref)


_LETTERS = [chr(c) for c in range(0x4E00, 0x4E00 + 200)]  # distinct CJK characters


@pytest.mark.parametrize(
    "counts,coverage",
    [
        # cum/total lands exactly on c. For 0.28, 0.56, 0.07 the float product
        # c*total rounds *above* the integer (0.28*25 = 7.000000000000001), so
        # `cum as f64 >= c * total as f64` keeps one symbol too many.
        ([7, 3], 0.7),
        ([7] + [1] * 18, 0.28),
        ([14] + [1] * 11, 0.56),
        ([3, 3, 2, 2], 0.3),
        ([7] + [1] * 93, 0.07),
        ([29] + [1] * 71, 0.29),
        ([5, 5], 0.5),
        ([5, 5], 0.51),
        ([9, 1], 0.9),
        ([9, 1], 0.9000001),
        ([1] * 10, 1.0),
    ],
    ids=lambda v: f"{v[0]}of{sum(v)}" if isinstance(v, list) else str(v),
)
def test_character_coverage_boundaries(counts, coverage):
    """§4 "covers at least c": c as written (decimal); exact-equality cases."""
    corpus = [ch * n for ch, n in zip(_LETTERS, counts)]  # symbol frequencies exactly `counts`
    kw = dict(scheme="chars", pretokenizer="none", character_coverage=coverage, min_frequency=1)
    vocab_size = base_size(corpus, kw) + 5
    ref = reference_train(corpus, vocab_size, **kw)
    tok = bpeforge.train_from_iterator(corpus, vocab_size=vocab_size, progress=False, **kw)
    assert_same_model(tok, ref, f"counts={counts} coverage={coverage}")


# ------------------------------------------------------------------ training: real text


def test_slice_bytes_gpt2(slice_tok_bytes_gpt2, slice_ref_bytes_gpt2):
    assert len(slice_ref_bytes_gpt2.merges) == SLICE_BYTES_VOCAB - 256
    assert_same_model(slice_tok_bytes_gpt2, slice_ref_bytes_gpt2)


def test_slice_chars_whitespace(corpus_slice, slice_ref_chars_ws, slice_chars_vocab_size):
    tok = bpeforge.train_from_iterator(
        corpus_slice, vocab_size=slice_chars_vocab_size, scheme="chars", pretokenizer="whitespace",
        min_frequency=2, character_coverage=SLICE_CHARS_COVERAGE, progress=False,
    )
    assert len(slice_ref_chars_ws.merges) == 300
    assert_same_model(tok, slice_ref_chars_ws)


# ------------------------------------------------------------------ input paths and threads


def test_files_iterables_threads_agree(corpus_slice, slice_tok_bytes_gpt2, slice_ref_bytes_gpt2, tmp_path):
    kw = dict(vocab_size=SLICE_BYTES_VOCAB, scheme="bytes", pretokenizer="gpt2", min_frequency=2, progress=False)
    data = "".join(l + "\n" for l in corpus_slice).encode()
    one = tmp_path / "slice.txt"
    one.write_bytes(data)
    half = len(corpus_slice) // 2
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    first.write_text("".join(l + "\n" for l in corpus_slice[:half]), encoding="utf-8")
    second.write_text("".join(l + "\n" for l in corpus_slice[half:]), encoding="utf-8")
    crlf = tmp_path / "crlf.txt"
    crlf.write_bytes(data.replace(b"\n", b"\r\n"))
    shuffled_lines = list(corpus_slice)
    random.Random(7).shuffle(shuffled_lines)
    shuffled = tmp_path / "shuffled.txt"
    shuffled.write_text("\n".join(shuffled_lines), encoding="utf-8")  # no final newline
    gz, xz, bz = tmp_path / "slice.txt.gz", tmp_path / "slice.txt.xz", tmp_path / "slice.txt.bz2"
    gz.write_bytes(gzip.compress(data))
    xz.write_bytes(lzma.compress(data))
    bz.write_bytes(bz2.compress(data))

    variants = {
        "file threads=1": bpeforge.train(one, threads=1, **kw),
        "file threads=2": bpeforge.train(str(one), threads=2, **kw),
        "file default threads": bpeforge.train([one], **kw),
        "iterable threads=1": bpeforge.train_from_iterator(corpus_slice, threads=1, **kw),
        "iterable threads=2": bpeforge.train_from_iterator(iter(corpus_slice), threads=2, **kw),
        "generator": bpeforge.train_from_iterator((l for l in corpus_slice), **kw),
        "two files reversed": bpeforge.train([second, first], threads=2, **kw),
        "CRLF file": bpeforge.train(crlf, **kw),
        "shuffled lines": bpeforge.train(shuffled, threads=2, **kw),
        "gzip": bpeforge.train(gz, **kw),
        "xz": bpeforge.train(xz, **kw),
        "bz2": bpeforge.train(bz, **kw),
    }
    for name, tok in variants.items():
        assert_same_model(tok, slice_ref_bytes_gpt2, name)
    assert_same_merges(slice_tok_bytes_gpt2, variants["file threads=1"])


# Raw file content: valid fragments and invalid UTF-8 (bytes scheme keeps them).
INVALID = [b"\xff", b"\xfe\xff", b"\xc3", b"\xe2\x82", b"\x80\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf"]
raw_line_st = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS).map(lambda s: s.encode()), st.sampled_from(INVALID)), max_size=8
).map(b"".join)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(text_st.map(lambda s: s.encode()), min_size=1, max_size=20),
    scheme=st.sampled_from(["bytes", "chars"]),
    preset=st.sampled_from(ALL_PRESETS),
    extra=st.integers(0, 30),
    threads=st.sampled_from([1, 2]),
    final_newline=st.booleans(),
)
def test_file_input_matches_oracle(lines, scheme, preset, extra, threads, final_newline):
    """Lines may contain \\r, \\u2028, \\x0b, \\x85...: only \\n (and \\r\\n) end a text."""
    data = b"\n".join(lines) + (b"\n" if final_newline else b"")
    texts = [t.decode() for t in file_texts(data)]
    kw = dict(scheme=scheme, pretokenizer=preset, min_frequency=1)
    vocab_size = base_size(texts, kw) + extra
    ref = reference_train(texts, vocab_size, **kw)
    ctx = f"data={data!r} vocab_size={vocab_size} kw={kw!r}"
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "in.txt"
        p.write_bytes(data)
        check_engine(ref, ctx, bpeforge.train, p, vocab_size=vocab_size, threads=threads, progress=False, **kw)
    check_engine(ref, ctx, bpeforge.train_from_iterator, texts, vocab_size=vocab_size, threads=threads,
                 progress=False, **kw)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(raw_line_st, min_size=1, max_size=20),
    preset=st.sampled_from(ALL_PRESETS),
    extra=st.integers(0, 30),
)
def test_invalid_utf8_file_bytes_scheme(lines, preset, extra):
    """§4: each maximal run of invalid bytes is its own piece; nothing is dropped."""
    data = b"\n".join(lines) + b"\n"
    kw = dict(scheme="bytes", pretokenizer=preset, min_frequency=1)
    ref = reference_train(file_texts(data), 256 + extra, **kw)
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "in.txt"
        p.write_bytes(data)
        check_engine(ref, f"data={data!r} kw={kw!r}", bpeforge.train, p, vocab_size=256 + extra, threads=2,
                     progress=False, **kw)


def test_invalid_utf8_file_chars_scheme_names_file_and_line(tmp_path):
    p = tmp_path / "broken-input.txt"
    p.write_bytes(b"fine line\nanother fine line\nbad \xff byte\nlast\n")
    with pytest.raises(bpeforge.BpeforgeError) as e:
        bpeforge.train(p, vocab_size=300, scheme="chars", progress=False)
    msg = str(e.value)
    assert "broken-input.txt" in msg, msg
    assert re.search(r"\b3\b", msg), msg


@pytest.mark.parametrize("scheme", ["bytes", "chars"])
@pytest.mark.parametrize("preset", ["gpt2", "whitespace", "none"])
def test_documents_and_separator_modes(tmp_path, scheme, preset):
    docs = ["first doc\nwith two lines\n", "second\r\ndoc  ab ab\n\n", "third ab ab"]
    for i, d in enumerate(docs):
        (tmp_path / f"d{i}.txt").write_text(d, encoding="utf-8", newline="")
    files = [tmp_path / f"d{i}.txt" for i in range(3)]
    kw = dict(scheme=scheme, pretokenizer=preset, min_frequency=1)
    vocab_size = base_size(docs, kw) + 25
    ref = reference_train(docs, vocab_size, **kw)
    tok = bpeforge.train(files, vocab_size=vocab_size, documents=True, progress=False, **kw)
    assert_same_model(tok, ref, "documents=True")

    joined = "@@".join(docs)
    (tmp_path / "sep.txt").write_text(joined, encoding="utf-8", newline="")
    tok = bpeforge.train(tmp_path / "sep.txt", vocab_size=vocab_size, separator="@@", progress=False, **kw)
    assert_same_model(tok, ref, "separator='@@'")


# ------------------------------------------------------------------ pre-tokenization

EDGE_CHARS = list(
    "\r\n\t\x0b\x0c\x1c\x1d\x1e\x1f\x85\u00a0\u1680\u2000\u200a\u200b\u2028\u2029\u202f\u205f\u3000\ufeff"
    " 'sStTmMdDlLvVrReE\u017f\u212a"
    "aA1\u0661\u00b2\u216b\u00e9\u0301\u0300\u01c5\u02b0\u4e2d\u3042\u0645\u0939\u093f"
    "!./-_\u2019\U0001F600\U0001F3FD\u200d"
)
pretok_text_st = st.one_of(
    st.text(alphabet=stable_chars),
    st.text(alphabet=st.sampled_from(EDGE_CHARS), max_size=30),
    st.text(alphabet=st.one_of(st.sampled_from(EDGE_CHARS), stable_chars), max_size=30),
)


@settings(max_examples=600, deadline=None)
@given(text=pretok_text_st, preset=st.sampled_from(REGEX_PRESETS))
def test_pretokenize_regex_presets(text, preset):
    assert bpeforge.pretokenize(text, preset) == reference_pretokenize(text, preset)


@settings(max_examples=200, deadline=None)
@given(text=pretok_text_st)
def test_pretokenize_whitespace(text):
    assert bpeforge.pretokenize(text, "whitespace") == reference_pretokenize(text, "whitespace")


@settings(max_examples=100, deadline=None)
@given(text=pretok_text_st)
def test_pretokenize_none(text):
    assert bpeforge.pretokenize(text, "none") == reference_pretokenize(text, "none")


@pytest.mark.parametrize("preset", REGEX_PRESETS)
def test_pretokenize_letters_added_in_unicode_15_and_16(preset):
    # U+1E030 (15.0), U+31350 (15.0, CJK Ext. H), U+2EBF0 (15.1), U+1C89, U+10D50 (16.0)
    t = "".join(f":{c}x {c}1" for c in "\U0001E030\U00031350\U0002EBF0\u1c89\U00010D50")
    assert bpeforge.pretokenize(t, preset) == reference_pretokenize(t, preset)


def test_pretokenize_default_preset_is_the_training_default():
    t = "Hello world's 123  \n a  b I'M हिन्दी"
    assert bpeforge.pretokenize(t) == reference_pretokenize(t, bpeforge.TrainOptions().pretokenizer)
    assert bpeforge.pretokenize(t) == reference_pretokenize(t)
