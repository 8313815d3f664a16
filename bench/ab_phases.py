#!/usr/bin/env python3
"""A/B of two bpeforge builds on one corpus: phase times, peak RSS, merges.

    python bench/ab_phases.py --corpus /work/scale/s10.txt \\
        --build main=/work/venv-main --build new=/work/venv-mergespeed --repeats 3

Each build is a virtualenv with bpeforge installed (its ``bin/bpeforge`` is
run). Runs alternate between the builds (A B A B ...), so that a machine's
changing load falls on both alike; each run is
``/usr/bin/time -v bpeforge train CORPUS --vocab-size V --threads T -o ...``.
Phase times come from the saved model's ``metadata["timings"]`` (count,
word table, pair index, loop, merge phase), peak RSS from ``/usr/bin/time``'s
"Maximum resident set size" (the trainer process itself). Prints the medians
per build, the ratio new/old, the load average, and whether every build
learned the same merges (and merge counts) as the first.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile


def run_once(venv, corpus, vocab, threads, out):
    cmd = ["/usr/bin/time", "-v", os.path.join(venv, "bin", "bpeforge"), "train", corpus,
           "--vocab-size", str(vocab), "--threads", str(threads), "-o", out, "--progress", "off"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr).group(1))
    with open(out) as f:
        model = json.load(f)
    t = model["metadata"]["timings"]
    b = t.get("merge_breakdown") or {}
    row = {
        "count": t["count_seconds"],
        "word table": b.get("word_table_seconds", float("nan")),
        "pair index": b.get("pair_index_seconds", float("nan")),
        "loop": b.get("loop_seconds", float("nan")),
        "merge phase": t["merge_seconds"],
        "total": t["count_seconds"] + t["merge_seconds"],
        "peak GB": rss_kb * 1024 / 1e9,
    }
    return row, (model["merges"], model["merge_counts"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--build", action="append", required=True, help="NAME=VENV (the first is the baseline)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--vocab-size", type=int, default=32000)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    builds = [b.split("=", 1) for b in args.build]
    rows = {name: [] for name, _ in builds}
    merges = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            for name, venv in builds:
                out = os.path.join(tmp, f"{name}.json")
                row, m = run_once(venv, args.corpus, args.vocab_size, args.threads, out)
                rows[name].append(row)
                merges.setdefault(name, m)
                print(f"run {r + 1} {name}: " + ", ".join(f"{k} {v:.2f}" for k, v in row.items()) + f"  (load {os.getloadavg()[0]:.1f})", flush=True)
    keys = list(rows[builds[0][0]][0])
    print("\n| build | " + " | ".join(keys) + " |")
    print("|---|" + "---:|" * len(keys))
    med = {name: {k: statistics.median(r[k] for r in rows[name]) for k in keys} for name, _ in builds}
    for name, _ in builds:
        print(f"| {name} | " + " | ".join(f"{med[name][k]:.2f}" for k in keys) + " |")
    base = builds[0][0]
    for name, _ in builds[1:]:
        print(f"| {name}/{base} | " + " | ".join(f"{med[name][k] / med[base][k]:.2f}x" for k in keys) + " |")
    same = all(merges[name] == merges[base] for name, _ in builds)
    print(f"\nmerges and merge counts identical across builds: {same}")


if __name__ == "__main__":
    main()
