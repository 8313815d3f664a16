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
from pathlib import Path

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
    # JSON is UTF-8 as a whole: a bad byte outside the text field is a bad record too
    (b'{"text": "a", "lang": "en\x8a"}', "malformed JSON: invalid UTF-8 at byte 26"),
])
def test_bad_records_name_file_and_line(tmp_path, bad_line, why) -> None:
    path = tmp_path / "bad.jsonl"
    good = [json.dumps({"text": f"line {i}"}).encode() for i in range(5000)]
    bad = bad_line if isinstance(bad_line, bytes) else bad_line.encode()
    path.write_bytes(b"\n".join(good[:3000] + [bad] + good[3000:]) + b"\n")
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


# ---- per-record languages, Parquet/Arrow, Hugging Face datasets ---------------


@pytest.fixture(scope="module")
def tagged(corpus_slice) -> tuple[list[str], list[str]]:
    """The slice's texts (no tabs, no blank lines: every line is a record) and
    their language tags from the shared corpus's side file."""
    import lzma

    from conftest import SLICE_FILE

    langs_path = SLICE_FILE.with_name(SLICE_FILE.name.replace(".txt.xz", ".langs.txt.xz"))
    with lzma.open(langs_path, "rt", encoding="utf-8") as f:
        tags = [next(f).strip() for _ in corpus_slice]
    pairs = [(t, l) for t, l in zip(corpus_slice, tags) if t.strip() and "\t" not in t]
    return [t for t, _ in pairs], [l for _, l in pairs]


def _side_file_model(tagged, tmp_path, **kw) -> tuple:
    texts, langs = tagged
    plain, side = tmp_path / "texts.txt", tmp_path / "texts.langs.txt"
    plain.write_bytes("".join(t + "\n" for t in texts).encode("utf-8"))
    side.write_text("".join(l + "\n" for l in langs), encoding="utf-8")
    return _model(bpeforge.train(plain, langs=[side], vocab_size=VOCAB, progress=False, **kw))


# Records that name their own language hold no lines apart (parity measures
# on the training lines there): the side-file run does the same with
# balance_held_apart=0.
@pytest.mark.parametrize("balance", [{"temperature": 3.0}, {"max_premium": 1.2, "balance_rounds": 1,
                                                            "balance_min_lines": 10, "balance_held_apart": 0.0}])
def test_lang_field_equals_the_side_file(tagged, tmp_path, balance) -> None:
    texts, langs = tagged
    path = tmp_path / "c.jsonl.gz"
    records = "".join(json.dumps({"meta": {"lang": l}, "text": t}) + "\n" for t, l in zip(texts, langs))
    path.write_bytes(gzip.compress(records.encode("utf-8")))
    expected = _side_file_model(tagged, tmp_path, **balance)
    tok = bpeforge.train(path, text_field="text", lang_field="meta.lang", vocab_size=VOCAB, progress=False,
                         threads=2, **balance)
    assert _model(tok) == expected
    assert tok.metadata["language_balance"]["languages"].keys() == set(langs)


def test_lang_field_bad_records(tmp_path) -> None:
    path = tmp_path / "l.jsonl"
    rows = [{"text": f"line {i}", "lang": "en" if i % 3 else "de"} for i in range(3000)]
    rows[1500] = {"text": "no language here"}
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(bpeforge.InputError, match=r"l\.jsonl, line 1501: no field \"lang\""):
        bpeforge.train(path, text_field="text", lang_field="lang", temperature=2.0, vocab_size=300, progress=False)
    tok = bpeforge.train(path, text_field="text", lang_field="lang", on_bad_record="skip", temperature=2.0,
                         vocab_size=300, progress=False)
    assert tok.metadata["corpus"]["bad_records"] == 1
    with pytest.raises(bpeforge.ParameterError, match="lang_field"):
        bpeforge.train(bpeforge.sample_corpus(), lang_field="lang", temperature=2.0, vocab_size=300, progress=False)
    with pytest.raises(bpeforge.ParameterError, match="lang_field"):
        bpeforge.train(path, text_field="text", lang_field="lang", file_languages=["en"], vocab_size=300,
                       progress=False)


def _pa():
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet  # noqa: F401

    return pa


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("kind", ["parquet", "parquet-large", "arrow"])
def test_parquet_and_arrow_train_the_plain_model(texts, plain, tmp_path, kind, threads) -> None:
    pa = _pa()
    typ = pa.large_string() if kind == "parquet-large" else pa.string()
    table = pa.table({"id": list(range(len(texts))), "text": pa.array(texts, typ)})
    if kind == "arrow":
        path = tmp_path / "c.arrow"
        import pyarrow.feather

        pyarrow.feather.write_feather(table, path, chunksize=300)
    else:
        path = tmp_path / "c.parquet"
        pa.parquet.write_table(table, path, row_group_size=300)  # several row groups, streamed
    tok = bpeforge.train(path, text_column="text", vocab_size=VOCAB, progress=False, threads=threads)
    assert _model(tok) == plain


