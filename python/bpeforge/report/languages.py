"""The per-language figures (with a language file): bytes per token,
fertility, vocabulary share, and, comparing two models, the change in
tokens per language."""

from __future__ import annotations

from collections import Counter
from typing import Any

from .data import Figure, Panel, Series
from .draw import COLORS
from .models import Model
from .scripts import NO_SPACE_SCRIPTS, dominant_script
from .stats import r4 as _r


def language_figures(
    models: list[Model], lines: list[str], tags: list[str], stats: dict[str, Any], top: int
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
    scripts, no_space = _scripts_and_spacing(lines, lang.tolist(), L, nchars, nwords)

    table: list[dict[str, Any]] = [{"lang": names[i], "lines": int(nlines[i]), "bytes": int(nbytes[i]), "words": int(nwords[i]),
              "chars": int(nchars[i]), "script": scripts[i][0], "no_spaces": bool(no_space[i]), "models": {}}
             for i in range(L)]
    per_model: list[dict[str, Any]] = []
    for m in models:
        r = _model_by_language(m, lang, L)
        per_model.append(r)
        ntok, used, owned, V = r["tokens"], r["used_ids"], r["owned_ids"], r["V"]
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
    caption = ns_note if any(hatched) else ""  # the key to † in the PNGs themselves

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
        [], caption=caption,
    )
    figs["lang_fertility"] = Figure(
        "lang_fertility", "Fertility: tokens per word, by language",
        "Tokens per whitespace-separated word (left) and per character (right) on each language's sampled "
        "lines. 1.0 token per word means whole words are single tokens." + more,
        [Panel("bar", "Tokens per word", "language", "tokens per word",
               series(lambda r, i: r["tokens"][i] / nwords[i] if nwords[i] else 0.0), categories=cats, hatched=hatched),
         Panel("bar", "Tokens per character", "language", "tokens per character",
               series(lambda r, i: r["tokens"][i] / nchars[i] if nchars[i] else 0.0), categories=cats)],
        [ns_note] if any(hatched) else [], layout="column", caption=caption,
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
        layout="column", caption=caption,
    )
    return figs, table



def _scripts_and_spacing(lines: list[str], lang: list[int], L: int, nchars: Any, nwords: Any) -> tuple[list[tuple[str, dict[str, float]]], list[bool]]:
    """Each language's dominant script (from its first 40 sampled lines), and
    whether it is written without spaces between words."""
    by_lang: dict[int, list[str]] = {}
    for line, li in zip(lines, lang):
        lst = by_lang.setdefault(li, [])
        if len(lst) < 40:
            lst.append(line)
    scripts = [dominant_script(by_lang.get(i, [])) for i in range(L)]
    no_space = []
    for i in range(L):
        cpw = nchars[i] / max(1.0, nwords[i])
        no_space.append(scripts[i][0] in NO_SPACE_SCRIPTS or cpw > 15)
    return scripts, no_space


def _model_by_language(m: Model, lang: Any, L: int) -> dict[str, Any]:
    """One model's tokens per language, and the share of its ids each language
    uses and is the main user of."""
    import numpy as np

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
    return {"tokens": ntok, "used": used / V, "owned": owned / V, "V": V, "used_ids": used, "owned_ids": owned}


#: Languages with fewer sampled lines are left out of the change figure (too noisy).
CHANGE_MIN_LINES = 20


def fig_language_change(models: list[Model], table: list[dict[str, Any]], top: int) -> Figure:
    """How many more or fewer tokens the first model needs than the second, per language:
    the largest languages beside the ones the second model serves worst."""
    a, b = models[0].label, models[1].label
    rows = [r for r in table if r["lines"] >= CHANGE_MIN_LINES and r["models"][b]["tokens"] > 0]
    if not rows:
        return Figure("lang_change", f"Tokens per language: {a} vs {b}", "No language has enough sampled lines.",
                      [Panel("bar", "Change in tokens", "language", "change", [], empty_text="no language with "
                             f"{CHANGE_MIN_LINES}+ sampled lines")])
    ref = max(rows, key=lambda r: r["bytes"])  # the largest language by bytes is the reference

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
        caption=f"Each bar: how many more (above 0) or fewer (below 0) tokens {a} needs than {b} for the "
                f"language's sampled lines. Lower panel labels: language (premium under {b} \u2192 under {a}), "
                f"the premium being {ref['lang']}'s bytes per token divided by the language's own (1.00 = as "
                f"cheap as {ref['lang']}).",
    )
