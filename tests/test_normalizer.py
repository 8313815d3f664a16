"""SentencePiece's normalizers: ``nmt_nfkc`` (its default), ``nfkc``
and any precompiled charsmap, imported from a ``.model`` or a
``tokenizer.json`` (``Precompiled``), trained with (``normalizer="nmt_nfkc"``),
extended and re-exported, ids equal to ``sentencepiece`` line for line.

Fixtures are built by sentencepiece itself (BPE, byte fallback, the rule
named). Hugging Face's ``Precompiled`` normalizer works per grapheme cluster,
so ``tokenizers`` normalizes some texts differently from sentencepiece
(combining marks after a letter the table maps, for instance): bpeforge
follows sentencepiece, and the tests check that every line where
``tokenizers`` gives other ids is one where its normalizer output differs
from sentencepiece's, and count them. The default suite checks a 5,000-line
slice; ``pytest -m slow`` all of multi-200k plus the lines of multi-1m in its
50 rarest languages.
"""

from __future__ import annotations

import base64
import json
import pickle
import time
import warnings

import pytest
from conftest import SPM_TRAIN_LINES as TRAIN_LINES, _read_slice, shared_corpus, stable_chars
from hypothesis import given, settings
from hypothesis import strategies as st

import bpeforge
from bpeforge import interop
from bpeforge.errors import ModelFormatError, ParameterError

spm = pytest.importorskip("sentencepiece")
tokenizers = pytest.importorskip("tokenizers")


# Characters NFKC (and SentencePiece's NMT rules) change, or that look like
# they might: full-width forms, ligatures, compatibility digits and
# fractions, odd spaces, combining marks, controls, Hangul jamo, format
# characters, the replacement character.
TRICKY = (list("ｈｅｌｌｏＡＢＣ１２３０！？") + ["\ufb01", "\ufb02", "\u2460", "\u2461", "\u00bd", "\u2153", "\u00b2",
          "\u3000", "\u00a0", "\u2003", "\u202f", "\u0301", "\u0308", "\u0327", "\u00a8", "\u00b4", "\x01", "\x0b",
          "\x7f", "\x1f", "\u200b", "\u200d", "\ufeff", "\u0085", "\t", "\r", " ", "  ", "\ufdfa", "\u1100",
          "\u1161", "\uac00", "\u2126", "\u212b", "\u00c5", "\ufffd", "\U0001d400", "\u2028", "e\u0301", "a",
          "b", "é", "ß", "İ", "ﾊﾟ", "㍿", "™", "…", "‥",
          # SentencePiece's own space mark, which it trims at a text's end as a space.
          "\u2581", "x \u2581", "a\u2581 ", "x\u2581 \u2581", "\u2581\u2581b", "\u2581 a\u2581b\u2581"])
nfkc_texts = st.lists(st.one_of(st.sampled_from(TRICKY), stable_chars), max_size=30).map("".join)

# (name, sentencepiece training flags)
RULES = {
    "nmt_nfkc": dict(normalization_rule_name="nmt_nfkc"),
    "nfkc": dict(normalization_rule_name="nfkc"),
    # Llama's flags with SentencePiece's default normalizer: spaces kept.
    "nmt_nfkc_kept": dict(normalization_rule_name="nmt_nfkc", remove_extra_whitespaces=False, split_digits=True,
                          allow_whitespace_only_pieces=True),
}



@pytest.fixture(scope="module")
def sp_models(tmp_path_factory, lines) -> dict[str, str]:
    """name -> .model trained by sentencepiece (BPE, byte fallback)."""
    d = tmp_path_factory.mktemp("normalized")
    corpus = d / "train.txt"
    corpus.write_text("\n".join(lines[:TRAIN_LINES]) + "\n", encoding="utf-8")
    out = {}
    for name, flags in RULES.items():
        spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(d / name), model_type="bpe", vocab_size=8000,
                                       byte_fallback=True, character_coverage=0.9995, max_sentencepiece_length=16,
                                       minloglevel=2, num_threads=1, **flags)
        out[name] = str(d / f"{name}.model")
    return out


