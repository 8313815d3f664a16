"""The report's inputs: a uniform sample of a corpus's lines (with their
language tags), and training progress CSVs."""

from __future__ import annotations

import csv
import itertools
import os
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Union

from .._io import open_text, strip_eol
from .._texts import read_texts
from ..errors import ParameterError

PathLike = Union[str, "os.PathLike[str]"]


def check_inputs(**sources: Any) -> None:
    """Refuse a missing or unreadable input before any work: each source
    given as a path (models, the corpus, the language file, the parallel
    set; a Tokenizer or a sequence of lines is not checked) must exist and
    open for reading. The error names the parameter and the path."""
    what = {"model": "model", "compare": "model (compare)", "corpus": "corpus", "langs": "language file",
            "parallel": "parallel set"}
    for key, source in sources.items():
        if not isinstance(source, (str, os.PathLike)):
            continue
        path = os.fspath(source)
        name = what.get(key, key)
        models = key in ("model", "compare")
        if not os.path.exists(path):
            raise ParameterError(f"{name} {path}: no such file" + (" or directory" if models else ""))
        if os.path.isdir(path) and not models:
            raise ParameterError(f"{name} {path} is a directory, not a file")
        try:
            if os.path.isdir(path):
                os.listdir(path)
            elif os.path.isfile(path):
                open(path, "rb").close()  # opened, not read: nothing is consumed
            elif not os.access(path, os.R_OK):  # a pipe or device: opening could block or consume it
                raise PermissionError(13, "Permission denied")
        except OSError as e:
            raise ParameterError(f"{name} {path}: cannot read it ({e.strerror or e})") from e


def _reservoir_add(sample: list[Any], item: Any, n: int, k: int, rng: random.Random) -> None:
    """Reservoir sampling's step for the ``n``-th item seen (from 1): keep
    up to ``k`` items (all when ``k`` <= 0), each of the ``n`` equally likely."""
    if k <= 0 or len(sample) < k:
        sample.append(item)
        return
    j = rng.randrange(n)
    if j < k:
        sample[j] = item


def _iter_lines(source: PathLike | Iterable[str], what: str, text_field: str | None = None,
                text_column: str | None = None) -> tuple[Iterator[str], str, Any]:
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not os.path.exists(path):
            raise ParameterError(f"{what} {path}: no such file")
        if what != "corpus":  # a language file: one tag per line
            handle = open_text(path, errors="replace")
            return (strip_eol(x) for x in handle), path, handle
        # The corpus is read as training reads it (plain, JSON lines,
        # Parquet/Arrow): structured input without text_field (JSON lines)
        # or text_column (Parquet/Arrow) is refused.
        texts, handle = read_texts(path, text_field, text_column, errors="replace")
        return texts, path, handle
    if isinstance(source, (bytes, bytearray)):
        raise ParameterError(f"{what} must be a path or a sequence of str")
    return iter(source), f"<{what} lines>", None


@dataclass
class Sample:
    """What the report measures: a uniform sample of the corpus's lines (the
    figures about the whole corpus) and, with language tags, a sample
    stratified by language (the per-language figures), with every
    language's lines and bytes in the whole corpus."""

    lines: list[str]
    tags: list[str] | None
    info: dict[str, Any]
    lang_lines: list[str] = field(default_factory=list)
    lang_tags: list[str] = field(default_factory=list)
    corpus_lines: dict[str, int] = field(default_factory=dict)  # per language, non-empty lines
    corpus_bytes: dict[str, int] = field(default_factory=dict)  # per language, UTF-8 bytes


def sample_lines(
    corpus: PathLike | Iterable[str], langs: PathLike | Iterable[str] | None, k: int, seed: int,
    text_field: str | None = None, text_column: str | None = None,
) -> tuple[list[str], list[str] | None, dict[str, Any]]:
    """A uniform random sample of k non-empty lines (reservoir; all when k <= 0),
    with the language tag of each line when ``langs`` is given. A corpus
    file that is JSON lines needs ``text_field``, Parquet or Arrow
    ``text_column``."""
    s = sample_corpus(corpus, langs, k, seed, text_field, text_column=text_column)
    return s.lines, s.tags, s.info


def sample_corpus(
    corpus: PathLike | Iterable[str], langs: PathLike | Iterable[str] | None, k: int, seed: int,
    text_field: str | None = None, per_language: int = 0, text_column: str | None = None,
) -> Sample:
    """One pass over the corpus: a uniform random sample of k non-empty lines
    (reservoir; all when k <= 0) and, with ``langs``, up to ``per_language``
    lines of each language (a reservoir per language, so a language's sampled
    lines do not depend on the size of the others; all its lines when
    ``per_language`` <= 0), both seeded by ``seed``."""
    lines_it, cname, h1 = _iter_lines(corpus, "corpus", text_field, text_column)
    langs_it, lname, h2 = (None, None, None) if langs is None else _iter_lines(langs, "language file")
    rng = random.Random(seed)
    lang_rng = random.Random(seed + 1)
    picked: list[tuple[str, str]] = []
    by_lang: dict[str, list[str]] = {}
    seen: dict[str, int] = {}
    nbytes: dict[str, int] = {}
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
            _reservoir_add(picked, item, n_nonempty, k, rng)
            if langs_it is not None:
                lang = item[1]
                n = seen[lang] = seen.get(lang, 0) + 1
                nbytes[lang] = nbytes.get(lang, 0) + len(line.encode("utf-8"))
                _reservoir_add(by_lang.setdefault(lang, []), line, n, per_language, lang_rng)
    finally:
        for h in (h1, h2):
            if h is not None:
                h.close()
    if not picked:
        raise ParameterError(f"the corpus {cname} has no non-empty line")
    info = {"path": cname, "langs_path": lname, "lines": n_lines, "nonempty_lines": n_nonempty,
            "sampled_lines": len(picked), "seed": seed}
    sample = Sample([p[0] for p in picked], [p[1] for p in picked] if langs is not None else None, info)
    if langs is not None:
        sample.corpus_lines, sample.corpus_bytes = seen, nbytes
        for lang, mine in by_lang.items():
            sample.lang_lines.extend(mine)
            sample.lang_tags.extend([lang] * len(mine))
        info.update(per_language=per_language, language_sample_lines=len(sample.lang_lines))
    return sample


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
