"""Structured input is never read as plain text silently: JSON lines,
Parquet and Arrow files (by name, with any compression suffix, or by
content) are refused without a text field, in every command and in Python,
and read the same way everywhere with it (bpeforge._input_formats)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import bpeforge
from bpeforge import _input_formats, cli
from bpeforge.errors import ParameterError

TEXTS = [f"line {i}: the quick brown fox {i % 13} jumps over the lazy dog" for i in range(400)] + \
        ["Größere Straßen führen über die Brücke.", "敏捷的棕色狐狸跳过了懒狗。"] * 20
VOCAB = 320


def bpeforge_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bpeforge", *args], capture_output=True, text=True,
                          encoding="utf-8", timeout=300)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("formats")
    out = {"plain": d / "corpus.txt"}
    out["plain"].write_text("".join(t + "\n" for t in TEXTS), encoding="utf-8")
    records = "".join(json.dumps({"id": i, "text": t, "lang": "xx"}, ensure_ascii=False) + "\n"
                      for i, t in enumerate(TEXTS)).encode("utf-8")
    out["jsonl"] = d / "x.jsonl"
    out["jsonl"].write_bytes(records)
    out["json_in_txt"] = d / "records.txt"  # JSON lines by content only
    out["json_in_txt"].write_bytes(records)
    zstandard = pytest.importorskip("zstandard")
    out["jsonl_zst"] = d / "x.jsonl.zst"
    out["jsonl_zst"].write_bytes(zstandard.ZstdCompressor().compress(records))
    import gzip

    out["ndjson_gz"] = d / "x.ndjson.gz"
    out["ndjson_gz"].write_bytes(gzip.compress(records))
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = pa.table({"id": list(range(len(TEXTS))), "text": TEXTS})
    out["parquet"] = d / "x.parquet"
    pq.write_table(table, out["parquet"], row_group_size=100)
    out["parquet_as_txt"] = d / "looks-like-text.txt"  # Parquet by its magic bytes only
    shutil.copy(out["parquet"], out["parquet_as_txt"])
    out["arrow"] = d / "x.arrow"
    with pa.ipc.new_file(str(out["arrow"]), table.schema) as w:
        w.write_table(table)
    return out


@pytest.fixture(scope="module")
def plain_model(files) -> bpeforge.Tokenizer:
    return bpeforge.train(files["plain"], vocab_size=VOCAB, progress=False)


# ---- the rules of detection -----------------------------------------------------


@pytest.mark.parametrize("name, kind", [
    ("x.jsonl", "jsonl"), ("x.jsonl.zst", "jsonl"), ("x.ndjson.gz", "jsonl"), ("X.JSONL.XZ", "jsonl"),
    ("x.parquet", "parquet"), ("x.pq", "parquet"), ("x.arrow", "arrow"), ("x.feather", "arrow"),
    ("corpus.txt", "text"), ("corpus.txt.xz", "text"), ("corpus", "text"),
])
def test_the_name_says_the_format(name, kind, tmp_path) -> None:
    # Files that do not exist: the name alone decides (nothing to sniff).
    assert _input_formats.detect(tmp_path / name).kind == kind


def test_compressions_are_listed_once() -> None:
    from bpeforge import _io, distributed

    assert set(_io._OPENERS) | {".zst", ".zstd"} == set(_input_formats.COMPRESSIONS)
    assert not hasattr(distributed, "_COMPRESSED")
    for suffix in _input_formats.COMPRESSIONS:
        assert _input_formats.compression("a.txt" + suffix.upper()) == suffix


def test_content_says_the_format(files) -> None:
    got = _input_formats.detect(files["parquet_as_txt"])
    assert got.kind == "parquet" and "PAR1" in got.reason
    got = _input_formats.detect(files["json_in_txt"])
    assert got.kind == "jsonl" and got.fields == ("text", "lang")


def test_a_name_that_says_json_lines_wins_over_bytes_that_look_like_arrow(tmp_path) -> None:
    """The fuzzer's case: a .jsonl starting with Arrow's stream marker is
    JSON lines, so its bad records are named by line (and skippable), not
    an unreadable Arrow file."""
    path = tmp_path / "x.jsonl"
    path.write_bytes(b"\xff" * 40 + b'\n{"text": "fine"}\n')
    assert _input_formats.detect(path).kind == "jsonl"
    with pytest.raises(bpeforge.InputError, match="line 1"):
        bpeforge.train(path, text_field="text", vocab_size=260, progress=False)
    tok = bpeforge.train(path, text_field="text", vocab_size=260, on_bad_record="skip", progress=False)
    assert tok.metadata["corpus"]["bad_records"] == 1


@pytest.mark.parametrize("head", [
    '{not json} but prose in braces\nmore text\n',
    '{"a": 1}\nand then ordinary text\n',          # one record, then prose: text
    '{"a": 1}\n[1, 2]\n',                           # an array is not a record
    '"just a string"\n',
    "\n\nblank lines first, then text\n",
])
def test_text_that_merely_looks_like_json_is_text(head, tmp_path) -> None:
    path = tmp_path / "t.txt"
    path.write_text(head * 3, encoding="utf-8")
    assert _input_formats.detect(path).kind == "text"
    bpeforge.train(path, vocab_size=260, progress=False)  # trains: never refused


def test_a_record_cut_by_the_sniff_window_does_not_decide(tmp_path) -> None:
    line = json.dumps({"text": "x" * 1000}) + "\n"
    path = tmp_path / "big.txt"
    path.write_text(line * (2 * _input_formats.SNIFF_BYTES // len(line)), encoding="utf-8")
    assert _input_formats.detect(path).kind == "jsonl"


# ---- Python ------------------------------------------------------------------------


COLUMNAR_KEYS = ("parquet", "parquet_as_txt", "arrow")


def _text_name(key: str) -> dict[str, str]:
    """How a file's text is named: a JSON lines field, or a Parquet/Arrow column."""
    return {"text_column": "text"} if key in COLUMNAR_KEYS else {"text_field": "text"}