def test_parquet_lang_column_equals_the_side_file(tagged, tmp_path) -> None:
    pa = _pa()
    texts, langs = tagged
    path = tmp_path / "c.parquet"
    pa.parquet.write_table(pa.table({"text": texts, "lang": langs}), path, row_group_size=500)
    expected = _side_file_model(tagged, tmp_path, temperature=3.0)
    tok = bpeforge.train(path, text_column="text", lang_column="lang", temperature=3.0, vocab_size=VOCAB,
                         progress=False)
    assert _model(tok) == expected


def test_parquet_errors_name_the_file_and_row_group(tmp_path) -> None:
    pa = _pa()
    good = tmp_path / "good.parquet"
    texts = [f"row {i} text" for i in range(2000)]
    texts[1234] = None
    pa.parquet.write_table(pa.table({"text": texts}), good, row_group_size=1000)
    with pytest.raises(bpeforge.InputError, match=r"good\.parquet, row group 1, row 235: the text is null"):
        bpeforge.train(good, text_column="text", vocab_size=300, progress=False)
    tok = bpeforge.train(good, text_column="text", on_bad_record="skip", vocab_size=300, progress=False)
    assert tok.metadata["corpus"]["bad_records"] == 1 and tok.metadata["corpus"]["texts"] == 1999
    with pytest.raises(bpeforge.InputError, match=r"good\.parquet: no column 'body' \(its columns: text\)"):
        bpeforge.train(good, text_column="body", vocab_size=300, progress=False)
    truncated = tmp_path / "truncated.parquet"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    out = tmp_path / "model.json"
    with pytest.raises(bpeforge.InputError, match=r"truncated\.parquet"):
        bpeforge.train(truncated, text_column="text", vocab_size=300, progress=False)
    assert cli.main(["train", str(truncated), "--text-column", "text", "--vocab-size", "300", "-q", "-o",
                     str(out)]) == 1
    assert not out.exists()
    ints = tmp_path / "ints.parquet"
    pa.parquet.write_table(pa.table({"text": list(range(10))}), ints)
    with pytest.raises(bpeforge.InputError, match="column 'text' is int64, not a string column"):
        bpeforge.train(ints, text_column="text", vocab_size=300, progress=False)
    with pytest.raises(bpeforge.ParameterError, match="text_column"):
        bpeforge.train(good, vocab_size=300, progress=False)


def _datasets():
    return pytest.importorskip("datasets")


@pytest.mark.parametrize("iterable", [False, True])
def test_train_from_dataset_trains_the_plain_model(texts, plain, iterable) -> None:
    datasets = _datasets()
    ds = datasets.Dataset.from_dict({"text": texts, "n": list(range(len(texts)))})
    if iterable:
        ds = ds.to_iterable_dataset(num_shards=3)
    tok = bpeforge.train_from_dataset(ds, text_column="text", batch_size=700, vocab_size=VOCAB, progress=False,
                                      threads=2)
    assert _model(tok) == plain


def test_train_from_dataset_with_a_language_column(tagged, tmp_path) -> None:
    datasets = _datasets()
    texts, langs = tagged
    ds = datasets.Dataset.from_dict({"text": texts, "lang": langs})
    tok = bpeforge.train_from_dataset(ds, lang_column="lang", temperature=3.0, vocab_size=VOCAB, progress=False)
    assert _model(tok) == _side_file_model(tagged, tmp_path, temperature=3.0)


def test_train_from_dataset_refuses_what_it_cannot_do() -> None:
    datasets = _datasets()
    ds = datasets.Dataset.from_dict({"text": ["a b c"] * 10})
    with pytest.raises(bpeforge.ParameterError, match="no column 'body'"):
        bpeforge.train_from_dataset(ds, text_column="body", progress=False)
    with pytest.raises(bpeforge.ParameterError, match="text_column"):
        bpeforge.train_from_dataset(ds, text_field="text", progress=False)
    with pytest.raises(bpeforge.ParameterError, match="DatasetDict"):
        bpeforge.train_from_dataset(datasets.DatasetDict({"train": ds}), progress=False)


