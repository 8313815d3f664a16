"""Premiums on parallel text: how many tokens each language pays, against a
reference language, for the same messages.

Bytes per token on a corpus mixes up what each language's text is about with
the tokenizer; on parallel text (the same messages translated), the token
counts compare the tokenizer alone. A parallel set is a TSV file (plain or
compressed), one line per (message, language)::

    key<TAB>language<TAB>text

A language's *premium* is its tokens on the messages it shares with the
reference language, divided by the reference's tokens on the same messages
(2.0: twice the tokens for the same content).

    >>> from bpeforge.report.parallel import read_parallel, parallel_premiums
    >>> pset = read_parallel("parallel-dev.tsv.xz")                             # doctest: +SKIP
    >>> table = parallel_premiums(lambda texts: [len(x) for x in tok.encode_batch(texts)], pset)  # doctest: +SKIP
    >>> table.summary(seen={"de", "ta"})["worst_decile"]                       # doctest: +SKIP

This module counts; :func:`premium_figure` turns a table into the report's
figure (``parallel_premium``) and :func:`premium_markdown` into a table.
"""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from .._io import open_text
from ..errors import ParameterError
from .data import Figure, Panel, Series

PathLike = Union[str, "os.PathLike[str]"]

#: The reference language when none is named.
DEFAULT_REFERENCE = "en"


@dataclass
class ParallelSet:
    """The messages of a parallel set: ``texts[lang][key]`` is the text of
    message ``key`` in language ``lang``."""

    texts: dict[str, dict[str, str]]
    source: str = "<parallel lines>"

    @property
    def languages(self) -> list[str]:
        return sorted(self.texts)

    def __len__(self) -> int:
        return sum(len(v) for v in self.texts.values())


def read_parallel(source: PathLike | Iterable[str]) -> ParallelSet:
    """Read a parallel set: ``key<TAB>language<TAB>text`` lines (a path,
    plain or compressed, or an iterable of lines). Empty lines are skipped; a
    line without two tabs, an empty key or language, or a (key, language)
    given twice is an error naming the file and line."""
    if isinstance(source, (str, os.PathLike)):
        name = os.fspath(source)
        if not os.path.exists(name):
            raise ParameterError(f"parallel set {name}: no such file")
        handle: Any = open_text(name)
        lines: Iterable[str] = handle
    else:
        if isinstance(source, (bytes, bytearray)):
            raise ParameterError("parallel set must be a path or a sequence of str lines")
        name, handle, lines = "<parallel lines>", None, source
    texts: dict[str, dict[str, str]] = {}
    try:
        for n, line in enumerate(lines, 1):
            line = line.rstrip("\n").rstrip("\r")
            if not line:
                continue
            parts = line.split("\t", 2)
            if len(parts) != 3 or not parts[0] or not parts[1].strip():
                raise ParameterError(
                    f"parallel set {name}, line {n}: expected key<TAB>language<TAB>text, got {line[:80]!r}")
            key, lang, text = parts[0], parts[1].strip(), parts[2]
            by_key = texts.setdefault(lang, {})
            if key in by_key:
                raise ParameterError(f"parallel set {name}, line {n}: message {key!r} in {lang!r} is given twice")
            by_key[key] = text
    except UnicodeDecodeError as e:
        raise ParameterError(f"parallel set {name}: not UTF-8 text ({e})") from e
    finally:
        if handle is not None:
            handle.close()
    if not texts:
        raise ParameterError(f"parallel set {name}: no lines")
    return ParallelSet(texts, name)


@dataclass
class LanguagePremium:
    lang: str
    messages: int  # messages shared with the reference
    tokens: int  # this language's tokens on them
    reference_tokens: int  # the reference's tokens on the same messages

    @property
    def premium(self) -> float:
        return self.tokens / max(self.reference_tokens, 1)


