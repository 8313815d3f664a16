"""Import a SentencePiece BPE model into the chars scheme: merges are
derived from the pieces' scores."""

from __future__ import annotations

from typing import Any

from .. import _normalizers
from .._byte_tokens import BYTE_TOKENS
from .._tokenizer import Tokenizer
from ..errors import ModelFormatError, ParameterError
from ._builder import Builder, foreign_file_errors
from ._common import SP_WORDS_DIGITS_PATTERN, SP_WORDS_PATTERN, SPACE_MARKER
from .sentencepiece_proto import load_model_proto, normalizer_rules, sp_pb, whitespace_charsmap, whitespace_rules


@foreign_file_errors("SentencePiece model")
def from_sentencepiece(source: Any, *, ignore_normalizer: bool = False) -> Tokenizer:
    """Import a SentencePiece BPE model (a ``.model`` path, its bytes, a
    ``ModelProto`` or a ``SentencePieceProcessor``) into the chars scheme.
    Ids are SentencePiece's.

    ``add_dummy_prefix`` + ``remove_extra_whitespaces`` (SentencePiece's
    defaults) become the ``whitespace`` pre-tokenizer, neither of them
    ``none``; ``add_dummy_prefix`` alone (Llama, Mistral, Gemma: spaces kept)
    becomes a regex cutting words before runs of spaces (and around digits
    with ``split_digits``) with the chars scheme's ``dummy_prefix``, exact with
    the identity normalizer and with any other. Byte-fallback models (BYTE pieces ``<0x00>``..
    ``<0xFF>``) keep their byte pieces as special tokens with their ids
    (``byte_fallback`` in the scheme); a run of unknown characters is one
    ``<unk>`` (``fuse_unk``), as in SentencePiece. Exact when the normalizer maps every ``str.isspace()``
    character to a space and does nothing else (what :func:`to_sentencepiece`
    writes); with the identity normalizer, SentencePiece separates words only
    at U+0020, so texts with tabs or other whitespace encode differently
    (warned). Other normalizers (``nmt_nfkc``, ``nfkc``, any precompiled
    charsmap) are kept in the model and applied as SentencePiece applies them
    (``ignore_normalizer=True`` drops them: ids then match only on text they
    leave unchanged). UNKNOWN becomes bpeforge's unknown token,
    CONTROL and USER_DEFINED pieces special tokens (SentencePiece never matches
    CONTROL text, and always matches USER_DEFINED text: compare with
    ``allowed_special`` = the USER_DEFINED pieces). Merges are derived from the
    scores: each multi-character piece's two parts are what SentencePiece's
    BPE makes of it with the higher-scored pieces.
    """
    pb = sp_pb()
    m, where = load_model_proto(source)
    _check_importable(m, where)
    pretok = _pretokenizer(m, where)
    normalizer, notes = _normalizer(m, pretok, ignore_normalizer, where)
    S = pb.ModelProto.SentencePiece
    pieces = list(m.pieces)
    unk = [i for i, p in enumerate(pieces) if p.type == S.UNKNOWN]
    if len(unk) != 1:
        raise ModelFormatError(f"{where}: {len(unk)} UNKNOWN pieces (SentencePiece requires exactly one)")
    unk_piece = pieces[unk[0]].piece
    byte_ids = _byte_pieces(m, where)
    scheme: dict[str, Any] = {"type": "chars", "unk_token": unk_piece, "end_of_word_suffix": None,
                              "character_coverage": float(m.trainer_spec.character_coverage or 1.0), "fuse_unk": True}
    if byte_ids:
        scheme["byte_fallback"] = True
    if pretok["type"] == "regex":
        scheme["dummy_prefix"] = True
    if normalizer:
        scheme["normalizer"] = normalizer
    b = Builder(scheme, pretok, where)
    b.source_id_end = len(pieces)
    for n in notes:
        b.note(n)
    b.add_special(unk_piece, unk[0])
    user_defined = []
    for i, p in enumerate(pieces):
        if p.type in (S.CONTROL, S.USER_DEFINED, S.BYTE):
            b.add_special(p.piece, i)
            if p.type == S.USER_DEFINED:
                user_defined.append(p.piece)
    normal = [(i, p) for i, p in enumerate(pieces) if p.type == S.NORMAL]
    alphabet = []
    for i, p in normal:
        if len(p.piece) == 1:
            b.add_base(p.piece.encode("utf-8"), i)
            alphabet.append(p.piece)
    _add_merges(b, [(i, p) for i, p in normal if len(p.piece) > 1])
    meta = {"format": "sentencepiece", "source": where, "user_defined": user_defined,
            "control": [p.piece for p in pieces if p.type == S.CONTROL]}
    return b.build(meta, alphabet)


