"""The report as data: :class:`Series`, :class:`Panel` and :class:`Figure`
hold the plotted numbers (``to_dict()`` is JSON-ready), :class:`Report` all
of it. Drawing, the page and writing to disk are in their own modules."""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass, field
from collections.abc import Sequence
from typing import Any, Union

from .._native import __version__
from .draw import render
from .output import json_default, write_directory
from .page import html_page

PathLike = Union[str, "os.PathLike[str]"]

COLORS = ("#1f6fb4", "#e8743b", "#2ca02c", "#9467bd")


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
    caption: str = ""
    """Drawn under the panels in the PNG itself, so the image reads alone
    (without the HTML page): the key to marks and the sign of a change."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "title": self.title, "description": self.description, "notes": self.notes,
            "caption": self.caption,
            "panels": [p.to_dict() for p in self.panels], "data": self.data,
        }

    def render(self, dpi: int = 100) -> Any:
        """A ``matplotlib.figure.Figure`` (Agg canvas; pyplot's global state is not touched)."""
        return render(self, dpi)

    def png(self, dpi: int = 100) -> bytes:
        """The figure as PNG bytes."""
        fig = self.render(dpi)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi)
        return buf.getvalue()


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
    parallel: list[dict[str, Any]] = field(default_factory=list)  # premiums on a parallel set, per language

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "bpeforge-report", "version": 1, "bpeforge": __version__, "created": self.created,
            "title": self.title, "models": self.models, "corpus": self.corpus, "notes": self.notes,
            "languages": self.languages, "timings": self.timings,
            "figures": [f.to_dict() for f in self.figures.values()],
            **({"parallel": self.parallel} if self.parallel else {}),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, default=json_default)

    def html(self, pngs: dict[str, bytes] | None = None) -> str:
        """The self-contained page (PNGs embedded as data: URIs)."""
        if pngs is None:
            pngs = {fid: f.png() for fid, f in self.figures.items()}
        return html_page(self, pngs)

    def write(self, output: PathLike, *, overwrite: bool = True) -> dict[str, str]:
        """Write ``index.html``, ``<figure>.png``, ``<figure>.json`` and
        ``report.json`` into the directory ``output``, atomically: they are
        written to a temporary directory beside it, which then replaces it.
        An existing ``output`` is replaced only if it is empty or an earlier
        report (it has ``report.json``). Returns {name: path} of the files."""
        return write_directory(self, os.fspath(output), overwrite)
