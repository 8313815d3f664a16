"""Language-balanced training (temperature reweighting) and the live progress CSV."""

from __future__ import annotations

import csv
import subprocess
import sys

import pytest

import bpeforge


@pytest.fixture()
def two_languages(tmp_path):
    big = [f"the quick brown fox number {i % 50} jumps over the lazy dog" for i in range(3000)]
    small = ["Η γρήγορη καφέ αλεπού πηδά πάνω από τον τεμπέλη σκύλο"] * 60
    corpus = tmp_path / "c.txt"
    langs = tmp_path / "c.langs"
    lines = big + small
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    langs.write_text("\n".join(["en"] * len(big) + ["el"] * len(small)) + "\n", encoding="utf-8")
    return corpus, langs, big, small


def test_language_tags_without_a_balancing_are_refused_not_ignored(two_languages, tmp_path) -> None:
    """Tags change nothing at temperature 1 without max_premium: refused
    before any input is read, naming the option given and the two that
    balance (Python's names in Python, the flags on the command line)."""
    corpus, langs, _, _ = two_languages
    a, b = tmp_path / "a.txt", tmp_path / "b.jsonl"
    a.write_text("hello\n", encoding="utf-8")
    b.write_text('{"text": "hello", "lang": "en"}\n', encoding="utf-8")
    for files, given in (([corpus], dict(langs=langs)), ([corpus], dict(langs=langs, temperature=1.0)),
                         ([a], dict(file_languages=["en"])), ([b], dict(lang_field="lang", text_field="text"))):
        name = next(iter(given))
        with pytest.raises(bpeforge.ParameterError, match=rf"^{name}= \(the language of each \w+\) is used only to "
                           r"balance the languages.*give temperature= above 1 .* or max_premium="):
            bpeforge.train(files, vocab_size=400, progress=False, **given)
    out = tmp_path / "m.json"
    for flags, flag in ((["--langs", str(langs)], "--langs"), (["--file-language", "en"], "--file-language")):
        r = subprocess.run([sys.executable, "-m", "bpeforge", "train", str(corpus), *flags, "--vocab-size", "400",
                            "-o", str(out)], capture_output=True, text=True, timeout=300)
        assert r.returncode == 1 and not out.exists(), r.stderr
        assert r.stderr.startswith(f"bpeforge: error: {flag} (the language of each "), r.stderr
        assert "give --temperature above 1" in r.stderr and "--max-premium" in r.stderr, r.stderr
        assert "=" not in r.stderr.split("p^(1/T)")[0], r.stderr
    # With a balancing the tags are used: temperature 2 gives other merges.
    plain = bpeforge.train(corpus, vocab_size=400, progress=False)
    hot = bpeforge.train(corpus, vocab_size=400, langs=langs, temperature=2.0, progress=False)
    assert hot.merges != plain.merges
    meta = hot.metadata["language_balance"]
    assert meta["languages"]["en"]["lines"] == 3000 and meta["languages"]["el"]["lines"] == 60


def test_higher_temperature_helps_the_small_language(two_languages) -> None:
    corpus, langs, big, small = two_languages
    # 360: the plain model has not yet merged every Greek word whole (with
    # the default pre-tokenizer both models have by 400).
    plain = bpeforge.train(corpus, vocab_size=360, progress=False)
    hot = bpeforge.train(corpus, vocab_size=360, langs=langs, temperature=5.0, progress=False)
    el = sum(len(plain.encode(s)) for s in small[:5]), sum(len(hot.encode(s)) for s in small[:5])
    en = sum(len(plain.encode(s)) for s in big[:5]), sum(len(hot.encode(s)) for s in big[:5])
    assert el[1] < el[0], el
    assert en[1] >= en[0], en
    shares = hot.metadata["language_balance"]["languages"]
    assert shares["el"]["balanced_share"] > shares["el"]["share"]
    # Same result with one language per file.
    a, b = corpus.parent / "en.txt", corpus.parent / "el.txt"
    a.write_text("\n".join(big) + "\n", encoding="utf-8")
    b.write_text("\n".join(small) + "\n", encoding="utf-8")
    per_file = bpeforge.train([a, b], vocab_size=360, file_languages=["en", "el"], temperature=5.0, progress=False)
    assert per_file.merges == hot.merges


