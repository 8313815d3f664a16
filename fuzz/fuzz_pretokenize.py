"""Fuzz the pre-tokenizers: every preset on arbitrary text, and short custom
regexes (including look-around ones that run on the backtracking engine).

Contract checked:
* ``gpt2``, ``cl100k``, ``o200k``: exactly the matches of the published
  regex (oracle: the ``regex`` module, on characters whose Unicode
  properties agree between the two engines' tables), covering the text;
* ``whitespace``: ``text.split()``; ``none``: ``[text]``; ``superword``:
  pieces cover the text;
* custom regex: ``ParameterError`` for a pattern neither engine accepts,
  otherwise non-empty pieces found in order in the text, or ``InputError``
  ("gave up") from the backtracking engine; never slower than 2 s on the
  short texts used here.

    python fuzz/fuzz_pretokenize.py --seeds DIR
    python fuzz/fuzz_pretokenize.py DIR -max_total_time=60
"""

from __future__ import annotations

import os
import sys
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import atheris  # noqa: E402

from _common import error_label, feature, known, run  # noqa: E402

with atheris.instrument_imports():
    import bpeforge
    from bpeforge import InputError, ParameterError
    from bpeforge.interop import CL100K_PATTERN, GPT2_PATTERN, O200K_PATTERN

import regex  # noqa: E402

ORACLES = {p: regex.compile(pat) for p, pat in (("gpt2", GPT2_PATTERN), ("cl100k", CL100K_PATTERN), ("o200k", O200K_PATTERN))}
PRESETS = ["gpt2", "cl100k", "o200k", "whitespace", "none", "superword"]
# Pieces the regex fragments are drawn from (custom patterns).
FRAGMENTS = ["a", "b", "\\w", "\\s", "\\d", "\\p{L}", ".", "[^ab]", "(", ")", "(?:", "(?=", "(?!", "(?<=", "(?<!",
             "|", "*", "+", "?", "{1,3}", "{2}", "*?", "+?", "\\1", "^", "$", "\\b", "(?i)", "[", "]", "-", "\\"]


def stable(text: str) -> bool:
    """Characters whose Unicode properties agree between the engine (Unicode 16)
    and the oracle (the regex module's newer tables): see tests/conftest.py.
    Assigned characters must also keep their general category: Unicode 17
    made U+0295 (ʕ) Lo, where the engine and ``unicodedata`` say Ll."""
    return all(regex.fullmatch(r"\p{%s}" % unicodedata.category(c), c) for c in text)


def write_seeds(d: str) -> None:
    os.makedirs(d, exist_ok=True)
    samples = ["Hello  wörld!\n\n 12345 it's I'M", "\t\r\n \u3000x\u00a0y\x1c", "😀👍🏽 e\u0301 ١٢٣ 中文。", "a" * 40]
    for k, s in enumerate(samples):
        for m in range(len(PRESETS) + 1):
            with open(os.path.join(d, f"seed-{k}-{m}"), "wb") as f:
                f.write(bytes([m, 0, 0, 0]) + s.encode())


def check_custom(fdp: atheris.FuzzedDataProvider) -> None:
    pattern = "".join(fdp.PickValueInList(FRAGMENTS) for _ in range(fdp.ConsumeIntInRange(1, 10)))
    text = fdp.ConsumeUnicodeNoSurrogates(32)
    import time

    t = time.perf_counter()
    try:
        pieces = bpeforge.pretokenize(text, bpeforge.Regex(pattern))
    except ParameterError as e:
        feature("custom:" + error_label(e)[:40])
        return
    except InputError as e:
        assert "gave up" in str(e), e
        feature("custom:gave-up")
        return
    finally:
        dt = time.perf_counter() - t
    if dt > 0.5 and known("BUG-6"):
        return
    assert dt < 2.0, f"pattern {pattern!r} on {text!r} took {dt:.2f}s"
    feature(f"custom:ok:{min(len(pieces), 5)}")
    # Matches and the gaps between them: nothing is lost, nothing is empty.
    assert all(pieces), (pattern, text, pieces)
    assert "".join(pieces) == text, (pattern, text, pieces)


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    which = fdp.ConsumeIntInRange(0, len(PRESETS))
    if which == len(PRESETS):
        check_custom(fdp)
        return
    preset = PRESETS[which]
    text = fdp.ConsumeUnicodeNoSurrogates(fdp.remaining_bytes())
    pieces = bpeforge.pretokenize(text, preset)
    feature(f"{preset}:{min(len(pieces), 8)}")
    if preset in ORACLES:
        assert "".join(pieces) == text, (preset, text, pieces)
        if stable(text):
            assert pieces == ORACLES[preset].findall(text), (preset, text, pieces)
    elif preset == "whitespace":
        assert pieces == text.split(), (text, pieces)
    elif preset == "none":
        assert pieces == ([text] if text else []), (text, pieces)
    else:
        assert "".join(pieces) == text, (preset, text, pieces)


def main() -> None:
    run(test_one_input, write_seeds)


if __name__ == "__main__":
    main()
