"""``load()``: a model file of any format the package reads, as a
:class:`bpeforge.Tokenizer`.

It sits above both the Tokenizer (``_tokenizer``) and the importers
(``interop``), which build Tokenizers: neither imports this module.
"""

from __future__ import annotations

import os

from . import _engine
from ._io import model_format
from ._tokenizer import PathLike, Tokenizer
from .errors import ModelFormatError
from .interop import from_huggingface, from_sentencepiece, from_tiktoken


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
    foreign = model_format(path)
    if foreign == "huggingface":
        return from_huggingface(path)
    if foreign == "sentencepiece":
        return from_sentencepiece(path)
    if foreign == "tiktoken":
        if not os.path.exists(path + ".json"):
            raise ModelFormatError(f"{path} is a tiktoken rank file without its pattern ({path}.json is missing): "
                                   "load it with bpeforge.from_tiktoken(path, pattern=...) or `bpeforge import "
                                   "--from tiktoken PATH --pattern P --output MODEL`")
        return from_tiktoken(path)
    return Tokenizer(_engine.load_model(path))
