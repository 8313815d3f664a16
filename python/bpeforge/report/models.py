"""The models the report measures: loading them (bpeforge files, or other
libraries' through :mod:`bpeforge.interop`), their tokens as text, and encoding
the sample."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any, Union

from .._load import load
from .._tokenizer import Tokenizer
from ..errors import ParameterError
from ..interop import _formats

PathLike = Union[str, "os.PathLike[str]"]


def load_model(source: Tokenizer | PathLike) -> tuple[Tokenizer, dict[str, Any]]:
    """A Tokenizer from a bpeforge model file, a SentencePiece ``.model``, a
    Hugging Face ``tokenizer.json`` (or its directory) or a ``.tiktoken`` file.

    Returns ``(tokenizer, info)``; ``info["notes"]`` lists what the import
    could not carry over (e.g. an ignored normalizer)."""
    if isinstance(source, Tokenizer):
        imp = source.metadata.get("import") or {}
        return source, {"source": repr(source), "format": imp.get("format", "bpeforge"), "notes": list(imp.get("notes", []))}
    path = os.fspath(source)
    if not os.path.exists(path):
        raise ParameterError(f"model {path}: no such file or directory")
    fmt = _formats.sniff(path)
    if fmt is not None:
        return _import(path, fmt)
    return load(path), {"source": path, "format": "bpeforge", "notes": []}


def _import(path: str, fmt: _formats.ModelFormat) -> tuple[Tokenizer, dict[str, Any]]:
    fn = fmt.load
    if fn is None:
        raise ParameterError(f"{path}: only bpeforge models can be reported on (no importer for {fmt.name} models)")
    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            tok = fn(path)
        except ParameterError as e:
            # A normalizer bpeforge cannot apply: measured without it, and noted.
            if "ignore_normalizer" not in fmt.load_options or "normalizer" not in str(e):
                raise
            tok = fn(path, ignore_normalizer=True)
    for w in caught:
        msg = str(w.message)
        if msg not in notes:
            notes.append(msg)
    for msg in (tok.metadata.get("import") or {}).get("notes", []):
        if not any(msg in n for n in notes):
            notes.append(msg)
    return tok, {"source": path, "format": fmt.name, "notes": notes}


@dataclass
class Model:
    label: str
    tok: Tokenizer
    info: dict[str, Any]
    doc: dict[str, Any]  # the model JSON
    texts: list[str | None]  # token text by id (None: not valid UTF-8)
    raw: list[bytes]
    specials: set[int]
    ids: Any = None  # numpy arrays over the sample
    offsets: Any = None
    counts: Any = None  # occurrences per id in the sample


def token_texts(tok: Tokenizer, doc: dict[str, Any]) -> tuple[list[bytes], list[str | None], set[int]]:
    """Token bytes as the text they stand for (chars scheme: ``▁``/suffix as a space)."""
    raw = tok.tokens()
    scheme = doc.get("scheme") or {}
    suffix = scheme.get("end_of_word_suffix") if isinstance(scheme, dict) else None
    chars = tok.scheme == "chars"
    specials_text = set(tok.special_tokens)
    specials: set[int] = set()
    texts: list[str | None] = []
    for i, b in enumerate(raw):
        try:
            t: str | None = b.decode("utf-8")
        except UnicodeDecodeError:
            t = None
        if t is not None and t in specials_text:
            specials.add(i)
        elif t is not None and chars:
            if suffix and t.endswith(suffix):
                t = t[: -len(suffix)] + " "
            t = t.replace("\u2581", " ")
        texts.append(t)
    return raw, texts, specials


def represented_len(raw: bytes, text: str | None) -> int:
    return len(raw) if text is None else len(text.encode("utf-8"))


def encode_lines(tok: Tokenizer, lines: list[str], threads: int | None) -> tuple[Any, Any]:
    import numpy as np

    kw: dict[str, Any] = {"threads": threads, "as_numpy": True}
    if tok.special_tokens:
        kw.update(allowed_special=(), disallowed_special=())
    ids, offsets = tok.encode_batch(lines, **kw)
    return np.asarray(ids, dtype=np.int64), np.asarray(offsets, dtype=np.int64)


def default_label(source: Any, i: int) -> str:
    if isinstance(source, Tokenizer):
        return "model" if i == 0 else "compare"
    name = os.path.basename(os.path.normpath(os.fspath(source)))
    for ext in (".json.gz", ".json", ".model", ".tiktoken"):
        if name.lower().endswith(ext) and len(name) > len(ext):
            return name[: -len(ext)]
    return name or f"model {i + 1}"
