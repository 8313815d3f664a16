"""The encoding bench's target table never passes a comparison
it could not make: a per-call peer that is missing or failed is named, and
only a peer skipped by design is left out of "the fastest of" them."""

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def encode_bench():
    sys.path.insert(0, str(BENCH))  # the bench imports its `_harness` module
    try:
        spec = importlib.util.spec_from_file_location("bench_encode", BENCH / "encode.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # its dataclasses look their module up
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("bench_encode", None)
        sys.path.remove(str(BENCH))


def line_row(tool, mb_s=None, status="ok", why=""):
    """A per-call row's summary: measured (``mb_s``), or stopped with ``status``."""
    row = {"mode": "encode/line", "threads": 1, "tool": tool, "status": status,
           "note": f"{status}: {why}" if status != "ok" else ""}
    if mb_s is not None:
        row["mb_s"] = mb_s
    return row


def fastest_peer_target(bench, summaries, steps):
    rows = bench._target_rows(summaries, {"steps": steps})
    (row,) = [r for r in rows if r[0].startswith("per call / fastest")]
    return row[1], row[3]


def test_both_peers_measured_take_the_faster(encode_bench):
    summaries = [line_row("bpeforge", 30.0), line_row("bpe-openai", 10.0), line_row("fastokens", 24.0)]
    assert fastest_peer_target(encode_bench, summaries, {"bpe-openai": {"status": "ok"}}) == ("1.25×", "pass")
    summaries[2] = line_row("fastokens", 26.0)
    assert fastest_peer_target(encode_bench, summaries, {"bpe-openai": {"status": "ok"}}) == ("1.15×", "MISS")


def test_a_missing_peer_is_named_not_left_out(encode_bench):
    # bpe-openai alone would give 3.00x and a pass.
    summaries = [line_row("bpeforge", 30.0), line_row("bpe-openai", 10.0),
                 line_row("fastokens", status="missing", why="ModuleNotFoundError: No module named 'fastokens'")]
    measured, result = fastest_peer_target(encode_bench, summaries, {"bpe-openai": {"status": "ok"}})
    assert (measured, result) == ("–", "not measured: fastokens missing")


def test_a_peer_not_asked_for_is_named(encode_bench):
    summaries = [line_row("bpeforge", 30.0), line_row("fastokens", 20.0)]
    measured, result = fastest_peer_target(encode_bench, summaries, {"bpe-openai": {"status": "ok"}})
    assert result == "not measured: bpe-openai not run"


def test_a_peer_skipped_by_design_is_left_out(encode_bench):
    # The trained vocabulary: bpe-openai loads only its built-in ones.
    skipped = {"bpe-openai": {"status": "skipped", "error": "bpe-openai loads only its built-in vocabularies"}}
    summaries = [line_row("bpeforge", 30.0), line_row("fastokens", 20.0),
                 line_row("bpe-openai", status="skipped", why="bpe-openai loads only its built-in vocabularies")]
    assert fastest_peer_target(encode_bench, summaries, skipped) == ("1.50×", "pass")
    assert fastest_peer_target(encode_bench, summaries[:2], skipped) == ("1.50×", "pass")


def test_a_failed_peer_is_named(encode_bench):
    summaries = [line_row("bpeforge", 30.0), line_row("bpe-openai", status="error", why="ValueError: boom"),
                 line_row("fastokens", 20.0)]
    _, result = fastest_peer_target(encode_bench, summaries, {"bpe-openai": {"status": "ok"}})
    assert result == "not measured: bpe-openai error"


def test_a_stopped_row_carries_its_status_to_the_target(encode_bench):
    # The status is the row's own, not read back from the words of its note.
    fastokens = encode_bench.Row("encode/line", 1, "fastokens")
    fastokens.stop("timeout", "timeout after 1800 s: see the logs")
    assert (fastokens.status, fastokens.note) == ("timeout", "timeout: timeout after 1800 s: see the logs")
    summaries = [line_row("bpeforge", 30.0), line_row("bpe-openai", 10.0), encode_bench.summarize(fastokens)]
    assert summaries[2]["status"] == "timeout" and "mb_s" not in summaries[2]
    _, result = fastest_peer_target(encode_bench, summaries, {"bpe-openai": {"status": "ok"}})
    assert result == "not measured: fastokens timeout"
    measured = encode_bench.Row("encode/line", 1, "fastokens")
    measured.runs.append({"status": "ok", "bytes": 1_000_000, "wall_s": 0.05, "cpu_s": 0.05, "tokens": 300_000})
    summary = encode_bench.summarize(measured)
    assert (summary["status"], summary["mb_s"]) == ("ok", 20.0)
