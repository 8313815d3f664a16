#!/usr/bin/env python3
"""How bpeforge's training scales with the corpus: 200k, 1M and 5M lines.

What it measures
----------------
For every corpus size and every ``--threads`` N, one fresh Python subprocess
runs ``bpeforge.train([corpus], vocab_size=32000, threads=N, progress=False)``
(bytes scheme, gpt2 pre-tokenizer, min_frequency 2) on a plain-text file and
reports the model's ``metadata["timings"]`` (``count_seconds``: reading,
pre-tokenizing and counting word types; ``merge_seconds``: building the word
table and the merge loop), ``metadata["word_types"]``, and its peak RSS
(``ru_maxrss`` of the child, from ``os.wait4``). The table has one row per
size:

* **lines**, **MB** (10^6 bytes of the plain file), **word types**;
* **count s**, **merge s**, **total s** and **peak RSS GB** of the run with
  the most threads (medians over ``--repeats``; RSS the largest);
* **count MB/s @N** for every thread count N: file MB / count seconds.

It then fits growth exponents on log-log axes (least squares over the sizes):
counting time vs input MB (linear counting gives ~1), merge time vs word
types (the merge loop must grow no faster than the word-type table: <= ~1),
merge time vs input MB, and word types vs lines (Heaps' exponent), and draws
``scale.png``: time vs input size, and merge time vs word types. Results go
to ``--out`` (default ``bench/results/scale``): ``scale.json``, ``scale.md``
(the table in Markdown) and ``scale.png``.

The corpora
-----------
``200k`` and ``1m`` are ``multi-200k.txt.xz`` and ``multi-1m.txt.xz`` from
``--corpora-dir``, decompressed once into ``--workdir`` (not timed). There is
no larger real corpus here, so ``5m`` is built once from the 1M corpus (then
cached in ``--workdir``): copy 0 is the 1M corpus itself, copies 1 to 4 are
the 1M corpus with words *varied deterministically*. In copy ``c``, every
space-separated token of at least 4 characters whose CRC-32 (seeded with
``c``) falls in the lowest ``VARY_PERMILLE``/1000 of the range has two
adjacent inner characters swapped (the position also comes from the hash);
the choice is per token *type*, so all occurrences of a word in one copy
change the same way, like a consistent spelling variant.

Why: five plain copies would give 5x the text but no new word types, so the
merge loop (whose work grows with the word-type table) would look flat, and
counting would hit the same hash-table entries. Real text keeps adding types
as it grows (Heaps' law, types ~ lines^beta with beta ~0.5-0.7). The rate
``VARY_PERMILLE`` (560) was calibrated on the real corpora: five copies of
the first 200k lines varied this way have 1,730,505 word types (gpt2
pre-token types, as bpeforge counts them) against 1,731,977 in the real 1M
lines (the 1M corpus is 5x more lines of the same shuffled distribution as
the 200k one; 629,291 types, so Heaps' exponent 0.63). So 200k -> 1M (real)
and 1M -> 5M (built) add types at about the same rate; the script prints
both exponents so this can be checked.

Limits: the variants are transpositions of existing words in the same
scripts, so the 5M corpus has no new characters, languages or domains, and
its new types have the frequency profile of the words they come from
(frequent words get frequent variants, where real new types are mostly
rare); lines with no varied token repeat exactly (the real corpus has no
duplicate lines). Merge statistics of the 5M corpus are therefore close to
those of the 1M one; it tests how time and memory scale with the amount of
text and the size of the type table, not vocabulary quality.

Usage::

    python bench/scale.py --corpora-dir ../shared/corpora                 # 200k, 1m, 5m
    python bench/scale.py --corpora-dir ../shared/corpora --sizes 200k,1m --threads 1,2
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import zlib
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import format_table, machine_info, materialize_corpus, median, package_version, run_child  # noqa: E402

#: Share (per mille) of long token types varied in each extra copy of the 5M corpus.
VARY_PERMILLE = 560
#: Tokens shorter than this (in characters) are never varied.
VARY_MIN_CHARS = 4
#: Copies of the 1M corpus in the 5M corpus.
COPIES = 5

SOURCES = {"200k": "multi-200k.txt.xz", "1m": "multi-1m.txt.xz"}
ORDER = ["200k", "1m", "5m"]


# ---- the 5M corpus -------------------------------------------------------------


def vary_token(token: str, copy: int) -> str:
    """The token as it appears in copy ``copy`` (0: unchanged)."""
    n = len(token)
    if copy == 0 or n < VARY_MIN_CHARS:
        return token
    h = zlib.crc32(token.encode("utf-8", "surrogatepass"), copy * 0x9E3779B1 & 0xFFFFFFFF)
    if h % 1000 >= VARY_PERMILLE:
        return token
    i = 1 + (h >> 10) % (n - 3)  # swap token[i] and token[i + 1], both inner characters
    return token[:i] + token[i + 1] + token[i] + token[i + 2:]


def vary_line(line: str, copy: int, memo: dict[str, str]) -> str:
    out = []
    for t in line.split(" "):
        v = memo.get(t)
        if v is None:
            v = memo[t] = vary_token(t, copy)
        out.append(v)
    return " ".join(out)


def build_multiplied(src: Path, dst: Path, copies: int = COPIES) -> Path:
    """Writes ``copies`` copies of ``src``, copy ``c`` varied with :func:`vary_token`."""
    if dst.exists():
        return dst
    tmp = dst.with_name(dst.name + f".tmp-{os.getpid()}")
    t0 = time.perf_counter()
    with open(tmp, "w", encoding="utf-8", newline="\n") as out:
        for c in range(copies):
            memo: dict[str, str] = {}
            with open(src, encoding="utf-8", newline="\n") as f:
                if c == 0:
                    for block in iter(lambda: f.read(1 << 22), ""):
                        out.write(block)
                    continue
                for line in f:
                    body = line[:-1] if line.endswith("\n") else line
                    out.write(vary_line(body, c, memo))
                    out.write("\n")
            print(f"  built copy {c + 1}/{copies} of {dst.name} ({time.perf_counter() - t0:.0f}s)", file=sys.stderr)
    os.replace(tmp, dst)
    return dst


def corpus_path(size: str, corpora_dir: Path, workdir: Path) -> Path:
    if size in SOURCES:
        target = workdir / Path(SOURCES[size]).with_suffix("").name
        if not target.exists():
            print(f"decompressing {SOURCES[size]} into {workdir} (not timed)", file=sys.stderr)
            tmpdir = workdir / f"tmp-{os.getpid()}"
            tmpdir.mkdir(parents=True, exist_ok=True)
            plain = materialize_corpus(corpora_dir / SOURCES[size], tmpdir)
            os.replace(plain, target)
            tmpdir.rmdir()
        return target
    if size == "5m":
        base = corpus_path("1m", corpora_dir, workdir)
        target = workdir / "multi-5m-varied.txt"
        if not target.exists():
            print(f"building {target.name}: {COPIES} copies of {base.name}, copies 2-{COPIES} with varied words "
                  "(once; cached)", file=sys.stderr)
            build_multiplied(base, target)
        return target
    if Path(size).is_file():  # a plain-text corpus given by path (e.g. one from scale_corpus.py)
        return Path(size)
    raise SystemExit(f"unknown size {size!r}: choose from {', '.join(ORDER)} or give a file path")


def count_lines(path: Path) -> int:
    n = 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            n += block.count(b"\n")
    return n


# ---- one training run (in a child process) --------------------------------------


def worker(args: argparse.Namespace) -> int:
    import resource

    import bpeforge

    t0 = time.perf_counter()
    tok = bpeforge.train([args.corpus], vocab_size=args.vocab_size, threads=args.threads, progress=False)
    wall = time.perf_counter() - t0
    meta = tok.metadata
    result = {
        "wall_s": wall,
        "count_s": meta["timings"]["count_seconds"],
        "merge_s": meta["timings"]["merge_seconds"],
        "timings": meta["timings"],
        "word_types": meta["word_types"],
        "corpus": meta["corpus"],
        "merges": len(tok.merge_counts),
        "word_table": meta.get("word_table"),
        "word_count_table": meta.get("word_count_table"),
        "maxrss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "vmhwm_bytes": vmhwm_bytes(),
    }
    Path(args.result).write_text(json.dumps(result), encoding="utf-8")
    return 0


def vmhwm_bytes() -> int | None:
    """Peak RSS of this process (VmHWM), or None off Linux."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def run_training(path: Path, threads: int, vocab_size: int, workdir: Path, tag: str, timeout: float) -> dict:
    job_dir = workdir / "jobs" / tag
    job_dir.mkdir(parents=True, exist_ok=True)
    result = job_dir / "result.json"
    if result.exists():
        result.unlink()
    argv = [sys.executable, "-u", str(Path(__file__).resolve()), "--worker", "--corpus", str(path),
            "--threads", str(threads), "--vocab-size", str(vocab_size), "--result", str(result)]
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    child = run_child(argv, env, timeout, job_dir)
    if child.returncode != 0 or not result.exists():
        why = "timed out" if child.timed_out else f"exit {child.returncode}"
        raise SystemExit(f"training run {tag} failed ({why}):\n{child.stderr_tail}")
    out = json.loads(result.read_text(encoding="utf-8"))
    out["job_wall_s"] = child.wall_s
    out["peak_rss_bytes"] = out.get("vmhwm_bytes") or child.maxrss_bytes
    out["cpu_s"] = child.cpu_s
    return out


