"""Extending imported vocabularies: a tokenizer.json trained by Hugging Face
`tokenizers`, a tiktoken rank file, a SentencePiece model. Old ids stay
exactly as the source numbered them; new merges get the ids after the
largest one; encoding follows the merge list; exports reload elsewhere."""

from __future__ import annotations

import json
import lzma

import pytest

import bpeforge
from conftest import SLICE_FILE, SLICE_LANGS_FILE
from reference import reference_encode, reference_model_from_merges

tokenizers = pytest.importorskip("tokenizers")

LANGS_FILE = SLICE_LANGS_FILE
SPECIALS = ["<|endoftext|>", "<pad>"]


@pytest.fixture(scope="module")
def texts() -> dict[str, list[str]]:
    """English lines to train the source tokenizer, Greek lines (a script
    the source has almost never seen) to extend it; each split into train
    and held-apart halves."""
    want = {"en": 2046, "el": 451}  # all of them in the shipped 25k-line sample
    got: dict[str, list[str]] = {k: [] for k in want}
    with lzma.open(SLICE_FILE, "rt", encoding="utf-8") as f, lzma.open(LANGS_FILE, "rt", encoding="utf-8") as g:
        for line, lang in zip(f, g):
            lang = lang.strip()
            if lang in got and len(got[lang]) < want[lang]:
                got[lang].append(line.rstrip("\n"))
            if all(len(got[k]) >= want[k] for k in want):
                break
    assert all(len(got[k]) == want[k] for k in want)
    return {"en": got["en"][:1700], "en_held": got["en"][1700:], "el": got["el"][:300], "el_held": got["el"][300:]}