def test_misaligned_language_file_is_named(two_languages, tmp_path) -> None:
    corpus, _, _, _ = two_languages
    short = tmp_path / "short.langs"
    short.write_text("en\n" * 10, encoding="utf-8")
    with pytest.raises(bpeforge.InputError, match="short.langs.*one tag per input line"):
        bpeforge.train(corpus, vocab_size=300, langs=short, temperature=2.0, progress=False)
    long = tmp_path / "long.langs"
    long.write_text("en\n" * 5000, encoding="utf-8")
    with pytest.raises(bpeforge.InputError, match="long.langs.*more lines"):
        bpeforge.train(corpus, vocab_size=300, langs=long, temperature=2.0, progress=False)
    with pytest.raises(bpeforge.ParameterError, match="one per input file"):
        bpeforge.train(corpus, vocab_size=300, langs=[short, long], temperature=2.0, progress=False)
    with pytest.raises(bpeforge.ParameterError, match="temperature"):
        bpeforge.train(corpus, vocab_size=300, temperature=2.0, progress=False)


def test_progress_csv(two_languages, tmp_path) -> None:
    corpus, _, _, _ = two_languages
    path = tmp_path / "merges.csv"
    tok = bpeforge.train(corpus, vocab_size=400, progress_csv=path, progress=False)
    rows = list(csv.DictReader(path.open()))
    assert len(rows) == len(tok.merges)
    assert [int(r["pair_count"]) for r in rows] == tok.merge_counts
    assert [int(r["merge"]) for r in rows] == list(range(1, len(tok.merges) + 1))
    times = [float(r["elapsed_s"]) for r in rows]
    assert times == sorted(times)


# --------------------------------------------------------------------------
# Parity balancing (max_premium): measured premiums, reweighting rounds.

@pytest.fixture(scope="module")
def multilingual(tmp_path_factory):
    """20,000 real lines of multi-200k and their language tags (the shipped sample)."""
    import lzma

    from conftest import SLICE_LANGS_FILE, _read_slice

    lines = _read_slice(20_000)
    langs_path = SLICE_LANGS_FILE
    with lzma.open(langs_path, "rt", encoding="utf-8") as f:
        tags = [next(f).strip() for _ in range(len(lines))]
    d = tmp_path_factory.mktemp("parity")
    corpus, langs = d / "c.txt", d / "c.langs"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    langs.write_text("\n".join(tags) + "\n", encoding="utf-8")
    return corpus, langs, lines, tags


def _char_units(c: str) -> int:
    """Text units of a character, written out from their definition: 3 for a
    Han character, 2 for a syllable of a syllabary, else 1."""
    o = ord(c)
    han = [(0x2E80, 0x2FDF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x3FFFF)]
    syllabic = [(0x3040, 0x30FF), (0x31F0, 0x31FF), (0xFF66, 0xFF9F), (0xAC00, 0xD7AF), (0xA000, 0xA48F),
                (0x1200, 0x139F), (0x2D80, 0x2DDF), (0xAB00, 0xAB2F), (0x13A0, 0x13FF), (0xAB70, 0xABBF),
                (0x1400, 0x167F), (0x18B0, 0x18FF), (0xA500, 0xA63F)]
    if any(lo <= o <= hi for lo, hi in han):
        return 3
    if any(lo <= o <= hi for lo, hi in syllabic):
        return 2
    return 1


def _units_per_token(tok, lines, tags):
    """Each language's text units per token on its lines, by encoding them
    (independent of the engine's measure, which counts word types)."""
    from collections import defaultdict

    u, t = defaultdict(int), defaultdict(int)
    for line, tag in zip(lines, tags):
        u[tag] += sum(_char_units(c) for c in line)
        t[tag] += len(tok.encode(line))
    return {k: u[k] / t[k] for k in u if t[k]}


def _held_hash(text: str) -> int:
    """The engine's held-apart hash (FNV-1a, then a 64-bit finaliser), written out."""
    m = (1 << 64) - 1
    h = 0xCBF29CE484222325
    for b in text.encode("utf-8"):
        h = ((h ^ b) * 0x100000001B3) & m
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & m
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & m
    return h ^ (h >> 33)


def _held(lines, share):
    below = int(share * 2.0**64)
    return [_held_hash(line) < below for line in lines]


