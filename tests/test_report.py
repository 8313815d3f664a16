"""`bpeforge report` and bpeforge.report: the figures' numbers, the files, the page in a real browser."""

from __future__ import annotations

import contextlib
import inspect
import json
import lzma
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

bpeforge = pytest.importorskip("bpeforge", reason="bpeforge is not built/installed (maturin develop)")
np = pytest.importorskip("numpy")
pytest.importorskip("matplotlib", reason="the report draws with matplotlib (pip install 'bpeforge[plot]')")

from bpeforge import report as rp  # noqa: E402
from bpeforge.errors import OutputError, ParameterError  # noqa: E402

from browser import browse, console_errors, find_chromium  # noqa: E402
from conftest import SLICE_FILE, SLICE_LANGS_FILE, SMALL_CORPUS  # noqa: E402

CORPUS = SLICE_FILE  # the shipped real multilingual sample (tests/data/corpus)
LANGS = SLICE_LANGS_FILE
N_LINES = 3000
FAST = dict(sample=1500, curve_lines=400, curve_points=6, top_langs=12, per_language=60)


def _head(path: Path, n: int) -> list[str]:
    out = []
    with lzma.open(path, "rt", encoding="utf-8", newline="\n") as f:
        for line in f:
            out.append(line.rstrip("\n"))
            if len(out) >= n:
                break
    return out


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A real multilingual slice with its language tags, two models trained on it
    (bytes/gpt2 with a progress CSV, chars/whitespace), all as files."""
    d = tmp_path_factory.mktemp("report_data")
    lines, tags = _head(CORPUS, N_LINES), _head(LANGS, N_LINES)
    (d / "corpus.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with lzma.open(d / "corpus.txt.xz", "wt", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    (d / "langs.txt").write_text("\n".join(tags) + "\n", encoding="utf-8")
    kw: dict = {}
    if "progress_csv" in inspect.signature(bpeforge.train).parameters:
        kw["progress_csv"] = str(d / "progress.csv")
    tok = bpeforge.train([str(d / "corpus.txt")], vocab_size=900, progress=False, **kw)
    tok.save(str(d / "bytes.json"))
    chars = bpeforge.train([str(d / "corpus.txt")], vocab_size=2200, scheme="chars", pretokenizer="whitespace",
                           character_coverage=0.995, progress=False)
    chars.save(str(d / "chars.json"))
    if not kw:  # no progress CSV from training yet: write one in its format
        counts = tok.merge_counts
        (d / "progress.csv").write_text(
            "merge,pair_count,elapsed_s\n" + "".join(f"{i + 1},{c},{i * 0.001:.4f}\n" for i, c in enumerate(counts)),
            encoding="utf-8")
    return {"dir": d, "corpus": d / "corpus.txt", "corpus_xz": d / "corpus.txt.xz", "langs": d / "langs.txt",
            "bytes": d / "bytes.json", "chars": d / "chars.json", "csv": d / "progress.csv"}


@pytest.fixture(scope="module")
def rep(data: dict[str, Path]) -> rp.Report:
    return rp.build_report(data["bytes"], data["corpus_xz"], langs=data["langs"], compare=data["chars"],
                           progress_csv=data["csv"], **FAST)


@pytest.fixture(scope="module")
def written(rep: rp.Report, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """``rep`` written once (drawing the PNGs is the slow part)."""
    parent = tmp_path_factory.mktemp("written")
    out = parent / "rep"
    return out, rp.write_directory(rep, out)


@pytest.fixture(scope="module")
def tiny() -> rp.Report:
    """A report on SMALL_CORPUS (no shared corpus needed, four figures)."""
    tok = bpeforge.train_from_iterator(SMALL_CORPUS * 3, vocab_size=300, special_tokens=["<s>"], progress=False)
    return rp.build_report(tok, SMALL_CORPUS * 3, sample=0, curve_lines=20, curve_points=3)


# ---- scripts --------------------------------------------------------------


@pytest.mark.parametrize(
    "text, script",
    [
        ("hello", "Latin"), (" Straße", "Latin"), ("Ωμέγα", "Greek"), ("привет", "Cyrillic"),
        ("中文", "Han"), ("ひらがな", "Kana"), ("カタカナー", "Kana"), ("한국어", "Hangul"),
        ("العربية", "Arabic"), ("हिन्दी", "Devanagari"), ("ภาษาไทย", "Thai"), ("ᏣᎳᎩ", "Cherokee"),
        ("ᐊᓂᔑᓈᐯ", "Canadian Syllabics"), ("e\u0301", "Latin"), ("123", "Common"), (", ", "Common"),
        (" ", "Common"), ("abcдеф", "Mixed scripts"), ("ＡＢＣ", "Latin"), ("ｶﾀ", "Kana"),
    ],
)
def test_token_script(text: str, script: str) -> None:
    assert rp.token_script(text) == script
    assert rp.token_script(text.encode("utf-8")) == script


def test_partial_utf8_is_bytes() -> None:
    assert rp.token_script("é".encode()[:1]) == rp.BYTES
    assert rp.token_script(b"\xff") == rp.BYTES
    assert rp.char_script("\u0301") is None  # combining: takes its base's script


def _regex_scripts(text: str, names: set[str]) -> list[str | None]:
    """The Script property of each character of ``text`` by the ``regex``
    module's ``\\p{Script=..}`` (its own Unicode tables)."""
    regex = pytest.importorskip("regex")
    out: list[str | None] = [None] * len(text)
    for name in names:
        for m in regex.finditer(rf"\p{{Script={name}}}+", text):
            out[m.start() : m.end()] = [name] * (m.end() - m.start())
    return out


