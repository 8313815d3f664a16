"""bpeforge._io: the one text opener and the one atomic writer of the Python package."""

from __future__ import annotations

import bz2
import gzip
import lzma

import pytest

pytest.importorskip("bpeforge", reason="bpeforge is not built/installed (maturin develop)")

from bpeforge._io import open_text, write_atomic  # noqa: E402
from bpeforge.errors import ParameterError  # noqa: E402

TEXT = "héllo\r\nwörld\n中文\n"


@pytest.mark.parametrize("ext", ["", ".gz", ".xz", ".bz2", ".zst"])
def test_open_text_reads_every_compression(tmp_path, ext) -> None:
    data = TEXT.encode("utf-8")
    if ext == ".zst":
        zstd = pytest.importorskip("zstandard")
        data = zstd.ZstdCompressor().compress(data)
    else:
        data = {"": lambda d: d, ".gz": gzip.compress, ".xz": lzma.compress, ".bz2": bz2.compress}[ext](data)
    p = tmp_path / f"t.txt{ext}"
    p.write_bytes(data)
    with open_text(p) as f:
        assert list(f) == ["héllo\r\n", "wörld\n", "中文\n"]  # line ends untranslated, as the engine reads


def test_open_text_strict_and_replace(tmp_path) -> None:
    p = tmp_path / "bad.txt"
    p.write_bytes(b"ok\n\xff\n")
    with open_text(p) as f, pytest.raises(UnicodeDecodeError):
        f.read()
    with open_text(p, errors="replace") as f:
        assert f.read() == "ok\n\ufffd\n"


def test_write_atomic_bytes_str_and_callback(tmp_path) -> None:
    p = tmp_path / "out.txt"
    write_atomic(p, b"one\n")
    assert p.read_bytes() == b"one\n"
    write_atomic(p, "twö\n")
    assert p.read_text(encoding="utf-8") == "twö\n"
    write_atomic(p, lambda f: f.write("three\n"), text=True)
    assert p.read_text(encoding="utf-8") == "three\n"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["out.txt"]


def test_write_atomic_failure_keeps_the_old_file(tmp_path) -> None:
    p = tmp_path / "out.txt"
    p.write_text("old\n")

    def fail(f) -> None:
        f.write("partial")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        write_atomic(p, fail, text=True)
    assert p.read_text() == "old\n"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["out.txt"]  # the temporary file is gone
    with pytest.raises(ParameterError, match="does not exist"):
        write_atomic(tmp_path / "no" / "dir" / "x.txt", b"x")
