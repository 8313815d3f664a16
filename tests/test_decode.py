"""``bpeforge decode``, run as a real subprocess: what encode wrote comes
back byte for byte (any bytes, for a bytes-scheme model), ``--errors``
says what to do with bytes that are not UTF-8, and a flat ids file of any
size is decoded in bounded memory."""

from __future__ import annotations

import lzma
import subprocess
import sys
from pathlib import Path

import pytest

import bpeforge

CORPUS = Path(__file__).resolve().parent / "data" / "corpus" / "multi-25k.txt.xz"
FORMATS = ["ids", "npy", "bin"]
#: A child process running the command line, then printing its peak resident memory (kB) to stderr.
MEASURED = ("import sys\nfrom bpeforge import cli\nrc = cli.main(sys.argv[1:])\n"
            "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0], file=sys.stderr)\n"
            "sys.exit(rc)")


def bpeforge_cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "bpeforge", *args], capture_output=True, timeout=300)


@pytest.fixture(scope="module")
def corpus_lines() -> list[bytes]:
    return lzma.decompress(CORPUS.read_bytes()).split(b"\n")[:-1]


@pytest.fixture(scope="module")
def byte_model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("model") / "bytes.json"
    bpeforge.train(bpeforge.sample_corpus(), vocab_size=1000, progress=False).save(path)
    return path


def _dirty(lines: list[bytes]) -> bytes:
    """Real lines with bytes that are not UTF-8 among them: stray bytes,
    a character cut at the end of a line, an encoded surrogate, an overlong
    form, Latin-1 text, and a line of every byte but the newline."""
    bad = [b"\xff", b"\xe2\x82", b"\xed\xa0\x80", b"\xc0\xaf", "café".encode("latin-1"), bytes(range(256)).replace(b"\n", b"")]
    out = []
    for k, line in enumerate(lines[:3000]):
        out.append(line + bad[k % len(bad)] if k % 7 == 3 else line)
    return b"".join(x + b"\n" for x in out)


def _round_trip(model: Path, src: Path, fmt: str, tmp_path: Path, *decode_args: str) -> subprocess.CompletedProcess[bytes]:
    ids = tmp_path / f"{src.stem}.{fmt}"
    enc = bpeforge_cli("encode", "-m", str(model), str(src), "--format", fmt, "-o", str(ids), "-q")
    assert enc.returncode == 0, enc.stderr
    return bpeforge_cli("decode", "-m", str(model), str(ids), *decode_args)


@pytest.mark.parametrize("fmt", FORMATS)
def test_bytes_scheme_round_trip_is_byte_exact_for_any_bytes(byte_model, corpus_lines, tmp_path, fmt) -> None:
    """encode -> decode gives back the input's bytes, invalid UTF-8 included
    (a bytes-scheme model encodes any bytes), to stdout and to a file."""
    for name, data in (("real.txt", b"".join(x + b"\n" for x in corpus_lines[:3000])), ("dirty.txt", _dirty(corpus_lines))):
        src = tmp_path / name
        src.write_bytes(data)
        out = _round_trip(byte_model, src, fmt, tmp_path)
        assert out.returncode == 0, out.stderr
        assert out.stdout == data, name
        back = tmp_path / f"back-{name}"
        r = bpeforge_cli("decode", "-m", str(byte_model), str(tmp_path / f"{src.stem}.{fmt}"), "-o", str(back))
        assert r.returncode == 0 and back.read_bytes() == data, r.stderr