def test_script_property_matches_regex_module() -> None:
    """The engine's Script property (report's char_script) equals the
    ``regex`` module's on every character assigned in Python's Unicode
    version, the shared corpus slice and characters whose names mislead."""
    import unicodedata

    from bpeforge import _native
    from conftest import _read_slice

    assigned = "".join(chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) not in ("Cn", "Co", "Cs"))
    tricky = ("\u0301\u064e\u0951\u3099"  # Inherited marks (Latin, Arabic, Devanagari, kana combining)
              "\u30fc\uff70\u3005\u3006\u3007"  # prolonged sound marks (Common), ideographic iteration/zero
              "\u3041\u30a1\uff76\u4e2d\U00020000"  # Hiragana, Katakana, halfwidth, Han (BMP, ext. B)
              "\u207f\u02b7\u02c7\u212a\u2126\U0001d400"  # superscript n, modifier w, caron, Kelvin, Ohm, math A
              "\u0966\u0660\u060c\u1401\u13a0 1,")  # digits and comma of scripts, syllabics, Cherokee, Common
    text = assigned + "".join(_read_slice(2000)) + tricky
    ours = _native.script_of(text)
    assert "Unknown" not in ours[: len(assigned)]
    assert ours == _regex_scripts(text, set(ours))


@pytest.mark.parametrize(
    "ch, script",
    [("\u207f", "Latin"), ("\u02b7", "Latin"), ("\u02c7", "Common"), ("\u30fc", "Common"), ("\u064e", None),
     ("\u212a", "Latin"), ("\u2126", "Greek"), ("\U0001d400", "Common"), ("\u0966", "Common"), ("\u3005", "Han")],
)
def test_char_script_uses_the_script_property(ch: str, script: str | None) -> None:
    """Where the old name-based guess was wrong (U+207F SUPERSCRIPT LATIN SMALL
    LETTER N was "Superscript", U+02B7 MODIFIER LETTER SMALL W "Common", U+02C7
    CARON "Caron", U+212A KELVIN SIGN "Kelvin"); digits stay Common (no letters)."""
    assert rp.char_script(ch) == script


# ---- progress CSV -----------------------------------------------------------


def test_progress_csv_reader(tmp_path: Path) -> None:
    p = tmp_path / "p.csv"
    p.write_text("merge,pair_count,elapsed_s\n1,500,0.01\n2,400,0.02\n3,30", encoding="utf-8")  # live: row 3 half-written
    d = rp.read_progress_csv(p)
    assert d["merge"][:2] == [1, 2] and d["pair_count"][:2] == [500, 400] and d["elapsed_s"][:2] == [0.01, 0.02]
    assert len(d["merge"]) == 2
    q = tmp_path / "q.csv"
    q.write_text("elapsed_s,merge,pair_count\n0.5,1,9\n", encoding="utf-8")  # columns found by name
    assert rp.read_progress_csv(q) == {"merge": [1.0], "pair_count": [9.0], "elapsed_s": [0.5]}
    (tmp_path / "e.csv").write_text("merge,pair_count,elapsed_s\n", encoding="utf-8")
    with pytest.raises(ParameterError, match="no data rows"):
        rp.read_progress_csv(tmp_path / "e.csv")
    with pytest.raises(ParameterError, match="no such file"):
        rp.read_progress_csv(tmp_path / "missing.csv")


# ---- figures' numbers -----------------------------------------------------


def test_figures_present(rep: rp.Report) -> None:
    assert list(rep.figures) == ["pair_frequency", "compression", "token_length", "scripts", "lang_premium",
                                 "lang_bytes_per_token", "lang_fertility", "lang_vocab_share", "lang_change",
                                 "training_progress"]
    for f in rep.figures.values():
        d = f.to_dict()
        json.dumps(d)  # plain JSON values only
        assert d["title"] and d["description"] and d["panels"]


def test_pair_frequency_is_the_models_counts(rep: rp.Report, data: dict[str, Path]) -> None:
    tok = bpeforge.load(str(data["bytes"]))
    panel = rep.figures["pair_frequency"].panels[0]
    assert panel.yscale == "log"
    assert [s.label for s in panel.series] == ["bytes", "chars"]
    assert panel.series[0].y == tok.merge_counts
    assert panel.series[0].x == list(range(1, len(tok.merge_counts) + 1))


def test_compression_curve_exact_at_both_ends(rep: rp.Report, data: dict[str, Path]) -> None:
    tok = bpeforge.load(str(data["bytes"]))
    curve = rep.figures["compression"].data["curves"][0]
    lines = _sampled_lines(data, FAST["sample"])[: FAST["curve_lines"]]
    assert curve["lines"] == len(lines)
    # No merge, bytes scheme: one token per byte. All merges: the model itself.
    assert curve["merges"][0] == 0 and curve["tokens"][0] == sum(len(x.encode()) for x in lines)
    assert curve["merges"][-1] == len(tok.merges)
    assert curve["tokens"][-1] == sum(len(ids) for ids in tok.encode_batch(lines))
    assert all(a >= b for a, b in zip(curve["tokens"], curve["tokens"][1:])), "more merges, never more tokens"
    assert curve["vocab_size"][-1] == tok.vocab_size and len(curve["merges"]) >= 5


