"""Encoding and decoding: exactness against the merge-list oracle, special
tokens in text, BPE-dropout, batches, files, long and empty inputs."""

from __future__ import annotations

import json
import lzma

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpeforge
from bpeforge import SpecialTokenError

from reference import reference_encode, reference_model_from_merges

CORPUS = [
    "the quick brown fox jumps over the lazy dog",
    "the lazy dog sleeps; the quick fox runs fast",
    "Привет мир, привет всем людям",
    "日本語のテキストと日本語の文",
    "emoji 😀😀 and more 😀 here",
    "aaaaaaaaaaaaaaaaaaaa bbbbbbbbbbbb ababababab",
] * 30


@pytest.fixture(scope="module", params=["bytes", "chars"])
def tok(request) -> bpeforge.Tokenizer:
    kw = {"pretokenizer": "whitespace"} if request.param == "chars" else {}
    size = 500 if request.param == "bytes" else 250
    return bpeforge.train_from_iterator(CORPUS, vocab_size=size, scheme=request.param, special_tokens=["<|eot|>", "<s>"],
                                        min_frequency=1, progress=False, **kw)


# Each oracle with the tokenizer it was built for: holding the tokenizer keeps
# its id() from being reused by a later one (the bytes fixture's tokenizer is
# freed before the chars one is made, and could share its id).
_ORACLES: dict[int, tuple[bpeforge.Tokenizer, object]] = {}


def oracle_encode(tok: bpeforge.Tokenizer, text: str) -> list[int]:
    """Apply the merge list in order to every pre-token (SEMANTICS §7)."""
    cached = _ORACLES.get(id(tok))
    if cached is None or cached[0] is not tok:
        users = [t for t in tok.special_tokens if t != "<unk>"] if tok.scheme == "chars" else tok.special_tokens
        model = reference_model_from_merges(tok.merges, scheme=tok.scheme, pretokenizer=tok.pretokenizer,
                                            special_tokens=users, alphabet=tok.alphabet)
        cached = _ORACLES[id(tok)] = (tok, model)
    return reference_encode(cached[1], text, ordinary=True)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("the quick brown fox lazy dog aаб😀日本 \t\n'1234")), max_size=60))
def test_encode_equals_in_order_merges(tok: bpeforge.Tokenizer, text: str) -> None:
    assert tok.encode_ordinary(text) == oracle_encode(tok, text)


def test_in_order_equality_on_shared_corpus(tok: bpeforge.Tokenizer, corpus_slice) -> None:
    lines = corpus_slice[:500]
    got = tok.encode_batch(lines, threads=2, disallowed_special=())
    for line, ids in zip(lines, got):
        assert ids == oracle_encode(tok, line), line


def test_encode_cache_bound_changes_memory_never_ids(tok: bpeforge.Tokenizer, corpus_slice) -> None:
    """``encode_cache_bytes`` bounds the piece cache ``encode`` keeps: ids
    are the oracle's under every bound (off, the least, one that evicts all
    the time, the default), and a bad bound names the parameter."""
    lines = corpus_slice[:300] + CORPUS[:6]
    default = tok.encode_cache_bytes
    assert default >= 8 << 20
    try:
        for bound, held in [(0, 0), (65_536, 65_536), (100_000, 65_536), (1 << 20, 1 << 20), (None, default)]:
            tok.encode_cache_bytes = bound
            assert tok.encode_cache_bytes == held
            for line in lines:
                assert tok.encode_ordinary(line) == oracle_encode(tok, line), (bound, line)
        for bad in (-1, 1000, 1.5, True, "1"):
            with pytest.raises(bpeforge.ParameterError, match="encode_cache_bytes"):
                tok.encode_cache_bytes = bad
        assert tok.encode_cache_bytes == default
    finally:
        tok.encode_cache_bytes = None


