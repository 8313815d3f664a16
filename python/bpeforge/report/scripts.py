"""Unicode scripts of characters and tokens, from the Unicode Script property.

The property comes from the engine (``_engine.script_of``: the Unicode tables
of the Rust ``regex`` crate, the ones the pre-tokenizer's ``\\p{..}`` classes
use), not from character names. Two choices are the report's own:

* only letters and marks (general categories L and M) carry a script: digits,
  punctuation, symbols and spaces are ``"Common"`` even where Unicode gives
  them a script (Devanagari digits, Arabic punctuation), so that ``"Common"``
  means "no letters";
* Hiragana and Katakana are one bucket, ``"Kana"`` (Japanese mixes them in
  one word), and a few scripts keep the names the report has always shown
  (``_DISPLAY``).
"""

from __future__ import annotations

import functools
import unicodedata
from collections import Counter

from .. import _engine

#: Scripts written without spaces between words: tokens per word means little there.
NO_SPACE_SCRIPTS = frozenset({"Han", "Kana", "Thai", "Khmer", "Lao", "Myanmar", "Tibetan", "Javanese", "Balinese"})
COMMON = "Common"
BYTES = "bytes (partial UTF-8)"
SPECIAL = "special tokens"
MIXED = "Mixed scripts"

# Unicode Script values shown under another name (the rest: "_" as a space).
_DISPLAY = {
    "Hiragana": "Kana",
    "Katakana": "Kana",
    "Canadian_Aboriginal": "Canadian Syllabics",
    "Nko": "NKo",
    "Phags_Pa": "Phags-pa",
}


@functools.lru_cache(maxsize=1 << 16)
def char_script(ch: str) -> str | None:
    """The writing system of one character, from its Unicode Script property.

    Letters and marks get their script (``"Latin"``, ``"Cyrillic"``, ``"Han"``;
    Hiragana and Katakana are both ``"Kana"``); digits, punctuation, symbols,
    spaces and controls, and letters Unicode shares between scripts (``ー``,
    mathematical letters), are ``"Common"``; combining marks of script
    Inherited (U+0301 and the like) are None (they take the script of their
    base).
    """
    if unicodedata.category(ch)[0] not in "LM":
        return COMMON
    script = _engine.script_of(ch)[0]
    if script == "Inherited":
        return None
    if script in ("Common", "Unknown"):
        return COMMON
    return _DISPLAY.get(script) or script.replace("_", " ")


def _scripts_of(text: str) -> set[str]:
    out = set()
    for ch in text:
        s = char_script(ch)
        if s is not None and s != COMMON:
            out.add(s)
    return out


def token_script(token: bytes | str) -> str:
    """The script bucket of a token: its letters' single script, ``"Common"``
    (no letters: digits, punctuation, spaces), ``"Mixed scripts"``, or, for
    bytes that are not valid UTF-8 (a byte-level token cut mid-character),
    ``"bytes (partial UTF-8)"``."""
    if isinstance(token, bytes):
        try:
            token = token.decode("utf-8")
        except UnicodeDecodeError:
            return BYTES
    scripts = _scripts_of(token)
    if not scripts:
        return COMMON
    if len(scripts) == 1:
        return next(iter(scripts))
    return MIXED


def dominant_script(texts: list[str], budget: int = 6000) -> tuple[str, dict[str, float]]:
    """The most frequent script among the first ``budget`` characters of
    ``texts``, and the shares of the top five."""
    c: Counter[str] = Counter()
    used = 0
    for t in texts:
        for ch in t[: budget - used]:
            s = char_script(ch)
            if s is not None and s != COMMON:
                c[s] += 1
        used += min(len(t), budget - used)
        if used >= budget:
            break
    total = sum(c.values())
    if not total:
        return COMMON, {}
    shares = {k: v / total for k, v in c.most_common(5)}
    return c.most_common(1)[0][0], shares