@dataclass
class PremiumTable:
    """Every language's premium against ``reference`` (which is not in
    ``languages``); ``reference_tokens``: the reference's tokens on all its
    messages."""

    reference: str
    reference_tokens: int
    languages: dict[str, LanguagePremium] = field(default_factory=dict)

    def premiums(self) -> dict[str, float]:
        return {lang: p.premium for lang, p in self.languages.items()}

    def summary(self, seen: Iterable[str] | None = None, decile: float = 0.1, top: int = 5) -> dict[str, Any]:
        """Median and worst decile (the mean of the highest ``ceil(n *
        decile)`` premiums) over the languages in ``seen`` (all when None),
        and the ``top`` highest of them."""
        prem = self.premiums()
        keep = set(prem) if seen is None else set(seen) & set(prem)
        values = sorted((prem[lang] for lang in keep), reverse=True)
        if not values:
            return {"languages": 0, "median": math.nan, "worst_decile": math.nan, "highest": []}
        k = max(1, math.ceil(len(values) * decile))
        highest = sorted(keep, key=lambda lang: (-prem[lang], lang))[:top]
        return {"languages": len(values), "median": statistics.median(values),
                "worst_decile": sum(values[:k]) / k, "highest": [(lang, prem[lang]) for lang in highest]}


def count_parallel(count_tokens: Callable[[list[str]], Sequence[int]], pset: ParallelSet,
                   languages: Iterable[str] | None = None) -> dict[str, dict[str, int]]:
    """Every text's token count, ``counts[lang][key]``: each text encoded
    once, one ``count_tokens`` call per language. ``count_tokens(texts)``
    returns the number of tokens of each text (any tokenizer: ``lambda t:
    [len(x) for x in tok.encode_batch(t)]``)."""
    wanted = pset.languages if languages is None else [lang for lang in pset.languages if lang in set(languages)]
    counts: dict[str, dict[str, int]] = {}
    for lang in wanted:
        keys = list(pset.texts[lang])
        texts = [pset.texts[lang][k] for k in keys]
        got = list(count_tokens(texts))
        if len(got) != len(texts):
            raise ParameterError(f"count_tokens returned {len(got)} counts for {len(texts)} texts")
        counts[lang] = {k: int(n) for k, n in zip(keys, got)}
    return counts


def premiums_from_counts(counts: dict[str, dict[str, int]], reference: str = DEFAULT_REFERENCE,
                         keys: Callable[[str], bool] | None = None, source: str = "the parallel set") -> PremiumTable:
    """The premium table from per-text token counts (:func:`count_parallel`);
    ``keys`` keeps only the messages it accepts (e.g. one source's)."""
    if reference not in counts:
        raise ParameterError(f"premium reference language {reference!r} does not occur in {source} "
                             f"(languages: {', '.join(sorted(counts)[:20])})")
    ref = {k: n for k, n in counts[reference].items() if keys is None or keys(k)}
    table = PremiumTable(reference, sum(ref.values()))
    for lang in sorted(counts):
        if lang == reference:
            continue
        shared = [k for k in counts[lang] if k in ref]
        if shared:
            table.languages[lang] = LanguagePremium(lang, len(shared), sum(counts[lang][k] for k in shared),
                                                    sum(ref[k] for k in shared))
    return table


def parallel_premiums(count_tokens: Callable[[list[str]], Sequence[int]], pset: ParallelSet,
                      reference: str = DEFAULT_REFERENCE, languages: Iterable[str] | None = None) -> PremiumTable:
    """Each language's premium against ``reference`` on ``pset``
    (``count_tokens`` as in :func:`count_parallel`); ``languages`` limits the
    languages measured."""
    if reference not in pset.texts:
        raise ParameterError(f"premium reference language {reference!r} does not occur in the parallel set "
                             f"{pset.source} (languages: {', '.join(pset.languages[:20])})")
    wanted = None if languages is None else set(languages) | {reference}
    return premiums_from_counts(count_parallel(count_tokens, pset, wanted), reference, source=pset.source)


