"""Putting a report together: :func:`build_report` loads the models, samples
the corpus, encodes it and makes the figures, as named steps."""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Union

from .._tokenizer import Tokenizer
from ..errors import ParameterError
from .data import Figure, Report
from .figures import fig_compression, fig_pair_frequency, fig_progress, fig_scripts, fig_token_length
from .inputs import check_inputs, sample_corpus
from .languages import fig_language_change, language_figures
from .models import Model, default_label, encode_lines, load_model, token_texts
from .output import check_output_directory, write_directory
from .parallel import (DEFAULT_REFERENCE, PremiumTable, count_parallel, premium_figure, premium_rows,
                       premiums_from_counts, read_parallel)
from .stats import compression_curve, line_stats, model_summary

PathLike = Union[str, "os.PathLike[str]"]

DEFAULT_SAMPLE = 20_000
DEFAULT_CURVE_LINES = 5_000
DEFAULT_CURVE_POINTS = 16
DEFAULT_TOP_LANGS = 20
#: Lines of each language the per-language figures measure (at most; all of a smaller language's).
DEFAULT_PER_LANGUAGE = 500


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
    text_field: str | None = None,
    text_column: str | None = None,
    parallel: PathLike | Iterable[str] | None = None,
    parallel_reference: str = DEFAULT_REFERENCE,
    per_language: int = DEFAULT_PER_LANGUAGE,
    premium_reference: str | None = None,
) -> Report:
    """Measure ``model`` (and ``compare``) on a random sample of ``corpus``'s lines.

    Args:
        model, compare: a model file (bpeforge, SentencePiece ``.model``, Hugging
            Face ``tokenizer.json``, ``.tiktoken``) or a :class:`bpeforge.Tokenizer`.
        corpus: a text file (compressed as for :func:`bpeforge.train`), one text per line, a
            JSON lines file (with ``text_field``), a Parquet or Arrow file
            (with ``text_column``), or a sequence of str.
        langs: language tags, one per corpus line (a file or a sequence); adds
            the per-language figures and table, measured on a second sample
            stratified by language: up to ``per_language`` lines of each
            language (0: all of them), so a language with few lines is
            measured on all its lines rather than on its share of ``sample``.
        premium_reference: the language premiums are measured against
            (default: the reference a parity-balanced model was trained
            against, else the language with the most bytes in the corpus).
        progress_csv: a training progress CSV (or one per model, None to skip one)
            for the ``training_progress`` figure.
        sample: lines sampled uniformly at random for the figures about the
            whole corpus (0: every line); ``seed`` for it and for the
            per-language sample.
        curve_points, curve_lines: the compression curve encodes the first
            ``curve_lines`` sampled lines with ``curve_points`` truncated models.
        top_langs: languages shown in the per-language figures (the ones with
            the most lines in the corpus; all of them are in the JSON and the
            page's table), and twice the languages of each panel of
            ``lang_change`` (the largest falls, the largest rises, the largest
            languages).
        labels: names of the models in the figures (default: file names).
        threads: encoding threads (None: all cores).
        text_field, text_column: the field (JSON lines) or the column
            (Parquet/Arrow) holding each text; such a corpus is refused
            without it, never measured as plain text (the rules: the user
            guide's *Input formats* page).
        parallel: a parallel set (``key<TAB>language<TAB>text`` lines: a file,
            plain or compressed, or a sequence of str): adds the
            ``parallel_premium`` figure and the parallel table, each
            language's tokens for the messages it shares with
            ``parallel_reference`` divided by that language's tokens for them
            (:mod:`bpeforge.report.parallel`).

    Why this function is long: it is the report's recipe, one timed step per
    figure group in the order they are measured, and most of it is this
    docstring; each step's work lives in its own module.
    """
    from .._extras import require

    require("numpy", "bpeforge report")
    _check_sizes(sample=sample, curve_points=curve_points, curve_lines=curve_lines, top_langs=top_langs,
                 per_language=per_language)
    check_inputs(model=model, compare=compare, corpus=corpus, langs=langs, parallel=parallel)
    csvs = _progress_csvs(progress_csv, 1 + (compare is not None))
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    with _timed(timings, "load_models"):
        models = _load_models([model] + ([compare] if compare is not None else []), labels)
    with _timed(timings, "sample"):
        drawn = sample_corpus(corpus, langs, sample, seed, text_field, per_language, text_column)
        lines, tags, corpus_info = drawn.lines, drawn.tags, drawn.info
        stats = line_stats(lines)
        corpus_info.update(sample_bytes=int(stats["bytes"].sum()), sample_chars=int(stats["chars"].sum()),
                           sample_words=int(stats["words"].sum()))
    with _timed(timings, "encode"):
        _encode_sample(models, lines, threads)

    figures: dict[str, Figure] = {"pair_frequency": fig_pair_frequency(models)}
    with _timed(timings, "compression_curve"):
        curves = [compression_curve(m, lines[: min(curve_lines, len(lines))], curve_points, threads) for m in models]
        figures["compression"] = fig_compression(models, curves)
    figures["token_length"] = fig_token_length(models)
    figures["scripts"] = fig_scripts(models)
    languages: list[dict[str, Any]] = []
    if tags is not None:
        with _timed(timings, "languages"):
            lang_figs, languages, measured = language_figures(models, drawn, top_langs, threads, premium_reference)
            figures.update(lang_figs)
            if len(models) == 2:
                figures["lang_change"] = fig_language_change(models, languages, top_langs, measured["reference"])
            corpus_info["languages"] = len(languages)
            corpus_info["premium"] = measured
    if any(c is not None for c in csvs):
        figures["training_progress"] = fig_progress(models, csvs)
    parallel_rows: list[dict[str, Any]] = []
    if parallel is not None:
        with _timed(timings, "parallel"):
            tables = _parallel_tables(models, parallel, parallel_reference, threads)
            figures["parallel_premium"] = premium_figure(tables)
            parallel_rows = premium_rows(tables)

    summaries = [model_summary(m, stats, curves[i]) for i, m in enumerate(models)]
    notes = [f"{s['label']}: {n}" for s in summaries for n in s["notes"]]
    title = "Vocabulary report: " + " vs ".join(m.label for m in models)
    timings["total"] = time.perf_counter() - t0
    return Report(
        title=title, models=summaries, corpus=corpus_info, figures=figures, languages=languages, notes=notes,
        parallel=parallel_rows,
        timings={k: round(v, 3) for k, v in timings.items()},
        created=_dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
    )