@pytest.mark.parametrize("scheme", ["bytes", "chars"])
def test_parity_on_training_lines_is_measured_exactly_and_improves(multilingual, scheme) -> None:
    corpus, langs, lines, tags = multilingual
    kw = dict(vocab_size=3000, scheme=scheme, progress=False, threads=2)
    if scheme == "chars":
        kw.update(pretokenizer="whitespace", vocab_size=7000)
    plain = bpeforge.train(corpus, **kw)
    tok = bpeforge.train(corpus, langs=langs, max_premium=1.1, balance_rounds=2, balance_min_lines=300,
                         balance_max_lift=3.0, balance_held_apart=0.0, **kw)
    meta = tok.metadata["language_balance"]
    assert meta["method"] == "parity" and meta["reference"] == "en" and meta["max_premium"] == 1.1
    assert meta["premiums_measured_on"] == "training counts" and meta["held_apart"] == 0.0
    assert meta["rounds"][0]["worst_premium"] > 1.1  # there is something to balance
    assert 1 <= len(meta["rounds"]) <= 3
    if scheme == "chars":
        return  # the chars scheme's word types carry the boundary marker: units differ from the line's
    # The recorded premiums are those of the returned model on the training lines.
    upt = _units_per_token(tok, lines, tags)
    for lang, row in meta["languages"].items():
        assert row["units_per_token"] == pytest.approx(upt[lang], abs=1e-4), lang
        assert row["premium"] == pytest.approx(upt["en"] / upt[lang], abs=2e-4), lang
        assert row["balanced"] == (lang != "en" and row["lines"] >= 300)
        if not row["balanced"]:
            assert row["weight"] == 1.0, lang
        assert 1.0 <= row["weight"] <= 3.0 + 1e-9, lang  # never lowered; at most balance_max_lift
    # The worst balanced language of the unbalanced model pays less now.
    base = _units_per_token(plain, lines, tags)
    balanced = [l for l, r in meta["languages"].items() if r["balanced"]]
    worst = max(balanced, key=lambda l: base["en"] / base[l])
    assert meta["languages"][worst]["weight"] > 1.0
    assert upt["en"] / upt[worst] < base["en"] / base[worst]
    assert meta["rounds"][-1]["worst_premium"] < meta["rounds"][0]["worst_premium"]
    # Round 0 is the unbalanced model.
    assert meta["rounds"][0]["reference_units_per_token"] == pytest.approx(base["en"], abs=1e-4)


def test_report_measures_the_premiums_training_recorded(multilingual) -> None:
    """`bpeforge report` measures the premium parity balancing steers by: on
    the training lines of a model balanced on them (balance_held_apart=0),
    the report's premium of every language is the one training recorded, and
    it names the mode and its settings."""
    pytest.importorskip("numpy")
    from bpeforge import report as rp

    corpus, langs, lines, tags = multilingual
    tok = bpeforge.train(corpus, langs=langs, max_premium=1.3, balance_rounds=1, balance_min_lines=300,
                         balance_held_apart=0.0, vocab_size=3000, progress=False, threads=2)
    meta = tok.metadata["language_balance"]
    rep = rp.build_report(tok, corpus, langs=langs, sample=100, curve_lines=20, curve_points=2, per_language=0)
    assert rep.corpus["premium"]["reference"] == meta["reference"]
    rows = {r["lang"]: r["models"]["model"] for r in rep.languages}
    assert set(rows) == set(meta["languages"])
    for lang, row in meta["languages"].items():
        assert rows[lang]["premium"] == pytest.approx(row["premium"], abs=2e-4), lang
        assert rows[lang]["units_per_token"] == pytest.approx(row["units_per_token"], abs=2e-4), lang
    assert rep.models[0]["language_balance"].startswith("parity, max_premium 1.3; reference en;")
    assert "premiums measured on the training counts" in rep.models[0]["language_balance"]