# ---- fits, table, plot -----------------------------------------------------------


def fit_exponent(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of log y over log x (None with fewer than 2 points)."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len(pts) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    if sxx == 0:
        return None
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx


def fmt_exp(e: float | None) -> str:
    return "n/a" if e is None else f"{e:.2f}"


def plot(rows: list[dict], threads: list[int], fits: dict, path: Path, vocab_size: int) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FuncFormatter, NullFormatter
    except ImportError:
        return "matplotlib is not installed (pip install '.[bench]'): no plot"
    tmax = max(threads)
    mb = [r["mb"] for r in rows]
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 5))
    for t in threads:
        a.plot(mb, [r["runs"][t]["count_s"] for r in rows], "o-", label=f"counting, {t} thread{'s' if t > 1 else ''}")
    a.plot(mb, [r["runs"][tmax]["merge_s"] for r in rows], "s-", label="merging")
    a.plot(mb, [r["runs"][tmax]["count_s"] + r["runs"][tmax]["merge_s"] for r in rows], "^--",
           label=f"total ({tmax} thread{'s' if tmax > 1 else ''})")
    ref = [rows[0]["runs"][threads[0]]["count_s"] * m / mb[0] for m in mb]
    a.plot(mb, ref, ":", color="grey", label="linear (slope 1)")
    a.set_xscale("log")
    a.set_yscale("log")
    a.set_xlabel("input size (MB, log)")
    a.set_ylabel("seconds (log)")
    a.set_title(f"time vs input size (count exp. {fmt_exp(fits['count_vs_mb'][tmax])}, "
                f"merge exp. {fmt_exp(fits['merge_vs_mb'])})")
    for r in rows:
        a.annotate(r["size"], (r["mb"], r["runs"][tmax]["count_s"] + r["runs"][tmax]["merge_s"]),
                   textcoords="offset points", xytext=(4, 4), fontsize=8)
    a.legend(fontsize=8)
    a.grid(True, which="both", alpha=0.3)

    wt = [r["word_types"] for r in rows]
    merge = [r["runs"][tmax]["merge_s"] for r in rows]
    b.plot(wt, merge, "s-", color="C3", label=f"merging (exponent {fmt_exp(fits['merge_vs_types'])})")
    if "merge_parts_vs_types" in fits:
        for k, style in zip(fits["merge_parts_vs_types"], (".-", "x-", "+-")):
            b.plot(wt, [r["runs"][tmax]["merge_breakdown"][k] for r in rows], style, linewidth=1,
                   label=f"  {k.replace('_seconds', '').replace('_', ' ')} (exponent {fmt_exp(fits['merge_parts_vs_types'][k])})")
    b.plot(wt, [merge[0] * w / wt[0] for w in wt], ":", color="grey", label="linear in word types (slope 1)")
    for r, m in zip(rows, merge):
        b.annotate(r["size"], (r["word_types"], m), textcoords="offset points", xytext=(4, 4), fontsize=8)
    b.set_xscale("log")
    b.set_yscale("log")
    b.set_xlabel("word types (log)")
    b.set_ylabel("merge seconds (log)")
    b.set_title("merge-loop time vs word-type table")
    b.legend(fontsize=8)
    b.grid(True, which="both", alpha=0.3)
    plain = FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}")
    for ax in (a, b):
        ax.xaxis.set_major_formatter(plain)
        ax.yaxis.set_major_formatter(plain)
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
    fig.suptitle(f"bpeforge training, vocab {vocab_size:,}, {machine_info()['nproc']} cores (shared machine)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpora-dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "corpora")
    ap.add_argument("--sizes", default="200k,1m,5m",
                    help="comma-separated: 200k, 1m, 5m, or paths of plain-text corpora (e.g. s10.txt from scale_corpus.py)")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--vocab-size", type=int, default=32000)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "scale")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/bpeforge-scale"),
                    help="decompressed and built corpora (kept for the next run) and job logs")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per training run")
    # Child mode.
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--corpus", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        args.threads = int(args.threads)
        return worker(args)

    sizes = [s.strip().lower() for s in args.sizes.split(",") if s.strip()]
    sizes.sort(key=lambda s: ORDER.index(s) if s in ORDER else 99)
    threads = sorted({int(t) for t in args.threads.split(",")})
    tmax = max(threads)
    args.workdir.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()

    rows: list[dict] = []
    for size in sizes:
        path = corpus_path(size, args.corpora_dir, args.workdir)
        row: dict = {"size": size, "path": str(path), "lines": count_lines(path), "mb": path.stat().st_size / 1e6,
                     "runs": {}}
        for t in threads:
            reps = []
            for i in range(args.repeats):
                tag = f"{size}-t{t}-r{i + 1}"
                print(f"training {tag} ...", file=sys.stderr, flush=True)
                reps.append(run_training(path, t, args.vocab_size, args.workdir, tag, args.timeout))
            run: dict[str, Any] = {k: median([x[k] for x in reps]) for k in ("count_s", "merge_s", "wall_s", "job_wall_s", "cpu_s")}
            run["peak_rss_bytes"] = max(x["peak_rss_bytes"] for x in reps)
            run["word_types"] = reps[0]["word_types"]
            run["merges"] = reps[0]["merges"]
            run["word_table"] = reps[0]["word_table"]
            run["word_count_table"] = reps[0]["word_count_table"]
            run["repeats"] = reps
            breakdowns = [x["timings"].get("merge_breakdown") for x in reps]
            if all(breakdowns):
                run["merge_breakdown"] = {k: median([b[k] for b in breakdowns]) for k in breakdowns[0]}
            row["runs"][t] = run
            print(f"  count {run['count_s']:.2f}s, merge {run['merge_s']:.2f}s, "
                  f"{run['word_types']} word types, peak RSS {run['peak_rss_bytes'] / 1e9:.2f} GB", file=sys.stderr)
        row["word_types"] = row["runs"][tmax]["word_types"]
        rows.append(row)

    fits: dict[str, Any] = {
        "count_vs_mb": {t: fit_exponent([r["mb"] for r in rows], [r["runs"][t]["count_s"] for r in rows]) for t in threads},
        "merge_vs_types": fit_exponent([r["word_types"] for r in rows], [r["runs"][tmax]["merge_s"] for r in rows]),
        "merge_vs_mb": fit_exponent([r["mb"] for r in rows], [r["runs"][tmax]["merge_s"] for r in rows]),
        "types_vs_lines": fit_exponent([r["lines"] for r in rows], [r["word_types"] for r in rows]),
        "rss_vs_types": fit_exponent([r["word_types"] for r in rows], [r["runs"][tmax]["peak_rss_bytes"] for r in rows]),
    }
    if all("merge_breakdown" in r["runs"][tmax] for r in rows):
        fits["merge_parts_vs_types"] = {
            k: fit_exponent([r["word_types"] for r in rows], [r["runs"][tmax]["merge_breakdown"][k] for r in rows])
            for k in rows[0]["runs"][tmax]["merge_breakdown"]
        }
    real = [r for r in rows if r["size"] in SOURCES]
    built = [r for r in rows if r["size"] in ("1m", "5m")]
    fits["heaps_real_200k_1m"] = fit_exponent([r["lines"] for r in real], [r["word_types"] for r in real]) if len(real) == 2 else None
    fits["heaps_built_1m_5m"] = fit_exponent([r["lines"] for r in built], [r["word_types"] for r in built]) if len(built) == 2 else None

    headers = ["corpus", "lines", "MB", "word types", f"count s @{tmax}", f"merge s @{tmax}", f"total s @{tmax}",
               *[f"count MB/s @{t}" for t in threads], "peak RSS GB"]
    table_rows = []
    for r in rows:
        run = r["runs"][tmax]
        table_rows.append([
            r["size"], f"{r['lines']:,}", f"{r['mb']:.1f}", f"{r['word_types']:,}", f"{run['count_s']:.2f}",
            f"{run['merge_s']:.2f}", f"{run['count_s'] + run['merge_s']:.2f}",
            *[f"{r['mb'] / max(r['runs'][t]['count_s'], 1e-9):.1f}" for t in threads],
            f"{max(r['runs'][t]['peak_rss_bytes'] for t in threads) / 1e9:.2f}",
        ])
    right = [False] + [True] * (len(headers) - 1)
    fits_text = [
        "growth exponents (least squares on log-log; 1 = linear):",
        *[f"  counting time vs input MB, {t} thread{'s' if t > 1 else ''}: {fmt_exp(e)}"
          + ("" if e is None else ("  (roughly linear)" if 0.8 <= e <= 1.2 else "  (NOT roughly linear)"))
          for t, e in fits["count_vs_mb"].items()],
        f"  merge time vs word types: {fmt_exp(fits['merge_vs_types'])}"
        + ("" if fits["merge_vs_types"] is None else
           ("  (no faster than the word-type table)" if fits["merge_vs_types"] <= 1.1 else "  (FASTER than the word-type table)")),
        *([("  merge parts vs word types: " + ", ".join(
            f"{k.replace('_seconds', '')} {fmt_exp(e)}" for k, e in fits["merge_parts_vs_types"].items()))]
          if "merge_parts_vs_types" in fits else []),
        f"  merge time vs input MB: {fmt_exp(fits['merge_vs_mb'])}",
        f"  word types vs lines (Heaps): {fmt_exp(fits['types_vs_lines'])}; real 200k->1m {fmt_exp(fits['heaps_real_200k_1m'])}, "
        f"built 1m->5m {fmt_exp(fits['heaps_built_1m_5m'])}",
        f"  peak RSS vs word types: {fmt_exp(fits['rss_vs_types'])}",
    ]
    print()
    print(format_table(headers, table_rows, right=right))
    phase_headers = ["corpus", "word types", "symbols", "count s", "word table s", "pair index s", "loop s", "total s",
                     "cpu s", "peak RSS GB (VmHWM)"]
    phase_rows = []
    for r in rows:
        run = r["runs"][tmax]
        b = run.get("merge_breakdown") or {}
        phase_rows.append([
            Path(r["size"]).stem, f"{r['word_types']:,}", f"{(run['word_table'] or {}).get('symbols', 0):,}",
            f"{run['count_s']:.1f}", *[f"{b.get(k, float('nan')):.1f}" for k in ("word_table_seconds", "pair_index_seconds", "loop_seconds")],
            f"{run['count_s'] + run['merge_s']:.1f}", f"{run['cpu_s']:.0f}", f"{run['peak_rss_bytes'] / 1e9:.2f}",
        ])
    print()
    print(f"phases @{tmax} threads:")
    print(format_table(phase_headers, phase_rows, right=[False] + [True] * (len(phase_headers) - 1)))
    print()
    print("\n".join(fits_text))

    png = args.out / "scale.png"
    note = plot(rows, threads, fits, png, args.vocab_size)
    print(note or f"\nplot: {png}")
    command = "python bench/scale.py " + " ".join(sys.argv[1:]) if argv is None else "scale.main(...)"
    md = [f"Command: `{command}`", "", format_table(headers, table_rows, markdown=True, right=right), "",
          format_table(phase_headers, phase_rows, markdown=True, right=[False] + [True] * (len(phase_headers) - 1)), "",
          "```", *fits_text, "```"]
    (args.out / "scale.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    machine = machine_info()
    report = {
        "command": command, "machine": machine, "bpeforge": package_version("bpeforge"),
        "settings": {"vocab_size": args.vocab_size, "threads": threads, "repeats": args.repeats,
                     "vary_permille": VARY_PERMILLE, "vary_min_chars": VARY_MIN_CHARS, "copies": COPIES},
        "rows": rows, "fits": {k: (v if not isinstance(v, dict) else {str(t): e for t, e in v.items()}) for k, v in fits.items()},
        "seconds": time.perf_counter() - started,
    }
    (args.out / "scale.json").write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
    print(f"results: {args.out / 'scale.json'}, {args.out / 'scale.md'} ({report['seconds']:.0f}s in all)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
