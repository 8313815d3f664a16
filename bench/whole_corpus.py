#!/usr/bin/env python3
"""The whole corpus on one machine: 500M lines, trained within a memory budget.

What it does
------------
Builds ``sK`` (K copies of ``multi-1m``, each a new "language": see
``_copies.py``; ``s500`` is 500M lines, 71 GB) as one shard per copy in
``--workdir``, in parallel and with progress, compressed with zstd when the
disk could not hold it plain (``--compress auto``). Then, for each size in
``--sizes`` and each vocabulary in ``--vocab-sizes``, one fresh process, as
a user would run it::

    bpeforge train SHARD... --vocab-size V --threads T --max-memory B --progress json -o model.json

and one table: lines, bytes, word types seen and kept, spill runs and
bytes, the wall and CPU seconds of counting, the word table, the pair index
and the merge loop, peak RSS (the process's own ``ru_maxrss``: its VmHWM),
what the budget dropped, held-out bytes per token, and how the first ETA
the progress showed compares with the time the run really took.

``--budget none`` trains exactly (no ``--max-memory``: the default budget,
70% of available memory). ``--reference s50`` (the default) also trains
that size exactly, without dropping anything, and every row's held-out
bytes per token is given against it.

Held-out text: the texts of ``parallel-dev.tsv.xz`` (messages in 47
languages, not in multi-1m) under the substitutions of copies 0-9, the
languages every size trained on.

One run each: an hour-long run is stated as measured once, not as a median.
Results go to ``--out`` (``whole_corpus.json``, ``whole_corpus.md``).

Usage::

    python bench/whole_corpus.py                                  # s500, 32k and 64k, --max-memory 16G
    python bench/whole_corpus.py --sizes s10,s50 --budget 4G --vocab-sizes 32000
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _copies  # noqa: E402
from _harness import format_table, machine_info, package_version, run_child  # noqa: E402

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared"
HELD_OUT_COPIES = range(10)
HELD_OUT_LINES = 20_000


# ---- corpora ---------------------------------------------------------------


def source_text(args: argparse.Namespace) -> Path:
    """``multi-1m`` decompressed once into the workdir."""
    m1 = args.workdir / "m1.txt"
    if not m1.exists():
        src = args.corpora_dir / "multi-1m.txt.xz"
        if not src.exists():
            raise SystemExit(f"{src} not found; pass --corpora-dir")
        print(f"decompressing {src} ...", file=sys.stderr, flush=True)
        tmp = m1.with_suffix(".tmp")
        with lzma.open(src, "rb") as fin, open(tmp, "wb") as fout:
            shutil.copyfileobj(fin, fout, 1 << 20)
        tmp.rename(m1)
    return m1


def copies_of(size: str) -> int:
    if not (size.startswith("s") and size[1:].isdigit() and int(size[1:]) > 0):
        raise SystemExit(f"unknown corpus size {size!r}: use sK, K copies of multi-1m (s10, s50, s500)")
    return int(size[1:])


def shards(size: str, args: argparse.Namespace) -> list[Path]:
    """The shards of ``size``, built where missing."""
    src = source_text(args)
    k = copies_of(size)
    folder = args.workdir / "copies"
    compress = args.compress == "zst"
    if args.compress == "auto":
        plain = [folder / _copies.shard_name(c, False) for c in range(k)]
        packed = [folder / _copies.shard_name(c, True) for c in range(k)]
        if all(p.exists() for p in packed):
            compress = True
        elif not all(p.exists() for p in plain):
            need = k * src.stat().st_size
            # Leave the spill files room beside the text.
            compress = _copies.free_bytes(folder) < need * 1.5
    _copies.check_against(args.scale_tool, src)
    return _copies.build(src, k, folder, compress, args.build_processes)


def held_out(args: argparse.Namespace) -> list[bytes]:
    """The held-out texts under each of ``HELD_OUT_COPIES``' substitutions."""
    path = args.corpora_dir / "parallel-dev.tsv.xz"
    with lzma.open(path, "rt", encoding="utf-8") as f:
        texts = [line.rstrip("\n").split("\t", 2)[2] for _, line in zip(range(HELD_OUT_LINES), f)]
    src = _copies.Source(("\n".join(texts) + "\n").encode("utf-8"))
    return [src.copy(c) for c in HELD_OUT_COPIES]


# ---- runs ------------------------------------------------------------------


