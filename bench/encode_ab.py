#!/usr/bin/env python3
"""A/B of bpeforge builds' encoding, in one process, runs alternating.

On a shared machine, fresh-process timings of one build drift by +-20%
from one minute to the next, far more than most single changes. Here every
build's native module is loaded side by side in one process and the builds
take turns (ABBA order), so drifts fall on all of them alike; the table
gives each build's median and minimum CPU seconds (the minimum is the
least disturbed run).

Each BUILD is a directory holding ``bpeforge/_native*.so`` (e.g. a release
wheel unpacked: ``unzip WHEEL 'bpeforge/_native*' -d DIR``). The native
classes are called directly, as the facade's default call does:

* ``line``: ``encode(line, None, None, None, 0)`` for each line;
* ``long``: one ``encode`` of all the lines joined by ``\\n``;
* ``batch``: ``encode_batch(lines, threads)``, the collector paused as the
  facade does (``threads`` from ``--threads``, each in turn); with
  ``--batch-size N``, one call per N lines (what a data loader does).

With ``--fresh`` each run gets a newly loaded tokenizer (a cold piece cache
and id table, as in ``bench/encode.py``'s one call per process). With
``--processes`` each run is a new Python process, as in ``bench/encode.py``:
it loads one build and the model, warms up on the first line, times one
call and exits, so the call also pays for the memory new to the process
(its page faults), which in one long process is paid only once.

    python bench/encode_ab.py --corpus multi-200k.txt --model o200k.json \\
        --mode batch --threads 1,2 --runs 9 BUILD_A BUILD_B

For small changes, instruction counts are steadier still: ``valgrind
--tool=callgrind --toggle-collect='*__pymethod_encode*'`` on one run.
"""

from __future__ import annotations

import argparse
import gc
import importlib.machinery
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType


def load_native(build: Path, tag: int) -> ModuleType:
    """The native module in ``build/bpeforge``, under a name of its own."""
    so = next((build / "bpeforge").glob("_native*.so"))
    name = f"ab{tag}._native"
    loader = importlib.machinery.ExtensionFileLoader(name, str(so))
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def read_lines(path: Path, limit: int) -> list[str]:
    """The first ``limit`` lines, without line ends (as bench/encode.py)."""
    lines = []
    with open(path, "rb") as f:
        for raw in f:
            if len(lines) >= limit:
                break
            lines.append(raw.rstrip(b"\n").rstrip(b"\r").decode())
    return lines


def timed(tok, mode: str, lines: list[str], text: str, threads: int, batch_size: int) -> tuple[float, float]:
    """Wall and CPU seconds of one run (the result freed afterwards, untimed)."""
    w, c = time.perf_counter(), time.process_time()
    if mode == "line":
        enc = tok.encode
        out = [enc(line, None, None, None, 0) for line in lines]
    elif mode == "long":
        out = tok.encode(text, None, None, None, 0)
    else:
        gc.disable()
        try:
            out = [tok.encode_batch(lines[i:i + batch_size], threads) for i in range(0, len(lines), batch_size)]
        finally:
            gc.enable()
    w, c = time.perf_counter() - w, time.process_time() - c
    del out
    return w, c


def warm_up(tok, mode: str, lines: list[str], threads: int) -> None:
    """What ``bench/encode.py`` runs before its timed call: the first line."""
    if mode == "batch":
        tok.encode_batch(lines[:1], threads)
    else:
        tok.encode(lines[0], None, None, None, 0)


def child_main(args: argparse.Namespace) -> None:
    """One run in this (new) process; prints its wall and CPU seconds."""
    native = load_native(args.builds[0], 0)
    lines = read_lines(args.corpus, args.lines)
    tok = native.NativeTokenizer.load(str(args.model))
    warm_up(tok, args.mode, lines, args.child_threads)
    gc.collect()
    wall, cpu = timed(tok, args.mode, lines, "\n".join(lines), args.child_threads, args.batch_size or len(lines))
    print(json.dumps([wall, cpu]))


