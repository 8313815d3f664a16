"""Encoding: byte-level round trips, and the engine's ids equal the oracle's (§7)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import SLICE_BYTES_VOCAB, SMALL_CORPUS, SMALL_SPECIALS, stable_chars
from reference import (
    REGEX_PRESETS,
    reference_alphabet,
    reference_decode_bytes,
    reference_encode,
    reference_model_from_merges,
    reference_train,
)

bpeforge = pytest.importorskip("bpeforge", reason="bpeforge is not built/installed (maturin develop)")


stable_text = st.text(alphabet=stable_chars)  # see conftest: Unicode version
# arbitrary text with special tokens spliced in
text_with_specials = st.lists(st.one_of(stable_text, st.sampled_from(SMALL_SPECIALS)), max_size=5).map("".join)


# ------------------------------------------------------------------ arbitrary Unicode, small tokenizers


@settings(max_examples=300, deadline=None)
@given(text=st.text(), preset=st.sampled_from(REGEX_PRESETS))
def test_roundtrip_arbitrary_unicode(small_models, text, preset):
    """decode(encode(text)) == text for any text (no Unicode-version filter needed)."""
    tok, _ = small_models[preset]
    ids = tok.encode_ordinary(text)
    assert tok.decode_bytes(ids) == text.encode("utf-8")
    assert tok.decode(ids) == text
    assert tok.decode(tok.encode(text, allowed_special="all")) == text


@settings(max_examples=300, deadline=None)
@given(text=text_with_specials, preset=st.sampled_from(REGEX_PRESETS))
def test_encode_matches_oracle(small_models, text, preset):
    tok, ref = small_models[preset]
    ids = tok.encode(text, allowed_special="all")
    assert ids == reference_encode(ref, text)
    assert reference_decode_bytes(ref, ids) == text.encode("utf-8")
    assert tok.decode(ids) == text
    assert tok.encode_ordinary(text) == reference_encode(ref, text, ordinary=True)


def test_small_models_trained_identically(small_models):
    for preset, (tok, ref) in small_models.items():
        assert list(tok.merges) == ref.merges, preset
        assert list(tok.merge_counts) == ref.merge_counts, preset


@pytest.mark.parametrize("preset", REGEX_PRESETS)
def test_special_tokens_in_encode(small_models, preset):
    tok, ref = small_models[preset]
    eot, pad = SMALL_SPECIALS
    text = f"hello{eot} world{pad}{pad}x"
    with pytest.raises(bpeforge.SpecialTokenError):
        tok.encode(text)
    with pytest.raises(bpeforge.SpecialTokenError):
        tok.encode(text, allowed_special={pad})
    ids = tok.encode(text, allowed_special="all")
    assert ids == reference_encode(ref, text)
    assert ids.count(0) == 1 and ids.count(1) == 2  # specials take ids 0, 1 (§5)
    assert tok.encode(text, allowed_special={eot, pad}) == ids
    assert tok.decode(ids) == text
    # encode_ordinary treats special text as plain text
    plain = tok.encode_ordinary(text)
    assert 0 not in plain and 1 not in plain
    assert plain == reference_encode(ref, text, ordinary=True)
    assert tok.decode(plain) == text


@settings(max_examples=50, deadline=None)
@given(texts=st.lists(text_with_specials, max_size=12), threads=st.sampled_from([None, 1, 2]))
def test_encode_batch_matches_encode(small_models, texts, threads):
    tok, ref = small_models["cl100k"]
    batch = tok.encode_batch(texts, threads=threads, allowed_special="all")
    assert batch == [reference_encode(ref, t) for t in texts]


# ------------------------------------------------------------------ real text


def test_slice_roundtrip_bytes_gpt2(corpus_slice, slice_tok_bytes_gpt2, slice_ref_bytes_gpt2):
    tok, ref = slice_tok_bytes_gpt2, slice_ref_bytes_gpt2
    batch = tok.encode_batch(corpus_slice)
    for line, ids in zip(corpus_slice, batch):
        assert ids == reference_encode(ref, line), line
        assert tok.decode(ids) == line
    assert batch == [tok.encode(l) for l in corpus_slice]
    assert tok.decode_bytes([i for ids in batch for i in ids]) == "".join(corpus_slice).encode()


@pytest.mark.parametrize("preset", ["cl100k", "o200k"])
def test_slice_roundtrip_other_presets(corpus_slice, preset):
    """Encoding checked independently of training: the oracle encodes with the engine's merges."""
    tok = bpeforge.train_from_iterator(corpus_slice, vocab_size=SLICE_BYTES_VOCAB, pretokenizer=preset,
                                       progress=False)
    ref = reference_model_from_merges(tok.merges, "bytes", preset)
    assert [tok.id_to_token(i) for i in range(tok.vocab_size)] == ref.vocab
    batch = tok.encode_batch(corpus_slice, threads=2)
    for line, ids in zip(corpus_slice, batch):
        assert ids == reference_encode(ref, line), line
        assert tok.decode(ids) == line