def premium_markdown(tables: dict[str, PremiumTable], seen: Iterable[str] | None = None) -> str:
    """One row per language (highest premium first, by the first table), one
    premium column per table."""
    labels = list(tables)
    first = tables[labels[0]]
    seen_set = None if seen is None else set(seen)
    langs = sorted(first.languages, key=lambda lang: (-first.languages[lang].premium, lang))
    rows = [f"| language | messages | {' | '.join(f'premium, {label}' for label in labels)} |",
            "|---|---:|" + "---:|" * len(labels)]
    for lang in langs:
        mark = "" if seen_set is None or lang in seen_set else " (unseen)"
        cells = [f"{tables[label].languages[lang].premium:.2f}" if lang in tables[label].languages else "-"
                 for label in labels]
        rows.append(f"| {lang}{mark} | {first.languages[lang].messages} | {' | '.join(cells)} |")
    return "\n".join(rows)


def premium_rows(tables: dict[str, PremiumTable]) -> list[dict[str, Any]]:
    """The report's parallel table: one row per language (highest premium
    first, by the first table) with each model's premium and tokens."""
    labels = list(tables)
    first = tables[labels[0]]
    langs = sorted(first.languages, key=lambda lang: (-first.languages[lang].premium, lang))
    rows = []
    for lang in langs:
        models = {label: {"premium": round(t.languages[lang].premium, 4), "tokens": t.languages[lang].tokens,
                          "reference_tokens": t.languages[lang].reference_tokens}
                  for label, t in tables.items() if lang in t.languages}
        rows.append({"lang": lang, "messages": first.languages[lang].messages, "models": models})
    return rows


def premium_summary_notes(tables: dict[str, PremiumTable]) -> list[str]:
    """One line per model: median and worst decile over every language."""
    out = []
    for label, t in tables.items():
        s = t.summary()
        if s["languages"]:
            hi = ", ".join(f"{lang} {p:.2f}" for lang, p in s["highest"][:3])
            out.append(f"{label}: median {s['median']:.2f}x, worst decile {s['worst_decile']:.2f}x over "
                       f"{s['languages']} languages (highest: {hi}); {t.reference} tokens {t.reference_tokens:,}.")
    return out


def premium_figure(tables: dict[str, PremiumTable], seen: Iterable[str] | None = None) -> Figure:
    """The report's ``parallel_premium`` figure: each language's premium
    (highest first, by the first table), one bar series per model; languages
    outside ``seen`` (when given) are hatched."""
    labels = list(tables)
    first = tables[labels[0]]
    langs = sorted(first.languages, key=lambda lang: (-first.languages[lang].premium, lang))
    series = [Series(label, [round(tables[label].languages[lang].premium, 4) if lang in tables[label].languages
                             else math.nan for lang in langs])
              for label in labels]
    seen_set = None if seen is None else set(seen)
    ref = first.reference
    panel = Panel("bar", f"tokens for the same messages, against {ref}", "language",
                  f"premium (tokens / {ref} tokens)", series, categories=langs,
                  hatched=None if seen_set is None else [lang not in seen_set for lang in langs],
                  empty_text="no language shares a message with the reference")
    notes = [f"1.0: as many tokens as {ref} for the same messages."] + premium_summary_notes(tables)
    if seen_set is not None:
        notes.append("Hatched: a language with too few training lines to count as seen.")
    data = {"reference": ref, "reference_tokens": first.reference_tokens,
            "languages": {label: {lang: {"messages": p.messages, "tokens": p.tokens,
                                         "reference_tokens": p.reference_tokens, "premium": round(p.premium, 4)}
                                  for lang, p in t.languages.items()} for label, t in tables.items()}}
    return Figure("parallel_premium", "Premium per language on parallel text",
                  f"Each language's tokens on the messages it shares with {ref}, divided by {ref}'s tokens on "
                  "the same messages: the tokenizer's cost of a language, free of what each language's text is about.",
                  [panel], notes=notes, data=data)
