"""Shared fixtures: the real-text corpus slice, small trained tokenizers, oracle models."""

from __future__ import annotations

import lzma
import os
import random
import signal
import subprocess
import time
import unicodedata
from pathlib import Path

import pytest
import regex
from hypothesis import strategies as st

from reference import reference_alphabet, reference_train

#: The whole corpora, beside the repository: only tests marked ``slow`` read
#: them (through :func:`shared_corpus`, which skips naming the missing file).
CORPORA_DIR = Path(__file__).resolve().parents[2] / "shared" / "corpora"
#: The real multilingual text every other test reads, shipped in the
#: repository (tests/data/corpus/SOURCES.md): the first 25,000 lines of
#: multi-200k and their language tags.
SAMPLE_DIR = Path(__file__).resolve().parent / "data" / "corpus"
SLICE_FILE = SAMPLE_DIR / "multi-25k.txt.xz"
SLICE_LANGS_FILE = SAMPLE_DIR / "multi-25k.langs.txt.xz"
SAMPLE_LINES = 25_000
SLICE_LINES = 2000

# Slice runs (SEMANTICS-sized examples on real text).
SLICE_BYTES_VOCAB = 256 + 300
SLICE_CHARS_MERGES = 300
SLICE_CHARS_COVERAGE = 0.9995

# A small hand-written multilingual corpus (independent of the shared corpora).
SMALL_CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "The dog didn't care; the fox's jump was 1234567 times higher!",
    "  Indented   text\twith\ttabs and trailing spaces   ",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "Größere Straßen führen über die Brücke.",
    "Le renard brun rapide saute par-dessus le chien paresseux.",
    "El zorro marrón rápido salta sobre el perro perezoso.",
    "Быстрая коричневая лиса прыгает через ленивую собаку.",
    "Γρήγορη καφέ αλεπού πηδά πάνω από τον τεμπέλη σκύλο.",
    "敏捷的棕色狐狸跳过了懒狗。敏捷的狐狸。",
    "素早い茶色の狐がのろまな犬を飛び越える。",
    "빠른 갈색 여우가 게으른 개를 뛰어넘는다.",
    "الثعلب البني السريع يقفز فوق الكلب الكسول.",
    "तेज़ भूरी लोमड़ी आलसी कुत्ते के ऊपर कूदती है।",
    "emoji 😀😀 👍🏽 and combining e\u0301e\u0301 marks",
    "HTTPServer parses URLs like https://example.com/a/b?c=1&d=2",
    "I'M SURE you'll see WE'VE done it; they'd've known.",
    "numbers: 3.14159, 2,718, 1e10, ١٢٣٤, ⅫⅪ",
    "the the the the the theme them then there",
    "aaaaaaaaaaaa bbbbbbbb abababab",
]


# Unicode version: SEMANTICS does not pin one. The `regex` module used by the
# oracle has Unicode 17.0 tables, the engine's regex crates Unicode 16.0, so
# characters first assigned in 17.0 (e.g. U+323B0, CJK Ext. J) are letters to
# the oracle and unassigned to the engine. Strategies whose results depend on
# character properties therefore draw characters that are either assigned in
# Python's own unicodedata (Unicode 14 on 3.11) or unassigned in every version.
# Versions also move assigned characters between categories (Unicode 17 made
# U+0295 ʕ Lo, where the engine and unicodedata say Ll), so a character is
# drawn only when the oracle gives it unicodedata's category. This also keeps
# out the newly assigned: they are Cn to unicodedata but not to the oracle.
def version_stable(c: str) -> bool:
    return regex.fullmatch(r"\p{%s}" % unicodedata.category(c), c) is not None


stable_chars = st.characters(codec="utf-8").filter(version_stable)


def shared_corpus(name: str) -> Path:
    """``../shared/corpora/NAME`` for a ``slow`` test; skips, naming the file,
    when the whole corpora are not beside the repository."""
    path = CORPORA_DIR / name
    if not path.exists():
        pytest.skip(f"the whole corpus {name} is not at {path} (only `pytest -m slow` needs ../shared/corpora)")
    return path


def _read_slice(n: int, path: Path | None = None) -> list[str]:
    """First n lines of the shipped sample (or of ``path``, a whole corpus
    for a slow test), split at b"\\n" exactly as files are read (§1)."""
    if path is None:
        if n > SAMPLE_LINES:
            raise ValueError(f"the shipped sample has {SAMPLE_LINES} lines; a test asked for {n}")
        path = SLICE_FILE
    lines: list[bytes] = []
    buf = b""
    with lzma.open(path, "rb") as f:
        while len(lines) < n:
            chunk = f.read(1 << 16)
            if not chunk:
                break
            buf += chunk
            *done, buf = buf.split(b"\n")
            lines.extend(done)
    if len(lines) < n and buf:
        lines.append(buf)
    return [l.decode("utf-8") for l in lines[:n]]


#: The SentencePiece-exact tests (test_byte_fallback, test_normalizer):
#: sentencepiece trains on the first SPM_TRAIN_LINES lines of multi-200k,
#: and the next SPM_HELD_OUT_LINES are encoded by every library.
SPM_TRAIN_LINES = 20000
SPM_HELD_OUT_LINES = 5000


@pytest.fixture(scope="session")
def lines() -> list[str]:
    """The SentencePiece-exact tests' training lines and held-out lines."""
    return _read_slice(SPM_TRAIN_LINES + SPM_HELD_OUT_LINES)


