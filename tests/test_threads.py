"""Counting and training do not depend on the thread count: the same word
counts, merges, merge counts and ids at 1, 2, 4 and 16 threads, counted in
memory or spilled under a budget; equal to the reference trainer; and the
record says how busy the threads were (`metadata.timings`)."""

from __future__ import annotations

import json
import lzma
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SLICE_BYTES_VOCAB, SLICE_FILE
from reference import reference_encode
from test_memory_budget import _decode_counts

bpeforge = pytest.importorskip("bpeforge", reason="bpeforge is not built/installed (maturin develop)")
from bpeforge import _native  # noqa: E402
from bpeforge.options import TrainOptions  # noqa: E402

THREADS = [1, 2, 4, 16]


def _split(lines: list[str], parts: int, folder: Path) -> list[str]:
    """`lines` in `parts` files (each file is at least one chunk, so the
    chunks spread over the threads)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(parts):
        path = folder / f"part{i:02d}.txt"
        path.write_text("\n".join(lines[i::parts]) + "\n", encoding="utf-8")
        paths.append(str(path))
    return paths


@pytest.fixture(scope="module")
def real_parts(tmp_path_factory) -> list[str]:
    """The shipped 25,000 lines of multi-200k (about 3.6 MB, 16 files)."""
    with lzma.open(SLICE_FILE, "rt", encoding="utf-8") as f:
        lines = f.read().split("\n")[:25_000]
    return _split(lines, 16, tmp_path_factory.mktemp("threads"))


def test_counts_are_the_same_at_every_thread_count_in_memory_or_spilled(real_parts, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    expected = _decode_counts(_native._count_files(real_parts, TrainOptions(threads=1).settings(), "off", None))
    assert len(expected[1]) > 50_000
    for threads in THREADS:
        args = TrainOptions(threads=threads).settings()
        assert _decode_counts(_native._count_files(real_parts, args, "off", None)) == expected, threads
        # A budget a few MB above counting's floor (what the process holds,
        # and the input buffers): the flushes spill.
        with open("/proc/self/status", encoding="ascii") as f:
            rss = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
        tight = rss + (16 << 20) * (threads + 1) + (6 << 20)
        spilled = _native._count_files(real_parts, TrainOptions(threads=threads, max_memory=tight).settings(), "off",
                                      None)
        assert _decode_counts(spilled) == expected, f"{threads} threads, spilled"
    assert list(tmp_path.iterdir()) == []


def test_models_are_the_same_at_every_thread_count(real_parts) -> None:
    held_out = Path(real_parts[0]).read_text(encoding="utf-8").splitlines()[:300]
    models = {}
    for threads in THREADS:
        tok = bpeforge.train(real_parts, vocab_size=3000, threads=threads, progress=False)
        models[threads] = (list(tok.merges), list(tok.merge_counts), tok.encode_batch(held_out))
        assert tok.metadata["timings"]["threads"] == threads
    for threads in THREADS[1:]:
        assert models[threads] == models[1], f"{threads} threads differ from 1"


@pytest.mark.parametrize("threads", [2, 16])
def test_a_model_counted_on_many_threads_equals_the_reference(corpus_slice, slice_ref_bytes_gpt2, threads, tmp_path) -> None:
    parts = _split(corpus_slice, 8, tmp_path)
    tok = bpeforge.train(parts, vocab_size=SLICE_BYTES_VOCAB, scheme="bytes", pretokenizer="gpt2",
                         min_frequency=2, threads=threads, progress=False)
    ref = slice_ref_bytes_gpt2
    assert list(tok.merges) == list(ref.merges)
    assert list(tok.merge_counts) == list(ref.merge_counts)
    for line in corpus_slice[:50]:
        assert tok.encode(line) == reference_encode(ref, line)


def test_timings_record_cpu_seconds_and_threads(real_parts) -> None:
    tok = bpeforge.train(real_parts, vocab_size=1000, threads=2, progress=False)
    t = tok.metadata["timings"]
    assert t["threads"] == 2
    for key in ("count", "merge"):
        assert t[f"{key}_seconds"] > 0 and t[f"{key}_cpu_seconds"] > 0, t
        # Two threads cannot use more than twice the wall time (plus the
        # clocks' rounding to milliseconds).
        assert t[f"{key}_cpu_seconds"] <= 2 * t[f"{key}_seconds"] + 0.01, t
    b = t["merge_breakdown"]
    assert 0 < b["word_table_cpu_seconds"] <= t["merge_cpu_seconds"], t


def test_progress_says_how_busy_the_threads_were(real_parts, tmp_path) -> None:
    out = tmp_path / "m.json"
    run = subprocess.run([sys.executable, "-m", "bpeforge", "train", *real_parts[:4], "--vocab-size", "500",
                          "--threads", "2", "--progress", "human", "-o", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    busy = r"in \d+\.\d\d s, \d+\.\d CPU s on 2 threads \(\d+% busy\)"
    for phase in ("counted: ", "word table: ", "merged: "):
        assert re.search(re.escape(phase) + r".*" + busy, run.stderr), (phase, run.stderr)
    events = subprocess.run([sys.executable, "-m", "bpeforge", "train", *real_parts[:4], "--vocab-size", "500",
                             "--threads", "2", "--progress", "json", "-o", str(out)],
                            capture_output=True, text=True, timeout=600)
    done = [json.loads(line) for line in events.stderr.splitlines() if line.startswith("{")]
    counted = next(e for e in done if e.get("phase") == "counting" and e.get("finished"))
    assert counted["threads"] == 2 and counted["cpu_seconds"] > 0, counted


def test_progress_events_carry_cpu_seconds_and_threads(real_parts) -> None:
    events = []
    bpeforge.train(real_parts[:4], vocab_size=500, threads=2, progress=events.append)
    ends = {e.phase: e for e in events if e.finished}
    for phase in ("counting", "word table", "pair index", "merging"):
        info = ends[phase].info
        assert info["threads"] == 2 and info["cpu_seconds"] >= 0, (phase, info)
    assert ends["counting"].info["cpu_seconds"] > 0
