"""bpeforge's import of the real production vocabularies gives tiktoken's ids
on every line, for the three byte-level presets.

The ``o200k_base`` and ``cl100k_base`` rank files ship in the ``bpe-openai``
wheel (``bpe_openai/data/*.tiktoken.gz``; nothing else here can download
them). Each is imported once with ``bpeforge.from_tiktoken`` and compared
with a ``tiktoken.Encoding`` over the same ranks and tiktoken's own pattern.
The ``gpt2`` preset has no rank file here, so it is checked with the
cl100k_base ranks under GPT-2's pattern (on both sides): a real vocabulary
through the gpt2 scanner.

Normal suite: the first QUICK_LINES lines of multi-200k with cl100k_base
ranks (cl100k and gpt2 cases: one import, about a minute under load).
``pytest -m slow tests/test_real_vocabs.py``: all three cases on every line
of multi-200k and of multi-1m (the imports alone take half a minute each).
"""

from __future__ import annotations

import base64
import gzip
import json
import lzma
import re
from functools import lru_cache
from pathlib import Path
from typing import Iterator

import pytest

bpeforge = pytest.importorskip("bpeforge", reason="bpeforge is not built/installed (maturin develop)")
from bpeforge import interop  # noqa: E402

tiktoken = pytest.importorskip("tiktoken")
bpe_openai = pytest.importorskip("bpe_openai", reason="the real rank files ship in the bpe-openai wheel")

from conftest import SAMPLE_LINES, SLICE_FILE, shared_corpus  # noqa: E402

#: Lines compared per call (bounds the memory of the id lists on multi-1m).
CHUNK = 50_000
#: Lines of multi-200k in the normal suite's check.
QUICK_LINES = 20_000

#: (case, rank file, bpeforge pattern, tiktoken pattern)
CASES = {
    "o200k_base": ("o200k_base", "o200k_base", interop.O200K_PATTERN),
    "cl100k_base": ("cl100k_base", "cl100k_base", interop.CL100K_PATTERN),
    "gpt2 (cl100k ranks)": ("cl100k_base", "gpt2", interop.GPT2_PATTERN),
}


def _rank_file(name: str) -> Path:
    """bpe-openai's gzipped rank file ``name.tiktoken.gz``."""
    path = Path(bpe_openai.__file__).parent / "data" / f"{name}.tiktoken.gz"
    if not path.is_file():
        pytest.skip(f"{path} not found (bpe-openai without its rank files)")
    return path


@lru_cache(maxsize=2)
def _ranks(name: str) -> dict[bytes, int]:
    """The ranks of a rank file, read here (tiktoken's side of the comparison)."""
    ranks = {}
    with gzip.open(_rank_file(name), "rt", encoding="ascii") as f:
        for line in f:
            if line.strip():
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
    return ranks


@lru_cache(maxsize=2)
def _imported(name: str) -> bpeforge.Tokenizer:
    """bpeforge's import of a rank file (with its own pattern), read by
    bpeforge from the compressed file as shipped."""
    return bpeforge.from_tiktoken(_rank_file(name), pattern=name)


@lru_cache(maxsize=3)
def _pair(case: str) -> tuple[bpeforge.Tokenizer, object]:
    """(bpeforge, tiktoken) for one case, both over the same ranks and pattern."""
    rank_file, preset, pattern = CASES[case]
    tok = _imported(rank_file)
    if preset != rank_file:
        # The same merges under another preset: swap the pre-tokenizer in the
        # model document rather than importing the ranks again.
        doc = json.loads(tok.to_json())
        doc["pretokenizer"] = {"type": preset}
        tok = bpeforge.Tokenizer.from_json(json.dumps(doc))
    enc = tiktoken.Encoding(name=case, pat_str=pattern, mergeable_ranks=_ranks(rank_file), special_tokens={})
    return tok, enc


def _chunks(corpus: str, limit: int | None = None) -> Iterator[list[str]]:
    """The corpus lines (split at ``\\n`` exactly as files are read), CHUNK
    at a time; the first ``limit`` lines only if given."""
    # multi-200k's first lines ship with the tests; the whole corpora are beside the repository.
    small = corpus == "multi-200k" and limit is not None and limit <= SAMPLE_LINES
    path = SLICE_FILE if small else shared_corpus(f"{corpus}.txt.xz")
    chunk: list[str] = []
    with lzma.open(path, "rb") as f:
        for n, raw in enumerate(f):
            if limit is not None and n >= limit:
                break
            chunk.append(raw[:-1].decode("utf-8") if raw.endswith(b"\n") else raw.decode("utf-8"))
            if len(chunk) == CHUNK:
                yield chunk
                chunk = []
    if chunk:
        yield chunk


