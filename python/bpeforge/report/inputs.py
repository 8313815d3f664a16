"""The report's inputs: a uniform sample of a corpus's lines (with their
language tags), and training progress CSVs."""

from __future__ import annotations

import csv
import itertools
import os
import random
from collections.abc import Iterable, Iterator
from typing import Any, Union

from .._io import open_text, strip_eol
from .._texts import read_texts
from ..errors import ParameterError

PathLike = Union[str, "os.PathLike[str]"]


def _iter_lines(source: PathLike | Iterable[str], what: str,
                text_field: str | None = None) -> tuple[Iterator[str], str, Any]:
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not os.path.exists(path):
            raise ParameterError(f"{what} {path}: no such file")
        if what != "corpus":  # a language file: one tag per line
            handle = open_text(path, errors="replace")
            return (strip_eol(x) for x in handle), path, handle
        # The corpus is read as training reads it (plain, JSON lines,
        # Parquet/Arrow): structured input without text_field is refused.
        texts, handle = read_texts(path, text_field, errors="replace")
        return texts, path, handle
    if isinstance(source, (bytes, bytearray)):
        raise ParameterError(f"{what} must be a path or a sequence of str")
    return iter(source), f"<{what} lines>", None


def sample_lines(
    corpus: PathLike | Iterable[str], langs: PathLike | Iterable[str] | None, k: int, seed: int,
    text_field: str | None = None,
) -> tuple[list[str], list[str] | None, dict[str, Any]]:
    """A uniform random sample of k non-empty lines (reservoir; all when k <= 0),
    with the language tag of each line when ``langs`` is given. A corpus
    file that is JSON lines, Parquet or Arrow needs ``text_field``."""
    lines_it, cname, h1 = _iter_lines(corpus, "corpus", text_field)
    langs_it, lname, h2 = (None, None, None) if langs is None else _iter_lines(langs, "language file")
    rng = random.Random(seed)
    picked: list[tuple[str, str]] = []
    n_lines = n_nonempty = 0
    missing = object()
    try:
        pairs: Iterable[Any]
        pairs = zip(lines_it, itertools.repeat("")) if langs_it is None else itertools.zip_longest(lines_it, langs_it, fillvalue=missing)
        for line, tag in pairs:
            if line is missing or tag is missing:
                count_a = n_lines + (0 if line is missing else 1 + _count(lines_it))
                count_b = n_lines + (0 if tag is missing else 1 + _count(langs_it))
                raise ParameterError(
                    f"the language file {lname} has {count_b} lines but the corpus {cname} has {count_a}: "
                    "they must be line-aligned (one tag per corpus line)"
                )
            n_lines += 1
            if not line:
                continue
            n_nonempty += 1
            item = (line, tag.strip() or "und")
            if k <= 0 or len(picked) < k:
                picked.append(item)
            else:
                j = rng.randrange(n_nonempty)
                if j < k:
                    picked[j] = item
    finally:
        for h in (h1, h2):
            if h is not None:
                h.close()
    if not picked:
        raise ParameterError(f"the corpus {cname} has no non-empty line")
    info = {"path": cname, "langs_path": lname, "lines": n_lines, "nonempty_lines": n_nonempty,
            "sampled_lines": len(picked), "seed": seed}
    lines = [p[0] for p in picked]
    tags = [p[1] for p in picked] if langs is not None else None
    return lines, tags, info


def _count(it: Iterator[str] | None) -> int:
    return 0 if it is None else sum(1 for _ in it)



def read_progress_csv(path: PathLike) -> dict[str, list[float]]:
    """Read a training progress CSV (``merge,pair_count,elapsed_s``, as written
    by ``train(..., progress_csv=PATH)``; a header row is optional and the
    columns are found by name). A half-written last row (a live file) is skipped.

    Returns ``{"merge": [...], "pair_count": [...], "elapsed_s": [...]}``."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ParameterError(f"progress CSV {path}: no such file")
    cols = {"merge": 0, "pair_count": 1, "elapsed_s": 2}
    out: dict[str, list[float]] = {"merge": [], "pair_count": [], "elapsed_s": []}
    with open(path, encoding="utf-8", newline="") as f:
        rows = csv.reader(f)
        for n, row in enumerate(rows):
            if not row:
                continue
            if n == 0 and not _is_number(row[0].strip()):
                names = [c.strip().lower() for c in row]
                for i, name in enumerate(names):
                    if "merge" in name or name in ("index", "step"):
                        cols["merge"] = i
                    elif "count" in name or "freq" in name:
                        cols["pair_count"] = i
                    elif "elapsed" in name or "second" in name or "time" in name:
                        cols["elapsed_s"] = i
                continue
            try:
                vals = {k: float(row[i]) for k, i in cols.items()}
            except (IndexError, ValueError):
                continue  # a row being written, or garbage: skip it
            for k, v in vals.items():
                out[k].append(v)
    if not out["merge"]:
        raise ParameterError(f"progress CSV {path}: no data rows (expected merge,pair_count,elapsed_s)")
    return out


def _is_number(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False