@pytest.fixture(scope="module")
def hf_source(tmp_path_factory, texts) -> str:
    """A byte-level BPE tokenizer.json trained by `tokenizers` itself: its
    ids (specials, then its own alphabet order, then merges) are not
    bpeforge's layout."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=900, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tk.train_from_iterator(texts["en"], trainer)
    path = tmp_path_factory.mktemp("hf") / "tokenizer.json"
    tk.save(str(path))
    return str(path)


def _oracle_tokens(tok: bpeforge.Tokenizer, line: str) -> list[bytes]:
    oracle = reference_model_from_merges(tok.merges, scheme="bytes", pretokenizer=tok.pretokenizer)
    return [oracle.vocab[i] for i in reference_encode(oracle, line, ordinary=True)]


def _tokens(tok: bpeforge.Tokenizer, ids: list[int]) -> list[bytes]:
    return [tok.id_to_token(i) for i in ids]


def test_extend_hf_import(hf_source, texts, tmp_path) -> None:
    hf = tokenizers.Tokenizer.from_file(hf_source)
    imported = bpeforge.from_huggingface(hf_source)
    assert imported.pretokenizer == "gpt2"
    # the source numbers ids its own way (not bpeforge's layout)
    assert any(imported.id_to_token(i) != bytes([i - 2]) for i in range(2, 258))
    old_size = imported.vocab_size
    assert old_size == hf.get_vocab_size() == 900
    sample = texts["en_held"][:200] + texts["el_held"][:200]
    assert [e.ids for e in hf.encode_batch(sample, add_special_tokens=False)] == imported.encode_batch(sample)

    extended = bpeforge.train_from_iterator(texts["el"], vocab_size=old_size + 300, resume_from=imported, progress=False)
    # every old id keeps its token; the source's special-token ids too
    assert all(extended.id_to_token(i) == imported.id_to_token(i) for i in range(old_size))
    for s in SPECIALS:
        assert extended.encode(s, allowed_special="all") == [hf.token_to_id(s)]
    # 300 new tokens with the ids right after the old largest id, in merge order
    assert extended.vocab_size == old_size + 300
    assert extended.merges[: len(imported.merges)] == imported.merges
    new = extended.merges[len(imported.merges):]
    assert len(new) == 300
    assert [extended.id_to_token(old_size + k) for k in range(300)] == [a + b for a, b in new]
    assert all(extended.token_to_id(a + b) == old_size + k for k, (a, b) in enumerate(new))
    # the imported metadata travels with the model
    assert extended.metadata["import"]["source_id_end"] == old_size
    assert extended.metadata["resumed_merges"] == len(imported.merges)

    # encoding is the merge list's (oracle), and lossless
    for line in texts["el_held"][:150] + texts["en_held"][:150]:
        ids = extended.encode(line)
        assert _tokens(extended, ids) == _oracle_tokens(extended, line), line
        assert extended.decode(ids) == line
    # Greek gets far fewer tokens; English stays as it was or gets fewer
    el = texts["el_held"]
    assert sum(map(len, extended.encode_batch(el))) < 0.6 * sum(map(len, imported.encode_batch(el)))
    en = texts["en_held"]
    assert sum(map(len, extended.encode_batch(en))) <= sum(map(len, imported.encode_batch(en)))

    # save / load round trip
    path = tmp_path / "extended.json"
    extended.save(path)
    loaded = bpeforge.load(path)
    assert loaded.vocab_size == extended.vocab_size
    assert all(loaded.id_to_token(i) == extended.id_to_token(i) for i in range(loaded.vocab_size))
    assert loaded.encode_batch(sample) == extended.encode_batch(sample)

    # re-export to tokenizer.json: `tokenizers` loads it and encodes identically
    out = extended.to_huggingface(tmp_path / "extended-tokenizer.json")
    hf2 = tokenizers.Tokenizer.from_file(out)
    assert hf2.get_vocab_size() == old_size + 300
    for key, i in hf.get_vocab().items():
        assert hf2.token_to_id(key) == i, key
    assert [e.ids for e in hf2.encode_batch(sample, add_special_tokens=False)] == extended.encode_batch(sample)
    assert hf2.decode(extended.encode(el[0]), skip_special_tokens=False) == el[0]

    # and extending again continues the numbering
    again = bpeforge.train_from_iterator(texts["el"], vocab_size=old_size + 350, resume_from=loaded, progress=False)
    assert again.merges[: len(extended.merges)] == extended.merges
    assert all(again.id_to_token(i) == extended.id_to_token(i) for i in range(extended.vocab_size))
    assert again.vocab_size == old_size + 350


def test_extend_keeps_ids_the_source_could_not_give_away(hf_source, texts) -> None:
    """A source token that bpeforge cannot represent (here: no merge makes it)
    is dropped on import, but its id is never handed to a new token."""
    doc = json.loads(open(hf_source, encoding="utf-8").read())
    doc["model"]["vocab"]["ĠunreachableToken"] = 5000
    imported = bpeforge.from_huggingface(doc)
    assert imported.metadata["import"]["source_id_end"] == 5001
    assert imported.token_to_id(b" unreachableToken") is None
    extended = bpeforge.train_from_iterator(texts["el"], vocab_size=imported.vocab_size + 20, resume_from=imported,
                                            progress=False)
    new = extended.merges[len(imported.merges):]
    assert [extended.token_to_id(a + b) for a, b in new] == list(range(5001, 5001 + len(new)))
    assert extended.vocab_size == 5001 + len(new)


def test_extend_tiktoken_import_after_special_ids(tmp_path, texts) -> None:
    """tiktoken-style numbering: ranks, then a special token with a high id;
    new tokens come after the special token and export back to tiktoken."""
    tiktoken = pytest.importorskip("tiktoken")
    base = bpeforge.train_from_iterator(texts["en"], vocab_size=700, progress=False)
    ranks = {base.id_to_token(i): i for i in range(base.vocab_size)}
    imported = bpeforge.interop.from_tiktoken(ranks, pattern="gpt2", special_tokens={"<|endoftext|>": 1000})
    assert imported.encode("<|endoftext|>", allowed_special="all") == [1000]
    extended = bpeforge.train_from_iterator(texts["el"], vocab_size=1001 + 100, resume_from=imported, progress=False)
    assert extended.vocab_size == 1101
    assert all(extended.id_to_token(i) == imported.id_to_token(i) for i in range(700))
    assert extended.encode("<|endoftext|>", allowed_special="all") == [1000]
    new = extended.merges[len(imported.merges):]
    assert [extended.token_to_id(a + b) for a, b in new] == list(range(1001, 1101))
    enc = bpeforge.interop.tiktoken_encoding(extended)
    lines = texts["el_held"][:100] + texts["en_held"][:100]
    assert [enc.encode(x, allowed_special="all") for x in lines] == extended.encode_batch(lines)


def test_extend_sentencepiece_import(tmp_path, texts) -> None:
    """A chars-scheme SentencePiece BPE import extends too: the new merges use
    the model's own alphabet (characters it never saw stay unknown), and the
    extended model exports back to a SentencePiece model with the same ids."""
    spm = pytest.importorskip("sentencepiece")
    corpus = tmp_path / "sp.txt"
    corpus.write_text("\n".join(texts["en"] + texts["el"][:200]) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(tmp_path / "sp"), vocab_size=1200,
                                   model_type="bpe", character_coverage=1.0, minloglevel=2,
                                   normalization_rule_name="identity")
    with pytest.warns(bpeforge.interop.InteropWarning, match="identity normalizer"):
        imported = bpeforge.from_sentencepiece(str(tmp_path / "sp.model"))
    extended = bpeforge.train_from_iterator(texts["el"], vocab_size=imported.vocab_size + 100, resume_from=imported,
                                            progress=False)
    assert all(extended.id_to_token(i) == imported.id_to_token(i) for i in range(imported.vocab_size))
    new = extended.merges[len(imported.merges):]
    assert len(new) == 100
    assert [extended.token_to_id(a + b) for a, b in new] == list(range(imported.vocab_size, imported.vocab_size + 100))
    # (no tabs or other non-space whitespace: the identity normalizer keeps them)
    lines = [x for x in texts["el_held"] if x.split() == x.split(" ") and x == x.strip()][:100]
    assert sum(map(len, extended.encode_batch(lines))) < sum(map(len, imported.encode_batch(lines)))
    sp_path = tmp_path / "extended.model"
    extended.to_sentencepiece(sp_path)
    sp = spm.SentencePieceProcessor(model_file=str(sp_path))
    assert [sp.encode(x) for x in lines] == extended.encode_batch(lines)


def test_extend_refusals(hf_source, texts) -> None:
    imported = bpeforge.from_huggingface(hf_source)
    with pytest.raises(bpeforge.ParameterError, match="below the resumed model's 900"):
        bpeforge.train_from_iterator(texts["el"], vocab_size=899, resume_from=imported, progress=False)
    doc = json.loads(imported.to_json())
    doc["metadata"]["import"]["source_id_end"] = "lots"
    with pytest.raises(bpeforge.ParameterError, match="source_id_end"):
        bpeforge.train_from_iterator(texts["el"], vocab_size=1000, resume_from=bpeforge.Tokenizer.from_json(json.dumps(doc)),
                                     progress=False)
    doc["metadata"]["import"]["source_id_end"] = (1 << 24) - 10
    with pytest.raises(bpeforge.ParameterError, match="largest id a model may have"):
        bpeforge.train_from_iterator(texts["el"], vocab_size=1000, resume_from=bpeforge.Tokenizer.from_json(json.dumps(doc)),
                                     progress=False)
