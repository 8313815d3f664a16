"""The training entry points: :func:`train` (files), :func:`train_from_iterator`
(any iterable of ``str``), :func:`train_from_dataset` (Hugging Face
datasets), and :func:`count` with :func:`train_from_counts` (counts saved to
a file, trained on later). Each makes its :class:`bpeforge.TrainOptions` once, by name, and
hands the engine its checked settings (:meth:`TrainOptions.settings`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from typing import Any, Literal, Union, overload

from . import _arrow, _engine, _input_formats, _text_names
from ._io import check_output
from ._progress import Progress, native_progress
from ._sizes import DEFAULT_VOCAB_SIZE, VOCAB_SIZES_DOC, at_sizes, check_sizes, plan_sizes, run_size
from ._tokenizer import Tokenizer
from .errors import ParameterError
from .options import DEFAULT_PRETOKENIZER, TrainOptions, option_docs, paths

PathLike = Union[str, "os.PathLike[str]"]

__all__ = ["train", "train_from_iterator", "train_from_dataset", "count", "train_from_counts"]


@overload
def train(
    files: PathLike | Sequence[PathLike],
    *,
    vocab_size: int | str = 32000,
    vocab_sizes: None = None,
    scheme: Literal["bytes", "chars"] = "bytes",
    pretokenizer: str = DEFAULT_PRETOKENIZER,
    special_tokens: Iterable[str] = (),
    min_frequency: int = 2,
    max_token_length: int | None = None,
    threads: int | None = None,
    progress: Progress = True,
    character_coverage: float = 1.0,
    end_of_word_suffix: str | None = None,
    unk_token: str = "<unk>",
    byte_fallback: bool = False,
    fuse_unk: bool = False,
    normalizer: str = "identity",
    documents: bool = False,
    separator: str | None = None,
    text_field: str | None = None,
    text_column: str | None = None,
    columns: Sequence[int] | None = None,
    on_bad_record: Literal["error", "skip"] = "error",
    min_word_count: int = 1,
    resume_from: PathLike | Tokenizer | None = None,
    checkpoint_path: PathLike | None = None,
    checkpoint_every: int = 1000,
    superbpe_transition: int | None = None,
    superbpe_max_words: int = 4,
    superbpe_colon_rule: bool = True,
    langs: PathLike | Sequence[PathLike] | None = None,
    file_languages: Sequence[str] | None = None,
    lang_field: str | None = None,
    lang_column: str | None = None,
    temperature: float = 1.0,
    max_premium: float | None = None,
    balance_rounds: int = 1,
    premium_reference: str | None = None,
    balance_min_lines: int = 500,
    balance_max_lift: float = 16.0,
    balance_held_apart: float = 0.1,
    progress_csv: PathLike | None = None,
    max_memory: int | str | None = None,
) -> Tokenizer: ...


@overload
def train(files: PathLike | Sequence[PathLike], *, vocab_sizes: Sequence[int | str],
          **options: Any) -> dict[int, Tokenizer]: ...


# The first overload repeats the signature so that a call without vocab_sizes
# keeps every keyword typed (tests/test_options.py checks both stay equal); the
# second takes any keyword, which the implementation does not: hence the ignore.
def train(  # type: ignore[misc]
    files: PathLike | Sequence[PathLike],
    *,
    vocab_size: int | str = 32000,
    vocab_sizes: Sequence[int | str] | None = None,
    scheme: Literal["bytes", "chars"] = "bytes",
    pretokenizer: str = DEFAULT_PRETOKENIZER,
    special_tokens: Iterable[str] = (),
    min_frequency: int = 2,
    max_token_length: int | None = None,
    threads: int | None = None,
    progress: Progress = True,
    character_coverage: float = 1.0,
    end_of_word_suffix: str | None = None,
    unk_token: str = "<unk>",
    byte_fallback: bool = False,
    fuse_unk: bool = False,
    normalizer: str = "identity",
    documents: bool = False,
    separator: str | None = None,
    text_field: str | None = None,
    text_column: str | None = None,
    columns: Sequence[int] | None = None,
    on_bad_record: Literal["error", "skip"] = "error",
    min_word_count: int = 1,
    resume_from: PathLike | Tokenizer | None = None,
    checkpoint_path: PathLike | None = None,
    checkpoint_every: int = 1000,
    superbpe_transition: int | None = None,
    superbpe_max_words: int = 4,
    superbpe_colon_rule: bool = True,
    langs: PathLike | Sequence[PathLike] | None = None,
    file_languages: Sequence[str] | None = None,
    lang_field: str | None = None,
    lang_column: str | None = None,
    temperature: float = 1.0,
    max_premium: float | None = None,
    balance_rounds: int = 1,
    premium_reference: str | None = None,
    balance_min_lines: int = 500,
    balance_max_lift: float = 16.0,
    balance_held_apart: float = 0.1,
    progress_csv: PathLike | None = None,
    max_memory: int | str | None = None,
) -> Tokenizer | dict[int, Tokenizer]:
    """Train a BPE vocabulary on one or more text files.

    Files may be plain or compressed (by the name's suffix: {compressions}). By
    default each line is one text; ``documents=True`` makes each file one text,
    and ``separator="..."`` cuts texts at that string instead of at newlines.
    Structured lines: ``text_field="text"`` reads JSON lines (the text is that
    field of each record), ``columns=[1, 2]`` reads tab-separated columns.
    Parquet and Arrow files (``.parquet``, ``.arrow``, ``.feather``) are read
    with pyarrow: ``text_column`` names the text column (and ``lang_column``
    the language column); their string buffers go to the engine without a
    Python object per row. Hugging Face datasets: :func:`train_from_dataset`.

    Structured input is never trained on as plain text by accident: a file
    whose name says JSON lines (``.jsonl``, ``.ndjson``, with any compression
    suffix), Parquet or Arrow, or whose content does (Parquet's ``PAR1``
    magic bytes; first lines that are all JSON objects), is refused without
    ``text_field``, naming the file and its string fields. To train on a
    JSON lines file's raw text on purpose, give ``separator="\\n"`` or
    ``documents=True``. The rules: the user guide's *Input formats* page.

    Args:
        files: a path or a list of paths.
        progress: True (a live line on terminals and in notebooks, JSON
            lines when stderr is a file or pipe), False, one of "human",
            "json", "off", "tqdm" (a tqdm bar per phase), or a callable
            that gets a :class:`bpeforge.ProgressEvent` per update. Text goes
            to ``sys.stderr`` (through it when it is redirected, e.g. in
            Jupyter). An exception raised by the callable stops training and
            is raised here.
{vocab_sizes}
{options}

    Returns:
        The trained :class:`Tokenizer`. Its ``metadata`` records the inputs,
        settings, corpus sizes and the seconds spent counting and merging.
        With ``vocab_sizes``: a dict from each size to its model, smallest
        first.

    Examples:
        >>> import bpeforge
        >>> tok = bpeforge.train(bpeforge.sample_corpus(), vocab_size=300, progress=False)
        >>> tok.decode(tok.encode("hello world"))
        'hello world'
    """
    # Why this function is long: its signature names every option and its
    # docstring documents them; the body is a few lines.
    sizes = plan_sizes(vocab_sizes, vocab_size != DEFAULT_VOCAB_SIZE)
    options = TrainOptions(vocab_size=run_size(sizes, vocab_size), scheme=scheme, pretokenizer=pretokenizer,
                           special_tokens=special_tokens, min_frequency=min_frequency,
                           max_token_length=max_token_length, threads=threads, character_coverage=character_coverage,
                           end_of_word_suffix=end_of_word_suffix, unk_token=unk_token, byte_fallback=byte_fallback,
                           fuse_unk=fuse_unk, normalizer=normalizer, documents=documents, separator=separator,
                           text_field=text_field, text_column=text_column, columns=columns, on_bad_record=on_bad_record,
                           min_word_count=min_word_count, resume_from=resume_from, checkpoint_path=checkpoint_path,
                           checkpoint_every=checkpoint_every, superbpe_transition=superbpe_transition,
                           superbpe_max_words=superbpe_max_words, superbpe_colon_rule=superbpe_colon_rule,
                           langs=langs, file_languages=file_languages, lang_field=lang_field, lang_column=lang_column,
                           temperature=temperature, max_premium=max_premium, balance_rounds=balance_rounds,
                           premium_reference=premium_reference, balance_min_lines=balance_min_lines,
                           balance_max_lift=balance_max_lift, balance_held_apart=balance_held_apart,
                           progress_csv=progress_csv, max_memory=max_memory)
    check_sizes(options, sizes)
    tok = train_files(paths(files), options, native_progress(progress))
    return tok if sizes is None else at_sizes(tok, sizes)


@overload
def train_from_dataset(ds: Any, *, text_column: str = "text", lang_column: str | None = None,
                       batch_size: int = 16_384, progress: Progress = True, vocab_sizes: None = None,
                       **options: Any) -> Tokenizer: ...


@overload
def train_from_dataset(ds: Any, *, text_column: str = "text", lang_column: str | None = None,
                       batch_size: int = 16_384, progress: Progress = True, vocab_sizes: Sequence[int | str],
                       **options: Any) -> dict[int, Tokenizer]: ...


def train_from_dataset(
    ds: Any,
    *,
    text_column: str = "text",
    lang_column: str | None = None,
    batch_size: int = 16_384,
    progress: Progress = True,
    vocab_sizes: Sequence[int | str] | None = None,
    **options: Any,
) -> Tokenizer | dict[int, Tokenizer]:
    """Train on a Hugging Face ``datasets.Dataset`` or ``IterableDataset``.

    The text column's Arrow buffers go to the engine in batches of
    ``batch_size`` rows, with no Python object per row; worker threads count
    earlier batches meanwhile. ``lang_column`` balances languages (as
    ``lang_column`` does for Parquet files; a first pass reads that column alone).
    A row whose text (or language) is null is an error, or skipped and
    counted with ``on_bad_record="skip"``. The model equals training on the
    same texts as plain lines.

    Args:
        ds: a ``Dataset`` or ``IterableDataset`` (one split, not a ``DatasetDict``).
        text_column: the string column to train on.
        lang_column: the column naming each row's language, or None.
        batch_size: rows per batch handed to the engine.
        progress: as for :func:`train`.
        vocab_sizes: several sizes from one run, as for :func:`train`
            (then a dict from each size to its model).
        options: any keyword of :func:`train` but the text-file ones
            (``documents``, ``separator``, ``columns``, ``langs``,
            ``file_languages``, ``text_field``, ``lang_field``).
    """
    given = [k for k in ("text_field", "lang_field") if k in options]
    if given:
        raise ParameterError(f"{', '.join(given)}: give text_column=/lang_column= for a dataset")
    # The columns are the options' text and language columns, as for a
    # Parquet file: the engine checks the options with them, when made.
    sizes = plan_sizes(vocab_sizes, "vocab_size" in options)
    if sizes is not None:
        options["vocab_size"] = run_size(sizes, None)
    opts = TrainOptions(**options, text_column=text_column, lang_column=lang_column)
    opts.refuse(_arrow.TEXT_FILE_ONLY, "for a dataset", "texts are rows of a column")
    check_sizes(opts, sizes)
    tok = Tokenizer(_arrow.train_from_dataset(ds, text_column, lang_column, batch_size, opts,
                                              native_progress(progress)))
    return tok if sizes is None else at_sizes(tok, sizes)


@overload
def train_from_iterator(
    texts: Iterable[str],
    *,
    vocab_size: int | str = 32000,
    vocab_sizes: None = None,
    scheme: Literal["bytes", "chars"] = "bytes",
    pretokenizer: str = DEFAULT_PRETOKENIZER,
    special_tokens: Iterable[str] = (),
    min_frequency: int = 2,
    max_token_length: int | None = None,
    threads: int | None = None,
    progress: Progress = True,
    character_coverage: float = 1.0,
    end_of_word_suffix: str | None = None,
    unk_token: str = "<unk>",
    byte_fallback: bool = False,
    fuse_unk: bool = False,
    normalizer: str = "identity",
    min_word_count: int = 1,
    resume_from: PathLike | Tokenizer | None = None,
    checkpoint_path: PathLike | None = None,
    checkpoint_every: int = 1000,
    superbpe_transition: int | None = None,
    superbpe_max_words: int = 4,
    superbpe_colon_rule: bool = True,
    max_memory: int | str | None = None,
) -> Tokenizer: ...


@overload
def train_from_iterator(texts: Iterable[str], *, vocab_sizes: Sequence[int | str],
                        **options: Any) -> dict[int, Tokenizer]: ...


# Overloads as for train (the first repeats the signature).
def train_from_iterator(  # type: ignore[misc]
    texts: Iterable[str],
    *,
    vocab_size: int | str = 32000,
    vocab_sizes: Sequence[int | str] | None = None,
    scheme: Literal["bytes", "chars"] = "bytes",
    pretokenizer: str = DEFAULT_PRETOKENIZER,
    special_tokens: Iterable[str] = (),
    min_frequency: int = 2,
    max_token_length: int | None = None,
    threads: int | None = None,
    progress: Progress = True,
    character_coverage: float = 1.0,
    end_of_word_suffix: str | None = None,
    unk_token: str = "<unk>",
    byte_fallback: bool = False,
    fuse_unk: bool = False,
    normalizer: str = "identity",
    min_word_count: int = 1,
    resume_from: PathLike | Tokenizer | None = None,
    checkpoint_path: PathLike | None = None,
    checkpoint_every: int = 1000,
    superbpe_transition: int | None = None,
    superbpe_max_words: int = 4,
    superbpe_colon_rule: bool = True,
    max_memory: int | str | None = None,
) -> Tokenizer | dict[int, Tokenizer]:
    """Train on any iterable of ``str`` (each item is one text).

    Items are pulled in batches on the calling thread while worker threads
    count earlier batches, so a generator over a huge corpus is never held in
    memory. Same keywords and result as :func:`train` (``vocab_sizes``
    included); a file and an iterable of its lines give the same model.

    Examples:
        >>> tok = train_from_iterator(["low lower lowest"] * 10, vocab_size=260, progress=False)
        >>> tok.vocab_size
        260
    """
    if isinstance(texts, (str, bytes)):
        raise ParameterError("texts must be an iterable of str, not a single string (wrap it in a list)")
    sizes = plan_sizes(vocab_sizes, vocab_size != DEFAULT_VOCAB_SIZE)
    options = TrainOptions(vocab_size=run_size(sizes, vocab_size), scheme=scheme, pretokenizer=pretokenizer,
                           special_tokens=special_tokens, min_frequency=min_frequency,
                           max_token_length=max_token_length, threads=threads, character_coverage=character_coverage,
                           end_of_word_suffix=end_of_word_suffix, unk_token=unk_token, byte_fallback=byte_fallback,
                           fuse_unk=fuse_unk, normalizer=normalizer, min_word_count=min_word_count,
                           resume_from=resume_from, checkpoint_path=checkpoint_path,
                           checkpoint_every=checkpoint_every, superbpe_transition=superbpe_transition,
                           superbpe_max_words=superbpe_max_words, superbpe_colon_rule=superbpe_colon_rule,
                           max_memory=max_memory)
    check_sizes(options, sizes)
    tok = Tokenizer(_engine.train_iterator(texts, options.settings(), native_progress(progress)))
    return tok if sizes is None else at_sizes(tok, sizes)


def count(files: PathLike | Sequence[PathLike], output: PathLike, *, progress: Progress = True,
          **options: Any) -> dict[str, Any]:
    """Count the word types of text files into a counts file, to train on
    later without counting again (:func:`train_from_counts`).

    Counting is most of a large run's time; a counts file lets one count
    serve many trainings: other vocabulary sizes, ``min_frequency``,
    ``max_token_length``, ``character_coverage`` or memory budgets. The
    file is written atomically and records the inputs (path, size, time of
    last change) and the settings that decide the counts (scheme,
    pre-tokenizer, special tokens, normalizer, end-of-word suffix, how texts
    are read); training on it refuses other such settings, naming them.

    Args:
        files: a path or a list of paths, read as :func:`train` reads them.
        output: the counts file to write (never one of the inputs).
        progress: as for :func:`train`.
        options: any keyword of :func:`train`; those that decide the counts
            are recorded, ``threads`` and ``max_memory`` bound the counting.
            Language balancing and SuperBPE count otherwise and are refused.

    Returns:
        The file's header: ``inputs``, ``counting`` (the settings that
        decide the counts), ``options``, ``count_seconds``.

    Examples:
        >>> import bpeforge, json, tempfile, os
        >>> out = os.path.join(tempfile.mkdtemp(), "sample.counts")
        >>> header = bpeforge.count(bpeforge.sample_corpus(), out, progress=False)
        >>> tok = bpeforge.train_from_counts(out, vocab_size=300, progress=False)
        >>> tok.merges == bpeforge.train(bpeforge.sample_corpus(), vocab_size=300, progress=False).merges
        True
    """
    made = TrainOptions(**options)
    names = paths(files)
    _text_names.for_counting(names, made)
    check_output(os.fspath(output), "counts file", inputs=names)
    header = _engine.count_to_file(names, made.settings(), native_progress(progress), os.fspath(output))
    result: dict[str, Any] = json.loads(header)
    return result


@overload
def train_from_counts(counts: PathLike, *, progress: Progress = True, vocab_sizes: None = None,
                      **options: Any) -> Tokenizer: ...


@overload
def train_from_counts(counts: PathLike, *, progress: Progress = True, vocab_sizes: Sequence[int | str],
                      **options: Any) -> dict[int, Tokenizer]: ...


def train_from_counts(counts: PathLike, *, progress: Progress = True, vocab_sizes: Sequence[int | str] | None = None,
                      **options: Any) -> Tokenizer | dict[int, Tokenizer]:
    """Train on a counts file (:func:`count`, or the one a run with
    ``checkpoint_path`` saves beside its checkpoint once counting finishes)
    without reading the text again.

    The model equals :func:`train` on the counted files with the same
    options, merge for merge. The settings that decide the counts must be
    the file's (the scheme, pre-tokenizer, special tokens, normalizer,
    end-of-word suffix and how texts are read; a differing one is refused,
    naming it); every other option is free.

    Args:
        counts: the counts file.
        progress: as for :func:`train`.
        vocab_sizes: several sizes from one run, as for :func:`train`
            (then a dict from each size to its model).
        options: any keyword of :func:`train` (language balancing and
            SuperBPE count otherwise and are refused).
    """
    sizes = plan_sizes(vocab_sizes, "vocab_size" in options)
    if sizes is not None:
        options["vocab_size"] = run_size(sizes, None)
    made = TrainOptions(**options)
    check_sizes(made, sizes)
    path = os.fspath(counts)
    tok = Tokenizer(_engine.train_counts_file(path, made.settings(), native_progress(progress)))
    return tok if sizes is None else at_sizes(tok, sizes)


def train_files(files: list[str], options: TrainOptions, progress: str) -> Tokenizer:
    """:func:`train` with its options made: Parquet/Arrow files through
    pyarrow (:mod:`bpeforge._arrow`), any other file read by the engine.
    The command line calls it with the options it made from its flags."""
    names = _text_names.for_training(files, options)
    if names.kind == "columnar":
        return Tokenizer(_arrow.train_files(files, options, names, progress))
    return Tokenizer(_engine.train_files(files, options.settings(), progress))


train.__doc__ = ((train.__doc__ or "").replace("{options}", option_docs()).replace("{vocab_sizes}", VOCAB_SIZES_DOC)
                 .replace("{compressions}", _input_formats.compressions_text(", ")))
