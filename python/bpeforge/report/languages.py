"""The per-language figures (with a language file): premium, bytes per
token, fertility, vocabulary share, and, comparing two models, the change in
tokens per language; all measured on the sample stratified by language."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .data import Figure, Panel, Series
from .draw import COLORS
from .inputs import Sample
from .models import Model, encode_lines
from .premium import premium_reference, premiums, text_units
from .scripts import NO_SPACE_SCRIPTS, dominant_script
from .stats import line_stats
from .stats import r4 as _r


#: Languages with fewer sampled lines are left out of the change figure and of the
#: costliest languages (too noisy).
CHANGE_MIN_LINES = 20
#: Languages written without spaces: the key to the mark in every figure and table that shows it.
NO_SPACE_MARK = "\u2020 written without spaces between words (or in long runs of letters)."
#: The fertility figure's key: there tokens per word is drawn hatched for them.
NO_SPACE_HATCHED = NO_SPACE_MARK[:-1] + ": tokens per word is not comparable there (hatched); tokens per character is."


@dataclass
class _Measured:
    """Every language's measures on the sample, and each model's tokens."""

    names: list[str]
    nlines: Any
    nbytes: Any
    nchars: Any
    nwords: Any
    no_space: list[bool]
    ref: int
    ref_name: str
    ref_why: str
    table: list[dict[str, Any]]
    per_model: list[dict[str, Any]]


def language_figures(
    models: list[Model], sample: Sample, top: int, threads: int | None, reference: str | None = None,
) -> tuple[dict[str, Figure], list[dict[str, Any]], dict[str, Any]]:
    """The per-language figures and table, measured on the sample stratified
    by language (``sample.lang_lines``): up to ``per_language`` lines of
    every language, so a small language is measured on all its lines or
    many of them, not on its share of a uniform sample. Languages are
    ordered by their lines in the whole corpus; the "main user" of an id
    weighs each language's occurrences by how much of it was sampled.
    Returns the figures, the table and how premiums were measured."""
    me = _measure(models, sample, threads, reference)
    names, no_space, per_model = me.names, me.no_space, me.per_model
    nbytes, nchars, nwords = me.nbytes, me.nchars, me.nwords
    L = len(names)
    shown = list(range(min(top, L)))
    cats = [names[i] + ("\u2020" if no_space[i] else "") for i in shown]
    hatched = [bool(no_space[i]) for i in shown]
    marked = any(hatched)
    more = (f" The {len(shown)} languages with the most lines in the corpus (of the {L}) are shown; "
            "report.json has all." if L > len(shown) else "")
    caption = NO_SPACE_MARK if marked else ""  # the key to the mark in the PNGs themselves

    def series(fn: Any) -> list[Series]:
        return [Series(m.label, [_r(fn(r, i)) for i in shown], None, COLORS[k]) for k, (m, r) in enumerate(zip(models, per_model))]

    figs: dict[str, Figure] = {"lang_premium": _premium_figure(models, me, shown, top)}
    figs["lang_bytes_per_token"] = Figure(
        "lang_bytes_per_token", "Bytes per token, by language",
        "UTF-8 bytes of the language's sampled lines divided by the tokens they encode to: higher means the "
        "vocabulary compresses that language better. Scripts outside ASCII need 2-4 bytes per character, so "
        "compare a language with itself across models rather than languages with each other (the premium "
        "figure compares languages)." + more,
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
        [NO_SPACE_HATCHED] if marked else [], layout="column", caption=NO_SPACE_HATCHED if marked else "",
    )
    figs["lang_vocab_share"] = Figure(
        "lang_vocab_share", "Share of the vocabulary, by language",
        "Left, used: the fraction of the vocabulary's ids that occur at least once in the language's sampled "
        "lines (languages overlap, and a language with few lines uses fewer ids). Right, main user: the "
        "fraction of ids for which the language produces the most occurrences (each language's sampled "
        "occurrences scaled to its lines in the corpus); each id counts for one language (ties go to the "
        "language with more lines), ids unused in the sample for none." + more,
        [Panel("bar", "Used: ids that occur in the language", "language", "share of vocabulary ids",
               series(lambda r, i: r["used"][i]), categories=cats, percent=True),
         Panel("bar", "Main user: ids the language uses most", "language", "share of vocabulary ids",
               series(lambda r, i: r["owned"][i]), categories=cats, percent=True)],
        [f"{m.label}: {int(r['ids_used']):,} of {r['V']:,} ids occur in the language sample."
         for m, r in zip(models, per_model)],
        layout="column", caption=caption,
    )
    measured = {"reference": me.ref_name, "reference_why": me.ref_why, "unit": "tokens per text unit",
                "per_language": sample.info.get("per_language", 0), "lines": len(sample.lang_lines)}
    return figs, me.table, measured


def _measure(models: list[Model], sample: Sample, threads: int | None, reference: str | None) -> _Measured:
    """Each language's lines, bytes, characters, words and text units in the
    sample, and each model's tokens and premiums there."""
    import numpy as np

    lines, tags = sample.lang_lines, sample.lang_tags
    stats = line_stats(lines)
    names = sorted(sample.corpus_lines, key=lambda n: (-sample.corpus_lines[n], n))
    index = {n: i for i, n in enumerate(names)}
    L = len(names)
    lang = np.fromiter((index[t] for t in tags), dtype=np.int64, count=len(tags))
    nlines = np.bincount(lang, minlength=L)
    nbytes = np.bincount(lang, weights=stats["bytes"], minlength=L)
    nchars = np.bincount(lang, weights=stats["chars"], minlength=L)
    nwords = np.bincount(lang, weights=stats["words"], minlength=L)
    nunits = np.bincount(lang, weights=np.asarray(text_units(lines), dtype=np.float64), minlength=L)
    scale = np.array([sample.corpus_lines[n] / max(1, int(nlines[i])) for i, n in enumerate(names)])
    scripts, no_space = _scripts_and_spacing(lines, lang.tolist(), L, nchars, nwords)
    ref_name, ref_why = premium_reference(models, sample.corpus_bytes, reference)
    ref = index[ref_name]

    table: list[dict[str, Any]] = [{"lang": names[i], "lines": int(nlines[i]), "bytes": int(nbytes[i]),
                                    "words": int(nwords[i]), "chars": int(nchars[i]), "units": int(nunits[i]),
                                    "corpus_lines": sample.corpus_lines[names[i]],
                                    "corpus_bytes": sample.corpus_bytes[names[i]],
                                    "script": scripts[i][0], "no_spaces": bool(no_space[i]), "models": {}}
                                   for i in range(L)]
    per_model: list[dict[str, Any]] = []
    for m in models:
        ids, offsets = encode_lines(m.tok, lines, threads)
        r = _model_by_language(ids, offsets, len(m.raw), lang, L, scale)
        per_model.append(r)
        ntok, used, owned, V = r["tokens"], r["used_ids"], r["owned_ids"], r["V"]
        prem = premiums(nunits.astype(np.int64).tolist(), ntok.astype(np.int64).tolist(), ref)
        r["premium"] = prem
        for i in range(L):
            table[i]["models"][m.label] = {
                "tokens": int(ntok[i]),
                "units_per_token": _r(nunits[i] / ntok[i] if ntok[i] else 0.0),
                "premium": _r(prem[i]),
                "bytes_per_token": _r(nbytes[i] / ntok[i] if ntok[i] else 0.0),
                "tokens_per_word": _r(ntok[i] / nwords[i] if nwords[i] else 0.0),
                "tokens_per_char": _r(ntok[i] / nchars[i] if nchars[i] else 0.0),
                "vocab_used": _r(used[i] / V, 6), "vocab_main_user": _r(owned[i] / V, 6),
            }
    return _Measured(names, nlines, nbytes, nchars, nwords, no_space, ref, ref_name, ref_why, table, per_model)