@pytest.mark.parametrize("key", ["jsonl", "jsonl_zst", "ndjson_gz", "json_in_txt", "parquet", "parquet_as_txt",
                                 "arrow"])
def test_train_refuses_structured_input_without_text_field(files, key) -> None:
    (name,) = _text_name(key)
    with pytest.raises(ParameterError, match=rf"give {name}=") as e:
        bpeforge.train(files[key], vocab_size=VOCAB, progress=False)
    assert str(files[key]) in str(e.value) and "--text-" not in str(e.value)


@pytest.mark.parametrize("key", ["jsonl", "jsonl_zst", "ndjson_gz", "json_in_txt", "parquet", "parquet_as_txt",
                                 "arrow"])
def test_with_text_field_every_format_gives_the_plain_model(files, plain_model, key) -> None:
    assert bpeforge.train(files[key], **_text_name(key), vocab_size=VOCAB, progress=False) == plain_model


def test_json_lines_as_raw_text_when_asked(files) -> None:
    tok = bpeforge.train(files["jsonl"], separator="\n", vocab_size=VOCAB, progress=False)
    assert (b'"', b':') in tok.merges or any(b'"' in a + b for a, b in tok.merges)  # the JSON syntax itself


def test_encode_file_refuses_and_reads_structured_input(files, plain_model, tmp_path) -> None:
    with pytest.raises(ParameterError, match="give text_field="):
        plain_model.encode_file(files["jsonl_zst"], tmp_path / "ids.txt")
    plain_model.encode_file(files["plain"], tmp_path / "plain.txt")
    for key in ("jsonl_zst", "parquet_as_txt"):
        plain_model.encode_file(files[key], tmp_path / f"{key}.txt", **_text_name(key))
        assert (tmp_path / f"{key}.txt").read_text() == (tmp_path / "plain.txt").read_text()


