"""A Tokenizer behaves like the ones Python users already have: it pickles
(so it goes to process pools, data-loader workers, datasets.map and Ray
tasks), copies, compares, lists its vocabulary and gives offsets equal to
Hugging Face's for the same exported model."""

from __future__ import annotations

import base64
import concurrent.futures
import copy
import multiprocessing
import pickle
from pathlib import Path

import pytest

import bpeforge

TEXTS = ["Hello world", "Γειά σου κόσμε", "漢字とかな", "naïve café 😀", "  spaces  inside  "]


@pytest.fixture(scope="module")
def tok(corpus_slice) -> bpeforge.Tokenizer:
    return bpeforge.train_from_iterator(corpus_slice[:3000], vocab_size=3000, special_tokens=["<|endoftext|>"],
                                        progress=False)


@pytest.fixture(scope="module")
def chars_tok(corpus_slice) -> bpeforge.Tokenizer:
    return bpeforge.train_from_iterator(corpus_slice[:3000], vocab_size=8000, scheme="chars",
                                        pretokenizer="whitespace", character_coverage=0.999, progress=False)


def _encode_all(tok: bpeforge.Tokenizer) -> list[list[int]]:
    return [tok.encode(t) for t in TEXTS]


def _encode_one(args: tuple[bpeforge.Tokenizer, str]) -> list[int]:
    tok, text = args
    return tok.encode(text)


# ---- pickling and copying -----------------------------------------------------


@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
def test_pickle_round_trip(tok, chars_tok, protocol) -> None:
    for t in (tok, chars_tok):
        back = pickle.loads(pickle.dumps(t, protocol=protocol))
        assert back == t
        assert back.to_json() == t.to_json()
        assert _encode_all(back) == _encode_all(t)


def test_pickle_keeps_every_id(tok, corpus_slice, tmp_path) -> None:
    """A pickle carries the encoder's derived tables (token bytes, whole-piece
    lookups): the unpickled copy must give the same ids on real text, also for
    an imported model whose external ids differ from the internal ones."""
    ranks, _ = tok.to_tiktoken(tmp_path / "m.tiktoken")
    # The same vocabulary with the ranks of "a" and "b" swapped: imported,
    # its external ids are no longer its internal ones.
    a, b = base64.b64encode(b"a"), base64.b64encode(b"b")
    rows = [line.split() for line in Path(ranks).read_bytes().splitlines()]
    rank = {tokb: r for tokb, r in rows}
    rank[a], rank[b] = rank[b], rank[a]
    Path(ranks).write_bytes(b"".join(tokb + b" " + rank[tokb] + b"\n" for tokb, _ in rows))
    imported = bpeforge.load(ranks)
    assert imported.token_to_id("a") == tok.token_to_id("b")
    lines = corpus_slice[:2000]
    for t in (tok, imported):
        back = pickle.loads(pickle.dumps(t))
        assert back.encode_batch(lines) == t.encode_batch(lines)
        assert back.get_vocab() == t.get_vocab()
        assert back.decode_batch(t.encode_batch(lines[:50])) == lines[:50]


class _OldPickle:
    """What bpeforge 0.1.0's Tokenizer.__reduce__ produced: the model JSON."""

    def __init__(self, tok: bpeforge.Tokenizer) -> None:
        self.json = tok.to_json().encode("utf-8")

    def __reduce__(self):  # type: ignore[no-untyped-def]
        from bpeforge._tokenizer import _from_model_json

        return (_from_model_json, (self.json,))


def test_pickles_from_before_snapshots_still_load(tok) -> None:
    assert pickle.loads(pickle.dumps(_OldPickle(tok))) == tok