def test_special_token_cases(tok: bpeforge.Tokenizer) -> None:
    eot, s = tok.token_to_id("<|eot|>"), tok.token_to_id("<s>")
    allow = {"allowed_special": "all"}
    # adjacent specials
    assert tok.encode("<s><s><|eot|>", **allow) == [s, s, eot]
    # specials inside words
    ids = tok.encode("dog<s>fox", **allow)
    assert ids.count(s) == 1
    # bytes: lossless; chars/whitespace: every word gets its own ▁ (SEMANTICS §4)
    assert tok.decode(ids) == ("dog<s>fox" if tok.scheme == "bytes" else "dog<s> fox")
    assert ids[: ids.index(s)] == tok.encode_ordinary("dog")
    assert ids[ids.index(s) + 1 :] == tok.encode_ordinary("fox")
    # partial special text is ordinary text
    for partial in ("<|eot", "<|eot|", "|eot|>", "<s", "s>", "< s>"):
        assert tok.encode(partial) == tok.encode_ordinary(partial)
    # disallowed raises, names the token
    with pytest.raises(SpecialTokenError, match="eot"):
        tok.encode("a <|eot|> b")
    # only some allowed; the other is ordinary text
    ids = tok.encode("<s> <|eot|>", allowed_special={"<s>"}, disallowed_special=())
    assert ids[0] == s and eot not in ids


