"""Peak memory of the driver's reduction of shard tables in
``bpeforge.distributed.train``: all serialized tables held, then summed (the
old path, ``_native.train_counts(parts, ...)``) against the running sum that
adds each table as it arrives and drops it (``_native.CountSum``, what the
driver does now). Ray is not needed: the shard tables are counted here,
exactly as the Ray tasks count them (``_native.count_shard`` on byte ranges),
and written to a folder; each reduction then runs in a fresh process that
reads them one by one and reports its own VmHWM (before and after the
merge loop, which is the same in both).

    python bench/ray_reduce.py [--corpus multi-1m] [--shard-mb 16] [--vocab-size 2000]
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import shutil
import subprocess
import sys
import tempfile
import time

CORPORA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "corpora")


def vm_hwm_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def args_for(vocab_size: int) -> object:
    from bpeforge.options import TrainOptions

    return TrainOptions(vocab_size=vocab_size, threads=1).settings()


def reduce_in_this_process(mode: str, folder: str, vocab_size: int) -> dict:
    from bpeforge import _native

    names = sorted(n for n in os.listdir(folder) if n.endswith(".cnt"))
    args = args_for(vocab_size)
    start = time.perf_counter()
    if mode == "all-at-once":
        parts = []
        for n in names:
            with open(os.path.join(folder, n), "rb") as f:
                parts.append(f.read())
        held = sum(map(len, parts))
        summed_at = None  # the tables are summed inside train_counts, after a copy of them all
        tok = _native.train_counts(parts, args, "off", [])
    else:
        total = _native.CountSum()
        held = 0
        for n in names:
            with open(os.path.join(folder, n), "rb") as f:
                part = f.read()
            held = max(held, len(part))
            total.add(part)
            del part
        summed_at = round(vm_hwm_mb(), 1)
        tok = _native.train_count_sum(total, args, "off", [])
    return {"mode": mode, "shards": len(names), "largest_bytes_held": held, "vm_hwm_after_sum_mb": summed_at,
            "vm_hwm_mb": round(vm_hwm_mb(), 1), "seconds": round(time.perf_counter() - start, 2),
            "merges": len(tok.merges())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="multi-1m")
    ap.add_argument("--shard-mb", type=float, default=16)
    ap.add_argument("--vocab-size", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=2, help="alternating runs of each mode")
    ap.add_argument("--_reduce", nargs=2, metavar=("MODE", "FOLDER"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a._reduce:
        print(json.dumps(reduce_in_this_process(a._reduce[0], a._reduce[1], a.vocab_size)))
        return

    from bpeforge import _native
    from bpeforge.distributed import plan_shards

    work = tempfile.mkdtemp(prefix="bpeforge-reduce-")
    try:
        plain = os.path.join(work, f"{a.corpus}.txt")
        with lzma.open(os.path.join(CORPORA, f"{a.corpus}.txt.xz")) as f, open(plain, "wb") as out:
            shutil.copyfileobj(f, out, 1 << 20)
        shards = plan_shards([plain], int(a.shard_mb * (1 << 20)))
        args = args_for(a.vocab_size)
        total_bytes = 0
        for k, s in enumerate(shards):
            table, _ = _native.count_shard(s["paths"], [0], args, "off", tuple(s["byte_range"] or ()) or None)
            total_bytes += len(table)
            with open(os.path.join(work, f"{k:05d}.cnt"), "wb") as out:
                out.write(table)
        print(f"{a.corpus}: {os.path.getsize(plain) / 1e6:.0f} MB of text, {len(shards)} shards, "
              f"{total_bytes / 1e6:.0f} MB of serialized shard tables", flush=True)
        results: dict[str, list[dict]] = {"all-at-once": [], "streaming": []}
        for _ in range(a.repeat):
            for mode in results:
                out = subprocess.run([sys.executable, __file__, "--vocab-size", str(a.vocab_size), "--_reduce", mode,
                                      work], check=True, capture_output=True, text=True).stdout
                results[mode].append(json.loads(out))
                print(out.strip(), flush=True)
        for mode, rs in results.items():
            peaks = sorted(r["vm_hwm_mb"] for r in rs)
            print(f"{mode}: VmHWM {peaks[len(peaks) // 2]:.0f} MB (median of {len(rs)}), merges {rs[0]['merges']}")
        assert results["all-at-once"][0]["merges"] == results["streaming"][0]["merges"]
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
