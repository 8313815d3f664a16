#!/usr/bin/env python3
"""How training scales to the whole corpus: multi-1m up to 50 copies of it.

What it measures
----------------
Every run is one fresh ``bpeforge train CORPUS --vocab-size 32000 --threads N
--output M.json`` process, tried as a user would: the CLI on a plain-text
file, bytes scheme, gpt2 pre-tokenizer, default options. From the saved
model's ``metadata`` come the word types, symbols, and the phase times
(``count``: reading, pre-tokenizing and counting; ``word table``, ``pair
index`` and ``loop``: the merge phase); the process's peak RSS is the
``ru_maxrss`` of that process itself, reaped with ``wait4`` (the same figure
``/usr/bin/time -v`` prints as "Maximum resident set size").

The corpora are ``m1`` (``multi-1m.txt.xz`` from ``--corpora-dir``,
decompressed once) and ``sK``: K copies of it made by the shared
``scale_corpus.py`` (each copy becomes a new "language" by a
length-preserving letter substitution, so word types grow linearly with K).
They are built once into ``--workdir`` (or found in ``--corpus-dir``).

Rows, all from this one run:

* ``bpeforge`` on each ``--sizes`` corpus (exact: no word types dropped);
* ``bpeforge --max-memory B`` for each ``--budget SIZE=B`` (the run's
  ``metadata`` says how many word types the budget dropped, and what share
  of the corpus's pre-tokens they were);
* SentencePiece (``sentencepiece`` from PyPI, BPE, 32k, ``--threads``
  threads, character_coverage 0.9995, every sentence: input_sentence_size=0)
  on each ``--spm`` corpus. SentencePiece has no memory budget, so a run is
  stopped when its RSS passes ``--rss-cap`` (default: 90% of the machine's
  memory) rather than let the OOM killer pick a process; such a row says
  "stopped at the cap".

Then the growth checks: time and peak memory per word type
from the smallest to the largest ``sK`` (flat within 15%), and counting
throughput per thread from ``m1`` to the largest corpus (falls no more than
20%). Last, the rate at which a new process faults in fresh memory (see
``_harness.fresh_memory_rate``): on a virtual machine whose host backs
guest memory lazily it is a few GB/s or less, and every GB a phase
allocates costs that much time on top of the work. Results go to
``--out`` (``scale.json``, ``scale.md``).

Usage::

    python bench/scale.py                                      # m1, s10; SentencePiece on s10
    python bench/scale.py --sizes m1,s10,s20,s50 --budget s10=1G --budget s50=4G --spm s10,s20
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import format_table, fresh_memory_rate, machine_info, median, package_version, run_child, total_memory_gib  # noqa: E402

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared"

#: The growth limits.
MAX_PER_TYPE_GROWTH = 0.15
MAX_COUNT_RATE_FALL = 0.20


# ---- corpora ---------------------------------------------------------------


def corpus_path(size: str, args: argparse.Namespace) -> Path:
    """The plain-text file for ``m1`` or ``sK`` (built once, then reused)."""
    for folder in (args.corpus_dir, args.workdir):
        if folder and (folder / f"{size}.txt").exists():
            return folder / f"{size}.txt"
    m1 = args.workdir / "m1.txt"
    if not m1.exists():
        src = args.corpora_dir / "multi-1m.txt.xz"
        if not src.exists():
            raise SystemExit(f"{src} not found; pass --corpora-dir")
        print(f"decompressing {src} ...", file=sys.stderr, flush=True)
        with lzma.open(src, "rb") as fin, open(m1.with_suffix(".tmp"), "wb") as fout:
            shutil.copyfileobj(fin, fout, 1 << 20)
        m1.with_suffix(".tmp").rename(m1)
    if size == "m1":
        return m1
    if not (size.startswith("s") and size[1:].isdigit()):
        raise SystemExit(f"unknown corpus size {size!r}: use m1 or sK (K copies of m1, e.g. s10)")
    out = args.workdir / f"{size}.txt"
    if not args.scale_tool.exists():
        raise SystemExit(f"{args.scale_tool} not found; pass --scale-tool (the shared scale_corpus.py)")
    print(f"building {out} with {args.scale_tool.name} ...", file=sys.stderr, flush=True)
    tmp = out.with_suffix(".tmp")
    subprocess.run([sys.executable, str(args.scale_tool), str(m1), size[1:], str(tmp)], check=True)
    tmp.rename(out)
    return out


def count_lines(path: Path) -> int:
    n = 0
    with open(path, "rb") as f:
        while block := f.read(1 << 24):
            n += block.count(b"\n")
    return n


# ---- runs ------------------------------------------------------------------


def run_bpeforge(path: Path, args: argparse.Namespace, tag: str, max_memory: str | None) -> dict[str, Any]:
    job = args.workdir / "jobs" / tag
    model = job / "model.json"
    job.mkdir(parents=True, exist_ok=True)
    model.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "bpeforge", "train", str(path), "--vocab-size", str(args.vocab_size),
            "--threads", str(args.threads), "--output", str(model), "--progress", "human"]
    if max_memory:
        argv += ["--max-memory", max_memory]
    print(f"bpeforge {tag} ...", file=sys.stderr, flush=True)
    child = run_child(argv, os.environ, args.timeout, job)
    if child.returncode != 0 or not model.exists():
        why = "timed out" if child.timed_out else f"exit {child.returncode}"
        return {"failed": why, "log": child.stderr_tail, "wall_s": child.wall_s, "peak_rss": child.maxrss_bytes}
    meta = json.loads(model.read_text(encoding="utf-8"))["metadata"]
    timings = meta["timings"]
    parts = timings.get("merge_breakdown") or {}
    return {
        "wall_s": child.wall_s,
        "peak_rss": child.maxrss_bytes,
        "count_s": timings["count_seconds"],
        "merge_s": timings["merge_seconds"],
        "word_table_s": parts.get("word_table_seconds"),
        "pair_index_s": parts.get("pair_index_seconds"),
        "loop_s": parts.get("loop_seconds"),
        "word_types": meta["word_types"],
        "symbols": meta["word_table"]["symbols"],
        "budget": meta.get("memory_budget"),
        "model": str(model),
    }


SPM_WORKER = """
import sys, sentencepiece as spm
corpus, prefix, vocab, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
spm.SentencePieceTrainer.train(input=corpus, model_prefix=prefix, model_type="bpe", vocab_size=vocab,
    num_threads=threads, character_coverage=0.9995, input_sentence_size=0, train_extremely_large_corpus=True,
    minloglevel=1)
