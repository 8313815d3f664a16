"""Counting tasks side by side on one Ray node against the node's budget:
each task's share of ``max_memory`` (``_ray_tasks._task_settings``) and its
worker's peak RSS (VmHWM; every task in a fresh worker), on a local Ray with
``--tasks`` CPUs running ``--tasks`` 1-CPU tasks at once, each counting the
whole corpus. The tasks keep the node within ``max_memory`` when every
task's peak is at most its share.

    python bench/ray_task_budget.py [--corpus multi-1m] [--max-memory-mb 400] [--tasks 2]

The peak is measured before the task returns its counts; Ray's object
store copy of them comes after (a task refuses to make counts that would
not fit twice in its share). Without ``--max-memory-mb`` the budget is so large that nothing spills: the
peak a task reaches on its own.
"""

from __future__ import annotations

import argparse
import json
import logging
import lzma
import os
import shutil
import tempfile
import time

CORPORA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "corpora")


def status_mb(key: str) -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) / 1024 for line in f if line.startswith(key + ":"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="multi-1m")
    ap.add_argument("--max-memory-mb", type=float, default=1 << 20)
    ap.add_argument("--tasks", type=int, default=2)
    a = ap.parse_args()
    import ray

    from bpeforge import _ray_tasks
    from bpeforge.errors import TrainingError
    from bpeforge.options import TrainOptions

    @ray.remote(num_cpus=1, max_calls=1)
    def count(shard: dict, engine: object) -> dict:
        before = status_mb("VmRSS")
        share = _ray_tasks._task_settings(engine, 1).memory_budget / 2**20
        start = time.monotonic()
        try:
            counts, _ = _ray_tasks._count_task(shard, engine, None, 1)
        except TrainingError as e:  # the counts cannot fit the share: refused before they are made
            return {"share_mb": share, "rss_before_mb": before, "peak_mb": status_mb("VmHWM"), "result_mb": 0.0,
                    "start": start, "end": time.monotonic(), "error": str(e)}
        return {"share_mb": share, "rss_before_mb": before, "peak_mb": status_mb("VmHWM"),
                "result_mb": len(counts) / 2**20, "start": start, "end": time.monotonic()}

    work = tempfile.mkdtemp(prefix="bpeforge-task-budget-")
    try:
        plain = os.path.join(work, f"{a.corpus}.txt")
        with lzma.open(os.path.join(CORPORA, f"{a.corpus}.txt.xz")) as f, open(plain, "wb") as out:
            shutil.copyfileobj(f, out, 1 << 20)
        ray.init(num_cpus=a.tasks, include_dashboard=False, logging_level=logging.WARNING)
        max_memory = int(a.max_memory_mb * 2**20)
        engine = TrainOptions(threads=1, max_memory=max_memory).engine_options()
        shard = {"paths": [plain], "byte_range": None, "files": [0]}
        tasks = ray.get([count.remote(shard, engine) for _ in range(a.tasks)])
        t0 = min(t["start"] for t in tasks)
        print(f"max_memory {a.max_memory_mb:.0f} MiB, {a.tasks} tasks on a {a.tasks}-CPU node")
        for t in tasks:
            print(json.dumps({k: v if k == "error" else round(v - t0 if k in ("start", "end") else v, 1)
                              for k, v in t.items()}))
        print(f"shares together {sum(t['share_mb'] for t in tasks):.0f} MiB; "
              f"peaks together {sum(t['peak_mb'] for t in tasks):.0f} MiB")
    finally:
        if ray.is_initialized():
            ray.shutdown()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