def test_encode_without_options_is_the_default_policy(tok: bpeforge.Tokenizer) -> None:
    """``encode(text)`` runs natively (no Python frame); every other call goes
    through the facade's option handling. Both must be the same policy."""
    class Text(str):
        pass

    eot = tok.token_to_id("<|eot|>")
    explicit = {"allowed_special": set(), "disallowed_special": "all", "dropout": 0.0, "seed": None}
    for text in CORPUS[:7] + ["", "<|eot", "x <s", " \n\t "]:
        expected = tok.encode(text, **explicit)
        assert tok.encode(text) == expected
        assert tok.encode(text=text) == expected
        assert tok.encode(Text(text)) == expected  # a str subclass takes the facade's path
    # The default refuses special-token text on both paths, naming the token.
    for call in (lambda: tok.encode("a <|eot|>"), lambda: tok.encode("a <|eot|>", **explicit)):
        with pytest.raises(SpecialTokenError, match="eot"):
            call()
    assert tok.encode("<|eot|>", allowed_special="all") == [eot]
    with pytest.raises(TypeError, match="must be str"):
        tok.encode(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Tokenizer\.encode\(\) got an unexpected keyword argument 'allowed'"):
        tok.encode("a", allowed="all")  # type: ignore[call-arg]
    with pytest.raises(UnicodeEncodeError):
        tok.encode("lone \ud800 surrogate")


def test_dropout_properties(tok: bpeforge.Tokenizer) -> None:
    text = "the quick brown fox jumps over the lazy dog " * 3
    if tok.pretokenizer == "whitespace":
        text = text.strip()  # the whitespace preset does not keep trailing spaces
    plain = tok.encode(text)
    assert tok.encode(text, dropout=0.0) == plain
    base = tok.encode(text, dropout=1.0, seed=1)
    assert tok.decode(base) == text
    if tok.scheme == "bytes":
        assert len(base) == len(text.encode())
    a = tok.encode(text, dropout=0.3, seed=42)
    assert a == tok.encode(text, dropout=0.3, seed=42)
    assert tok.decode(a) == text
    assert len(plain) <= len(a) <= len(base)
    variants = {tuple(tok.encode(text, dropout=0.3, seed=k)) for k in range(20)}
    assert len(variants) > 1
    batch = [text, "lazy dog", text]
    b1 = tok.encode_batch(batch, dropout=0.2, seed=7, threads=1)
    assert b1 == tok.encode_batch(batch, dropout=0.2, seed=7, threads=2)
    assert all(tok.decode(x) == t for x, t in zip(b1, batch))
    with pytest.raises(bpeforge.ParameterError, match="dropout"):
        tok.encode(text, dropout=1.5)


def test_thread_count_independence(tok: bpeforge.Tokenizer) -> None:
    texts = CORPUS * 40
    one = tok.encode_batch(texts, threads=1)
    assert tok.encode_batch(texts, threads=2) == one
    assert tok.encode_batch(texts, threads=7) == one


def test_batch_in_many_blocks(tok: bpeforge.Tokenizer) -> None:
    """A batch is encoded and turned into lists block by block (tens of
    kilobytes each), on the calling thread and helpers: the ids, their
    order, dropout's seeds and the first error are those of one text at a
    time, whatever the thread count."""
    texts = [f"{t} {k}" for k, t in enumerate(CORPUS * 60)]  # ~0.4 MB: many blocks
    single = [tok.encode(t) for t in texts]
    for threads in (1, 2, 3):
        assert tok.encode_batch(texts, threads=threads) == single
        assert tok.encode_batch(texts, threads=threads, dropout=0.3, seed=5) == [
            tok.encode(t, dropout=0.3, seed=5 + k) for k, t in enumerate(texts)]
        late = texts[:9000] + ["x <s> y"] + texts[9000:] + ["<|eot|>"]
        with pytest.raises(SpecialTokenError, match="<s>"):
            tok.encode_batch(late, threads=threads)
        with pytest.raises(TypeError, match="item 9000 is bytes"):
            tok.encode_batch(texts[:9000] + [b"x"], threads=threads)


def test_batch_takes_any_iterable_of_str(tok: bpeforge.Tokenizer) -> None:
    """A list or tuple is read in place, each item taken when its block is
    prepared; any other iterable (a generator, a subclass of list, a dict's
    keys) is collected first. The ids, and the error naming a text that is
    not a str, are the same for all of them, at any thread count."""
    import gc

    texts = [f"{t} {k}" for k, t in enumerate(CORPUS * 60)]  # many blocks
    single = [tok.encode(t) for t in texts]

    class Texts(list):
        pass

    for threads in (1, 2, 3):
        for given in (texts, tuple(texts), iter(texts), (t for t in texts), Texts(texts), dict.fromkeys(texts)):
            assert tok.encode_batch(given, threads=threads) == single
        # Made with empty slots and untracked until full: tracked when returned.
        assert gc.is_tracked(tok.encode_batch(texts, threads=threads))
        for given in (tuple(texts), (t for t in texts)):
            ids, offsets = tok.encode_batch(given, threads=threads, as_numpy=True)
            assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == single
        for given in ([], (), iter([])):
            assert tok.encode_batch(given, threads=threads) == []
        with pytest.raises(TypeError, match="item 9000 is int"):
            tok.encode_batch(tuple(texts[:9000]) + (7,), threads=threads)


def test_batch_of_a_list_changed_during_the_call(tok: bpeforge.Tokenizer) -> None:
    """Another thread may change the list while the GIL is released (here
    the progress callback does, between blocks). A change of size is an
    error, never texts skipped or encoded twice; an item replaced during the
    call is encoded as it was or as it became, and a text already taken
    stays alive while its block is encoded (only the list held it)."""
    # ~3 MB: the first event comes after 1 MiB, with later blocks still to take.
    base = [f"{t} {k}" for k, t in enumerate(CORPUS * 480)]
    for threads in (1, 2):
        for change in (list.pop, lambda texts: texts.append("one more"), lambda texts: texts.insert(0, "one more")):
            texts = list(base)
            with pytest.raises(RuntimeError, match=f"the list changed size during the call \\(from {len(base)} to"):
                tok.encode_batch(texts, threads=threads, progress=_first_event_only(lambda: change(texts)))

        # Strings made here, so that the list holds the only reference.
        texts = ["".join(reversed(t)) + "!" for t in base]
        as_they_were = [tok.encode(t) for t in texts]
        replaced = [t.upper() for t in base]
        as_they_became = [tok.encode(t) for t in replaced]

        def replace_all() -> None:
            texts[:] = replaced

        got = tok.encode_batch(texts, threads=threads, progress=_first_event_only(replace_all))
        assert len(got) == len(base)
        assert all(ids in (was, became) for ids, was, became in zip(got, as_they_were, as_they_became))
        assert got[0] == as_they_were[0] and got[-1] == as_they_became[-1]


def _first_event_only(action):
    """A progress callback that calls ``action`` at its first event."""
    done = []

    def callback(event: dict) -> None:
        if not done:
            done.append(event)
            action()

    return callback


def test_batch_leaves_the_collector_as_it_was(tok: bpeforge.Tokenizer) -> None:
    """encode_batch pauses the collector while it builds the lists, and
    leaves it as it was: enabled or not as before, no object moved between
    generations (the caller's young objects and the new lists stay young),
    objects the program froze still frozen. Checked with the collector
    paused by the test, so that no collection of its own moves anything."""
    import gc

    texts = CORPUS * 40
    assert gc.isenabled()
    ids = tok.encode_batch(texts, threads=2)
    assert gc.isenabled()
    gc.disable()
    try:
        young = [[1], [2]]
        assert _generation(young) == 0
        got = tok.encode_batch(texts)
        assert got == ids and not gc.isenabled()
        assert _generation(young) == 0 and _generation(got) == 0 and _generation(got[0]) == 0
        kept = [[1], [2]]
        gc.freeze()
        try:
            assert tok.encode_batch(texts) == ids
            # Left alone. Not the freeze count: frozen objects of other code
            # (another thread, pytest) may be freed meanwhile and lower it.
            assert _is_frozen(kept) and all(_is_frozen(inner) for inner in kept)
        finally:
            gc.unfreeze()
        assert not _is_frozen(kept)
    finally:
        gc.enable()


def _generation(obj: object) -> int | None:
    """The generation (0 young .. 2 oldest) the collector keeps ``obj`` in;
    None when frozen."""
    import gc

    assert gc.is_tracked(obj)
    return next((g for g in range(3) if any(o is obj for o in gc.get_objects(g))), None)


def _is_frozen(obj: object) -> bool:
    """Whether the collector keeps ``obj`` in the permanent generation:
    tracked, yet in none of the three generations it collects."""
    return _generation(obj) is None


@pytest.fixture(scope="module", params=["bytes", "chars"])
def tok_past_small_ints(request) -> bpeforge.Tokenizer:
    """A model of each scheme whose merges have ids past 256: CPython shares
    the ints -5..256 (and from 3.12 leaves their reference counts alone), so
    only larger ids show how lists hold their items. The chars model has
    byte fallback (ids 256 and up are its merges); without it this corpus
    has too few characters and words to get past 256."""
    kw = {"pretokenizer": "whitespace", "byte_fallback": True} if request.param == "chars" else {}
    return bpeforge.train_from_iterator(CORPUS, vocab_size=450, scheme=request.param, special_tokens=["<|eot|>", "<s>"],
                                        min_frequency=1, progress=False, **kw)


def test_id_lists_own_a_reference_to_each_shared_int(tok_past_small_ints: bpeforge.Tokenizer) -> None:
    """Result lists share one int object per id (made when the id is first
    met) and are filled without the C API's per-item calls: each item must
    still be a counted reference, and each list a normal list."""
    import gc
    import sys

    tok = tok_past_small_ints
    text = "the quick brown fox " * 50 + "Привет мир " * 20
    first = tok.encode(text)
    # The most frequent id above CPython's small ints.
    merged = max((i for i in set(first) if i > 256), key=first.count)
    held = first.count(merged)
    # Garbage of earlier tests (lists of ids in reference cycles) may hold the
    # same int object: the counts below are exact only if no collection frees
    # such garbage meanwhile, so collect it first and pause the collector.
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        before = sys.getrefcount(first[first.index(merged)])
        lists = [tok.encode(text), *tok.encode_batch([text, text], threads=2)]
        int_object = first[first.index(merged)]
        assert all(lst == first for lst in lists)
        assert all(lst[lst.index(merged)] is int_object for lst in lists)
        assert sys.getrefcount(int_object) == before + 1 + 3 * held  # + the local name
        # Lists are ordinary: tracked, mutable, and independent of later calls.
        assert all(gc.is_tracked(lst) for lst in lists)
        lists[0][0] = -1
        lists[0].append(merged)
        assert tok.encode(text) == first
        del lists
        assert sys.getrefcount(int_object) == before + 1
    finally:
        if was_enabled:
            gc.enable()
    assert all(type(i) is int for i in first)


def test_long_and_empty_inputs(tok: bpeforge.Tokenizer) -> None:
    assert tok.encode("") == []
    assert tok.encode_batch([]) == []
    assert tok.encode_batch(["", ""]) == [[], []]
    assert tok.decode([]) == ""
    long_run = "a" * 1_000_000
    ids = tok.encode(long_run)
    assert tok.decode(ids) == (long_run if tok.scheme == "bytes" else long_run)
    mixed = ("the quick brown fox " * 50_000)
    assert tok.decode(tok.encode(mixed)) == mixed.strip() if tok.pretokenizer == "whitespace" else mixed


def test_decode_batch_and_bytes(tok: bpeforge.Tokenizer) -> None:
    texts = CORPUS[:6]
    ids = tok.encode_batch(texts)
    assert tok.decode_batch(ids) == [t if tok.pretokenizer != "whitespace" else " ".join(t.split()) for t in texts]
    assert b"".join(tok.decode_bytes(x) for x in ids[:1]) == tok.decode_bytes(ids[0])
    with pytest.raises(bpeforge.ParameterError):
        tok.decode_batch([[tok.vocab_size + 5]])


@pytest.mark.parametrize("fmt", ["ids", "npy", "bin"])
def test_encode_file_decodes_back_byte_for_byte(tmp_path, corpus_slice, fmt) -> None:
    np = pytest.importorskip("numpy")
    tok = bpeforge.train_from_iterator(corpus_slice[:2000], vocab_size=800, progress=False)
    src = tmp_path / "src.txt.xz"
    text = "\n".join(corpus_slice[:2000]) + "\n"
    src.write_bytes(lzma.compress(text.encode("utf-8")))
    dst = tmp_path / f"out.{fmt}"
    stats = tok.encode_file(src, dst, format=fmt, threads=2)
    assert stats["lines"] == 2000 and stats["bytes"] == len(text.encode()) - 2000
    if fmt == "ids":
        lines = dst.read_text().splitlines()
        seqs = [[int(x) for x in line.split()] for line in lines]
    else:
        if fmt == "npy":
            ids = np.load(dst)
        else:
            ids = np.fromfile(dst, dtype="<u2" if stats["id_bytes"] == 2 else "<u4")
        offsets = np.load(str(dst) + ".offsets.npy")
        assert offsets.dtype == np.int64 and len(offsets) == 2001 and offsets[-1] == len(ids) == stats["tokens"]
        seqs = [ids[offsets[i] : offsets[i + 1]].tolist() for i in range(2000)]
    decoded = b"".join(tok.decode_bytes(s) + b"\n" for s in seqs)
    assert decoded == text.encode("utf-8")
    assert seqs[:50] == tok.encode_batch(corpus_slice[:50])


def test_encode_file_failure_leaves_nothing(tmp_path) -> None:
    tok = bpeforge.train_from_iterator(["hello world"] * 5, vocab_size=260, progress=False)
    dst = tmp_path / "out.npy"
    dst.write_bytes(b"earlier output")
    with pytest.raises(bpeforge.InputError):
        tok.encode_file(tmp_path / "missing.txt", dst, format="npy")
    assert dst.read_bytes() == b"earlier output"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.npy"]


def test_encode_file_across_chunks_matches_on_any_thread_count(tmp_path, corpus_slice) -> None:
    """Input of several 4 MiB chunks, encoded as one stream of blocks: the
    same ids at 1, 2 and 3 threads as encode_batch, and an error in a later
    chunk names its own line."""
    np = pytest.importorskip("numpy")
    tok = bpeforge.train_from_iterator(corpus_slice[:2000], vocab_size=600, progress=False)
    lines = []
    while sum(map(len, lines)) < 9_500_000:
        lines.extend(corpus_slice)
    src = tmp_path / "src.txt"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    ids, offsets = tok.encode_batch(lines, threads=2, as_numpy=True)
    for threads in (1, 2, 3):
        dst = tmp_path / f"out{threads}.npy"
        stats = tok.encode_file(src, dst, format="npy", threads=threads)
        assert stats["lines"] == len(lines) and stats["tokens"] == len(ids)
        assert np.array_equal(np.load(dst), ids), threads
        assert np.array_equal(np.load(str(dst) + ".offsets.npy"), offsets), threads
    records = tmp_path / "records.jsonl"
    bad = len(lines) - 7
    with records.open("w", encoding="utf-8") as f:
        for i, line in enumerate(lines):
            f.write('{"text": 5}\n' if i == bad else json.dumps({"text": line}) + "\n")
    with pytest.raises(bpeforge.InputError, match=rf"records.jsonl, line {bad + 1}:"):
        tok.encode_file(records, tmp_path / "r.ids", text_field="text", threads=2)
    assert not (tmp_path / "r.ids").exists()
