"""Byte fallback, fused unknowns and SentencePiece-exact Llama-style models:
trained here, imported from a SentencePiece ``.model`` or its
Hugging Face twin, extended, and re-exported, ids equal to ``sentencepiece``,
``tokenizers`` and ``transformers`` line for line.

The fixture is built the way Llama 2's tokenizer was (no model can be
downloaded here): ``sentencepiece`` BPE with byte_fallback, split_digits,
allow_whitespace_only_pieces, the identity normalizer, spaces kept and
user-defined symbols; its HF twin comes from transformers' own extractor.
The default suite checks a 5,000-line slice; ``pytest -m slow`` all of
multi-200k plus the lines of multi-1m in its 50 rarest languages.
"""

from __future__ import annotations

import collections
import json
import lzma
import warnings

import pytest
from conftest import SPM_TRAIN_LINES as TRAIN_LINES, _read_slice, shared_corpus, stable_chars
from hypothesis import given, settings
from hypothesis import strategies as st

import bpeforge
from bpeforge import interop
from bpeforge.errors import ModelFormatError

spm = pytest.importorskip("sentencepiece")
tokenizers = pytest.importorskip("tokenizers")




@pytest.fixture(scope="module")
def llama_model(tmp_path_factory, lines) -> str:
    """A Llama-2-style SentencePiece model trained by sentencepiece itself."""
    d = tmp_path_factory.mktemp("llama")
    corpus = d / "train.txt"
    corpus.write_text("\n".join(lines[:TRAIN_LINES]) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(d / "llama"), model_type="bpe", vocab_size=8000, byte_fallback=True,
        split_digits=True, allow_whitespace_only_pieces=True, normalization_rule_name="identity",
        remove_extra_whitespaces=False, add_dummy_prefix=True, user_defined_symbols=["<|im_start|>", "<|im_end|>"],
        character_coverage=0.9995, max_sentencepiece_length=16, minloglevel=2, num_threads=1)
    return str(d / "llama.model")


