"""SentencePiece's protobuf: the ``ModelProto`` module (shipped with the
``sentencepiece`` package), reading a model from any of the forms users hold,
and the normalizer rules (written as a precompiled charsmap, read back as
rules)."""

from __future__ import annotations

import functools
import os
from typing import Any

from ..errors import ModelFormatError, ParameterError
from ._common import WHITESPACE, _require


def sp_pb() -> Any:
    _require("sentencepiece", "SentencePiece interop")
    _require("google.protobuf", "SentencePiece interop")
    return _require("sentencepiece.sentencepiece_model_pb2", "SentencePiece interop")


def whitespace_rules() -> list[tuple[str, str]]:
    return [(c, " ") for c in WHITESPACE if c != " "]


@functools.lru_cache(maxsize=1)
def whitespace_charsmap() -> bytes:
    """A precompiled SentencePiece charsmap mapping every ``str.isspace()``
    character to U+0020 (and nothing else)."""
    spm = _require("sentencepiece", "SentencePiece interop")
    pb = sp_pb()
    spm.set_min_log_level(2)
    norm = spm.SentencePieceNormalizer(norm_map=whitespace_rules())
    spec = pb.NormalizerSpec()
    spec.ParseFromString(norm.serialized_normalizer_spec())
    return bytes(spec.precompiled_charsmap)


def load_model_proto(source: Any) -> tuple[Any, str]:
    pb = sp_pb()
    if hasattr(source, "SerializeToString") and hasattr(source, "pieces"):
        return source, "ModelProto"
    if hasattr(source, "serialized_model_proto"):  # SentencePieceProcessor
        m = pb.ModelProto()
        m.ParseFromString(source.serialized_model_proto())
        return m, "SentencePieceProcessor"
    if isinstance(source, (bytes, bytearray)):
        data, where = bytes(source), "<bytes>"
    else:
        where = os.fspath(source)
        with open(where, "rb") as f:
            data = f.read()
    m = pb.ModelProto()
    try:
        m.ParseFromString(data)
    except Exception as e:  # protobuf's DecodeError
        raise ModelFormatError(f"{where}: not a SentencePiece model ({e})") from e
    if not m.pieces:
        raise ModelFormatError(f"{where}: not a SentencePiece model (no pieces)")
    return m, where


def normalizer_rules(m: Any) -> list[tuple[str, str]] | None:
    """The normalizer's rules, or None for the identity."""
    if not m.normalizer_spec.precompiled_charsmap:
        return None
    spm = _require("sentencepiece", "from_sentencepiece")
    spm.set_min_log_level(2)
    norm = spm.SentencePieceNormalizer(normalizer_spec=m.normalizer_spec.SerializeToString())
    return [(str(a), str(c)) for a, c in norm.decompile()]