def imported(model_file, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return interop.from_sentencepiece(model_file, **kw)


def ours(tok):
    return lambda t: tok.encode(t, disallowed_special=())


def differing(a, b, texts):
    return [t for t in texts if a(t) != b(t)]


def assert_sentencepiece_equal(tok, path, texts):
    tok.to_sentencepiece(path)
    sp = spm.SentencePieceProcessor(model_file=str(path))
    bad = differing(ours(tok), sp.encode, texts)
    assert not bad, f"{len(bad)} of {len(texts)} lines differ, first {bad[0]!r}"


def _precompiled_step(doc):
    steps = [s for s in doc["normalizer"]["normalizers"] if s["type"] == "Precompiled"]
    assert len(steps) == 1
    return steps[0]


def huggingface_differences(tok, folder, texts) -> int:
    """Exports ``tok`` to a tokenizer.json; every line where tokenizers gives
    other ids must be one where its normalizer's text differs from
    sentencepiece's. Returns how many lines differ."""
    folder.mkdir(exist_ok=True)
    tok.to_huggingface(folder)
    hf = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
    doc = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    precompiled = _precompiled_step(doc)
    assert base64.b64decode(precompiled["precompiled_charsmap"])
    tok.to_sentencepiece(folder / "m.model")
    sp = spm.SentencePieceProcessor(model_file=str(folder / "m.model"))

    def same_normalized_text(t):
        # sentencepiece's normalized text in HF's form (▁ kept for the
        # spaces-kept form, spaces for the whitespace form, whose trailing
        # spaces HF's pre-tokenizer drops)
        theirs = hf.normalizer.normalize_str(t)
        if "▁" in theirs or not theirs.startswith(" "):
            return theirs == sp.normalize(t)
        return theirs.rstrip(" ") == sp.normalize(t).replace("▁", " ")

    bad = differing(ours(tok), lambda t: hf.encode(t, add_special_tokens=False).ids, texts)
    unexplained = [t for t in bad if same_normalized_text(t)]
    assert not unexplained, f"{len(unexplained)} lines differ from tokenizers with the same normalized text, " \
                            f"first {unexplained[0]!r}"
    transformers = pytest.importorskip("transformers")
    fast = transformers.PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"))
    sample = texts[:500]
    assert [fast.encode(t, add_special_tokens=False) for t in sample] == \
           [hf.encode(t, add_special_tokens=False).ids for t in sample]
    print(f"tokenizers differs on {len(bad)} of {len(texts)} lines, all where its per-grapheme normalizer does")
    return len(bad)


# ---- imported models -------------------------------------------------------------


@pytest.mark.parametrize("name", list(RULES))
def test_imported_matches_sentencepiece(sp_models, held_out, tmp_path, name):
    sp = spm.SentencePieceProcessor(model_file=sp_models[name])
    tok = imported(sp_models[name])
    scheme = json.loads(tok.to_json())["scheme"]
    assert scheme["normalizer"]["name"] == RULES[name]["normalization_rule_name"]
    bad = differing(ours(tok), sp.encode, held_out + TRICKY)
    assert not bad, f"{len(bad)} lines differ, first {bad[0]!r}"
    assert_sentencepiece_equal(tok, tmp_path / "again.model", held_out)
    assert json.loads(imported(str(tmp_path / "again.model")).to_json())["scheme"] == scheme


@pytest.fixture(scope="module")
def imported_pairs(sp_models):
    return {name: (imported(path), spm.SentencePieceProcessor(model_file=path)) for name, path in sp_models.items()}


@settings(max_examples=300, deadline=None)
@given(text=nfkc_texts)
def test_imported_matches_sentencepiece_on_nfkc_sensitive_text(imported_pairs, text):
    for name, (tok, sp) in imported_pairs.items():
        assert tok.encode(text, disallowed_special=()) == sp.encode(text), name


def test_hf_twin_with_precompiled_imports_as_sentencepiece(sp_models, held_out):
    """The spaces-kept model's tokenizer.json as transformers writes Llama's
    (Prepend + Replace), with sentencepiece's Precompiled step first."""
    converter = pytest.importorskip("transformers.convert_slow_tokenizer")
    from tokenizers import Tokenizer, decoders, models, normalizers
    from bpeforge.interop.sentencepiece_proto import sp_pb

    path = sp_models["nmt_nfkc_kept"]
    m = sp_pb().ModelProto()
    m.ParseFromString(open(path, "rb").read())
    kw = converter.SentencePieceExtractor(path).extract(models.BPE)
    twin = Tokenizer(models.BPE(vocab=kw["vocab"], merges=kw["merges"], unk_token="<unk>", fuse_unk=True,
                                byte_fallback=True))
    twin.normalizer = normalizers.Sequence([normalizers.Precompiled(m.normalizer_spec.precompiled_charsmap),
                                            normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    twin.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                      decoders.Strip(" ", 1, 0)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tok = interop.from_huggingface(twin)
    assert json.loads(tok.to_json())["scheme"]["normalizer"]["name"] == "nmt_nfkc"
    sp = spm.SentencePieceProcessor(model_file=path)
    bad = differing(ours(tok), sp.encode, held_out + TRICKY)
    assert not bad, f"{len(bad)} lines differ from sentencepiece, first {bad[0]!r}"


# ---- trained here, extended --------------------------------------------------------


@pytest.fixture(scope="module")
def trained(lines):
    return bpeforge.train_from_iterator(lines[:TRAIN_LINES], scheme="chars", pretokenizer="whitespace",
                                        vocab_size=6000, byte_fallback=True, fuse_unk=True, normalizer="nmt_nfkc",
                                        special_tokens=["<s>", "</s>"], character_coverage=0.995, progress=False)


def test_trained_with_nmt_nfkc_matches_sentencepiece_and_hf(trained, held_out, tmp_path):
    assert json.loads(trained.to_json())["scheme"]["normalizer"]["name"] == "nmt_nfkc"
    assert_sentencepiece_equal(trained, tmp_path / "t.model", held_out + TRICKY)
    huggingface_differences(trained, tmp_path / "hf", held_out + TRICKY)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        back = interop.from_huggingface(tmp_path / "hf")
    assert differing(ours(back), ours(trained), held_out + TRICKY) == []


def test_training_counts_normalized_text():
    tok = bpeforge.train_from_iterator(["ｈｅｌｌｏ　ｗｏｒｌｄ"] * 5 + ["hello world"] * 5, scheme="chars",
                                       pretokenizer="whitespace", vocab_size=40, normalizer="nmt_nfkc",
                                       progress=False)
    assert not any("ｈ" in t for t in tok.alphabet)
    assert tok.encode("ｈｅｌｌｏ") == tok.encode("hello")
    assert tok.decode(tok.encode("ｈｅｌｌｏ　　ｗｏｒｌｄ")) == "hello world"


@pytest.mark.parametrize("name", ["nmt_nfkc", "nmt_nfkc_kept"])
def test_extended_keeps_old_ids_and_matches(sp_models, lines, held_out, tmp_path, name):
    old = imported(sp_models[name])
    ext = bpeforge.train_from_iterator(lines[TRAIN_LINES // 2:TRAIN_LINES], resume_from=old,
                                       vocab_size=old.vocab_size + 300, progress=False)
    assert ext.vocab_size == old.vocab_size + 300
    assert json.loads(ext.to_json())["scheme"]["normalizer"] == json.loads(old.to_json())["scheme"]["normalizer"]
    assert all(ext.id_to_token(i) == old.id_to_token(i) for i in range(old.vocab_size))
    assert_sentencepiece_equal(ext, tmp_path / "ext.model", held_out + TRICKY)
    huggingface_differences(ext, tmp_path / "hf", held_out + TRICKY)


def test_resume_keeps_the_normalizer():
    plain = bpeforge.train_from_iterator(["ab ab ac"] * 5, scheme="chars", pretokenizer="whitespace", vocab_size=8,
                                         progress=False)
    with pytest.raises(ParameterError, match="normalizer='nmt_nfkc' \\(the model has 'identity'\\)"):
        bpeforge.train_from_iterator(["a b"], resume_from=plain, vocab_size=10, normalizer="nmt_nfkc", progress=False)


# ---- the model file, options, CLI --------------------------------------------------


def test_model_file_and_pickle_keep_the_charsmap(trained, tmp_path):
    path = tmp_path / "m.json"
    trained.save(path)
    for back in (bpeforge.load(path), pickle.loads(pickle.dumps(trained))):
        assert back.to_json() == trained.to_json()
        assert back.encode("ｈｅｌｌｏ ﬁ ①") == trained.encode("ｈｅｌｌｏ ﬁ ①")


def test_identity_is_the_default_and_stores_nothing():
    tok = bpeforge.train_from_iterator(["ab ab ｈ"] * 5, scheme="chars", pretokenizer="whitespace", vocab_size=10,
                                       progress=False)
    assert "normalizer" not in json.loads(tok.to_json())["scheme"]
    assert "ｈ" in tok.alphabet


def test_normalizer_option_is_checked():
    with pytest.raises(ParameterError, match="normalizer must be one of"):
        bpeforge.train_from_iterator(["ab"], scheme="chars", vocab_size=10, normalizer="nfkd", progress=False)
    with pytest.raises(ParameterError, match='scheme="chars"'):
        bpeforge.train_from_iterator(["ab"], vocab_size=300, normalizer="nmt_nfkc", progress=False)
    with pytest.raises(ParameterError, match="end_of_word_suffix"):
        bpeforge.train_from_iterator(["ab"], scheme="chars", pretokenizer="whitespace", vocab_size=10,
                                     end_of_word_suffix="</w>", normalizer="nmt_nfkc", progress=False)


def test_offsets_are_refused_under_a_normalizer(trained):
    with pytest.raises(ParameterError, match="normalizer"):
        trained.encode_with_offsets("ｈｅｌｌｏ")


def test_cli_trains_and_inspects(tmp_path, lines, capsys):
    from bpeforge import cli

    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(lines[:2000]) + "\n", encoding="utf-8")
    out = tmp_path / "m.json"
    cli.main(["train", str(corpus), "-o", str(out), "--scheme", "chars", "--pretokenizer", "whitespace",
              "--vocab-size", "3000", "--normalizer", "nmt_nfkc", "--byte-fallback", "--quiet"])
    assert json.loads(out.read_text(encoding="utf-8"))["scheme"]["normalizer"]["name"] == "nmt_nfkc"
    capsys.readouterr()
    cli.main(["inspect", str(out)])
    assert "normalizer: nmt_nfkc" in capsys.readouterr().out


# ---- hostile charsmaps -------------------------------------------------------------


def _with_charsmap(model_file, tmp_path, blob):
    from bpeforge.interop.sentencepiece_proto import sp_pb

    m = sp_pb().ModelProto()
    m.ParseFromString(open(model_file, "rb").read())
    m.normalizer_spec.precompiled_charsmap = blob
    path = tmp_path / "bad.model"
    path.write_bytes(m.SerializeToString())
    return path


def _hostile_blobs(good: bytes) -> dict[str, bytes]:
    trie = int.from_bytes(good[:4], "little")
    past = (len(good) + 100).to_bytes(4, "little") + good[4:]
    # every replacement offset out of range: cut the strings off after the trie
    no_strings = good[:4 + trie] + b"x"
    return {"truncated": good[:len(good) // 2], "trie_past_the_end": past, "offsets_out_of_range": no_strings,
            "no_trie": (0).to_bytes(4, "little") + b"abc\0"}


@pytest.mark.parametrize("how", ["truncated", "trie_past_the_end", "offsets_out_of_range", "no_trie"])
def test_hostile_charsmaps_are_model_format_errors(sp_models, tmp_path, how):
    from bpeforge.interop.sentencepiece_proto import sp_pb

    m = sp_pb().ModelProto()
    m.ParseFromString(open(sp_models["nmt_nfkc"], "rb").read())
    blob = _hostile_blobs(bytes(m.normalizer_spec.precompiled_charsmap))[how]
    with pytest.raises(ModelFormatError):
        imported(str(_with_charsmap(sp_models["nmt_nfkc"], tmp_path, blob)))
    # the same blob in a tokenizer.json's Precompiled step, and in a bpeforge model file
    tok = imported(sp_models["nmt_nfkc"])
    tok.to_huggingface(tmp_path / "hf.json")
    doc = json.loads((tmp_path / "hf.json").read_text(encoding="utf-8"))
    encoded = base64.b64encode(blob).decode("ascii")
    _precompiled_step(doc)["precompiled_charsmap"] = encoded
    with pytest.raises(ModelFormatError):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            interop.from_huggingface(doc)
    model = json.loads(tok.to_json())
    model["scheme"]["normalizer"]["precompiled_charsmap"] = encoded
    (tmp_path / "m.json").write_text(json.dumps(model), encoding="utf-8")
    with pytest.raises(ModelFormatError, match="charsmap"):
        bpeforge.load(tmp_path / "m.json")


def test_charsmap_that_is_not_base64_is_a_model_format_error(trained, tmp_path):
    model = json.loads(trained.to_json())
    model["scheme"]["normalizer"]["precompiled_charsmap"] = "not base64!"
    (tmp_path / "m.json").write_text(json.dumps(model), encoding="utf-8")
    with pytest.raises(ModelFormatError, match="base64"):
        bpeforge.load(tmp_path / "m.json")


# ---- the whole corpus (pytest -m slow) ------------------------------------------------


@pytest.mark.slow
def test_whole_corpus_with_nmt_nfkc(sp_models, lines, tmp_path):
    from test_byte_fallback import _rare_language_lines

    rare = _rare_language_lines()
    texts = _read_slice(10**6, shared_corpus("multi-200k.txt.xz")) + rare
    old = imported(sp_models["nmt_nfkc"])
    sp = spm.SentencePieceProcessor(model_file=sp_models["nmt_nfkc"])
    start = time.time()
    bad = differing(ours(old), sp.encode, texts)
    assert not bad, f"imported: {len(bad)} of {len(texts)} lines differ, first {bad[0]!r}"
    ext = bpeforge.train_from_iterator(rare, resume_from=old, vocab_size=old.vocab_size + 500, progress=False)
    trained = bpeforge.train_from_iterator(lines[:TRAIN_LINES], scheme="chars", pretokenizer="whitespace",
                                           vocab_size=6000, byte_fallback=True, fuse_unk=True, normalizer="nmt_nfkc",
                                           character_coverage=0.995, progress=False)
    counts = {}
    for name, tok in (("imported", old), ("extended", ext), ("trained", trained)):
        assert_sentencepiece_equal(tok, tmp_path / f"{name}.model", texts)
        counts[name] = huggingface_differences(tok, tmp_path / name, texts)
    print(f"{len(texts)} lines; sentencepiece: 0 differ for all three; tokenizers differs on {counts} "
          f"(per-grapheme normalization); {time.time() - start:.0f} s")
