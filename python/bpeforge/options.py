"""The training options: one typed list, and everything derived from it.

:class:`TrainOptions` is the single description of what a training run can be
told. From it come

* the checks of each value's Python type and form, for
  :func:`bpeforge.train`, :func:`bpeforge.train_from_iterator`,
  :func:`bpeforge.train_from_dataset` and :func:`bpeforge.distributed.train`
  (``TrainOptions(...)``: paths, ``"8G"``, ``Regex``, preset names, the
  normalizer's table; each value once, naming the parameter),
* the one value handed to the engine: :meth:`TrainOptions.settings` reads
  the :class:`EngineOptions` record (one field per option of the Rust core's
  ``TrainOptions``, by the same names; a test checks both lists are equal)
  into ``_engine.TrainSettings``, where the engine converts and checks it
  once, when the options are made (``TrainConfig::validate``: every rule
  about a value, its range or choices, the rules between options, and a
  resumed model's settings against the options given; Python checks only
  types and forms); every training entry point takes that checked value,
* the ``bpeforge train`` command line (:func:`add_cli_arguments`,
  :func:`from_cli`), for the local and the ``--ray`` path alike,
* the ``Args:`` section of :func:`bpeforge.train`'s docstring.

Why this file is long: it is the option list itself, one record per
option (documentation, check, command-line flags), and the checks those
records name; split, an option's parts would live in several places.

Adding an option means adding one field here (with its ``Opt`` record) and
its twin in the engine's ``TrainOptions``; the signature tests then name every
other place that must list it.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from . import _engine
from ._input_formats import compressions_text
from ._normalizers import NAMES as NORMALIZER_NAMES
from ._normalizers import check_normalizer
from .errors import ParameterError

PathLike = Union[str, "os.PathLike[str]"]

__all__ = ["TrainOptions", "Regex", "PRESETS", "DEFAULT_PRETOKENIZER", "add_cli_arguments", "from_cli", "option_docs", "FILE_ONLY"]

#: The pre-tokenizer a training run uses when none is named (spelled once, in
#: the Rust core: crates/core/src/pretok.rs ``DEFAULT_PRETOKENIZER``).
DEFAULT_PRETOKENIZER: str = _engine.DEFAULT_PRETOKENIZER

#: The pre-tokenizer presets, by their exact names (the Rust core's table:
#: crates/core/src/pretok/presets.rs ``PRESETS``; it also holds each one's
#: aliases, tiktoken's encoding names, which name the preset wherever a
#: preset is named: ``_engine.preset_name``).
PRESETS: tuple[str, ...] = tuple(p["name"] for p in _engine.PRESETS)
# Names people type for a preset that are none of its names (wrong case, short forms).
_NEAR_MISSES = {"ws": "whitespace", "space": "whitespace", "spaces": "whitespace", "gpt-2": "gpt2"}


@dataclass(frozen=True)
class Regex:
    """A custom pre-tokenizer: the pieces are this regex's matches (the
    ``regex`` crate's syntax, Unicode-aware), and text between matches
    becomes pieces of its own, so no byte is ever lost.

    >>> import bpeforge
    >>> tok = bpeforge.train(bpeforge.sample_corpus(), pretokenizer=bpeforge.Regex(r"\\w+|\\s+"),
    ...                      vocab_size=300, progress=False)  # doctest: +SKIP
    """

    pattern: str

    def __post_init__(self) -> None:
        if not isinstance(self.pattern, str) or not self.pattern:
            raise ParameterError(f"Regex needs a non-empty pattern string, got {self.pattern!r}")
        preset = _engine.preset_name(self.pattern)
        if preset is not None:
            raise ParameterError(f"Regex({self.pattern!r}) is a preset's name: pass pretokenizer={preset!r}")


# ---- type checks -------------------------------------------------------------
# Each returns the value in the engine's type, or raises ParameterError naming
# the option. Only the type and form are checked here: every rule about the
# value (ranges, choices, rules between options) is the engine's
# (``TrainConfig::validate``), run when the options are made.


def _int(name: str, none_ok: bool = False) -> Callable[[Any], Any]:
    def check(v: Any) -> Any:
        if v is None and none_ok:
            return None
        if isinstance(v, bool) or not isinstance(v, int):
            raise ParameterError(f"{name} must be an integer{' or None' if none_ok else ''}, got {v!r}")
        return v
    return check


def _count(name: str) -> Callable[[Any], Any]:
    """An integer, or a count as the command line takes it (``"32k"``,
    ``"64Ki"``: :func:`parse_count`, the one parser of both)."""
    def check(v: Any) -> Any:
        if isinstance(v, str):
            try:
                return parse_count(v)
            except ValueError:
                raise ParameterError(f"{name} must be an integer or a count such as \"32k\" (= 32,000) or "
                                     f"\"64Ki\" (= 65,536), got {v!r}") from None
        if isinstance(v, bool) or not isinstance(v, int):
            raise ParameterError(f"{name} must be an integer or a count such as \"32k\", got {v!r}")
        return v
    return check


def _number(name: str, none_ok: bool = False) -> Callable[[Any], Any]:
    def check(v: Any) -> Any:
        if v is None and none_ok:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ParameterError(f"{name} must be a number{' or None' if none_ok else ''}, got {v!r}")
        return float(v)
    return check


def _str(name: str, none_ok: bool = False) -> Callable[[Any], Any]:
    def check(v: Any) -> Any:
        if v is None and none_ok:
            return None
        if not isinstance(v, str):
            raise ParameterError(f"{name} must be a string{' or None' if none_ok else ''}, got {v!r}")
        return v
    return check


def _presets_doc() -> str:
    """Each preset with what it is, for the option's documentation."""
    return "; ".join(f'``"{p["name"]}"``' + (" (the default)" if p["name"] == DEFAULT_PRETOKENIZER else "")
                     + "".join(f' (also ``"{a}"``)' for a in p["aliases"])
                     + f": {p['about']}" for p in _engine.PRESETS)


