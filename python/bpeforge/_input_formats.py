"""What an input path is: the one place that decides it, for every command.

``bpeforge.train``, ``Tokenizer.encode_file``, ``bpeforge.distributed``,
``bpeforge report`` and the CLI's ``train``/``encode``/``report`` all ask
:func:`detect` (through :func:`plan`) what a file is before anything reads
it, so a file is never read one way by one command and another way by the
next. The engine reads the line formats (plain text, JSON lines, TSV) and the
compressions below; pyarrow reads the container formats (Parquet, Arrow).

Formats, and how each is recognised. A name that says a format decides it;
the first bytes decide only for names that say none (``.txt``, no suffix):

* **Parquet**: the name ends in ``.parquet`` or ``.pq``, or the file starts
  with Parquet's magic bytes ``PAR1`` (e.g. a ``.txt``).
* **Arrow IPC** (file or stream; Feather v2): the name ends in ``.arrow``,
  ``.feather`` or ``.ipc``, or the file starts with ``ARROW1`` or with the
  stream format's ``0xFFFFFFFF`` marker.
* **JSON lines**: the name ends in ``.jsonl``, ``.ndjson`` or ``.jsonlines``
  (before any compression suffix: ``x.jsonl.zst`` is JSON lines), or, by
  content, every non-blank line among the first :data:`SNIFF_LINES` lines
  (within the first :data:`SNIFF_BYTES` bytes, decompressed) parses as a
  JSON object. One line that is not an object (prose that merely starts with
  ``{``, a line of code, a truncated record) makes the file text: real text
  whose first lines happen to look like JSON is never refused unless every
  one of them is a complete JSON object.
* **Text**: anything else, one text per line (``documents``, ``separator``
  and ``columns`` choose other cuts; ``.tsv`` is text unless ``columns``
  picks its columns).

Compressions (a suffix after the format's: ``corpus.txt.xz``,
``x.jsonl.zst``): :data:`COMPRESSIONS`, the engine's own list
(crates/core/src/input/mod.rs ``COMPRESSIONS``), which the Python readers
(:mod:`bpeforge._io`) and the help texts (:func:`compressions_text`) follow.

Structured input is never read as plain text silently: a JSON lines file
without ``text_field``, or a Parquet or Arrow file without ``text_column``,
is refused, with a message naming the parameter (``text_field=``; the CLI
shows ``--text-field``) and the string fields its first record (or its
schema) has. To train on the JSON
text itself, ask for it: ``separator="\\n"`` (``--separator``) or
``documents=True`` reads any file as raw text.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from ._io import COMPRESSIONS, compression, open_binary
from .errors import InputError, ParameterError

#: Name endings of each structured format (before any compression suffix).
PARQUET_SUFFIXES = (".parquet", ".pq")
ARROW_SUFFIXES = (".arrow", ".feather", ".ipc")
JSON_LINES_SUFFIXES = (".jsonl", ".ndjson", ".jsonlines")

TEXT, JSON_LINES, PARQUET, ARROW = "text", "jsonl", "parquet", "arrow"
#: The formats pyarrow reads (whole columns, not lines).
COLUMNAR = (PARQUET, ARROW)

#: Content sniffing reads at most this much of a file (decompressed) ...
SNIFF_BYTES = 64 << 10
#: ... and looks at most at this many non-blank lines of it.
SNIFF_LINES = 16

_NAMES = {PARQUET: "Parquet", ARROW: "Arrow", JSON_LINES: "JSON lines", TEXT: "text"}


@dataclass(frozen=True)
class InputFormat:
    """What :func:`detect` found about one path."""

    path: str
    kind: str
    """``"text"``, ``"jsonl"``, ``"parquet"`` or ``"arrow"``."""
    compression: str | None
    """The compression suffix (``".zst"``...), or None."""
    reason: str
    """Why: ``"its name ends in .jsonl.zst"``, ``"it starts with Parquet's magic bytes PAR1"``..."""
    fields: tuple[str, ...] = field(default=())
    """The string fields of the first JSON record (JSON lines), when known."""

    @property
    def name(self) -> str:
        """The format's name for messages: "Parquet", "JSON lines"..."""
        return _NAMES[self.kind]

    @property
    def columnar(self) -> bool:
        return self.kind in COLUMNAR


