"""Every CLI command reads its text inputs plain or compressed, the same way:
every suffix of the engine's one list (``_native.COMPRESSIONS``: .gz, .xz,
.bz2, .zst, .zstd; the documentation promises them everywhere)."""

from __future__ import annotations

import bz2
import gzip
import lzma
from pathlib import Path

import pytest

import bpeforge
from bpeforge import _io, _native, cli

LINES = bpeforge.sample_corpus().read_text(encoding="utf-8").splitlines()[:400]


def _compress(path: Path, data: bytes, kind: str) -> Path:
    out = Path(f"{path}.{kind}")
    if kind == "gz":
        out.write_bytes(gzip.compress(data))
    elif kind == "xz":
        out.write_bytes(lzma.compress(data))
    elif kind == "bz2":
        out.write_bytes(bz2.compress(data))
    else:
        zstandard = pytest.importorskip("zstandard", reason="zstandard (a test extra) writes the .zst input")
        out.write_bytes(zstandard.ZstdCompressor().compress(data))
    return out


def test_python_opens_every_suffix_the_engine_reads() -> None:
    assert set(_io._OPENERS) == set(_native.COMPRESSIONS) == set(bpeforge._input_formats.COMPRESSIONS)


@pytest.mark.parametrize("kind", [c.lstrip(".") for c in _native.COMPRESSIONS])
def test_every_command_reads_compressed_input(kind, tmp_path, capsys) -> None:
    text = ("\n".join(LINES) + "\n").encode("utf-8")
    plain = tmp_path / "corpus.txt"
    plain.write_bytes(text)
    packed = _compress(plain, text, kind)

    # train: the same model from the compressed file as from the plain one
    assert cli.main(["train", str(packed), "--vocab-size", "400", "-o", str(tmp_path / "m.json"), "-q"]) == 0
    assert cli.main(["train", str(plain), "--vocab-size", "400", "-o", str(tmp_path / "p.json"), "-q"]) == 0
    model = bpeforge.load(tmp_path / "m.json")
    assert model == bpeforge.load(tmp_path / "p.json")

    # encode: to stdout and to a file
    capsys.readouterr()
    assert cli.main(["encode", "-m", str(tmp_path / "m.json"), str(packed)]) == 0
    ids_text = capsys.readouterr().out
    assert [list(map(int, line.split())) for line in ids_text.splitlines()] == model.encode_batch(LINES)
    assert cli.main(["encode", "-m", str(tmp_path / "m.json"), str(packed), "-o", str(tmp_path / "ids.txt"), "-q"]) == 0
    assert (tmp_path / "ids.txt").read_text() == ids_text

    # decode: a compressed ids file
    ids_packed = _compress(tmp_path / "ids.txt", ids_text.encode(), kind)
    assert cli.main(["decode", "-m", str(tmp_path / "m.json"), str(ids_packed), "-o", str(tmp_path / "back.txt")]) == 0
    assert (tmp_path / "back.txt").read_bytes() == text

    # report: a compressed corpus
    pytest.importorskip("matplotlib", reason="the report draws with matplotlib (the plot extra)")
    assert cli.main(["report", "-m", str(tmp_path / "m.json"), "-i", str(packed), "-o", str(tmp_path / "rep"),
                     "--sample", "200", "--curve-lines", "100", "--curve-points", "3", "--quiet"]) == 0
    assert (tmp_path / "rep" / "index.html").exists() and (tmp_path / "rep" / "report.json").exists()
