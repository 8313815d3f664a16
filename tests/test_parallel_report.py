"""Premiums on parallel text (bpeforge.report.parallel) and the report's
``--parallel`` section, on a sample cut from the shared parallel-dev set
(tests/data/parallel-sample.tsv: 110 messages, 14 languages)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

import bpeforge
from bpeforge.errors import ParameterError
from conftest import shared_corpus
from bpeforge.report.parallel import (count_parallel, parallel_premiums, premium_markdown, premiums_from_counts,
                                      read_parallel)

DATA = Path(__file__).resolve().parent / "data"
SAMPLE = DATA / "parallel-sample.tsv"


def _rows() -> list[tuple[str, str, str]]:
    with open(SAMPLE, encoding="utf-8") as f:
        return [tuple(line.rstrip("\n").split("\t", 2)) for line in f if line.strip()]  # type: ignore[misc]


def _by_hand(count, rows, reference="en") -> dict[str, float]:
    """The premium, spelled out: per language, the sum over the messages it
    shares with the reference of its tokens, over the reference's."""
    text = {(k, lang): t for k, lang, t in rows}
    langs = sorted({lang for _, lang, _ in rows} - {reference})
    out = {}
    for lang in langs:
        keys = [k for k, lg, _ in rows if lg == lang and (k, reference) in text]
        own = sum(count([text[(k, lang)]])[0] for k in keys)
        ref = sum(count([text[(k, reference)]])[0] for k in keys)
        out[lang] = own / ref
    return out


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> bpeforge.Tokenizer:
    corpus = tmp_path_factory.mktemp("par") / "corpus.txt"
    corpus.write_text("\n".join(t for _, _, t in _rows()) + "\n", encoding="utf-8")
    return bpeforge.train(corpus, vocab_size=1500, progress=False)


def test_read_parallel_reads_every_line() -> None:
    rows = _rows()
    pset = read_parallel(SAMPLE)
    assert len(pset) == len(rows)
    assert set(pset.languages) >= {"en", "ta", "km", "dz", "hi", "zh"}
    k, lang, t = rows[5]
    assert pset.texts[lang][k] == t
    assert read_parallel(f"{k}\t{lang}\t{t}" for k, lang, t in rows).texts == pset.texts


def test_read_parallel_errors_name_the_line(tmp_path) -> None:
    bad = tmp_path / "p.tsv"
    bad.write_text("a\ten\tHello\nb\ten only two fields\n", encoding="utf-8")
    with pytest.raises(ParameterError, match=r"p\.tsv, line 2: expected key<TAB>language<TAB>text"):
        read_parallel(bad)
    bad.write_text("a\ten\tHello\na\ten\tAgain\n", encoding="utf-8")
    with pytest.raises(ParameterError, match=r"line 2: message 'a' in 'en' is given twice"):
        read_parallel(bad)
    with pytest.raises(ParameterError, match="no such file"):
        read_parallel(tmp_path / "missing.tsv")
    with pytest.raises(ParameterError, match="reference language 'xx'"):
        parallel_premiums(lambda ts: [1] * len(ts), read_parallel(SAMPLE), reference="xx")


def test_premiums_equal_the_definition_with_a_word_counter() -> None:
    def words(texts):
        return [len(t.split()) for t in texts]

    table = parallel_premiums(words, read_parallel(SAMPLE))
    want = _by_hand(words, _rows())
    assert set(table.premiums()) == set(want)
    for lang, p in table.premiums().items():
        assert p == pytest.approx(want[lang], rel=1e-12), lang
    # Chinese and Japanese are written without spaces: far fewer "words" than English.
    assert table.premiums()["zh"] < 0.5