def _check_importable(m: Any, where: str) -> None:
    """What bpeforge's chars scheme cannot express raises, saying what."""
    pb = sp_pb()
    ts, ns = m.trainer_spec, m.normalizer_spec
    if ts.model_type != pb.TrainerSpec.BPE:
        kind = pb.TrainerSpec.ModelType.Name(ts.model_type)
        raise ParameterError(f"{where}: a SentencePiece {kind} model; only BPE models import into bpeforge")
    if any(p.type == pb.ModelProto.SentencePiece.UNUSED for p in m.pieces):
        raise ParameterError(f"{where}: the model has UNUSED pieces (resegmented by SentencePiece), which bpeforge cannot express")
    if ts.treat_whitespace_as_suffix:
        raise ParameterError(f"{where}: treat_whitespace_as_suffix has no bpeforge equivalent")
    if not ns.escape_whitespaces:
        raise ParameterError(f"{where}: escape_whitespaces=false (spaces stay spaces) has no bpeforge equivalent")


def _byte_pieces(m: Any, where: str) -> list[int]:
    """The ids of the 256 BYTE pieces ``<0x00>``..``<0xFF>`` (none: []).
    SentencePiece needs all of them, each once, in byte order."""
    S = sp_pb().ModelProto.SentencePiece
    found = [(p.piece, i) for i, p in enumerate(m.pieces) if p.type == S.BYTE]
    if not found and not m.trainer_spec.byte_fallback:
        return []
    names = list(BYTE_TOKENS)
    if [name for name, _ in found] != names:
        have = [name for name, _ in found]
        problem = ("missing " + next(n for n in names if n not in have) if set(names) - set(have)
                   else "duplicated or unknown" if len(have) != 256 else "out of byte order")
        raise ModelFormatError(f"{where}: byte_fallback needs the 256 BYTE pieces <0x00>..<0xFF> in order; "
                               f"this model's are {problem}")
    return [i for _, i in found]


def _pretokenizer(m: Any, where: str) -> dict[str, Any]:
    """add_dummy_prefix + remove_extra_whitespaces is ``whitespace``; neither is
    ``none``; add_dummy_prefix alone cuts words where no piece can span the cut."""
    ns = m.normalizer_spec
    if ns.add_dummy_prefix and ns.remove_extra_whitespaces:
        return {"type": "whitespace"}
    if not ns.add_dummy_prefix and not ns.remove_extra_whitespaces:
        return {"type": "none"}
    if ns.add_dummy_prefix:
        return {"type": "regex", "pattern": _word_pattern(m, where), "isolated": True}
    raise ParameterError(
        f"{where}: remove_extra_whitespaces without add_dummy_prefix matches no bpeforge pre-tokenizer"
    )


def _word_pattern(m: Any, where: str) -> str:
    """The spaces-kept word regex, checked against the pieces: none may span
    a cut (a ▁ after another character, or a digit beside anything with
    split_digits); SentencePiece's own trainer never makes such pieces."""
    S = sp_pb().ModelProto.SentencePiece
    normal = [p.piece for p in m.pieces if p.type in (S.NORMAL, S.USER_DEFINED)]
    for piece in normal:
        body = piece.lstrip(SPACE_MARKER)
        if SPACE_MARKER in body:
            raise ParameterError(f"{where}: the piece {piece!r} spans a space after a word; bpeforge cannot cut "
                                 "this model's text into words without changing its ids")
    digits = set("0123456789")
    if all(len(p) == 1 or not digits & set(p) for p in normal):
        return SP_WORDS_DIGITS_PATTERN
    return SP_WORDS_PATTERN


