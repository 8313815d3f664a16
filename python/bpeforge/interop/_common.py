"""What every format module shares: the published regex patterns, the
whitespace sets, GPT-2's byte alphabet, and a trained model's structure as the
exporters read it (:class:`ModelView`).

Nothing here imports :mod:`bpeforge._tokenizer`, not even for its types: the
exporters take an :class:`ExportedModel` (what they read of a model: its JSON
and its special tokens; a :class:`bpeforge.Tokenizer` is one), so
``Tokenizer.to_*`` can call them without an import cycle.
"""

from __future__ import annotations

import json
import os
from typing import Any, Protocol, Union

from .._byte_tokens import BYTE_TOKENS
from .. import _engine
from .._bytelevel import char_to_byte, token_text
from ..errors import ParameterError

PathLike = Union[str, "os.PathLike[str]"]

# The published patterns of the regex presets, read from the Rust core's
# table (crates/core/src/pretok/presets.rs ``PRESETS``). ``superword`` is an
# *isolated* split: the matches and the text between them are pieces, which
# is exactly HF's Split(behavior="Isolated"), as the SuperBPE release uses.
_PRESET_PATTERNS: dict[str, str] = {p["name"]: p["pattern"] for p in _engine.PRESETS if p["pattern"] is not None}
GPT2_PATTERN = _PRESET_PATTERNS["gpt2"]
CL100K_PATTERN = _PRESET_PATTERNS["cl100k"]
O200K_PATTERN = _PRESET_PATTERNS["o200k"]
SUPERWORD_PATTERN = _PRESET_PATTERNS["superword"]
_PATTERN_PRESETS = {v: k for k, v in _PRESET_PATTERNS.items()}

# The `whitespace` preset's separators: Python's str.isspace(), i.e. Unicode
# White_Space plus U+001C..U+001F (crates/core/src/pretok.rs `is_split_space`).
WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
# Rust's char::is_whitespace (HF's WhitespaceSplit): the same without U+001C..U+001F.
_RUST_WHITESPACE = "".join(c for c in WHITESPACE if c not in "\x1c\x1d\x1e\x1f")
SPACE_MARKER = "\u2581"
# SentencePiece models that keep spaces (remove_extra_whitespaces=false, as
# Llama's): SentencePiece merges over the whole text, and these regexes cut it
# only where no piece can span the cut (before a run of spaces that follows
# other characters; around each ASCII digit with split_digits), so encoding
# the parts equals encoding the whole. The chars scheme's dummy_prefix adds
# the ▁ that starts the text.
SP_WORDS_PATTERN = r" +[^ ]*|[^ ]+"
SP_WORDS_DIGITS_PATTERN = r" +[^ 0-9]*|[^ 0-9]+|[0-9]"


class InteropWarning(UserWarning):
    """An import or export is exact except in a narrow, named case."""



# GPT-2's byte-level alphabet lives in one place (bpeforge._bytelevel).
_byte_key = token_text
_unicode_to_bytes = char_to_byte


def _utf8(token: bytes) -> str:
    return token.decode("utf-8")


def _key_bytes(key: str) -> bytes | None:
    table = _unicode_to_bytes()
    try:
        return bytes(table[c] for c in key)
    except KeyError:
        return None


def _class(chars: str) -> str:
    """A regex character class body listing ``chars`` (safe in Oniguruma and Rust)."""
    out = []
    for c in chars:
        if c in "\\]^-[":
            out.append("\\" + c)
        elif c == "\t":
            out.append("\\t")
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif ord(c) < 0x20 or ord(c) in (0x85,):
            out.append(f"\\x{{{ord(c):x}}}")
        else:
            out.append(c)
    return "".join(out)


_WS_CLASS = _class(WHITESPACE)
_RUST_WS_CLASS = _class(_RUST_WHITESPACE)


def _require(module: str, purpose: str) -> Any:
    """Import an optional library, or say which package ``purpose`` needs."""
    from .._extras import require

    return require(module, purpose)


def _rust_escape(text: str) -> str:
    """Escape ``text`` as a literal for Rust's regex (and fancy-regex)."""
    return "".join("\\" + c if c in "\\.+*?()|[]{}^$#&-~" else c for c in text)



def _pretokenizer_for_pattern(pattern: str) -> dict[str, Any]:
    preset = _PATTERN_PRESETS.get(pattern)
    return {"type": preset} if preset else {"type": "regex", "pattern": pattern}



class ExportedModel(Protocol):
    """What an exporter reads of a model (a :class:`bpeforge.Tokenizer` is
    one): the model file's JSON and its special tokens."""

    def to_json(self) -> str: ...

    @property
    def special_tokens(self) -> list[str]: ...


class ModelView:
    """A trained model's structure, from its JSON: internal ids, token bytes,
    external ids."""

    def __init__(self, tok: ExportedModel) -> None:
        # Any object with to_json() will do (a Tokenizer, in practice): this
        # module is below bpeforge._tokenizer and does not import it.
        to_json = getattr(tok, "to_json", None)
        if not callable(to_json):
            raise ParameterError(f"expected a bpeforge.Tokenizer, got {type(tok).__name__}")
        d = json.loads(to_json())
        self.json = d
        scheme = d["scheme"]
        self.scheme: str = scheme["type"]
        self.unk_token: str | None = scheme.get("unk_token")
        self.suffix: str | None = scheme.get("end_of_word_suffix")
        pre = d["pretokenizer"]
        self.preset: str = pre["type"]
        self.pattern: str | None = pre.get("pattern") if self.preset == "regex" else _PRESET_PATTERNS.get(self.preset)
        # A custom regex whose gaps are pieces too (every regex trained here);
        # imported ones keep only the matches, as their source did.
        self.isolated: bool = bool(pre.get("isolated"))
        self.specials: list[str] = list(d["special_tokens"])
        self.alphabet: list[str] | None = d.get("alphabet")
        self.merges: list[tuple[int, int]] = [(int(a), int(b)) for a, b in d["merges"]]
        tokens: list[bytes] = [s.encode("utf-8") for s in self.specials]
        if self.scheme == "bytes":
            tokens.extend(bytes([b]) for b in range(256))
        else:
            tokens.extend(s.encode("utf-8") for s in self.alphabet or [])
        self.first_merge = len(tokens)
        for a, b in self.merges:
            tokens.append(tokens[a] + tokens[b])
        self.tokens = tokens
        ids = d.get("ids")
        self.ext: list[int] = list(ids) if ids is not None else list(range(len(tokens)))
        self.nspec = len(self.specials)

    @property
    def byte_specials(self) -> set[int]:
        """Internal indexes of byte fallback's ``<0x00>``..``<0xFF>`` tokens."""
        if not self.json["scheme"].get("byte_fallback"):
            return set()
        names = set(BYTE_TOKENS)
        return {i for i, t in enumerate(self.specials) if t in names}

    @property
    def keeps_spaces(self) -> bool:
        """SentencePiece with spaces kept (Llama style): the word regex and a dummy prefix."""
        return bool(self.json["scheme"].get("dummy_prefix")) and self.pattern in (SP_WORDS_PATTERN,
                                                                                   SP_WORDS_DIGITS_PATTERN)

    @property
    def unk_id(self) -> int | None:
        if self.unk_token is None:
            return None
        return self.specials.index(self.unk_token)