def _sampled_lines(data: dict[str, Path], k: int) -> list[str]:
    lines, _tags, _ = rp._sample_lines(data["corpus"], data["langs"], k, 0)
    return lines


def test_sample_is_seeded_uniform_and_aligned(data: dict[str, Path]) -> None:
    lines, tags, info = rp._sample_lines(data["corpus"], data["langs"], 500, 0)
    again, _, _ = rp._sample_lines(data["corpus_xz"], data["langs"], 500, 0)
    assert lines == again and info["sampled_lines"] == 500 and info["lines"] == N_LINES
    other, _, _ = rp._sample_lines(data["corpus"], data["langs"], 500, 1)
    assert other != lines
    head = _head(CORPUS, N_LINES)
    pairs = dict(zip(head, _head(LANGS, N_LINES)))  # the corpus has no duplicate lines
    assert all(pairs[line] == tag for line, tag in zip(lines, tags))  # tags travel with their lines
    everything, _, _ = rp._sample_lines(data["corpus"], None, 0, 0)
    assert everything == [x for x in head if x]  # sample=0: every non-empty line, in order


def _language_sample(data: dict[str, Path]) -> tuple[list[str], list[str]]:
    s = rp._sample_corpus(data["corpus"], data["langs"], FAST["sample"], 0, per_language=FAST["per_language"])
    return s.lang_lines, s.lang_tags


def test_language_numbers_match_a_direct_count(rep: rp.Report, data: dict[str, Path]) -> None:
    lines, tags = _language_sample(data)
    tok = bpeforge.load(str(data["bytes"]))
    rows = {r["lang"]: r for r in rep.languages}
    assert sum(r["lines"] for r in rows.values()) == len(lines)
    for lang in ("en", "de", "zh"):
        mine = [x for x, t in zip(lines, tags) if t == lang]
        enc = tok.encode_batch(mine)
        ntok = sum(len(e) for e in enc)
        r = rows[lang]["models"]["bytes"]
        assert r["tokens"] == ntok
        assert r["bytes_per_token"] == pytest.approx(sum(len(x.encode()) for x in mine) / ntok, abs=1e-4)
        assert r["tokens_per_word"] == pytest.approx(ntok / sum(len(x.split()) for x in mine), abs=1e-4)
        assert r["vocab_used"] == pytest.approx(len({i for e in enc for i in e}) / tok.vocab_size, abs=1e-6)
    assert rows["zh"]["no_spaces"] and not rows["en"]["no_spaces"] and rows["zh"]["script"] == "Han"
    # "main user" gives each id used in the language sample to exactly one language
    owned = sum(r["models"]["bytes"]["vocab_main_user"] for r in rows.values())
    used = {i for e in tok.encode_batch(lines) for i in e}
    assert owned == pytest.approx(len(used) / tok.vocab_size, abs=1e-3)
    fert = rep.figures["lang_fertility"]
    assert fert.panels[0].hatched is not None and any(fert.panels[0].hatched) and fert.notes
    assert len(fert.panels[0].categories) == FAST["top_langs"]


def test_language_change_is_the_token_ratio(rep: rp.Report) -> None:
    rows = {r["lang"]: r for r in rep.languages}
    fig = rep.figures["lang_change"]
    a, b = (m["label"] for m in rep.models)
    data = fig.data
    assert data["reference"] == rep.corpus["premium"]["reference"]
    assert {d["lang"] for d in data["languages"]} == {l for l, r in rows.items() if r["lines"] >= rp.CHANGE_MIN_LINES}
    for d in data["languages"]:
        r = rows[d["lang"]]["models"]
        assert d["token_change"] == pytest.approx(r[a]["tokens"] / r[b]["tokens"] - 1, abs=1e-4)
        assert d["premium"] == {a: r[a]["premium"], b: r[b]["premium"]}


def test_language_change_shows_the_largest_changes_both_ways(rep: rp.Report) -> None:
    """The panels show the languages whose tokens fell most and rose most
    (and the largest ones), whatever their size or script."""
    fig = rep.figures["lang_change"]
    changes = {d["lang"]: d["token_change"] for d in fig.data["languages"]}
    fell, rose, largest = fig.panels
    k = FAST["top_langs"] // 2

    def shown(panel: rp.Panel) -> list[str]:
        return [c.split(" ")[0] for c in panel.categories or []]

    want_fell = sorted((l for l, c in changes.items() if c < 0), key=lambda l: changes[l])[:k]
    want_rose = sorted((l for l, c in changes.items() if c > 0), key=lambda l: -changes[l])[:k]
    assert want_fell or want_rose
    for panel, want in ((fell, want_fell), (rose, want_rose)):
        assert shown(panel) == want
        if want:
            assert list(panel.series[0].y) == [changes[l] for l in want]
        else:  # nothing moved that way: the panel says so
            assert not panel.series and panel.to_dict()["empty"].startswith("no language needs")
    rows = {r["lang"]: r for r in rep.languages}
    assert shown(largest) == sorted(changes, key=lambda l: (-rows[l]["corpus_lines"], l))[:k]
    # Each label carries the language's premium under both models (the trainer's measure).
    a, b = (m["label"] for m in rep.models)
    panel, lang = (fell, want_fell[0]) if want_fell else (rose, want_rose[0])
    r = rows[lang]["models"]
    assert panel.categories[0] == f"{lang} ({r[b]['premium']:.2f}\u2192{r[a]['premium']:.2f})"


