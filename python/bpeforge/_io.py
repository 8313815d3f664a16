"""Reading text files and writing files atomically: the one place in the
Python package that does either.

* :func:`open_text` opens a corpus or a line file, plain or compressed
  (``.gz``, ``.xz``, ``.bz2``, ``.zst``), the extensions the engine's own reader
  (crates/core/src/input.rs) understands, so a file the trainer accepts is a
  file the CLI and the report accept.
* :func:`write_atomic` writes a file through a hidden temporary file in the
  same directory (``.bpeforge-*.tmp``, the engine's naming for its saves) and
  renames it over the target, so a failed or interrupted write leaves any
  earlier file intact.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import secrets
from collections.abc import Callable
from typing import IO, Any, Union

from .errors import ParameterError

PathLike = Union[str, "os.PathLike[str]"]

#: Compressed extensions and the standard-library opener for each (.zst needs
#: the optional zstandard package: see _open_zstd).
_OPENERS: dict[str, Callable[..., IO[str]]] = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}


def open_text(path: PathLike, *, errors: str = "strict") -> IO[str]:
    """``path`` opened for reading UTF-8 text, decompressed by its extension.

    Lines keep their ``"\\n"`` (and any ``"\\r"`` before it): the file's
    bytes are not translated, as in the engine. ``errors`` is the decoding
    policy (``"strict"`` raises UnicodeDecodeError, which callers turn into an
    error naming the line; ``"replace"`` for best-effort reading)."""
    path = os.fspath(path)
    low = path.lower()
    if low.endswith((".zst", ".zstd")):
        return _open_zstd(path, errors)
    for ext, opener in _OPENERS.items():
        if low.endswith(ext):
            return opener(path, "rt", encoding="utf-8", errors=errors, newline="\n")
    return open(path, encoding="utf-8", errors=errors, newline="\n")


def _open_zstd(path: str, errors: str) -> IO[str]:
    try:
        import zstandard
    except ImportError as e:
        raise ParameterError(f"{path}: reading .zst files needs the zstandard package (pip install zstandard)") from e
    raw = open(path, "rb")
    try:
        stream = zstandard.ZstdDecompressor().stream_reader(raw, closefd=True)
    except BaseException:
        raw.close()
        raise
    return io.TextIOWrapper(stream, encoding="utf-8", errors=errors, newline="\n")


def write_atomic(path: PathLike, data: bytes | str | Callable[[IO[Any]], None], *, text: bool = False) -> None:
    """Write ``path`` atomically.

    ``data`` is the whole content (``bytes``, or ``str`` written as UTF-8), or
    a callback that writes to the open temporary file: a binary file, or a
    text file (UTF-8, ``"\\n"`` line ends) when ``text=True``. Whatever the
    callback raises propagates after the temporary file is removed, and
    ``path`` is untouched. A missing directory or an unwritable one is a
    ParameterError naming ``path``."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise ParameterError(f"cannot write {path}: directory {directory} does not exist")
    fd, tmp = _create_temp(path, directory)
    try:
        if callable(data) and text:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
                data(f)
        else:
            with os.fdopen(fd, "wb") as b:
                if callable(data):
                    data(b)
                else:
                    b.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _create_temp(path: str, directory: str) -> tuple[int, str]:
    """A new hidden file in ``directory``, created with the permissions an
    ordinary write would give (0666 less the umask; tempfile.mkstemp would
    make it 0600, and the rename would keep that)."""
    while True:
        tmp = os.path.join(directory, f".bpeforge-{secrets.token_hex(8)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666), tmp
        except FileExistsError:
            continue
        except OSError as e:
            raise ParameterError(f"cannot write {path}: {e.strerror or e}") from e
