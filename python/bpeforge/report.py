"""See a vocabulary: figures about a BPE model on a corpus, as data, PNGs and one HTML page.

    >>> from bpeforge.report import build_report
    >>> rep = build_report("model.json", "corpus.txt.xz", langs="corpus.langs.txt.xz")  # doctest: +SKIP
    >>> rep.figures["compression"].to_dict()["panels"][0]["series"][0]["y"][:3]      # doctest: +SKIP
    >>> rep.write("report/")                                                          # doctest: +SKIP

:func:`build_report` encodes a random sample of the corpus's lines with the
model (and with a second model given as ``compare``) and returns a
:class:`Report`: a dict of :class:`Figure` objects holding the plotted numbers
(``Figure.to_dict()``, JSON-ready), each of which draws itself with matplotlib
(``Figure.render()``; matplotlib is needed only for drawing: ``pip install
'bpeforge[plot]'``). :meth:`Report.write` writes ``index.html`` (self-contained:
images embedded, no scripts, no external resources), one PNG and one JSON per
figure, and ``report.json`` with everything; the directory appears atomically.

Figures (ids): ``pair_frequency``, ``compression``, ``token_length``,
``scripts``; with a language file (``langs``, one tag per corpus line):
``lang_bytes_per_token``, ``lang_fertility``, ``lang_vocab_share``, and with
``compare`` also ``lang_change`` (tokens per language, model vs compare: the
largest languages and the ones the compared model serves worst); with a
training progress CSV (``progress_csv``, written by ``train(...,
progress_csv=PATH)``): ``training_progress``.

Models: bpeforge model files, or (through :mod:`bpeforge.interop`) a
SentencePiece ``.model``, a Hugging Face ``tokenizer.json`` (or its directory)
or a ``.tiktoken`` file, or a :class:`bpeforge.Tokenizer`.
"""

from __future__ import annotations

import base64
import bz2
import csv
import datetime as _dt
import functools
import gzip
import html
import io
import itertools
import json
import lzma
import os
import random
import shutil
import tempfile
import time
import unicodedata
import warnings
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, Union

from . import __version__
from ._tokenizer import Tokenizer, load
from .errors import ModelFormatError, OutputError, ParameterError

__all__ = [
    "Figure",
    "Panel",
    "Series",
    "Report",
    "build_report",
    "write_report",
    "load_model",
    "token_script",
    "char_script",
    "read_progress_csv",
]

PathLike = Union[str, "os.PathLike[str]"]

DEFAULT_SAMPLE = 20_000
DEFAULT_CURVE_LINES = 5_000
DEFAULT_CURVE_POINTS = 16
DEFAULT_TOP_LANGS = 20

#: Scripts written without spaces between words: tokens per word means little there.
NO_SPACE_SCRIPTS = frozenset({"Han", "Kana", "Thai", "Khmer", "Lao", "Myanmar", "Tibetan", "Javanese", "Balinese"})
COMMON = "Common"
BYTES = "bytes (partial UTF-8)"
SPECIAL = "special tokens"
MIXED = "Mixed scripts"
COLORS = ("#1f6fb4", "#e8743b", "#2ca02c", "#9467bd")


# ---------------------------------------------------------------------------
# Unicode scripts
# ---------------------------------------------------------------------------

# Script names of more than one word, as they start Unicode character names.
_MULTIWORD = (
    "OL CHIKI", "NEW TAI LUE", "TAI THAM", "TAI LE", "TAI VIET", "CANADIAN SYLLABICS", "MEETEI MAYEK",
    "SYLOTI NAGRI", "OLD ITALIC", "OLD TURKIC", "OLD PERSIAN", "OLD HUNGARIAN", "OLD PERMIC", "OLD SOGDIAN",
    "OLD UYGHUR", "OLD SOUTH ARABIAN", "OLD NORTH ARABIAN", "SORA SOMPENG", "PAU CIN HAU", "MASARAM GONDI",
    "GUNJALA GONDI", "HANIFI ROHINGYA", "NYIAKENG PUACHUE HMONG", "PAHAWH HMONG", "ZANABAZAR SQUARE",
    "CAUCASIAN ALBANIAN", "MENDE KIKAKUI", "WARANG CITI", "KAYAH LI", "LINEAR A", "LINEAR B", "TAI YO",
    "NAG MUNDARI", "TANGSA", "TOTO", "KHOJKI", "SIGNWRITING",
)
# First words of character names that are not the script's own name.
_ALIASES = {
    "CJK": "Han", "IDEOGRAPHIC": "Han", "KANGXI": "Han",
    "HIRAGANA": "Kana", "KATAKANA": "Kana", "KATAKANA-HIRAGANA": "Kana",
    "NKO": "NKo", "PHAGS-PA": "Phags-pa",
}
# Marks (category M) whose names do not start with a script: Unicode's "Inherited".
_INHERITED_WORDS = frozenset({"COMBINING", "VARIATION", "VEDIC", "MUSICAL", "ZERO", "TAG"})
# Letters (category L) that belong to no particular script in this classification.
_COMMON_WORDS = frozenset({"MODIFIER", "MATHEMATICAL", "SMALL", "LETTERLIKE", "DOUBLE-STRUCK", "SCRIPT", "BLACK-LETTER"})


@functools.lru_cache(maxsize=1 << 16)
def char_script(ch: str) -> str | None:
    """The writing system of one character, from its Unicode category and name.

    Letters and marks get their script (``"Latin"``, ``"Cyrillic"``, ``"Han"``;
    Hiragana and Katakana are both ``"Kana"``); digits, punctuation, symbols,
    spaces and controls are ``"Common"``; combining marks that belong to no
    script (U+0301 and the like) are None (they take the script of their base).
    """
    cat = unicodedata.category(ch)
    if cat[0] not in "LM":
        return COMMON
    name = unicodedata.name(ch, "")
    if not name:
        return COMMON
    for multi in _MULTIWORD:
        if name.startswith(multi + " ") or name == multi:
            return multi.title()
    words = name.split(" ")
    first = words[0]
    if first in ("FULLWIDTH", "HALFWIDTH") and len(words) > 1:
        first = words[1]
    if cat[0] == "M" and first in _INHERITED_WORDS:
        return None
    if first in _COMMON_WORDS:
        return COMMON
    if first in _ALIASES:
        return _ALIASES[first]
    return first.capitalize()


def _scripts_of(text: str) -> set[str]:
    out = set()
    for ch in text:
        s = char_script(ch)
        if s is not None and s != COMMON:
            out.add(s)
    return out


def token_script(token: bytes | str) -> str:
    """The script bucket of a token: its letters' single script, ``"Common"``
    (no letters: digits, punctuation, spaces), ``"Mixed scripts"``, or, for
    bytes that are not valid UTF-8 (a byte-level token cut mid-character),
    ``"bytes (partial UTF-8)"``."""
    if isinstance(token, bytes):
        try:
            token = token.decode("utf-8")
        except UnicodeDecodeError:
            return BYTES
    scripts = _scripts_of(token)
    if not scripts:
        return COMMON
    if len(scripts) == 1:
        return next(iter(scripts))
    return MIXED


# ---------------------------------------------------------------------------
# Figures as data
# ---------------------------------------------------------------------------


@dataclass
class Series:
    """One plotted series: a model's numbers. ``x`` is None for category panels."""

    label: str
    y: Sequence[float]
    x: Sequence[float] | None = None
    color: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"label": self.label}
        if self.x is not None:
            d["x"] = list(self.x)
        d["y"] = list(self.y)
        return d