@pytest.mark.parametrize("fmt", FORMATS)
def test_errors_replace_and_strict(byte_model, corpus_lines, tmp_path, fmt) -> None:
    data = _dirty(corpus_lines)
    src = tmp_path / "dirty.txt"
    src.write_bytes(data)
    replaced = _round_trip(byte_model, src, fmt, tmp_path, "--errors", "replace")
    assert replaced.returncode == 0, replaced.stderr
    assert replaced.stdout == data.decode("utf-8", "replace").encode("utf-8")
    first_bad = next(k for k, line in enumerate(data.split(b"\n"), 1) if not _is_utf8(line))
    out = tmp_path / "strict.txt"
    strict = _round_trip(byte_model, src, fmt, tmp_path, "--errors", "strict", "-o", str(out))
    assert strict.returncode == 1 and not out.exists()
    message = strict.stderr.decode()
    assert f"line {first_bad}: the ids decode to bytes that are not UTF-8" in message, message
    assert "--errors bytes" in message and "Traceback" not in message
    clean = tmp_path / "clean.txt"
    clean.write_bytes(b"".join(x + b"\n" for x in corpus_lines[:500]))
    ok = _round_trip(byte_model, clean, fmt, tmp_path, "--errors", "strict")
    assert ok.returncode == 0 and ok.stdout == clean.read_bytes(), ok.stderr


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def test_line_ends_are_cut_as_training_cuts_them(byte_model, tmp_path) -> None:
    """What the encoding guide says: a line ends at ``\\n``, a ``\\r`` just
    before it goes with it, a last line without one is a line, and decode
    ends every line with ``\\n``; any other ``\\r`` is text."""
    src = tmp_path / "crlf.txt"
    src.write_bytes(b"first\r\nsecond\r\nin\rside\r\n\r\nlast without end")
    out = _round_trip(byte_model, src, "ids", tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout == b"first\nsecond\nin\rside\n\nlast without end\n"


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak memory from /proc (Linux)")
@pytest.mark.parametrize("fmt", ["npy", "bin"])
def test_flat_ids_decode_in_bounded_memory(byte_model, tmp_path, fmt) -> None:
    """Decoding 8 copies of the sample's ids takes no more memory than one
    copy (a block of lines at a time), and gives 8 copies of its exact
    in-memory decode."""
    np = pytest.importorskip("numpy")
    tok = bpeforge.load(byte_model)
    one = tmp_path / "one.npy"
    tok.encode_file(CORPUS, one, format="npy")
    ids, offsets = np.load(one), np.load(str(one) + ".offsets.npy")
    expected = b"".join(tok.decode_bytes(ids[a:b]) + b"\n" for a, b in zip(offsets[:-1], offsets[1:]))
    peaks, outputs = [], []
    for copies in (1, 8):
        path = tmp_path / f"x{copies}.{fmt}"
        tiled = np.tile(ids, copies)
        if fmt == "npy":
            np.save(path, tiled)
        else:
            tiled.tofile(path)
        np.save(str(path) + ".offsets.npy",
                np.concatenate([offsets[:1]] + [offsets[1:] + k * len(ids) for k in range(copies)]))
        out = tmp_path / f"x{copies}.txt"
        r = subprocess.run([sys.executable, "-c", MEASURED, "decode", "-m", str(byte_model), str(path), "-o", str(out)],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        peaks.append(int(r.stderr.split()[-1]) * 1024)
        outputs.append(out.read_bytes())
    assert outputs[0] == expected and outputs[1] == expected * 8
    grown = peaks[1] - peaks[0]
    ids_bytes = 7 * ids.nbytes  # what the larger file holds more
    assert grown < 16 << 20, (f"decoding {ids_bytes / 1e6:.0f} MB more ids took {grown / 1e6:.0f} MB more memory "
                              f"(peaks {peaks[0] / 1e6:.0f} and {peaks[1] / 1e6:.0f} MB)")


def test_a_bad_ids_or_offsets_file_is_named(byte_model, tmp_path) -> None:
    np = pytest.importorskip("numpy")
    tok = bpeforge.load(byte_model)
    path = tmp_path / "ids.npy"
    tok.encode_file(bpeforge.sample_corpus(), path, format="npy")
    offsets = np.load(str(path) + ".offsets.npy")
    for why, bad in (("the last offset", offsets[:-1]), ("the first offset", np.concatenate([[1], offsets[1:]])),
                     ("less than the one before it", np.concatenate([offsets[:5], offsets[3:4], offsets[5:]]))):
        np.save(str(path) + ".offsets.npy", bad)
        r = bpeforge_cli("decode", "-m", str(byte_model), str(path), "-o", str(tmp_path / "out.txt"))
        message = r.stderr.decode()
        assert r.returncode == 1 and "offsets do not fit" in message and why in message, message
        assert not (tmp_path / "out.txt").exists()
    np.save(str(path) + ".offsets.npy", offsets)
    ids = np.load(path)
    ids[3] = tok.vocab_size
    np.save(path, ids)
    r = bpeforge_cli("decode", "-m", str(byte_model), str(path), "-o", str(tmp_path / "out.txt"))
    message = r.stderr.decode()
    assert r.returncode == 1 and f"{path}, lines 1-" in message and "outside the vocabulary" in message, message
    assert not (tmp_path / "out.txt").exists()
    (tmp_path / "ids.npy.offsets.npy").unlink()
    r = bpeforge_cli("decode", "-m", str(byte_model), str(path))
    assert r.returncode == 1 and b"offsets file" in r.stderr and b"is missing" in r.stderr
