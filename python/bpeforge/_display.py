"""Tokens as people can read them, for the CLI's demo, ``inspect`` and reports.

A token is shown as its characters; bytes that are not a whole UTF-8
character (a byte-level token holding part of one) are shown as ``<0xE6>``;
spaces as ``␣``, and other invisible characters by their escapes (``\\n``).
"""

from __future__ import annotations

from ._byte_tokens import byte_token

_VISIBLE = {" ": "␣", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def show_token(token: bytes) -> str:
    out = []
    pos = 0
    while pos < len(token):
        run, pos = _longest_valid(token, pos)
        if run is None:
            out.append(byte_token(token[pos]))
            pos += 1
        else:
            out.append("".join(_visible(c) for c in run))
    return "".join(out)


def _visible(c: str) -> str:
    if c in _VISIBLE:
        return _VISIBLE[c]
    if not c.isprintable():
        return c.encode("unicode_escape").decode("ascii")
    return c


def _longest_valid(data: bytes, pos: int) -> tuple[str | None, int]:
    """The longest run of whole UTF-8 characters at ``pos`` (None if none)."""
    end = pos
    while end < len(data):
        n = _char_len(data, end)
        if n == 0:
            break
        end += n
    if end == pos:
        return None, pos
    return data[pos:end].decode("utf-8"), end


def _char_len(data: bytes, i: int) -> int:
    """Length of the valid UTF-8 character at ``i``, or 0."""
    for n in (1, 2, 3, 4):
        try:
            data[i:i + n].decode("utf-8")
            return n
        except UnicodeDecodeError:
            continue
    return 0