def check_pretokenizer(v: Any) -> str | dict[str, str]:
    """A preset's name or alias, as the engine's table names it, or a
    :class:`Regex`; anything else is refused with the preset it was
    probably meant to be. The engine's form is tagged: a preset's exact
    name, or ``{"regex": pattern}`` (no name is ever taken for a regex)."""
    if isinstance(v, Regex):
        return {"regex": v.pattern}
    if not isinstance(v, str):
        raise ParameterError(f"pretokenizer must be a preset name or bpeforge.Regex(...), got {v!r}")
    preset = _engine.preset_name(v)
    if preset is not None:
        return preset
    import difflib

    guess = _NEAR_MISSES.get(v.lower()) or _engine.preset_name(v.lower())
    guess = guess or next(iter(difflib.get_close_matches(v.lower(), PRESETS, n=1, cutoff=0.6)), None)
    hint = f"did you mean pretokenizer={guess!r}? " if guess else ""
    raise ParameterError(f"pretokenizer={v!r} is not a preset ({', '.join(PRESETS)}): {hint}"
                         f"a custom regex is given as pretokenizer=bpeforge.Regex({v!r})")


_SIZE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30,
               "gib": 1 << 30, "t": 1 << 40, "tib": 1 << 40, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}


def parse_memory_size(v: Any, name: str = "max_memory") -> int | None:
    """A memory size as bytes: an int, or ``"8G"``, ``"512M"``, ``"1.5GiB"``
    (K/M/G/T and KiB/MiB/GiB/TiB are powers of 1024, as in ``docker`` and
    ``java -Xmx``; KB/MB/GB/TB powers of 1000); None stays None."""
    import re

    if v is None:
        return None
    if isinstance(v, int) and not isinstance(v, bool):
        n = v
    elif isinstance(v, str) and (m := re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]*)\s*", v)) \
            and m.group(2).lower() in _SIZE_UNITS:
        n = int(float(m.group(1)) * _SIZE_UNITS[m.group(2).lower()])
    else:
        raise ParameterError(f"{name} must be a memory size such as 8G, 512M, 1.5GiB or a number of "
                             f"bytes (or None for the default), got {v!r}")
    return n


def parse_count(text: str) -> int:
    """A count as people write it on a command line: ``32000``, ``32k``
    (= 32,000, as "a 32k vocabulary" means: Llama's 32k is 32,000), ``1.5M``
    (= 1,500,000), ``64Ki`` (= 65,536), ``32_000``. A ``ValueError`` (one line)
    for anything else."""
    s = str(text).strip().replace("_", "")
    factors = {"": 1, "k": 1000, "m": 1000 ** 2, "ki": 1024, "mi": 1024 ** 2}
    number = s.rstrip("kKmMiI")
    unit = s[len(number):].lower()
    try:
        if unit not in factors or not number:
            raise ValueError
        value = float(number) * factors[unit] if unit else int(number)
    except ValueError:
        raise ValueError(f"{text!r} is not a count (e.g. 32000, 32k = 32,000, 64Ki = 65,536)") from None
    if value != int(value):
        raise ValueError(f"{text!r} is not a whole number")
    return int(value)