def test_premium_has_one_definition_everywhere(two_languages) -> None:
    """The premium is defined once (the max_premium option record): the
    docstring, --help, the options reference, the guide and the engine's
    error all speak of text units per token, none of bytes per token."""
    import dataclasses
    import re
    import subprocess
    import sys
    from pathlib import Path

    from bpeforge.options import TrainOptions

    docs = {f.name: f.metadata["opt"] for f in dataclasses.fields(TrainOptions) if f.name in (
        "max_premium", "balance_rounds", "balance_held_apart", "premium_reference", "balance_min_lines",
        "balance_max_lift")}
    record = docs["max_premium"]
    assert "text units per token" in record.doc and "text units per token" in record.cli["help"]
    assert re.sub(r"\s", "", record.doc) in re.sub(r"\s", "", bpeforge.train.__doc__)  # the docstring is the record
    helptext = subprocess.run([sys.executable, "-m", "bpeforge", "train", "--help"], capture_output=True, text=True,
                              timeout=60, env={**__import__("os").environ, "COLUMNS": "400"}).stdout
    assert "text units per token" in " ".join(helptext.split())
    guide = (Path(__file__).parent.parent / "docs" / "guide" / "reports-and-balance.md").read_text(encoding="utf-8")
    assert "reference/train-options.md#max_premium" in guide
    wrong = re.compile(r"bytes per token|tokens per byte|bytes/token|no second pass", re.I)
    for name, o in docs.items():
        assert not wrong.search(o.doc), name
        assert not wrong.search(str(o.cli)), name
    parity = guide[guide.index("**Parity**"):guide.index("## Premiums on parallel text")]
    assert not wrong.search(parity)
    corpus, langs, _, _ = two_languages
    with pytest.raises(bpeforge.ParameterError, match="tokens per text unit"):
        bpeforge.train(corpus, vocab_size=400, langs=langs, max_premium=1.0, progress=False)


def test_held_apart_premiums_are_measured_exactly(multilingual, tmp_path) -> None:
    """With nothing above the band, the weights never move: the result is the
    unbalanced model, and the recorded premiums are those of a model trained
    without the held-apart lines (on the word types seen at least twice),
    measured on the held-apart lines."""
    corpus, langs, lines, tags = multilingual
    kw = dict(vocab_size=2000, progress=False, threads=2)
    plain = bpeforge.train(corpus, **kw)
    tok = bpeforge.train(corpus, langs=langs, max_premium=100.0, balance_min_lines=300, **kw)
    assert tok.merges == plain.merges and tok.merge_counts == plain.merge_counts
    meta = tok.metadata["language_balance"]
    assert meta["premiums_measured_on"] == "held-apart lines" and meta["held_apart"] == 0.1
    held = _held(lines, 0.1)
    assert 0.07 < sum(held) / len(held) < 0.13
    train_part = tmp_path / "train.txt"
    train_part.write_text("".join(x + "\n" for x, h in zip(lines, held) if not h), encoding="utf-8")
    round0 = bpeforge.train(train_part, min_word_count=2, **kw)  # a measuring round drops hapax types
    upt = _units_per_token(round0, [x for x, h in zip(lines, held) if h], [t for t, h in zip(tags, held) if h])
    measured = {lang: row for lang, row in meta["languages"].items() if lang in upt}
    assert len(measured) >= 10
    for lang, row in measured.items():
        assert row["units_per_token"] == pytest.approx(upt[lang], abs=1e-4), lang
        assert row["premium"] == pytest.approx(upt["en"] / upt[lang], abs=2e-4), lang
    assert meta["rounds"][0]["reference_units_per_token"] == pytest.approx(upt["en"], abs=1e-4)


def test_held_apart_lifts_help_the_held_apart_lines(multilingual) -> None:
    corpus, langs, lines, tags = multilingual
    kw = dict(vocab_size=3000, progress=False, threads=2)
    plain = bpeforge.train(corpus, **kw)
    tok = bpeforge.train(corpus, langs=langs, max_premium=1.3, balance_rounds=1, balance_min_lines=300, **kw)
    meta = tok.metadata["language_balance"]
    lifted = [l for l, r in meta["languages"].items() if r["weight"] > 1.0]
    assert lifted and all(meta["languages"][l]["balanced"] for l in lifted)
    held = _held(lines, 0.1)
    h_lines = [x for x, h in zip(lines, held) if h]
    h_tags = [t for t, h in zip(tags, held) if h]
    before, after = _units_per_token(plain, h_lines, h_tags), _units_per_token(tok, h_lines, h_tags)
    worst = max(lifted, key=lambda l: meta["languages"][l]["weight"])
    assert after["en"] / after[worst] < before["en"] / before[worst], worst
    # One measuring round and one final merge loop.
    assert len(meta["rounds"]) == 1


def test_parity_is_deterministic_and_thread_independent(multilingual) -> None:
    corpus, langs, _, _ = multilingual
    kw = dict(vocab_size=1500, langs=langs, max_premium=1.3, balance_rounds=1, balance_min_lines=300, progress=False)
    a = bpeforge.train(corpus, threads=1, **kw)
    b = bpeforge.train(corpus, threads=2, **kw)
    assert a.merges == b.merges and a.merge_counts == b.merge_counts
    assert a.metadata["language_balance"]["languages"] == b.metadata["language_balance"]["languages"]


