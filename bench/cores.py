#!/usr/bin/env python3
"""How busy every core is: training and encoding at 1, a few and all threads.

What it measures
----------------
The corpora are ``sK`` (K copies of multi-1m made by the shared
``scale_corpus.py``, each copy a new "language"; see ``bench/scale.py``),
built once into ``--workdir``, the two scales at the same time. With the
default ``--scales 10,50``:

* training (``bpeforge train CORPUS --vocab-size 32000 --threads N``, one
  fresh process per run, as a user runs it) on s10 at 1, 4 and all threads,
  and on s50 at all threads;
* encoding with the s10 model, at 1 and all threads: ``encode_file`` to
  ``.npy``, ``encode_batch(as_numpy=True)`` and ``encode_batch`` returning
  lists, on the first ``--encode-lines`` lines of multi-1m (read before the
  clock starts; one fresh process per run).

Each row gives the wall time, the phase times from the model's
``metadata.timings`` (wall, and CPU seconds where the build records them:
``count_cpu_seconds``, ``merge_cpu_seconds``), the peak RSS of the run's own
process (``ru_maxrss``, reaped with ``wait4``), the text rate (MB/s of UTF-8
text over the wall time of the whole run, or of the encode call alone) and
how busy the threads were (CPU seconds over wall seconds over threads).
Runs shorter than ``--short`` seconds are repeated ``--repeat`` times (the
rows alternating) and their median is shown with the spread.

``--python`` runs the measured processes with another interpreter (e.g. a
virtual environment with an older build), so two builds can be measured
side by side on the same machine. Results: ``--out`` (JSON and Markdown).

``--quick`` gives the figures a 2-core machine can check (the fallback
targets): s10 only, trained at 1, 2 and 16 threads, every run repeated
``--repeat`` times (default 5) in alternating order whatever its length,
no s50 and no encoding; after the table, the count and merge phases at 2
threads against 1 and the peak RSS at 2 against 1 and at 16 against 2
threads, each a ratio of medians with every measure's spread.

Usage::

    python bench/cores.py                              # s10 and s50 (16-core machine: under 8 minutes)
    python bench/cores.py --scales 2,4 --threads 2     # a small machine
    python bench/cores.py --quick                      # 2 cores: s10 at 1, 2 and 16 threads, 5 rounds
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import format_table, machine_info, median, run_child  # noqa: E402
from scale import SHARED, corpus_path  # noqa: E402

HERE = Path(__file__).resolve().parent

# One encode run in a fresh process: the lines are read and the model
# loaded before the clock starts; prints the call's seconds and bytes.
_ENCODE = r"""
import json, sys, time
import bpeforge
model, text, mode, threads, out = sys.argv[1:6]
threads = int(threads)
tok = bpeforge.load(model)
with open(text, encoding="utf-8") as f:
    lines = f.read().splitlines()
nbytes = sum(len(l.encode("utf-8")) for l in lines)
start, cpu = time.perf_counter(), time.process_time()
if mode == "file_npy":
    tok.encode_file(text, out, format="npy", threads=threads)
elif mode == "batch_numpy":
    tok.encode_batch(lines, threads=threads, as_numpy=True)
else:
    tok.encode_batch(lines, threads=threads)