def hf_twin(model_file: str):
    """The model's tokenizer.json as transformers converts Llama's (Metaspace, byte fallback, fused unknowns)."""
    converter = pytest.importorskip("transformers.convert_slow_tokenizer")
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    kw = converter.SentencePieceExtractor(model_file).extract(models.BPE)
    tok = Tokenizer(models.BPE(vocab=kw["vocab"], merges=kw["merges"], unk_token="<unk>", fuse_unk=True,
                               byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    tok.add_tokens([AddedToken(t.content, normalized=False, special=t.special) for t in kw["additional_special_tokens"]])
    return tok


def differing(ours, theirs, texts: list[str]) -> list[str]:
    return [t for t in texts if ours(t) != theirs(t)]


def assert_sentencepiece_equal(tok, path, texts: list[str]) -> None:
    tok.to_sentencepiece(path)
    sp = spm.SentencePieceProcessor(model_file=str(path))
    bad = differing(lambda t: tok.encode(t, disallowed_special=()), sp.encode, texts)
    assert not bad, f"{len(bad)} of {len(texts)} lines differ, first {bad[0]!r}"
    sample = [t for t in texts if t][:500]
    assert [tok.decode(tok.encode(t, disallowed_special=())) for t in sample] == [sp.decode(sp.encode(t)) for t in sample]


def assert_huggingface_equal(tok, folder, texts: list[str]) -> None:
    transformers = pytest.importorskip("transformers")
    folder.mkdir(exist_ok=True)
    tok.to_huggingface(folder)
    hf = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
    bad = differing(lambda t: tok.encode(t, disallowed_special=()), lambda t: hf.encode(t, add_special_tokens=False).ids,
                    texts)
    assert not bad, f"tokenizers: {len(bad)} of {len(texts)} lines differ, first {bad[0]!r}"
    fast = transformers.PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"))
    sample = texts[:1000]
    bad = differing(lambda t: tok.encode(t, disallowed_special=()), lambda t: fast.encode(t, add_special_tokens=False),
                    sample)
    assert not bad, f"transformers: {len(bad)} lines differ, first {bad[0]!r}"
    # and the ids read back as bpeforge's text (the Llama-style flow: import, extend, export)
    ids = [tok.encode(t, disallowed_special=()) for t in texts]
    ours = tok.decode_batch(ids)
    auto = transformers.AutoTokenizer.from_pretrained(folder)
    for name, decoded in (("tokenizers", hf.decode_batch(ids, skip_special_tokens=False)),
                          ("transformers", auto.batch_decode(ids, skip_special_tokens=False))):
        bad = [t for t, a, b in zip(texts, ours, decoded, strict=True) if a != b]
        assert not bad, f"{name}: {len(bad)} of {len(texts)} lines decode otherwise than bpeforge, first {bad[0]!r}"
    assert hf.decode(hf.encode("Hello world", add_special_tokens=False).ids) == "Hello world"


def imported(model_file: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return interop.from_sentencepiece(model_file)


# ---- the three ways a byte-fallback model comes to be, on the slice ----------


def test_trained_with_byte_fallback_matches_sentencepiece_and_hf(lines, held_out, tmp_path):
    tok = bpeforge.train_from_iterator(lines[:TRAIN_LINES], scheme="chars", pretokenizer="whitespace",
                                       vocab_size=6000, byte_fallback=True, fuse_unk=True,
                                       special_tokens=["<s>", "</s>"], character_coverage=0.995, progress=False)
    assert tok.special_tokens[3:5] == ["<0x00>", "<0x01>"] and tok.special_tokens[-1] == "<0xFF>"
    assert_sentencepiece_equal(tok, tmp_path / "m.model", held_out)
    assert_huggingface_equal(tok, tmp_path / "hf", held_out)


def test_imported_llama_style_model_matches_sentencepiece(llama_model, held_out, tmp_path):
    sp = spm.SentencePieceProcessor(model_file=llama_model)
    tok = imported(llama_model)
    bad = differing(lambda t: tok.encode(t, disallowed_special=()), sp.encode, held_out)
    assert not bad, f"{len(bad)} lines differ, first {bad[0]!r}"
    for i in range(sp.get_piece_size()):  # every id keeps its piece
        if not sp.is_unknown(i):
            assert tok.id_to_token(i).decode("utf-8") == sp.id_to_piece(i)
    assert_sentencepiece_equal(tok, tmp_path / "again.model", held_out)
    assert_huggingface_equal(tok, tmp_path / "hf", held_out)


def test_hf_twin_imports_exactly(llama_model, held_out, tmp_path):
    twin = hf_twin(llama_model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tok = interop.from_huggingface(twin)
    bad = differing(lambda t: tok.encode(t, disallowed_special=()), lambda t: twin.encode(t, add_special_tokens=False).ids,
                    held_out)
    assert not bad, f"{len(bad)} lines differ, first {bad[0]!r}"


def test_extended_keeps_old_ids_and_matches(llama_model, lines, held_out, tmp_path):
    old = imported(llama_model)
    # The added language: Hungarian-like text is in the slice; any held-apart lines serve.
    new_text = lines[TRAIN_LINES // 2:TRAIN_LINES]
    ext = bpeforge.train_from_iterator(new_text, resume_from=old, vocab_size=old.vocab_size + 300, progress=False)
    assert ext.vocab_size == old.vocab_size + 300
    for i in range(old.vocab_size):
        assert ext.id_to_token(i) == old.id_to_token(i)
    assert ext.id_to_token(old.vocab_size) is not None
    assert_sentencepiece_equal(ext, tmp_path / "ext.model", held_out)
    assert_huggingface_equal(ext, tmp_path / "hf", held_out)
    # and the exported tokenizer.json imports back to the same ids
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        back = interop.from_huggingface(tmp_path / "hf")
    bad = differing(lambda t: back.encode(t, disallowed_special=()), lambda t: ext.encode(t, disallowed_special=()),
                    held_out)
    assert not bad, f"{len(bad)} lines differ after the tokenizer.json round trip, first {bad[0]!r}"


# ---- behaviour ------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_bf():
    return bpeforge.train_from_iterator(["abc abd ab héllo"] * 20, scheme="chars", pretokenizer="whitespace",
                                        vocab_size=280, byte_fallback=True, progress=False)


@settings(max_examples=200, deadline=None)
@given(st.text(stable_chars.filter(lambda c: c != "\u2581"), max_size=40))  # ▁ reads back as a space
def test_byte_fallback_round_trips_any_text(small_bf, text):
    ids = small_bf.encode(text, disallowed_special=())
    assert 0 not in ids  # the unknown token never appears
    # The whitespace preset cuts at whitespace; byte fallback loses no character.
    assert small_bf.decode(ids) == " ".join(text.split())


def test_byte_tokens_are_not_read_from_text(small_bf):
    assert small_bf.encode("<0x41>") == small_bf.encode("<0x41>", disallowed_special=())


def test_fused_unknown_decodes_as_sentencepiece():
    tok = bpeforge.train_from_iterator(["abc abd ab"] * 20, scheme="chars", pretokenizer="whitespace",
                                       vocab_size=270, fuse_unk=True, progress=False)
    ids = tok.encode("ab 日本語 ab")
    assert ids.count(0) == 1
    assert tok.decode(ids) == "ab  \u2047  ab"


def test_byte_fallback_needs_the_chars_scheme():
    with pytest.raises(bpeforge.ParameterError, match="byte_fallback"):
        bpeforge.train_from_iterator(["ab"], byte_fallback=True, vocab_size=300, progress=False)


# ---- hostile files ----------------------------------------------------------------


def _edited_model(llama_model, tmp_path, edit):
    from bpeforge.interop.sentencepiece_proto import sp_pb

    m = sp_pb().ModelProto()
    m.ParseFromString(open(llama_model, "rb").read())
    edit(m)
    path = tmp_path / "bad.model"
    path.write_bytes(m.SerializeToString())
    return path


def _byte_index(m, b):
    return next(i for i, p in enumerate(m.pieces) if p.piece == f"<0x{b:02X}>")


@pytest.mark.parametrize("how", ["swap", "duplicate", "missing"])
def test_bad_byte_pieces_in_a_model_file(llama_model, tmp_path, how):
    def edit(m):
        i, j = _byte_index(m, 0x41), _byte_index(m, 0x42)
        if how == "swap":
            m.pieces[i].piece, m.pieces[j].piece = m.pieces[j].piece, m.pieces[i].piece
        elif how == "duplicate":
            m.pieces[j].piece = m.pieces[i].piece
        else:
            m.pieces[j].type = m.pieces[j].NORMAL
            m.pieces[j].piece = "ZZZZ"

    with pytest.raises(ModelFormatError, match="byte"):
        imported(str(_edited_model(llama_model, tmp_path, edit)))


@pytest.mark.parametrize("how", ["swap", "missing"])
def test_bad_byte_tokens_in_a_tokenizer_json(llama_model, how):
    doc = json.loads(hf_twin(llama_model).to_str())
    vocab = doc["model"]["vocab"]
    if how == "swap":
        vocab["<0x41>"], vocab["<0x42>"] = vocab["<0x42>"], vocab["<0x41>"]
    else:
        del vocab["<0x42>"]
    with pytest.raises(ModelFormatError):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            interop.from_huggingface(doc)


# ---- the whole corpus (pytest -m slow) ------------------------------------------------


def _rare_language_lines(n_languages: int = 50) -> list[str]:
    langs = lzma.open(shared_corpus("multi-1m.langs.txt.xz"), "rt", encoding="utf-8").read().split("\n")
    counts = collections.Counter(l for l in langs if l)
    rare = {l for l, _ in sorted(counts.items(), key=lambda kv: (kv[1], kv[0]))[:n_languages]}
    with lzma.open(shared_corpus("multi-1m.txt.xz"), "rt", encoding="utf-8", newline="\n") as f:
        return [line.rstrip("\n") for line, lang in zip(f, langs) if lang in rare]


@pytest.mark.slow
def test_whole_corpus(llama_model, lines, tmp_path):
    texts = _read_slice(10**6, shared_corpus("multi-200k.txt.xz")) + _rare_language_lines()
    old = imported(llama_model)
    ext = bpeforge.train_from_iterator(_rare_language_lines(), resume_from=old, vocab_size=old.vocab_size + 500,
                                       progress=False)
    trained = bpeforge.train_from_iterator(lines[:TRAIN_LINES], scheme="chars", pretokenizer="whitespace",
                                           vocab_size=6000, byte_fallback=True, fuse_unk=True, character_coverage=0.995, progress=False)
    for name, tok in (("imported", old), ("extended", ext), ("trained", trained)):
        assert_sentencepiece_equal(tok, tmp_path / f"{name}.model", texts)
        assert_huggingface_equal(tok, tmp_path / name, texts)


def test_offsets_with_byte_tokens_fused_unknowns_and_the_dummy_prefix(small_bf, llama_model):
    ids, offsets = small_bf.encode_with_offsets("ab \U0001F600x")
    assert offsets[-5:-1] == [(3, 4)] * 4  # the four byte tokens of 😀 span it
    fused = bpeforge.train_from_iterator(["abc abd ab"] * 20, scheme="chars", pretokenizer="whitespace",
                                         vocab_size=270, fuse_unk=True, progress=False)
    assert fused.encode_with_offsets("ab 日本語 ab")[1] == [(0, 2), (2, 3), (3, 6), (6, 9)]
    llama = imported(llama_model)
    text = "<|im_start|>hi  there"
    ids, offsets = llama.encode_with_offsets(text, allowed_special="all")
    assert len(ids) == len(offsets) and offsets[0] == (0, 0) and offsets[1] == (0, 12)