def test_mixing_columnar_and_line_files_is_refused(files) -> None:
    with pytest.raises(ParameterError, match="either Parquet/Arrow files or line files"):
        bpeforge.train([files["plain"], files["parquet_as_txt"]], text_field="text", vocab_size=VOCAB,
                       progress=False)


# ---- the command line ----------------------------------------------------------------


@pytest.mark.parametrize("key", ["jsonl_zst", "parquet", "json_in_txt"])
def test_cli_train_and_encode_refuse_naming_the_flag(files, plain_model, key, tmp_path) -> None:
    (name,) = _text_name(key)
    flag = "--" + name.replace("_", "-")
    r = bpeforge_cli("train", str(files[key]), "--vocab-size", str(VOCAB), "-o", str(tmp_path / "m.json"))
    assert r.returncode == 1 and flag in r.stderr and f"{name}=" not in r.stderr, r.stderr
    assert not (tmp_path / "m.json").exists()
    plain_model.save(tmp_path / "model.json")
    r = bpeforge_cli("encode", "-m", str(tmp_path / "model.json"), str(files[key]), "-o", str(tmp_path / "ids"))
    assert r.returncode == 1 and flag in r.stderr and f"{name}=" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_every_flag_a_refusal_names_is_a_flag_of_that_command(files, plain_model, tmp_path) -> None:
    """Training can read JSON lines as raw text (``--separator``,
    ``--documents``); encoding cannot, so its refusal names ``--text-field``
    alone, and Python's ``encode_file`` no training parameters."""
    import re

    model = tmp_path / "model.json"
    plain_model.save(model)
    for command, args in (("train", ["--vocab-size", str(VOCAB), "-o", str(tmp_path / "m.json")]),
                          ("encode", ["-m", str(model), "-o", str(tmp_path / "ids")])):
        r = bpeforge_cli(command, str(files["jsonl"]), *args)
        assert r.returncode == 1 and "is JSON lines" in r.stderr, r.stderr
        named = set(re.findall(r"--[a-z][a-z-]+", r.stderr))
        assert "--text-field" in named, r.stderr
        usage = bpeforge_cli(command, "--help").stdout
        assert all(re.search(rf"{flag}\b", usage) for flag in named), (command, named, r.stderr)
        assert ("--separator" in named) == (command == "train"), r.stderr
    with pytest.raises(ParameterError) as e:
        plain_model.encode_file(files["jsonl"], tmp_path / "ids.txt")
    assert "separator" not in str(e.value) and "documents" not in str(e.value), e.value


def test_cli_train_with_text_field_equals_plain(files, plain_model, tmp_path) -> None:
    out = tmp_path / "m.json"
    assert cli.main(["train", str(files["jsonl_zst"]), "--text-field", "text", "--vocab-size", str(VOCAB),
                     "-o", str(out), "-q"]) == 0
    assert bpeforge.load(out) == plain_model


def test_report_reads_parquet_and_json_lines_with_their_names(files, plain_model, tmp_path) -> None:
    pytest.importorskip("matplotlib")
    from bpeforge.report import build_report

    model = tmp_path / "model.json"
    plain_model.save(model)
    for key in ("parquet", "jsonl_zst"):
        r = bpeforge_cli("report", "-m", str(model), "-i", str(files[key]), "-o", str(tmp_path / "rep"))
        assert r.returncode == 1 and "--" + next(iter(_text_name(key))).replace("_", "-") in r.stderr, r.stderr
        assert not (tmp_path / "rep").exists()
    kw = dict(sample=0, curve_points=2, curve_lines=50)
    plain = build_report(plain_model, str(files["plain"]), **kw)
    for key in ("parquet", "jsonl_zst", "parquet_as_txt"):
        rep = build_report(plain_model, str(files[key]), **_text_name(key), **kw)
        assert rep.corpus["sampled_lines"] == plain.corpus["sampled_lines"] == len(TEXTS)
        assert rep.models[0]["bytes_per_token"] == plain.models[0]["bytes_per_token"]
    out = tmp_path / "rep"
    r = bpeforge_cli("report", "-m", str(model), "-i", str(files["parquet"]), "--text-column", "text",
                     "-o", str(out), "--sample", "0", "--curve-points", "2", "--curve-lines", "50")
    assert r.returncode == 0, r.stderr
    assert json.loads((out / "report.json").read_text())["corpus"]["sampled_lines"] == len(TEXTS)


