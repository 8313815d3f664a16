"""The Ray driver's own peak memory (VmHWM) in ``bpeforge.distributed.train``
on a multi-shard run, against the same driver right after ``ray.init`` (Ray's
own share), on a local Ray with 2 workers.

    python bench/ray_driver_peak.py [--corpus multi-1m] [--shard-mb 16] [--vocab-size 1000]
"""

from __future__ import annotations

import argparse
import logging
import lzma
import os
import shutil
import tempfile
import time

CORPORA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "corpora")


def vm_hwm_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) / 1024 for line in f if line.startswith("VmHWM:"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="multi-1m")
    ap.add_argument("--shard-mb", type=float, default=16)
    ap.add_argument("--vocab-size", type=int, default=1000)
    a = ap.parse_args()
    import ray

    from bpeforge import distributed

    work = tempfile.mkdtemp(prefix="bpeforge-driver-")
    try:
        plain = os.path.join(work, f"{a.corpus}.txt")
        with lzma.open(os.path.join(CORPORA, f"{a.corpus}.txt.xz")) as f, open(plain, "wb") as out:
            shutil.copyfileobj(f, out, 1 << 20)
        ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
        after_init = vm_hwm_mb()
        start = time.perf_counter()
        tok = distributed.train([plain], vocab_size=a.vocab_size, shard_bytes=int(a.shard_mb * (1 << 20)),
                                progress=False)
        t = tok.metadata["timings"]
        print(f"{a.corpus}: {t['count_shards']} shards; driver VmHWM {after_init:.0f} MB after ray.init, "
              f"{vm_hwm_mb():.0f} MB after training ({tok.metadata['word_types']} word types); "
              f"count {t['count_seconds']} s (adding tables {t['count_sum_seconds']} s), "
              f"total {time.perf_counter() - start:.1f} s")
        ray.shutdown()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
