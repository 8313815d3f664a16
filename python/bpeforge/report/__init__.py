"""See a vocabulary: figures about a BPE model on a corpus, as data, PNGs and one HTML page.

    >>> from bpeforge.report import build_report, write_directory
    >>> rep = build_report("model.json", "corpus.txt.xz", langs="corpus.langs.txt.xz")  # doctest: +SKIP
    >>> rep.figures["compression"].to_dict()["panels"][0]["series"][0]["y"][:3]      # doctest: +SKIP
    >>> write_directory(rep, "report/")                                               # doctest: +SKIP

:func:`build_report` encodes a random sample of the corpus's lines with the
model (and with a second model given as ``compare``) and returns a
:class:`Report`: a dict of :class:`Figure` objects holding the plotted numbers
(``Figure.to_dict()``, JSON-ready), which :func:`render` draws with matplotlib
(:func:`png`: as PNG bytes; matplotlib is needed only for drawing: ``pip install
'bpeforge[plot]'``). :func:`write_directory` writes ``index.html`` (self-contained:
images embedded, no scripts, no external resources), one PNG and one JSON per
figure, and ``report.json`` with everything; the directory appears atomically.

Figures (ids): ``pair_frequency``, ``compression``, ``token_length``,
``scripts``; with a language file (``langs``, one tag per corpus line),
measured on a sample stratified by language (up to ``per_language`` lines of
each): ``lang_premium`` (the premium parity balancing steers by: the
reference's text units per token over the language's own,
:mod:`bpeforge.report.premium`), ``lang_bytes_per_token``,
``lang_fertility``, ``lang_vocab_share``, and with ``compare`` also
``lang_change`` (tokens per language, model vs compare: the languages whose
tokens fell most, those whose tokens rose most, and the largest); with a
training progress CSV (``progress_csv``, written by ``train(...,
progress_csv=PATH)``): ``training_progress``.

Models: bpeforge model files, or (through :mod:`bpeforge.interop`) a
SentencePiece ``.model``, a Hugging Face ``tokenizer.json`` (or its directory)
or a ``.tiktoken`` file, or a :class:`bpeforge.Tokenizer`.

The package, one module per concern: ``build`` (:func:`build_report`, the
steps), ``inputs`` (checking the inputs, sampling the corpus, progress CSVs),
``models`` (loading and encoding), ``premium`` (premiums and the balancing a
model was trained with), ``stats`` (the compression curve and line sizes), ``scripts``
(Unicode scripts, from the Script property), ``figures`` and ``languages``
(the figures as data), ``data`` (Figure, Panel, Series, Report: numbers only),
then what reads them: ``draw`` (matplotlib), ``page`` (the HTML) and ``output``
(the atomic directory).
"""

from __future__ import annotations

from .build import (DEFAULT_CURVE_LINES, DEFAULT_CURVE_POINTS, DEFAULT_PER_LANGUAGE, DEFAULT_SAMPLE, DEFAULT_TOP_LANGS,
                    build_report, write_report)
from .data import Figure, Panel, Report, Series
from .draw import COLORS, png, render
from .inputs import read_progress_csv
from .inputs import sample_corpus as _sample_corpus
from .inputs import sample_lines as _sample_lines
from .languages import CHANGE_MIN_LINES
from .models import load_model
from .output import write_directory
from .page import html_page
from .scripts import BYTES, COMMON, MIXED, NO_SPACE_SCRIPTS, SPECIAL, char_script, token_script

__all__ = [
    "Figure",
    "Panel",
    "Series",
    "Report",
    "build_report",
    "write_report",
    "write_directory",
    "render",
    "png",
    "html_page",
    "load_model",
    "token_script",
    "char_script",
    "read_progress_csv",
]

# Not in __all__, importable from here as before (tests use them).
_KEPT = (DEFAULT_CURVE_LINES, DEFAULT_CURVE_POINTS, DEFAULT_PER_LANGUAGE, DEFAULT_SAMPLE, DEFAULT_TOP_LANGS, COLORS,
         CHANGE_MIN_LINES, BYTES, COMMON, MIXED, NO_SPACE_SCRIPTS, SPECIAL, _sample_corpus, _sample_lines)