def compressions_text(sep: str = " ") -> str:
    """The compression suffixes for help texts and docstrings: ``".gz .xz .bz2 .zst .zstd"``."""
    return sep.join(COMPRESSIONS)


#: INPUT in every command's --help, from the lists above.
INPUT_HELP = (f"text file, one text per line; or JSON lines ({', '.join(JSON_LINES_SUFFIXES[:2])}) with "
              "--text-field, Parquet "
              f"({PARQUET_SUFFIXES[0]}) or Arrow ({', '.join(ARROW_SUFFIXES[:2])}) with --text-column; "
              f"{compressions_text()} compression ok. A file whose name or content says JSON lines, Parquet or "
              "Arrow is never read as plain text")


def detect(path: str | os.PathLike[str]) -> InputFormat:
    """What ``path`` holds, from its name, then its first bytes (see the
    module docstring for the rules). A path that cannot be opened is
    ``"text"`` by default: the reader that opens it names the problem."""
    path = os.fspath(path)
    comp = compression(path)
    low = path.lower()
    stem = low[: -len(comp)] if comp else low
    if stem.endswith(PARQUET_SUFFIXES):
        return InputFormat(path, PARQUET, comp, f"its name ends in {_suffix(path, PARQUET_SUFFIXES, comp)}")
    if stem.endswith(ARROW_SUFFIXES):
        return InputFormat(path, ARROW, comp, f"its name ends in {_suffix(path, ARROW_SUFFIXES, comp)}")
    head = _head(path, comp)
    fields = _json_fields(head) if head is not None else None
    if stem.endswith(JSON_LINES_SUFFIXES):
        # Named JSON lines even if its bytes look like a container: such a
        # file is read as JSON lines, and its bad records named by line.
        return InputFormat(path, JSON_LINES, comp, f"its name ends in {_suffix(path, JSON_LINES_SUFFIXES, comp)}",
                           fields or ())
    if comp is None and head is not None:
        if head.startswith(b"PAR1"):
            return InputFormat(path, PARQUET, None, "it starts with Parquet's magic bytes PAR1")
        if head.startswith((b"ARROW1", b"\xff\xff\xff\xff")):
            return InputFormat(path, ARROW, None, "it starts with the Arrow IPC format's magic bytes")
    if fields is not None:
        return InputFormat(path, JSON_LINES, comp, "its first lines are JSON objects", fields)
    return InputFormat(path, TEXT, comp, "")


def _suffix(path: str, suffixes: tuple[str, ...], comp: str | None) -> str:
    low = path.lower()[: -len(comp)] if comp else path.lower()
    ext = next(s for s in suffixes if low.endswith(s))
    return ext + (comp or "")


def _head(path: str, comp: str | None) -> bytes | None:
    """Up to SNIFF_BYTES decompressed bytes of ``path``; None when it cannot
    be read here (missing, a folder, .zst without zstandard, corrupt)."""
    if not os.path.isfile(path):
        return None
    try:
        if comp is None:
            with open(path, "rb") as f:
                return f.read(SNIFF_BYTES)
        with open_binary(path) as f:
            return f.read(SNIFF_BYTES)
    except (OSError, EOFError, ValueError, ParameterError, ImportError):
        return None
    except Exception:  # noqa: BLE001 - a decompressor's own error types: the reader reports them
        return None


def _json_fields(head: bytes) -> tuple[str, ...] | None:
    """The string fields of the first record when every non-blank line among
    the first SNIFF_LINES complete lines of ``head`` is a JSON object; else None."""
    lines = head.split(b"\n")
    if len(head) >= SNIFF_BYTES and len(lines) > 1:
        lines = lines[:-1]  # the last line may be cut by the sniff window
    first: dict[str, Any] | None = None
    seen = 0
    for raw in lines:
        raw = raw.strip()
        if not raw:
            continue
        if not raw.startswith(b"{"):
            return None
        try:
            record = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(record, dict):
            return None
        first = record if first is None else first
        seen += 1
        if seen >= SNIFF_LINES:
            break
    if first is None:
        return None
    return tuple(k for k, v in first.items() if isinstance(v, str))


# ---- the run's plan: every input's format, checked together ---------------------