def test_language_change_of_a_parity_model_shows_the_lifted_languages(data: dict[str, Path]) -> None:
    """Parity against plain training: the languages parity lifted are among
    those whose tokens fell most, in the figure and first in the table."""
    kw = dict(vocab_size=1200, progress=False, threads=2)
    plain = bpeforge.train([str(data["corpus"])], **kw)
    parity = bpeforge.train([str(data["corpus"])], langs=str(data["langs"]), max_premium=1.2, balance_min_lines=40,
                            **kw)
    r = rp.build_report(parity, data["corpus"], langs=data["langs"], compare=plain, labels=["parity", "plain"],
                        sample=200, curve_lines=50, curve_points=2, per_language=0, top_langs=12)
    weights = parity.metadata["language_balance"]["languages"]
    lifted = sorted((l for l, v in weights.items() if v["weight"] > 1), key=lambda l: -weights[l]["weight"])
    assert lifted
    fell = [c.split(" ")[0] for c in r.figures["lang_change"].panels[0].categories]
    assert lifted[0] in fell
    changes = {d["lang"]: d["token_change"] for d in r.figures["lang_change"].data["languages"]}
    assert changes[lifted[0]] < 0


def test_language_sample_is_stratified(data: dict[str, Path]) -> None:
    """Up to per_language lines of every language, each from that language,
    seeded; a language with fewer lines is measured on all of them."""
    k = 25
    s = rp._sample_corpus(data["corpus"], data["langs"], 500, 0, per_language=k)
    head, tags = _head(CORPUS, N_LINES), _head(LANGS, N_LINES)
    corpus_lines: dict[str, list[str]] = {}
    for line, tag in zip(head, tags):
        if line:
            corpus_lines.setdefault(tag.strip() or "und", []).append(line)
    assert s.corpus_lines == {lang: len(v) for lang, v in corpus_lines.items()}
    assert s.corpus_bytes == {lang: sum(len(x.encode()) for x in v) for lang, v in corpus_lines.items()}
    got: dict[str, list[str]] = {}
    for line, tag in zip(s.lang_lines, s.lang_tags):
        got.setdefault(tag, []).append(line)
    assert set(got) == set(corpus_lines)
    for lang, mine in got.items():
        assert len(mine) == min(k, len(corpus_lines[lang])), lang
        assert set(mine) <= set(corpus_lines[lang]), lang
    small = [lang for lang, v in corpus_lines.items() if k <= len(v) < 100]
    assert small, "the slice has languages of a few dozen lines"
    # A uniform sample of 500 would measure them on a handful of lines each.
    uniform = rp._sample_lines(data["corpus"], data["langs"], 500, 0)[1]
    assert sum(uniform.count(lang) for lang in small) < len(small) * k / 2
    # Seeded: the same sample again, another with another seed; the uniform part is as before.
    again = rp._sample_corpus(data["corpus_xz"], data["langs"], 500, 0, per_language=k)
    assert again.lang_lines == s.lang_lines and again.lines == s.lines == rp._sample_lines(data["corpus"], data["langs"], 500, 0)[0]
    assert rp._sample_corpus(data["corpus"], data["langs"], 500, 1, per_language=k).lang_lines != s.lang_lines
    every = rp._sample_corpus(data["corpus"], data["langs"], 500, 0, per_language=0)
    assert sorted(every.lang_lines) == sorted(x for x in head if x)


def test_report_rows_count_the_language_sample(rep: rp.Report, data: dict[str, Path]) -> None:
    rows = {r["lang"]: r for r in rep.languages}
    s = rp._sample_corpus(data["corpus"], data["langs"], FAST["sample"], 0, per_language=FAST["per_language"])
    assert {lang: r["corpus_lines"] for lang, r in rows.items()} == s.corpus_lines
    for lang, r in rows.items():
        assert r["lines"] == min(FAST["per_language"], r["corpus_lines"]), lang
    assert [r["lang"] for r in rep.languages] == sorted(rows, key=lambda l: (-rows[l]["corpus_lines"], l))
    assert rep.corpus["per_language"] == FAST["per_language"]
    assert rep.corpus["language_sample_lines"] == sum(r["lines"] for r in rows.values())


