"""Where each token of an encoding comes from in the input text.

A token's offsets are ``(start, end)`` such that ``text[start:end]`` holds
every input character the token was made from, in characters of the ``str``
(or in UTF-8 bytes with ``unit="bytes"``). The rules are those of Hugging Face
``tokenizers`` for the same model exported with ``to_huggingface`` (the tests
compare the two on real text):

* a token that holds only some bytes of a character (byte-level tokens)
  spans that whole character, so several tokens may share one character;
* the ``▁`` (or added space) that starts a word stands for the whitespace
  before the word: the last character of that run; where no whitespace
  precedes it (the start of a text), it spans the word's first character;
* a special token spans its own text.

Tokens never cross a pre-token, so the offsets are found by laying the
pre-tokens out as *units* (the symbols training started from, each with the
characters it stands for) and letting each token consume as many units as it
has symbols.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from .errors import ParameterError


class OffsetModel(Protocol):
    """What finding offsets reads of a model (a :class:`bpeforge.Tokenizer`
    is one; this module is below it and does not import it, not even for
    its types)."""

    @property
    def scheme(self) -> str: ...

    @property
    def pretokenizer(self) -> str: ...

    @property
    def alphabet(self) -> list[str] | None: ...

    @property
    def _specials(self) -> Mapping[str, int]: ...

    @property
    def _textual(self) -> Sequence[str]: ...

    def token_to_id(self, token: bytes | str) -> int | None: ...

    def _scheme_settings(self) -> dict[str, Any]: ...

    def _token_lengths(self) -> list[int]: ...

    def _token_texts(self) -> list[str]: ...

SPACE_MARKER = "▁"
_Span = tuple[int, int]


def utf8_starts(text: str) -> list[int]:
    """UTF-8 byte offset of every character, plus the total length."""
    starts = [0] * (len(text) + 1)
    pos = 0
    for i, ch in enumerate(text):
        starts[i] = pos
        o = ord(ch)
        pos += 1 if o < 0x80 else 2 if o < 0x800 else 3 if o < 0x10000 else 4
    starts[len(text)] = pos
    return starts


def token_offsets(tok: OffsetModel, text: str, ids: Sequence[int], allowed: Any, unit: str) -> list[_Span]:
    """Offsets of ``ids`` (the encoding of ``text``) in characters or bytes."""
    if tok._scheme_settings().get("normalizer"):
        raise ParameterError("offsets are not available for a model with a normalizer: its tokens cover the "
                             "normalized text, not the original one")
    lossless = tok.scheme == "bytes" and tok.pretokenizer != "whitespace"
    spans = _byte_level(tok, text, ids) if lossless else _unit_walk(tok, text, ids, allowed)
    if unit == "chars":
        return spans
    starts = utf8_starts(text)
    return [(starts[s], starts[e]) for s, e in spans]


def _byte_level(tok: OffsetModel, text: str, ids: Sequence[int]) -> list[_Span]:
    """Bytes scheme: the tokens' bytes are the text's UTF-8, in order."""
    lengths = tok._token_lengths()
    if text.isascii():
        out, pos = [], 0
        for i in ids:
            n = lengths[i]
            out.append((pos, pos + n))
            pos += n
        _check_end(pos, len(text))
        return out
    char_of_byte: list[int] = []
    for ci, ch in enumerate(text):
        o = ord(ch)
        char_of_byte.extend([ci] * (1 if o < 0x80 else 2 if o < 0x800 else 3 if o < 0x10000 else 4))
    out, pos = [], 0
    for i in ids:
        n = lengths[i]
        out.append((char_of_byte[pos], char_of_byte[pos + n - 1] + 1) if n else (pos, pos))
        pos += n
    _check_end(pos, len(char_of_byte))
    return out


def _check_end(done: int, total: int) -> None:
    if done != total:  # pragma: no cover - a broken invariant, not bad input
        raise RuntimeError(f"bpeforge: offsets cover {done} of {total} units (please report this)")


# ---- the general walk: pre-tokens laid out as units ---------------------------


def _segments(tok: OffsetModel, text: str, allowed: Any) -> list[tuple[int, int, bool]]:
    """``(start, end, is_special)`` pieces of text: allowed special tokens
    (leftmost, longest first, as the engine matches them) and the text between."""
    specials = sorted(allowed, key=len, reverse=True)
    out: list[tuple[int, int, bool]] = []
    pos = last = 0
    while specials and pos < len(text):
        found = [(text.find(s, pos), -len(s), s) for s in specials]
        found = [f for f in found if f[0] >= 0]
        if not found:
            break
        start, neg, _ = min(found)
        if start > last:
            out.append((last, start, False))
        out.append((start, start - neg, True))
        pos = last = start - neg
    if last < len(text):
        out.append((last, len(text), False))
    return out


def _pieces(tok: OffsetModel, text: str, start: int, end: int, prefixed: bool = False) -> list[tuple[int, int]]:
    """Pre-token spans of ``text[start:end]`` (``prefixed``: of a space and
    it, as the dummy prefix makes it; the space is at ``start - 1``)."""
    from ._engine import pretokenize, preset_name

    segment = text[start:end]
    if prefixed:
        segment, start = " " + segment, start - 1
    # The model names its pre-tokenizer by a preset's name or its own regex;
    # the engine takes a regex only tagged as one.
    name = tok.pretokenizer
    choice: str | dict[str, str] = name if preset_name(name) else {"regex": name}
    out, pos = [], 0
    for piece in pretokenize(segment, choice):
        at = segment.find(piece, pos)
        if at < 0:  # pragma: no cover - pieces are substrings, in order
            raise RuntimeError("bpeforge: a pre-token is not in its text (please report this)")
        out.append((start + at, start + at + len(piece)))
        pos = at + len(piece)
    return out


def _units(tok: OffsetModel, text: str, piece: tuple[int, int], marker: bool,
           known: Any = None) -> tuple[list[_Span], list[bool]]:
    """The base symbols of one pre-token, each as the characters it stands
    for, and whether each is outside the alphabet (chars scheme). ``known``
    (byte fallback or fused unknowns): the alphabet; an unknown character is
    then one unit per UTF-8 byte with byte fallback."""
    s, e = piece
    units: list[_Span] = []
    unknown: list[bool] = []

    def add(span: _Span, symbol: str) -> None:
        is_unknown = known is not None and symbol not in known
        n = len(symbol.encode("utf-8")) if is_unknown and known.byte_fallback else 1
        units.extend([span] * n)
        unknown.extend([is_unknown] * n)

    if marker:
        # The word's ▁ / added space: the last whitespace character before it.
        # With none (at the start of a text or after a special token), the
        # word's first character, as Hugging Face's Prepend normalizer aligns it.
        add((s - 1, s) if s > 0 and text[s - 1].isspace() else (s, s + 1), SPACE_MARKER)
    if tok.scheme == "bytes":
        for i in range(s, e):
            units.extend([(i, i + 1)] * len(text[i].encode("utf-8")))
    else:
        for i in range(s, e):
            # i < 0: the dummy prefix's space, aligned with the first character.
            span, ch = ((i, i + 1), text[i]) if i >= 0 else ((0, min(1, len(text))), " ")
            add(span, SPACE_MARKER if ch == " " else ch)
    return units, unknown


class _Alphabet(set):  # type: ignore[type-arg]
    """The chars alphabet, with the scheme's byte_fallback flag."""

    byte_fallback = False