@pytest.fixture(scope="session")
def held_out(lines) -> list[str]:
    return lines[SPM_TRAIN_LINES:]


@pytest.fixture(scope="session")
def corpus_slice() -> list[str]:
    """The first 2,000 lines of the shipped sample (= of multi-200k.txt.xz)."""
    return _read_slice(SLICE_LINES)


@pytest.fixture(scope="session")
def corpus_file(tmp_path_factory, corpus_slice) -> str:
    """The slice as a text file (read only: a test that changes it copies it)."""
    p = tmp_path_factory.mktemp("slice") / "corpus.txt"
    p.write_text("\n".join(corpus_slice) + "\n", encoding="utf-8")
    return str(p)


def same_training(a, b) -> None:
    """Two trained tokenizers learned the same: merges, their counts, size."""
    assert a.merges == b.merges
    assert a.merge_counts == b.merge_counts
    assert a.vocab_size == b.vocab_size


def write_zipf_corpus(path: Path, blocks: int) -> str:
    """``blocks`` blocks of 10,000 words (about 117 kB each) drawn from 200k
    types with Zipf-like frequencies, 20 to a line: many rare types, a few
    frequent ones (what a memory budget drops). Returns the path."""
    rng = random.Random(13)
    letters = "abcdefghijklmnopqrstuvwxyzéøß"
    types = ["".join(rng.choice(letters) for _ in range(rng.randint(3, 12))) for _ in range(200_000)]
    weights = [1.0 / (i + 1) for i in range(len(types))]
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(blocks):
            words = rng.choices(types, weights, k=10_000)
            f.write("\n".join(" ".join(words[i:i + 20]) for i in range(0, len(words), 20)) + "\n")
    return str(path)


def interrupt_while_merging(argv: list[str], *, settle: float = 0.0, timeout: float = 60) -> tuple[int, str]:
    """Runs a ``bpeforge train`` command line (with ``--progress human``),
    sends it SIGINT ``settle`` seconds after its merge loop first reports,
    and returns its exit status and everything it wrote on stderr."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    seen = b""
    deadline = time.monotonic() + 120
    os.set_blocking(proc.stderr.fileno(), False)
    while b"merging: " not in seen and time.monotonic() < deadline and proc.poll() is None:
        seen += proc.stderr.read() or b""
        time.sleep(0.02)
    assert b"merging: " in seen, seen[-500:]
    time.sleep(settle)
    proc.send_signal(signal.SIGINT)
    os.set_blocking(proc.stderr.fileno(), True)
    _, rest = proc.communicate(timeout=timeout)
    return proc.returncode, (seen + rest).decode("utf-8")


@pytest.fixture(scope="session")
def bpeforge_mod():
    return pytest.importorskip("bpeforge", reason="bpeforge is not built/installed (maturin develop)")


# ---- oracle models on the slice (slow-ish: computed once per session) ----


@pytest.fixture(scope="session")
def slice_ref_bytes_gpt2(corpus_slice):
    return reference_train(corpus_slice, SLICE_BYTES_VOCAB, scheme="bytes", pretokenizer="gpt2", min_frequency=2)


@pytest.fixture(scope="session")
def slice_chars_vocab_size(corpus_slice) -> int:
    alphabet = reference_alphabet(
        corpus_slice, scheme="chars", pretokenizer="whitespace", character_coverage=SLICE_CHARS_COVERAGE
    )
    return 1 + len(alphabet) + SLICE_CHARS_MERGES


@pytest.fixture(scope="session")
def slice_ref_chars_ws(corpus_slice, slice_chars_vocab_size):
    return reference_train(
        corpus_slice, slice_chars_vocab_size, scheme="chars", pretokenizer="whitespace",
        min_frequency=2, character_coverage=SLICE_CHARS_COVERAGE,
    )


@pytest.fixture(scope="session")
def slice_tok_bytes_gpt2(bpeforge_mod, corpus_slice):
    return bpeforge_mod.train_from_iterator(
        corpus_slice, vocab_size=SLICE_BYTES_VOCAB, scheme="bytes", pretokenizer="gpt2",
        min_frequency=2, progress=False,
    )


# ---- small tokenizers on SMALL_CORPUS ----

SMALL_SPECIALS = ("<|endoftext|>", "<|pad|>")
SMALL_VOCAB = len(SMALL_SPECIALS) + 256 + 150


@pytest.fixture(scope="session")
def small_models(bpeforge_mod):
    """preset -> (engine tokenizer, oracle model), bytes scheme, trained on SMALL_CORPUS."""
    out = {}
    for preset in ("gpt2", "cl100k", "o200k"):
        kw = dict(vocab_size=SMALL_VOCAB, scheme="bytes", pretokenizer=preset,
                  special_tokens=SMALL_SPECIALS, min_frequency=2)
        tok = bpeforge_mod.train_from_iterator(SMALL_CORPUS, progress=False, **kw)
        ref = reference_train(SMALL_CORPUS, **kw)
        out[preset] = (tok, ref)
    return out


# ---- a local Ray instance ----


@pytest.fixture(scope="module")
def ray_instance():
    """A real local Ray (2 CPUs) for one test module, shut down after it;
    skips, naming the extra, when Ray is not installed."""
    ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'bpeforge[ray]' to test bpeforge.distributed")
    if ray.is_initialized():  # pragma: no cover - another module left one running
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    yield ray
    ray.shutdown()
