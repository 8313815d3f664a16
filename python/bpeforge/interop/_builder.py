"""Building an imported model: the three importers collect special tokens,
base symbols and merges (each with the source's id) in a :class:`Builder`,
which makes the bpeforge model; :func:`foreign_file_errors` gives them one
error class for whatever a foreign file's parsing raises."""

from __future__ import annotations

import functools
import json
import os
import warnings
from collections.abc import Callable
from typing import Any

from .. import _engine
from .._tokenizer import Tokenizer
from ..errors import ModelFormatError, ParameterError
from ._common import InteropWarning


class Builder:
    """Assembles an imported model: internal ids (specials, base, merges) and
    the source's ids for each."""

    def __init__(self, scheme: dict[str, Any], pretokenizer: dict[str, Any], source: str) -> None:
        self.scheme = scheme
        self.pretokenizer = pretokenizer
        self.source = source
        self.specials: list[str] = []
        self.special_ext: list[int] = []
        self.base: list[bytes] = []
        self.base_ext: list[int] = []
        self.merges: list[tuple[int, int]] = []
        self.merge_ext: list[int] = []
        self.ids: dict[bytes, int] = {}  # non-special token bytes -> internal index
        self.notes: list[str] = []
        self.stats: dict[str, int] = {}
        # One past the largest id the source file uses (tokens bpeforge could
        # not represent included): extending the model starts new ids here.
        self.source_id_end = 0

    def note(self, text: str, warn: bool = True) -> None:
        self.notes.append(text)
        if warn:
            warnings.warn(f"{self.source}: {text}", InteropWarning, stacklevel=3)

    def count(self, key: str, n: int = 1) -> None:
        self.stats[key] = self.stats.get(key, 0) + n

    def add_special(self, text: str, ext: int) -> None:
        self.specials.append(text)
        self.special_ext.append(ext)

    def add_base(self, token: bytes, ext: int) -> None:
        self.ids[token] = len(self.base)
        self.base.append(token)
        self.base_ext.append(ext)

    def add_merge(self, left: bytes, right: bytes, ext: int) -> bool:
        """Adds a merge; False (and counted) when it cannot be represented."""
        a, b = self.ids.get(left), self.ids.get(right)
        if a is None or b is None:
            self.count("merges_with_missing_parts")
            return False
        new = left + right
        if new in self.ids:
            self.count("duplicate_merges")
            return False
        self.ids[new] = len(self.base) + len(self.merges)
        self.merges.append((a, b))
        self.merge_ext.append(ext)
        return True

    def build(self, metadata: dict[str, Any], alphabet: list[str] | None = None) -> Tokenizer:
        ns = len(self.specials)
        ext = self.special_ext + self.base_ext + self.merge_ext
        doc = {
            "format": "bpeforge-model",
            "version": 1,
            "scheme": self.scheme,
            "pretokenizer": self.pretokenizer,
            "special_tokens": self.specials,
            "alphabet": alphabet,
            "merges": [[a + ns, b + ns] for a, b in self.merges],
            "merge_counts": [],
            "ids": ext,
            "metadata": {"import": {**metadata, "notes": self.notes, "stats": self.stats,
                                    "source_id_end": self.source_id_end}},
        }
        if len(set(ext)) != len(ext):
            raise ModelFormatError(f"{self.source}: two tokens share one id; the vocabulary is inconsistent")
        return Tokenizer.from_json(json.dumps(doc, ensure_ascii=False))




def unreachable_tokens(b: Builder) -> int:
    """How many merged tokens merge-list BPE cannot produce from their own
    symbols (a library that looks whole pieces up first would give them)."""
    return _engine.unreachable_merges(len(b.base), b.merges)


def foreign_file_errors(kind: str) -> Callable[[Callable[..., Tokenizer]], Callable[..., Tokenizer]]:
    """Importers read files written by other programs: whatever the parsing of
    such a file raises (bad UTF-8, deep nesting, wrong types, numbers such as
    Infinity that no id can hold, a library's own RuntimeError) becomes a ModelFormatError naming the source, so callers
    catch one bpeforge error class. bpeforge's own errors pass unchanged."""

    def wrap(fn: Callable[..., Tokenizer]) -> Callable[..., Tokenizer]:
        @functools.wraps(fn)
        def guarded(source: Any, *args: Any, **kwargs: Any) -> Tokenizer:
            try:
                return fn(source, *args, **kwargs)
            except (ModelFormatError, ParameterError):
                raise
            except (UnicodeError, RecursionError, AttributeError, KeyError, IndexError, TypeError, ValueError, ArithmeticError,
                    RuntimeError) as e:
                where = os.fspath(source) if isinstance(source, (str, os.PathLike)) else type(source).__name__
                raise ModelFormatError(f"{where}: not a usable {kind} ({type(e).__name__}: {e})") from e

        return guarded

    return wrap
