"""Language-balanced training (temperature reweighting) and the live progress CSV."""

from __future__ import annotations

import csv

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


def test_temperature_one_is_unbalanced(two_languages) -> None:
    corpus, langs, _, _ = two_languages
    plain = bpeforge.train(corpus, vocab_size=400, progress=False)
    t1 = bpeforge.train(corpus, vocab_size=400, langs=langs, temperature=1.0, progress=False)
    assert t1.merges == plain.merges and t1.merge_counts == plain.merge_counts
    meta = t1.metadata["language_balance"]
    assert meta["languages"]["en"]["lines"] == 3000 and meta["languages"]["el"]["lines"] == 60


def test_higher_temperature_helps_the_small_language(two_languages) -> None:
    corpus, langs, big, small = two_languages
    plain = bpeforge.train(corpus, vocab_size=400, progress=False)
    hot = bpeforge.train(corpus, vocab_size=400, langs=langs, temperature=5.0, progress=False)
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
    per_file = bpeforge.train([a, b], vocab_size=400, file_languages=["en", "el"], temperature=5.0, progress=False)
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
