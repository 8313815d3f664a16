#!/usr/bin/env python3
"""A/B: does progress reporting cost training time? Two builds of bpeforge
(unpacked wheels, e.g. before and after a progress change) train the same
corpus alternately, each run in a fresh process; progress goes as JSON lines
to fd 2 (the CLI's path) and, for the second build, also to a Python
callback. Prints per run and the medians of the training call's wall and CPU
time (``getrusage`` of the child, all threads), the phase times from the
model's metadata, and each variant's ratio to the first build; the merges of
every run must be identical.

    mkdir -p /tmp/ab/old /tmp/ab/new
    (cd /tmp/ab/old && unzip -q OLD.whl); (cd /tmp/ab/new && unzip -q NEW.whl)
    xz -dc multi-1m.txt.xz > /tmp/ab/multi-1m.txt
    python bench/progress_ab.py /tmp/ab/old /tmp/ab/new /tmp/ab/multi-1m.txt --rounds 6
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

RUN = r"""
import hashlib, json, resource, sys, time
sys.path.insert(0, sys.argv[1])
import bpeforge
progress = {"json": "json", "callback": (lambda e: None)}[sys.argv[2]]
t = time.perf_counter()
c = resource.getrusage(resource.RUSAGE_SELF)
tok = bpeforge.train([sys.argv[3]], vocab_size=int(sys.argv[4]), threads=2, progress=progress)
ru = resource.getrusage(resource.RUSAGE_SELF)
tm = tok.metadata["timings"]
print(json.dumps({"total": time.perf_counter() - t,
                  "cpu": ru.ru_utime + ru.ru_stime - c.ru_utime - c.ru_stime,
                  "count": tm["count_seconds"], "merge": tm["merge_seconds"],
                  "merges": hashlib.sha256(repr(tok.merges).encode()).hexdigest()[:12]}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("corpus")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--vocab-size", type=int, default=32000)
    args = ap.parse_args()
    variants = [(args.old, "json"), (args.new, "json"), (args.new, "callback")]
    results: dict[tuple[str, str], list[dict]] = {v: [] for v in variants}
    for r in range(args.rounds):
        for v in variants if r % 2 == 0 else variants[::-1]:
            out = subprocess.run([sys.executable, "-c", RUN, v[0], v[1], args.corpus, str(args.vocab_size)],
                                 capture_output=True, text=True, check=True)
            res = json.loads(out.stdout.strip().splitlines()[-1])
            results[v].append(res)
            print(r, v, {k: round(x, 2) if isinstance(x, float) else x for k, x in res.items()}, flush=True)
    assert len({x["merges"] for rs in results.values() for x in rs}) == 1, "merges differ between runs"
    print("load average:", os.getloadavg())
    med = {v: {k: statistics.median(x[k] for x in rs) for k in ("total", "cpu", "count", "merge")}
           for v, rs in results.items()}
    base = med[variants[0]]
    for v, m in med.items():
        print(v, {k: round(x, 2) for k, x in m.items()},
              f"wall ratio {m['total'] / base['total']:.3f}, cpu ratio {m['cpu'] / base['cpu']:.3f}")


if __name__ == "__main__":
    main()
