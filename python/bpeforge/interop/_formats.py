"""The model formats of other libraries, one row each: the one place that
dispatches on a model's format.

A row says how to recognise a file of the format (``sniff``), how to import
it (``load``, with the keyword options it takes), how to export a model to it
(``export``) and which files that writes (``outputs``, known before writing
so that no output replaces an input), with the words the command line shows.
:func:`bpeforge.load`, ``bpeforge export`` / ``bpeforge import`` and the
report read this table and nothing else, so a new format is its row and its
exporter (and its importer) module. A format without ``load`` is export-only:
``bpeforge import`` does not offer it and :func:`importer` refuses it, naming
what can be imported.

A bpeforge model file is not a row: it is what a file is when no row claims
it (the engine reads it and says what is wrong with one it cannot read).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._io import compression
from ..errors import ModelFormatError, ParameterError
from . import huggingface_export, sentencepiece_export, tiktoken_export
from ._common import ExportedModel
from .huggingface_import import from_huggingface
from .sentencepiece_import import from_sentencepiece
from .tiktoken_import import from_tiktoken

if TYPE_CHECKING:  # pragma: no cover
    from .._tokenizer import Tokenizer

#: How many bytes of a file sniffing reads.
HEAD_BYTES = 4096


@dataclass(frozen=True)
class ModelFormat:
    """One format of another library (a row of :data:`FORMATS`)."""

    #: The name the command line and ``metadata["import"]["format"]`` use.
    name: str
    #: The library's name in a sentence ("Hugging Face").
    title: str
    #: What an import reads, in ``bpeforge import``'s help.
    source: str
    #: What ``--output`` names for an export, in ``bpeforge export``'s help.
    output: str
    #: Whether the file ``path`` is of this format; ``head`` is its first
    #: :data:`HEAD_BYTES` bytes, None for a directory or a file that cannot be read.
    sniff: Callable[[str, bytes | None], bool]
    #: Asked after the rows without it: a sniff by content that a file named
    #: for another format must not be claimed by.
    sniff_last: bool = False
    #: The importer: a path (and the keyword options of ``load_options``) to a Tokenizer.
    load: Callable[..., Tokenizer] | None = None
    load_options: frozenset[str] = frozenset()
    #: What :func:`bpeforge.load` refuses before importing, with what to do
    #: instead: a message for a file that needs ``load_options`` to be read.
    load_check: Callable[[str], str | None] | None = None
    #: The exporter: a model, a path and the keyword options of
    #: ``export_options``; returns the files written.
    export: Callable[..., list[str]] | None = None
    export_options: frozenset[str] = frozenset()
    #: The files an export to a path writes (the first is the model itself).
    outputs: Callable[[str], list[str]] | None = None


# Hugging Face -------------------------------------------------------------

def _sniff_huggingface(path: str, head: bytes | None) -> bool:
    if os.path.isdir(path):
        return os.path.isfile(os.path.join(path, "tokenizer.json"))
    if head is None:
        return False
    return head.lstrip().startswith(b"{") and b'"bpeforge-model"' not in head and \
        re.search(rb'"(added_tokens|pre_tokenizer|normalizer)"', head) is not None


def _huggingface_outputs(path: str) -> list[str]:
    model, beside = huggingface_export.huggingface_paths(path)
    return [model, *beside]


def _export_huggingface(tok: ExportedModel, path: str, **options: Any) -> list[str]:
    written = _huggingface_outputs(path)  # before writing: the folder may not exist yet
    huggingface_export.to_huggingface(tok, path, **options)
    return written


# tiktoken ------------------------------------------------------------------

def _sniff_tiktoken(path: str, head: bytes | None) -> bool:
    comp = compression(path)
    if comp is not None and path[: -len(comp)].endswith(".tiktoken") and not os.path.isdir(path):
        return True  # a compressed rank file (o200k_base.tiktoken.gz)
    if head is None:
        return False
    return path.endswith(".tiktoken") or re.match(rb"[A-Za-z0-9+/=]+ \d+\r?\n", head) is not None


def _tiktoken_needs_pattern(path: str) -> str | None:
    if os.path.exists(path + ".json"):
        return None
    return (f"{path} is a tiktoken rank file without its pattern ({path}.json is missing): load it with "
            "bpeforge.from_tiktoken(path, pattern=...) or `bpeforge import --from tiktoken PATH --pattern P "
            "--output MODEL`")


def _export_tiktoken(tok: ExportedModel, path: str, **options: Any) -> list[str]:
    return list(tiktoken_export.to_tiktoken(tok, path, **options))


# SentencePiece ---------------------------------------------------------------

def _sniff_sentencepiece(path: str, head: bytes | None) -> bool:
    # protobuf field 1 (pieces), length-delimited
    return head is not None and path.endswith(".model") and head[:1] == b"\x0a"


def _export_sentencepiece(tok: ExportedModel, path: str, **options: Any) -> list[str]:
    return [sentencepiece_export.to_sentencepiece(tok, path, **options)]


#: The formats, in the order the command line lists them.
FORMATS: tuple[ModelFormat, ...] = (
    ModelFormat(
        name="huggingface", title="Hugging Face", source="tokenizer.json (or its directory)",
        output="a folder (an existing one, a name ending in /, or any name not ending in .json: created, gets "
               "tokenizer.json, tokenizer_config.json, special_tokens_map.json) or FILE.json",
        sniff=_sniff_huggingface, sniff_last=True,
        load=from_huggingface, load_options=frozenset({"ignore_normalizer"}),
        export=_export_huggingface, outputs=_huggingface_outputs,
        export_options=frozenset({*huggingface_export.ROLES, "chat_template", "overwrite"}),
    ),
    ModelFormat(
        name="tiktoken", title="tiktoken", source="FILE.tiktoken (also compressed: FILE.tiktoken.gz...)",
        output="FILE.tiktoken (+ FILE.tiktoken.json)",
        sniff=_sniff_tiktoken,
        load=from_tiktoken, load_options=frozenset({"pattern", "special_tokens"}), load_check=_tiktoken_needs_pattern,
        export=_export_tiktoken, outputs=lambda path: [path, path + ".json"],
    ),
    ModelFormat(
        name="sentencepiece", title="SentencePiece", source="FILE.model", output="FILE.model",
        sniff=_sniff_sentencepiece,
        load=from_sentencepiece, load_options=frozenset({"ignore_normalizer"}),
        export=_export_sentencepiece, outputs=lambda path: [path], export_options=frozenset({"whitespace"}),
    ),
)


def by_name(name: str) -> ModelFormat:
    """The row named ``name``."""
    for f in FORMATS:
        if f.name == name:
            return f
    raise ParameterError(f"unknown model format {name!r}: the formats are {', '.join(f.name for f in FORMATS)}")


def importable() -> tuple[ModelFormat, ...]:
    """The formats bpeforge imports."""
    return tuple(f for f in FORMATS if f.load is not None)


def exportable() -> tuple[ModelFormat, ...]:
    """The formats bpeforge exports to."""
    return tuple(f for f in FORMATS if f.export is not None)


def importer(name: str) -> ModelFormat:
    """The row named ``name``, refused unless bpeforge imports it."""
    f = by_name(name)
    if f.load is None:
        raise ParameterError(f"bpeforge writes {f.name} files but cannot import them; it imports "
                             + ", ".join(g.name for g in importable()))
    return f


def sniff(path: str) -> ModelFormat | None:
    """Which format the file (or folder) ``path`` is in, from its name and
    first bytes; None for a bpeforge model (or an unknown or missing file,
    which the engine then names)."""
    head: bytes | None = None
    if not os.path.isdir(path):
        try:
            with open(path, "rb") as file:
                head = file.read(HEAD_BYTES)
        except OSError:
            head = None
    for f in sorted(FORMATS, key=lambda f: f.sniff_last):
        if f.sniff(path, head):
            return f
    return None


def load_file(path: str, fmt: ModelFormat) -> Tokenizer:
    """``path`` (of format ``fmt``) imported without options, as
    :func:`bpeforge.load` reads it; a format bpeforge only writes, or a file
    that needs the importer's options, is a ModelFormatError saying what to do."""
    if fmt.load is None:
        raise ModelFormatError(f"{path} is a {fmt.title} file, which bpeforge writes but does not read; it reads "
                               + ", ".join(g.name for g in importable()) + " files and its own models")
    refusal = fmt.load_check(path) if fmt.load_check is not None else None
    if refusal is not None:
        raise ModelFormatError(refusal)
    return fmt.load(path)
