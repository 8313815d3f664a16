"""A file's texts in Python, read as the engine reads them: text lines,
the ``text_field`` of each JSON line, or the ``text_column`` of a
Parquet/Arrow file (what the file is: :mod:`bpeforge._text_names`). Used by the
report, which measures texts in Python."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

from . import _text_names
from ._arrow import column_texts
from ._io import PathLike, open_text, strip_eol
from .errors import InputError


def read_texts(path: PathLike, text_field: str | None = None, text_column: str | None = None, *,
               errors: str = "strict") -> tuple[Iterator[str], Any]:
    """The texts of one input file, in Python, read as the engine reads it
    (what the file is and which name applies to it:
    :func:`bpeforge._text_names.resolve`, which refuses a structured file
    without its name): text lines (without their line end), the
    ``text_field`` of each JSON line (a dotted path reaches nested fields; a
    blank line is an empty text), or the ``text_column`` column of a
    Parquet/Arrow file. Returns ``(texts, handle)``; close ``handle`` (None
    for columns) when done."""
    path = os.fspath(path)
    names = _text_names.resolve([path], text_field=text_field, text_column=text_column)
    if names.kind == "columnar":
        assert names.text_column is not None  # resolve() refuses columns without one

        return column_texts(path, names.text_column), None
    handle = open_text(path, errors=errors)
    lines = (strip_eol(x) for x in handle)
    if names.text_field is None:
        return lines, handle
    return _json_texts(lines, path, names.text_field), handle


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
