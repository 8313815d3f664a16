"""SuperBPE (Liu et al., 2025): two-stage training, its limits, exact encoding."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpeforge
from reference import reference_encode, reference_model_from_merges, reference_pretokenize


@pytest.fixture(scope="module")
def models(corpus_slice):
    plain = bpeforge.train_from_iterator(corpus_slice, vocab_size=1500, progress=False)
    sb = bpeforge.train_from_iterator(corpus_slice, vocab_size=1500, superbpe_transition=1000, progress=False)
    return plain, sb


def test_stage_one_is_plain_bpe(corpus_slice, models) -> None:
    plain, sb = models
    stage1 = bpeforge.train_from_iterator(corpus_slice, vocab_size=1000, progress=False)
    assert sb.merges[: len(stage1.merges)] == stage1.merges
    assert plain.merges[: len(stage1.merges)] == stage1.merges
    assert sb.pretokenizer == "superword"
    assert sb.vocab_size == 1500
    meta = sb.metadata["superbpe"]
    assert meta["transition"] == 1000 and meta["stage1_pretokenizer"] == bpeforge.TrainOptions().pretokenizer and meta["max_words"] == 4


def _words(token: bytes) -> int:
    return len(re.findall(rb"[^ \t\r\n]+", token))


def test_limits_hold(models) -> None:
    _, sb = models
    multi = 0
    for a, b in sb.merges:
        t = a + b
        assert _words(t) <= 4, t
        # no token spans ": " (a colon and a space with more after it)
        assert not re.search(rb": .", t, re.S), t
        multi += b" " in t.strip()
    assert multi > 0, "stage 2 learned no multi-word token"


def test_max_words_option(corpus_slice) -> None:
    two = bpeforge.train_from_iterator(corpus_slice, vocab_size=1500, superbpe_transition=1000, superbpe_max_words=2, progress=False)
    assert max(_words(a + b) for a, b in two.merges) <= 2


def test_superword_pretokenizer_equals_reference() -> None:
    text = "By the way: it is 12345 years old!! Really?? Yes.\n\nNext  line   here /x//y"
    assert bpeforge.pretokenize(text, "superword") == reference_pretokenize(text, "superword")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab cd:!?.,'1234\n\t日本")), max_size=60))
def test_superword_pretokenizer_property(text: str) -> None:
    assert bpeforge.pretokenize(text, "superword") == reference_pretokenize(text, "superword")


def test_encoding_is_exact(models, corpus_slice) -> None:
    _, sb = models
    oracle = reference_model_from_merges(sb.merges, scheme="bytes", pretokenizer="superword")
    lines = corpus_slice[:300]
    for line, ids in zip(lines, sb.encode_batch(lines)):
        assert ids == reference_encode(oracle, line, ordinary=True), line
        assert sb.decode(ids) == line


def test_fewer_tokens_than_plain(models, corpus_slice) -> None:
    plain, sb = models
    lines = corpus_slice[1000:2000]
    n_plain = sum(map(len, plain.encode_batch(lines)))
    n_sb = sum(map(len, sb.encode_batch(lines)))
    assert n_sb < n_plain


def test_bad_settings() -> None:
    with pytest.raises(bpeforge.ParameterError, match="below vocab_size"):
        bpeforge.train_from_iterator(["a b c"], vocab_size=300, superbpe_transition=300, progress=False)
    with pytest.raises(bpeforge.ParameterError, match="bytes"):
        bpeforge.train_from_iterator(["a b c"], vocab_size=300, scheme="chars", superbpe_transition=200, progress=False)


def test_huggingface_export_reproduces_superbpe(models, corpus_slice, tmp_path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    _, sb = models
    path = tmp_path / "tokenizer.json"
    sb.to_huggingface(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    lines = corpus_slice[:1000]
    ours = sb.encode_batch(lines)
    assert [e.ids for e in hf.encode_batch(lines, add_special_tokens=False)] == ours
    assert bpeforge.from_huggingface(path).encode_batch(lines) == ours