def _unit_walk(tok: OffsetModel, text: str, ids: Sequence[int], allowed: Any) -> list[_Span]:
    scheme = tok._scheme_settings()
    suffix = scheme.get("end_of_word_suffix")
    marker = tok.pretokenizer == "whitespace" and not suffix
    unk = tok.token_to_id(scheme["unk_token"]) if tok.scheme == "chars" else None
    specials = set(tok._specials.values())
    fuse, dummy_prefix = bool(scheme.get("fuse_unk")), bool(scheme.get("dummy_prefix"))
    byte_ids = {tok.token_to_id(t) for t in tok._specials if t not in tok._textual}
    known = None
    if scheme.get("byte_fallback") or fuse:
        known = _Alphabet(tok.alphabet or ())
        known.byte_fallback = bool(scheme.get("byte_fallback"))
    lengths = tok._token_lengths()
    tokens = tok._token_texts()
    out: list[_Span] = []
    k = 0
    for start, end, special in _segments(tok, text, allowed):
        first, dummy_prefix = dummy_prefix, False  # the dummy prefix goes before the text's first segment
        if special:
            if first and text:  # its ▁ stands alone, before the special token
                out.append((0, 0))
                k += 1
            out.append((start, end))
            k += 1
            continue
        for piece in _pieces(tok, text, start, end, prefixed=first):
            units, unknown = _units(tok, text, piece, marker, known)
            used = 0
            while used < len(units):
                i = ids[k]
                k += 1
                if i in specials and i != unk and i not in byte_ids:  # pragma: no cover - specials are their own segments
                    raise RuntimeError("bpeforge: a special token inside a pre-token (please report this)")
                if tok.scheme == "bytes" and i not in byte_ids:
                    n = lengths[i]
                elif i in byte_ids:
                    n = 1
                elif i == unk and fuse:
                    n = 1
                    while used + n < len(units) and unknown[used + n]:
                        n += 1
                else:
                    n = _symbols(tokens[i], i == unk, suffix, len(units) - used)
                covered = [u for u in units[used:used + n] if u[1] > u[0]] or units[used:used + 1]
                out.append((covered[0][0], covered[-1][1]))
                used += n
    _check_end(k, len(ids))
    return out


def _symbols(token: str, is_unk: bool, suffix: str | None, left: int) -> int:
    """How many base symbols a token was merged from."""
    if is_unk:
        return 1
    if suffix and token.endswith(suffix) and len(token) - len(suffix) == left:
        return left
    return len(token)