#: How each interface spells the options named in messages.
PYTHON_NAMES = {"text_field": "text_field=", "text_column": "text_column=", "separator": 'separator="\\n"',
                "documents": "documents=True"}
CLI_NAMES = {"text_field": "--text-field FIELD", "text_column": "--text-column COLUMN",
             "separator": "--separator '\\n'", "documents": "--documents"}


def plan(files: list[str], *, text_field: str | None, text_column: str | None = None,
         raw_text: bool | None = None, names: dict[str, str] | None = None) -> str:
    """The format of a run over ``files``: ``"text"`` (the engine reads lines:
    plain, JSON lines with ``text_field``, TSV with ``columns``) or
    ``"columnar"`` (pyarrow reads Parquet/Arrow). Refuses, naming the file,
    why it is structured and the option to give:

    * a JSON lines file without ``text_field`` (unless ``raw_text``: the
      caller asked for raw text with ``documents`` or ``separator``, and
      JSON lines are then read as text, as asked);
    * a Parquet or Arrow file without ``text_column`` (or ``text_field``,
      its older spelling: :mod:`bpeforge._text_names` says which name
      applies to which file);
    * Parquet/Arrow files mixed with line files.

    ``raw_text`` is None where the caller has no way to read JSON lines as
    raw text (encoding, the report: one text per line, nothing else), so
    the message names ``text_field`` alone; training passes a bool
    (:func:`plan_training`) and the message also names ``separator`` and
    ``documents``.

    ``names`` spells the options for the messages (:data:`PYTHON_NAMES`, or
    :data:`CLI_NAMES` for the command line)."""
    names = names or PYTHON_NAMES
    formats = [detect(f) for f in files]
    columnar = [f for f in formats if f.columnar]
    if columnar and len(columnar) != len(formats):
        other = next(f for f in formats if not f.columnar)
        raise ParameterError(f"give either Parquet/Arrow files or line files, not both ({other.path} is "
                             f"{other.name}; {columnar[0].path} is {columnar[0].name}: {columnar[0].reason})")
    if text_field is None and text_column is None:
        for f in formats:
            if f.columnar:
                columns = _string_columns(f)
                hint = f"; its string columns: {', '.join(columns)}" if columns else ""
                raise ParameterError(f"{f.path} is {f.name} ({f.reason}): give {names['text_column']} "
                                     f"(the name of the text column{hint})")
    if text_field is None:
        for f in formats:
            if f.kind == JSON_LINES and not raw_text:
                hint = f"; its records' string fields: {', '.join(f.fields)}" if f.fields else ""
                as_text = "" if raw_text is None else \
                    f"; to read the JSON itself as text, give {names['separator']} or {names['documents']}"
                raise ParameterError(f"{f.path} is JSON lines ({f.reason}): give {names['text_field']} (the field "
                                     f"holding each record's text{hint}){as_text}")
    return "columnar" if columnar else "text"


def _string_columns(f: InputFormat) -> list[str]:
    """The string columns of a Parquet/Arrow file's schema, for the message
    that asks for one (empty when pyarrow or the schema cannot be read)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if f.kind == PARQUET:
            schema = pq.read_schema(f.path)
        else:
            with pa.memory_map(f.path) as source:
                try:
                    schema = pa.ipc.open_file(source).schema
                except pa.ArrowInvalid:
                    source.seek(0)
                    schema = pa.ipc.open_stream(source).schema
        return [field.name for field in schema if pa.types.is_string(field.type) or pa.types.is_large_string(field.type)]
    except Exception:  # noqa: BLE001 - a hint only: the reader reports what is wrong with the file
        return []


def is_columnar(path: str | os.PathLike[str]) -> bool:
    """Whether pyarrow reads ``path`` (Parquet or Arrow, by name or content)."""
    return detect(path).columnar


def is_parquet(path: str | os.PathLike[str]) -> bool:
    return detect(path).kind == PARQUET


def missing_file_error(path: str) -> InputError:
    return InputError(f"cannot read {path}: " + ("it is a directory, not a file" if os.path.isdir(path)
                                                  else "no such file"))


__all__ = ["COMPRESSIONS", "InputFormat", "compression", "compressions_text", "detect", "plan", "is_columnar", "is_parquet"]