@dataclass
class Panel:
    """One set of axes. ``kind``: ``"line"`` (x/y series), ``"bar"`` (vertical
    bars over ``categories``, grouped by series), ``"barh"`` (horizontal)."""

    kind: str
    title: str
    xlabel: str
    ylabel: str
    series: list[Series] = field(default_factory=list)
    categories: list[str] | None = None
    xscale: str = "linear"
    yscale: str = "linear"
    percent: bool = False
    hatched: list[bool] | None = None  # per category: drawn hatched (see the figure's notes)
    vlines: list[tuple[float, str]] = field(default_factory=list)
    empty_text: str | None = None  # shown instead of a plot when there is no series

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "kind": self.kind, "title": self.title, "xlabel": self.xlabel, "ylabel": self.ylabel,
            "xscale": self.xscale, "yscale": self.yscale,
        }
        if self.categories is not None:
            d["categories"] = self.categories
        if self.percent:
            d["values_are_fractions"] = True
        if self.hatched is not None:
            d["hatched"] = self.hatched
        if self.vlines:
            d["markers"] = [{"x": x, "label": label} for x, label in self.vlines]
        if self.empty_text and not self.series:
            d["empty"] = self.empty_text
        d["series"] = [s.to_dict() for s in self.series]
        return d


@dataclass
class Figure:
    """A figure: its numbers (``to_dict()``), and a drawing of them (``render()``, ``png()``)."""

    id: str
    title: str
    description: str
    panels: list[Panel]
    notes: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    layout: str = "row"  # "row": panels side by side; "column": stacked

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "title": self.title, "description": self.description, "notes": self.notes,
            "panels": [p.to_dict() for p in self.panels], "data": self.data,
        }

    def render(self, dpi: int = 100) -> Any:
        """A ``matplotlib.figure.Figure`` (Agg canvas; pyplot's global state is not touched)."""
        return _render(self, dpi)

    def png(self, dpi: int = 100) -> bytes:
        """The figure as PNG bytes."""
        fig = self.render(dpi)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi)
        return buf.getvalue()


def _need_matplotlib() -> Any:
    try:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure as MplFigure
    except ImportError as e:  # pragma: no cover - exercised only without matplotlib
        raise ParameterError(
            "drawing the report's figures needs matplotlib: pip install 'bpeforge[plot]' (or matplotlib)"
        ) from e
    return matplotlib, FigureCanvasAgg, MplFigure


def _render(fig_data: Figure, dpi: int) -> Any:
    _, FigureCanvasAgg, MplFigure = _need_matplotlib()
    panels = fig_data.panels
    n = len(panels)
    ncat = max((len(p.categories or []) for p in panels), default=0)
    if fig_data.layout == "column" or any(p.kind == "barh" for p in panels) and n > 1 and ncat > 12:
        rows, cols = n, 1
    else:
        rows, cols = 1, n
    width = 10.0 if cols == 1 else 6.0 * cols
    width = min(width, 13.0)
    per_row = 4.2
    for p in panels:
        if p.kind == "barh" and p.categories:
            per_row = max(per_row, 1.2 + 0.2 * len(p.categories) * max(1, len(p.series)) ** 0.5)
        if p.kind == "bar" and p.categories and len(p.categories) > 10:
            per_row = max(per_row, 4.8)
    fig = MplFigure(figsize=(width, per_row * rows), dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, panel in zip(axes, panels):
        _draw_panel(ax, panel)
    if len(panels) > 1:
        fig.suptitle(fig_data.title, fontsize=12, fontweight="bold")
    return fig


def _draw_panel(ax: Any, p: Panel) -> None:
    ax.set_title(p.title, fontsize=10.5)
    ax.grid(True, alpha=0.3, linewidth=0.6)
    ax.set_axisbelow(True)
    if not p.series:
        ax.text(0.5, 0.5, p.empty_text or "no data", ha="center", va="center", transform=ax.transAxes,
                fontsize=10, color="#666666", wrap=True)
        ax.set_xticks([])
        ax.set_yticks([])
        return
    from matplotlib.ticker import PercentFormatter

    pct = PercentFormatter(xmax=1.0)
    if p.kind == "line":
        for i, s in enumerate(p.series):
            xs = s.x if s.x is not None else list(range(len(s.y)))
            many = len(xs) > 60
            ax.plot(xs, s.y, color=s.color or COLORS[i % len(COLORS)], label=s.label,
                    linewidth=1.2 if many else 1.6, marker=None if many else "o", markersize=3.5)
        for x, label in p.vlines:
            ax.axvline(x, color="#888888", linestyle=":", linewidth=1)
            ax.annotate(label, (x, 1), xycoords=("data", "axes fraction"), xytext=(3, -12),
                        textcoords="offset points", fontsize=8, color="#555555")
        ax.set_xscale(p.xscale)
        ax.set_yscale(p.yscale)
        if p.percent:
            ax.yaxis.set_major_formatter(pct)
    else:
        cats = p.categories or []
        k = len(p.series)
        width = 0.8 / max(k, 1)
        pos = list(range(len(cats)))
        for i, s in enumerate(p.series):
            offs = [x - 0.4 + width * (i + 0.5) for x in pos]
            color = s.color or COLORS[i % len(COLORS)]
            hatches = ["///" if (p.hatched and p.hatched[j]) else "" for j in range(len(cats))]
            if p.kind == "bar":
                bars = ax.bar(offs, s.y, width=width * 0.95, color=color, label=s.label)
            else:
                bars = ax.barh(offs, s.y, height=width * 0.95, color=color, label=s.label)
            for b, h in zip(bars, hatches):
                if h:
                    b.set_hatch(h)
                    b.set_edgecolor("white")
                    b.set_linewidth(0)
        if p.kind == "bar":
            ax.set_xticks(pos)
            rot = 0 if len(cats) <= 8 and max((len(c) for c in cats), default=0) <= 8 else 60
            ax.set_xticklabels(cats, rotation=rot, ha="right" if rot else "center", fontsize=8.5)
            ax.set_xlim(-0.6, len(cats) - 0.4)
            ax.set_yscale(p.yscale)
            if p.percent:
                ax.yaxis.set_major_formatter(pct)
        else:
            ax.set_yticks(pos)
            ax.set_yticklabels(cats, fontsize=8.5)
            ax.set_ylim(len(cats) - 0.4, -0.6)
            ax.set_xscale(p.xscale)
            if p.percent:
                ax.xaxis.set_major_formatter(pct)
    ax.set_xlabel(p.xlabel, fontsize=9.5)
    ax.set_ylabel(p.ylabel, fontsize=9.5)
    ax.tick_params(labelsize=8.5)
    if len(p.series) > 1 or p.kind == "line":
        ax.legend(fontsize=8.5, frameon=False)


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------


def _open_text(path: str) -> IO[str]:
    low = path.lower()
    if low.endswith(".xz"):
        return lzma.open(path, "rt", encoding="utf-8", errors="replace", newline="\n")
    if low.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", errors="replace", newline="\n")
    if low.endswith(".bz2"):
        return bz2.open(path, "rt", encoding="utf-8", errors="replace", newline="\n")
    if low.endswith(".zst"):
        try:
            import zstandard
        except ImportError as e:
            raise ParameterError(f"{path}: reading .zst needs the zstandard package") from e
        raw = zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), closefd=True)
        return io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="\n")
    return open(path, encoding="utf-8", errors="replace", newline="\n")


def _strip_eol(line: str) -> str:
    if line.endswith("\n"):
        line = line[:-1]
        if line.endswith("\r"):
            line = line[:-1]
    return line


