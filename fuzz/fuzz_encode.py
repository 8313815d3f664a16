"""Fuzz encode/decode on tokenizers of every scheme and pre-tokenizer:
arbitrary text (special-token text included), random ids, numpy buffers with
hostile offsets.

Contract checked:
* encode never fails on any ``str`` (with ``allowed_special="all"``); ids are
  in the vocabulary; bytes scheme with a covering pre-tokenizer decodes back
  to exactly the text; the whitespace presets give back the words;
* ``encode_batch`` (lists and numpy) equals per-text ``encode``;
  ``encode_ordinary`` equals ``encode(..., disallowed_special=())``;
* BPE-dropout with a seed is deterministic and lossless;
* decoding arbitrary ids gives the tokens' bytes or ``ParameterError``;
  ``decode_batch((ids, offsets))`` with any offsets gives texts or
  ``ParameterError``.

    python fuzz/fuzz_encode.py --seeds DIR
    python fuzz/fuzz_encode.py DIR -max_total_time=60
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import atheris  # noqa: E402

from _common import error_label, feature, run  # noqa: E402

with atheris.instrument_imports():
    import bpeforge
    from bpeforge import ParameterError

import numpy as np  # noqa: E402

SPECIALS = ["<|endoftext|>", "<s>", "<s>x"]
LOSSLESS = {"gpt2", "cl100k", "o200k", "none", "superword"}


def build_tokenizers() -> list[bpeforge.Tokenizer]:
    texts = bpeforge.sample_corpus().read_text(encoding="utf-8").splitlines()[:400]
    kw = dict(min_frequency=1, progress=False)
    toks = [
        bpeforge.train_from_iterator(texts, vocab_size=800, pretokenizer=p, special_tokens=SPECIALS, **kw)
        for p in ("gpt2", "cl100k", "o200k", "whitespace", "none")
    ]
    toks.append(bpeforge.train_from_iterator(texts, vocab_size=900, superbpe_transition=600, **kw))
    toks.append(bpeforge.train_from_iterator(texts, vocab_size=700, max_token_length=3, **kw))
    chars = dict(scheme="chars", character_coverage=0.995, **kw)
    toks.append(bpeforge.train_from_iterator(texts, vocab_size=2700, pretokenizer="whitespace", special_tokens=["<s>"], **chars))
    toks.append(bpeforge.train_from_iterator(texts, vocab_size=2900, pretokenizer="whitespace", end_of_word_suffix="</w>", **chars))
    toks.append(bpeforge.train_from_iterator(texts, vocab_size=2700, pretokenizer="none", **chars))
    # external ids (as imported vocabularies have): reversed and shifted
    doc = json.loads(toks[0].to_json())
    n = toks[0].vocab_size
    doc["ids"] = [1000 + n - 1 - i for i in range(n)]
    toks.append(bpeforge.Tokenizer.from_json(json.dumps(doc)))
    return toks


TOKS: list[bpeforge.Tokenizer] = []


def write_seeds(d: str) -> None:
    os.makedirs(d, exist_ok=True)
    samples = ["Hello  wörld!\n 12345 it's <s>x<|endoftext|>", "\t\r\n \u3000x\u00a0y\x1c ▁ </w>", "😀👍🏽 e\u0301 ١٢٣ 中文。",
               "a" * 300, "ab" * 100]
    for k, s in enumerate(samples):
        for m in range(11):
            with open(os.path.join(d, f"seed-{k}-{m}"), "wb") as f:
                f.write(bytes([m, k, 0, 0]) + s.encode())


def valid_ids(tok: bpeforge.Tokenizer, ids: list[int]) -> bool:
    return all(tok.id_to_token(i) is not None for i in ids)


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    k = fdp.ConsumeIntInRange(0, len(TOKS) - 1)
    tok = TOKS[k]
    mode = fdp.ConsumeIntInRange(0, 3)
    if mode == 3:
        check_decode(tok, fdp)
        return
    text = fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 2048))
    text2 = fdp.ConsumeUnicodeNoSurrogates(64)
    ids = tok.encode(text, allowed_special="all")
    feature(f"{k}:{min(len(ids), 10)}")
    assert valid_ids(tok, ids), (text, ids)
    out = tok.decode_bytes(ids)
    specials_in = any(s in text for s in tok.special_tokens)
    if tok.scheme == "bytes" and tok.pretokenizer in LOSSLESS:
        assert out == text.encode(), (k, text, ids, out)
    elif tok.scheme == "bytes" and not specials_in:  # whitespace preset
        assert out.decode() == " ".join(text.split()), (k, text, out)
    assert tok.encode_ordinary(text) == tok.encode(text, disallowed_special=())
    if mode == 1:
        assert tok.encode_batch([text, text2], allowed_special="all", threads=2) == \
            [ids, tok.encode(text2, allowed_special="all")]
        flat, offsets = tok.encode_batch([text, text2, text], allowed_special="all", as_numpy=True, threads=2)
        assert flat[offsets[0]:offsets[1]].tolist() == ids and flat[offsets[2]:offsets[3]].tolist() == ids
        assert tok.decode_batch((flat, offsets))[0] == tok.decode(ids)
    if mode == 2:
        p = fdp.ConsumeProbability()
        seed = fdp.ConsumeIntInRange(0, 1 << 64)
        d1 = tok.encode(text, allowed_special="all", dropout=p, seed=seed)
        assert d1 == tok.encode(text, allowed_special="all", dropout=p, seed=seed), "dropout is not deterministic"
        assert valid_ids(tok, d1)
        if tok.scheme == "bytes":
            assert tok.decode_bytes(d1) == out, (text, d1)


def check_decode(tok: bpeforge.Tokenizer, fdp: atheris.FuzzedDataProvider) -> None:
    n = tok.vocab_size + 1100  # external ids go up to ~1000 + vocab
    ids = [fdp.ConsumeIntInRange(-3, n) for _ in range(fdp.ConsumeIntInRange(0, 64))]
    try:
        got = tok.decode_bytes(ids)
    except ParameterError as e:
        assert not valid_ids(tok, ids), (ids, e)
        feature("decode:" + error_label(e)[:30])
    else:
        assert valid_ids(tok, ids)
        if tok.scheme == "bytes" and tok.pretokenizer != "whitespace":
            assert got == b"".join(tok.id_to_token(i) for i in ids)
        feature("decode:ok")
    good = [i for i in ids if tok.id_to_token(i) is not None]
    arr = np.array(good, dtype=fdp.PickValueInList(["<u4", "<i8", ">u2", "<i4"]) if max(good, default=0) < 30000 else "<u4")
    offsets = np.array(sorted(fdp.ConsumeIntInRange(-1, len(good) + 1) for _ in range(fdp.ConsumeIntInRange(0, 5))),
                       dtype=np.int64)
    if fdp.ConsumeBool():
        offsets = offsets[::-1].copy()
    try:
        texts = tok.decode_batch((arr, offsets))
    except ParameterError as e:
        feature("decode_batch:" + error_label(e)[:30])
        return
    feature(f"decode_batch:ok:{len(texts)}")
    assert len(texts) == max(len(offsets) - 1, 0), (offsets, texts)


def main() -> None:
    run(test_one_input, write_seeds, lambda: TOKS.extend(build_tokenizers()))


if __name__ == "__main__":
    main()
