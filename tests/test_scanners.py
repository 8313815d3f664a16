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

from conftest import _read_slice, shared_corpus, stable_chars  # see conftest: Unicode version
from reference import CL100K_PATTERN, GPT2_PATTERN, O200K_PATTERN, SUPERWORD_PATTERN, reference_pretokenize

bpeforge = pytest.importorskip("bpeforge", reason="bpeforge is not built/installed (maturin develop)")
from bpeforge import _native  # noqa: E402

# The published patterns, written out here independently of the engine.
PUBLISHED = {"gpt2": GPT2_PATTERN, "cl100k": CL100K_PATTERN, "o200k": O200K_PATTERN, "superword": SUPERWORD_PATTERN}
# The presets with a regex, from the engine's one table (crates/core/src/pretok/presets.rs PRESETS),
# that tests/reference.py spells out (a new row is held to its published pattern by the
# engine's own tests, crates/core/src/scan/tests.rs, until the reference spells it too).
SCANNED = tuple(p["name"] for p in _native.PRESETS if p["pattern"] is not None and p["name"] in PUBLISHED)

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


def test_presets_come_from_the_engines_table() -> None:
    """Python's preset names and patterns are the Rust table's, and the
    table's patterns are the published ones (tests/reference.py writes them
    out independently)."""
    table = {p["name"]: p for p in _native.PRESETS}
    assert bpeforge.options.PRESETS == tuple(table)
    assert {"gpt2", "cl100k", "o200k", "whitespace", "none", "superword"} <= set(table)
    assert SCANNED == tuple(PUBLISHED)
    assert {n: table[n]["pattern"] for n in SCANNED} == PUBLISHED
    assert (bpeforge.interop.GPT2_PATTERN, bpeforge.interop.CL100K_PATTERN, bpeforge.interop.O200K_PATTERN) == (
        GPT2_PATTERN, CL100K_PATTERN, O200K_PATTERN)
    assert bpeforge.options.DEFAULT_PRETOKENIZER in table
    for p in table.values():
        assert p["about"] and (p["fast"] is None) == (p["pattern"] is None)
        for alias in p["aliases"]:  # the engine takes an alias as the preset, not as a regex
            assert _native.pretokenize("It's 2024!", alias) == _native.pretokenize("It's 2024!", p["name"])
    # Every preset is documented: in the option's help and in the guide's generated table.
    doc = bpeforge.TrainOptions.__dataclass_fields__["pretokenizer"].metadata["opt"].doc
    assert all(f'``"{name}"``' in doc for name in table), doc


def test_fast_forms_equal_published_patterns_on_real_text() -> None:
    """Each preset's fast form (no look-ahead, emulated in code; the engine's
    regex path) cuts real text as its published pattern does (the ``regex``
    module): 2,000 lines of the shipped sample, in chunks of whole lines."""
    lines = _read_slice(2000)
    assert len(lines) == 2000
    chunks = ["\n".join(lines[i:i + 200]) + "\n" for i in range(0, len(lines), 200)]
    for preset in SCANNED:
        for chunk in chunks:
            assert _native._pretokenize_reference(chunk, preset) == reference_pretokenize(chunk, preset), preset


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
