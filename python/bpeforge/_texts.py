"""A file's texts in Python, read as the engine reads them: text lines,
the ``text_field`` of each JSON line, or the text column of a Parquet/Arrow
file (what the file is: :func:`bpeforge._input_formats.plan`). Used by the
report, which measures texts in Python."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

from . import _input_formats
from ._arrow import column_texts
from ._io import PathLike, open_text, strip_eol
from .errors import InputError


def read_texts(path: PathLike, text_field: str | None = None, *, errors: str = "strict") -> tuple[Iterator[str], Any]:
    """The texts of one input file, in Python, read as the engine reads it
    (what the file is: :func:`bpeforge._input_formats.plan`, which refuses a
    structured file without ``text_field``): text lines (without their line
    end), the ``text_field`` of each JSON line (a dotted path reaches nested
    fields; a blank line is an empty text), or the ``text_field`` column of
    a Parquet/Arrow file. Returns ``(texts, handle)``; close ``handle``
    (None for columns) when done."""
    path = os.fspath(path)
    kind = _input_formats.plan([path], text_field=text_field)
    if kind == "columnar":
        assert text_field is not None  # plan() refuses columns without it

        return column_texts(path, text_field), None
    handle = open_text(path, errors=errors)
    lines = (strip_eol(x) for x in handle)
    if text_field is None:
        return lines, handle
    return _json_texts(lines, path, text_field), handle


def _json_texts(lines: Iterator[str], path: str, text_field: str) -> Iterator[str]:
    keys = text_field.split(".")
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            yield ""
            continue
        try:
            value: Any = json.loads(line)
        except ValueError as e:
            raise InputError(f"{path}, line {lineno}: not a JSON record ({e})") from None
        for key in keys:
            if not isinstance(value, dict) or key not in value:
                raise InputError(f"{path}, line {lineno}: no field {text_field!r}")
            value = value[key]
        if not isinstance(value, str):
            raise InputError(f"{path}, line {lineno}: field {text_field!r} is not a string")
        yield value
