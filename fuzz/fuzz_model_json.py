"""Fuzz the model loader: ``Tokenizer.from_json`` on mutated model files and
on structure-aware generated models (hostile sizes, wrong types, bad ids).

Contract checked: ``from_json`` returns a Tokenizer or raises
``ModelFormatError``, quickly; a model that loads round-trips through
``to_json``, encodes any text to ids inside the vocabulary and (bytes scheme,
covering pre-tokenizers) decodes back to the same bytes.

    python fuzz/fuzz_model_json.py --seeds DIR      # write seed models
    python fuzz/fuzz_model_json.py DIR -max_total_time=60
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import atheris  # noqa: E402

from _common import error_label, feature, hostile_model, known, run, timed  # noqa: E402

with atheris.instrument_imports():
    import bpeforge
    from bpeforge import InputError, ModelFormatError, SpecialTokenError

PRETOKS = ["gpt2", "cl100k", "o200k", "whitespace", "none", "superword"]
LOSSLESS = {"gpt2", "cl100k", "o200k", "none"}
SAMPLE = "Hello wörld, it's 12345 <s> ünïcödé\t\n  end 😀 中文"


def write_seeds(d: str) -> None:
    os.makedirs(d, exist_ok=True)
    texts = bpeforge.sample_corpus().read_text(encoding="utf-8").splitlines()[:200]
    configs = [
        dict(scheme="bytes", pretokenizer="gpt2", special_tokens=["<s>", "</s>"]),
        dict(scheme="bytes", pretokenizer="whitespace"),
        dict(scheme="bytes", pretokenizer=bpeforge.Regex(r"\w+|[^\w\s]+")),
        dict(scheme="chars", pretokenizer="whitespace", special_tokens=["<s>"]),
        dict(scheme="chars", pretokenizer="whitespace", end_of_word_suffix="</w>"),
        dict(scheme="chars", pretokenizer="none", character_coverage=0.99),
    ]
    for k, cfg in enumerate(configs):
        base = 256 + len(cfg.get("special_tokens", ())) if cfg["scheme"] == "bytes" else 2000
        try:
            tok = bpeforge.train_from_iterator(texts, vocab_size=base + 60, min_frequency=1, progress=False, **cfg)
        except bpeforge.BpeforgeError:
            tok = bpeforge.train_from_iterator(texts, vocab_size=2600, min_frequency=1, progress=False, **cfg)
        doc = json.loads(tok.to_json())
        doc["metadata"] = {"seed": k}
        with open(os.path.join(d, f"seed-{k}.json"), "w", encoding="utf-8") as f:
            json.dump(doc, f)
    # a model with external ids
    doc["ids"] = list(range(10, 10 + len(doc["special_tokens"]) + len(doc["alphabet"] or ()) + len(doc["merges"])))
    with open(os.path.join(d, "seed-ids.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f)


def generate(fdp: atheris.FuzzedDataProvider) -> dict:
    """A model document built from the fuzzer's bytes: mostly valid, with
    every field occasionally wrong."""
    scheme = fdp.ConsumeIntInRange(0, 2)
    specials = [fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 6)) for _ in range(fdp.ConsumeIntInRange(0, 3))]
    doc: dict = {"format": "bpeforge-model", "version": 1}
    if scheme == 0:
        doc["scheme"] = {"type": "bytes"}
        doc["alphabet"] = None
        base = 256
    else:
        if fdp.ConsumeBool():
            specials.insert(0, "<unk>")
        doc["scheme"] = {"type": "chars", "unk_token": "<unk>",
                         "end_of_word_suffix": "</w>" if scheme == 2 else None,
                         "character_coverage": fdp.ConsumeProbability() * 1.1}
        chars = list(dict.fromkeys(fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 24))))
        if scheme == 2:
            chars += [c + "</w>" for c in chars[: fdp.ConsumeIntInRange(0, len(chars))]]
        doc["alphabet"] = chars
        base = len(chars)
    doc["special_tokens"] = specials
    choice = fdp.ConsumeIntInRange(0, len(PRETOKS) + 1)
    if choice < len(PRETOKS):
        doc["pretokenizer"] = {"type": PRETOKS[choice]}
    elif choice == len(PRETOKS):
        doc["pretokenizer"] = {"type": "regex", "pattern": fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 12))}
    else:
        doc["pretokenizer"] = {"type": "bogus"}
    vocab = len(specials) + base
    merges = []
    for _ in range(fdp.ConsumeIntInRange(0, 48)):
        shape = fdp.ConsumeIntInRange(0, 7)
        if shape == 0 and merges:  # the last token with itself: lengths double
            merges.append([vocab - 1, vocab - 1])
        elif shape == 1 and merges:  # the last token grows by one symbol
            merges.append([vocab - 1, fdp.ConsumeIntInRange(0, vocab - 1)])
        else:
            merges.append([fdp.ConsumeIntInRange(0, vocab + 1), fdp.ConsumeIntInRange(0, vocab + 1)])
        vocab += 1
    doc["merges"] = merges
    if fdp.ConsumeBool():
        doc["merge_counts"] = [fdp.ConsumeIntInRange(0, 1 << 40) for _ in range(len(merges) + fdp.ConsumeIntInRange(-1, 1))
                               ][: max(0, len(merges) + 1)]
    how = fdp.ConsumeIntInRange(0, 7)
    if how == 0:
        doc["ids"] = [fdp.ConsumeIntInRange(0, 1 << 20) for _ in range(vocab)]
    elif how == 1:
        off = fdp.ConsumeIntInRange(0, 1 << 20)
        doc["ids"] = list(range(off + vocab - 1, off - 1, -1))
    elif how == 2:
        doc["ids"] = list(range(vocab - 1)) + [fdp.ConsumeIntInRange(vocab, (1 << 31) + 1)]
    if fdp.ConsumeIntInRange(0, 15) == 0:
        doc["version"] = fdp.ConsumeIntInRange(-1, 3)
    if fdp.ConsumeIntInRange(0, 15) == 0:
        key = fdp.PickValueInList(list(doc))
        doc[key] = fdp.PickValueInList([None, 0, -1, "", [], {}, [[0]], 1.5, "x" * 3])
    return doc


def check_loaded(tok: bpeforge.Tokenizer, text: str) -> None:
    again = bpeforge.Tokenizer.from_json(tok.to_json())
    assert again.merges == tok.merges and again.special_tokens == tok.special_tokens
    assert again.tokens() == tok.tokens()
    for t in (SAMPLE, text):
        try:
            ids = timed("encode", lambda: tok.encode(t, allowed_special="all"), 5)
        except InputError as e:  # a custom regex that gave up
            assert "gave up" in str(e), e
            continue
        except SpecialTokenError:
            raise
        assert all(0 <= i < (1 << 31) for i in ids)
        out = tok.decode_bytes(ids)
        if tok.scheme == "bytes" and tok.pretokenizer in LOSSLESS:
            assert out == t.encode("utf-8"), (t, ids, out)
        assert tok.encode_batch([t, t], allowed_special="all", threads=2) == [ids, ids]


def test_one_input(data: bytes) -> None:
    if data[:1] == b"{":
        raw = data
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError):
            doc = None
        bug = hostile_model(doc)
        if bug and known(bug):
            return
        text = SAMPLE
    else:
        fdp = atheris.FuzzedDataProvider(data)
        doc = generate(fdp)
        bug = hostile_model(doc)
        if bug and known(bug):
            return
        raw = json.dumps(doc).encode()
        text = fdp.ConsumeUnicodeNoSurrogates(200)
    try:
        tok = timed("from_json", lambda: bpeforge.Tokenizer.from_json(raw), 5)
    except ModelFormatError as e:
        assert str(e), "an error without a message"
        feature(error_label(e))
        return
    feature(f"ok:{tok.scheme}:{tok.pretokenizer[:20]}:{len(tok.special_tokens)}:{min(len(tok.merges), 9)}")
    check_loaded(tok, text)


def main() -> None:
    run(test_one_input, write_seeds)


if __name__ == "__main__":
    main()
