"""Byte fallback's token names: byte ``b`` is the token ``<0xHH>`` (upper-case
hex, SentencePiece's BYTE pieces ``<0x%02X>``). The Rust core spells the same
name in ``crates/core/src/model.rs`` (``byte_piece``, ``piece_byte``); this
module is Python's one place for it."""

from __future__ import annotations

_HEX = "0123456789ABCDEF"


def byte_token(b: int) -> str:
    """The name of byte ``b``'s token, e.g. ``<0x0A>``."""
    return f"<0x{b:02X}>"


#: The 256 names in byte order: ``<0x00>``..``<0xFF>``.
BYTE_TOKENS: tuple[str, ...] = tuple(byte_token(b) for b in range(256))


def token_byte(name: str) -> int | None:
    """The byte a ``<0xHH>`` token stands for; None for any other name."""
    if len(name) == 6 and name.startswith("<0x") and name.endswith(">") and all(c in _HEX for c in name[3:5]):
        return int(name[3:5], 16)
    return None


def is_byte_token(name: str) -> bool:
    """Whether ``name`` is one of the 256 byte tokens."""
    return token_byte(name) is not None
