"""``load()``: a model file of any format the package reads, as a
:class:`bpeforge.Tokenizer`.

It sits above both the Tokenizer (``_tokenizer``) and the importers
(``interop``), which build Tokenizers: neither imports this module.
"""

from __future__ import annotations

import os

from . import _engine
from ._tokenizer import PathLike, Tokenizer
from .interop import _formats


def load(path: PathLike) -> Tokenizer:
    """Load a model saved by :meth:`Tokenizer.save` (``.gz`` names are gunzipped).

    The file is validated completely; a wrong, truncated or hostile file
    raises :class:`bpeforge.ModelFormatError` naming the file and the problem.

    Other tools' files load too, through the importers (their ids kept): a
    Hugging Face ``tokenizer.json`` (or its folder), a SentencePiece
    ``.model``, and a ``.tiktoken`` rank file with the ``.json`` that
    :meth:`Tokenizer.to_tiktoken` writes beside it (other rank files need
    their pattern: :func:`bpeforge.from_tiktoken`).
    """
    path = os.fspath(path)
    foreign = _formats.sniff(path)
    if foreign is None:
        return Tokenizer(_engine.load_model(path))
    return _formats.load_file(path, foreign)
