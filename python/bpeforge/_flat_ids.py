"""The lines of an ``encode --format npy|bin`` output, read back in blocks.

Such an output is one flat array of ids (``.npy``, or raw little-endian
``.bin``) and ``OUTPUT.offsets.npy`` (int64, one per line + 1), so line
``i`` is ``ids[offsets[i]:offsets[i + 1]]``. :func:`flat_blocks` reads both
in order, a block of lines at a time (at most :data:`BLOCK_LINES` lines
and, but for a single longer line, :data:`BLOCK_IDS` ids), so what it holds
does not grow with the file: ``bpeforge decode`` of a file of any size runs
in bounded memory. Without numpy (:mod:`bpeforge._npy`).
"""

from __future__ import annotations

import array
import os
from collections.abc import Iterator
from typing import NamedTuple

from ._npy import ArrayReader, open_npy, open_raw
from .errors import ParameterError

#: Lines per block, and the ids a block holds at most (but for one line longer than that).
BLOCK_LINES = 8192
BLOCK_IDS = 1 << 20


class FlatBlock(NamedTuple):
    """Consecutive lines: the first one's number (from 1), their ids as
    little-endian uint32 and their ``len + 1`` int64 offsets into them,
    from 0 (what ``decode_batch_raw`` takes)."""

    first_line: int
    ids: bytes
    offsets: bytes


def offsets_path(path: str) -> str:
    """The offsets file that goes with the ids file ``path``."""
    return path + ".offsets.npy"


def flat_blocks(path: str, bin_dtype: str) -> Iterator[FlatBlock]:
    """The lines of the ids file ``path`` (``.npy``, or raw ``.bin`` values of
    ``bin_dtype``, the model's id type) and its offsets file, in blocks.

    Checked before the first block: the offsets file exists, starts at 0
    and ends at the number of ids; then, block by block, that the offsets
    never decrease. Anything wrong is a ParameterError naming the file."""
    offsets_file = offsets_path(path)
    if not os.path.exists(offsets_file):
        raise ParameterError(f"{path}: its offsets file {offsets_file} is missing (encode writes both)")
    try:
        ids = open_npy(path, ("<u2", "<u4")) if path.endswith(".npy") else open_raw(path, bin_dtype)
    except (OSError, ValueError) as e:
        raise ParameterError(f"{path}: not an encoded ids file ({e})") from e
    with ids:
        try:
            offsets = open_npy(offsets_file, ("<i8",))
        except (OSError, ValueError) as e:
            raise ParameterError(f"{path}: not an encoded ids file ({e})") from e
        with offsets:
            yield from _blocks(ids, offsets)


def _blocks(ids: ArrayReader, offsets: ArrayReader) -> Iterator[FlatBlock]:
    def misfit(why: str) -> ParameterError:
        return ParameterError(f"{offsets.path}: the offsets do not fit {ids.path} ({ids.count} ids): {why}")

    try:
        if offsets.count == 0:
            raise misfit("it holds no offsets (one per line + 1)")
        if offsets.last() != ids.count:
            raise misfit(f"the last offset is {offsets.last()}")
        start = offsets.read(1)[0]
        if start != 0:
            raise misfit(f"the first offset is {start}, not 0")
        line, left = 1, offsets.count - 1
        while left:
            ends = offsets.read(min(BLOCK_LINES, left))
            left -= len(ends)
            k = 0
            while k < len(ends):
                # A block: lines k..j-1 of ``ends``, up to BLOCK_IDS ids (one line at least).
                j, base = k, start
                while j < len(ends) and (j == k or ends[j] - base <= BLOCK_IDS):
                    if ends[j] < start:
                        raise misfit(f"offset {ends[j]} (line {line + j - k}) is less than the one before it")
                    start = ends[j]
                    j += 1
                data = ids.read_bytes(start - base)
                rebased = array.array("q", [0])
                rebased.extend(e - base for e in ends[k:j])
                yield FlatBlock(line, data if ids.itemsize == 4 else _widen(data), rebased.tobytes())
                line += j - k
                k = j
    except ValueError as e:
        raise ParameterError(f"{ids.path}: not an encoded ids file ({e})") from e


def _widen(data: bytes) -> bytes:
    """Little-endian uint16 values as little-endian uint32 ones."""
    out = bytearray(2 * len(data))
    out[0::4] = data[0::2]
    out[1::4] = data[1::2]
    return bytes(out)
