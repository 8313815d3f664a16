"""Fuzz the hand-written preset scanners (crates/core/src/scan) against the
regex path they replace.

Contract checked, for ``gpt2``, ``cl100k``, ``o200k`` and ``superword``:
* ``bpeforge.pretokenize`` (the scanner) gives exactly the pieces of
  ``_native._pretokenize_reference`` (the engine's regex path, the same
  Unicode tables), on every input;
* and exactly those of the published pattern run by the ``regex`` module,
  on characters whose Unicode properties agree between the two engines'
  tables (see tests/conftest.py);
* the pieces cover the text.

Texts are built structure-aware from the fuzzer's bytes: a mix of fragments
the patterns single out (whitespace kinds, CRLF, contractions in every case,
digits of several scripts, marks, emoji, case-class letters) and arbitrary
code points.

    python fuzz/fuzz_scanners.py --seeds DIR
    python fuzz/fuzz_scanners.py DIR -max_total_time=60
"""

from __future__ import annotations

import os
import sys
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import atheris  # noqa: E402

from _common import feature, run  # noqa: E402

with atheris.instrument_imports():
    import bpeforge
    from bpeforge import _native
    from bpeforge.interop import CL100K_PATTERN, GPT2_PATTERN, O200K_PATTERN, SUPERWORD_PATTERN

import regex  # noqa: E402

PRESETS = ["gpt2", "cl100k", "o200k", "superword"]
ORACLES = {p: regex.compile(pat) for p, pat in zip(PRESETS, (GPT2_PATTERN, CL100K_PATTERN, O200K_PATTERN, SUPERWORD_PATTERN))}
FRAGMENTS = [
    " ", "  ", "\t", "\n", "\r", "\r\n", "\u00a0", "\u3000", "\u0085", "\u000b", "\u2028", "\u200b", "\x1c",
    "'", "'s", "'S", "'t", "'re", "'RE", "'rE", "'ve", "'Ve", "'m", "'M", "'ll", "'lL", "'d", "'D", "'\u017f",
    "/", "!", ".", "7", "123", "\u0661\u0662", "\u0967", "\uff11", "\u2167", "\u00bd", "\u0301", "\u0903",
    "\U0001f600", "\u200d", "\U0001f3fd", "\ufe0f", "\ue000", "a", "b", "A", "B", "\u01c5", "\u02b0", "\u00aa",
    "\u00e9", "\u00c9", "\u0434", "\u0414", "\u65e5", "\u0627",
]


def stable(text: str) -> bool:
    return all(unicodedata.category(c) != "Cn" or regex.fullmatch(r"\p{Cn}", c) for c in text)


def oracle(preset: str, text: str) -> list[str]:
    if preset != "superword":
        return ORACLES[preset].findall(text)
    pieces, gap = [], 0
    for m in ORACLES[preset].finditer(text):
        if m.start() > gap:
            pieces.append(text[gap:m.start()])
        if m.group():
            pieces.append(m.group())
        gap = m.end()
    if gap < len(text):
        pieces.append(text[gap:])
    return pieces


def make_text(fdp: atheris.FuzzedDataProvider) -> str:
    parts = []
    while fdp.remaining_bytes() > 0 and len(parts) < 200:
        k = fdp.ConsumeIntInRange(0, len(FRAGMENTS) + 1)
        if k < len(FRAGMENTS):
            parts.append(FRAGMENTS[k])
        elif k == len(FRAGMENTS):
            c = fdp.ConsumeIntInRange(0, 0x10FFFF)
            parts.append(chr(c) if not 0xD800 <= c < 0xE000 else "\ufffd")
        else:
            parts.append(fdp.ConsumeUnicodeNoSurrogates(8))
    return "".join(parts)


def write_seeds(d: str) -> None:
    os.makedirs(d, exist_ok=True)
    samples = [b"\x00\x01\x02\x03\x10\x11\x20\x21", bytes(range(0, 120, 3)), bytes(range(255, 0, -7)), b"\x3e" * 40]
    for k, s in enumerate(samples):
        for m in range(len(PRESETS)):
            with open(os.path.join(d, f"seed-{k}-{m}"), "wb") as f:
                f.write(bytes([m]) + s)


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    preset = PRESETS[fdp.ConsumeIntInRange(0, len(PRESETS) - 1)]
    text = make_text(fdp)
    pieces = bpeforge.pretokenize(text, preset)
    feature(f"{preset}:{min(len(pieces), 16)}")
    assert "".join(pieces) == text, (preset, text, pieces)
    assert pieces == _native._pretokenize_reference(text, preset), (preset, text, pieces)
    if stable(text):
        assert pieces == oracle(preset, text), (preset, text, pieces)


def main() -> None:
    run(test_one_input, write_seeds)


if __name__ == "__main__":
    main()
