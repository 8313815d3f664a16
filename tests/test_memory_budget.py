"""max_memory: counting spills sorted runs to disk and merges them to the
exact in-memory counts; a merge phase that would not fit drops the rarest
word types, says so, and equals the run with that min_word_count asked for;
a budget too small even so is a clear error."""

from __future__ import annotations

import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

import bpeforge
from conftest import write_zipf_corpus
from bpeforge import _native
from bpeforge.options import TrainOptions


def _rss() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


@pytest.fixture(scope="module")
def zipf_corpus(tmp_path_factory) -> str:
    """About 14 MB (several 4 MB chunks) of words drawn from 200k types with
    Zipf-like frequencies: many rare types, a few frequent ones."""
    return write_zipf_corpus(tmp_path_factory.mktemp("budget") / "zipf.txt", blocks=120)


# Runs in a fresh interpreter: a budget just above what the process holds is
# only meaningful where that does not drift (a long test session's does).
_SQUEEZED = """
import json, sys
import bpeforge
from bpeforge import cli
args = json.loads(sys.argv[1])
# Warm up (threads, buffers, caches, and the command line's own modules when
# it is the command line that runs), so that the process holds then what it
# will hold while counting again.
if args.get("cli"):
    cli.main(["train", args["cli"][1], "--vocab-size", "300", "--threads", "2", "--progress", "off",
              "-o", args["cli"][-1] + ".warm.json"])
else:
    bpeforge.train(args["corpus"], vocab_size=300, threads=2, progress=False)
rss = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmRSS:"))
# The merge phase's fixed part and 5 MB of word types (the corpus's 145k
# types need about 11): counting spills, and the rarest types go. (Counting
# once left up to 20 MB of freed blocks in the allocator of its ended
# threads, which the budget then read as held; the margin was 10 MB.)
budget = rss + (48 << 20) + (5 << 20)
if args.get("cli"):
    sys.exit(cli.main([*args["cli"], "--max-memory", str(budget)]))
tok = bpeforge.train(args["corpus"], vocab_size=600, threads=2, progress=False, max_memory=budget)
print(json.dumps(tok.metadata["memory_budget"]))
print(json.dumps([[x.hex() if isinstance(x, bytes) else x for x in m] for m in tok.merges]))
"""


def _squeezed(**args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _SQUEEZED, json.dumps(args)], capture_output=True, text=True,
                          timeout=600)


def _tight(threads: int) -> int:
    """A budget a few MB above counting's floor in this process: what it
    holds and the input buffers of ``threads`` threads (``budget::run_floor``)."""
    return _rss() + (16 << 20) * (threads + 1) + (6 << 20)


def _decode_counts(data: bytes) -> tuple[tuple[int, ...], dict[bytes, int]]:
    """The engine's binary word counts (magic, 5 stats, types, entries)."""
    assert data[:8] == b"BPFCNT02"
    stats = struct.unpack_from("<5Q", data, 8)
    (n,) = struct.unpack_from("<Q", data, 48)
    p, out = 56, {}
    for _ in range(n):
        (length,) = struct.unpack_from("<I", data, p)
        key = data[p + 4:p + 4 + length]
        (count,) = struct.unpack_from("<Q", data, p + 4 + length)
        out[key] = count
        p += 12 + length
    return stats, out


@pytest.mark.parametrize("threads", [1, 2])
def test_spilled_counts_equal_the_in_memory_count(zipf_corpus, threads, tmp_path, monkeypatch) -> None:
    args = TrainOptions(threads=threads).settings()
    whole = _decode_counts(_native._count_files([zipf_corpus], args, "off", None))
    # A budget a few MB above the floor (what the process holds and the
    # input buffers): the tables spill, into TMPDIR, and the runs are gone
    # afterwards.
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    tight = TrainOptions(threads=threads, max_memory=_tight(threads)).settings()
    tiny = _native._count_files([zipf_corpus], tight, "off", None)
    assert _decode_counts(tiny) == whole
    assert list(tmp_path.iterdir()) == []


def test_spill_files_are_removed_when_counting_fails(tmp_path, monkeypatch) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_bytes(("ordinary words here\n" * 300_000).encode() + b"\xff\xfe broken\n")
    spill = tmp_path / "spill"
    spill.mkdir()
    monkeypatch.setenv("TMPDIR", str(spill))
    settings = TrainOptions(scheme="chars", threads=2, max_memory=_tight(2)).settings()
    with pytest.raises(bpeforge.InputError, match="invalid UTF-8"):
        _native._count_files([str(bad)], settings, "off", None)
    assert list(spill.iterdir()) == []


