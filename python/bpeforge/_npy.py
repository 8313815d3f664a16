"""Reading the ``.npy`` files bpeforge writes, without numpy, in pieces.

``bpeforge encode --format npy|bin`` writes 1-D little-endian arrays (ids as
uint16 or uint32, offsets as int64) in the NPY format (version 1.0); this
module reads them back as :class:`array.array`, a slice at a time
(:class:`ArrayReader`), so ``bpeforge decode`` needs nothing beyond
bpeforge itself, as ``encode`` does, and holds a few blocks of a file of any
size. Anything else (another dtype, several dimensions, Fortran order,
pickled objects) is refused with a ValueError saying what was found.
"""

from __future__ import annotations

import array
import ast
import os
import sys
from typing import IO

_MAGIC = b"\x93NUMPY"
#: NPY dtype -> array typecode of the same width.
_TYPECODES = {"<u2": "H", "<u4": "I", "<i8": "q"}
#: The longest header read (numpy writes them padded to 64 or 128 bytes).
_MAX_HEADER = 1 << 16


def from_bytes(data: bytes, dtype: str, path: str) -> array.array:
    """Raw little-endian integers of ``dtype`` as an array."""
    code = _TYPECODES[dtype]
    out = array.array(code)
    if out.itemsize != int(dtype[2:]) or len(data) % out.itemsize:
        raise ValueError(f"{path}: {len(data)} bytes are not a whole number of {dtype} values")
    out.frombytes(data)
    if sys.byteorder == "big":  # pragma: no cover - little-endian everywhere we test
        out.byteswap()
    return out


class ArrayReader:
    """The values of a 1-D array file, read in order, a slice at a time:
    an NPY file (``open_npy``) or raw little-endian values (``open_raw``).

    ``dtype`` and ``count`` say what the file holds; :meth:`read` gives the
    next values, :meth:`last` the final one (without moving). Close it (or
    use ``with``)."""

    def __init__(self, path: str, handle: IO[bytes], dtype: str, count: int, start: int) -> None:
        self.path, self.dtype, self.count = path, dtype, count
        self.itemsize = int(dtype[2:])
        self._handle, self._start, self._done = handle, start, 0

    def read_bytes(self, n: int) -> bytes:
        """The next ``n`` values' raw little-endian bytes."""
        if n > self.count - self._done:
            raise ValueError(f"{self.path}: asked for values past its {self.count}")
        data = self._handle.read(n * self.itemsize)
        if len(data) != n * self.itemsize:
            raise ValueError(f"{self.path}: ends after {self._done + len(data) // self.itemsize} values, "
                             f"its header says {self.count}")
        self._done += n
        return data

    def read(self, n: int) -> array.array:
        """The next ``n`` values."""
        return from_bytes(self.read_bytes(n), self.dtype, self.path)

    def last(self) -> int:
        """The final value (the file must hold one)."""
        if self.count == 0:
            raise ValueError(f"{self.path}: holds no values")
        here = self._handle.tell()
        self._handle.seek(self._start + (self.count - 1) * self.itemsize)
        data = self._handle.read(self.itemsize)
        self._handle.seek(here)
        return from_bytes(data, self.dtype, self.path)[0]

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> ArrayReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_npy(path: str, dtypes: tuple[str, ...]) -> ArrayReader:
    """The 1-D array in the NPY file ``path``, whose dtype must be one of
    ``dtypes``, opened for reading; its size must match its header."""
    f = open(path, "rb")
    try:
        head = f.read(12)
        if not head.startswith(_MAGIC) or len(head) < 10:
            raise ValueError(f"{path}: not an NPY file")
        major = head[6]
        if major == 1:
            n, start = int.from_bytes(head[8:10], "little"), 10
        elif major in (2, 3):
            n, start = int.from_bytes(head[8:12], "little"), 12
        else:
            raise ValueError(f"{path}: NPY version {major} is not known")
        if n > _MAX_HEADER:
            raise ValueError(f"{path}: unreadable NPY header ({n} bytes)")
        f.seek(start)
        try:
            header = ast.literal_eval(f.read(n).decode("latin-1"))
        except (ValueError, SyntaxError) as e:
            raise ValueError(f"{path}: unreadable NPY header") from e
        if not isinstance(header, dict) or header.get("fortran_order") or not isinstance(header.get("shape"), tuple) \
                or len(header["shape"]) != 1 or not isinstance(header["shape"][0], int):
            raise ValueError(f"{path}: expected a 1-D array, found {header!r}")
        descr = header.get("descr")
        if descr not in dtypes:
            raise ValueError(f"{path}: dtype {descr!r}, expected {' or '.join(dtypes)}")
        data_start = start + n
        held = os.fstat(f.fileno()).st_size - data_start
        count, itemsize = header["shape"][0], int(descr[2:])
        if held != count * itemsize:
            raise ValueError(f"{path}: holds {held} bytes of values, its header says {count} {descr} values "
                             f"({count * itemsize} bytes)")
        f.seek(data_start)
        return ArrayReader(path, f, descr, count, data_start)
    except BaseException:
        f.close()
        raise


def open_raw(path: str, dtype: str) -> ArrayReader:
    """The raw little-endian ``dtype`` values of the file ``path`` (a
    ``.bin`` ids file), opened for reading."""
    f = open(path, "rb")
    try:
        size, itemsize = os.fstat(f.fileno()).st_size, int(dtype[2:])
        if size % itemsize:
            raise ValueError(f"{path}: {size} bytes are not a whole number of {dtype} values")
        return ArrayReader(path, f, dtype, size // itemsize, 0)
    except BaseException:
        f.close()
        raise