print(json.dumps({"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu, "bytes": nbytes}))
"""


def train_job(corpus: Path, threads: int, args: argparse.Namespace, tag: str) -> dict[str, Any]:
    job = args.workdir / "jobs" / tag
    model = job / "model.json"
    job.mkdir(parents=True, exist_ok=True)
    model.unlink(missing_ok=True)
    argv = [args.python, "-m", "bpeforge", "train", str(corpus), "--vocab-size", str(args.vocab_size),
            "--threads", str(threads), "--output", str(model), "--progress", "off"]
    child = run_child(argv, os.environ, args.timeout, job)
    if child.returncode != 0 or not model.exists():
        return {"failed": "timed out" if child.timed_out else f"exit {child.returncode}: {child.stderr_tail}"}
    meta = json.loads(model.read_text(encoding="utf-8"))["metadata"]
    t = meta["timings"]
    b = t.get("merge_breakdown") or {}
    return {
        "wall_s": child.wall_s, "cpu_s": child.cpu_s, "peak_rss": child.maxrss_bytes,
        "bytes": meta["corpus"]["bytes"], "model": str(model),
        "count_s": t["count_seconds"], "count_cpu_s": t.get("count_cpu_seconds"),
        "merge_s": t["merge_seconds"], "merge_cpu_s": t.get("merge_cpu_seconds"),
        "word_table_s": b.get("word_table_seconds"), "pair_index_s": b.get("pair_index_seconds"),
        "loop_s": b.get("loop_seconds"),
    }


def encode_job(model: str, text: Path, mode: str, threads: int, args: argparse.Namespace, tag: str) -> dict[str, Any]:
    job = args.workdir / "jobs" / tag
    job.mkdir(parents=True, exist_ok=True)
    out = job / "ids.npy"
    argv = [args.python, "-c", _ENCODE, model, str(text), mode, str(threads), str(out)]
    child = run_child(argv, os.environ, args.timeout, job)
    if child.returncode != 0:
        return {"failed": "timed out" if child.timed_out else f"exit {child.returncode}: {child.stderr_tail}"}
    r = json.loads((job / "stdout.txt").read_text().strip().splitlines()[-1])
    out.unlink(missing_ok=True)
    return {"wall_s": r["seconds"], "cpu_s": r["cpu"], "peak_rss": child.maxrss_bytes, "bytes": r["bytes"]}


def encode_text(args: argparse.Namespace) -> Path:
    """The first ``--encode-lines`` lines of multi-1m, as one file."""
    out = args.workdir / f"encode-{args.encode_lines}.txt"
    if not out.exists():
        m1 = corpus_path("m1", args)
        with open(m1, "rb") as f, open(out.with_suffix(".tmp"), "wb") as g:
            for i, line in enumerate(f):
                if i >= args.encode_lines:
                    break
                g.write(line)
        out.with_suffix(".tmp").rename(out)
    return out


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The median run of each measure, and the wall time's spread."""
    ok = [r for r in runs if "failed" not in r]
    if not ok:
        return runs[0]
    out: dict[str, Any] = {"runs": len(ok)}
    for key in ok[0]:
        values = [r[key] for r in ok if isinstance(r.get(key), (int, float))]
        out[key] = median(values) if values else ok[0][key]
    walls = [r["wall_s"] for r in ok]
    out["spread"] = (min(walls), max(walls))
    return out


def fmt(x: Any, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def busy(wall: float | None, cpu: float | None, threads: int) -> str:
    if not wall or cpu is None:
        return "-"
    return f"{100 * cpu / wall / threads:.0f}%"


def table(rows: list[tuple[str, int, dict[str, Any]]], markdown: bool) -> str:
    headers = ["run", "threads", "wall s (spread)", "count s", "count CPU s", "merge s", "merge CPU s",
               "word table s", "pair index s", "loop s", "peak RSS GiB", "MB/s", "busy"]
    lines = []
    for name, threads, r in rows:
        if "failed" in r:
            lines.append([name, str(threads), f"failed: {r['failed'][:60]}"] + [""] * (len(headers) - 3))
            continue
        lo, hi = r["spread"]
        wall = f"{r['wall_s']:.2f}" + (f" ({lo:.2f}-{hi:.2f})" if r["runs"] > 1 else "")
        lines.append([
            name, str(threads), wall, fmt(r.get("count_s")), fmt(r.get("count_cpu_s"), 1), fmt(r.get("merge_s")),
            fmt(r.get("merge_cpu_s"), 1), fmt(r.get("word_table_s")), fmt(r.get("pair_index_s")),
            fmt(r.get("loop_s")), f"{r['peak_rss'] / 2**30:.2f}", f"{r['bytes'] / 1e6 / r['wall_s']:.1f}",
            busy(r["wall_s"], r.get("cpu_s"), threads),
        ])
    return format_table(headers, lines, markdown=markdown, right=[False] + [True] * (len(headers) - 1))


#: --quick: the thread counts trained on s10, and the fallback targets.
QUICK_THREADS = (1, 2, 16)
QUICK_TARGETS = {"count": 1.8, "merge": 1.6, "rss 2/1": 1.1, "rss 16/2": 1.25}


def spread(values: list[float], digits: int = 2) -> str:
    return f"{median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def quick_ratios(runs: dict[str, list[dict[str, Any]]], size: str) -> str:
    """The fallback targets' ratios from the --quick rows (medians of the
    alternating runs, each measure with its spread)."""
    by = {t: [r for r in runs[f"train {size}|{t}"] if "failed" not in r] for t in QUICK_THREADS}
    if not all(by.values()):
        return "ratios: a row failed"
    lines = []
    for phase, key in (("count", "count_s"), ("merge", "merge_s"), ("whole run", "wall_s")):
        one, two = ([r[key] for r in by[t]] for t in (1, 2))
        target = QUICK_TARGETS.get(phase)
        goal = f" (target >= {target}x)" if target else ""
        lines.append(f"{phase}: 1 thread {spread(one)} s, 2 threads {spread(two)} s: "
                     f"{median(one) / median(two):.2f}x faster{goal}")
    rss = {t: [r["peak_rss"] / 2**30 for r in by[t]] for t in QUICK_THREADS}
    lines.append(f"peak RSS GiB: 1 thread {spread(rss[1])}, 2 threads {spread(rss[2])}, 16 threads {spread(rss[16])}")
    for a, b in ((2, 1), (16, 2)):
        target = QUICK_TARGETS[f"rss {a}/{b}"]
        lines.append(f"peak RSS {a} threads / {b}: {median(rss[a]) / median(rss[b]):.2f}x (target <= {target}x)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scales", default="10,50",
                    help="two copy counts: the first trained at 1, 4 and all threads, the second at all")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="'all threads' (default: the cores)")
    ap.add_argument("--vocab-size", type=int, default=32000)
    ap.add_argument("--encode-lines", type=int, default=300_000)
    ap.add_argument("--repeat", type=int, default=None, help="runs of a short row (median shown; default 3, --quick 5)")
    ap.add_argument("--quick", action="store_true",
                    help="2-core figures: s10 at 1, 2 and 16 threads, every row repeated, then the targets' ratios")
    ap.add_argument("--short", type=float, default=20.0, help="a row whose first run is shorter is repeated")
    ap.add_argument("--python", default=sys.executable, help="interpreter of the measured processes")
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--workdir", type=Path, default=HERE / "results" / "cores")
    ap.add_argument("--corpus-dir", type=Path, default=None, help="a folder that already holds sK.txt files")
    ap.add_argument("--corpora-dir", type=Path, default=SHARED / "corpora")
    ap.add_argument("--scale-tool", type=Path, default=SHARED / "tools" / "scale_corpus.py")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "cores")
    args = ap.parse_args(argv)
    if args.repeat is None:
        args.repeat = 5 if args.quick else 3
    small, large = (f"s{k}" for k in args.scales.split(","))
    args.workdir.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)

    all_threads = args.threads
    if args.quick:
        corpora, text = {small: corpus_path(small, args)}, None
        trains = [(small, t) for t in QUICK_THREADS]
        encodes: list[tuple[str, int]] = []
        args.short = float("inf")
    else:
        corpus_path("m1", args)
        with ThreadPoolExecutor(3) as pool:  # the corpora and the encode text at once
            built = {size: pool.submit(corpus_path, size, args) for size in (small, large)}
            text_job = pool.submit(encode_text, args)
            corpora = {size: f.result() for size, f in built.items()}
            text = text_job.result()
        trains = [(small, t) for t in sorted({1, min(4, all_threads), all_threads})] + [(large, all_threads)]
        encodes = [(mode, t) for mode in ("file_npy", "batch_numpy", "batch_lists") for t in sorted({1, all_threads})]
    runs: dict[str, list[dict[str, Any]]] = {}
    model: str | None = None
    for round_ in range(args.repeat):
        for size, t in trains:
            key = f"train {size}|{t}"
            if round_ == 0 or all(r.get("wall_s", 1e9) < args.short for r in runs[key]):
                print(f"{key} (run {round_ + 1}) ...", file=sys.stderr, flush=True)
                runs.setdefault(key, []).append(train_job(corpora[size], t, args, f"train-{size}-{t}"))
            if encodes and size == small and t == all_threads and model is None and "model" in runs[key][-1]:
                # Encoding uses a copy: the job's folder is reused by later runs.
                model = str(args.workdir / f"model-{small}.json")
                Path(model).write_bytes(Path(runs[key][-1]["model"]).read_bytes())
        for mode, t in encodes:
            key = f"encode {mode}|{t}"
            if model is None or text is None:
                runs[key] = [{"failed": "no model (training failed)"}]
                continue
            if round_ == 0 or all(r.get("wall_s", 1e9) < args.short for r in runs[key]):
                print(f"{key} (run {round_ + 1}) ...", file=sys.stderr, flush=True)
                runs.setdefault(key, []).append(encode_job(model, text, mode, t, args, f"encode-{mode}-{t}"))

    rows = []
    for key, rs in runs.items():
        name, threads = key.split("|")
        rows.append((name, int(threads), summarize(rs)))
    info = machine_info()
    header = (f"bench/cores.py on {info['cpu_model']}, {info['nproc']} CPUs, {info['memory_gib']} GiB, load "
              f"{info['loadavg'][0]:.1f}; interpreter {args.python}")
    print(header)
    print(table(rows, markdown=False))
    ratios = quick_ratios(runs, small) if args.quick else ""
    if ratios:
        print(ratios)
    (args.out / "cores.json").write_text(json.dumps({"machine": info, "args": vars(args) | {
        k: str(v) for k, v in vars(args).items() if isinstance(v, Path)}, "runs": runs}, indent=1, default=str))
    (args.out / "cores.md").write_text(header + "\n\n" + table(rows, markdown=True) + "\n" + (f"\n{ratios}\n" if ratios else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