def _premium_figure(models: list[Model], me: _Measured, shown: list[int], top: int) -> Figure:
    """The premium figure: the costliest languages (the highest premium under
    any model, among those measured on enough lines) and the largest."""
    names, no_space, per_model, ref_name = me.names, me.no_space, me.per_model, me.ref_name
    measured_enough = [i for i in range(len(names)) if me.nlines[i] >= CHANGE_MIN_LINES and i != me.ref]
    costly = sorted(measured_enough, key=lambda i: (-max(r["premium"][i] for r in per_model), names[i]))[:top]

    def label(i: int) -> str:
        return names[i] + ("\u2020" if no_space[i] else "")

    def premium_series(chosen: list[int]) -> list[Series]:
        return [Series(m.label, [_r(r["premium"][i]) for i in chosen], None, COLORS[k])
                for k, (m, r) in enumerate(zip(models, per_model))]

    marked = any(no_space[i] for i in costly + shown)
    ylabel = f"premium (1 = as cheap as {ref_name})"
    return Figure(
        "lang_premium", f"Premium by language, against {ref_name}",
        f"Each language's premium: {ref_name}'s text units per token divided by the language's own, on its "
        "sampled lines (2.0: twice the tokens for the same amount of text). A text unit is a character, two "
        "for a syllable of a syllabary, three for a Han character: the measure parity balancing "
        f"(max_premium) steers by. Reference: {ref_name}, {me.ref_why}. Top: the {len(costly)} costliest "
        f"languages (the highest premium under any model, of those with {CHANGE_MIN_LINES}+ sampled lines); "
        f"bottom: the {len(shown)} with the most lines in the corpus. report.json has every language.",
        [Panel("bar", f"The {len(costly)} costliest languages", "language (highest premium first)", ylabel,
               premium_series(costly), categories=[label(i) for i in costly],
               empty_text=f"no language with {CHANGE_MIN_LINES}+ sampled lines"),
         Panel("bar", f"The {len(shown)} largest languages", "language (most lines in the corpus first)", ylabel,
               premium_series(shown), categories=[label(i) for i in shown])],
        [], layout="column", caption=NO_SPACE_MARK if marked else "",
    )


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