def train(size: str, vocab: int, budget: str | None, args: argparse.Namespace) -> dict[str, Any]:
    tag = f"{size}-{vocab}-{budget or 'exact'}"
    job = args.workdir / "jobs" / tag
    result = job / "result.json"
    if args.reuse and result.exists():
        print(f"{tag}: reusing {result}", file=sys.stderr, flush=True)
        return json.loads(result.read_text())
    files = shards(size, args)
    model = job / "model.json"
    job.mkdir(parents=True, exist_ok=True)
    model.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "bpeforge", "train", *map(str, files), "--vocab-size", str(vocab),
            "--threads", str(args.threads), "--output", str(model), "--progress", "json"]
    if budget:
        argv += ["--max-memory", budget]
    print(f"{tag}: training on {len(files)} shards ...", file=sys.stderr, flush=True)
    child = run_child(argv, os.environ, args.timeout, job)
    run: dict[str, Any] = {"tag": tag, "size": size, "vocab": vocab, "budget": budget, "wall_s": child.wall_s,
                           "cpu_s": child.cpu_s, "peak_rss": child.maxrss_bytes, "model": str(model)}
    if child.returncode != 0 or not model.exists():
        run["failed"] = "timed out" if child.timed_out else f"exit {child.returncode}: {child.stderr_tail}"
    else:
        run.update(read_events(job / "stderr.txt", child.wall_s))
        meta = json.loads(model.read_text(encoding="utf-8"))["metadata"]
        run["corpus"] = meta["corpus"]
        run["word_types"] = meta["word_types"]
        run["kept_types"] = meta["word_table"]["types_with_pairs"]
        run["memory_budget"] = meta.get("memory_budget")
    result.write_text(json.dumps(run, indent=1))
    return run


def read_events(stderr: Path, wall_s: float) -> dict[str, Any]:
    """Phase times and the ETA record from the run's JSON progress lines."""
    phases: dict[str, dict[str, Any]] = {}
    etas: list[tuple[float, float, float]] = []  # (elapsed, eta, fraction done) while counting
    for line in stderr.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.startswith("{"):
            continue
        e = json.loads(line)
        if e.get("finished"):
            phases[e["phase"]] = {"s": e["elapsed"], "cpu_s": e.get("cpu_seconds")}
        elif e["phase"] == "counting" and e.get("eta") is not None and e.get("total"):
            etas.append((e["elapsed"], e["eta"], e["done"] / e["total"]))
    out: dict[str, Any] = {"phases": phases}
    if etas:
        count_s = phases.get("counting", {}).get("s", wall_s)
        first = etas[0]
        out["first_eta"] = {"at_s": first[0], "eta_s": first[1], "run_left_s": wall_s - first[0],
                            "counting_left_s": count_s - first[0]}
        half = next((x for x in etas if x[2] >= 0.5), None)
        if half:
            out["half_eta"] = {"at_s": half[0], "eta_s": half[1], "counting_left_s": count_s - half[0]}
    return out


def bytes_per_token(model: str, texts: list[bytes]) -> float:
    import bpeforge

    tok = bpeforge.load(model)
    tokens = sum(len(ids) for t in texts for ids in tok.encode_batch(t.decode("utf-8").splitlines()))
    return sum(len(t) for t in texts) / tokens


# ---- table -----------------------------------------------------------------


def phase(run: dict[str, Any], name: str) -> str:
    p = run.get("phases", {}).get(name)
    if not p:
        return "-"
    cpu = f" ({p['cpu_s']:.0f})" if p.get("cpu_s") is not None else ""
    return f"{p['s']:.0f}{cpu}"


def dropped(run: dict[str, Any]) -> str:
    b = run.get("memory_budget") or {}
    if not b.get("word_types_dropped"):
        return "none"
    return (f"{b['word_types_dropped'] / 1e6:.1f}M types, {b['pretoken_share_dropped']:.1%} of pre-tokens "
            f"(min_word_count {b['effective_min_word_count']})")


def spill(run: dict[str, Any]) -> str:
    b = run.get("memory_budget") or {}
    return f"{b['spill_runs']}, {b['spill_bytes'] / 1e9:.1f} GB" if b.get("spill_runs") else "none"


def duration(s: float) -> str:
    return f"{s / 60:.1f} min" if s >= 600 else f"{s:.0f} s"


def eta(run: dict[str, Any]) -> str:
    f = run.get("first_eta")
    if not f:
        return "-"
    return (f"{duration(f['eta_s'])} at {f['at_s']:.0f} s; counting took {duration(f['counting_left_s'])} more, "
            f"the run {duration(f['run_left_s'])} ({f['run_left_s'] / f['eta_s']:.2f}x)")


