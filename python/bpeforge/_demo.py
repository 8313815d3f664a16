"""What `bpeforge train` with no input shows: a few lines in different
scripts, tokenized by the model just trained, and what to try next."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ._display import show_token

if TYPE_CHECKING:  # pragma: no cover
    from ._tokenizer import Tokenizer

# The sample has no English text (see data/SAMPLE_SOURCES.md), so the first
# line shown is ours: English is what most readers check first.
ENGLISH = "Tokenizers turn text into numbers that a model can read."

# Script: a test on a character (code point blocks are enough to pick lines).
SCRIPTS: list[tuple[str, Callable[[str], bool]]] = [
    ("Latin", lambda c: c.isascii()),
    ("Greek", lambda c: "\u0370" <= c <= "\u03ff" or "\u1f00" <= c <= "\u1fff"),
    ("Cyrillic", lambda c: "\u0400" <= c <= "\u04ff"),
    ("Arabic", lambda c: "\u0600" <= c <= "\u06ff"),
    ("Devanagari", lambda c: "\u0900" <= c <= "\u097f"),
    ("Han", lambda c: "\u4e00" <= c <= "\u9fff"),
]
MAX_CHARS = 48
MAX_TOKENS = 14
NEXT_STEPS = [
    "bpeforge train corpus.txt.xz --vocab-size 32000 --output model.json",
    "bpeforge encode --model model.json corpus.txt.xz --format npy --output ids.npy",
    "bpeforge export --model model.json --to huggingface --output tokenizer.json",
]


def sample_lines(path: Path) -> list[tuple[str, str]]:
    """``(label, text)``: English first, then one line of each script found."""
    lines = path.read_text(encoding="utf-8").splitlines()
    picked = [("English", ENGLISH)]
    for name, is_script in SCRIPTS:
        for line in lines:
            letters = [c for c in line if c.isalpha()]
            if len(line) >= 30 and letters and all(map(is_script, letters)):
                picked.append((name, _shorten(line)))
                break
    return picked


def _shorten(line: str) -> str:
    if len(line) <= MAX_CHARS:
        return line
    cut = line.rfind(" ", 0, MAX_CHARS)
    return line[: cut if cut > MAX_CHARS // 2 else MAX_CHARS]


def show(tok: Tokenizer, path: Path) -> list[str]:
    """The demo's lines of output (without newlines)."""
    out = ["", "How the new vocabulary splits a few lines (␣ is a space; <0xCE> a byte of a split character):"]
    for label, text in sample_lines(path):
        ids = tok.encode_ordinary(text)
        pieces = [show_token(tok.id_to_token(i) or b"") for i in ids[:MAX_TOKENS]]
        more = f" … (+{len(ids) - MAX_TOKENS})" if len(ids) > MAX_TOKENS else ""
        out.append(f"  {label:<10} {len(text):>3} chars -> {len(ids):>3} tokens: {' | '.join(pieces)}{more}")
    out += ["", "Next, on your own text:"] + [f"  {cmd}" for cmd in NEXT_STEPS]
    return out