def test_premiums_of_a_bpeforge_model(model) -> None:
    def count(texts):
        return [len(x) for x in model.encode_batch(texts)]

    pset = read_parallel(SAMPLE)
    table = parallel_premiums(count, pset)
    want = _by_hand(lambda ts: [len(model.encode(t)) for t in ts], _rows())
    for lang, p in table.premiums().items():
        assert p == pytest.approx(want[lang], rel=1e-12), lang
    assert table.reference_tokens == sum(len(model.encode(t)) for t in pset.texts["en"].values())
    # Summary: the worst decile is the mean of the top ceil(n/10) premiums.
    s = table.summary()
    vals = sorted(table.premiums().values(), reverse=True)
    k = math.ceil(len(vals) / 10)
    assert s["worst_decile"] == pytest.approx(sum(vals[:k]) / k)
    assert s["highest"][0] == (max(table.premiums(), key=table.premiums().get), vals[0])
    assert table.summary(seen={"de", "fr"})["languages"] == 2
    # One source at a time (keys), from the same counts.
    counts = count_parallel(count, pset)
    gnome = premiums_from_counts(counts, keys=lambda key: key.startswith("gnome:"))
    assert "km" not in gnome.languages and "ta" in gnome.languages  # km/dz are in LibreOffice keys only
    md = premium_markdown({"m": table})
    assert md.splitlines()[0].startswith("| language | messages | premium, m |")


def test_report_shows_parallel_premiums(model, tmp_path) -> None:
    from bpeforge.report import build_report

    lines = [t for _, _, t in _rows()]
    rep = build_report(model, lines, parallel=SAMPLE, sample=200, curve_lines=50, curve_points=2, labels=["m"])
    fig = rep.figures["parallel_premium"]
    d = fig.to_dict()
    assert d["panels"][0]["categories"][0] == rep.parallel[0]["lang"]
    prem = {r["lang"]: r["models"]["m"]["premium"] for r in rep.parallel}
    want = _by_hand(lambda ts: [len(model.encode(t)) for t in ts], _rows())
    for lang, p in prem.items():
        assert p == pytest.approx(want[lang], abs=1e-4), lang
    assert list(prem.values()) == sorted(prem.values(), reverse=True)
    files = rep.write(tmp_path / "rep")
    html = Path(files["index.html"]).read_text(encoding="utf-8")
    assert "Parallel premiums table" in html and "parallel_premium.png" in html
    full = json.loads((tmp_path / "rep" / "report.json").read_text(encoding="utf-8"))
    assert full["parallel"] == json.loads(json.dumps(rep.parallel))


def test_cli_report_parallel(model, tmp_path) -> None:
    mpath = tmp_path / "m.json"
    model.save(mpath)
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(t for _, _, t in _rows()) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "bpeforge", "report", "-m", str(mpath), "-i", str(corpus),
                           "-o", str(out), "--parallel", str(SAMPLE), "--sample", "100", "--curve-lines", "20",
                           "--curve-points", "2"], capture_output=True, text=True, encoding="utf-8", timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "parallel premiums:" in proc.stderr and "worst decile" in proc.stderr
    assert (out / "parallel_premium.png").stat().st_size > 1000
    proc = subprocess.run([sys.executable, "-m", "bpeforge", "report", "-m", str(mpath), "-i", str(corpus),
                           "-o", str(tmp_path / "o2"), "--parallel", str(SAMPLE), "--parallel-reference", "xx"],
                          capture_output=True, text=True, encoding="utf-8", timeout=300)
    assert proc.returncode == 1 and "reference language 'xx'" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_parallel_dev_premiums_of_the_default_are_fair_to_marked_scripts(tmp_path) -> None:
    """On the whole parallel-dev set: a model with the default pre-tokenizer
    costs the scripts whose vowels are marks less than one with gpt2's."""
    pset = read_parallel(shared_corpus("parallel-dev.tsv.xz"))
    corpus = tmp_path / "c.txt"
    per_lang = defaultdict(list)
    for lang, by_key in pset.texts.items():
        per_lang[lang] = list(by_key.values())[::2]
    corpus.write_text("\n".join(t for ts in per_lang.values() for t in ts) + "\n", encoding="utf-8")
    worst = {}
    for pre in ("gpt2", bpeforge.TrainOptions().pretokenizer):
        tok = bpeforge.train(corpus, vocab_size=16000, pretokenizer=pre, progress=False)
        table = parallel_premiums(lambda ts: [len(x) for x in tok.encode_batch(ts)], pset)
        worst[pre] = max(table.premiums()[lang] for lang in ("km", "dz", "hi"))
    assert worst["o200k"] < worst["gpt2"]