def _normalizer(m: Any, pretok: dict[str, Any], ignore_normalizer: bool,
                where: str) -> tuple[dict[str, str] | None, list[str]]:
    """The normalizer to keep (a precompiled charsmap that does more than
    turn whitespace into spaces: nmt_nfkc, nfkc, ...; None for the identity
    and for the whitespace table bpeforge's own exports write, which the
    ``whitespace`` pre-tokenizer does anyway) and the notes on what differs."""
    blob = bytes(m.normalizer_spec.precompiled_charsmap)
    if blob and blob != whitespace_charsmap() and (len(blob) > _SMALL_TABLE or not _whitespace_only(m, pretok)):
        if ignore_normalizer:
            return None, [f"normalizer {m.normalizer_spec.name!r} ignored: ids differ on text it would change"]
        return _normalizers.spec(m.normalizer_spec.name or "user_defined", blob), []
    return None, _normalizer_notes(m, pretok, where)


# Tables larger than this are never whitespace-only (that one is ~1 KB); the
# check decompiles the table, which takes a while for nmt_nfkc's 225k rules.
_SMALL_TABLE = 16384


def _whitespace_only(m: Any, pretok: dict[str, Any]) -> bool:
    rules = normalizer_rules(m)
    return rules is not None and pretok["type"] == "whitespace" and set(rules) <= set(whitespace_rules())


def _normalizer_notes(m: Any, pretok: dict[str, Any], where: str) -> list[str]:
    """The differences the identity or a whitespace-only normalizer leaves."""
    rules = normalizer_rules(m)
    ours = set(whitespace_rules())
    if rules is None:
        if pretok["type"] == "whitespace":
            return ["identity normalizer: SentencePiece separates words only at U+0020, bpeforge at all "
                    "whitespace; texts with tabs or other whitespace characters encode differently"]
        return []
    if pretok["type"] == "whitespace" and set(rules) <= ours:
        if set(rules) != ours:
            missing = sorted(ord(a) for a, _ in ours - set(rules))
            return [f"the normalizer maps only some whitespace to spaces; texts with U+{missing[0]:04X} "
                    f"(and {len(missing) - 1} more) encode differently"]
        return []
    raise AssertionError(f"{where}: not a whitespace-only normalizer")  # pragma: no cover - see _normalizer


def _add_merges(b: Builder, multi: list[tuple[int, Any]]) -> None:
    """Merge order: score descending, then id (SentencePiece breaks score ties
    by position); each piece's two parts are what SentencePiece's BPE makes of
    it with the higher-scored pieces."""
    multi = sorted(multi, key=lambda ip: (-ip[1].score, ip[0]))
    prio = {p.piece: k for k, (_, p) in enumerate(multi)}
    if len({p.score for _, p in multi}) != len(multi):
        b.note("some pieces share a score; SentencePiece then prefers the leftmost pair, bpeforge the lower id")
    for k, (i, p) in enumerate(multi):
        syms = list(p.piece)
        while len(syms) > 1:
            best = None
            for j in range(len(syms) - 1):
                r = prio.get(syms[j] + syms[j + 1])
                if r is not None and r < k and (best is None or r < best[0]):
                    best = (r, j)
            if best is None:
                break
            _, j = best
            syms[j : j + 2] = [syms[j] + syms[j + 1]]
        if len(syms) != 2:
            b.count("tokens_not_reachable_by_merges")
            continue
        b.add_merge(syms[0].encode("utf-8"), syms[1].encode("utf-8"), i)
    if b.stats.get("tokens_not_reachable_by_merges"):
        b.note(f"{b.stats['tokens_not_reachable_by_merges']} pieces are not two higher-scored pieces; dropped")