def table(runs: list[dict[str, Any]]) -> str:
    headers = ["run", "lines", "text", "word types seen / kept", "spill runs", "count s (CPU)", "word table s",
               "pair index s", "loop s", "wall", "peak RSS", "budget dropped", "held-out B/token", "first ETA"]
    rows = []
    for r in runs:
        name = f"{r['size']}, {r['vocab'] // 1000}k, " + (f"--max-memory {r['budget']}" if r["budget"] else "exact")
        if "failed" in r:
            rows.append([name, "-", "-", "-", "-", "-", "-", "-", "-", duration(r["wall_s"]),
                         f"{r['peak_rss'] / 2**30:.2f} GiB", r["failed"][:80], "-", "-"])
            continue
        c = r["corpus"]
        bpt = r.get("bytes_per_token")
        ref = r.get("reference_bytes_per_token")
        held = "-" if bpt is None else f"{bpt:.3f}" + (f" ({bpt / ref - 1:+.1%})" if ref and ref != bpt else "")
        count = r["phases"].get("counting", {})
        rate = f", {c['bytes'] / 1e6 / count['s']:.0f} MB/s" if count.get("s") else ""
        rows.append([name, f"{c['texts'] / 1e6:.0f}M", f"{c['bytes'] / 1e9:.1f} GB",
                     f"{r['word_types'] / 1e6:.1f}M / {r['kept_types'] / 1e6:.1f}M", spill(r),
                     phase(r, "counting") + rate, phase(r, "word table"), phase(r, "pair index"), phase(r, "merging"),
                     duration(r["wall_s"]), f"{r['peak_rss'] / 2**30:.2f} GiB", dropped(r), held, eta(r)])
    return format_table(headers, rows)


def checks(runs: list[dict[str, Any]]) -> list[str]:
    out = []
    for r in runs:
        if "failed" in r or not r["budget"]:
            continue
        b = r["memory_budget"]["max_memory"]
        out.append(f"{r['tag']}: peak {r['peak_rss'] / 2**30:.2f} GiB against the budget's {b / 2**30:.2f} GiB "
                   f"({r['peak_rss'] / b - 1:+.1%}; limit +5%)")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpora-dir", type=Path, default=SHARED / "corpora")
    ap.add_argument("--scale-tool", type=Path, default=SHARED / "tools" / "scale_corpus.py")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/bpeforge-whole"),
                    help="where the shards, jobs and models go (s500: 36 GB compressed, plus the spill files)")
    ap.add_argument("--sizes", default="s500", help="comma-separated sK (K copies of multi-1m)")
    ap.add_argument("--vocab-sizes", default="32000,64000")
    ap.add_argument("--budget", default="16G", help="--max-memory for every run, or 'none'")
    ap.add_argument("--reference", default="s50", help="a size trained exactly, for held-out bytes/token ('' for none)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--compress", choices=["auto", "zst", "none"], default="auto")
    ap.add_argument("--build-processes", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--reuse", action="store_true", help="reuse the results of runs already made in --workdir")
    ap.add_argument("--timeout", type=float, default=4 * 3600)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "whole_corpus")
    args = ap.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    budget = None if args.budget.lower() == "none" else args.budget
    vocabs = [int(v) for v in args.vocab_sizes.split(",") if v.strip()]

    runs = [train(size.strip(), vocab, budget, args) for size in args.sizes.split(",") if size.strip() for vocab in vocabs]
    texts = held_out(args)
    references: dict[int, float] = {}
    if args.reference:
        for vocab in vocabs:
            ref = train(args.reference, vocab, None, args)
            if "failed" not in ref:
                ref["bytes_per_token"] = references[vocab] = bytes_per_token(ref["model"], texts)
                runs.append(ref)
    for r in runs:
        if "failed" not in r and "bytes_per_token" not in r:
            r["bytes_per_token"] = bytes_per_token(r["model"], texts)
        r["reference_bytes_per_token"] = references.get(r["vocab"])

    text = table(runs)
    lines = checks(runs)
    print(text)
    for line in lines:
        print(line)
    info = {"machine": machine_info(), "bpeforge": package_version("bpeforge"), "threads": args.threads,
            "argv": sys.argv[1:], "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "held_out": f"parallel-dev.tsv.xz, first {HELD_OUT_LINES} texts, copies {HELD_OUT_COPIES.start}-"
                        f"{HELD_OUT_COPIES.stop - 1}"}
    (args.out / "whole_corpus.json").write_text(json.dumps({"info": info, "runs": runs, "checks": lines}, indent=1))
    (args.out / "whole_corpus.md").write_text(text + "\n\n" + "\n".join(f"- {c}" for c in lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
