"""GPT-2's byte-level alphabet: each byte as one printable character.

This is how byte-level vocabularies are written as text by GPT-2, Hugging Face
``tokenizers`` (``ByteLevel``) and ``transformers``: ``" the"`` is ``"Ġthe"``.
"""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=1)
def byte_to_char() -> dict[int, str]:
    """Byte -> printable character (printable Latin-1 bytes stand for
    themselves; the others are moved to U+0100 and up, in byte order)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table = {b: chr(b) for b in printable}
    moved = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + moved)
            moved += 1
    return table


@functools.lru_cache(maxsize=1)
def char_to_byte() -> dict[str, int]:
    return {c: b for b, c in byte_to_char().items()}


def token_text(token: bytes) -> str:
    """A byte-level token as GPT-2/HF write it (``b" the"`` -> ``"Ġthe"``)."""
    table = byte_to_char()
    return "".join(table[b] for b in token)
