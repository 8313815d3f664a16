#!/usr/bin/env python3
"""Peak memory of one `bpeforge train` run, by phase.

Runs ``python -m bpeforge train CORPUS ARGS... --progress json`` with the
given interpreter (so an old and a new build can be compared in the same
session: ``--python /path/to/venv/bin/python``), samples the child's VmRSS
every 50 ms, splits the samples at the ``counting done`` progress event, and
prints one JSON line: the whole run's VmHWM (the kernel's own peak), the
peak seen while counting and after it, wall seconds, and the model's
``memory_budget`` record.

    python bench/memory_peak.py --python /work/venv-main/bin/python s10.txt --vocab-size 32000 --threads 2
    python bench/memory_peak.py s10.txt --vocab-size 32000 --threads 2 --max-memory 1G
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time


def status_kib(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("corpus")
    args, rest = ap.parse_known_args()
    out = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
    cmd = [args.python, "-m", "bpeforge", "train", args.corpus, *rest, "--progress", "json", "-o", out]
    t0 = time.time()
    p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    counting_done = threading.Event()
    lines: list[str] = []

    def read_stderr() -> None:
        assert p.stderr is not None
        for line in p.stderr:
            lines.append(line)
            if '"finished":true' in line.replace(" ", "") and '"counting"' in line:
                counting_done.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    peak = {"count": 0, "after": 0}
    hwm = 0
    while p.poll() is None:
        rss = status_kib(p.pid, "VmRSS")
        hwm = max(hwm, status_kib(p.pid, "VmHWM"))
        phase = "after" if counting_done.is_set() else "count"
        peak[phase] = max(peak[phase], rss)
        time.sleep(0.05)
    reader.join(5)
    wall = time.time() - t0
    result = {"cmd": " ".join(cmd[1:]), "rc": p.returncode, "wall_s": round(wall, 1),
              "vmhwm_gb": round(hwm * 1024 / 1e9, 3), "count_phase_peak_gb": round(peak["count"] * 1024 / 1e9, 3),
              "after_count_peak_gb": round(peak["after"] * 1024 / 1e9, 3)}
    if p.returncode == 0:
        with open(out, encoding="utf-8") as f:
            meta = json.load(f).get("metadata", {})
        result["memory_budget"] = meta.get("memory_budget")
        result["word_types"] = meta.get("word_types")
        result["timings"] = meta.get("timings")
        result["model"] = out
    else:
        result["stderr_tail"] = "".join(lines[-5:])
    print(json.dumps(result))
    return 0 if p.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