def _iter_lines(source: PathLike | Iterable[str], what: str) -> tuple[Iterator[str], str, Any]:
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not os.path.exists(path):
            raise ParameterError(f"{what} {path}: no such file")
        handle = _open_text(path)
        return (_strip_eol(x) for x in handle), path, handle
    if isinstance(source, (bytes, bytearray)):
        raise ParameterError(f"{what} must be a path or a sequence of str")
    return iter(source), f"<{what} lines>", None


def _sample_lines(
    corpus: PathLike | Iterable[str], langs: PathLike | Iterable[str] | None, k: int, seed: int
) -> tuple[list[str], list[str] | None, dict[str, Any]]:
    """A uniform random sample of k non-empty lines (reservoir; all when k <= 0),
    with the language tag of each line when ``langs`` is given."""
    lines_it, cname, h1 = _iter_lines(corpus, "corpus")
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
    low = path.lower()
    if os.path.isdir(path):
        return _import(path, "huggingface")
    if low.endswith(".model"):
        return _import(path, "sentencepiece")
    if low.endswith(".tiktoken"):
        return _import(path, "tiktoken")
    try:
        return load(path), {"source": path, "format": "bpeforge", "notes": []}
    except ModelFormatError as first:
        try:
            opener: Any = gzip.open if low.endswith(".gz") else open
            with opener(path, "rt", encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError):
            raise first from None
        if isinstance(doc, dict) and isinstance(doc.get("model"), dict):
            return _import(path, "huggingface")
        raise


def _import(path: str, fmt: str) -> tuple[Tokenizer, dict[str, Any]]:
    try:
        from . import interop
    except ImportError:  # pragma: no cover - interop ships with the package
        interop = None  # type: ignore[assignment]
    fn = getattr(interop, f"from_{fmt}", None) if interop is not None else None
    if fn is None:
        raise ParameterError(f"{path}: only bpeforge models can be reported on (no importer for {fmt} models)")
    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if fmt == "tiktoken":
            tok = fn(path)
        else:
            try:
                tok = fn(path)
            except ParameterError as e:
                if "normalizer" not in str(e):
                    raise
                tok = fn(path, ignore_normalizer=True)
    for w in caught:
        msg = str(w.message)
        if msg not in notes:
            notes.append(msg)
    for msg in (tok.metadata.get("import") or {}).get("notes", []):
        if not any(msg in n for n in notes):
            notes.append(msg)
    return tok, {"source": path, "format": fmt, "notes": notes}


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


# ---------------------------------------------------------------------------
# Analysis
# ---------------------------------------------------------------------------


@dataclass
class _Model:
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


def _token_texts(tok: Tokenizer, doc: dict[str, Any]) -> tuple[list[bytes], list[str | None], set[int]]:
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


def _represented_len(raw: bytes, text: str | None) -> int:
    return len(raw) if text is None else len(text.encode("utf-8"))


def _encode(tok: Tokenizer, lines: list[str], threads: int | None) -> tuple[Any, Any]:
    import numpy as np

    kw: dict[str, Any] = {"threads": threads, "as_numpy": True}
    if tok.special_tokens:
        kw.update(allowed_special=(), disallowed_special=())
    ids, offsets = tok.encode_batch(lines, **kw)
    return np.asarray(ids, dtype=np.int64), np.asarray(offsets, dtype=np.int64)


def _curve_points(n_merges: int, points: int, extra: Iterable[int] = ()) -> list[int]:
    pts = {0, n_merges}
    p = max(points, 2)
    for i in range(p):
        pts.add(int(round(n_merges * (i / (p - 1)) ** 2)))
    pts.update(x for x in extra if 0 <= x <= n_merges)
    return sorted(pts)


def _pretok_doc(name: str) -> dict[str, Any]:
    if name in ("gpt2", "cl100k", "o200k", "whitespace", "none", "superword"):
        return {"type": name}
    return {"type": "regex", "pattern": name}


def _superbpe(m: _Model) -> tuple[int | None, str | None]:
    """(merge index where SuperBPE's stage 2 starts, stage-1 pre-tokenizer), or (None, None)."""
    sb = m.tok.metadata.get("superbpe")
    if not isinstance(sb, dict) or "transition" not in sb:
        return None, None
    base = m.tok.vocab_size - len(m.doc.get("merges", []))
    return max(0, int(sb["transition"]) - base), sb.get("stage1_pretokenizer")


def _compression(m: _Model, lines: list[str], points: int, threads: int | None) -> dict[str, Any]:
    merges = m.doc.get("merges", [])
    counts = m.doc.get("merge_counts", [])
    transition, stage1 = _superbpe(m)
    ks = _curve_points(len(merges), points, [transition] if transition else [])
    nbytes = sum(len(x.encode("utf-8")) for x in lines)
    tokens: list[int] = []
    for k in ks:
        if k == len(merges):
            t = m.tok
        else:
            d = dict(m.doc)
            d["merges"] = merges[:k]
            d["merge_counts"] = counts[:k] if counts else []
            d.pop("ids", None)  # external ids (imports): not needed to count tokens
            d["metadata"] = {}
            if transition is not None and stage1 and k <= transition:
                d["pretokenizer"] = _pretok_doc(stage1)
            t = Tokenizer.from_json(json.dumps(d))
        ids, _ = _encode(t, lines, threads)
        tokens.append(int(len(ids)))
    base = m.tok.vocab_size - len(merges)
    return {"merges": ks, "vocab_size": [base + k for k in ks], "tokens": tokens, "bytes": nbytes, "lines": len(lines),
            "bytes_per_token": [nbytes / t if t else 0.0 for t in tokens], "superbpe_transition": transition}


def _line_stats(lines: list[str]) -> dict[str, Any]:
    import numpy as np

    return {
        "bytes": np.fromiter((len(x.encode("utf-8")) for x in lines), dtype=np.int64, count=len(lines)),
        "chars": np.fromiter((len(x) for x in lines), dtype=np.int64, count=len(lines)),
        "words": np.fromiter((len(x.split()) for x in lines), dtype=np.int64, count=len(lines)),
    }


def _dominant_script(texts: list[str], budget: int = 6000) -> tuple[str, dict[str, float]]:
    c: Counter[str] = Counter()
    used = 0
    for t in texts:
        for ch in t[: budget - used]:
            s = char_script(ch)
            if s is not None and s != COMMON:
                c[s] += 1
        used += min(len(t), budget - used)
        if used >= budget:
            break
    total = sum(c.values())
    if not total:
        return COMMON, {}
    shares = {k: v / total for k, v in c.most_common(5)}
    return c.most_common(1)[0][0], shares


def _r(x: float, nd: int = 4) -> float:
    return float(round(float(x), nd))


# ---------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------


@dataclass
class Report:
    """Everything the report shows: ``figures`` (id -> :class:`Figure`, in page
    order), the models' summaries, the sample's description and a
    per-language table (when there is a language file)."""

    title: str
    models: list[dict[str, Any]]
    corpus: dict[str, Any]
    figures: dict[str, Figure]
    languages: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    created: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "bpeforge-report", "version": 1, "bpeforge": __version__, "created": self.created,
            "title": self.title, "models": self.models, "corpus": self.corpus, "notes": self.notes,
            "languages": self.languages, "timings": self.timings,
            "figures": [f.to_dict() for f in self.figures.values()],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, default=_json_default)

    def html(self, pngs: dict[str, bytes] | None = None) -> str:
        """The self-contained page (PNGs embedded as data: URIs)."""
        if pngs is None:
            pngs = {fid: f.png() for fid, f in self.figures.items()}
        return _html(self, pngs)

    def write(self, output: PathLike, *, overwrite: bool = True) -> dict[str, str]:
        """Write ``index.html``, ``<figure>.png``, ``<figure>.json`` and
        ``report.json`` into the directory ``output``, atomically: they are
        written to a temporary directory beside it, which then replaces it.
        An existing ``output`` is replaced only if it is empty or an earlier
        report (it has ``report.json``). Returns {name: path} of the files."""
        return _write(self, os.fspath(output), overwrite)