def test_language_premium_is_units_per_token_against_the_reference(rep: rp.Report, data: dict[str, Path]) -> None:
    """The premium is the trainer's: the reference's text units per token over
    the language's own (text units written out in test_balance), not bytes
    per token, which makes scripts of 3-byte letters look cheap."""
    from test_balance import _char_units

    lines, tags = _language_sample(data)
    tok = bpeforge.load(str(data["bytes"]))
    units: dict[str, int] = {}
    tokens: dict[str, int] = {}
    for line, tag, ids in zip(lines, tags, tok.encode_batch(lines)):
        units[tag] = units.get(tag, 0) + sum(_char_units(c) for c in line)
        tokens[tag] = tokens.get(tag, 0) + len(ids)
    ref = rep.corpus["premium"]["reference"]
    corpus_bytes = rp._sample_corpus(data["corpus"], data["langs"], 10, 0).corpus_bytes
    assert ref == max(corpus_bytes, key=corpus_bytes.get) == "en"  # no parity model: the most bytes
    rows = {r["lang"]: r for r in rep.languages}
    for lang in rows:
        want = (units[ref] / tokens[ref]) / (units[lang] / tokens[lang])
        assert rows[lang]["models"]["bytes"]["premium"] == pytest.approx(want, abs=1e-4), lang
        assert rows[lang]["models"]["bytes"]["units_per_token"] == pytest.approx(units[lang] / tokens[lang], abs=1e-4)
    # Khmer (3 bytes a letter) costs more tokens than English for the same text, though
    # its bytes per token is the higher one.
    km, en = rows["km"]["models"]["bytes"], rows["en"]["models"]["bytes"]
    assert km["premium"] > 1.0 and km["bytes_per_token"] > en["bytes_per_token"]
    fig = rep.figures["lang_premium"]
    costly, largest = fig.panels
    for panel in (costly, largest):
        assert panel.series[0].y == [rows[c.rstrip("\u2020")]["models"]["bytes"]["premium"] for c in panel.categories]
    # The costliest: the highest premium under either model, of the languages measured on enough lines.
    enough = [l for l, r in rows.items() if r["lines"] >= rp.CHANGE_MIN_LINES and l != ref]
    worst = sorted(enough, key=lambda l: (-max(m["premium"] for m in rows[l]["models"].values()), l))
    assert [c.rstrip("\u2020") for c in costly.categories] == worst[: FAST["top_langs"]]


def test_premium_reference_can_be_named(data: dict[str, Path]) -> None:
    r = rp.build_report(data["bytes"], data["corpus"], langs=data["langs"], premium_reference="de", sample=200,
                        curve_lines=50, curve_points=2, per_language=30)
    rows = {x["lang"]: x for x in r.languages}
    assert r.corpus["premium"]["reference"] == "de" and rows["de"]["models"]["bytes"]["premium"] == 1.0
    with pytest.raises(ParameterError, match="premium_reference.*xx"):
        rp.build_report(data["bytes"], data["corpus"], langs=data["langs"], premium_reference="xx", sample=50,
                        curve_lines=20, curve_points=2, per_language=10)


def test_the_hatching_key_is_only_where_bars_are_hatched(rep: rp.Report, data: dict[str, Path]) -> None:
    """Only the fertility figure hatches bars: only its key speaks of hatching;
    a report with no language written without spaces has no key at all."""
    for fid, fig in rep.figures.items():
        hatched = any(p.hatched and any(p.hatched) for p in fig.panels)
        text = " ".join([fig.caption, *fig.notes])
        assert ("hatched" in text) == hatched, fid
    spaced = [(x, t) for x, t in zip(_head(CORPUS, N_LINES), _head(LANGS, N_LINES)) if t in ("en", "de", "fr")]
    r = rp.build_report(data["bytes"], [x for x, _ in spaced], langs=[t for _, t in spaced], sample=0,
                        curve_lines=20, curve_points=2)
    for fid, fig in r.figures.items():
        assert "\u2020" not in " ".join([fig.caption, *fig.notes]), fid
    assert "\u2020" not in rp.html_page(r, pngs={})


def test_models_table_names_the_balancing(data: dict[str, Path], tmp_path: Path) -> None:
    parity = bpeforge.train([str(data["corpus"])], vocab_size=900, langs=str(data["langs"]), max_premium=1.5,
                            balance_min_lines=50, progress=False)
    warm = bpeforge.train([str(data["corpus"])], vocab_size=900, langs=str(data["langs"]), temperature=3.0,
                          progress=False)
    r = rp.build_report(parity, data["corpus"], langs=data["langs"], compare=warm, labels=["parity", "warm"],
                        sample=200, curve_lines=50, curve_points=2, per_language=30)
    lb = parity.metadata["language_balance"]
    p, t = (m["language_balance"] for m in r.models)
    assert p.startswith("parity, max_premium 1.5; reference en;")
    assert f"{len(lb['rounds'])} measuring round" in p and "10% of lines held apart" in p
    above = lb["rounds"][-1]["above_band"]
    assert above > 0 and f"({above} languages above max_premium when last measured)" in p
    assert "languages with 50+ lines balanced" in p and "max lift 16" in p and "starting from temperature 1" in p
    lifted = sum(1 for v in lb["languages"].values() if v["weight"] > 1)
    assert f"{lifted} language" in p and lifted > 0
    assert t == "temperature 3"
    page = rp.html_page(r, pngs={})
    assert "<th>language balancing</th>" in page and "parity, max_premium 1.5" in page
    assert "temperature 1.000" not in page
    plain = rp.build_report(data["bytes"], data["corpus"], sample=50, curve_lines=20, curve_points=2)
    assert plain.models[0]["language_balance"] == "none"


def test_languages_table_lists_every_language(rep: rp.Report) -> None:
    page = rp.html_page(rep, pngs={})
    table = page[page.index('<section id="languages">'):]
    table = table[: table.index("</section>")]
    assert len(rep.languages) > 60
    assert table.count("<tr><td>") == len(rep.languages)
    # Comparing two models, the largest changes in tokens come first.
    a, b = (m["label"] for m in rep.models)
    first = re.search(r"<tr><td>([^<†]+)", table).group(1)
    change = {r["lang"]: abs(r["models"][a]["tokens"] / r["models"][b]["tokens"] - 1) for r in rep.languages}
    assert change[first] == max(change.values())


