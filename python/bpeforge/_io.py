"""Reading text files and writing files atomically: the one place in the
Python package that does either.

* :func:`open_text` opens a corpus or a line file, plain or compressed
  (the suffixes of :data:`COMPRESSIONS`, which the
  engine's own reader, crates/core/src/input/mod.rs, understands too), so a file
  the trainer accepts is a file the CLI and the report accept.
* :func:`check_output` refuses, before any work, an output that could not
  be written or that is one of the inputs (by any path spelling or link);
  :func:`check_side_file` refuses to replace a file beside an export that
  bpeforge would not write as it is.
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
from collections.abc import Callable, Iterable
from typing import IO, Any, Union

from ._extras import require
from . import _engine
from .errors import OutputError

PathLike = Union[str, "os.PathLike[str]"]



def open_text(path: PathLike, *, errors: str = "strict") -> IO[str]:
    """``path`` opened for reading UTF-8 text, decompressed by its extension.

    Lines keep their ``"\\n"`` (and any ``"\\r"`` before it): the file's
    bytes are not translated, as in the engine. ``errors`` is the decoding
    policy (``"strict"`` raises UnicodeDecodeError, which callers turn into an
    error naming the line; ``"replace"`` for best-effort reading)."""
    return io.TextIOWrapper(open_binary(path), encoding="utf-8", errors=errors, newline="\n")


#: The compression suffixes every reader understands, the engine's list
#: (crates/core/src/input/mod.rs ``COMPRESSIONS``): the files :func:`open_binary`
#: decompresses are exactly the ones the engine does.
COMPRESSIONS: tuple[str, ...] = _engine.COMPRESSIONS


def compression(path: PathLike) -> str | None:
    """The compression suffix of ``path`` (lower-cased), or None."""
    low = os.fspath(path).lower()
    return next((c for c in COMPRESSIONS if low.endswith(c)), None)


def open_binary(path: PathLike) -> IO[bytes]:
    """``path`` opened for reading bytes, decompressed by its suffix."""
    path = os.fspath(path)
    comp = compression(path)
    return open(path, "rb") if comp is None else _OPENERS[comp](path)


def _open_zstd(path: str) -> IO[bytes]:
    zstandard = require("zstandard", f"reading {path} (.zst)")
    raw = open(path, "rb")
    try:
        return zstandard.ZstdDecompressor().stream_reader(raw, closefd=True)
    except BaseException:
        raw.close()
        raise


#: The opener of each compression suffix (:data:`COMPRESSIONS`,
#: the engine's list; .zst/.zstd need the optional zstandard package).
_OPENERS: dict[str, Callable[[str], Any]] = {
    ".gz": lambda path: gzip.open(path, "rb"),
    ".xz": lambda path: lzma.open(path, "rb"),
    ".bz2": lambda path: bz2.open(path, "rb"),
    ".zst": _open_zstd,
    ".zstd": _open_zstd,
}


def same_file(a: PathLike, b: PathLike) -> bool:
    """Whether ``a`` and ``b`` are one file, however spelled (relative,
    ``..``, symlinks, hard links): ``os.path.samefile`` when both exist, else
    their resolved paths."""
    a, b = os.fspath(a), os.fspath(b)
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def check_output(path: PathLike, what: str = "output", *, inputs: Iterable[PathLike] = ()) -> str:
    """Fails now, with an OutputError naming ``path``, if a file could not be
    written there later: its folder is missing or not writable, ``path``
    is a folder, or it is one of ``inputs`` (the same file by any path
    spelling or link: an output never replaces an input). Called before any
    work starts, so that hours of training are never thrown away at the end.
    Returns the path as a string."""
    path = os.fspath(path)
    for source in inputs:
        if same_file(path, source):
            raise OutputError(f"cannot write {what} {path}: it is the input {os.fspath(source)}; "
                              "an output never replaces an input, so give another output name")
    if os.path.isdir(path):
        raise OutputError(f"cannot write {what} {path}: it is a folder; give a file name")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise OutputError(f"cannot write {what} {path}: folder {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write {what} {path}: folder {directory} is not writable")
    return path


def check_side_file(path: PathLike, ours: Callable[[bytes], bool], overwrite: bool, *,
                    flag: str = "overwrite=True") -> None:
    """A file written beside an export (``tokenizer_config.json``...) may
    replace an existing file only if ``ours(existing bytes)`` says bpeforge
    wrote it (for this model or another) or the caller said ``overwrite``:
    anything else may be the user's own file, and is refused with an
    OutputError naming it and ``flag`` (the CLI's ``--force``)."""
    path = os.fspath(path)
    if overwrite or not os.path.lexists(path):
        return
    try:
        with open(path, "rb") as f:
            mine = ours(f.read(1 << 20))
    except OSError:
        mine = False
    if not mine:
        raise OutputError(f"{path} exists and is not a file this export wrote (your own file?): "
                          f"nothing was written; pass {flag} to replace it, or export elsewhere")


def write_atomic(path: PathLike, data: bytes | str | Callable[[IO[Any]], None], *, text: bool = False) -> None:
    """Write ``path`` atomically.

    ``data`` is the whole content (``bytes``, or ``str`` written as UTF-8), or
    a callback that writes to the open temporary file: a binary file, or a
    text file (UTF-8, ``"\\n"`` line ends) when ``text=True``. Whatever the
    callback raises propagates after the temporary file is removed, and
    ``path`` is untouched. A missing directory or an unwritable one is an
    OutputError naming ``path`` (never the temporary file)."""
    path = check_output(path)
    directory = os.path.dirname(os.path.abspath(path))
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
        try:
            os.replace(tmp, path)
        except OSError as e:
            raise OutputError(f"cannot write {path}: {e.strerror or e}") from e
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
            raise OutputError(f"cannot write {path}: {e.strerror or e}") from e


def strip_eol(line: str) -> str:
    """``line`` without its ``\n`` or ``\r\n`` end (as the engine cuts lines)."""
    if line.endswith("\n"):
        line = line[:-1]
        if line.endswith("\r"):
            line = line[:-1]
    return line