def test_parity_zero_rounds_is_unbalanced_with_measurements(two_languages) -> None:
    corpus, langs, big, small = two_languages
    plain = bpeforge.train(corpus, vocab_size=400, progress=False)
    tok = bpeforge.train(corpus, vocab_size=400, langs=langs, max_premium=1.5, balance_rounds=0,
                         balance_min_lines=10, progress=False)
    assert tok.merges == plain.merges and tok.merge_counts == plain.merge_counts
    meta = tok.metadata["language_balance"]
    assert len(meta["rounds"]) == 1 and meta["reference"] == "en"
    # A cheap language (Greek: 2-byte letters) is measured below 1; here nothing moves.
    assert meta["languages"]["el"]["weight"] == 1.0


def test_parity_reference_and_errors(two_languages, tmp_path) -> None:
    corpus, langs, _, _ = two_languages
    tok = bpeforge.train(corpus, vocab_size=400, langs=langs, max_premium=1.5, balance_rounds=1,
                         premium_reference="el", balance_min_lines=10, progress=False)
    assert tok.metadata["language_balance"]["reference"] == "el"
    assert tok.metadata["language_balance"]["languages"]["el"]["premium"] == 1.0
    with pytest.raises(bpeforge.ParameterError, match="premium_reference.*xx"):
        bpeforge.train(corpus, vocab_size=400, langs=langs, max_premium=1.5, premium_reference="xx", progress=False)
    for bad in (1.0, 0.5, float("nan"), float("inf"), "1.2", True):
        with pytest.raises(bpeforge.ParameterError, match="max_premium"):
            bpeforge.train(corpus, vocab_size=400, langs=langs, max_premium=bad, progress=False)
    with pytest.raises(bpeforge.ParameterError, match="max_premium needs langs"):
        bpeforge.train(corpus, vocab_size=400, max_premium=1.2, progress=False)
    for bad in (0.5, 2000, float("nan"), "2"):
        with pytest.raises(bpeforge.ParameterError, match="balance_max_lift"):
            bpeforge.train(corpus, vocab_size=400, langs=langs, max_premium=1.2, balance_max_lift=bad, progress=False)
    with pytest.raises(bpeforge.ParameterError, match="balance_rounds"):
        bpeforge.train(corpus, vocab_size=400, langs=langs, max_premium=1.2, balance_rounds=21, progress=False)
    with pytest.raises(bpeforge.ParameterError, match="superbpe"):
        bpeforge.train(corpus, vocab_size=600, langs=langs, max_premium=1.2, superbpe_transition=500, progress=False)
    base = bpeforge.train(corpus, vocab_size=300, progress=False)
    with pytest.raises(bpeforge.ParameterError, match="resume_from"):
        bpeforge.train(corpus, vocab_size=400, langs=langs, max_premium=1.2, resume_from=base, progress=False)


def test_parity_progress_and_cli(two_languages, tmp_path, capfd) -> None:
    import json
    import subprocess
    import sys

    corpus, langs, _, _ = two_languages
    out = tmp_path / "m.json"
    r = subprocess.run([sys.executable, "-m", "bpeforge", "train", str(corpus), "--langs", str(langs),
                        "--max-premium", "1.3", "--balance-rounds", "2", "--balance-min-lines", "10",
                        "--vocab-size", "400", "--output", str(out), "--progress", "json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    events = [json.loads(l) for l in r.stderr.splitlines() if l.startswith("{")]
    rounds = [e for e in events if e.get("phase") == "balancing"]
    assert rounds and rounds[0]["done"] == 1 and rounds[0]["reference"] == "en"
    # Counting is reported once, however many rounds run.
    assert sum(1 for e in events if e.get("phase") == "counting" and e.get("finished")) == 1
    meta = bpeforge.load(out).metadata["language_balance"]
    assert meta["method"] == "parity" and len(meta["rounds"]) == len(rounds)
    r = subprocess.run([sys.executable, "-m", "bpeforge", "inspect", str(out)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "language balance: parity, max_premium 1.3, reference en" in r.stdout
    assert r.stdout.count("    round ") == len(rounds)
    r = subprocess.run([sys.executable, "-m", "bpeforge", "train", str(corpus), "--max-premium", "1.3",
                        "--vocab-size", "400", "--quiet"], capture_output=True, text=True, timeout=300)
    # The CLI names its flags.
    assert r.returncode != 0 and "--max-premium needs --langs" in r.stderr and "Traceback" not in r.stderr
