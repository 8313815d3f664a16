"""Drawing a :class:`~bpeforge.report.data.Figure` with matplotlib (Agg
canvas; pyplot's global state is not touched). matplotlib is needed only
here: ``pip install 'bpeforge[plot]'``."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

from ..errors import ParameterError

if TYPE_CHECKING:  # pragma: no cover
    from .data import Figure, Panel

COLORS = ("#1f6fb4", "#e8743b", "#2ca02c", "#9467bd")


def _need_matplotlib() -> Any:
    from .._extras import require

    matplotlib = require("matplotlib", "drawing the report's figures")
    agg = require("matplotlib.backends.backend_agg", "drawing the report's figures")
    figure = require("matplotlib.figure", "drawing the report's figures")
    return matplotlib, agg.FigureCanvasAgg, figure.Figure


def png(fig_data: Figure, dpi: int = 100) -> bytes:
    """The figure as PNG bytes."""
    buf = io.BytesIO()
    render(fig_data, dpi).savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def render(fig_data: Figure, dpi: int = 100) -> Any:
    """A ``matplotlib.figure.Figure`` of the figure's panels (Agg canvas;
    pyplot's global state is not touched)."""
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
    if fig_data.caption:
        import textwrap

        fig.supxlabel(textwrap.fill(fig_data.caption, width=int(width * 14)), fontsize=8.5, color="#333333")
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
