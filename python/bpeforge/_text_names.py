"""Which parameter names a run's text and its language: ``text_field`` and
``lang_field`` name a field of each JSON lines record (the engine reads
them), ``text_column`` and ``lang_column`` a column of Parquet/Arrow input
or of a dataset (pyarrow reads them, in Python). Every entry point that
reads files (training, ``encode_file``, :mod:`bpeforge.distributed`, the
report, the command line) asks :func:`resolve` once, before anything is
read, and passes on the names it returns.

A field name given for a Parquet/Arrow file (the older spelling) is still
read as the column, with a ``DeprecationWarning`` naming the new
parameter; a column name given for line files, or both names for one
file, is a :class:`~bpeforge.ParameterError` naming the parameter.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from ._input_formats import detect, plan
from .errors import ParameterError

_PACKAGE = os.path.dirname(os.path.abspath(__file__))


class RenamedParameterWarning(DeprecationWarning):
    """An older spelling of a parameter was used (the command line shows it
    as a warning line)."""


class TextNames(NamedTuple):
    """A run's format (:func:`bpeforge._input_formats.plan`: ``"text"`` or
    ``"columnar"``) and the names that apply to it: the fields for line
    files, the columns for Parquet/Arrow files, None for the others."""

    kind: str
    text_field: str | None = None
    text_column: str | None = None
    lang_field: str | None = None
    lang_column: str | None = None


def resolve(files: Sequence[str], *, text_field: str | None, text_column: str | None,
            lang_field: str | None = None, lang_column: str | None = None, raw_text: bool | None = None,
            names: dict[str, str] | None = None, quiet: Iterable[str] = ()) -> TextNames:
    """The names that apply to ``files`` (see the module docstring);
    ``raw_text`` and ``names`` as for :func:`plan`. ``quiet`` lists the
    names not given by the caller (taken from a resumed checkpoint): moved
    without a warning."""
    if (text_column is not None or lang_column is not None) and not any(detect(f).columnar for f in files):
        f = detect(files[0])
        for name, value in (("text_column", text_column), ("lang_column", lang_column)):
            if value is not None:
                field = name.replace("_column", "_field")
                raise ParameterError(f"{name}={value!r}: {f.path} is {f.name}, not Parquet/Arrow; {name}= names "
                                     f"a column of Parquet/Arrow input (for JSON lines give {field}=, the field "
                                     "of each record)")
    kind = plan(list(files), text_field=text_field, text_column=text_column, raw_text=raw_text, names=names)
    if kind == "columnar":
        where = detect(files[0])
        return TextNames(kind, text_column=_column(where, "text", text_field, text_column, quiet),
                         lang_column=_column(where, "lang", lang_field, lang_column, quiet))
    return TextNames(kind, text_field=text_field, lang_field=lang_field)


def _column(where: Any, what: str, field: str | None, column: str | None, quiet: Iterable[str]) -> str | None:
    """The ``what`` column of a Parquet/Arrow run, given as ``<what>_column``
    or (the older spelling) as ``<what>_field``."""
    old, new = f"{what}_field", f"{what}_column"
    if field is None:
        return column
    if column is not None:
        raise ParameterError(f"{old}= and {new}= both given: {where.path} is {where.name}, so give {new}= alone "
                             f"({old}= names a field of JSON lines records)")
    if old not in quiet:
        warn_renamed(f"{old}={field!r}: {where.path} is {where.name}; a column is named by {new}= ({old}= names "
                     f"a field of JSON lines records and will stop naming a column): give {new}={field!r}")
    return field


def warn_renamed(message: str) -> None:
    """A ``DeprecationWarning`` attributed to the first caller outside this
    package (the line that used the old spelling)."""
    level, frame = 1, sys._getframe(0)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE + os.sep):
        frame, level = frame.f_back, level + 1  # type: ignore[assignment]
    warnings.warn(message, RenamedParameterWarning, stacklevel=level)


def for_training(files: Sequence[str], options: Any, names: dict[str, str] | None = None) -> TextNames:
    """:func:`resolve` for a training run's :class:`bpeforge.TrainOptions`:
    ``documents``, ``separator`` or ``columns`` say how to cut raw text, so
    a JSON lines file is then read as the text it is, as asked."""
    raw = bool(options.documents) or options.separator is not None or options.columns is not None
    return resolve(files, text_field=options.text_field, text_column=options.text_column,
                   lang_field=options.lang_field, lang_column=options.lang_column, raw_text=raw, names=names,
                   quiet=options.from_checkpoint)


def for_counting(files: Sequence[str], options: Any) -> TextNames:
    """:func:`for_training` for a counts file (``bpeforge.count``): the
    engine counts line files only, so Parquet/Arrow input is refused,
    naming the file, before anything is counted."""
    names = for_training(files, options)
    if names.kind == "columnar":
        f = detect(files[0])
        raise ParameterError(f"{f.path} is {f.name}: a counts file is counted from line files (plain, compressed, "
                             "JSON lines); train on Parquet/Arrow input with text_column= instead")
    return names