def run_in_process(args: argparse.Namespace, build: Path, threads: int) -> tuple[float, float]:
    """One run of `build` at `threads` in a new process (see `child_main`)."""
    argv = [sys.executable, __file__, str(build), "--corpus", str(args.corpus), "--model", str(args.model),
            "--mode", args.mode, "--lines", str(args.lines), "--batch-size", str(args.batch_size),
            "--child-threads", str(threads)]
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    wall, cpu = json.loads(out.strip().splitlines()[-1])
    return wall, cpu


def ab_jobs(args: argparse.Namespace) -> list[tuple[int, int]]:
    """Every (build number, thread count) to time."""
    threads = [int(t) for t in args.threads.split(",")] if args.mode == "batch" else [1]
    return [(k, t) for k in range(len(args.builds)) for t in threads]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("builds", nargs="+", type=Path)
    p.add_argument("--corpus", type=Path, required=True, help="plain text, one text per line")
    p.add_argument("--model", type=Path, required=True, help="a saved bpeforge model")
    p.add_argument("--mode", choices=["line", "long", "batch"], default="batch")
    p.add_argument("--threads", default="1", help="batch thread counts, e.g. 1,2")
    p.add_argument("--batch-size", type=int, default=0, help="lines per encode_batch call (default: all)")
    p.add_argument("--lines", type=int, default=50_000)
    p.add_argument("--runs", type=int, default=9)
    p.add_argument("--fresh", action="store_true", help="a new tokenizer for every run")
    p.add_argument("--processes", action="store_true", help="a new process for every run")
    p.add_argument("--child-threads", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child_threads is not None:
        return child_main(args)
    if args.processes:
        return compare_processes(args)

    natives = [load_native(b, k) for k, b in enumerate(args.builds)]
    lines = read_lines(args.corpus, args.lines)
    batch_size = args.batch_size or len(lines)
    text = "\n".join(lines)
    jobs = ab_jobs(args)
    toks = {k: n.NativeTokenizer.load(str(args.model)) for k, n in enumerate(natives)}
    times: dict[tuple[int, int], list[tuple[float, float]]] = {job: [] for job in jobs}
    for run in range(args.runs + 1):  # run 0 warms up and is not counted
        for k, t in jobs if run % 2 else jobs[::-1]:
            if args.fresh:
                toks[k] = natives[k].NativeTokenizer.load(str(args.model))
                toks[k].encode(lines[0], None, None, None, 0)
            gc.collect()
            result = timed(toks[k], args.mode, lines, text, t, batch_size)
            if run:
                times[(k, t)].append(result)
    report(args, lines, times)


def compare_processes(args: argparse.Namespace) -> None:
    """As `main`, each run in a new process, the builds taking turns."""
    lines = read_lines(args.corpus, args.lines)
    jobs = ab_jobs(args)
    times: dict[tuple[int, int], list[tuple[float, float]]] = {job: [] for job in jobs}
    for run in range(args.runs):
        for k, t in jobs if run % 2 else jobs[::-1]:
            times[(k, t)].append(run_in_process(args, args.builds[k], t))
    report(args, lines, times)


def report(args: argparse.Namespace, lines: list[str], times: dict) -> None:
    """Each build's and thread count's medians."""
    mb = sum(len(line.encode()) for line in lines) / 1e6
    calls = f", {args.batch_size} lines per call" if args.mode == "batch" and args.batch_size else ""
    print(f"{args.mode}, {len(lines)} lines ({mb:.1f} MB){calls}, {args.runs} runs each")
    for (k, t), xs in times.items():
        walls, cpus = [x[0] for x in xs], [x[1] for x in xs]
        print(f"{str(args.builds[k]):40} threads={t}  wall median {statistics.median(walls):.3f} s"
              f"  cpu median {statistics.median(cpus):.3f} s  cpu min {min(cpus):.3f} s")


if __name__ == "__main__":
    main()
