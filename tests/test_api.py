"""The Python API's contract: shapes, ids, persistence, determinism, special tokens."""

from __future__ import annotations

import gzip
import json
import threading

import pytest

import bpeforge
from bpeforge import ModelFormatError, ParameterError, SpecialTokenError

TEXTS = [
    "the quick brown fox jumps over the lazy dog",
    "the lazy dog sleeps; the quick fox runs",
    "Привет мир, привет всем",
    "日本語のテキストと日本語の文",
    "emoji 😀😀 and more 😀",
] * 20


@pytest.fixture(scope="module")
def tok() -> bpeforge.Tokenizer:
    return bpeforge.train_from_iterator(TEXTS, vocab_size=400, special_tokens=["<s>", "</s>"], progress=False)


def test_ids_layout_and_sizes(tok: bpeforge.Tokenizer) -> None:
    assert tok.special_tokens == ["<s>", "</s>"]
    assert tok.token_to_id("<s>") == 0 and tok.token_to_id("</s>") == 1
    # base bytes follow the specials, in byte order
    assert [tok.id_to_token(2 + b) for b in (0, 65, 255)] == [b"\x00", b"A", b"\xff"]
    assert tok.vocab_size == 2 + 256 + len(tok.merges)
    assert len(tok.merges) == len(tok.merge_counts)
    assert all(isinstance(a, bytes) and isinstance(b, bytes) for a, b in tok.merges)
    # merge k creates id 258 + k whose bytes are left + right
    for k, (a, b) in enumerate(tok.merges[:50]):
        assert tok.id_to_token(258 + k) == a + b
        assert tok.token_to_id(a + b) == 258 + k
    assert tok.id_to_token(tok.vocab_size) is None
    assert tok.id_to_token(-1) is None
    assert tok.token_to_id(b"no such token in this vocabulary") is None


def test_merge_counts_do_not_increase(tok: bpeforge.Tokenizer) -> None:
    counts = tok.merge_counts
    assert all(c >= 2 for c in counts)
    assert counts == sorted(counts, reverse=True)


def test_vocab_size_is_reached_exactly() -> None:
    t = bpeforge.train_from_iterator(TEXTS, vocab_size=300, progress=False)
    assert t.vocab_size == 300


def test_min_frequency_stops_early() -> None:
    t = bpeforge.train_from_iterator(["abc abd"], vocab_size=1000, min_frequency=2, progress=False)
    # only (a,b) occurs twice (" a"+"b" also occurs once); everything else once
    assert t.merges == [(b"a", b"b")]
    assert t.metadata["stopped_early"] is True
    t1 = bpeforge.train_from_iterator(["abc abd"], vocab_size=1000, min_frequency=1, progress=False)
    assert len(t1.merges) > 1


def test_max_token_length() -> None:
    t = bpeforge.train_from_iterator(["aaaaaaaaaaaaaaaa"] * 5, vocab_size=300, max_token_length=4, min_frequency=1, progress=False)
    assert max(len(a) + len(b) for a, b in t.merges) <= 4
    assert t.decode(t.encode("aaaaaaaaaaaaaaaa")) == "aaaaaaaaaaaaaaaa"


def test_save_load_roundtrip(tok: bpeforge.Tokenizer, tmp_path) -> None:
    for name in ("m.json", "m.json.gz"):
        path = tmp_path / name
        tok.save(path)
        again = bpeforge.load(path)
        assert again.merges == tok.merges
        assert again.merge_counts == tok.merge_counts
        assert again.special_tokens == tok.special_tokens
        assert again.encode(TEXTS[0]) == tok.encode(TEXTS[0])
    raw = gzip.decompress((tmp_path / "m.json.gz").read_bytes())
    doc = json.loads(raw)
    assert doc["format"] == "bpeforge-model" and doc["version"] == 1
    assert doc["scheme"] == {"type": "bytes"} and doc["pretokenizer"] == {"type": bpeforge.TrainOptions().pretokenizer}
    assert len(doc["merges"]) == len(tok.merges)
    meta = doc["metadata"]
    assert meta["library"].startswith("bpeforge ")
    assert {"count_seconds", "merge_seconds"} <= set(meta["timings"])
    assert meta["settings"]["vocab_size"] == 400
    assert meta["corpus"]["texts"] == len(TEXTS)


def test_metadata_inputs_for_files(tmp_path) -> None:
    p = tmp_path / "c.txt"
    p.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    t = bpeforge.train(p, vocab_size=300, progress=False)
    assert t.metadata["inputs"] == [str(p)]
    assert t.metadata["corpus"]["bytes"] == sum(len(x.encode()) for x in TEXTS)


def test_special_tokens_safe_by_default(tok: bpeforge.Tokenizer) -> None:
    text = "hello <s>world</s>"
    with pytest.raises(SpecialTokenError, match="<s>"):
        tok.encode(text)
    ids = tok.encode(text, allowed_special="all")
    assert ids.count(0) == 1 and ids.count(1) == 1
    assert tok.decode(ids) == text
    plain = tok.encode_ordinary(text)
    assert 0 not in plain and 1 not in plain
    assert tok.decode(plain) == text
    assert tok.encode(text, disallowed_special=()) == plain
    only_s = tok.encode(text, allowed_special={"<s>"}, disallowed_special=())
    assert only_s.count(0) == 1 and 1 not in only_s
    with pytest.raises(ParameterError, match="not special tokens"):
        tok.encode(text, allowed_special={"<x>"})