def _cli_count(text: str) -> int:
    """:func:`parse_count` for argparse (its error as the message)."""
    try:
        return parse_count(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _flag(v: Any) -> bool:
    return bool(v)


def _strings(name: str, what: str) -> Callable[[Any], Any]:
    def check(v: Any) -> Any:
        if v is None:
            return None
        if isinstance(v, (str, bytes)):
            raise ParameterError(f"{name} must be a list of {what}, not one string ({v!r})")
        try:
            out = list(v)
        except TypeError:
            raise ParameterError(f"{name} must be a list of {what}, got {v!r}") from None
        for t in out:
            if not isinstance(t, str):
                raise ParameterError(f"{name} must be strings, got {t!r}")
        return out
    return check


def _text_field(v: Any) -> Any:
    """A JSON field name or dotted path; a column number is ``columns``'s job."""
    if isinstance(v, int) and not isinstance(v, bool):
        raise ParameterError(f"text_field={v!r}: for a column of tab-separated lines give columns=[{v}]")
    return _str("text_field", none_ok=True)(v)


def _columns(v: Any) -> Any:
    """Column numbers counted from 1, as a list; ``"1,2"`` (the CLI's form) too."""
    if v is None:
        return None
    if isinstance(v, str):
        try:
            v = [int(c) for c in v.split(",")]
        except ValueError:
            raise ParameterError(f"columns must be column numbers like 1,2, got {v!r}") from None
    try:
        out = list(v)
    except TypeError:
        raise ParameterError(f"columns must be a list of column numbers (from 1), got {v!r}") from None
    if any(isinstance(c, bool) or not isinstance(c, int) for c in out):
        raise ParameterError(f"columns must be column numbers counted from 1 (e.g. [1, 2]), got {v!r}")
    return out


def _path(name: str) -> Callable[[Any], Any]:
    def check(v: Any) -> Any:
        if v is None:
            return None
        try:
            return os.fspath(v)
        except TypeError:
            raise ParameterError(f"{name} must be a path or None, got {v!r}") from None
    return check


def paths(files: Any, name: str = "files") -> list[str]:
    """One path or a list of paths, as strings; an empty list is refused."""
    if isinstance(files, (str, os.PathLike)):
        return [os.fspath(files)]
    try:
        out = [os.fspath(f) for f in files]
    except TypeError as e:
        raise ParameterError(f"{name} must be a path or a list of paths, got {files!r}") from e
    if not out:
        raise ParameterError(f"{name} is empty: give at least one input file")
    return out


def _output_path(name: str) -> Callable[[Any], Any]:
    """A path the run will write: checked now (folder exists and is writable,
    not a folder), so a long run never fails at its end."""
    def check(v: Any) -> Any:
        if v is None:
            return None
        from ._io import check_output

        return check_output(_path(name)(v), name)
    return check


def _paths_or_none(name: str) -> Callable[[Any], Any]:
    return lambda v: None if v is None else paths(v, name)


def _resume_source(v: Any) -> Any:
    """A Tokenizer (anything with ``to_json``) or a model path, as the engine
    takes it: the Tokenizer itself (the engine takes its model as it is) or
    the path (the engine reads and parses the file once)."""
    if v is None:
        return None
    if hasattr(v, "_native"):
        return v
    if hasattr(v, "to_json"):
        text = v.to_json()
        return _engine.model_from_json(text.encode() if isinstance(text, str) else text)
    try:
        return os.fspath(v)
    except TypeError:
        raise ParameterError(f"resume_from must be a Tokenizer, a model path or None, got {v!r}") from None


# ---- the option record --------------------------------------------------------


@dataclass(frozen=True)
class Opt:
    """What one option is, beyond its name, type and default (the field's)."""

    doc: str
    """Python documentation (the ``Args:`` entry)."""
    check: Callable[[Any], Any]
    """Checks a value and returns it as the engine takes it."""
    cli: dict[str, Any] | list[dict[str, Any]] | None = None
    """``argparse`` keywords for ``bpeforge train`` (``flags`` names the
    flags, default ``--name-with-dashes``), or a list of them for several
    flags setting one option; None: set by the CLI itself."""
    files_only: bool = False
    """Only for file input (not :func:`bpeforge.train_from_iterator`)."""
    engine: bool = True
    """An option of the engine's ``TrainOptions``; False: read in Python
    (the columns of Parquet/Arrow input, which pyarrow reads:
    :func:`_engine_form`)."""


def opt(default: Any, doc: str, check: Callable[[Any], Any], **kw: Any) -> Any:
    return field(default=default, metadata={"opt": Opt(doc, check, **kw)})


# Reusable CLI shapes.
_INT = {"type": int}
#: What ``on_bad_record`` may be (the engine's rule for JSON lines and TSV;
#: Python applies it to the null rows of Parquet/Arrow columns).
ON_BAD_RECORD = ("error", "skip")


@dataclass(frozen=True)
class TrainOptions:
    """Every setting of a training run, checked on construction.

    ``TrainOptions(vocab_size=8000, scheme="chars")`` raises
    :class:`bpeforge.ParameterError` naming the first bad value. Unknown
    keywords are a ``TypeError``, as for any Python call.
    """

    vocab_size: int | str = opt(32000, "total vocabulary size: special tokens + base symbols + merges; an "
                                "integer or a count as on the command line (``\"32k\"`` = 32,000, ``\"1.5M\"``, "
                                "``\"64Ki\"`` = 65,536).",
                                _count("vocab_size"),
                          cli={"type": _cli_count, "metavar": "N",
                               "help": "total vocabulary size: 32000, 32k (= 32,000), 64Ki (= 65,536); default "
                                       "32000 (2000 for the sample)"})
    scheme: str = opt("bytes", '``"bytes"`` (256 byte symbols, lossless) or ``"chars"`` (Unicode characters '
                      "with SentencePiece's ``▁`` boundary marker).",
                      _str("scheme"), cli={"choices": ["bytes", "chars"]})
    pretokenizer: str | Regex = opt(DEFAULT_PRETOKENIZER,
                                    f"a preset: {_presets_doc()}; or ``bpeforge.Regex(pattern)``: a "
                                    "custom regex whose matches are the pieces (text between matches becomes pieces "
                                    "of its own). A model keeps the pre-tokenizer it was trained with.",
                                    check_pretokenizer,
                                    cli=[{"metavar": "NAME", "help": f"{', '.join(PRESETS)} "
                                          f"(default {DEFAULT_PRETOKENIZER})"},
                                         {"flags": ["--pattern"], "type": Regex, "metavar": "REGEX",
                                          "help": "a custom pre-tokenizer regex (instead of --pretokenizer)"}])
    special_tokens: Iterable[str] = opt((), "strings that are never split or merged; they get the first ids, "
                                          "in the order given.", _strings("special_tokens", "strings"),
                                          cli={"flags": ["--special-token"], "action": "append", "metavar": "T",
                                               "help": "a special token (repeatable)"})
    min_frequency: int = opt(2, "stop when the best pair occurs fewer times than this.",
                             _int("min_frequency"), cli=_INT)
    max_token_length: int | None = opt(None, "longest merged token, in bytes (None: no limit).",
                                       _int("max_token_length", none_ok=True),
                                       cli={"type": int, "help": "longest merged token in bytes"})
    threads: int | None = opt(None, "counting threads (None: all cores). The result never depends on it.",
                              _int("threads", none_ok=True),
                              cli={"type": int, "help": "counting threads (default: all cores)"})
    character_coverage: float = opt(1.0, "chars scheme: share of character occurrences the alphabet must "
                                    "cover; rarer characters become ``unk_token``.",
                                    _number("character_coverage"),
                                    cli={"type": float, "help": "chars scheme"})
    end_of_word_suffix: str | None = opt(None, 'chars scheme: mark word ends with this suffix (e.g. ``"</w>"``, '
                                         "as subword-nmt) instead of the ``▁`` prefix.",
                                         _str("end_of_word_suffix", none_ok=True),
                                         cli={"help": "chars scheme: e.g. '</w>' instead of the ▁ prefix"})
    unk_token: str = opt("<unk>", "chars scheme: the token for characters outside the alphabet.",
                         _str("unk_token"), cli={"help": "chars scheme"})
    byte_fallback: bool = opt(False, "chars scheme: a character outside the alphabet becomes its UTF-8 bytes, the "
                              "special tokens ``<0x00>``..``<0xFF>`` (after the other special tokens, as "
                              "SentencePiece's byte pieces): lossless, no ``unk_token`` in the output.", _flag,
                              cli={"action": "store_true", "help": "chars scheme: unknown characters become "
                                                                   "byte tokens <0x00>..<0xFF>"})
    fuse_unk: bool = opt(False, "chars scheme: a run of unknown characters is one ``unk_token`` (SentencePiece), "
                         "which decodes as SentencePiece's `` ⁇ ``.", _flag,
                         cli={"action": "store_true", "help": "chars scheme: a run of unknown characters is one "
                                                              "unk token"})
    normalizer: str = opt("identity", "chars scheme: ``\"identity\"`` (text as it is) or ``\"nmt_nfkc\"`` "
                          "(SentencePiece's default normalizer: NFKC plus its whitespace and control-character "
                          "rules), applied to the text before counting and encoding, and exported to "
                          "SentencePiece and Hugging Face.", check_normalizer,
                          cli={"choices": list(NORMALIZER_NAMES), "help": "chars scheme: text normalizer "
                                                                          "(default identity)"})
    documents: bool = opt(False, "each file is one text (newlines kept).", _flag, files_only=True,
                          cli={"action": "store_true", "help": "each file is one text (newlines kept)"})
    separator: str | None = opt(None, 'texts are cut at this string instead of at newlines.',
                                _str("separator", none_ok=True), files_only=True,
                                cli={"help": "texts are separated by this string instead of newlines"})
    text_field: str | None = opt(None, 'JSON lines (plain or compressed): each line is a JSON object and its text '
                                 'is this field; a dotted path reaches nested fields (``"meta.body"``); parsed in '
                                 "the engine on every counting thread. (For Parquet/Arrow files: ``text_column``.)",
                                 _text_field, files_only=True,
                                 cli={"metavar": "FIELD", "help": "JSON lines: the text is this field "
                                                                  "(dotted path for nested fields)"})
    text_column: str | None = opt(None, "Parquet/Arrow files: the text column, read with pyarrow (a null row is "
                                  "an error, or skipped with ``on_bad_record=\"skip\"``).",
                                  _str("text_column", none_ok=True), files_only=True, engine=False,
                                  cli={"metavar": "COLUMN", "help": "Parquet/Arrow: the text column"})
    columns: Sequence[int] | None = opt(None, "tab-separated lines: these columns (counted from 1) are texts, "
                                        "e.g. ``[1, 2]`` for both sides of a parallel corpus.", _columns,
                                        files_only=True,
                                        cli={"metavar": "N,M", "help": "tab-separated lines: train on these "
                                                                       "columns (from 1), e.g. 1,2 for bitext"})
    on_bad_record: str = opt("error", 'with ``text_field``, ``text_column`` or ``columns``: a line without its text (malformed '
                             'JSON, a missing or non-string field, a missing column) is an error naming file '
                             'and line (``"error"``), or skipped and counted in the metadata as '
                             '``corpus.bad_records`` (``"skip"``).', _str("on_bad_record"),
                             files_only=True, cli={"choices": list(ON_BAD_RECORD)})
    min_word_count: int = opt(1, "drop word types seen fewer times than this after counting (1 keeps all): "
                              "less memory and merge time on huge corpora, at the cost of merges that only "
                              "rare words would get.", _int("min_word_count"),
                              cli={"type": int, "help": "drop word types seen fewer times (1: keep all)"})
    resume_from: Any = opt(None, "a model (or its path) to continue to ``vocab_size``: the merges equal one "
                           "straight run to ``vocab_size``. Its scheme, pre-tokenizer, special tokens and "
                           "alphabet are kept (and every old id stays the same), so it also extends a "
                           "vocabulary with new data. Imported models (``bpeforge.interop``) keep their own "
                           "ids; their new tokens get the ids after the largest one in use (or in the source "
                           "file), and ``vocab_size`` counts ids, so ``vocab_size=old.vocab_size + N`` learns "
                           "N new tokens.", _resume_source,
                           cli={"flags": ["--resume"], "metavar": "MODEL",
                                "help": "continue this model's merges up to --vocab-size"})
    checkpoint_path: PathLike | None = opt(None, "save the model there every ``checkpoint_every`` merges and "
                                           "when interrupted; restart with ``resume_from``.",
                                           _output_path("checkpoint_path"))
    checkpoint_every: int = opt(1000, "merges between checkpoints (with ``checkpoint_path``).",
                                _int("checkpoint_every"),
                                cli={"type": int, "metavar": "N",
                                     "help": "save the model to --output every N merges (and on Ctrl-C); "
                                             "restart with --resume"})
    superbpe_transition: int | None = opt(None, "train SuperBPE (Liu et al., 2025): ordinary BPE with "
                                          "``pretokenizer`` up to this vocabulary size, then merges that may "
                                          "span several words (stage 2 pre-tokenizer ``\"superword\"``). Bytes "
                                          "scheme only. The model encodes with the stage-2 pre-tokenizer, "
                                          "exactly as trained.", _int("superbpe_transition", none_ok=True),
                                          cli={"type": int, "metavar": "T",
                                               "help": "SuperBPE: plain BPE up to vocabulary size T, then "
                                                       "multi-word tokens"})
    superbpe_max_words: int = opt(4, "SuperBPE: at most this many words per token (0: no limit).",
                                  _int("superbpe_max_words"),
                                  cli={"type": int, "help": "SuperBPE: words per token at most (0: no limit)"})
    superbpe_colon_rule: bool = opt(True, 'SuperBPE: no token spans ": ".', _flag,
                                    cli={"action": argparse.BooleanOptionalAction,
                                         "help": "SuperBPE: no token spans ': ' (default on)"})
    langs: PathLike | Sequence[PathLike] | None = opt(None, "language-balanced training: one file of language tags per "
                                           f"input file, one tag per line ({compressions_text()} ok).",
                                           _paths_or_none("langs"), files_only=True,
                                           cli={"action": "append", "metavar": "FILE",
                                                "help": "language tags, one per line, aligned with each INPUT "
                                                        "(repeat per input); enables --temperature"})
    file_languages: Sequence[str] | None = opt(None, "one language tag per input file (instead of ``langs``).",
                                               _strings("file_languages", "language tags, one per input file"),
                                               files_only=True,
                                               cli={"flags": ["--file-language"], "action": "append",
                                                    "metavar": "TAG",
                                                    "help": "the language of each INPUT (repeat per input), "
                                                            "instead of --langs"})
    lang_field: str | None = opt(None, "language-balanced training without a side file: each record's language "
                                 "is this field (JSON lines with ``text_field``; a dotted path). The model equals "
                                 "the texts as lines with a ``langs`` file of the same tags.",
                                 _str("lang_field", none_ok=True), files_only=True,
                                 cli={"metavar": "FIELD", "help": "language balancing: each record's language is "
                                                                  "this field (JSON lines), instead of --langs"})
    lang_column: str | None = opt(None, "as ``lang_field``, for Parquet/Arrow files (with ``text_column``): each "
                                  "row's language is this column (:func:`bpeforge.train_from_dataset` takes the "
                                  "same ``lang_column``).", _str("lang_column", none_ok=True), files_only=True,
                                  engine=False,
                                  cli={"metavar": "COLUMN", "help": "language balancing: each row's language is "
                                                                    "this column (Parquet/Arrow)"})
    temperature: float = opt(1.0, "with ``langs``, ``file_languages``, ``lang_field`` or ``lang_column``: each language's share "
                             "of lines p "
                             "becomes p^(1/T) (normalised): low-resource languages weigh more, and no line is "
                             "dropped (every word type keeps a count of at least 1).",
                             _number("temperature"),
                             files_only=True,
                             cli={"type": float, "help": "language balancing: share p becomes p^(1/T) "
                                                         "(1: off; 3-5 is common)"})
    max_premium: float | None = opt(None, "parity balancing (with ``langs``, ``file_languages`` or ``lang_field``): "
                                    "no language should pay more than ``max_premium`` times the reference "
                                    "language's tokens for the same text. A language's *premium* is the "
                                    "reference's text units per token divided by its own (2.0: twice the "
                                    "tokens); a text unit is a character, two for a syllable of a syllabary "
                                    "(kana, Hangul, Ethiopic, ...), three for a Han character, so scripts of "
                                    "2-3 bytes a letter are not mistaken for cheap ones. The corpus is read "
                                    "once, each language's counts kept apart, and a share "
                                    "``balance_held_apart`` of each language's lines (chosen by a hash of the "
                                    "text) is held apart. Each of ``balance_rounds`` rounds runs the merge loop "
                                    "without them (from the ``temperature`` weights), measures every "
                                    "language's premium on its held-apart lines, and gives the languages above "
                                    "``max_premium`` more weight (at most ``balance_max_lift`` times their "
                                    "start; no language ever gets less), stopping early once none is above; a "
                                    "last merge loop then trains on every line with the final weights (the "
                                    "default, one round: two merge loops). With ``balance_held_apart=0``, and "
                                    "when the language comes from ``lang_field``, premiums are measured on the "
                                    "training counts and the last round's model is the result. Only languages "
                                    "with ``balance_min_lines`` lines or more, other than the reference "
                                    "(``premium_reference``), are balanced. ``language_balance`` in the "
                                    "metadata records every round and each language's weight and premium; "
                                    "``bpeforge report`` measures the same premium on a sample.",
                                    _number("max_premium", none_ok=True),
                                    files_only=True,
                                    cli={"type": float, "metavar": "P",
                                         "help": "parity balancing: lift languages until none pays more than P "
                                                 "times the reference's tokens for the same text (text units "
                                                 "per token, measured on held-apart lines; e.g. 1.2; needs "
                                                 "--langs)"})
    balance_rounds: int = opt(1, "measuring rounds for ``max_premium`` (0-20; default 1): each runs the merge "
                              "loop, measures every language's premium and steps the weights; with held-apart "
                              "lines one more merge loop trains on every line with the final weights. More "
                              "rounds ease the lifts back toward ``max_premium``; 0 measures only (the weights "
                              "keep their start).",
                              _int("balance_rounds"),
                              files_only=True,
                              cli={"type": int, "help": "with --max-premium: measuring rounds at most (each one "
                                                        "merge loop; default 1)"})
    premium_reference: str | None = opt(None, "the reference language (default: the one with the most bytes).",
                                        _str("premium_reference", none_ok=True),
                                        files_only=True,
                                        cli={"metavar": "LANG", "help": "with --max-premium: the reference "
                                             "language (default: the one with the most bytes)"})
    balance_min_lines: int = opt(500, "languages with fewer lines keep their weight (too little text to "
                                 "measure reliably).", _int("balance_min_lines"),
                                 files_only=True,
                                 cli={"type": int, "help": "with --max-premium: languages with fewer lines "
                                                           "keep their weight"})
    balance_max_lift: float = opt(16.0, "the most a language's weight is multiplied by (default 16): a "
                                  "language that needs more gains little per merge it takes from all the others.",
                                  _number("balance_max_lift"),
                                  files_only=True,
                                  cli={"type": float, "help": "with --max-premium: the most a language's "
                                                              "weight is multiplied by"})
    balance_held_apart: float = opt(0.1, "with ``max_premium``: the share of each language's lines (chosen by a "
                                    "hash of the text) held apart from the measuring rounds' merge loops; "
                                    "premiums are measured on them, so weight goes where merges help text the "
                                    "vocabulary has not seen. A last merge loop trains on every line. 0: "
                                    "measure on the training lines themselves (merges that memorise them look "
                                    "like gains).",
                                    _number("balance_held_apart"),
                                    files_only=True,
                                    cli={"type": float, "metavar": "SHARE",
                                         "help": "with --max-premium: share of each language's lines held apart "
                                                 "to measure premiums on (default 0.1; 0: the training lines)"})
    progress_csv: PathLike | None = opt(None, "write ``merge,pair_count,elapsed_s`` rows live while merging "
                                        "(``bpeforge report --progress-csv`` draws them).", _output_path("progress_csv"),
                                        files_only=True,
                                        cli={"metavar": "CSV", "help": "write merge,pair_count,elapsed_s rows live"})

    max_memory: int | str | None = opt(None, "memory budget of the run, e.g. ``\"8G\"``, ``\"512M\"``, "
                                       "``\"1.5GiB\"`` or bytes (None: 70% of the memory available when training "
                                       "starts, MemAvailable or the cgroup limit if lower). Counting keeps its "
                                       "tables within it by spilling sorted runs to the temporary folder "
                                       "(``TMPDIR``) and merging them at the end; if the merge phase would not "
                                       "fit, the rarest word types are dropped (``min_word_count`` raised just "
                                       "enough, said on the progress output and recorded in "
                                       "``metadata[\"memory_budget\"]``); a budget too small even so fails "
                                       "before the merge phase allocates.", parse_memory_size,
                                       cli={"metavar": "SIZE", "help": "memory budget, e.g. 8G or 512M (default: "
                                                                       "70%% of available memory)"})

    def __post_init__(self) -> None:
        # Convert every value to the engine's type now (a wrong type names
        # the parameter), then let the engine check the values (ranges,
        # choices, the rules between options) by making the settings: a bad
        # value fails here, before any work starts, and the settings made
        # are the ones the run takes (a resumed model file is parsed once).
        engine = EngineOptions(**_engine_form({name: record.check(getattr(self, name))
                                               for name, record in _records()}))
        settings = self._make_settings(engine)
        # A resumed checkpoint gives the options left at their defaults:
        # this record then says what the run really is.
        taken = settings.from_checkpoint
        for name, value in taken.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_from_checkpoint", frozenset(taken))
        object.__setattr__(self, "_engine", dataclasses.replace(engine, **taken) if taken else engine)
        object.__setattr__(self, "_settings", settings)

    @classmethod
    def given(cls, explicit: Iterable[str], **values: Any) -> TrainOptions:
        """The options of a caller that knows which it set (the command
        line does): ``explicit`` names them, and resuming a checkpoint takes
        every other result-changing option from it, even where a value given
        equals its default (``TrainOptions(...)`` takes an option at its
        default from the checkpoint)."""
        options = cls.__new__(cls)
        object.__setattr__(options, "_explicit", sorted(set(explicit)))
        options.__init__(**values)  # type: ignore[misc]
        return options

    def _make_settings(self, engine: Any) -> _engine.TrainSettings:
        explicit = self.__dict__.get("_explicit")
        if explicit is not None:
            explicit = sorted({_ENGINE_NAME.get(name, name) for name in explicit})
        return _engine.train_settings(engine, explicit)

    @property
    def from_checkpoint(self) -> frozenset[str]:
        """The options a resumed checkpoint gave (left unset by the caller)."""
        return self.__dict__.get("_from_checkpoint", frozenset())

    def engine_options(self, **changes: Any) -> Any:
        """The options in the engine's form (``changes`` replaced: a
        counting task's absolute paths, an Arrow run's columns)."""
        engine = self._engine  # type: ignore[attr-defined]
        return dataclasses.replace(engine, **changes) if changes else engine

    def settings(self, **changes: Any) -> _engine.TrainSettings:
        """The options converted and checked by the engine, once: what every
        training entry point of the engine takes. Made with the options (and
        again in a process that unpickled them: the settings stay in theirs).
        With ``changes`` (:meth:`engine_options`), settings of their own; a
        resumed model file is not read again (the model already read is)."""
        made = self.__dict__.get("_settings")
        if made is None:
            made = self._make_settings(self.engine_options())
            object.__setattr__(self, "_settings", made)
        if not changes:
            return made
        if isinstance(self.engine_options().resume_from, str):
            changes.setdefault("resume_from", made)
        return self._make_settings(self.engine_options(**changes))

    def __getstate__(self) -> dict[str, Any]:
        # The engine's settings stay in their process (a copy makes its own).
        return {k: v for k, v in self.__dict__.items() if k != "_settings"}

    def engine_args(self) -> dict[str, Any]:
        """The engine's form of each option, by name (for tests and tools)."""
        return dataclasses.asdict(self.engine_options())

    def non_default(self) -> dict[str, Any]:
        """The options that differ from their defaults."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if getattr(self, f.name) != f.default}

    def refuse(self, names: Iterable[str], where: str, why: str) -> None:
        """ParameterError if any of ``names`` is set (differs from its default)."""
        given = [n for n in names if n in self.non_default()]
        if given:
            raise ParameterError(f"{', '.join(given)}: not available {where} ({why}); no option is ever dropped "
                                 "silently, so this run is refused")


def _records() -> list[tuple[str, Opt]]:
    return [(f.name, f.metadata["opt"]) for f in dataclasses.fields(TrainOptions)]


NAMES = tuple(name for name, _ in _records())
#: The options the engine takes (the Rust core's ``TrainOptions``, by the
#: same names): all but those read in Python (``Opt.engine``).
ENGINE_NAMES = tuple(name for name, record in _records() if record.engine)
#: The engine's option that each option read in Python stands for: a run
#: over Parquet/Arrow files reads its columns in Python and hands the
#: engine the rows, with each row's language when ``lang_column`` is given
#: (the engine's ``lang_field``: records that name their language).
_ENGINE_NAME = {"text_column": "text_field", "lang_column": "lang_field"}


def _engine_form(values: dict[str, Any]) -> dict[str, Any]:
    """The engine's options from every option's checked value: a language
    column is the engine's ``lang_field`` (the rows name their language);
    the text column is read in Python and never reaches the engine, and
    with it ``on_bad_record`` is Python's rule for null rows, so the engine
    refuses no record itself (the options of the Arrow run itself:
    ``_arrow.engine_changes``)."""
    engine = {name: values[name] for name in ENGINE_NAMES}
    if engine["lang_field"] is None:
        engine["lang_field"] = values["lang_column"]
    if values["text_column"] is not None:
        rule = engine["on_bad_record"]
        if rule not in ON_BAD_RECORD:
            raise ParameterError(f"on_bad_record must be {' or '.join(map(repr, ON_BAD_RECORD))}, got {rule!r}")
        engine["on_bad_record"] = "error"
    return engine


#: The options in the engine's form (:func:`_engine_form`), one field per
#: option of the Rust core's ``TrainOptions``, by the same names:
#: ``_engine.TrainSettings`` reads it field by field. (Made from the option
#: list, so type checkers see it as ``Any``.)
EngineOptions = dataclasses.make_dataclass("EngineOptions", [(name, Any) for name in ENGINE_NAMES], frozen=True)
EngineOptions.__module__ = __name__
#: Options that need file input.
FILE_ONLY = frozenset(name for name, r in _records() if r.files_only)


def option_docs(skip: Iterable[str] = ()) -> str:
    """The ``Args:`` entries for a docstring, from the option list."""
    import textwrap

    skip = set(skip)
    out = []
    for name, record in _records():
        if name in skip:
            continue
        out.append(textwrap.fill(f"{name}: {record.doc}", width=88, initial_indent="        ",
                                 subsequent_indent="            "))
    return "\n".join(out)


# ---- the command line -----------------------------------------------------------


def add_cli_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds one flag per option that the command line sets directly. Unset
    flags are absent from the parsed namespace (the option keeps its default)."""
    for name, record in _records():
        specs = record.cli if isinstance(record.cli, list) else [record.cli] if record.cli else []
        for spec in map(dict, specs):
            flags = spec.pop("flags", ["--" + name.replace("_", "-")])
            parser.add_argument(*flags, dest=name, default=argparse.SUPPRESS, **spec)


def from_cli(args: argparse.Namespace, **overrides: Any) -> TrainOptions:
    """The options a parsed ``bpeforge train`` command line gives."""
    given = {name: getattr(args, name) for name in NAMES if hasattr(args, name)}
    given.update(overrides)
    return TrainOptions.given(given, **given)


def _cli_spec(name: str) -> dict[str, Any]:
    """The first command-line flag spec of an option."""
    record = dict(_records())[name]
    spec = record.cli[0] if isinstance(record.cli, list) else record.cli
    return dict(spec or {})


def cli_flags(options: TrainOptions, names: Iterable[str]) -> list[str]:
    """The ``bpeforge train`` flags that give ``options``' values of
    ``names`` (those at their defaults left out), as separate words: what
    a printed command repeats to run with the same options."""
    defaults = {f.name: f.default for f in dataclasses.fields(options)}
    out: list[str] = []
    for name in names:
        value = getattr(options, name)
        if name not in defaults or value == defaults[name] or value is None:
            continue
        spec = _cli_spec(name)
        if not spec:
            continue
        flag = spec.get("flags", ["--" + name.replace("_", "-")])[0]
        action = spec.get("action")
        if action == "store_true":
            out.append(flag)
        elif action is argparse.BooleanOptionalAction:
            out.append(flag if value else "--no-" + flag[2:])
        elif action == "append":
            for item in value:
                out += [flag, os.fspath(item)]
        elif name == "columns":
            out += [flag, ",".join(str(c) for c in value)]
        else:
            out += [flag, str(value)]
    return out