def test_slice_encode_chars_whitespace(corpus_slice, slice_ref_chars_ws, slice_chars_vocab_size):
    """chars/whitespace is not lossless, but its ids must still equal the oracle's (incl. <unk>)."""
    tok = bpeforge.train_from_iterator(
        corpus_slice, vocab_size=slice_chars_vocab_size, scheme="chars", pretokenizer="whitespace",
        character_coverage=0.9995, progress=False,
    )
    ref = slice_ref_chars_ws
    assert list(tok.merges) == ref.merges
    n_unk = 0
    for line, ids in zip(corpus_slice, tok.encode_batch(corpus_slice)):
        assert ids == reference_encode(ref, line), line
        n_unk += ids.count(0)
        if 0 not in ids:  # §7: ▁ -> space, the leading space dropped
            assert tok.decode(ids) == " ".join(line.split()), line
    assert n_unk > 0  # coverage < 1 really dropped characters


def test_save_load_roundtrip(small_models, tmp_path):
    tok, ref = small_models["o200k"]
    p = tmp_path / "model.json"
    tok.save(p)
    tok2 = bpeforge.load(p)
    assert list(tok2.merges) == ref.merges
    assert [tok2.id_to_token(i) for i in range(tok2.vocab_size)] == ref.vocab
    t = "Größere Straßen<|endoftext|> 1234567 don't 😀"
    assert tok2.encode(t, allowed_special="all") == reference_encode(ref, t)


# ------------------------------------------------------------------ chars scheme and whitespace decoding


@pytest.fixture(scope="module")
def chars_models():
    """(preset, suffix) -> (engine tokenizer, oracle model), chars scheme, full coverage."""
    out = {}
    for preset, suffix in [("gpt2", None), ("o200k", None), ("none", None), ("whitespace", None),
                           ("whitespace", "</w>")]:
        kw = dict(scheme="chars", pretokenizer=preset, special_tokens=SMALL_SPECIALS, min_frequency=2,
                  end_of_word_suffix=suffix)
        n = 1 + len(SMALL_SPECIALS) + len(reference_alphabet(SMALL_CORPUS, **{k: v for k, v in kw.items()
                                                                               if k != "min_frequency"}))
        tok = bpeforge.train_from_iterator(SMALL_CORPUS, vocab_size=n + 120, progress=False, **kw)
        out[preset, suffix] = (tok, reference_train(SMALL_CORPUS, n + 120, **kw))
    return out


def _corpus_chars():
    return sorted(set("".join(SMALL_CORPUS)) - {"\u2581"})


known_text = st.text(alphabet=st.sampled_from(_corpus_chars()), max_size=40)


@settings(max_examples=200, deadline=None)
@given(text=st.one_of(known_text, stable_text),
       key=st.sampled_from([("gpt2", None), ("o200k", None), ("none", None), ("whitespace", None),
                            ("whitespace", "</w>")]))
def test_chars_encode_matches_oracle(chars_models, text, key):
    tok, ref = chars_models[key]
    assert list(tok.merges) == ref.merges
    ids = tok.encode(text, allowed_special="all")
    assert ids == reference_encode(ref, text)


@settings(max_examples=200, deadline=None)
@given(text=known_text, preset=st.sampled_from(["gpt2", "o200k", "none"]))
def test_chars_roundtrip_regex_presets(chars_models, text, preset):
    """§7: with no <unk> and no literal ▁ in the text, ▁ -> space restores the text."""
    tok, _ = chars_models[preset, None]
    assert tok.decode(tok.encode(text)) == text


@settings(max_examples=200, deadline=None)
@given(text=known_text, scheme=st.sampled_from(["bytes", "chars"]))
def test_whitespace_preset_decodes_to_single_spaces(chars_models, bytes_ws_model, text, scheme):
    """whitespace preset: words joined by one space, the space at the very start dropped."""
    tok = chars_models["whitespace", None][0] if scheme == "chars" else bytes_ws_model
    assert tok.decode(tok.encode(text)) == " ".join(text.split())


@pytest.fixture(scope="module")
def bytes_ws_model():
    return bpeforge.train_from_iterator(SMALL_CORPUS, vocab_size=256 + 100, pretokenizer="whitespace",
                                        progress=False)
