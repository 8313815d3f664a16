"""Shards of a distributed run (:mod:`bpeforge.distributed`): plain files cut
into byte ranges at line ends or grouped up to a size, and a byte range's
lines copied out. Runs on the workers (one planning task) and in tests."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

from ._input_formats import compression, is_columnar
#: Default shard size: 64 MiB of plain text per task.
DEFAULT_SHARD_BYTES = 64 << 20


def _compressed(path: str) -> bool:
    return compression(path) is not None


def plan_shards(
    paths: Sequence[str], shard_bytes: int = DEFAULT_SHARD_BYTES, *, split: bool = True, group: bool = False,
    files: bool = False, lines: bool = False,
) -> list[dict[str, Any]]:
    """The shards of ``paths``, in input order: a list of
    ``{"paths": [...], "byte_range": [start, end] | None, "bytes": size}``.

    Plain files larger than ``shard_bytes`` become byte ranges (when
    ``split``); compressed files, directories and paths that cannot be
    stat'ed stay whole (the task that reads them reports the problem, naming
    the file). With ``group``, consecutive whole files are packed into shards
    of about ``shard_bytes``. With ``files``, each shard also lists the
    positions of its paths in ``paths`` (``"files"``: which language file or
    tag is theirs); with ``lines``, each byte range also says how many lines
    of its file come before it (``"lines_before"``: the language tags it
    skips), counted in one pass over each split file. Runs where the files
    are: on a worker.
    """
    shards: list[dict[str, Any]] = []
    group_paths: list[str] = []
    group_files: list[int] = []
    group_size = 0

    def add(shard: dict[str, Any], indices: list[int]) -> None:
        shards.append(dict(shard, files=indices) if files else shard)

    def flush() -> None:
        nonlocal group_paths, group_files, group_size
        if group_paths:
            add({"paths": group_paths, "byte_range": None, "bytes": group_size}, group_files)
        group_paths, group_files, group_size = [], [], 0

    for index, path in enumerate(paths):
        try:
            st = os.stat(path)
            size = st.st_size if os.path.isfile(path) else None
        except OSError:
            size = None
        if size is None:
            flush()
            add({"paths": [path], "byte_range": None, "bytes": 0}, [index])
            continue
        if split and size > shard_bytes and not _compressed(path) and not is_columnar(path):
            flush()
            n = math.ceil(size / shard_bytes)
            cuts = [size * i // n for i in range(n + 1)]
            before = _lines_before(path, cuts[:-1]) if lines else None
            for k, (a, b) in enumerate(zip(cuts, cuts[1:])):
                shard = {"paths": [path], "byte_range": [a, b], "bytes": b - a}
                add(dict(shard, lines_before=before[k]) if before is not None else shard, [index])
            continue
        if not group:
            add({"paths": [path], "byte_range": None, "bytes": size}, [index])
            continue
        if group_paths and group_size + size > shard_bytes:
            flush()
        group_paths.append(path)
        group_files.append(index)
        group_size += size
    flush()
    return shards


def _lines_before(path: str, cuts: list[int]) -> list[int]:
    """For each byte offset in ``cuts`` (ascending), how many lines of
    ``path`` start before it: the lines of the byte ranges before that one
    (a range holds the lines that start in it; see :func:`_copy_lines`).
    A line starts at 0 and after every newline, so for a cut ``a > 0`` that
    is one more than the newlines in bytes ``[0, a - 1)``."""
    out = []
    newlines = pos = 0
    with open(path, "rb") as f:
        for a in cuts:
            if a == 0:
                out.append(0)
                continue
            while pos < a - 1:
                block = f.read(min(a - 1 - pos, 1 << 22))
                if not block:
                    break
                newlines += block.count(b"\n")
                pos += len(block)
            out.append(1 + newlines)
    return out


def _copy_lines(src: str, byte_range: tuple[int, int], dst: str) -> None:
    """Copies the lines of ``src`` that start in ``[start, end)`` to ``dst``:
    the same lines the engine's byte-range reader sees."""
    start, end = byte_range
    with open(src, "rb") as f, open(dst, "wb") as out:
        pos = start
        if start > 0:
            # The line holding byte start-1 belongs to the previous shard.
            f.seek(start - 1)
            pos = start - 1 + len(f.readline())
        if pos >= end:
            return
        f.seek(pos)
        left = end - pos
        last = b"\n"
        while left > 0:
            block = f.read(min(left, 1 << 20))
            if not block:
                return
            out.write(block)
            last = block[-1:]
            left -= len(block)
        if last != b"\n":
            out.write(f.readline())  # the rest of the last line that starts in the range