def check_corpus(case: str, corpus: str, limit: int | None = None) -> None:
    """Zero differing lines between bpeforge and tiktoken on the corpus (its
    first ``limit`` lines if given)."""
    tok, enc = _pair(case)
    lines = differing = 0
    first: list[str] = []
    for chunk in _chunks(corpus, limit):
        ours = tok.encode_batch(chunk)
        theirs = enc.encode_ordinary_batch(chunk, num_threads=2)
        for text, a, b in zip(chunk, ours, theirs):
            if a != b:
                differing += 1
                if len(first) < 3:
                    first.append(f"{text[:80]!r}: bpeforge {a[:12]} vs tiktoken {b[:12]}")
        lines += len(chunk)
    assert lines > 0
    assert differing == 0, f"{case} on {corpus}: {differing:,} of {lines:,} lines differ, e.g. " + "; ".join(first)


@pytest.mark.parametrize("case", ["cl100k_base", "gpt2 (cl100k ranks)"])
def test_import_gives_tiktokens_ids_quick(case):
    check_corpus(case, "multi-200k", QUICK_LINES)


def test_cli_imports_the_compressed_rank_file(tmp_path):
    """``bpeforge import --from tiktoken`` reads the ``.tiktoken.gz`` file as
    shipped: the model is the Python import's, with tiktoken's ids and
    decodes on real lines."""
    from bpeforge.cli import main as cli_main

    out = tmp_path / "cl100k.json"
    assert cli_main(["import", "--from", "tiktoken", str(_rank_file("cl100k_base")), "--pattern", "cl100k_base",
                     "-o", str(out), "--quiet"]) == 0
    tok = bpeforge.load(out)
    assert tok.to_json() == _imported("cl100k_base").to_json()
    _, enc = _pair("cl100k_base")
    chunk = next(_chunks("multi-200k", 2_000))
    ids = tok.encode_batch(chunk)
    assert ids == enc.encode_ordinary_batch(chunk)
    assert [enc.decode(x) for x in ids] == [tok.decode(x) for x in ids] == chunk


def test_inspect_of_imported_o200k_counts_what_it_lists(tmp_path, capsys):
    """``bpeforge inspect`` of o200k imported with its special tokens: the
    merge count is the merges listed, each merge's new id is tiktoken's rank
    of its token, and the ids no token has (199998, 200000..200017) are said
    to be unassigned, not listed as blank tokens."""
    from bpeforge.cli import main as cli_main

    specials = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}
    out = tmp_path / "o200k.json"
    assert cli_main(["import", "--from", "tiktoken", str(_rank_file("o200k_base")), "--pattern", "o200k_base",
                     *(f for s, i in specials.items() for f in ("--special-token", f"{s}={i}")),
                     "-o", str(out), "--quiet"]) == 0
    capsys.readouterr()
    assert cli_main(["inspect", str(out), "--merges", "40", "--vocab", "25"]) == 0
    shown = capsys.readouterr().out
    ranks = _ranks("o200k_base")
    merges = len(bpeforge.load(out).merges)
    assert 0 < merges <= len(ranks) - 256
    assert f"  merges: {merges} (derived from the imported tiktoken ranks" in shown
    assert f"first 40 of {merges}:" in shown
    listed = re.findall(r"^ +(\d+) +(\d+)  (.+) \+ (.+) -> (.+)$", shown, flags=re.M)
    assert [int(k) for k, *_ in listed] == list(range(40))
    by_id = {r: t for t, r in ranks.items()}
    for _, new_id, _, _, token in listed:
        assert int(new_id) in by_id and token == bpeforge._display.show_token(by_id[int(new_id)])
    used = set(ranks.values()) | set(specials.values())
    free = [i for i in range(max(used) + 1) if i not in used]
    assert free == [199998, *range(200000, 200018)]
    assert f"ids: {max(used) + 1} (0..{max(used)}), {len(free)} of them not assigned to a token " \
           f"(199998, 200000..200017)" in shown
    assert re.search(r"^ +199998  \(not assigned: no token has this id\)$", shown, flags=re.M)
    assert re.search(r"^ +200000\.\.200017  \(not assigned: no token has these 18 ids\)$", shown, flags=re.M)
    assert not re.search(r"^ +\d+  $", shown, flags=re.M)  # no blank token


def test_compressed_rank_file_errors_name_the_file(tmp_path):
    """A truncated compressed rank file is a ModelFormatError naming it, not a
    crash or a partial vocabulary."""
    cut = tmp_path / "cut.tiktoken.gz"
    cut.write_bytes(_rank_file("cl100k_base").read_bytes()[:5_000])
    with pytest.raises(bpeforge.ModelFormatError, match="cut.tiktoken.gz: cannot decompress"):
        bpeforge.from_tiktoken(cut, pattern="cl100k_base")


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_import_gives_tiktokens_ids_multi_200k(case):
    check_corpus(case, "multi-200k")


@pytest.mark.slow
def test_per_call_equals_batch():
    """``encode`` (one call per line) gives the batch's ids (it takes another
    path through the bindings), on real text with the real vocabulary."""
    tok, enc = _pair("o200k_base")
    chunk = next(_chunks("multi-200k"))[:5_000]
    assert [tok.encode(t) for t in chunk] == [enc.encode_ordinary(t) for t in chunk]
    assert [tok.encode_ordinary(t) for t in chunk] == tok.encode_batch(chunk)


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_import_gives_tiktokens_ids_multi_1m(case):
    check_corpus(case, "multi-1m")
