"""Fresh-text rounds: encoding measured the way users encode.

Users encode text they have not encoded before, so a benchmark that repeats
the same lines measures a warm cache on text already seen. This module holds
the protocol of ``bench/encode.py``'s ``encode/fresh`` mode, for every tool
alike:

* Round ``r`` encodes, one call per line, the ``r``-th of consecutive
  disjoint chunks of the corpus's lines (:func:`plan_chunks`), so no tool has
  encoded a round's lines before. The chunks start after the lines a trained
  vocabulary was trained on.
* Every tool lives in its own long-lived process (:func:`worker_loop`) that
  loads its model and all the rounds' lines once, so that the memory its
  caches hold after the run is its own RSS growth, and so that what it keeps
  between calls carries from round to round as it would for a user.
* Tools run in alternating order from round to round (:func:`round_order`):
  forward on even rounds, backward on odd ones, so slow drifts of a shared
  machine's load spread over all tools.
* Each tool's figure (:func:`summarize_rounds`) is its median MB/s over the
  rounds after the first, with min and max; the first round is reported on
  its own (``cold``: whatever the tool keeps between calls starts empty).
"""

from __future__ import annotations

import gc
import json
import resource
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

#: A line no round encodes, used to warm each tool up before its baseline RSS.
WARMUP_TEXT = "Warm-up: one short line, outside every round."

#: Prefix of the worker's protocol lines on stdout (anything else is ignored).
REPLY = "@@fresh "


def plan_chunks(first_line: int, round_lines: int, rounds: int) -> list[range]:
    """Line-index ranges of the rounds: consecutive, disjoint, starting at
    ``first_line`` (relative to the corpus's first line)."""
    if round_lines < 1 or rounds < 1 or first_line < 0:
        raise ValueError("round_lines and rounds must be >= 1, first_line >= 0")
    return [range(first_line + r * round_lines, first_line + (r + 1) * round_lines)
            for r in range(rounds)]


def round_order(tools: Sequence[str], round_index: int) -> list[str]:
    """The order the tools run in round ``round_index`` (0-based):
    as given on even rounds, reversed on odd ones."""
    return list(tools) if round_index % 2 == 0 else list(reversed(tools))


def summarize_rounds(mb_s: Sequence[float]) -> dict:
    """``cold`` (first round), and ``median``, ``min``, ``max`` over the
    other rounds (``warm``), as MB/s; ``warm_rounds`` counts them."""
    if not mb_s:
        return {"rounds": 0}
    warm = sorted(mb_s[1:])
    out = {"rounds": len(mb_s), "cold": mb_s[0], "warm_rounds": len(warm)}
    if warm:
        mid = len(warm) // 2
        out["median"] = warm[mid] if len(warm) % 2 else (warm[mid - 1] + warm[mid]) / 2
        out["min"], out["max"] = warm[0], warm[-1]
    return out


def memory_kib() -> dict:
    """This process's ``VmRSS`` and ``VmHWM`` (KiB), from /proc."""
    out = {}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            key = line.split(":", 1)[0]
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(line.split()[1])
    except (OSError, ValueError):
        pass
    return out


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def encode_round(encode: Callable[[str], Sequence[int]], lines: Sequence[str]) -> dict:
    """Time one call per line over ``lines``; the ids are counted, then dropped."""
    cpu = _cpu_seconds()
    start = time.perf_counter()
    tokens = 0
    for line in lines:
        tokens += len(encode(line))
    wall = time.perf_counter() - start
    return {"wall_s": wall, "cpu_s": _cpu_seconds() - cpu, "tokens": tokens,
            "bytes": sum(len(line.encode("utf-8")) for line in lines)}


def _reply(obj: dict, out) -> None:
    out.write(REPLY + json.dumps(obj) + "\n")
    out.flush()


def worker_loop(encode: Callable[[str], Sequence[int]], lines: Sequence[str],
                round_lines: int, commands=None, out=None) -> None:
    """A tool's process: warm up, note the baseline RSS, then for each command
    ``round R`` encode lines ``[R * round_lines, (R + 1) * round_lines)`` of
    ``lines`` and reply with the timing; ``done`` replies with the RSS growth
    since the baseline (after a garbage collection) and ends the loop."""
    commands = sys.stdin if commands is None else commands
    out = sys.stdout if out is None else out
    encode(WARMUP_TEXT)
    gc.collect()
    base = memory_kib()
    _reply({"status": "ready", "baseline_rss_kib": base.get("VmRSS")}, out)
    for command in commands:
        words = command.split()
        if words[:1] == ["round"]:
            r = int(words[1])
            chunk = lines[r * round_lines:(r + 1) * round_lines]
            if len(chunk) < round_lines:
                _reply({"status": "error", "error": f"round {r}: only {len(chunk)} lines left"}, out)
                continue
            _reply({"status": "ok", "round": r, **encode_round(encode, chunk)}, out)
        elif words[:1] == ["done"]:
            gc.collect()
            end = memory_kib()
            growth = end.get("VmRSS", 0) - base.get("VmRSS", 0)
            _reply({"status": "done", "rss_growth_kib": growth,
                    "rss_kib": end.get("VmRSS"), "hwm_kib": end.get("VmHWM")}, out)
            return


def read_reply(stream) -> dict:
    """The next protocol line of a worker's stdout (other output skipped);
    ``{"status": "crash"}`` at end of stream."""
    for line in stream:
        if line.startswith(REPLY):
            return json.loads(line[len(REPLY):])
    return {"status": "crash", "error": "worker ended without replying"}
