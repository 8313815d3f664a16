"""Fuzz the JSON-lines reader: ``train(..., text_field=...)`` on mutated
JSON-lines files (nested paths, escapes, invalid UTF-8, duplicate keys,
blank lines, CRLF), with and without ``lang_field``.

Contract checked:
* training returns a Tokenizer or raises ``InputError`` (a record without
  its text, naming file and line), quickly, never anything else;
* with ``on_bad_record="skip"`` it fails only when no record has a text
  (``TrainingError``), and the model equals
  ``train_from_iterator`` over the texts an independent reader (Python's
  ``json``, first key wins, strict UTF-8) finds, merge for merge.

    python fuzz/fuzz_jsonl.py --seeds DIR
    python fuzz/fuzz_jsonl.py DIR -max_total_time=60
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import atheris  # noqa: E402

from _common import error_label, feature, run, timed  # noqa: E402

with atheris.instrument_imports():
    import bpeforge
    from bpeforge import InputError

FIELDS = ["text", "meta.body", "a.b.c"]
TMP = os.environ.get("FUZZ_TMP") or tempfile.gettempdir()
OPTS = dict(vocab_size=300, min_frequency=1, progress=False, threads=2)


def write_seeds(d: str) -> None:
    os.makedirs(d, exist_ok=True)
    lines = bpeforge.sample_corpus().read_text(encoding="utf-8").splitlines()[:20]
    records = [
        "".join(json.dumps({"text": t, "lang": "en"}) + "\n" for t in lines).encode(),
        "".join(json.dumps({"meta": {"body": t, "x": [1, {"y": None}]}, "text": 5}) + "\r\n" for t in lines).encode(),
        '{"text": "caf\\u00e9 \\"q\\" \\ud83d\\ude00", "text": "second"}\n\n  \n{"a": {"b": {"c": "deep"}}}\n'.encode(),
        '{"text": "\\ud800 lone"}\n{"text": null}\n[1, 2]\n{"text": "ok"} trailing\n{"text": "a\\nb"}\n'.encode(),
        # invalid UTF-8 outside the field read (a case a fuzz run once found)
        b'{"text": "\\u0391\\u03a1 9", "lang": "en\x8a"}\n{"text": "ok", "a": {"b": {"c": "\xc3"}}}\n',
    ]
    for k, r in enumerate(records):
        for m in range(len(FIELDS) * 2):
            with open(os.path.join(d, f"seed-{k}-{m}"), "wb") as f:
                f.write(bytes([m]) + r)


def _first_key_wins(pairs: list) -> dict:
    out: dict = {}
    for k, v in pairs:
        out.setdefault(k, v)
    return out


def _refuse_constant(name: str) -> None:
    raise ValueError(f"not JSON: {name}")


def expected_texts(data: bytes, path: list[str]) -> list[str] | None:
    """The texts an independent reader finds (None: it cannot judge this input)."""
    out = []
    for raw in data.split(b"\n"):
        line = raw[:-1] if raw.endswith(b"\r") else raw
        if all(c in b" \t\n\r\x0b\x0c" for c in line):
            continue
        if line.count(b"[") + line.count(b"{") > 100:
            return None  # the engine's nesting limit (128) is not Python's
        try:
            value = json.loads(line.decode("utf-8"), object_pairs_hook=_first_key_wins,
                               parse_constant=_refuse_constant)
        except (ValueError, RecursionError):
            continue
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                continue  # a lone surrogate escape: not a Unicode string
            out.append(value)
    return out


def model(tok: bpeforge.Tokenizer) -> tuple:
    d = json.loads(tok.to_json())
    return d["merges"], d["merge_counts"]


def test_one_input(data: bytes) -> None:
    if not data:
        return
    mode, data = data[0], data[1:]
    field = FIELDS[mode % len(FIELDS)]
    with_lang = mode // len(FIELDS) % 2 == 1
    fd, path = tempfile.mkstemp(suffix=".jsonl", dir=TMP)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        kw = dict(text_field=field, **OPTS)
        if with_lang:
            kw.update(lang_field="lang", temperature=2.0)
        try:
            timed("train", lambda: bpeforge.train(path, **kw), 10.0)
            feature("error-mode:ok")
        except InputError as e:
            feature("error-mode:" + error_label(e)[:40])
        except bpeforge.TrainingError as e:  # no text with a language at all
            feature("error-mode:" + error_label(e)[:40])
        try:
            tok = timed("train", lambda: bpeforge.train(path, on_bad_record="skip", **kw), 10.0)
        except bpeforge.TrainingError as e:
            # Nothing to train on (no record with a text, or with a language).
            assert with_lang or "no text to train on" in str(e), e
            feature("skip:" + error_label(e)[:40])
            return
        feature("skip:ok")
        texts = expected_texts(data, field.split("."))
        if texts is None or with_lang:
            return
        assert tok.metadata["corpus"]["texts"] == len(texts), (tok.metadata["corpus"], len(texts))
        assert model(tok) == model(bpeforge.train_from_iterator(texts, **OPTS))
        feature(f"skip:equal:{min(len(texts), 5)}")
    finally:
        os.unlink(path)


def warm_up() -> None:
    """Lazy imports and the pre-tokenizer's tables, outside the per-input timeout."""
    test_one_input(b"\x00" + json.dumps({"text": "warm up", "lang": "en"}).encode())
    test_one_input(b"\x03" + json.dumps({"text": "warm up", "lang": "en"}).encode())


def main() -> None:
    run(test_one_input, write_seeds, warm_up)


if __name__ == "__main__":
    main()
