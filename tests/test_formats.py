"""Corpora as people store them: JSON lines (plain and compressed, nested
fields) and tab-separated bitext, read by the engine. Every format must give
the model that the same texts as plain lines give, merge for merge and count
for count; bad records are errors naming file and line (or skipped and
counted), and nothing is written when training fails.

The files are written by the real libraries (``json``, ``gzip``,
``zstandard``) from a slice of the shared corpus.
"""

from __future__ import annotations

import gzip
import json

import pytest

import bpeforge
from bpeforge import cli

VOCAB = 600


def _model(tok: bpeforge.Tokenizer) -> tuple:
    d = json.loads(tok.to_json())
    return d["merges"], d["merge_counts"]


@pytest.fixture(scope="module")
def texts(corpus_slice) -> list[str]:
    # Lines that are texts in every format: no tab (a TSV cell cannot hold one).
    return [t for t in corpus_slice if "\t" not in t]


@pytest.fixture(scope="module")
def plain(texts, tmp_path_factory):
    path = tmp_path_factory.mktemp("plain") / "texts.txt"
    path.write_bytes("".join(t + "\n" for t in texts).encode("utf-8"))
    return _model(bpeforge.train(path, vocab_size=VOCAB, progress=False, threads=2))


def _jsonl(texts: list[str], record) -> bytes:
    return "".join(json.dumps(record(t), ensure_ascii=i % 2 == 0) + "\n" for i, t in enumerate(texts)).encode("utf-8")


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("compression", ["", ".gz", ".zst"])
def test_jsonl_trains_the_plain_model(texts, plain, tmp_path, compression, threads) -> None:
    data = _jsonl(texts, lambda t: {"id": 1, "text": t, "lang": "xx", "meta": {"n": [1, 2]}})
    path = tmp_path / f"c.jsonl{compression}"
    if compression == ".gz":
        data = gzip.compress(data)
    elif compression == ".zst":
        zstandard = pytest.importorskip("zstandard")
        data = zstandard.ZstdCompressor().compress(data)
    path.write_bytes(data)
    tok = bpeforge.train(path, text_field="text", vocab_size=VOCAB, progress=False, threads=threads)
    assert _model(tok) == plain
    assert "JSON lines" in tok.metadata["settings"]["text_mode"]


def test_nested_field_and_escapes(texts, plain, tmp_path) -> None:
    path = tmp_path / "nested.jsonl"
    # ensure_ascii on every other line: escaped texts (owned) and raw ones (borrowed) alike.
    path.write_bytes(_jsonl(texts, lambda t: {"meta": {"body": t, "x": None}, "text": 3}))
    tok = bpeforge.train(path, text_field="meta.body", vocab_size=VOCAB, progress=False)
    assert _model(tok) == plain


def test_tsv_columns_are_texts(texts, tmp_path) -> None:
    half = len(texts) // 2
    src, tgt = texts[:half], texts[half:2 * half]
    bitext = tmp_path / "bitext.tsv"
    bitext.write_bytes("".join(f"{a}\t7\t{b}\n" for a, b in zip(src, tgt)).encode("utf-8"))
    both = tmp_path / "both.txt"
    both.write_bytes("".join(f"{a}\n{b}\n" for a, b in zip(src, tgt)).encode("utf-8"))
    expected = _model(bpeforge.train(both, vocab_size=VOCAB, progress=False))
    got = bpeforge.train(bitext, columns=[1, 3], vocab_size=VOCAB, progress=False, threads=2)
    assert _model(got) == expected
    one = bpeforge.train(bitext, columns=[3], vocab_size=VOCAB, progress=False)
    only_tgt = tmp_path / "tgt.txt"
    only_tgt.write_bytes("".join(b + "\n" for b in tgt).encode("utf-8"))
    assert _model(one) == _model(bpeforge.train(only_tgt, vocab_size=VOCAB, progress=False))


@pytest.mark.parametrize("bad_line, why", [
    ('{"text": "a", ', "malformed JSON"),
    ('{"body": "a"}', 'no field "text"'),
    ('{"text": 12}', 'field "text" is a number, not a string'),
    ('["text"]', "the record is an array, not an object"),
])
def test_bad_records_name_file_and_line(tmp_path, bad_line, why) -> None:
    path = tmp_path / "bad.jsonl"
    good = [json.dumps({"text": f"line {i}"}) for i in range(5000)]
    path.write_text("\n".join(good[:3000] + [bad_line] + good[3000:]) + "\n", encoding="utf-8")
    with pytest.raises(bpeforge.InputError, match=rf"bad\.jsonl, line 3001: {why}"):
        bpeforge.train(path, text_field="text", vocab_size=300, progress=False, threads=2)
    # skipped and counted
    tok = bpeforge.train(path, text_field="text", on_bad_record="skip", vocab_size=300, progress=False)
    assert tok.metadata["corpus"]["bad_records"] == 1
    assert tok.metadata["corpus"]["texts"] == 5000
    # the command line writes nothing
    out = tmp_path / "model.json"
    assert cli.main(["train", str(path), "--text-field", "text", "--vocab-size", "300", "-q", "-o", str(out)]) == 1
    assert not out.exists()


def test_missing_column_names_file_and_line(tmp_path) -> None:
    path = tmp_path / "bitext.tsv"
    path.write_text("a\tb\nc\td\ne\n", encoding="utf-8")
    with pytest.raises(bpeforge.InputError, match=r"bitext\.tsv, line 3: column 2 is missing"):
        bpeforge.train(path, columns=[1, 2], vocab_size=300, progress=False)


@pytest.mark.parametrize("bad", [
    {"text_field": "a..b"}, {"text_field": 2}, {"columns": [0]}, {"columns": []}, {"columns": "x"},
    {"on_bad_record": "ignore"}, {"text_field": "text", "columns": [1]}, {"text_field": "text", "documents": True},
    {"on_bad_record": "skip"},
])
def test_bad_input_options_are_parameter_errors(bad) -> None:
    with pytest.raises(bpeforge.ParameterError, match="|".join(bad)):
        bpeforge.train(bpeforge.sample_corpus(), vocab_size=300, progress=False, **bad)