def _model_by_language(ids: Any, offsets: Any, V: int, lang: Any, L: int, scale: Any) -> dict[str, Any]:
    """One model's tokens per language, and the share of its ids each language
    uses and is the main user of (occurrences scaled by ``scale``, each
    language's corpus lines per sampled line)."""
    import numpy as np

    ntok_line = np.diff(offsets)
    ntok = np.bincount(lang, weights=ntok_line, minlength=L)
    tok_lang = np.repeat(lang, ntok_line)
    key = tok_lang * V + ids
    uniq, cnt = np.unique(key, return_counts=True)
    l_of, id_of = uniq // V, uniq % V
    used = np.bincount(l_of, minlength=L)
    weighted = cnt * scale[l_of]
    # main user of each id: the language with most of its occurrences (ties: the larger language)
    o = np.lexsort((-l_of, weighted, id_of))
    ids_sorted = id_of[o]
    last = np.ones(len(o), dtype=bool)
    if len(o) > 1:
        last[:-1] = ids_sorted[:-1] != ids_sorted[1:]
    owned = np.bincount(l_of[o][last], minlength=L)
    return {"tokens": ntok, "used": used / V, "owned": owned / V, "V": V, "used_ids": used, "owned_ids": owned,
            "ids_used": int(last.sum())}


def fig_language_change(models: list[Model], table: list[dict[str, Any]], top: int, reference: str) -> Figure:
    """How many more or fewer tokens the first model needs than the second, per
    language: the languages whose tokens fell most, those whose tokens rose
    most, and the largest languages, each labelled with its premium under
    both models."""
    a, b = models[0].label, models[1].label
    rows = [r for r in table if r["lines"] >= CHANGE_MIN_LINES and r["models"][b]["tokens"] > 0]
    if not rows:
        return Figure("lang_change", f"Tokens per language: {a} vs {b}", "No language has enough sampled lines.",
                      [Panel("bar", "Change in tokens", "language", "change", [], empty_text="no language with "
                             f"{CHANGE_MIN_LINES}+ sampled lines")])

    def change(r: dict[str, Any]) -> float:
        return float(r["models"][a]["tokens"] / r["models"][b]["tokens"] - 1.0)

    def label(r: dict[str, Any]) -> str:
        return f"{r['lang']} ({r['models'][b]['premium']:.2f}\u2192{r['models'][a]['premium']:.2f})"

    def panel(title: str, chosen: list[dict[str, Any]], xlabel: str, color: str, empty: str) -> Panel:
        return Panel("bar", title, xlabel, f"tokens, {a} vs {b}",
                     [Series(a, [_r(change(r)) for r in chosen], None, color)] if chosen else [],
                     categories=[label(r) for r in chosen], percent=True, empty_text=empty)

    k = max(1, top // 2)
    fell = sorted((r for r in rows if change(r) < 0), key=change)[:k]
    rose = sorted((r for r in rows if change(r) > 0), key=lambda r: -change(r))[:k]
    largest = sorted(rows, key=lambda r: (-r["corpus_lines"], r["lang"]))[:k]
    panels = [
        panel(f"The {len(fell)} languages whose tokens fell most", fell, "language (largest fall first)",
              COLORS[2], f"no language needs fewer tokens under {a}"),
        panel(f"The {len(rose)} languages whose tokens rose most", rose, "language (largest rise first)",
              COLORS[1], f"no language needs more tokens under {a}"),
        panel(f"The {len(largest)} largest languages", largest, "language (most lines in the corpus first)",
              COLORS[0], "no language"),
    ]
    data = {
        "reference": reference,
        "languages": [{"lang": r["lang"], "lines": r["lines"], "corpus_lines": r["corpus_lines"],
                       "token_change": _r(change(r)),
                       "premium": {a: r["models"][a]["premium"], b: r["models"][b]["premium"]}} for r in rows],
    }
    return Figure(
        "lang_change", f"Tokens per language: {a} vs {b}",
        f"The change in the number of tokens {a} needs for each language's sampled lines, relative to {b} "
        f"(below 0: fewer tokens, better): the languages whose tokens fell most, those whose tokens rose "
        f"most, and the languages with the most lines in the corpus. Each label carries the language's "
        f"premium ({reference}'s text units per token divided by the language's own, the measure of "
        f"max_premium) under {b}\u2192{a}. Languages with fewer than {CHANGE_MIN_LINES} sampled lines are "
        "left out; the figure's JSON has every language.",
        panels, [], data, layout="column",
        caption=f"Each bar: how many more (above 0) or fewer (below 0) tokens {a} needs than {b} for the "
                f"language's sampled lines. Labels: language (premium under {b} \u2192 under {a}), the premium "
                f"being {reference}'s text units per token divided by the language's own (1.00 = as cheap as "
                f"{reference}).",
    )
