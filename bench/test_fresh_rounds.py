"""Bookkeeping of the fresh-text protocol (``bench/_fresh_rounds.py``).

Part of the test command (pyproject.toml lists bench/ in testpaths); alone:
``python -m pytest bench/test_fresh_rounds.py``.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import _fresh_rounds as F  # noqa: E402


def test_chunks_are_consecutive_disjoint_and_after_training():
    chunks = F.plan_chunks(first_line=200, round_lines=30, rounds=7)
    assert len(chunks) == 7
    assert chunks[0].start == 200  # training saw lines [0, 200)
    seen: set[int] = set()
    for before, after in zip(chunks, chunks[1:]):
        assert before.stop == after.start
    for chunk in chunks:
        assert len(chunk) == 30
        assert seen.isdisjoint(chunk)
        seen.update(chunk)


@pytest.mark.parametrize("bad", [(0, 0, 3), (0, 5, 0), (-1, 5, 3)])
def test_chunks_reject_bad_sizes(bad):
    with pytest.raises(ValueError):
        F.plan_chunks(*bad)


def test_order_alternates_and_every_tool_leads_in_turn():
    tools = ["a", "b", "c"]
    orders = [F.round_order(tools, r) for r in range(4)]
    assert orders == [["a", "b", "c"], ["c", "b", "a"], ["a", "b", "c"], ["c", "b", "a"]]
    for order in orders:
        assert sorted(order) == tools


def test_summary_reports_cold_round_alone_and_median_of_the_rest():
    s = F.summarize_rounds([1.0, 10.0, 30.0, 20.0, 50.0, 40.0])
    assert s["cold"] == 1.0
    assert s["warm_rounds"] == 5
    assert (s["median"], s["min"], s["max"]) == (30.0, 10.0, 50.0)
    even = F.summarize_rounds([1.0, 4.0, 2.0])
    assert even["median"] == 3.0
    assert F.summarize_rounds([]) == {"rounds": 0}
    assert "median" not in F.summarize_rounds([5.0])


def test_worker_encodes_each_rounds_own_lines_and_reports_memory():
    lines = [f"line {i}" for i in range(6)]
    seen: list[str] = []

    def encode(text: str) -> list[int]:
        seen.append(text)
        return list(text.encode())

    out = io.StringIO()
    F.worker_loop(encode, lines, round_lines=2,
                  commands=iter(["round 1\n", "round 0\n", "round 3\n", "done\n", "round 2\n"]), out=out)
    out.seek(0)
    replies = []
    while (reply := F.read_reply(out))["status"] != "crash":
        replies.append(reply)
    assert [r["status"] for r in replies] == ["ready", "ok", "ok", "error", "done"]
    assert seen == [F.WARMUP_TEXT, "line 2", "line 3", "line 0", "line 1"]
    assert replies[1]["tokens"] == len("line 2") + len("line 3")
    assert replies[1]["bytes"] == replies[1]["tokens"]
    assert isinstance(replies[-1]["rss_growth_kib"], int)


def test_reply_reader_skips_other_output():
    stream = io.StringIO("library chatter\n" + F.REPLY + '{"status": "ok"}\n')
    assert F.read_reply(stream) == {"status": "ok"}
    assert F.read_reply(stream)["status"] == "crash"
