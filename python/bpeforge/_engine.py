"""The one door between the Python package and the compiled engine.

Every other module of ``bpeforge`` reaches the Rust core through this one
(``tests/test_import_graph.py`` holds it): the engine's functions, its
classes and its tables, each under the name the rest of the package uses.
The functions are thin: each calls one function of ``bpeforge._native``
with the same arguments, so following a parameter from the public API to the
engine passes through here, typed, and ends at the stubs of the compiled
module (``_native.pyi``, checked against it by ``tests/test_stubs.py``).

``progress`` is always what :func:`bpeforge._progress.native_progress` makes
(``"off"``, a format name, a ``(format, stream)`` pair or a callable taking
one event dict); ``settings`` is a :class:`TrainSettings` made by
:meth:`bpeforge.TrainOptions.settings`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Callable, Union

from . import _native
from ._native import CountSum, NativeTokenizer, ShardReporter, TokenizerBase, TrainSettings

__all__ = [
    "__version__", "DEFAULT_PRETOKENIZER", "PRESETS", "COMPRESSIONS", "PROGRESS_FORMATS",
    "NativeTokenizer", "TokenizerBase", "TrainSettings", "CountSum", "ShardReporter",
    "EngineProgress", "preset_name", "train_settings", "train_files", "train_iterator", "train_arrow", "train_counts_file",
    "count_to_file", "language_table", "count_shard", "count_arrow_shard", "train_count_sum",
    "shard_reporter", "load_model", "model_from_json", "model_from_snapshot", "encode_arrow",
    "encode_arrow_file", "pretokenize", "merge_splits", "unreachable_merges", "script_of", "text_units",
    "premiums",
]

#: What the engine takes as ``progress``: a format name (text on fd 2), a
#: ``(format, stream)`` pair (text through ``stream.write``) or a callable
#: taking one event dict (:func:`bpeforge._progress.native_progress` makes it).
EngineProgress = Union[str, tuple[str, Any], Callable[[dict[str, Any]], object]]

#: The compiled engine's version (the package's version).
__version__: str = _native.__version__

#: The pre-tokenizer preset a run uses when none is given.
DEFAULT_PRETOKENIZER: str = _native.DEFAULT_PRETOKENIZER

#: The engine's one table of pre-tokenizer presets (crates/core/src/presets.rs):
#: one dict per preset with its ``name``, ``aliases``, ``about``, ``pattern``
#: and ``fast`` (``pattern`` is None for the presets without a regex).
PRESETS: tuple[dict[str, Any], ...] = tuple(_native.PRESETS)


def preset_name(name: str) -> str | None:
    """The preset that ``name`` (its exact name or one of its aliases in the
    engine's table) means, by its exact name, as the engine itself looks it
    up; None for a name that is no preset's."""
    return _native.preset_name(name)


#: The compression suffixes every reader decompresses (crates/core/src/input/mod.rs).
COMPRESSIONS: tuple[str, ...] = tuple(_native.COMPRESSIONS)

#: The progress text formats (crates/core/src/progress.rs ``ProgressFormat::NAMES``).
PROGRESS_FORMATS: tuple[str, ...] = tuple(_native.PROGRESS_FORMATS)


# Training options --------------------------------------------------------

def train_settings(engine: Any, explicit: list[str] | None = None) -> TrainSettings:
    """A run's options (an ``EngineOptions`` record, read field by field),
    converted and checked once by the engine; ``explicit``: the options the
    caller set (a checkpoint's resume checks them)."""
    return _native.TrainSettings(engine, explicit)


# Training ----------------------------------------------------------------

def train_files(paths: list[str], settings: TrainSettings, progress: EngineProgress) -> NativeTokenizer:
    """A model trained on text files (plain, compressed or JSON Lines, as ``settings`` says)."""
    return _native.train_files(paths, settings, progress)


def train_iterator(texts: Iterable[str], settings: TrainSettings, progress: EngineProgress) -> NativeTokenizer:
    """A model trained on the strings ``texts`` yields (pulled by the engine)."""
    return _native.train_iterator(texts, settings, progress)


def train_arrow(batches: Iterable[tuple[Any, ...]], settings: TrainSettings, progress: EngineProgress,
                inputs: list[str], languages: tuple[list[str], list[int]] | None = None,
                files: list[tuple[str, int]] | None = None) -> NativeTokenizer:
    """A model trained on Arrow string rows (pyarrow buffers, no Python object
    per row; :mod:`bpeforge._arrow` makes ``batches``)."""
    return _native.train_arrow(batches, settings, progress, inputs, languages, files)


def train_counts_file(path: str, settings: TrainSettings, progress: EngineProgress) -> NativeTokenizer:
    """A model trained on a counts file written by :func:`count_to_file`."""
    return _native.train_counts_file(path, settings, progress)


def count_to_file(paths: list[str], settings: TrainSettings, progress: EngineProgress, output: str) -> str:
    """Count ``paths`` into the counts file ``output``; its header (JSON)."""
    return _native.count_to_file(paths, settings, progress, output)


# Training on a Ray cluster (bpeforge.distributed) -----------------------

def language_table(paths: list[str], settings: TrainSettings) -> tuple[list[str], list[int], list[int]]:
    """The languages of a run's inputs, as every counting task numbers them."""
    return _native.language_table(paths, settings)


def count_shard(paths: list[str], file_indices: list[int], settings: TrainSettings, progress: EngineProgress,
                byte_range: tuple[int, int] | None = None, lines_before: int = 0,
                languages: tuple[list[str], list[int]] | None = None) -> tuple[bytes, list[int]]:
    """One shard's count (its table and the UTF-8 bytes per language)."""
    return _native.count_shard(paths, file_indices, settings, progress, byte_range, lines_before, languages)


def count_arrow_shard(batches: Iterable[tuple[Any, ...]], settings: TrainSettings, progress: EngineProgress,
                      languages: tuple[list[str], list[int]] | None = None) -> tuple[bytes, list[int]]:
    """One Arrow shard's count, as :func:`count_shard`."""
    return _native.count_arrow_shard(batches, settings, progress, languages)


def train_count_sum(total: CountSum, settings: TrainSettings, progress: EngineProgress, inputs: list[str],
                    languages: tuple[list[str], list[int]] | None = None, lang_bytes: list[int] | None = None,
                    sharded: tuple[float, int] | None = None) -> NativeTokenizer:
    """A model trained on the shards' counts, summed as they arrived."""
    return _native.train_count_sum(total, settings, progress, inputs, languages, lang_bytes, sharded)


def shard_reporter(progress: EngineProgress, phase: str, total: int, total_bytes: int) -> ShardReporter:
    """The progress of shards done, through the engine's printer or a callback."""
    return _native.ShardReporter(progress, phase, total, total_bytes)


# Models ------------------------------------------------------------------

def load_model(path: str) -> NativeTokenizer:
    """A bpeforge model file (``.gz`` gunzipped), validated completely."""
    return _native.NativeTokenizer.load(path)


def model_from_json(text: bytes) -> NativeTokenizer:
    """A model from its JSON (what :meth:`NativeTokenizer.to_json` writes)."""
    return _native.NativeTokenizer.from_json(text)


def model_from_snapshot(data: bytes) -> NativeTokenizer:
    """A model from a pickle's snapshot (:meth:`NativeTokenizer.to_snapshot`)."""
    return _native.NativeTokenizer.from_snapshot(data)


# Encoding Arrow columns --------------------------------------------------

def encode_arrow(model: NativeTokenizer, offsets: Any, data: Any, start: int, length: int, wide: bool,
                 threads: int | None = None, allowed: list[int] | None = None,
                 disallowed: list[int] | None = None) -> tuple[bytes, bytes]:
    """The ids of ``length`` Arrow strings from row ``start`` (flat ids and their ends)."""
    return _native.encode_arrow(model, offsets, data, start, length, wide, threads, allowed, disallowed)


def encode_arrow_file(model: NativeTokenizer, batches: Iterable[tuple[Any, ...]], dst: str, format: str,
                      threads: int | None = None, allowed: list[int] | None = None,
                      disallowed: list[int] | None = None, progress: EngineProgress | None = None,
                      total: int | None = None) -> tuple[int, int, int, float, int]:
    """Encode Arrow string rows into the ids file ``dst``; its figures
    (lines, tokens, bytes, seconds, bytes per id)."""
    return _native.encode_arrow_file(model, batches, dst, format, threads, allowed, disallowed, progress, total)


# Pre-tokenizers, importers, report ---------------------------------------

def pretokenize(text: str, preset: str | dict[str, str] = DEFAULT_PRETOKENIZER) -> list[str]:
    """The pieces the pre-tokenizer ``preset`` cuts ``text`` into: a preset's
    name or alias, or a custom regex tagged as ``{"regex": pattern}`` (the
    engine never takes a name for a regex)."""
    return _native.pretokenize(text, preset)


def merge_splits(tokens: list[bytes], ranks: list[int]) -> list[int | None]:
    """Where each ranked token splits into two lower-ranked ones (the tiktoken importer)."""
    return _native.merge_splits(tokens, ranks)


def unreachable_merges(base: int, merges: list[tuple[int, int]]) -> int:
    """How many merged tokens merge-list BPE does not reproduce."""
    return _native.unreachable_merges(base, merges)


def script_of(text: str) -> list[str]:
    """The Unicode script of each character of ``text``."""
    return _native.script_of(text)


def text_units(texts: list[str]) -> list[int]:
    """The text units of each string (what a premium is measured in)."""
    return _native.text_units(texts)


def premiums(units: list[int], tokens: list[int], reference: int) -> list[float]:
    """The premium of each text against the reference one (as training steers by)."""
    return _native.premiums(units, tokens, reference)
