"""The report as data: :class:`Series`, :class:`Panel` and :class:`Figure`
hold the plotted numbers (``to_dict()`` is JSON-ready), :class:`Report` all
of it. Drawing (``draw``), the page (``page``) and writing to disk
(``output``) are in their own modules, which read these classes; the classes
know none of them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from collections.abc import Sequence
from typing import Any

from .._engine import __version__

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
    """A figure: its numbers (``to_dict()``); :func:`bpeforge.report.render` and
    :func:`bpeforge.report.png` draw them."""

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


@dataclass
class Report:
    """Everything the report shows: ``figures`` (id -> :class:`Figure`, in page
    order), the models' summaries, the sample's description and a
    per-language table (when there is a language file).
    :func:`bpeforge.report.write_directory` writes it out;
    :func:`bpeforge.report.html_page` is its page."""

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


def json_default(o: Any) -> Any:
    """numpy scalars and arrays as plain JSON values."""
    if hasattr(o, "tolist"):
        return o.tolist()
    if hasattr(o, "item"):
        return o.item()
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")
