"""Ctrl-C during training stops within a second with KeyboardInterrupt.

"Within a second" is measured in the child's CPU seconds after the signal,
not in wall time: what the engine controls is how much work it does before
it looks at the signal, and a busy machine must not fail the test (a hang
is still caught, by the wall-clock timeout)."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

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
    children_before = _children_cpu_seconds()
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
            if f'"phase":"{phase}"' in line and '"finished":false' in line:
                break
            assert line, "training ended before the merge phase"
        time.sleep(0.5)
    assert proc.poll() is None, "training ended before it could be interrupted"
    cpu_at_signal = _cpu_seconds(proc.pid)
    t0 = time.monotonic()
    os.kill(proc.pid, signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    elapsed = time.monotonic() - t0
    assert proc.returncode == 7, err
    assert "interrupted" in out
    if cpu_at_signal is None:  # no /proc: wall time, generously
        assert elapsed < 5, f"took {elapsed:.2f} s to stop"
        return
    # The child's whole CPU time (it is reaped now) less its time before the signal.
    after = _children_cpu_seconds() - children_before - cpu_at_signal
    assert after < 1.5, f"{after:.2f} CPU seconds after Ctrl-C ({elapsed:.2f} s wall)"


def _cpu_seconds(pid: int) -> float | None:
    """User plus system CPU seconds of a running process, all its threads
    (Linux's /proc); None where there is no /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children_cpu_seconds() -> float:
    """CPU seconds of this process's children that have been waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