def test_script_shares_sum_to_one(rep: rp.Report) -> None:
    for panel in rep.figures["scripts"].panels:
        for s in panel.series:
            assert sum(s.y) == pytest.approx(1.0, abs=1e-4)
    d = rep.figures["scripts"].data["bytes"]["vocabulary_entries"]
    assert d[rp.BYTES] >= 128 and d["Latin"] > 0  # byte tokens 0x80-0xff are partial UTF-8


def test_token_length_counts_every_ordinary_token(rep: rp.Report, data: dict[str, Path]) -> None:
    tok = bpeforge.load(str(data["bytes"]))
    by_bytes = rep.figures["token_length"].panels[0].series[0].y
    assert sum(by_bytes) == tok.vocab_size
    assert by_bytes[0] == 256  # the byte alphabet; every merge is 2 bytes or more
    chars_series = rep.figures["token_length"].panels[0].series[1]
    chars_tok = bpeforge.load(str(data["chars"]))
    assert sum(chars_series.y) == chars_tok.vocab_size - len(chars_tok.special_tokens)


def test_models_summary(rep: rp.Report) -> None:
    a, b = rep.models
    assert a["scheme"] == "bytes" and b["scheme"] == "chars" and "unk_rate" in b
    assert 1.0 < a["bytes_per_token"] < 10 and 0 < a["vocab_used_in_sample"] <= 1


def test_progress_figure_only_when_given(data: dict[str, Path]) -> None:
    r = rp.build_report(data["bytes"], data["corpus"], sample=300, curve_lines=100, curve_points=3)
    assert "training_progress" not in r.figures and "lang_fertility" not in r.figures
    assert list(r.figures) == ["pair_frequency", "compression", "token_length", "scripts"]


def test_in_memory_inputs_and_tokenizer_objects(tiny: rp.Report) -> None:
    r = tiny
    assert r.models[0]["label"] == "model" and r.corpus["sampled_lines"] == len(SMALL_CORPUS) * 3
    assert list(r.figures) == ["pair_frequency", "compression", "token_length", "scripts"]
    # special tokens: left out of the token lengths, their own script bucket
    assert rp.SPECIAL in r.figures["scripts"].data["model"]["vocabulary_entries"]
    assert sum(r.figures["token_length"].panels[0].series[0].y) == r.models[0]["vocab_size"] - 1
    tags = ["en" if i % 2 else "xx" for i in range(len(SMALL_CORPUS) * 3)]
    with_langs = rp.build_report(bpeforge.train_from_iterator(SMALL_CORPUS, vocab_size=280, progress=False),
                                 SMALL_CORPUS * 3, langs=tags, sample=0, curve_lines=20, curve_points=3)
    assert {row["lang"] for row in with_langs.languages} == {"en", "xx"}


def test_superbpe_curve_uses_stage1_pretokenizer(data: dict[str, Path]) -> None:
    sb = bpeforge.train([str(data["corpus"])], vocab_size=800, superbpe_transition=600, progress=False)
    r = rp.build_report(sb, data["corpus"], sample=400, curve_lines=200, curve_points=4)
    curve = r.figures["compression"].data["curves"][0]
    base = sb.vocab_size - len(sb.merges)
    assert curve["superbpe_transition"] == 600 - base and (600 - base) in curve["merges"]
    assert r.figures["pair_frequency"].panels[0].vlines


def test_compare_with_a_sentencepiece_model(data: dict[str, Path], tmp_path: Path) -> None:
    spm = pytest.importorskip("sentencepiece")
    spm.SentencePieceTrainer.train(input=str(data["corpus"]), model_prefix=str(tmp_path / "sp"), vocab_size=2500,
                                   model_type="bpe", character_coverage=0.999, num_threads=1, minloglevel=2)
    r = rp.build_report(data["bytes"], data["corpus"], compare=tmp_path / "sp.model", sample=300,
                        curve_lines=100, curve_points=3)
    assert r.models[1]["format"] == "sentencepiece" and r.models[1]["label"] == "sp"
    assert not any("normalizer" in n for n in r.notes)  # nmt_nfkc is imported and applied, not ignored
    assert len(r.figures["pair_frequency"].panels[0].series) == 1  # no pair counts in a SentencePiece model
    assert any("no pair counts" in n for n in r.figures["pair_frequency"].notes)


def test_compare_with_huggingface_and_tiktoken_files(data: dict[str, Path], tmp_path: Path) -> None:
    tok = bpeforge.load(str(data["bytes"]))
    (tmp_path / "hf").mkdir()
    tok.to_huggingface(tmp_path / "hf" / "tokenizer.json")
    for src, fmt in ((tmp_path / "hf" / "tokenizer.json", "huggingface"), (tmp_path / "hf", "huggingface")):
        t, info = rp.load_model(src)
        assert info["format"] == fmt and t.tokens() == tok.tokens()
    tok.to_tiktoken(tmp_path / "m.tiktoken")
    t, info = rp.load_model(tmp_path / "m.tiktoken")
    assert info["format"] == "tiktoken" and t.vocab_size == tok.vocab_size


# ---- errors -----------------------------------------------------------------