def write_report(output: PathLike, model: Tokenizer | PathLike, corpus: PathLike | Iterable[str], **kwargs: Any) -> Report:
    """:func:`build_report` then :func:`write_directory` to ``output``; returns
    the report. ``output`` is checked first, before any input is read."""
    check_output_directory(output)
    rep = build_report(model, corpus, **kwargs)
    write_directory(rep, output)
    return rep


def _parallel_tables(models: list[Model], parallel: PathLike | Iterable[str], reference: str,
                     threads: int | None) -> dict[str, PremiumTable]:
    """Each model's premiums on the parallel set (every text encoded once a model)."""
    pset = read_parallel(parallel)
    tables = {}
    for m in models:
        kw: dict[str, Any] = {"threads": threads}
        if m.tok.special_tokens:
            kw.update(allowed_special=(), disallowed_special=())

        def count(texts: list[str], tok: Tokenizer = m.tok) -> list[int]:
            return [len(x) for x in tok.encode_batch(texts, **kw)]

        counts = count_parallel(count, pset)
        tables[m.label] = premiums_from_counts(counts, reference, source=f"the parallel set {pset.source}")
    return tables


@contextlib.contextmanager
def _timed(timings: dict[str, float], key: str) -> Iterator[None]:
    """Record the seconds the block takes as ``timings[key]``."""
    t = time.perf_counter()
    yield
    timings[key] = time.perf_counter() - t


def _check_sizes(**sizes: int) -> None:
    lowest = {"sample": 0, "curve_points": 2, "curve_lines": 1, "top_langs": 1, "per_language": 0}
    for name, v in sizes.items():
        lo = lowest[name]
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ParameterError(f"{name} must be an integer >= {lo}, got {v!r}")


def _progress_csvs(progress_csv: PathLike | Sequence[PathLike | None] | None, n_models: int) -> list[PathLike | None]:
    """One progress CSV (or None) per model, each checked to exist."""
    csvs: list[PathLike | None]
    if progress_csv is None:
        csvs = []
    elif isinstance(progress_csv, (str, os.PathLike)):
        csvs = [progress_csv]
    else:
        csvs = list(progress_csv)
    if len(csvs) > n_models:
        raise ParameterError(f"{len(csvs)} progress CSVs for {n_models} model(s): give at most one per model")
    for c in csvs:
        if c is not None and not os.path.isfile(os.fspath(c)):
            raise ParameterError(f"progress CSV {os.fspath(c)}: no such file")
    return csvs


def _load_models(sources: list[Tokenizer | PathLike], labels: Sequence[str] | None) -> list[Model]:
    loaded = [load_model(s) for s in sources]
    models: list[Model] = []
    for i, (tok, info) in enumerate(loaded):
        label = labels[i] if labels and i < len(labels) and labels[i] else default_label(sources[i], i)
        doc = json.loads(tok.to_json())
        raw, texts, specials = token_texts(tok, doc)
        models.append(Model(label, tok, info, doc, texts, raw, specials))
    if len(models) == 2 and models[0].label == models[1].label:
        models[1].label += " (compare)"
    return models


def _encode_sample(models: list[Model], lines: list[str], threads: int | None) -> None:
    """Each model's ids and line offsets over the sample, and its count per id."""
    import numpy as np

    for m in models:
        m.ids, m.offsets = encode_lines(m.tok, lines, threads)
        m.counts = np.bincount(m.ids, minlength=len(m.raw)) if len(m.ids) else np.zeros(len(m.raw), dtype=np.int64)