def test_help_names_every_input_format() -> None:
    for command in ("train", "encode", "report"):
        r = bpeforge_cli(command, "--help")
        text = " ".join(r.stdout.split())
        for word in ("JSON lines", "Parquet", "Arrow", ".zst", "--text-field", "--text-column"):
            assert word in text, (command, word)


def test_parquet_progress_names_the_file_and_has_a_total_and_eta(tmp_path) -> None:
    """The live counting line of a Parquet run, as for text files: the file
    being read, its share of the total, and an ETA."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from conftest import _read_slice

    texts = _read_slice(25_000)
    paths = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    for p in paths:
        pq.write_table(pa.table({"text": texts}), p, row_group_size=1000)
    events: list = []
    bpeforge.train(paths, text_column="text", vocab_size=300, progress=events.append)
    live = [e for e in events if e.phase == "counting" and not e.finished]
    assert live, "counting 7 MB of Parquet gave no live event"
    for e in live:
        assert e.total is not None and e.eta is not None and e.total >= e.done
        assert e.info["file"] in map(str, paths) and e.info["files"] == 2
    expected = 2 * sum(len(t.encode("utf-8")) for t in texts)
    assert abs(live[-1].total - expected) / expected < 0.1  # the metadata's estimate of the text bytes
    r = subprocess.run([sys.executable, "-m", "bpeforge", "train", *map(str, paths), "--text-column", "text",
                        "--vocab-size", "300", "--progress", "human", "-o", str(tmp_path / "m.json")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = [x for x in r.stderr.replace("\r", "\n").splitlines() if x.startswith("counting ")]
    assert any("a.parquet (1/2)" in x or "b.parquet (2/2)" in x for x in lines), r.stderr
    assert all("ETA" in x and " / " in x for x in lines)


@pytest.mark.parametrize("key", ["parquet", "arrow", "jsonl_zst"])
def test_the_refusal_lists_the_fields_to_choose_from(files, key) -> None:
    with pytest.raises(ParameterError) as e:
        bpeforge.train(files[key], vocab_size=VOCAB, progress=False)
    msg = str(e.value)
    assert ("string columns: text" in msg) if key != "jsonl_zst" else ("string fields: text, lang" in msg), msg


@pytest.mark.parametrize("suffix", _input_formats.COMPRESSIONS)
def test_every_listed_compression_is_read_by_the_engine_and_in_python(suffix, files, plain_model, tmp_path) -> None:
    """The one list of compressions is the engine's too: a corpus compressed
    each way trains the plain model, and Python reads it (report, sniffing)."""
    import bz2
    import gzip
    import lzma

    def compress(data: bytes) -> bytes:
        if suffix in (".zst", ".zstd"):
            return pytest.importorskip("zstandard").ZstdCompressor().compress(data)
        return {".gz": gzip.compress, ".xz": lzma.compress, ".bz2": bz2.compress}[suffix](data)

    path = tmp_path / f"corpus.txt{suffix}"
    path.write_bytes(compress(files["plain"].read_bytes()))
    assert bpeforge.train(path, vocab_size=VOCAB, progress=False) == plain_model
    from bpeforge._texts import read_texts

    texts, handle = read_texts(path)
    assert list(texts) == TEXTS
    handle.close()
    records = tmp_path / f"records{suffix}"  # JSON lines by content, through the decompressor
    records.write_bytes(compress(files["jsonl"].read_bytes()))
    assert _input_formats.detect(records).kind == "jsonl"