def build_report(
    model: Tokenizer | PathLike,
    corpus: PathLike | Iterable[str],
    *,
    langs: PathLike | Iterable[str] | None = None,
    compare: Tokenizer | PathLike | None = None,
    progress_csv: PathLike | Sequence[PathLike | None] | None = None,
    sample: int = DEFAULT_SAMPLE,
    seed: int = 0,
    curve_points: int = DEFAULT_CURVE_POINTS,
    curve_lines: int = DEFAULT_CURVE_LINES,
    top_langs: int = DEFAULT_TOP_LANGS,
    labels: Sequence[str] | None = None,
    threads: int | None = None,
) -> Report:
    """Measure ``model`` (and ``compare``) on a random sample of ``corpus``'s lines.

    Args:
        model, compare: a model file (bpeforge, SentencePiece ``.model``, Hugging
            Face ``tokenizer.json``, ``.tiktoken``) or a :class:`bpeforge.Tokenizer`.
        corpus: a text file (``.xz .gz .bz2 .zst`` ok), one text per line, or a
            sequence of str.
        langs: language tags, one per corpus line (a file or a sequence); adds
            the per-language figures.
        progress_csv: a training progress CSV (or one per model, None to skip one)
            for the ``training_progress`` figure.
        sample: lines sampled uniformly at random (0: every line); ``seed`` for it.
        curve_points, curve_lines: the compression curve encodes the first
            ``curve_lines`` sampled lines with ``curve_points`` truncated models.
        top_langs: languages shown in the per-language figures (the most
            frequent in the sample; all of them are in the JSON).
        labels: names of the models in the figures (default: file names).
        threads: encoding threads (None: all cores).
    """
    try:
        import numpy as np
    except ImportError as e:  # pragma: no cover - numpy comes with matplotlib
        raise ParameterError("the report needs numpy: pip install 'bpeforge[plot]'") from e

    for name, v, lo in (("sample", sample, 0), ("curve_points", curve_points, 2), ("curve_lines", curve_lines, 1),
                        ("top_langs", top_langs, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ParameterError(f"{name} must be an integer >= {lo}, got {v!r}")
    csvs: list[PathLike | None]
    if progress_csv is None:
        csvs = []
    elif isinstance(progress_csv, (str, os.PathLike)):
        csvs = [progress_csv]
    else:
        csvs = list(progress_csv)
    n_models = 1 + (compare is not None)
    if len(csvs) > n_models:
        raise ParameterError(f"{len(csvs)} progress CSVs for {n_models} model(s): give at most one per model")
    for c in csvs:
        if c is not None and not os.path.isfile(os.fspath(c)):
            raise ParameterError(f"progress CSV {os.fspath(c)}: no such file")
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    sources = [model] + ([compare] if compare is not None else [])
    loaded = [load_model(s) for s in sources]
    models: list[_Model] = []
    for i, (tok, info) in enumerate(loaded):
        label = labels[i] if labels and i < len(labels) and labels[i] else _default_label(sources[i], i)
        doc = json.loads(tok.to_json())
        raw, texts, specials = _token_texts(tok, doc)
        models.append(_Model(label, tok, info, doc, texts, raw, specials))
    if len(models) == 2 and models[0].label == models[1].label:
        models[1].label += " (compare)"
    timings["load_models"] = time.perf_counter() - t0

    t = time.perf_counter()
    lines, tags, corpus_info = _sample_lines(corpus, langs, sample, seed)
    stats = _line_stats(lines)
    corpus_info.update(sample_bytes=int(stats["bytes"].sum()), sample_chars=int(stats["chars"].sum()),
                       sample_words=int(stats["words"].sum()))
    timings["sample"] = time.perf_counter() - t

    t = time.perf_counter()
    for m in models:
        m.ids, m.offsets = _encode(m.tok, lines, threads)
        m.counts = np.bincount(m.ids, minlength=len(m.raw)) if len(m.ids) else np.zeros(len(m.raw), dtype=np.int64)
    timings["encode"] = time.perf_counter() - t

    figures: dict[str, Figure] = {}
    notes: list[str] = []
    figures["pair_frequency"] = _fig_pair_frequency(models)

    t = time.perf_counter()
    curve_sample = lines[: min(curve_lines, len(lines))]
    curves = [_compression(m, curve_sample, curve_points, threads) for m in models]
    figures["compression"] = _fig_compression(models, curves)
    timings["compression_curve"] = time.perf_counter() - t

    figures["token_length"] = _fig_token_length(models)
    figures["scripts"] = _fig_scripts(models)

    languages: list[dict[str, Any]] = []
    if tags is not None:
        t = time.perf_counter()
        lang_figs, languages = _language_figures(models, lines, tags, stats, top_langs)
        figures.update(lang_figs)
        if len(models) == 2:
            figures["lang_change"] = _fig_language_change(models, languages, top_langs)
        corpus_info["languages"] = len(languages)
        timings["languages"] = time.perf_counter() - t

    if any(c is not None for c in csvs):
        figures["training_progress"] = _fig_progress(models, csvs)

    summaries = [_model_summary(m, stats, curves[i]) for i, m in enumerate(models)]
    for s in summaries:
        for n in s["notes"]:
            notes.append(f"{s['label']}: {n}")
    title = "Vocabulary report: " + " vs ".join(m.label for m in models)
    timings["total"] = time.perf_counter() - t0
    return Report(
        title=title, models=summaries, corpus=corpus_info, figures=figures, languages=languages, notes=notes,
        timings={k: round(v, 3) for k, v in timings.items()},
        created=_dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
    )


def write_report(output: PathLike, model: Tokenizer | PathLike, corpus: PathLike | Iterable[str], **kwargs: Any) -> Report:
    """:func:`build_report` then :meth:`Report.write` to ``output``; returns the report."""
    rep = build_report(model, corpus, **kwargs)
    rep.write(output)
    return rep


def _default_label(source: Any, i: int) -> str:
    if isinstance(source, Tokenizer):
        return "model" if i == 0 else "compare"
    name = os.path.basename(os.path.normpath(os.fspath(source)))
    for ext in (".json.gz", ".json", ".model", ".tiktoken"):
        if name.lower().endswith(ext) and len(name) > len(ext):
            return name[: -len(ext)]
    return name or f"model {i + 1}"


def _model_summary(m: _Model, stats: dict[str, Any], curve: dict[str, Any]) -> dict[str, Any]:
    meta = m.tok.metadata
    ntok = int(len(m.ids))
    nbytes = int(stats["bytes"].sum())
    unk_id = None
    if m.tok.scheme == "chars":
        unk = (m.doc.get("scheme") or {}).get("unk_token")
        unk_id = m.tok.token_to_id(unk) if unk else None
    used = int((m.counts > 0).sum())
    s: dict[str, Any] = {
        "label": m.label, "source": m.info["source"], "format": m.info["format"], "scheme": m.tok.scheme,
        "pretokenizer": m.tok.pretokenizer if len(m.tok.pretokenizer) < 60 else m.tok.pretokenizer[:57] + "...",
        "vocab_size": m.tok.vocab_size, "merges": len(m.doc.get("merges", [])),
        "special_tokens": len(m.tok.special_tokens), "has_pair_counts": bool(m.doc.get("merge_counts")),
        "sample_tokens": ntok, "bytes_per_token": _r(nbytes / ntok if ntok else 0.0),
        "tokens_per_word": _r(ntok / max(1, int(stats["words"].sum()))),
        "tokens_per_char": _r(ntok / max(1, int(stats["chars"].sum()))),
        "vocab_used_in_sample": _r(used / max(1, len(m.raw))),
        "notes": list(m.info.get("notes", [])),
    }
    if unk_id is not None:
        s["unk_rate"] = _r(int(m.counts[unk_id]) / ntok if ntok else 0.0, 6)
    lb = meta.get("language_balance")
    if isinstance(lb, dict):
        s["language_balance_temperature"] = lb.get("temperature")
    sb = meta.get("superbpe")
    if isinstance(sb, dict):
        s["superbpe_transition"] = sb.get("transition")
    corpus = meta.get("corpus")
    if isinstance(corpus, dict) and corpus.get("bytes"):
        s["trained_on_bytes"] = corpus.get("bytes")
    if meta.get("inputs"):
        s["trained_on"] = [str(x.get("path", x)) if isinstance(x, dict) else str(x) for x in meta["inputs"]][:5]
    return s


def _fig_pair_frequency(models: list[_Model]) -> Figure:
    series = []
    notes = []
    vlines = []
    for i, m in enumerate(models):
        counts = m.doc.get("merge_counts") or []
        if counts:
            series.append(Series(m.label, [int(c) for c in counts], list(range(1, len(counts) + 1)), COLORS[i]))
            tr, _ = _superbpe(m)
            if tr:
                vlines.append((tr + 0.5, f"{m.label}: SuperBPE stage 2"))
        else:
            notes.append(f"{m.label}: the model records no pair counts (models imported from other libraries do not), so it has no curve here.")
    panel = Panel("line", "Pair frequency by merge index", "merge index (rank of the merge)",
                  "pair count when merged (log scale)", series, yscale="log", vlines=vlines,
                  empty_text="no pair counts recorded in the model(s)")
    return Figure(
        "pair_frequency", "Pair frequency by merge index",
        "How often the chosen pair occurred in the training corpus at the moment each merge was learned, "
        "by merge index (the first merge is 1). The curve falls as merges go on; where it flattens near "
        "min_frequency, later merges add rare tokens.",
        [panel], notes,
    )


def _fig_compression(models: list[_Model], curves: list[dict[str, Any]]) -> Figure:
    series = [Series(m.label, c["tokens"], c["vocab_size"], COLORS[i]) for i, (m, c) in enumerate(zip(models, curves))]
    vlines = [(c["superbpe_transition"] + c["vocab_size"][0], f"{m.label}: SuperBPE stage 2")
              for m, c in zip(models, curves) if c["superbpe_transition"]]
    c0 = curves[0]
    panel = Panel("line", "Corpus token count as merges grow", "vocabulary size (base symbols and specials + the first k merges)",
                  f"tokens in the sample ({c0['lines']:,} lines, {c0['bytes'] / 1e6:.2f} MB)", series, vlines=vlines)
    notes = [
        f"{m.label}: {c['tokens'][0]:,} tokens with no merge, {c['tokens'][-1]:,} with all {c['merges'][-1]:,} "
        f"merges ({c['bytes_per_token'][-1]:.2f} bytes per token)."
        for m, c in zip(models, curves)
    ]
    return Figure(
        "compression", "Corpus token count as merges grow",
        f"The same {c0['lines']:,} sampled lines encoded with models cut to their first k merges "
        f"({len(c0['merges'])} values of k, denser at the start where each merge matters most), plotted against "
        "the vocabulary size they give, so models with different base alphabets line up. "
        "Lower is better compression; the flattening tail shows how little the last merges add on this text.",
        [panel], notes, data={"curves": [dict(c, label=m.label) for m, c in zip(models, curves)]},
    )


def _fig_token_length(models: list[_Model]) -> Figure:
    longest_b = max((_represented_len(r, t) for m in models for i, (r, t) in enumerate(zip(m.raw, m.texts))
                     if i not in m.specials), default=1)
    longest_c = max((len(t) for m in models for i, t in enumerate(m.texts) if t is not None and i not in m.specials),
                    default=1)
    cap_b, cap_c = max(4, min(24, longest_b)), max(4, min(16, longest_c))
    panels = []
    data: dict[str, Any] = {}
    for unit, cap in (("bytes", cap_b), ("characters", cap_c)):
        series = []
        for i, m in enumerate(models):
            hist = [0] * (cap + 1)
            for tid, (raw, text) in enumerate(zip(m.raw, m.texts)):
                if tid in m.specials:
                    continue
                if unit == "bytes":
                    n = _represented_len(raw, text)
                elif text is None:
                    continue
                else:
                    n = len(text)
                hist[min(n, cap)] += 1
            series.append(Series(m.label, hist[1:], None, COLORS[i]))
            data.setdefault(m.label, {})[unit] = {str(k): v for k, v in enumerate(hist) if k and v}
        longest = longest_b if unit == "bytes" else longest_c
        cats = [str(k) for k in range(1, cap)] + [f"≥{cap}" if longest > cap else str(cap)]
        title = "in UTF-8 bytes" if unit == "bytes" else "in characters (valid UTF-8 tokens)"
        panels.append(Panel("bar", f"Token length {title}", f"length ({unit})", "tokens in the vocabulary",
                            series, categories=cats))
    return Figure(
        "token_length", "Token length histogram",
        "Number of vocabulary entries by length: in bytes of the text they stand for (left), and in "
        "characters for the entries that are whole UTF-8 text (right). Special tokens are left out; in the "
        "chars scheme the word-boundary marker counts as one space.",
        panels, [], data=data, layout="column",
    )


def _fig_scripts(models: list[_Model]) -> Figure:
    import numpy as np

    per_model: list[tuple[dict[str, float], dict[str, float]]] = []
    data: dict[str, Any] = {}
    for m in models:
        buckets = [SPECIAL if i in m.specials else (BYTES if t is None else token_script(t)) for i, t in enumerate(m.texts)]
        vocab = Counter(buckets)
        V = len(buckets)
        used: Counter[str] = Counter()
        nz = np.nonzero(m.counts)[0]
        for tid in nz.tolist():
            used[buckets[tid]] += int(m.counts[tid])
        total_used = sum(used.values()) or 1
        vs = {k: v / V for k, v in vocab.items()}
        us = {k: v / total_used for k, v in used.items()}
        per_model.append((vs, us))
        data[m.label] = {"vocabulary_entries": dict(vocab.most_common()), "vocabulary_share": {k: _r(v, 6) for k, v in sorted(vs.items(), key=lambda kv: -kv[1])},
                         "sample_token_share": {k: _r(v, 6) for k, v in sorted(us.items(), key=lambda kv: -kv[1])}}
    keys: dict[str, float] = {}
    for vs, _us in per_model:
        for k, v in vs.items():
            keys[k] = max(keys.get(k, 0.0), v)
    top = sorted(keys, key=lambda k: -keys[k])[:16]
    rest = [k for k in keys if k not in top]
    cats = top + (["other scripts"] if rest else [])
    panels = []
    for j, (title, xlabel) in enumerate((("Share of the vocabulary", "share of vocabulary ids"),
                                          ("Share of the tokens in the sample", "share of sample tokens"))):
        series = []
        for i, (m, pair) in enumerate(zip(models, per_model)):
            d = pair[j]
            ys = [d.get(k, 0.0) for k in top] + ([sum(d.get(k, 0.0) for k in rest)] if rest else [])
            series.append(Series(m.label, [_r(y, 6) for y in ys], None, COLORS[i]))
        panels.append(Panel("barh", title, xlabel, "", series, categories=cats, percent=True))
    return Figure(
        "scripts", "Vocabulary share by Unicode script",
        "Each token is put in the script of its letters (Latin, Cyrillic, Han, ...; Hiragana and Katakana "
        "together as Kana); \"Common\" holds tokens with no letter (digits, punctuation, spaces), \"Mixed "
        "scripts\" tokens with letters of two or more scripts, and \"bytes (partial UTF-8)\" byte-level tokens "
        "that are not whole characters. Left: share of the vocabulary's ids; right: share of the tokens "
        "produced on the sample, i.e. weighted by use.",
        panels, [], data=data,
    )


def _language_figures(
    models: list[_Model], lines: list[str], tags: list[str], stats: dict[str, Any], top: int
) -> tuple[dict[str, Figure], list[dict[str, Any]]]:
    import numpy as np

    order = Counter(tags).most_common()
    names = [n for n, _ in order]
    index = {n: i for i, n in enumerate(names)}
    L = len(names)
    lang = np.fromiter((index[t] for t in tags), dtype=np.int64, count=len(tags))
    nlines = np.bincount(lang, minlength=L)
    nbytes = np.bincount(lang, weights=stats["bytes"], minlength=L)
    nchars = np.bincount(lang, weights=stats["chars"], minlength=L)
    nwords = np.bincount(lang, weights=stats["words"], minlength=L)
    by_lang: dict[int, list[str]] = {}
    for line, li in zip(lines, lang.tolist()):
        lst = by_lang.setdefault(li, [])
        if len(lst) < 40:
            lst.append(line)
    scripts = [_dominant_script(by_lang.get(i, [])) for i in range(L)]
    no_space = []
    for i in range(L):
        cpw = nchars[i] / max(1.0, nwords[i])
        no_space.append(scripts[i][0] in NO_SPACE_SCRIPTS or cpw > 15)

    table: list[dict[str, Any]] = [{"lang": names[i], "lines": int(nlines[i]), "bytes": int(nbytes[i]), "words": int(nwords[i]),
              "chars": int(nchars[i]), "script": scripts[i][0], "no_spaces": bool(no_space[i]), "models": {}}
             for i in range(L)]
    per_model: list[dict[str, Any]] = []
    for m in models:
        V = len(m.raw)
        ntok_line = np.diff(m.offsets)
        ntok = np.bincount(lang, weights=ntok_line, minlength=L)
        tok_lang = np.repeat(lang, ntok_line)
        key = tok_lang * V + m.ids
        uniq, cnt = np.unique(key, return_counts=True)
        l_of, id_of = uniq // V, uniq % V
        used = np.bincount(l_of, minlength=L)
        # main user of each id: the language with most of its occurrences (ties: the larger language)
        o = np.lexsort((-l_of, cnt, id_of))
        ids_sorted = id_of[o]
        last = np.ones(len(o), dtype=bool)
        if len(o) > 1:
            last[:-1] = ids_sorted[:-1] != ids_sorted[1:]
        owned = np.bincount(l_of[o][last], minlength=L)
        r = {"tokens": ntok, "used": used / V, "owned": owned / V, "V": V}
        per_model.append(r)
        for i in range(L):
            table[i]["models"][m.label] = {
                "tokens": int(ntok[i]),
                "bytes_per_token": _r(nbytes[i] / ntok[i] if ntok[i] else 0.0),
                "tokens_per_word": _r(ntok[i] / nwords[i] if nwords[i] else 0.0),
                "tokens_per_char": _r(ntok[i] / nchars[i] if nchars[i] else 0.0),
                "vocab_used": _r(used[i] / V, 6), "vocab_main_user": _r(owned[i] / V, 6),
            }
    shown = list(range(min(top, L)))
    cats = [names[i] + ("†" if no_space[i] else "") for i in shown]
    hatched = [bool(no_space[i]) for i in shown]
    more = f" The {len(shown)} most frequent of the {L} languages in the sample are shown; report.json has all." if L > len(shown) else ""
    ns_note = ("† written without spaces between words (or in long runs of letters): tokens per word is not "
               "comparable there (hatched); tokens per character is.")

    def series(fn: Any) -> list[Series]:
        return [Series(m.label, [_r(fn(r, i)) for i in shown], None, COLORS[k]) for k, (m, r) in enumerate(zip(models, per_model))]

    figs: dict[str, Figure] = {}
    figs["lang_bytes_per_token"] = Figure(
        "lang_bytes_per_token", "Bytes per token, by language",
        "UTF-8 bytes of the language's sampled lines divided by the tokens they encode to: higher means the "
        "vocabulary compresses that language better. Scripts outside ASCII need 2-4 bytes per character, so "
        "compare a language with itself across models rather than languages with each other." + more,
        [Panel("bar", "Bytes per token", "language", "UTF-8 bytes per token",
               series(lambda r, i: nbytes[i] / r["tokens"][i] if r["tokens"][i] else 0.0), categories=cats)],
        [],
    )
    figs["lang_fertility"] = Figure(
        "lang_fertility", "Fertility: tokens per word, by language",
        "Tokens per whitespace-separated word (left) and per character (right) on each language's sampled "
        "lines. 1.0 token per word means whole words are single tokens." + more,
        [Panel("bar", "Tokens per word", "language", "tokens per word",
               series(lambda r, i: r["tokens"][i] / nwords[i] if nwords[i] else 0.0), categories=cats, hatched=hatched),
         Panel("bar", "Tokens per character", "language", "tokens per character",
               series(lambda r, i: r["tokens"][i] / nchars[i] if nchars[i] else 0.0), categories=cats)],
        [ns_note] if any(hatched) else [], layout="column",
    )
    figs["lang_vocab_share"] = Figure(
        "lang_vocab_share", "Share of the vocabulary, by language",
        "Left, used: the fraction of the vocabulary's ids that occur at least once in the language's sampled "
        "lines (languages overlap, and a language with few sampled lines uses fewer ids). Right, main user: the "
        "fraction of ids for which the language produced the most occurrences in the sample; each id counts "
        "for one language (ties go to the language with more lines), ids unused in the sample for none." + more,
        [Panel("bar", "Used: ids that occur in the language", "language", "share of vocabulary ids",
               series(lambda r, i: r["used"][i]), categories=cats, percent=True),
         Panel("bar", "Main user: ids the language uses most", "language", "share of vocabulary ids",
               series(lambda r, i: r["owned"][i]), categories=cats, percent=True)],
        [f"{m.label}: {int((m.counts > 0).sum()):,} of {len(m.raw):,} ids occur in the sample." for m in models],
        layout="column",
    )
    return figs, table


#: Languages with fewer sampled lines are left out of the change figure (too noisy).
CHANGE_MIN_LINES = 20


def _fig_language_change(models: list[_Model], table: list[dict[str, Any]], top: int) -> Figure:
    """How many more or fewer tokens the first model needs than the second, per language:
    the largest languages beside the ones the second model serves worst."""
    a, b = models[0].label, models[1].label
    rows = [r for r in table if r["lines"] >= CHANGE_MIN_LINES and r["models"][b]["tokens"] > 0]
    if not rows:
        return Figure("lang_change", f"Tokens per language: {a} vs {b}", "No language has enough sampled lines.",
                      [Panel("bar", "Change in tokens", "language", "change", [], empty_text="no language with "
                             f"{CHANGE_MIN_LINES}+ sampled lines")])
    ref = max(rows, key=lambda r: r["bytes"])  # the largest language by bytes is the reference
    ref_bpt = ref["models"][b]["bytes_per_token"]

    def change(r: dict[str, Any]) -> float:
        return r["models"][a]["tokens"] / r["models"][b]["tokens"] - 1.0

    def premium(r: dict[str, Any], label: str) -> float:
        bpt = r["models"][label]["bytes_per_token"]
        ref_l = ref["models"][label]["bytes_per_token"]
        return ref_l / bpt if bpt else 0.0

    k = max(1, top // 2)
    largest = sorted(rows, key=lambda r: -r["bytes"])[:k]
    costly = sorted((r for r in rows if r is not ref), key=lambda r: -premium(r, b))[:k]
    panels = [
        Panel("bar", f"The {len(largest)} largest languages", "language (most bytes first)",
              f"tokens, {a} vs {b}", [Series(a, [_r(change(r)) for r in largest], None, COLORS[0])],
              categories=[r["lang"] for r in largest], percent=True),
        Panel("bar", f"The {len(costly)} costliest languages under {b}", "language (highest premium first)",
              f"tokens, {a} vs {b}", [Series(a, [_r(change(r)) for r in costly], None, COLORS[2])],
              categories=[f"{r['lang']} ({premium(r, b):.2f}\u2192{premium(r, a):.2f})" for r in costly],
              percent=True),
    ]
    data = {
        "reference": ref["lang"],
        "languages": [{"lang": r["lang"], "lines": r["lines"], "bytes": r["bytes"], "token_change": _r(change(r)),
                       "premium": {a: _r(premium(r, a)), b: _r(premium(r, b))}} for r in rows],
    }
    return Figure(
        "lang_change", f"Tokens per language: {a} vs {b}",
        f"The change in the number of tokens {a} needs for each language's sampled lines, relative to {b} "
        f"(below 0: fewer tokens, better). Left: the languages with the most sampled bytes; right: the "
        f"languages {b} serves worst, by premium (the bytes per token of the largest language, "
        f"{ref['lang']}, divided by the language's own; shown as {b}\u2192{a}). Languages with fewer than "
        f"{CHANGE_MIN_LINES} sampled lines are left out; the figure's JSON has every language.",
        panels, [], data, layout="column",
    )


def _fig_progress(models: list[_Model], csvs: list[PathLike | None]) -> Figure:
    s_count, s_time, notes = [], [], []
    data: dict[str, Any] = {}
    for i, path in enumerate(csvs):
        if path is None:
            continue
        d = read_progress_csv(path)
        label = models[i].label if i < len(models) else f"run {i + 1}"
        s_count.append(Series(label, d["pair_count"], d["merge"], COLORS[i]))
        s_time.append(Series(label, d["elapsed_s"], d["merge"], COLORS[i]))
        data[label] = dict(d, path=os.fspath(path))
        el = d["elapsed_s"][-1] if d["elapsed_s"] else 0.0
        notes.append(f"{label}: {len(d['merge']):,} merges in {el:.2f} s"
                     + (f" ({len(d['merge']) / el:,.0f} merges/s)" if el > 0 else "") + f" ({os.path.basename(os.fspath(path))}).")
    return Figure(
        "training_progress", "Training progress (merge phase)",
        "From the progress CSV the merge loop writes as it goes (merge index, pair count, elapsed seconds since "
        "the merge phase started): the pair count of each merge (left, log scale) and the time taken to reach it "
        "(right). A live file is drawn as far as it has been written.",
        [Panel("line", "Pair count by merge", "merge index", "pair count (log scale)", s_count, yscale="log"),
         Panel("line", "Elapsed time by merge", "merge index", "seconds since the merge phase began", s_time)],
        notes, data=data,
    )


# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------

_CSS = """
:root { --fg:#1d2330; --muted:#5b6475; --line:#d9dee7; --bg:#ffffff; --panel:#f6f8fb; --accent:#1f6fb4; }
* { box-sizing: border-box; }
body { margin:0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "DejaVu Sans", sans-serif;
       color:var(--fg); background:var(--bg); }
header { background:#14304f; color:#fff; padding:22px 32px 18px; }
header h1 { margin:0 0 4px; font-size:24px; font-weight:650; }
header p { margin:0; color:#c9d6e6; font-size:14px; }
main { max-width:1200px; margin:0 auto; padding:8px 32px 40px; }
nav { background:var(--panel); border:1px solid var(--line); border-radius:8px; padding:10px 16px; margin:20px 0; font-size:14px; }
nav a { color:var(--accent); text-decoration:none; margin-right:14px; white-space:nowrap; line-height:1.9; }
nav a:hover { text-decoration:underline; }
h2 { font-size:19px; margin:34px 0 6px; padding-top:8px; border-top:1px solid var(--line); }
p.desc { color:var(--muted); margin:4px 0 12px; max-width:900px; }
figure { margin:0; }
figure img { display:block; max-width:100%; height:auto; border:1px solid var(--line); border-radius:6px; background:#fff; }
figcaption { font-size:13.5px; color:var(--fg); margin-top:8px; }
figcaption ul { margin:4px 0; padding-left:20px; }
.files { font-size:12.5px; color:var(--muted); margin:6px 0 0; }
.files a { color:var(--muted); }
table { border-collapse:collapse; font-size:13px; margin:8px 0 4px; }
th, td { border-bottom:1px solid var(--line); padding:5px 9px; text-align:left; vertical-align:top; }
th { background:var(--panel); font-weight:600; }
td.num, th.num { text-align:right; font-variant-numeric: tabular-nums; }
.scroll { overflow-x:auto; }
.note { background:#fff8e6; border:1px solid #f0dca8; border-radius:6px; padding:8px 12px; font-size:13.5px; margin:10px 0; }
dl.defs { font-size:13.5px; display:grid; grid-template-columns: max-content 1fr; gap:4px 14px; margin:8px 0; }
dl.defs dt { font-weight:600; }
dl.defs dd { margin:0; color:var(--muted); }
footer { color:var(--muted); font-size:12.5px; border-top:1px solid var(--line); margin-top:40px; padding-top:10px; }
code { font-size:12.5px; background:var(--panel); padding:1px 4px; border-radius:3px; }
"""


def _json_default(o: Any) -> Any:
    """numpy scalars and arrays as plain JSON values."""
    if hasattr(o, "tolist"):
        return o.tolist()
    if hasattr(o, "item"):
        return o.item()
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.3f}" if abs(v) < 100 else f"{v:,.0f}"
    if v is None:
        return "–"
    return str(v)


def _png_size(png: bytes) -> tuple[int, int]:
    if png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) >= 24:
        return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    return 0, 0


def _html(rep: Report, pngs: dict[str, bytes]) -> str:
    out: list[str] = []
    w = out.append
    w("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
    w("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
    w("<link rel=\"icon\" href=\"data:,\">\n")
    w(f"<title>{_e(rep.title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n")
    c = rep.corpus
    w(f"<header><h1>{_e(rep.title)}</h1><p>{c.get('sampled_lines', 0):,} lines sampled from "
      f"{_e(os.path.basename(str(c.get('path', ''))))} · bpeforge {_e(__version__)} · {_e(rep.created)}</p></header>\n")
    w("<main>\n<nav><strong>Contents:</strong>\n<a href=\"#models\">Models</a>\n<a href=\"#sample\">Sample</a>\n")
    for fid, f in rep.figures.items():
        w(f"<a href=\"#{_e(fid)}\">{_e(f.title)}</a>\n")
    if rep.languages:
        w("<a href=\"#languages\">Languages table</a>\n")
    w("</nav>\n")

    # models
    w("<section id=\"models\"><h2>Models</h2>\n<div class=\"scroll\"><table>\n<tr><th></th>")
    for m in rep.models:
        w(f"<th>{_e(m['label'])}</th>")
    w("</tr>\n")
    rows = [
        ("file", "source"), ("format", "format"), ("scheme", "scheme"), ("pre-tokenizer", "pretokenizer"),
        ("vocabulary size", "vocab_size"), ("merges", "merges"), ("special tokens", "special_tokens"),
        ("language balancing (temperature)", "language_balance_temperature"), ("SuperBPE transition", "superbpe_transition"),
        ("bytes per token (sample)", "bytes_per_token"), ("tokens per word (sample)", "tokens_per_word"),
        ("tokens per character (sample)", "tokens_per_char"), ("vocabulary used in the sample", "vocab_used_in_sample"),
        ("<unk> rate (sample tokens)", "unk_rate"),
    ]
    for title, key in rows:
        if not any(key in m for m in rep.models):
            continue
        w(f"<tr><th>{_e(title)}</th>")
        for m in rep.models:
            v = m.get(key)
            if key == "vocab_used_in_sample" and v is not None:
                txt = f"{v * 100:.1f}%"
            elif key == "unk_rate" and v is not None:
                txt = f"{v * 100:.3f}%"
            elif key == "source":
                txt = os.path.basename(str(v)) or str(v)
            else:
                txt = _fmt(v)
            cls = " class=\"num\"" if isinstance(v, (int, float)) and not isinstance(v, bool) else ""
            w(f"<td{cls}>{_e(txt)}</td>")
        w("</tr>\n")
    w("</table></div>\n")
    for n in rep.notes:
        w(f"<p class=\"note\">{_e(n)}</p>\n")
    w("</section>\n")

    # sample
    w("<section id=\"sample\"><h2>Sample</h2>\n<p class=\"desc\">All measurements use a uniform random sample of "
      "the corpus's non-empty lines (seeded, so the page is reproducible), encoded once per model; the compression "
      "curve re-encodes the first part of it with truncated models.</p>\n<table>\n")
    srows = [("corpus", os.path.basename(str(c.get("path", "")))), ("language file", os.path.basename(str(c["langs_path"])) if c.get("langs_path") else "none"),
             ("lines in corpus (non-empty)", f"{c.get('lines', 0):,} ({c.get('nonempty_lines', 0):,})"),
             ("lines sampled", f"{c.get('sampled_lines', 0):,} (seed {c.get('seed')})"),
             ("sample size", f"{c.get('sample_bytes', 0) / 1e6:.2f} MB, {c.get('sample_chars', 0):,} characters, {c.get('sample_words', 0):,} words")]
    if "languages" in c:
        srows.append(("languages in the sample", f"{c['languages']:,}"))
    for k, v in srows:
        w(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>\n")
    w("</table>\n<dl class=\"defs\"><dt>word</dt><dd>a whitespace-separated run of characters (<code>str.split()</code>)</dd>"
      "<dt>character</dt><dd>a Unicode code point</dd><dt>bytes</dt><dd>UTF-8 bytes of the text</dd></dl>\n</section>\n")

    # figures
    for fid, f in rep.figures.items():
        png = pngs.get(fid, b"")
        wd, ht = _png_size(png)
        b64 = base64.b64encode(png).decode("ascii")
        w(f"<section id=\"{_e(fid)}\"><h2>{_e(f.title)}</h2>\n<p class=\"desc\">{_e(f.description)}</p>\n<figure>")
        size = f" width=\"{wd}\" height=\"{ht}\"" if wd else ""
        w(f"<img src=\"data:image/png;base64,{b64}\" alt=\"{_e(f.title)}\"{size}>")
        if f.notes:
            w("<figcaption><ul>" + "".join(f"<li>{_e(n)}</li>" for n in f.notes) + "</ul></figcaption>")
        w(f"</figure>\n<p class=\"files\">Files: <a href=\"{_e(fid)}.png\">{_e(fid)}.png</a> · "
          f"data <a href=\"{_e(fid)}.json\">{_e(fid)}.json</a></p>\n</section>\n")

    # languages table
    if rep.languages:
        w("<section id=\"languages\"><h2>Languages table</h2>\n<p class=\"desc\">Per language in the sample, most "
          "lines first (up to 60 rows here; report.json has all). † marks languages written without spaces between words.</p>\n")
        w("<div class=\"scroll\"><table>\n<tr><th>language</th><th>script</th><th class=\"num\">lines</th><th class=\"num\">bytes</th>")
        for m in rep.models:
            lab = _e(m["label"])
            w(f"<th class=\"num\">bytes/token<br>{lab}</th><th class=\"num\">tokens/word<br>{lab}</th>"
              f"<th class=\"num\">tokens/char<br>{lab}</th><th class=\"num\">ids used<br>{lab}</th>")
        w("</tr>\n")
        for row in rep.languages[:60]:
            w(f"<tr><td>{_e(row['lang'])}{'†' if row['no_spaces'] else ''}</td><td>{_e(row['script'])}</td>"
              f"<td class=\"num\">{row['lines']:,}</td><td class=\"num\">{row['bytes']:,}</td>")
            for m in rep.models:
                r = row["models"][m["label"]]
                w(f"<td class=\"num\">{r['bytes_per_token']:.2f}</td><td class=\"num\">{r['tokens_per_word']:.2f}</td>"
                  f"<td class=\"num\">{r['tokens_per_char']:.3f}</td><td class=\"num\">{r['vocab_used'] * 100:.1f}%</td>")
            w("</tr>\n")
        w("</table></div>\n</section>\n")

    t = rep.timings
    w(f"<footer>Generated by <code>bpeforge report</code> (bpeforge {_e(__version__)}) in {t.get('total', 0):.1f} s. "
      "All the numbers in the figures are in <a href=\"report.json\">report.json</a> and the per-figure JSON files."
      "</footer>\n</main>\n</body>\n</html>\n")
    return "".join(out)


def _write(rep: Report, output: str, overwrite: bool) -> dict[str, str]:
    output = os.path.abspath(output)
    parent = os.path.dirname(output) or "."
    if os.path.exists(output):
        if not os.path.isdir(output):
            raise OutputError(f"{output} exists and is not a directory")
        entries = os.listdir(output)
        if entries and not (overwrite and "report.json" in entries):
            raise OutputError(f"{output} is not empty and holds no earlier report (no report.json): "
                              "refusing to replace it; pick a new or empty directory")
    try:
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(output)}.tmp-", dir=parent)
    except OSError as e:
        raise OutputError(f"cannot write {output}: {e.strerror or e}") from e
    files: dict[str, str] = {}
    try:
        pngs: dict[str, bytes] = {}
        for fid, f in rep.figures.items():
            png = f.png()
            pngs[fid] = png
            with open(os.path.join(tmp, f"{fid}.png"), "wb") as fh:
                fh.write(png)
            with open(os.path.join(tmp, f"{fid}.json"), "w", encoding="utf-8") as fh:
                json.dump(f.to_dict(), fh, ensure_ascii=False, default=_json_default)
            files[f"{fid}.png"] = f"{fid}.png"
            files[f"{fid}.json"] = f"{fid}.json"
        with open(os.path.join(tmp, "report.json"), "w", encoding="utf-8") as fh:
            fh.write(rep.to_json())
        with open(os.path.join(tmp, "index.html"), "w", encoding="utf-8") as fh:
            fh.write(rep.html(pngs))
        files["report.json"] = "report.json"
        files["index.html"] = "index.html"
        os.chmod(tmp, 0o755)
        old = None
        if os.path.exists(output):
            old = tempfile.mkdtemp(prefix=f".{os.path.basename(output)}.old-", dir=parent)
            os.rmdir(old)
            os.rename(output, old)
        try:
            os.rename(tmp, output)
        except OSError:
            if old is not None:
                os.rename(old, output)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise OutputError(f"cannot write {output}: {e.strerror or e}") from e
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {name: os.path.join(output, rel) for name, rel in files.items()}