"""


def run_spm(path: Path, args: argparse.Namespace, tag: str) -> dict[str, Any]:
    job = args.workdir / "jobs" / tag
    job.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-c", SPM_WORKER, str(path), str(job / "spm"), str(args.vocab_size), str(args.threads)]
    print(f"sentencepiece {tag} ...", file=sys.stderr, flush=True)
    child = run_child(argv, os.environ, args.timeout, job, rss_cap_bytes=args.rss_cap)
    if child.stopped_at_cap:
        return {"failed": f"stopped at the RSS cap ({args.rss_cap / 2**30:.1f} GiB)", "wall_s": child.wall_s,
                "peak_rss": child.maxrss_bytes}
    if child.returncode != 0:
        why = "timed out" if child.timed_out else f"exit {child.returncode}"
        return {"failed": why, "log": child.stderr_tail, "wall_s": child.wall_s, "peak_rss": child.maxrss_bytes}
    return {"wall_s": child.wall_s, "peak_rss": child.maxrss_bytes}


# ---- table -----------------------------------------------------------------


def secs(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def gb(x: float | None) -> str:
    return "-" if x is None else f"{x / 1e9:.2f} GB"


def dropped(run: dict[str, Any]) -> str:
    b = run.get("budget")
    if not b:
        return "none"
    types = b.get("word_types_dropped", 0)
    share = b.get("pretoken_share_dropped", 0.0)
    spilled = f"; {b['spill_runs']} runs spilled" if b.get("spill_runs") else ""
    dropped_text = f"{types:,} types ({share:.2%} of pre-tokens), min_word_count {b['effective_min_word_count']}" if types else "none"
    return dropped_text + spilled


def table(rows: list[dict[str, Any]]) -> str:
    headers = ["run", "corpus", "text", "word types", "symbols", "count s", "word table s", "pair index s",
               "loop s", "total s", "peak RSS", "B/type", "count MB/s/thread", "dropped"]
    out = []
    for r in rows:
        run = r["run"]
        text = f"{r['bytes'] / 1e9:.2f} GB, {r['lines'] / 1e6:.1f}M lines"
        if "failed" in run:
            out.append([r["who"], r["corpus"], text, "-", "-", "-", "-", "-", "-", secs(run["wall_s"]),
                        gb(run["peak_rss"]), "-", "-", run["failed"]])
            continue
        types = run.get("word_types")
        per_type = f"{run['peak_rss'] / types:.0f}" if types else "-"
        rate = f"{r['bytes'] / 1e6 / run['count_s'] / r['threads']:.1f}" if run.get("count_s") else "-"
        out.append([r["who"], r["corpus"], text, f"{types / 1e6:.1f}M" if types else "-",
                    f"{run['symbols'] / 1e6:.0f}M" if run.get("symbols") else "-",
                    secs(run.get("count_s")), secs(run.get("word_table_s")), secs(run.get("pair_index_s")),
                    secs(run.get("loop_s")), secs(run["wall_s"]), gb(run["peak_rss"]), per_type, rate,
                    dropped(run) if r["who"].startswith("bpeforge") else "-"])
    return format_table(headers, out)


def growth(rows: list[dict[str, Any]]) -> list[str]:
    """The flat-growth checks over the exact bpeforge rows."""
    exact = [r for r in rows if r["who"] == "bpeforge" and "failed" not in r["run"]]
    scaled = [r for r in exact if r["corpus"].startswith("s")]
    lines = []
    if len(scaled) >= 2:
        lo, hi = scaled[0], scaled[-1]
        for what, key in (("time", "wall_s"), ("peak RSS", "peak_rss")):
            a = lo["run"][key] / lo["run"]["word_types"]
            b = hi["run"][key] / hi["run"]["word_types"]
            change = b / a - 1
            ok = "ok" if change <= MAX_PER_TYPE_GROWTH else "MISSED"
            lines.append(f"{what} per word type, {lo['corpus']} -> {hi['corpus']}: {change:+.1%} "
                         f"(limit +{MAX_PER_TYPE_GROWTH:.0%}) {ok}")
    if exact and exact[0]["corpus"] == "m1" and len(exact) >= 2:
        lo, hi = exact[0], exact[-1]
        a = lo["bytes"] / lo["run"]["count_s"]
        b = hi["bytes"] / hi["run"]["count_s"]
        fall = 1 - b / a
        ok = "ok" if fall <= MAX_COUNT_RATE_FALL else "MISSED"
        lines.append(f"counting throughput, m1 -> {hi['corpus']}: {-fall:+.1%} (limit -{MAX_COUNT_RATE_FALL:.0%}) {ok}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpora-dir", type=Path, default=SHARED / "corpora")
    ap.add_argument("--scale-tool", type=Path, default=SHARED / "tools" / "scale_corpus.py")
    ap.add_argument("--corpus-dir", type=Path, help="a folder that already holds m1.txt, s10.txt, ...")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/bpeforge-scale"))
    ap.add_argument("--sizes", default="m1,s10", help="comma-separated: m1, sK (K copies of multi-1m)")
    ap.add_argument("--budget", action="append", default=[], metavar="SIZE=BYTES",
                    help="also run SIZE with --max-memory BYTES (repeatable), e.g. s50=4G")
    ap.add_argument("--spm", default="s10", help="comma-separated sizes to run SentencePiece on ('' for none)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--vocab-size", type=int, default=32000)
    ap.add_argument("--repeats", type=int, default=1, help="bpeforge runs per exact row (medians)")
    ap.add_argument("--rss-cap", type=float, default=0.9 * (total_memory_gib() or 16) * 2**30,
                    help="stop a SentencePiece run whose RSS passes this many bytes")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "scale")
    args = ap.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)

    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    budgets = [b.split("=", 1) for b in args.budget]
    spm_sizes = [s.strip() for s in args.spm.split(",") if s.strip()]
    rows: list[dict[str, Any]] = []

    def add(who: str, size: str, run: dict[str, Any]) -> None:
        path = corpus_path(size, args)
        rows.append({"who": who, "corpus": size, "bytes": path.stat().st_size, "lines": lines_of(path),
                     "threads": args.threads, "run": run})

    line_counts: dict[Path, int] = {}

    def lines_of(path: Path) -> int:
        if path not in line_counts:
            line_counts[path] = count_lines(path)
        return line_counts[path]

    for size in sizes:
        path = corpus_path(size, args)
        reps = [run_bpeforge(path, args, f"{size}-r{i + 1}", None) for i in range(args.repeats)]
        ok = [r for r in reps if "failed" not in r]
        run = reps[-1] if not ok else {**ok[0], **{k: median([r[k] for r in ok]) for k in
                                                  ("wall_s", "count_s", "merge_s", "word_table_s", "pair_index_s", "loop_s")
                                                  if all(r.get(k) is not None for r in ok)},
                                       "peak_rss": max(r["peak_rss"] for r in ok)}
        add("bpeforge", size, run)
    for size, budget in budgets:
        add(f"bpeforge --max-memory {budget}", size, run_bpeforge(corpus_path(size, args), args, f"{size}-mm{budget}", budget))
    for size in spm_sizes:
        add("SentencePiece", size, run_spm(corpus_path(size, args), args, f"{size}-spm"))

    text = table(rows)
    checks = growth(rows)
    # How fast this machine hands out memory no process has touched yet: the
    # phases that allocate (counting's tables, the word table, the pair
    # index) pay it per GB, so it bends the growth figures on a VM whose host
    # backs memory lazily.
    rate = fresh_memory_rate()
    if rate:
        checks.append(f"fresh memory faults in at {rate:.2f} GB/s here (2 GiB, one write per 4 KiB page, a new process): "
                      f"{1 / rate:.2f} s per GB a phase allocates")
    print(text)
    for line in checks:
        print(line)
    info = {"machine": machine_info(), "bpeforge": package_version("bpeforge"),
            "sentencepiece": package_version("sentencepiece"), "threads": args.threads,
            "vocab_size": args.vocab_size, "argv": sys.argv[1:], "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    (args.out / "scale.json").write_text(json.dumps({"info": info, "rows": rows, "checks": checks}, indent=1))
    (args.out / "scale.md").write_text(text + "\n\n" + "\n".join(f"- {c}" for c in checks) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