def test_misaligned_language_file(data: dict[str, Path], tmp_path: Path) -> None:
    short = tmp_path / "short.langs"
    short.write_text("en\nde\n", encoding="utf-8")
    with pytest.raises(ParameterError, match=r"has 2 lines but the corpus .* has 3000"):
        rp.build_report(data["bytes"], data["corpus"], langs=short, sample=10)


def test_bad_parameters(data: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match="curve_points"):
        rp.build_report(data["bytes"], data["corpus"], curve_points=1)
    with pytest.raises(ParameterError, match="no such file"):
        rp.build_report(tmp_path / "nope.json", data["corpus"])
    with pytest.raises(ParameterError, match="no non-empty line"):
        rp.build_report(data["bytes"], ["", ""])
    (tmp_path / "junk.json").write_text('{"hello": 1}', encoding="utf-8")
    with pytest.raises(bpeforge.ModelFormatError):
        rp.load_model(tmp_path / "junk.json")


# ---- files ------------------------------------------------------------------


def test_write_files_and_page(rep: rp.Report, written: tuple[Path, dict[str, str]]) -> None:
    out, files = written
    names = sorted(os.listdir(out))
    assert names == sorted(files)
    for fid, fig in rep.figures.items():
        png = (out / f"{fid}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
        assert json.loads((out / f"{fid}.json").read_text(encoding="utf-8"))["id"] == fid
    full = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert [f["id"] for f in full["figures"]] == list(rep.figures) and full["format"] == "bpeforge-report"
    page = (out / "index.html").read_text(encoding="utf-8")
    imgs = re.findall(r'<img src="([^"]*)"', page)
    assert len(imgs) == len(rep.figures) and all(s.startswith("data:image/png;base64,") for s in imgs)
    assert "<script" not in page and "<link rel=\"stylesheet\"" not in page
    assert not re.search(r'(src|href)="(https?:)?//', page), "no external resources"
    assert not [n for n in os.listdir(out.parent) if n.startswith(".")], "temporary directories are removed"


def test_write_replaces_a_report_but_not_other_directories(tiny: rp.Report, tmp_path: Path) -> None:
    rep = tiny
    out = tmp_path / "rep"
    rp.write_directory(rep, out)
    (out / "stale.png").write_bytes(b"x")
    rp.write_directory(rep, out)  # an earlier report: replaced whole
    assert not (out / "stale.png").exists() and (out / "index.html").exists()
    other = tmp_path / "precious"
    other.mkdir()
    (other / "thesis.tex").write_text("keep", encoding="utf-8")
    with pytest.raises(OutputError, match="refusing"):
        rp.write_directory(rep, other)
    assert os.listdir(other) == ["thesis.tex"]
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".")]


# ---- command line ---------------------------------------------------------


def _cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bpeforge", "report", *args], capture_output=True, text=True,
                          encoding="utf-8", timeout=timeout)


def test_cli_report(data: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "cli"
    proc = _cli("--model", str(data["bytes"]), "--input", str(data["corpus_xz"]), "--langs", str(data["langs"]),
                "--compare", str(data["chars"]), "--compare-label", "chars ws", "--progress-csv", str(data["csv"]),
                "--output", str(out), "--sample", "800", "--curve-lines", "200", "--curve-points", "4",
                "--top-langs", "8")
    assert proc.returncode == 0, proc.stderr
    assert "wrote" in proc.stderr and "index.html" in proc.stderr
    full = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert [m["label"] for m in full["models"]] == ["bytes", "chars ws"]
    assert len(full["figures"]) == 10 and full["corpus"]["sampled_lines"] == 800


def test_cli_errors_are_one_line(data: dict[str, Path], tmp_path: Path) -> None:
    bad = tmp_path / "bad.langs"
    bad.write_text("en\n", encoding="utf-8")
    proc = _cli("-m", str(data["bytes"]), "-i", str(data["corpus"]), "--langs", str(bad), "-o", str(tmp_path / "o"))
    assert proc.returncode == 1
    assert proc.stderr.startswith("bpeforge: error: ") and "line-aligned" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "o").exists()
    proc = _cli("-m", str(data["bytes"]), "-i", str(data["corpus"]), "-o", str(tmp_path / "o"), "--progress-csv",
                str(tmp_path / "none.csv"), "--sample", "50", "--curve-lines", "20", "--curve-points", "2")
    assert proc.returncode == 1 and "none.csv" in proc.stderr and "Traceback" not in proc.stderr


def _unread_fifo(path: Path) -> Path:
    """A named pipe nobody writes to: reading it would block, so a command
    that returns promptly has not read it."""
    os.mkfifo(path)
    return path


@contextlib.contextmanager
def _within(seconds: int) -> Iterator[None]:
    """Fail the block (a TimeoutError) if it blocks longer than ``seconds``,
    as opening a pipe nobody writes to does."""
    def expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"still running after {seconds} s: the input was read")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_cli_refuses_the_output_before_reading_any_input(data: dict[str, Path], tmp_path: Path) -> None:
    corpus = _unread_fifo(tmp_path / "corpus.fifo")
    taken = tmp_path / "taken.txt"
    taken.write_text("keep", encoding="utf-8")
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep", encoding="utf-8")
    for out in (taken, precious):
        proc = _cli("-m", str(data["bytes"]), "-i", str(corpus), "--langs", str(data["langs"]), "-o", str(out),
                    timeout=60)
        assert proc.returncode == 1 and proc.stderr.startswith("bpeforge: error: "), proc.stderr
        assert str(out) in proc.stderr and "Traceback" not in proc.stderr
    assert taken.read_text(encoding="utf-8") == "keep" and os.listdir(precious) == ["notes.txt"]
    with _within(30), pytest.raises(OutputError, match="not a directory"):
        rp.write_report(taken, data["bytes"], corpus)


