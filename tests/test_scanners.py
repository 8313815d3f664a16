"""The hand-written preset scanners (crates/core/src/scan) against the
published patterns: the ``regex`` module running them (tests/reference.py)
and the engine's own regex path (``_native._pretokenize_reference``).

The whole shared corpora are compared in a ``slow`` test:
``pytest -m slow tests/test_scanners.py`` (a few minutes).
"""

from __future__ import annotations

import lzma

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import shared_corpus, stable_chars  # see conftest: Unicode version
from reference import reference_pretokenize

bpeforge = pytest.importorskip("bpeforge", reason="bpeforge is not built/installed (maturin develop)")
from bpeforge import _native  # noqa: E402

SCANNED = ("gpt2", "cl100k", "o200k", "superword")

# What the patterns single out: whitespace of every kind and CRLF runs,
# contractions in every case (and U+017F, which folds to 's'), digits of
# several scripts, combining marks, emoji with ZWJ and modifiers, title-case
# and modifier letters (o200k's case classes), private-use code points.
FRAGMENTS = [
    " ", "  ", "\t", "\n", "\r", "\r\n", "\r\n\r\n", " \n ", "\u00a0", "\u3000", "\u0085", "\u000b", "\u000c",
    "\u2028", "\u1680", "\u200b", "\x1c",
    "'", "'s", "'S", "'t", "'T", "'re", "'rE", "'Re", "'RE", "'ve", "'VE", "'m", "'M", "'ll", "'Ll", "'LL", "'d",
    "'D", "'\u017f", "''", "/", "//", "!?", ".", "-",
    "7", "1234567", "\u0661\u0662\u0663\u0664", "\u0967\u0968", "\uff11\uff12", "\u2167", "\u00bd", "\U0001d7ce",
    "\u0301", "\u0308", "\u0903", "e\u0301", "A\u0301",
    "\U0001f600", "\U0001f44d\U0001f3fd", "\U0001f468\u200d\U0001f469\u200d\U0001f467", "\u2764\ufe0f",
    "\ue000", "\U000f0000",
    "a", "Z", "hello", "World", "HTTP", "iPhone", "\u01c5", "\u02b0", "\u00aa", "\u00e9", "\u00c9", "\u0434", "\u0414",
    "\u65e5\u672c", "\u3042", "\u0627", "\u0915",
]

texts = st.lists(st.one_of(st.sampled_from(FRAGMENTS), stable_chars), max_size=40).map("".join)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts)
def test_scanners_equal_published_patterns(text: str) -> None:
    for preset in SCANNED:
        pieces = bpeforge.pretokenize(text, preset)
        assert pieces == _native._pretokenize_reference(text, preset), (preset, text)
        assert pieces == reference_pretokenize(text, preset), (preset, text)


def test_reference_path_is_separate() -> None:
    # The hidden reference runs the regex engine: same pieces, distinct path.
    text = "I'M  here\r\n\r\n  12345 caf\u00e9\u0301 Ǆa"
    for preset in SCANNED:
        assert _native._pretokenize_reference(text, preset) == bpeforge.pretokenize(text, preset)
    assert _native._pretokenize_count(text, "gpt2") == len(bpeforge.pretokenize(text))
    assert _native._pretokenize_count(text, "gpt2", reference=True) == len(bpeforge.pretokenize(text))


def test_custom_patterns_still_work() -> None:
    assert bpeforge.pretokenize("ab12cd345", bpeforge.Regex(r"\d+")) == ["ab", "12", "cd", "345"]
    # compiled once per pattern, the errors stay the same every call
    for _ in range(2):
        with pytest.raises(bpeforge.ParameterError):
            bpeforge.pretokenize("x", bpeforge.Regex("("))


# ---------------------------------------------------------------------------
# the whole corpora: pytest -m slow tests/test_scanners.py
# ---------------------------------------------------------------------------


def _chunks(path, lines_per_chunk: int = 20000):
    """The corpus as texts of whole lines, each ending in its newline: the
    pieces then cross newlines as they do in a whole file."""
    with lzma.open(path, "rt", encoding="utf-8", newline="") as f:
        buf: list[str] = []
        for line in f:
            buf.append(line)
            if len(buf) == lines_per_chunk:
                yield "".join(buf)
                buf = []
        if buf:
            yield "".join(buf)


@pytest.mark.slow
@pytest.mark.parametrize("corpus", ["multi-200k.txt.xz", "multi-1m.txt.xz"])
def test_whole_corpus_equals_regex_module(corpus: str) -> None:
    total = 0
    for chunk in _chunks(shared_corpus(corpus)):
        for preset in SCANNED:
            pieces = bpeforge.pretokenize(chunk, preset)
            expected = reference_pretokenize(chunk, preset)
            if pieces != expected:
                at = next(i for i, (a, b) in enumerate(zip(pieces + [None], expected + [None])) if a != b)
                raise AssertionError(f"{corpus}, {preset}: piece {at} differs: ours {pieces[at:at + 3]!r}, "
                                     f"regex module {expected[at:at + 3]!r}")
            total += len(pieces)
    assert total > 0
