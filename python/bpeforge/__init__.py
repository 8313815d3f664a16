"""bpeforge: train and apply BPE vocabularies on whole multilingual corpora.

    >>> import bpeforge
    >>> tok = bpeforge.train(bpeforge.sample_corpus(), vocab_size=1000, progress=False)
    >>> tok.decode(tok.encode("Hello, world"))
    'Hello, world'

The public surface: :func:`train`, :func:`train_from_iterator`,
:func:`train_from_dataset`, :func:`load`,
:class:`Tokenizer`, :func:`pretokenize`, :func:`sample_corpus`, the importers
:func:`from_huggingface`, :func:`from_tiktoken` and :func:`from_sentencepiece`
(exporters are Tokenizer methods; see :mod:`bpeforge.interop`), and the
exceptions in :mod:`bpeforge.errors`. The exact contract (pre-tokenization,
ids, the merge loop's tie-break) is in ``docs/SEMANTICS.md``.
"""

from __future__ import annotations

from importlib import resources as _resources
from pathlib import Path as _Path

from ._engine import __version__
from ._progress import ProgressEvent, TqdmProgress
from ._load import load
from ._tokenizer import Tokenizer, pretokenize
from ._training import count, train, train_from_counts, train_from_dataset, train_from_iterator
from .errors import (
    BpeforgeError,
    InputError,
    MissingDependencyError,
    ModelFormatError,
    OutputError,
    ParameterError,
    SpecialTokenError,
    TrainingError,
)
from .interop import from_huggingface, from_sentencepiece, from_tiktoken
from .options import Regex, TrainOptions


def sample_corpus() -> _Path:
    """Path of the small real-text multilingual sample shipped with the package
    (CC0/MIT sources; see ``data/SAMPLE_SOURCES.md``)."""
    return _Path(str(_resources.files(__package__).joinpath("data", "sample.txt")))


__all__ = [
    "__version__",
    "Tokenizer",
    "train",
    "train_from_iterator",
    "train_from_dataset",
    "count",
    "train_from_counts",
    "load",
    "pretokenize",
    "Regex",
    "TrainOptions",
    "ProgressEvent",
    "TqdmProgress",
    "sample_corpus",
    "from_huggingface",
    "from_tiktoken",
    "from_sentencepiece",
    "BpeforgeError",
    "ParameterError",
    "InputError",
    "ModelFormatError",
    "SpecialTokenError",
    "TrainingError",
    "OutputError",
    "MissingDependencyError",
]