def test_damaged_pickle_is_a_clear_error(tok) -> None:
    from bpeforge._tokenizer import _from_snapshot

    kind, (data,) = tok.__reduce__()
    assert kind is _from_snapshot
    damaged = bytearray(data)
    damaged[len(damaged) // 2] ^= 0xFF
    for bad in (bytes(damaged), data[: len(data) // 2], b"", b"not a snapshot"):
        with pytest.raises(bpeforge.ModelFormatError, match="snapshot"):
            _from_snapshot(bad)


def test_deepcopy_and_copy(tok) -> None:
    assert copy.deepcopy(tok) == tok
    assert copy.copy(tok) == tok
    assert copy.deepcopy({"t": tok})["t"].encode("abc") == tok.encode("abc")


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_multiprocessing_pool(tok, method) -> None:
    ctx = multiprocessing.get_context(method)
    with ctx.Pool(2) as pool:
        got = pool.map(_encode_one, [(tok, t) for t in TEXTS])
    assert got == _encode_all(tok)


def test_process_pool_executor(tok) -> None:
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as ex:
        got = list(ex.map(_encode_one, [(tok, t) for t in TEXTS]))
    assert got == _encode_all(tok)


class _Dataset:
    """The shape of a torch Dataset: the tokenizer lives on the dataset and
    goes to each worker with it (as DataLoader(num_workers=N) does)."""

    def __init__(self, tok: bpeforge.Tokenizer, texts: list[str]) -> None:
        self.tok, self.texts = tok, texts

    def __len__(self) -> int:
        return len(self.texts)

    def __getitem__(self, i: int) -> list[int]:
        return self.tok.encode(self.texts[i])


def _worker(dataset: _Dataset, indices: list[int], queue) -> None:
    queue.put([(i, dataset[i]) for i in indices])


def test_dataloader_style_workers(tok) -> None:
    ctx = multiprocessing.get_context("spawn")
    dataset = _Dataset(tok, TEXTS)
    queue = ctx.Queue()
    workers = [ctx.Process(target=_worker, args=(dataset, list(range(w, len(TEXTS), 2)), queue)) for w in range(2)]
    for p in workers:
        p.start()
    got = dict(item for _ in workers for item in queue.get(timeout=120))
    for p in workers:
        p.join(60)
        assert p.exitcode == 0
    assert [got[i] for i in range(len(TEXTS))] == _encode_all(tok)


def test_datasets_map_with_processes(tok) -> None:
    datasets = pytest.importorskip("datasets", reason="datasets is a test extra")
    ds = datasets.Dataset.from_dict({"text": TEXTS * 4})
    out = ds.map(lambda row: {"input_ids": tok.encode(row["text"])}, num_proc=2)
    assert out["input_ids"] == _encode_all(tok) * 4


def test_ray_task(tok, ray_instance) -> None:
    ray = ray_instance
    encode = ray.remote(lambda t, texts: [t.encode(x) for x in texts])
    assert ray.get(encode.remote(tok, TEXTS)) == _encode_all(tok)


# ---- equality, length, vocabulary ------------------------------------------------


def test_equality_ignores_metadata_only(corpus_slice, tok) -> None:
    again = bpeforge.train_from_iterator(corpus_slice[:3000], vocab_size=3000, special_tokens=["<|endoftext|>"],
                                         progress=False, threads=1)
    assert again == tok and hash(again) == hash(tok)
    smaller = bpeforge.train_from_iterator(corpus_slice[:3000], vocab_size=2999, special_tokens=["<|endoftext|>"],
                                           progress=False)
    assert smaller != tok
    assert tok != "not a tokenizer"
    assert len(tok) == tok.vocab_size == len(tok.get_vocab()) == len(tok.get_vocab_bytes())


@pytest.mark.parametrize("which", ["tok", "chars_tok"])
def test_get_vocab_equals_huggingface(which, request, tmp_path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    t = request.getfixturevalue(which)
    t.to_huggingface(tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert t.get_vocab() == hf.get_vocab()
    assert all(t.id_to_token(i) == b for b, i in t.get_vocab_bytes().items())


# ---- offsets ---------------------------------------------------------------------


@pytest.mark.parametrize("which", ["tok", "chars_tok"])
def test_offsets_equal_huggingface_on_real_text(which, request, corpus_slice, tmp_path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    t = request.getfixturevalue(which)
    t.to_huggingface(tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    texts = corpus_slice[3000:5000] + TEXTS + ["a\t\tb", "\u3000x", " lead", "trail ", ""]
    differ = []
    for text in texts:
        enc = hf.encode(text, add_special_tokens=False)
        ids, offsets = t.encode_with_offsets(text)
        assert ids == enc.ids, text
        if offsets != [tuple(o) for o in enc.offsets]:
            differ.append(text)
    assert differ == []


def test_offsets_cover_the_text(tok, corpus_slice) -> None:
    for text in corpus_slice[:300] + TEXTS:
        ids, chars = tok.encode_with_offsets(text)
        _, nbytes = tok.encode_with_offsets(text, unit="bytes")
        raw = text.encode("utf-8")
        for i, (s, e), (bs, be) in zip(ids, chars, nbytes):
            assert raw[bs:be] == text[s:e].encode("utf-8")
            assert tok.id_to_token(i) in raw[bs:be]  # the token's bytes lie within its characters


def test_offsets_of_special_tokens(tok) -> None:
    text = "hi<|endoftext|>there"
    ids, offsets = tok.encode_with_offsets(text, allowed_special="all")
    k = ids.index(tok.token_to_id("<|endoftext|>"))
    assert text[slice(*offsets[k])] == "<|endoftext|>"
    with pytest.raises(bpeforge.SpecialTokenError):
        tok.encode_with_offsets(text)
    with pytest.raises(bpeforge.ParameterError, match="unit"):
        tok.encode_with_offsets(text, unit="words")  # type: ignore[arg-type]