@pytest.mark.parametrize("iterable", [False, True])
def test_encode_dataset_adds_input_ids(texts, iterable) -> None:
    datasets = _datasets()
    tok = bpeforge.train_from_iterator(texts, vocab_size=VOCAB, progress=False)
    ds = datasets.Dataset.from_dict({"text": texts[:500]})
    if iterable:
        ds = ds.to_iterable_dataset()
    out = tok.encode_dataset(ds, batch_size=128)
    rows = list(out)
    assert [r["input_ids"] for r in rows] == tok.encode_batch(texts[:500])
    assert rows[0]["text"] == texts[0]


def test_encode_file_reads_a_text_field(texts, tmp_path) -> None:
    tok = bpeforge.train_from_iterator(texts, vocab_size=VOCAB, progress=False)
    src = tmp_path / "c.jsonl.zst"
    zstandard = pytest.importorskip("zstandard")
    src.write_bytes(zstandard.ZstdCompressor().compress(_jsonl(texts, lambda t: {"text": t}) + b"\n"))
    plain_src = tmp_path / "c.txt"
    plain_src.write_bytes("".join(t + "\n" for t in texts).encode("utf-8") + b"\n")
    a, b = tmp_path / "a.ids", tmp_path / "b.ids"
    stats = tok.encode_file(src, a, text_field="text")
    tok.encode_file(plain_src, b)
    assert a.read_bytes() == b.read_bytes() and stats["lines"] == len(texts) + 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "a"}\n{"body": "b"}\n', encoding="utf-8")
    with pytest.raises(bpeforge.InputError, match=r"bad\.jsonl, line 2: no field \"text\""):
        tok.encode_file(bad, tmp_path / "c.ids", text_field="text")
    assert not (tmp_path / "c.ids").exists()
    tok.save(tmp_path / "m.json")
    via_cli = tmp_path / "cli.ids"
    assert cli.main(["encode", "-m", str(tmp_path / "m.json"), str(src), "--text-field", "text", "-q",
                     "-o", str(via_cli)]) == 0
    assert via_cli.read_bytes() == a.read_bytes()


@pytest.mark.parametrize("fmt", ["ids", "npy", "bin"])
def test_encode_file_reads_parquet_and_arrow_columns(texts, tmp_path, fmt) -> None:
    pa = _pa()
    import pyarrow.feather

    tok = bpeforge.train_from_iterator(texts, vocab_size=VOCAB, progress=False)
    pq_path, ipc_path = tmp_path / "c.parquet", tmp_path / "c.arrow"
    pa.parquet.write_table(pa.table({"id": list(range(len(texts))), "text": texts}), pq_path, row_group_size=300)
    pyarrow.feather.write_feather(pa.table({"text": pa.array(texts, pa.large_string())}), ipc_path, chunksize=250)
    plain_src = tmp_path / "c.txt"
    plain_src.write_bytes("".join(t + "\n" for t in texts).encode("utf-8"))
    expected = tmp_path / f"plain.{fmt}"
    tok.encode_file(plain_src, expected, format=fmt)
    for src in (pq_path, ipc_path):
        out = tmp_path / f"{src.name}.{fmt}"
        stats = tok.encode_file(src, out, format=fmt, text_column="text")
        assert stats["lines"] == len(texts)
        assert out.read_bytes() == expected.read_bytes()
        if fmt != "ids":
            assert Path(f"{out}.offsets.npy").read_bytes() == Path(f"{expected}.offsets.npy").read_bytes()
    # Row i of the output is row i of the input: a null text is an error naming
    # file, row group and row, and nothing is written.
    bad = tmp_path / "bad.parquet"
    pa.parquet.write_table(pa.table({"text": [*texts[:400], None]}), bad, row_group_size=300)
    with pytest.raises(bpeforge.InputError, match=r"bad\.parquet, row group 1, row 101: the text is null"):
        tok.encode_file(bad, tmp_path / f"bad.{fmt}", format=fmt, text_column="text")
    assert not (tmp_path / f"bad.{fmt}").exists() and not (tmp_path / f"bad.{fmt}.offsets.npy").exists()
    with pytest.raises(bpeforge.ParameterError, match="text_column"):
        tok.encode_file(pq_path, tmp_path / "x.ids")
    with pytest.raises(bpeforge.InputError, match="no column 'body'"):
        tok.encode_file(pq_path, tmp_path / "x.ids", text_column="body")
    tok.save(tmp_path / "m.json")
    via_cli = tmp_path / f"cli.{fmt}"
    assert cli.main(["encode", "-m", str(tmp_path / "m.json"), str(pq_path), "--text-column", "text", "-q",
                     "--format", fmt, "-o", str(via_cli)]) == 0
    assert via_cli.read_bytes() == expected.read_bytes()
