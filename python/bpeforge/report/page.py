"""The report's HTML page: self-contained (figures embedded as PNG data:
URIs, no scripts, no external resources)."""

from __future__ import annotations

import base64
import html
import os
from typing import TYPE_CHECKING, Any

from .._native import __version__

if TYPE_CHECKING:  # pragma: no cover
    from .data import Report

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


def html_page(rep: Report, pngs: dict[str, bytes]) -> str:
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