def test_a_merge_phase_over_budget_drops_the_rarest_types_like_min_word_count(zipf_corpus) -> None:
    full = bpeforge.train(zipf_corpus, vocab_size=600, threads=2, progress=False)
    assert full.metadata["memory_budget"]["word_types_dropped"] == 0
    # Room for the merge phase's fixed part and a few MB of word types.
    run = _squeezed(corpus=zipf_corpus)
    assert run.returncode == 0, run.stderr
    budget_line, merges_line = run.stdout.strip().splitlines()[-2:]
    budget = json.loads(budget_line)
    assert budget["effective_min_word_count"] > 1, budget
    assert budget["word_types_dropped"] > 0 and 0 < budget["pretoken_share_dropped"] < 1
    assert budget["spill_runs"] > 0
    explicit = bpeforge.train(zipf_corpus, vocab_size=600, threads=2, progress=False,
                              min_word_count=budget["effective_min_word_count"])
    assert json.loads(merges_line) == [[x.hex() if isinstance(x, bytes) else x for x in m] for m in explicit.merges]


def test_the_drop_is_said_on_the_progress_output(zipf_corpus, tmp_path) -> None:
    out = tmp_path / "m.json"
    run = _squeezed(cli=["train", zipf_corpus, "--vocab-size", "300", "--progress", "json", "-o", str(out)])
    assert run.returncode == 0, run.stderr
    events = [json.loads(line) for line in run.stderr.splitlines() if line.startswith("{")]
    (memory,) = [e for e in events if e.get("phase") == "memory"]
    assert memory["done"] > 0 and memory["unit"] == "word types dropped" and memory["effective_min_word_count"] > 1


def test_a_budget_below_any_runs_floor_is_refused_before_reading_the_input(tmp_path) -> None:
    """No corpus fits a budget below what the process holds plus counting's
    buffers or the merge phase's fixed part: refused before the input is
    read (a file of 16 GB, mostly a hole, that counting would take minutes
    to read), naming the option and the smallest budget that could work."""
    big = tmp_path / "big.txt"
    with open(big, "wb") as f:
        f.write(b"some words to start with\n" * 1000)
        f.truncate(16 << 30)
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "bpeforge", "train", str(big), "--max-memory", "60M",
                           "-o", str(tmp_path / "m.json")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert "--max-memory 60 MiB is below what any corpus needs" in proc.stderr and "give at least" in proc.stderr
    assert time.monotonic() - started < 30
    with pytest.raises(bpeforge.ParameterError, match="max_memory 1 MiB is below what any corpus needs"):
        bpeforge.train(big, vocab_size=300, progress=False, max_memory="1M")


def test_the_summary_says_what_the_budget_dropped_also_when_quiet(zipf_corpus, tmp_path) -> None:
    out = tmp_path / "m.json"
    for quiet in ([], ["--quiet"]):
        run = _squeezed(cli=["train", zipf_corpus, "--vocab-size", "300", "--progress", "off", *quiet,
                             "-o", str(out)])
        assert run.returncode == 0, run.stderr
        meta = bpeforge.load(out).metadata
        dropped = meta["memory_budget"]["word_types_dropped"]
        assert dropped > 0
        line = (run.stderr if quiet else run.stdout)
        assert f"memory budget: dropped {dropped} word types" in line, line
        assert f"occurring fewer than {meta['memory_budget']['effective_min_word_count']} times" in line


# The process's own peak (VmHWM) under a budget: counting spills and the
# merge phase drops types, on one thread and on several.
_PEAK = """
import json, sys
import bpeforge
corpus, budget, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
tok = bpeforge.train(corpus, vocab_size=2000, threads=threads, progress=False, max_memory=budget)
hwm = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(json.dumps({"hwm": hwm, "memory": tok.metadata["memory_budget"]}))
"""


@pytest.fixture(scope="module")
def multilingual_text(tmp_path_factory) -> str:
    import lzma

    source = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "multi-1m.txt.xz"
    if not source.exists():
        pytest.skip(f"needs the shared corpus {source}")
    path = tmp_path_factory.mktemp("peak") / "multi.txt"
    with lzma.open(source) as src, open(path, "wb") as dst:
        for _ in range(400_000):
            dst.write(src.readline())
    return str(path)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("mib", [100, 150])
