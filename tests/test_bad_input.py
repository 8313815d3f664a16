"""Bad input never crashes and never loses data: clear errors that name the
file, line or parameter; outputs are atomic."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os

import pytest

import bpeforge
from bpeforge import InputError, ModelFormatError, OutputError, ParameterError, TrainingError


def write(path, text: str | bytes) -> str:
    data = text.encode("utf-8") if isinstance(text, str) else text
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


def test_missing_file_names_it(tmp_path) -> None:
    missing = tmp_path / "nope.txt"
    with pytest.raises(InputError, match="nope.txt.*no such file"):
        bpeforge.train(missing, vocab_size=300, progress=False)


def test_directory_instead_of_file(tmp_path) -> None:
    with pytest.raises(InputError, match="directory"):
        bpeforge.train(tmp_path, vocab_size=300, progress=False)


def test_empty_corpus(tmp_path) -> None:
    p = write(tmp_path / "empty.txt", "")
    with pytest.raises(TrainingError, match="no text"):
        bpeforge.train(p, vocab_size=300, progress=False)
    p2 = write(tmp_path / "blank.txt", "\n\n\n")
    with pytest.raises(TrainingError, match="no text"):
        bpeforge.train(p2, vocab_size=300, progress=False)
    with pytest.raises(TrainingError):
        bpeforge.train_from_iterator([], vocab_size=300, progress=False)


def test_vocab_size_below_alphabet(tmp_path) -> None:
    p = write(tmp_path / "c.txt", "hello world\n")
    with pytest.raises(ParameterError, match=r"vocab_size 100 is below.*256"):
        bpeforge.train(p, vocab_size=100, progress=False)
    with pytest.raises(ParameterError, match="vocab_size"):
        bpeforge.train(p, vocab_size=0, progress=False)
    with pytest.raises(ParameterError, match="vocab_size"):
        bpeforge.train(p, vocab_size=257, special_tokens=["<a>", "<b>"], progress=False)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"scheme": "words"}, "scheme"),
        ({"pretokenizer": "(unclosed"}, "regex"),
        ({"threads": 0}, "threads"),
        ({"min_frequency": -1}, "min_frequency"),
        ({"max_token_length": 0}, "max_token_length"),
        ({"special_tokens": ["<s>", "<s>"]}, "twice"),
        ({"special_tokens": [""]}, "empty"),
        ({"special_tokens": "<s>"}, "list"),
        ({"scheme": "chars", "character_coverage": 0.0}, "character_coverage"),
        ({"progress": "loud"}, "progress"),
    ],
)
def test_bad_parameters_are_named(tmp_path, kwargs, match) -> None:
    p = write(tmp_path / "c.txt", "hello world\n")
    with pytest.raises(ParameterError, match=match):
        bpeforge.train(p, vocab_size=300, **{"progress": False, **kwargs})


def test_invalid_utf8_chars_scheme_names_file_and_line(tmp_path) -> None:
    p = write(tmp_path / "bad.txt", b"fine line\nalso fine\nbroken \xff\xfe here\n")
    with pytest.raises(InputError, match=r"bad\.txt, line 3: invalid UTF-8"):
        bpeforge.train(p, vocab_size=300, scheme="chars", progress=False)


def test_invalid_utf8_bytes_scheme_is_kept(tmp_path) -> None:
    """Policy (docs/SEMANTICS.md §4): invalid bytes are their own pieces, never dropped."""
    p = write(tmp_path / "bad.txt", b"ab \xff\xfe ab \xff\xfe ab\n" * 10)
    tok = bpeforge.train(p, vocab_size=270, progress=False, min_frequency=1)
    assert any(b"\xff" in a + b for a, b in tok.merges)


def test_truncated_compressed_input_is_named(tmp_path) -> None:
    data = ("some text line\n" * 20000).encode()
    for name, comp in (("t.txt.gz", gzip.compress), ("t.txt.xz", lzma.compress), ("t.txt.bz2", bz2.compress)):
        blob = comp(data)
        p = write(tmp_path / name, blob[: len(blob) // 2])
        with pytest.raises(InputError, match=name.replace(".", r"\.")):
            bpeforge.train(p, vocab_size=300, progress=False)


def test_compressed_inputs_equal_plain(tmp_path) -> None:
    text = "".join(f"line {i} with some words and more words {i % 7}\n" for i in range(3000))
    plain = bpeforge.train(write(tmp_path / "p.txt", text), vocab_size=320, progress=False)
    for name, comp in (("c.gz", gzip.compress), ("c.xz", lzma.compress), ("c.bz2", bz2.compress)):
        t = bpeforge.train(write(tmp_path / name, comp(text.encode())), vocab_size=320, progress=False)
        assert t.merges == plain.merges, name
    zstd = pytest.importorskip("zstandard", reason="zstandard not installed to write a .zst file")
    t = bpeforge.train(write(tmp_path / "c.zst", zstd.ZstdCompressor().compress(text.encode())), vocab_size=320, progress=False)
    assert t.merges == plain.merges


def test_fifty_megabyte_single_line(tmp_path) -> None:
    words = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor "
    line = words * (50_000_000 // len(words) + 1)
    p = write(tmp_path / "long.txt", line + "\n")
    tok = bpeforge.train(p, vocab_size=300, progress=False, threads=2)
    assert tok.metadata["corpus"]["texts"] == 1
    assert tok.metadata["corpus"]["bytes"] == len(line)
    assert tok.decode(tok.encode(words)) == words


def test_pathological_repetition() -> None:
    text = "a" * 1_000_000
    tok = bpeforge.train_from_iterator([text], vocab_size=300, progress=False)
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    assert len(ids) < 1_000_000 // 1000


@pytest.mark.parametrize(
    "content, match",
    [
        (b"", "truncated"),
        (b"{", "truncated"),
        (b"not json at all", "not a valid bpeforge model"),
        (b'{"format": "something-else", "version": 1}', "format|missing"),
    ],
)
def test_corrupted_model_file(tmp_path, content, match) -> None:
    p = write(tmp_path / "m.json", content)
    with pytest.raises(ModelFormatError, match=match):
        bpeforge.load(p)


def test_tampered_model_is_refused(tmp_path) -> None:
    tok = bpeforge.train_from_iterator(["hello hello world world"] * 5, vocab_size=270, progress=False)
    good = tmp_path / "good.json"
    tok.save(good)
    text = good.read_text()
    cases = {
        "future id": text.replace('"merges": [\n    [', '"merges": [\n    [99999, 1], ['),
        "version": text.replace('"version": 1', '"version": 99'),
        "truncated": text[: len(text) // 2],
    }
    for label, bad in cases.items():
        p = tmp_path / f"{label}.json"
        p.write_text(bad)
        with pytest.raises(ModelFormatError):
            bpeforge.load(p)
    with pytest.raises(InputError, match="no such file"):
        bpeforge.load(tmp_path / "missing.json")


def test_huge_merge_claim_is_refused_quickly(tmp_path) -> None:
    import time

    p = tmp_path / "huge.json"
    p.write_text('{"format": "bpeforge-model", "version": 1, "scheme": {"type": "bytes"}, "pretokenizer": {"type": "gpt2"},'
                 ' "special_tokens": [], "alphabet": null, "merges": [[999999999, 999999999]], "merge_counts": []}')
    # CPU seconds, not wall: the limit catches work proportional to the claim
    # (a billion merges), and must not fail because the machine is busy.
    t = time.process_time()
    with pytest.raises(ModelFormatError, match="does not exist"):
        bpeforge.load(p)
    assert time.process_time() - t < 5


def test_unwritable_output_leaves_nothing(tmp_path) -> None:
    tok = bpeforge.train_from_iterator(["hello world"] * 5, vocab_size=260, progress=False)
    missing_dir = tmp_path / "no" / "such" / "dir" / "m.json"
    with pytest.raises(OutputError, match="does not exist"):
        tok.save(missing_dir)
    with pytest.raises(OutputError, match="directory"):
        tok.save(tmp_path)
    if os.geteuid() != 0:  # root ignores permission bits
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        try:
            with pytest.raises(OutputError):
                tok.save(ro / "m.json")
            assert list(ro.iterdir()) == []
        finally:
            ro.chmod(0o700)


def test_save_replaces_atomically(tmp_path) -> None:
    """Saving over a model replaces it whole and leaves no temporary files."""
    small = bpeforge.train_from_iterator(["hello world"] * 5, vocab_size=260, progress=False)
    path = tmp_path / "m.json"
    small.save(path)
    bigger = bpeforge.train_from_iterator(["hello world again"] * 5, vocab_size=265, progress=False)
    bigger.save(path)
    assert bpeforge.load(path).vocab_size == 265
    assert sorted(os.listdir(tmp_path)) == ["m.json"]


def test_iterator_items_must_be_str() -> None:
    with pytest.raises(TypeError, match="item 2"):
        bpeforge.train_from_iterator(["ok", b"bytes"], vocab_size=300, progress=False)
    with pytest.raises(ParameterError, match="single string"):
        bpeforge.train_from_iterator("just one string", vocab_size=300, progress=False)


def test_iterator_exception_propagates() -> None:
    def gen():
        yield "fine"
        raise RuntimeError("source broke")

    with pytest.raises(RuntimeError, match="source broke"):
        bpeforge.train_from_iterator(gen(), vocab_size=300, progress=False)