def test_missing_inputs_are_refused_before_the_corpus_is_read(data: dict[str, Path], tmp_path: Path) -> None:
    corpus = _unread_fifo(tmp_path / "corpus.fifo")
    missing = tmp_path / "missing"
    for kw, name in ((dict(parallel=missing), "parallel set"), (dict(langs=missing), "language file"),
                     (dict(compare=missing), "model (compare)")):
        with _within(30), pytest.raises(ParameterError, match=f"{re.escape(name)} .*missing: no such file"):
            rp.build_report(data["bytes"], corpus, **kw)
    with _within(30), pytest.raises(ParameterError, match="language file .* is a directory"):
        rp.build_report(data["bytes"], corpus, langs=tmp_path)
    proc = _cli("-m", str(data["bytes"]), "-i", str(corpus), "--parallel", str(missing), "-o", str(tmp_path / "o"),
                timeout=60)
    assert proc.returncode == 1 and "parallel set" in proc.stderr and "missing" in proc.stderr, proc.stderr
    assert not (tmp_path / "o").exists()


# ---- the page in a real browser ---------------------------------------------

PROBE = """<script>
window.addEventListener('error', function (e) {
  document.documentElement.setAttribute('data-js-error', String(e.message));
}, true);
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
  document.body.setAttribute('data-imgs-total', String(imgs.length));
  document.body.setAttribute('data-imgs-ok', String(ok));
  document.body.setAttribute('data-page-height', String(document.documentElement.scrollHeight));
});
</script>"""


_chromium = find_chromium
_console_errors = console_errors


def _browse(browser: str, page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return browse(browser, page.as_uri(), profile, *extra)


def _probe(browser: str, html_path: Path, tmp_path: Path) -> tuple[dict[str, str], list[str]]:
    probe = tmp_path / f"probe-{html_path.parent.name}.html"
    text = html_path.read_text(encoding="utf-8")
    probe.write_text(text.replace("<head>", "<head>" + PROBE, 1), encoding="utf-8")
    proc = _browse(browser, probe, tmp_path / "profile", "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    attrs = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', proc.stdout))
    return attrs, _console_errors(proc.stderr)


def test_page_in_headless_chromium(rep: rp.Report, written: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    browser = _chromium()
    if browser is None:
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium); the page is not browser-tested")
    out, _files = written

    # The probe must see failures, or its passing means nothing: a broken image and a script error.
    bad = tmp_path / "bad" / "index.html"
    bad.parent.mkdir()
    bad.write_text('<!DOCTYPE html><html><head><meta charset="utf-8"><title>bad</title></head><body>'
                   '<img src="data:image/png;base64,AAAA"><script>null.x;</script></body></html>', encoding="utf-8")
    attrs, errors = _probe(browser, bad, tmp_path)
    assert attrs.get("imgs-ok") == "0" and attrs.get("imgs-total") == "1" and "js-error" in attrs and errors

    attrs, errors = _probe(browser, out / "index.html", tmp_path)
    assert attrs.get("imgs-total") == str(len(rep.figures)), attrs
    assert attrs.get("imgs-ok") == attrs.get("imgs-total"), f"images that did not load: {attrs}"
    assert "js-error" not in attrs and not errors, errors
    assert int(attrs["page-height"]) > 3000  # the figures are laid out, not collapsed

    shot = tmp_path / "screenshot.png"
    proc = _browse(browser, out / "index.html", tmp_path / "profile", "--hide-scrollbars", "--window-size=1280,2400",
                   f"--screenshot={shot}")
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    assert not _console_errors(proc.stderr)
    from PIL import Image

    with Image.open(shot) as im:
        assert im.size == (1280, 2400)
        small = np.asarray(im.convert("L").resize((64, 120)))
        assert np.unique(small).size > 20, "the screenshot is blank"
    keep = os.environ.get("BPEFORGE_REPORT_SCREENSHOT")
    if keep:
        shutil.copyfile(shot, keep)


def test_language_pngs_read_without_the_page(rep: rp.Report) -> None:
    """The † marks and the sign of lang_change are explained inside the PNGs
    (a caption drawn under the panels), not only in the HTML."""
    from matplotlib.text import Text

    def drawn(fig_id: str) -> str:
        return " ".join(t.get_text() for t in rp.render(rep.figures[fig_id], dpi=40).findobj(Text))

    marked = [f for f in ("lang_bytes_per_token", "lang_fertility", "lang_vocab_share")
              if any("†" in c for p in rep.figures[f].panels for c in (p.categories or []))]
    assert marked, "the sample has languages written without spaces (zh, ja): some category carries †"
    for fig_id in marked:
        assert "† written without spaces" in drawn(fig_id), fig_id
    change = " ".join(drawn("lang_change").split())
    assert "fewer (below 0) tokens" in change and "premium" in change
    assert rep.figures["lang_change"].to_dict()["caption"]