def test_the_process_peak_keeps_within_the_budget(multilingual_text, threads, mib) -> None:
    budget = mib << 20
    run = subprocess.run([sys.executable, "-c", _PEAK, multilingual_text, str(budget), str(threads)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["memory"]["spill_runs"] > 0 or out["memory"].get("word_types_dropped"), out  # the budget bit
    assert out["hwm"] <= budget * 1.05, f"peak {out['hwm'] / 2**20:.1f} MiB for a {mib} MiB budget: {out}"


def test_the_peak_keeps_within_the_budget_with_a_decompressor(multilingual_text, tmp_path) -> None:
    """An .xz file's dictionary (64 MiB here, as `xz -9` writes) is outside
    the tables' estimates: counting leaves it room, read from the file."""
    import lzma

    packed = tmp_path / "multi.txt.xz"
    filters = [{"id": lzma.FILTER_LZMA2, "preset": 0, "dict_size": 64 << 20}]
    with open(multilingual_text, "rb") as src, lzma.open(packed, "wb", filters=filters) as dst:
        dst.write(src.read())
    budget = 150 << 20
    run = subprocess.run([sys.executable, "-c", _PEAK, str(packed), str(budget), "2"], capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["hwm"] <= budget * 1.05, f"peak {out['hwm'] / 2**20:.1f} MiB for a 150 MiB budget: {out}"


def _fresh_words(n_bytes: int) -> bytes:
    """Random 8-letter words, 16 to a line: every word a new type."""
    letters = bytes(ord("a") + b % 26 for b in range(256))
    raw = os.urandom(n_bytes).translate(letters)
    words = [raw[i:i + 8] for i in range(0, len(raw), 8)]
    return b"".join(b" ".join(words[i:i + 16]) + b"\n" for i in range(0, len(words), 16))


def test_spill_files_are_removed_on_ctrl_c(tmp_path) -> None:
    # The text arrives through a pipe, so the run is still counting, with
    # runs on disk, when the interrupt comes: no timing guesswork.
    fifo = tmp_path / "text.fifo"
    os.mkfifo(fifo)
    spill = tmp_path / "spill"
    spill.mkdir()
    env = {**os.environ, "TMPDIR": str(spill)}
    proc = subprocess.Popen([sys.executable, "-m", "bpeforge", "train", str(fifo), "--vocab-size", "300",
                             "--threads", "1", "--max-memory", "150M", "--progress", "off", "-o",
                             str(tmp_path / "m.json")], env=env, stderr=subprocess.PIPE)
    try:
        with open(fifo, "wb") as text:
            deadline = time.monotonic() + 120
            while not list(spill.glob("bpeforge-spill-*/run-*")):
                assert time.monotonic() < deadline and proc.poll() is None, "counting never spilled"
                text.write(_fresh_words(1 << 20))
                text.flush()
            proc.send_signal(signal.SIGINT)
            # Counting sees the interrupt at its next chunk.
            try:
                for _ in range(20):
                    text.write(_fresh_words(1 << 20))
                    text.flush()
            except BrokenPipeError:
                pass
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err.decode()
    assert list(spill.iterdir()) == []


def test_a_spill_the_disk_cannot_hold_is_refused_before_counting(zipf_corpus, tmp_path, monkeypatch) -> None:
    # A sparse file: its size says more text than the temporary folder could
    # take spilled, and the run stops before reading a byte of it.
    spill = tmp_path / "spill"
    spill.mkdir()
    free = shutil.disk_usage(spill).free
    huge = tmp_path / "huge.txt"
    with open(huge, "wb") as f:
        f.truncate(free * 4 + (1 << 30))
    monkeypatch.setenv("TMPDIR", str(spill))
    # A GiB beside what this process holds (a long test session holds more than a fresh one).
    budget = _rss() + (1 << 30)
    start = time.perf_counter()
    with pytest.raises(bpeforge.OutputError, match=r"TMPDIR.*raise max_memory") as e:
        bpeforge.train(str(huge), vocab_size=300, max_memory=budget, progress=False)
    assert str(spill) in str(e.value) and "free" in str(e.value)
    assert time.perf_counter() - start < 10
    # Tables that fit the budget need no disk: the same budget trains a small corpus.
    assert bpeforge.train(zipf_corpus, vocab_size=300, max_memory=_rss() + (1 << 30), progress=False).vocab_size == 300
