"""Export to SentencePiece: a BPE ``.model`` for the chars scheme (``▁``
prefix mode, ``whitespace`` or ``none`` pre-tokenizer)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from .. import _normalizers
from .._io import write_atomic
from ..errors import ParameterError
from ._common import ExportedModel, SP_WORDS_DIGITS_PATTERN, ModelView, PathLike
from .sentencepiece_proto import sp_pb, whitespace_charsmap

_SP_DEFAULT_CONTROL = ("<s>", "</s>", "<pad>")


def sentencepiece_model_proto(tok: ExportedModel, *, whitespace: str = "all", control_tokens: Iterable[str] | None = None) -> Any:
    """The ``ModelProto`` for ``tok`` (see :func:`to_sentencepiece`)."""
    pb = sp_pb()
    v = ModelView(tok)
    _check_exportable(v, whitespace)
    order = _dense_order(v)
    control = set(_SP_DEFAULT_CONTROL).intersection(v.specials) if control_tokens is None else set(control_tokens)
    unknown = control - set(v.specials)
    if unknown:
        raise ParameterError(f"control_tokens names tokens that are not special tokens of this model: {sorted(unknown)!r}")
    m = pb.ModelProto()
    _add_pieces(m, v, order, control)
    _set_trainer_spec(m.trainer_spec, v, control)
    _set_normalizer_specs(m, v, whitespace)
    return m


#: What a model needs to export to SentencePiece, said in full by every refusal.
SP_REQUIREMENTS = ("SentencePiece export needs the chars scheme, the whitespace or none pre-tokenizer, the "
                   "default ▁ word prefix (no end_of_word_suffix), unknown characters fused (fuse_unk) or "
                   "spelled in bytes (byte_fallback), and dense ids 0..n-1 (not an imported numbering with "
                   'gaps): train with scheme="chars", pretokenizer="whitespace" (or "none") and fuse_unk=True '
                   "(or byte_fallback=True)")


def _check_exportable(v: ModelView, whitespace: str) -> None:
    """What SentencePiece cannot express raises one error listing every
    problem of this model, then every requirement (:data:`SP_REQUIREMENTS`)."""
    if whitespace not in ("all", "space"):
        raise ParameterError(f"whitespace must be 'all' or 'space', got {whitespace!r}")
    problems = []
    if v.scheme != "chars":
        problems.append(f"this model's scheme is {v.scheme!r} (SentencePiece's BPE works on characters; "
                        "byte_fallback is not a byte-level alphabet)")
    if v.suffix is not None:
        problems.append(f"it marks word ends with the suffix {v.suffix!r} (SentencePiece marks words with a ▁ "
                        "prefix)")
    if not v.keeps_spaces and v.preset not in ("whitespace", "none"):
        problems.append(f"its pre-tokenizer is {v.preset if v.preset != 'regex' else 'a custom regex'} "
                        "(SentencePiece has no regex pre-tokenizer)")
    scheme = v.json["scheme"]
    if v.scheme == "chars" and not scheme.get("fuse_unk") and not scheme.get("byte_fallback"):
        problems.append("it was trained without fuse_unk (SentencePiece always makes a run of unknown characters "
                        "one <unk>, where this model gives one per character, so the ids would differ)")
    n = len(v.tokens)
    if sorted(v.ext[i] for i in range(n)) != list(range(n)):
        problems.append("its ids have gaps (an imported numbering)")
    if problems:
        raise ParameterError("cannot export to SentencePiece: " + "; ".join(problems) + ". " + SP_REQUIREMENTS)


def _dense_order(v: ModelView) -> list[int]:
    """Internal ids in external-id order; SentencePiece ids are 0..n-1."""
    n = len(v.tokens)
    order = sorted(range(n), key=lambda i: v.ext[i])
    if [v.ext[i] for i in order] != list(range(n)):
        raise ParameterError(
            "SentencePiece ids are dense (0..n-1); this vocabulary's ids (an imported numbering) have gaps"
        )
    return order


def _add_pieces(m: Any, v: ModelView, order: list[int], control: set[str]) -> None:
    """One piece per token, in id order: specials (UNKNOWN, CONTROL or
    USER_DEFINED), then NORMAL pieces scored so that earlier merges score
    higher and characters below every merge."""
    Piece = sp_pb().ModelProto.SentencePiece
    unk = v.unk_id
    first_merge, nmerges = v.first_merge, len(v.merges)
    byte_pieces = v.byte_specials
    seen: dict[str, int] = {}
    for i in order:
        piece = m.pieces.add()
        text = v.tokens[i].decode("utf-8")
        if text in seen:
            raise ParameterError(f"tokens {seen[text]} and {v.ext[i]} have the same text {text!r}; SentencePiece pieces must be distinct")
        seen[text] = v.ext[i]
        piece.piece = text
        if i < v.nspec:
            piece.score = 0.0
            if i == unk:
                piece.type = Piece.UNKNOWN
            elif i in byte_pieces:
                piece.type = Piece.BYTE
            elif text in control:
                piece.type = Piece.CONTROL
            else:
                piece.type = Piece.USER_DEFINED
        elif i >= first_merge:
            piece.type = Piece.NORMAL
            piece.score = -float(i - first_merge)  # merge rank: earlier merges score higher
        else:
            piece.type = Piece.NORMAL
            piece.score = -float(nmerges + (i - v.nspec))  # characters below every merge, as SentencePiece does


def _set_trainer_spec(ts: Any, v: ModelView, control: set[str]) -> None:
    ts.model_type = sp_pb().TrainerSpec.BPE
    ts.vocab_size = len(v.tokens)
    ts.character_coverage = float(v.json["scheme"].get("character_coverage", 1.0))
    ts.split_by_whitespace = v.preset == "whitespace" or v.keeps_spaces
    ts.byte_fallback = bool(v.json["scheme"].get("byte_fallback"))
    if v.keeps_spaces:
        ts.split_digits = v.pattern == SP_WORDS_DIGITS_PATTERN
        ts.allow_whitespace_only_pieces = True
    ts.treat_whitespace_as_suffix = False

    def special_id(name: str) -> int:
        if name in v.specials and name in control:
            return v.ext[v.specials.index(name)]
        return -1

    unk = v.unk_id
    assert unk is not None and v.unk_token is not None
    ts.unk_id = v.ext[unk]
    ts.unk_piece = v.unk_token
    ts.bos_id, ts.eos_id, ts.pad_id = special_id("<s>"), special_id("</s>"), special_id("<pad>")


def _set_normalizer_specs(m: Any, v: ModelView, whitespace: str) -> None:
    """The ``whitespace`` preset is add_dummy_prefix + remove_extra_whitespaces
    (with, for ``whitespace="all"``, a charsmap turning all whitespace into
    spaces); ``none`` is neither. The denormalizer is the identity."""
    ns = m.normalizer_spec
    ns.escape_whitespaces = True
    kept = _normalizers.charsmap_of(v.json["scheme"])
    if kept is not None:
        # The model's own normalizer (nmt_nfkc, ...): words are cut at U+0020
        # after it, as SentencePiece's remove_extra_whitespaces does.
        ns.name = _normalizers.name_of(v.json["scheme"])
        ns.precompiled_charsmap = kept
        ns.add_dummy_prefix = v.keeps_spaces or v.preset == "whitespace"
        ns.remove_extra_whitespaces = v.preset == "whitespace" and not v.keeps_spaces
    elif v.keeps_spaces:
        ns.name = "identity"
        ns.add_dummy_prefix = True
        ns.remove_extra_whitespaces = False
    elif v.preset == "whitespace":
        ns.add_dummy_prefix = True
        ns.remove_extra_whitespaces = True
        if whitespace == "all":
            ns.name = "user_defined"
            ns.precompiled_charsmap = whitespace_charsmap()
        else:
            ns.name = "identity"
    else:
        ns.name = "identity"
        ns.add_dummy_prefix = False
        ns.remove_extra_whitespaces = False
    if kept is not None and whitespace != "all":
        raise ParameterError("whitespace='space' writes the identity normalizer; this model has its own "
                             f"({ns.name}), which SentencePiece applies instead")
    m.denormalizer_spec.name = "identity"
    m.denormalizer_spec.add_dummy_prefix = False
    m.denormalizer_spec.remove_extra_whitespaces = False
    m.denormalizer_spec.escape_whitespaces = False


def to_sentencepiece(
    tok: ExportedModel,
    path: PathLike,
    *,
    whitespace: str = "all",
    control_tokens: Iterable[str] | None = None,
) -> str:
    """Write ``tok`` as a SentencePiece BPE ``.model``. Returns ``path``.

    Requirements (a model that misses any is refused with one error listing
    every miss): the chars scheme (``scheme="chars"``), the ``whitespace`` or
    ``none`` pre-tokenizer (SentencePiece has no regex pre-tokenizer; a model
    imported from SentencePiece keeps its own), the default ``▁`` word prefix
    (no ``end_of_word_suffix``), ``fuse_unk=True`` or ``byte_fallback=True``
    (SentencePiece always makes a run of unknown characters one ``<unk>``;
    without either, bpeforge gives one per character and the ids would
    differ), dense ids ``0..n-1`` and distinct token texts. For example::

        tok = bpeforge.train(files, scheme="chars", pretokenizer="whitespace", fuse_unk=True, vocab_size=8000)
        tok.to_sentencepiece("m.model")

    Pieces are in bpeforge id order: ``<unk>`` (UNKNOWN), the special tokens
    (CONTROL for those in ``control_tokens``, default ``<s>``, ``</s>``,
    ``<pad>`` when present, which also become bos/eos/pad; BYTE for byte
    fallback's ``<0x00>``..``<0xFF>``; USER_DEFINED for the others), the
    alphabet and the merges (NORMAL; a merge's score is minus
    its rank, characters score below every merge). The normalizer is the
    identity except, for the ``whitespace`` preset with ``whitespace="all"``
    (default), a charsmap mapping every ``str.isspace()`` character to a space,
    so that SentencePiece's ``add_dummy_prefix`` and ``remove_extra_whitespaces``
    cut words exactly where bpeforge does. ``whitespace="space"`` writes the
    pure identity normalizer: then only U+0020 separates words.

    ``sentencepiece.SentencePieceProcessor(model_file=path).encode(text)``
    gives ``tok.encode(text, allowed_special=<the USER_DEFINED ones>)``,
    except that (1) SentencePiece adds the ``▁`` prefix only at the start of
    the text, not after a special token in the middle of it; (2) CONTROL
    tokens' text is never matched in text.
    """
    m = sentencepiece_model_proto(tok, whitespace=whitespace, control_tokens=control_tokens)
    path = os.fspath(path)
    write_atomic(path, m.SerializeToString())
    return path
