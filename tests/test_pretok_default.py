"""The default pre-tokenizer keeps combining marks with their letters, in
every script; models keep the pre-tokenizer they were trained with."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import unicodedata

import pytest

import bpeforge
from bpeforge import _native
from bpeforge.options import DEFAULT_PRETOKENIZER, TrainOptions

from reference import DEFAULT_PRESET, reference_pretokenize

# Words whose vowels (or other parts) are combining marks (\p{M}).
MARKED = {
    "Devanagari": "हिन्दी भाषा में लिखा गया पाठ",
    "Tamil": "தமிழ் மொழியில் எழுதப்பட்ட உரை",
    "Khmer": "ភាសាខ្មែរ គឺជាភាសាកំណើត",
    "Tibetan": "རྫོང་ཁ་ནི་འབྲུག་གི་སྐད་ཡིག་ཨིན།",
}


def _split_marks(pieces: list[str]) -> list[str]:
    """Pieces that start with a combining mark: a mark cut from its letter."""
    return [p for p in pieces if p and unicodedata.category(p[0]).startswith("M")]


def test_default_is_spelled_once_and_followed_everywhere() -> None:
    assert DEFAULT_PRETOKENIZER == _native.DEFAULT_PRETOKENIZER == "o200k"
    assert TrainOptions().pretokenizer == DEFAULT_PRETOKENIZER
    assert DEFAULT_PRESET == DEFAULT_PRETOKENIZER  # the reference trainer's default mirrors it
    for fn in (bpeforge.train, bpeforge.train_from_iterator):
        assert inspect.signature(fn).parameters["pretokenizer"].default == DEFAULT_PRETOKENIZER, fn
    assert inspect.signature(bpeforge.pretokenize).parameters["preset"].default == DEFAULT_PRETOKENIZER
    text = "Hello world, हिन्दी 12345"
    assert _native.pretokenize(text) == bpeforge.pretokenize(text) == _native.pretokenize(text, DEFAULT_PRETOKENIZER)


@pytest.mark.parametrize("script", sorted(MARKED))
def test_default_keeps_marks_with_their_letters(script: str) -> None:
    text = MARKED[script]
    pieces = bpeforge.pretokenize(text)
    assert "".join(pieces) == text
    assert _split_marks(pieces) == [], pieces
    # No piece boundary falls inside a run of letters and marks (a word, or a
    # Tibetan syllable between tshegs): every such run is inside one piece.
    bounds, pos = set(), 0
    for p in pieces:
        pos += len(p)
        bounds.add(pos)
    inside_word = [i for i in range(1, len(text)) if i in bounds
                   and unicodedata.category(text[i - 1])[0] in "LM" and unicodedata.category(text[i])[0] in "LM"]
    assert inside_word == [], pieces
    # The published regex agrees with the engine's scanner.
    assert pieces == reference_pretokenize(text, DEFAULT_PRETOKENIZER)
    # gpt2's letter class leaves marks out: it cuts them apart (what the default fixes).
    assert _split_marks(bpeforge.pretokenize(text, "gpt2")), script


def test_a_model_trained_with_the_default_records_it(tmp_path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(MARKED.values()) * 30 + "\nplain English words here\n", encoding="utf-8")
    tok = bpeforge.train(corpus, vocab_size=300, progress=False)
    assert tok.pretokenizer == DEFAULT_PRETOKENIZER
    path = tmp_path / "m.json"
    tok.save(path)
    with open(path, encoding="utf-8") as f:
        assert json.load(f)["pretokenizer"] == {"type": DEFAULT_PRETOKENIZER}
    # Merges cross marks: some token holds a letter and a mark of Devanagari.
    texts = [t.decode("utf-8", "ignore") for t in tok.tokens()]
    assert any(len(t) >= 2 and any(unicodedata.category(c).startswith("M") for c in t[1:]) for t in texts)


def test_old_models_keep_their_pretokenizer(tmp_path) -> None:
    """A model file written under the old default (gpt2) loads as gpt2 and
    encodes exactly as before; a model file must name its pre-tokenizer."""
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(MARKED.values()) * 30 + "\nplain English words here\n", encoding="utf-8")
    old = bpeforge.train(corpus, vocab_size=300, pretokenizer="gpt2", progress=False)
    path = tmp_path / "old.json"
    old.save(path)
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    assert doc["pretokenizer"] == {"type": "gpt2"}
    loaded = bpeforge.load(path)
    assert loaded.pretokenizer == "gpt2"
    for text in MARKED.values():
        ids = loaded.encode(text)
        assert ids == old.encode(text)
        # No token crosses a gpt2 piece boundary (a mark starts a new piece):
        # every boundary is the end of a token.
        pieces = bpeforge.pretokenize(text, "gpt2")
        assert [loaded.decode(loaded.encode(p)) for p in pieces] == pieces
        bounds = {sum(len(p.encode()) for p in pieces[:i]) for i in range(len(pieces) + 1)}
        ends, pos = set(), 0
        for t in ids:
            pos += len(loaded.tokens()[t])
            ends.add(pos)
        assert pos == len(text.encode()) and bounds - {0} <= ends, sorted(bounds - ends)
    # A file without a pre-tokenizer is an error, never silently the new default.
    del doc["pretokenizer"]
    bad = tmp_path / "nopretok.json"
    bad.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(bpeforge.ModelFormatError, match="pretokenizer"):
        bpeforge.load(bad)


def test_cli_train_uses_the_default(tmp_path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(MARKED.values()) * 20 + "\n", encoding="utf-8")
    out = tmp_path / "m.json"
    r = subprocess.run([sys.executable, "-m", "bpeforge", "train", str(corpus), "--vocab-size", "300",
                        "--output", str(out), "--quiet"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert bpeforge.load(out).pretokenizer == DEFAULT_PRETOKENIZER
    assert os.path.getsize(out) > 0
