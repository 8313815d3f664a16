"""Reading the ``.npy`` files bpeforge writes, without numpy.

``bpeforge encode --format npy|bin`` writes 1-D little-endian arrays (ids as
uint16 or uint32, offsets as int64) in the NPY format (version 1.0); this
module reads them back as :class:`array.array`, so ``bpeforge decode``
needs nothing beyond bpeforge itself, as ``encode`` does. Anything else
(another dtype, several dimensions, Fortran order, pickled objects) is
refused with a ValueError saying what was found.
"""

from __future__ import annotations

import array
import ast
import sys

_MAGIC = b"\x93NUMPY"
#: NPY dtype -> array typecode of the same width.
_TYPECODES = {"<u2": "H", "<u4": "I", "<i8": "q"}


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


def read_npy(path: str, dtypes: tuple[str, ...]) -> array.array:
    """The 1-D array in the NPY file ``path``, whose dtype must be one of ``dtypes``."""
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(_MAGIC) or len(data) < 10:
        raise ValueError(f"{path}: not an NPY file")
    major = data[6]
    if major == 1:
        n, start = int.from_bytes(data[8:10], "little"), 10
    elif major in (2, 3):
        n, start = int.from_bytes(data[8:12], "little"), 12
    else:
        raise ValueError(f"{path}: NPY version {major} is not known")
    try:
        header = ast.literal_eval(data[start:start + n].decode("latin-1"))
    except (ValueError, SyntaxError) as e:
        raise ValueError(f"{path}: unreadable NPY header") from e
    if not isinstance(header, dict) or header.get("fortran_order") or not isinstance(header.get("shape"), tuple) \
            or len(header["shape"]) != 1:
        raise ValueError(f"{path}: expected a 1-D array, found {header!r}")
    descr = header.get("descr")
    if descr not in dtypes:
        raise ValueError(f"{path}: dtype {descr!r}, expected {' or '.join(dtypes)}")
    out = from_bytes(data[start + n:], descr, path)
    if len(out) != header["shape"][0]:
        raise ValueError(f"{path}: holds {len(out)} values, its header says {header['shape'][0]}")
    return out
