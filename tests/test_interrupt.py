"""Ctrl-C during training stops within a second with KeyboardInterrupt."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

SCRIPT = r"""
import sys, time, bpeforge
import signal
signal.signal(signal.SIGINT, signal.default_int_handler)  # even if the runner ignores SIGINT (nohup, &)
def texts():
    i = 0
    while True:              # an endless corpus: only Ctrl-C can end this run
        i += 1
        yield f"word{i % 100000} other{i % 7777} text {i}"
print("started", flush=True)
try:
    bpeforge.train_from_iterator(texts(), vocab_size=5000, progress=False, threads=2)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(7)
"""

SCRIPT_MERGE = r"""
import random, sys, bpeforge
import signal
signal.signal(signal.SIGINT, signal.default_int_handler)  # even if the runner ignores SIGINT (nohup, &)
rng = random.Random(5)
# 200k distinct random 40-letter words: millions of possible merges at count 1.
texts = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=40)) for _ in range(200000)]
print("started", flush=True)
try:
    bpeforge.train_from_iterator(texts, vocab_size=5_000_000, min_frequency=1, progress="json")
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(7)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("script, phase", [(SCRIPT, None), (SCRIPT_MERGE, "merging")], ids=["counting", "merging"])
def test_ctrl_c_stops_training_quickly(script: str, phase: str | None) -> None:
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().strip() == "started"
    if phase is None:
        time.sleep(1.5)
    else:
        # Wait for the progress output to say the merge loop is running.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            if f'"phase":"{phase}"' in line and '"done"' not in line:
                break
            assert line, "training ended before the merge phase"
        time.sleep(0.5)
    assert proc.poll() is None, "training ended before it could be interrupted"
    t0 = time.monotonic()
    os.kill(proc.pid, signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
    elapsed = time.monotonic() - t0
    assert proc.returncode == 7, err
    assert "interrupted" in out
    assert elapsed < 1.5, f"took {elapsed:.2f}s to stop"
