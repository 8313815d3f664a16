"""Exchange vocabularies with Hugging Face ``tokenizers``, ``tiktoken`` and
SentencePiece.

Export (a trained :class:`bpeforge.Tokenizer` to another library's format):

* :func:`to_huggingface`: a ``tokenizer.json`` (BPE model) that
  ``tokenizers.Tokenizer.from_file`` and
  ``transformers.PreTrainedTokenizerFast(tokenizer_file=...)`` load, giving
  bpeforge's ids and decoding them to bpeforge's text. Every scheme and
  pre-tokenizer is expressible; a SentencePiece normalizer warns (ids differ
  on a few texts, see :func:`to_huggingface`).
* :func:`to_tiktoken`: a ``.tiktoken`` rank file plus ``<file>.json`` beside it
  (pattern and special tokens); :func:`tiktoken_encoding` turns them (or a
  Tokenizer) into a ``tiktoken.Encoding``. Bytes scheme, regex presets and
  ``none`` only.
* :func:`to_sentencepiece`: a SentencePiece BPE ``.model`` for the chars
  scheme (``▁`` prefix mode, ``whitespace`` or ``none`` pre-tokenizer).

Import (a vocabulary trained elsewhere, encoded at bpeforge's speed with the
source's ids, kept through the model's ``ids`` field):
:func:`from_huggingface`, :func:`from_tiktoken`, :func:`from_sentencepiece`.

What another library does that bpeforge's contract cannot express raises
:class:`bpeforge.ParameterError` saying what; what imports with known,
narrow differences warns (:class:`InteropWarning`) and records the reason in
the model's ``metadata["import"]["notes"]``. The differences that remain are
listed in each function's docstring and measured by ``tests/test_interop.py``.

Special tokens: bpeforge matches special-token text only when allowed
(``encode(text, allowed_special="all")``); Hugging Face added tokens and
tiktoken's ``allowed_special="all"`` behave like that, so compare with it.

The package has one module per format and direction (tiktoken's ``load.py``
style: one small function per foreign form):

* ``_common``: patterns, whitespace sets, GPT-2's byte alphabet, the model view
  the exporters read; ``_builder``: how an import becomes a model;
  ``_formats``: the one table of formats (recognising a file, its importer,
  its exporter and the files that writes) that :func:`bpeforge.load`, the
  command line and the report dispatch through.
* ``huggingface_export`` / ``huggingface_import`` (``chat_templates``: the
  chat templates the export writes for ``transformers``); ``tiktoken_export`` (the
  rank file and its sidecar, both ways) / ``tiktoken_import``;
  ``sentencepiece_export`` / ``sentencepiece_import`` and
  ``sentencepiece_proto`` (the protobuf, read and written).

Layers, with no import cycle (not even by type): ``_common`` and the
exporters take an ``ExportedModel`` (a Protocol: the model's JSON and its
special tokens, which a Tokenizer has) and do not import the Tokenizer's module; the importers build
Tokenizers and import that class (only); :func:`bpeforge.load` sits above
both. ``Tokenizer.to_*`` import their
exporter when called, as this package (which imports the importers) cannot
load before the Tokenizer class exists.
"""

from __future__ import annotations

from ._common import (
    CL100K_PATTERN,
    GPT2_PATTERN,
    O200K_PATTERN,
    SPACE_MARKER,
    SUPERWORD_PATTERN,
    WHITESPACE,
    InteropWarning,
    _key_bytes,
)
from .huggingface_export import huggingface_json, to_huggingface
from .huggingface_import import from_huggingface
from .sentencepiece_export import sentencepiece_model_proto, to_sentencepiece
from .sentencepiece_import import from_sentencepiece
from .tiktoken_export import tiktoken_encoding, to_tiktoken
from .tiktoken_import import from_tiktoken

__all__ = [
    "InteropWarning",
    "to_huggingface",
    "huggingface_json",
    "to_tiktoken",
    "tiktoken_encoding",
    "to_sentencepiece",
    "sentencepiece_model_proto",
    "from_huggingface",
    "from_tiktoken",
    "from_sentencepiece",
    "GPT2_PATTERN",
    "CL100K_PATTERN",
    "O200K_PATTERN",
    "WHITESPACE",
]

# Not in __all__, but importable from here as before (SPACE_MARKER and
# SUPERWORD_PATTERN by other modules, _key_bytes by tests).
_KEPT = (SPACE_MARKER, SUPERWORD_PATTERN, _key_bytes)