def test_special_tokens_never_merged() -> None:
    t = bpeforge.train_from_iterator(["<s>ab<s>ab<s>"] * 20, vocab_size=300, special_tokens=["<s>"], min_frequency=1, progress=False)
    for a, b in t.merges:
        assert b"<s>" not in a + b
    assert t.encode("<s>ab", allowed_special="all")[0] == 0


def test_batch_matches_single_and_is_thread_independent(tok: bpeforge.Tokenizer) -> None:
    texts = TEXTS * 50
    single = [tok.encode(t) for t in texts]
    assert tok.encode_batch(texts, threads=1) == single
    assert tok.encode_batch(texts, threads=2) == single
    np = pytest.importorskip("numpy")
    ids, offsets = tok.encode_batch(texts, threads=2, as_numpy=True)
    # The model's id type (uint16 up to 65,536 ids), as encode_file and the CLI write.
    assert ids.dtype == np.uint16 == np.dtype(tok.id_dtype) and offsets.dtype == np.int64
    assert len(offsets) == len(texts) + 1
    for i in (0, 7, len(texts) - 1):
        assert ids[offsets[i] : offsets[i + 1]].tolist() == single[i]


def test_decode_errors(tok: bpeforge.Tokenizer) -> None:
    with pytest.raises(ParameterError, match="outside the vocabulary"):
        tok.decode([tok.vocab_size])
    with pytest.raises(ParameterError):
        tok.decode([-1])
    cut = tok.encode("😀")[:1]
    assert "\ufffd" in tok.decode(cut) or tok.decode(cut) == "😀"
    if tok.decode_bytes(cut) != "😀".encode():
        with pytest.raises(UnicodeDecodeError):
            tok.decode(cut, errors="strict")


def test_shared_between_threads(tok: bpeforge.Tokenizer) -> None:
    expected = [tok.encode(t) for t in TEXTS]
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(20):
                assert [tok.encode(t) for t in TEXTS] == expected
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors


def test_chars_scheme_basics() -> None:
    t = bpeforge.train_from_iterator(["low lower lowest"] * 10, vocab_size=40, scheme="chars", pretokenizer="whitespace", progress=False)
    assert t.special_tokens == ["<unk>"]
    assert t.alphabet is not None and "\u2581" in t.alphabet
    assert t.decode(t.encode("lower low")) == "lower low"
    ids = t.encode("löw")  # ö was never seen
    assert 0 in ids and t.decode(ids) == "l<unk>w"


def test_chars_suffix_mode() -> None:
    t = bpeforge.train_from_iterator(["low lower lowest"] * 10, vocab_size=40, scheme="chars", pretokenizer="whitespace",
                                     end_of_word_suffix="</w>", progress=False)
    assert any(s.endswith("</w>") for s in t.alphabet or [])
    assert t.decode(t.encode("lower low")) == "lower low"
    with pytest.raises(ParameterError, match="whitespace"):
        bpeforge.train_from_iterator(["x"], vocab_size=40, scheme="chars", end_of_word_suffix="</w>", progress=False)


def test_character_coverage_drops_rare_chars() -> None:
    texts = ["aaaa bbbb"] * 50 + ["z"]
    t = bpeforge.train_from_iterator(texts, vocab_size=20, scheme="chars", pretokenizer="whitespace", character_coverage=0.99, progress=False)
    assert "z" not in (t.alphabet or [])
    assert t.encode("z") == [t.token_to_id("\u2581"), 0] or 0 in t.encode("z")


def test_from_json_roundtrip(tok: bpeforge.Tokenizer) -> None:
    again = bpeforge.Tokenizer.from_json(tok.to_json())
    assert again.merges == tok.merges


def test_corrupt_json_is_clear() -> None:
    with pytest.raises(ModelFormatError):
        bpeforge.Tokenizer.from_json("{}")


def test_pretokenize_presets() -> None:
    assert bpeforge.pretokenize("Hello   world!") == ["Hello", "  ", " world", "!"]
    assert bpeforge.pretokenize("I'm 12345", "cl100k") == ["I", "'m", " ", "123", "45"]
    assert bpeforge.pretokenize(" a  b ", "whitespace") == ["a", "b"]
    assert bpeforge.pretokenize("a b", "none") == ["a b"]
    assert bpeforge.pretokenize("ab12cd", bpeforge.Regex(r"\d+")) == ["ab", "12", "cd"]  # gaps are pieces too


def test_documents_and_separator_modes(tmp_path) -> None:
    """documents=True: a file is one text (newlines inside it); separator: records."""
    a = tmp_path / "a.txt"
    a.write_text("first line\nsecond line\n", encoding="utf-8")
    b = tmp_path / "b.txt"
    b.write_text("third line", encoding="utf-8")
    docs = bpeforge.train([a, b], vocab_size=300, documents=True, progress=False, min_frequency=1)
    same = bpeforge.train_from_iterator(["first line\nsecond line\n", "third line"], vocab_size=300, progress=False, min_frequency=1)
    assert docs.merges == same.merges
    assert docs.metadata["corpus"]["texts"] == 2

    r = tmp_path / "r.txt"
    r.write_text("rec one\nstill one@@rec two@@rec three\n", encoding="utf-8")
    recs = bpeforge.train(r, vocab_size=300, separator="@@", progress=False, min_frequency=1)
    assert recs.metadata["corpus"]["texts"] == 3
    ref = bpeforge.train_from_iterator(["rec one\nstill one", "rec two", "rec three\n"], vocab_size=300, progress=False, min_frequency=1)
    assert recs.merges == ref.merges
